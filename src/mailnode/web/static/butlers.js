// The Butler editor: after typing stops (data-debounce-ms), ask the server's checker about the text in the box
// (POST data-check) and put its findings beside the nodes they concern. Nothing is saved by this.
"use strict";
(function () {
  var editor = document.getElementById("editor");
  var box = document.getElementById("source");
  var out = document.getElementById("check");
  if (!editor || !box || !out || !window.mailnode) { return; }
  var url = editor.getAttribute("data-check");
  var wait = Number(editor.getAttribute("data-debounce-ms")) || 400;
  var timer = null;
  var asked = 0;

  function ask() {
    var mine = ++asked;
    editor.setAttribute("data-checking", "true");
    mailnode.post(url, { source: box.value }).then(function (response) {
      var json = (response.headers.get("content-type") || "").indexOf("json") >= 0;
      if (!json) { return { ok: false, body: { message: "the node answered " + response.status } }; }
      return response.json().then(function (body) { return { ok: response.ok, body: body }; });
    }).then(function (answer) {
      if (mine !== asked) { return; }  // A later keystroke asked again; its answer wins.
      editor.removeAttribute("data-checking");
      if (answer.ok && answer.body.html !== undefined) {
        out.innerHTML = answer.body.html;
      } else {
        var b = answer.body || {};
        out.textContent = (b.error || "E_CHECK_FAILED") + ": " + (b.message || "the checker did not answer") +
          (b.fix ? " " + b.fix : "");
      }
    }).catch(function () {
      if (mine !== asked) { return; }
      editor.removeAttribute("data-checking");
      out.textContent = "The checker could not be reached; the findings shown may be out of date.";
    });
  }

  box.addEventListener("input", function () {
    if (timer) { clearTimeout(timer); }
    timer = setTimeout(ask, wait);
  });
}());
