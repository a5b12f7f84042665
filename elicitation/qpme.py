"""QPME: elicit a quadratic metric from k + 2 LPME runs on small spheres (Algorithm 1, Appendix C).

Theory of operation
-------------------
Around the sphere centre ``o`` the oracle's metric is, up to a constant (Equation 4),
``phi(r) = <d, r - o> + 1/2 (r - o)^T B (r - o)`` with ``d = a + B o``. Its gradient at ``o + delta`` is
``g(delta) = d + B delta``, which is *linear* in the unknowns ``(d, B)``.

1. **Non-degeneracy** (Section 3, last paragraph): trivial queries ``(o + varrho alpha_i, o)`` (and, if all
   answer "no", ``(o - varrho alpha_i, o)``) find a coordinate where the metric moves; if none does, the
   gradient at ``o`` is zero at this resolution and we raise `DegenerateMetricError` instead of dividing
   by zero later.
2. **Local slopes** (lines 1-4): LPME on ``S_o``, on ``S_{z_j}`` with ``z_j = o + (rho - varrho) alpha_j``
   and on ``S_{-z_p}`` with ``-z_p = o - (rho - varrho) alpha_p`` returns unit slopes ``f``. The pivot ``p``
   is the coordinate whose slope entries stay farthest from zero over the first ``k + 1`` runs (the most
   reliable denominator), not blindly the first one. For ``k = 2`` the ``k + 2`` runs give exactly as many
   equations as unknowns, so a fifth run at the other ``-z`` adds redundancy (the closed form ignores it).
   **More spheres** (``layout``, `qpme` only): Algorithm 1's ``k + 2`` runs leave the least squares barely
   overdetermined, and the curvature along the gradient is read off second-order changes of the slope
   direction, so a few unlucky slopes (a metric whose gradient nearly vanishes in some coordinate at one
   of the spheres) dominate the error tails. `qpme` therefore runs LPME at ``o - (rho - varrho) alpha_j``
   for *every* ``j`` (``"axes"``, ``2 k + 1`` runs) and, for ``k = 2`` where runs are cheapest, also at
   the four diagonal directions ``(+-alpha_1 +- alpha_2) / sqrt(2)`` (``"dense"``, 9 runs). All runs
   enter the least squares; the closed form still uses the first ``k + 2``.
3. **Reconstruction** (line 5), three interchangeable solvers:

   * ``"signed"`` (`qpme`'s default) - the least squares below, with every gradient required to point
     *along* its slope (``g = s f`` with ``s >= 0``), not merely on its line: LPME measures a direction,
     and the lines alone admit estimates with a gradient reversed (a noisy slope can flip one). Where
     the slopes leave several metrics equally good it takes the least curved, so a linear metric comes
     back linear (`reconstruct_signed`).

   * ``"closed_form"`` - the paper's Equation 8 (Appendix C) generalised to pivot ``p`` and a second
     coordinate ``q``: ratios ``F_{i,p,l} = f_{il} / f_{pl}`` give ``d`` and column ``j`` of ``B`` from the
     run at ``z_j``, and the run at ``-z_p`` fixes ``B_pp``. Lower-triangle entries are mirrored.
   * ``"lstsq"`` (default) - every run says "``g`` is parallel to ``f``", i.e. ``(I - f f^T) g = 0``:
     ``k`` linear equations in ``x = (d, B)`` per run, all of them stacked with symmetry built in (one
     unknown per pair ``B_ij = B_ji``). The unit-norm ``x`` minimising the residual is the last right
     singular vector; off-diagonal unknowns carry a ``sqrt(2)`` so that ``||x|| = 1`` *is*
     ``||d||^2 + ||B||_F^2 = 1``. Where ``g`` is evaluated depends on the LPME probe: antipodal probes
     (the default here) read the gradient at the small sphere's centre ``c`` exactly, for any curvature;
     the paper's boundary probes find the boundary maximum, where by KKT ``f`` is parallel to the gradient
     at ``c + varrho f``, so the equations are written there. Either way the paper's ``O(varrho)``
     local-linearisation bias disappears for quadratic oracles.

4. **Metrics the slopes do not pin down** (``resolve_degenerate``, an extension of the paper). The
   trivial queries finding no slope at ``o`` no longer stop the run (a target metric may peak within
   ``varrho`` of ``o``). When all slopes lie on one line (linear metrics, ``B`` rank one along the
   gradient such as Example 2 for ``k = 2``) the slopes cannot say where along that line the metric
   peaks, so `line_peak` asks: one comparison per halving of the line through ``o``. When the slopes
   leave part of ``(d, B)`` open otherwise (a target on an axis through ``o``, or at ``o``, where every
   axis sphere's slope points at it whatever the curvature), up to ``k`` further LPME runs go to the
   off-axis spheres that tell the remaining candidates apart best. None of this asks a single extra
   question of a metric whose slopes determine it. A log in which every answer chose the same side is
   refused (`NumericalError`): no metric answers all of QPME's questions alike.

5. **Probes and noise.** Under Definition-4 noise the boundary probes' final comparisons differ in value
   only to second order in the angle, so the slopes' error is ``O(sqrt(eps_Omega / varrho))`` and the
   reconstruction amplifies it; antipodal probes (see `elicitation.lpme`) keep it at
   ``O(eps_Omega / varrho)`` with one query per halving, hence ``DEFAULT_PROBE = "antipodal"``.
   Pairwise answers cannot tell ``phi`` from a monotone transform of it, so the curvature *along* the
   gradient (``d^T B d``) is only weakly identified by any slope data; that direction carries most of the
   ``B`` error. Noise can even make it strongly positive while shrinking ``d`` to compensate, so `qpme`
   imposes ``B <= 0`` inside the least squares (an active set that makes upward directions null)
   rather than only projecting afterwards; under ``eps_Omega = 1e-3`` that cut the mean
   ``||a - a_hat||`` from 0.27-0.85 to 0.10-0.20 (k = 2..5, 40 metrics each).

`shifted_quadratic` returns ``(d, B)`` as a `ShiftedQuadratic` (symmetric ``B``, not projected); `qpme`
builds on it: ``a = d - B o``, optionally projects ``B`` onto the NSD cone and normalises
(``||a||^2 + ||B||_F^2 = 1``, done by `QuadraticMetric`).

Paper symbols
-------------
=======================  =======================  ===============================================
paper                    code                     meaning
=======================  =======================  ===============================================
``o``, ``rho``           ``sphere``               query sphere, centre and radius
``varrho``               ``inner_radius``         radius of the small LPME spheres
``epsilon``              ``epsilon``              LPME binary-search tolerance
``d``                    ``d``                    gradient at ``o``, ``a + B o`` (Equation 4)
``B``                    ``B``                    Hessian of the metric (symmetric, NSD)
``alpha_j``              axis ``j``               standard basis vector
``z_j``                  ``centers[j + 1]``       ``o + (rho - varrho) alpha_j``
``f_0, f_j, f^-_1``      ``slopes`` rows          unit slopes from the ``k + 2`` LPME runs
``F_{i,j,l}``            ratios in closed form    ``f_{il} / f_{jl}``
``d_1`` (pivot)          ``pivot``                coordinate the closed form divides by
=======================  =======================  ===============================================

Query complexity: at most ``2 k`` trivial queries plus the layout's LPME runs (``k + 2``, ``k + 3`` for
``k = 2``, with ``"paper"``; ``2 k + 1`` with ``"axes"``; 9 for ``k = 2`` with ``"dense"``),
``O(k^2 log(1/epsilon))`` in total (Theorem 1); `Elicitor.max_queries` is the exact worst case. With
`qpme`'s defaults and an exact oracle the mean is about 91, 176, 334 and 540 answers for k = 2..5 (the
paper's Table 4: 265, 669, 1206, 1880; the ``"paper"`` layout asks 51, 126, 223 and 344).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy.optimize import nnls  # type: ignore[import-untyped]

from .errors import DegenerateMetricError, InvalidConfigError, NumericalError
from .geometry import inner_sphere, validate_inner_radius
from .lpme import (
    DEFAULT_CYCLES,
    DEFAULT_TOLERANCE,
    Probe,
    Robust,
    lpme,
    lpme_max_queries,
    robust_ask,
    robust_step,
    validate_embed,
    validate_epsilon,
    validate_probe,
    validate_robust,
)
from .types import (
    NSD_ATOL,
    Elicitation,
    Elicitor,
    Embedding,
    FloatArray,
    ImperceptibleError,
    QuadraticMetric,
    Query,
    Sphere,
    plain_rates,
)

__all__ = [
    "DEFAULT_INNER_RATIO",
    "DEFAULT_LAYOUT",
    "DEFAULT_PROBE",
    "DEFAULT_RIDGE",
    "DISPLAYED_INNER_RATIO",
    "LAYOUTS",
    "RECONSTRUCTIONS",
    "Layout",
    "Reconstruction",
    "ShiftedQuadratic",
    "SignedWeight",
    "default_inner_radius",
    "lpme_slope",
    "qpme",
    "qpme_max_queries",
    "qpme_sphere_layout",
    "reconstruct_closed_form",
    "reconstruct_lstsq",
    "reconstruct_signed",
    "shifted_quadratic",
    "signed_fit_weight",
    "signed_solve",
]

Reconstruction = Literal["signed", "lstsq", "closed_form"]
#: The reconstruction solvers `shifted_quadratic` accepts.
RECONSTRUCTIONS: tuple[str, ...] = ("signed", "lstsq", "closed_form")
#: Default ``varrho / rho``. Small ``varrho`` lengthens the lever arm ``rho - varrho`` (noise-free accuracy),
#: large ``varrho`` widens the value gaps Definition-4 noise acts on; measured over ``varrho`` in
#: {0.005, 0.02, 0.03, 0.04, 0.05, 0.1} at ``rho = 0.2``, 0.04 was the best compromise.
DEFAULT_INNER_RATIO = 0.2
#: ``varrho / rho`` when the questions are shown in whole people (a `elicitation.display.DisplayGrid`).
#: Antipodal probes read the gradient at a small sphere's centre exactly whatever its radius, so on a
#: coarse display the spheres grow until their searches can be shown (at the default 0.2 a step moves a
#: classifier by a fraction of a person), at the cost of the lever arm ``rho - varrho``. Chosen among
#: 0.2, 0.5, 0.6 and 0.7 on the breast-cancer sphere with noisy people (docs/realistic-queries.md); diagonal
#: QPME's displayed sessions use it too.
DISPLAYED_INNER_RATIO = 0.6
#: How the LPME runs compare rates (see `elicitation.lpme.lpme`).
DEFAULT_PROBE: Probe = "antipodal"
Layout = Literal["paper", "axes", "dense", "auto"]
#: Where the small LPME spheres go: Algorithm 1's ``k + 2`` (``"paper"``), ``o`` and ``o +- z_j`` for every
#: axis (``"axes"``), those plus four diagonal spheres per pair of axes (``"dense"``), or ``"auto"``:
#: ``"dense"`` for ``k = 2`` and ``"axes"`` otherwise.
LAYOUTS: tuple[str, ...] = ("paper", "axes", "dense", "auto")
#: `qpme`'s layout. Measured on the benchmark's 100 metrics per k (exact oracle, eps = 1e-2): "paper" had
#: mean errors a / B of 0.019 / 0.061 at k = 2 with p90 0.045 / 0.19; "dense" cut them to 0.005 / 0.019
#: (p90 0.010 / 0.039) for 91 instead of 51 answers. For k = 3..5 "axes" halved both errors.
DEFAULT_LAYOUT: Layout = "auto"
#: Relative eigenvalue of the normal equations below which the system has no unique solution direction.
_RANK_TOL = 1e-12
#: Tikhonov weight of `reconstruct_lstsq` relative to the squared residual; measured over 1, 3, 10, 30 at
#: noise levels 0, 1e-4, 1e-3: 10 cut the mean errors under noise most at little noise-free cost.
DEFAULT_RIDGE = 10.0
#: Weight of the ``||B||_F^2`` tie-break in `reconstruct_signed` relative to the residual: small enough to
#: leave any slope-determined curvature alone, large enough to pick the least curved of several exact fits.
_CURVATURE_TIEBREAK = 1e-8
#: Weight of the ``sum(s) = 1`` row in `reconstruct_signed`'s non-negative least squares, relative to the
#: largest entry of the other rows.
_SUM_WEIGHT = 1e4
#: Slopes within ``_COLLINEAR_FACTOR * sqrt(k) * epsilon`` radians of one line count as collinear (LPME
#: places each slope within about ``sqrt(k) * epsilon / 2`` of the truth), but never beyond
#: ``_MAX_COLLINEAR_SPREAD``: with a coarse ``epsilon`` a curved metric's slopes also fit in a wide cone, and
#: its full fit orders the sphere better than a metric of one direction (measured at epsilon 0.1 and 0.2).
_COLLINEAR_FACTOR = 2.0
_MAX_COLLINEAR_SPREAD = 0.05
#: Singular values of the slope equations below this share of the largest leave a direction of ``(d, B)``
#: open: consistent slopes of metrics that pin every coefficient stayed above 2e-3 (k = 2..5, 40 random
#: metrics each), slopes of a target metric peaking on an axis through ``o`` fell below 4e-4.
_WEAK_RATIO = 1e-3
#: A further sphere whose predicted slopes differ by less than this (relative) would not help.
_MIN_INFORMATION = 1e-2
#: A pivot-ratio denominator smaller than this cannot be divided by (closed form).
_MIN_DENOMINATOR = 1e-12


def default_inner_radius(sphere: Sphere) -> float:
    """The default ``varrho``: ``DEFAULT_INNER_RATIO * rho``."""
    return DEFAULT_INNER_RATIO * sphere.radius


@dataclass(frozen=True, eq=False)
class ShiftedQuadratic:
    """The oracle's utility up to a constant: ``phi(s) ~ <d, s - o> + 1/2 (s - o)^T B (s - o)``.

    ``d`` has shape ``(n_classes,)``, ``B`` ``(n_classes, n_classes)`` (symmetric, not projected, not
    required NSD); both share one positive scale with ``||d||^2 + ||B||_F^2 = 1``. ``o`` is the centre of
    the sphere the elicitation ran on. ``pivot`` is the coordinate the run chose as reference (centre of the
    ``-z`` sphere and the closed form's divisor).
    """

    d: FloatArray
    B: FloatArray
    pivot: int

    def __post_init__(self) -> None:
        d = np.array(self.d, dtype=np.float64)
        B = np.array(self.B, dtype=np.float64)
        if d.ndim != 1 or B.shape != (d.shape[0], d.shape[0]):
            raise InvalidConfigError(f"d must be (k,) and B (k, k), got {d.shape} and {B.shape}")
        if not (np.all(np.isfinite(d)) and np.all(np.isfinite(B))):
            raise NumericalError("the reconstructed metric is not finite")
        B = (B + B.T) / 2.0
        scale = float(np.sqrt(d @ d + np.sum(B * B)))
        if scale == 0.0:
            raise NumericalError("the reconstructed metric is zero")
        d, B = d / scale, B / scale
        d.setflags(write=False)
        B.setflags(write=False)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "B", B)
        object.__setattr__(self, "pivot", int(self.pivot))

    def gradient(self, offset: FloatArray) -> FloatArray:
        """``d + B (s - o)`` for ``offset = s - o``."""
        result: FloatArray = self.d + self.B @ offset
        return result


def _validate_sphere(sphere: object) -> Sphere:
    if not isinstance(sphere, Sphere):
        raise InvalidConfigError(f"sphere must be a Sphere, got {type(sphere).__name__}")
    return sphere


def _resolve_inner_radius(sphere: Sphere, inner_radius: float | None) -> float:
    if inner_radius is None:
        return default_inner_radius(sphere)
    return validate_inner_radius(sphere, inner_radius)


def qpme_sphere_layout(n_classes: int, layout: str) -> str:
    """The concrete layout (``"paper"``, ``"axes"`` or ``"dense"``) that ``layout`` means for ``k`` classes.

    Raises
    ------
    InvalidConfigError
        If ``layout`` is not one of `LAYOUTS`.
    """
    if layout not in LAYOUTS:
        raise InvalidConfigError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if layout == "auto":
        return "dense" if n_classes == 2 else "axes"
    return layout


def _layout_runs(n_classes: int, layout: str) -> int:
    """Number of LPME runs of a layout (`qpme_sphere_layout` resolved)."""
    if layout == "paper":
        return n_classes + 2 + (1 if n_classes == 2 else 0)
    runs = 2 * n_classes + 1
    if layout == "dense":
        runs += 2 * n_classes * (n_classes - 1)
    return runs


def qpme_max_queries(
    n_classes: int,
    epsilon: float,
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    probe: Probe = DEFAULT_PROBE,
    layout: str = DEFAULT_LAYOUT,
    robust: Robust = "none",
    resolve_degenerate: bool = False,
) -> int:
    """Upper bound on the queries of `qpme` / `shifted_quadratic`: ``2 k`` trivial + the LPME runs.

    With ``robust`` other than ``"none"`` each trivial query may be asked three times and every LPME run
    has the robust bound of `elicitation.lpme.lpme_max_queries`.

    ``"paper"``: ``k + 2`` LPME runs, plus one for ``k = 2`` (a second ``-z`` sphere); ``"axes"``:
    ``2 k + 1``; ``"dense"``: ``2 k + 1 + 2 k (k - 1)``. The default is `qpme`'s layout. With
    ``resolve_degenerate`` add up to ``k`` LPME runs on further spheres (asked only when the slopes leave
    the metric open), or instead the `line_peak` questions, fewer than one LPME run's.
    """
    runs = _layout_runs(n_classes, qpme_sphere_layout(n_classes, layout))
    asks = 1 if robust == "none" else 3
    trivial = 2 * n_classes * asks
    if resolve_degenerate:
        # The line search and the extra spheres exclude each other; count the dearer.
        runs += _extra_runs(n_classes)
    return trivial + runs * lpme_max_queries(n_classes, epsilon, cycles, early_stop, probe, robust)


def shifted_quadratic(
    sphere: Sphere,
    *,
    epsilon: float = DEFAULT_TOLERANCE,
    inner_radius: float | None = None,
    reconstruction: Reconstruction = "lstsq",
    search: str = "qpme",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    probe: Probe = DEFAULT_PROBE,
    layout: Layout = "paper",
    robust: Robust = "none",
    embed: Embedding = plain_rates,
    resolve_degenerate: bool = False,
) -> Elicitor[Elicitation[ShiftedQuadratic]]:
    """Elicit the oracle's metric around ``o = sphere.center`` as ``(d, B)`` (Algorithm 1, lines 1-5).

    Parameters
    ----------
    sphere : Sphere
        Query sphere ``S`` (centre ``o``, radius ``rho``); every query lies inside it.
    epsilon : float
        LPME binary-search tolerance, in ``(0, pi/2)``.
    inner_radius : float, optional
        ``varrho`` in ``(0, rho)``; default ``DEFAULT_INNER_RATIO * rho``.
    reconstruction : {"signed", "lstsq", "closed_form"}
        Least squares whose gradients point along the slopes (`reconstruct_signed`), least squares over
        the slopes' lines only (`reconstruct_lstsq`, the default here for the callers built on it), or
        the paper's closed form (Equation 8) pivoting on one coordinate.
    search : str
        Prefix of every query's ``search`` label (fair QPME passes its own).
    cycles, early_stop, probe : int, bool, str
        Passed to every LPME run (see `elicitation.lpme.lpme`).
    layout : {"paper", "axes", "dense", "auto"}
        Which small spheres get an LPME run (see `LAYOUTS`); default Algorithm 1's ``k + 2``, which fair
        QPME and the variants build on. `qpme` uses `DEFAULT_LAYOUT`.
    robust : {"none", "repeat", "noisy_bisection"}
        Answer robustness (see `elicitation.lpme.lpme`); default ``"none"``, the paper's single asks.
        Passed to every LPME run; the trivial queries use the majority of three in either robust mode.
    embed : Embedding
        Turns each compared rate into the query's array (see `elicitation.lpme.lpme`); fair QPME passes
        its fairness-profile lift.
    resolve_degenerate : bool
        Go on where Algorithm 1 stops or guesses: when no trivial query finds a slope at ``o`` (the metric
        may peak near ``o``), and when all slopes lie on one line, where `line_peak` asks where along it
        the metric peaks (an extension of the paper). Default ``False``: the paper's Algorithm 1.

    Yields
    ------
    Query
        ``kind="pivot"`` trivial queries, then the LPME queries of the ``k + 2`` runs, labelled
        ``{search}/o/lpme``, ``{search}/z{j}/lpme`` and ``{search}/-z{p}/lpme`` (1-based ``j``, ``p``),
        then those of the layout's further spheres: ``{search}/-z{j}/lpme`` and, for ``"dense"``,
        ``{search}/y{i}{s}{j}{t}/lpme`` at ``o + (rho - varrho)(s alpha_i + t alpha_j) / sqrt(2)``.

    Receives
    --------
    bool
        ``True`` when ``first`` is preferred.

    Returns
    -------
    Elicitor of Elicitation[ShiftedQuadratic]
        ``metric`` holds ``d``, ``B`` and ``pivot``; ``details`` the slopes (``(runs, k)``), the small
        spheres' centres, the reconstruction used and its residual.

    Raises
    ------
    InvalidConfigError
        On a bad sphere, ``epsilon``, ``inner_radius``, ``reconstruction`` or ``layout`` (raised eagerly).
    DegenerateMetricError
        (while running, only without ``resolve_degenerate``) if no trivial query shows a non-zero
        gradient at ``o``.
    NumericalError
        (while running) if the slopes do not determine a finite metric.

    Notes
    -----
    At most ``qpme_max_queries(k, epsilon, cycles, early_stop)`` queries.
    """
    sphere = _validate_sphere(sphere)
    eps = validate_epsilon(epsilon)
    varrho = _resolve_inner_radius(sphere, inner_radius)
    if reconstruction not in RECONSTRUCTIONS:
        raise InvalidConfigError(f"reconstruction must be one of {RECONSTRUCTIONS}, got {reconstruction!r}")
    if isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 1:
        raise InvalidConfigError(f"cycles must be an integer >= 1, got {cycles!r}")
    probe = validate_probe(probe)
    robust = validate_robust(robust, probe)
    embed = validate_embed(embed)
    concrete = qpme_sphere_layout(sphere.n_classes, layout)
    steps = _shifted_steps(
        sphere,
        eps,
        varrho,
        reconstruction,
        search,
        cycles,
        bool(early_stop),
        probe,
        concrete,
        robust,
        embed,
        bool(resolve_degenerate),
    )
    return Elicitor(
        _informative(steps) if resolve_degenerate else steps,
        name=search,
        max_queries=qpme_max_queries(
            sphere.n_classes, eps, cycles, bool(early_stop), probe, concrete, robust, bool(resolve_degenerate)
        ),
    )


def _informative(
    steps: Generator[Query, bool, Elicitation[ShiftedQuadratic]],
) -> Generator[Query, bool, Elicitation[ShiftedQuadratic]]:
    """``steps``, refusing to return a metric when every answer chose the same side.

    No metric answers all of QPME's questions alike (each LPME bisection needs both answers; over many
    metrics, exact and degenerate, the rarer answer was never below 1.8 %), so a log of one repeated answer
    says nothing about the person's metric, only about where they clicked.
    """
    seen: set[bool] = set()
    try:
        query = next(steps)
        while True:
            try:
                answer = yield query
            except ImperceptibleError as refused:
                # A search step the display cannot show: the search inside ends it (`ask_step`).
                query = steps.throw(refused)
                continue
            seen.add(answer is True)
            query = steps.send(answer)
    except StopIteration as stop:
        if len(seen) < 2:
            side = "first" if True in seen else "second"
            raise NumericalError(
                f"every answer preferred the {side} rate shown, which no metric does over these questions: "
                "the answers carry no information about the metric"
            ) from None
        result: Elicitation[ShiftedQuadratic] = stop.value
        return result


def lpme_slope(
    sphere: Sphere,
    epsilon: float,
    *,
    cycles: int,
    early_stop: bool,
    probe: Probe,
    search: str,
    robust: Robust = "none",
    embed: Embedding = plain_rates,
) -> Generator[Query, bool, tuple[FloatArray, int]]:
    """One LPME run on ``sphere``: the slope it measures (its unit ``a``) and how many queries it asked.

    Shared by `shifted_quadratic` and `elicitation.variants.diagonal_qpme`, so both run and count LPME alike.
    """
    result = yield from lpme(
        sphere,
        epsilon,
        cycles=cycles,
        early_stop=early_stop,
        probe=probe,
        search=search,
        robust=robust,
        embed=embed,
    )
    return np.array(result.metric.a), int(result.num_queries)


def _shifted_steps(
    sphere: Sphere,
    epsilon: float,
    varrho: float,
    reconstruction: str,
    search: str,
    cycles: int,
    early_stop: bool,
    probe: Probe,
    layout: str = "paper",
    robust: Robust = "none",
    embed: Embedding = plain_rates,
    resolve_degenerate: bool = False,
) -> Generator[Query, bool, Elicitation[ShiftedQuadratic]]:
    k = sphere.n_classes
    o = sphere.center
    centre = o.tolist()
    asked = 0

    # Trivial queries: does moving varrho along some axis change the metric? (Section 3, Appendix C.)
    moving: tuple[int, int] | None = None
    for sign in (1, -1):
        for i in range(k):
            moved = list(centre)
            moved[i] += sign * varrho
            query = Query(embed(moved), embed(centre), search, "pivot", i, asked)
            preferred, count = yield from robust_ask(query, robust)
            asked += count
            if preferred:
                moving = (i, sign)
                break
        if moving is not None:
            break
    if moving is None and not resolve_degenerate:
        raise DegenerateMetricError(
            f"the metric's gradient at the sphere centre is zero at resolution inner_radius={varrho:g}: "
            "no rate within that distance along any axis is preferred to the centre, so QPME has no "
            "direction to start from (Assumption 2)",
            queries_asked=asked,
        )

    spheres = [inner_sphere(sphere, varrho)] + [inner_sphere(sphere, varrho, axis=j) for j in range(k)]
    labels = ["o"] + [f"z{j + 1}" for j in range(k)]
    slopes: list[FloatArray] = []

    def slope_run(small: Sphere, label: str) -> Generator[Query, bool, int]:
        """One LPME run on ``small``; appends its slope and returns how many queries it asked."""
        slope, count = yield from lpme_slope(
            small,
            epsilon,
            cycles=cycles,
            early_stop=early_stop,
            probe=probe,
            search=f"{search}/{label}/lpme",
            robust=robust,
            embed=embed,
        )
        slopes.append(slope)
        return count

    for small, label in zip(spheres, labels, strict=True):
        asked += yield from slope_run(small, label)

    # The most reliable pivot: its slope entries stay farthest from zero in every run so far.
    pivot = int(np.argmax(np.min(np.abs(np.array(slopes)), axis=0)))
    # For k = 2 the paper's k + 2 runs give exactly as many equations as unknowns, so one unlucky slope
    # leaves the system singular; a run at the other -z makes it overdetermined (one more LPME run).
    negative_axes = [pivot] + ([1 - pivot] if k == 2 else [])
    for axis in negative_axes:
        negative = inner_sphere(sphere, varrho, axis=axis, sign=-1)
        asked += yield from slope_run(negative, f"-z{axis + 1}")
        spheres.append(negative)

    for label, small in _extra_spheres(sphere, varrho, layout, negative_axes):
        asked += yield from slope_run(small, label)
        spheres.append(small)

    line = collinear_direction(np.array(slopes), epsilon) if resolve_degenerate else None
    if resolve_degenerate and line is None:
        # Slopes can leave part of (d, B) open (a target metric peaking on an axis through o, or at o):
        # ask LPME at the off-axis spheres whose slopes the open part would change most.
        at = varrho if probe == "boundary" else 0.0
        for extra in range(_extra_runs(k)):
            offsets = np.array([s.center for s in spheres]) - o
            chosen = _most_informative_sphere(sphere, varrho, np.array(slopes), offsets, at)
            if chosen is None:
                break
            label, small = chosen
            asked += yield from slope_run(small, f"{label}+{extra + 1}")
            spheres.append(small)
    f = np.array(slopes)
    centers = np.array([s.center for s in spheres])
    if line is not None:
        peak, count = yield from line_peak(sphere, line, epsilon, search=search, robust=robust, embed=embed)
        asked += count
        d, B = line_metric(line, peak, sphere.radius)
        residual = 0.0
    elif reconstruction == "closed_form":
        d, B = reconstruct_closed_form(f[: k + 2], sphere.radius - varrho, pivot)
        residual = float("nan")
    else:
        # Boundary probes find the boundary maximum, where the gradient is parallel to f (KKT); antipodal
        # probes read the gradient at the sphere's centre itself.
        solver = reconstruct_signed if reconstruction == "signed" else reconstruct_lstsq
        d, B, residual = solver(f, centers - o, varrho if probe == "boundary" else 0.0)
    f.setflags(write=False)
    centers.setflags(write=False)
    return Elicitation(
        metric=ShiftedQuadratic(d, B, pivot),
        num_queries=asked,
        details={
            "slopes": f,
            "centers": centers,
            "pivot": pivot,
            "moving_axis": moving,
            "inner_radius": varrho,
            "reconstruction": reconstruction,
            "residual": residual,
            "probe": probe,
            "layout": layout,
            "line": line,
            "peak": peak if line is not None else None,
        },
    )


def _extra_spheres(sphere: Sphere, varrho: float, layout: str, done: list[int]) -> list[tuple[str, Sphere]]:
    """The spheres a layout adds to Algorithm 1's: ``-z_j`` for the axes not in ``done``, then diagonals."""
    out: list[tuple[str, Sphere]] = []
    if layout == "paper":
        return out
    k = sphere.n_classes
    out += [(f"-z{j + 1}", inner_sphere(sphere, varrho, axis=j, sign=-1)) for j in range(k) if j not in done]
    if layout == "dense":
        # Each diagonal sphere touches S from inside, like the z_j: its centre is rho - varrho from o.
        reach = (sphere.radius - varrho) / np.sqrt(2.0)
        for i in range(k):
            for j in range(i + 1, k):
                for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                    center = np.array(sphere.center, dtype=np.float64)
                    center[i] += si * reach
                    center[j] += sj * reach
                    label = f"y{i + 1}{'+' if si > 0 else '-'}{j + 1}{'+' if sj > 0 else '-'}"
                    out.append((label, Sphere(center, varrho)))
    return out


