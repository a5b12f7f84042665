/* Thank-you page: tell a host page that frames the study that the participant finished, and forward the
   participant to the study's redirect address after a short countdown.

   Inside another site's frame the page posts {type: "elicitation-studio:finished", completion_code,
   redirect_url} to the page that frames it (a survey's own script can then store the code and move on;
   docs/panels.md). Only origins on the study's frame_ancestors list can frame the page at all, so the
   message goes to the framing origin where the browser names it and to any otherwise.

   Reads data-forward-url and data-forward-seconds from [data-testid="forward"] (the server filled in and
   encoded the address). The note under the button shows the countdown; "Stay on this page" stops it and
   the button stays. Forwarding moves this page only: inside a frame the frame goes on to the address,
   the host page stays. */
(function () {
  "use strict";

  var thanks = document.querySelector('[data-testid="thank-you"]');
  var box = document.querySelector('[data-testid="forward"]');
  var url = box ? box.getAttribute("data-forward-url") : null;

  if (thanks && window.self !== window.top) {
    var ancestors = window.location.ancestorOrigins;
    var origin = ancestors && ancestors.length ? ancestors[0] : "*";
    window.parent.postMessage(
      {
        type: "elicitation-studio:finished",
        completion_code: thanks.getAttribute("data-completion-code"),
        redirect_url: url,
      },
      origin
    );
  }

  if (!box) {
    return;
  }
  var seconds = parseInt(box.getAttribute("data-forward-seconds"), 10);
  var note = box.querySelector('[data-testid="forward-note"]');
  var count = box.querySelector("[data-forward-count]");
  var stay = box.querySelector('[data-testid="forward-stay"]');
  if (!url || isNaN(seconds)) {
    return;
  }

  var timer = null;
  function clock(total) {
    var rest = Math.max(total, 0);
    var secs = rest % 60;
    return Math.floor(rest / 60) + ":" + (secs < 10 ? "0" : "") + secs;
  }
  function go() {
    window.location.assign(url);
  }
  if (seconds <= 0) {
    go();
    return;
  }
  note.hidden = false;
  timer = window.setInterval(function () {
    seconds -= 1;
    count.textContent = clock(seconds);
    if (seconds <= 0) {
      window.clearInterval(timer);
      go();
    }
  }, 1000);
  stay.addEventListener("click", function () {
    window.clearInterval(timer);
    note.hidden = true;
  });
})();
