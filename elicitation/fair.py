"""Fair QPME (Section 4, Appendix D): elicit a fair quadratic cost ``(a, B^{uv}, lam)`` from pairwise queries.

Theory of operation
-------------------
The oracle's metric is the cost of Definition 3 (Equation 9)::

    phi(r^{1:m}) = (1 - lam) <a, 1 - r> + lam/2 sum_{u<v} (r^u - r^v)^T B^{uv} (r^u - r^v),
    r = sum_g tau^g * r^g,   a >= 0, ||a|| = 1,   B^{uv} PSD, 1/2 sum ||B^{uv}||_F = 1.

**Partitions (Appendix D, Equation 10).** For a set of groups ``sigma`` (a cut of the groups into
``sigma`` and its complement), give every group in ``sigma`` the rate ``s`` and every other group the
centre ``o``. On those profiles the cost is, up to a constant,
``(1 - lam) <-a * tau^sigma, s - o> + lam/2 (s - o)^T W^sigma (s - o)`` with ``tau^sigma = sum_{g in sigma}
tau^g`` and ``W^sigma = sum_{u, v separated by sigma} B^{uv}``. Its negative (the oracle prefers lower cost)
is the shifted quadratic utility QPME elicits: ``d = c (1 - lam) a * tau^sigma`` and ``B = -c lam W^sigma``
for an unknown scale ``c > 0``. `fair_qpme` therefore runs QPME's `shifted_quadratic` once per partition
and *lifts* each of its ``k``-dimensional points ``s`` to the ``(m, k)`` profile above: QPME and LPME build
their queries through the `profile_embedding` they are given, so each query is made once, as a profile;
answers pass back unchanged. The query carries the sub-search label, e.g. ``"fair/sigma=1+3/qpme/z1/lpme"``
(1-based groups).

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

**Three query designs.** ``design="qpme"`` is Algorithm 4 as published: one full QPME run
(`shifted_quadratic`: trivial pivot queries, LPME at ``o``, at every ``z_j`` and at ``-z_p``) per partition,
reconstructed partition by partition as above. Its weak spot is a rank-one term: when ``B`` is small next to
``d`` (small ``lam``, or a near-zero entry of ``d``), ``(d, B)`` and ``(d, B + c d d^T)`` give almost the
same slopes, so ``B`` and hence ``lam`` absorb an error along ``d d^T`` (heavy tails in ``lam``). A run on
the *other side* of the same cut sees the gradient ``a * tau^{not sigma} - W~ x``, whose direction differs
from ``a * tau^sigma``, and pins that term down. ``design="anchored"`` (default) adds one such LPME run per
cut, at ``z_p`` with ``p`` the largest entry of the partition's ``d`` (the coordinate coupling most strongly
to the term), takes ``a`` from the QPME gradients as above and then fits every ``B~^{uv}`` (hence ``lam``)
by ordinary least squares to *all* slopes of all partitions with ``a`` fixed (`reconstruct_fair_anchored`).
``design="paired"`` drops QPME's pivot queries and ``-z_p`` run instead of adding a run (same query count as
``"qpme"`` without its trivial queries) and solves ``(a, B~)`` jointly from all slopes
(`reconstruct_fair_joint`); it never needs a gradient at ``o`` (``lam`` near 1 is fine) but has no redundant
run. If QPME finds no gradient at ``o`` for a partition (``lam`` near 1), ``"anchored"`` falls back to the
paired runs for it and to the joint solve. Measured on 100 random metrics (exact oracle and Definition-4
noise ``eps_Omega = 1e-4``), ``"anchored"`` had the smallest mean ``B`` and ``lam`` errors for ``k, m <= 3``
at about 20 % more queries than ``"qpme"``, still under half of the paper's Table 4. All runs use QPME's LPME
probes (antipodal by default: the slope is then the gradient direction at the small sphere's centre, not at
its boundary optimum; `SlopeRun.point` accounts for both).

**Choice of partitions** (`group_partitions`). ``binom(m, 2)`` cuts with a non-singular ``Xi`` are needed.
Indexing rows and columns by pairs, the cuts ``sigma = {u, v}`` give ``Xi`` = the adjacency matrix of the
line graph of ``K_m`` (two pairs are adjacent when they share exactly one group), whose eigenvalues are
``2m - 4``, ``m - 4`` and ``-2``: non-singular for every ``m >= 3`` except ``m = 4``. So ``m = 2`` uses the
single cut ``{0}``; ``m = 3`` and ``m >= 5`` use all pair cuts (for ``m = 3`` these are the paper's example
``{{1,2},{1,3},{2,3}}``); ``m = 4`` (where ``{0,1}`` and ``{2,3}`` are the same cut) uses the four
singletons plus ``{0,1}`` and ``{0,2}``. Among all cut sets, these minimise ``||Xi^{-1}||_F`` (the error
amplification of the solve) for ``m = 3, 4`` and beat every alternative we searched for ``m = 5, 6``.
Which side of a cut gets ``s`` is then chosen per ``tau``: the side whose smallest prevalence
``min_i tau^sigma_i`` is larger, because ``a_i`` is read off ``d_i / tau^sigma_i``.

**Trade-off alone** (`tradeoff_search`, Algorithm 5). With ``a`` and ``B`` known only ``lam`` is unknown.
Moving one group ``u`` by ``x`` from ``o`` (others at ``o``) changes the cost by
``D(lam) = (1 - lam) dE + lam dV`` with ``dE = -<tau^u * a, x> < 0`` and ``dV = 1/2 x^T W_u x > 0``,
``W_u = sum_v B^{uv}``: linear in ``lam`` with a root ``lam* = -dE / (dV - dE)``. Choosing ``x`` so that
``lam*`` is the midpoint of the current interval turns one query into one exact halving
(``method="threshold"``, the default, ``ceil(log2(1/epsilon))`` queries). ``method="shrink"`` is the
paper's Algorithm 5 verbatim: ShrinkInterval over ``lam`` on a small sphere at ``z_1`` using the
first-order approximation of Equation 11 (up to three queries per halving, biased by the curvature the
approximation drops).

Paper symbols
-------------
==================  =====================  =====================================================
paper               code                   meaning
==================  =====================  =====================================================
``m``               ``groups``             number of groups
``tau^g``           ``tau[g]``             ``P(G = g | Y = i)`` per class ``i``
``sigma``           ``partition``          groups assigned the query rate ``s``
``tau^sigma``       ``tau_sigma``          ``sum_{g in sigma} tau^g``
``W^sigma``         ``W``                  ``sum`` of the ``B^{uv}`` a partition separates
``Xi``              `membership_matrix`    partitions x pairs, 1 where the pair is separated
``B~^{uv}``         ``B_tilde``            ``lam / (1 - lam) B^{uv}``
``beta^sigma``      ``W_tilde``            the scaled per-partition estimate of ``W~^sigma``
``lam``             ``lam``                trade-off between error and fairness violation
``varrho``          ``inner_radius``       radius of the small sphere of Algorithm 5
``z_1``             ``z``                  ``o + (rho - varrho) alpha_1``
==================  =====================  =====================================================
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from .errors import DegenerateMetricError, InvalidConfigError, NumericalError
from .geometry import inner_sphere, validate_inner_radius
from .lpme import DEFAULT_CYCLES, DEFAULT_TOLERANCE, Probe, lpme, validate_probe
from .qpme import (
    DEFAULT_PROBE,
    RECONSTRUCTIONS,
    Reconstruction,
    ShiftedQuadratic,
    default_inner_radius,
    shifted_quadratic,
)
from .types import (
    Elicitation,
    Elicitor,
    Embedding,
    FairQuadraticMetric,
    FloatArray,
    LinearMetric,
    Query,
    Sphere,
    as_rate_array,
    ask,
    pair_index,
    plain_rates,
)

__all__ = [
    "DEFAULT_TRADEOFF_INNER_RADIUS",
    "DESIGNS",
    "TAU_ATOL",
    "FairReconstruction",
    "SlopeRun",
    "fair_qpme",
    "group_partitions",
    "lift_rates",
    "membership_matrix",
    "orient_partitions",
    "profile_embedding",
    "reconstruct_fair",
    "reconstruct_fair_anchored",
    "reconstruct_fair_joint",
    "tradeoff_search",
]

#: Largest deviation of a ``tau`` column sum from one that is accepted (rounded user input).
TAU_ATOL = 1e-6
#: Default ``varrho / rho`` of Algorithm 5's small sphere (``method="shrink"``). The first-order
#: approximation it relies on is biased by O(varrho): on 200 random metrics (k = m = 3, exact oracle,
#: epsilon = 1e-2) the mean |lam - lam_hat| was 0.031 at varrho / rho = 0.25, 0.010 at 0.1, 0.0025 at 0.025.
DEFAULT_TRADEOFF_INNER_RADIUS = 0.025
#: Bisection steps when placing a threshold query; 60 halvings of ``[0, pi/2]`` reach float resolution.
_BISECTION_STEPS = 60
#: Quantities below this (norms, curvatures) count as zero.
_ZERO = 1e-12

Partition = frozenset[int]
T = TypeVar("T")
#: The query designs `fair_qpme` offers (see its docstring).
DESIGNS: tuple[str, ...] = ("qpme", "anchored", "paired")


# ---------------------------------------------------------------------------------------------------------
# Validation helpers
# ---------------------------------------------------------------------------------------------------------


def _check_groups(groups: object) -> int:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
        raise InvalidConfigError(f"groups must be an integer >= 2, got {groups!r}")
    if int(groups) < 2:
        raise InvalidConfigError(f"groups must be an integer >= 2 (at least two groups), got {groups}")
    return int(groups)


def _check_tau(tau: npt.ArrayLike, n_groups: int, n_classes: int) -> FloatArray:
    values = as_rate_array(tau, "tau", ndim=2)
    if values.shape != (n_groups, n_classes):
        raise InvalidConfigError(
            f"tau must have shape ({n_groups}, {n_classes}) (groups x classes), got {values.shape}"
        )
    if np.any(values < 0.0):
        raise InvalidConfigError("tau must be non-negative: tau[g, i] = P(G = g | Y = i) lies in [0, 1]")
    sums = values.sum(axis=0)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=TAU_ATOL):
        raise InvalidConfigError(
            f"every column of tau must sum to one (within {TAU_ATOL:g}): tau[:, i] is the distribution of "
            f"groups within class i; got column sums {np.round(sums, 6).tolist()}"
        )
    return values


def _check_epsilon(epsilon: object) -> float:
    try:
        value = float(epsilon)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"epsilon must be a number in (0, 1), got {epsilon!r}") from exc
    if not math.isfinite(value) or not 0.0 < value < 1.0:
        raise InvalidConfigError(f"epsilon must lie in (0, 1) (the search tolerance), got {epsilon!r}")
    return value


def _check_sphere(sphere: object) -> Sphere:
    if not isinstance(sphere, Sphere):
        raise InvalidConfigError(f"sphere must be a Sphere, got {type(sphere).__name__}")
    return sphere


# ---------------------------------------------------------------------------------------------------------
# Partitions and the membership matrix Xi
# ---------------------------------------------------------------------------------------------------------


def group_partitions(n_groups: int) -> tuple[Partition, ...]:
    """The ``binom(m, 2)`` group partitions ``sigma`` used by `fair_qpme` (see the module docstring).

    Parameters
    ----------
    n_groups : int
        Number of groups ``m >= 2``.

    Returns
    -------
    tuple of frozenset of int
        One set of (0-based) groups per partition; each stands for the cut between it and its complement.
        ``membership_matrix(group_partitions(m), m)`` is non-singular for every ``m``.
    """
    m = _check_groups(n_groups)
    if m == 2:
        return (frozenset({0}),)
    if m == 4:
        singletons = tuple(frozenset({g}) for g in range(4))
        return (*singletons, frozenset({0, 1}), frozenset({0, 2}))
    return tuple(frozenset(pair) for pair in pair_index(m))


def membership_matrix(partitions: Sequence[Partition], n_groups: int) -> FloatArray:
    """Appendix D's ``Xi``: ``Xi[s, p] = 1`` when partition ``s`` separates the ``p``-th pair of `pair_index`.

    Parameters
    ----------
    partitions : sequence of frozenset of int
        Sets of groups ``sigma``.
    n_groups : int
        Number of groups ``m``.

    Returns
    -------
    ndarray, shape (len(partitions), binom(m, 2))
    """
    m = _check_groups(n_groups)
    pairs = pair_index(m)
    xi = np.zeros((len(partitions), len(pairs)), dtype=np.float64)
    for row, sigma in enumerate(partitions):
        if not sigma or not sigma < frozenset(range(m)):
            raise InvalidConfigError(
                f"partition {sorted(sigma)} must be a non-empty proper subset of the groups 0..{m - 1}"
            )
        for col, (u, v) in enumerate(pairs):
            xi[row, col] = float((u in sigma) != (v in sigma))
    xi.setflags(write=False)
    return xi


def orient_partitions(partitions: Sequence[Partition], tau: FloatArray) -> tuple[Partition, ...]:
    """Pick, for each cut, the side that receives the query rate ``s``.

    The side whose smallest class prevalence ``min_i tau^sigma_i`` is larger wins (ties keep the given
    side): ``a_i`` is recovered from ``d_i / tau^sigma_i``, so small prevalences amplify errors. The cut
    itself, hence ``Xi``, is unchanged.
    """
    m = tau.shape[0]
    everyone = frozenset(range(m))
    oriented = []
    for sigma in partitions:
        other = everyone - sigma
        own_min = float(np.min(tau[sorted(sigma)].sum(axis=0)))
        other_min = float(np.min(tau[sorted(other)].sum(axis=0)))
        oriented.append(other if other_min > own_min else sigma)
    return tuple(oriented)


def lift_rates(
    rates: npt.ArrayLike, partition: Partition, center: npt.ArrayLike, n_groups: int
) -> FloatArray:
    """Equation 10's profile: ``rates`` for the groups in ``partition``, ``center`` for the others.

    Returns
    -------
    ndarray, shape (n_groups, n_classes)
    """
    base = np.asarray(center, dtype=np.float64)
    profile = np.empty((n_groups, base.shape[0]))
    profile[:] = base
    if partition:
        profile[sorted(partition)] = np.asarray(rates, dtype=np.float64)
    return profile


# ---------------------------------------------------------------------------------------------------------
# Reconstruction of (a, B^{uv}, lam) from the per-partition shifted quadratics
# ---------------------------------------------------------------------------------------------------------


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


def _costs_from_gradients(
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
    if not np.isfinite(a_norm) or a_norm < _ZERO:
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
    if np.any(d_norms < _ZERO):
        raise DegenerateMetricError(
            "a partition's elicited gradient is zero: the oracle's trade-off is (numerically) lam = 1, "
            "so the misclassification costs a cannot be identified"
        )
    a_hat, scales = _costs_from_gradients(tau_sigma, d, d_norms)
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
    if a.shape != (k,) or a_norm < _ZERO:
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
    if rank < n_unknowns or singular[-1] <= _ZERO * max(float(singular[0]), 1.0):
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
    if not np.isfinite(a_norm) or a_norm < _ZERO:
        raise NumericalError("the answers give no non-negative misclassification costs a")
    B_tilde = np.empty_like(B_raw)
    negative_mass = 0.0
    for index in range(len(pairs)):
        B_tilde[index], mass = _psd_projection(B_raw[index])
        negative_mass += mass
    t = 0.5 * float(sum(np.linalg.norm(B_tilde[index]) for index in range(len(pairs))))
    if not np.all(np.isfinite(B_tilde)) or not np.isfinite(t):
        raise NumericalError("the fairness-violation estimates are not finite")
    if t < _ZERO:
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
    if singular.shape[0] < n_unknowns - 1 or singular[n_unknowns - 2] <= _ZERO * max(float(singular[0]), 1.0):
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
    if a_norm < _ZERO:
        raise NumericalError("the answers give no non-negative misclassification costs a")
    metric, B_tilde, negative_mass = _finish(tau_values, x[:k] / a_norm, B_raw / a_norm)
    residual = float(singular[-1]) if singular.shape[0] == n_unknowns else 0.0
    gap = float(singular[n_unknowns - 2])
    return FairReconstruction(metric, np.array([residual, gap]), np.empty((0, k, k)), B_tilde, negative_mass)


# ---------------------------------------------------------------------------------------------------------
# Fair QPME (Algorithm 4)
# ---------------------------------------------------------------------------------------------------------


def _partition_label(partition: Partition) -> str:
    """Display label with 1-based groups, like QPME's ``z1``: ``{0, 2}`` -> ``"sigma=1+3"``."""
    return "sigma=" + "+".join(str(g + 1) for g in sorted(partition))


