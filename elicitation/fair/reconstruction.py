"""Fair QPME's reconstruction of ``(a, B^{uv}, lam)`` from the per-partition estimates (Appendix D).

**Recovering the coefficients.** Dividing the estimates of partition ``sigma`` by its scale
``c (1 - lam)`` (fixed by ``||a|| = 1``) gives ``a * tau^sigma`` and ``W~^sigma = lam / (1 - lam) W^sigma``.
``a`` and every partition's scale ``y_sigma = 1 / (c (1 - lam))`` solve the homogeneous system
``tau^sigma_i a_i - y_sigma d^sigma_i = 0`` (all partitions, all classes at once), taken as its
least-squares null vector (smallest right singular vector), so classes a partition barely moves
(small ``tau^sigma_i``) carry little weight. The ``binom(m, 2)`` matrices ``B~^{uv} = lam/(1 - lam) B^{uv}``
then solve ``Xi B~ = W~`` entrywise (Appendix D's block system), where the membership matrix ``Xi`` has
``Xi[sigma, (u, v)] = 1`` when the partition ``sigma`` separates ``u`` and ``v``. Each ``B~^{uv}`` is
projected onto the PSD cone (the truth lies in it, so the projection never moves the estimate away from
it), ``t = 1/2 sum ||B~^{uv}||_F`` is ``lam / (1 - lam)`` (separate normalisation), hence
``lam_hat = t / (1 + t)`` and ``B_hat^{uv} = B~^{uv} / t``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import DegenerateMetricError, InvalidConfigError, NumericalError
from ..qpme import DEFAULT_RIDGE, signed_fit_weight
from ..types import (
    FairQuadraticMetric,
    FloatArray,
    as_rate_array,
    pair_index,
)
from .partitions import ZERO, Partition, membership_matrix

__all__ = [
    "FairReconstruction",
    "LinePeak",
    "SlopeRun",
    "costs_from_gradients",
    "reconstruct_fair",
    "reconstruct_fair_anchored",
    "reconstruct_fair_joint",
    "reconstruct_fair_signed",
    "slope_misfit",
]

#: Weight of a `LinePeak` equation relative to one slope equation.
_PEAK_WEIGHT = 10.0


@dataclass(frozen=True, eq=False)
class FairReconstruction:
    """The outcome of `reconstruct_fair`: the metric and intermediate quantities (for ``details``).

    ``scales[s]`` is ``1 / (c (1 - lam))`` of partition ``s`` (maps its ``d`` to ``a * tau^sigma``),
    ``W_tilde`` ``(n_partitions, k, k)`` the scaled ``lam/(1 - lam) W^sigma``, ``B_tilde`` the solved
    ``lam/(1 - lam) B^{uv}`` after PSD projection (pair order of `pair_index`) and ``negative_mass`` the
    Frobenius norm of the negative eigenvalues the projection removed (summed over pairs).
    """

    metric: FairQuadraticMetric
    scales: FloatArray
    W_tilde: FloatArray
    B_tilde: FloatArray
    negative_mass: float


def _psd_projection(matrix: FloatArray) -> tuple[FloatArray, float]:
    """Nearest PSD matrix in Frobenius norm and the Frobenius mass of the clipped negative eigenvalues."""
    symmetric = (matrix + matrix.T) / 2.0
    eigenvalues, vectors = np.linalg.eigh(symmetric)
    clipped = np.clip(eigenvalues, 0.0, None)
    projected: FloatArray = (vectors * clipped) @ vectors.T
    projected = (projected + projected.T) / 2.0
    return projected, float(np.linalg.norm(eigenvalues - clipped))


def costs_from_gradients(
    tau_sigma: FloatArray, d: FloatArray, d_norms: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``a`` (unit, non-negative) and each partition's scale ``y`` from ``y d^sigma = tau^sigma * a``."""
    count, k = d.shape
    d_unit = d / d_norms[:, None]
    # Rows (sigma, i):  tau^sigma_i a_i - y_sigma d^sigma_i = 0  in the unknowns (a, y).
    system = np.zeros((count * k, k + count))
    for s in range(count):
        rows = slice(s * k, (s + 1) * k)
        system[rows, :k] = np.diag(tau_sigma[s])
        system[rows, k + s] = -d_unit[s]
    _, _, vt = np.linalg.svd(system)
    null = vt[-1]
    if float(np.sum(null[:k])) < 0.0:
        null = -null
    a_raw = np.clip(null[:k], 0.0, None)
    a_norm = float(np.linalg.norm(a_raw))
    if not np.isfinite(a_norm) or a_norm < ZERO:
        raise NumericalError("the elicited gradients give no non-negative misclassification costs a")
    a_hat = a_raw / a_norm
    # Scales given a_hat (least squares y d = tau^sigma * a_hat), then back to the raw d's scale.
    targets = tau_sigma * a_hat
    y_unit = np.sum(d_unit * targets, axis=1)
    scales = y_unit / d_norms
    return a_hat, scales


