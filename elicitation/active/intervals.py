"""Credible intervals of what a result states: the trade-off ``lam`` and the per-person cost ratios.

A result's words state a share (the weight on equal treatment, ``lam`` of Definition 3) and ratios (a
mistake on one class costs so many times as much, per person, as one on the cheapest class). Each comes
with an equal-tailed interval of the weighted particle posterior, so the words can claim only what the
answers support.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..posterior import sym_from_vec
from ..types import FloatArray
from .families import FamilySpec

__all__ = ["DEFAULT_INTERVAL_LEVEL", "class_shares", "posterior_intervals", "weighted_quantiles"]

#: Level of ``details["intervals"]``: 90 %, the level whose coverage the benchmark checks.
DEFAULT_INTERVAL_LEVEL = 0.90


def weighted_quantiles(values: FloatArray, weights: FloatArray, levels: Sequence[float]) -> FloatArray:
    """Per-column weighted quantiles: ``(n, p)`` values -> ``(len(levels), p)``."""
    order = np.argsort(values, axis=0)
    sorted_values = np.take_along_axis(values, order, axis=0)
    cumulative = np.cumsum(weights[order], axis=0)
    cumulative /= cumulative[-1]
    result = np.empty((len(levels), values.shape[1]))
    for row, level in enumerate(levels):
        index = np.argmax(cumulative >= level, axis=0)
        result[row] = sorted_values[index, np.arange(values.shape[1])]
    return result


def class_shares(priors: FloatArray, tau: FloatArray | None) -> FloatArray:
    """Each class's share of all people, ``(k,)``, from per-group priors ``(m, k)`` and ``tau``.

    With groups, ``tau[g, i] / P(Y = i | G = g) = P(G = g) / P(Y = i)``: normalised over the groups it gives
    the group shares (averaged over the classes), which weight the per-group priors.
    """
    if tau is None or priors.shape[0] == 1:
        shares = priors.mean(axis=0)
    else:
        group = tau / priors
        group = (group / group.sum(axis=0, keepdims=True)).mean(axis=1)
        shares = group @ priors
    result: FloatArray = shares / shares.sum()
    return result


def _error_weights(spec: FamilySpec, theta: FloatArray, center: FloatArray) -> FloatArray:
    """Per-rate weight of each class's correct decisions per particle, ``(n, k)``: ``a`` (linear, fair),
    the gradient ``a + B o`` at the region's centre (quadratic, where the words read the weights)."""
    k = spec.n_classes
    if spec.kind == "quadratic":
        result: FloatArray = theta[:, :k] + np.einsum("nij,j->ni", sym_from_vec(theta[:, k:], k), center)
        return result
    return theta[:, :k]


def posterior_intervals(
    spec: FamilySpec,
    theta: FloatArray,
    weights: FloatArray,
    estimate: FloatArray,
    *,
    level: float,
    shares: FloatArray,
    center: FloatArray,
) -> tuple[dict[str, Any], int]:
    """Equal-tailed credible intervals at ``level`` of the quantities a result's words state.

    Parameters
    ----------
    spec : FamilySpec
        The metric family.
    theta, weights : ndarray
        Normalised posterior particles ``(n, d)`` and their weights ``(n,)``.
    estimate : ndarray
        The reported estimate's normalised parameters ``(d,)``: it fixes the cheapest class.
    level : float
        Posterior mass inside each interval.
    shares : ndarray
        Each class's share of the people shown, ``(k,)`` (`class_shares`).
    center : ndarray
        The query region's centre ``(k,)`` (quadratic weights are read there).

    Returns
    -------
    (dict, int)
        ``{"lam": [low, high], "cost_ratio": [[low, high], ...]}`` (``"lam"`` for the fair family only)
        and the index of the class every ratio is relative to (the cheapest per person under the
        estimate; its own interval is ``[1, 1]``). ``cost_ratio[i]`` bounds how many times as much a
        mistake on one person of class ``i`` costs as one on a person of that class.
    """
    tail = (1.0 - level) / 2.0
    bounds = (tail, 1.0 - tail)
    per_person = np.abs(_error_weights(spec, np.vstack([estimate[None, :], theta]), center)) / shares
    base = int(np.argmin(per_person[0]))
    ratios = per_person[1:] / np.maximum(per_person[1:, base : base + 1], 1e-300)
    ratio_bounds = weighted_quantiles(ratios, weights, bounds)
    intervals: dict[str, Any] = {}
    if spec.kind == "fair":
        lam = spec.tradeoff(theta)
        intervals["lam"] = [float(value) for value in weighted_quantiles(lam[:, None], weights, bounds)[:, 0]]
    intervals["cost_ratio"] = [
        [float(ratio_bounds[0, i]), float(ratio_bounds[1, i])] for i in range(spec.n_classes)
    ]
    return intervals, base
