"""Active, noise-robust metric elicitation: Bayesian half-space learning with perceptible queries (issue 7).

Theory of operation
-------------------
For the linear, quadratic and fair quadratic families, ``phi(r1) - phi(r2) = <w, f(r1, r2)>`` is linear in
the metric's parameters ``w``, so every answer is a half-space on the unit sphere of ``w`` (normalised as
in the paper). The elicitor keeps a seeded particle posterior over ``w`` (`elicitation.posterior`) under
a logistic answer model ``P(correct) = sigmoid(beta |phi(r1) - phi(r2)|)`` (``beta`` fixed, marginalised
over a grid, or ``None`` for the noise-free oracle of Definition 1) and, before every question:

1. draws candidate pairs inside the study's sphere from the seeded rng, keeping only *perceptible* pairs:
   some confusion-matrix cell must differ by at least ``min_cell_gap`` people out of 100. The diagonal
   cells ``100 P(Y=i) r_i`` do not depend on how a space spreads the misclassified mass, so the check uses
   them (a sufficient condition for every query space of ``notes/contracts.md``). For quadratic metrics
   it adds pairs that are exact ties under single posterior particles (two distant points on one level
   set): when the gradient dominates, random pairs are all decided by the slope, ties split the
   posterior by its curvature;
2. screens them with a committee of posterior particles, rescores the best with every particle by the
   expected information gain ``H(E[p]) - E[H(p)]`` of the answer (for the noise-free model: the entropy
   of the posterior split) and refines the leaders by local perturbation;
3. asks the best pair, then reweights, resamples and rejuvenates the particles.

It stops when the posterior spread (expected distance, in the paper's normalised parameters, between a
posterior draw and the estimate) falls to ``tolerance``, or after ``max_queries`` answers. The estimate is
the posterior mean of the normalised parameters (it stays in the family's convex cone). The result's
``details`` report credible intervals, the spread history, the noise-level posterior and a posterior
sample used by `ranking_probability`. While running, the `ActiveElicitor` wrapper exposes
``expected_remaining`` (for progress bars) and the current estimate.

Replay is deterministic: the state after ``n`` answers depends only on the configuration, the seed and
the answers.

Symbols
-------
=====================  ==========================================================================
paper / issue 7        code
=====================  ==========================================================================
``a``, ``B``           linear and quadratic coefficients (``w = (a, vec B)``, ``|w|_2 = 1``)
``B^{uv}``, ``lam``    fair violation costs and trade-off (``w = ((1-lam) a, lam vec B^{uv})``)
``tau``                ``tau[g, i] = P(G = g | Y = i)`` (fair overall rates ``r = sum_g tau^g r^g``)
``o``, ``rho``         ``sphere.center``, ``sphere.radius``
``beta``               inverse temperature of the logistic answer model
``d``                  number of unknowns (``dim``); Theorem 2's count is ``d log2(1/error)``
=====================  ==========================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from .display import DisplayGrid
from .errors import InvalidConfigError, NumericalError
from .posterior import Block, Family, ParticlePosterior, check_betas, sym_from_vec, vec_from_sym
from .types import (
    Elicitation,
    Elicitor,
    FairQuadraticMetric,
    FloatArray,
    LinearMetric,
    QuadraticMetric,
    Query,
    Sphere,
    as_rate_array,
    ask,
    pair_index,
)

__all__ = [
    "CRITERIA",
    "DEFAULT_BETA_GRID",
    "DEFAULT_CREDIBLE_LEVEL",
    "DEFAULT_MIN_CELL_GAP",
    "DEFAULT_N_PARTICLES",
    "DEFAULT_TOLERANCE",
    "MAX_DEFAULT_PARTICLES",
    "PARTICLE_BUDGET",
    "ActiveElicitor",
    "active_fair",
    "active_linear",
    "active_quadratic",
    "ranking_probability",
]

#: Noise levels marginalised by default (a uniform prior over them); covers careless to very consistent.
DEFAULT_BETA_GRID: tuple[float, ...] = (20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 3000.0)
#: Smallest difference, in people out of 100, that some confusion-matrix cell of a shown pair must have.
DEFAULT_MIN_CELL_GAP = 2.0
#: Stop once the posterior's expected parameter error is at most this.
DEFAULT_TOLERANCE = 0.05
#: Default particle count: 600 for noisy answer models (the 100 ms per question budget at k = 5; a noisy
#: step at k = 2 with 2,000 particles measured 172 ms CPU p99); for the noise-free model
#: ``PARTICLE_BUDGET / d`` for ``d`` unknowns, clipped to ``[600, 2000]``: small problems can afford
#: more particles there, and they need them: at k = 2 (26 exact answers, 20 metrics) 1,500 particles gave
#: mean errors 0.008 / 0.029 (a / B) against 0.016 / 0.046 with 600; at k = 3 (66 answers, 12 metrics)
#: 1,333 gave B 0.029 against 0.037.
PARTICLE_BUDGET = 12_000
DEFAULT_N_PARTICLES = 600
MAX_DEFAULT_PARTICLES = 2000
#: Query-selection criteria: expected drop of the posterior's total variance (targets parameter error,
#: including weakly identified directions), expected information gain (halves posterior mass), or
#: "auto": variance for the noise-free model, information gain for noisy answers. Measured: variance
#: lowers an exact oracle's B error at a given budget; for noisy people it asks more near-ties, gets more
#: wrong answers and ends with lower ranking agreement than information gain.
CRITERIA = ("auto", "variance", "information")
#: Level of the reported per-coefficient credible intervals.
DEFAULT_CREDIBLE_LEVEL = 0.95
#: Random candidate pairs drawn per question, committee size and how many survive each stage.
_N_RANDOM = 768
_COMMITTEE = 32
_N_RESCORED = 96
_N_LEADERS = 6
_N_PERTURB = 16
_PERTURB_SCALES = (0.3, 0.1)
#: Size of the posterior sample kept in ``details`` for `ranking_probability`.
_SAMPLE_SIZE = 256
#: Quadratic family: posterior particles (plus the posterior mean) whose level sets seed exact-tie
#: candidates, and the tie pairs tried per particle (those leaving the sphere or imperceptible are dropped).
#: Measured at k = 2 (40 metrics, 26 exact answers), mean ||B - B_hat||_F: 0.032 / 0.022 / 0.030 with 16 /
#: 32 / 64 particles (differences within run-to-run noise), against 0.062 without ties (24 metrics).
_N_TIE_PARTICLES = 32
_TIES_PER_PARTICLE = 48
#: Pairs ever tried to find perceptible candidates before the configuration is declared impossible.
_MAX_CANDIDATE_ROUNDS = 8
#: Points of a random candidate set placed on the sphere's surface rather than inside it.
_SURFACE_SHARE = 0.5
#: Answers used to estimate the empirical rate at which the spread shrinks.
_RATE_WINDOW = 8

M = TypeVar("M")


# --------------------------------------------------------------------------------------------------------
# Families: feature maps, cones and normalisation
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FamilySpec:
    kind: str
    n_classes: int
    tau: FloatArray | None = None

    @property
    def n_groups(self) -> int:
        return 1 if self.tau is None else int(self.tau.shape[0])

    @property
    def rate_shape(self) -> tuple[int, ...]:
        return (self.n_classes,) if self.tau is None else (self.n_groups, self.n_classes)

    def family(self) -> Family:
        k = self.n_classes
        tri = k * (k + 1) // 2
        if self.kind == "linear":
            return Family((Block(0, k, "free", 1.0 / np.sqrt(k)),), "l2")
        if self.kind == "quadratic":
            # Scales chosen so that prior draws have |a| and |B|_F of the same order, like random metrics.
            return Family(
                (Block(0, k, "free", 1.0 / np.sqrt(k)), Block(k, k + tri, "nsd", 1.0 / np.sqrt(tri), size=k)),
                "l2",
            )
        pairs = pair_index(self.n_groups)
        blocks = [Block(0, k, "nonnegative", 1.0 / np.sqrt(k))]
        for index in range(len(pairs)):
            start = k + index * tri
            blocks.append(
                Block(start, start + tri, "psd", 1.2 / (len(pairs) * np.sqrt(tri)), size=k, norm_weight=0.5)
            )
        return Family(tuple(blocks), "sum")

    def features(self, first: FloatArray, second: FloatArray) -> FloatArray:
        """``f`` with ``<w, f> > 0`` iff ``first`` is preferred; inputs ``(n, *rate_shape)``."""
        if self.kind == "linear":
            result: FloatArray = first - second
            return result
        if self.kind == "quadratic":
            outer1 = vec_from_sym(first[:, :, None] * first[:, None, :])
            outer2 = vec_from_sym(second[:, :, None] * second[:, None, :])
            quadratic: FloatArray = np.concatenate([first - second, 0.5 * (outer1 - outer2)], axis=1)
            return quadratic
        return self._fair_psi(second) - self._fair_psi(first)

    def _fair_psi(self, rates: FloatArray) -> FloatArray:
        """Fair cost ``= <w, psi(R)> + const``, ``R`` of shape ``(n, m, k)``."""
        assert self.tau is not None
        parts = [-np.sum(self.tau[None, :, :] * rates, axis=1)]
        for u, v in pair_index(self.n_groups):
            delta = rates[:, u, :] - rates[:, v, :]
            parts.append(0.5 * vec_from_sym(delta[:, :, None] * delta[:, None, :]))
        result: FloatArray = np.concatenate(parts, axis=1)
        return result

    def metric(self, w: FloatArray) -> LinearMetric | QuadraticMetric | FairQuadraticMetric:
        """The metric of a parameter vector (any positive scale)."""
        k = self.n_classes
        if self.kind == "linear":
            return LinearMetric(w[:k])
        if self.kind == "quadratic":
            B = sym_from_vec(w[k:], k)
            eigenvalues, vec = np.linalg.eigh(B)
            # A mean of NSD particles is NSD; the projection only removes rounding.
            B = (vec * np.minimum(eigenvalues, 0.0)) @ vec.T
            return QuadraticMetric(w[:k], (B + B.T) / 2.0)
        assert self.tau is not None
        tri = k * (k + 1) // 2
        alpha = np.clip(w[:k], 0.0, None)
        alpha_norm = float(np.linalg.norm(alpha))
        mats: dict[tuple[int, int], FloatArray] = {}
        total = 0.0
        for index, key in enumerate(pair_index(self.n_groups)):
            B = sym_from_vec(w[k + index * tri : k + (index + 1) * tri], k)
            lam_b, vec_b = np.linalg.eigh(B)
            B = (vec_b * np.maximum(lam_b, 0.0)) @ vec_b.T
            mats[key] = (B + B.T) / 2.0
            total += 0.5 * float(np.linalg.norm(B))
        lam = total / (alpha_norm + total)
        a = alpha if alpha_norm > 0.0 else np.ones(k)
        if total == 0.0:
            # No violation cost left at all (lam = 0): any PSD matrices represent it.
            mats = {key: np.eye(k) for key in mats}
        return FairQuadraticMetric(a, mats, lam, self.tau)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"kind": self.kind, "n_classes": self.n_classes}
        if self.tau is not None:
            result["tau"] = self.tau.tolist()
        return result


# --------------------------------------------------------------------------------------------------------
# Query space handling
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Geometry:
    sphere: Sphere
    priors: FloatArray  # (n_groups, n_classes)
    shape: tuple[int, ...]
    #: The query space's own ``confusion`` (None for a plain sphere), used to confirm the pair shown.
    confusion: Callable[[FloatArray], FloatArray] | None = None
    #: When set, every candidate is snapped to what whole people out of 100 can show, and perceptibility
    #: is measured in displayed people: the posterior then updates on exactly the pair a person saw.
    grid: DisplayGrid | None = None

    def sample(self, rng: np.random.Generator, count: int) -> FloatArray:
        """``count`` rate arrays inside the sphere (each group row inside it), ``(count, *shape)``."""
        k = self.sphere.n_classes
        rows = int(np.prod(self.shape)) // k
        direction = rng.standard_normal((count, rows, k))
        direction /= np.linalg.norm(direction, axis=2, keepdims=True)
        radius = np.where(
            rng.random((count, rows, 1)) < _SURFACE_SHARE, 1.0, rng.random((count, rows, 1)) ** (1.0 / k)
        )
        points = self.sphere.center + self.sphere.radius * radius * direction
        return self._clean(points.reshape((count, *self.shape)))

    def perturb(self, rng: np.random.Generator, points: FloatArray, scale: float) -> FloatArray:
        """Gaussian perturbations of ``points`` (``(n, *shape)``) pulled back into the sphere."""
        moved = points + scale * self.sphere.radius * rng.standard_normal(points.shape)
        return self._clean(moved)

    def _clean(self, points: FloatArray) -> FloatArray:
        k = self.sphere.n_classes
        flat = points.reshape((-1, k)) - self.sphere.center
        length = np.linalg.norm(flat, axis=1, keepdims=True)
        # Points just inside the boundary, so rounding never leaves the sphere or the unit cube.
        limit = self.sphere.radius * (1.0 - 1e-9)
        flat = np.where(length > limit, flat * (limit / np.maximum(length, 1e-300)), flat)
        result: FloatArray = np.clip(flat + self.sphere.center, 0.0, 1.0).reshape(points.shape)
        if self.grid is not None:
            result = self.grid.snap(result, self.sphere)
        return result

    def cell_gap(self, first: FloatArray, second: FloatArray) -> FloatArray:
        """Largest diagonal confusion-cell difference (people out of 100, as displayed) per pair, ``(n,)``."""
        if self.grid is not None:
            gap: FloatArray = self.grid.gap(first, second).astype(np.float64)
            return gap
        diff = np.abs(first - second).reshape((first.shape[0], self.priors.shape[0], -1))
        result: FloatArray = np.max(100.0 * self.priors[None, :, :] * diff, axis=(1, 2))
        return result


def _resolve_space(
    space: object, priors: npt.ArrayLike | None, n_groups: int, display: DisplayGrid | None = None
) -> _Geometry:
    if isinstance(space, Sphere):
        sphere = space
        space_priors: npt.ArrayLike | None = priors
    else:
        sphere_attr = getattr(space, "sphere", None)
        if not isinstance(sphere_attr, Sphere) or not callable(getattr(space, "confusion", None)):
            raise InvalidConfigError(
                "space must be a Sphere or a query space (with .sphere, .priors and .confusion), "
                f"got {type(space).__name__}"
            )
        if priors is not None:
            raise InvalidConfigError("priors must not be given with a query space (it has its own)")
        sphere = sphere_attr
        space_priors = getattr(space, "priors", None)
        space_groups = int(getattr(space, "n_groups", 1))
        if space_groups != n_groups:
            raise InvalidConfigError(
                f"the query space has {space_groups} group(s) but this elicitor needs {n_groups}"
            )
    k = sphere.n_classes
    if space_priors is None:
        array = np.full((n_groups, k), 1.0 / k)
    else:
        array = np.array(as_rate_array(space_priors, "priors"))
        if array.ndim == 1:
            array = np.tile(array, (n_groups, 1))
        if array.shape != (n_groups, k):
            raise InvalidConfigError(f"priors must have shape ({k},) or ({n_groups}, {k}), got {array.shape}")
        if np.any(array <= 0.0) or not np.allclose(array.sum(axis=1), 1.0, atol=1e-6):
            raise InvalidConfigError("priors must be positive and sum to one (per group)")
    shape = (k,) if n_groups == 1 else (n_groups, k)
    confusion = None if isinstance(space, Sphere) else space.confusion  # type: ignore[attr-defined]
    if display is None and not isinstance(space, Sphere):
        # A query space may come with the grid its charts show (`elicitation.display.DisplayedSpace`).
        display = getattr(space, "display", None)
    if display is not None:
        if display.shape != shape:
            raise InvalidConfigError(
                f"display must be a grid for rates of shape {shape}, got {display.shape}"
            )
        display.check_sphere(sphere)
    return _Geometry(sphere, array, shape, confusion, display)


# --------------------------------------------------------------------------------------------------------
# Configuration, state and the elicitor wrapper
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Config:
    spec: _FamilySpec
    geometry: _Geometry
    seed: int
    betas: tuple[float, ...] | None
    max_queries: int
    min_queries: int
    tolerance: float
    min_cell_gap: float
    n_particles: int
    credible_level: float
    criterion: str
    name: str


@dataclass
class _State:
    """What the running generator shares with its `ActiveElicitor` wrapper (read-only for callers)."""

    config: _Config
    posterior: ParticlePosterior | None = None
    spreads: list[float] = field(default_factory=list)

    @property
    def n_answered(self) -> int:
        return 0 if self.posterior is None else self.posterior.n_answers

    def expected_remaining(self) -> int:
        """Answers still expected before the stopping rule fires (never beyond the budget)."""
        budget = self.config.max_queries - self.n_answered
        if self.posterior is None or not self.spreads:
            return self.config.max_queries
        spread = self.spreads[-1]
        tolerance = self.config.tolerance
        if spread <= tolerance and self.n_answered >= self.config.min_queries:
            return 0
        # Theorem 2's rate: at best one bit per answer, so the spread halves every ``dim`` answers.
        dim = self.config.spec.family().dim
        rate = np.log(2.0) / dim
        if len(self.spreads) > _RATE_WINDOW:
            recent = np.log(np.array(self.spreads[-_RATE_WINDOW - 1 :]))
            observed = float(recent[0] - recent[-1]) / _RATE_WINDOW
            # The observed shrinkage is noisy; never trust it to be faster than the information bound.
            rate = min(rate, observed) if observed > 0.0 else rate / 4.0
        needed = np.log(spread / tolerance) / rate if tolerance > 0.0 else float(budget)
        remaining = max(int(np.ceil(needed)), self.config.min_queries - self.n_answered, 0)
        return int(min(remaining, budget))


class ActiveElicitor(Elicitor[Elicitation[M]], Generic[M]):
    """An `Elicitor` that also reports its live posterior: progress, spread and current estimate."""

    def __init__(self, body: Generator[Query, bool, Elicitation[M]], *, state: _State) -> None:
        super().__init__(body, name=state.config.name, max_queries=state.config.max_queries)
        self._state = state

    @property
    def n_answered(self) -> int:
        """Answers absorbed so far."""
        return self._state.n_answered

    @property
    def expected_remaining(self) -> int:
        """Estimated further answers before the stopping rule fires (``<= max_queries - n_answered``)."""
        return self._state.expected_remaining()

    @property
    def display(self) -> DisplayGrid | None:
        """The display grid every query is snapped to (None: exact rates)."""
        return self._state.config.geometry.grid

    @property
    def posterior_spread(self) -> float | None:
        """Current expected parameter error of the estimate under the posterior (None before start)."""
        return self._state.spreads[-1] if self._state.spreads else None

    def current_metric(self) -> M:
        """The posterior-mean metric after the answers so far.

        Raises
        ------
        InvalidConfigError
            If the elicitor has not been started (no posterior yet).
        """
        if self._state.posterior is None:
            raise InvalidConfigError("the elicitor has not started yet; call next() first")
        metric: M = _estimate(self._state.config.spec, self._state.posterior)[0]  # type: ignore[assignment]
        return metric


# --------------------------------------------------------------------------------------------------------
# Posterior summaries
# --------------------------------------------------------------------------------------------------------


def _estimate(
    spec: _FamilySpec, posterior: ParticlePosterior
) -> tuple[LinearMetric | QuadraticMetric | FairQuadraticMetric, FloatArray, float]:
    """(metric, normalised mean parameters, spread) of the current posterior."""
    theta = posterior.normalised()
    weights = posterior.weights
    mean = weights @ theta
    family = posterior.family
    scale = float(family.norm(mean[None, :])[0])
    estimate = mean / scale
    spread = float(weights @ np.linalg.norm(theta - estimate, axis=1))
    return spec.metric(estimate), estimate, spread


def _weighted_quantiles(values: FloatArray, weights: FloatArray, levels: Sequence[float]) -> FloatArray:
    """Per-column weighted quantiles: ``(n, p)`` values -> ``(len(levels), p)``."""
    order = np.argsort(values, axis=0)
    sorted_values = np.take_along_axis(values, order, axis=0)
    cumulative = np.cumsum(weights[order], axis=0)
    cumulative /= cumulative[-1]
    result = np.empty((len(levels), values.shape[1]))
    for row, level in enumerate(levels):
        index = np.argmax(cumulative >= level, axis=0)
        result[row] = sorted_values[index, np.arange(values.shape[1])]
    return result


def _metric_coordinates(spec: _FamilySpec, theta: FloatArray) -> dict[str, FloatArray]:
    """Each normalised particle in the metric's own coordinates (``a``, ``B`` / ``B^{uv}``, ``lam``)."""
    k = spec.n_classes
    if spec.kind == "linear":
        return {"a": theta[:, :k]}
    if spec.kind == "quadratic":
        return {"a": theta[:, :k], "B": sym_from_vec(theta[:, k:], k).reshape((-1, k * k))}
    tri = k * (k + 1) // 2
    alpha_norm = np.linalg.norm(theta[:, :k], axis=1)
    lam = 1.0 - alpha_norm
    coords: dict[str, FloatArray] = {
        "a": theta[:, :k] / np.maximum(alpha_norm, 1e-300)[:, None],
        "lam": lam[:, None],
    }
    for index, (u, v) in enumerate(pair_index(spec.n_groups)):
        block = sym_from_vec(theta[:, k + index * tri : k + (index + 1) * tri], k)
        coords[f"B{u},{v}"] = (block / np.maximum(lam, 1e-300)[:, None, None]).reshape((-1, k * k))
    return coords


