"""How the app shows each metric family: one table keyed by family name, no ``isinstance`` chains.

The core's families (`elicitation.families`) own codec, random draws, errors and export columns; what
only a person looks at stays here: Plotly figures for the participant and the coordinator, the plain
sentences of the thank-you page, the scoring snippet of the results page and the command line's text.
A new metric family adds one `MetricView` to `VIEWS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from elicitation import FairQuadraticMetric, LinearMetric, Metric, QuadraticMetric
from elicitation.variants import CubicMetric

from .charts import result as result_charts

__all__ = [
    "CURVATURE_SHARE",
    "VIEWS",
    "MetricView",
    "coordinator_figures",
    "participant_figures",
    "plain_summary",
    "rate_text",
    "text_lines",
    "view_of",
]

#: Share of the metric's norm in B above which the summary mentions diminishing returns.
CURVATURE_SHARE = 0.2

#: ``{"id", "caption", "figure"}`` entries the templates render with static/js/charts.js.
Figures = list[dict[str, Any]]
#: ``cell(column, default)``: an exported coefficient of the example participant, rounded for display.
Cell = Callable[[str, float], float]


@dataclass(frozen=True)
class MetricView:
    """The app's presentation of one metric family (stored dicts from `Metric.to_dict`)."""

    #: Charts of the revealed metric on the participant's thank-you page.
    participant_figures: Callable[[Mapping[str, Any], Sequence[str]], Figures]
    #: Charts of an elicited metric on the coordinator's session page (classes, groups).
    coordinator_figures: Callable[[Mapping[str, Any], Sequence[str], Sequence[str]], Figures]
    #: A few plain sentences about the metric (metric, class names, population word).
    summary: Callable[[Metric, Sequence[str], str], str]
    #: Python lines that build one participant's metric for the results page's snippet.
    snippet: Callable[[list[float], Cell, Sequence[str]], list[str]]
    #: Indented lines of coefficients for the command line.
    text: Callable[[Metric], list[str]]


def _weights(metric: Mapping[str, Any], names: Sequence[str]) -> Figures:
    return [
        {
            "id": "metric-weights",
            "caption": "How much each kind of correct decision counted",
            "figure": result_charts.metric_weights_figure(metric["a"], names),
        }
    ]


def _curvature(metric: Mapping[str, Any], names: Sequence[str]) -> Figures:
    return [
        {
            "id": "metric-curvature",
            "caption": "How the value of improvements changes (curvature B)",
            "figure": result_charts.quadratic_heatmap_figure(metric["B"], names),
        }
    ]


def _tradeoff(metric: Mapping[str, Any], names: Sequence[str]) -> Figures:
    return [
        {
            "id": "metric-tradeoff",
            "caption": "Fewer mistakes versus equal treatment of groups",
            "figure": result_charts.tradeoff_figure(metric["lam"]),
        }
    ]


def _coordinator_weights(metric: Mapping[str, Any], classes: Sequence[str], groups: Sequence[str]) -> Figures:
    return [
        {
            "id": "fig-a",
            "caption": "Elicited linear weights a",
            "figure": result_charts.metric_weights_figure(metric["a"], classes, title="Linear weights a"),
        }
    ]


def _coordinator_curvature(
    metric: Mapping[str, Any], classes: Sequence[str], groups: Sequence[str]
) -> Figures:
    curvature = {
        "id": "fig-b",
        "caption": "Elicited quadratic weights B",
        "figure": result_charts.quadratic_heatmap_figure(metric["B"], classes, title="Quadratic weights B"),
    }
    return [*_coordinator_weights(metric, classes, groups), curvature]


def _coordinator_fair(metric: Mapping[str, Any], classes: Sequence[str], groups: Sequence[str]) -> Figures:
    figures = _coordinator_weights(metric, classes, groups)
    pairs = {(item["u"], item["v"]): item["B"] for item in metric["B_pairs"]}
    for index, (title, figure) in enumerate(result_charts.pair_heatmap_figures(pairs, classes, groups)):
        figures.append({"id": f"fig-buv-{index}", "caption": title, "figure": figure})
    figures.append(
        {
            "id": "fig-lam",
            "caption": "Trade-off λ",
            "figure": result_charts.tradeoff_figure(float(metric["lam"]), title="Performance vs fairness"),
        }
    )
    return figures


def _ratio_sentence(weights: np.ndarray, class_names: Sequence[str], population: str) -> str:
    order = np.argsort(-weights)
    top, bottom = int(order[0]), int(order[-1])
    if weights[bottom] <= 1e-9:
        return (
            f"Your answers suggest that only correctly recognising {class_names[top]} {population} "
            f"mattered to you; mistakes on {class_names[bottom]} {population} hardly changed your choices."
        )
    ratio = weights[top] / weights[bottom]
    if ratio < 1.15:
        return (
            "Your answers suggest that you weigh correct decisions for every class about equally "
            f"({', '.join(class_names)})."
        )
    return (
        f"Your answers suggest that correctly recognising {class_names[top]} {population} matters about "
        f"{ratio:.1f} times as much to you as correctly recognising {class_names[bottom]} {population}."
    )


def _linear_summary(metric: Metric, class_names: Sequence[str], population: str) -> str:
    assert isinstance(metric, LinearMetric)
    return _ratio_sentence(np.abs(metric.a), class_names, population)


