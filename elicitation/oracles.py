"""Simulated oracles and random metrics that follow the paper's assumptions.

Theory of operation
-------------------
An oracle is any callable ``oracle(first, second) -> bool`` answering "is ``first`` preferred?" (Definition
1); `elicitation.run` drives an elicitor with one. Three models of the person behind the answers:

* `ExactOracle` answers with the hidden metric's ``prefers`` (noise-free, Definition 1).
* `ThresholdNoiseOracle` is Definition 4's feedback noise: it answers correctly whenever
  ``|phi(r1) - phi(r2)| > epsilon_Omega`` and otherwise either guesses with a fair coin from an injected
  `numpy.random.Generator`, or (``adversarial=True``) always answers wrongly, the worst case the theorem
  allows.
* `LogisticOracle` is a Bradley-Terry / logistic model of a human: it answers correctly with probability
  ``sigmoid(beta * |phi(r1) - phi(r2)|)``, so near-ties are coin flips and clear differences are almost
  always right.

Every oracle counts its calls (``calls``) and how many of its answers disagreed with the exact answer
(``wrong_answers``), so simulations can report both.

The random metric generators follow Definition 2/3 and Appendix H's setup as the authors' published
implementation draws it: linear coefficients uniform in ``[0, 1]^k``; a curvature matrix with random
orthonormal eigenvectors and eigenvalues uniform in ``[1, 2]`` (negated for ``B`` in ``NSD_k``, kept for
``B^{uv}`` in ``PSD_k``); ``||a||^2`` a uniform share in ``[0.3, 0.7]`` of the unit total so that ``a``
does not vanish relative to ``B`` as ``k`` grows; for fair metrics ``lam`` uniform in ``[0.25, 0.75]``,
the ``B^{uv}`` Frobenius norms a random split of the total 2, and each class's group prevalences
``tau[:, i]`` uniform weights normalised to one. `satisfies_regularity` checks Assumption 3 so benchmarks
can count violators or resample.

Paper symbols
-------------
=====================  =======================================================================
``noise_threshold``    ``epsilon_Omega`` of Definition 4
``beta``               inverse temperature of the logistic model (not in the paper)
``sphere.radius``      ``rho``, radius of the query sphere around ``o``
``inner_radius``       ``varrho``, radius of the small spheres QPME runs LPME on
``z_j``                ``o + (rho - varrho) alpha_j``; ``-z_j`` denotes ``o - (rho - varrho) alpha_j``
=====================  =======================================================================
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from .errors import InvalidConfigError
from .types import (
    FairQuadraticMetric,
    FloatArray,
    LinearMetric,
    Metric,
    QuadraticMetric,
    RandomState,
    Sphere,
    as_generator,
    check_tau,
    pair_index,
)

__all__ = [
    "DEFAULT_LINEAR_SHARE",
    "DEFAULT_MIN_GRADIENT",
    "DEFAULT_TRADEOFF_RANGE",
    "ExactOracle",
    "LapseOracle",
    "LogisticOracle",
    "ProbitOracle",
    "ThresholdNoiseOracle",
    "random_fair_metric",
    "random_linear_metric",
    "random_quadratic_metric",
    "regularity_points",
    "satisfies_regularity",
]

#: Appendix H: a metric "follows Assumption 3" when the gradient has a coordinate larger than 1e-2.
DEFAULT_MIN_GRADIENT: Final = 1e-2
#: Range of ``||a||^2`` (share of the unit total) for random quadratic metrics, as in the authors' setup.
DEFAULT_LINEAR_SHARE: Final = (0.3, 0.7)
#: Range of the trade-off ``lam`` for random fair metrics, as in the authors' setup.
DEFAULT_TRADEOFF_RANGE: Final = (0.25, 0.75)
#: Smallest entry of a random fair metric's cost vector ``a`` (the authors redraw below it).
_MIN_COST: Final = 1e-2
#: Attempts before a generator asked for regular metrics gives up.
DEFAULT_MAX_ATTEMPTS: Final = 10_000


class _CountingOracle:
    """Shared bookkeeping: the hidden metric, the number of calls and of wrong answers."""

    def __init__(self, metric: Metric) -> None:
        if not isinstance(metric, Metric):
            raise InvalidConfigError(
                f"metric must be a Metric (e.g. QuadraticMetric), got {type(metric).__name__}"
            )
        self.metric = metric
        self.calls = 0
        self.wrong_answers = 0

    def _answer(self, first: FloatArray, second: FloatArray, truth: bool) -> bool:
        raise NotImplementedError

    def __call__(self, first: npt.ArrayLike, second: npt.ArrayLike) -> bool:
        r1 = np.asarray(first, dtype=np.float64)
        r2 = np.asarray(second, dtype=np.float64)
        truth = self.metric.prefers(r1, r2)
        answer = self._answer(r1, r2, truth)
        self.calls += 1
        if answer != truth:
            self.wrong_answers += 1
        return answer

    def reset(self) -> None:
        """Zero the call and wrong-answer counters (the rng, if any, is not rewound)."""
        self.calls = 0
        self.wrong_answers = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(calls={self.calls}, wrong_answers={self.wrong_answers})"


class ExactOracle(_CountingOracle):
    """The noise-free oracle of Definition 1: ``first`` is preferred iff the metric rates it strictly better.

    Parameters
    ----------
    metric : Metric
        The hidden metric; its ``prefers`` decides (utilities: higher wins, fair costs: lower wins).
    """

    def _answer(self, first: FloatArray, second: FloatArray, truth: bool) -> bool:
        return truth


class ThresholdNoiseOracle(_CountingOracle):
    """Definition 4's oracle: correct when ``|phi(r1) - phi(r2)| > noise_threshold``, unreliable otherwise.

    Parameters
    ----------
    metric : Metric
        The hidden metric.
    noise_threshold : float
        ``epsilon_Omega >= 0``; value gaps at or below it may be answered wrongly.
    rng : numpy.random.Generator or int, optional
        Source of the fair coin used for close pairs; required unless ``adversarial``.
    adversarial : bool
        Answer every close pair wrongly instead of at random (the worst case Definition 4 permits).

    Raises
    ------
    InvalidConfigError
        If ``noise_threshold`` is negative or not finite, or ``rng`` is missing in random mode.
    """

    def __init__(
        self,
        metric: Metric,
        noise_threshold: float,
        *,
        rng: RandomState | None = None,
        adversarial: bool = False,
    ) -> None:
        super().__init__(metric)
        threshold = float(noise_threshold)
        if not np.isfinite(threshold) or threshold < 0.0:
            raise InvalidConfigError(f"noise_threshold must be a finite number >= 0, got {noise_threshold!r}")
        if not adversarial and rng is None:
            raise InvalidConfigError(
                "rng (a numpy.random.Generator or an integer seed) is needed unless adversarial=True"
            )
        self.noise_threshold = threshold
        self.rng = None if rng is None else as_generator(rng)
        self.adversarial = adversarial

    def _answer(self, first: FloatArray, second: FloatArray, truth: bool) -> bool:
        if self.metric.value_gap(first, second) > self.noise_threshold:
            return truth
        if self.adversarial:
            return not truth
        assert self.rng is not None  # checked in __init__
        return bool(self.rng.random() < 0.5)


def _noise_scale(value: float, name: str) -> float:
    """A noisy oracle's scale parameter: a positive finite number (`InvalidConfigError` otherwise)."""
    number = float(value)
    if not np.isfinite(number) or number <= 0.0:
        raise InvalidConfigError(f"{name} must be a positive finite number, got {value!r}")
    return number


