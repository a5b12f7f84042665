"""Pure functions that turn confusion matrices and elicited metrics into Plotly figure dicts.

Every function returns a JSON-safe ``{"data": [...], "layout": {...}}`` dict; templates embed it in a
``<script type="application/json">`` tag and ``static/js/charts.js`` draws it with the locally served
plotly.js. Nothing here touches the database, the request or the clock.

The participant charts follow the paper's user study (Appendix I, after Shen et al. 2020): a flow chart
(Sankey, true class -> predicted class) and a grouped bar chart of the same counts out of 100, totals on the
boxes and on the axes. Colours come from the Okabe-Ito palette (safe for the common colour-vision
deficiencies) and always mean the same class; correct and wrong predictions also differ without colour
(hatching and "correct"/"wrong" labels on the bars, straight versus crossing flows in the Sankey, a table).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "CLASS_COLORS",
    "COUNT_TOTAL",
    "DISPLAY_DECIMALS",
    "OKABE_ITO",
    "bar_figure",
    "class_color",
    "comparison_view",
    "counts_table",
    "display_decimals",
    "metric_weights_figure",
    "pair_heatmap_figures",
    "progress_figure",
    "quadratic_heatmap_figure",
    "register_template_globals",
    "rounded_counts",
    "sankey_figure",
    "tradeoff_figure",
]

Figure = dict[str, Any]

#: The Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008), by name.
OKABE_ITO: Mapping[str, str] = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "bluish_green": "#009E73",
    "reddish_purple": "#CC79A7",
    "sky_blue": "#56B4E9",
    "vermillion": "#D55E00",
    "yellow": "#F0E442",
    "black": "#000000",
}
#: Class ``i`` is always drawn in ``CLASS_COLORS[i % len(CLASS_COLORS)]``; blue/orange first because that
#: pair stays distinct under every common colour-vision deficiency and in greyscale.
CLASS_COLORS: tuple[str, ...] = tuple(OKABE_ITO.values())
#: Participants read counts "out of 100"; each (group's) confusion matrix is scaled to this total.
COUNT_TOTAL = 100.0
#: Decimal places tried, in order, for displayed counts (integers as in the user study when faithful).
DISPLAY_DECIMALS: tuple[int, ...] = (0, 1, 2)
#: Largest total deviation from ``COUNT_TOTAL`` accepted in an incoming confusion matrix (float noise).
TOTAL_ATOL = 1e-6
#: Differences between the two classifiers' exact counts below this are "the same" (out-of-100 units).
SAME_COUNT_ATOL = 1e-9

#: Side margin (px) of a flow chart, where its box labels go ("malignant", "54 in total").
SANKEY_LABEL_MARGIN = 92

#: Float noise allowed when flooring counts to display units, and digits kept when ranking remainders.
_UNIT_SLACK = 1e-9
_REMAINDER_DIGITS = 9

_FONT = {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"}
_INK = "#1f2933"
_MUTED = "#52606d"
_GRID = "#d9e2ec"
_WRONG_PATTERN = "/"
_LEGEND_GREY = "#7b8794"
#: Sankey link opacity: correct flows strong, wrong flows faint (a luminance cue, not only a hue cue).
_CORRECT_ALPHA = 0.75
_WRONG_ALPHA = 0.35
# A diverging blue-white-orange scale built from Okabe-Ito ends: readable with colour-vision deficiencies.
_DIVERGING_SCALE = [[0.0, "#0072B2"], [0.5, "#f7f7f7"], [1.0, "#D55E00"]]


def class_color(index: int) -> str:
    """The palette colour of class ``index`` (cycling when there are more classes than colours)."""
    if index < 0:
        raise ValueError(f"class index must be non-negative, got {index}")
    return CLASS_COLORS[index % len(CLASS_COLORS)]


def _rgba(hex_color: str, alpha: float) -> str:
    red, green, blue = (int(hex_color[pos : pos + 2], 16) for pos in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha:g})"


def _fmt(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def _set_title(layout: dict[str, Any], title: str | None) -> None:
    """Give ``layout`` the heading every figure shares (left-aligned, 14 px); no title, no heading."""
    if title:
        layout["title"] = {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 14}}


def _as_matrix_stack(confusion: npt.ArrayLike, name: str) -> np.ndarray:
    """Validate a ``(k, k)`` or ``(m, k, k)`` out-of-100 confusion array; return it as ``(m, k, k)``."""
    try:
        array = np.array(confusion, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array: {exc}") from exc
    if array.ndim == 2:
        array = array[np.newaxis]
    if array.ndim != 3 or array.shape[1] != array.shape[2] or array.shape[1] < 2:
        raise ValueError(f"{name} must have shape (k, k) or (m, k, k) with k >= 2, got {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array < -TOTAL_ATOL):
        raise ValueError(f"{name} must contain finite, non-negative counts")
    totals = array.sum(axis=(1, 2))
    if not np.allclose(totals, COUNT_TOTAL, rtol=0.0, atol=TOTAL_ATOL * COUNT_TOTAL):
        raise ValueError(f"{name} must sum to {COUNT_TOTAL:g} per matrix (counts out of 100), got {totals}")
    return np.clip(array, 0.0, None)


def _check_names(names: Sequence[str], count: int, what: str) -> list[str]:
    names = [str(name) for name in names]
    if len(names) != count:
        raise ValueError(f"expected {count} {what} names, got {len(names)}: {names}")
    if any(not name.strip() for name in names):
        raise ValueError(f"{what} names must not be empty")
    return names


def _apportion(values: np.ndarray, total_units: int) -> np.ndarray:
    """Largest-remainder rounding of non-negative ``values`` (in units) to integers summing to the total."""
    floors = np.floor(values + _UNIT_SLACK)
    # Remainders are compared after rounding away float noise, and ties go to the earlier cell (stable
    # sort): equal inputs (e.g. the same class sizes on both sides) then always round the same way.
    remainders = np.round(values - floors, _REMAINDER_DIGITS)
    shortfall = round(total_units - float(floors.sum()))
    if shortfall > 0:
        order = np.argsort(-remainders, kind="stable")
        floors[order[:shortfall]] += 1
    elif shortfall < 0:
        order = np.argsort(remainders, kind="stable")
        positive = [index for index in order if floors[index] > 0]
        floors[positive[:-shortfall]] -= 1
    return floors


def rounded_counts(confusion: npt.ArrayLike, decimals: int = 0) -> np.ndarray:
    """Round out-of-100 counts to ``decimals`` places so that the displayed numbers still add up.

    Row totals (true-class sizes) are apportioned to sum to exactly 100, then each row's cells to its row
    total (largest remainder), so the Sankey boxes, the bar-chart axes and the table all agree. Returns an
    array of the input's shape.
    """
    if decimals not in DISPLAY_DECIMALS:
        raise ValueError(f"decimals must be one of {DISPLAY_DECIMALS}, got {decimals}")
    stack = _as_matrix_stack(confusion, "confusion")
    shape = np.shape(confusion)
    unit = 10.0**decimals
    result = np.empty_like(stack)
    for index, matrix in enumerate(stack):
        scaled = matrix * (COUNT_TOTAL * unit / matrix.sum())
        row_units = _apportion(scaled.sum(axis=1), round(COUNT_TOTAL * unit))
        for row in range(matrix.shape[0]):
            result[index, row] = _apportion(scaled[row], int(row_units[row])) / unit
    return result.reshape(shape)


def display_decimals(left: npt.ArrayLike, right: npt.ArrayLike) -> int:
    """The fewest decimals that show the two classifiers' differences faithfully.

    Integers (as in the paper's user study) unless rounding would hide a difference between the two
    classifiers, invert one, or invent one where the exact counts agree; then one decimal, then two.
    """
    exact_left = _as_matrix_stack(left, "left confusion")
    exact_right = _as_matrix_stack(right, "right confusion")
    if exact_left.shape != exact_right.shape:
        raise ValueError(
            f"left and right must have the same shape, got {exact_left.shape} and {exact_right.shape}"
        )
    difference = exact_left - exact_right
    wanted = np.where(np.abs(difference) <= SAME_COUNT_ATOL, 0.0, np.sign(difference))
    for decimals in DISPLAY_DECIMALS:
        shown = np.sign(rounded_counts(exact_left, decimals) - rounded_counts(exact_right, decimals))
        if np.array_equal(shown, wanted):
            return decimals
    return DISPLAY_DECIMALS[-1]


def _population_label(population: str) -> str:
    population = str(population).strip()
    if not population:
        raise ValueError("population must be a non-empty word such as 'patients'")
    return population


def sankey_figure(
    counts: npt.ArrayLike,
    class_names: Sequence[str],
    *,
    population: str = "people",
    decimals: int = 0,
    title: str | None = None,
) -> Figure:
    """Flow chart from true class (left boxes) to predicted class (right boxes) for one classifier.

    ``counts`` is one ``(k, k)`` matrix out of 100 (rows true, columns predicted), already rounded for
    display. Boxes carry their totals; flows are coloured by predicted class, correct flows opaque and
    wrong ones faint, and their hover text says "correct"/"wrong" in words.
    """
    stack = _as_matrix_stack(counts, "counts")
    if stack.shape[0] != 1:
        raise ValueError("sankey_figure draws one confusion matrix; draw one figure per group")
    matrix = stack[0]
    k = matrix.shape[0]
    names = _check_names(class_names, k, "class")
    population = _population_label(population)
    true_totals = matrix.sum(axis=1)
    predicted_totals = matrix.sum(axis=0)
    labels = [
        f"Actually {name}<br>{_fmt(true_totals[i], decimals)} in total" for i, name in enumerate(names)
    ] + [
        f"Predicted {name}<br>{_fmt(predicted_totals[j], decimals)} in total" for j, name in enumerate(names)
    ]
    node_colors = [class_color(i) for i in range(k)] * 2
    # Fixed node positions keep class i at the same height on both sides, so correct flows run straight
    # across and mistakes visibly cross over: the shape says correct/wrong without relying on colour.
    node_x = [0.001] * k + [0.999] * k
    node_y = [(i + 0.5) / k for i in range(k)] * 2
    sources, targets, values, link_colors, link_labels = [], [], [], [], []
    for i in range(k):
        for j in range(k):
            value = float(matrix[i, j])
            if value <= 0.0:
                continue
            correct = i == j
            sources.append(i)
            targets.append(k + j)
            values.append(value)
            link_colors.append(_rgba(class_color(j), _CORRECT_ALPHA if correct else _WRONG_ALPHA))
            verdict = "correct" if correct else "wrong"
            link_labels.append(
                f"{_fmt(value, decimals)} actually {names[i]} {population} predicted {names[j]} ({verdict})"
            )
    layout: dict[str, Any] = {
        "font": {**_FONT, "size": 13, "color": _INK},
        # Wide side margins hold the box labels (static/js/charts.js writes them there), so that no label
        # is drawn over a flow; charts.js narrows them on small screens, where only the totals fit.
        "margin": {"l": SANKEY_LABEL_MARGIN, "r": SANKEY_LABEL_MARGIN, "t": 36 if title else 8, "b": 8},
        "height": 185 if k <= 3 else 60 * k + 20,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
    }
    _set_title(layout, title)
    return {
        # For static/js/charts.js: the box labels it draws beside the boxes, outside the flows.
        "boxes": {
            "names": names + names,
            "totals": [_fmt(total, decimals) for total in [*true_totals, *predicted_totals]],
        },
        # Narrow screens: only the totals beside the boxes (the page's legend names the class colours).
        "compact": {"layout": {"height": 125, "margin": {"l": 30, "r": 30, "t": 4, "b": 4}}},
        "data": [
            {
                "type": "sankey",
                "arrangement": "fixed",
                "valueformat": f".{decimals}f",
                "node": {
                    "label": labels,
                    "color": node_colors,
                    "x": node_x,
                    "y": node_y,
                    "pad": 18,
                    "thickness": 22,
                    "line": {"color": _INK, "width": 0.5},
                    "hovertemplate": "%{label}<extra></extra>",
                },
                "link": {
                    "source": sources,
                    "target": targets,
                    "value": values,
                    "color": link_colors,
                    # Short counts: static/js/charts.js writes them on the flows themselves.
                    "label": [_fmt(value, decimals) for value in values],
                    "customdata": link_labels,
                    "hovertemplate": "%{customdata}<extra></extra>",
                },
            }
        ],
        "layout": layout,
    }


def bar_figure(
    counts: npt.ArrayLike,
    class_names: Sequence[str],
    *,
    population: str = "people",
    decimals: int = 0,
    y_max: float | None = None,
    title: str | None = None,
    show_legend: bool = True,
) -> Figure:
    """Grouped bars: for each true class, how many were predicted as each class (out of 100).

    Bars are coloured by predicted class (the same colours as the Sankey), wrong predictions are hatched and
    labelled "wrong", correct ones labelled "correct"; the axes carry the true-class totals (x) and the
    legend the predicted-class totals. Pass the same ``y_max`` to both classifiers so they share a scale.
    """
    stack = _as_matrix_stack(counts, "counts")
    if stack.shape[0] != 1:
        raise ValueError("bar_figure draws one confusion matrix; draw one figure per group")
    matrix = stack[0]
    k = matrix.shape[0]
    names = _check_names(class_names, k, "class")
    population = _population_label(population)
    if y_max is None:
        y_max = _nice_ceiling(float(matrix.max()))
    if not np.isfinite(y_max) or y_max <= 0:
        raise ValueError(f"y_max must be a positive number, got {y_max!r}")
    true_totals = matrix.sum(axis=1)
    predicted_totals = matrix.sum(axis=0)
    categories = [
        f"Actually {name}<br>({_fmt(true_totals[i], decimals)} in total)" for i, name in enumerate(names)
    ]
    traces = []
    for j, name in enumerate(names):
        column = matrix[:, j]
        traces.append(
            {
                "type": "bar",
                "name": f"Predicted {name} ({_fmt(predicted_totals[j], decimals)})",
                "legendgroup": f"class-{j}",
                # A trace's legend swatch copies its first bar, hatched or not; the legend entries
                # below show the plain class colour and explain the hatching once.
                "showlegend": False,
                "x": categories,
                "y": [float(value) for value in column],
                "text": [
                    f"{_fmt(value, decimals)}<br>{'correct' if i == j else 'wrong'}"
                    for i, value in enumerate(column)
                ],
                "textposition": "outside",
                "cliponaxis": False,
                "textfont": {"size": 12, "color": _INK},
                "marker": {
                    "color": class_color(j),
                    "line": {"color": _INK, "width": 0.75},
                    "pattern": {
                        "shape": ["" if i == j else _WRONG_PATTERN for i in range(k)],
                        "fillmode": "overlay",
                        "fgcolor": "#ffffff",
                        "size": 8,
                        "solidity": 0.4,
                    },
                },
                "customdata": [
                    f"{_fmt(value, decimals)} actually {names[i]} {population} predicted {name} "
                    f"({'correct' if i == j else 'wrong'})"
                    for i, value in enumerate(column)
                ],
                "hovertemplate": "%{customdata}<extra></extra>",
            }
        )
    if show_legend:
        for j, name in enumerate(names):
            traces.append(
                _legend_entry(
                    f"Predicted {name} ({_fmt(predicted_totals[j], decimals)})", class_color(j), "", j
                )
            )
        traces.append(_legend_entry("Wrong prediction (hatched)", _LEGEND_GREY, _WRONG_PATTERN, k))
    layout: dict[str, Any] = {
        "barmode": "group",
        "bargap": 0.25,
        "bargroupgap": 0.08,
        "font": {**_FONT, "size": 13, "color": _INK},
        "margin": {"l": 56, "r": 8, "t": 36 if title else 12, "b": 8},
        "height": 300 if show_legend else 215,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "yaxis": {
            "title": {"text": f"{population.capitalize()} (out of 100)"},
            "range": [0, y_max * 1.18],
            "gridcolor": _GRID,
            "zeroline": True,
            "zerolinecolor": _MUTED,
            "fixedrange": True,
        },
        "xaxis": {"fixedrange": True, "tickfont": {"size": 13}, "automargin": True},
        "xaxis2": {"overlaying": "x", "visible": False, "fixedrange": True},
        "yaxis2": {"overlaying": "y", "visible": False, "fixedrange": True},
        "legend": {
            "orientation": "h",
            "x": 0.0,
            "y": -0.2,
            "xanchor": "left",
            "yanchor": "top",
            "font": {"size": 12},
            "itemwidth": 30,
        },
    }
    _set_title(layout, title)
    # For static/js/charts.js on small screens: shorter category labels, no per-chart legend (the page
    # shows one legend above both classifiers) and smaller text, so that A and B fit side by side.
    compact = {
        "categories": {
            full: f"{name}<br>({_fmt(true_totals[i], decimals)})"
            for i, (full, name) in enumerate(zip(categories, names, strict=True))
        },
        "layout": {
            "height": 175,
            "showlegend": False,
            "margin": {"l": 26, "r": 2, "t": 8, "b": 8},
            "font": {"size": 11},
            "yaxis": {"title": {"text": ""}, "tickfont": {"size": 10}},
            "xaxis": {"tickfont": {"size": 10}},
        },
        "textfont_size": 10,
    }
    return {"data": traces, "layout": layout, "compact": compact}


def _legend_entry(name: str, color: str, pattern: str, rank: int) -> dict[str, Any]:
    """A legend-only bar trace (no data) with a chosen swatch."""
    return {
        "type": "bar",
        "name": name,
        "x": [None],
        "y": [None],
        "legendgroup": f"class-{rank}",
        "legendrank": 1000 + rank,
        "showlegend": True,
        # On hidden axes of their own so that they take no slot among the grouped bars.
        "xaxis": "x2",
        "yaxis": "y2",
        "hoverinfo": "skip",
        "marker": {
            "color": color,
            "line": {"color": _INK, "width": 0.75},
            "pattern": {
                "shape": pattern,
                "fillmode": "overlay",
                "fgcolor": "#ffffff",
                "size": 8,
                "solidity": 0.4,
            },
        },
    }


def _nice_ceiling(value: float) -> float:
    """Round ``value`` up to a multiple of 10 (at least 10), capped at the total of 100."""
    return float(min(COUNT_TOTAL, max(10.0, np.ceil(value / 10.0) * 10.0)))


def counts_table(counts: npt.ArrayLike, class_names: Sequence[str], *, decimals: int = 0) -> dict[str, Any]:
    """The same numbers as a table: rows true class, columns predicted class, plus totals (for templates)."""
    stack = _as_matrix_stack(counts, "counts")
    if stack.shape[0] != 1:
        raise ValueError("counts_table takes one confusion matrix")
    matrix = stack[0]
    names = _check_names(class_names, matrix.shape[0], "class")
    rows = [
        {
            "true_class": name,
            "cells": [
                {"value": _fmt(value, decimals), "correct": i == j, "predicted_class": names[j]}
                for j, value in enumerate(matrix[i])
            ],
            "total": _fmt(matrix[i].sum(), decimals),
        }
        for i, name in enumerate(names)
    ]
    return {
        "columns": names,
        "rows": rows,
        "column_totals": [_fmt(total, decimals) for total in matrix.sum(axis=0)],
        "total": _fmt(matrix.sum(), decimals),
    }


_SIDES = (("left", "Classifier A"), ("right", "Classifier B"))


def comparison_view(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """Everything ``templates/sessions/_comparison.html`` draws for one query, from the route's context.

    ``comparison`` is the app's dict ``{"seq", "left": {"confusion"}, "right": {...}, "class_names",
    "group_names", "population", "practice"}`` (confusion ``(k, k)`` or ``(m, k, k)``, out of 100). Both
    sides share one display precision and one bar-chart scale so that they can be compared by eye.
    """
    try:
        left_exact = _as_matrix_stack(comparison["left"]["confusion"], "left confusion")
        right_exact = _as_matrix_stack(comparison["right"]["confusion"], "right confusion")
        class_names = list(comparison["class_names"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"comparison is missing a field: {exc}") from exc
    if left_exact.shape != right_exact.shape:
        raise ValueError(
            f"left and right confusions differ in shape: {left_exact.shape} vs {right_exact.shape}"
        )
    n_groups, k = left_exact.shape[0], left_exact.shape[1]
    class_names = _check_names(class_names, k, "class")
    group_names = list(comparison.get("group_names") or [])
    if n_groups > 1 or group_names:
        group_names = _check_names(group_names, n_groups, "group")
    population = _population_label(comparison.get("population") or "people")
    decimals = display_decimals(left_exact, right_exact)
    shown = {"left": rounded_counts(left_exact, decimals), "right": rounded_counts(right_exact, decimals)}
    y_max = _nice_ceiling(max(float(shown["left"].max()), float(shown["right"].max())))
    seq = comparison.get("seq", 0)
    differs = [not np.array_equal(shown["left"][group], shown["right"][group]) for group in range(n_groups)]
    sides = []
    for key, label in _SIDES:
        panels = []
        for group in range(n_groups):
            matrix = shown[key][group]
            group_name = group_names[group] if group_names else None
            panel_id = f"q{seq}-{key}-g{group}"
            panels.append(
                {
                    "id": panel_id,
                    "group": group_name,
                    "differs": differs[group],
                    "heading": f"{label}: {group_name}" if group_name else label,
                    "sankey": sankey_figure(matrix, class_names, population=population, decimals=decimals),
                    "bar": bar_figure(
                        matrix,
                        class_names,
                        population=population,
                        decimals=decimals,
                        y_max=y_max,
                        show_legend=False,
                    ),
                    "table": counts_table(matrix, class_names, decimals=decimals),
                    "summary": _panel_summary(matrix, class_names, population, decimals),
                }
            )
        sides.append({"key": key, "label": label, "panels": panels})
    return {
        "seq": seq,
        "practice": bool(comparison.get("practice", False)),
        "population": population,
        "class_names": class_names,
        "group_names": group_names,
        "decimals": decimals,
        "sides": sides,
        "legend": [{"name": name, "color": class_color(index)} for index, name in enumerate(class_names)],
        "same_groups": [name for name, changed in zip(group_names, differs, strict=True) if not changed]
        if group_names
        else [],
    }


def _panel_summary(matrix: np.ndarray, class_names: Sequence[str], population: str, decimals: int) -> str:
    """One sentence per chart for ``aria-label``: how many of each class were classified correctly."""
    parts = [
        f"{_fmt(matrix[i, i], decimals)} of {_fmt(matrix[i].sum(), decimals)} {name} {population} "
        "correctly predicted"
        for i, name in enumerate(class_names)
    ]
    return "Out of 100 " + population + ": " + "; ".join(parts) + "."


def metric_weights_figure(
    a: npt.ArrayLike, class_names: Sequence[str], *, title: str | None = None
) -> Figure:
    """Bar chart of the elicited linear weights ``a`` (one bar per class's correct-prediction rate)."""
    weights = np.array(a, dtype=np.float64)
    if weights.ndim != 1 or not np.all(np.isfinite(weights)):
        raise ValueError(f"a must be a finite vector, got shape {weights.shape}")
    names = _check_names(class_names, weights.shape[0], "class")
    layout: dict[str, Any] = {
        "font": {**_FONT, "size": 13, "color": _INK},
        "margin": {"l": 56, "r": 8, "t": 36 if title else 12, "b": 40},
        "height": 280,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "yaxis": {
            "title": {"text": "Weight"},
            "gridcolor": _GRID,
            "zerolinecolor": _MUTED,
            "fixedrange": True,
        },
        "xaxis": {"title": {"text": "Correct predictions of class"}, "fixedrange": True},
        "showlegend": False,
    }
    _set_title(layout, title)
    return {
        "data": [
            {
                "type": "bar",
                "x": names,
                "y": [float(w) for w in weights],
                "text": [f"{w:.3f}" for w in weights],
                "textposition": "outside",
                "cliponaxis": False,
                "marker": {
                    "color": [class_color(i) for i in range(len(names))],
                    "line": {"color": _INK, "width": 0.75},
                },
                "hovertemplate": "%{x}: %{y:.3f}<extra></extra>",
            }
        ],
        "layout": layout,
    }


def quadratic_heatmap_figure(
    B: npt.ArrayLike, class_names: Sequence[str], *, title: str | None = None
) -> Figure:
    """Annotated heat map of a ``(k, k)`` matrix (``B`` or one ``B^{uv}``) on a symmetric diverging scale."""
    matrix = np.array(B, dtype=np.float64)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or not np.all(np.isfinite(matrix)):
        raise ValueError(f"B must be a finite square matrix, got shape {matrix.shape}")
    names = _check_names(class_names, matrix.shape[0], "class")
    bound = float(np.max(np.abs(matrix))) or 1.0
    layout: dict[str, Any] = {
        "font": {**_FONT, "size": 13, "color": _INK},
        "margin": {"l": 90, "r": 8, "t": 36 if title else 12, "b": 60},
        "height": 120 + 50 * len(names),
        "paper_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {"title": {"text": "Class"}, "side": "bottom", "fixedrange": True},
        "yaxis": {"title": {"text": "Class"}, "autorange": "reversed", "fixedrange": True},
    }
    _set_title(layout, title)
    return {
        "data": [
            {
                "type": "heatmap",
                "z": matrix.tolist(),
                "x": names,
                "y": names,
                "zmin": -bound,
                "zmax": bound,
                "colorscale": _DIVERGING_SCALE,
                "text": [[f"{value:.3f}" for value in row] for row in matrix],
                "texttemplate": "%{text}",
                "hovertemplate": "%{y} × %{x}: %{z:.4f}<extra></extra>",
                "xgap": 2,
                "ygap": 2,
            }
        ],
        "layout": layout,
    }


def pair_heatmap_figures(
    B_pairs: Mapping[Any, npt.ArrayLike], class_names: Sequence[str], group_names: Sequence[str]
) -> list[tuple[str, Figure]]:
    """One heat map per group pair ``(u, v)`` of a fair metric's ``B^{uv}``, titled with the group names.

    Keys may be ``(u, v)`` tuples or ``"u,v"`` strings (the JSON form); the result is sorted by pair.
    """
    groups = _check_names(group_names, len(group_names), "group")
    parsed: list[tuple[tuple[int, int], npt.ArrayLike]] = []
    for key, matrix in B_pairs.items():
        try:
            u, v = (int(part) for part in (key.split(",") if isinstance(key, str) else key))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"B_pairs keys must be (u, v) pairs or 'u,v' strings, got {key!r}") from exc
        if not 0 <= u < v < len(groups):
            raise ValueError(f"group pair {key!r} is out of range for {len(groups)} groups")
        parsed.append(((u, v), matrix))
    figures = []
    for (u, v), matrix in sorted(parsed, key=lambda item: item[0]):
        title = f"Unfairness weights between {groups[u]} and {groups[v]}"
        figures.append((title, quadratic_heatmap_figure(matrix, class_names, title=title)))
    return figures


