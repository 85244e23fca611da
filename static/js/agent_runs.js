(function () {
  // The agent run page: a confirm before cancelling, and while the run goes on,
  // its stages, cost and new transcript steps every few seconds. Model output is
  // untrusted: it only ever goes into textContent; new steps come from the server
  // drawn by the same template as the page's (escaped there), never built here.
  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });
  var section = document.getElementById("agent-run");
  if (!section || section.dataset.final === "true") return;
  var after = parseInt(section.dataset.nextAfter || "0", 10);
  var list = section.querySelector("[data-testid=transcript]");

  function element(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function showStage(stage) {
    var row = section.querySelector("tr[data-stage='" + stage.name + "']");
    if (!row) return;
    var status = row.querySelector("[data-field=status]");
    status.textContent = "";
    status.appendChild(element("span", "status status-" + stage.status, stage.status_display));
    // The time of day in UTC, as the page writes it.
    row.querySelector("[data-field=started_at]").textContent = (stage.started_at || "").slice(11, 19);
    row.querySelector("[data-field=duration_s]").textContent =
      stage.duration_s === null ? "" : stage.duration_s + " s";
    row.querySelector("[data-field=tokens]").textContent = stage.tokens;
    row.querySelector("[data-field=cost_usd]").textContent = stage.cost_usd;
    var note = row.querySelector("[data-field=note]");
    note.textContent = "";
    if (stage.error) note.appendChild(element("span", "field-error", stage.error));
    else note.textContent = stage.note;
  }

  function show(progress) {
    var status = section.querySelector("[data-testid=run-status]");
    status.textContent = progress.status_display;
    status.className = "status status-" + progress.status;
    section.querySelector("[data-testid=run-tokens]").textContent = progress.tokens;
    section.querySelector("[data-testid=run-cost]").textContent =
      "$" + Number(progress.cost_usd).toFixed(4);
    progress.stages.forEach(showStage);
  }

  // The steps from `after` on, drawn by the server; resolves to whether more are waiting.
  function fetchSteps() {
    return fetch(section.dataset.stepsUrl + "?after=" + after, {headers: {"Accept": "text/html"}})
      .then(function (response) {
        if (!response.ok) throw new Error("steps " + response.status);
        return response.text();
      })
      .then(function (html) {
        var holder = document.createElement("template");
        holder.innerHTML = html;
        var steps = holder.content.querySelector("ol");
        if (steps.dataset.reset === "true") list.textContent = "";
        while (steps.firstElementChild) list.appendChild(steps.firstElementChild);
        after = parseInt(steps.dataset.nextAfter, 10);
        return after < parseInt(steps.dataset.total, 10);
      });
  }

  function poll() {
    fetch(section.dataset.progressUrl + "?after=" + after, {headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (!response.ok) throw new Error("progress " + response.status);
        return response.json();
      })
      .then(function (progress) {
        show(progress);
        var transcript = progress.transcript;
        var waiting = transcript.reset || transcript.total > after;
        return (waiting ? fetchSteps() : Promise.resolve(false)).then(function (more) {
          // The run ended: the page itself says how (reason, submission, no cancel button).
          if (progress.is_final && !more) { window.location.reload(); return; }
          setTimeout(poll, more ? 200 : 2000);
        });
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();
