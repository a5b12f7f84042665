"""Evaluation measures: coefficient errors, agreement, NDCG / Kendall's tau and Theorem 2's lower bound."""

from __future__ import annotations

import math

import numpy as np
import pytest

from elicitation import (
    FairQuadraticMetric,
    InvalidConfigError,
    LinearMetric,
    NumericalError,
    QuadraticMetric,
    Sphere,
)
from elicitation.evaluation import (
    JUST_NOTICEABLE,
    ElicitationErrors,
    agreement,
    cubic_degrees_of_freedom,
    diagonal_degrees_of_freedom,
    elicitation_errors,
    fair_degrees_of_freedom,
    kendall_tau,
    linear_degrees_of_freedom,
    ndcg,
    noisy_agreement,
    quadratic_degrees_of_freedom,
    query_lower_bound,
    ranking_quality,
    sample_query_pairs,
    theorem2_lower_bound,
)
from elicitation.oracles import random_fair_metric, random_quadratic_metric

SPHERE = Sphere.around_uniform(3, 0.2)
TAU = np.array([[0.4, 0.7], [0.6, 0.3]])


def _fair(lam: float, scale: float = 1.0) -> FairQuadraticMetric:
    return FairQuadraticMetric([1.0, 2.0], {(0, 1): scale * np.array([[2.0, 0.5], [0.5, 1.0]])}, lam, TAU)


def test_errors_of_identical_metrics_are_zero() -> None:
    metric = random_quadratic_metric(np.random.default_rng(0), 3)
    assert elicitation_errors(metric, metric) == ElicitationErrors(a=0.0, B=0.0)


def test_errors_of_linear_metrics_compare_unit_vectors() -> None:
    errors = elicitation_errors(LinearMetric([1.0, 0.0]), LinearMetric([0.0, 5.0]))
    assert errors.a == pytest.approx(math.sqrt(2.0))
    assert errors.B is None and errors.lam is None


def test_errors_of_quadratic_metrics_use_the_normalised_coefficients() -> None:
    true = QuadraticMetric([3.0, 0.0], np.diag([0.0, -4.0]))  # scale 5: a = (0.6, 0), B = diag(0, -0.8)
    estimate = QuadraticMetric([0.0, 3.0], np.diag([-4.0, 0.0]))
    errors = elicitation_errors(true, estimate)
    assert errors.a == pytest.approx(0.6 * math.sqrt(2.0))
    assert errors.B is not None
    assert math.isclose(errors.B, 0.8 * math.sqrt(2.0))
    assert errors.B_pairs is None


def test_errors_of_fair_metrics_cover_a_pairs_and_tradeoff() -> None:
    errors = elicitation_errors(_fair(0.3), _fair(0.5, scale=7.0))
    # B^{uv} is normalised on construction, so a rescaled B_pairs is the same metric part.
    assert errors == ElicitationErrors(a=0.0, B_pairs=pytest.approx(0.0), lam=pytest.approx(0.2))
    other = FairQuadraticMetric([1.0, 2.0], {(0, 1): np.eye(2)}, 0.3, TAU)
    expected = float(np.linalg.norm(_fair(0.3).B_pairs[(0, 1)] - other.B_pairs[(0, 1)]))
    assert elicitation_errors(_fair(0.3), other).B_pairs == pytest.approx(expected)


def test_errors_reject_different_families_and_shapes() -> None:
    with pytest.raises(InvalidConfigError, match="same family"):
        elicitation_errors(LinearMetric([1.0, 0.0]), QuadraticMetric([1.0, 0.0], -np.eye(2)))
    with pytest.raises(InvalidConfigError, match="shapes"):
        elicitation_errors(LinearMetric([1.0, 0.0]), LinearMetric([1.0, 0.0, 0.0]))


def test_sample_query_pairs_lie_in_the_ball_with_the_right_shapes() -> None:
    first, second = sample_query_pairs(SPHERE, 200, np.random.default_rng(0))
    assert first.shape == second.shape == (200, 3)
    distances = np.linalg.norm(np.vstack([first, second]) - SPHERE.center, axis=1)
    assert np.all(distances <= SPHERE.radius + 1e-12)
    assert np.median(distances) > 0.7 * SPHERE.radius  # uniform in a 3-ball: median radius 0.79 rho
    fair_first, _ = sample_query_pairs(SPHERE, 5, np.random.default_rng(0), n_groups=4)
    assert fair_first.shape == (5, 4, 3)
    with pytest.raises(InvalidConfigError, match="n_pairs"):
        sample_query_pairs(SPHERE, 0, np.random.default_rng(0))


