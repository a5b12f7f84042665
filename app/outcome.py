"""What a finished session revealed: evaluation agreement (vs. baselines), check summary, plain words."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from elicitation import Metric

from .metric_views import plain_summary
from .plan import CHECK_DOMINANCE, CHECK_REPEAT, Choice, wilson_interval

__all__ = [
    "accuracy_baseline",
    "agreement",
    "agreement_interval",
    "check_summary",
    "equal_weights_baseline",
    "evaluation_summary",
    "plain_summary",
]

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
    and counted in ``ties``. ``percent`` is None when no pair was decided; ``interval_percent`` is its 95 %
    Wilson interval.
    """
    decided = [(first, second, choice) for first, second, choice in pairs if choice != Choice.TIE.value]
    agreed = sum(1 for first, second, choice in decided if prefers(first, second) == (choice == "first"))
    low, high = wilson_interval(agreed, len(decided))
    return {
        "agreed": agreed,
        "decided": len(decided),
        "ties": len(pairs) - len(decided),
        "percent": (100.0 * agreed / len(decided)) if decided else None,
        "interval_percent": [100.0 * low, 100.0 * high] if decided else None,
    }


#: The agreement measures of a result's evaluation: the elicited metric and the two baselines.
AGREEMENT_KEYS = ("elicited", "accuracy", "equal_weights")


def agreement_interval(item: object) -> tuple[float | None, float | None, float | None]:
    """A stored agreement's percentage and its 95 % Wilson interval, ``(None, None, None)`` when undecided.

    Results stored before the interval was kept carry the counts it comes from; it is computed from them
    with the same `wilson_interval` the evaluation stops with.
    """
    if not isinstance(item, dict) or item.get("percent") is None:
        return None, None, None
    interval = item.get("interval_percent")
    if interval is None and item.get("decided"):
        low, high = wilson_interval(int(item["agreed"]), int(item["decided"]))
        interval = [100.0 * low, 100.0 * high]
    if interval is None:
        return float(item["percent"]), None, None
    return float(item["percent"]), float(interval[0]), float(interval[1])


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
