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

  var SVG_NS = "http://www.w3.org/2000/svg";
  // Flows thinner than this (px) get no label: the text would not fit; the bars and tables show them.
  var MIN_LABELLED_FLOW_PX = 13;
  // Where along a flow its count sits: mistakes near their source, so that crossing flows do not
  // stack their labels in the middle; correct (straight) flows in the middle.
  var WRONG_FLOW_AT = 0.22;
  var CORRECT_FLOW_AT = 0.5;

  function hasSankey(figure) {
    return (figure.data || []).some(function (trace) {
      return trace.type === "sankey";
    });
  }

  // Point on a flow's centre line: plotly draws it as a cubic Bezier whose two control points sit
  // at the horizontal midpoint, at the source height and at the target height.
  function flowPoint(x0, y0, x1, y1, s) {
    var xm = (x0 + x1) / 2;
    var u = 1 - s;
    return {
      x: u * u * u * x0 + 3 * u * u * s * xm + 3 * u * s * s * xm + s * s * s * x1,
      y: y0 + (y1 - y0) * (3 * s * s - 2 * s * s * s),
    };
  }

  // Writes each flow's count (the trace's link.label) on the flow itself, as in the paper's charts.
  function labelFlows(gd) {
    gd.querySelectorAll(".flow-label").forEach(function (label) {
      label.remove();
    });
    var classes = gd.data[0].node.label.length / 2; // app.charts: true classes, then predicted
    gd.querySelectorAll(".sankey-link").forEach(function (path) {
      var datum = path.__data__;
      var link = datum && datum.link;
      if (!link || !link.label || !link.source || !link.target || link.width < MIN_LABELLED_FLOW_PX) {
        return;
      }
      var correct = link.target.pointNumber === link.source.pointNumber + classes;
      var along = correct ? CORRECT_FLOW_AT : WRONG_FLOW_AT;
      var at = flowPoint(link.source.x1, link.y0, link.target.x0, link.y1, along);
      var text = document.createElementNS(SVG_NS, "text");
      text.setAttribute("class", "flow-label");
      text.setAttribute("x", at.x.toFixed(1));
      text.setAttribute("y", at.y.toFixed(1));
      text.setAttribute("text-anchor", "middle");
      text.setAttribute("dominant-baseline", "central");
      text.setAttribute("font-size", "12");
      text.setAttribute("font-weight", "600");
      text.setAttribute("fill", "#1f2933");
      text.setAttribute("stroke", "#ffffff");
      text.setAttribute("stroke-width", "3");
      text.setAttribute("paint-order", "stroke");
      text.setAttribute("pointer-events", "none");
      text.textContent = link.label;
      path.parentNode.appendChild(text);
    });
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
        window.Plotly.newPlot(el, figure.data || [], layout, PLOT_CONFIG).then(function (gd) {
          if (hasSankey(figure)) {
            labelFlows(gd);
            // Plotly redraws on resize; the labels must follow the new geometry.
            gd.on("plotly_afterplot", function () {
              labelFlows(gd);
            });
          }
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