def _extra_runs(n_classes: int) -> int:
    """Most further LPME runs `_shifted_steps` adds when the slopes leave the metric open."""
    return n_classes


def _weak_subspace(slopes: FloatArray, offsets: FloatArray, at: float) -> FloatArray:
    """Unit ``x = (d, B)`` directions the slope equations barely constrain, as columns (``(q, m)``).

    One direction (the metric itself) is always there; more mean the slopes leave the metric open.
    """
    f = np.asarray(slopes, dtype=np.float64)
    k = f.shape[1]
    maps = _gradient_maps(offsets + at * f)
    projections = np.eye(k) - f[:, :, np.newaxis] * f[:, np.newaxis, :]
    A = np.matmul(projections, maps).reshape(-1, maps.shape[2])
    _, singular, vt = np.linalg.svd(A)
    weak = int(np.sum(singular < _WEAK_RATIO * singular[0])) + (vt.shape[0] - singular.shape[0])
    basis: FloatArray = vt[vt.shape[0] - max(weak, 1) :].T
    return basis


def _most_informative_sphere(
    sphere: Sphere, varrho: float, slopes: FloatArray, offsets: FloatArray, at: float
) -> tuple[str, Sphere] | None:
    """The off-axis small sphere whose slope best tells the metrics the slopes so far allow apart.

    Candidates sit at ``o + (rho - varrho)(s alpha_i + t alpha_j) / sqrt(2)`` (the dense layout's spheres)
    and are skipped once used. A candidate helps when the open metrics' gradients there point different
    ways: the score is the second singular value of their gradients, relative to the first. ``None`` when
    the slopes already determine the metric, or no candidate would help.
    """
    basis = _weak_subspace(slopes, offsets, at)
    if basis.shape[1] < 2:
        return None
    k = sphere.n_classes
    used = {tuple(np.round(offset, 12)) for offset in offsets}
    best: tuple[float, str, Sphere] | None = None
    for label, small in _extra_spheres(sphere, varrho, "dense", list(range(k))):
        offset = small.center - sphere.center
        if tuple(np.round(offset, 12)) in used:
            continue
        singular = np.linalg.svd(_gradient_map(offset) @ basis, compute_uv=False)
        score = float(singular[1] / singular[0]) if singular[0] > 0.0 else 0.0
        if score > _MIN_INFORMATION and (best is None or score > best[0]):
            best = (score, label, small)
    return None if best is None else (best[1], best[2])


