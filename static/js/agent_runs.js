(function () {
  // The agent run page: a confirm before cancelling, and while the run goes on,
  // its stages, cost and new transcript steps every few seconds. Model output is
  // untrusted: it only ever goes into textContent, never into HTML.
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

  function folded(className, label, name, body) {
    var details = element("details", className);
    var summary = element("summary", "", label + " ");
    summary.appendChild(element("code", "", name));
    details.appendChild(summary);
    details.appendChild(element("pre", "", body));
    return details;
  }

  function stepItem(step) {
    var item = element("li", "step");
    item.dataset.testid = "transcript-step";
    item.dataset.index = step.index;
    var head = "#" + step.index + " · " + step.stage + " · " + step.tokens + " tokens";
    if (step.cost_usd !== null) head += " · $" + step.cost_usd.toFixed(4);
    if (step.duration_s !== null) head += " · " + step.duration_s + " s";
    item.appendChild(element("div", "step-head muted small", head));
    if (step.text) item.appendChild(element("pre", "step-text", step.text));
    step.tool_calls.forEach(function (call) {
      item.appendChild(folded("tool-call", "call", call.name, call.arguments));
    });
    step.tool_results.forEach(function (result) {
      item.appendChild(folded("tool-result", "result of", result.name, result.content));
    });
    return item;
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
    var transcript = progress.transcript;
    if (transcript.reset) list.textContent = "";
    transcript.steps.forEach(function (step) { list.appendChild(stepItem(step)); });
    after = transcript.next_after;
    return transcript.next_after < transcript.total;
  }

  function poll() {
    fetch(section.dataset.progressUrl + "?after=" + after, {headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (!response.ok) throw new Error("progress " + response.status);
        return response.json();
      })
      .then(function (progress) {
        var more = show(progress);
        // The run ended: the page itself says how (reason, submission, no cancel button).
        if (progress.is_final && !more) { window.location.reload(); return; }
        setTimeout(poll, more ? 200 : 2000);
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  setTimeout(poll, 1000);
})();