def reconstruct_fair(
    tau: npt.ArrayLike,
    partitions: Sequence[Partition],
    gradients: Sequence[npt.ArrayLike],
    hessians: Sequence[npt.ArrayLike],
) -> FairReconstruction:
    """Recover ``(a, B^{uv}, lam)`` from one shifted quadratic utility ``(d, B)`` per partition.

    Parameters
    ----------
    tau : array_like, shape (n_groups, n_classes)
        Group prevalences, columns summing to one.
    partitions : sequence of frozenset of int
        The sets ``sigma`` (groups given the query rate), ``binom(m, 2)`` of them with non-singular ``Xi``.
    gradients : sequence of array_like, shape (n_classes,)
        Per partition, ``d`` of the elicited utility ``<d, s - o> + 1/2 (s - o)^T B (s - o)``; any positive
        scale per partition (QPME's ``||d||^2 + ||B||_F^2 = 1`` is fine).
    hessians : sequence of array_like, shape (n_classes, n_classes)
        Per partition, the matching ``B`` (same scale as its ``d``; a utility, so ``-W`` up to scale).

    Returns
    -------
    FairReconstruction
        ``metric`` is the estimate as a `FairQuadraticMetric` (separately normalised ``a`` and ``B^{uv}``).

    Raises
    ------
    InvalidConfigError
        On inconsistent shapes or a singular ``Xi``.
    NumericalError
        If the estimates are not finite or every recovered cost is non-positive.

    Notes
    -----
    See the module docstring for the algebra (Appendix D, Equations 10 and the ``Xi`` block system).
    If every ``B~^{uv}`` vanishes after the PSD projection the data say ``lam = 0``, where ``B`` does not
    affect the metric; identity matrices (normalised) are returned then.
    """
    tau_values = as_rate_array(tau, "tau", ndim=2)
    m, k = tau_values.shape
    count = len(partitions)
    pairs = pair_index(m)
    if count != len(pairs) or len(gradients) != count or len(hessians) != count:
        raise InvalidConfigError(
            f"need {len(pairs)} partitions with one gradient and one hessian each, got "
            f"{count}, {len(gradients)}, {len(hessians)}"
        )
    xi = membership_matrix(partitions, m)
    if abs(float(np.linalg.det(xi))) < 0.5:  # Xi is a 0/1 matrix: a non-zero determinant is at least 1.
        raise InvalidConfigError("partitions give a singular membership matrix Xi; see group_partitions")
    d = np.array([as_rate_array(g, "gradient", ndim=1) for g in gradients])
    B = np.array([as_rate_array(h, "hessian", ndim=2) for h in hessians])
    if d.shape != (count, k) or B.shape != (count, k, k):
        raise InvalidConfigError(f"gradients must have shape ({k},) and hessians ({k}, {k})")
    tau_sigma = np.array([tau_values[sorted(sigma)].sum(axis=0) for sigma in partitions])

    # Normalise each partition's gradient so the homogeneous system weighs partitions alike.
    d_norms = np.linalg.norm(d, axis=1)
    if np.any(d_norms < ZERO):
        raise DegenerateMetricError(
            "a partition's elicited gradient is zero: the oracle's trade-off is (numerically) lam = 1, "
            "so the misclassification costs a cannot be identified"
        )
    a_hat, scales = costs_from_gradients(tau_sigma, d, d_norms)
    if np.any(scales <= 0.0):
        raise NumericalError(
            "a partition's elicited gradient points against the recovered costs a; the answers are "
            "inconsistent with a fair quadratic cost"
        )
    W_tilde = -scales[:, None, None] * (B + np.transpose(B, (0, 2, 1))) / 2.0
    B_tilde_raw = np.linalg.solve(xi, W_tilde.reshape(count, k * k)).reshape(count, k, k)
    metric, B_tilde, negative_mass = _finish(tau_values, a_hat, B_tilde_raw)
    return FairReconstruction(metric, scales, W_tilde, B_tilde, negative_mass)


