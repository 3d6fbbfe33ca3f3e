// A send's page: counts down the hold window live and, once it is over, asks the node what happened.
"use strict";
(function () {
  var root = document.getElementById("send-page");
  if (!root || !window.mailnode) { return; }
  var sendId = root.getAttribute("data-send-id");
  var kind = root.getAttribute("data-kind");
  var state = root.getAttribute("data-state");
  // States a send moves on from by itself: the page keeps asking until it reaches another one. A send being
  // handed over passes through outcome_unknown (marked before submission), so that one is watched too.
  var moving = ["held", "awaiting", "throttled", "outcome_unknown"];
  var left = root.getAttribute("data-seconds-left");
  var countdown = document.getElementById("countdown");
  var outcome = document.getElementById("outcome");

  mailnode.keys.bind("u", "Back to the conversation", function () {
    var back = document.getElementById("back-to-conversation");
    if (back) { window.location.assign(back.href); }
  });

  function words(seconds) {
    var m = Math.floor(seconds / 60), s = seconds % 60;
    return m ? m + " min " + (s < 10 ? "0" : "") + s + " s" : s + " second" + (s === 1 ? "" : "s");
  }
  function watch() {
    mailnode.poll("/sends/" + sendId + "/outcome", 2, function (body) {
      if (body && body.state && body.state !== state) { window.location.reload(); }
    });
  }
  if (kind === "held" && countdown && left !== "") {
    var start = performance.now(), total = Number(left);
    var tick = function () {
      var remaining = Math.max(0, Math.ceil(total - (performance.now() - start) / 1000));
      countdown.textContent = remaining ? "Leaves in " + words(remaining) : "Leaving now…";
      outcome.textContent = remaining ? "Held: it leaves in " + words(remaining) + " unless you cancel it."
        : "Held: its hold window is over; it leaves at the next hand-over.";
      if (remaining) { setTimeout(tick, 1000); } else { watch(); }
    };
    tick();
  } else if (moving.indexOf(state) >= 0) {
    watch();
  }
})();
