"""The back office's dashboard and session pages: participants, answer rate, drop-off, convergence, agreement.

Each function takes numbers the monitoring service has already counted and returns a figure card
``{"id", "caption", "figure"}``; the figure's title goes to ``layout.meta`` only, since the page's
figcaption shows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .common import CATEGORY_AXIS, two_lines
from .common import back_office_figure as _figure

__all__ = [
    "agreement_figure",
    "answer_rate_figure",
    "coefficients_figures",
    "convergence_figure",
    "dropoff_figure",
    "ranking_figure",
    "status_figure",
]

_BLUE = "#0072B2"
_ORANGE = "#E69F00"
#: Okabe-Ito colours of the status bars in order (invited, answering, stopped, done); excluded is grey.
_STATUS_COLOURS = (_BLUE, _ORANGE, "#D55E00", "#009E73")


def _count_axis(title: str, largest: int) -> dict[str, Any]:
    """A y axis for whole counts: at most about five ticks at a round step (1, 2, 5, 10, 20, 50, ...)."""
    wanted = max(1, -(-largest // 5))
    step = next(base * 10**power for power in range(12) for base in (1, 2, 5) if base * 10**power >= wanted)
    return {"title": {"text": title}, "rangemode": "tozero", "dtick": step}


def _empty_note(text: str) -> dict[str, Any]:
    """Layout words in the middle of a chart with nothing to draw yet, so it never looks broken; the next
    live update replaces the whole layout and the words go once there is data."""
    return {
        "annotations": [
            {
                "text": text,
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 14, "color": "#52606d"},
            }
        ]
    }


def status_figure(by_status: Mapping[str, int], excluded: int) -> dict[str, Any]:
    """Sessions by status (in the mapping's order), then the excluded ones."""
    statuses = list(by_status)
    return {
        "id": "fig-status",
        "caption": "Participants by status",
        "figure": _figure(
            [
                {
                    "type": "bar",
                    "x": [*statuses, "excluded"],
                    "y": [by_status[status] for status in statuses] + [excluded],
                    "marker": {"color": [*_STATUS_COLOURS[: len(statuses)], "#999999"]},
                    "hovertemplate": "%{x}: %{y}<extra></extra>",
                }
            ],
            "Participants by status",
            xaxis=CATEGORY_AXIS,
            yaxis=_count_axis("Sessions", max([*by_status.values(), excluded, 1])),
            **(_empty_note("Nobody has started yet") if not any(by_status.values()) and not excluded else {}),
        ),
    }


def answer_rate_figure(per_minute: Sequence[int]) -> dict[str, Any]:
    """Answers per minute over the last ``len(per_minute)`` minutes, oldest first."""
    window = len(per_minute)
    return {
        "id": "fig-rate",
        "caption": "Answers per minute, last hour",
        "figure": _figure(
            [
                {
                    "type": "scatter",
                    "mode": "lines",
                    "x": list(range(-window + 1, 1)),
                    "y": list(per_minute),
                    "line": {"color": _BLUE},
                    "hovertemplate": "%{x} min: %{y} answers<extra></extra>",
                }
            ],
            "Answers per minute (last hour)",
            xaxis={"title": {"text": "Minutes ago"}},
            yaxis=_count_axis("Answers", max([*per_minute, 1])),
            **(_empty_note("No answers in the last hour") if not any(per_minute) else {}),
        ),
    }


def dropoff_figure(dropoff: Mapping[int, int], typical_total: int, stopped_after_min: int) -> dict[str, Any]:
    """Sessions that stopped part-way (no answer for ``stopped_after_min``) by the answers they gave, on an
    axis from 0 to the study's typical session (``typical_total`` comparisons), one bar per answer count."""
    keys = sorted(dropoff)
    right = max([typical_total, *keys]) + 0.5
    step = next(base for base in (1, 2, 5, 10, 20, 50, 100, 200, 500) if right / base <= 12)
    caption = f"Where participants stopped (no answer for {stopped_after_min} min)"
    return {
        "id": "fig-dropoff",
        "caption": caption,
        "figure": _figure(
            [
                {
                    "type": "bar",
                    "x": keys,
                    "y": [dropoff[key] for key in keys],
                    # One answer wide, whatever the gaps between counts (Plotly sizes bars by the gaps).
                    "width": [0.8] * len(keys),
                    "marker": {"color": _ORANGE},
                    "hovertemplate": "stopped after %{x} answers: %{y}<extra></extra>",
                }
            ],
            caption,
            xaxis={"title": {"text": "Answers given"}, "range": [-0.5, right], "dtick": step},
            yaxis=_count_axis("Sessions", max([*dropoff.values(), 1])),
            **(_empty_note("Nobody has stopped part-way") if not any(dropoff.values()) else {}),
        ),
    }


def convergence_figure(rows: Sequence[Any]) -> dict[str, Any] | None:
    """Distance between the two compared classifiers by step, one line per binary search (the paper's
    searches); None when the session has no such search (the active elicitors ask without one).

    ``rows`` are a session's standing elicitation log rows (their stored ``query``). In each LPME search the
    two compared points lie at the current interval's quartiles, so their distance shrinks with the search
    interval: the line shows the search converging. Searches are numbered in the order they were asked.
    """
    searches: dict[tuple[str, int], list[float]] = {}
    for row in rows:
        query = row.query
        if query.get("coordinate") is None:
            continue
        key = (str(query.get("search", "")), int(query["coordinate"]))
        width = float(np.linalg.norm(np.asarray(query["first"]) - np.asarray(query["second"])))
        searches.setdefault(key, []).append(width)
    if not searches:
        return None
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": f"search {number}",
            "x": list(range(1, len(widths) + 1)),
            "y": widths,
            "hovertemplate": "question %{x}: %{y:.3f}<extra>%{fullData.name}</extra>",
        }
        for number, widths in enumerate(searches.values(), start=1)
    ]
    return {
        "id": "fig-convergence",
        "caption": "How each search narrowed down",
        "figure": _figure(
            data,
            "Distance between the two classifiers compared, question by question within each search",
            showlegend=len(data) <= 8,
            height=340,
            xaxis={"title": {"text": "Question within the search"}, "dtick": 1},
            yaxis={"title": {"text": "Distance between compared rates"}, "type": "log"},
        ),
    }