def collinear_direction(slopes: FloatArray, epsilon: float) -> FloatArray | None:
    """The common line of all slopes when they lie on one (up to LPME's tolerance), else ``None``.

    Every slope of a metric whose curvature lies along its gradient (``B = -beta u u^T``, ``d`` along
    ``u``; the paper's Example 2 for ``k = 2``, and any linear metric) is ``+-u``: slopes then say nothing
    about where along ``u`` the optimum lies, and `line_peak` must ask.
    """
    f = np.asarray(slopes, dtype=np.float64)
    _, vectors = np.linalg.eigh(f.T @ f)
    direction: FloatArray = vectors[:, -1]
    k = f.shape[1]
    spread = min(_COLLINEAR_FACTOR * np.sqrt(k) * epsilon, _MAX_COLLINEAR_SPREAD)
    if float(np.min(np.abs(f @ direction))) < np.cos(spread):
        return None
    # Orient the line along the majority of the slopes (only a display convention: the search is symmetric).
    if float(np.sum(f @ direction)) < 0.0:
        direction = -direction
    return direction


def line_search_steps(epsilon: float) -> int:
    """Halvings of `line_peak`: the peak is placed within ``epsilon * rho / 2`` of its true position."""
    return int(np.ceil(np.log2(2.0 / epsilon))) + 1


