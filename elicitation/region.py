"""Where a dataset study asks its questions: a query sphere among classifiers a professional would consider.

Theory of operation
-------------------
The paper lets the query sphere sit at any interior point ``o`` of the feasible set (Section 2; Algorithm 3
finds the largest sphere around a given ``o``). The uniform random classifier ``o = (1/k, ..., 1/k)`` is
the textbook choice, but on real data most classifiers around it are worse than "predict the most common
class for everyone": a person asked to choose between absurd classifiers may answer differently from how
they would choose between ones they would actually deploy.

`realistic_region` instead finds, with one linear program, the largest sphere such that

* it fits the feasible set of every group: Algorithm 3's cross-polytope ``conv{o +- c e_j}``, whose
  vertices are mixtures of the data's classifiers, holds it (the centre is now a variable of the LP);
* every classifier in it is more accurate, in every group, than the majority-class baseline
  ("predict the most common class for everyone") by `BASELINE_MARGIN`.

When that sphere is too small for the display to show differences (a rare class within a group: Adult's
women are 89 % "<= 50K", and no common sphere of useful size beats that baseline everywhere), the sphere of
the smallest useful radius whose least accurate classifier is most accurate is used instead.

`group_regions` gives every group a sphere of its own instead (centre ``o_g``, radius ``rho_g``), each the
largest ball inside that group's feasible set (its half-spaces, not the cross-polytope) beating that
group's baseline, with a class too rare to vary inside it pinned to a whole number of people. The fair
cost is a function of the group rates, so an elicitor that compares rate arrays (the active one) needs no
common centre; fair QPME's partition runs do (docs/realistic-queries.md, "One region per group").

The trade-off: the metric is learned from comparisons inside this sphere, so it is trusted there (where
realistic classifiers live) and extrapolated elsewhere; a larger sphere (the paper's ``o``) covers more of
the rate space but asks about classifiers nobody would use.

Symbols
-------
===================  ==================================================
paper                code
===================  ==================================================
``o``                ``center``
``rho``              ``radius``
``c_j``              ``extent`` (common to every axis and group)
``P(Y = i | G = g)`` ``priors[g, i]``
===================  ==================================================
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog  # type: ignore[import-untyped]
from scipy.spatial import ConvexHull, QhullError  # type: ignore[import-untyped]

from .display import DisplayGrid
from .errors import InvalidConfigError, NumericalError
from .types import FloatArray, Sphere

__all__ = [
    "BASELINE_MARGIN",
    "MIN_SPAN_PEOPLE",
    "Region",
    "ball_inside",
    "display_min_radius",
    "group_regions",
    "realistic_region",
    "region_summary",
    "sensible_frontier",
]

#: Every classifier in the region gets at least this share of people right beyond the majority-class
#: baseline (one person in 100, so no chart shows a classifier tied with "everyone is the common class").
BASELINE_MARGIN = 0.01
#: A useful region lets two classifiers differ by at least this many people in the largest class of every
#: group (out of 100): smaller spheres show the same few pictures over and over.
MIN_SPAN_PEOPLE = 4
#: Relative slack on the display's reach, so a centre between grid points still snaps inside the sphere.
_REACH_SLACK = 0.01
#: The sphere is shrunk by this relative margin, so boundary queries stay strictly feasible.
_MARGIN = 1e-6
#: Weight of the centre's accuracy in the objective, small enough never to trade radius for it noticeably.
_ACCURACY_TIE_BREAK = 1e-3
#: Float noise tolerated when placing a rate on the display grid.
_UNIT_SLACK = 1e-9
#: Float noise tolerated when checking that a stored sphere lies inside a feasible set.
_INSIDE_ATOL = 1e-9
_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class Region:
    """A chosen query sphere: its centre and radius, and the axis extent of the cross-polytope holding it."""

    center: FloatArray
    radius: float
    #: Distance from the centre to the feasible points ``o +- extent e_j`` in every group (a sphere of
    #: `group_regions`: its radius, the ball itself being feasible).
    extent: float
    #: Share of people the sphere's least accurate classifier gets right beyond the worst group's
    #: majority-class baseline (negative: part of the sphere is below a baseline).
    baseline_margin: float


def _region_lp(
    group_rates: Sequence[FloatArray],
    priors: FloatArray,
    *,
    margin: float | None,
    radius: float | None,
    fixed: dict[int, float] | None = None,
) -> tuple[FloatArray, float, float] | None:
    """Solve for (centre, extent, worst baseline margin); exactly one of ``margin`` and ``radius`` is set.

    Variables: the centre ``o`` (k), a scalar (the common extent ``c`` when ``margin`` is fixed, else the
    worst group's baseline margin) and one mixture ``lambda`` per group, axis and sign reaching
    ``o +- c e_j``. With ``margin`` the LP maximises ``c``; with ``radius`` it fixes ``c = radius sqrt(k)``
    and maximises the margin. ``fixed`` pins centre coordinates (class -> rate).
    """
    m, k = priors.shape
    sizes = [int(rates.shape[0]) for rates in group_rates]
    blocks = [(g, j, sign) for g in range(m) for j in range(k) for sign in (1.0, -1.0)]
    offsets = np.cumsum([k + 1] + [sizes[g] for g, _j, _s in blocks])
    n_vars = int(offsets[-1])
    a_eq = np.zeros((len(blocks) * (k + 1), n_vars))
    b_eq = np.zeros(len(blocks) * (k + 1))
    fixed_extent = None if radius is None else radius * np.sqrt(k)
    for index, (g, j, sign) in enumerate(blocks):
        top = index * (k + 1)
        columns = slice(int(offsets[index]), int(offsets[index + 1]))
        a_eq[top : top + k, columns] = group_rates[g].T
        a_eq[top : top + k, :k] = -np.eye(k)
        if fixed_extent is None:
            a_eq[top + j, k] = -sign
        else:
            b_eq[top + j] = sign * fixed_extent
        a_eq[top + k, columns] = 1.0
        b_eq[top + k] = 1.0
    norms = np.linalg.norm(priors, axis=1)
    a_ub = np.zeros((m, n_vars))
    a_ub[:, :k] = -priors
    if fixed_extent is None:
        # <p, o> - (c / sqrt(k)) |p| >= baseline + margin
        a_ub[:, k] = norms / np.sqrt(k)
        b_ub = -(priors.max(axis=1) + float(margin or 0.0))
        scalar_bounds: tuple[float | None, float | None] = (0.0, 1.0)
    else:
        # <p, o> - radius |p| >= baseline + t
        a_ub[:, k] = 1.0
        b_ub = -(priors.max(axis=1) + float(radius or 0.0) * norms)
        scalar_bounds = (None, None)
    cost = np.zeros(n_vars)
    cost[k] = -1.0
    # Among equally large spheres (the optimum is often a ridge), prefer the more accurate centre.
    cost[:k] = -_ACCURACY_TIE_BREAK * priors.mean(axis=0)
    center_bounds = [(0.0, 1.0)] * k
    for index, value in (fixed or {}).items():
        center_bounds[index] = (value, value)
    bounds = center_bounds + [scalar_bounds] + [(0.0, None)] * (n_vars - k - 1)
    result = linprog(
        cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs", options=_LP_OPTIONS
    )
    if result.status == 2:
        return None
    if result.status != 0 or result.x is None:
        raise NumericalError(f"the query-region linear program failed: {result.message}")
    center = np.clip(result.x[:k], 0.0, 1.0)
    if fixed_extent is None:
        extent = float(result.x[k])
        worst = float(margin or 0.0)
    else:
        extent = float(fixed_extent)
        worst = float(result.x[k])
    return center, extent, worst


def display_min_radius(class_sizes: npt.ArrayLike, span: float = MIN_SPAN_PEOPLE) -> float:
    """Smallest useful radius for the display: two classifiers can differ by ``span`` of 100 people in the
    largest class of every group, and any centre has a displayable point of every group within reach
    (half a person of each class in every direction).

    ``class_sizes`` holds people per class, ``(n_classes,)`` or ``(n_groups, n_classes)`` (any totals).
    """
    sizes = np.atleast_2d(np.asarray(class_sizes, dtype=np.float64))
    totals = DisplayGrid.from_priors(sizes / sizes.sum(axis=1, keepdims=True)).totals
    spread = span / (2.0 * float(np.min(totals.max(axis=1))))
    reach = float(np.max(np.linalg.norm(0.5 / totals, axis=1))) * (1.0 + _REACH_SLACK)
    return max(spread, reach)


def realistic_region(
    group_rates: Sequence[FloatArray],
    priors: npt.ArrayLike,
    *,
    min_radius: float,
    margin: float = BASELINE_MARGIN,
) -> Region | None:
    """The largest sphere in every group's feasible set whose classifiers all beat the baselines.

    A linear program over the centre ``o``, a common axis extent ``c`` and, per group, axis and sign, the
    mixture of classifiers reaching ``o +- c e_j``: maximise ``c`` while those points are feasible
    (Algorithm 3's cross-polytope with a free centre, holding the ball of radius ``c / sqrt(k)``) and
    every point of that ball beats each group's baseline by ``margin``. When that sphere is smaller than
    ``min_radius`` (the data's classifiers barely beat the baseline, typical of a rare class within a
    group), the sphere of radius ``min_radius`` whose least accurate classifier is most accurate is
    chosen instead; then part of it lies below a baseline (``Region.baseline_margin < 0``).

    Parameters
    ----------
    group_rates : sequence of numpy.ndarray, each ``(n_classifiers, n_classes)``
        Rates of the classifiers spanning each group's feasible set (the trivial ones included).
    priors : array_like, shape (n_groups, n_classes) or (n_classes,)
        ``P(Y = i | G = g)``.
    min_radius : float
        Smallest useful radius (what the display can show differences within).
    margin : float
        Share of people every classifier in the sphere gets right beyond the baseline.

    Returns
    -------
    Region or None
        None when not even a sphere of ``min_radius`` fits the feasible sets (the caller keeps the
        paper's ``o``).

    Raises
    ------
    InvalidConfigError
        If the number of rate arrays differs from the number of groups, or ``min_radius`` is not positive.
    NumericalError
        If a linear program fails for another reason than infeasibility.
    """
    prior_array = np.atleast_2d(np.asarray(priors, dtype=np.float64))
    m, k = prior_array.shape
    if len(group_rates) != m:
        raise InvalidConfigError(f"give one rate array per group ({m}), got {len(group_rates)}")
    if not np.isfinite(min_radius) or min_radius <= 0.0:
        raise InvalidConfigError(f"min_radius must be positive, got {min_radius!r}")
    solution = _region_lp(group_rates, prior_array, margin=margin, radius=None)
    if solution is None or solution[1] / np.sqrt(k) < min_radius:
        solution = _region_lp(group_rates, prior_array, margin=None, radius=min_radius)
    if solution is None:
        return None
    center, extent, worst = solution
    center.setflags(write=False)
    return Region(
        center=center, radius=extent / np.sqrt(k) * (1.0 - _MARGIN), extent=extent, baseline_margin=worst
    )


def group_regions(
    group_rates: Sequence[FloatArray],
    priors: npt.ArrayLike,
    *,
    margin: float = BASELINE_MARGIN,
    span: float = MIN_SPAN_PEOPLE,
) -> tuple[Region, ...] | None:
    """One realistic sphere per group: each in its own feasible set, beating its own baseline.

    The paper's fair elicitation compares rates ``r^g`` per group; nothing in the reconstruction needs the
    groups' queries to share a centre or a radius (docs/realistic-queries.md, "One region per group"). A
    group whose most common class dominates (Adult's women: 89 % "<= 50K") then gets a small sphere among
    its own good classifiers instead of a common one that is mostly below its baseline.

    Per group: `realistic_region` with that group alone, its smallest useful radius from the display
    (``span`` people apart in the group's largest class, reach of half a person in every class the
    sphere can vary). A class whose display step ``1 / N_i`` is wider than the sphere cannot vary inside
    it at all: the centre's rate of that class is pinned to a displayable value (the better of the two
    nearest), so every classifier shown has a whole number of people there and the sphere holds
    displayable points.

    Parameters
    ----------
    group_rates : sequence of numpy.ndarray, each ``(n_classifiers, n_classes)``
        Rates of the classifiers spanning each group's feasible set.
    priors : array_like, shape (n_groups, n_classes)
        ``P(Y = i | G = g)``.
    margin : float
        Share of people every classifier of a sphere gets right beyond its group's baseline, when a sphere
        of useful size allows it.
    span : float
        People out of 100 two classifiers of a sphere can differ by in the group's largest class.

    Returns
    -------
    tuple of Region or None
        One per group; None when some group fits no sphere of useful size (the caller keeps the common one).

    Raises
    ------
    InvalidConfigError
        If the number of rate arrays differs from the number of groups.
    NumericalError
        If a linear program fails for another reason than infeasibility.
    """
    prior_array = np.atleast_2d(np.asarray(priors, dtype=np.float64))
    if len(group_rates) != prior_array.shape[0]:
        raise InvalidConfigError(
            f"give one rate array per group ({prior_array.shape[0]}), got {len(group_rates)}"
        )
    totals = DisplayGrid.from_priors(prior_array).totals
    regions = []
    for rates, prior, people in zip(group_rates, prior_array, totals, strict=True):
        region = _group_region(rates, prior, people, margin=margin, span=span)
        if region is None:
            return None
        regions.append(region)
    return tuple(regions)


def _group_region(
    rates: FloatArray, prior: FloatArray, people: npt.NDArray[np.int64], *, margin: float, span: float
) -> Region | None:
    """One group's sphere (see `group_regions`): free centre first, then coarse classes pinned to the grid."""
    k = prior.shape[0]
    steps = 1.0 / people.astype(np.float64)
    spread = span / (2.0 * float(people.max()))
    facets = _facets(rates)

    def solve(fixed: dict[int, float], fine: npt.NDArray[np.bool_]) -> Region | None:
        reach = float(np.linalg.norm(0.5 * steps[fine])) * (1.0 + _REACH_SLACK)
        least = max(spread, reach)
        if facets is None:
            # A hull Qhull cannot build (a degenerate set of classifiers): Algorithm 3's cross-polytope.
            found = _region_lp([rates], prior[None], margin=margin, radius=None, fixed=fixed)
            if found is None or found[1] / np.sqrt(k) < least:
                found = _region_lp([rates], prior[None], margin=None, radius=least, fixed=fixed)
            if found is None:
                return None
            center, extent, worst = found
            radius = extent / np.sqrt(k)
        else:
            solution = _ball_lp(facets, prior, margin=margin, radius=None, fixed=fixed)
            if solution is None or solution[1] < least:
                solution = _ball_lp(facets, prior, margin=None, radius=least, fixed=fixed)
            if solution is None:
                return None
            center, radius, worst = solution
            extent = radius
        center.setflags(write=False)
        return Region(center, radius * (1.0 - _MARGIN), extent, worst)

    free = solve({}, np.ones(k, dtype=bool))
    if free is None:
        return None
    coarse = [int(i) for i in np.flatnonzero(steps > free.radius)]
    if not coarse:
        return free
    fine = steps <= free.radius
    best: Region | None = None
    for choice in itertools.product(*[_grid_neighbours(free.center[i], int(people[i])) for i in coarse]):
        region = solve(dict(zip(coarse, choice, strict=True)), fine)
        if region is not None and (best is None or _better(region, best)):
            best = region
    return best


def _facets(rates: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """The feasible set ``conv(rates)`` as half-spaces ``A r <= b`` with unit normals (None if degenerate)."""
    try:
        hull = ConvexHull(rates)
    except QhullError:
        return None
    normals = hull.equations[:, :-1]
    offsets = -hull.equations[:, -1]
    return normals, offsets


def _ball_lp(
    facets: tuple[FloatArray, FloatArray],
    prior: FloatArray,
    *,
    margin: float | None,
    radius: float | None,
    fixed: dict[int, float],
) -> tuple[FloatArray, float, float] | None:
    """The largest ball in ``A r <= b`` beating the baseline by ``margin`` (Chebyshev centre), or the ball of
    ``radius`` whose least accurate point is most accurate: (centre, radius, worst baseline margin).

    Variables ``(o, s)``: ``s`` is the radius (``margin`` set) or the worst margin (``radius`` set).
    """
    normals, offsets = facets
    k = prior.shape[0]
    lengths = np.linalg.norm(normals, axis=1)
    norm = float(np.linalg.norm(prior))
    baseline = float(prior.max())
    if radius is None:
        # A o + s |A_i| <= b ;  -<p, o> + s |p| <= -(baseline + margin)
        a_ub = np.vstack([np.hstack([normals, lengths[:, None]]), np.append(-prior, norm)])
        b_ub = np.append(offsets, -(baseline + float(margin or 0.0)))
        scalar: tuple[float | None, float | None] = (0.0, 1.0)
    else:
        # A o <= b - radius |A_i| ;  -<p, o> + s <= -(baseline + radius |p|)
        a_ub = np.vstack([np.hstack([normals, np.zeros((normals.shape[0], 1))]), np.append(-prior, 1.0)])
        b_ub = np.append(offsets - radius * lengths, -(baseline + radius * norm))
        scalar = (None, None)
    cost = np.zeros(k + 1)
    cost[k] = -1.0
    cost[:k] = -_ACCURACY_TIE_BREAK * prior
    bounds: list[tuple[float | None, float | None]] = [(0.0, 1.0)] * k + [scalar]
    for index, value in fixed.items():
        bounds[index] = (value, value)
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs", options=_LP_OPTIONS)
    if result.status == 2:
        return None
    if result.status != 0 or result.x is None:
        raise NumericalError(f"the query-region linear program failed: {result.message}")
    center = np.clip(result.x[:k], 0.0, 1.0)
    if radius is None:
        return center, float(result.x[k]), float(margin or 0.0)
    return center, float(radius), float(result.x[k])


def ball_inside(rates: FloatArray, sphere: Sphere, atol: float = _INSIDE_ATOL) -> bool:
    """True when ``sphere`` lies inside ``conv(rates)`` (a group's feasible set), up to ``atol``.

    Checked on the hull's half-spaces; a hull Qhull cannot build (degenerate rates) holds no ball.
    """
    facets = _facets(np.asarray(rates, dtype=np.float64))
    if facets is None:
        return False
    normals, offsets = facets
    reach = normals @ sphere.center + sphere.radius * np.linalg.norm(normals, axis=1)
    return bool(np.all(reach <= offsets + atol))


def _grid_neighbours(rate: float, people: int) -> tuple[float, ...]:
    """The displayable rates ``n / people`` just below and above ``rate`` (one when it is on the grid)."""
    low, high = math.floor(rate * people + _UNIT_SLACK), math.ceil(rate * people - _UNIT_SLACK)
    return tuple(sorted({low / people, high / people}))


def _better(region: Region, other: Region) -> bool:
    """A sphere beating its baseline by the margin is better when larger; otherwise when more accurate."""
    if region.baseline_margin != other.baseline_margin:
        return region.baseline_margin > other.baseline_margin
    return region.radius > other.radius


def region_summary(sphere: Sphere | Sequence[Sphere], priors: npt.ArrayLike) -> dict[str, Any]:
    """What a coordinator needs to know about a query region: centre, radius and the accuracy it spans.

    ``sphere`` is the common sphere or one sphere per group (`group_regions`). Returns a JSON-safe dict:
    per group ``center`` and ``radius`` (rates), ``accuracy`` (lowest and highest share of people
    classified correctly by a classifier in the group's sphere) next to ``baseline``, the share "predict
    the most common class for everyone" gets right; ``per_group`` says whether the groups' spheres differ,
    and the top-level ``center`` and ``radius`` are the first group's (the common sphere's).
    """
    prior_array = np.atleast_2d(np.asarray(priors, dtype=np.float64))
    spheres = _per_group(sphere, prior_array.shape[0])
    groups = []
    for prior, own in zip(prior_array, spheres, strict=True):
        middle = float(prior @ own.center)
        spread = float(own.radius * np.linalg.norm(prior))
        groups.append(
            {
                "center": own.center.tolist(),
                "radius": float(own.radius),
                "accuracy": [max(middle - spread, 0.0), min(middle + spread, 1.0)],
                "baseline": float(prior.max()),
            }
        )
    per_group = any(
        own.radius != spheres[0].radius or not np.array_equal(own.center, spheres[0].center)
        for own in spheres[1:]
    )
    return {
        "center": spheres[0].center.tolist(),
        "radius": float(spheres[0].radius),
        "per_group": per_group,
        "groups": groups,
    }


def _per_group(sphere: Sphere | Sequence[Sphere], n_groups: int) -> tuple[Sphere, ...]:
    if isinstance(sphere, Sphere):
        return (sphere,) * n_groups
    spheres = tuple(sphere)
    if len(spheres) != n_groups or not all(isinstance(own, Sphere) for own in spheres):
        raise InvalidConfigError(f"give one sphere per group ({n_groups}), got {len(spheres)}")
    return spheres


def sensible_frontier(rates: npt.ArrayLike, priors: npt.ArrayLike, margin: float | None = None) -> FloatArray:
    """The sensible classifiers of one group that no other beats on every class's rate, ``(n, k)``.

    A classifier that gives up accuracy for equality is *sensible* when, in its group, it gets at least as
    many people right as the trivial classifier ("the most common class for everyone"): a person can weigh
    it against a more accurate one without dismissing it as absurd. ``rates`` ``(n, k)`` are the group's
    classifiers on the data (e.g. its plug-ins, whose mixtures fill the feasible set), ``priors`` ``(k,)``
    its class shares. Kept: the Pareto-optimal rates that are not a trivial classifier and get at least
    ``margin`` people in 100 more right than the trivial classifier (default ``k``: rounding every class
    down to whole people loses less than one person each). Mixtures of the kept rates keep the margin
    (people right is linear in the rates).
    """
    points = np.asarray(rates, dtype=np.float64)
    shares = np.asarray(priors, dtype=np.float64)
    extra = float(points.shape[1]) if margin is None else float(margin)
    dominated = np.array(
        [np.any(np.all(points >= row, axis=1) & np.any(points > row, axis=1)) for row in points], dtype=bool
    )
    trivial = np.isclose(points.max(axis=1), 1.0) & np.isclose(points.sum(axis=1), 1.0)
    sensible = 100.0 * points @ shares >= 100.0 * float(shares.max()) + extra
    result: FloatArray = points[~dominated & ~trivial & sensible]
    return result
