// The review form: drafts saved on the server while the reviewer types
// (debounced), and keyboard shortcuts for scores and submitting.
(function () {
  "use strict";
  var form = document.getElementById("review-form");
  if (!form) return;
  var status = document.getElementById("draft-status");
  var draftUrl = form.dataset.draftUrl;
  var DELAY_MS = 700;
  var timer = null;
  var dirty = false;
  var submitting = false;

  function show(text, state) {
    if (!status) return;
    status.textContent = text;
    status.dataset.state = state;
  }

  function save() {
    timer = null;
    if (submitting) return Promise.resolve();
    dirty = false;
    show("Saving draft…", "saving");
    // The form's own fields, CSRF token included, exactly as a submit would send them.
    return fetch(draftUrl, { method: "POST", body: new FormData(form), credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) {
          return response.json().then(function (body) {
            var errors = (body && body.errors) || [];
            var text = errors.map(function (error) { return error.message; }).join("; ");
            throw new Error(text || response.statusText);
          });
        }
        return response.json();
      })
      .then(function (body) {
        show("Draft saved " + new Date(body.saved_at).toLocaleTimeString(), "saved");
      })
      .catch(function (error) {
        dirty = true;
        show("Draft not saved: " + error.message, "error");
      });
  }

  function schedule() {
    dirty = true;
    show("Unsaved changes…", "pending");
    if (timer) clearTimeout(timer);
    timer = setTimeout(save, DELAY_MS);
  }

  // The "advance after scoring" switch is the reviewer's preference, not a field.
  var advance = document.getElementById("advance-after-scoring");
  function isField(event) { return event.target !== advance; }
  form.addEventListener("input", function (event) { if (isField(event)) schedule(); });
  form.addEventListener("change", function (event) { if (isField(event)) schedule(); });
  form.addEventListener("submit", function () {
    submitting = true;
    if (timer) clearTimeout(timer);
  });
  // Leaving the page with unsaved typing: send it anyway.
  window.addEventListener("pagehide", function () {
    if (dirty && !submitting && navigator.sendBeacon) {
      navigator.sendBeacon(draftUrl, new FormData(form));
    }
  });

  // Shortcuts: [ and ] move between score groups, 1-9 and 0 (=10) score the
  // current group and move on to the next (unless "advance after scoring" is
  // switched off, kept in this browser: then a second digit would overwrite the
  // first, so it is on by default), Ctrl/Cmd+Enter submits from anywhere.
  var ADVANCE_KEY = "mlrbench.review.advance";
  function advancing() { return Boolean(advance && advance.checked); }
  function hintShow() {
    form.querySelectorAll("[data-hint]").forEach(function (part) {
      part.hidden = (part.dataset.hint === "advance") !== advancing();
    });
  }
  if (advance) {
    try { advance.checked = window.localStorage.getItem(ADVANCE_KEY) !== "0"; } catch (e) { /* no storage */ }
    advance.addEventListener("change", function () {
      try { window.localStorage.setItem(ADVANCE_KEY, advance.checked ? "1" : "0"); } catch (e) { /* no storage */ }
      hintShow();
    });
  }
  hintShow();
  var groups = Array.prototype.slice.call(form.querySelectorAll("fieldset[data-shortcut-group]"));
  var current = 0;

  function focusGroup(index) {
    if (!groups.length) return;
    current = Math.max(0, Math.min(groups.length - 1, index));
    groups.forEach(function (group, i) { group.classList.toggle("current", i === current); });
    groups[current].scrollIntoView({ block: "nearest" });
  }

  // The keyboard focus goes with the highlight: the group's chosen score, else its first.
  function focusChoice() {
    var group = groups[current];
    var box = group && (group.querySelector('input[type="radio"]:checked') || group.querySelector('input[type="radio"]:not([disabled])'));
    if (box && document.activeElement !== box) box.focus({ preventScroll: true });
  }

  groups.forEach(function (group, i) {
    group.addEventListener("focusin", function () { focusGroup(i); });
  });
  // After a reload (the draft is restored), start at the first dimension not
  // scored yet, with the keyboard focus there too.
  var firstOpen = groups.findIndex(function (group) {
    return !group.querySelector('input[type="radio"]:checked');
  });
  focusGroup(firstOpen < 0 ? 0 : firstOpen);
  if (firstOpen > 0) {
    var box = groups[firstOpen].querySelector('input[type="radio"]:not([disabled])');
    if (box) box.focus({ preventScroll: true });
  }

  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      submitting = true;
      if (timer) clearTimeout(timer);
      form.requestSubmit();
      return;
    }
    var target = event.target;
    if (target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type === "text"))) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "]" || event.key === "[") {
      focusGroup(current + (event.key === "]" ? 1 : -1));
      focusChoice();
      event.preventDefault();
      return;
    }
    if (/^[0-9]$/.test(event.key) && groups.length) {
      var value = event.key === "0" ? "10" : event.key;
      var input = groups[current].querySelector('input[type="radio"][value="' + value + '"]');
      if (input && !input.disabled) {
        input.checked = true;
        input.dispatchEvent(new Event("change", { bubbles: true }));
        focusGroup(advancing() ? current + 1 : current);
        focusChoice();
        event.preventDefault();
      }
    }
  });
})();
