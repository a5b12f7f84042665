"""LPME: elicit a linear metric's direction by coordinate-wise binary search on a sphere (Algorithm 2).

Theory of operation
-------------------
By Lemma 1 the rate a linear metric ``<a, r>`` prefers most on a sphere ``S`` is ``o + rho * a``, so
finding ``a`` means finding the best boundary point ``mu(theta)`` (see `elicitation.geometry`).

1. **Orthant discovery** (lines 2-6): ``k`` queries compare the optimal rates of ``(1, .., 1)/sqrt(k)``
   and of the same vector with coordinate ``i`` negated; the answer is ``a_i > 0``. Afterwards we search
   ``|a|`` in the positive orthant, where every angle lies in ``[0, pi/2]``, and restore the signs.
2. **Cyclic coordinate search** (lines 8-18): one angle at a time, the others fixed. Along one angle the
   metric is ``A cos(theta_j - beta) + const`` with ``beta`` in ``[0, pi/2]``: unimodal, so
   *ShrinkInterval* can halve the bracket ``[theta_a, theta_b]`` with the quarter points
   ``theta_c < theta_d < theta_e``. The paper asks ``(a, c)``, ``(c, d)``, ``(d, e)`` in turn; for a
   unimodal function ``a > c`` implies ``c > d`` and both lead to ``[a, d]``, so the ``(a, c)`` answer can
   never change the outcome and we skip it: ``c > d`` gives ``[a, d]``, else ``d > e`` gives ``[c, e]``,
   else ``[d, b]`` (the peak is right of ``d``; the paper keeps ``[c, b]``, which does not halve).
   Every step therefore halves the bracket with one or two queries (the paper's bound is three).
3. **Angle order and early stopping.** In these coordinates the best ``theta_j`` given the others depends
   only on the later angles ``theta_{j+1..}``, so sweeping from the last angle to the first solves the
   problem in one cycle up to the search tolerance (the paper sweeps forwards, which needs several cycles).
   For ``k = 2`` there is a single angle and one cycle is exact. For ``k > 2`` we keep cycling (at most
   ``cycles`` times, the paper's 3) until a whole cycle moves no angle by more than ``epsilon``. Since a
   repeat search over ``[0, pi/2]`` would only confirm the first sweep, later cycles search the window
   ``theta_j +- epsilon`` (3 halvings, leaving ``epsilon / 4``) and fall back to the full range only if
   the optimum has left it. ``early_stop=False`` always runs ``cycles`` full cycles, as the paper does.

4. **Antipodal probes** (``probe="antipodal"``): one query per halving compares ``o +- rho w``, ``w`` the
   unit tangent ``d a / d theta_j`` at the bracket midpoint; the answer is the sign of the metric's
   derivative along the angle *at the centre* (exactly, for linear and quadratic metrics), which a noisy
   person misjudges far less than ShrinkInterval's nearly-equal boundary points.
5. **Robust answering** (``robust``, opt-in; the default ``"none"`` asks exactly the paper's queries):
   ``"repeat"`` takes each decision as a majority of the query, its mirror image and, on disagreement, the
   query again; ``"noisy_bisection"`` (antipodal probes only) replaces each angle's halvings by
   probabilistic bisection. Both are deterministic. Why and how: ``docs/robust-answering.md``.
6. **Display resolution.** Every halving asks through `robust_step` (`elicitation.types.ask_step`): when
   the questions are shown in whole people (`elicitation.display.shown`), a step whose two classifiers
   would look identical is refused and the angle keeps the bracket reached. The search's tolerance is then
   what the charts can show, not ``epsilon``; without a display nothing is ever refused.

Every query compares two points of ``dS``, so queries never leave the sphere.

Paper symbols
-------------
=============================  ==================  ============================================
paper                          code                meaning
=============================  ==================  ============================================
``S``, ``o``, ``rho``          ``sphere``          query sphere, its centre and radius
``epsilon``                    ``epsilon``         binary-search tolerance on each angle
``theta``                      ``theta``           ``(k - 1,)`` angles of the current estimate
``theta^(a..e)_j``             ``lo, c, d, e, hi`` bracket and quarter points of angle ``j``
``T = 3 (k - 1)``              ``cycles * (k-1)``  number of one-angle searches (upper bound)
``a_hat``                      ``metric.a``        elicited unit coefficient vector
=============================  ==================  ============================================

Query complexity: with ``n_steps = ceil(log2(pi / (2 epsilon)))`` (8 for ``epsilon = 0.01``) and
``q`` = 2 queries per halving at most (1 for antipodal probes), `lpme_max_queries` is
``k + cycles (k - 1) n_steps q`` for the paper's fixed cycles and ``k + (k - 1) n_steps q +
(cycles - 1)(k - 1)(3 + n_steps) q`` with early stopping; typical counts are in docs/benchmarks.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Generator
from operator import add, mul, sub
from typing import Literal

import numpy as np

from .errors import InvalidConfigError
from .geometry import angles_to_unit, vector_angles
from .types import (
    Elicitation,
    Elicitor,
    Embedding,
    FloatArray,
    LinearMetric,
    Query,
    Sphere,
    ask,
    ask_step,
    plain_rates,
    trusted_query,
)

__all__ = [
    "DEFAULT_CYCLES",
    "DEFAULT_TOLERANCE",
    "NOISY_ACCURACY",
    "NOISY_QUERIES_PER_STEP",
    "PROBES",
    "ROBUST_MODES",
    "Probe",
    "Robust",
    "lpme",
    "lpme_max_queries",
    "robust_ask",
    "robust_step",
    "search_steps",
    "validate_embed",
    "validate_epsilon",
    "validate_probe",
    "validate_robust",
]

#: Default binary-search tolerance ``epsilon`` on each angle (radians), as in the paper's experiments.
DEFAULT_TOLERANCE = 1e-2
#: The paper's fixed number of coordinate-search cycles; with early stopping this is an upper bound.
DEFAULT_CYCLES = 3
#: Initial bracket of every angle once the orthant is known.
_ANGLE_RANGE = math.pi / 2.0
Probe = Literal["boundary", "antipodal"]
#: How LPME compares rates: the paper's boundary points, or antipodal points (derivative sign).
PROBES: tuple[str, ...] = ("boundary", "antipodal")
#: Halvings of a refinement search over the window theta +- epsilon (width 2 epsilon -> epsilon / 4).
_REFINE_STEPS = 3
#: Each ShrinkInterval step asks at most this many queries.
_QUERIES_PER_STEP = 2
Robust = Literal["none", "repeat", "noisy_bisection"]
#: Answer-robustness modes: ask once (the paper), majority of up to three asks with sides swapped, or
#: probabilistic bisection of each angle (antipodal probes only). See the module notes.
ROBUST_MODES: tuple[str, ...] = ("none", "repeat", "noisy_bisection")
#: Asks per decision in ``"repeat"`` mode: twice (sides swapped), a third time if the two disagree.
_REPEAT_ASKS = 3
#: The answer model of ``"noisy_bisection"``: every answer is right with this probability, independently.
NOISY_ACCURACY = 0.8
#: Query budget of ``"noisy_bisection"`` per halving the exact search would need. One answer of accuracy
#: ``p = 0.8`` carries ``1 - H(0.8) = 0.28`` bits, so a halving costs at least 3.6
#: answers; 4 left the exact-oracle searches unfinished (errors up to 0.25 at k = 2).
NOISY_QUERIES_PER_STEP = 6
#: Posterior mass the stopping rule's credible interval must hold (the 5% and 95% quantiles).
_CREDIBLE_TAIL = 0.05
#: Grid cells per final bracket width ``(hi - lo) / 2**steps`` of the posterior over an angle.
_GRID_CELLS_PER_WIDTH = 8


def search_steps(epsilon: float) -> int:
    """Number of halvings that shrink the bracket ``[0, pi/2]`` to width ``<= epsilon``."""
    steps, width = 0, _ANGLE_RANGE
    while width > epsilon:
        width /= 2.0
        steps += 1
    return steps


def validate_robust(robust: object, probe: str = "antipodal") -> Robust:
    """Return ``robust`` if it is one of `ROBUST_MODES` and fits ``probe``, else raise `InvalidConfigError`.

    ``"noisy_bisection"`` needs ``probe="antipodal"``: only there is each halving a monotone threshold
    test (the sign of a derivative), which probabilistic bisection requires.
    """
    if robust == "none":
        return "none"
    if robust == "repeat":
        return "repeat"
    if robust == "noisy_bisection":
        if probe != "antipodal":
            raise InvalidConfigError(
                "robust='noisy_bisection' needs probe='antipodal' (a threshold test per halving), "
                f"got probe={probe!r}"
            )
        return "noisy_bisection"
    raise InvalidConfigError(f"robust must be one of {ROBUST_MODES}, got {robust!r}")


def robust_ask(query: Query, robust: str) -> Generator[Query, bool, tuple[bool, int]]:
    """Obtain one decision about ``query``; return ``(first preferred, queries asked)``.

    ``"none"`` asks once. Any other mode asks ``query`` and then its mirror (``first`` and ``second``
    swapped, answer inverted back, so a person who always clicks one side is caught), and a third time in
    the original order when the two disagree: the majority of three.
    """
    decision, count = yield from _decide(query, robust, ask)
    assert decision is not None  # `ask` always answers
    return decision, count


def robust_step(query: Query, robust: str) -> Generator[Query, bool, tuple[bool | None, int]]:
    """`robust_ask` for a search step the display may refuse (`elicitation.types.ask_step`).

    The decision is ``None`` when the first ask is refused (the search should stop); a refused mirror or
    third ask leaves the decision to the answers already given.
    """
    return (yield from _decide(query, robust, ask_step))


def _decide(
    query: Query, robust: str, ask_one: Callable[[Query], Generator[Query, bool, bool | None]]
) -> Generator[Query, bool, tuple[bool | None, int]]:
    if robust == "none":
        answer = yield from ask_one(query)
        return answer, int(answer is not None)
    first = yield from ask_one(query)
    if first is None:
        return None, 0
    mirrored = Query(query.second, query.first, query.search, query.kind, query.coordinate, query.step + 1)
    reply = yield from ask_one(mirrored)
    if reply is None:
        return first, 1
    if first == (not reply):
        return first, 2
    third = Query(query.first, query.second, query.search, query.kind, query.coordinate, query.step + 2)
    decider = yield from ask_one(third)
    return (first, 2) if decider is None else (decider, _REPEAT_ASKS)


def _planned_cycles(n_classes: int, cycles: int, early_stop: bool) -> int:
    return 1 if (early_stop and n_classes == 2) else cycles


def lpme_max_queries(
    n_classes: int,
    epsilon: float,
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    probe: Probe = "boundary",
    robust: Robust = "none",
) -> int:
    """Upper bound on the queries `lpme` asks for ``n_classes`` classes (orthant + all search steps)."""
    n_cycles = _planned_cycles(n_classes, cycles, early_stop)
    per_step = 1 if probe == "antipodal" else _QUERIES_PER_STEP
    if robust == "repeat":
        return _REPEAT_ASKS * lpme_max_queries(n_classes, epsilon, cycles, early_stop, probe)
    if robust == "noisy_bisection":
        # Orthant decisions by majority of three; each halving gets NOISY_QUERIES_PER_STEP answers.
        base = lpme_max_queries(n_classes, epsilon, cycles, early_stop, "antipodal")
        return (_REPEAT_ASKS - NOISY_QUERIES_PER_STEP) * n_classes + NOISY_QUERIES_PER_STEP * base
    full = (n_classes - 1) * search_steps(epsilon) * per_step
    if not early_stop:
        return n_classes + n_cycles * full
    # Later cycles refine locally, plus a full search for any angle whose optimum left its window.
    refine = (n_classes - 1) * _REFINE_STEPS * per_step
    return n_classes + full + (n_cycles - 1) * (refine + full)


def validate_probe(probe: object) -> Probe:
    """Return ``probe`` if it is one of `PROBES`, else raise `InvalidConfigError`."""
    if probe == "boundary":
        return "boundary"
    if probe == "antipodal":
        return "antipodal"
    raise InvalidConfigError(f"probe must be one of {PROBES}, got {probe!r}")


def validate_epsilon(epsilon: float) -> float:
    """Return ``epsilon`` as a float if it lies in ``(0, pi/2)``, else raise `InvalidConfigError`."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"epsilon must be a number, got {epsilon!r}") from exc
    if not np.isfinite(value) or not 0.0 < value < _ANGLE_RANGE:
        raise InvalidConfigError(f"epsilon must lie in (0, pi/2) radians, got {epsilon!r}")
    return value