def line_peak(
    sphere: Sphere,
    direction: FloatArray,
    epsilon: float,
    *,
    search: str,
    robust: Robust = "none",
    embed: Embedding = plain_rates,
) -> Generator[Query, bool, tuple[float, int]]:
    """Where along ``o + t u`` (``|t| <= rho``) the metric peaks, by bisection; returns ``(t, queries)``.

    An extension of the paper's Algorithm 1 for metrics whose slopes are all collinear
    (`collinear_direction`). Along the line the metric is a concave quadratic in ``t`` (or linear), so
    the end of ``[lo, hi]`` it prefers says which half holds the peak: comparing ``o + hi u`` with
    ``o + lo u`` halves the interval with one question, and the two rates are as far apart as the
    interval allows (the largest value gap, the least noise-prone comparison). When every answer favours
    one end, the peak is at that end of the sphere (``t = +-rho``): the metric is monotone along the line.
    """
    o = sphere.center
    rho = sphere.radius
    lo, hi = -rho, rho
    asked = 0
    for step in range(line_search_steps(epsilon)):
        upper = embed((o + hi * direction).tolist())
        lower = embed((o + lo * direction).tolist())
        query = Query(upper, lower, f"{search}/line", "line", None, step)
        preferred, count = yield from robust_step(query, robust)
        asked += count
        if preferred is None:
            # The display cannot show the two ends apart: the peak is as fine as it can be shown.
            return (lo + hi) / 2.0, asked
        middle = (lo + hi) / 2.0
        if preferred:
            lo = middle
        else:
            hi = middle
    if hi == rho or lo == -rho:
        return (rho if hi == rho else -rho), asked
    return (lo + hi) / 2.0, asked


