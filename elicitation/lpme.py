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
   ``cycles`` times, the paper's 3) until a whole cycle moves no angle by more than ``epsilon``;
   ``early_stop=False`` always runs ``cycles`` cycles, as the paper does.

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

Query complexity: ``k + cycles * (k - 1) * n_steps * 2`` at most, with ``n_steps = ceil(log2(pi / (2
epsilon)))``; typically ``k + 2 (k - 1) * 1.5 * n_steps`` (two cycles for ``k > 2``, one for ``k = 2``).
"""

from __future__ import annotations

import math
from collections.abc import Generator

import numpy as np

from .errors import InvalidConfigError
from .geometry import unit_vector, vector_angles
from .types import Elicitation, Elicitor, FloatArray, LinearMetric, Query, Sphere, ask

__all__ = [
    "DEFAULT_CYCLES",
    "DEFAULT_TOLERANCE",
    "lpme",
    "lpme_max_queries",
    "search_steps",
]

#: Default binary-search tolerance ``epsilon`` on each angle (radians), as in the paper's experiments.
DEFAULT_TOLERANCE = 1e-2
#: The paper's fixed number of coordinate-search cycles; with early stopping this is an upper bound.
DEFAULT_CYCLES = 3
#: Initial bracket of every angle once the orthant is known.
_ANGLE_RANGE = math.pi / 2.0
#: Each ShrinkInterval step asks at most this many queries.
_QUERIES_PER_STEP = 2


def search_steps(epsilon: float) -> int:
    """Number of halvings that shrink the bracket ``[0, pi/2]`` to width ``<= epsilon``."""
    steps, width = 0, _ANGLE_RANGE
    while width > epsilon:
        width /= 2.0
        steps += 1
    return steps


def _planned_cycles(n_classes: int, cycles: int, early_stop: bool) -> int:
    return 1 if (early_stop and n_classes == 2) else cycles


def lpme_max_queries(
    n_classes: int, epsilon: float, cycles: int = DEFAULT_CYCLES, early_stop: bool = True
) -> int:
    """Upper bound on the queries `lpme` asks for ``n_classes`` classes (orthant + all shrink steps)."""
    n_cycles = _planned_cycles(n_classes, cycles, early_stop)
    return n_classes + n_cycles * (n_classes - 1) * search_steps(epsilon) * _QUERIES_PER_STEP


def validate_epsilon(epsilon: float) -> float:
    """Return ``epsilon`` as a float if it lies in ``(0, pi/2)``, else raise `InvalidConfigError`."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"epsilon must be a number, got {epsilon!r}") from exc
    if not np.isfinite(value) or not 0.0 < value < _ANGLE_RANGE:
        raise InvalidConfigError(f"epsilon must lie in (0, pi/2) radians, got {epsilon!r}")
    return value


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

    Yields
    ------
    Query
        ``first``/``second`` of shape ``(n_classes,)`` on the sphere's boundary; ``kind`` is ``"orthant"``
        (``coordinate`` = class) or ``"shrink"`` (``coordinate`` = angle); ``step`` counts queries.

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
        On a non-sphere, ``epsilon`` outside ``(0, pi/2)`` or ``cycles < 1``.

    Notes
    -----
    At most ``lpme_max_queries(k, epsilon, cycles, early_stop)`` queries; with an exact oracle
    ``||a - a_hat|| = O(sqrt(k) epsilon)``.
    """
    sphere = _validate_sphere(sphere)
    eps = validate_epsilon(epsilon)
    if isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 1:
        raise InvalidConfigError(f"cycles must be an integer >= 1, got {cycles!r}")
    n_cycles = _planned_cycles(sphere.n_classes, cycles, bool(early_stop))
    return Elicitor(
        _lpme_steps(sphere, eps, n_cycles, bool(early_stop), search),
        name=search,
        max_queries=lpme_max_queries(sphere.n_classes, eps, cycles, bool(early_stop)),
    )


def _lpme_steps(
    sphere: Sphere, epsilon: float, n_cycles: int, early_stop: bool, search: str
) -> Generator[Query, bool, Elicitation[LinearMetric]]:
    k = sphere.n_classes
    center, rho = sphere.center, sphere.radius
    asked = 0

    # Lines 2-6: the sign of each a_i from the optimal rates of (1..1)/sqrt(k) and its i-th reflection.
    uniform = np.full(k, 1.0 / math.sqrt(k))
    signs = np.ones(k)
    for i in range(k):
        reflected = uniform.copy()
        reflected[i] = -reflected[i]
        query = Query(center + rho * uniform, center + rho * reflected, search, "orthant", i, asked)
        asked += 1
        if not (yield from ask(query)):
            signs[i] = -1.0

    def point(angles: FloatArray) -> FloatArray:
        result: FloatArray = center + rho * signs * unit_vector(angles)
        return result

    theta = np.array(vector_angles(uniform), dtype=np.float64)
    n_steps = search_steps(epsilon)
    cycles_run = 0
    for _ in range(n_cycles):
        start = theta.copy()
        for j in reversed(range(k - 1)):
            lo, hi = 0.0, _ANGLE_RANGE
            for _ in range(n_steps):
                c, d, e = (3.0 * lo + hi) / 4.0, (lo + hi) / 2.0, (lo + 3.0 * hi) / 4.0
                probe_c, probe_d, probe_e = theta.copy(), theta.copy(), theta.copy()
                probe_c[j], probe_d[j], probe_e[j] = c, d, e
                query = Query(point(probe_c), point(probe_d), search, "shrink", j, asked)
                asked += 1
                if (yield from ask(query)):
                    hi = d
                    continue
                query = Query(point(probe_d), point(probe_e), search, "shrink", j, asked)
                asked += 1
                if (yield from ask(query)):
                    lo, hi = c, e
                else:
                    lo = d
            theta[j] = (lo + hi) / 2.0
        cycles_run += 1
        if early_stop and float(np.max(np.abs(theta - start))) <= epsilon:
            break

    a_hat = signs * unit_vector(theta)
    theta.setflags(write=False)
    signs.setflags(write=False)
    boundary = center + rho * a_hat
    boundary.setflags(write=False)
    return Elicitation(
        metric=LinearMetric(a_hat),
        num_queries=asked,
        details={"angles": theta, "signs": signs, "cycles": cycles_run, "boundary_point": boundary},
    )
