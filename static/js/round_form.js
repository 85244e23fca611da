// The new round's paper list follows the chosen stage: the other stages'
// papers are hidden and unticked (a round is over one stage).
(function () {
  "use strict";
  var stage = document.querySelector("select[name=stage]");
  var boxes = document.querySelectorAll("input[name=submissions][data-stage]");
  if (!stage || !boxes.length) return;
  function follow() {
    Array.prototype.forEach.call(boxes, function (box) {
      var line = box.closest("label") || box.parentNode;
      var match = box.dataset.stage === stage.value;
      line.hidden = !match;
      if (!match) box.checked = false;
    });
    var shown = Array.prototype.filter.call(boxes, function (box) { return box.dataset.stage === stage.value; });
    var empty = document.querySelector("[data-testid=no-papers-for-stage]");
    if (empty) empty.hidden = shown.length > 0;
  }
  stage.addEventListener("change", follow);
  follow();
})();
