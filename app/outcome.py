"""What a finished session revealed: evaluation agreement (vs. baselines), check summary, plain words."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from elicitation import FairQuadraticMetric, LinearMetric, Metric, QuadraticMetric

from .plan import CHECK_DOMINANCE, CHECK_REPEAT, Choice

__all__ = [
    "CURVATURE_SHARE",
    "accuracy_baseline",
    "agreement",
    "check_summary",
    "equal_weights_baseline",
    "evaluation_summary",
    "plain_summary",
]

#: Share of the metric's norm in B above which the summary mentions diminishing returns.
CURVATURE_SHARE = 0.2

Pair = tuple[np.ndarray, np.ndarray, str]
"""An evaluation pair in the elicitor's order and the participant's choice in that order."""


def accuracy_baseline(priors: np.ndarray) -> Callable[[np.ndarray], float]:
    """Accuracy ``sum_i P(Y=i) r_i`` (per group, averaged over groups)."""
    weights = np.asarray(priors, dtype=np.float64)

    def accuracy(rates: np.ndarray) -> float:
        return float(np.mean(np.sum(weights * rates, axis=-1)))

    return accuracy


def equal_weights_baseline(rates: np.ndarray) -> float:
    """Equal weight on every rate (balanced accuracy; averaged over groups)."""
    return float(np.mean(rates))


def agreement(pairs: Sequence[Pair], prefers: Callable[[np.ndarray, np.ndarray], bool]) -> dict[str, Any]:
    """The paper's measure M (Appendix I): % of pairs where ``prefers`` matches the participant.

    "About the same" answers say nothing about either option, so they are left out of the percentage
    and counted in ``ties``. ``percent`` is None when no pair was decided.
    """
    decided = [(first, second, choice) for first, second, choice in pairs if choice != Choice.TIE.value]
    agreed = sum(1 for first, second, choice in decided if prefers(first, second) == (choice == "first"))
    return {
        "agreed": agreed,
        "decided": len(decided),
        "ties": len(pairs) - len(decided),
        "percent": (100.0 * agreed / len(decided)) if decided else None,
    }


def evaluation_summary(pairs: Sequence[Pair], metric: Metric, priors: np.ndarray) -> dict[str, Any]:
    """Agreement of the elicited metric and of the accuracy and equal-weights baselines on the same pairs."""
    accuracy = accuracy_baseline(priors)

    def by_value(value: Callable[[np.ndarray], float]) -> Callable[[np.ndarray, np.ndarray], bool]:
        return lambda first, second: value(first) > value(second)

    return {
        "pairs": len(pairs),
        "elicited": agreement(pairs, metric.prefers),
        "accuracy": agreement(pairs, by_value(accuracy)),
        "equal_weights": agreement(pairs, by_value(equal_weights_baseline)),
    }


def check_summary(checks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Counts of shown and passed dominance (attention) and repeat (consistency) checks."""
    summary: dict[str, Any] = {}
    for kind in (CHECK_DOMINANCE, CHECK_REPEAT):
        rows = [check for check in checks if check.get("type") == kind]
        summary[kind] = {"shown": len(rows), "passed": sum(1 for check in rows if check.get("passed"))}
    shown = sum(item["shown"] for item in summary.values())
    passed = sum(item["passed"] for item in summary.values())
    summary["all_passed"] = shown == passed
    return summary


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


def plain_summary(metric: Metric, class_names: Sequence[str], population: str) -> str:
    """A few plain-language sentences about the metric a participant revealed."""
    if isinstance(metric, LinearMetric):
        return _ratio_sentence(np.abs(metric.a), class_names, population)
    if isinstance(metric, QuadraticMetric):
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
    if isinstance(metric, FairQuadraticMetric):
        text = _ratio_sentence(np.abs(metric.a), class_names, population).replace(
            "correctly recognising", "avoiding mistakes on"
        )
        share = round(100 * metric.lam)
        return (
            f"{text} When overall mistakes and unequal treatment of groups pull in different directions, "
            f"you put about {share}% of the weight on treating the groups equally and {100 - share}% on "
            "making fewer mistakes overall."
        )
    return "Your answers were recorded; thank you."
