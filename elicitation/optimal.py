"""The best randomised classifier for a metric on a feasible set given by its classifiers' rates.

Theory of operation
-------------------
A dataset's feasible rates are the convex hull of the rates of the classifiers trained on it (paper,
Appendix B: mixing classifiers at random reaches every point between them). The hull is kept as a
V-representation, the rows of ``vertices`` (every classifier's rates, whether or not it is a vertex of the
hull): a facet description is never needed and would blow up for ten classes. The best randomised
classifier for a metric ``phi`` is the mixture ``lambda`` on the simplex that maximises
``phi(V^T lambda)``; with groups, each group mixes its own classifiers (its own hull) and the metric
scores the group rates together.

Quadratic metrics are written as a utility ``u(x) = c + <q, x> + 1/2 x^T H x`` of the flattened rates
(`elicitation.families.MetricFamily.quadratic_form`; a cost appears negated). When ``H`` is negative
semi-definite, which holds for linear metrics, QPME's metrics (``B`` NSD, Definition 2) and the fair cost
of Definition 3 (convex in the group rates), the problem is a concave quadratic programme and is solved
to optimality:

1. linear ``u``: the best vertex of each group;
2. otherwise a primal active-set method on ``lambda``: the Karush-Kuhn-Tucker system is solved exactly on
   the current face (the classifiers in the mixture), the mixture moves to that face's maximiser (or
   stops where a weight reaches zero), and at a face's maximiser the classifier with the largest
   Frank-Wolfe violation joins, until the certificate below is within the tolerance;
3. the certificate is the Frank-Wolfe gap ``g = max_v <grad u(x), v - x>`` (summed over groups): for a
   concave ``u``, ``u* - u(x) <= g``, so a small gap proves the answer optimal on the given hull.

Other metrics (the cubic family, quadratics with indefinite curvature) have no such guarantee: SLSQP
runs from several starting mixtures (the best classifiers and the even mixture) and the best local
optimum is returned with ``exact=False``; its gap then only measures first-order stationarity.

Symbols
-------
=============  ================================================
paper / maths  code
=============  ================================================
``R^g``        ``vertices[g]`` (rates of group ``g``'s classifiers)
``lambda``     ``mixtures`` (one weight vector per group)
``u, q, H``    `QuadraticForm` ``(constant, linear, hessian)``
``g``          ``BestRates.gap``
=============  ================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.optimize import minimize  # type: ignore[import-untyped]

from .errors import InvalidConfigError, NumericalError
from .families import family_of
from .families.base import QuadraticForm
from .types import FloatArray, Metric, as_rate_array

__all__ = ["DEFAULT_GAP_TOLERANCE", "METHODS", "BestRates", "best_rates"]

#: The Frank-Wolfe gap (utility units) below which a concave problem counts as solved.
DEFAULT_GAP_TOLERANCE: Final = 1e-10
#: How `best_rates` found its answer: the best vertex (linear utility), the concave programme, or the
#: best of several local searches (no global guarantee).
METHODS: Final = ("vertex", "concave", "local")
#: Largest eigenvalue of ``H`` (relative to its norm) still treated as zero when testing concavity.
_CONCAVITY_RTOL = 1e-10
#: Mixture weights at or below this are outside the support (SLSQP leaves ~1e-17 residues).
_SUPPORT_ATOL = 1e-10
#: Active-set rounds allowed per classifier (plus ten) before the optimiser gives up.
_MAX_ROUNDS = 25
#: Residual of the KKT system (relative to its right-hand side) above which a face has no stationary point.
_KKT_ATOL = 1e-9
#: Local searches for a metric that is not concave (best vertices, then the even mixture).
_LOCAL_STARTS = 6
_SLSQP_OPTIONS = {"ftol": 1e-12, "maxiter": 500}


@dataclass(frozen=True, eq=False)
class BestRates:
    """The best point of a feasible set for a metric, and the mixture of classifiers reaching it.

    Attributes
    ----------
    rates : numpy.ndarray, shape (n_classes,) or (n_groups, n_classes)
        The optimal rates (group rates for a metric of groups).
    mixtures : tuple of numpy.ndarray
        One weight vector per group over that group's classifiers (rows of its ``vertices``):
        non-negative, summing to one, ``vertices[g].T @ mixtures[g] == rates[g]``.
    value : float
        The metric at ``rates`` (a cost for a fair metric: lower is better).
    gap : float
        The Frank-Wolfe gap at ``rates``, in the metric's units: for a concave metric (``exact``) no
        classifier in the hull does better than ``value`` by more than this.
    exact : bool
        Whether ``gap`` bounds the distance to the optimum (concave metric) or only measures local
        stationarity (any other metric).
    method : str
        One of `METHODS`.
    """

    rates: FloatArray
    mixtures: tuple[FloatArray, ...]
    value: float
    gap: float
    exact: bool
    method: str


def best_rates(
    metric: Metric,
    vertices: npt.ArrayLike | Sequence[npt.ArrayLike],
    *,
    tolerance: float = DEFAULT_GAP_TOLERANCE,
) -> BestRates:
    """The rates in the convex hull of ``vertices`` that ``metric`` likes best, with their mixture.

    Parameters
    ----------
    metric : Metric
        Any metric; a metric of groups (`FairQuadraticMetric`) needs one vertex array per group.
    vertices : array_like, shape (n_vertices, n_classes), or a sequence of them (one per group)
        Rates of the classifiers whose mixtures form the feasible set (rows in ``[0, 1]``).
    tolerance : float
        Frank-Wolfe gap (in the metric's units) accepted as optimal for a concave metric.

    Returns
    -------
    BestRates

    Raises
    ------
    InvalidConfigError
        If the vertices do not fit the metric (shape, groups, values outside ``[0, 1]``) or the tolerance
        is not positive.
    NumericalError
        If the optimiser produces non-finite numbers.

    Notes
    -----
    Exact (certified by the gap) for concave quadratic metrics; see the module docstring for the others.
    """
    if not isinstance(tolerance, float | int) or not 0.0 < float(tolerance) < 1.0:
        raise InvalidConfigError(f"tolerance must lie in (0, 1), got {tolerance!r}")
    family = family_of(metric)
    n_groups = family.n_groups(metric)
    groups = _vertex_groups(vertices, metric.n_classes, n_groups)
    problem = _Problem(metric, family.quadratic_form(metric), groups, n_groups is not None)
    if problem.concave:
        if not np.any(problem.hessian):
            lam = problem.best_vertices(problem.q_lam)
            method = "vertex"
        else:
            lam = problem.solve_concave(float(tolerance))
            method = "concave"
    else:
        lam = problem.solve_local()
        method = "local"
    return problem.result(lam, method)


def _vertex_groups(
    vertices: npt.ArrayLike | Sequence[npt.ArrayLike], k: int, n_groups: int | None
) -> list[FloatArray]:
    if n_groups is None:
        if np.ndim(vertices) != 2:  # type: ignore[arg-type]
            raise InvalidConfigError(
                "the metric scores 1 group (one rate vector): give one vertex array of shape "
                f"(n_vertices, {k}), got shape {np.shape(vertices)}"  # type: ignore[arg-type]
            )
        raw = [vertices]
    elif isinstance(vertices, np.ndarray) and vertices.ndim == 2:
        raw = [vertices]
    else:
        raw = list(vertices)  # type: ignore[arg-type]
    expected = 1 if n_groups is None else n_groups
    if len(raw) != expected:
        raise InvalidConfigError(
            f"the metric scores {expected} group(s); give one vertex array per group, got {len(raw)}"
        )
    groups = []
    for index, item in enumerate(raw):
        array = as_rate_array(item, f"vertices[{index}]" if n_groups else "vertices", ndim=2)  # type: ignore[arg-type]
        if array.shape[0] < 1 or array.shape[1] != k:
            raise InvalidConfigError(
                f"vertices must have shape (n_vertices >= 1, {k}) for a {k}-class metric, got {array.shape}"
            )
        if np.any(array < 0.0) or np.any(array > 1.0):
            raise InvalidConfigError("vertices are rates: every entry must lie in [0, 1]")
        groups.append(array)
    return groups


class _Problem:
    """``max u(A lambda)`` over a product of simplices, ``A`` block-diagonal with the groups' ``V^T``."""

    def __init__(
        self, metric: Metric, form: QuadraticForm | None, groups: list[FloatArray], grouped: bool
    ) -> None:
        self.metric = metric
        self.grouped = grouped
        self.k = groups[0].shape[1]
        self.sizes = [g.shape[0] for g in groups]
        self.offsets = np.cumsum([0, *self.sizes])
        n = int(self.offsets[-1])
        self.a_matrix = np.zeros((len(groups) * self.k, n))
        self.membership = np.zeros((len(groups), n))
        for index, vertices in enumerate(groups):
            columns = slice(self.offsets[index], self.offsets[index + 1])
            self.a_matrix[index * self.k : (index + 1) * self.k, columns] = vertices.T
            self.membership[index, columns] = 1.0
        self.sign = 1.0 if metric.higher_is_better else -1.0
        self.form = form
        if form is not None:
            self.linear = form.linear
            self.hessian = form.hessian
            largest = float(np.max(np.linalg.eigvalsh(form.hessian))) if form.hessian.size else 0.0
            scale = max(1.0, float(np.linalg.norm(form.hessian)))
            self.concave = largest <= _CONCAVITY_RTOL * scale
            self.q_lam = self.a_matrix.T @ form.linear
            self.h_lam = self.a_matrix.T @ form.hessian @ self.a_matrix
        else:
            self.concave = False

    # -- the utility in lambda -------------------------------------------------------------------
    def rates(self, lam: FloatArray) -> FloatArray:
        flat = self.a_matrix @ lam
        result: FloatArray = flat.reshape(-1, self.k) if self.grouped else flat
        return result

    def utility(self, lam: FloatArray) -> float:
        if self.form is not None:
            return float(self.q_lam @ lam + 0.5 * lam @ self.h_lam @ lam)
        return self.sign * float(self.metric(self.rates(lam)))

    def gradient(self, lam: FloatArray) -> FloatArray:
        if self.form is not None:
            result: FloatArray = self.q_lam + self.h_lam @ lam
            return result
        return _numeric_gradient(self.utility, lam)

    # -- pieces --------------------------------------------------------------------------------------
    def best_vertices(self, scores: FloatArray) -> FloatArray:
        """Per group, all weight on the classifier with the largest ``scores`` entry (first on ties)."""
        lam = np.zeros(scores.shape[0])
        for lo, hi in zip(self.offsets[:-1], self.offsets[1:], strict=True):
            lam[lo + int(np.argmax(scores[lo:hi]))] = 1.0
        return lam

    def fw_vertices(self, lam: FloatArray) -> tuple[FloatArray, float]:
        """The Frank-Wolfe vertex of each group (as a 0/1 mixture) and the gap ``<grad, v - lam>``."""
        grad = self.gradient(lam)
        lam_fw = np.zeros_like(lam)
        gap = 0.0
        for lo, hi in zip(self.offsets[:-1], self.offsets[1:], strict=True):
            best = lo + int(np.argmax(grad[lo:hi]))
            lam_fw[best] = 1.0
            gap += float(grad[best] - grad[lo:hi] @ lam[lo:hi])
        return lam_fw, max(gap, 0.0)

    def normalised(self, lam: FloatArray) -> FloatArray:
        """Weights at or below `_SUPPORT_ATOL` set to zero, each group's weights rescaled to sum to one."""
        lam = np.where(lam > _SUPPORT_ATOL, lam, 0.0)
        totals = self.membership @ lam
        if np.any(totals <= 0.0):
            raise NumericalError("the optimiser lost a group's mixture (all weights zero)")
        result: FloatArray = lam / (self.membership.T @ totals)
        return result

    def slsqp(self, start: FloatArray, support: npt.NDArray[np.bool_] | None = None) -> FloatArray:
        """SLSQP on ``lambda`` (restricted to ``support`` when given), maximising the utility."""
        index = np.arange(start.shape[0]) if support is None else np.flatnonzero(support)
        membership = self.membership[:, index]
        full = np.zeros(start.shape[0])

        def embed(x: FloatArray) -> FloatArray:
            full[:] = 0.0
            full[index] = x
            return full

        result = minimize(
            lambda x: -self.utility(embed(x)),
            start[index],
            jac=lambda x: -self.gradient(embed(x))[index],
            method="SLSQP",
            bounds=[(0.0, 1.0)] * index.shape[0],
            constraints=[{"type": "eq", "fun": lambda x: membership @ x - 1.0, "jac": lambda x: membership}],
            options=_SLSQP_OPTIONS,
        )
        if not np.all(np.isfinite(result.x)):
            raise NumericalError(f"the optimiser produced non-finite weights ({result.message})")
        lam = np.zeros(start.shape[0])
        lam[index] = np.clip(result.x, 0.0, None)
        return self.normalised(lam)

    def face_step(self, lam: FloatArray, free: npt.NDArray[np.bool_]) -> FloatArray | None:
        """The maximiser of the utility on the face of the ``free`` weights (KKT system, solved exactly).

        Returns ``None`` when that face has no interior stationary point: its utility then rises
        linearly along a direction in the null space of its curvature (see `ascent_direction`).
        """
        index = np.flatnonzero(free)
        n_groups = self.membership.shape[0]
        h = self.h_lam[np.ix_(index, index)]
        g = self.membership[:, index]
        system = np.block([[-h, g.T], [g, np.zeros((n_groups, n_groups))]])
        rhs = np.concatenate([self.q_lam[index], np.ones(n_groups)])
        solution, *_ = np.linalg.lstsq(system, rhs, rcond=None)
        scale = max(1.0, float(np.abs(rhs).max()))
        if not np.allclose(system @ solution, rhs, rtol=0.0, atol=_KKT_ATOL * scale):
            return None
        target = np.zeros_like(lam)
        target[index] = solution[: index.shape[0]]
        return target

    def ascent_direction(self, lam: FloatArray, free: npt.NDArray[np.bool_]) -> FloatArray:
        """A direction within the face along which the curvature vanishes and the utility rises."""
        index = np.flatnonzero(free)
        rows = np.vstack([self.h_lam[np.ix_(index, index)], self.membership[:, index]])
        _, singular, vt = np.linalg.svd(rows)
        rank = int(np.sum(singular > singular[0] * 1e-12)) if singular.size else 0
        null = vt[rank:]
        direction = np.zeros_like(lam)
        direction[index] = null.T @ (null @ self.gradient(lam)[index])
        return direction

    # -- solvers -------------------------------------------------------------------------------------
    def even(self) -> FloatArray:
        result: FloatArray = self.membership.T @ (1.0 / np.array(self.sizes, dtype=np.float64))
        return result

    def solve_concave(self, tolerance: float) -> FloatArray:
        """Primal active-set method: exact maximisation on a face, then let in the most violated vertex.

        Starts from the best vertex of each group for the utility's slope at the even mixture. Each
        round either moves to the face's maximiser (stopping at the first weight that reaches zero,
        which leaves the face) or, at a face's maximiser, lets in the classifier with the largest
        Frank-Wolfe violation. The utility never decreases, so no face is visited twice.
        """
        lam = self.best_vertices(self.gradient(self.even()))
        free = lam > 0.0
        limit = _MAX_ROUNDS * (self.a_matrix.shape[1] + 10)
        for _ in range(limit):
            target = self.face_step(lam, free)
            direction = self.ascent_direction(lam, free) if target is None else target - lam
            if target is None and not np.any(np.abs(direction) > 0.0):
                target = lam  # numerically flat face: treat the current point as its maximiser
                direction = np.zeros_like(lam)
            shrinking = free & (direction < 0.0)
            if target is not None and not np.any(target[free] < 0.0):
                lam = self.normalised(np.where(free, target, 0.0))
                grad = self.gradient(lam)
                violations = np.full(lam.shape[0], -np.inf)
                gap = 0.0
                for lo, hi in zip(self.offsets[:-1], self.offsets[1:], strict=True):
                    level = float(grad[lo:hi] @ lam[lo:hi])
                    violations[lo:hi] = grad[lo:hi] - level
                    gap += max(float(np.max(grad[lo:hi])) - level, 0.0)
                if gap <= tolerance:
                    return lam
                violations[free] = -np.inf
                entering = int(np.argmax(violations))
                if not violations[entering] > 0.0:
                    return lam
                free[entering] = True
                continue
            # step towards the target (or along the ascent ray) until a weight reaches zero
            ratios = np.where(shrinking, lam / np.where(shrinking, -direction, 1.0), np.inf)
            step = float(np.min(ratios))
            if target is not None:
                step = min(step, 1.0)
            if not np.isfinite(step):
                raise NumericalError("the optimiser found an unbounded face of a bounded set")
            lam = lam + step * direction
            blocking = shrinking & (ratios <= step)
            lam[blocking] = 0.0
            free &= ~blocking
            lam = self.normalised(lam)
            free &= lam > 0.0
        raise NumericalError(f"the optimiser did not converge within {limit} active-set rounds")

    def solve_local(self) -> FloatArray:
        starts = [self.even()]
        if not self.grouped:
            n = self.a_matrix.shape[1]
            vertex_values = np.array([self.utility(np.eye(1, n, j)[0]) for j in range(n)])
            for j in np.argsort(-vertex_values, kind="stable")[: _LOCAL_STARTS - 1]:
                starts.append(np.eye(1, n, int(j))[0])
        best: FloatArray | None = None
        for start in starts:
            lam = self.slsqp(start)
            if best is None or self.utility(lam) > self.utility(best):
                best = lam
        assert best is not None
        return best

    def result(self, lam: FloatArray, method: str) -> BestRates:
        rates = self.rates(lam)
        if not np.all(np.isfinite(rates)):
            raise NumericalError("the optimal rates are not finite")
        _, gap = self.fw_vertices(lam)
        mixtures = []
        for lo, hi in zip(self.offsets[:-1], self.offsets[1:], strict=True):
            weights = lam[lo:hi].copy()
            weights.setflags(write=False)
            mixtures.append(weights)
        rates = np.array(rates)
        rates.setflags(write=False)
        return BestRates(
            rates=rates,
            mixtures=tuple(mixtures),
            value=float(self.metric(rates)),
            gap=gap,
            exact=method != "local",
            method=method,
        )


def _numeric_gradient(function: Callable[[FloatArray], float], x: FloatArray) -> FloatArray:
    """Central differences; only for metrics without a quadratic form (the local search)."""
    step = 1e-7
    gradient = np.empty_like(x)
    for i in range(x.shape[0]):
        shift = np.zeros_like(x)
        shift[i] = step
        gradient[i] = (function(x + shift) - function(x - shift)) / (2.0 * step)
    return gradient
