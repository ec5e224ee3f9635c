// contextfold inspector: small progressive enhancements. The pages work
// without this script; it never sends anything but GET navigations.
(function () {
  "use strict";
  document.addEventListener("keydown", function (ev) {
    // "/" focuses the first search field of the page.
    if (ev.key === "/" && !/^(INPUT|TEXTAREA)$/.test(document.activeElement.tagName)) {
      var f = document.querySelector("#f-term, #prompt, #q");
      if (f) { ev.preventDefault(); f.focus(); }
    }
    // Ctrl/Cmd+Enter in the simulator runs the scan.
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && document.activeElement.id === "prompt") {
      ev.preventDefault();
      document.getElementById("scan-form").submit();
    }
  });
  // Enter in the prompt box runs the scan (Shift+Enter for a new line).
  var prompt = document.getElementById("prompt");
  if (prompt) {
    prompt.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.ctrlKey && !ev.metaKey) {
        ev.preventDefault();
        document.getElementById("scan-form").submit();
      }
    });
  }
  // Clicking a hash selects it whole, ready to copy.
  document.querySelectorAll("td.hash").forEach(function (td) {
    td.addEventListener("click", function () {
      var r = document.createRange();
      r.selectNodeContents(td);
      var s = window.getSelection();
      s.removeAllRanges();
      s.addRange(r);
    });
  });
})();