class LogisticOracle(_CountingOracle):
    """A Bradley-Terry style human: correct with probability ``sigmoid(beta * |phi(r1) - phi(r2)|)``.

    Parameters
    ----------
    metric : Metric
        The hidden metric.
    beta : float
        Inverse temperature ``> 0``; larger means a more consistent person. Metric values of normalised
        metrics on rates differ by at most a few units, so ``beta`` in the hundreds to thousands makes the
        model err mainly on near-ties.
    rng : numpy.random.Generator or int
        Source of the answer randomness.

    Raises
    ------
    InvalidConfigError
        If ``beta`` is not a positive finite number or ``rng`` is not a Generator.
    """

    def __init__(self, metric: Metric, beta: float, *, rng: np.random.Generator) -> None:
        super().__init__(metric)
        self.beta = _noise_scale(beta, "beta")
        self.rng = as_generator(rng)

    def correct_probability(self, first: npt.ArrayLike, second: npt.ArrayLike) -> float:
        """``sigmoid(beta * |phi(first) - phi(second)|)``, in ``[0.5, 1]``."""
        gap = self.metric.value_gap(first, second)
        # exp(-x) with x >= 0 never overflows, so this form of the sigmoid is stable.
        return float(1.0 / (1.0 + np.exp(-self.beta * gap)))

    def _answer(self, first: FloatArray, second: FloatArray, truth: bool) -> bool:
        correct = bool(self.rng.random() < self.correct_probability(first, second))
        return truth if correct else not truth


