"""The revealed metric, for the participant's thank-you page and the back office's result pages.

Linear weights as bars, a quadratic term as an annotated heat map on a symmetric diverging scale, a fair
metric's group-pair terms one heat map each, and its trade-off between performance and fairness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from gettext import NullTranslations
from typing import Any

import numpy as np
import numpy.typing as npt

from .common import (
    CATEGORY_AXIS,
    DIVERGING_SCALE,
    ENGLISH,
    FONT,
    GRID,
    INK,
    MUTED,
    OKABE_ITO,
    Figure,
    check_names,
    class_color,
    fmt,
    separators,
    set_title,
    stacked_bar_layout,
)

__all__ = [
    "HEATMAP_FLOOR",
    "RANGE_ATOL",
    "TRADEOFF_INSIDE_TEXT",
    "metric_weights_figure",
    "mistake_cost_figure",
    "pair_heatmap_figures",
    "quadratic_heatmap_figure",
    "tradeoff_figure",
]

#: Heat maps colour values against at least this bound, so that rounding noise reads as zero.
HEATMAP_FLOOR = 1e-3
#: A range narrower than this (the cheapest class against itself) is drawn without an error bar.
RANGE_ATOL = 1e-6
#: A trade-off segment narrower than this share carries its label outside (it would not fit inside).
TRADEOFF_INSIDE_TEXT = 0.25


def metric_weights_figure(
    a: npt.ArrayLike, class_names: Sequence[str], *, title: str | None = None
) -> Figure:
    """Bar chart of the elicited linear weights ``a`` (one bar per class's correct-prediction rate)."""
    weights = np.array(a, dtype=np.float64)
    if weights.ndim != 1 or not np.all(np.isfinite(weights)):
        raise ValueError(f"a must be a finite vector, got shape {weights.shape}")
    names = check_names(class_names, weights.shape[0], "class")
    layout: dict[str, Any] = {
        "font": {**FONT, "size": 13, "color": INK},
        "margin": {"l": 56, "r": 8, "t": 36 if title else 12, "b": 40},
        "height": 280,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "yaxis": {
            "title": {"text": "Weight"},
            "gridcolor": GRID,
            "zerolinecolor": MUTED,
            "fixedrange": True,
        },
        "xaxis": {"title": {"text": "Correct predictions of class"}, "fixedrange": True, **CATEGORY_AXIS},
        "showlegend": False,
    }
    set_title(layout, title)
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
                    "line": {"color": INK, "width": 0.75},
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
    names = check_names(class_names, matrix.shape[0], "class")
    # A matrix of rounding noise (1e-17) must not be coloured as if it were large: keep a floor.
    bound = max(float(np.max(np.abs(matrix))), HEATMAP_FLOOR)
    layout: dict[str, Any] = {
        "font": {**FONT, "size": 13, "color": INK},
        "margin": {"l": 90, "r": 8, "t": 36 if title else 12, "b": 60},
        "height": 120 + 50 * len(names),
        "paper_bgcolor": "rgba(0,0,0,0)",
        # Both axes make room for their class names (``automargin``), however long: none is cut.
        "xaxis": {
            "title": {"text": "Class"},
            "side": "bottom",
            "fixedrange": True,
            "automargin": True,
            **CATEGORY_AXIS,
        },
        "yaxis": {
            "title": {"text": "Class"},
            "autorange": "reversed",
            "fixedrange": True,
            "automargin": True,
            **CATEGORY_AXIS,
        },
    }
    set_title(layout, title)
    return {
        "data": [
            {
                "type": "heatmap",
                "z": matrix.tolist(),
                "x": names,
                "y": names,
                "zmin": -bound,
                "zmax": bound,
                "colorscale": DIVERGING_SCALE,
                "text": [[f"{round(float(value), 3) + 0.0:.3f}" for value in row] for row in matrix],
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
    groups = check_names(group_names, len(group_names), "group")
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


def tradeoff_figure(
    lam: float,
    *,
    unsettled: tuple[float, float] | None = None,
    title: str | None = None,
    tr: NullTranslations = ENGLISH,
) -> Figure:
    """A single horizontal bar splitting the fair metric between performance (1 - lambda) and fairness.

    With ``unsettled`` (a credible interval of lambda too wide to state one value) the bar shows what the
    answers did settle: performance up to ``1 - high``, fairness from ``low``, and the range between as
    not settled, so no single split is drawn that the answers did not support.
    """
    lam = float(lam)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must lie in [0, 1], got {lam!r}")
    layout = stacked_bar_layout({"range": [0, 1], "tickformat": ".0%"}, title)
    layout["separators"] = separators(tr)
    if unsettled is None:
        parts = (
            (tr.gettext("Predictive performance"), 1.0 - lam, OKABE_ITO["blue"], ""),
            (tr.gettext("Fairness"), lam, OKABE_ITO["orange"], "/"),
        )
    else:
        low, high = (min(max(float(end), 0.0), 1.0) for end in unsettled)
        parts = (
            (tr.gettext("Predictive performance"), 1.0 - high, OKABE_ITO["blue"], ""),
            (tr.gettext("Not settled by your answers"), high - low, GRID, ""),
            (tr.gettext("Fairness"), low, OKABE_ITO["orange"], "/"),
        )
    traces = []
    for name, share, color, pattern in parts:
        inside = share >= TRADEOFF_INSIDE_TEXT
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": name,
                "x": [share],
                "y": ["trade-off"],
                # An unsettled bar names its parts without shares: each end's share is only a bound.
                "text": [name if unsettled is not None else f"{name} {share:.0%}"],
                "insidetextanchor": "middle",
                # "overlay" draws the stripes over the segment's colour; the default "replace" mode
                # paints them on a transparent background, which left the fairness segment blank.
                "marker": {
                    "color": color,
                    "pattern": {
                        "shape": pattern,
                        "fillmode": "overlay",
                        "fgcolor": "#ffffff",
                        "solidity": 0.3,
                    },
                },
                "textfont": {"color": "#ffffff" if inside and color != GRID else INK},
                "textposition": "inside" if inside else "outside",
                "hovertemplate": f"{name}<extra></extra>"
                if unsettled is not None
                else f"{name}: %{{x:.1%}}<extra></extra>",
            }
        )
    return {"data": traces, "layout": layout}


def mistake_cost_figure(
    names: Sequence[str],
    times: Sequence[float],
    ranges: Sequence[tuple[float, float] | None],
    *,
    range_label: str,
    title: str | None = None,
    tr: NullTranslations = ENGLISH,
) -> Figure:
    """Horizontal bars: what a mistake on one person of each class costs, relative to the cheapest class.

    ``names`` label the bars as the reader should read them ("one malignant patient").
    ``ranges`` (a credible interval, or the range across the query region) become error bars, labelled
    in the hover text with ``range_label``. Class names sit on the y axis with room made for them
    (``automargin``), so no label is ever cut.
    """
    labels = check_names(names, len(times), "class")
    values = [float(value) for value in times]
    if not all(np.isfinite(values)) or any(value < 0 for value in values):
        raise ValueError(f"times must be finite and non-negative, got {values}")
    ranges = [pair if pair and pair[1] - pair[0] > RANGE_ATOL else None for pair in ranges]
    lows = [value - (pair[0] if pair else value) for value, pair in zip(values, ranges, strict=True)]
    highs = [(pair[1] if pair else value) - value for value, pair in zip(values, ranges, strict=True)]
    shown = any(pair is not None for pair in ranges)
    top = max([value + high for value, high in zip(values, highs, strict=True)] + [1.0])
    ranged = tr.gettext("%(label)s: %(value)s× (%(range)s %(low)s× to %(high)s×)")
    hover = [
        ranged
        % {
            "label": label,
            "value": fmt(value, 1, tr),
            "range": range_label,
            "low": fmt(pair[0], 1, tr),
            "high": fmt(pair[1], 1, tr),
        }
        if pair
        else f"{label}: {fmt(value, 1, tr)}×"
        for label, value, pair in zip(labels, values, ranges, strict=True)
    ]
    layout: dict[str, Any] = {
        "font": {**FONT, "size": 13, "color": INK},
        "margin": {"l": 8, "r": 48, "t": 36 if title else 8, "b": 56},
        "height": 118 + 46 * len(labels),
        "separators": separators(tr),
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        # The axis's name ends at the plot's right edge: centred under a plot pushed right by long class
        # names, Plotly's own axis title ran past the chart on a phone ("× the cheapest mistak").
        "annotations": [
            {
                "text": tr.gettext("× the cheapest mistake"),
                "xref": "paper",
                "x": 1,
                "xanchor": "right",
                "yref": "paper",
                "y": 0,
                "yanchor": "top",
                "yshift": -26,
                "showarrow": False,
                "font": {"color": INK},
            }
        ],
        "xaxis": {
            "range": [0, float(np.ceil(top * 1.15))],
            "gridcolor": GRID,
            "fixedrange": True,
            "automargin": True,
        },
        "yaxis": {
            "automargin": True,
            "fixedrange": True,
            "autorange": "reversed",
            "ticksuffix": "  ",
            "title": {"text": ""},
            **CATEGORY_AXIS,
        },
        "showlegend": False,
    }
    set_title(layout, title)
    trace: dict[str, Any] = {
        "type": "bar",
        "orientation": "h",
        "x": values,
        "y": labels,
        "text": [f"{fmt(value, 1, tr)}×" for value in values],
        # Inside the bar where it fits, clear of the error bar's whisker; outside a short bar.
        "textposition": "auto",
        "insidetextanchor": "start",
        "cliponaxis": False,
        "marker": {
            "color": [class_color(i) for i in range(len(labels))],
            "line": {"color": INK, "width": 0.75},
        },
        "customdata": hover,
        "hovertemplate": "%{customdata}<extra></extra>",
    }
    if shown:
        trace["error_x"] = {
            "type": "data",
            "symmetric": False,
            "array": highs,
            "arrayminus": lows,
            "color": INK,
            "thickness": 1.5,
            "width": 6,
        }
    return {"data": [trace], "layout": layout}
