/* Draws every chart embedded in the page as JSON (<script type="application/json" id="...">) with the
   locally served plotly.js. No inline script anywhere: the CSP forbids it. A container names its figure
   with data-figure="<script id>". Also wires the "show the numbers as tables" toggle. */
(function () {
  "use strict";

  if (window.ElicitationCharts) {
    return; // already loaded by another <script> tag on this page
  }

  // Styles keyed off .js only apply when this script runs; without JavaScript the tables stay visible.
  document.documentElement.classList.add("js");

  var PLOT_CONFIG = {
    displayModeBar: false,
    responsive: true,
    scrollZoom: false,
    doubleClick: false,
    showTips: false,
  };

  function readFigure(id) {
    var source = document.getElementById(id);
    if (!source) {
      throw new Error("chart data #" + id + " is missing");
    }
    return JSON.parse(source.textContent);
  }

  function drawAll(root) {
    var containers = (root || document).querySelectorAll("[data-figure]");
    if (!containers.length) {
      return Promise.resolve([]);
    }
    if (typeof window.Plotly === "undefined") {
      containers.forEach(function (el) {
        el.classList.add("chart__plot--unavailable");
        el.setAttribute("data-chart-state", "unavailable");
      });
      return Promise.resolve([]);
    }
    var drawings = [];
    containers.forEach(function (el) {
      if (el.getAttribute("data-chart-state") === "drawn") {
        return;
      }
      var figure = readFigure(el.getAttribute("data-figure"));
      var layout = Object.assign({ autosize: true }, figure.layout || {});
      drawings.push(
        window.Plotly.newPlot(el, figure.data || [], layout, PLOT_CONFIG).then(function () {
          el.setAttribute("data-chart-state", "drawn");
        })
      );
    });
    return Promise.all(drawings).then(function () {
      document.documentElement.setAttribute("data-charts", "drawn");
    });
  }

  function wireTableToggles() {
    document.querySelectorAll("[data-table-toggle]").forEach(function (button) {
      var scope = button.closest(".comparison") || document;
      var labelShow = button.textContent;
      var labelHide = "Hide the tables";
      scope.classList.add("is-tables-collapsed");
      button.hidden = false;
      button.addEventListener("click", function () {
        var collapsed = scope.classList.toggle("is-tables-collapsed");
        button.setAttribute("aria-expanded", collapsed ? "false" : "true");
        button.textContent = collapsed ? labelShow : labelHide;
        if (!collapsed) {
          // Charts drawn while a sibling was hidden may need their width recomputed.
          window.dispatchEvent(new Event("resize"));
        }
      });
    });
  }

  function start() {
    wireTableToggles();
    drawAll(document).catch(function (error) {
      document.documentElement.setAttribute("data-charts", "failed");
      if (window.console) {
        window.console.error("chart drawing failed:", error);
      }
    });
  }

  window.ElicitationCharts = { drawAll: drawAll };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
