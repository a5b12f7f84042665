"""Feasible rate spaces of real datasets: plug-in classifiers, the inscribed query sphere, rate -> classifier.

Theory of operation
-------------------
A query must show a classifier that can exist (paper, Section 2 and Appendix B). For a dataset we

1. fit a class-probability model ``eta_hat(x) ~ P(Y | X = x)`` (logistic regression by default) on a
   seeded, stratified train split;
2. on the held-out split, evaluate *plug-in classifiers* ``h_w(x) = argmax_i w_i eta_hat_i(x)``. For a
   linear utility ``<a, r>`` the best classifier is ``h_w`` with ``w_i = a_i / P(Y = i)``, so plug-ins
   for many directions ``a`` trace the boundary of the feasible set; the trivial classifiers ``e_i``
   ("always predict i") are included, so ``o`` lies inside. Randomising over plug-ins (Appendix B: the
   set is convex) gives every rate in the convex hull ``R_hat`` of their held-out rates. With groups, every
   group ``g`` gets its own classifiers and hull ``R_hat^g`` (rates conditional on ``G = g``);
3. find the sphere (Algorithm 3): for each axis ``j`` and sign, a linear program (HiGHS) gives the largest
   ``c`` with ``o +- c alpha_j`` in the hull; new plug-ins in the direction of the LP's dual (the
   supporting hyperplane at the optimum) are added while they push the extent further (column
   generation). The largest ball centred at ``o`` inside the cross-polytope ``conv{o +- c_j alpha_j}`` has
   radius ``rho = (sum_j 1 / c_j^2)^(-1/2)`` with ``c_j`` the smaller of the two extents; for fairness
   (Remark 2) ``c_j`` is also the minimum over groups, so the sphere lies in every group's hull;
4. realise any query: a linear program finds mixture weights ``lambda`` over the plug-ins with
   ``sum_l lambda_l R_l = r`` (a basic solution, so at most ``k + 1`` classifiers are mixed), polished
   by an exact solve on its support. The mixture's expected held-out confusion matrix (counts, and out
   of 100) is what a person is shown; its rates match the query to ``MATCH_ATOL``.

Symbols
-------
===================  ================================================
paper                code
===================  ================================================
``eta(x)``           ``eta`` (held-out class probabilities, ``(n, k)``)
``o``                ``sphere.center``
``alpha_j``          ``j``-th standard basis vector
``c_j``              ``extents[g, j, s]`` (``s`` = 0 for ``+``, 1 for ``-``)
``rho``              ``sphere.radius``
``R^g``              ``rates`` of group ``g``'s plug-in classifiers
``P(Y = i | G = g)`` ``priors[g, i]``
===================  ================================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog  # type: ignore[import-untyped]
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from ..errors import InvalidConfigError, NumericalError
from ..rates import CONFUSION_TOTAL, SpaceBase, check_rates
from ..region import ball_inside, display_min_radius, group_regions, realistic_region
from ..types import FloatArray, Sphere, as_rate_array
from .datasets import DATASET_NAMES, Dataset, IntArray, load_dataset

__all__ = [
    "DEFAULT_TEST_FRACTION",
    "MATCH_ATOL",
    "MIN_RADIUS_FRACTION",
    "MODELS",
    "REGIONS",
    "SPHERE_MARGIN",
    "DatasetSpace",
    "FeasibleModel",
    "RandomizedClassifier",
    "build_space",
    "fit_feasible_model",
    "plug_in_predictions",
]

#: Share of rows held out to measure rates (the paper trains on 60 %).
DEFAULT_TEST_FRACTION = 0.4
#: Largest difference between a query's rates and the rates its classifier achieves on held-out data.
MATCH_ATOL = 1e-6
#: Smallest sphere accepted by default, as a fraction of the largest any dataset can have with k classes,
#: ``(1/k) / sqrt(k)`` (Algorithm 3's ball when every axis reaches the cube's face). Held-out sampling noise
#: alone gives a classifier-free dataset a sphere of ~0.03 at 400 rows (~0.01 at 4000); 15 % of the
#: binary maximum is 0.053, so a dataset whose features carry no signal is refused instead of yielding a
#: silently degenerate study.
MIN_RADIUS_FRACTION = 0.15
#: The sphere is shrunk by this relative margin so that boundary queries stay strictly feasible for the LP.
SPHERE_MARGIN = 1e-6
#: Class-probability models that `fit_feasible_model` can fit.
MODELS = ("logistic", "gradient_boosting")
#: Where a dataset's query sphere may sit (see `fit_feasible_model`).
REGIONS = ("realistic", "uniform")
#: HiGHS feasibility tolerance; tighter than ``MATCH_ATOL`` so that LP answers pass the match check.
_LP_TOLERANCE = 1e-10
#: An added plug-in must push an axis extent at least this far to count as progress.
_EXTENT_PROGRESS = 1e-9
#: Rounds of column generation per axis extent (each adds one plug-in classifier).
_MAX_COLUMN_ROUNDS = 25
#: Probabilities are floored here before weighting, so "always predict i" (w = e_i) never ties at zero.
_ETA_FLOOR = 1e-300
_HIGHS_OPTIONS = {"primal_feasibility_tolerance": _LP_TOLERANCE, "dual_feasibility_tolerance": _LP_TOLERANCE}


def _default_directions(n_classes: int) -> int:
    return max(64, 24 * n_classes)


def plug_in_predictions(eta: FloatArray, weights: FloatArray) -> IntArray:
    """Predictions ``argmax_i w_i eta_i(x)`` of one plug-in classifier (ties go to the lower class id).

    Parameters
    ----------
    eta : numpy.ndarray, shape (n_rows, n_classes)
        Class probabilities.
    weights : numpy.ndarray, shape (n_classes,)

    Returns
    -------
    numpy.ndarray, shape (n_rows,)
    """
    scores = np.maximum(eta, _ETA_FLOOR) * weights
    result: IntArray = np.argmax(scores, axis=1).astype(np.int64)
    return result


def _confusion_counts(labels: IntArray, predictions: IntArray, k: int) -> FloatArray:
    counts: FloatArray = (
        np.bincount(labels * k + predictions, minlength=k * k).reshape(k, k).astype(np.float64)
    )
    return counts


@dataclass(frozen=True, eq=False)
class RandomizedClassifier:
    """A randomised classifier: on each person, pick plug-in ``l`` with probability ``probabilities[l]``.

    Attributes
    ----------
    weights : numpy.ndarray, shape (n_parts, n_classes)
        Plug-in weights ``w``; part ``l`` predicts ``argmax_i weights[l, i] * eta_hat_i(x)``.
    probabilities : numpy.ndarray, shape (n_parts,)
        Mixture weights (non-negative, summing to one).
    rates : numpy.ndarray, shape (n_classes,)
        Expected held-out rates ``P(h = i | Y = i)`` (within the group, for a group's classifier).
    counts : numpy.ndarray, shape (n_classes, n_classes)
        Expected held-out confusion matrix in people (rows true class, columns prediction).
    group : int
        The group it is meant for (0 without groups).
    """

    weights: FloatArray
    probabilities: FloatArray
    rates: FloatArray
    counts: FloatArray
    group: int = 0

    @property
    def confusion(self) -> FloatArray:
        """The expected confusion matrix scaled to ``CONFUSION_TOTAL`` (100) people."""
        result: FloatArray = CONFUSION_TOTAL * self.counts / float(self.counts.sum())
        return result

    def predict(self, eta: npt.ArrayLike, rng: np.random.Generator) -> IntArray:
        """Sample one prediction per row: draw a part per row, then apply its plug-in rule.

        Parameters
        ----------
        eta : array_like, shape (n_rows, n_classes)
            Class probabilities ``eta_hat(x)`` of the rows.
        rng : numpy.random.Generator
            Source of the randomisation.

        Returns
        -------
        numpy.ndarray, shape (n_rows,)
        """
        eta_array = np.asarray(eta, dtype=np.float64)
        parts = rng.choice(self.probabilities.shape[0], size=eta_array.shape[0], p=self.probabilities)
        predictions = np.empty(eta_array.shape[0], dtype=np.int64)
        for part in np.unique(parts):
            rows = parts == part
            predictions[rows] = plug_in_predictions(eta_array[rows], self.weights[part])
        return predictions


class _GroupPolytope:
    """The plug-in classifiers of one group: weights, held-out confusion counts, rates, Algorithm 3 anchors.

    ``anchors[j][s]`` is the mixture ``(support, lambda)`` over the plug-ins reaching
    ``o + sign * extents[j, s] * alpha_j`` (``s`` = 0: ``+``, 1: ``-``); plug-ins ``0..k-1`` are the trivial
    classifiers, whose uniform mixture reaches ``o``.
    """

    def __init__(
        self,
        weights: FloatArray,
        counts: FloatArray,
        extents: FloatArray,
        anchors: Sequence[Sequence[tuple[IntArray, FloatArray]]],
    ) -> None:
        self.weights = weights
        self.counts = counts
        totals = counts.sum(axis=2)  # (n_vertices, k): people per true class, the same for every vertex
        self.class_totals = totals[0]
        self.rates: FloatArray = np.diagonal(counts, axis1=1, axis2=2) / self.class_totals
        k = counts.shape[1]
        self.k = k
        if not np.allclose(self.rates[:k], np.eye(k), rtol=0.0, atol=0.0):
            raise InvalidConfigError(
                "the first k plug-ins must be the trivial classifiers 'always predict i'"
            )
        # Equality system of "mixture reaches rates r": rows are the k rates and the sum-to-one row.
        self.a_eq: FloatArray = np.vstack([self.rates.T, np.ones((1, self.rates.shape[0]))])
        self.extents = extents
        self.anchors = anchors

    def _cross_polytope_mixture(self, rates: FloatArray) -> FloatArray | None:
        """Closed-form mixture for rates inside ``conv{o +- c_j alpha_j}``; ``None`` outside it."""
        k = self.k
        offset = rates - 1.0 / k
        sides = (offset < 0.0).astype(np.int64)
        reach = self.extents[np.arange(k), sides]
        if np.any((reach <= 0.0) & (offset != 0.0)):
            return None
        shares = np.divide(np.abs(offset), reach, out=np.zeros(k), where=reach > 0.0)
        rest = 1.0 - float(shares.sum())
        if rest < -_LP_TOLERANCE:
            return None
        lam = np.zeros(self.rates.shape[0])
        lam[:k] = max(rest, 0.0) / k  # the uniform random classifier o
        for j in np.flatnonzero(shares > 0.0):
            support, weights = self.anchors[int(j)][int(sides[j])]
            lam[support] += shares[j] * weights
        return lam

    def _lp_mixture(self, rates: FloatArray) -> FloatArray:
        n = self.rates.shape[0]
        result = linprog(
            np.zeros(n),
            A_eq=self.a_eq,
            b_eq=np.append(rates, 1.0),
            bounds=(0.0, None),
            method="highs-ds",
            options=_HIGHS_OPTIONS,
        )
        if result.status == 2:
            raise InvalidConfigError(
                f"rates {np.round(rates, 6).tolist()} are not achievable on this dataset: they lie outside "
                "the feasible set; queries must lie inside the space's sphere"
            )
        if result.status != 0 or result.x is None:
            raise NumericalError(f"the mixture linear program failed: {result.message}")
        lam: FloatArray = np.clip(result.x, 0.0, None)
        return lam

    def mixture(self, rates: FloatArray, lam: FloatArray | None = None) -> tuple[IntArray, FloatArray]:
        """Support and mixture weights with ``sum lambda_l R_l = rates`` (at most ``k + 1`` parts).

        Queries inside the sphere decompose in closed form over Algorithm 3's anchors (fast and exact);
        other feasible rates fall back to a linear program; a caller that already holds weights over
        every plug-in (``lam``, e.g. an optimiser's) skips both. Carathéodory reduction then keeps at
        most ``k + 1`` plug-ins, and a small exact solve on that support removes rounding drift.
        """
        if lam is None:
            lam = self._cross_polytope_mixture(rates)
        if lam is None:
            lam = self._lp_mixture(rates)
        support, weights = _caratheodory(self.a_eq, lam)
        b_eq = np.append(rates, 1.0)
        exact, *_ = np.linalg.lstsq(self.a_eq[:, support], b_eq, rcond=None)
        if np.all(exact >= 0.0):
            weights = exact
        weights = weights / weights.sum()
        achieved = self.rates[support].T @ weights
        error = float(np.max(np.abs(achieved - rates)))
        if error > MATCH_ATOL:
            raise NumericalError(
                f"the mixture reaches rates within {error:.2e} of the query, "
                f"more than MATCH_ATOL = {MATCH_ATOL:g}"
            )
        return support, weights

    def to_dict(self) -> dict[str, Any]:
        return {
            "weights": self.weights.tolist(),
            "counts": self.counts.astype(np.int64).tolist(),
            "anchors": [
                [{"support": support.tolist(), "weights": weights.tolist()} for support, weights in axis]
                for axis in self.anchors
            ],
        }


def _caratheodory(a_eq: FloatArray, lam: FloatArray) -> tuple[IntArray, FloatArray]:
    """Reduce a convex combination to at most ``rank(a_eq)`` points with the same image ``a_eq @ lam``.

    Each null-space direction ``mu`` of the support's columns (``sum mu = 0`` thanks to the ones row)
    can be subtracted until one weight hits zero, which removes that plug-in without moving the rates.
    One SVD gives all directions; after each removal the remaining directions are made zero at the
    removed point (column elimination), so they stay valid for the smaller support.
    """
    support = np.flatnonzero(lam > 0.0)
    weights = lam[support].copy()
    if support.shape[0] <= a_eq.shape[0]:
        return support.astype(np.int64), weights
    _, singular, vt = np.linalg.svd(a_eq[:, support])
    rank = int(np.sum(singular > singular[0] * 1e-12)) if singular.size else 0
    null = vt[rank:].T.copy()  # (n_support, n_support - rank)
    alive = np.ones(support.shape[0], dtype=bool)
    # Dropped points are zero in every later direction (column elimination below), so they are never
    # selected again; this loop is the hot path of a query for k = 10, hence the minimal numpy calls.
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(null.shape[1]):
            mu = null[:, t]
            if mu.max() <= 0.0:
                mu = -mu
            ratios = np.where(mu > 0.0, weights / mu, np.inf)
            drop = int(np.argmin(ratios))
            step = float(ratios[drop])
            if not np.isfinite(step):
                continue
            weights -= step * mu
            np.maximum(weights, 0.0, out=weights)
            weights[drop] = 0.0
            alive[drop] = False
            later = null[:, t + 1 :]
            later -= np.outer(mu, later[drop] / mu[drop])
            later[drop] = 0.0
    keep = alive & (weights > 0.0)
    result: IntArray = support[keep].astype(np.int64)
    return result, weights[keep]


class DatasetSpace(SpaceBase):
    """Query space of a real dataset: the sphere inside the plug-in classifiers' feasible set.

    Build one with `build_space` or `fit_feasible_model`; rebuild a stored one with `from_dict` (no
    retraining: the description carries every plug-in's weights and held-out confusion counts). Follows
    the query-space contract, `elicitation.rates.QuerySpace`: the sphere lies inside every group's feasible
    set (``recipe["region"]`` says where it sits) and the priors are the held-out class priors.
    """

    kind = "dataset"

    def __init__(
        self,
        *,
        name: str,
        class_names: Sequence[str],
        group_names: Sequence[str],
        polytopes: Sequence[_GroupPolytope],
        extents: FloatArray,
        radius: float,
        recipe: Mapping[str, Any],
        center: npt.ArrayLike | None = None,
        group_spheres: Sequence[Sphere] | None = None,
    ) -> None:
        k = len(class_names)
        if k < 2 or not polytopes or any(p.k != k for p in polytopes):
            raise InvalidConfigError("a dataset space needs >= 2 classes and one polytope per group")
        if len(polytopes) != max(len(group_names), 1) or len(group_names) == 1:
            raise InvalidConfigError("group_names must be empty (no groups) or name every group (>= 2)")
        self._name = name
        self._class_names = tuple(class_names)
        self._group_names = tuple(group_names)
        self._polytopes = tuple(polytopes)
        self._extents = np.array(extents, dtype=np.float64)
        self._extents.setflags(write=False)
        self._sphere = (
            Sphere.around_uniform(k, radius)
            if center is None
            else Sphere(np.asarray(center, dtype=np.float64), radius)
        )
        self._recipe = dict(recipe)
        priors = np.array([p.class_totals / p.class_totals.sum() for p in polytopes])
        priors.setflags(write=False)
        self._priors = priors
        if group_spheres is not None and (
            len(group_spheres) != len(polytopes) or any(own.n_classes != k for own in group_spheres)
        ):
            raise InvalidConfigError(f"group_spheres must hold one sphere of {k} rates per group")
        self._group_spheres = None if group_spheres is None else tuple(group_spheres)

    # -- the query-space contract ------------------------------------------------------------------
    @property
    def name(self) -> str:
        """Dataset name."""
        return self._name

    @property
    def group_spheres(self) -> tuple[Sphere, ...]:
        """One query sphere per group (`elicitation.region.group_regions`) for the elicitors asking each
        group in its own; the common `sphere` repeated when the space has none (no groups, the paper's
        ``o``, or no group fits a useful sphere)."""
        if self._group_spheres is None:
            return (self._sphere,) * self.n_groups
        return self._group_spheres

    # -- extras ------------------------------------------------------------------------------------
    @property
    def recipe(self) -> dict[str, Any]:
        """How the space was built (dataset, seed, options); `FeasibleModel.from_recipe` retrains it."""
        return dict(self._recipe)

    @property
    def extents(self) -> FloatArray:
        """Algorithm 3's axis extents ``c``, shape ``(n_groups, n_classes, 2)`` (``+`` then ``-``)."""
        return self._extents

    @property
    def max_radius(self) -> float:
        """The radius of Algorithm 3's inscribed ball (the sphere may have been asked to be smaller)."""
        return _inscribed_radius(self._extents)

    @property
    def group_sizes(self) -> IntArray:
        """Held-out people per group, shape ``(n_groups,)``."""
        return np.array([int(p.class_totals.sum()) for p in self._polytopes], dtype=np.int64)

    @property
    def tau(self) -> FloatArray:
        """Held-out ``P(G = g | Y = i)``, shape ``(n_groups, n_classes)`` (Definition 3's ``tau``)."""
        totals = np.array([p.class_totals for p in self._polytopes])
        result: FloatArray = totals / totals.sum(axis=0)
        return result

    def n_plug_ins(self, group: int = 0) -> int:
        """Number of plug-in classifiers spanning group ``group``'s feasible set."""
        return int(self._polytopes[group].rates.shape[0])

    def plug_in_rates(self, group: int = 0) -> FloatArray:
        """Held-out rates of group ``group``'s plug-in classifiers, shape ``(n_plug_ins, n_classes)``."""
        return self._polytopes[group].rates.copy()

    def with_plug_ins(self, weights: Sequence[FloatArray], counts: Sequence[FloatArray]) -> DatasetSpace:
        """This space with more plug-in classifiers in each group's feasible set (the sphere unchanged).

        ``weights[g]`` ``(n_new, k)`` and ``counts[g]`` ``(n_new, k, k)`` are group ``g``'s new plug-ins and
        their held-out confusion counts; existing plug-ins keep their indices.
        """
        if len(weights) != self.n_groups or len(counts) != self.n_groups:
            raise InvalidConfigError(f"give new plug-ins for each of the {self.n_groups} group(s)")
        polytopes = []
        for polytope, new_weights, new_counts in zip(self._polytopes, weights, counts, strict=True):
            k = self.n_classes
            new_weights = np.asarray(new_weights, dtype=np.float64).reshape(-1, k)
            new_counts = np.asarray(new_counts, dtype=np.float64).reshape(-1, k, k)
            if new_weights.shape[0] != new_counts.shape[0] or (
                new_counts.shape[0] and not np.allclose(new_counts.sum(axis=2), polytope.class_totals)
            ):
                raise InvalidConfigError(
                    "new plug-ins need one confusion count matrix each, on the same people"
                )
            polytopes.append(
                _GroupPolytope(
                    np.vstack([polytope.weights, new_weights]),
                    np.vstack([polytope.counts, new_counts]),
                    polytope.extents,
                    polytope.anchors,
                )
            )
        return DatasetSpace(
            name=self._name,
            class_names=self._class_names,
            group_names=self._group_names,
            polytopes=polytopes,
            extents=self._extents,
            radius=self._sphere.radius,
            recipe=self._recipe,
            center=self._sphere.center,
        )

    def mixed_classifier(self, weights: npt.ArrayLike, group: int = 0) -> RandomizedClassifier:
        """The randomised classifier mixing group ``group``'s plug-ins with ``weights`` (one per plug-in).

        The mixture is reduced to at most ``n_classes + 1`` plug-ins with the same rates (Carathéodory),
        so the classifier reaches ``plug_in_rates(group).T @ weights`` within ``MATCH_ATOL``.

        Raises
        ------
        InvalidConfigError
            If ``weights`` is not a distribution over the group's plug-ins.
        """
        polytope = self._polytopes[self._check_group(group)]
        lam = as_rate_array(weights, "weights", ndim=1)
        if lam.shape != (polytope.rates.shape[0],) or np.any(lam < 0.0) or abs(lam.sum() - 1.0) > 1e-9:
            raise InvalidConfigError(
                f"weights must be {polytope.rates.shape[0]} non-negative numbers summing to one "
                f"(one per plug-in of the group)"
            )
        return self._classifier(polytope, polytope.rates.T @ lam, lam, int(group))

    def _check_group(self, group: int) -> int:
        if (
            isinstance(group, bool)
            or not isinstance(group, int | np.integer)
            or not 0 <= group < self.n_groups
        ):
            raise InvalidConfigError(f"group must be an integer in 0..{self.n_groups - 1}, got {group!r}")
        return int(group)

    @staticmethod
    def _classifier(
        polytope: _GroupPolytope, target: FloatArray, lam: FloatArray | None, group: int
    ) -> RandomizedClassifier:
        support, weights = polytope.mixture(target, lam)
        counts = np.tensordot(weights, polytope.counts[support], axes=1)
        achieved = polytope.rates[support].T @ weights
        for array in (weights, achieved, counts):
            array.setflags(write=False)
        plug_ins = polytope.weights[support].copy()
        plug_ins.setflags(write=False)
        return RandomizedClassifier(plug_ins, weights, achieved, counts, group)

    def classifier(self, rates: npt.ArrayLike, group: int = 0) -> RandomizedClassifier:
        """The randomised classifier achieving ``rates`` (within ``group`` when there are groups).

        Parameters
        ----------
        rates : array_like, shape (n_classes,)
            Target rates, normally a query point inside `sphere`.
        group : int
            Group index ``0..n_groups-1``.

        Returns
        -------
        RandomizedClassifier
            At most ``n_classes + 1`` plug-ins mixed; its rates match ``rates`` within ``MATCH_ATOL``.

        Raises
        ------
        InvalidConfigError
            If ``rates`` is malformed or outside the feasible set.
        NumericalError
            If the linear program fails.
        """
        polytope = self._polytopes[self._check_group(group)]
        return self._classifier(polytope, check_rates(rates, (self.n_classes,)), None, int(group))

    def classifiers(self, rates: npt.ArrayLike) -> tuple[RandomizedClassifier, ...]:
        """One classifier per group for rates of shape `rate_shape` (a 1-tuple without groups)."""
        array = check_rates(rates, self.rate_shape)
        rows = array[None, :] if self.n_groups == 1 else array
        return tuple(self.classifier(rows[g], g) for g in range(self.n_groups))

    def confusion_counts(self, rates: npt.ArrayLike) -> FloatArray:
        """Expected held-out confusion counts: ``(k, k)``, or ``(m, k, k)`` for group rates."""
        stacked = np.stack([c.counts for c in self.classifiers(rates)])
        result: FloatArray = stacked[0] if self.n_groups == 1 else stacked
        return result

    def confusion(self, rates: npt.ArrayLike) -> FloatArray:
        """Confusion matrix out of 100 of the classifier achieving ``rates`` (contract of `QuerySpace`).

        Parameters
        ----------
        rates : array_like, shape (n_classes,) or (n_groups, n_classes)

        Returns
        -------
        numpy.ndarray, shape (n_classes, n_classes) or (n_groups, n_classes, n_classes)
            Rows true class, columns prediction; each (group's) matrix sums to 100.
        """
        stacked = np.stack([c.confusion for c in self.classifiers(rates)])
        result: FloatArray = stacked[0] if self.n_groups == 1 else stacked
        return result

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description with every plug-in, so `from_dict` rebuilds it exactly without data."""
        return {
            "kind": self.kind,
            "name": self._name,
            "class_names": list(self._class_names),
            "group_names": list(self._group_names),
            "radius": self._sphere.radius,
            "center": self._sphere.center.tolist(),
            "group_spheres": None
            if self._group_spheres is None
            else [{"center": own.center.tolist(), "radius": own.radius} for own in self._group_spheres],
            "extents": self._extents.tolist(),
            "recipe": dict(self._recipe),
            "groups": [p.to_dict() for p in self._polytopes],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetSpace:
        """Rebuild a space from `to_dict` output, or build one from a recipe.

        A full description (with ``groups``, the plug-ins) is rebuilt exactly, without data or training.
        A short one, ``{"kind": "dataset", "recipe": {"dataset": "adult", "groups": true, "seed": 0,
        ...}}`` (options of `fit_feasible_model`), trains the space from the bundled dataset; store its
        `to_dict` afterwards so later rebuilds are instant.

        Raises
        ------
        InvalidConfigError
            If a field is missing or malformed, or the recipe is invalid.
        """
        if not isinstance(data, Mapping) or data.get("kind") != cls.kind:
            raise InvalidConfigError("not a dataset space description (kind must be 'dataset')")
        if "groups" not in data and isinstance(data.get("recipe"), Mapping):
            return FeasibleModel.from_recipe(data["recipe"]).space
        missing = {"name", "class_names", "group_names", "radius", "extents", "groups"} - set(data)
        if missing:
            raise InvalidConfigError(f"dataset space description lacks {sorted(missing)}")
        k = len(data["class_names"])
        extents = as_rate_array(data["extents"], "extents", ndim=3)
        if extents.shape != (len(data["groups"]), k, 2):
            raise InvalidConfigError(f"extents must have shape (n_groups, {k}, 2), got {extents.shape}")
        polytopes = []
        for index, group in enumerate(data["groups"]):
            weights = as_rate_array(group["weights"], f"groups[{index}].weights", ndim=2)
            counts = as_rate_array(group["counts"], f"groups[{index}].counts", ndim=3)
            if weights.shape[1] != k or counts.shape != (weights.shape[0], k, k):
                raise InvalidConfigError(
                    f"groups[{index}] must hold (n, {k}) weights and (n, {k}, {k}) counts"
                )
            polytopes.append(
                _GroupPolytope(np.array(weights), np.array(counts), extents[index], _parse_anchors(group, k))
            )
        return cls(
            name=str(data["name"]),
            class_names=[str(c) for c in data["class_names"]],
            group_names=[str(g) for g in data["group_names"]],
            polytopes=polytopes,
            extents=extents,
            radius=float(data["radius"]),
            recipe=data.get("recipe", {}),
            # Descriptions stored before the centre was recorded used the uniform classifier's rates.
            center=None if data.get("center") is None else as_rate_array(data["center"], "center"),
            group_spheres=_parse_group_spheres(data, polytopes),
        )

    def __repr__(self) -> str:
        groups = f", n_groups={self.n_groups}" if self.n_groups > 1 else ""
        radius = f"radius={self._sphere.radius:.4f}"
        return f"DatasetSpace({self._name!r}, n_classes={self.n_classes}{groups}, {radius})"


def _parse_group_spheres(data: Mapping[str, Any], polytopes: Sequence[_GroupPolytope]) -> list[Sphere] | None:
    """The stored per-group spheres; descriptions stored before they existed get them recomputed."""
    if "group_spheres" not in data:
        recipe = data.get("recipe") or {}
        if len(polytopes) < 2 or recipe.get("region") != "realistic":
            return None
        return _group_spheres(polytopes)
    stored = data["group_spheres"]
    if stored is None:
        return None
    if not isinstance(stored, list) or len(stored) != len(polytopes):
        raise InvalidConfigError("group_spheres must hold one sphere per group")
    spheres = []
    for index, item in enumerate(stored):
        if not isinstance(item, Mapping) or not {"center", "radius"} <= set(item):
            raise InvalidConfigError(f"group_spheres[{index}] needs a center and a radius")
        center = as_rate_array(item["center"], f"group_spheres[{index}].center", ndim=1)
        sphere = Sphere(center, float(item["radius"]))
        if not ball_inside(polytopes[index].rates, sphere):
            raise InvalidConfigError(f"group_spheres[{index}] leaves that group's feasible set")
        spheres.append(sphere)
    return spheres


def _group_spheres(polytopes: Sequence[_GroupPolytope]) -> list[Sphere] | None:
    """Per-group realistic spheres (`elicitation.region.group_regions`), None when some group has none."""
    regions = group_regions(
        [polytope.rates for polytope in polytopes],
        np.array([p.class_totals / p.class_totals.sum() for p in polytopes]),
    )
    return None if regions is None else [Sphere(region.center, region.radius) for region in regions]


def _parse_anchors(group: Mapping[str, Any], k: int) -> list[list[tuple[IntArray, FloatArray]]]:
    anchors = group.get("anchors")
    n = len(group["weights"])
    if not isinstance(anchors, list) or len(anchors) != k or any(len(axis) != 2 for axis in anchors):
        raise InvalidConfigError(f"each group needs anchors for {k} axes and 2 signs")
    parsed: list[list[tuple[IntArray, FloatArray]]] = []
    for axis in anchors:
        pairs: list[tuple[IntArray, FloatArray]] = []
        for anchor in axis:
            support = np.asarray(anchor["support"], dtype=np.int64)
            weights = as_rate_array(anchor["weights"], "anchor weights", ndim=1)
            if support.shape != weights.shape or support.size == 0 or support.min() < 0 or support.max() >= n:
                raise InvalidConfigError("anchor support and weights must match and index the plug-ins")
            pairs.append((support, np.array(weights)))
        parsed.append(pairs)
    return parsed


def _inscribed_radius(extents: FloatArray) -> float:
    """Radius of the largest ball at ``o`` inside ``conv{o +- c alpha_j}`` (Algorithm 3, line 6)."""
    c = np.min(extents, axis=(0, 2)) if extents.ndim == 3 else np.min(extents, axis=-1)
    if np.any(c <= 0.0):
        return 0.0
    return float(1.0 / np.sqrt(np.sum(1.0 / c**2)))


# ---------------------------------------------------------------------------------------------------
# Fitting
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FeasibleModel:
    """A fitted feasible-space model: the estimator, the held-out split and the resulting `DatasetSpace`.

    Attributes
    ----------
    dataset : Dataset
    space : DatasetSpace
    estimator : object
        The fitted scikit-learn pipeline (``predict_proba`` gives ``eta_hat``).
    test_rows : numpy.ndarray
        Indices of the held-out rows in ``dataset``.
    eta : numpy.ndarray, shape (n_test, n_classes)
        ``eta_hat`` on the held-out rows.
    """

    dataset: Dataset
    space: DatasetSpace
    estimator: Any
    test_rows: IntArray
    eta: FloatArray

    @property
    def test_labels(self) -> IntArray:
        """True classes of the held-out rows."""
        result: IntArray = self.dataset.labels[self.test_rows]
        return result

    @property
    def test_groups(self) -> IntArray:
        """Group ids of the held-out rows (zeros without groups)."""
        if self.space.n_groups == 1 or self.dataset.groups is None:
            return np.zeros(self.test_rows.shape[0], dtype=np.int64)
        result: IntArray = self.dataset.groups[self.test_rows]
        return result

    def sample_rates(self, classifier: RandomizedClassifier, rng: np.random.Generator) -> FloatArray:
        """Empirical held-out rates of one random draw of ``classifier``'s predictions (its group's rows).

        Used to check a mixture: the result is within sampling error (``~ 1 / sqrt(class size)``) of
        ``classifier.rates``.
        """
        rows = self.test_groups == classifier.group
        labels = self.test_labels[rows]
        predictions = classifier.predict(self.eta[rows], rng)
        counts = _confusion_counts(labels, predictions, self.space.n_classes)
        result: FloatArray = np.diag(counts) / counts.sum(axis=1)
        return result

    @classmethod
    def from_recipe(cls, recipe: Mapping[str, Any]) -> FeasibleModel:
        """Retrain from a `DatasetSpace.recipe` (bundled datasets only; user CSVs need their file).

        ``recipe`` holds ``dataset`` (a bundled name), ``groups`` (bool, keep the protected groups) and
        any options of `fit_feasible_model`.

        Raises
        ------
        InvalidConfigError
            For an unknown dataset, option or option value.
        """
        options = dict(recipe)
        allowed = {
            "dataset",
            "groups",
            "seed",
            "test_fraction",
            "model",
            "n_directions",
            "radius",
            "min_radius",
            "region",
        }
        unknown = set(options) - allowed
        if unknown:
            raise InvalidConfigError(
                f"unknown recipe option(s) {sorted(unknown)}; allowed: {sorted(allowed)}"
            )
        name = options.pop("dataset", None)
        if name not in DATASET_NAMES:
            raise InvalidConfigError(
                f"recipe dataset {name!r} is not a bundled dataset; rebuild user CSV spaces with "
                "fit_feasible_model(load_csv(...)) or keep their to_dict() description"
            )
        use_groups = bool(options.pop("groups", False))
        dataset = load_dataset(str(name), groups=use_groups)
        if use_groups and dataset.groups is None:
            raise InvalidConfigError(f"dataset {name!r} has no protected groups; set groups to false")
        return fit_feasible_model(dataset, **options)


def build_space(name: str, *, groups: bool = False, **options: Any) -> DatasetSpace:
    """Load bundled dataset ``name`` and return its query space (see `fit_feasible_model` for options).

    Parameters
    ----------
    name : str
        One of `elicitation.lab.datasets.DATASET_NAMES`.
    groups : bool
        Build a fairness space with the dataset's protected groups (``adult``, ``default``).
    **options
        ``seed``, ``test_fraction``, ``model``, ``n_directions``, ``radius``, ``min_radius``.
    """
    return FeasibleModel.from_recipe({"dataset": name, "groups": groups, **options}).space


def fit_feasible_model(
    dataset: Dataset,
    *,
    seed: int = 0,
    test_fraction: float = DEFAULT_TEST_FRACTION,
    model: str = "logistic",
    n_directions: int | None = None,
    radius: float | None = None,
    min_radius: float | None = None,
    region: str = "realistic",
) -> FeasibleModel:
    """Fit ``eta_hat`` on a train split and build the feasible space on the held-out split.

    Parameters
    ----------
    dataset : Dataset
        With ``groups`` the space is a fairness space (one feasible set per group, common sphere).
    seed : int
        Seeds the split, the model and the sampled plug-in directions.
    test_fraction : float
        Held-out share in ``(0, 1)``; default 0.4 (the paper trains on 60 %).
    model : str
        ``"logistic"`` (standardised features, multinomial logistic regression) or
        ``"gradient_boosting"`` (histogram gradient boosting).
    n_directions : int, optional
        Random plug-in directions sampled per group before refinement; default ``max(64, 24 k)``.
    radius : float, optional
        Ask for a smaller sphere than the largest one Algorithm 3 finds (e.g. the paper's 0.2).
    min_radius : float, optional
        Refuse spheres smaller than this; default ``MIN_RADIUS_FRACTION * (1/k) / sqrt(k)``.
    region : {"realistic", "uniform"}
        Where the sphere sits: among classifiers beating the majority-class baseline
        (`elicitation.region.realistic_region`; the default), or at the paper's uniform classifier ``o``.
        A realistic region that does not fit falls back to ``o``.

    Returns
    -------
    FeasibleModel
        ``.space`` is the `DatasetSpace`.

    Raises
    ------
    InvalidConfigError
        For bad options, a held-out split lacking some class in some group, a sphere smaller than
        ``min_radius`` (the message gives the radius) or a requested ``radius`` above the largest one.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InvalidConfigError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(test_fraction, float | int) or not 0.05 <= float(test_fraction) <= 0.95:
        raise InvalidConfigError(f"test_fraction must lie in [0.05, 0.95], got {test_fraction!r}")
    if model not in MODELS:
        raise InvalidConfigError(f"model must be one of {MODELS}, got {model!r}")
    if region not in REGIONS:
        raise InvalidConfigError(f"region must be one of {REGIONS}, got {region!r}")
    k = dataset.n_classes
    if n_directions is None:
        n_directions = _default_directions(k)
    if (
        isinstance(n_directions, bool)
        or not isinstance(n_directions, int)
        or not 0 <= n_directions <= 100_000
    ):
        raise InvalidConfigError(f"n_directions must be an integer in [0, 100000], got {n_directions!r}")
    if min_radius is None:
        min_radius = MIN_RADIUS_FRACTION / (k * np.sqrt(k))
    if not isinstance(min_radius, float | int) or not 0.0 < float(min_radius) < 0.5:
        raise InvalidConfigError(f"min_radius must lie in (0, 0.5), got {min_radius!r}")
    if radius is not None and (not isinstance(radius, float | int) or not 0.0 < float(radius) <= 1.0 / k):
        raise InvalidConfigError(f"radius must lie in (0, 1/k] = (0, {1.0 / k:g}], got {radius!r}")

    from sklearn.model_selection import train_test_split  # type: ignore[import-untyped]

    m = dataset.n_groups
    groups = dataset.groups if dataset.groups is not None else np.zeros(dataset.n_rows, dtype=np.int64)
    strata = groups * k + dataset.labels
    if np.min(np.bincount(strata, minlength=m * k)) < 2:
        raise InvalidConfigError(
            f"dataset {dataset.name!r} has a class (within a group) with fewer than 2 rows; "
            "it cannot be split into train and held-out parts"
        )
    train_rows, test_rows = train_test_split(
        np.arange(dataset.n_rows), test_size=float(test_fraction), random_state=int(seed), stratify=strata
    )
    train_rows = np.sort(train_rows)
    test_rows = np.sort(test_rows).astype(np.int64)
    estimator = _make_estimator(model, int(seed))
    # One thread: OpenMP/BLAS pools oversubscribe small shared machines (10x slower for gradient
    # boosting on 2 busy cores) and single-threaded fits are reproducible bit for bit.
    with threadpool_limits(limits=1):
        estimator.fit(dataset.features[train_rows], dataset.labels[train_rows])
        eta = np.asarray(estimator.predict_proba(dataset.features[test_rows]), dtype=np.float64)
    if eta.shape != (test_rows.shape[0], k):
        raise NumericalError(f"the {model} model predicted {eta.shape[1]} classes, expected {k}")
    labels = dataset.labels[test_rows]
    test_groups = groups[test_rows]
    rng = np.random.default_rng(int(seed))

    polytopes: list[_GroupPolytope] = []
    extents = np.zeros((m, k, 2))
    for g in range(m):
        rows = test_groups == g
        class_totals = np.bincount(labels[rows], minlength=k)
        if np.any(class_totals == 0):
            where = f" in group {dataset.group_names[g]!r}" if dataset.group_names else ""
            raise InvalidConfigError(f"the held-out split has no rows of some class{where}; use more data")
        polytope, group_extents = _group_polytope(eta[rows], labels[rows], n_directions, rng)
        polytopes.append(polytope)
        extents[g] = group_extents

    largest = _inscribed_radius(extents) * (1.0 - SPHERE_MARGIN)
    if largest < float(min_radius):
        raise InvalidConfigError(
            f"the feasible set of dataset {dataset.name!r} only fits a sphere of radius {largest:.4f} "
            "around o, "
            f"below min_radius = {float(min_radius):.4f}: the classifiers cannot tell the classes apart well "
            "enough (or a class/group has too few rows) for a useful study"
        )
    center: FloatArray | None = None
    group_spheres: list[Sphere] | None = None
    if region == "realistic" and m > 1:
        group_spheres = _group_spheres(polytopes)
    if region == "realistic":
        chosen = realistic_region(
            [polytope.rates for polytope in polytopes],
            np.array([p.class_totals / p.class_totals.sum() for p in polytopes]),
            min_radius=display_min_radius(np.array([p.class_totals for p in polytopes])),
        )
        if chosen is not None:
            center, largest = chosen.center, chosen.radius
    if radius is not None and float(radius) > largest:
        raise InvalidConfigError(
            f"radius {float(radius):g} is larger than the largest sphere in the feasible set of "
            f"{dataset.name!r}, {largest:.4f}"
        )
    recipe = {
        "dataset": dataset.name,
        "groups": dataset.groups is not None,
        "seed": int(seed),
        "test_fraction": float(test_fraction),
        "model": model,
        "n_directions": int(n_directions),
        "radius": None if radius is None else float(radius),
        "min_radius": float(min_radius),
        "region": region,
    }
    space = DatasetSpace(
        name=dataset.name,
        class_names=dataset.class_names,
        group_names=dataset.group_names,
        polytopes=polytopes,
        extents=extents,
        radius=largest if radius is None else float(radius),
        recipe=recipe,
        center=center,
        group_spheres=group_spheres,
    )
    test_rows.setflags(write=False)
    eta.setflags(write=False)
    return FeasibleModel(dataset, space, estimator, test_rows, eta)


def _make_estimator(model: str, seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier  # type: ignore[import-untyped]
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]
    from sklearn.pipeline import make_pipeline  # type: ignore[import-untyped]
    from sklearn.preprocessing import StandardScaler  # type: ignore[import-untyped]

    if model == "logistic":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    return HistGradientBoostingClassifier(random_state=seed, max_iter=100)


def _group_polytope(
    eta: FloatArray, labels: IntArray, n_directions: int, rng: np.random.Generator
) -> tuple[_GroupPolytope, FloatArray]:
    """Plug-ins of one group (trivial, axis, random directions, refined by column generation) + extents."""
    k = eta.shape[1]
    priors = np.bincount(labels, minlength=k) / labels.shape[0]
    eye = np.eye(k)
    # trivial classifiers (their weights are used as they are), then utilities: "never i", "favour i"
    directions = [eye, 1.0 - eye, eye - 1.0 / k]
    if n_directions:
        directions.append(rng.normal(size=(n_directions, k)))
    utilities = np.vstack(directions)
    weights = np.vstack([eye, utilities[k:] / priors])
    pool = _PlugInPool(eta, labels, k)
    for w in weights:
        pool.add(w)
    extents = np.zeros((k, 2))
    center = np.full(k, 1.0 / k)
    anchors: list[list[tuple[IntArray, FloatArray]]] = []
    for j in range(k):
        axis: list[tuple[IntArray, FloatArray]] = []
        for s, sign in enumerate((1.0, -1.0)):
            extents[j, s], support, lam = pool.axis_extent(center, j, sign, priors)
            axis.append((support, lam))
        anchors.append(axis)
    return _GroupPolytope(pool.weight_array(), pool.count_array(), extents, anchors), extents


class _PlugInPool:
    """Distinct plug-in classifiers (by held-out confusion counts) of one group."""

    def __init__(self, eta: FloatArray, labels: IntArray, k: int) -> None:
        self.eta = eta
        self.labels = labels
        self.k = k
        self.class_totals = np.bincount(labels, minlength=k).astype(np.float64)
        self.weights: list[FloatArray] = []
        self.counts: list[FloatArray] = []
        self.rates: list[FloatArray] = []
        self._seen: set[bytes] = set()

    def add(self, weights: FloatArray) -> bool:
        counts = _confusion_counts(self.labels, plug_in_predictions(self.eta, weights), self.k)
        key = counts.astype(np.int64).tobytes()
        if key in self._seen:
            return False
        self._seen.add(key)
        self.weights.append(np.asarray(weights, dtype=np.float64))
        self.counts.append(counts)
        self.rates.append(np.diag(counts) / self.class_totals)
        return True

    def weight_array(self) -> FloatArray:
        return np.array(self.weights)

    def count_array(self) -> FloatArray:
        return np.array(self.counts)

    def axis_extent(
        self, center: FloatArray, axis: int, sign: float, priors: FloatArray
    ) -> tuple[float, IntArray, FloatArray]:
        """Largest ``c`` with ``center + sign * c * alpha_axis`` in the hull (LP, column generation).

        Returns the extent and the mixture (support, weights) over the pool reaching that point.
        """
        best = -1.0
        for round_index in range(_MAX_COLUMN_ROUNDS):
            rates = np.array(self.rates)
            n = rates.shape[0]
            direction = np.zeros(self.k)
            direction[axis] = sign
            # variables: lambda (n), c; maximise c s.t. R^T lambda - c * direction = center, sum lambda = 1
            a_eq = np.zeros((self.k + 1, n + 1))
            a_eq[: self.k, :n] = rates.T
            a_eq[: self.k, n] = -direction
            a_eq[self.k, :n] = 1.0
            cost = np.zeros(n + 1)
            cost[n] = -1.0
            result = linprog(
                cost,
                A_eq=a_eq,
                b_eq=np.append(center, 1.0),
                bounds=[(0.0, None)] * n + [(0.0, 1.0)],
                method="highs",
                options=_HIGHS_OPTIONS,
            )
            if result.status != 0:
                raise NumericalError(f"the axis-extent linear program failed: {result.message}")
            extent = float(result.x[n])
            improved = extent > best + _EXTENT_PROGRESS
            if extent >= best:  # adding plug-ins never shrinks the hull; keep the best mixture found
                best = extent
                lam = np.clip(result.x[:n], 0.0, None)
                support = np.flatnonzero(lam > 0.0).astype(np.int64)
                anchor = (support, lam[support] / lam[support].sum())
            if not improved and round_index > 0:
                break
            # The duals (sensitivities of the objective to the centre) are the outward normal of the hull
            # facet that stops the ray; the plug-in for that utility (w = normal / priors) is the
            # classifier most likely to push the facet outwards.
            normal = np.asarray(result.eqlin.marginals[: self.k], dtype=np.float64)
            if not np.any(np.abs(normal) > 0.0) or not self.add(normal / priors):
                break
        return best, anchor[0], anchor[1]