class ProbitOracle(_CountingOracle):
    """A Thurstone-style human: prefers ``first`` when ``phi(r1) - phi(r2) + sigma z > 0``, ``z ~ N(0, 1)``.

    Correct with probability ``Phi(|phi(r1) - phi(r2)| / sigma)``: near-ties are coin flips, clear
    differences are almost always right.

    Parameters
    ----------
    metric : Metric
        The hidden metric.
    sigma : float
        Standard deviation ``> 0`` of the value noise, on the normalised metric's scale.
    rng : numpy.random.Generator or int
        Source of the answer randomness.

    Raises
    ------
    InvalidConfigError
        If ``sigma`` is not a positive finite number or ``rng`` is not a Generator.
    """

    def __init__(self, metric: Metric, sigma: float, *, rng: np.random.Generator) -> None:
        super().__init__(metric)
        self.sigma = _noise_scale(sigma, "sigma")
        self.rng = as_generator(rng)

    def _answer(self, first: FloatArray, second: FloatArray, truth: bool) -> bool:
        correct = self.metric.value_gap(first, second) + self.sigma * self.rng.standard_normal() > 0.0
        return truth if correct else not truth


class LapseOracle(_CountingOracle):
    """A careful person who sometimes lapses: right on every pair, except that with probability ``lapse``
    (attention elsewhere, a slip of the finger) the answer is a fair coin, however clear the pair.

    Unlike logistic or probit noise, a lapse does not shrink with the value gap, so a model that explains
    wrong answers by closeness alone meets answers it cannot explain.

    Parameters
    ----------
    metric : Metric
        The hidden metric.
    lapse : float
        Probability in ``[0, 1]`` that an answer is a coin flip.
    rng : numpy.random.Generator or int
        Source of the lapses and coins.

    Raises
    ------
    InvalidConfigError
        If ``lapse`` is not in ``[0, 1]``.
    """

    def __init__(self, metric: Metric, lapse: float, *, rng: RandomState) -> None:
        super().__init__(metric)
        rate = float(lapse)
        if not 0.0 <= rate <= 1.0:
            raise InvalidConfigError(f"lapse must lie in [0, 1], got {lapse!r}")
        self.lapse = rate
        self.rng = as_generator(rng)

    def _answer(self, first: FloatArray, second: FloatArray, truth: bool) -> bool:
        if self.rng.random() < self.lapse:
            return bool(self.rng.random() < 0.5)
        return truth


# ----------------------------------------------------------------------------------------------------------
# Random metrics
# ----------------------------------------------------------------------------------------------------------