def line_metric(direction: FloatArray, peak: float, radius: float) -> tuple[FloatArray, FloatArray]:
    """``(d, B)`` of ``-(<u, s - o> - t)^2`` for a peak ``t`` inside the sphere, ``<+-u, s - o>`` at its edge.

    Any metric that depends on ``<u, s - o>`` alone and peaks at ``t`` orders the sphere the same way, so
    this is the metric the collinear slopes and the line search determine.
    """
    u = np.asarray(direction, dtype=np.float64)
    if abs(peak) >= radius:
        return np.sign(peak) * u, np.zeros((u.shape[0], u.shape[0]))
    return 2.0 * peak * u, -2.0 * np.outer(u, u)


#: Flat indices into an array.
Positions = npt.NDArray[np.intp]


@functools.cache
def _map_layout(k: int) -> tuple[int, Positions, Positions, Positions, Positions]:
    """Where `_gradient_maps` writes in each flattened ``(k, q)`` matrix of ``k`` classes (once per ``k``).

    Returns ``q``, the positions of the ones (``d``), of the offsets (``diag B``), of the scaled pair
    offsets (``sqrt(2) * upper B``, pairs row by row: ``(0, 1), (0, 2), .., (1, 2), ..``) and which offset
    entry each of those takes.
    """
    rows, cols = np.triu_indices(k, 1)
    q = 2 * k + rows.shape[0]
    diagonal = np.arange(k)
    pair_columns = 2 * k + np.arange(rows.shape[0])
    # Pair (i, j) contributes offset_j / sqrt(2) to row i and offset_i / sqrt(2) to row j.
    pair_positions = np.concatenate((rows * q + pair_columns, cols * q + pair_columns))
    sources = np.concatenate((cols, rows))
    return q, diagonal * q + diagonal, diagonal * q + k + diagonal, pair_positions, sources


