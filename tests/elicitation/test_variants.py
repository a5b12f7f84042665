"""Variants: general (off-diagonal) rates, the O~(k) diagonal-B elicitor and cubic metrics."""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest

from elicitation import (
    DegenerateMetricError,
    Done,
    InvalidConfigError,
    LinearMetric,
    QuadraticMetric,
    Sphere,
    replay,
    run,
)
from elicitation.evaluation import elicitation_errors
from elicitation.examples import general_coverage_matching
from elicitation.oracles import ExactOracle, ThresholdNoiseOracle
from elicitation.qpme import qpme, qpme_max_queries
from elicitation.variants import (
    CubicMetric,
    cubic_qpme,
    diagonal_qpme,
    general_lpme,
    general_n_classes,
    general_qpme,
    general_sphere,
    offdiagonal_rates,
    rate_matrix,
)


def _queries_inside(result_log: tuple[tuple[object, bool], ...], sphere: Sphere) -> bool:
    return all(sphere.contains(q.first) and sphere.contains(q.second) for q, _ in result_log)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------- general rates


@pytest.mark.parametrize(("q", "k"), [(2, 2), (6, 3), (12, 4), (20, 5)])
def test_general_n_classes_inverts_k_squared_minus_k(q: int, k: int) -> None:
    assert general_n_classes(q) == k


@pytest.mark.parametrize("q", [0, 1, 3, 5, 7])
def test_general_n_classes_rejects_other_counts(q: int) -> None:
    with pytest.raises(InvalidConfigError, match="k\\^2 - k"):
        general_n_classes(q)


def test_offdiagonal_rates_round_trip_through_rate_matrix() -> None:
    R = np.array([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.25, 0.25, 0.5]])
    rates = offdiagonal_rates(R)
    assert np.allclose(rates, [0.2, 0.1, 0.1, 0.3, 0.25, 0.25])  # row-major, diagonal skipped
    assert np.allclose(rate_matrix(rates), R)
    assert np.allclose(rate_matrix(np.full(6, 1.0 / 3.0)).sum(axis=1), 1.0)


def test_general_sphere_rejects_radii_that_break_rate_matrices() -> None:
    sphere = general_sphere(3, 0.2)
    assert sphere.n_classes == 6 and np.allclose(sphere.center, 1.0 / 3.0)
    # largest row sum 2/3 + r sqrt(2) must stay <= 1: r <= 0.2357
    with pytest.raises(InvalidConfigError, match="negative diagonal"):
        general_sphere(3, 0.24)
    with pytest.raises(InvalidConfigError, match="k\\^2 - k"):
        general_qpme(Sphere.around_uniform(3, 0.1))


def test_general_qpme_recovers_appendix_e_coverage_matching() -> None:
    sphere = general_sphere(3, 0.1)
    metric = general_coverage_matching([0.2, 0.3, 0.5])
    result = run(general_qpme(sphere), ExactOracle(metric))
    errors = elicitation_errors(metric, result.metric)
    assert errors.a < 0.05 and errors.B is not None and errors.B < 0.05
    assert result.details["n_classes"] == 3
    assert _queries_inside(result.log, sphere)


def test_general_lpme_recovers_a_linear_metric_in_general_rates() -> None:
    sphere = general_sphere(3, 0.2)
    metric = LinearMetric([0.5, -0.2, 0.1, 0.4, -0.6, 0.3])
    result = run(general_lpme(sphere), ExactOracle(metric))
    assert elicitation_errors(metric, result.metric).a < 0.05
    assert result.details["n_classes"] == 3


# ----------------------------------------------------------------------------------------------- diagonal B


def _random_diagonal(rng: np.random.Generator, k: int) -> QuadraticMetric:
    return QuadraticMetric(rng.random(k), np.diag(-(1.0 + rng.random(k))))


@pytest.mark.parametrize("k", [2, 3, 5])
def test_diagonal_qpme_recovers_diagonal_metrics(k: int) -> None:
    rng = np.random.default_rng(k)
    sphere = Sphere.around_uniform(k, 0.2)
    for _ in range(3):
        metric = _random_diagonal(rng, k)
        elicitor = diagonal_qpme(sphere)
        result = run(elicitor, ExactOracle(metric))
        errors = elicitation_errors(metric, result.metric)
        assert errors.a < 0.03 and errors.B is not None and errors.B < 0.05
        assert np.count_nonzero(result.metric.B - np.diag(np.diag(result.metric.B))) == 0
        assert result.num_queries <= elicitor.max_queries
        assert _queries_inside(result.log, sphere)


def test_diagonal_qpme_boundary_probes_are_exact_too() -> None:
    sphere = Sphere.around_uniform(3, 0.2)
    metric = _random_diagonal(np.random.default_rng(4), 3)
    result = run(diagonal_qpme(sphere, probe="boundary"), ExactOracle(metric))
    errors = elicitation_errors(metric, result.metric)
    assert errors.a < 0.01 and errors.B is not None and errors.B < 0.02
    assert result.details["probe"] == "boundary"


def test_diagonal_qpme_degrades_gracefully_under_definition_4_noise() -> None:
    # Antipodal probes keep compared values 2 varrho |derivative| apart, so answers within eps_Omega of a
    # tie only blur the angle by O(eps_Omega / varrho); boundary probes lose O(sqrt(eps_Omega / varrho)).
    sphere = Sphere.around_uniform(3, 0.2)
    metric = _random_diagonal(np.random.default_rng(6), 3)
    oracle = ThresholdNoiseOracle(metric, 1e-4, rng=np.random.default_rng(0))
    antipodal = elicitation_errors(metric, run(diagonal_qpme(sphere), oracle).metric)
    oracle = ThresholdNoiseOracle(metric, 1e-4, rng=np.random.default_rng(0))
    boundary = elicitation_errors(metric, run(diagonal_qpme(sphere, probe="boundary"), oracle).metric)
    assert antipodal.a < 0.05 and antipodal.B is not None and antipodal.B < 0.1
    assert antipodal.a < boundary.a


