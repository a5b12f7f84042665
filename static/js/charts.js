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
  // Flows at least this thick (px) carry their count on the flow itself; thinner ones beside it.
  var MIN_LABELLED_FLOW_PX = 13;
  // Where along a flow its count sits: mistakes near their source, so that crossing flows do not
  // stack their labels in the middle; correct (straight) flows in the middle.
  var WRONG_FLOW_AT = 0.22;
  var CORRECT_FLOW_AT = 0.5;
  // A thin mistake's count stands just below the flow, at the end where the flow leaves or reaches the
  // upper of its two boxes: there the gap between two boxes lies below it, free of other flows.
  var THIN_FLOW_END = 0.06;
  // Gap (px) between a thin flow and its count, and between two counts that would touch.
  var THIN_FLOW_GAP = 2;
  var LABEL_SPACING = 1;

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

  // Where a flow's count goes: on a thick flow, on the flow; on a thin one, just below it (near the end at
  // its upper box for a mistake, in the middle for a straight flow), anchored so it stays off the boxes.
  function flowLabelPlace(link, classes, fontSize) {
    var x0 = link.source.x1;
    var x1 = link.target.x0;
    var correct = link.target.pointNumber === link.source.pointNumber + classes;
    if (link.width >= MIN_LABELLED_FLOW_PX) {
      var on = flowPoint(x0, link.y0, x1, link.y1, correct ? CORRECT_FLOW_AT : WRONG_FLOW_AT);
      return { x: on.x, y: on.y, anchor: "middle" };
    }
    var below = link.width / 2 + THIN_FLOW_GAP + fontSize / 2;
    if (correct) {
      var middle = flowPoint(x0, link.y0, x1, link.y1, CORRECT_FLOW_AT);
      return { x: middle.x, y: middle.y + below, anchor: "middle" };
    }
    var atSource = link.y1 >= link.y0; // a flow going down is higher at its source
    var end = flowPoint(x0, link.y0, x1, link.y1, atSource ? THIN_FLOW_END : 1 - THIN_FLOW_END);
    return {
      x: atSource ? x0 + THIN_FLOW_GAP : x1 - THIN_FLOW_GAP,
      y: end.y + below,
      anchor: atSource ? "start" : "end",
    };
  }

  function overlapping(a, b) {
    return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  }

  // Writes every flow's count (the trace's link.label) on or beside the flow, as in the paper's charts;
  // counts that would touch are moved apart, and every count stays inside the chart.
  function labelFlows(gd, compact) {
    gd.querySelectorAll(".flow-label").forEach(function (label) {
      label.remove();
    });
    var classes = gd.data[0].node.label.length / 2; // app.charts: true classes, then predicted
    var fontSize = compact ? 11 : 12;
    var height = gd._fullLayout ? gd._fullLayout._size.h : Infinity;
    var placed = [];
    gd.querySelectorAll(".sankey-link").forEach(function (path) {
      var datum = path.__data__;
      var link = datum && datum.link;
      if (!link || !link.label || !link.source || !link.target) {
        return;
      }
      var at = flowLabelPlace(link, classes, fontSize);
      var text = document.createElementNS(SVG_NS, "text");
      text.setAttribute("class", "flow-label");
      text.setAttribute("x", at.x.toFixed(1));
      text.setAttribute("y", at.y.toFixed(1));
      text.setAttribute("text-anchor", at.anchor);
      text.setAttribute("dominant-baseline", "central");
      text.setAttribute("font-size", String(fontSize));
      text.setAttribute("font-weight", "600");
      text.setAttribute("fill", "#1f2933");
      text.setAttribute("stroke", "#ffffff");
      text.setAttribute("stroke-width", "3");
      text.setAttribute("paint-order", "stroke");
      text.setAttribute("pointer-events", "none");
      text.textContent = link.label;
      path.parentNode.appendChild(text);
      var box = text.getBBox();
      var shift = 0;
      placed.forEach(function (other) {
        var moved = { x: box.x, y: box.y + shift, width: box.width, height: box.height };
        if (overlapping(moved, other)) {
          shift = other.y + other.height + LABEL_SPACING - box.y;
        }
      });
      // Inside the chart: a count pushed past the bottom goes above the ones it met instead.
      if (box.y + shift + box.height > height) {
        shift = Math.min(shift, height - box.height - box.y);
      }
      if (box.y + shift < 0) {
        shift = -box.y;
      }
      if (shift) {
        text.setAttribute("y", (at.y + shift).toFixed(1));
      }
      placed.push({ x: box.x, y: box.y + shift, width: box.width, height: box.height });
    });
  }

  function chartKind(figure) {
    return hasSankey(figure) ? "sankey" : "bar";
  }

  function wantsCompact(el, figure) {
    return Boolean(figure.compact) && el.clientWidth < COMPACT_BELOW_PX[chartKind(figure)];
  }

  // A full-width chart on a laptop screen no taller than this (px) takes its short form (figure.short),
  // so that the question, both classifiers and the answer buttons fit without scrolling.
  var SHORT_BELOW_PX = 940;

  function formName(el, figure) {
    if (wantsCompact(el, figure)) {
      return "compact";
    }
    return figure.short && window.innerHeight <= SHORT_BELOW_PX ? "short" : "full";
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
  function formFor(figure, form) {
    var layout = Object.assign({ autosize: true }, figure.layout || {});
    var data = figure.data || [];
    if (form === "short") {
      return { data: data, layout: merged(layout, figure.short.layout) };
    }
    if (form !== "compact") {
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
      if (spec.node && copy.node) {
        copy.node = Object.assign({}, copy.node, spec.node);
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

  // Writes each box's class and total beside it, in the chart's side margins: never over a flow. A
  // compact chart names the class beside its true-class boxes only (its predicted box stands at the same
  // height, in the same colour) and gives the predicted boxes their totals; a name too long for the
  // margin is shortened with an ellipsis (the legend and the tables carry it whole).
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
      if (compact && !onLeft) {
        text.setAttribute("dominant-baseline", "central");
        text.textContent = boxes.totals[index];
        group.parentNode.appendChild(text);
        return;
      }
      var name = document.createElementNS(SVG_NS, "tspan");
      name.setAttribute("x", x.toFixed(1));
      name.setAttribute("dy", "-0.2em");
      name.setAttribute("font-weight", "600");
      name.textContent = boxes.names[index];
      var total = document.createElementNS(SVG_NS, "tspan");
      total.setAttribute("class", "sankey-box-label__total");
      total.setAttribute("x", x.toFixed(1));
      total.setAttribute("dy", "1.2em");
      total.textContent = compact
        ? boxes.totals[index]
        : window.PageStrings.text("inTotal", { count: boxes.totals[index] });
      text.appendChild(name);
      text.appendChild(total);
      if (compact) {
        text.classList.add("sankey-box-label--compact");
      }
      group.parentNode.appendChild(text);
      if (compact) {
        fitName(name, node.x0 - BOX_LABEL_GAP + (gd._fullLayout ? gd._fullLayout.margin.l : 0));
      }
    });
  }

  // Shortens a box's class name with an ellipsis until it fits the width it has.
  function fitName(tspan, room) {
    var full = tspan.textContent;
    var keep = full.length;
    while (keep > 1 && tspan.getComputedTextLength() > room) {
      keep -= 1;
      tspan.textContent = full.slice(0, keep) + "\u2026";
    }
  }

  function draw(el, figure) {
    var name = formName(el, figure);
    var form = formFor(figure, name);
    el.setAttribute("data-chart-form", name);
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
      if (el.getAttribute("data-chart-form") !== formName(el, figure)) {
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
              var compact = gd.getAttribute("data-chart-form") === "compact";
              labelFlows(gd, compact);
              if (figure.boxes) {
                labelBoxes(gd, figure.boxes, compact);
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
