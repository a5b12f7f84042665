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

  // Below these plot widths (px) a chart takes its compact form (figure.compact from app.charts): the
  // flow chart's box labels then show totals only, the bar chart drops its legend and axis title.
  var COMPACT_BELOW_PX = { sankey: 400, bar: 300 };
  // Gap (px) between a flow chart's box and its label.
  var BOX_LABEL_GAP = 6;

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

  function chartKind(figure) {
    return hasSankey(figure) ? "sankey" : "bar";
  }

  function wantsCompact(el, figure) {
    return Boolean(figure.compact) && el.clientWidth < COMPACT_BELOW_PX[chartKind(figure)];
  }

  function merged(base, extra) {
    var out = Object.assign({}, base);
    Object.keys(extra || {}).forEach(function (key) {
      var value = extra[key];
      var isObject = value && typeof value === "object" && !Array.isArray(value);
      out[key] = isObject && base[key] && typeof base[key] === "object" ? merged(base[key], value) : value;
    });
    return out;
  }

  // The figure as drawn at this width: the full form, or its compact form (shorter category names,
  // smaller text, narrower margins).
  function formFor(figure, compact) {
    var layout = Object.assign({ autosize: true }, figure.layout || {});
    var data = figure.data || [];
    if (!compact) {
      return { data: data, layout: layout };
    }
    var spec = figure.compact;
    var names = spec.categories || {};
    data = data.map(function (trace) {
      var copy = Object.assign({}, trace);
      if (Array.isArray(copy.x)) {
        copy.x = copy.x.map(function (x) {
          return Object.prototype.hasOwnProperty.call(names, x) ? names[x] : x;
        });
      }
      if (spec.textfont_size && copy.textfont) {
        copy.textfont = Object.assign({}, copy.textfont, { size: spec.textfont_size });
      }
      return copy;
    });
    return { data: data, layout: merged(layout, spec.layout) };
  }

  function svgText(className, x, y, anchor) {
    var text = document.createElementNS(SVG_NS, "text");
    text.setAttribute("class", className);
    text.setAttribute("x", x.toFixed(1));
    text.setAttribute("y", y.toFixed(1));
    text.setAttribute("text-anchor", anchor);
    text.setAttribute("pointer-events", "none");
    return text;
  }

  // Writes each box's class and total beside it, in the chart's side margins: never over a flow.
  // Compact charts get the totals only (the page's legend names the class colours).
  function labelBoxes(gd, boxes, compact) {
    gd.querySelectorAll(".sankey-box-label").forEach(function (label) {
      label.remove();
    });
    var classes = boxes.names.length / 2;
    gd.querySelectorAll(".sankey-node").forEach(function (group) {
      var datum = group.__data__;
      var node = datum && datum.node;
      if (!node || typeof node.pointNumber !== "number") {
        return;
      }
      var index = node.pointNumber;
      var onLeft = index < classes;
      var x = onLeft ? node.x0 - BOX_LABEL_GAP : node.x1 + BOX_LABEL_GAP;
      var middle = (node.y0 + node.y1) / 2;
      var text = svgText("sankey-box-label", x, middle, onLeft ? "end" : "start");
      if (compact) {
        text.setAttribute("dominant-baseline", "central");
        text.textContent = boxes.totals[index];
      } else {
        var name = document.createElementNS(SVG_NS, "tspan");
        name.setAttribute("x", x.toFixed(1));
        name.setAttribute("dy", "-0.2em");
        name.setAttribute("font-weight", "600");
        name.textContent = boxes.names[index];
        var total = document.createElementNS(SVG_NS, "tspan");
        total.setAttribute("class", "sankey-box-label__total");
        total.setAttribute("x", x.toFixed(1));
        total.setAttribute("dy", "1.2em");
        total.textContent = window.PageStrings.text("inTotal", { count: boxes.totals[index] });
        text.appendChild(name);
        text.appendChild(total);
      }
      group.parentNode.appendChild(text);
    });
  }

  function draw(el, figure) {
    var compact = wantsCompact(el, figure);
    var form = formFor(figure, compact);
    el.setAttribute("data-chart-form", compact ? "compact" : "full");
    if (figure.boxes) {
      el.setAttribute("data-box-labels", "");
    }
    return window.Plotly.react(el, form.data, form.layout, PLOT_CONFIG);
  }

  // A window resized across a chart's compact threshold (a phone turned sideways) redraws it in the
  // other form.
  function redrawChangedForms() {
    document.querySelectorAll("[data-figure][data-chart-state='drawn']").forEach(function (el) {
      var figure = readFigure(el.getAttribute("data-figure"));
      var form = wantsCompact(el, figure) ? "compact" : "full";
      if (el.getAttribute("data-chart-form") !== form) {
        draw(el, figure);
      }
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
      drawings.push(
        draw(el, figure).then(function (gd) {
          if (hasSankey(figure)) {
            var relabel = function () {
              labelFlows(gd);
              if (figure.boxes) {
                labelBoxes(gd, figure.boxes, gd.getAttribute("data-chart-form") === "compact");
              }
            };
            relabel();
            // Plotly redraws on resize; the labels must follow the new geometry.
            gd.on("plotly_afterplot", relabel);
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
      var labelHide = window.PageStrings.text("hideTables");
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

  var resizeTimer = null;

  function start() {
    wireTableToggles();
    window.addEventListener("resize", function () {
      window.clearTimeout(resizeTimer);
      resizeTimer = window.setTimeout(redrawChangedForms, 150);
    });
    drawAll(document).catch(function (error) {
      document.documentElement.setAttribute("data-charts", "failed");
      if (window.console) {
        window.console.error("chart drawing failed:", error);
      }
    });
  }

  // Replaces a drawn chart's figure in place (the live dashboard's new numbers), same look as drawAll.
  function redraw(el, figure) {
    var layout = Object.assign({ autosize: true }, figure.layout || {});
    return window.Plotly.react(el, figure.data || [], layout, PLOT_CONFIG);
  }

  window.ElicitationCharts = { drawAll: drawAll, redraw: redraw };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
