"""Simulated oracles (exact, Definition 4 threshold noise, logistic) and the random metric generators."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import pytest

from elicitation import Elicitation, Elicitor, InvalidConfigError, QuadraticMetric, Query, Sphere, run
from elicitation.oracles import (
    ExactOracle,
    LapseOracle,
    LogisticOracle,
    ThresholdNoiseOracle,
    random_fair_metric,
    random_linear_metric,
    random_quadratic_metric,
    regularity_points,
    satisfies_regularity,
)
from elicitation.types import FairQuadraticMetric, LinearMetric, ask

SPHERE = Sphere.around_uniform(3, 0.2)


def _pairs(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(rng.uniform(0.2, 0.5, shape), rng.uniform(0.2, 0.5, shape)) for _ in range(n)]


def _bisection(n_steps: int) -> Elicitor[Elicitation[float]]:
    """A tiny elicitor: bisect the weight w of phi = w r1 + (1 - w) r2 along a segment (k = 2)."""

    def body() -> Generator[Query, bool, Elicitation[float]]:
        lo, hi = 0.0, 1.0
        for step in range(n_steps):
            mid = (lo + hi) / 2.0
            # r = (0.5 + t, 0.5 - s) with t/s = (1-mid)/mid is indifferent exactly when w = mid.
            first = np.array([0.5 + 0.1 * (1.0 - mid), 0.5 - 0.1 * mid])
            second = np.array([0.5, 0.5])
            if (yield from ask(Query(first, second, search="toy", step=step))):
                lo = mid
            else:
                hi = mid
        return Elicitation(metric=(lo + hi) / 2.0, num_queries=n_steps)

    return Elicitor(body(), name="toy", max_queries=n_steps)


def test_exact_oracle_answers_like_metric_prefers_and_counts_calls() -> None:
    rng = np.random.default_rng(0)
    metric = random_quadratic_metric(rng, 3)
    oracle = ExactOracle(metric)
    pairs = _pairs(rng, 50, (3,))
    answers = [oracle(first, second) for first, second in pairs]
    assert answers == [metric(first) > metric(second) for first, second in pairs]
    assert oracle.calls == 50
    assert oracle.wrong_answers == 0
    oracle.reset()
    assert oracle.calls == 0


def test_exact_oracle_prefers_lower_cost_for_fair_metrics() -> None:
    rng = np.random.default_rng(1)
    metric = random_fair_metric(rng, 2, 3)
    oracle = ExactOracle(metric)
    for first, second in _pairs(rng, 30, (3, 2)):
        assert oracle(first, second) == (metric(first) < metric(second))


def test_exact_oracle_drives_an_elicitor_through_run() -> None:
    w = 0.3
    oracle = ExactOracle(LinearMetric([w, 1.0 - w]))
    result = run(_bisection(20), oracle)
    # LinearMetric normalises (w, 1-w) to unit length; the toy search recovers the unnormalised ratio.
    assert result.metric == pytest.approx(w, abs=1e-5)
    assert oracle.calls == result.num_queries == 20


def test_exact_oracle_rejects_non_metrics() -> None:
    with pytest.raises(InvalidConfigError, match="metric"):
        ExactOracle(lambda r: 0.0)  # type: ignore[arg-type]


def test_threshold_oracle_is_always_right_above_the_threshold() -> None:
    rng = np.random.default_rng(2)
    metric = random_quadratic_metric(rng, 3)
    oracle = ThresholdNoiseOracle(metric, 1e-3, rng=np.random.default_rng(3))
    far = [(f, s) for f, s in _pairs(rng, 400, (3,)) if metric.value_gap(f, s) > 1e-3]
    assert len(far) > 300
    assert all(oracle(f, s) == metric.prefers(f, s) for f, s in far)
    assert oracle.wrong_answers == 0


def test_threshold_oracle_guesses_close_pairs_at_random_and_reproducibly() -> None:
    metric = LinearMetric([1.0, 0.0])
    first, second = np.array([0.5, 0.5]), np.array([0.4999, 0.9])  # gap 1e-4 < 1e-2

    def answers(seed: int) -> list[bool]:
        oracle = ThresholdNoiseOracle(metric, 1e-2, rng=np.random.default_rng(seed))
        return [oracle(first, second) for _ in range(2000)]

    sample = answers(7)
    assert answers(7) == sample
    assert 0.45 < np.mean(sample) < 0.55


def test_threshold_oracle_adversarial_mode_flips_every_close_pair() -> None:
    metric = LinearMetric([1.0, 0.0])
    oracle = ThresholdNoiseOracle(metric, 1e-2, adversarial=True)
    assert oracle(np.array([0.505, 0.5]), np.array([0.5, 0.5])) is False  # close: flipped
    assert oracle(np.array([0.6, 0.5]), np.array([0.5, 0.5])) is True  # far: correct
    assert (oracle.calls, oracle.wrong_answers) == (2, 1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"noise_threshold": -1e-3, "rng": np.random.default_rng(0)}, "noise_threshold"),
        ({"noise_threshold": float("nan"), "rng": np.random.default_rng(0)}, "noise_threshold"),
        ({"noise_threshold": 1e-3}, "rng"),
    ],
)
def test_threshold_oracle_rejects_bad_config(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        ThresholdNoiseOracle(LinearMetric([1.0, 0.0]), **kwargs)  # type: ignore[arg-type]


def test_logistic_oracle_correct_probability_follows_the_sigmoid() -> None:
    metric = LinearMetric([1.0, 0.0])
    oracle = LogisticOracle(metric, 100.0, rng=np.random.default_rng(0))
    same = np.array([0.5, 0.5])
    assert oracle.correct_probability(same, same) == pytest.approx(0.5)
    gap_pair = (np.array([0.51, 0.5]), same)  # gap 0.01 -> sigmoid(1)
    expected = 1.0 / (1.0 + np.exp(-1.0))
    assert oracle.correct_probability(*gap_pair) == pytest.approx(expected)
    answers = [oracle(*gap_pair) for _ in range(4000)]
    assert np.mean(answers) == pytest.approx(expected, abs=0.03)
    assert oracle.wrong_answers == answers.count(False)
    assert oracle.correct_probability(np.array([0.9, 0.5]), same) > 0.999


@pytest.mark.parametrize("beta", [0.0, -1.0, float("inf")])
def test_logistic_oracle_rejects_bad_beta(beta: float) -> None:
    with pytest.raises(InvalidConfigError, match="beta"):
        LogisticOracle(LinearMetric([1.0, 0.0]), beta, rng=np.random.default_rng(0))


def test_random_linear_metric_is_unit_and_reproducible() -> None:
    first = random_linear_metric(np.random.default_rng(5), 4)
    again = random_linear_metric(np.random.default_rng(5), 4)
    assert np.array_equal(first.a, again.a)
    assert np.linalg.norm(first.a) == pytest.approx(1.0)
    signs = np.concatenate([random_linear_metric(np.random.default_rng(s), 4).a for s in range(20)])
    assert np.any(signs < 0)  # every orthant is possible by default
    positive = random_linear_metric(np.random.default_rng(5), 4, nonnegative=True)
    assert np.all(positive.a >= 0)


@pytest.mark.parametrize("k", [2, 3, 5])
def test_random_quadratic_metric_follows_definition_2(k: int) -> None:
    rng = np.random.default_rng(k)
    for _ in range(20):
        metric = random_quadratic_metric(rng, k)
        assert np.max(np.linalg.eigvalsh(metric.B)) < 0.0
        assert metric.a @ metric.a + np.sum(metric.B**2) == pytest.approx(1.0)
        assert 0.3 - 1e-12 <= metric.a @ metric.a <= 0.7 + 1e-12
        assert np.all(metric.a >= 0.0)
        assert np.max(np.abs(metric.gradient(np.full(k, 1.0 / k)))) >= 1e-2


def test_random_quadratic_metric_with_sphere_satisfies_regularity() -> None:
    rng = np.random.default_rng(11)
    for _ in range(10):
        metric = random_quadratic_metric(
            rng, 3, sphere=SPHERE, inner_radius=0.02, min_norm=0.05, min_pivot=0.1
        )
        assert satisfies_regularity(metric, SPHERE, 0.02, 0.05, min_pivot=0.1)


def test_random_quadratic_metric_is_reproducible_and_signed_a_is_possible() -> None:
    one = random_quadratic_metric(np.random.default_rng(9), 3, nonnegative_a=False)
    two = random_quadratic_metric(np.random.default_rng(9), 3, nonnegative_a=False)
    assert np.array_equal(one.a, two.a) and np.array_equal(one.B, two.B)
    signed = [random_quadratic_metric(np.random.default_rng(s), 3, nonnegative_a=False).a for s in range(10)]
    assert np.any(np.concatenate(signed) < 0)


def test_random_quadratic_metric_gives_up_on_impossible_assumptions() -> None:
    with pytest.raises(InvalidConfigError, match="attempts"):
        random_quadratic_metric(np.random.default_rng(0), 2, min_norm=10.0, max_attempts=5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 1}, "k"),
        ({"k": 2, "linear_share": (0.8, 0.2)}, "linear_share"),
        ({"k": 2, "inner_radius": 0.01}, "sphere"),
        ({"k": 2, "sphere": SPHERE}, "k = 2"),
        ({"k": 3, "max_attempts": 0}, "max_attempts"),
    ],
)
def test_random_quadratic_metric_rejects_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        random_quadratic_metric(np.random.default_rng(0), **kwargs)  # type: ignore[arg-type]


def test_regularity_points_are_the_qpme_centres() -> None:
    points = regularity_points(SPHERE, 0.05)
    o = SPHERE.center
    assert list(points) == ["o", "z1", "z2", "z3", "-z1"]
    assert np.allclose(points["z2"], o + np.array([0.0, 0.15, 0.0]))
    assert np.allclose(points["-z1"], o - np.array([0.15, 0.0, 0.0]))
    with pytest.raises(InvalidConfigError, match="inner_radius"):
        regularity_points(SPHERE, 0.2)


def test_satisfies_regularity_detects_a_vanishing_gradient_at_z1() -> None:
    z1 = regularity_points(SPHERE, 0.02)["z1"]
    # gradient a + B r = c (z1 - r) vanishes at z1 but not at o.
    metric = QuadraticMetric(z1, -np.eye(3))
    assert not satisfies_regularity(metric, SPHERE, 0.02)
    assert satisfies_regularity(metric, SPHERE, 0.1)  # other points: the gradient no longer vanishes there
    healthy = QuadraticMetric([1.0, 1.0, 1.0], -0.1 * np.eye(3))
    assert satisfies_regularity(healthy, SPHERE, 0.02)


def test_satisfies_regularity_strict_pivot_check() -> None:
    # d_1 = 0 everywhere: non-zero gradients (loose check passes) but the pivot coordinate vanishes.
    metric = QuadraticMetric([0.0, 1.0, 1.0], np.diag([0.0, -0.1, -0.1]))
    assert satisfies_regularity(metric, SPHERE, 0.02)
    assert not satisfies_regularity(metric, SPHERE, 0.02, min_pivot=0.1)
    # pivot 2: the coordinate is fine but the slopes at z2 and -z2 barely differ.
    assert not satisfies_regularity(metric, SPHERE, 0.02, min_pivot=0.1, pivot=1)
    with pytest.raises(InvalidConfigError, match="min_pivot"):
        satisfies_regularity(metric, SPHERE, 0.02, min_pivot=-1.0)


@pytest.mark.parametrize(("k", "m"), [(2, 2), (3, 4)])
def test_random_fair_metric_follows_definition_3(k: int, m: int) -> None:
    rng = np.random.default_rng(k * 10 + m)
    metric = random_fair_metric(rng, k, m)
    assert isinstance(metric, FairQuadraticMetric)
    assert metric.tau.shape == (m, k)
    assert np.allclose(metric.tau.sum(axis=0), 1.0)
    assert np.linalg.norm(metric.a) == pytest.approx(1.0)
    assert np.min(metric.a) >= 1e-2 / np.sqrt(k)  # every cost present
    assert 0.25 <= metric.lam <= 0.75
    assert len(metric.B_pairs) == m * (m - 1) // 2
    assert 0.5 * sum(np.linalg.norm(B) for B in metric.B_pairs.values()) == pytest.approx(1.0)
    assert all(np.min(np.linalg.eigvalsh(B)) > 0.0 for B in metric.B_pairs.values())


def test_random_fair_metric_uses_given_tau_and_validates_it() -> None:
    tau = np.array([[0.3, 0.6], [0.7, 0.4]])
    metric = random_fair_metric(np.random.default_rng(0), 2, 2, tau=tau)
    assert np.allclose(metric.tau, tau)
    with pytest.raises(InvalidConfigError, match="tau"):
        random_fair_metric(np.random.default_rng(0), 2, 3, tau=tau)
    with pytest.raises(InvalidConfigError, match="m must"):
        random_fair_metric(np.random.default_rng(0), 2, 1)


def test_lapse_oracle_flips_a_coin_at_its_rate_however_clear_the_pair() -> None:
    metric = LinearMetric(np.array([0.6, 0.8]))
    clear = (np.array([0.9, 0.9]), np.array([0.1, 0.1]))
    exact = LapseOracle(metric, 0.0, rng=np.random.default_rng(0))
    assert all(exact(*clear) for _ in range(200))
    lapsing = LapseOracle(metric, 0.2, rng=np.random.default_rng(1))
    answers = [lapsing(*clear) for _ in range(4000)]
    # A lapse is a coin: wrong half the time, so 10 % wrong answers on the clearest pair.
    assert abs(answers.count(False) / 4000 - 0.1) < 0.02
    assert lapsing.wrong_answers == answers.count(False)
    with pytest.raises(InvalidConfigError, match="lapse"):
        LapseOracle(metric, 1.5, rng=0)