def _credible_intervals(
    spec: _FamilySpec, posterior: ParticlePosterior, level: float
) -> dict[str, dict[str, FloatArray]]:
    coords = _metric_coordinates(spec, posterior.normalised())
    tail = (1.0 - level) / 2.0
    intervals: dict[str, dict[str, FloatArray]] = {}
    k = spec.n_classes
    for name, values in coords.items():
        bounds = _weighted_quantiles(values, posterior.weights, (tail, 1.0 - tail))
        shape: tuple[int, ...] = (k, k) if values.shape[1] == k * k else (values.shape[1],)
        if name == "lam":
            shape = ()
        intervals[name] = {"lower": bounds[0].reshape(shape), "upper": bounds[1].reshape(shape)}
    return intervals


def _posterior_sample(posterior: ParticlePosterior, rng: np.random.Generator) -> FloatArray:
    count = min(_SAMPLE_SIZE, posterior.n)
    cumulative = np.cumsum(posterior.weights)
    cumulative[-1] = 1.0
    index = np.searchsorted(cumulative, (rng.random() + np.arange(count)) / count, side="right")
    result: FloatArray = posterior.normalised()[np.minimum(index, posterior.n - 1)]
    return result


def ranking_probability(result: Elicitation[Any], first: npt.ArrayLike, second: npt.ArrayLike) -> float:
    """Posterior probability that the elicited metric orders ``first`` and ``second`` correctly.

    Parameters
    ----------
    result : Elicitation
        The result of `active_linear`, `active_quadratic` or `active_fair`.
    first, second : array_like
        Rates of the two classifiers, shape ``(n_classes,)`` (fair: ``(n_groups, n_classes)``).

    Returns
    -------
    float
        The share of the posterior under which the person prefers the same classifier as the elicited
        metric does (``0.5``-ish means the answers so far cannot tell; ``1.0`` means certain).

    Raises
    ------
    InvalidConfigError
        If ``result`` does not come from an active elicitor or the rates have the wrong shape.
    """
    details = result.details
    if "posterior_sample" not in details or "family" not in details:
        raise InvalidConfigError("result must come from an active elicitor (active_linear/_quadratic/_fair)")
    family_config = details["family"]
    tau = family_config.get("tau")
    spec = _FamilySpec(
        str(family_config["kind"]),
        int(family_config["n_classes"]),
        None if tau is None else np.asarray(tau, dtype=np.float64),
    )
    r1 = as_rate_array(first, "first")
    r2 = as_rate_array(second, "second")
    if r1.shape != spec.rate_shape or r2.shape != spec.rate_shape:
        raise InvalidConfigError(f"first and second must have shape {spec.rate_shape}")
    feature = spec.features(r1[None], r2[None])[0]
    sample = np.asarray(details["posterior_sample"], dtype=np.float64)
    metric = result.metric
    elicited = bool(metric.prefers(r1, r2))
    posterior_prefers = sample @ feature > 0.0
    return float(np.mean(posterior_prefers == elicited))