def tradeoff_figure(lam: float, *, title: str | None = None) -> Figure:
    """A single horizontal bar splitting the fair metric between performance (1 - lambda) and fairness."""
    lam = float(lam)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must lie in [0, 1], got {lam!r}")
    layout: dict[str, Any] = {
        "barmode": "stack",
        "font": {**_FONT, "size": 13, "color": _INK},
        "margin": {"l": 8, "r": 8, "t": 36 if title else 8, "b": 36},
        "height": 140 if title else 112,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {"range": [0, 1], "tickformat": ".0%", "fixedrange": True, "gridcolor": _GRID},
        "yaxis": {"visible": False, "fixedrange": True},
        "legend": {"orientation": "h", "x": 0.0, "y": -0.5, "yanchor": "top"},
        "showlegend": False,
    }
    _set_title(layout, title)
    parts = (
        ("Predictive performance", 1.0 - lam, OKABE_ITO["blue"], ""),
        ("Fairness", lam, OKABE_ITO["orange"], "/"),
    )
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "name": name,
                "x": [share],
                "y": ["trade-off"],
                "text": [f"{name} {share:.0%}"],
                "textposition": "inside",
                "insidetextanchor": "middle",
                "marker": {
                    "color": color,
                    "pattern": {"shape": pattern, "fgcolor": "#ffffff", "solidity": 0.3},
                },
                "hovertemplate": f"{name}: %{{x:.1%}}<extra></extra>",
            }
            for name, share, color, pattern in parts
        ],
        "layout": layout,
    }


