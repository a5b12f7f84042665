"""Variants of QPME the paper describes: general (off-diagonal) rates, diagonal ``B``, cubic metrics.

Theory of operation
-------------------
**General rates** (Appendix E). A rate matrix ``R_ij = P(h = j | Y = i)`` is determined by its
``q = k^2 - k`` off-diagonal entries (``R_ii = 1 - sum_{j != i} R_ij``), so a metric in general rates is a
metric on ``[0, 1]^q``. `general_qpme` / `general_lpme` run QPME / LPME on a ``q``-dimensional sphere
around the uniform classifier's rates ``o = (1/k, ..., 1/k)``, after checking that every rate vector of the
sphere is a valid rate matrix (non-negative diagonal). `offdiagonal_rates` and `rate_matrix` convert.

**Diagonal B** (Section 5, remark after Theorem 2). With ``B = diag(b)`` the gradient at ``o + delta`` is
``d + b * delta``: moving from ``o`` to ``z_j = o + (rho - varrho) alpha_j`` changes only coordinate ``j``.
After one full LPME at ``o`` (direction of ``d``), each ``z_j`` needs one number: the gradient there lies in
the plane spanned by ``alpha_j`` and ``u_j`` (the unit slope at ``o`` with coordinate ``j`` removed), so a
*two-dimensional* LPME on the circle ``z_j + varrho (cos t alpha_j + sin t u_j)`` suffices, costing
``O(log 1/epsilon)`` queries instead of ``O(k log 1/epsilon)``: ``O~(k)`` in total instead of ``O~(k^2)``.
Every run yields linear equations in ``x = (d, b)``: the slope ``f`` found on a circle (sphere) with centre
``c`` is parallel to the (plane-projected) gradient at the boundary point ``c + varrho f`` where the metric
peaks (KKT), i.e. ``(I - f f^T) P g(c + varrho f) = 0``. The ``2k - 1`` equations fix ``x`` up to scale
(the last right singular vector), then ``a = d - b * o``.

**Cubic metrics** (Section 7). ``phi(r) = <a, r> + 1/2 r^T B r + 1/6 C[r, r, r]`` with symmetric ``B`` and
``C`` and ``||a||^2 + ||B||_F^2 + ||C||_F^2 = 1``. `cubic_qpme` runs QPME (`shifted_quadratic`) on spheres
of radius ``varrho`` at the basis points ``o``, ``z_l = o + (rho - varrho) alpha_l`` and ``-z_1``, as Section
7 proposes. Instead of combining the ``k + 2`` local quadratic fits (which carry an ``O(varrho)`` bias from
the cubic term), it reuses every LPME slope those runs measured: the gradient
``a + B r + 1/2 C[r, r, .]`` is linear in ``(a, B, C)``, so all ``(k + 2)^2`` slopes give one least-squares
system. Unlike the diagonal case it is solved with the *alignment* fixed (``sum f^T g = n``) rather than
``||x|| = 1``: a cubic is flexible enough that gradients pointing *against* a few slopes can fit the
orthogonality equations slightly better than the truth. Runs that misfit far more than the rest (an LPME
fooled by a near-zero gradient coordinate) are dropped one at a time and the system refitted.
Query cost: ``k + 2`` QPME runs, ``O~(k^3)``.

Paper symbols
-------------
=========================  =====================  ==========================================
paper                      code                   meaning
=========================  =====================  ==========================================
``q = k^2 - k``            ``sphere.n_classes``   number of general (off-diagonal) rates
``R``                      ``rate_matrix``        ``(k, k)`` rate matrix, rows sum to one
``o``, ``rho``             ``sphere``             query sphere
``varrho``                 ``inner_radius``       radius of the LPME circles (diagonal)
``varrho``, ``varrho'``    ``qpme_radius``,       radius of the QPME spheres and of their LPME
                           ``inner_radius``       spheres (cubic)
``d``, ``b``               ``d``, ``b``           gradient at ``o``, diagonal of ``B``
``C``                      ``C``                  symmetric third-order tensor ``(k, k, k)``
=========================  =====================  ==========================================
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from itertools import permutations
from typing import Any, ClassVar, Final, TypeVar

import numpy as np
import numpy.typing as npt

from .errors import DegenerateMetricError, InvalidConfigError, NumericalError
from .geometry import inner_sphere, qpme_spheres, validate_inner_radius
from .lpme import (
    DEFAULT_CYCLES,
    DEFAULT_TOLERANCE,
    Probe,
    lpme,
    lpme_max_queries,
    validate_epsilon,
    validate_probe,
)
from .qpme import (
    DEFAULT_INNER_RATIO,
    DEFAULT_PROBE,
    ShiftedQuadratic,
    lpme_slope,
    qpme,
    qpme_max_queries,
    shifted_quadratic,
)
from .types import (
    ASYMMETRY_ATOL,
    Elicitation,
    Elicitor,
    FloatArray,
    LinearMetric,
    Metric,
    QuadraticMetric,
    Query,
    Sphere,
    as_rate_array,
    ask,
)

__all__ = [
    "DEFAULT_CUBIC_INNER_RATIO",
    "DEFAULT_CUBIC_TOLERANCE",
    "DEFAULT_QPME_RATIO",
    "CubicMetric",
    "cubic_qpme",
    "diagonal_qpme",
    "general_lpme",
    "general_n_classes",
    "general_qpme",
    "general_sphere",
    "offdiagonal_rates",
    "rate_matrix",
]

#: Default LPME tolerance of `cubic_qpme`. The cubic term moves slopes within the sphere by only
#: ``O(rho^2 ||C||)``, so slopes must be measured finer than for QPME (docs/benchmarks.md, "Measurements
#: behind the defaults").
DEFAULT_CUBIC_TOLERANCE: Final = 1e-4
#: Default radius of cubic QPME's inner QPME spheres, as a fraction of the query sphere's radius.
DEFAULT_QPME_RATIO: Final = 0.5
#: Default radius of cubic QPME's LPME spheres, as a fraction of ``qpme_radius``. Smaller than QPME's own
#: default: the cubic term biases a slope by ``O(varrho'^2 ||C||)`` (antipodal probes; docs/benchmarks.md,
#: "Measurements behind the defaults").
DEFAULT_CUBIC_INNER_RATIO: Final = 0.1
#: A singular-value gap below this (relative) leaves more than one solution direction.
_RANK_TOL: Final = 1e-10
#: A slope that misfits the cubic this many times worse than the median run is treated as an outlier.
_OUTLIER_FACTOR: Final = 5.0
#: The centre of the auxiliary 2-d sphere the planar LPME searches on (mapped into rate space).
_PLANE_CENTER: Final = 0.5

M = TypeVar("M")


# ----------------------------------------------------------------------------------------------------------
# General (off-diagonal) rates
# ----------------------------------------------------------------------------------------------------------


def general_n_classes(n_rates: int) -> int:
    """The ``k`` with ``k^2 - k = n_rates``; raises `InvalidConfigError` if there is none."""
    q = int(n_rates)
    k = (1 + math.isqrt(1 + 4 * q)) // 2
    if q < 2 or k * k - k != q:
        raise InvalidConfigError(f"{n_rates} general rates is not k^2 - k for any k >= 2 (2, 6, 12, 20, ...)")
    return k


def offdiagonal_rates(matrix: npt.ArrayLike) -> FloatArray:
    """The ``q = k^2 - k`` off-diagonal entries of a ``(k, k)`` rate matrix, row by row (Appendix E)."""
    R = as_rate_array(matrix, "matrix", ndim=2)
    k = R.shape[0]
    if R.shape != (k, k) or k < 2:
        raise InvalidConfigError(f"matrix must be square with k >= 2, got shape {R.shape}")
    result: FloatArray = R[~np.eye(k, dtype=bool)]
    return result


def rate_matrix(rates: npt.ArrayLike) -> FloatArray:
    """The ``(k, k)`` rate matrix whose off-diagonal entries are ``rates``; ``R_ii = 1 - sum_{j!=i} R_ij``."""
    r = as_rate_array(rates, "rates", ndim=1)
    k = general_n_classes(r.shape[0])
    R = np.zeros((k, k))
    R[~np.eye(k, dtype=bool)] = r
    R[np.diag_indices(k)] = 1.0 - R.sum(axis=1)
    return R


def _check_general_sphere(sphere: object) -> tuple[Sphere, int]:
    if not isinstance(sphere, Sphere):
        raise InvalidConfigError(f"sphere must be a Sphere, got {type(sphere).__name__}")
    k = general_n_classes(sphere.n_classes)
    rows = sphere.center.reshape(k, k - 1).sum(axis=1)
    # The largest off-diagonal row sum on the ball is the centre's plus radius * sqrt(k - 1).
    worst = float(np.max(rows)) + sphere.radius * math.sqrt(k - 1)
    if worst > 1.0 + 1e-12:
        raise InvalidConfigError(
            f"radius {sphere.radius:g} is too large for general rates: some rate vectors of the sphere "
            f"would give a rate matrix with a negative diagonal (largest row sum {worst:.4g} > 1)"
        )
    return sphere, k


def general_sphere(n_classes: int, radius: float) -> Sphere:
    """The sphere of general rates around the uniform classifier (``R_ij = 1/k``), checked for validity.

    Parameters
    ----------
    n_classes : int
        ``k >= 2``; the sphere lives in ``q = k^2 - k`` dimensions.
    radius : float
        At most ``1 / (k sqrt(k - 1))`` so that every rate matrix in it has a non-negative diagonal.
    """
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise InvalidConfigError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    k = int(n_classes)
    sphere = Sphere(np.full(k * k - k, 1.0 / k), radius)
    return _check_general_sphere(sphere)[0]


def _relabel(
    inner: Elicitor[Elicitation[M]], extra: dict[str, object]
) -> Generator[Query, bool, Elicitation[M]]:
    result = yield from inner
    return Elicitation(
        metric=result.metric, num_queries=result.num_queries, details={**result.details, **extra}
    )


def general_qpme(
    sphere: Sphere,
    epsilon: float = DEFAULT_TOLERANCE,
    *,
    inner_radius: float | None = None,
    project_nsd: bool = True,
    search: str = "general_qpme",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
) -> Elicitor[Elicitation[QuadraticMetric]]:
    """Elicit a quadratic metric in general (off-diagonal) rates (Appendix E).

    Parameters
    ----------
    sphere : Sphere
        A sphere in ``q = k^2 - k`` dimensions whose points are valid rate matrices (see `general_sphere`).
    epsilon, inner_radius, project_nsd, cycles, early_stop
        As for `elicitation.qpme.qpme`.
    search : str
        Prefix of the query labels.

    Yields
    ------
    Query
        Off-diagonal rate vectors of shape ``(q,)``; `rate_matrix` turns them into ``(k, k)`` matrices.

    Receives
    --------
    bool
        ``True`` when ``first`` is preferred.

    Returns
    -------
    Elicitor of Elicitation[QuadraticMetric]
        A metric on ``q`` rates; ``details["n_classes"]`` is ``k``.

    Notes
    -----
    ``O(q^2 log(1/epsilon)) = O(k^4 log(1/epsilon))`` queries: ``q + 2`` LPME runs in ``q`` dimensions.
    """
    checked, k = _check_general_sphere(sphere)
    inner = qpme(
        checked,
        epsilon,
        inner_radius=inner_radius,
        project_nsd=project_nsd,
        search=search,
        cycles=cycles,
        early_stop=early_stop,
    )
    return Elicitor(_relabel(inner, {"n_classes": k}), name=search, max_queries=inner.max_queries)


def general_lpme(
    sphere: Sphere,
    epsilon: float = DEFAULT_TOLERANCE,
    *,
    search: str = "general_lpme",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
) -> Elicitor[Elicitation[LinearMetric]]:
    """Elicit a linear metric in general (off-diagonal) rates: LPME in ``q = k^2 - k`` dimensions.

    Parameters and queries as for `general_qpme`; ``O(q log(1/epsilon))`` queries.
    """
    checked, k = _check_general_sphere(sphere)
    inner = lpme(checked, epsilon, cycles=cycles, early_stop=early_stop, search=search)
    return Elicitor(_relabel(inner, {"n_classes": k}), name=search, max_queries=inner.max_queries)


# ----------------------------------------------------------------------------------------------------------
# Shared helpers
# ----------------------------------------------------------------------------------------------------------


def _check_sphere(sphere: object) -> Sphere:
    if not isinstance(sphere, Sphere):
        raise InvalidConfigError(f"sphere must be a Sphere, got {type(sphere).__name__}")
    return sphere


def _check_cycles(cycles: int) -> int:
    if isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 1:
        raise InvalidConfigError(f"cycles must be an integer >= 1, got {cycles!r}")
    return cycles


def _null_direction(rows: FloatArray, what: str) -> tuple[FloatArray, float]:
    """The unit ``x`` minimising ``||rows @ x||`` and the residual; raises if it is not unique."""
    if not np.all(np.isfinite(rows)):
        raise NumericalError(f"the slope equations for {what} are not finite")
    n = rows.shape[1]
    _, singular, vt = np.linalg.svd(rows)
    if singular.shape[0] < n - 1 or singular[n - 2] <= _RANK_TOL * max(float(singular[0]), 1.0):
        raise NumericalError(f"the measured slopes do not determine {what} up to scale (degenerate metric?)")
    residual = float(singular[n - 1]) if singular.shape[0] == n else 0.0
    x: FloatArray = vt[-1]
    return x, residual


def _trivial_queries(
    sphere: Sphere, step: float, search: str
) -> Generator[Query, bool, tuple[int, tuple[int, int] | None]]:
    """Is some rate ``step`` away from ``o`` along an axis preferred to ``o``? (Section 3, last paragraph.)"""
    o = sphere.center
    asked = 0
    for sign in (1, -1):
        for i in range(sphere.n_classes):
            probe = o.copy()
            probe[i] += sign * step
            asked += 1
            if (yield from ask(Query(probe, o, search, "pivot", i, asked - 1))):
                return asked, (i, sign)
    return asked, None


# ----------------------------------------------------------------------------------------------------------
# Diagonal B
# ----------------------------------------------------------------------------------------------------------


def diagonal_qpme(
    sphere: Sphere,
    epsilon: float = DEFAULT_TOLERANCE,
    *,
    inner_radius: float | None = None,
    project_nsd: bool = True,
    search: str = "diagonal_qpme",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    probe: Probe = DEFAULT_PROBE,
) -> Elicitor[Elicitation[QuadraticMetric]]:
    """Elicit a quadratic metric with diagonal ``B`` in ``O~(k)`` queries (Section 5's structured case).

    Parameters
    ----------
    sphere : Sphere
        Query sphere (centre ``o``, radius ``rho``); every query lies inside it.
    epsilon : float
        LPME binary-search tolerance, in ``(0, pi/2)``.
    inner_radius : float, optional
        ``varrho`` in ``(0, rho)``, radius of the LPME sphere at ``o`` and of the circles at ``z_j``
        (at most 0.5); default ``DEFAULT_INNER_RATIO * rho``.
    project_nsd : bool
        Clip positive diagonal entries to zero (the family is NSD); ``False`` keeps the raw estimate.
    search : str
        Prefix of the query labels: ``{search}/o/lpme`` and ``{search}/z{j}/plane``.
    cycles, early_stop, probe
        Passed to every LPME run. With ``probe="antipodal"`` (default, as QPME) a slope is the gradient
        direction at its sphere's centre and an oracle that errs on close pairs (Definition 4) costs
        ``O(eps_Omega / varrho)`` in angle instead of ``O(sqrt(eps_Omega / varrho))``.

    Yields
    ------
    Query
        ``(n_classes,)`` rate pairs: up to ``2k`` ``"pivot"`` trivial queries, an LPME at ``o``, then a
        two-dimensional LPME per coordinate.

    Receives
    --------
    bool
        ``True`` when ``first`` is preferred.

    Returns
    -------
    Elicitor of Elicitation[QuadraticMetric]
        ``metric.B`` is diagonal; ``details`` holds the slope at ``o``, the planar slopes and bases, the
        circle centres and the least-squares residual.

    Raises
    ------
    InvalidConfigError
        On bad arguments (eagerly).
    DegenerateMetricError
        (while running) if no trivial query shows a non-zero gradient at ``o``.
    NumericalError
        (while running) if the slopes do not determine ``(a, b)``, e.g. when the gradient at ``o`` has a
        single non-zero coordinate (then no slope at ``z_j`` can reveal ``b_j``).

    Notes
    -----
    At most ``2k + lpme_max_queries(k) + k * lpme_max_queries(2)`` queries: ``O(k log(1/epsilon))``.
    """
    checked = _check_sphere(sphere)
    eps = validate_epsilon(epsilon)
    varrho = DEFAULT_INNER_RATIO * checked.radius if inner_radius is None else float(inner_radius)
    varrho = validate_inner_radius(checked, varrho)
    if varrho > _PLANE_CENTER:
        raise InvalidConfigError(f"inner_radius must be at most {_PLANE_CENTER}, got {inner_radius!r}")
    n_cycles = _check_cycles(cycles)
    chosen = validate_probe(probe)
    k = checked.n_classes
    budget = 2 * k + lpme_max_queries(k, eps, n_cycles, bool(early_stop), chosen)
    budget += k * lpme_max_queries(2, eps, n_cycles, bool(early_stop), chosen)
    body = _diagonal_steps(
        checked, eps, varrho, bool(project_nsd), search, n_cycles, bool(early_stop), chosen
    )
    return Elicitor(body, name=search, max_queries=budget)


def _diagonal_map(offset: FloatArray) -> FloatArray:
    """``L`` with ``L @ (d, b) = d + b * offset``, the diagonal metric's gradient at ``o + offset``."""
    k = offset.shape[0]
    return np.hstack([np.eye(k), np.diag(offset)])


def _diagonal_steps(
    sphere: Sphere,
    epsilon: float,
    varrho: float,
    project_nsd: bool,
    search: str,
    cycles: int,
    early_stop: bool,
    probe: Probe,
) -> Generator[Query, bool, Elicitation[QuadraticMetric]]:
    k = sphere.n_classes
    o = sphere.center
    # Where a slope is parallel to the gradient: at the boundary maximum c + varrho f (KKT) for boundary
    # probes, at the centre c itself for antipodal probes.
    reach = varrho if probe == "boundary" else 0.0
    asked, moving = yield from _trivial_queries(sphere, varrho, search)
    if moving is None:
        raise DegenerateMetricError(
            f"the metric's gradient at the sphere centre is zero at resolution inner_radius={varrho:g}; "
            "there is no direction to elicit (Assumption 2)"
        )
    f0, count = yield from lpme_slope(
        inner_sphere(sphere, varrho),
        epsilon,
        cycles=cycles,
        early_stop=early_stop,
        probe=probe,
        search=f"{search}/o/lpme",
    )
    asked += count
    rows = [(np.eye(k) - np.outer(f0, f0)) @ _diagonal_map(reach * f0)]

    plane_center = np.full(2, _PLANE_CENTER)
    centers, bases, plane_slopes = [], [], []
    for j in range(k):
        z = inner_sphere(sphere, varrho, axis=j).center
        rest = f0.copy()
        rest[j] = 0.0
        norm = float(np.linalg.norm(rest))
        if norm > 1e-12:
            u = rest / norm
        else:  # the slope at o points along alpha_j: any orthogonal direction spans a plane
            u = np.zeros(k)
            u[(j + 1) % k] = 1.0
        basis = np.column_stack([np.eye(k)[j], u])  # (k, 2), orthonormal

        def embed(point: list[float], z: FloatArray = z, basis: FloatArray = basis) -> FloatArray:
            """A point of the auxiliary plane as the rates it stands for: ``z + basis (point - centre)``."""
            mapped: FloatArray = z + basis @ (np.array(point) - plane_center)
            return mapped

        f2, count = yield from lpme_slope(
            Sphere(plane_center, varrho),
            epsilon,
            cycles=cycles,
            early_stop=early_stop,
            probe=probe,
            search=f"{search}/z{j + 1}/plane",
            embed=embed,
        )
        asked += count
        offset = (z - o) + reach * (basis @ f2)
        rows.append((np.eye(2) - np.outer(f2, f2)) @ basis.T @ _diagonal_map(offset))
        centers.append(z)
        bases.append(basis)
        plane_slopes.append(f2)

    x, residual = _null_direction(np.vstack(rows), "(d, diag B)")
    # Orient x so that the gradients point along the measured slopes rather than against them.
    alignment = float(f0 @ _diagonal_map(reach * f0) @ x)
    for z, basis, f2 in zip(centers, bases, plane_slopes, strict=True):
        offset = (z - o) + reach * (basis @ f2)
        alignment += float(f2 @ basis.T @ _diagonal_map(offset) @ x)
    if alignment < 0.0:
        x = -x
    d, b = x[:k], x[k:]
    a = d - b * o
    diagonal = np.minimum(b, 0.0) if project_nsd else b
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(diagonal))):
        raise NumericalError("the diagonal estimate is not finite")
    if float(np.sqrt(a @ a + diagonal @ diagonal)) == 0.0:
        raise NumericalError("the diagonal estimate is zero")
    metric = QuadraticMetric(a, np.diag(diagonal), require_nsd=project_nsd)
    return Elicitation(
        metric=metric,
        num_queries=asked,
        details={
            "slope_at_o": f0,
            "plane_slopes": np.array(plane_slopes),
            "plane_bases": np.array(bases),
            "centers": np.array(centers),
            "inner_radius": varrho,
            "moving_axis": moving,
            "residual": residual,
            "projected_nsd": project_nsd,
            "probe": probe,
        },
    )