# --------------------------------------------------------------------------------------------------------
# Query selection
# --------------------------------------------------------------------------------------------------------


def _binary_entropy(p: FloatArray) -> FloatArray:
    q = np.clip(p, 1e-12, 1.0 - 1e-12)
    result: FloatArray = -(q * np.log(q) + (1.0 - q) * np.log(1.0 - q))
    return result


def _information_gain(probabilities: FloatArray, weights: FloatArray, hard: bool) -> FloatArray:
    """Mutual information between the answer and the parameters for each candidate row."""
    mean = probabilities @ weights
    gain = _binary_entropy(mean)
    if not hard:
        gain = gain - _binary_entropy(probabilities) @ weights
    return gain


def _perceptible(config: _Config, first: FloatArray, second: FloatArray) -> npt.NDArray[np.bool_]:
    result: npt.NDArray[np.bool_] = config.geometry.cell_gap(first, second) >= config.min_cell_gap
    return result


def _variance_reduction(
    probabilities: FloatArray, weights: FloatArray, theta: FloatArray, mean: FloatArray
) -> FloatArray:
    """Expected drop of the posterior's total variance ``E|theta - E theta|^2`` for each candidate row.

    By the law of total variance the drop is ``Var_y(E[theta | y]) = sum_y P(y) |E[theta | y] - E theta|^2``;
    with two answers this is ``P(+) |m_+ - m|^2 / P(-)`` where ``m_+`` is the mean given "first".
    """
    p_first = probabilities @ weights
    shifted = (probabilities * weights[None, :]) @ theta  # (n_cand, dim): P(+) E[theta | +]
    deviation = shifted - p_first[:, None] * mean[None, :]  # P(+) (m_+ - m)
    other = np.clip(1.0 - p_first, 1e-12, None)
    first = np.clip(p_first, 1e-12, None)
    result: FloatArray = np.sum(deviation**2, axis=1) * (1.0 / first + 1.0 / other)
    return result