def progress_figure(answered: int, estimated_total: int, *, title: str | None = None) -> Figure:
    """A horizontal progress bar: answered queries out of the (estimated) total."""
    answered, estimated_total = int(answered), int(estimated_total)
    if answered < 0 or estimated_total < 0:
        raise ValueError("answered and estimated_total must be non-negative")
    total = max(estimated_total, answered, 1)
    remaining = total - answered
    layout: dict[str, Any] = {
        "barmode": "stack",
        "font": {**_FONT, "size": 13, "color": _INK},
        "margin": {"l": 8, "r": 8, "t": 36 if title else 8, "b": 36},
        "height": 140 if title else 112,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {
            "range": [0, total],
            "fixedrange": True,
            "gridcolor": _GRID,
            "title": {"text": "Questions"},
        },
        "yaxis": {"visible": False, "fixedrange": True},
        "showlegend": False,
    }
    _set_title(layout, title)
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "name": "Answered",
                "x": [answered],
                "y": ["progress"],
                "text": [f"{answered} answered"],
                "textposition": "inside",
                "marker": {"color": OKABE_ITO["bluish_green"]},
                "hovertemplate": "%{x} answered<extra></extra>",
            },
            {
                "type": "bar",
                "orientation": "h",
                "name": "Remaining (estimate)",
                "x": [remaining],
                "y": ["progress"],
                "text": [f"about {remaining} left" if remaining else ""],
                "textposition": "inside",
                "marker": {
                    "color": _GRID,
                    "pattern": {"shape": ".", "fillmode": "overlay", "fgcolor": _MUTED, "solidity": 0.2},
                },
                "textfont": {"color": _INK},
                "hovertemplate": "about %{x} remaining<extra></extra>",
            },
        ],
        "layout": layout,
    }


def register_template_globals(env: Any) -> None:
    """Expose the view helpers to Jinja (``comparison_view`` is what ``_comparison.html`` calls)."""
    env.globals["comparison_view"] = comparison_view
