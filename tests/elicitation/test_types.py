"""Tests of the shared value types: validation, normalisation and metric evaluation."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import pytest

from elicitation import (
    Elicitor,
    FairQuadraticMetric,
    InvalidConfigError,
    LinearMetric,
    NumericalError,
    QuadraticMetric,
    Query,
    Sphere,
)


def test_sphere_around_uniform_is_centred_at_o() -> None:
    sphere = Sphere.around_uniform(4, 0.2)
    assert np.allclose(sphere.center, 0.25)
    assert sphere.n_classes == 4
    assert sphere.contains(sphere.center + np.array([0.2, 0, 0, 0]))
    assert not sphere.contains(sphere.center + np.array([0.21, 0, 0, 0]))


@pytest.mark.parametrize(
    ("center", "radius", "message"),
    [
        ([0.5, 0.5], 0.6, "leaves the unit cube"),
        ([0.5, 0.5], 0.0, "radius must be a positive"),
        ([0.5, 0.5], float("nan"), "radius must be a positive"),
        ([0.5], 0.1, "at least 2"),
        ([[0.5, 0.5]], 0.1, "1 dimension"),
        ([0.5, float("inf")], 0.1, "finite"),
    ],
)
def test_sphere_rejects_bad_parameters(center: list[float], radius: float, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        Sphere(np.array(center), radius)


def test_sphere_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"largest allowed radius here is 0\.5"):
        Sphere(np.array([0.5, 0.5]), 0.7)


def test_query_arrays_are_read_only_and_shapes_must_match() -> None:
    query = Query(np.array([0.1, 0.2]), np.array([0.3, 0.4]))
    with pytest.raises(ValueError, match="read-only"):
        query.first[0] = 1.0
    with pytest.raises(InvalidConfigError, match="same shape"):
        Query(np.array([0.1, 0.2]), np.array([0.3, 0.4, 0.5]))


def test_linear_metric_is_normalised_and_scale_invariant() -> None:
    metric = LinearMetric(np.array([3.0, 4.0]))
    assert np.allclose(metric.a, [0.6, 0.8])
    assert metric(np.array([1.0, 1.0])) == pytest.approx(1.4)
    assert metric.prefers(np.array([0.2, 0.9]), np.array([0.9, 0.2]))
    with pytest.raises(InvalidConfigError, match="must not be zero"):
        LinearMetric(np.zeros(3))


def test_quadratic_metric_normalisation_and_value() -> None:
    a = np.array([1.0, 2.0])
    B = -np.array([[2.0, 0.5], [0.5, 1.0]])
    metric = QuadraticMetric(a, B)
    scale = np.sqrt(a @ a + np.sum(B * B))
    r = np.array([0.3, 0.7])
    assert metric(r) == pytest.approx((a @ r + 0.5 * r @ B @ r) / scale)
    assert np.sum(metric.a**2) + np.sum(metric.B**2) == pytest.approx(1.0)
    assert np.allclose(metric.gradient(r), (a + B @ r) / scale)


@pytest.mark.parametrize(
    ("B", "message"),
    [
        (np.array([[-1.0, 0.5], [0.0, -1.0]]), "symmetric"),
        (np.array([[1.0, 0.0], [0.0, -1.0]]), "negative semi-definite"),
        (np.eye(3), "must be 2x2"),
    ],
)
def test_quadratic_metric_rejects_bad_B(B: np.ndarray, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        QuadraticMetric(np.array([1.0, 0.0]), B)


def test_indefinite_B_allowed_when_asked() -> None:
    metric = QuadraticMetric(np.array([1.0, 0.0]), np.diag([1.0, -1.0]), require_nsd=False)
    assert metric.B[0, 0] > 0


def _fair_metric(lam: float = 0.4) -> FairQuadraticMetric:
    tau = np.array([[0.3, 0.6], [0.7, 0.4]])
    return FairQuadraticMetric(np.array([1.0, 1.0]), {(0, 1): np.eye(2)}, lam, tau)


def test_fair_metric_is_a_cost_with_separate_normalisation() -> None:
    metric = _fair_metric()
    assert np.linalg.norm(metric.a) == pytest.approx(1.0)
    assert 0.5 * np.linalg.norm(metric.B_pairs[(0, 1)]) == pytest.approx(1.0)
    fair = np.array([[0.8, 0.8], [0.8, 0.8]])
    unfair = np.array([[0.9, 0.9], [0.5, 0.5]])
    overall = metric.overall_rates(unfair)
    assert np.allclose(overall, [0.3 * 0.9 + 0.7 * 0.5, 0.6 * 0.9 + 0.4 * 0.5])
    expected = 0.6 * metric.a @ (1 - overall) + 0.4 * 0.5 * (unfair[0] - unfair[1]) @ metric.B_pairs[
        (0, 1)
    ] @ (unfair[0] - unfair[1])
    assert metric(unfair) == pytest.approx(expected)
    assert metric.prefers(fair, unfair) == (metric(fair) < metric(unfair))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lam": 1.5}, "lam must lie in"),
        ({"tau": np.array([[0.3, 0.6], [0.6, 0.4]])}, "summing to one"),
        ({"tau": np.array([[1.0, 1.0]])}, "at least 2 groups"),
        ({"a": np.array([1.0, -1.0])}, "non-negative"),
        ({"B_pairs": {(0, 1): -np.eye(2)}}, "positive semi-definite"),
        ({"B_pairs": {(1, 0): np.eye(2)}}, "exactly the keys"),
    ],
)
def test_fair_metric_rejects_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    params: dict[str, object] = {
        "a": np.array([1.0, 1.0]),
        "B_pairs": {(0, 1): np.eye(2)},
        "lam": 0.5,
        "tau": np.array([[0.3, 0.6], [0.7, 0.4]]),
    }
    params.update(kwargs)
    with pytest.raises(InvalidConfigError, match=message):
        FairQuadraticMetric(**params)  # type: ignore[arg-type]


def test_elicitor_reports_a_failed_numpy_computation_as_a_numerical_error() -> None:
    def body() -> Generator[Query, bool, None]:
        yield Query(np.zeros(2), np.ones(2))
        np.linalg.cholesky(-np.eye(2))

    elicitor = Elicitor(body(), name="broken", max_queries=1)
    next(elicitor)
    with pytest.raises(NumericalError, match="broken") as raised:
        elicitor.send(True)
    assert isinstance(raised.value.__cause__, np.linalg.LinAlgError)
