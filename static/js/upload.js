// Upload with a progress bar: the same form posts through XMLHttpRequest and
// asks for JSON; without JavaScript it posts as a plain form.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form || !window.XMLHttpRequest || !window.FormData) return;
  var progress = document.getElementById("upload-progress");
  var status = document.getElementById("upload-status");
  var errors = document.querySelector("[data-testid=upload-errors]");
  var button = form.querySelector("button[type=submit]");

  function showErrors(list) {
    errors.textContent = "";
    list.forEach(function (message) {
      var p = document.createElement("p");
      p.textContent = message;
      errors.appendChild(p);
    });
    errors.hidden = list.length === 0;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var xhr = new XMLHttpRequest();
    xhr.open("POST", form.action || window.location.href);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", function (e) {
      if (!e.lengthComputable) return;
      var percent = Math.round((e.loaded / e.total) * 100);
      progress.value = percent;
      status.textContent = percent < 100 ? "Uploading… " + percent + "%" : "Checking the archive…";
    });
    xhr.addEventListener("load", function () {
      var data = null;
      try { data = JSON.parse(xhr.responseText); } catch (e) { data = null; }
      if (xhr.status === 201 && data && data.url) {
        status.textContent = "Stored.";
        window.location.assign(data.url);
        return;
      }
      button.disabled = false;
      progress.hidden = true;
      status.textContent = "";
      var messages = [];
      if (data && Array.isArray(data.errors)) {
        // The site's one error shape: [{field, code, message}], field null for the whole form.
        data.errors.forEach(function (error) {
          messages.push((error.field ? error.field + ": " : "") + error.message);
        });
      } else {
        messages.push("The upload failed (HTTP " + xhr.status + "). Please try again.");
      }
      showErrors(messages);
    });
    xhr.addEventListener("error", function () {
      button.disabled = false;
      progress.hidden = true;
      showErrors(["The connection was lost during the upload. Please try again."]);
    });
    showErrors([]);
    button.disabled = true;
    progress.value = 0;
    progress.hidden = false;
    status.textContent = "Uploading… 0%";
    xhr.send(new FormData(form));
  });
})();