def _curved_summary(metric: Metric, class_names: Sequence[str], population: str) -> str:
    """Local weights at the uniform classifier, plus diminishing returns when the curvature is large."""
    assert isinstance(metric, (QuadraticMetric, CubicMetric))
    k = metric.n_classes
    local = np.abs(metric.gradient(np.full(k, 1.0 / k)))
    text = _ratio_sentence(local, class_names, population)
    curvature = float(np.linalg.norm(metric.B))
    if curvature > CURVATURE_SHARE * (curvature + float(np.linalg.norm(metric.a))):
        text += (
            " Your preferences also show diminishing returns: once a classifier is already good on "
            "one class, further improvement there counted less for you than fixing the weaker class."
        )
    return text


def _fair_summary(metric: Metric, class_names: Sequence[str], population: str) -> str:
    assert isinstance(metric, FairQuadraticMetric)
    text = _ratio_sentence(np.abs(metric.a), class_names, population).replace(
        "correctly recognising", "avoiding mistakes on"
    )
    share = round(100 * metric.lam)
    return (
        f"{text} When overall mistakes and unequal treatment of groups pull in different directions, "
        f"you put about {share}% of the weight on treating the groups equally and {100 - share}% on "
        "making fewer mistakes overall."
    )


def _linear_snippet(a: list[float], cell: Cell, classes: Sequence[str]) -> list[str]:
    return ["from elicitation import LinearMetric", "", f"metric = LinearMetric(a=np.array({a}))"]


def _quadratic_snippet(a: list[float], cell: Cell, classes: Sequence[str]) -> list[str]:
    B = [[cell(f"B_{r}_{c}", 0.0) for c in classes] for r in classes]
    return [
        "from elicitation import QuadraticMetric",
        "",
        f"metric = QuadraticMetric(a=np.array({a}),",
        f"                         B=np.array({B}))",
    ]


def _archived_snippet(a: list[float], cell: Cell, classes: Sequence[str]) -> list[str]:
    return [
        "from elicitation import FairQuadraticMetric",
        "from app.codec import decode_metric",
        "",
        "# the participant's metric from the study archive (export -> archive JSON):",
        "metric = decode_metric(archive['sessions'][0]['result']['metric'])",
    ]


def rate_text(array: np.ndarray[Any, Any]) -> str:
    """Rates on one line; group rates ``(m, k)`` as ``[group 1 | group 2 | ...]``."""
    rows = np.atleast_2d(array)
    text = " | ".join(",".join(f"{value:.4f}" for value in row) for row in rows)
    return f"[{text}]"


def _linear_text(metric: Metric) -> list[str]:
    assert isinstance(metric, (LinearMetric, CubicMetric))
    return [f"  a = {metric.a}"]


def _quadratic_text(metric: Metric) -> list[str]:
    assert isinstance(metric, QuadraticMetric)
    return [f"  a = {metric.a}", "  B = " + str(metric.B).replace("\n", "\n      ")]


def _fair_text(metric: Metric) -> list[str]:
    assert isinstance(metric, FairQuadraticMetric)
    lines = [f"  a   = {metric.a}", f"  lam = {metric.lam:.4f}", "  tau = " + rate_text(metric.tau)]
    for (u, v), B in metric.B_pairs.items():
        lines.append(f"  B^{u + 1}{v + 1} = " + str(B).replace("\n", "\n         "))
    return lines


_QUADRATIC = MetricView(
    participant_figures=lambda metric, names: _weights(metric, names) + _curvature(metric, names),
    coordinator_figures=_coordinator_curvature,
    summary=_curved_summary,
    snippet=_quadratic_snippet,
    text=_quadratic_text,
)

VIEWS: Mapping[str, MetricView] = {
    "linear": MetricView(
        participant_figures=_weights,
        coordinator_figures=_coordinator_weights,
        summary=_linear_summary,
        snippet=_linear_snippet,
        text=_linear_text,
    ),
    "quadratic": _QUADRATIC,
    # A cubic metric is shown by its quadratic part; its snippet loads the stored metric whole.
    "cubic": replace(_QUADRATIC, snippet=_archived_snippet, text=_linear_text),
    "fair_quadratic": MetricView(
        participant_figures=lambda metric, names: _weights(metric, names) + _tradeoff(metric, names),
        coordinator_figures=_coordinator_fair,
        summary=_fair_summary,
        snippet=_archived_snippet,
        text=_fair_text,
    ),
}


def view_of(kind: object) -> MetricView | None:
    """The view of a stored metric's ``"type"`` (``None`` for a failed session's placeholder)."""
    return VIEWS.get(kind) if isinstance(kind, str) else None


def participant_figures(metric: Mapping[str, Any], class_names: Sequence[str]) -> Figures:
    """The thank-you page's charts of a stored metric (none for a failed session)."""
    view = view_of(metric.get("type"))
    return view.participant_figures(metric, class_names) if view is not None else []


def coordinator_figures(
    metric: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
) -> Figures:
    """The session page's charts of a stored metric (none for a failed session)."""
    view = view_of(metric.get("type"))
    return view.coordinator_figures(metric, class_names, group_names) if view is not None else []


def plain_summary(metric: Metric, class_names: Sequence[str], population: str) -> str:
    """A few plain-language sentences about the metric a participant revealed."""
    view = view_of(type(metric).kind)
    if view is None:
        return "Your answers were recorded; thank you."
    return view.summary(metric, class_names, population)


def text_lines(metric: Metric) -> list[str]:
    """The metric's coefficients as indented text lines (4 decimals) for the command line."""
    view = view_of(type(metric).kind)
    with np.printoptions(precision=4, suppress=True, linewidth=100):
        return view.text(metric) if view is not None else [f"  {metric!r}"]
