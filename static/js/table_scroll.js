// A table wider than its box scrolls inside it (.table-scroll) with its first
// column kept in view; this says so where it happens: a shadow on the side with
// more columns and a line above the table. Run again on resize.
(function () {
  "use strict";
  function mark(box) {
    var scrolls = box.scrollWidth > box.clientWidth + 1;
    box.classList.toggle("scrolls", scrolls);
    box.classList.toggle("at-end", box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
    var cue = box.previousElementSibling;
    if (!cue || !cue.classList.contains("scroll-cue")) {
      cue = document.createElement("p");
      cue.className = "scroll-cue small muted";
      cue.textContent = "More columns to the right: scroll the table sideways →";
      box.parentNode.insertBefore(cue, box);
    }
    cue.hidden = !scrolls;
  }
  var boxes = Array.prototype.slice.call(document.querySelectorAll(".table-scroll"));
  boxes.forEach(function (box) {
    mark(box);
    box.addEventListener("scroll", function () { mark(box); }, { passive: true });
  });
  window.addEventListener("resize", function () { boxes.forEach(mark); });
})();

// A code block or log that scrolls inside its box can be scrolled with the
// keyboard too: it takes the focus (WCAG 2.1.1; axe scrollable-region-focusable).
(function () {
  "use strict";
  function focusable() {
    document.querySelectorAll("main pre, main .log").forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1 || box.scrollHeight > box.clientHeight + 1;
      if (scrolls && !box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");
    });
  }
  focusable();
  window.addEventListener("resize", focusable);
})();
