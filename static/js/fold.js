// Long documents ([data-fold]: a paper, an idea, a file tree, a PDF's text) are
// folded after about their first screen, with a "Show all" button under them;
// the page is short to read through and nothing is hidden for good.
(function () {
  "use strict";
  var SCREEN = window.innerHeight || 900;
  document.querySelectorAll("[data-fold]").forEach(function (box) {
    // Folded to 75% of the screen; anything under 25% longer is left whole. A PDF
    // paper is not folded: its viewer is one screen, its text scrolls in its own box.
    if (box.scrollHeight <= SCREEN || box.querySelector(".pdf-viewer")) return;
    box.classList.add("folded");
    var button = document.createElement("button");
    button.type = "button";
    button.className = "button secondary fold-toggle";
    button.setAttribute("aria-expanded", "false");
    button.dataset.testid = "show-all";
    button.textContent = "Show all";
    button.addEventListener("click", function () {
      var folded = box.classList.toggle("folded");
      button.setAttribute("aria-expanded", folded ? "false" : "true");
      button.textContent = folded ? "Show all" : "Show less";
      if (folded) box.scrollIntoView({ block: "start" });
    });
    box.insertAdjacentElement("afterend", button);
    // A link reached by the keyboard inside the folded part (a paper's marked
    // numbers) unfolds the box: focus never lands where the reader cannot see.
    box.addEventListener("focusin", function () {
      if (box.classList.contains("folded")) button.click();
    });
  });
})();