def profile_embedding(center: FloatArray, partition: Partition, n_groups: int) -> Embedding:
    """Equation 10 as an `Embedding`: rates for the groups in ``partition``, ``center`` for the others.

    The k-dimensional QPME and LPME runs yield their queries through it, so every query is built once, as
    a profile. The profile is assembled as bytes (the partition's row joining the runs of centre rows
    between them): bit-identical to `lift_rates`, at a third of the cost of lifting an array with
    ``np.where``, which counts because replaying a log builds every query again.
    """
    k = int(center.shape[0])
    pack = struct.Struct(f"={k}d").pack
    row = center.astype(np.float64).tobytes()
    members = sorted(partition)
    # Centre rows before the first member, between consecutive members and after the last.
    gaps = [b - a - 1 for a, b in zip([-1, *members], [*members, n_groups], strict=True)]
    runs = [row * gap for gap in gaps]
    shape = (n_groups, k)

    def lift(rates: list[float]) -> FloatArray:
        # Positional ndarray(shape, dtype, buffer): about half the cost of frombuffer(...).reshape(...).
        return np.ndarray(shape, np.float64, pack(*rates).join(runs))

    return lift


@dataclass(frozen=True)
class _SlopeRunner:
    """What every lifted LPME slope run of one fair elicitation shares; ``tally[0]`` counts its answers."""

    sphere: Sphere
    varrho: float
    make_lpme: Callable[[Sphere, str, Embedding], Elicitor[Elicitation[LinearMetric]]]
    search: str
    n_groups: int
    at_boundary: bool
    tally: list[int]