def _check_count(value: int, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_range(bounds: tuple[float, float], name: str, low: float, high: float) -> tuple[float, float]:
    lo, hi = (float(bounds[0]), float(bounds[1]))
    if not (low <= lo <= hi <= high):
        raise InvalidConfigError(
            f"{name} must be an interval (lo, hi) with {low} <= lo <= hi <= {high}, got {bounds}"
        )
    return lo, hi


def _random_definite(rng: np.random.Generator, k: int) -> FloatArray:
    """A random symmetric positive definite ``(k, k)`` matrix: Haar eigenvectors, eigenvalues in [1, 2]."""
    gaussian = rng.standard_normal((k, k))
    q, r = np.linalg.qr(gaussian)
    # Fixing the signs of R's diagonal makes Q Haar-distributed rather than biased by the QR convention.
    q = q * np.sign(np.where(np.diag(r) == 0.0, 1.0, np.diag(r)))
    eigenvalues = 1.0 + rng.random(k)
    matrix: FloatArray = (q * eigenvalues) @ q.T
    return (matrix + matrix.T) / 2.0


def random_linear_metric(rng: RandomState, k: int, *, nonnegative: bool = False) -> LinearMetric:
    """Draw ``phi(r) = <a, r>`` with ``a`` uniform on the unit sphere (or its non-negative orthant).

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Source of randomness.
    k : int
        Number of rates ``>= 2``.
    nonnegative : bool
        Restrict ``a`` to ``a >= 0`` (weighted-accuracy style metrics); by default every orthant is
        equally likely, which exercises LPME's orthant discovery.

    Returns
    -------
    LinearMetric
    """
    generator = as_generator(rng)
    n = _check_count(k, "k", 2)
    while True:
        a = generator.standard_normal(n)
        if nonnegative:
            a = np.abs(a)
        if float(np.linalg.norm(a)) > 1e-8:
            return LinearMetric(a)


def regularity_points(sphere: Sphere, inner_radius: float, *, pivot: int = 0) -> dict[str, FloatArray]:
    """The centres at which QPME estimates gradients: ``o``, ``z_1..z_k`` and ``-z_{pivot+1}``.

    Parameters
    ----------
    sphere : Sphere
        The query sphere (centre ``o``, radius ``rho``).
    inner_radius : float
        ``varrho`` with ``0 < varrho < rho``.
    pivot : int
        0-based coordinate of the mirrored point (the paper uses the first coordinate).

    Returns
    -------
    dict
        ``{"o": ..., "z1": ..., ..., "zk": ..., "-z<pivot+1>": ...}``, each of shape ``(n_classes,)``.
    """
    if not isinstance(sphere, Sphere):
        raise InvalidConfigError(f"sphere must be a Sphere, got {type(sphere).__name__}")
    varrho = float(inner_radius)
    if not np.isfinite(varrho) or not 0.0 < varrho < sphere.radius:
        raise InvalidConfigError(
            f"inner_radius must lie in (0, {sphere.radius:g}) (the sphere radius), got {inner_radius!r}"
        )
    k = sphere.n_classes
    index = _check_count(pivot, "pivot", 0)
    if index >= k:
        raise InvalidConfigError(f"pivot must lie in [0, {k - 1}], got {pivot}")
    step = sphere.radius - varrho
    points: dict[str, FloatArray] = {"o": sphere.center.copy()}
    for j in range(k):
        z = sphere.center.copy()
        z[j] += step
        points[f"z{j + 1}"] = z
    minus = sphere.center.copy()
    minus[index] -= step
    points[f"-z{index + 1}"] = minus
    return points


def satisfies_regularity(
    metric: QuadraticMetric,
    sphere: Sphere,
    inner_radius: float,
    min_norm: float = DEFAULT_MIN_GRADIENT,
    *,
    min_pivot: float = 0.0,
    pivot: int = 0,
) -> bool:
    """Check Assumption 3 for ``metric``: gradients at ``o``, every ``z_j`` and ``-z_1`` are far from zero.

    Parameters
    ----------
    metric : QuadraticMetric
        The metric ``<a, r> + 1/2 r^T B r`` (gradient ``a + B r``).
    sphere : Sphere
        Query sphere (``o``, ``rho``).
    inner_radius : float
        ``varrho``; the points are ``o``, ``o + (rho - varrho) alpha_j`` and ``o - (rho - varrho) alpha_1``.
    min_norm : float
        Each gradient needs a coordinate of absolute value ``>= min_norm`` (Appendix H's "one coordinate
        of the gradient greater than 1e-2"), i.e. an infinity norm of at least ``min_norm``.
    min_pivot : float
        Optional stricter check used by the authors' "well-formed" metrics: at every point the pivot
        coordinate of the unit-normalised gradient has absolute value ``>= min_pivot``, and the slopes at
        ``z_1`` and ``-z_1`` differ, ``|f^-_2/f^-_1 - f_2/f_1| >= min_pivot`` (the denominator of Equation
        (12)). ``0`` disables it.
    pivot : int
        0-based pivot coordinate for ``min_pivot`` (the paper's ``d_1``); the mirrored point is
        ``-z_{pivot+1}`` and the compared coordinate is ``pivot + 1`` (cyclically).

    Returns
    -------
    bool
        True when every condition holds.
    """
    if not isinstance(metric, QuadraticMetric):
        raise InvalidConfigError(f"metric must be a QuadraticMetric, got {type(metric).__name__}")
    if metric.n_classes != sphere.n_classes:
        raise InvalidConfigError(f"metric has {metric.n_classes} rates but the sphere has {sphere.n_classes}")
    threshold = float(min_norm)
    strict = float(min_pivot)
    if not np.isfinite(threshold) or threshold < 0.0:
        raise InvalidConfigError(f"min_norm must be a finite number >= 0, got {min_norm!r}")
    if not np.isfinite(strict) or strict < 0.0:
        raise InvalidConfigError(f"min_pivot must be a finite number >= 0, got {min_pivot!r}")
    points = regularity_points(sphere, inner_radius, pivot=pivot)
    slopes: dict[str, FloatArray] = {}
    for name, point in points.items():
        gradient = metric.gradient(point)
        largest = float(np.max(np.abs(gradient)))
        if largest < threshold or largest == 0.0:
            return False
        slopes[name] = gradient / float(np.linalg.norm(gradient))
    if strict == 0.0:
        return True
    if any(abs(float(slope[pivot])) < strict for slope in slopes.values()):
        return False
    other = (pivot + 1) % sphere.n_classes
    plus, minus = slopes[f"z{pivot + 1}"], slopes[f"-z{pivot + 1}"]
    separation = abs(float(minus[other] / minus[pivot]) - float(plus[other] / plus[pivot]))
    return separation >= strict


def random_quadratic_metric(
    rng: RandomState,
    k: int,
    *,
    sphere: Sphere | None = None,
    inner_radius: float | None = None,
    min_norm: float = DEFAULT_MIN_GRADIENT,
    min_pivot: float = 0.0,
    linear_share: tuple[float, float] = DEFAULT_LINEAR_SHARE,
    nonnegative_a: bool = True,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> QuadraticMetric:
    """Draw a quadratic metric of Definition 2 the way Appendix H's experiments do.

    ``a`` is uniform in ``[0, 1]^k`` (signed uniform in ``[-1, 1]^k`` if ``nonnegative_a`` is false), ``B``
    is ``-S`` for a random positive definite ``S`` (Haar eigenvectors, eigenvalues uniform in ``[1, 2]``),
    and the pair is scaled so that ``||a||^2 = s`` and ``||B||_F^2 = 1 - s`` for ``s`` uniform in
    ``linear_share``. Draws whose gradient at ``o`` (Assumption 2) is too small are redrawn; with a
    ``sphere`` and ``inner_radius`` every draw must also pass `satisfies_regularity` (Assumption 3).

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Source of randomness.
    k : int
        Number of rates ``>= 2``.
    sphere : Sphere, optional
        Query sphere; its centre is ``o`` (the uniform rate ``1/k`` when omitted).
    inner_radius : float, optional
        ``varrho``; giving it together with ``sphere`` turns on the Assumption 3 check.
    min_norm, min_pivot : float
        Thresholds passed to `satisfies_regularity` (``min_norm`` also applies to the gradient at ``o``).
    linear_share : (float, float)
        Range of ``||a||^2`` within ``[0, 1]``.
    nonnegative_a : bool
        Draw ``a >= 0`` as the authors do.
    max_attempts : int
        Redraws allowed before giving up.

    Returns
    -------
    QuadraticMetric

    Raises
    ------
    InvalidConfigError
        On bad arguments, or if ``max_attempts`` draws all violate the requested assumptions.
    """
    generator = as_generator(rng)
    n = _check_count(k, "k", 2)
    attempts = _check_count(max_attempts, "max_attempts", 1)
    lo, hi = _check_range(linear_share, "linear_share", 0.0, 1.0)
    if sphere is not None and sphere.n_classes != n:
        raise InvalidConfigError(f"sphere has {sphere.n_classes} rates but k = {n}")
    if inner_radius is not None and sphere is None:
        raise InvalidConfigError("inner_radius needs a sphere (the points z_j depend on its radius)")
    center = sphere.center if sphere is not None else np.full(n, 1.0 / n)
    for _ in range(attempts):
        a = generator.random(n) if nonnegative_a else generator.uniform(-1.0, 1.0, n)
        B = -_random_definite(generator, n)
        share = float(generator.uniform(lo, hi))
        a_norm = float(np.linalg.norm(a))
        if a_norm == 0.0:
            continue
        a = a * np.sqrt(share) / a_norm
        B = B * np.sqrt(1.0 - share) / float(np.linalg.norm(B))
        metric = QuadraticMetric(a, B)
        if float(np.max(np.abs(metric.gradient(center)))) < float(min_norm):
            continue
        regular = (
            sphere is None
            or inner_radius is None
            or satisfies_regularity(metric, sphere, inner_radius, min_norm, min_pivot=min_pivot)
        )
        if not regular:
            continue
        return metric
    raise InvalidConfigError(
        f"no random metric met the requested assumptions in {attempts} attempts; "
        "lower min_norm/min_pivot or raise max_attempts"
    )


def _random_prevalences(rng: np.random.Generator, n_groups: int, n_classes: int) -> FloatArray:
    weights = rng.random((n_groups, n_classes))
    # Uniform weights can all be ~0 only with probability ~0; guard anyway so tau stays a distribution.
    weights = np.maximum(weights, 1e-12)
    tau: FloatArray = weights / weights.sum(axis=0, keepdims=True)
    return tau


def random_fair_metric(
    rng: RandomState,
    k: int,
    m: int,
    *,
    tau: npt.ArrayLike | None = None,
    tradeoff_range: tuple[float, float] = DEFAULT_TRADEOFF_RANGE,
) -> FairQuadraticMetric:
    """Draw a fair quadratic metric of Definition 3 the way Appendix H's experiments do.

    ``a`` is uniform in ``[0, 1]^k`` normalised to unit length (redrawn until every entry is at least
    ``1e-2``), each ``B^{uv}`` a random positive definite matrix (Haar eigenvectors, eigenvalues in
    ``[1, 2]``) whose Frobenius norm is a random share of the total ``sum ||B^{uv}||_F = 2``, ``lam``
    uniform in ``tradeoff_range`` and, unless given, ``tau[:, i]`` uniform weights normalised to one.

    Parameters
    ----------
    rng : numpy.random.Generator or int
        Source of randomness.
    k : int
        Number of classes ``>= 2``.
    m : int
        Number of groups ``>= 2``.
    tau : array_like, optional
        Group prevalences ``(m, k)`` with columns summing to one; drawn when omitted.
    tradeoff_range : (float, float)
        Range of ``lam`` within ``[0, 1]``.

    Returns
    -------
    FairQuadraticMetric
    """
    generator = as_generator(rng)
    n = _check_count(k, "k", 2)
    groups = _check_count(m, "m", 2)
    lo, hi = _check_range(tradeoff_range, "tradeoff_range", 0.0, 1.0)
    while True:
        a = generator.random(n)
        a = a / float(np.linalg.norm(a))
        if float(np.min(a)) >= _MIN_COST:
            break
    pairs = pair_index(groups)
    shares = np.maximum(generator.random(len(pairs)), 1e-12)
    shares = 2.0 * shares / shares.sum()
    B_pairs: dict[tuple[int, int], FloatArray] = {}
    for key, share in zip(pairs, shares, strict=True):
        S = _random_definite(generator, n)
        B_pairs[key] = S * (float(share) / float(np.linalg.norm(S)))
    lam = float(generator.uniform(lo, hi))
    prevalences = (
        _random_prevalences(generator, groups, n)
        if tau is None
        else check_tau(tau, n_groups=groups, n_classes=n)
    )
    return FairQuadraticMetric(a, B_pairs, lam, prevalences)