def validate_embed(embed: object) -> Embedding:
    """Return ``embed`` if it can be called on a point, else raise `InvalidConfigError`."""
    if not callable(embed):
        raise InvalidConfigError(f"embed must be a callable from a list of rates to an array, got {embed!r}")
    return embed  # callable; its signature is the caller's contract


def _validate_sphere(sphere: object) -> Sphere:
    if not isinstance(sphere, Sphere):
        raise InvalidConfigError(f"sphere must be a Sphere, got {type(sphere).__name__}")
    return sphere


def lpme(
    sphere: Sphere,
    epsilon: float = DEFAULT_TOLERANCE,
    *,
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    search: str = "lpme",
    probe: Probe = "boundary",
    robust: Robust = "none",
    embed: Embedding = plain_rates,
) -> Elicitor[Elicitation[LinearMetric]]:
    """Elicit the direction of a linear metric ``<a, r>`` with queries on ``sphere`` (Algorithm 2).

    Parameters
    ----------
    sphere : Sphere
        Query sphere; every query compares two points of its boundary.
    epsilon : float
        Binary-search tolerance on each angle, in ``(0, pi/2)`` radians.
    cycles : int
        Maximum number of coordinate-search cycles (the paper always runs 3), at least 1.
    early_stop : bool
        Stop once a cycle moves no angle by more than ``epsilon`` (``k = 2``: after one cycle).
        ``False`` reproduces the paper's fixed ``cycles`` cycles.
    search : str
        Label put in every query's ``search`` field (QPME passes e.g. ``"qpme/z2/lpme"``).
    probe : {"boundary", "antipodal"}
        ``"boundary"`` (default): the paper's ShrinkInterval, comparing boundary points ``mu(theta)``
        (one or two queries per halving). ``"antipodal"``: one query per halving comparing the two
        antipodal points in the direction ``d mu / d theta_j`` at the bracket midpoint, whose answer is
        the sign of the metric's derivative there (see the module notes).
    robust : {"none", "repeat", "noisy_bisection"}
        How to survive wrong answers (see the module notes, *Robust answering*). ``"none"`` (default): one
        ask per comparison, the paper's behaviour. ``"repeat"``: every comparison is asked twice with the
        sides swapped and a third time on disagreement (majority of three). ``"noisy_bisection"``
        (``probe="antipodal"`` only): each angle is searched by probabilistic bisection assuming every
        answer is right with probability `NOISY_ACCURACY`; orthant queries use the majority of three.
    embed : Embedding
        Turns each compared point (a list of ``n_classes`` floats) into the query's rate array; default the
        point itself. Fair QPME passes its fairness-profile lift (Equation 10), so the queries it yields
        need no second pass.

    Yields
    ------
    Query
        ``first``/``second``: points of the sphere's boundary (shape ``(n_classes,)``, or as ``embed`` places
        them); ``kind`` is ``"orthant"`` (``coordinate`` = class), ``"shrink"`` or ``"bisect"``
        (``coordinate`` = angle); ``step`` counts queries.

    Receives
    --------
    bool
        ``True`` when ``first`` is preferred.

    Returns
    -------
    Elicitor of Elicitation[LinearMetric]
        The generator; its result's ``metric.a`` is the unit estimate ``a_hat`` and ``details`` holds
        ``angles``, ``signs``, ``cycles`` (run) and ``boundary_point`` (``o + rho * a_hat``).

    Raises
    ------
    InvalidConfigError
        On a non-sphere, ``epsilon`` outside ``(0, pi/2)``, ``cycles < 1``, an unknown ``probe`` or
        ``robust``, ``robust="noisy_bisection"`` with boundary probes, or an ``embed`` that is not callable.

    Notes
    -----
    At most ``lpme_max_queries(k, epsilon, cycles, early_stop, probe, robust)`` queries; with an exact oracle
    ``||a - a_hat|| = O(sqrt(k) epsilon)``.
    """
    sphere = _validate_sphere(sphere)
    eps = validate_epsilon(epsilon)
    if isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 1:
        raise InvalidConfigError(f"cycles must be an integer >= 1, got {cycles!r}")
    probe = validate_probe(probe)
    robust = validate_robust(robust, probe)
    embed = validate_embed(embed)
    n_cycles = _planned_cycles(sphere.n_classes, cycles, bool(early_stop))
    return Elicitor(
        _lpme_steps(sphere, eps, n_cycles, bool(early_stop), search, probe, robust, embed),
        name=search,
        max_queries=lpme_max_queries(sphere.n_classes, eps, cycles, bool(early_stop), probe, robust),
    )