#: An agreement bar: who or what, the percentage, and its 95 % interval (``None`` ends when unknown).
AgreementBar = tuple[str, float | None, float | None, float | None]


def _interval_bars(values: Sequence[AgreementBar]) -> list[dict[str, Any]]:
    """Bars of agreement percentages and, over each, a line from its 95 % Wilson interval's low to high.

    The intervals are a line trace rather than plotly's error bars, which style themselves inline (the
    pages' Content Security Policy refuses inline styles).
    """
    heights = [value if value is not None else 0.0 for _label, value, _low, _high in values]
    labels = [label for label, _value, _low, _high in values]
    x: list[str | None] = []
    y: list[float | None] = []
    for label, _value, low, high in values:
        if low is not None and high is not None:
            x += [label, label, None]
            y += [low, high, None]
    lows = [bar[2] if bar[2] is not None else height for bar, height in zip(values, heights, strict=True)]
    highs = [bar[3] if bar[3] is not None else height for bar, height in zip(values, heights, strict=True)]
    return [
        {
            "type": "bar",
            "x": labels,
            "y": heights,
            "customdata": [[low, high] for low, high in zip(lows, highs, strict=True)],
            "hovertemplate": (
                "%{x}: %{y:.0f}% (95% interval %{customdata[0]:.0f}–%{customdata[1]:.0f}%)<extra></extra>"
            ),
            "showlegend": False,
        },
        {
            "type": "scatter",
            "mode": "lines",
            "name": "95% interval",
            "x": x,
            "y": y,
            "line": {"color": "#333333", "width": 2},
            "hoverinfo": "skip",
            "showlegend": False,
        },
    ]