def _slope_runs(
    runner: _SlopeRunner, side: Partition, axes: Sequence[int | None]
) -> Generator[Query, bool, list[SlopeRun]]:
    """One LPME run on ``side``'s groups per axis, in order: ``None`` in ``S_o``, ``j`` in ``S_{z_j}``.

    Each run is labelled ``{search}/{side}/{o | z<j+1>}/lpme`` and moves only ``side``'s groups (the others
    stay at ``o``); its slope becomes a `SlopeRun` at the inner sphere's offset from ``o``.
    """
    o = runner.sphere.center
    runs: list[SlopeRun] = []
    for axis in axes:
        small = inner_sphere(runner.sphere, runner.varrho, axis=axis)
        name = "o" if axis is None else f"z{axis + 1}"
        label = f"{runner.search}/{_partition_label(side)}/{name}/lpme"
        embed = profile_embedding(o, side, runner.n_groups)
        result = yield from runner.make_lpme(small, label, embed)
        runner.tally[0] += result.num_queries
        runs.append(SlopeRun(side, small.center - o, np.array(result.metric.a), runner.at_boundary))
    return runs


def _check_partitions(partitions: object, n_groups: int) -> tuple[Partition, ...]:
    if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Sequence):
        raise InvalidConfigError("partitions must be a sequence of sets of group indices")
    everyone = frozenset(range(n_groups))
    result = []
    for item in partitions:
        try:
            sigma = frozenset(int(g) for g in item)
        except (TypeError, ValueError) as exc:
            raise InvalidConfigError(f"partitions must hold sets of group indices, got {item!r}") from exc
        if not sigma or not sigma < everyone:
            raise InvalidConfigError(
                f"each partition must be a non-empty proper subset of the groups 0..{n_groups - 1}, "
                f"got {sorted(sigma)}"
            )
        result.append(sigma)
    needed = len(pair_index(n_groups))
    if len(result) != needed:
        raise InvalidConfigError(
            f"partitions must hold exactly binom(m, 2) = {needed} sets, got {len(result)}"
        )
    if abs(float(np.linalg.det(membership_matrix(result, n_groups)))) < 0.5:
        raise InvalidConfigError(
            "partitions must give a non-singular membership matrix Xi (no cut repeated, none implied by "
            "the others); group_partitions(m) gives one"
        )
    return tuple(result)


