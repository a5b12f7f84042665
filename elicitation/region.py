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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog  # type: ignore[import-untyped]

from .display import DisplayGrid
from .errors import InvalidConfigError, NumericalError
from .types import FloatArray, Sphere

__all__ = [
    "BASELINE_MARGIN",
    "MIN_SPAN_PEOPLE",
    "Region",
    "display_min_radius",
    "realistic_region",
    "region_summary",
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
_LP_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class Region:
    """A chosen query sphere: its centre and radius, and the axis extent of the cross-polytope holding it."""

    center: FloatArray
    radius: float
    #: Distance from the centre to the feasible points ``o +- extent e_j`` in every group.
    extent: float
    #: Share of people the sphere's least accurate classifier gets right beyond the worst group's
    #: majority-class baseline (negative: part of the sphere is below a baseline).
    baseline_margin: float


def _region_lp(
    group_rates: Sequence[FloatArray], priors: FloatArray, *, margin: float | None, radius: float | None
) -> tuple[FloatArray, float, float] | None:
    """Solve for (centre, extent, worst baseline margin); exactly one of ``margin`` and ``radius`` is set.

    Variables: the centre ``o`` (k), a scalar (the common extent ``c`` when ``margin`` is fixed, else the
    worst group's baseline margin) and one mixture ``lambda`` per group, axis and sign reaching
    ``o +- c e_j``. With ``margin`` the LP maximises ``c``; with ``radius`` it fixes ``c = radius sqrt(k)``
    and maximises the margin.
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
    bounds = [(0.0, 1.0)] * k + [scalar_bounds] + [(0.0, None)] * (n_vars - k - 1)
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


def region_summary(sphere: Sphere, priors: npt.ArrayLike) -> dict[str, Any]:
    """What a coordinator needs to know about a query region: centre, radius and the accuracy it spans.

    Returns a JSON-safe dict: ``center`` and ``radius`` (rates), and per group ``accuracy`` (lowest and
    highest share of people classified correctly by a classifier in the sphere) next to ``baseline``, the
    share "predict the most common class for everyone" gets right.
    """
    prior_array = np.atleast_2d(np.asarray(priors, dtype=np.float64))
    center = sphere.center
    groups = []
    for prior in prior_array:
        middle = float(prior @ center)
        spread = float(sphere.radius * np.linalg.norm(prior))
        groups.append(
            {
                "accuracy": [max(middle - spread, 0.0), min(middle + spread, 1.0)],
                "baseline": float(prior.max()),
            }
        )
    return {"center": center.tolist(), "radius": float(sphere.radius), "groups": groups}
