"""How the app shows each metric family: one table keyed by family name, no ``isinstance`` chains.

The core's families (`elicitation.families`) own codec, random draws, errors and export columns; what
only a person looks at stays here: Plotly figures for the participant and the coordinator, the plain
sentences of the thank-you page and the command line's text.
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
from .codec import decode_metric
from .explain import (
    MetricWords,
    Reading,
    curved_words,
    fair_words,
    linear_words,
    reading_for,
    settled_lam,
)
from .i18n import ENGLISH, Translator

__all__ = [
    "VIEWS",
    "MetricView",
    "coordinator_figures",
    "metric_words",
    "participant_figures",
    "plain_summary",
    "rate_text",
    "stated_intervals",
    "stored_metric_words",
    "text_lines",
    "view_of",
]

#: ``{"id", "caption", "figure"}`` entries the templates render with static/js/charts.js.
Figures = list[dict[str, Any]]


@dataclass(frozen=True)
class MetricView:
    """The app's presentation of one metric family (stored dicts from `Metric.to_dict`)."""

    #: Charts of the revealed metric on the thank-you page (stored metric, its words, the page's language).
    participant_figures: Callable[[Mapping[str, Any], MetricWords, Translator], Figures]
    #: Charts of an elicited metric on the coordinator's session page (classes, groups).
    coordinator_figures: Callable[[Mapping[str, Any], Sequence[str], Sequence[str]], Figures]
    #: The metric in plain words (costs per person and per rate, curvature, trade-off), `app.explain`.
    words: Callable[[Metric, Reading], MetricWords]
    #: Indented lines of coefficients for the command line.
    text: Callable[[Metric], list[str]]


def _costs(words: MetricWords, tr: Translator) -> Figures:
    """What a mistake on one person of each class costs, relative to the cheapest (per person)."""
    if not words.ratios_usable:
        return []  # the headline says which mistakes counted; ratios to one that hardly did mean nothing
    _ = tr.gettext
    credible = any(cost.credible for cost in words.costs)
    ranges = [cost.credible if credible else cost.region_range for cost in words.costs]
    if credible:
        label = _("likely range (%(level)s%% sure)") % {"level": round(100 * (words.credible_level or 0))}
    else:
        label = _("across the classifiers shown")
    one = _("one %(name)s %(person)s")
    return [
        {
            "id": "metric-costs",
            "caption": _("What a mistake on one %(person)s costs, relative to the cheapest")
            % {"person": words.person},
            "figure": result_charts.mistake_cost_figure(
                [one % {"name": cost.name, "person": words.person} for cost in words.costs],
                [cost.times_per_person for cost in words.costs],
                ranges,
                range_label=label,
                tr=tr,
            ),
        }
    ]


def _tradeoff(metric: Mapping[str, Any], words: MetricWords, tr: Translator) -> Figures:
    interval = words.intervals.get("lam")
    unsettled = None if settled_lam(interval) else (float(interval[0]), float(interval[1]))
    return [
        {
            "id": "metric-tradeoff",
            "caption": tr.gettext("Fewer mistakes versus equal treatment of groups"),
            "figure": result_charts.tradeoff_figure(metric["lam"], unsettled=unsettled, tr=tr),
        }
    ]


def _coordinator_weights(metric: Mapping[str, Any], classes: Sequence[str], groups: Sequence[str]) -> Figures:
    return [
        {
            "id": "fig-a",
            "caption": "Weight of each class's rate (per rate, the metric's a)",
            "figure": result_charts.metric_weights_figure(metric["a"], classes),
        }
    ]


def _coordinator_curvature(
    metric: Mapping[str, Any], classes: Sequence[str], groups: Sequence[str]
) -> Figures:
    curvature = {
        "id": "fig-b",
        "caption": "Curvature between classes' rates (the metric's B; 0 means none)",
        "figure": result_charts.quadratic_heatmap_figure(metric["B"], classes),
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
            "caption": "Fewer mistakes versus equal treatment of groups",
            "figure": result_charts.tradeoff_figure(float(metric["lam"])),
        }
    )
    return figures


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
    participant_figures=lambda metric, words, tr: _costs(words, tr),
    coordinator_figures=_coordinator_curvature,
    words=curved_words,
    text=_quadratic_text,
)

VIEWS: Mapping[str, MetricView] = {
    "linear": MetricView(
        participant_figures=lambda metric, words, tr: _costs(words, tr),
        coordinator_figures=_coordinator_weights,
        words=linear_words,
        text=_linear_text,
    ),
    "quadratic": _QUADRATIC,
    # A cubic metric is shown by its quadratic part.
    "cubic": replace(_QUADRATIC, text=_linear_text),
    "fair_quadratic": MetricView(
        participant_figures=lambda metric, words, tr: _costs(words, tr) + _tradeoff(metric, words, tr),
        coordinator_figures=_coordinator_fair,
        words=fair_words,
        text=_fair_text,
    ),
}


def view_of(kind: object) -> MetricView | None:
    """The view of a stored metric's ``"type"`` (``None`` for a failed session's placeholder)."""
    return VIEWS.get(kind) if isinstance(kind, str) else None


def participant_figures(
    metric: Mapping[str, Any], words: MetricWords | None, tr: Translator = ENGLISH
) -> Figures:
    """The thank-you page's charts of a stored metric (none for a failed session), in ``tr``'s language."""
    view = view_of(metric.get("type"))
    return view.participant_figures(metric, words, tr) if view is not None and words else []


def stored_metric_words(
    metric: Mapping[str, Any],
    details: Mapping[str, Any] | None,
    space: Any,
    population: str,
    group_shares: Sequence[float] | None = None,
    tr: Translator = ENGLISH,
) -> MetricWords | None:
    """The words of a session's stored metric in its study's space (None for a failed session)."""
    view = view_of(metric.get("type"))
    if view is None:
        return None
    reading = reading_for(space, population, group_shares=group_shares, details=details, tr=tr)
    return view.words(decode_metric(dict(metric)), reading)


def coordinator_figures(
    metric: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
) -> Figures:
    """The session page's charts of a stored metric (none for a failed session)."""
    view = view_of(metric.get("type"))
    return view.coordinator_figures(metric, class_names, group_names) if view is not None else []


def metric_words(metric: Metric, reading: Reading) -> MetricWords | None:
    """The plain-words reading of a metric (None for a family without a view)."""
    view = view_of(type(metric).kind)
    return view.words(metric, reading) if view is not None else None


def plain_summary(metric: Metric, reading: Reading) -> str:
    """A few plain-language sentences about the metric a participant revealed."""
    words = metric_words(metric, reading)
    return words.text if words is not None else "Your answers were recorded; thank you."


def stated_intervals(words: MetricWords | None) -> dict[str, Any]:
    """What the API and the exports carry about a result's uncertainty: ``interval_level`` and
    ``intervals`` (the credible interval of each number the words state, `MetricWords.intervals`), the
    same numbers the result pages show; ``None`` and ``{}`` without a posterior."""
    if words is None or not words.intervals:
        return {"interval_level": None, "intervals": {}}
    return {"interval_level": words.credible_level, "intervals": dict(words.intervals)}


def text_lines(metric: Metric) -> list[str]:
    """The metric's coefficients as indented text lines (4 decimals) for the command line."""
    view = view_of(type(metric).kind)
    with np.printoptions(precision=4, suppress=True, linewidth=100):
        return view.text(metric) if view is not None else [f"  {metric!r}"]
