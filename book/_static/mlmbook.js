// The book's one script (staged into the site's _static/ with mlmbook.css).
// Every box that scrolls sideways says so. The boxes the book makes scroll (tables from
// mlmbook.tables, Markdown tables, HTML outputs) get the class mlmbook-scroll; each of them whose
// content is wider than the box gets mlmbook-overflowing, so the CSS shows "scroll sideways"
// above it. Re-marked when a box changes size (a folded solution opened, the window resized).
(function () {
  "use strict";
  function mark(box) {
    box.classList.toggle("mlmbook-overflowing", box.scrollWidth > box.clientWidth + 1);
  }
  var SCROLLING = ".mlmbook-table-wrap, .pst-scrollable-table-container, .cell_output .output.text_html";
  function markAll() {
    var known = document.querySelectorAll(SCROLLING);
    for (var j = 0; j < known.length; j++) {
      known[j].classList.add("mlmbook-scroll");
    }
    var boxes = document.querySelectorAll(".mlmbook-scroll");
    for (var i = 0; i < boxes.length; i++) {
      mark(boxes[i]);
    }
    if (window.ResizeObserver) {
      var seen = new ResizeObserver(function (entries) {
        entries.forEach(function (e) { mark(e.target); });
      });
      for (var k = 0; k < boxes.length; k++) {
        seen.observe(boxes[k]);
      }
    }
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", markAll);
  } else {
    markAll();
  }
})();
