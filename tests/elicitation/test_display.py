"""Tests for the display grid: queries are what the chart shows, and no question is asked twice in a row."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elicitation import InvalidConfigError, Sphere, run
from elicitation.display import DisplayGrid, apportion, displayed_counts, shown
from elicitation.lpme import lpme
from elicitation.oracles import ExactOracle, random_linear_metric, random_quadratic_metric
from elicitation.qpme import qpme
from elicitation.rates import SyntheticSpace

PRIORS = np.array([0.6496350364963503, 0.3503649635036496])


def test_apportion_keeps_the_total_and_rounds_each_value_by_less_than_one() -> None:
    values = np.array([33.3, 33.3, 33.4])
    result = apportion(values, 100)
    assert result.sum() == 100
    assert np.all(np.abs(result - values) < 1.0)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10_000))
def test_displayed_counts_show_grid_rates_exactly(k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    priors = rng.dirichlet(np.full(k, 3.0))
    # Every class has at least 8 people in 100: a class of 2 shows only the rates 0, 1/2 and 1, and a
    # sphere of radius 0.2 around 1/k may then hold no rate the display can show (snap refuses that).
    priors = np.maximum(priors, 0.08) / np.maximum(priors, 0.08).sum()
    space = SyntheticSpace(k, radius=min(0.2, 1.0 / k), priors=priors)
    grid = DisplayGrid.from_priors(space.priors)
    point = grid.snap(space.sphere.center + rng.normal(scale=0.1, size=k), space.sphere)
    counts = displayed_counts(space.confusion(point))
    assert counts.sum() == pytest.approx(100.0)
    assert np.array_equal(counts.sum(axis=1), grid.totals[0])
    assert np.array_equal(np.diag(counts), grid.counts(point))
    assert np.allclose(np.diag(counts) / counts.sum(axis=1), point)


def test_snap_is_nearest_inside_and_stays_in_the_sphere_at_the_boundary() -> None:
    sphere = Sphere(np.array([0.77, 0.78]), 0.155)
    grid = DisplayGrid.from_priors(PRIORS)
    assert np.array_equal(grid.totals, [[65, 35]])
    inner = grid.snap(np.array([0.771, 0.779]), sphere)
    assert np.allclose(inner, [50 / 65, 27 / 35])
    angles = np.linspace(0.0, 2.0 * np.pi, 721)
    boundary = sphere.center + sphere.radius * np.stack([np.cos(angles), np.sin(angles)], axis=1)
    snapped = grid.snap(boundary, sphere)
    assert np.all(np.linalg.norm(snapped - sphere.center, axis=1) <= sphere.radius)
    assert np.allclose(snapped * grid.totals[0], np.round(snapped * grid.totals[0]))


def test_a_sphere_smaller_than_one_person_is_refused() -> None:
    grid = DisplayGrid.from_priors(PRIORS)
    with pytest.raises(InvalidConfigError, match="larger sphere"):
        grid.check_sphere(Sphere(np.array([0.507, 0.507]), 0.001))


def test_group_rates_snap_per_group() -> None:
    grid = DisplayGrid.from_priors(np.array([[0.886, 0.114], [0.69, 0.31]]))
    sphere = Sphere(np.array([0.9, 0.5]), 0.08)
    point = grid.snap(np.array([[0.93, 0.52], [0.88, 0.47]]), sphere)
    assert np.array_equal(grid.totals, [[89, 11], [69, 31]])
    assert np.array_equal(grid.counts(point), [[83, 6], [61, 15]])


@pytest.mark.parametrize("algorithm", ["lpme", "qpme"])
@pytest.mark.parametrize("seed", range(6))
def test_shown_searches_never_repeat_a_displayed_question(algorithm: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    sphere = Sphere(np.array([0.77, 0.78]), 0.155)
    grid = DisplayGrid.from_priors(PRIORS)
    if algorithm == "lpme":
        metric = random_linear_metric(rng, 2, nonnegative=True)
        elicitor = shown(lpme(sphere, 0.01), grid, sphere)
    else:
        metric = random_quadratic_metric(rng, 2)
        elicitor = shown(qpme(sphere, 0.01), grid, sphere)
    result = run(elicitor, ExactOracle(metric))
    keys = []
    for query, _answer in result.log:
        assert not grid.same(query.first, query.second)
        assert np.allclose(query.first * grid.totals[0], np.round(query.first * grid.totals[0]))
        keys.append({grid.key(query.first, query.second), grid.key(query.second, query.first)})
    for before, after in itertools.pairwise(keys):
        assert not before & after
    assert len({min(pair) for pair in keys}) == len(keys)
    assert result.num_queries == len(result.log)
    skipped = result.details["display_skipped"]
    assert result.details["inner_queries"] == len(result.log) + skipped["identical"] + skipped["repeated"]
