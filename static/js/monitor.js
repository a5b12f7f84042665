/* The live dashboard (templates/admin/monitor.html): every few seconds while the tab is visible, fetch
   monitor.json, swap in the numbers and session list the server rendered again (escaped by its
   templates) and redraw the figures with their new data. No inline script anywhere: the CSP forbids it. */
(function () {
  "use strict";

  var root = document.querySelector("[data-live-url]");
  if (!root || typeof window.fetch !== "function") {
    return; // without the script the page keeps its "reload to see new answers" note
  }
  var url = root.getAttribute("data-live-url");
  var seconds = parseFloat(root.getAttribute("data-live-every")) || 5;
  // After failures the wait grows up to this many intervals, so a server in trouble is not hammered.
  var MAX_BACKOFF = 12;
  var note = root.querySelector("[data-live-note]");
  var stamp = root.querySelector("[data-live-time]");
  var badge = root.querySelector('[data-testid="study-status"]');
  var timer = null;
  var busy = false;
  var failures = 0;
  var stopped = false;
  var updates = 0;

  function everyText() {
    return " · updates by itself every " + seconds + " s";
  }

  function showTime(iso) {
    var moment = new Date(iso);
    if (isNaN(moment.getTime())) {
      return;
    }
    stamp.setAttribute("datetime", iso);
    stamp.textContent = moment.toLocaleTimeString();
  }

  function redrawFigures(figures) {
    var charts = window.ElicitationCharts;
    (figures || []).forEach(function (item) {
      var source = document.getElementById(item.id);
      if (source) {
        source.textContent = JSON.stringify(item.figure); // a chart drawn later reads the current data
      }
      var el = root.querySelector('[data-figure="' + item.id + '"]');
      if (charts && charts.redraw && window.Plotly && el && el.getAttribute("data-chart-state") === "drawn") {
        charts.redraw(el, item.figure);
      }
    });
  }

  function apply(body) {
    root.querySelectorAll("[data-live-part]").forEach(function (part) {
      var html = body.html && body.html[part.getAttribute("data-live-part")];
      if (typeof html === "string") {
        part.innerHTML = html; // rendered and escaped by the server's own template macros
      }
    });
    if (badge && body.status) {
      badge.textContent = body.status;
      badge.className = "badge badge--" + body.status;
    }
    showTime(body.generated_at);
    redrawFigures(body.figures);
    updates += 1;
    root.setAttribute("data-live-updates", String(updates));
  }

  function schedule() {
    if (stopped || timer !== null || document.hidden) {
      return;
    }
    var wait = seconds * Math.min(Math.pow(2, failures), MAX_BACKOFF);
    timer = window.setTimeout(poll, wait * 1000);
  }

  function poll() {
    timer = null;
    if (busy || stopped || document.hidden) {
      return;
    }
    busy = true;
    window
      .fetch(url, { credentials: "same-origin", cache: "no-store", headers: { Accept: "application/json" } })
      .then(function (response) {
        var type = response.headers.get("content-type") || "";
        if (response.ok && type.indexOf("application/json") !== 0) {
          // The login redirect answered instead of the numbers: the back-office session has ended.
          stopped = true;
          throw new Error("Your login has ended: reload the page to log in again.");
        }
        if (!response.ok) {
          throw new Error("Could not update (the server answered " + response.status + "); trying again.");
        }
        return response.json();
      })
      .then(function (body) {
        failures = 0;
        apply(body);
        note.textContent = everyText();
      })
      .catch(function (error) {
        failures += 1;
        var text = error && error.message ? error.message : "";
        if (!stopped && text.indexOf("Could not update") !== 0) {
          text = "Could not update (no connection?); trying again.";
        }
        note.textContent = " · " + text;
      })
      .then(function () {
        busy = false;
        schedule();
      });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      if (timer !== null) {
        window.clearTimeout(timer);
        timer = null;
      }
    } else if (!stopped) {
      poll(); // back on the tab: show the present at once
    }
  });

  showTime(stamp.getAttribute("datetime")); // the server wrote UTC; the coordinator reads local time
  note.textContent = everyText();
  root.setAttribute("data-live", "on");
  schedule();
})();
