// Live MLR-Judge progress on a submission page: polls the judgments endpoint and,
// when anything changed, swaps in the freshly rendered panel. Stops once every
// judgment is done or failed. Without JavaScript the panel is simply static.
(function () {
  "use strict";
  var FIRST_DELAY = 1000;
  var MAX_DELAY = 15000;

  function poll(panel) {
    if (panel.dataset.polling === "1") return;
    panel.dataset.polling = "1";
    var delay = FIRST_DELAY;

    function again() {
      window.setTimeout(tick, delay);
    }

    function tick() {
      fetch(panel.dataset.statusUrl, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      })
        .then(function (response) {
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (data) {
          if (data.signature === panel.dataset.signature) {
            // Nothing moved: wait a little longer each time, up to MAX_DELAY.
            delay = Math.min(MAX_DELAY, Math.round(delay * 1.5));
            return data;
          }
          delay = FIRST_DELAY;
          // The re-run button must come back to this page, not to the fragment.
          var url = panel.dataset.panelUrl + "?next=" +
            encodeURIComponent(window.location.pathname + window.location.search);
          return fetch(url, { credentials: "same-origin" })
            .then(function (response) {
              if (!response.ok) throw new Error("HTTP " + response.status);
              return response.text();
            })
            .then(function (html) {
              panel.innerHTML = html;
              panel.dataset.signature = data.signature;
              return data;
            });
        })
        .then(function (data) {
          panel.dataset.complete = data.complete ? "true" : "false";
          if (!data.complete) again();
        })
        .catch(function () {
          // A network hiccup or a restarting server: keep trying, less often.
          delay = Math.min(MAX_DELAY, delay * 2);
          again();
        });
    }

    if (panel.dataset.complete !== "true") again();
  }

  function start() {
    document.querySelectorAll("[data-judgments-panel]").forEach(poll);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
