"""How good is an elicited metric: coefficient errors, agreement, ranking quality and Theorem 2's bound.

Theory of operation
-------------------
* `elicitation_errors` compares coefficients in the paper's normalisation (Section 6): ``||a - a_hat||_2``,
  ``||B - B_hat||_F`` (quadratic), ``sum_{u<v} ||B^{uv} - B_hat^{uv}||_F`` and ``|lam - lam_hat|`` (fair),
  and ``||C - C_hat||_F`` for metrics with a cubic tensor ``C``. The metric classes normalise on
  construction, so the numbers are comparable across runs.
* `agreement` is the fraction of random query pairs (uniform in a ball) that two metrics order the same
  way: what a participant would see if the elicited metric answered for them (the user study's measure,
  Appendix J).
* `noisy_agreement` measures the same agreement for a person who answers with logistic noise
  ``P(correct) = sigmoid(beta |phi(r1) - phi(r2)|)``, and splits it by what that person can tell apart:
  pairs whose true difference they would pick correctly at least `JUST_NOTICEABLE` of the time (the
  75 %-correct threshold of two-alternative forced choice), and the rest, on which even the person's own
  answers are close to coin flips. ``self_agreement`` is how often the person's own answers match their
  true preference on the same pairs: a metric whose values barely vary across the sphere is one the
  person cannot express reliably, whoever asks.
* `ranking_quality` ranks a set of rate vectors (candidate classifiers) by the true and the elicited metric
  and reports NDCG with exponential gain and Kendall's tau-b (Appendix H.2). Metric values are defined
  only up to a positive affine map (scale invariance; constants do not change answers), so the NDCG
  relevance of an item is its true utility rescaled affinely to ``[0, 1]`` (worst 0, best 1); the gain is
  ``2^rel - 1`` and the discount ``1/log2(1 + position)``.
* `query_lower_bound` is Theorem 2's information-theoretic bound (proof in Appendix G): a scale-invariant
  metric with ``D`` coefficients is a point ``w`` on the unit sphere of ``R^D``, a ``(D - 1)``-dimensional
  surface; telling apart every estimate within ``tolerance`` needs a cover with
  ``N >= c (1/tolerance)^(D-1)`` balls, and each binary answer carries at most one bit, so at least
  ``log2 N = (D - 1) log2(1/tolerance) + log2 c`` answers are needed. We report
  ``max(0, (D - 1) log2(1/tolerance))``, i.e. the paper's bound with its unspecified constant ``c = 1``
  (the cover constant of a sphere cap is below one, so this slightly overstates the exact bound by a
  ``k``-dependent additive term; it is the quantity the paper's ``Omega(k^2 log(1/(k sqrt(k) eps)))`` names).
  `theorem2_lower_bound` uses the paper's tolerance ``k sqrt(k) eps`` for quadratic metrics.

Paper symbols
-------------
==========================  ================================================================
``a, B, B_pairs, lam``      the metric coefficients of Definitions 2 and 3
``degrees_of_freedom``      ``D - 1``: coefficients minus one per normalisation constraint
``tolerance``               ``k sqrt(k) eps`` in Theorem 2 (error in ``||w - w_hat||_2``)
==========================  ================================================================
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy import stats  # type: ignore[import-untyped]

from .errors import InvalidConfigError, NumericalError
from .families import family_of
from .families.base import finite
from .types import FloatArray, Metric, RandomState, Sphere, as_generator

__all__ = [
    "DEFAULT_AGREEMENT_PAIRS",
    "JUST_NOTICEABLE",
    "AgreementReport",
    "ElicitationErrors",
    "RankingQuality",
    "agreement",
    "cubic_degrees_of_freedom",
    "diagonal_degrees_of_freedom",
    "elicitation_errors",
    "fair_degrees_of_freedom",
    "kendall_tau",
    "linear_degrees_of_freedom",
    "ndcg",
    "noisy_agreement",
    "quadratic_degrees_of_freedom",
    "query_lower_bound",
    "ranking_quality",
    "sample_query_pairs",
    "theorem2_lower_bound",
]

#: Number of random query pairs `agreement` uses unless told otherwise.
DEFAULT_AGREEMENT_PAIRS: Final = 1000


@dataclass(frozen=True)
class ElicitationErrors:
    """Coefficient errors of an elicited metric; fields that do not apply to the metric family are None.

    Attributes
    ----------
    a : float
        ``||a - a_hat||_2``.
    B : float or None
        ``||B - B_hat||_F`` (quadratic and cubic metrics).
    B_pairs : float or None
        ``sum_{u<v} ||B^{uv} - B_hat^{uv}||_F`` (fair metrics).
    lam : float or None
        ``|lam - lam_hat|`` (fair metrics).
    C : float or None
        ``||C - C_hat||_F`` over the whole tensor (cubic metrics).
    """

    a: float
    B: float | None = None
    B_pairs: float | None = None
    lam: float | None = None
    C: float | None = None


def elicitation_errors(true: Metric, estimate: Metric) -> ElicitationErrors:
    """Compare an elicited metric with the true one, coefficient by coefficient.

    Parameters
    ----------
    true, estimate : Metric
        Two metrics of the same family (`LinearMetric`, `QuadraticMetric`, `FairQuadraticMetric`,
        `elicitation.variants.CubicMetric`) and the same dimensions.

    Returns
    -------
    ElicitationErrors
        The family's errors (`elicitation.families.MetricFamily.errors`); the others are None.

    Raises
    ------
    InvalidConfigError
        If the metrics are of different classes or shapes.
    """
    if type(true) is not type(estimate):
        raise InvalidConfigError(
            f"cannot compare a {type(true).__name__} with a {type(estimate).__name__}; "
            "both metrics must be of the same family"
        )
    return ElicitationErrors(**family_of(true).errors(true, estimate))


# ----------------------------------------------------------------------------------------------------------
# Agreement on random queries
# ----------------------------------------------------------------------------------------------------------


def _uniform_in_ball(rng: np.random.Generator, sphere: Sphere, count: int) -> FloatArray:
    k = sphere.n_classes
    directions = rng.standard_normal((count, k))
    norms = np.linalg.norm(directions, axis=1, keepdims=True)
    # A Gaussian vector is zero with probability zero; the guard only keeps the division finite.
    directions = directions / np.maximum(norms, 1e-300)
    radii = sphere.radius * rng.random((count, 1)) ** (1.0 / k)
    points: FloatArray = sphere.center + radii * directions
    return points


def sample_query_pairs(
    sphere: Sphere | Sequence[Sphere], n_pairs: int, rng: RandomState, *, n_groups: int | None = None
) -> tuple[FloatArray, FloatArray]:
    """Draw ``n_pairs`` query pairs uniformly from the ball ``sphere``.

    Parameters
    ----------
    sphere : Sphere or sequence of Sphere
        The ball of feasible rates; for fairness queries also one ball per group (group ``g``'s rates
        drawn from the ``g``-th).
    n_pairs : int
        Number of pairs ``>= 1``.
    rng : numpy.random.Generator or int
        Source of randomness.
    n_groups : int, optional
        For fairness queries: each side gets one independent rate vector per group.

    Returns
    -------
    (first, second) : tuple of ndarray
        Each of shape ``(n_pairs, n_classes)`` or ``(n_pairs, n_groups, n_classes)``.
    """
    generator = as_generator(rng)
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, (int, np.integer)) or n_pairs < 1:
        raise InvalidConfigError(f"n_pairs must be an integer >= 1, got {n_pairs!r}")
    groups = 1 if n_groups is None else int(n_groups)
    if n_groups is not None and groups < 2:
        raise InvalidConfigError(f"n_groups must be at least 2, got {n_groups!r}")
    if not isinstance(sphere, Sphere):
        spheres = tuple(sphere) if isinstance(sphere, Sequence) else ()
        if n_groups is None or len(spheres) != groups or not all(isinstance(s, Sphere) for s in spheres):
            raise InvalidConfigError(
                f"sphere must be a Sphere, or one Sphere per group for fairness queries, got {sphere!r}"
            )
        per_group = [_uniform_in_ball(generator, own, 2 * int(n_pairs)) for own in spheres]
        stacked: FloatArray = np.stack(per_group, axis=1).reshape((2, int(n_pairs), groups, -1))
        return stacked[0], stacked[1]
    k = sphere.n_classes
    points = _uniform_in_ball(generator, sphere, 2 * int(n_pairs) * groups)
    shape = (2, int(n_pairs), k) if n_groups is None else (2, int(n_pairs), groups, k)
    shaped: FloatArray = points.reshape(shape)
    return shaped[0], shaped[1]


def agreement(
    true: Metric,
    other: Metric,
    sphere: Sphere | Sequence[Sphere],
    rng: RandomState,
    *,
    n_pairs: int = DEFAULT_AGREEMENT_PAIRS,
) -> float:
    """Fraction of random query pairs on which ``other`` gives the same answer as ``true``.

    Pairs are drawn uniformly from the ball ``sphere`` (for fair metrics, one point per group on each side).
    Answers are each metric's ``prefers``, so a utility and a cost metric are compared by preference, not by
    value.

    Parameters
    ----------
    true, other : Metric
        The oracle's metric and the elicited one (any families with the same rate shape).
    sphere : Sphere or sequence of Sphere
        Where queries come from (fair metrics: also one sphere per group, as `sample_query_pairs`).
    rng : numpy.random.Generator or int
        Source of the random pairs.
    n_pairs : int
        Number of pairs.

    Returns
    -------
    float
        In ``[0, 1]``; 1 means the elicited metric answers every sampled query like the oracle.
    """
    groups = family_of(true).n_groups(true)
    first, second = sample_query_pairs(sphere, n_pairs, rng, n_groups=groups)
    same = sum(true.prefers(r1, r2) == other.prefers(r1, r2) for r1, r2 in zip(first, second, strict=True))
    return same / len(first)


#: A true difference a person picks correctly with at least this probability is "just noticeable" (the
#: conventional 75 %-correct threshold of two-alternative forced choice).
JUST_NOTICEABLE: Final = 0.75


@dataclass(frozen=True)
class AgreementReport:
    """Agreement of an elicited metric with a noisy person's true preference, split by what they notice.

    Attributes
    ----------
    overall : float
        Agreement on all pairs (what `agreement` reports for the same pairs).
    noticeable : float
        Agreement on the pairs the person answers correctly with probability ``>= level``; ``nan`` when
        there are none.
    noticeable_share : float
        Share of the pairs that are noticeable.
    self_agreement : float
        Expected share of the pairs on which the person's own answer matches their true preference.
    """

    overall: float
    noticeable: float
    noticeable_share: float
    self_agreement: float


def noisy_agreement(
    true: Metric,
    other: Metric,
    sphere: Sphere | Sequence[Sphere],
    rng: RandomState,
    *,
    beta: float,
    n_pairs: int = DEFAULT_AGREEMENT_PAIRS,
    level: float = JUST_NOTICEABLE,
) -> AgreementReport:
    """`agreement` for a person answering ``P(correct) = sigmoid(beta |phi(r1) - phi(r2)|)``, split by
    which pairs that person can tell apart.

    The pairs are drawn exactly as `agreement` draws them (same generator calls), so ``overall`` equals
    ``agreement(true, other, sphere, rng, n_pairs=n_pairs)`` for a generator in the same state.

    Parameters
    ----------
    true, other : Metric
        The person's metric and the elicited one (same rate shape).
    sphere : Sphere or sequence of Sphere
        Where pairs come from (for fair metrics, one point per group on each side; also one sphere per
        group, as `sample_query_pairs`).
    rng : numpy.random.Generator or int
        Source of the random pairs.
    beta : float
        The person's inverse temperature (``> 0``), on ``true``'s normalisation.
    n_pairs : int
        Number of pairs.
    level : float
        Probability of a correct answer, in ``(0.5, 1)``, from which a pair counts as noticeable.

    Returns
    -------
    AgreementReport

    Raises
    ------
    InvalidConfigError
        If ``beta`` is not a positive finite number or ``level`` is outside ``(0.5, 1)``.
    """
    if isinstance(beta, bool) or not np.isfinite(beta) or beta <= 0.0:
        raise InvalidConfigError(f"beta must be a positive number, got {beta!r}")
    if not 0.5 < level < 1.0:
        raise InvalidConfigError(f"level must lie in (0.5, 1), got {level!r}")
    groups = family_of(true).n_groups(true)
    first, second = sample_query_pairs(sphere, n_pairs, rng, n_groups=groups)
    same = np.array(
        [true.prefers(r1, r2) == other.prefers(r1, r2) for r1, r2 in zip(first, second, strict=True)]
    )
    gaps = np.array([true.value_gap(r1, r2) for r1, r2 in zip(first, second, strict=True)])
    correct = 1.0 / (1.0 + np.exp(-beta * gaps))
    noticeable = correct >= level
    return AgreementReport(
        overall=float(np.mean(same)),
        noticeable=float(np.mean(same[noticeable])) if np.any(noticeable) else math.nan,
        noticeable_share=float(np.mean(noticeable)),
        self_agreement=float(np.mean(correct)),
    )


# ----------------------------------------------------------------------------------------------------------
# Ranking quality
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RankingQuality:
    """How well an elicited metric ranks candidates: ``ndcg`` in [0, 1], ``kendall_tau`` in [-1, 1]."""

    ndcg: float
    kendall_tau: float


def _vector(values: npt.ArrayLike, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size < 2:
        raise InvalidConfigError(f"{name} must be a 1-d array of at least 2 items, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise InvalidConfigError(f"{name} must contain only finite numbers")
    return array


def ndcg(relevance: npt.ArrayLike, scores: npt.ArrayLike, *, top: int | None = None) -> float:
    """Normalised discounted cumulative gain with exponential gain ``2^rel - 1``.

    Items are ranked by ``scores`` (descending; ties keep the input order); the DCG of the first ``top``
    positions, ``sum_i (2^rel_(i) - 1) / log2(i + 1)``, is divided by that of the ideal order (by
    ``relevance``).

    Parameters
    ----------
    relevance : array_like
        Non-negative graded relevance of each item, shape ``(n_items,)``.
    scores : array_like
        The ranking scores to evaluate, same shape.
    top : int, optional
        Cut-off (NDCG@top); all items by default.

    Returns
    -------
    float
        In ``[0, 1]``; 1 when the items with the most relevance are on top. If every item has zero
        relevance, every order is ideal and the result is 1.
    """
    rel = _vector(relevance, "relevance")
    score = _vector(scores, "scores")
    if rel.shape != score.shape:
        raise InvalidConfigError(
            f"relevance and scores must have the same shape, got {rel.shape} and {score.shape}"
        )
    if np.any(rel < 0.0):
        raise InvalidConfigError("relevance must be non-negative")
    n = rel.size if top is None else int(top)
    if n < 1:
        raise InvalidConfigError(f"top must be at least 1, got {top!r}")
    n = min(n, rel.size)
    discounts = 1.0 / np.log2(np.arange(2, n + 2))
    gains = np.exp2(rel) - 1.0
    order = np.argsort(-score, kind="stable")[:n]
    ideal = np.sort(gains)[::-1][:n]
    ideal_dcg = float(ideal @ discounts)
    if ideal_dcg == 0.0:
        return 1.0
    return float(gains[order] @ discounts) / ideal_dcg


def kendall_tau(true_scores: npt.ArrayLike, scores: npt.ArrayLike) -> float:
    """Kendall's tau-b between two score vectors (``scipy.stats.kendalltau``).

    Raises
    ------
    NumericalError
        If either vector is constant (tau is undefined).
    """
    x = _vector(true_scores, "true_scores")
    y = _vector(scores, "scores")
    if x.shape != y.shape:
        raise InvalidConfigError(f"score vectors must have the same shape, got {x.shape} and {y.shape}")
    if np.all(x == x[0]) or np.all(y == y[0]):
        raise NumericalError("Kendall's tau is undefined when one ranking has all items tied")
    return finite(float(stats.kendalltau(x, y).statistic), "Kendall's tau")


def _utilities(metric: Metric, rates: FloatArray) -> FloatArray:
    values = np.array([metric(r) for r in rates], dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise NumericalError(f"{type(metric).__name__} gave a non-finite value on the candidates")
    result: FloatArray = values if metric.higher_is_better else -values
    return result


def ranking_quality(
    true: Metric, elicited: Metric, rates: npt.ArrayLike, *, top: int | None = None
) -> RankingQuality:
    """Rank candidate rate vectors by both metrics and compare the rankings.

    Parameters
    ----------
    true, elicited : Metric
        The oracle's metric (defines the ground-truth ranking) and the elicited one.
    rates : array_like
        Candidates, shape ``(n_items, n_classes)`` (or ``(n_items, n_groups, n_classes)`` for fair metrics).
    top : int, optional
        NDCG cut-off.

    Returns
    -------
    RankingQuality
        NDCG with exponential gain, relevance = true utility rescaled to ``[0, 1]``; Kendall's tau-b.

    Raises
    ------
    NumericalError
        If the true metric ties every candidate (there is no ranking to recover).
    """
    candidates = np.asarray(rates, dtype=np.float64)
    if candidates.ndim < 2 or candidates.shape[0] < 2:
        raise InvalidConfigError(
            f"rates must hold at least 2 candidates (one per row), got shape {candidates.shape}"
        )
    truth = _utilities(true, candidates)
    guess = _utilities(elicited, candidates)
    spread = float(np.max(truth) - np.min(truth))
    if spread == 0.0:
        raise NumericalError("the true metric rates every candidate the same; there is no ranking to compare")
    relevance = (truth - np.min(truth)) / spread
    return RankingQuality(ndcg=ndcg(relevance, guess, top=top), kendall_tau=kendall_tau(truth, guess))


# ----------------------------------------------------------------------------------------------------------
# Theorem 2: information-theoretic lower bound
# ----------------------------------------------------------------------------------------------------------


def _positive_int(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def linear_degrees_of_freedom(n_classes: int) -> int:
    """``k - 1``: a unit vector ``a`` in ``R^k``."""
    return _positive_int(n_classes, "n_classes", 2) - 1


def quadratic_degrees_of_freedom(n_classes: int) -> int:
    """``(k^2 + 3k)/2 - 1``: ``a`` (k) and symmetric ``B`` (k(k+1)/2) under one normalisation (Appendix G)."""
    k = _positive_int(n_classes, "n_classes", 2)
    return (k * k + 3 * k) // 2 - 1


def diagonal_degrees_of_freedom(n_classes: int) -> int:
    """``2k - 1``: ``a`` and a diagonal ``B`` under one normalisation (Section 5's structured case)."""
    return 2 * _positive_int(n_classes, "n_classes", 2) - 1


def cubic_degrees_of_freedom(n_classes: int) -> int:
    """``k + k(k+1)/2 + k(k+1)(k+2)/6 - 1``: ``a``, symmetric ``B`` and symmetric ``C`` (Section 7)."""
    k = _positive_int(n_classes, "n_classes", 2)
    return k + k * (k + 1) // 2 + k * (k + 1) * (k + 2) // 6 - 1


def fair_degrees_of_freedom(n_classes: int, n_groups: int) -> int:
    """``(k - 1) + (C(m,2) k(k+1)/2 - 1) + 1``: unit ``a``, jointly normalised ``B^{uv}``, and ``lam``."""
    k = _positive_int(n_classes, "n_classes", 2)
    m = _positive_int(n_groups, "n_groups", 2)
    pairs = m * (m - 1) // 2
    return (k - 1) + (pairs * k * (k + 1) // 2 - 1) + 1


def query_lower_bound(degrees_of_freedom: int, tolerance: float) -> float:
    """Minimum number of binary answers to pin a metric down to ``tolerance`` (Theorem 2's argument).

    Parameters
    ----------
    degrees_of_freedom : int
        Free coefficients after normalisation, ``D - 1`` (see the ``*_degrees_of_freedom`` helpers).
    tolerance : float
        Target error in the normalised coefficient vector, ``||w - w_hat||_2``, ``> 0``.

    Returns
    -------
    float
        ``max(0, degrees_of_freedom * log2(1 / tolerance))`` bits, i.e. answers (see the module notes for
        the derivation and the dropped constant).
    """
    dof = _positive_int(degrees_of_freedom, "degrees_of_freedom", 1)
    tol = float(tolerance)
    if not math.isfinite(tol) or tol <= 0.0:
        raise InvalidConfigError(f"tolerance must be a positive finite number, got {tolerance!r}")
    return max(0.0, dof * math.log2(1.0 / tol))


def theorem2_lower_bound(n_classes: int, epsilon: float) -> float:
    """Theorem 2 for quadratic metrics: ``((k^2 + 3k)/2 - 1) log2(1 / (k sqrt(k) epsilon))`` answers.

    Parameters
    ----------
    n_classes : int
        ``k >= 2``.
    epsilon : float
        Search tolerance ``> 0``; the coefficient tolerance is ``k sqrt(k) epsilon`` as in the theorem.
    """
    k = _positive_int(n_classes, "n_classes", 2)
    eps = float(epsilon)
    if not math.isfinite(eps) or eps <= 0.0:
        raise InvalidConfigError(f"epsilon must be a positive finite number, got {epsilon!r}")
    return query_lower_bound(quadratic_degrees_of_freedom(k), k * math.sqrt(k) * eps)