def test_diagonal_qpme_needs_far_fewer_queries_than_qpme() -> None:
    k = 5
    sphere = Sphere.around_uniform(k, 0.2)
    metric = _random_diagonal(np.random.default_rng(0), k)
    diagonal = run(diagonal_qpme(sphere), ExactOracle(metric))
    full = run(qpme(sphere), ExactOracle(metric))
    assert diagonal.num_queries < full.num_queries / 2
    assert diagonal_qpme(sphere).max_queries < qpme_max_queries(k, 1e-2) / 2


def test_diagonal_qpme_replays_to_the_same_queries() -> None:
    sphere = Sphere.around_uniform(3, 0.2)
    live = run(diagonal_qpme(sphere), ExactOracle(_random_diagonal(np.random.default_rng(1), 3)))
    answers = [answer for _, answer in live.log]
    queries = [query for query, _ in live.log]
    step = replay(diagonal_qpme(sphere), answers, expected_queries=queries)
    assert isinstance(step, Done)
    assert np.allclose(step.result.metric.a, live.metric.a)


def test_diagonal_qpme_reports_a_zero_gradient_at_o() -> None:
    sphere = Sphere.around_uniform(2, 0.2)
    B = np.diag([-1.0, -2.0])
    metric = QuadraticMetric(-B @ sphere.center, B)  # gradient a + B o = 0
    with pytest.raises(DegenerateMetricError, match="zero"):
        run(diagonal_qpme(sphere), ExactOracle(metric))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"inner_radius": 0.2}, "inner_radius"),
        ({"cycles": 0}, "cycles"),
        ({"probe": "sideways"}, "probe"),
    ],
)
def test_diagonal_qpme_validates_eagerly(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        diagonal_qpme(Sphere.around_uniform(3, 0.2), **kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- cubic


def _random_cubic(rng: np.random.Generator, k: int) -> CubicMetric:
    S = rng.standard_normal((k, k))
    C = rng.standard_normal((k, k, k))
    C = np.mean([np.transpose(C, axes) for axes in permutations(range(3))], axis=0)
    return CubicMetric(rng.random(k), -(S @ S.T) / k, 0.5 * C)


def test_cubic_metric_normalises_and_differentiates_correctly() -> None:
    metric = _random_cubic(np.random.default_rng(0), 3)
    total = metric.a @ metric.a + np.sum(metric.B**2) + np.sum(metric.C**2)
    assert total == pytest.approx(1.0)
    r, h = np.array([0.3, 0.4, 0.2]), 1e-6
    numeric = [(metric(r + h * e) - metric(r - h * e)) / (2 * h) for e in np.eye(3)]
    assert np.allclose(metric.gradient(r), numeric, atol=1e-8)
    numeric_hessian = [(metric.gradient(r + h * e) - metric.gradient(r - h * e)) / (2 * h) for e in np.eye(3)]
    assert np.allclose(metric.hessian(r), np.array(numeric_hessian).T, atol=1e-6)


def test_cubic_metric_rejects_asymmetric_coefficients() -> None:
    C = np.zeros((2, 2, 2))
    C[0, 0, 1] = 1.0
    with pytest.raises(InvalidConfigError, match="C must be symmetric"):
        CubicMetric([1.0, 0.0], np.zeros((2, 2)), C)
    with pytest.raises(InvalidConfigError, match="B must be symmetric"):
        CubicMetric([1.0, 0.0], [[0.0, 1.0], [0.0, 0.0]], np.zeros((2, 2, 2)))
    with pytest.raises(InvalidConfigError, match="not all be zero"):
        CubicMetric([0.0, 0.0], np.zeros((2, 2)), np.zeros((2, 2, 2)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cubic_qpme_recovers_random_cubic_metrics(seed: int) -> None:
    sphere = Sphere.around_uniform(2, 0.2)
    metric = _random_cubic(np.random.default_rng(seed), 2)
    elicitor = cubic_qpme(sphere)
    result = run(elicitor, ExactOracle(metric))
    errors = elicitation_errors(metric, result.metric)
    assert errors.a < 0.02 and errors.B is not None and errors.B < 0.05
    assert errors.C is not None and errors.C < 0.06
    assert result.num_queries <= elicitor.max_queries
    assert _queries_inside(result.log, sphere)


def test_cubic_qpme_finds_no_cubic_term_in_a_quadratic_metric() -> None:
    sphere = Sphere.around_uniform(2, 0.2)
    quadratic = QuadraticMetric([0.6, 0.3], [[-0.5, 0.1], [0.1, -0.4]])
    result = run(cubic_qpme(sphere), ExactOracle(quadratic))
    assert float(np.linalg.norm(result.metric.C)) < 0.03
    assert np.allclose(result.metric.a, quadratic.a, atol=0.02)
    assert np.allclose(result.metric.B, quadratic.B, atol=0.03)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"qpme_radius": 0.25}, "inner_radius"),
        ({"qpme_radius": 0.1, "inner_radius": 0.1}, "inner_radius"),
        ({"epsilon": 2.0}, "epsilon"),
    ],
)
def test_cubic_qpme_validates_eagerly(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        cubic_qpme(Sphere.around_uniform(2, 0.2), **kwargs)  # type: ignore[arg-type]
