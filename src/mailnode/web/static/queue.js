// The queue page: new mail without a reload (polling the page's poll route), and the keyboard:
// j/k move, o/Enter open, x tick, c claim, e close, / search. Without JavaScript the page still works:
// links open, the form's buttons claim and close, the search box searches.
"use strict";
(function () {
  var root = document.getElementById("queue");
  if (!root || !window.mailnode) { return; }
  var rows = document.getElementById("rows");
  var selected = -1;

  function all() { return rows ? Array.prototype.slice.call(rows.querySelectorAll("tr.queue-row")) : []; }

  function select(index) {
    var list = all();
    if (!list.length) { return; }
    selected = Math.max(0, Math.min(index, list.length - 1));
    list.forEach(function (tr, i) { tr.classList.toggle("selected", i === selected); });
    var link = list[selected].querySelector(".open");
    if (link && link.focus) { link.focus(); }
  }

  function current() { var list = all(); return selected >= 0 ? list[selected] : null; }

  function act(action) {
    var form = document.getElementById("bulk");
    var button = document.getElementById("bulk-" + action);
    if (!form || !button) { return; }
    var ticked = document.querySelectorAll('input[name="case_id"]:checked');
    if (!ticked.length) {
      var row = current();
      var box = row && row.querySelector('input[name="case_id"]');
      if (!box) { return; }
      box.checked = true;
    }
    form.requestSubmit(button);
  }

  mailnode.keys.bind("j", "Move to the next conversation", function () { select(selected + 1); });
  mailnode.keys.bind("k", "Move to the previous conversation", function () { select(selected - 1); });
  function open() {
    var row = current();
    var link = row && row.querySelector("a.open");
    if (link) { window.location.assign(link.getAttribute("href")); }
  }
  // Enter needs no binding: the selected row's link has the focus, and Enter follows a focused link.
  mailnode.keys.bind("o", "Open the selected conversation (or Enter)", open);
  mailnode.keys.bind("x", "Tick or untick the selected conversation", function () {
    var row = current();
    var box = row && row.querySelector('input[name="case_id"]');
    if (box) { box.checked = !box.checked; }
  });
  mailnode.keys.bind("c", "Claim the ticked conversations (or the selected one)", function () { act("claim"); });
  mailnode.keys.bind("e", "Close the ticked conversations (or the selected one)", function () { act("close"); });
  mailnode.keys.bind("/", "Search this mailbox", function () {
    var q = document.getElementById("q");
    if (q) { q.focus(); q.select(); }
  });

  // A click in a row selects it, so the keys continue from there.
  if (rows) {
    rows.addEventListener("focusin", function (event) {
      var tr = event.target.closest && event.target.closest("tr.queue-row");
      var i = all().indexOf(tr);
      if (i >= 0 && i !== selected) { selected = i; all().forEach(function (r, j) { r.classList.toggle("selected", j === i); }); }
    });
  }

  var url = root.getAttribute("data-poll");
  var seconds = parseInt(root.getAttribute("data-poll-seconds"), 10) || 5;
  if (!url || !rows) { return; }
  function keys() { return all().map(function (tr) { return tr.getAttribute("data-key"); }).join(" "); }
  mailnode.poll(url, seconds, function (body) {
    if (!body || !body.keys) { return; }
    Object.keys(body.counts).forEach(function (view) {
      var el = root.querySelector('[data-count="' + view + '"]');
      if (el) { el.textContent = String(body.counts[view]); }
    });
    if (body.keys.join(" ") === keys()) { return; }
    var ticked = {};
    document.querySelectorAll('input[name="case_id"]:checked').forEach(function (b) { ticked[b.value] = true; });
    var row = current();
    var key = row ? row.getAttribute("data-key") : null;
    // Replacing the rows drops the focused link with them: the selection (and the focus, when it was on a
    // row) follows the selected conversation to where it now is, so j/k/Enter carry on from it.
    var focused = rows.contains(document.activeElement);
    rows.innerHTML = body.rows;
    document.querySelectorAll('input[name="case_id"]').forEach(function (b) { if (ticked[b.value]) { b.checked = true; } });
    if (selected < 0) { return; }
    var i = key ? all().map(function (tr) { return tr.getAttribute("data-key"); }).indexOf(key) : -1;
    if (i < 0) { i = selected; }  // the selected conversation left this view: keep the place in the list
    if (!all().length) { selected = -1; return; }
    if (focused) { select(i); } else {
      selected = Math.max(0, Math.min(i, all().length - 1));
      all()[selected].classList.add("selected");
    }
  });
})();
