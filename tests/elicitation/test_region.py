"""Tests for the realistic query region: inside every group's feasible set, above the baselines."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from elicitation import InvalidConfigError, Sphere
from elicitation.region import BASELINE_MARGIN, realistic_region, region_summary


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