def test_agreement_is_one_with_itself_and_zero_with_the_opposite_metric() -> None:
    metric = LinearMetric([0.3, -0.5, 0.8])
    rng = np.random.default_rng(1)
    assert agreement(metric, metric, SPHERE, rng, n_pairs=300) == 1.0
    assert agreement(metric, LinearMetric(-metric.a), SPHERE, rng, n_pairs=300) == 0.0


def test_agreement_of_a_quadratic_metric_with_its_linear_part_is_partial_and_reproducible() -> None:
    metric = QuadraticMetric([0.1, 0.0, -0.1], -np.eye(3))
    linear = LinearMetric(metric.a)
    value = agreement(metric, linear, SPHERE, np.random.default_rng(2), n_pairs=500)
    assert 0.3 < value < 0.95
    assert agreement(metric, linear, SPHERE, np.random.default_rng(2), n_pairs=500) == value


def test_agreement_for_fair_metrics_samples_one_rate_per_group() -> None:
    rng = np.random.default_rng(3)
    metric = random_fair_metric(rng, 3, 3)
    assert agreement(metric, metric, SPHERE, rng, n_pairs=100) == 1.0


def test_noisy_agreement_overall_is_agreement_on_the_same_pairs() -> None:
    metric = QuadraticMetric([0.4, 0.3, 0.2], -np.eye(3))
    # The tangent at the centre: right on pairs with large true differences, wrong on some small ones.
    linear = LinearMetric(metric.a + metric.B @ SPHERE.center)
    report = noisy_agreement(metric, linear, SPHERE, np.random.default_rng(2), beta=200.0, n_pairs=500)
    assert report.overall == agreement(metric, linear, SPHERE, np.random.default_rng(2), n_pairs=500)
    assert 0.0 < report.noticeable_share < 1.0
    assert report.overall < 1.0
    assert report.noticeable > report.overall


def test_noisy_agreement_counts_as_noticeable_exactly_the_pairs_answered_right_75_percent() -> None:
    metric = LinearMetric([1.0, 0.0, 0.0])
    rng = np.random.default_rng(4)
    first, second = sample_query_pairs(SPHERE, 400, np.random.default_rng(4), n_groups=None)
    gaps = np.array([metric.value_gap(r1, r2) for r1, r2 in zip(first, second, strict=True)])
    beta = 50.0
    report = noisy_agreement(metric, metric, SPHERE, rng, beta=beta, n_pairs=400)
    threshold = math.log(JUST_NOTICEABLE / (1.0 - JUST_NOTICEABLE)) / beta
    assert report.noticeable_share == pytest.approx(np.mean(gaps >= threshold))
    assert report.self_agreement == pytest.approx(np.mean(1.0 / (1.0 + np.exp(-beta * gaps))))
    assert report.overall == report.noticeable == 1.0
    # A sharper person notices more pairs and agrees with themselves more often.
    sharper = noisy_agreement(metric, metric, SPHERE, np.random.default_rng(4), beta=10 * beta, n_pairs=400)
    assert sharper.noticeable_share > report.noticeable_share
    assert sharper.self_agreement > report.self_agreement


def test_noisy_agreement_reports_nan_without_noticeable_pairs_and_rejects_bad_noise() -> None:
    metric = LinearMetric([1.0, 0.0, 0.0])
    report = noisy_agreement(metric, metric, SPHERE, np.random.default_rng(5), beta=1e-3, n_pairs=50)
    assert report.noticeable_share == 0.0 and math.isnan(report.noticeable)
    assert 0.5 < report.self_agreement < 0.51
    with pytest.raises(InvalidConfigError, match="beta"):
        noisy_agreement(metric, metric, SPHERE, np.random.default_rng(5), beta=0.0)
    with pytest.raises(InvalidConfigError, match="level"):
        noisy_agreement(metric, metric, SPHERE, np.random.default_rng(5), beta=1.0, level=0.5)


def test_ndcg_with_exponential_gain_matches_hand_computation() -> None:
    assert ndcg([1.0, 0.0, 0.5], [3.0, 1.0, 2.0]) == pytest.approx(1.0)
    # ranked: item1 (rel 0), item0 (rel 1): DCG = (2^1 - 1)/log2(3); ideal = 1/log2(2) = 1.
    assert ndcg([1.0, 0.0], [0.0, 1.0]) == pytest.approx(1.0 / math.log2(3.0))
    relevance = [0.2, 1.0, 0.0]
    scores = [0.5, 0.1, 0.9]  # order 2, 0, 1
    gains = [2**0.0 - 1, 2**0.2 - 1, 2**1.0 - 1]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(gains, reverse=True)))
    assert ndcg(relevance, scores) == pytest.approx(dcg / ideal)
    assert ndcg([1.0, 0.0], [0.0, 1.0], top=1) == 0.0
    assert ndcg([0.0, 0.0], [0.0, 1.0]) == 1.0