def reconstruct_fair_anchored(
    tau: npt.ArrayLike, costs: npt.ArrayLike, runs: Sequence[SlopeRun], inner_radius: float
) -> FairReconstruction:
    """Recover ``B^{uv}`` and ``lam`` from LPME slopes given the costs ``a`` (the anchored design).

    With ``a`` fixed (``||a|| = 1``), every run's condition ``(I - f f^T) g = 0`` on the gradient
    ``g = a * tau^sigma - sum_{(u,v) cut by sigma} B~^{uv} x`` (``x = offset + inner_radius * f``) is linear
    and *inhomogeneous* in the ``B~^{uv} = lam / (1 - lam) B^{uv}``, so ordinary least squares over all
    runs gives them with their scale, hence ``lam``.

    Parameters
    ----------
    tau : array_like, shape (n_groups, n_classes)
        Group prevalences.
    costs : array_like, shape (n_classes,)
        The estimated ``a`` (non-negative; normalised here).
    runs : sequence of SlopeRun
        The LPME runs of every partition, both sides of a cut allowed.
    inner_radius : float
        The runs' sphere radius ``varrho``.

    Returns
    -------
    FairReconstruction
        ``scales`` holds the least-squares residual norm and the smallest singular value.

    Raises
    ------
    NumericalError
        If the runs do not determine every ``B~^{uv}`` or the estimate is not finite.
    """
    tau_values = as_rate_array(tau, "tau", ndim=2)
    m, k = tau_values.shape
    a = np.clip(as_rate_array(costs, "costs", ndim=1), 0.0, None)
    a_norm = float(np.linalg.norm(a))
    if a.shape != (k,) or a_norm < ZERO:
        raise NumericalError("the costs a must be a non-zero, non-negative vector of one entry per class")
    a = a / a_norm
    pairs = pair_index(m)
    basis = _symmetric_basis(k)
    n_basis = len(basis)
    n_unknowns = len(pairs) * n_basis
    blocks, targets = [], []
    for run in runs:
        sigma = run.partition
        f = np.asarray(run.slope, dtype=np.float64)
        point = run.point(inner_radius)
        projector = np.eye(k) - np.outer(f, f)
        curvature_map = np.zeros((k, n_unknowns))
        for index, (u, v) in enumerate(pairs):
            if (u in sigma) != (v in sigma):
                for b, E in enumerate(basis):
                    curvature_map[:, index * n_basis + b] = E @ point
        blocks.append(projector @ curvature_map)
        targets.append(projector @ (a * tau_values[sorted(sigma)].sum(axis=0)))
    system, rhs = np.vstack(blocks), np.concatenate(targets)
    if not (np.all(np.isfinite(system)) and np.all(np.isfinite(rhs))):
        raise NumericalError("the LPME slopes are not finite")
    solution, _, rank, singular = np.linalg.lstsq(system, rhs, rcond=None)
    if rank < n_unknowns or singular[-1] <= ZERO * max(float(singular[0]), 1.0):
        raise NumericalError("the slope equations do not determine every B^{uv}")
    B_raw = np.array(
        [sum(solution[index * n_basis + b] * E for b, E in enumerate(basis)) for index in range(len(pairs))]
    )
    metric, B_tilde, negative_mass = _finish(tau_values, a, B_raw)
    residual = float(np.linalg.norm(system @ solution - rhs))
    return FairReconstruction(
        metric, np.array([residual, float(singular[-1])]), np.empty((0, k, k)), B_tilde, negative_mass
    )


def _symmetric_basis(k: int) -> list[FloatArray]:
    """Orthonormal basis of symmetric ``k x k`` matrices (off-diagonal entries carry ``1/sqrt(2)``)."""
    basis = []
    for i in range(k):
        for j in range(i, k):
            E = np.zeros((k, k))
            E[i, j] = E[j, i] = 1.0 if i == j else 1.0 / math.sqrt(2.0)
            basis.append(E)
    return basis