def _systematic(weights: FloatArray, count: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """``count`` particle indices drawn by systematic resampling of ``weights``."""
    cumulative = np.cumsum(weights)
    cumulative[-1] = 1.0
    index = np.searchsorted(cumulative, (rng.random() + np.arange(count)) / count, side="right")
    result: npt.NDArray[np.int64] = np.minimum(index, weights.shape[0] - 1).astype(np.int64)
    return result


def _tie_pairs(
    config: _Config, params: FloatArray, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """Perceptible pairs that are exact ties under one of the quadratic parameter vectors ``params``.

    When the gradient dominates, random pairs are decided by the linear part and say little about ``B``;
    two distant points on one level set of a plausible metric split the posterior by its curvature. For
    ``r2 = r1 + t u``, ``phi(r2) = phi(r1)`` has the closed form ``t = -2 <a + B r1, u> / u^T B u``. The
    direction ``u`` is pulled towards the level set's tangent (a random share of its gradient component
    removed) so that ``r2`` often stays in the sphere; pairs leaving it are dropped, not clipped.
    """
    geometry = config.geometry
    k = config.spec.n_classes
    count = params.shape[0]
    a = params[:, None, :k]
    B = sym_from_vec(params[:, k:], k)
    r1 = geometry.sample(rng, count * _TIES_PER_PARTICLE).reshape((count, _TIES_PER_PARTICLE, k))
    gradient = a + np.einsum("pij,pnj->pni", B, r1)
    unit_gradient = gradient / np.maximum(np.linalg.norm(gradient, axis=2, keepdims=True), 1e-300)
    u = rng.standard_normal(r1.shape)
    along = np.sum(u * unit_gradient, axis=2, keepdims=True)
    u = u - rng.random((count, _TIES_PER_PARTICLE, 1)) * along * unit_gradient
    u /= np.maximum(np.linalg.norm(u, axis=2, keepdims=True), 1e-300)
    curvature = np.einsum("pni,pij,pnj->pn", u, B, u)
    slope = np.sum(gradient * u, axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(curvature < 0.0, -2.0 * slope / curvature, np.inf)
    r2 = r1 + np.where(np.isfinite(step), step, 0.0)[:, :, None] * u
    r1, r2, step = r1.reshape((-1, k)), r2.reshape((-1, k)), step.reshape(-1)
    sphere = geometry.sphere
    inside = (
        np.isfinite(step)
        & (np.linalg.norm(r2 - sphere.center, axis=1) <= sphere.radius * (1.0 - 1e-9))
        & np.all((r2 >= 0.0) & (r2 <= 1.0), axis=1)
    )
    r1, r2 = r1[inside], r2[inside]
    if geometry.grid is not None:
        r1, r2 = geometry.grid.snap(r1, sphere), geometry.grid.snap(r2, sphere)
    keep = _perceptible(config, r1, r2)
    return r1[keep], r2[keep]


def _choose_query(
    config: _Config, posterior: ParticlePosterior, rng: np.random.Generator, asked: set[bytes]
) -> tuple[FloatArray, FloatArray, FloatArray, float]:
    """Pick the most informative perceptible pair not asked before: (first, second, feature, gain).

    ``asked`` holds the displayed pictures (`DisplayGrid.key`) of the pairs already asked, in both orders;
    it is only used with a display grid (without one, exact pairs never repeat).
    """
    geometry, spec = config.geometry, config.spec
    first = second = np.empty((0, *geometry.shape))
    for _ in range(_MAX_CANDIDATE_ROUNDS):
        r1, r2 = geometry.sample(rng, _N_RANDOM), geometry.sample(rng, _N_RANDOM)
        keep = _perceptible(config, r1, r2)
        first, second = np.concatenate([first, r1[keep]]), np.concatenate([second, r2[keep]])
        if first.shape[0] >= _N_RESCORED:
            break
    if first.shape[0] == 0:
        raise InvalidConfigError(
            f"no pair in this sphere differs by {config.min_cell_gap:g} people in a confusion cell; "
            "lower min_cell_gap or use a larger sphere"
        )
    weights = posterior.weights
    normalised = posterior.normalised()
    if spec.kind == "quadratic":
        seeds = normalised[_systematic(weights, _N_TIE_PARTICLES, rng)]
        tie1, tie2 = _tie_pairs(config, np.vstack([seeds, weights @ normalised]), rng)
        first, second = np.concatenate([first, tie1]), np.concatenate([second, tie2])
    features = spec.features(first, second)
    committee = _systematic(weights, _COMMITTEE, rng)
    margins = features @ normalised[committee].T
    if posterior.hard:
        votes = (margins > 0.0).astype(np.float64)
    else:
        votes = 1.0 / (
            1.0 + np.exp(-np.clip(margins * posterior.betas[posterior.beta_index[committee]], -50, 50))
        )
    screen = _information_gain(votes, np.full(_COMMITTEE, 1.0 / _COMMITTEE), posterior.hard)
    # Ties (e.g. all zero once the posterior is narrow) are broken by the feature size: larger
    # differences are easier to judge and more robust to noise.
    screen = screen + 1e-6 * np.linalg.norm(features, axis=1)
    top = np.argsort(-screen, kind="stable")[:_N_RESCORED]
    first, second, features = first[top], second[top], features[top]
    theta = normalised
    centre = weights @ theta

    def score(candidates: FloatArray) -> FloatArray:
        probabilities = posterior.answer_probabilities(candidates)
        if config.criterion == "variance":
            return _variance_reduction(probabilities, weights, theta, centre)
        return _information_gain(probabilities, weights, posterior.hard)

    scores = score(features)
    for scale in _PERTURB_SCALES:
        leaders = np.argsort(-scores, kind="stable")[:_N_LEADERS]
        base1 = np.repeat(first[leaders], _N_PERTURB, axis=0)
        base2 = np.repeat(second[leaders], _N_PERTURB, axis=0)
        new1, new2 = geometry.perturb(rng, base1, scale), geometry.perturb(rng, base2, scale)
        keep = _perceptible(config, new1, new2)
        if not np.any(keep):
            continue
        new1, new2 = new1[keep], new2[keep]
        new_features = spec.features(new1, new2)
        new_scores = score(new_features)
        first, second = np.concatenate([first, new1]), np.concatenate([second, new2])
        features = np.concatenate([features, new_features])
        scores = np.concatenate([scores, new_scores])
    order = np.argsort(-scores, kind="stable")
    grid = geometry.grid
    for index in order:
        if grid is not None and grid.key(first[index], second[index]) in asked:
            continue
        if geometry.confusion is not None and grid is None:
            # The diagonal-cell filter is sufficient for any space honouring the contract; the space's own
            # confusion matrices have the last word (a pair failing it is skipped, never shown). With a
            # display grid the displayed diagonals already differ by whole people.
            gap = np.max(np.abs(geometry.confusion(first[index]) - geometry.confusion(second[index])))
            if float(gap) < config.min_cell_gap:
                continue
        best = int(index)
        break
    else:
        raise NumericalError("no perceptible candidate pair is left that was not asked before")
    r1, r2, feature = first[best], second[best], features[best]
    if rng.random() < 0.5:
        # Which option is shown first carries no information; randomising it avoids a position bias.
        r1, r2, feature = r2, r1, -feature
    return r1, r2, feature, float(scores[best])


# --------------------------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------------------------


def _active_steps(state: _State) -> Generator[Query, bool, Elicitation[Any]]:
    config = state.config
    rng = np.random.default_rng(config.seed)
    posterior = ParticlePosterior(config.spec.family(), config.betas, config.n_particles, rng)
    state.posterior = posterior
    state.spreads.append(_estimate(config.spec, posterior)[2])
    gains: list[float] = []
    asked: set[bytes] = set()
    stopped_by = "budget"
    while posterior.n_answers < config.max_queries:
        if posterior.n_answers >= config.min_queries and state.spreads[-1] <= config.tolerance:
            stopped_by = "tolerance"
            break
        first, second, feature, gain = _choose_query(config, posterior, rng, asked)
        gains.append(gain)
        if config.geometry.grid is not None:
            asked.update((config.geometry.grid.key(first, second), config.geometry.grid.key(second, first)))
        query = Query(first, second, search=config.name, kind="active", step=posterior.n_answers)
        answer = yield from ask(query)
        posterior.update(feature if answer else -feature)
        state.spreads.append(_estimate(config.spec, posterior)[2])
    metric, estimate, spread = _estimate(config.spec, posterior)
    details: dict[str, Any] = {
        "family": config.spec.to_dict(),
        "parameters": estimate,
        "posterior_spread": spread,
        "spread_history": list(state.spreads),
        "information_gain": gains,
        "stopped_by": stopped_by,
        "criterion": config.criterion,
        "credible_level": config.credible_level,
        "credible_intervals": _credible_intervals(config.spec, posterior, config.credible_level),
        "posterior_sample": _posterior_sample(posterior, rng),
        "beta_grid": None if config.betas is None else list(config.betas),
        "beta_posterior": None if config.betas is None else posterior.beta_probabilities(),
        "inconsistent_answers": list(posterior.dropped),
        "seed": config.seed,
        "n_particles": config.n_particles,
        "min_cell_gap": config.min_cell_gap,
    }
    return Elicitation(metric=metric, num_queries=posterior.n_answers, details=details)


# --------------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------------


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise InvalidConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_float(value: object, name: str, low: float, high: float, *, open_low: bool = False) -> float:
    if isinstance(value, bool):
        raise InvalidConfigError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"{name} must be a number, got {value!r}") from exc
    bad_low = number <= low if open_low else number < low
    if not np.isfinite(number) or bad_low or number > high:
        bracket = "(" if open_low else "["
        raise InvalidConfigError(f"{name} must lie in {bracket}{low:g}, {high:g}], got {value!r}")
    return number


def _check_criterion(criterion: object, betas: tuple[float, ...] | None) -> str:
    if criterion not in CRITERIA:
        raise InvalidConfigError(f"criterion must be one of {list(CRITERIA)}, got {criterion!r}")
    if criterion == "auto":
        return "variance" if betas is None else "information"
    return str(criterion)


def _build(
    spec: _FamilySpec,
    geometry: _Geometry,
    *,
    seed: int,
    beta: float | Sequence[float] | None,
    max_queries: int | None,
    min_queries: int,
    tolerance: float,
    min_cell_gap: float,
    n_particles: int | None,
    credible_level: float,
    criterion: str,
    name: str,
) -> ActiveElicitor[Any]:
    dim = spec.family().dim
    if n_particles is None:
        # Noisy steps cost ~ particles x answers whatever d is (the slice sampler re-evaluates every
        # answer's likelihood), so they keep the count that meets the web-request budget; noise-free steps
        # are cheap enough to scale the count with the problem.
        n_particles = (
            DEFAULT_N_PARTICLES
            if beta is not None
            else int(np.clip(PARTICLE_BUDGET // dim, DEFAULT_N_PARTICLES, MAX_DEFAULT_PARTICLES))
        )
    budget = max(30, 4 * dim) if max_queries is None else _check_int(max_queries, "max_queries", 1)
    minimum = _check_int(min_queries, "min_queries", 0)
    if minimum > budget:
        raise InvalidConfigError(f"min_queries ({minimum}) must not exceed max_queries ({budget})")
    config = _Config(
        spec=spec,
        geometry=geometry,
        seed=_check_int(seed, "seed", 0),
        betas=check_betas(beta),
        max_queries=budget,
        min_queries=minimum,
        tolerance=_check_float(tolerance, "tolerance", 0.0, 2.0),
        min_cell_gap=_check_float(min_cell_gap, "min_cell_gap", 0.0, 100.0),
        n_particles=_check_int(n_particles, "n_particles", 64),
        credible_level=_check_float(credible_level, "credible_level", 0.0, 1.0, open_low=True),
        criterion=_check_criterion(criterion, check_betas(beta)),
        name=name,
    )
    largest = float(np.max(geometry.priors)) * 100.0 * 2.0 * geometry.sphere.radius
    if config.min_cell_gap > largest:
        raise InvalidConfigError(
            f"min_cell_gap {config.min_cell_gap:g} exceeds the largest cell difference this sphere can show "
            f"({largest:.3g} people out of 100); lower it or use a larger sphere"
        )
    state = _State(config)
    return ActiveElicitor(_active_steps(state), state=state)


_COMMON_DOC = """
    seed : int
        Seed of the ``numpy.random.Generator`` behind every random choice (store it with the session).
    beta : float, sequence of float or None
        Noise level(s) of the answer model ``P(correct) = sigmoid(beta |phi(r1) - phi(r2)|)``: a number
        fixes it, a sequence is a grid marginalised with a uniform prior (default `DEFAULT_BETA_GRID`),
        ``None`` assumes a noise-free oracle (inconsistent answers are then ignored and listed in
        ``details["inconsistent_answers"]``).
    max_queries : int, optional
        Question budget; default ``max(30, 4 d)`` for ``d`` unknowns.
    min_queries : int
        Never stop on the spread before this many answers.
    tolerance : float
        Stop once the posterior's expected parameter error (paper normalisation) is at most this.
    min_cell_gap : float
        Every shown pair differs by at least this many people out of 100 in some confusion cell.
    n_particles : int, optional
        Posterior particles (>= 64); cost per question is roughly linear in it. Default 600 with noise;
        for ``beta=None`` ``PARTICLE_BUDGET // d`` clipped to ``[600, 2000]`` (2,000 at k = 2, 600 at k = 5).
    credible_level : float
        Level of the reported credible intervals.
    criterion : {"auto", "variance", "information"}
        How candidate pairs are scored: expected reduction of the posterior's total variance or expected
        information gain; ``"auto"`` uses variance for ``beta=None`` and information gain otherwise.
    display : DisplayGrid, optional
        What the participant's charts can show (`elicitation.display`): every candidate is snapped to it,
        so the posterior updates on exactly the displayed pair, perceptibility counts displayed people,
        and no displayed pair is asked twice (in either order). Without it, queries are exact rates.
"""


def active_linear(
    space: object,
    *,
    seed: int,
    priors: npt.ArrayLike | None = None,
    beta: float | Sequence[float] | None = DEFAULT_BETA_GRID,
    max_queries: int | None = None,
    min_queries: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
    min_cell_gap: float = DEFAULT_MIN_CELL_GAP,
    n_particles: int | None = None,
    credible_level: float = DEFAULT_CREDIBLE_LEVEL,
    criterion: str = "auto",
    display: DisplayGrid | None = None,
) -> ActiveElicitor[LinearMetric]:
    """Elicit a linear metric ``phi(r) = <a, r>`` with active, noise-robust Bayesian queries.

    Parameters
    ----------
    space : Sphere or query space
        Where queries live: a `Sphere` (then ``priors`` gives ``P(Y = i)``, uniform by default) or a query
        space with ``sphere``, ``priors`` and ``confusion`` (``notes/contracts.md``).
    priors : array_like, optional
        Class priors ``(n_classes,)``, only with a plain `Sphere`.
    """
    geometry = _resolve_space(space, priors, 1, display)
    return _build(
        _FamilySpec("linear", geometry.sphere.n_classes),
        geometry,
        seed=seed,
        beta=beta,
        max_queries=max_queries,
        min_queries=min_queries,
        tolerance=tolerance,
        min_cell_gap=min_cell_gap,
        n_particles=n_particles,
        credible_level=credible_level,
        criterion=criterion,
        name="active-linear",
    )


def active_quadratic(
    space: object,
    *,
    seed: int,
    priors: npt.ArrayLike | None = None,
    beta: float | Sequence[float] | None = DEFAULT_BETA_GRID,
    max_queries: int | None = None,
    min_queries: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
    min_cell_gap: float = DEFAULT_MIN_CELL_GAP,
    n_particles: int | None = None,
    credible_level: float = DEFAULT_CREDIBLE_LEVEL,
    criterion: str = "auto",
    display: DisplayGrid | None = None,
) -> ActiveElicitor[QuadraticMetric]:
    """Elicit a quadratic metric ``<a, r> + 1/2 r^T B r`` (``B`` NSD, Definition 2) with active queries.

    Parameters
    ----------
    space : Sphere or query space
        Where queries live: a `Sphere` (then ``priors`` gives ``P(Y = i)``, uniform by default) or a query
        space with ``sphere``, ``priors`` and ``confusion`` (``notes/contracts.md``).
    priors : array_like, optional
        Class priors ``(n_classes,)``, only with a plain `Sphere`.
    """
    geometry = _resolve_space(space, priors, 1, display)
    return _build(
        _FamilySpec("quadratic", geometry.sphere.n_classes),
        geometry,
        seed=seed,
        beta=beta,
        max_queries=max_queries,
        min_queries=min_queries,
        tolerance=tolerance,
        min_cell_gap=min_cell_gap,
        n_particles=n_particles,
        credible_level=credible_level,
        criterion=criterion,
        name="active-quadratic",
    )


def active_fair(
    space: object,
    *,
    tau: npt.ArrayLike,
    seed: int,
    priors: npt.ArrayLike | None = None,
    beta: float | Sequence[float] | None = DEFAULT_BETA_GRID,
    max_queries: int | None = None,
    min_queries: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
    min_cell_gap: float = DEFAULT_MIN_CELL_GAP,
    n_particles: int | None = None,
    credible_level: float = DEFAULT_CREDIBLE_LEVEL,
    criterion: str = "auto",
    display: DisplayGrid | None = None,
) -> ActiveElicitor[FairQuadraticMetric]:
    """Elicit a fair quadratic cost (Definition 3: ``a``, ``B^{uv}``, ``lam``) with active queries.

    Queries are ``(n_groups, n_classes)`` rate arrays whose every group row lies in the common sphere.

    Parameters
    ----------
    space : Sphere or query space
        A `Sphere` (the common sphere of all groups) or a query space with ``n_groups >= 2``.
    tau : array_like, shape (n_groups, n_classes)
        ``P(G = g | Y = i)``; non-negative, every column summing to one.
    priors : array_like, optional
        ``P(Y = i | G = g)``, ``(n_classes,)`` or ``(n_groups, n_classes)``, only with a plain `Sphere`.
    """
    tau_array = np.array(as_rate_array(tau, "tau", ndim=2))
    m, k = tau_array.shape
    if m < 2:
        raise InvalidConfigError(f"tau must describe at least 2 groups (rows), got {m}")
    sphere = space if isinstance(space, Sphere) else getattr(space, "sphere", None)
    if isinstance(sphere, Sphere) and sphere.n_classes != k:
        raise InvalidConfigError(f"tau has {k} columns but the sphere has {sphere.n_classes} classes")
    if np.any(tau_array < 0.0) or not np.allclose(tau_array.sum(axis=0), 1.0, atol=1e-8):
        raise InvalidConfigError("tau must be non-negative with every column (class) summing to one")
    tau_array.setflags(write=False)
    geometry = _resolve_space(space, priors, m, display)
    return _build(
        _FamilySpec("fair", k, tau_array),
        geometry,
        seed=seed,
        beta=beta,
        max_queries=max_queries,
        min_queries=min_queries,
        tolerance=tolerance,
        min_cell_gap=min_cell_gap,
        n_particles=n_particles,
        credible_level=credible_level,
        criterion=criterion,
        name="active-fair",
    )


for _function in (active_linear, active_quadratic, active_fair):
    _function.__doc__ = (
        (_function.__doc__ or "").rstrip()
        + _COMMON_DOC
        + """
    Returns
    -------
    ActiveElicitor
        Yields `Query` objects (receives ``True`` when ``first`` is preferred) and returns an
        `Elicitation` whose ``details`` hold ``credible_intervals``, ``posterior_spread``,
        ``spread_history``, ``beta_posterior``, ``posterior_sample`` (for `ranking_probability`),
        ``stopped_by`` and ``inconsistent_answers``.

    Raises
    ------
    InvalidConfigError
        On a bad argument (naming it and its allowed range), or when no perceptible pair fits the sphere.

    Notes
    -----
    Asks at most ``max_queries`` questions; each costs one particle update and one candidate search,
    roughly ``O(n_particles * (answers + candidates) * d)``.
    """
    )