@pytest.mark.parametrize(
    ("relevance", "scores", "top", "match"),
    [
        ([-1.0, 0.0], [0.0, 1.0], None, "non-negative"),
        ([1.0, 0.0], [0.0, 1.0, 2.0], None, "shape"),
        ([1.0], [0.0], None, "at least 2"),
        ([1.0, 0.0], [0.0, 1.0], 0, "top"),
        ([1.0, float("nan")], [0.0, 1.0], None, "finite"),
    ],
)
def test_ndcg_rejects_bad_input(
    relevance: list[float], scores: list[float], top: int | None, match: str
) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        ndcg(relevance, scores, top=top)


def test_kendall_tau_counts_concordant_pairs() -> None:
    assert kendall_tau([1, 2, 3, 4], [1, 2, 3, 4]) == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4.0 / 6.0)  # 5 concordant, 1 discordant
    with pytest.raises(NumericalError, match="tied"):
        kendall_tau([1, 1, 1], [1, 2, 3])


def test_ranking_quality_is_perfect_for_the_true_metric_and_handles_costs() -> None:
    rng = np.random.default_rng(4)
    metric = random_quadratic_metric(rng, 3)
    candidates = rng.uniform(0.2, 0.5, (40, 3))
    quality = ranking_quality(metric, metric, candidates)
    assert (quality.ndcg, quality.kendall_tau) == pytest.approx((1.0, 1.0))
    fair = random_fair_metric(rng, 2, 2)
    fair_candidates = rng.uniform(0.3, 0.7, (30, 2, 2))
    quality = ranking_quality(fair, fair, fair_candidates)
    assert (quality.ndcg, quality.kendall_tau) == pytest.approx((1.0, 1.0))


def test_ranking_quality_penalises_a_reversed_metric() -> None:
    rng = np.random.default_rng(5)
    metric = LinearMetric([0.2, 0.5, 0.3])
    candidates = rng.uniform(0.2, 0.5, (25, 3))
    quality = ranking_quality(metric, LinearMetric(-metric.a), candidates)
    assert quality.kendall_tau == pytest.approx(-1.0)
    assert quality.ndcg < 0.7
    top = ranking_quality(metric, LinearMetric(-metric.a), candidates, top=3)
    assert top.ndcg < quality.ndcg  # the worst items are now on top


def test_ranking_quality_rejects_constant_truth_and_too_few_candidates() -> None:
    metric = LinearMetric([1.0, 0.0])
    with pytest.raises(NumericalError, match="same"):
        ranking_quality(metric, metric, np.array([[0.5, 0.1], [0.5, 0.9]]))
    with pytest.raises(InvalidConfigError, match="candidates"):
        ranking_quality(metric, metric, np.array([[0.5, 0.1]]))


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_degrees_of_freedom_count_free_coefficients(k: int) -> None:
    upper = k * (k + 1) // 2  # independent entries of a symmetric matrix
    symmetric_tensor = len({tuple(sorted(ijl)) for ijl in np.ndindex(k, k, k)})
    assert linear_degrees_of_freedom(k) == k - 1
    assert quadratic_degrees_of_freedom(k) == k + upper - 1
    assert diagonal_degrees_of_freedom(k) == 2 * k - 1
    assert cubic_degrees_of_freedom(k) == k + upper + symmetric_tensor - 1
    assert fair_degrees_of_freedom(k, 3) == (k - 1) + (3 * upper - 1) + 1


def test_query_lower_bound_is_dof_times_bits_per_coefficient() -> None:
    assert query_lower_bound(3, 0.5) == pytest.approx(3.0)
    assert query_lower_bound(4, 1e-3) == pytest.approx(4 * math.log2(1e3))
    assert query_lower_bound(4, 2.0) == 0.0  # a tolerance above the sphere's size needs no answers
    # Theorem 2 with the paper's tolerance k sqrt(k) eps; k = 2: 4 unknowns after normalisation.
    assert theorem2_lower_bound(2, 0.01) == pytest.approx(4 * math.log2(1.0 / (2 * math.sqrt(2) * 0.01)))
    bounds = [theorem2_lower_bound(k, 0.01) for k in (2, 3, 4, 5)]
    assert bounds == sorted(bounds)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: query_lower_bound(0, 0.1), "degrees_of_freedom"),
        (lambda: query_lower_bound(3, 0.0), "tolerance"),
        (lambda: theorem2_lower_bound(1, 0.01), "n_classes"),
        (lambda: theorem2_lower_bound(3, -0.01), "epsilon"),
        (lambda: fair_degrees_of_freedom(3, 1), "n_groups"),
    ],
)
def test_lower_bound_rejects_bad_arguments(call: object, match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        call()  # type: ignore[operator]
