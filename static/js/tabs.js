// The tabs pattern's keys on the site's tab lists (templates/_tabs.html): Left and
// Right (Home, End) move between tabs; Enter follows the focused tab's link.
(function () {
  "use strict";
  document.querySelectorAll("[data-tabs]").forEach(function (list) {
    var tabs = Array.prototype.slice.call(list.querySelectorAll('[role="tab"]'));
    list.addEventListener("keydown", function (event) {
      var index = tabs.indexOf(document.activeElement);
      if (index < 0) return;
      var next = null;
      if (event.key === "ArrowRight") next = tabs[(index + 1) % tabs.length];
      else if (event.key === "ArrowLeft") next = tabs[(index - 1 + tabs.length) % tabs.length];
      else if (event.key === "Home") next = tabs[0];
      else if (event.key === "End") next = tabs[tabs.length - 1];
      if (!next) return;
      event.preventDefault();
      tabs.forEach(function (tab) { tab.tabIndex = tab === next ? 0 : -1; });
      next.focus();
    });
  });
})();