def _gradient_maps(offsets: FloatArray) -> FloatArray:
    """Matrices ``L[n]`` with ``L[n] @ x = d + B offsets[n]`` for ``x = (d, diag B, sqrt(2) * upper B)``."""
    n, k = offsets.shape
    q, ones, diagonal, pairs, sources = _map_layout(k)
    L = np.zeros((n, k * q))
    L[:, ones] = 1.0
    L[:, diagonal] = offsets
    L[:, pairs] = (offsets / np.sqrt(2.0))[:, sources]
    maps: FloatArray = L.reshape(n, k, q)
    return maps


def _gradient_map(offset: FloatArray) -> FloatArray:
    """`_gradient_maps` of one offset."""
    single: FloatArray = _gradient_maps(offset[np.newaxis])[0]
    return single


def _pack(d: FloatArray, B: FloatArray) -> FloatArray:
    """The inverse of `_unpack`: ``x = (d, diag B, sqrt(2) * upper B)``."""
    rows, cols = np.triu_indices(d.shape[0], 1)
    packed: FloatArray = np.concatenate((d, np.diag(B), np.sqrt(2.0) * B[rows, cols]))
    return packed


def _unpack(x: FloatArray, k: int) -> tuple[FloatArray, FloatArray]:
    d = x[:k].copy()
    B = np.diag(x[k : 2 * k])
    column = 2 * k
    for i in range(k):
        for j in range(i + 1, k):
            B[i, j] = B[j, i] = x[column] / np.sqrt(2.0)
            column += 1
    return d, B


def reconstruct_lstsq(
    slopes: FloatArray,
    offsets: FloatArray,
    inner_radius: float,
    ridge: float = DEFAULT_RIDGE,
    *,
    nsd: bool = False,
) -> tuple[FloatArray, FloatArray, float]:
    """Least-squares ``(d, B)`` from unit slopes measured on spheres at ``o + offsets``.

    Parameters
    ----------
    slopes : ndarray, shape (n_runs, n_classes)
        Unit LPME slopes ``f``.
    offsets : ndarray, shape (n_runs, n_classes)
        Centre of each run's sphere minus ``o``.
    inner_radius : float
        Slope ``f`` is taken as the gradient direction at ``offset + inner_radius * f``: pass the spheres'
        radius for boundary probes (KKT at the boundary maximum) and ``0`` for antipodal probes or the
        paper's local-linear model (gradient at the centre).
    ridge : float
        Tikhonov weight on ``B`` relative to the unregularised residual: minimise
        ``||A x||^2 + ridge * r^2 ||B||_F^2`` over ``||x|| = 1``, where ``r`` is the smallest residual
        ``min ||A x||``. Consistent (noise-free) slopes give ``r ~ 0`` and no shrinkage; inconsistent ones
        shrink only the directions the slopes barely determine (chiefly the curvature along ``d``).
    nsd : bool
        Constrain ``B`` to be negative semi-definite (active set: every direction with positive curvature
        becomes a null direction, ``B v = 0``, and the problem is re-solved). The slopes barely determine
        the curvature along the gradient, and noise can turn it strongly positive, which an after-the-fact
        projection cannot repair because ``d`` was scaled down to compensate.

    Returns
    -------
    d, B, residual
        ``||d||^2 + ||B||_F^2 = 1`` with ``B`` symmetric and the sign fixed so the gradients point along the
        slopes; ``residual`` is ``r`` (0 for consistent slopes).

    Raises
    ------
    NumericalError
        If the equations leave more than one direction free or the estimate is not finite.
    """
    f = np.asarray(slopes, dtype=np.float64)
    k = f.shape[1]
    maps = _gradient_maps(np.asarray(offsets, dtype=np.float64) + inner_radius * f)
    # Each run's equations: the gradient d + B r has no component across its slope, (I - f f^T) L x = 0.
    projections = np.eye(k) - f[:, :, np.newaxis] * f[:, np.newaxis, :]
    A = np.matmul(projections, maps).reshape(-1, maps.shape[2])
    if not np.all(np.isfinite(A)):
        raise NumericalError("the LPME slopes are not finite")
    normal = A.T @ A
    values = np.linalg.eigvalsh(normal)
    if values[1] <= _RANK_TOL * max(float(values[-1]), 1.0):
        raise NumericalError("the slope equations do not determine (d, B) up to scale")
    smallest = max(float(values[0]), 0.0)
    penalty = np.diag(np.concatenate((np.zeros(k), np.ones(normal.shape[0] - k))))
    objective = normal + ridge * smallest * penalty

    def solve(basis: FloatArray) -> FloatArray:
        _, vectors = np.linalg.eigh(basis.T @ objective @ basis)
        x: FloatArray = basis @ vectors[:, 0]
        # Fix the sign: the gradients must point along the elicited slopes, not against them.
        if sum(float(slope @ (L @ x)) for slope, L in zip(f, maps, strict=True)) < 0.0:
            x = -x
        return x

    x = solve(np.eye(normal.shape[0]))
    if nsd:
        x = _impose_nsd(x, k, solve)
    d, B = _unpack(x, k)
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(B))):
        raise NumericalError("the least-squares reconstruction is not finite")
    return d, B, float(np.sqrt(smallest))


def reconstruct_signed(
    slopes: FloatArray,
    offsets: FloatArray,
    inner_radius: float,
    ridge: float = DEFAULT_RIDGE,
    *,
    nsd: bool = False,
) -> tuple[FloatArray, FloatArray, float]:
    """Least-squares ``(d, B)`` whose gradients point *along* the measured slopes, not merely on their lines.

    Each run says "the gradient ``g_n`` at its sphere is ``s_n f_n`` for some ``s_n >= 0``": LPME reports a
    direction, which way included, so a gradient against the slope contradicts it as much as one across it.
    The unknowns are ``x = (d, B)`` (as in `reconstruct_lstsq`) and the magnitudes ``s``; minimising
    ``sum_n ||L_n x - s_n f_n||^2`` over ``x`` for fixed ``s`` leaves a quadratic form in ``s``, minimised
    over ``s >= 0, sum(s) = 1`` (non-negative least squares). Compared with `reconstruct_lstsq`, whose
    equations ``(I - f f^T) g = 0`` also accept ``g = -c f``, this cannot reverse a gradient, and among
    solutions that explain the slopes equally well it takes the least curved one (a small ``||B||`` penalty
    breaks the tie), so a linear metric comes back linear. Where the slopes determine the metric and
    `reconstruct_lstsq`'s estimate already points every gradient along its slope, that estimate is
    returned unchanged (its ``||x|| = 1`` scaling weighs noisy slopes better than ``sum(s) = 1``).

    Parameters
    ----------
    slopes, offsets, inner_radius, ridge, nsd
        As `reconstruct_lstsq`.

    Returns
    -------
    d, B, residual
        ``||d||^2 + ||B||_F^2 = 1``, ``B`` symmetric; ``residual`` is the root of the smallest residual per
        unit ``||x||^2`` (0 for consistent slopes), on the same scale as `reconstruct_lstsq`'s.

    Raises
    ------
    NumericalError
        If the slopes are not finite or no non-zero metric points along them.
    """
    f = np.asarray(slopes, dtype=np.float64)
    n, k = f.shape
    if not np.all(np.isfinite(f)):
        raise NumericalError("the LPME slopes are not finite")
    offsets = np.asarray(offsets, dtype=np.float64)
    maps = _gradient_maps(offsets + inner_radius * f)
    if _weak_subspace(f, offsets, inner_radius).shape[1] == 1:
        # The slopes pin the metric down: the lines' least squares is the estimate unless it reverses a
        # gradient, and then only the signs can decide.
        d, B, residual = reconstruct_lstsq(f, offsets, inner_radius, ridge, nsd=nsd)
        gradients = np.einsum("nkq,q->nk", maps, _pack(d, B))
        if float(np.min(np.sum(gradients * f, axis=1))) >= 0.0:
            return d, B, residual
    L = maps.reshape(n * k, -1)
    q = L.shape[1]
    # F s stacks s_n f_n: column n holds f_n in run n's block.
    F = np.zeros((n * k, n))
    F[np.arange(n * k), np.repeat(np.arange(n), k)] = f.ravel()
    if not (np.all(np.isfinite(L)) and np.all(np.isfinite(F))):
        raise NumericalError("the LPME slopes are not finite")
    curvature = np.diag(np.concatenate((np.zeros(k), np.ones(q - k))))

    weight, x = signed_fit_weight(L, F, curvature, ridge)
    smallest = weight.smallest
    if nsd:
        x = _impose_nsd(x, k, lambda basis: signed_solve(L, F, curvature, basis, weight.value)[0])
    d, B = _unpack(x, k)
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(B))) or float(d @ d + np.sum(B * B)) == 0.0:
        raise NumericalError("no metric's gradients point along the measured slopes")
    return d, B, float(np.sqrt(smallest))


