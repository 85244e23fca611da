// Typesets the formulas that the server marked up as <span class="math
// math-inline|math-display">; the text is untrusted, so KaTeX runs with trust off.
(function () {
  "use strict";
  if (!window.katex) return;
  document.querySelectorAll(".markdown .math").forEach(function (element) {
    try {
      window.katex.render(element.textContent, element, {
        displayMode: element.classList.contains("math-display"),
        throwOnError: false,
        trust: false,
        maxExpand: 1000,
        maxSize: 50,
      });
    } catch (e) {
      // Leave the formula as text.
    }
  });
})();