def fair_qpme(
    sphere: Sphere,
    *,
    groups: int,
    tau: npt.ArrayLike,
    epsilon: float = DEFAULT_TOLERANCE,
    inner_radius: float | None = None,
    design: str = "anchored",
    reconstruction: Reconstruction = "lstsq",
    partitions: Sequence[Sequence[int] | frozenset[int]] | None = None,
    search: str = "fair",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    probe: Probe = DEFAULT_PROBE,
) -> Elicitor[Elicitation[FairQuadraticMetric]]:
    """Elicit a fair quadratic cost ``(a, B^{uv}, lam)`` for ``m >= 2`` groups (Section 4, Algorithm 4).

    Runs QPME (`elicitation.qpme.shifted_quadratic`) once per group partition ``sigma``, asking about
    profiles where the groups in ``sigma`` get a rate ``s`` of the sphere and the others its centre ``o``,
    then solves Appendix D's ``Xi`` system and normalises ``a`` and the ``B^{uv}`` separately, which
    yields ``lam``; by default one more LPME run per partition, on the other side of its cut, removes the
    rank-one ambiguity that dominates the published algorithm's ``lam`` errors. The module docstring gives
    the algebra, the choice of partitions and the three designs.

    Parameters
    ----------
    sphere : Sphere
        Query sphere ``S`` (centre ``o``, radius ``rho``) feasible for every group (Remark 2).
    groups : int
        Number of groups ``m >= 2``.
    tau : array_like, shape (groups, n_classes)
        Group prevalences ``tau[g, i] = P(G = g | Y = i)``: non-negative, every column summing to one.
    epsilon : float
        LPME binary-search tolerance (positive).
    inner_radius : float, optional
        ``varrho`` in ``(0, rho)`` of QPME's and the added LPME runs' small spheres; QPME's default when
        omitted.
    design : {"anchored", "qpme", "paired"}
        ``"anchored"`` (default): a QPME run per partition plus one LPME run on the cut's other side,
        ``B`` and ``lam`` fitted to all slopes. ``"qpme"``: Algorithm 4 as published. ``"paired"``: per
        partition LPME at ``o`` and every ``z_j`` plus the other-side run, solved jointly (fewest queries,
        no trivial queries). See the module docstring for the trade-offs.
    reconstruction : {"lstsq", "closed_form"}
        QPME's reconstruction solver, used for each partition's ``(d, B)`` (``"qpme"``) or ``d``
        (``"anchored"``); ignored by ``"paired"``.
    partitions : sequence of sets of int, optional
        ``binom(m, 2)`` sets of (0-based) groups whose membership matrix ``Xi`` is non-singular; default
        `group_partitions` (each cut oriented by `orient_partitions`). Given partitions are used as is.
    search : str
        Prefix of every query's ``search`` label; queries read ``{search}/sigma=1+3/qpme/z2/lpme``
        (1-based groups and coordinates).
    cycles, early_stop, probe : int, bool, {"antipodal", "boundary"}
        Passed to every LPME run (also those inside QPME); ``probe`` defaults to QPME's.

    Yields
    ------
    Query
        Pairs of ``(groups, n_classes)`` rate profiles.

    Receives
    --------
    bool
        ``True`` when the first profile is preferred (costs less).

    Returns
    -------
    Elicitor of Elicitation[FairQuadraticMetric]
        ``metric`` is the estimate; ``details`` holds the ``design``, the partitions, ``Xi``, queries per
        partition, the mass removed by the PSD projection and, per design, every partition's ``(d, B)``
        (``"qpme"``, ``"anchored"``) and every run's slope, offset and moved groups (``"anchored"``,
        ``"paired"``).

    Raises
    ------
    InvalidConfigError
        (eagerly) ``groups < 2``; ``tau`` of the wrong shape, negative or with a column not summing to one;
        ``epsilon <= 0``; a bad sphere, ``inner_radius``, ``reconstruction`` or ``partitions``.
    DegenerateMetricError
        (while running, ``"qpme"`` only) QPME's trivial queries find no gradient at ``o`` (``lam`` near 1).
        ``"anchored"`` then measures that partition's slopes with LPME directly (as ``"paired"`` does; the
        trivial queries already asked are kept in the count) and solves jointly.
    NumericalError
        (while running) the answers determine no finite fair metric.

    Notes
    -----
    ``binom(m, 2)`` QPME runs (``"anchored"``: plus one LPME run each; ``"paired"``: ``binom(m, 2) (k + 2)``
    LPME runs and no trivial queries), so ``O(m^2 k^2 log(1/epsilon))`` queries as in Table 4 of the paper;
    `Elicitor.max_queries` is the exact worst case. With an exact oracle, ``epsilon = 1e-2`` and radius 0.2
    every design asked on average fewer queries than Table 4 for ``k, m <= 3``, and under half of it with
    LPME's antipodal probes.
    """
    space = _check_sphere(sphere)
    m = _check_groups(groups)
    tau_values = _check_tau(tau, m, space.n_classes)
    try:
        eps = float(epsilon)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"epsilon must be a positive number, got {epsilon!r}") from exc
    if not math.isfinite(eps) or eps <= 0.0:
        raise InvalidConfigError(
            f"epsilon must be a positive finite number (search tolerance), got {epsilon!r}"
        )
    if partitions is None:
        chosen = orient_partitions(group_partitions(m), tau_values)
    else:
        chosen = _check_partitions(partitions, m)
    for sigma in chosen:
        if np.all(tau_values[sorted(sigma)].sum(axis=0) == 0.0):
            raise InvalidConfigError(
                f"tau gives partition {sorted(sigma)} no members in any class, so its queries move nothing"
            )
    covered = np.max(np.array([tau_values[sorted(sigma)].sum(axis=0) for sigma in chosen]), axis=0)
    if np.any(covered <= 0.0):
        missing = [int(i) for i in np.flatnonzero(covered <= 0.0)]
        raise InvalidConfigError(
            f"tau leaves the cost of class(es) {missing} unidentifiable: no partition's groups contain that "
            "class (tau[sigma, i] = 0 for every partition sigma)"
        )

    if design not in DESIGNS:
        raise InvalidConfigError(f"design must be one of {DESIGNS}, got {design!r}")
    if reconstruction not in RECONSTRUCTIONS:
        raise InvalidConfigError(f"reconstruction must be one of {RECONSTRUCTIONS}, got {reconstruction!r}")
    varrho = (
        default_inner_radius(space) if inner_radius is None else validate_inner_radius(space, inner_radius)
    )
    probe_kind = validate_probe(probe)

    def make_lpme(
        small: Sphere, label: str, embed: Embedding = plain_rates
    ) -> Elicitor[Elicitation[LinearMetric]]:
        return lpme(
            small, eps, cycles=cycles, early_stop=early_stop, search=label, probe=probe_kind, embed=embed
        )

    if design in ("qpme", "anchored"):

        def make_inner(partition: Partition) -> Elicitor[Elicitation[ShiftedQuadratic]]:
            return shifted_quadratic(
                space,
                epsilon=eps,
                inner_radius=varrho,
                reconstruction=reconstruction,
                search=f"{search}/{_partition_label(partition)}/qpme",
                cycles=cycles,
                early_stop=early_stop,
                probe=probe_kind,
                embed=profile_embedding(space.center, partition, m),
            )

        budget = sum(make_inner(sigma).max_queries for sigma in chosen)  # also validates QPME's arguments
        extra = None
        if design == "anchored":
            extra = make_lpme
            budget += len(chosen) * make_lpme(space, search).max_queries
        body = _fair_steps(
            space, tau_values, chosen, make_inner, extra, varrho, search, probe_kind == "boundary"
        )
        return Elicitor(body, name=search, max_queries=budget)

    per_run = make_lpme(space, search).max_queries  # also validates LPME's arguments
    budget = len(chosen) * (space.n_classes + 2) * per_run
    body = _paired_steps(space, tau_values, chosen, varrho, make_lpme, search, probe_kind == "boundary")
    return Elicitor(body, name=search, max_queries=budget)