@functools.cache
def _start_angles(n_classes: int) -> tuple[float, ...]:
    """Angles of ``(1, .., 1) / sqrt(k)``, where every search starts; computed once per ``k``."""
    return tuple(vector_angles(np.full(n_classes, 1.0 / math.sqrt(n_classes))).tolist())


def boundary_point(center: FloatArray, scale: FloatArray, theta: FloatArray) -> FloatArray:
    """Lemma 1's query point ``o + rho * signs * a(theta)`` on the sphere, with ``scale = rho * signs``."""
    result: FloatArray = center + scale * angles_to_unit(theta)
    return result


def antipodal_points(
    center: FloatArray, scale: FloatArray, theta: FloatArray, j: int, middle: float
) -> tuple[FloatArray, FloatArray]:
    """The antipodal probe ``o +- rho * signs * w`` of angle ``j`` at ``theta_j = middle``.

    ``w`` is the direction of ``d a(theta) / d theta_j`` without the factor ``prod_{l<j} sin(theta_l) >= 0``:
    zero before coordinate ``j``, ``-sin(theta_j)`` at it and ``cos(theta_j)`` times the unit vector of the
    later angles after it.
    """
    k = center.shape[0]
    w = np.zeros(k)
    w[j] = -math.sin(middle)
    w[j + 1 :] = math.cos(middle) * (angles_to_unit(theta[j + 1 :]) if j + 1 < k - 1 else 1.0)
    return center + scale * w, center - scale * w


