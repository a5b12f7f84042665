"""The revealed metric, for the participant's thank-you page and the back office's result pages.

Linear weights as bars, a quadratic term as an annotated heat map on a symmetric diverging scale, a fair
metric's group-pair terms one heat map each, and its trade-off between performance and fairness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .common import (
    DIVERGING_SCALE,
    FONT,
    GRID,
    INK,
    MUTED,
    OKABE_ITO,
    Figure,
    check_names,
    class_color,
    set_title,
)

__all__ = [
    "metric_weights_figure",
    "pair_heatmap_figures",
    "quadratic_heatmap_figure",
    "tradeoff_figure",
]


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
        "xaxis": {"title": {"text": "Correct predictions of class"}, "fixedrange": True},
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
    bound = float(np.max(np.abs(matrix))) or 1.0
    layout: dict[str, Any] = {
        "font": {**FONT, "size": 13, "color": INK},
        "margin": {"l": 90, "r": 8, "t": 36 if title else 12, "b": 60},
        "height": 120 + 50 * len(names),
        "paper_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {"title": {"text": "Class"}, "side": "bottom", "fixedrange": True},
        "yaxis": {"title": {"text": "Class"}, "autorange": "reversed", "fixedrange": True},
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


def tradeoff_figure(lam: float, *, title: str | None = None) -> Figure:
    """A single horizontal bar splitting the fair metric between performance (1 - lambda) and fairness."""
    lam = float(lam)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must lie in [0, 1], got {lam!r}")
    layout: dict[str, Any] = {
        "barmode": "stack",
        "font": {**FONT, "size": 13, "color": INK},
        "margin": {"l": 8, "r": 8, "t": 36 if title else 8, "b": 36},
        "height": 140 if title else 112,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {"range": [0, 1], "tickformat": ".0%", "fixedrange": True, "gridcolor": GRID},
        "yaxis": {"visible": False, "fixedrange": True},
        "legend": {"orientation": "h", "x": 0.0, "y": -0.5, "yanchor": "top"},
        "showlegend": False,
    }
    set_title(layout, title)
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