def _finish(
    tau: FloatArray, a_raw: FloatArray, B_raw: FloatArray
) -> tuple[FairQuadraticMetric, FloatArray, float]:
    """Normalise ``a``, project the ``B~^{uv}`` onto PSD and read off ``lam`` (separate normalisation)."""
    m, k = tau.shape
    pairs = pair_index(m)
    a_clipped = np.clip(a_raw, 0.0, None)
    a_norm = float(np.linalg.norm(a_clipped))
    if not np.isfinite(a_norm) or a_norm < ZERO:
        raise NumericalError("the answers give no non-negative misclassification costs a")
    B_tilde = np.empty_like(B_raw)
    negative_mass = 0.0
    for index in range(len(pairs)):
        B_tilde[index], mass = _psd_projection(B_raw[index])
        negative_mass += mass
    t = 0.5 * float(sum(np.linalg.norm(B_tilde[index]) for index in range(len(pairs))))
    if not np.all(np.isfinite(B_tilde)) or not np.isfinite(t):
        raise NumericalError("the fairness-violation estimates are not finite")
    if t < ZERO:
        lam = 0.0
        B_pairs = {key: np.eye(k) for key in pairs}
    else:
        lam = t / (1.0 + t)
        # Project again after scaling: rounding in the first projection, divided by a small t, could leave
        # an eigenvalue just below FairQuadraticMetric's PSD tolerance.
        B_pairs = {key: _psd_projection(B_tilde[index] / t)[0] for index, key in enumerate(pairs)}
    return FairQuadraticMetric(a_clipped / a_norm, B_pairs, lam, tau), B_tilde, negative_mass


@dataclass(frozen=True, eq=False)
class SlopeRun:
    """One LPME run of the paired design: groups ``partition`` moved, small sphere at ``o + offset``.

    ``slope`` is LPME's unit estimate ``f``, the direction of the (negative-cost) gradient at `point`;
    ``at_boundary`` says whether LPME compared boundary points (the default) or antipodal points.
    """

    partition: Partition
    offset: FloatArray
    slope: FloatArray
    at_boundary: bool = True

    def point(self, inner_radius: float) -> FloatArray:
        """Where the gradient is parallel to ``slope``, relative to ``o``.

        LPME's boundary probes find the boundary optimum ``offset + inner_radius * slope`` (KKT);
        antipodal probes compare ``c + u`` with ``c - u``, whose difference is exactly the derivative at the
        centre for a quadratic, so their slope is the gradient direction at ``offset`` itself.
        """
        shift = inner_radius if self.at_boundary else 0.0
        result: FloatArray = np.asarray(self.offset, dtype=np.float64) + shift * np.asarray(self.slope)
        return result


def reconstruct_fair_joint(
    tau: npt.ArrayLike, runs: Sequence[SlopeRun], inner_radius: float
) -> FairReconstruction:
    """Recover ``(a, B^{uv}, lam)`` from LPME slopes of every partition at once (the paired design).

    Each run says "the utility gradient ``a * tau^sigma - sum_{(u,v) cut by sigma} B~^{uv} x`` at
    ``x = offset + inner_radius * f`` is parallel to ``f``", i.e. ``(I - f f^T) g = 0``: ``k`` equations,
    linear and homogeneous in ``(a, B~^{uv})`` after dividing out the partition's unknown scale
    ``c (1 - lam)``. All runs are stacked and the unit null vector (smallest right singular vector) is the
    estimate; ``a`` is shared by every partition, so no per-partition scale has to be matched.

    Parameters
    ----------
    tau : array_like, shape (n_groups, n_classes)
        Group prevalences.
    runs : sequence of SlopeRun
        The LPME runs; together they must determine the unknowns up to scale.
    inner_radius : float
        The runs' sphere radius ``varrho``.

    Returns
    -------
    FairReconstruction
        ``scales`` holds the singular values' smallest two (residual and gap); ``W_tilde`` is empty.

    Raises
    ------
    NumericalError
        If the equations leave more than one direction free or the estimate is not finite.
    """
    tau_values = as_rate_array(tau, "tau", ndim=2)
    m, k = tau_values.shape
    pairs = pair_index(m)
    basis = _symmetric_basis(k)
    n_basis = len(basis)
    n_unknowns = k + len(pairs) * n_basis
    blocks = []
    for run in runs:
        sigma = run.partition
        tau_sigma = tau_values[sorted(sigma)].sum(axis=0)
        f = np.asarray(run.slope, dtype=np.float64)
        point = run.point(inner_radius)
        gradient_map = np.zeros((k, n_unknowns))
        gradient_map[:, :k] = np.diag(tau_sigma)
        for index, (u, v) in enumerate(pairs):
            if (u in sigma) != (v in sigma):
                for b, E in enumerate(basis):
                    gradient_map[:, k + index * n_basis + b] = -(E @ point)
        blocks.append((np.eye(k) - np.outer(f, f)) @ gradient_map)
    system = np.vstack(blocks)
    if not np.all(np.isfinite(system)):
        raise NumericalError("the LPME slopes are not finite")
    _, singular, vt = np.linalg.svd(system)
    if singular.shape[0] < n_unknowns - 1 or singular[n_unknowns - 2] <= ZERO * max(float(singular[0]), 1.0):
        raise NumericalError("the slope equations do not determine (a, B, lam) up to scale")

    def unpack(vector: FloatArray) -> FloatArray:
        return np.array(
            [
                sum(vector[k + index * n_basis + b] * E for b, E in enumerate(basis))
                for index in range(len(pairs))
            ]
        )

    def infeasibility(vector: FloatArray) -> float:
        # Distance to the cone the truth lies in (a >= 0, every B~^{uv} PSD), squared.
        outside = float(np.sum(np.minimum(vector[:k], 0.0) ** 2))
        return outside + sum(_psd_projection(B)[1] ** 2 for B in unpack(vector))

    # The null vector's sign is arbitrary: keep the one nearer the feasible cone (ties: a sums positive).
    x = vt[-1]
    flipped_gap = infeasibility(-x) - infeasibility(x)
    if flipped_gap < 0.0 or (flipped_gap == 0.0 and float(np.sum(x[:k])) < 0.0):
        x = -x
    B_raw = unpack(x)
    # Rescale so that ||a|| = 1 before reading lam: B~ = lam / (1 - lam) B on that scale.
    a_norm = float(np.linalg.norm(np.clip(x[:k], 0.0, None)))
    if a_norm < ZERO:
        raise NumericalError("the answers give no non-negative misclassification costs a")
    metric, B_tilde, negative_mass = _finish(tau_values, x[:k] / a_norm, B_raw / a_norm)
    residual = float(singular[-1]) if singular.shape[0] == n_unknowns else 0.0
    gap = float(singular[n_unknowns - 2])
    return FairReconstruction(metric, np.array([residual, gap]), np.empty((0, k, k)), B_tilde, negative_mass)


