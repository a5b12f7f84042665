"""Tests of the sphere geometry: angle parametrisation, Lemma 1 and QPME's small-sphere placement."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import unit_vectors

from elicitation import InvalidConfigError, Sphere
from elicitation.geometry import (
    boundary_angles,
    boundary_point,
    gradient_floor,
    inner_sphere,
    optimal_rate,
    qpme_spheres,
    unit_vector,
    vector_angles,
)

ATOL = 1e-12

# (angles, expected unit vector): table of hand-computed cases.
UNIT_VECTOR_CASES = [
    ([0.0], [1.0, 0.0]),
    ([math.pi / 2], [0.0, 1.0]),
    ([math.pi], [-1.0, 0.0]),
    ([math.pi / 2, 0.0], [0.0, 1.0, 0.0]),
    ([math.pi / 2, math.pi / 2], [0.0, 0.0, 1.0]),
    ([math.pi / 4, math.pi / 2], [math.sqrt(0.5), 0.0, math.sqrt(0.5)]),
    ([math.pi / 2, math.pi / 2, 3 * math.pi / 2], [0.0, 0.0, 0.0, -1.0]),
]


@pytest.mark.parametrize(("angles", "expected"), UNIT_VECTOR_CASES)
def test_unit_vector_matches_hand_computed_cases(angles: list[float], expected: list[float]) -> None:
    assert np.allclose(unit_vector(angles), expected, atol=ATOL)


@given(st.integers(2, 6).flatmap(unit_vectors))
@example(np.array([1.0, -2.8e-238]))
def test_vector_angles_inverts_unit_vector(vector: np.ndarray) -> None:
    theta = vector_angles(vector)
    assert np.all(theta[:-1] >= 0.0) and np.all(theta[:-1] <= math.pi)
    assert 0.0 <= theta[-1] < 2 * math.pi
    assert np.allclose(unit_vector(theta), vector, atol=1e-9)


def test_vector_angles_is_scale_invariant() -> None:
    assert np.allclose(vector_angles([1.0, 2.0, -3.0]), vector_angles([10.0, 20.0, -30.0]), atol=ATOL)


def test_boundary_point_and_its_inverse() -> None:
    sphere = Sphere.around_uniform(3, 0.2)
    theta = np.array([0.3, 2.0])
    point = boundary_point(sphere, theta)
    assert math.isclose(float(np.linalg.norm(point - sphere.center)), 0.2, abs_tol=ATOL)
    assert np.allclose(boundary_angles(sphere, point), theta, atol=1e-9)


def test_optimal_rate_is_lemma_1_and_beats_other_boundary_points() -> None:
    sphere = Sphere.around_uniform(4, 0.1)
    a = np.array([0.5, -1.0, 2.0, 0.0])
    best = optimal_rate(sphere, a)
    assert np.allclose(best, sphere.center + 0.1 * a / np.linalg.norm(a), atol=ATOL)
    rng = np.random.default_rng(0)
    for _ in range(50):
        other = boundary_point(sphere, rng.uniform(0, math.pi, size=3))
        assert a @ best >= a @ other - ATOL


def test_inner_spheres_touch_the_outer_sphere_from_inside() -> None:
    sphere = Sphere.around_uniform(3, 0.2)
    spheres = qpme_spheres(sphere, 0.05, pivot=1)
    assert len(spheres) == 3 + 2
    assert np.allclose(spheres[0].center, sphere.center)
    for j in range(3):
        expected = sphere.center.copy()
        expected[j] += 0.15
        assert np.allclose(spheres[1 + j].center, expected, atol=ATOL)
    expected = sphere.center.copy()
    expected[1] -= 0.15
    assert np.allclose(spheres[-1].center, expected, atol=ATOL)
    for small in spheres:
        assert small.radius == 0.05
        assert float(np.linalg.norm(small.center - sphere.center)) + small.radius <= 0.2 + ATOL


def test_inner_sphere_fits_when_the_outer_sphere_touches_the_cube() -> None:
    sphere = Sphere(np.array([0.5, 0.5]), 0.5)
    small = inner_sphere(sphere, 0.1, axis=0, sign=1)
    assert np.all(small.center + small.radius <= 1.0)


@pytest.mark.parametrize("inner_radius", [0.0, -0.1, 0.2, 0.3, float("nan"), "x"])
def test_inner_radius_outside_the_sphere_is_rejected(inner_radius: object) -> None:
    with pytest.raises(InvalidConfigError, match="inner_radius"):
        inner_sphere(Sphere.around_uniform(2, 0.2), inner_radius)  # type: ignore[arg-type]


def test_bad_geometry_inputs_name_the_parameter() -> None:
    sphere = Sphere.around_uniform(3, 0.2)
    with pytest.raises(InvalidConfigError, match="angles"):
        boundary_point(sphere, [0.1])
    with pytest.raises(InvalidConfigError, match="coefficients"):
        optimal_rate(sphere, [0.0, 0.0, 0.0])
    with pytest.raises(InvalidConfigError, match="coefficients"):
        optimal_rate(sphere, [1.0, 0.0])
    with pytest.raises(InvalidConfigError, match="vector"):
        vector_angles([0.0, 0.0])
    with pytest.raises(InvalidConfigError, match="axis"):
        inner_sphere(sphere, 0.05, axis=3)
    with pytest.raises(InvalidConfigError, match="sign"):
        inner_sphere(sphere, 0.05, axis=0, sign=0)


@given(st.integers(min_value=0, max_value=2**32 - 1), st.integers(min_value=2, max_value=4))
def test_gradient_floor_is_the_smallest_gradient_entry_over_the_ball(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    half = rng.standard_normal((k, k))
    a, B = rng.standard_normal(k), -(half @ half.T)
    sphere = Sphere.around_uniform(k, 0.2)
    floor = gradient_floor(a, B, sphere)
    # The linear gradient a + B r is smallest on the boundary; sample it densely.
    directions = rng.standard_normal((20_000, k))
    boundary = sphere.center + sphere.radius * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    sampled = np.min(a + boundary @ B, axis=0)
    assert np.all(floor <= sampled + 1e-12)
    assert np.allclose(floor, sampled, atol=0.02 * max(1.0, float(np.linalg.norm(B))))