# ----------------------------------------------------------------------------------------------------------
# Fast path. A session is rebuilt by replaying its log, which builds every query again, and the core's
# replay of 2,000 fair QPME answers must stay under 50 ms (docs/benchmarks.md). For rate vectors of k <= ~10
# entries numpy's per-call overhead costs about 3x the arithmetic, so the search loop builds its queries
# with the functions below on plain floats: the operations of `boundary_point` and `antipodal_points`, in
# the same order, hence bit-identical (tests/elicitation/test_lpme.py checks it), and hands them to
# `trusted_query`, which freezes the fresh arrays instead of copying and re-validating them.
# ----------------------------------------------------------------------------------------------------------


def _unit_list(theta: list[float]) -> list[float]:
    """`elicitation.geometry.angles_to_unit` on plain floats."""
    values: list[float] = []
    product = 1.0
    for angle in theta:
        values.append(product * math.cos(angle))
        product *= math.sin(angle)
    values.append(product)
    return values


def _fast_boundary_point(center: list[float], scale: list[float], theta: list[float]) -> list[float]:
    """`boundary_point` on plain floats: ``center_i + scale_i * a_i`` (``map``: no comprehension frame)."""
    return list(map(add, center, map(mul, scale, _unit_list(theta))))


def _fast_antipodal_points(
    center: list[float], scale: list[float], tail: list[float], j: int, middle: float
) -> tuple[list[float], list[float]]:
    """`antipodal_points` on plain floats; ``tail`` is ``_unit_list`` of the angles after ``j`` (or [1.0])."""
    tangent = [-math.sin(middle), *map(math.cos(middle).__mul__, tail)]
    offsets = list(map(mul, scale[j:], tangent))
    fixed, moving = center[:j], center[j:]
    return fixed + list(map(add, moving, offsets)), fixed + list(map(sub, moving, offsets))


