(function () {
  // Fetch each log's tail, then follow the runs that are still going.
  document.querySelectorAll("pre[data-log-url]").forEach(function (pre) {
    if (pre.dataset.following) return;
    pre.dataset.following = "yes";
    var offset = null;
    var status = pre.closest("article").querySelector("[data-testid=run-status]");
    function poll() {
      var url = pre.dataset.logUrl + (offset === null ? "" : "?offset=" + offset);
      fetch(url, {headers: {"Accept": "application/json"}})
        .then(function (response) { return response.json(); })
        .then(function (chunk) {
          if (chunk.text) {
            pre.textContent += chunk.text;
            pre.scrollTop = pre.scrollHeight;
          }
          offset = chunk.offset;
          status.textContent = chunk.status_display;
          status.className = "status status-" + chunk.status;
          if (!chunk.finished || offset < chunk.size) {
            setTimeout(poll, chunk.text ? 300 : 1500);
          }
        })
        .catch(function () { setTimeout(poll, 5000); });
    }
    poll();
  });
})();