def _paired_steps(
    sphere: Sphere,
    tau: FloatArray,
    partitions: tuple[Partition, ...],
    varrho: float,
    make_lpme: Callable[[Sphere, str, Embedding], Elicitor[Elicitation[LinearMetric]]],
    search: str,
    at_boundary: bool,
) -> Generator[Query, bool, Elicitation[FairQuadraticMetric]]:
    m, k = tau.shape
    everyone = frozenset(range(m))
    tally = [0]
    runner = _SlopeRunner(sphere, varrho, make_lpme, search, m, at_boundary, tally)
    runs: list[SlopeRun] = []
    counts: list[int] = []
    for sigma in partitions:
        before = tally[0]
        # Side sigma: the runs of Algorithm 1 lines 1-3 (at o and at every z_j).
        runs += yield from _slope_runs(runner, sigma, [None, *range(k)])
        # The complement side at z_p replaces Algorithm 1's -z_p run. Its gradient direction
        # a * tau^{not sigma} differs from sigma's, which pins down the rank-one term (d d^T) that the
        # runs of one side can barely tell apart from the metric; p is where sigma's gradient at o is
        # largest, the coordinate that couples most strongly to that term.
        p = int(np.argmax(runs[-(k + 1)].slope))
        runs += yield from _slope_runs(runner, everyone - sigma, [p])
        counts.append(tally[0] - before)
    outcome = reconstruct_fair_joint(tau, runs, varrho)
    details: dict[str, Any] = {
        "design": "paired",
        "partitions": [sorted(sigma) for sigma in partitions],
        "xi": membership_matrix(partitions, m).tolist(),
        "slopes": [run.slope.tolist() for run in runs],
        "offsets": [run.offset.tolist() for run in runs],
        "moved_groups": [sorted(run.partition) for run in runs],
        "inner_radius": varrho,
        "queries_per_partition": counts,
        "residual": float(outcome.scales[0]),
        "singular_gap": float(outcome.scales[1]),
        "psd_clipped_mass": outcome.negative_mass,
    }
    return Elicitation(metric=outcome.metric, num_queries=tally[0], details=details)