# ----------------------------------------------------------------------------------------------------------


def _noisy_bisection(
    lo: float, hi: float, steps: int, probe_at: Callable[[float, int], Query]
) -> Generator[Query, bool, tuple[float, float, int]]:
    """Probabilistic bisection of a threshold in ``[lo, hi]``; return the 90% interval and queries asked.

    The posterior over the threshold lives on a grid of ``2**steps * _GRID_CELLS_PER_WIDTH`` cells
    (uniform prior). ``probe_at(x, asked)`` builds the query whose answer is ``True`` when the threshold
    lies right of ``x``; each answer multiplies the cells it supports by ``p = NOISY_ACCURACY`` and the
    others by ``1 - p``. We query at the posterior median and stop once the 90% credible interval is no
    wider than ``(hi - lo) / 2**steps`` (the exact search's final bracket) or after
    ``NOISY_QUERIES_PER_STEP * steps`` answers. The returned bracket is centred on the posterior median.
    """
    cells = (2**steps) * _GRID_CELLS_PER_WIDTH
    edges = np.linspace(lo, hi, cells + 1)
    centers = (edges[:-1] + edges[1:]) / 2.0
    weights = np.full(cells, 1.0 / cells)
    target = (hi - lo) / 2**steps
    budget = NOISY_QUERIES_PER_STEP * steps

    def interval() -> tuple[float, float, float]:
        cumulative = np.cumsum(weights)
        low = int(np.searchsorted(cumulative, _CREDIBLE_TAIL))
        median = int(np.searchsorted(cumulative, 0.5))
        high = min(int(np.searchsorted(cumulative, 1.0 - _CREDIBLE_TAIL)), cells - 1)
        # Never split at the bracket's end: a query there cannot move any posterior mass.
        split = min(median + 1, cells - 1)
        return float(edges[low]), float(edges[split]), float(edges[high + 1])

    asked = 0
    left, split, right = interval()
    while asked < budget and right - left > target:
        right_of = yield from ask_step(probe_at(split, asked))
        if right_of is None:
            break  # the display cannot show the next probe: keep the posterior so far
        asked += 1
        supported = centers > split if right_of else centers <= split
        weights = np.where(supported, NOISY_ACCURACY * weights, (1.0 - NOISY_ACCURACY) * weights)
        weights /= float(np.sum(weights))
        left, split, right = interval()
    # The caller uses the bracket's midpoint as the estimate and a bracket touching the window's edge as
    # "the optimum may lie outside": centre the bracket on the posterior median, keeping an edge it touches.
    if left == lo:
        return lo, 2.0 * split - lo, asked
    if right == hi:
        return 2.0 * split - hi, hi, asked
    half = min(split - left, right - split)
    return split - half, split + half, asked


