// mailnode web inbox: the small own JavaScript every page loads (no build step, no CDN).
// mailnode.post(url, data): a POST carrying the page's CSRF token; mailnode.keys.bind(key, description, fn):
// keyboard shortcuts, listed in the "?" help overlay; mailnode.poll(url, seconds, fn): fetch url every
// `seconds` and hand the JSON (or text) to fn. <html data-keys-ready="true"> once the page's keys are bound.
"use strict";
(function () {
  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // POST `data` (a FormData, a plain object sent as a form, or a string) with the X-CSRF-Token header.
  // Resolves to the fetch Response; the caller reads its status (a refusal's JSON or HTML says why).
  function post(url, data) {
    var body = data;
    if (data && !(data instanceof FormData) && typeof data === "object") {
      body = new URLSearchParams(data);
    }
    return fetch(url, {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-CSRF-Token": csrfToken() }
    });
  }

  var bindings = [];

  function typing(target) {
    if (!target) { return false; }
    var tag = target.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || target.isContentEditable;
  }

  function renderHelp() {
    var list = document.getElementById("keys-help-list");
    if (!list) { return; }
    list.textContent = "";
    bindings.forEach(function (b) {
      var dt = document.createElement("dt");
      dt.textContent = b.key;
      var dd = document.createElement("dd");
      dd.textContent = b.description;
      list.appendChild(dt);
      list.appendChild(dd);
    });
  }

  function toggleHelp(show) {
    var help = document.getElementById("keys-help");
    if (!help) { return; }
    var open = show === undefined ? help.hidden : show;
    renderHelp();
    help.hidden = !open;
  }

  // Bind `key` (a KeyboardEvent.key value, e.g. "j", "Enter", "/") to fn(event), described in the help.
  function bind(key, description, fn) {
    bindings = bindings.filter(function (b) { return b.key !== key; });
    bindings.push({ key: key, description: description, fn: fn });
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (event.key === "Escape") { toggleHelp(false); return; }
    if (typing(event.target)) { return; }
    if (event.key === "?") { event.preventDefault(); toggleHelp(); return; }
    for (var i = 0; i < bindings.length; i++) {
      if (bindings[i].key === event.key) {
        event.preventDefault();
        bindings[i].fn(event);
        return;
      }
    }
  });

  // Fetch `url` now and every `seconds`; fn(body, response) gets the parsed JSON (or text). Returns a
  // function that stops the polling. A failed fetch is reported to fn as (null, null) and polling goes on.
  function poll(url, seconds, fn) {
    var stopped = false;
    var timer = null;
    function once() {
      if (stopped) { return; }
      fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (response) {
          var type = response.headers.get("content-type") || "";
          return (type.indexOf("json") >= 0 ? response.json() : response.text())
            .then(function (body) { fn(body, response); });
        })
        .catch(function () { fn(null, null); })
        .then(function () { if (!stopped) { timer = setTimeout(once, seconds * 1000); } });
    }
    once();
    return function () { stopped = true; if (timer) { clearTimeout(timer); } };
  }

  window.mailnode = { post: post, poll: poll, keys: { bind: bind, list: function () { return bindings.slice(); } },
                      csrfToken: csrfToken };
  bind("?", "Show or hide this list of keys", function () { toggleHelp(); });
  // Every deferred script (the page's own bindings) has run by DOMContentLoaded: say so on <html>, so a
  // keyboard user's tools (and the browser tests) know the page's keys are bound. A key pressed before
  // that, while the page is still loading, is not seen by the page.
  document.addEventListener("DOMContentLoaded", function () {
    document.documentElement.setAttribute("data-keys-ready", "true");
  });
})();