def _fair_steps(
    sphere: Sphere,
    tau: FloatArray,
    partitions: tuple[Partition, ...],
    make_inner: Callable[[Partition], Elicitor[Elicitation[ShiftedQuadratic]]],
    make_lpme: Callable[[Sphere, str, Embedding], Elicitor[Elicitation[LinearMetric]]] | None,
    varrho: float,
    search: str,
    at_boundary: bool,
) -> Generator[Query, bool, Elicitation[FairQuadraticMetric]]:
    m, k = tau.shape
    everyone = frozenset(range(m))
    o = sphere.center
    tally = [0]
    gradients: list[FloatArray] = []
    hessians: list[FloatArray] = []
    counts: list[int] = []
    runs: list[SlopeRun] = []
    fallbacks: list[list[int]] = []
    runner = (
        None if make_lpme is None else _SlopeRunner(sphere, varrho, make_lpme, search, m, at_boundary, tally)
    )
    for sigma in partitions:
        before = tally[0]
        result: Elicitation[ShiftedQuadratic] | None
        try:
            result = yield from make_inner(sigma)
            tally[0] += result.num_queries
        except DegenerateMetricError as degenerate:
            if make_lpme is None:
                raise
            tally[0] += degenerate.queries_asked
            result = None
        if make_lpme is None:
            assert result is not None  # the except clause re-raised otherwise
            gradients.append(result.metric.d)
            hessians.append(result.metric.B)
            counts.append(tally[0] - before)
            continue
        assert runner is not None  # make_lpme is given past this point
        if result is not None:
            gradients.append(result.metric.d)
            hessians.append(result.metric.B)
            centers = np.asarray(result.details["centers"], dtype=np.float64)
            slopes = np.asarray(result.details["slopes"], dtype=np.float64)
            boundary = result.details.get("probe", "boundary") == "boundary"
            runs += [SlopeRun(sigma, c - o, f, boundary) for c, f in zip(centers, slopes, strict=True)]
            p = int(np.argmax(result.metric.d))
        else:
            # QPME's trivial queries saw no gradient at o (lam near 1, the violation dominates). The fair
            # structure needs none: measure this side's slopes at o and every z_j directly, as "paired" does.
            fallbacks.append(sorted(sigma))
            runs += yield from _slope_runs(runner, sigma, [None, *range(k)])
            p = int(np.argmax(runs[-(k + 1)].slope))
        # One run on the cut's other side at z_p (see the module docstring, "Three query designs").
        runs += yield from _slope_runs(runner, everyone - sigma, [p])
        counts.append(tally[0] - before)
    details: dict[str, Any] = {
        "design": "qpme" if make_lpme is None else "anchored",
        "partitions": [sorted(sigma) for sigma in partitions],
        "xi": membership_matrix(partitions, m).tolist(),
        "queries_per_partition": counts,
    }
    if make_lpme is None:
        outcome = reconstruct_fair(tau, partitions, gradients, hessians)
        details["gradients"] = [g.tolist() for g in gradients]
        details["hessians"] = [h.tolist() for h in hessians]
        details["scales"] = outcome.scales.tolist()
    elif not fallbacks:
        # a from the QPME gradients (every run of a partition informs d); B and lam from all slopes.
        d = np.array(gradients)
        d_norms = np.linalg.norm(d, axis=1)
        if np.any(d_norms < _ZERO):
            raise NumericalError("a partition's elicited gradient is zero: a cannot be identified")
        tau_sigma = np.array([tau[sorted(sigma)].sum(axis=0) for sigma in partitions])
        a_hat, scales = _costs_from_gradients(tau_sigma, d, d_norms)
        outcome = reconstruct_fair_anchored(tau, a_hat, runs, varrho)
        details["gradients"] = d.tolist()
        details["hessians"] = [h.tolist() for h in hessians]
        details["scales"] = scales.tolist()
        details["residual"] = float(outcome.scales[0])
    else:
        # Some partition has no QPME gradient: solve (a, B~) jointly from every slope instead.
        outcome = reconstruct_fair_joint(tau, runs, varrho)
        details["residual"] = float(outcome.scales[0])
    details["psd_clipped_mass"] = outcome.negative_mass
    if make_lpme is not None:
        details["fallback_partitions"] = fallbacks
        details["slopes"] = [run.slope.tolist() for run in runs]
        details["offsets"] = [run.offset.tolist() for run in runs]
        details["moved_groups"] = [sorted(run.partition) for run in runs]
    return Elicitation(metric=outcome.metric, num_queries=tally[0], details=details)


