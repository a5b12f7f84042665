"""Tests for the realistic query region: inside every group's feasible set, above the baselines."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from elicitation import InvalidConfigError, Sphere
from elicitation.display import DisplayGrid
from elicitation.region import (
    BASELINE_MARGIN,
    MIN_SPAN_PEOPLE,
    ball_inside,
    group_regions,
    realistic_region,
    region_summary,
)


def _roc_hull(power: float) -> np.ndarray:
    """Rates of a binary problem whose best classifiers trace ``r1 = 1 - r0 ** power`` (plus trivial ones)."""
    r0 = np.linspace(0.0, 1.0, 41)
    curve = np.stack([r0, 1.0 - r0**power], axis=1)
    return np.vstack([[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], curve])


def _inside_hull(rates: np.ndarray, point: np.ndarray) -> bool:
    n = rates.shape[0]
    a_eq = np.vstack([rates.T, np.ones((1, n))])
    result = linprog(np.zeros(n), A_eq=a_eq, b_eq=np.append(point, 1.0), bounds=(0.0, None), method="highs")
    return bool(result.status == 0)


def test_the_region_lies_in_every_hull_and_beats_every_baseline() -> None:
    hulls = [_roc_hull(6.0), _roc_hull(4.0)]
    priors = np.array([[0.65, 0.35], [0.55, 0.45]])
    region = realistic_region(hulls, priors, min_radius=0.02)
    assert region is not None
    assert region.baseline_margin == BASELINE_MARGIN
    sphere = Sphere(region.center, region.radius)
    angles = np.linspace(0.0, 2.0 * np.pi, 90, endpoint=False)
    boundary = sphere.center + sphere.radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    for rates, prior in zip(hulls, priors, strict=True):
        assert all(_inside_hull(rates, point) for point in boundary)
        assert np.min(boundary @ prior) >= prior.max() + BASELINE_MARGIN - 1e-6
    summary = region_summary(sphere, priors)
    assert summary["radius"] == pytest.approx(region.radius)
    for group, prior in zip(summary["groups"], priors, strict=True):
        low, high = group["accuracy"]
        assert low >= group["baseline"] == pytest.approx(prior.max())
        assert high == pytest.approx(float(prior @ region.center + region.radius * np.linalg.norm(prior)))


def test_a_rare_class_gets_the_most_accurate_sphere_of_the_smallest_useful_size() -> None:
    hull = _roc_hull(1.5)  # weak classifiers: nothing of useful size beats a 90 % baseline
    priors = np.array([[0.9, 0.1]])
    region = realistic_region([hull], priors, min_radius=0.03)
    assert region is not None
    assert region.radius == pytest.approx(0.03, rel=1e-5)
    assert region.baseline_margin < 0.0
    worst = float(priors[0] @ region.center - region.radius * np.linalg.norm(priors[0]))
    assert worst - priors[0].max() == pytest.approx(region.baseline_margin, abs=1e-6)


def test_no_region_when_the_feasible_set_is_too_thin() -> None:
    sliver = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.5, 0.5]])
    assert realistic_region([sliver], np.array([0.5, 0.5]), min_radius=0.3) is None
    with pytest.raises(InvalidConfigError, match="one rate array per group"):
        realistic_region([sliver, sliver], np.array([0.5, 0.5]), min_radius=0.1)


def _circle(sphere: Sphere, count: int = 90) -> np.ndarray:
    angles = np.linspace(0.0, 2.0 * np.pi, count, endpoint=False)
    return sphere.center + sphere.radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)


def test_each_group_gets_the_largest_sphere_in_its_own_set_beating_its_own_baseline() -> None:
    hulls = [_roc_hull(6.0), _roc_hull(2.5)]
    priors = np.array([[0.65, 0.35], [0.55, 0.45]])
    regions = group_regions(hulls, priors)
    common = realistic_region(hulls, priors, min_radius=0.02)
    assert regions is not None and common is not None
    for region, rates, prior in zip(regions, hulls, priors, strict=True):
        assert region.baseline_margin == BASELINE_MARGIN
        boundary = _circle(Sphere(region.center, region.radius))
        assert all(_inside_hull(rates, point) for point in boundary)
        assert np.min(boundary @ prior) >= prior.max() + BASELINE_MARGIN - 1e-6
        # A sphere touching the hull: 2 % larger leaves it or drops below the margin.
        larger = _circle(Sphere(region.center, region.radius * 1.02))
        assert (
            not all(_inside_hull(rates, point) for point in larger)
            or np.min(larger @ prior) < prior.max() + BASELINE_MARGIN
        )
    # The better-separated group is no longer held to the other group's set: its own sphere is larger.
    assert regions[0].radius > common.radius
    assert not np.allclose(regions[0].center, regions[1].center)


def test_a_rare_class_is_pinned_to_whole_people_and_the_sphere_stays_showable() -> None:
    hull = _roc_hull(12.0)
    priors = np.array([[0.89, 0.11], [0.69, 0.31]])
    regions = group_regions([hull, hull], priors)
    assert regions is not None
    grid = DisplayGrid.from_priors(priors)
    rare, common = regions
    # 11 people of the rare class: a step of 1/11 is wider than the sphere, so its rate is a whole count.
    assert rare.radius < 1.0 / 11.0
    assert rare.center[1] * 11.0 == pytest.approx(round(rare.center[1] * 11.0), abs=1e-9)
    assert rare.radius >= MIN_SPAN_PEOPLE / (2.0 * 89.0) * (1.0 - 1e-5)
    assert common.center[1] * 31.0 != pytest.approx(round(common.center[1] * 31.0), abs=1e-6)
    spheres = [Sphere(region.center, region.radius) for region in regions]
    grid.check_sphere(spheres)
    rng = np.random.default_rng(0)
    inside = np.stack([own.center + 0.9 * own.radius * rng.uniform(-0.7, 0.7, (50, 2)) for own in spheres], 1)
    snapped = grid.snap(inside, spheres)
    for group, own in enumerate(spheres):
        assert np.all(np.linalg.norm(snapped[:, group] - own.center, axis=1) <= own.radius)
    # Only the rare class is pinned: the rare group's shown classifiers differ in the common class only.
    assert len(set(grid.counts(snapped)[:, 0, 1].tolist())) == 1
    assert len(set(grid.counts(snapped)[:, 0, 0].tolist())) >= 3


def test_ball_inside_reads_the_hulls_half_spaces() -> None:
    hull = _roc_hull(4.0)
    assert ball_inside(hull, Sphere(np.array([0.6, 0.6]), 0.1))
    assert not ball_inside(hull, Sphere(np.array([0.9, 0.9]), 0.05))  # beyond the best classifiers
    assert not ball_inside(hull, Sphere(np.array([0.5, 0.5]), 0.5))
    assert not ball_inside(np.array([[0.0, 0.0], [0.5, 0.5], [1.0, 1.0]]), Sphere(np.array([0.5, 0.5]), 0.1))


def test_group_regions_need_one_rate_array_per_group_and_a_useful_sphere() -> None:
    sliver = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.5, 0.5]])
    with pytest.raises(InvalidConfigError, match="one rate array per group"):
        group_regions([sliver], np.array([[0.5, 0.5], [0.6, 0.4]]))
    flat = np.array([[0.5, 0.5], [0.52, 0.5], [0.5, 0.52]])  # a tiny set: no sphere of useful size
    assert group_regions([flat, _roc_hull(4.0)], np.array([[0.5, 0.5], [0.6, 0.4]])) is None


def test_region_summary_describes_each_groups_own_sphere() -> None:
    priors = np.array([[0.89, 0.11], [0.69, 0.31]])
    spheres = [Sphere(np.array([0.95, 6.0 / 11.0]), 0.02), Sphere(np.array([0.85, 0.53]), 0.07)]
    summary = region_summary(spheres, priors)
    assert summary["per_group"] is True
    for group, own, prior in zip(summary["groups"], spheres, priors, strict=True):
        assert group["center"] == own.center.tolist() and group["radius"] == own.radius
        middle, spread = float(prior @ own.center), own.radius * float(np.linalg.norm(prior))
        assert group["accuracy"] == pytest.approx([middle - spread, middle + spread])
    assert region_summary(spheres[1], priors)["per_group"] is False
    with pytest.raises(InvalidConfigError, match="one sphere per group"):
        region_summary(spheres[:1], priors)
