/* Thank-you page: forward the participant to the study's redirect address after a short countdown.

   Reads data-forward-url and data-forward-seconds from [data-testid="forward"] (the server filled in and
   encoded the address). The note under the button shows the countdown; "Stay on this page" stops it and
   the button stays. Inside another site's frame nothing happens on its own: the button (target="_top")
   leaves the frame when clicked, which browsers allow only after a click. */
(function () {
  "use strict";

  var box = document.querySelector('[data-testid="forward"]');
  if (!box) {
    return;
  }
  var url = box.getAttribute("data-forward-url");
  var seconds = parseInt(box.getAttribute("data-forward-seconds"), 10);
  var note = box.querySelector('[data-testid="forward-note"]');
  var count = box.querySelector("[data-forward-count]");
  var stay = box.querySelector('[data-testid="forward-stay"]');
  var framed = window.self !== window.top;
  if (!url || isNaN(seconds) || framed) {
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