# ----------------------------------------------------------------------------------------------------------
# Cubic metrics
# ----------------------------------------------------------------------------------------------------------


def _symmetric_tensor(C: FloatArray) -> bool:
    return all(
        np.allclose(C, np.transpose(C, axes), rtol=0.0, atol=ASYMMETRY_ATOL)
        for axes in permutations(range(3))
    )


@dataclass(frozen=True, eq=False)
class CubicMetric(Metric):
    """``phi(r) = <a, r> + 1/2 r^T B r + 1/6 sum_ijl C_ijl r_i r_j r_l`` (Section 7).

    ``B`` ``(k, k)`` and ``C`` ``(k, k, k)`` must be symmetric (``C`` under every permutation of its indices);
    the coefficients are scaled so that ``||a||^2 + ||B||_F^2 + ||C||_F^2 = 1`` (scale invariance).
    """

    a: FloatArray
    B: FloatArray
    C: FloatArray
    kind: ClassVar[str] = "cubic"

    def __post_init__(self) -> None:
        a = as_rate_array(self.a, "a", ndim=1)
        k = a.shape[0]
        B = as_rate_array(self.B, "B", ndim=2)
        C = as_rate_array(self.C, "C", ndim=3)
        if B.shape != (k, k) or C.shape != (k, k, k):
            raise InvalidConfigError(
                f"B must be ({k}, {k}) and C ({k}, {k}, {k}), got {B.shape} and {C.shape}"
            )
        if not np.allclose(B, B.T, rtol=0.0, atol=ASYMMETRY_ATOL):
            raise InvalidConfigError("B must be symmetric")
        if not _symmetric_tensor(C):
            raise InvalidConfigError("C must be symmetric under every permutation of its three indices")
        B = (B + B.T) / 2.0
        C = np.mean([np.transpose(C, axes) for axes in permutations(range(3))], axis=0)
        scale = float(np.sqrt(a @ a + np.sum(B * B) + np.sum(C * C)))
        if scale < 1e-12:
            raise InvalidConfigError("a, B and C must not all be zero")
        a, B, C = a / scale, B / scale, C / scale
        for array in (a, B, C):
            array.setflags(write=False)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "C", C)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "a": self.a.tolist(), "B": self.B.tolist(), "C": self.C.tolist()}

    @classmethod
    def _from_fields(cls, data: Mapping[str, Any]) -> CubicMetric:
        a = np.asarray(data["a"], dtype=np.float64)
        B = np.asarray(data["B"], dtype=np.float64)
        C = np.asarray(data["C"], dtype=np.float64)
        metric = cls(a, B, C)
        if np.array_equal(B, B.T):
            metric._keep_stored(a=a, B=B, C=C)
        return metric

    @property
    def n_classes(self) -> int:
        return int(self.a.shape[0])

    def __call__(self, rates: npt.ArrayLike) -> float:
        r = np.asarray(rates, dtype=np.float64)
        return float(self.a @ r + 0.5 * r @ self.B @ r + np.einsum("ijl,i,j,l->", self.C, r, r, r) / 6.0)

    def gradient(self, rates: npt.ArrayLike) -> FloatArray:
        """``a + B r + 1/2 C[r, r, .]``."""
        r = np.asarray(rates, dtype=np.float64)
        result: FloatArray = self.a + self.B @ r + 0.5 * np.einsum("ijl,j,l->i", self.C, r, r)
        return result

    def hessian(self, rates: npt.ArrayLike) -> FloatArray:
        """``B + C[r, ., .]``."""
        r = np.asarray(rates, dtype=np.float64)
        result: FloatArray = self.B + np.einsum("ijl,l->ij", self.C, r)
        return result


