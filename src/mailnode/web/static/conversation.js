// The conversation page: keys (r reply, a reply-all, f forward, c claim, e close) and the collision notice,
// kept current by polling who holds the case and who is writing in it.
"use strict";
(function () {
  var root = document.getElementById("conversation");
  if (!root || !window.mailnode) { return; }
  var conversationId = root.getAttribute("data-conversation-id");
  var seconds = Number(root.getAttribute("data-heartbeat-seconds")) || 10;

  function lastLink(kind) {
    var links = document.querySelectorAll('.message a[data-key="' + kind + '"]');
    return links.length ? links[links.length - 1] : null;
  }
  function follow(kind) {
    return function () { var a = lastLink(kind); if (a) { window.location.assign(a.href); } };
  }
  function submit(id) {
    return function () { var f = document.getElementById(id); if (f) { f.requestSubmit(); } };
  }
  mailnode.keys.bind("r", "Reply to the latest message", follow("reply"));
  mailnode.keys.bind("a", "Reply to all of the latest message", follow("reply_all"));
  mailnode.keys.bind("f", "Forward the latest message", follow("forward"));
  mailnode.keys.bind("c", "Claim the case (or take it over)", submit("claim-form"));
  mailnode.keys.bind("e", "Close the case", submit("close-form"));

  var notice = document.getElementById("collision");
  function show(body) {
    if (!body || !notice || typeof body !== "object") { return; }
    notice.textContent = body.words || "";
    notice.setAttribute("data-kind", body.kind);
    notice.hidden = body.kind === "none";
  }
  if (document.getElementById("case-bar")) {
    mailnode.poll("/conversations/" + conversationId + "/collision", seconds, show);
  }
})();