# ---------------------------------------------------------------------------------------------------------
# Trade-off search (Algorithm 5)
# ---------------------------------------------------------------------------------------------------------


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
    if norm < _ZERO:
        return 0.0, p
    return float(values[-1]), p / norm


class _ThresholdPlan:
    """Everything `method="threshold"` needs to place a query whose answer flips exactly at ``lam*``."""

    def __init__(self, metric: FairQuadraticMetric, sphere: Sphere) -> None:
        best: tuple[float, int, FloatArray, FloatArray, FloatArray] | None = None
        for u in range(metric.n_groups):
            g = metric.tau[u] * metric.a
            g_norm = float(np.linalg.norm(g))
            if g_norm < _ZERO:
                continue
            W = _group_curvature(metric, u)
            curvature, p = _orthogonal_curvature(g, W)
            score = g_norm * curvature
            if curvature > _ZERO and (best is None or score > best[0] + _ZERO):
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
        if curvature <= _ZERO:
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
        if (yield from ask(query)):
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
        if norm < _ZERO:
            raise DegenerateMetricError(
                f"the linearised trade-off gradient vanishes at lam = {candidate:g} (Lemma 4's regularity)"
            )
        return lift_rates(z + inner_radius * gradient / norm, frozenset({group}), sphere.center, m)

    lo, hi, asked, step = 0.0, 1.0, 0, 0

    def compare(first: float, second: float) -> Generator[Query, bool, bool]:
        nonlocal asked
        asked += 1
        query = Query(profile(first), profile(second), search=label, kind="shrink", step=step)
        return (yield from ask(query))

    while hi - lo > epsilon:
        c, mid, e = (3 * lo + hi) / 4, (lo + hi) / 2, (lo + 3 * hi) / 4
        # ShrinkInterval (Figure 4): at most three queries; vartheta is unimodal in lam (Lemma 4).
        if (yield from compare(lo, c)) or (yield from compare(c, mid)):
            hi = mid
        elif (yield from compare(mid, e)):
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
    space = _check_sphere(sphere)
    tol = _check_epsilon(epsilon)
    k = space.n_classes
    a_values = as_rate_array(a, "a", ndim=1)
    if a_values.shape != (k,):
        raise InvalidConfigError(f"a must have shape ({k},) to match the sphere, got {a_values.shape}")
    tau_values = as_rate_array(tau, "tau", ndim=2)
    groups = _check_groups(tau_values.shape[0])
    tau_values = _check_tau(tau_values, groups, k)
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
