// The book's one script (staged into the site's _static/ with mlmbook.css).
// 1. Every box that scrolls sideways says so. The boxes the book makes scroll (tables from
//    mlmbook.tables, Markdown tables, HTML outputs, display equations) get the class mlmbook-scroll;
//    each of them whose content is wider than the box gets mlmbook-overflowing, so the CSS shows
//    "scroll sideways" above it. Re-marked when a box changes size (a folded solution opened, the
//    window resized) and once MathJax has typeset the page. Inline math wider than its paragraph
//    (MathJax does not break it) scrolls in its own box (class mlmbook-wide-inline).
// 2. Every figure opens at full size when tapped (class mlmbook-zoomable): on a phone a figure drawn
//    for the 660-px column shows its text under 9 px; the full-size view shows it as drawn.
(function () {
  "use strict";
  function mark(box) {
    box.classList.toggle("mlmbook-overflowing", box.scrollWidth > box.clientWidth + 1);
  }
  var SCROLLING = ".mlmbook-table-wrap, .pst-scrollable-table-container, .cell_output .output.text_html, "
    + "mjx-container[display=\"true\"]";
  var seen = window.ResizeObserver ? new ResizeObserver(function (entries) {
    entries.forEach(function (e) { mark(e.target); });
  }) : null;
  function wideInline() {
    var inline = document.querySelectorAll("main mjx-container:not([display=\"true\"])");
    for (var i = 0; i < inline.length; i++) {
      var math = inline[i], block = math.parentElement && math.parentElement.closest("p, li, dd, td, th, div");
      math.classList.remove("mlmbook-wide-inline");
      if (block && math.getBoundingClientRect().width > block.clientWidth + 1) {
        math.classList.add("mlmbook-wide-inline");
      }
    }
  }
  function markAll() {
    wideInline();
    var known = document.querySelectorAll(SCROLLING);
    for (var j = 0; j < known.length; j++) {
      known[j].classList.add("mlmbook-scroll");
    }
    var boxes = document.querySelectorAll(".mlmbook-scroll");
    for (var i = 0; i < boxes.length; i++) {
      mark(boxes[i]);
      if (seen && !boxes[i].dataset.mlmbookSeen) {
        boxes[i].dataset.mlmbookSeen = "1";
        seen.observe(boxes[i]);
      }
    }
  }
  function close(over) {
    over.remove();
    document.removeEventListener("keydown", over.mlmbookKey);
  }
  function zoom(img) {
    var over = document.createElement("div");
    over.className = "mlmbook-zoom-overlay";
    over.setAttribute("role", "dialog");
    over.setAttribute("aria-label", "the figure at full size; tap to close");
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt || "";
    over.appendChild(big);
    over.addEventListener("click", function () { close(over); });
    over.mlmbookKey = function (e) { if (e.key === "Escape") { close(over); } };
    document.addEventListener("keydown", over.mlmbookKey);
    document.body.appendChild(over);
  }
  function zoomable() {
    var imgs = document.querySelectorAll("main figure img, main .cell_output img");
    for (var i = 0; i < imgs.length; i++) {
      var img = imgs[i], link = img.closest("a");
      // Sphinx links a figure to its own image file: the tap opens the full-size view here instead
      if ((link && !link.classList.contains("image-reference")) || img.classList.contains("mlmbook-zoomable")) {
        continue;
      }
      img.classList.add("mlmbook-zoomable");
      img.setAttribute("tabindex", "0");
      img.setAttribute("role", "button");
      img.title = "Tap or click to open the figure at full size";
      img.addEventListener("click", function (e) { e.preventDefault(); zoom(e.currentTarget); });
      img.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); zoom(e.currentTarget); }
      });
    }
  }
  function start() {
    markAll();
    zoomable();
    window.addEventListener("resize", markAll);
    window.addEventListener("load", function () {
      markAll();
      if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
        MathJax.startup.promise.then(markAll);
      }
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
