"""The back office's panel page: agreement between participants, the consensus with its intervals, the camps.

Each function takes numbers the panel service has computed and returns a figure card
``{"id", "caption", "figure"}``. Names on axes are cut to `NAME_CHARS` characters (the full name is in
the hover text) and every axis makes room for its labels, so no label is ever clipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .common import CLASS_COLORS, GRID, MUTED, back_office_figure, two_lines

__all__ = [
    "NAME_CHARS",
    "agreement_heatmap",
    "camp_color",
    "consensus_figure",
    "map_figure",
    "membership_figure",
    "short_name",
]

#: Longest participant name drawn on a chart (longer ones end in an ellipsis; hover shows them whole).
NAME_CHARS = 18
#: Cells of the agreement heat map carry their percentage up to this many participants.
_ANNOTATED_UP_TO = 16
#: Sequential white-to-slate scale for agreement (more alike, darker): grey, so that the camps' coloured
#: outlines stand out on it.
_AGREEMENT_SCALE = [[0.0, "#f7f9fb"], [0.5, "#aab4be"], [1.0, "#323f4b"]]
_CONSENSUS = "#000000"


def short_name(name: str) -> str:
    """``name`` cut to `NAME_CHARS` characters (an ellipsis marks the cut)."""
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def camp_color(index: int) -> str:
    """Camp ``index``'s colour (the palette's, skipping black, which marks the consensus)."""
    palette = [color for color in CLASS_COLORS if color != _CONSENSUS]
    return palette[index % len(palette)]


def _unique_ticks(names: Sequence[str]) -> list[str]:
    """Short names made distinct (a numbered suffix), since Plotly merges equal category labels."""
    seen: dict[str, int] = {}
    ticks = []
    for name in names:
        tick = short_name(name)
        seen[tick] = seen.get(tick, 0) + 1
        ticks.append(tick if seen[tick] == 1 else f"{tick} ({seen[tick]})")
    return ticks


def agreement_heatmap(
    names: Sequence[str], percent: Sequence[Sequence[float]], camp_sizes: Sequence[int]
) -> dict[str, Any]:
    """Participant-by-participant agreement (percent of shared pairs answered alike), camps outlined.

    ``names`` and ``percent`` are in camp order; ``camp_sizes`` the consecutive blocks to outline.
    """
    ticks = _unique_ticks(names)
    n = len(ticks)
    values = [value for row in percent for value in row]
    low = min(50.0, min(values, default=50.0))
    hover = [[f"{names[i]} and {names[j]}" for j in range(n)] for i in range(n)]
    trace: dict[str, Any] = {
        "type": "heatmap",
        "z": [list(row) for row in percent],
        "x": ticks,
        "y": ticks,
        "customdata": hover,
        "hovertemplate": "%{customdata}: %{z:.0f}% of pairs alike<extra></extra>",
        "colorscale": _AGREEMENT_SCALE,
        "zmin": low,
        "zmax": 100,
        "xgap": 1,
        "ygap": 1,
        # No colour bar: plotly.js styles its fills inline, which the Content-Security-Policy refuses;
        # the cells carry their numbers (and the hover text always does).
        "showscale": False,
    }
    if n <= _ANNOTATED_UP_TO:
        trace["texttemplate"] = "%{z:.0f}"
    shapes = []
    start = 0
    for index, size in enumerate(camp_sizes if len(camp_sizes) > 1 else []):
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "y",
                "x0": start - 0.5,
                "x1": start + size - 0.5,
                "y0": start - 0.5,
                "y1": start + size - 0.5,
                "line": {"color": camp_color(index), "width": 3},
                "fillcolor": "rgba(0,0,0,0)",
            }
        )
        start += size
    side = 150 + 26 * n
    return {
        "id": "fig-panel-agreement",
        "caption": "How often two participants' metrics answer a question alike (%; darker: more alike)",
        "figure": back_office_figure(
            [trace],
            "Agreement between participants",
            height=min(max(side, 320), 900),
            shapes=shapes,
            xaxis={"tickangle": -45, "side": "bottom", "type": "category"},
            yaxis={"autorange": "reversed", "type": "category"},
            margin={"l": 8, "r": 8, "t": 16, "b": 8},
        ),
    }


def consensus_figure(
    labels: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    level: float,
    centres: Sequence[tuple[str, Sequence[float]]],
) -> dict[str, Any]:
    """Each consensus coefficient with its bootstrap interval; each camp's centre beside it when split
    (a long coefficient name takes two lines, so it fits beside the chart on a phone)."""
    rows = [two_lines(label) for label in labels]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "consensus",
            "orientation": "h",
            "x": list(values),
            "y": rows,
            "marker": {"color": _CONSENSUS, "size": 10, "symbol": "diamond"},
            "error_x": {
                "type": "data",
                "symmetric": False,
                "array": [high - value for value, high in zip(values, highs, strict=True)],
                "arrayminus": [value - low for value, low in zip(values, lows, strict=True)],
                "color": MUTED,
                "thickness": 2,
                "width": 6,
            },
            "customdata": [[low, high] for low, high in zip(lows, highs, strict=True)],
            "hovertemplate": (
                f"%{{y}}: %{{x:.3f}} ({round(100 * level)}% interval %{{customdata[0]:.3f}} to "
                "%{customdata[1]:.3f})<extra>consensus</extra>"
            ),
            "cliponaxis": False,
        }
    ]
    for index, (name, centre) in enumerate(centres):
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": name,
                "x": list(centre),
                "y": rows,
                "marker": {
                    "color": camp_color(index),
                    "size": 8,
                    "symbol": "circle-open",
                    "line": {"width": 2},
                },
                "hovertemplate": "%{y}: %{x:.3f}<extra>%{fullData.name}</extra>",
                "cliponaxis": False,
            }
        )
    return {
        "id": "fig-panel-consensus",
        "caption": f"The consensus metric's coefficients with {round(100 * level)}% bootstrap intervals",
        "figure": back_office_figure(
            data,
            "Consensus coefficients",
            height=110 + 30 * len(rows) + 14 * sum("<br>" in row for row in rows),
            showlegend=bool(centres),
            legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0.0},
            margin={"l": 8, "r": 16, "t": 40 if centres else 16, "b": 48},
            yaxis={"autorange": "reversed", "type": "category", "gridcolor": GRID},
            xaxis={"title": {"text": "Coefficient"}, "zeroline": True},
        ),
    }


def map_figure(
    names: Sequence[str],
    positions: Sequence[Sequence[float]],
    camp_of: Sequence[int],
    outliers: Sequence[int],
    camp_names: Sequence[str],
    centres: Sequence[Sequence[float]],
    consensus: Sequence[float],
) -> dict[str, Any]:
    """Participants on a plane where distance is disagreement, coloured by camp, with the consensus."""
    xs = [float(point[0]) for point in [*positions, *centres, consensus]]
    ys = [float(point[1]) for point in [*positions, *centres, consensus]]
    span = max(max(xs) - min(xs), max(ys) - min(ys), 0.05)
    pad = 0.15 * span
    data: list[dict[str, Any]] = []
    split = len(camp_names) > 1
    for camp, camp_name in enumerate(camp_names):
        members = [i for i in range(len(names)) if camp_of[i] == camp]
        for outlying in (False, True):
            chosen = [i for i in members if (i in outliers) == outlying]
            if not chosen:
                continue
            data.append(
                {
                    "type": "scatter",
                    # Names only on hover: close participants would write over each other, and the
                    # membership chart and the tables name everyone.
                    "mode": "markers",
                    "name": f"{camp_name}: outliers" if outlying else camp_name,
                    "x": [float(positions[i][0]) for i in chosen],
                    "y": [float(positions[i][1]) for i in chosen],
                    "customdata": [names[i] for i in chosen],
                    "marker": {
                        "color": camp_color(camp) if split else MUTED,
                        "size": 11,
                        "symbol": "x" if outlying else "circle",
                    },
                    "hovertemplate": "%{customdata}<extra>%{fullData.name}</extra>",
                    "cliponaxis": False,
                }
            )
        if split:
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"{camp_name}: centre",
                    "x": [float(centres[camp][0])],
                    "y": [float(centres[camp][1])],
                    "marker": {
                        "color": camp_color(camp),
                        "size": 16,
                        "symbol": "circle-open",
                        "line": {"width": 3},
                    },
                    "hovertemplate": f"centre of {camp_name}<extra></extra>",
                    "cliponaxis": False,
                }
            )
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "consensus",
            "x": [float(consensus[0])],
            "y": [float(consensus[1])],
            "marker": {"color": _CONSENSUS, "size": 16, "symbol": "diamond"},
            "hovertemplate": "the consensus metric<extra></extra>",
            "cliponaxis": False,
        }
    )
    hidden = {"showticklabels": False, "zeroline": False, "showgrid": False, "ticks": ""}
    return {
        "id": "fig-panel-map",
        "caption": "Map of the panel: the closer two participants, the more often they answer alike",
        "figure": back_office_figure(
            data,
            "Map of the panel",
            height=360,
            showlegend=True,
            legend={"orientation": "h", "yanchor": "top", "y": -0.02, "x": 0.0},
            margin={"l": 8, "r": 8, "t": 16, "b": 8},
            xaxis={**hidden, "range": [min(xs) - pad, max(xs) + pad]},
            yaxis={**hidden, "range": [min(ys) - pad, max(ys) + pad], "scaleanchor": "x"},
        ),
    }


def membership_figure(
    names: Sequence[str], alike: Sequence[Sequence[float]], camp_of: Sequence[int], camp_names: Sequence[str]
) -> dict[str, Any]:
    """How alike each participant answers to each camp's centre (percent), one row per participant.

    ``names``, ``alike`` (participants x camps) and ``camp_of`` are in camp order; a participant's own camp
    is the longest bar unless they are an outlier.
    """
    ticks = _unique_ticks(names)
    data = [
        {
            "type": "bar",
            "orientation": "h",
            "name": f"like {camp_name}'s centre",
            "x": [float(row[camp]) for row in alike],
            "y": ticks,
            "customdata": list(names),
            "marker": {"color": camp_color(camp)},
            "hovertemplate": f"%{{customdata}}: %{{x:.0f}}% alike {camp_name}'s centre<extra></extra>",
        }
        for camp, camp_name in enumerate(camp_names)
    ]
    return {
        "id": "fig-panel-membership",
        "caption": "Camps: how often each participant answers like each camp's centre",
        "figure": back_office_figure(
            data,
            "Camp membership",
            barmode="group",
            bargap=0.25,
            height=120 + (14 + 10 * len(camp_names)) * len(ticks),
            showlegend=True,
            legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0.0},
            margin={"l": 8, "r": 16, "t": 40, "b": 48},
            yaxis={"autorange": "reversed", "type": "category"},
            xaxis={"title": {"text": "% of question pairs alike"}, "range": [0, 100], "ticksuffix": "%"},
        ),
    }