def _index_sets(k: int) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    pairs = [(i, j) for i in range(k) for j in range(i, k)]
    triples = [(i, j, c) for i in range(k) for j in range(i, k) for c in range(j, k)]
    return pairs, triples


def _aligned_fit(
    slopes: FloatArray, maps: list[FloatArray], keep: npt.NDArray[np.bool_]
) -> tuple[FloatArray, float]:
    """Fit ``x`` so that every modelled gradient ``G x`` points along its measured slope ``f``.

    Minimises ``sum ||(I - f f^T) G x||^2`` subject to ``sum f^T G x = n`` (the runs kept). Fixing the
    *alignment* rather than ``||x|| = 1`` matters for cubics: the orthogonality equations alone also accept
    gradients pointing *against* some slopes, and a flexible family can fit those slightly better.
    """
    chosen = [(f, G) for f, G, kept in zip(slopes, maps, keep, strict=True) if kept]
    k = slopes.shape[1]
    A = np.vstack([(np.eye(k) - np.outer(f, f)) @ G for f, G in chosen])
    s = np.sum([G.T @ f for f, G in chosen], axis=0)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(s))) or float(np.linalg.norm(s)) == 0.0:
        raise NumericalError("the slope equations for (a, B, C) are degenerate")
    n = A.shape[1]
    # x = x0 + V z with s^T x0 = len(chosen) and V an orthonormal basis of s's complement.
    q, _ = np.linalg.qr(s.reshape(n, 1), mode="complete")
    V = q[:, 1:]
    x0 = len(chosen) * s / float(s @ s)
    AV = A @ V
    singular = np.linalg.svd(AV, compute_uv=False)
    if singular.shape[0] < n - 1 or singular[-1] <= _RANK_TOL * max(float(singular[0]), 1.0):
        raise NumericalError("the measured slopes do not determine (a, B, C) (degenerate metric?)")
    z, *_ = np.linalg.lstsq(AV, -A @ x0, rcond=None)
    x: FloatArray = x0 + V @ z
    residual = float(np.linalg.norm(A @ x)) / float(np.linalg.norm(x))
    return x, residual