def _lpme_steps(
    sphere: Sphere,
    epsilon: float,
    n_cycles: int,
    early_stop: bool,
    search: str,
    probe: str = "boundary",
    robust: str = "none",
    embed: Embedding = plain_rates,
) -> Generator[Query, bool, Elicitation[LinearMetric]]:
    # The search's queries come from the fast path above (plain floats, bit-identical to the vector algebra).
    k = sphere.n_classes
    center, rho = sphere.center, sphere.radius
    c = center.tolist()
    antipodal = probe == "antipodal"
    asked = 0

    # Lines 2-6: the sign of each a_i. The paper compares the optimal rates of (1..1)/sqrt(k) and of its
    # i-th reflection; the antipodal probe compares o + rho e_i with o - rho e_i (a larger value gap).
    uniform = np.full(k, 1.0 / math.sqrt(k))
    signs = np.ones(k)
    u = uniform.tolist()
    for i in range(k):
        if antipodal:
            first, second = list(c), list(c)
            first[i] += rho
            second[i] -= rho
        else:
            reflected = list(u)
            reflected[i] = -reflected[i]
            first = [ci + rho * ui for ci, ui in zip(c, u, strict=True)]
            second = [ci + rho * ri for ci, ri in zip(c, reflected, strict=True)]
        query = Query(embed(first), embed(second), search, "orthant", i, asked)
        # Orthant decisions are single comparisons even under noisy bisection: majority of three there.
        positive, count = yield from robust_ask(query, robust)
        asked += count
        if not positive:
            signs[i] = -1.0
    scaled = (rho * signs).tolist()  # rho * signs_i, the factor of every direction below

    def point(angles: list[float]) -> FloatArray:
        return embed(_fast_boundary_point(c, scaled, angles))

    def shrink(j: int, lo: float, hi: float, steps: int) -> Generator[Query, bool, tuple[float, float, bool]]:
        """Halve the bracket ``[lo, hi]`` of angle ``j`` ``steps`` times (other angles fixed at theta).

        Returns the bracket and whether every halving was made: a step the display refuses (its pair would
        look like one already shown) ends the search at the bracket reached.
        """
        nonlocal asked
        angles = theta.tolist()
        if antipodal:
            # d a / d theta_j vanishes before coordinate j; after it, it is cos(theta_j) times the unit
            # vector of the later angles, which stay fixed during this search.
            tail = _unit_list(angles[j + 1 :]) if j + 1 < k - 1 else [1.0]

            def antipodal_query(middle: float, step: int) -> Query:
                """Compare the antipodal points ``o +- rho * signs * tangent`` at angle ``middle``."""
                first, second = _fast_antipodal_points(c, scaled, tail, j, middle)
                return trusted_query(embed(first), embed(second), search, "bisect", j, step)

            if robust == "noisy_bisection":
                left, right, count = yield from _noisy_bisection(
                    lo, hi, steps, lambda x, n: antipodal_query(x, asked + n)
                )
                asked += count
                return left, right, True
        for _ in range(steps):
            if antipodal:
                # The sign of the metric's derivative along theta_j at the midpoint, read off the two
                # antipodal points of the sphere in the tangent direction.
                middle = (lo + hi) / 2.0
                right_of, count = yield from robust_step(antipodal_query(middle, asked), robust)
                asked += count
                if right_of is None:
                    return lo, hi, False
                if right_of:
                    lo = middle
                else:
                    hi = middle
                continue
            quarter, middle, three = (3.0 * lo + hi) / 4.0, (lo + hi) / 2.0, (lo + 3.0 * hi) / 4.0
            angles[j] = middle
            point_d = point(angles)
            angles[j] = quarter
            query = trusted_query(point(angles), point_d, search, "shrink", j, asked)
            better, count = yield from robust_step(query, robust)
            asked += count
            if better is None:
                return lo, hi, False
            if better:
                hi = middle
                continue
            angles[j] = three
            query = trusted_query(point_d, point(angles), search, "shrink", j, asked)
            better, count = yield from robust_step(query, robust)
            asked += count
            if better is None:
                # The peak is right of the quarter point (it did not beat the middle).
                return quarter, hi, False
            if better:
                lo, hi = quarter, three
            else:
                lo = middle
        return lo, hi, True

    theta = np.array(_start_angles(k), dtype=np.float64)
    n_steps = search_steps(epsilon)
    cycles_run = 0
    refined = 0
    for cycle in range(n_cycles):
        start = theta.copy()
        for j in reversed(range(k - 1)):
            if cycle == 0 or not early_stop:
                lo, hi, _ = yield from shrink(j, 0.0, _ANGLE_RANGE, n_steps)
            else:
                # After one backward sweep every angle is within epsilon / 2 of its optimum, so a repeat
                # search over [0, pi/2] would only confirm it: search +- epsilon around it instead (refining
                # it to epsilon / 4), and fall back to the full range if the optimum left that window.
                local_lo, local_hi = max(theta[j] - epsilon, 0.0), min(theta[j] + epsilon, _ANGLE_RANGE)
                lo, hi, complete = yield from shrink(j, local_lo, local_hi, _REFINE_STEPS)
                escaped = (lo == local_lo and local_lo > 0.0) or (hi == local_hi and local_hi < _ANGLE_RANGE)
                if escaped and complete:
                    lo, hi, _ = yield from shrink(j, 0.0, _ANGLE_RANGE, n_steps)
                elif complete:
                    refined += 1
                # An incomplete window (the display refused its steps) keeps the bracket it reached.
            theta[j] = (lo + hi) / 2.0
        cycles_run += 1
        if early_stop and float(np.max(np.abs(theta - start))) <= epsilon:
            break

    a_hat = signs * angles_to_unit(theta)
    theta.setflags(write=False)
    signs.setflags(write=False)
    boundary = center + rho * a_hat
    boundary.setflags(write=False)
    return Elicitation(
        metric=LinearMetric(a_hat),
        num_queries=asked,
        details={
            "angles": theta,
            "signs": signs,
            "cycles": cycles_run,
            "refined_searches": refined,
            "boundary_point": boundary,
            "probe": probe,
            "robust": robust,
        },
    )
