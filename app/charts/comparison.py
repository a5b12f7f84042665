"""The participant's question: two classifiers' confusion matrices as flow charts, bar charts and tables.

The charts follow the paper's user study (Appendix I, after Shen et al. 2020): a flow chart (Sankey, true
class -> predicted class) and a grouped bar chart of the same counts out of 100, totals on the boxes and on
the axes. Colours come from the Okabe-Ito palette (safe for the common colour-vision deficiencies) and always
mean the same class; correct and wrong predictions also differ without colour (hatching and
"correct"/"wrong" labels on the bars, straight versus crossing flows in the Sankey, a table).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from gettext import NullTranslations
from typing import Any

import numpy as np
import numpy.typing as npt

from elicitation.display import DISPLAY_DECIMALS, apportion_units, float_sum

from .common import (
    ENGLISH,
    FONT,
    GRID,
    INK,
    MUTED,
    OKABE_ITO,
    Figure,
    check_names,
    class_color,
    display_name,
    fmt,
    join_names,
    rgba,
    separators,
    set_title,
    stacked_bar_layout,
)

__all__ = [
    "COUNT_TOTAL",
    "DISPLAY_DECIMALS",
    "ON_GRID_ATOL",
    "SANKEY_LABEL_MARGIN",
    "bar_figure",
    "carried_decimals",
    "comparison_view",
    "counts_table",
    "display_decimals",
    "displayed_counts",
    "displayed_numbers",
    "progress_figure",
    "rounded_counts",
    "sankey_figure",
]


#: Participants read counts "out of 100"; each (group's) confusion matrix is scaled to this total.
COUNT_TOTAL = 100.0
#: Largest total deviation from ``COUNT_TOTAL`` accepted in an incoming confusion matrix (float noise).
TOTAL_ATOL = 1e-6
#: Differences between the two classifiers' exact counts below this are "the same" (out-of-100 units).
SAME_COUNT_ATOL = 1e-9
#: A count within this of a display step is exactly on it (float noise of a rate times a class size).
ON_GRID_ATOL = 1e-6
#: Side margin (px) of a flow chart, where its box labels go ("malignant", "54 in total").
SANKEY_LABEL_MARGIN = 92
#: A compact flow chart's side margin (px) at least, its gap between box and total (static/js/charts.js
#: ``BOX_LABEL_GAP`` plus room), and the width of one character of a total at its 13 px font.
COMPACT_SANKEY_MARGIN = 30
SANKEY_BOX_GAP = 10
TOTAL_DIGIT_PX = 8
#: A compact flow chart names the class beside each true-class box: about this many px per character of
#: the name at its 10 px font, in a left margin of at most this many px (longer names are shortened with
#: an ellipsis by static/js/charts.js), and thinner boxes leave the flows their room.
NAME_CHAR_PX = 6.6
COMPACT_NAME_MARGIN_MAX = 70
COMPACT_NODE_THICKNESS = 14
#: Plot heights (px) of the short forms that laptop screens up to 940 px tall draw (static/js/charts.js).
SHORT_SANKEY_HEIGHT = 140
SHORT_BAR_HEIGHT = 180
#: Plot heights (px) of a compact bar chart, and of one group's on a phone, where two groups stand one
#: above the other inside each classifier.
COMPACT_BAR_HEIGHT = 175
COMPACT_GROUP_BAR_HEIGHT = 130

_WRONG_PATTERN = "/"
_LEGEND_GREY = "#7b8794"

#: Sankey link opacity: correct flows strong, wrong flows faint (a luminance cue, not only a hue cue).
_CORRECT_ALPHA = 0.75
_WRONG_ALPHA = 0.35


#: A confusion matrix as Python floats (rows true class, columns predicted), and a stack of them (per group).
Matrix = list[list[float]]
Stack = list[Matrix]
#: A stack's displayed counts in display units (people, tenths or hundredths of a person).
UnitStack = list[list[list[int]]]


def _as_matrix_stack(confusion: npt.ArrayLike, name: str) -> np.ndarray:
    """Validate a ``(k, k)`` or ``(m, k, k)`` out-of-100 confusion array; return it as ``(m, k, k)``."""
    return np.array(_matrix_lists(confusion, name)[0], dtype=np.float64)


def _matrix_lists(confusion: npt.ArrayLike, name: str) -> tuple[Stack, tuple[int, ...]]:
    """`_as_matrix_stack` as Python floats, with the input's own shape."""
    try:
        array = np.array(confusion, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array: {exc}") from exc
    stack = array[np.newaxis] if array.ndim == 2 else array
    if stack.ndim != 3 or stack.shape[1] != stack.shape[2] or stack.shape[1] < 2:
        raise ValueError(f"{name} must have shape (k, k) or (m, k, k) with k >= 2, got {stack.shape}")
    matrices: Stack = stack.tolist()
    problem = _counts_problem(matrices)
    if problem is not None:
        raise ValueError(f"{name} {problem}")
    return _clipped(matrices), array.shape


def _counts_problem(matrices: Stack) -> str | None:
    """What is wrong with square matrices as counts out of 100."""
    values = _flat(matrices)
    if not all(map(math.isfinite, values)) or min(values) < -TOTAL_ATOL:
        return "must contain finite, non-negative counts"
    totals = [_matrix_total(matrix) for matrix in matrices]
    if not all(abs(total - COUNT_TOTAL) <= TOTAL_ATOL * COUNT_TOTAL for total in totals):
        return f"must sum to {COUNT_TOTAL:g} per matrix (counts out of 100), got {np.array(totals)}"
    return None


def _clipped(matrices: Stack) -> Stack:
    """Checked counts with their float noise below zero set to zero (as ``np.clip(counts, 0.0, None)``)."""
    return [[[value if value > 0.0 else 0.0 for value in row] for row in matrix] for matrix in matrices]


def _matrix_total(matrix: Matrix) -> float:
    """A matrix's total, summed as ``matrix.sum()`` sums it (one contiguous run of ``k * k`` counts)."""
    return float_sum(_flat([matrix]))


def rounded_counts(confusion: npt.ArrayLike, decimals: int = 0) -> np.ndarray:
    """Round out-of-100 counts to ``decimals`` places so that the displayed numbers still add up.

    Row totals (true-class sizes) are apportioned to sum to exactly 100, then each row's cells to its row
    total (largest remainder), so the Sankey boxes, the bar-chart axes and the table all agree. Returns an
    array of the input's shape.
    """
    if decimals not in DISPLAY_DECIMALS:
        raise ValueError(f"decimals must be one of {DISPLAY_DECIMALS}, got {decimals}")
    matrices, shape = _matrix_lists(confusion, "confusion")
    return _as_counts(_rounded(matrices, decimals), decimals, shape)


def _rounded(matrices: Stack, decimals: int) -> UnitStack:
    """`rounded_counts` of checked matrices (`_matrix_lists`), in display units.

    Sums as numpy sums them (`elicitation.display.float_sum`), apportioning on Python floats
    (`apportion_units`): the same numbers at a fraction of the array calls."""
    unit = 10.0**decimals
    total_units = round(COUNT_TOTAL * unit)
    cells: UnitStack = []
    for matrix in matrices:
        factor = COUNT_TOTAL * unit / _matrix_total(matrix)
        scaled = [[value * factor for value in row] for row in matrix]
        row_units = apportion_units([float_sum(row) for row in scaled], total_units)
        cells.append([apportion_units(row, units) for row, units in zip(scaled, row_units, strict=True)])
    return cells


def _as_counts(cells: UnitStack, decimals: int, shape: tuple[int, ...]) -> np.ndarray:
    """Counts in display units as an array of counts out of 100 (of ``shape``)."""
    result: np.ndarray = (np.array(cells, dtype=np.float64) / 10.0**decimals).reshape(shape)
    return result


def carried_decimals(confusion: npt.ArrayLike) -> int | None:
    """The fewest decimals at which a classifier's correct counts are exact, or ``None`` if at none shown.

    The counts are read as a participant reads them: each class's rate times its size out of 100
    (apportioned). A question asked on a display grid (`elicitation.display.DisplayGrid`) is exact at
    that grid's decimals; a rate off every grid is exact at none.
    """
    return _carried(_matrix_lists(confusion, "confusion")[0])


def _carried(matrices: Stack) -> int | None:
    """`carried_decimals` of checked matrices (`_matrix_lists`)."""
    sizes = [[float_sum(row) for row in matrix] for matrix in matrices]
    totals = [_matrix_total(matrix) for matrix in matrices]
    for decimals in DISPLAY_DECIMALS[:-1]:
        steps = round(COUNT_TOTAL * 10**decimals)
        if all(
            _exact(matrix, own_sizes, steps / total, steps)
            for matrix, own_sizes, total in zip(matrices, sizes, totals, strict=True)
        ):
            return decimals
    return None


def _exact(matrix: Matrix, sizes: list[float], factor: float, steps: int) -> bool:
    """Whether each class's rate times its size in ``steps`` (apportioned) is whole, to `ON_GRID_ATOL`."""
    shown_sizes = apportion_units([size * factor for size in sizes], steps)
    for index, (size, shown_size) in enumerate(zip(sizes, shown_sizes, strict=True)):
        value = (matrix[index][index] / size if size > 0.0 else 0.0) * shown_size
        if not abs(value - round(value)) <= ON_GRID_ATOL:
            return False
    return True


def display_decimals(left: npt.ArrayLike, right: npt.ArrayLike, *, keep_grid: bool = True) -> int:
    """The fewest decimals that show the two classifiers' differences faithfully, and them exactly.

    Integers (as in the paper's user study) unless rounding would hide a difference between the two
    classifiers, invert one, or invent one where the exact counts agree; then one decimal, then two. Two
    classifiers asked on a grid of tenths of a person (`carried_decimals`) keep their tenths, so the
    person reads exactly the pair the elicitor learns from (``keep_grid=False``: the faithful rule alone).
    """
    exact_left, exact_right, _shapes = _checked_pair(left, right)
    return _shown_together(exact_left, exact_right, keep_grid)[0]


def displayed_counts(left: npt.ArrayLike, right: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, int]:
    """Both classifiers' confusion matrices exactly as a question shows them (rounded together), and the
    decimals they are shown with."""
    exact_left, exact_right, (left_shape, right_shape) = _checked_pair(left, right)
    decimals, shown_left, shown_right = _shown_together(exact_left, exact_right, True)
    return (
        _as_counts(shown_left, decimals, left_shape),
        _as_counts(shown_right, decimals, right_shape),
        decimals,
    )


def displayed_numbers(left: npt.ArrayLike, right: npt.ArrayLike) -> tuple[list[Any], list[Any], int]:
    """`displayed_counts` as JSON numbers (nested lists of the inputs' shapes): whole people as integers,
    else counts of ``decimals`` places, and the decimals."""
    exact_left, exact_right, shapes = _checked_pair(left, right)
    decimals, shown_left, shown_right = _shown_together(exact_left, exact_right, True)
    unit = 10.0**decimals
    numbers = []
    for cells, shape in zip((shown_left, shown_right), shapes, strict=True):
        # A count of ``n`` units is ``n / unit`` (``numpy.round`` to ``decimals`` places keeps it so).
        side: list[Any] = cells if decimals == 0 else [[[n / unit for n in row] for row in m] for m in cells]
        numbers.append(side[0] if len(shape) == 2 else side)
    return numbers[0], numbers[1], decimals


def _checked_pair(
    left: npt.ArrayLike, right: npt.ArrayLike
) -> tuple[Stack, Stack, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Both confusion arrays checked once (`_matrix_lists`), of one shape, with their own shapes: together
    when they are valid arrays of one shape, else one by one (for the error naming the side at fault)."""
    try:
        pair = np.array((left, right), dtype=np.float64)
    except (TypeError, ValueError):
        pair = None
    if pair is not None and pair.ndim in (3, 4) and pair.shape[-1] == pair.shape[-2] >= 2:
        both = pair.tolist() if pair.ndim == 4 else [[matrix] for matrix in pair.tolist()]
        if _counts_problem(both[0] + both[1]) is None:
            shape = pair.shape[1:]
            return _clipped(both[0]), _clipped(both[1]), (shape, shape)
    exact_left, left_shape = _matrix_lists(left, "left confusion")
    exact_right, right_shape = _matrix_lists(right, "right confusion")
    left_stack = (len(exact_left), len(exact_left[0]), len(exact_left[0]))
    right_stack = (len(exact_right), len(exact_right[0]), len(exact_right[0]))
    if left_stack != right_stack:
        raise ValueError(f"left and right must have the same shape, got {left_stack} and {right_stack}")
    return exact_left, exact_right, (left_shape, right_shape)


def _shown_together(
    exact_left: Stack, exact_right: Stack, keep_grid: bool
) -> tuple[int, UnitStack, UnitStack]:
    """`display_decimals` of two checked stacks, with both stacks rounded to them (rounded together), in
    display units."""
    at_least = 0
    if keep_grid:
        left_carries, right_carries = _carried(exact_left), _carried(exact_right)
        if left_carries is not None and right_carries is not None:
            at_least = max(left_carries, right_carries)
    wanted = [
        0 if abs(difference) <= SAME_COUNT_ATOL else (1 if difference > 0.0 else -1)
        for difference in map(operator.sub, _flat(exact_left), _flat(exact_right))
    ]
    n_matrices = len(exact_left)
    for decimals in (precision for precision in DISPLAY_DECIMALS if precision >= at_least):
        shown = _rounded(exact_left + exact_right, decimals)
        shown_left, shown_right = shown[:n_matrices], shown[n_matrices:]
        # Counts in units compare as the counts do (dividing by the unit keeps distinct counts apart).
        signs = [
            (one > two) - (one < two) for one, two in zip(_flat(shown_left), _flat(shown_right), strict=True)
        ]
        if signs == wanted:
            break
    # Past every precision that keeps the order, the last (most precise) one is shown.
    return decimals, shown_left, shown_right


def _flat(matrices: Sequence[Sequence[Sequence[float]]]) -> list[float]:
    """Every cell of the matrices, matrix by matrix and row by row."""
    return [value for matrix in matrices for row in matrix for value in row]


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
    tr: NullTranslations = ENGLISH,
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
    names = check_names(class_names, k, "class")
    population = _population_label(population)
    true_totals = matrix.sum(axis=1)
    predicted_totals = matrix.sum(axis=0)
    _ = tr.gettext
    labels = [
        _("Actually %(name)s<br>%(count)s in total")
        % {"name": name, "count": fmt(true_totals[i], decimals, tr)}
        for i, name in enumerate(names)
    ] + [
        _("Predicted %(name)s<br>%(count)s in total")
        % {"name": name, "count": fmt(predicted_totals[j], decimals, tr)}
        for j, name in enumerate(names)
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
            link_colors.append(rgba(class_color(j), _CORRECT_ALPHA if correct else _WRONG_ALPHA))
            link_labels.append(_flow_text(tr, value, decimals, names[i], names[j], population))
    layout: dict[str, Any] = {
        "font": {**FONT, "size": 13, "color": INK},
        "separators": separators(tr),
        # Wide side margins hold the box labels (static/js/charts.js writes them there), so that no label
        # is drawn over a flow; charts.js narrows them on small screens, where only the totals fit.
        "margin": {"l": SANKEY_LABEL_MARGIN, "r": SANKEY_LABEL_MARGIN, "t": 36 if title else 8, "b": 8},
        "height": 180 if k <= 3 else 60 * k + 20,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
    }
    set_title(layout, title)
    totals = [fmt(total, decimals, tr) for total in [*true_totals, *predicted_totals]]
    # Narrow screens show only the totals beside the boxes: the margin fits the longest ("75.0" needs
    # more room than "75"), so no total is cut off at the chart's edge.
    compact_margin = max(COMPACT_SANKEY_MARGIN, SANKEY_BOX_GAP + TOTAL_DIGIT_PX * max(map(len, totals)))
    name_margin = SANKEY_BOX_GAP + NAME_CHAR_PX * max(len(name) for name in names)
    compact_left = round(min(COMPACT_NAME_MARGIN_MAX, max(compact_margin, name_margin)))
    short_height = SHORT_SANKEY_HEIGHT if k <= 3 else layout["height"]
    return {
        # For static/js/charts.js: the box labels it draws beside the boxes, outside the flows.
        "boxes": {"names": names + names, "totals": totals},
        # Narrow screens: the true-class boxes named with their totals, the predicted boxes' totals, and
        # thinner boxes, so that A and B fit side by side with every flow's count.
        "compact": {
            "layout": {"height": 125, "margin": {"l": compact_left, "r": compact_margin, "t": 4, "b": 4}},
            "node": {"thickness": COMPACT_NODE_THICKNESS},
        },
        # Laptop screens up to 940 px tall: a shorter chart, so that the answer buttons fit the screen.
        "short": {"layout": {"height": short_height}},
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
                    "line": {"color": INK, "width": 0.5},
                    "hovertemplate": "%{label}<extra></extra>",
                },
                "link": {
                    "source": sources,
                    "target": targets,
                    "value": values,
                    "color": link_colors,
                    # Short counts: static/js/charts.js writes them on the flows themselves.
                    "label": [fmt(value, decimals, tr) for value in values],
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
    compact_height: int = COMPACT_BAR_HEIGHT,
    tr: NullTranslations = ENGLISH,
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
    names = check_names(class_names, k, "class")
    population = _population_label(population)
    if y_max is None:
        y_max = _nice_ceiling(float(matrix.max()))
    if not np.isfinite(y_max) or y_max <= 0:
        raise ValueError(f"y_max must be a positive number, got {y_max!r}")
    true_totals = matrix.sum(axis=1)
    predicted_totals = matrix.sum(axis=0)
    _ = tr.gettext
    categories = [
        _("Actually %(name)s<br>(%(count)s in total)")
        % {"name": name, "count": fmt(true_totals[i], decimals, tr)}
        for i, name in enumerate(names)
    ]
    verdicts = (_("wrong"), _("correct"))
    traces = []
    for j, name in enumerate(names):
        column = matrix[:, j]
        traces.append(
            {
                "type": "bar",
                "name": _predicted_total(tr, name, fmt(predicted_totals[j], decimals, tr)),
                "legendgroup": f"class-{j}",
                # A trace's legend swatch copies its first bar, hatched or not; the legend entries
                # below show the plain class colour and explain the hatching once.
                "showlegend": False,
                "x": categories,
                "y": [float(value) for value in column],
                "text": [
                    f"{fmt(value, decimals, tr)}<br>{verdicts[i == j]}" for i, value in enumerate(column)
                ],
                "textposition": "outside",
                "cliponaxis": False,
                "textfont": {"size": 12, "color": INK},
                "marker": {
                    "color": class_color(j),
                    "line": {"color": INK, "width": 0.75},
                    "pattern": {
                        "shape": ["" if i == j else _WRONG_PATTERN for i in range(k)],
                        "fillmode": "overlay",
                        "fgcolor": "#ffffff",
                        "size": 8,
                        "solidity": 0.4,
                    },
                },
                "customdata": [
                    _flow_text(tr, float(value), decimals, names[i], name, population)
                    for i, value in enumerate(column)
                ],
                "hovertemplate": "%{customdata}<extra></extra>",
            }
        )
    if show_legend:
        for j, name in enumerate(names):
            traces.append(
                _legend_entry(
                    _predicted_total(tr, name, fmt(predicted_totals[j], decimals, tr)), class_color(j), "", j
                )
            )
        traces.append(_legend_entry(_("Wrong prediction (hatched)"), _LEGEND_GREY, _WRONG_PATTERN, k))
    layout: dict[str, Any] = {
        "barmode": "group",
        "bargap": 0.25,
        "bargroupgap": 0.08,
        "font": {**FONT, "size": 13, "color": INK},
        "separators": separators(tr),
        "margin": {"l": 56, "r": 8, "t": 36 if title else 12, "b": 8},
        "height": 300 if show_legend else 215,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "yaxis": {
            "title": {"text": _("%(population)s (out of 100)") % {"population": _capitalized(population)}},
            "range": [0, y_max * 1.18],
            "gridcolor": GRID,
            "zeroline": True,
            "zerolinecolor": MUTED,
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
    set_title(layout, title)
    # For static/js/charts.js on small screens: shorter category labels, no per-chart legend (the page
    # shows one legend above both classifiers) and smaller text, so that A and B fit side by side.
    compact = {
        "categories": {
            full: f"{name}<br>({fmt(true_totals[i], decimals, tr)})"
            for i, (full, name) in enumerate(zip(categories, names, strict=True))
        },
        "layout": {
            "height": compact_height,
            "showlegend": False,
            "margin": {"l": 26, "r": 2, "t": 16, "b": 8},
            "font": {"size": 11},
            "yaxis": {"title": {"text": ""}, "tickfont": {"size": 10}},
            "xaxis": {"tickfont": {"size": 10}},
        },
        "textfont_size": 10,
    }
    # The short form's axis names the population only: the full title does not fit its height.
    short_axis = {"title": {"text": _capitalized(population)}}
    short = {"layout": {"height": SHORT_BAR_HEIGHT, "yaxis": short_axis}} if not show_legend else None
    return {"data": traces, "layout": layout, "compact": compact, **({"short": short} if short else {})}


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
            "line": {"color": INK, "width": 0.75},
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


def counts_table(
    counts: npt.ArrayLike, class_names: Sequence[str], *, decimals: int = 0, tr: NullTranslations = ENGLISH
) -> dict[str, Any]:
    """The same numbers as a table: rows true class, columns predicted class, plus totals (for templates)."""
    stack = _as_matrix_stack(counts, "counts")
    if stack.shape[0] != 1:
        raise ValueError("counts_table takes one confusion matrix")
    matrix = stack[0]
    names = check_names(class_names, matrix.shape[0], "class")
    rows = [
        {
            "true_class": name,
            "cells": [
                {"value": fmt(value, decimals, tr), "correct": i == j, "predicted_class": names[j]}
                for j, value in enumerate(matrix[i])
            ],
            "total": fmt(matrix[i].sum(), decimals, tr),
        }
        for i, name in enumerate(names)
    ]
    return {
        "columns": names,
        "rows": rows,
        "column_totals": [fmt(total, decimals, tr) for total in matrix.sum(axis=0)],
        "total": fmt(matrix.sum(), decimals, tr),
    }


def comparison_view(comparison: Mapping[str, Any], tr: NullTranslations = ENGLISH) -> dict[str, Any]:
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
    class_names = [display_name(name, tr) for name in check_names(class_names, k, "class")]
    group_names = list(comparison.get("group_names") or [])
    if n_groups > 1 or group_names:
        group_names = [display_name(name, tr) for name in check_names(group_names, n_groups, "group")]
    population = _population_label(comparison.get("population") or "people")
    shown_left, shown_right, decimals = displayed_counts(left_exact, right_exact)
    shown = {"left": shown_left, "right": shown_right}
    y_max = _nice_ceiling(max(float(shown["left"].max()), float(shown["right"].max())))
    seq = comparison.get("seq", 0)
    differs = [not np.array_equal(shown["left"][group], shown["right"][group]) for group in range(n_groups)]
    same_groups = [name for name, changed in zip(group_names, differs, strict=False) if not changed]
    sides = []
    for key, label in (("left", tr.gettext("Classifier A")), ("right", tr.gettext("Classifier B"))):
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
                    "sankey": sankey_figure(
                        matrix, class_names, population=population, decimals=decimals, tr=tr
                    ),
                    "bar": bar_figure(
                        matrix,
                        class_names,
                        population=population,
                        decimals=decimals,
                        y_max=y_max,
                        show_legend=False,
                        compact_height=COMPACT_GROUP_BAR_HEIGHT if n_groups > 1 else COMPACT_BAR_HEIGHT,
                        tr=tr,
                    ),
                    "table": counts_table(matrix, class_names, decimals=decimals, tr=tr),
                    "summary": _panel_summary(matrix, class_names, population, decimals, tr),
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
        # The decimal is there because the classifiers were asked in tenths, not to show a difference.
        "decimals_for_tenths": decimals > display_decimals(left_exact, right_exact, keep_grid=False),
        "sides": sides,
        "legend": [{"name": name, "color": class_color(index)} for index, name in enumerate(class_names)],
        "same_groups": same_groups,
        "groups_text": join_names(group_names, tr),
        "same_groups_text": join_names(same_groups, tr),
    }


def _panel_summary(
    matrix: np.ndarray,
    class_names: Sequence[str],
    population: str,
    decimals: int,
    tr: NullTranslations = ENGLISH,
) -> str:
    """One sentence per chart for ``aria-label``: how many of each class were classified correctly."""
    _ = tr.gettext
    parts = [
        _("%(correct)s of %(total)s %(name)s %(population)s correctly predicted")
        % {
            "correct": fmt(matrix[i, i], decimals, tr),
            "total": fmt(matrix[i].sum(), decimals, tr),
            "name": name,
            "population": population,
        }
        for i, name in enumerate(class_names)
    ]
    return _("Out of 100 %(population)s: %(counts)s.") % {
        "population": population,
        "counts": "; ".join(parts),
    }


def _flow_text(
    tr: NullTranslations, value: float, decimals: int, actual: str, predicted: str, population: str
) -> str:
    """A flow or bar in words: "12 actually malignant patients predicted benign (wrong)"."""
    text = tr.gettext("%(count)s actually %(actual)s %(population)s predicted %(predicted)s (%(verdict)s)")
    verdict = tr.gettext("correct") if actual == predicted else tr.gettext("wrong")
    values = {"count": fmt(value, decimals, tr), "actual": actual, "population": population}
    return text % {**values, "predicted": predicted, "verdict": verdict}


def _predicted_total(tr: NullTranslations, name: str, count: str) -> str:
    return tr.gettext("Predicted %(name)s (%(count)s)") % {"name": name, "count": count}


def _capitalized(word: str) -> str:
    """The first letter in upper case, the rest as written (a German noun keeps its own capitals)."""
    return word[:1].upper() + word[1:]


def progress_figure(answered: int, estimated_total: int, *, title: str | None = None) -> Figure:
    """A horizontal progress bar: answered queries out of the (estimated) total."""
    answered, estimated_total = int(answered), int(estimated_total)
    if answered < 0 or estimated_total < 0:
        raise ValueError("answered and estimated_total must be non-negative")
    total = max(estimated_total, answered, 1)
    remaining = total - answered
    layout = stacked_bar_layout({"range": [0, total], "title": {"text": "Questions"}}, title)
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
                    "color": GRID,
                    "pattern": {"shape": ".", "fillmode": "overlay", "fgcolor": MUTED, "solidity": 0.2},
                },
                "textfont": {"color": INK},
                "hovertemplate": "about %{x} remaining<extra></extra>",
            },
        ],
        "layout": layout,
    }
