// The composer: tells the node it is open (presence heartbeats) and shows, before you type, who else holds
// the case or writes in it, locking the fields while someone else holds it; saves the draft as you type;
// takes attachments from the file picker and from paste.
"use strict";
(function () {
  var root = document.getElementById("composer");
  if (!root || !window.mailnode) { return; }
  var form = document.getElementById("composer-form");
  var fields = document.getElementById("composer-fields");
  var sendButton = document.getElementById("send");
  var notice = document.getElementById("collision");
  var status = document.getElementById("draft-status");
  var files = document.getElementById("files");
  var attached = document.getElementById("attached");
  var conversationId = root.getAttribute("data-conversation-id");
  var heartbeat = Number(root.getAttribute("data-heartbeat-seconds")) || 10;
  var autosave = Number(root.getAttribute("data-autosave-seconds")) || 3;
  var sending = false;

  function showCollision(body) {
    if (!body || typeof body !== "object" || !("kind" in body)) { return; }
    notice.textContent = body.words || "";
    notice.setAttribute("data-kind", body.kind);
    notice.hidden = body.kind === "none";
    fields.disabled = !!body.locks_composer;
    sendButton.disabled = !!body.locks_composer;
    root.setAttribute("data-locked", body.locks_composer ? "true" : "false");
  }

  function beat(leave) {
    var data = new FormData();
    if (leave) { data.append("leave", "1"); }
    return mailnode.post("/conversations/" + conversationId + "/presence", data)
      .then(function (r) { return r.json(); }).then(showCollision)
      .catch(function () { /* the next beat tries again; the notice keeps its last words */ });
  }
  if (conversationId) {
    beat(false);
    setInterval(function () { beat(false); }, heartbeat * 1000);
    window.addEventListener("pagehide", function () {
      if (sending) { return; }
      var data = new FormData();
      data.append("leave", "1");
      data.append("csrf_token", mailnode.csrfToken());
      navigator.sendBeacon("/conversations/" + conversationId + "/presence", data);
    });
  }

  // Drafts: save a moment after the last keystroke.
  var timer = null;
  function saveDraft() {
    var data = new FormData();
    ["mailbox_id", "message_id", "mode", "draft_id", "to", "cc", "bcc", "subject", "body"].forEach(function (n) {
      var el = form.elements[n];
      if (el) { data.append(n, el.value); }
    });
    return mailnode.post("/compose/draft", data).then(function (r) {
      return r.json().then(function (body) {
        if (r.ok) {
          document.getElementById("draft-id").value = body.draft_id;
          status.textContent = "Draft saved.";
        } else {
          status.textContent = "Draft not saved: " + (body.what || body.error || r.status) +
            (body.fix ? " " + body.fix : "");
        }
      });
    }).catch(function () { status.textContent = "Draft not saved: the node did not answer."; });
  }
  form.addEventListener("input", function (event) {
    if (event.target === files) { return; }
    if (timer) { clearTimeout(timer); }
    status.textContent = "Editing…";
    timer = setTimeout(saveDraft, autosave * 1000);
  });

  // Attachments: the picker, and files pasted into the message.
  function listFiles() {
    attached.textContent = "";
    Array.prototype.forEach.call(files.files, function (f) {
      var li = document.createElement("li");
      li.textContent = f.name + " (" + f.size + " bytes)";
      attached.appendChild(li);
    });
  }
  files.addEventListener("change", listFiles);
  document.getElementById("body").addEventListener("paste", function (event) {
    var pasted = event.clipboardData && event.clipboardData.files;
    if (!pasted || !pasted.length) { return; }
    event.preventDefault();
    var all = new DataTransfer();
    Array.prototype.forEach.call(files.files, function (f) { all.items.add(f); });
    Array.prototype.forEach.call(pasted, function (f) { all.items.add(f); });
    files.files = all.files;
    listFiles();
  });

  // Ctrl+Enter (or Cmd+Enter) sends from anywhere in the form, so the keyboard alone answers mail.
  form.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && !sendButton.disabled) {
      event.preventDefault();
      form.requestSubmit(sendButton);
    }
  });

  form.addEventListener("submit", function () {
    sending = true;
    if (timer) { clearTimeout(timer); }
  });
})();