def agreement_figure(values: Sequence[AgreementBar]) -> dict[str, Any]:
    """Agreement (the paper's M: percent of evaluation pairs the metric answers as the participant did) of the
    elicited metric and its baselines, each with its 95 % Wilson interval."""
    bars, intervals = _interval_bars(values)
    bars["marker"] = {"color": [_BLUE, "#999999", "#bbbbbb"][: len(values)]}
    return {
        "id": "fig-agreement",
        "caption": "Agreement with the evaluation answers, with 95% intervals",
        "figure": _figure(
            [bars, intervals],
            "How often each metric picks what the participant picked on the evaluation pairs",
            xaxis=CATEGORY_AXIS,
            yaxis={"title": {"text": "% of pairs"}, "range": [0, 100]},
        ),
    }


def coefficients_figures(
    coefficients: Mapping[str, Sequence[float]], agreement: Sequence[AgreementBar]
) -> list[dict[str, Any]]:
    """Each elicited coefficient's spread across participants (a box each), and agreement per participant.

    Horizontal boxes with the coefficients named on the y axis (``coefficients`` is keyed by the names a
    coordinator reads): long names make their own room instead of being cut.
    """
    data = [
        {
            "type": "box",
            "orientation": "h",
            "name": two_lines(name),
            "x": list(values),
            "boxpoints": "all",
            "jitter": 0.4,
            "hovertemplate": "%{x:.3f}<extra>%{fullData.name}</extra>",
        }
        for name, values in coefficients.items()
        if values
    ]
    figures = []
    if data:
        figures.append(
            {
                "id": "fig-coefficients",
                "caption": "Elicited coefficients across participants",
                "figure": _figure(
                    data,
                    "Elicited coefficients across participants",
                    height=90 + 34 * len(data),
                    yaxis={"autorange": "reversed", **CATEGORY_AXIS},
                    xaxis={"title": {"text": "Value"}, "zeroline": True},
                ),
            }
        )
    if agreement:
        figures.append(
            {
                "id": "fig-agreement-all",
                "caption": "Agreement with each participant's evaluation answers, with 95% intervals",
                "figure": _figure(
                    _interval_bars(agreement),
                    "How often the elicited metric picks what the participant picked on the evaluation pairs",
                    xaxis=CATEGORY_AXIS,
                    yaxis={"title": {"text": "% of evaluation pairs"}, "range": [0, 100]},
                ),
            }
        )
    return figures


def ranking_figure(
    names: Sequence[str], hover: Sequence[str], labels: Sequence[str], ranks: Sequence[Sequence[int]]
) -> dict[str, Any]:
    """Rank of each pool classifier (1 = best, one row per metric), as an annotated heat map."""
    z = [list(row) for row in ranks]
    return {
        "id": "fig-ranking",
        "caption": "How each participant's metric ranks a pool of classifiers (1 = best)",
        "figure": _figure(
            [
                {
                    "type": "heatmap",
                    "z": z,
                    "x": list(names),
                    "y": list(labels),
                    "text": [[str(value) for value in row] for row in z],
                    "texttemplate": "%{text}",
                    "customdata": [list(hover)] * len(z),
                    "hovertemplate": "%{y}: %{customdata} → rank %{z}<extra></extra>",
                    "colorscale": [[0, "#0072B2"], [1, "#f2f4f7"]],
                    "zmin": 1,
                    "zmax": len(names),
                    "showscale": False,
                    "xgap": 2,
                    "ygap": 2,
                }
            ],
            "Ranking of the candidate pool",
            height=140 + 28 * len(z),
            yaxis={"autorange": "reversed", **CATEGORY_AXIS},
            xaxis={"title": {"text": "Candidate (see the table)"}, **CATEGORY_AXIS},
        ),
    }
