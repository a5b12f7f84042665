"""The trade-off ``lam`` alone when ``a`` and the ``B^{uv}`` are known (Appendix D, Algorithm 5).

**Trade-off alone** (`tradeoff_search`, Algorithm 5). With ``a`` and ``B`` known only ``lam`` is unknown.
Moving one group ``u`` by ``x`` from ``o`` (others at ``o``) changes the cost by
``D(lam) = (1 - lam) dE + lam dV`` with ``dE = -<tau^u * a, x> < 0`` and ``dV = 1/2 x^T W_u x > 0``,
``W_u = sum_v B^{uv}``: linear in ``lam`` with a root ``lam* = -dE / (dV - dE)``. Choosing ``x`` so that
``lam*`` is the midpoint of the current interval turns one query into one exact halving
(``method="threshold"``, the default, ``ceil(log2(1/epsilon))`` queries). ``method="shrink"`` is the
paper's Algorithm 5 verbatim: ShrinkInterval over ``lam`` on a small sphere at ``z_1`` using the
first-order approximation of Equation 11 (up to three queries per halving, biased by the curvature the
approximation drops).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DegenerateMetricError, InvalidConfigError
from ..geometry import validate_inner_radius
from ..types import (
    Elicitation,
    Elicitor,
    FairQuadraticMetric,
    FloatArray,
    Query,
    Sphere,
    as_rate_array,
    ask_step,
    check_tau,
)
from .partitions import ZERO, check_epsilon, check_groups, check_sphere, lift_rates

__all__ = [
    "DEFAULT_TRADEOFF_INNER_RADIUS",
    "tradeoff_search",
]

#: Default ``varrho / rho`` of Algorithm 5's small sphere (``method="shrink"``). The first-order
#: approximation it relies on is biased by O(varrho), so the sphere is small (docs/benchmarks.md,
#: "Measurements behind the defaults").
DEFAULT_TRADEOFF_INNER_RADIUS = 0.025
#: Bisection steps when placing a threshold query; 60 halvings of ``[0, pi/2]`` reach float resolution.
_BISECTION_STEPS = 60


def _group_curvature(metric: FairQuadraticMetric, group: int) -> FloatArray:
    """``W_u = sum_{v != u} B^{uv}``: the violation curvature when only group ``u`` moves."""
    k = metric.n_classes
    total = np.zeros((k, k))
    for (u, v), B in metric.B_pairs.items():
        if group in (u, v):
            total += B
    return total


def _orthogonal_curvature(g: FloatArray, W: FloatArray) -> tuple[float, FloatArray]:
    """Largest ``p^T W p`` over unit ``p`` orthogonal to ``g``, and that ``p``."""
    k = g.shape[0]
    g_unit = g / float(np.linalg.norm(g))
    projector = np.eye(k) - np.outer(g_unit, g_unit)
    values, vectors = np.linalg.eigh(projector @ W @ projector)
    p = vectors[:, -1]
    p = projector @ p
    norm = float(np.linalg.norm(p))
    if norm < ZERO:
        return 0.0, p
    return float(values[-1]), p / norm


class _ThresholdPlan:
    """Everything `method="threshold"` needs to place a query whose answer flips exactly at ``lam*``."""

    def __init__(self, metric: FairQuadraticMetric, sphere: Sphere) -> None:
        best: tuple[float, int, FloatArray, FloatArray, FloatArray] | None = None
        for u in range(metric.n_groups):
            g = metric.tau[u] * metric.a
            g_norm = float(np.linalg.norm(g))
            if g_norm < ZERO:
                continue
            W = _group_curvature(metric, u)
            curvature, p = _orthogonal_curvature(g, W)
            score = g_norm * curvature
            if curvature > ZERO and (best is None or score > best[0] + ZERO):
                best = (score, u, g, W, p)
        if best is None:
            raise DegenerateMetricError(
                "no group can trade error for fairness violation at every lam: for each group u, the "
                "violation curvature sum_v B^{uv} vanishes off the direction tau^u * a (or tau^u * a = 0)"
            )
        _, self.group, self.g, self.W, self.p = best
        self.g_unit = self.g / float(np.linalg.norm(self.g))
        self.sphere = sphere

    def _direction(self, beta: float) -> FloatArray:
        direction: FloatArray = math.cos(beta) * self.p + math.sin(beta) * self.g_unit
        return direction / float(np.linalg.norm(direction))

    def _ratio(self, direction: FloatArray, length: float) -> float:
        """``-dE / dV`` for ``x = length * direction``: the odds ``lam* / (1 - lam*)`` of its threshold."""
        curvature = float(direction @ self.W @ direction)
        if curvature <= ZERO:
            return math.inf
        return 2.0 * float(self.g @ direction) / (length * curvature)

    def offset(self, threshold: float) -> FloatArray:
        """The move ``x`` of the chosen group whose cost change vanishes exactly at ``lam = threshold``."""
        odds = threshold / (1.0 - threshold)
        rho = self.sphere.radius
        if self._ratio(self.g_unit, rho) > odds:
            lo, hi = 0.0, math.pi / 2.0  # ratio(lo) = 0 < odds < ratio(hi): bisect on the angle.
            for _ in range(_BISECTION_STEPS):
                mid = (lo + hi) / 2.0
                if self._ratio(self._direction(mid), rho) < odds:
                    lo = mid
                else:
                    hi = mid
            beta = (lo + hi) / 2.0
            if self._ratio(self._direction(beta), rho) == math.inf:
                beta = lo
            direction = self._direction(beta)
            # Rescale the length so that the threshold is exact despite the finite bisection.
            length = 2.0 * float(self.g @ direction) / (odds * float(direction @ self.W @ direction))
            return min(length, rho) * direction
        # Even along g the full radius is too long: shorten the step (the threshold grows as 1 / length).
        length = 2.0 * float(self.g @ self.g_unit) / (odds * float(self.g_unit @ self.W @ self.g_unit))
        return length * self.g_unit


def _threshold_steps(
    metric: FairQuadraticMetric, sphere: Sphere, epsilon: float, label: str
) -> Generator[Query, bool, Elicitation[FairQuadraticMetric]]:
    plan = _ThresholdPlan(metric, sphere)
    m = metric.n_groups
    baseline = lift_rates(sphere.center, frozenset(), sphere.center, m)
    lo, hi, step = 0.0, 1.0, 0
    while hi - lo > epsilon:
        threshold = (lo + hi) / 2.0
        x = plan.offset(threshold)
        moved = lift_rates(sphere.center + x, frozenset({plan.group}), sphere.center, m)
        query = Query(moved, baseline, search=label, kind="threshold", coordinate=plan.group, step=step)
        # The moved profile costs less exactly when lam < threshold.
        cheaper = yield from ask_step(query)
        if cheaper is None:
            break  # the display cannot show this step: lam is as fine as it can be shown
        if cheaper:
            hi = threshold
        else:
            lo = threshold
        step += 1
    lam = (lo + hi) / 2.0
    estimate = FairQuadraticMetric(metric.a, dict(metric.B_pairs), lam, metric.tau)
    details: dict[str, Any] = {"method": "threshold", "group": plan.group, "interval": (lo, hi)}
    return Elicitation(metric=estimate, num_queries=step, details=details)


def _shrink_steps(
    metric: FairQuadraticMetric, sphere: Sphere, epsilon: float, inner_radius: float, label: str
) -> Generator[Query, bool, Elicitation[FairQuadraticMetric]]:
    m = metric.n_groups
    group = 0
    g = metric.tau[group] * metric.a
    W = _group_curvature(metric, group)
    z = np.array(sphere.center, dtype=np.float64)
    z[0] += sphere.radius - inner_radius
    pull = W @ (z - sphere.center)

    def profile(candidate: float) -> FloatArray:
        # Equation 11: the utility (negative cost) gradient at z_1 is (1 - lam) tau^1 * a - lam W (z_1 - o).
        gradient = (1.0 - candidate) * g - candidate * pull
        norm = float(np.linalg.norm(gradient))
        if norm < ZERO:
            raise DegenerateMetricError(
                f"the linearised trade-off gradient vanishes at lam = {candidate:g} (Lemma 4's regularity)"
            )
        return lift_rates(z + inner_radius * gradient / norm, frozenset({group}), sphere.center, m)

    lo, hi, asked, step = 0.0, 1.0, 0, 0

    def compare(first: float, second: float) -> Generator[Query, bool, bool | None]:
        nonlocal asked
        query = Query(profile(first), profile(second), search=label, kind="shrink", step=step)
        answer = yield from ask_step(query)
        asked += answer is not None
        return answer

    while hi - lo > epsilon:
        c, mid, e = (3 * lo + hi) / 4, (lo + hi) / 2, (lo + 3 * hi) / 4
        # ShrinkInterval (Figure 4): at most three queries; vartheta is unimodal in lam (Lemma 4). A step
        # the display refuses ends the search at the bracket reached.
        left = yield from compare(lo, c)
        if left is None:
            break
        inner = True if left else (yield from compare(c, mid))
        if inner is None:
            break
        if inner:
            hi = mid
            step += 1
            continue
        right = yield from compare(mid, e)
        if right is None:
            break
        if right:
            lo, hi = c, e
        else:
            # The paper keeps [c, b] here; e preferred to d already puts the peak in [d, b] (a true halving).
            lo = mid
        step += 1
    lam = (lo + hi) / 2.0
    estimate = FairQuadraticMetric(metric.a, dict(metric.B_pairs), lam, metric.tau)
    details: dict[str, Any] = {"method": "shrink", "group": group, "interval": (lo, hi), "z": z.tolist()}
    return Elicitation(metric=estimate, num_queries=asked, details=details)


def tradeoff_search(
    sphere: Sphere,
    *,
    a: npt.ArrayLike,
    B_pairs: Mapping[tuple[int, int], npt.ArrayLike],
    tau: npt.ArrayLike,
    epsilon: float = 1e-2,
    method: str = "threshold",
    inner_radius: float | None = None,
    search: str = "tradeoff",
) -> Elicitor[Elicitation[FairQuadraticMetric]]:
    """Elicit the trade-off ``lam`` alone when ``a`` and the ``B^{uv}`` are known (Appendix D, Algorithm 5).

    Parameters
    ----------
    sphere : Sphere
        The query sphere (centre ``o``, radius ``rho``) feasible for every group.
    a : array_like, shape (n_classes,)
        Known misclassification costs (non-negative; normalised to unit length).
    B_pairs : mapping (u, v) -> array_like, shape (n_classes, n_classes)
        Known PSD violation weights for every pair ``u < v`` (0-based); normalised as in Definition 3.
    tau : array_like, shape (n_groups, n_classes)
        Group prevalences ``tau[g, i] = P(G = g | Y = i)``, columns summing to one.
    epsilon : float
        Binary-search tolerance in ``(0, 1)``; the search stops when the interval is at most this wide, so
        ``|lam - lam_hat| <= epsilon / 2`` for an exact oracle (``method="threshold"``).
    method : {"threshold", "shrink"}
        ``"threshold"``: one exact halving per query (see the module docstring). ``"shrink"``: the paper's
        Algorithm 5 with ShrinkInterval on the linearised metric at ``z_1``.
    inner_radius : float, optional
        ``varrho`` of Algorithm 5's small sphere (``"shrink"`` only), in ``(0, rho)``; default
        ``DEFAULT_TRADEOFF_INNER_RADIUS * rho``.
    search : str
        Label prefix of the queries.

    Yields
    ------
    Query
        Pairs of ``(n_groups, n_classes)`` rate profiles: one group moved within the sphere, the others at
        ``o``.

    Receives
    --------
    bool
        ``True`` when the first profile is preferred (costs less).

    Returns
    -------
    Elicitor
        Returns an `Elicitation` whose ``metric`` is the `FairQuadraticMetric` with the known ``a``, ``B``
        and ``lam_hat``.

    Raises
    ------
    InvalidConfigError
        Bad sphere, shapes, ``tau``, ``epsilon``, ``method`` or ``inner_radius``.
    DegenerateMetricError
        ``"threshold"``: no group's violation curvature has a direction off ``tau^u * a``, so small ``lam``
        cannot be told apart. ``"shrink"``: the linearised gradient vanishes for some ``lam`` (the
        regularity assumption of Lemma 4 fails).

    Notes
    -----
    ``"threshold"`` asks exactly ``ceil(log2(1 / epsilon))`` queries (7 for ``epsilon = 0.01``);
    ``"shrink"`` at most three per halving.
    """
    space = check_sphere(sphere)
    tol = check_epsilon(epsilon)
    k = space.n_classes
    a_values = as_rate_array(a, "a", ndim=1)
    if a_values.shape != (k,):
        raise InvalidConfigError(f"a must have shape ({k},) to match the sphere, got {a_values.shape}")
    tau_values = as_rate_array(tau, "tau", ndim=2)
    groups = check_groups(tau_values.shape[0])
    tau_values = check_tau(tau_values, n_groups=groups, n_classes=k)
    if not isinstance(B_pairs, Mapping):
        raise InvalidConfigError(
            f"B_pairs must map group pairs (u, v), u < v, to (k, k) matrices, got {type(B_pairs).__name__}"
        )
    known = FairQuadraticMetric(
        a_values,
        {key: as_rate_array(value, f"B_pairs[{key}]") for key, value in B_pairs.items()},
        0.5,
        tau_values,
    )  # validates a >= 0, PSD B, keys
    halvings = max(0, math.ceil(math.log2(1.0 / tol) - 1e-12))
    if method == "threshold":
        _ThresholdPlan(known, space)  # raises DegenerateMetricError eagerly
        body = _threshold_steps(known, space, tol, search)
        budget = halvings
    elif method == "shrink":
        varrho = DEFAULT_TRADEOFF_INNER_RADIUS * space.radius if inner_radius is None else inner_radius
        varrho = validate_inner_radius(space, varrho)
        body = _shrink_steps(known, space, tol, varrho, search)
        budget = 3 * halvings
    else:
        raise InvalidConfigError(f"method must be 'threshold' or 'shrink', got {method!r}")
    return Elicitor(body, name=f"tradeoff_search[{method}]", max_queries=budget)