@dataclass(frozen=True, eq=False)
class LinePeak:
    """Where one partition's metric peaks along a line through ``o``: the gradient there is across ``u``.

    QPME's search along collinear slopes (`elicitation.qpme.line_peak`) gives ``t`` with
    ``<u, g(t u)> = 0`` for the partition's gradient ``g``: one linear equation in ``(a, B~)``.
    """

    partition: Partition
    direction: FloatArray
    position: float


def _gradient_map(
    tau: FloatArray,
    pairs: Sequence[tuple[int, int]],
    basis: Sequence[FloatArray],
    side: Partition,
    x: FloatArray,
) -> FloatArray:
    """``G`` with ``G z = alpha * tau^side - sum_{(u,v) cut by side} beta^{uv} x``, ``z = (alpha, beta)``."""
    k = tau.shape[1]
    n_basis = len(basis)
    G = np.zeros((k, k + len(pairs) * n_basis))
    G[:, :k] = np.diag(tau[sorted(side)].sum(axis=0))
    for index, (u, v) in enumerate(pairs):
        if (u in side) != (v in side):
            for b, E in enumerate(basis):
                G[:, k + index * n_basis + b] = -(E @ x)
    return G


def reconstruct_fair_signed(
    tau: npt.ArrayLike,
    runs: Sequence[SlopeRun],
    inner_radius: float,
    peaks: Sequence[LinePeak] = (),
    ridge: float = DEFAULT_RIDGE,
) -> FairReconstruction:
    """Recover ``(a, B^{uv}, lam)`` from every slope at once, each gradient pointing *along* its slope.

    The unknowns are homogeneous, ``alpha = c (1 - lam) a`` and ``beta^{uv} = c lam B^{uv}``, so neither end
    of the trade-off is special: ``lam = 0`` is ``beta = 0``, ``lam = 1`` is ``alpha = 0``. Each run says
    "the gradient ``alpha * tau^sigma - sum_{(u,v) cut by sigma} beta^{uv} x`` is ``s f`` with ``s >= 0``"
    (`elicitation.qpme.signed_solve`, the signed least squares of QPME, with the same curvature penalty);
    each `LinePeak` adds its equation. Then ``alpha`` is clipped to ``>= 0``, every ``beta^{uv}`` projected
    onto the PSD cone, and ``lam = t_B / (t_a + t_B)`` with ``t_a = ||alpha||`` and
    ``t_B = 1/2 sum ||beta^{uv}||_F`` (Definition 3's separate normalisations).

    Parameters
    ----------
    tau : array_like, shape (n_groups, n_classes)
        Group prevalences.
    runs : sequence of SlopeRun
        The LPME runs of every partition, either side of a cut.
    inner_radius : float
        The runs' sphere radius ``varrho``.
    peaks : sequence of LinePeak
        Peaks found by searches along collinear slopes.
    ridge : float
        Weight of the curvature penalty, as `elicitation.qpme.reconstruct_lstsq`'s.

    Returns
    -------
    FairReconstruction
        ``scales`` holds the smallest residual; ``B_tilde`` the projected ``beta^{uv} / t_a``.

    Raises
    ------
    NumericalError
        If the slopes are not finite or no non-zero metric points along them.
    """
    tau_values = as_rate_array(tau, "tau", ndim=2)
    m, k = tau_values.shape
    pairs = pair_index(m)
    basis = _symmetric_basis(k)
    n = len(runs)
    blocks = [_gradient_map(tau_values, pairs, basis, run.partition, run.point(inner_radius)) for run in runs]
    slopes = np.zeros((n * k + len(peaks), n))
    for index, run in enumerate(runs):
        slopes[index * k : (index + 1) * k, index] = run.slope
    for peak in peaks:
        u = np.asarray(peak.direction, dtype=np.float64)
        row = u @ _gradient_map(tau_values, pairs, basis, peak.partition, peak.position * u)
        # As firm as a whole run: the peak's position is measured to the search's tolerance.
        blocks.append(_PEAK_WEIGHT * row[np.newaxis, :])
    maps = np.vstack(blocks)
    if not (np.all(np.isfinite(maps)) and np.all(np.isfinite(slopes))):
        raise NumericalError("the LPME slopes are not finite")
    curvature = np.diag(np.concatenate((np.zeros(k), np.ones(maps.shape[1] - k))))
    weight, z = signed_fit_weight(maps, slopes, curvature, ridge)
    alpha = np.clip(z[:k], 0.0, None)
    beta = np.empty((len(pairs), k, k))
    negative_mass = 0.0
    for index in range(len(pairs)):
        raw = sum(z[k + index * len(basis) + b] * E for b, E in enumerate(basis))
        beta[index], mass = _psd_projection(np.asarray(raw))
        negative_mass += mass
    t_a = float(np.linalg.norm(alpha))
    t_b = 0.5 * float(sum(np.linalg.norm(B) for B in beta))
    if not (np.isfinite(t_a) and np.isfinite(t_b)) or t_a + t_b < ZERO:
        raise NumericalError("no fair metric's gradients point along the measured slopes")
    lam = t_b / (t_a + t_b)
    # An end of the trade-off leaves the other part without weight: any value stands in for it.
    a_hat = alpha / t_a if t_a >= ZERO else np.full(k, 1.0 / math.sqrt(k))
    B_pairs = {
        key: (_psd_projection(beta[i] / t_b)[0] if t_b >= ZERO else np.eye(k)) for i, key in enumerate(pairs)
    }
    metric = FairQuadraticMetric(a_hat, B_pairs, lam, tau_values)
    B_tilde = beta / t_a if t_a >= ZERO else beta
    return FairReconstruction(
        metric, np.array([math.sqrt(weight.smallest)]), np.empty((0, k, k)), B_tilde, negative_mass
    )


def slope_misfit(metric: FairQuadraticMetric, runs: Sequence[SlopeRun], inner_radius: float) -> float:
    """How far ``metric``'s gradients point from the measured slopes: ``sum (1 - cos angle)`` over the runs.

    Each run's utility gradient ``(1 - lam) a * tau^sigma - lam sum_{(u,v) cut by sigma} B^{uv} x`` at its
    point ``x`` is compared with its unit slope; 0 means every gradient points exactly along its slope, a
    gradient against its slope adds 2 and a vanishing one 1 (it points nowhere).
    """
    tau, lam = metric.tau, metric.lam
    total = 0.0
    for run in runs:
        x = run.point(inner_radius)
        gradient = (1.0 - lam) * metric.a * tau[sorted(run.partition)].sum(axis=0)
        for (u, v), B in metric.B_pairs.items():
            if (u in run.partition) != (v in run.partition):
                gradient = gradient - lam * (B @ x)
        norm = float(np.linalg.norm(gradient))
        total += 1.0 - (float(gradient @ run.slope) / norm if norm > ZERO else 0.0)
    return total