def _misfit(slope: FloatArray, gradient: FloatArray) -> float:
    """Sine of the angle between a measured unit slope and a modelled gradient (1 if the gradient is 0)."""
    norm = float(np.linalg.norm(gradient))
    if norm == 0.0:
        return 1.0
    return float(np.linalg.norm(gradient / norm - (slope @ gradient / norm) * slope))


def _cubic_map(delta: FloatArray) -> FloatArray:
    """``G`` with ``G @ x`` the gradient at ``o + delta`` of the cubic expanded around ``o``.

    ``x`` stacks ``d`` (k), the upper triangle of ``H`` and the sorted-index entries of ``C``.
    """
    k = delta.shape[0]
    pairs, triples = _index_sets(k)
    pair_column = {pair: k + n for n, pair in enumerate(pairs)}
    triple_column = {triple: k + len(pairs) + n for n, triple in enumerate(triples)}
    G = np.zeros((k, k + len(pairs) + len(triples)))
    G[:, :k] = np.eye(k)
    for m in range(k):
        for j in range(k):
            key = (min(m, j), max(m, j))
            G[m, pair_column[key]] += delta[j]  # (H delta)_m
            for c in range(k):
                first, second, third = sorted((m, j, c))
                G[m, triple_column[(first, second, third)]] += (
                    0.5 * delta[j] * delta[c]
                )  # 1/2 C[delta, delta]_m
    return G