@dataclass(frozen=True)
class SignedWeight:
    """The ``||B||`` penalty weight `signed_fit_weight` chose and the smallest residual it is based on."""

    value: float
    smallest: float


def signed_solve(
    maps: FloatArray, slopes: FloatArray, curvature: FloatArray, basis: FloatArray, weight: float
) -> tuple[FloatArray, float]:
    """Unknowns ``x = basis @ y`` whose gradients ``maps @ x`` best equal ``slopes @ s`` with ``s >= 0``.

    ``maps`` stacks every run's gradient map (rows), ``slopes`` has one column per run holding its unit
    slope in that run's rows (zero elsewhere, so a row without a slope asks the gradient to vanish there),
    ``curvature`` is the penalty's quadratic form on ``x``. Minimising over ``y`` for fixed ``s`` leaves a
    quadratic form in ``s``, minimised over ``s >= 0, sum(s) = 1`` by non-negative least squares. Returns
    ``x`` and the bare residual ``||maps x - slopes s||^2``.
    """
    n = slopes.shape[1]
    LN = maps @ basis
    system = LN.T @ LN + weight * basis.T @ curvature @ basis
    # y = G s minimises the inner problem; every column of G is one run's share.
    G = np.linalg.lstsq(system, LN.T @ slopes, rcond=None)[0]
    misfit = LN @ G - slopes
    penalty = np.sqrt(weight) * (curvature @ basis @ G)
    stacked = np.vstack((misfit, penalty))
    # sum(s) = 1 as a heavily weighted extra row keeps the scale; s >= 0 is the point of the exercise.
    heavy = _SUM_WEIGHT * max(1.0, float(np.max(np.abs(stacked))))
    design = np.vstack((stacked, np.full((1, n), heavy)))
    target = np.zeros(design.shape[0])
    target[-1] = heavy
    s, _ = nnls(design, target)
    x: FloatArray = basis @ (G @ s)
    return x, float(np.sum((misfit @ s) ** 2))


def signed_fit_weight(
    maps: FloatArray, slopes: FloatArray, curvature: FloatArray, ridge: float
) -> tuple[SignedWeight, FloatArray]:
    """`signed_solve` over all ``x``, with the curvature penalty `reconstruct_lstsq` uses.

    A first solve with only the tie-break penalty measures the smallest residual ``r^2`` per unit
    ``||x||^2``; the second weighs the penalty by ``ridge * r^2`` (plus the tie-break), so consistent slopes
    are not shrunk and inconsistent ones shrink only what they barely determine. Returns the weight and
    the second solve's ``x``.

    Raises
    ------
    NumericalError
        If no non-zero ``x`` points its gradients along the slopes.
    """
    identity = np.eye(maps.shape[1])
    x, residual = signed_solve(maps, slopes, curvature, identity, _CURVATURE_TIEBREAK)
    size = float(x @ x)
    if size == 0.0 or not np.isfinite(size):
        raise NumericalError("no metric's gradients point along the measured slopes")
    smallest = residual / size
    weight = SignedWeight(ridge * smallest + _CURVATURE_TIEBREAK, smallest)
    x, _ = signed_solve(maps, slopes, curvature, identity, weight.value)
    return weight, x


def _impose_nsd(x: FloatArray, k: int, solve: Callable[[FloatArray], FloatArray]) -> FloatArray:
    """Re-solve ``x = (d, B)`` with ``B <= 0`` by an active set; ``solve(basis)`` solves within its span.

    An NSD matrix with ``v^T B v = 0`` has ``B v = 0``, so every direction the estimate bends upwards becomes
    a null direction (``k`` linear constraints on ``x``) and the problem is re-solved. Each round removes
    at least one dimension, so ``k`` rounds suffice.
    """
    q = x.shape[0]
    constraints: list[FloatArray] = []
    for _ in range(k):
        eigenvalues, eigenvectors = np.linalg.eigh(_unpack(x, k)[1])
        upward = [eigenvectors[:, i] for i in range(k) if eigenvalues[i] > NSD_ATOL]
        if not upward:
            break
        constraints += [row for v in upward for row in _null_rows(v, k)]
        _, singular, vt = np.linalg.svd(np.array(constraints))
        rank = int(np.sum(singular > _RANK_TOL * max(float(singular[0]), 1.0)))
        if rank >= q - 1:
            break
        x = solve(vt[rank:].T)
    return x


def _null_rows(direction: FloatArray, k: int) -> list[FloatArray]:
    """Rows ``c_i`` with ``c_i @ x = (B v)_i`` for the packed unknowns ``x`` of `_gradient_map`."""
    L = _gradient_map(direction)
    # L @ x = d + B v; dropping the d columns leaves B v.
    L[:, :k] = 0.0
    return list(L)


