/* Participant query page behaviour: keyboard answers, a double-submit guard, and the timing fields.

   - ArrowLeft / ArrowRight choose the classifier on that side (A / B; B / A on a right-to-left page); T
     answers "about the same" (ArrowDown stays free for scrolling).
   - The first submission wins: later clicks or key presses are ignored and the buttons are disabled
     (the server is idempotent anyway; this keeps the page honest about what was sent).
   - Hidden inputs time_on_page_ms (since the page loaded) and hidden_ms (time the tab was hidden, from
     the Page Visibility API) are filled just before the form is sent.
   - When the participant comes back to a hidden tab, a notice says the study was paused and nothing was
     lost, in the page's language (static/js/strings.js). */
(function () {
  "use strict";

  if (window.ElicitationSession) {
    return; // already loaded by another <script> tag on this page
  }
  window.ElicitationSession = {};

  var KEY_CHOICES = {
    ArrowLeft: "choose-left",
    ArrowRight: "choose-right",
    t: "choose-tie",
    T: "choose-tie",
  };
  // A right-to-left page shows Classifier A on the right: each arrow key still picks the side it points to.
  if (document.documentElement.dir === "rtl") {
    KEY_CHOICES.ArrowLeft = "choose-right";
    KEY_CHOICES.ArrowRight = "choose-left";
  }
  // Shorter absences are tab flicks, not pauses worth a notice.
  var PAUSE_NOTICE_MIN_MS = 2000;

  // performance.now() counts from the navigation start, so the time before this deferred script ran
  // (downloading and drawing the charts) is part of the time on page.
  var shownAt = 0;
  var hiddenMs = 0;
  var hiddenSince = document.hidden ? performance.now() : null;

  function byTestId(id) {
    return document.querySelector('[data-testid="' + id + '"]');
  }

  function answerForm() {
    var button = byTestId("choose-left") || byTestId("choose-right");
    return button ? button.form : null;
  }

  function currentHiddenMs() {
    var total = hiddenMs;
    if (hiddenSince !== null) {
      total += performance.now() - hiddenSince;
    }
    return Math.round(total);
  }

  function hiddenInput(form, name) {
    var input = form.querySelector('input[name="' + name + '"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = name;
      form.appendChild(input);
    }
    return input;
  }

  function fillTimings(form) {
    hiddenInput(form, "time_on_page_ms").value = String(Math.round(performance.now() - shownAt));
    hiddenInput(form, "hidden_ms").value = String(currentHiddenMs());
  }

  function formatDuration(ms) {
    var seconds = Math.round(ms / 1000);
    if (seconds < 60) {
      return window.PageStrings.plural("seconds", seconds);
    }
    return window.PageStrings.plural("minutes", Math.round(seconds / 60));
  }

  function showResumeNotice(awayMs) {
    var notice = byTestId("resume-notice");
    if (!notice) {
      notice = document.createElement("div");
      notice.className = "notice notice--resume";
      notice.setAttribute("role", "status");
      notice.setAttribute("data-testid", "resume-notice");
      var anchor = document.querySelector("[data-testid='comparison']") || answerForm();
      if (anchor && anchor.parentNode) {
        anchor.parentNode.insertBefore(notice, anchor);
      } else {
        document.body.insertBefore(notice, document.body.firstChild);
      }
    }
    notice.textContent = window.PageStrings.text("pausedNotice", { duration: formatDuration(awayMs) });
    notice.hidden = false;
  }

  function guardForm(form, buttonsSelector, onSubmit) {
    var sent = false;
    form.addEventListener("submit", function (event) {
      if (sent) {
        event.preventDefault();
        return;
      }
      sent = true;
      var submitter = event.submitter;
      if (submitter && submitter.name) {
        // Disabled buttons are left out of the submitted data, so carry the choice in a hidden field.
        hiddenInput(form, submitter.name).value = submitter.value;
      }
      if (onSubmit) {
        onSubmit(form);
      }
      form.setAttribute("aria-busy", "true");
      form.querySelectorAll(buttonsSelector).forEach(function (button) {
        button.disabled = true;
        if (button === submitter) {
          button.classList.add("is-chosen");
        }
      });
    });
    // A page restored from the back/forward cache must accept an answer again.
    window.addEventListener("pageshow", function (event) {
      if (event.persisted) {
        // Back on a page from the back/forward cache: time it afresh as a new showing.
        shownAt = performance.now();
        hiddenMs = 0;
        hiddenSince = null;
        sent = false;
        form.removeAttribute("aria-busy");
        form.querySelectorAll(buttonsSelector).forEach(function (button) {
          button.disabled = false;
          button.classList.remove("is-chosen");
        });
      }
    });
  }

  function isTyping(target) {
    if (!target || !target.tagName) {
      return false;
    }
    var tag = target.tagName.toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || target.isContentEditable;
  }

  function onKeyDown(event) {
    if (event.defaultPrevented || event.repeat || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    if (isTyping(event.target)) {
      return;
    }
    var testId = KEY_CHOICES[event.key];
    if (!testId) {
      return;
    }
    var button = byTestId(testId);
    if (!button || button.disabled) {
      return;
    }
    event.preventDefault();
    button.focus();
    if (button.form && typeof button.form.requestSubmit === "function") {
      button.form.requestSubmit(button);
    } else {
      button.click();
    }
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      hiddenSince = performance.now();
      return;
    }
    if (hiddenSince !== null) {
      var away = performance.now() - hiddenSince;
      hiddenMs += away;
      hiddenSince = null;
      if (away >= PAUSE_NOTICE_MIN_MS && answerForm()) {
        showResumeNotice(away);
      }
    }
  });

  function start() {
    var form = answerForm();
    if (form) {
      guardForm(form, "button, input[type=submit]", fillTimings);
      document.addEventListener("keydown", onKeyDown);
    }
    var undo = byTestId("undo");
    if (undo && undo.form && undo.form !== form) {
      guardForm(undo.form, "button, input[type=submit]", null);
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