def _unpack_cubic(x: FloatArray, k: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    pairs, triples = _index_sets(k)
    d = x[:k].copy()
    H = np.zeros((k, k))
    for n, (i, j) in enumerate(pairs):
        H[i, j] = H[j, i] = x[k + n]
    C = np.zeros((k, k, k))
    for n, triple in enumerate(triples):
        for i, j, c in set(permutations(triple)):
            C[i, j, c] = x[k + len(pairs) + n]
    return d, H, C


def cubic_qpme(
    sphere: Sphere,
    epsilon: float = DEFAULT_CUBIC_TOLERANCE,
    *,
    qpme_radius: float | None = None,
    inner_radius: float | None = None,
    search: str = "cubic_qpme",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
) -> Elicitor[Elicitation[CubicMetric]]:
    """Elicit a cubic metric by QPME at the basis points (Section 7).

    Parameters
    ----------
    sphere : Sphere
        Query sphere (centre ``o``, radius ``rho``); every query lies inside it.
    epsilon : float
        LPME binary-search tolerance, in ``(0, pi/2)``; finer by default than QPME's (see
        ``DEFAULT_CUBIC_TOLERANCE``).
    qpme_radius : float, optional
        ``varrho`` in ``(0, rho)``: radius of the QPME spheres at ``o``, ``z_l`` and ``-z_1``; default
        ``DEFAULT_QPME_RATIO * rho``.
    inner_radius : float, optional
        ``varrho'`` in ``(0, varrho)``: radius of each QPME's LPME spheres; default
        ``DEFAULT_CUBIC_INNER_RATIO * varrho``.
    search : str
        Prefix of the query labels (``{search}/z{l}/qpme/...``).
    cycles, early_stop
        Passed to every LPME run.

    Yields
    ------
    Query
        ``(n_classes,)`` rate pairs of ``k + 2`` QPME runs.

    Receives
    --------
    bool
        ``True`` when ``first`` is preferred.

    Returns
    -------
    Elicitor of Elicitation[CubicMetric]
        ``details`` holds every slope and the point it was measured at, the local `ShiftedQuadratic` fits
        and the least-squares residual.

    Raises
    ------
    InvalidConfigError
        On bad arguments (eagerly).
    DegenerateMetricError, NumericalError
        (while running) if a QPME run finds no gradient, or the slopes do not determine ``(a, B, C)``.

    Notes
    -----
    At most ``(k + 2) * qpme_max_queries(k, epsilon)`` queries, ``O(k^3 log(1/epsilon))``.
    """
    checked = _check_sphere(sphere)
    eps = validate_epsilon(epsilon)
    outer = DEFAULT_QPME_RATIO * checked.radius if qpme_radius is None else float(qpme_radius)
    outer = validate_inner_radius(checked, outer)
    inner = DEFAULT_CUBIC_INNER_RATIO * outer if inner_radius is None else float(inner_radius)
    if not math.isfinite(inner) or not 0.0 < inner < outer:
        raise InvalidConfigError(
            f"inner_radius must lie in (0, {outer:g}) (the qpme_radius), got {inner_radius!r}"
        )
    n_cycles = _check_cycles(cycles)
    k = checked.n_classes
    budget = (k + 2) * qpme_max_queries(k, eps, n_cycles, bool(early_stop))
    body = _cubic_steps(checked, eps, outer, inner, search, n_cycles, bool(early_stop))
    return Elicitor(body, name=search, max_queries=budget)


def _cubic_steps(
    sphere: Sphere,
    epsilon: float,
    outer: float,
    inner: float,
    search: str,
    cycles: int,
    early_stop: bool,
) -> Generator[Query, bool, Elicitation[CubicMetric]]:
    k = sphere.n_classes
    o = sphere.center
    spheres = qpme_spheres(sphere, outer, pivot=0)
    labels = ["o"] + [f"z{j + 1}" for j in range(k)] + ["-z1"]
    asked = 0
    slopes, points, fits = [], [], []
    for small, label in zip(spheres, labels, strict=True):
        run = yield from shifted_quadratic(
            small,
            epsilon=epsilon,
            inner_radius=inner,
            search=f"{search}/{label}/qpme",
            cycles=cycles,
            early_stop=early_stop,
        )
        asked += run.num_queries
        f = np.asarray(run.details["slopes"], dtype=np.float64)
        centers = np.asarray(run.details["centers"], dtype=np.float64)
        slopes.append(f)
        # Where each slope is parallel to the gradient: boundary probes find the boundary maximum
        # c + varrho' f (KKT); antipodal probes read the gradient at the centre c (up to O(varrho'^2 C)).
        kkt = run.details.get("probe", "boundary") == "boundary"
        points.append(centers + inner * f if kkt else centers)
        fits.append(run.metric)
    f_all = np.vstack(slopes)
    p_all = np.vstack(points)
    maps = [_cubic_map(p - o) for p in p_all]
    keep = np.ones(len(f_all), dtype=bool)
    x, residual = _aligned_fit(f_all, maps, keep)
    # Robust refit: an LPME run whose orthant test was fooled by a near-zero gradient coordinate returns
    # a slope off by far more than epsilon, and one such run can bend the whole cubic fit.
    # Drop the worst run while it misfits far more than the others (at most a fifth of the runs).
    for _ in range(len(f_all) // 5):
        sines = np.array([_misfit(f, G @ x) for f, G in zip(f_all, maps, strict=True)])
        worst = int(np.argmax(np.where(keep, sines, -1.0)))
        if sines[worst] <= max(_OUTLIER_FACTOR * float(np.median(sines[keep])), epsilon):
            break
        keep[worst] = False
        try:
            x, residual = _aligned_fit(f_all, maps, keep)
        except NumericalError:
            keep[worst] = True  # this run is needed to pin x down: keep the previous fit
            break
    d, H, C = _unpack_cubic(x, k)
    # Back from the expansion around o: H = B + C[o], d = a + B o + 1/2 C[o, o].
    B = H - np.einsum("ijl,l->ij", C, o)
    a = d - B @ o - 0.5 * np.einsum("ijl,j,l->i", C, o, o)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(B)) and np.all(np.isfinite(C))):
        raise NumericalError("the cubic estimate is not finite")
    f_all.setflags(write=False)
    p_all.setflags(write=False)
    local_fits: tuple[ShiftedQuadratic, ...] = tuple(fits)
    return Elicitation(
        metric=CubicMetric(a, B, C),
        num_queries=asked,
        details={
            "slopes": f_all,
            "points": p_all,
            "local_fits": local_fits,
            "qpme_radius": outer,
            "inner_radius": inner,
            "residual": residual,
            "discarded_runs": np.flatnonzero(~keep),
        },
    )
