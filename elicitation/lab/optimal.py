"""The best classifier for a metric on a dataset: the optimal rates in its feasible set, and who reaches them.

A dataset's feasible set is the convex hull of its plug-in classifiers' held-out rates (one hull per group,
`elicitation.lab.feasible`). `best_classifier` hands those rates to the core's optimiser
(`elicitation.optimal.best_rates`, exact for concave metrics) and turns the optimal mixture into the
randomised classifier that achieves it (`DatasetSpace.mixed_classifier`: at most ``k + 1`` plug-ins per
group). `accuracy_classifier` is the same for accuracy, the usual default a metric is compared with, and
`trained_classifiers` lists the dataset's own non-trivial plug-ins, the classifiers one would otherwise pick
from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidConfigError
from ..families import family_of
from ..optimal import DEFAULT_GAP_TOLERANCE, BestRates, best_rates
from ..types import FloatArray, LinearMetric, Metric
from .feasible import DatasetSpace, FeasibleModel, RandomizedClassifier, plug_in_predictions

#: Rounds of column generation in `refined_best_classifier` (each adds at most one plug-in per group).
REFINE_ROUNDS = 25
#: A new plug-in must raise the linearised utility by this much to join (it is otherwise already spanned).
_REFINE_PROGRESS = 1e-12

__all__ = [
    "REFINE_ROUNDS",
    "BestClassifier",
    "accuracy_classifier",
    "best_classifier",
    "best_trained",
    "refined_best_classifier",
    "trained_classifiers",
]


@dataclass(frozen=True, eq=False)
class BestClassifier:
    """The best randomised classifier for a metric on a dataset (one part per group).

    Attributes
    ----------
    optimum : BestRates
        The optimiser's answer: rates, mixture weights over every plug-in, value and certificate.
    classifiers : tuple of RandomizedClassifier
        One per group (a 1-tuple without groups), each mixing at most ``n_classes + 1`` plug-ins.
    """

    optimum: BestRates
    classifiers: tuple[RandomizedClassifier, ...]

    @property
    def rates(self) -> FloatArray:
        """Achieved held-out rates: ``(n_classes,)``, or ``(n_groups, n_classes)`` for a metric of groups."""
        stacked = np.stack([c.rates for c in self.classifiers])
        result: FloatArray = stacked if self.optimum.rates.ndim == 2 else stacked[0]
        return result

    @property
    def confusion(self) -> FloatArray:
        """Expected confusion matrix out of 100 people, ``(k, k)`` or ``(n_groups, k, k)``."""
        stacked = np.stack([c.confusion for c in self.classifiers])
        result: FloatArray = stacked if self.optimum.rates.ndim == 2 else stacked[0]
        return result


def best_classifier(
    space: DatasetSpace, metric: Metric, *, tolerance: float = DEFAULT_GAP_TOLERANCE
) -> BestClassifier:
    """The randomised classifier of ``space``'s dataset that ``metric`` likes best.

    Parameters
    ----------
    space : DatasetSpace
        A dataset's query space (its plug-ins span the feasible set).
    metric : Metric
        A metric of ``space.n_classes`` rates; a metric of groups needs a space with as many groups.
    tolerance : float
        Certificate accepted as optimal (see `elicitation.optimal.best_rates`).

    Returns
    -------
    BestClassifier

    Raises
    ------
    InvalidConfigError
        If the metric does not fit the space (classes or groups).
    """
    if metric.n_classes != space.n_classes:
        raise InvalidConfigError(
            f"the metric scores {metric.n_classes} classes, the dataset has {space.n_classes}"
        )
    grouped = family_of(metric).n_groups(metric)
    if grouped is None and space.n_groups > 1:
        # A metric without groups judges each group's classifier alone: every group gets its best one.
        parts = [_best_in_group(space, metric, g, tolerance) for g in range(space.n_groups)]
        return _combine(parts)
    if grouped is not None and grouped != space.n_groups:
        raise InvalidConfigError(f"the metric scores {grouped} groups, the dataset has {space.n_groups}")
    vertices = [space.plug_in_rates(g) for g in range(space.n_groups)]
    optimum = best_rates(metric, vertices if grouped is not None else vertices[0], tolerance=tolerance)
    classifiers = tuple(space.mixed_classifier(weights, g) for g, weights in enumerate(optimum.mixtures))
    return BestClassifier(optimum, classifiers)


def _best_in_group(space: DatasetSpace, metric: Metric, group: int, tolerance: float) -> BestClassifier:
    optimum = best_rates(metric, space.plug_in_rates(group), tolerance=tolerance)
    return BestClassifier(optimum, (space.mixed_classifier(optimum.mixtures[0], group),))


def _combine(parts: Sequence[BestClassifier]) -> BestClassifier:
    """Per-group optima as one answer (group rates stacked, values summed by group size elsewhere)."""
    first = parts[0].optimum
    optimum = BestRates(
        rates=np.stack([p.optimum.rates for p in parts]),
        mixtures=tuple(p.optimum.mixtures[0] for p in parts),
        value=first.value if len(parts) == 1 else float(np.mean([p.optimum.value for p in parts])),
        gap=float(sum(p.optimum.gap for p in parts)),
        exact=all(p.optimum.exact for p in parts),
        method=first.method,
    )
    return BestClassifier(optimum, tuple(c for p in parts for c in p.classifiers))


def accuracy_classifier(space: DatasetSpace) -> BestClassifier:
    """The most accurate randomised classifier (per group: overall accuracy is the groups' weighted sum).

    Accuracy is the linear metric ``sum_i P(Y = i) r_i``; its optimum is a plug-in (a vertex).
    """
    parts = [
        _best_in_group(space, LinearMetric(np.atleast_2d(space.priors)[g]), g, DEFAULT_GAP_TOLERANCE)
        for g in range(space.n_groups)
    ]
    return parts[0] if len(parts) == 1 else _combine(parts)


def trained_classifiers(space: DatasetSpace, group: int = 0) -> FloatArray:
    """Held-out rates of the dataset's trained (non-trivial) plug-in classifiers of one group."""
    result: FloatArray = space.plug_in_rates(group)[space.n_classes :]
    return result


def best_trained(space: DatasetSpace, metric: Metric) -> tuple[tuple[int, ...], float]:
    """The best single trained classifier for ``metric`` (one per group for a metric of groups).

    Returns the plug-in index of each group (into `DatasetSpace.plug_in_rates`) and the metric's value;
    every combination of the groups' trained classifiers is tried, so this is what picking one of the
    dataset's classifiers, without mixing, achieves at best.
    """
    grouped = family_of(metric).n_groups(metric)
    k = space.n_classes
    options = [trained_classifiers(space, g) for g in range(space.n_groups)]
    if grouped is None:
        picks = []
        values = []
        for rates in options:
            scores = np.array([metric(r) for r in rates])
            best = int(np.argmax(scores) if metric.higher_is_better else np.argmin(scores))
            picks.append(best + k)
            values.append(float(scores[best]))
        return tuple(picks), float(np.mean(values))
    grids = np.meshgrid(*[np.arange(len(rates)) for rates in options], indexing="ij")
    combos = np.stack([grid.reshape(-1) for grid in grids], axis=1)
    stacked = np.stack([options[g][combos[:, g]] for g in range(len(options))], axis=1)
    form = family_of(metric).quadratic_form(metric)
    if form is not None:
        flat = stacked.reshape(stacked.shape[0], -1)
        utility = (
            form.constant + flat @ form.linear + 0.5 * np.einsum("ni,ij,nj->n", flat, form.hessian, flat)
        )
        best = int(np.argmax(utility))
    else:
        scores = np.array([metric(rates) for rates in stacked])
        best = int(np.argmax(scores) if metric.higher_is_better else np.argmin(scores))
    return tuple(int(i) + k for i in combos[best]), float(metric(stacked[best]))


def refined_best_classifier(
    model: FeasibleModel,
    metric: Metric,
    *,
    rounds: int = REFINE_ROUNDS,
    tolerance: float = DEFAULT_GAP_TOLERANCE,
) -> tuple[BestClassifier, DatasetSpace]:
    """`best_classifier` with the feasible set grown towards the optimum (column generation, as Algorithm 3).

    At the optimum ``r*`` of a concave metric the gradient ``d = grad phi(r*)`` is the linear utility
    ``r*`` maximises; the best classifier for a linear utility is the plug-in with ``w_i = d_i / P(Y = i)``
    (the paper's Section 2), so that plug-in, measured on the held-out rows, is added whenever it beats
    ``r*`` on ``d``, and the optimum is found again. It stops when no group's plug-in improves (``r*`` is
    then optimal among all plug-ins of ``eta_hat``, not only the stored ones) or after ``rounds``.
    Metrics without a quadratic form are returned unrefined.

    Returns
    -------
    tuple of (BestClassifier, DatasetSpace)
        The best classifier and the grown space whose plug-ins it mixes.
    """
    space = model.space
    found = best_classifier(space, metric, tolerance=tolerance)
    form = family_of(metric).quadratic_form(metric)
    if form is None:
        return found, space
    k = space.n_classes
    labels, groups = model.test_labels, model.test_groups
    for _ in range(rounds):
        rates = np.atleast_2d(found.optimum.rates)
        if family_of(metric).n_groups(metric) is None:
            slopes = np.array([form.linear + form.hessian @ r for r in rates])
        else:
            slopes = (form.linear + form.hessian @ rates.reshape(-1)).reshape(-1, k)
        new_weights: list[FloatArray] = []
        new_counts: list[FloatArray] = []
        for g in range(space.n_groups):
            rows = groups == g
            totals = np.bincount(labels[rows], minlength=k).astype(np.float64)
            weights = slopes[g] / (totals / totals.sum())
            predictions = plug_in_predictions(model.eta[rows], weights)
            counts = (
                np.bincount(labels[rows] * k + predictions, minlength=k * k).reshape(k, k).astype(np.float64)
            )
            gain = float(slopes[g] @ (np.diag(counts) / totals) - slopes[g] @ rates[g])
            keep = gain > _REFINE_PROGRESS
            new_weights.append(weights[None] if keep else np.zeros((0, k)))
            new_counts.append(counts[None] if keep else np.zeros((0, k, k)))
        if not any(w.shape[0] for w in new_weights):
            break
        space = space.with_plug_ins(new_weights, new_counts)
        found = best_classifier(space, metric, tolerance=tolerance)
    return found, space