def reconstruct_closed_form(slopes: FloatArray, offset: float, pivot: int) -> tuple[FloatArray, FloatArray]:
    """The paper's closed form (Appendix C, Equation 8) with pivot coordinate ``p``.

    Parameters
    ----------
    slopes : ndarray, shape (n_classes + 2, n_classes)
        Rows ``f_0`` (at ``o``), ``f_1 .. f_k`` (at ``z_j``) and ``f^-_p`` (at ``o - offset * alpha_p``).
    offset : float
        ``rho - varrho``.
    pivot : int
        ``p``; the paper's ``d_1`` becomes ``d_p``. The paper's second coordinate (index 2 in Equation 8)
        becomes the ``q != p`` whose slope ratio differs most between ``z_p`` and ``-z_p``.

    Returns
    -------
    d, B
        Normalised so that ``||d||^2 + ||B||_F^2 = 1``; ``B`` symmetric (lower triangle mirrored, pivot
        row and column from the run at ``z_p``).

    Raises
    ------
    NumericalError
        If a ratio divides by (nearly) zero.
    """
    f = np.asarray(slopes, dtype=np.float64)
    k = f.shape[1]
    p = pivot
    f0, fz, fminus = f[0], f[1 : k + 1], f[k + 1]
    denominators = np.concatenate(([f0[p]], fz[:, p], [fminus[p]]))
    if np.any(np.abs(denominators) < _MIN_DENOMINATOR):
        raise NumericalError(f"a slope vanishes in the pivot coordinate {p}: the closed form divides by zero")
    F0 = f0 / f0[p]  # F_{i,p,0}
    Fz = fz / fz[:, p : p + 1]  # row j: F_{i,p,j} for all i
    Fminus = fminus / fminus[p]  # F^-_{i,p,p}
    others = [i for i in range(k) if i != p]
    gaps = np.array([Fminus[i] - Fz[p, i] for i in others])
    q = others[int(np.argmax(np.abs(gaps)))]
    gap = Fminus[q] - Fz[p, q]
    if abs(gap) < _MIN_DENOMINATOR:
        raise NumericalError("the slopes at z_p and -z_p coincide: B_pp cannot be determined")
    D = f0[p]  # d_p, on the scale where d = f_0 exactly.
    d = F0 * D
    hB_pp = (Fminus[q] + Fz[p, q] - 2.0 * F0[q]) / gap * D
    # Pivot column from the run at z_p: d_j + h B_jp = F_{j,p,p} (d_p + h B_pp).
    hB_p = Fz[p] * (D + hB_pp) - d
    hB_p[p] = hB_pp
    # Column j from the run at z_j: d_i + h B_ij = F_{i,p,j} (d_p + h B_pj).
    hC = np.empty((k, k))
    for j in range(k):
        hC[:, j] = Fz[j] * (D + hB_p[j]) - d
    hC[:, p] = hB_p
    lower = np.tril(hC)
    hB = lower + np.tril(hC, -1).T
    hB[p, :] = hB[:, p] = hB_p
    B = hB / offset
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(B))):
        raise NumericalError("the closed-form reconstruction is not finite")
    scale = float(np.sqrt(d @ d + np.sum(B * B)))
    if scale == 0.0:
        raise NumericalError("the closed-form reconstruction is zero")
    return d / scale, B / scale


def _project_nsd(B: FloatArray) -> FloatArray:
    """The nearest (Frobenius) negative semi-definite matrix: clip positive eigenvalues to zero."""
    values, vectors = np.linalg.eigh((B + B.T) / 2.0)
    result: FloatArray = (vectors * np.minimum(values, 0.0)) @ vectors.T
    return (result + result.T) / 2.0


def qpme(
    sphere: Sphere,
    epsilon: float = DEFAULT_TOLERANCE,
    *,
    inner_radius: float | None = None,
    reconstruction: Reconstruction = "signed",
    project_nsd: bool = True,
    search: str = "qpme",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    probe: Probe = DEFAULT_PROBE,
    layout: Layout = DEFAULT_LAYOUT,
    robust: Robust = "none",
    resolve_degenerate: bool = True,
) -> Elicitor[Elicitation[QuadraticMetric]]:
    """Elicit a quadratic metric ``<a, r> + 1/2 r^T B r`` with ``||a||^2 + ||B||_F^2 = 1`` (Algorithm 1).

    Parameters
    ----------
    sphere : Sphere
        Query sphere ``S``; every query lies inside it.
    epsilon : float
        LPME binary-search tolerance, in ``(0, pi/2)``.
    inner_radius : float, optional
        ``varrho`` in ``(0, rho)``; default ``DEFAULT_INNER_RATIO * rho``.
    reconstruction : {"lstsq", "closed_form"}
        See `shifted_quadratic`.
    project_nsd : bool
        Use that the family is NSD: the least squares is re-solved with ``B <= 0`` imposed (see
        `reconstruct_lstsq`), then ``B_hat`` is replaced by its nearest NSD matrix (rounding). ``False``
        keeps the raw symmetric estimate and returns a `QuadraticMetric` with ``require_nsd=False``.
    search : str
        Prefix of the queries' ``search`` labels.
    cycles, early_stop, probe : int, bool, str
        Passed to every LPME run.
    layout : {"auto", "paper", "axes", "dense"}
        Where the small spheres go (see `LAYOUTS`, `DEFAULT_LAYOUT`); ``"paper"`` is Algorithm 1's ``k + 2``.
    robust : {"none", "repeat", "noisy_bisection"}
        Answer robustness, see `shifted_quadratic`; default ``"none"`` (the paper).
    resolve_degenerate : bool
        See `shifted_quadratic`; on by default so linear, rank-one and near-``o`` target metrics are
        elicited. ``reconstruction="lstsq", resolve_degenerate=False`` is this function's earlier behaviour
        (sessions recorded with it replay with those arguments).

    Yields
    ------
    Query
        As `shifted_quadratic`.

    Receives
    --------
    bool
        ``True`` when ``first`` is preferred.

    Returns
    -------
    Elicitor of Elicitation[QuadraticMetric]
        ``metric`` is the normalised ``(a_hat, B_hat)`` with ``a_hat = d - B o`` (``d, B`` from the NSD
        constrained solve when ``project_nsd``); ``details`` adds ``shifted`` (the unconstrained
        `ShiftedQuadratic`) to those of `shifted_quadratic`.

    Raises
    ------
    InvalidConfigError
        On bad arguments (eagerly).
    DegenerateMetricError
        (while running, only without ``resolve_degenerate``) if the gradient at ``o`` is zero.
    NumericalError
        (while running) if no finite metric can be reconstructed, or every answer chose the same side.

    Notes
    -----
    At most ``qpme_max_queries(k, epsilon, cycles, early_stop)`` queries, ``O(k^2 log(1/epsilon))``.
    """
    inner = shifted_quadratic(
        sphere,
        epsilon=epsilon,
        inner_radius=inner_radius,
        reconstruction=reconstruction,
        search=search,
        cycles=cycles,
        early_stop=early_stop,
        probe=probe,
        layout=layout,
        robust=robust,
        resolve_degenerate=resolve_degenerate,
    )
    return Elicitor(_qpme_steps(inner, sphere, bool(project_nsd)), name=search, max_queries=inner.max_queries)


def _qpme_steps(
    inner: Elicitor[Elicitation[ShiftedQuadratic]], sphere: Sphere, project_nsd: bool
) -> Generator[Query, bool, Elicitation[QuadraticMetric]]:
    shifted = yield from inner
    d, B = shifted.metric.d, shifted.metric.B
    details = shifted.details
    if project_nsd and details["line"] is None and details["reconstruction"] != "closed_form":
        # The family is NSD: impose it inside the least squares, where it also corrects d's scale.
        at = details["inner_radius"] if details["probe"] == "boundary" else 0.0
        solver = reconstruct_signed if details["reconstruction"] == "signed" else reconstruct_lstsq
        d, B, _ = solver(details["slopes"], details["centers"] - sphere.center, at, nsd=True)
    a = d - B @ sphere.center
    if project_nsd:
        B = _project_nsd(B)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(B))):
        raise NumericalError("the quadratic estimate is not finite")
    if float(np.sqrt(a @ a + np.sum(B * B))) == 0.0:
        raise NumericalError("the quadratic estimate is zero")
    metric = QuadraticMetric(a, B, require_nsd=project_nsd)
    return Elicitation(
        metric=metric,
        num_queries=shifted.num_queries,
        details={**shifted.details, "shifted": shifted.metric, "projected_nsd": project_nsd},
    )
