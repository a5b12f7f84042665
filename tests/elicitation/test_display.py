"""Tests for the display grid: queries are what the chart shows, no question is asked twice in a row, and a
search whose next step cannot be shown ends there."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from elicitation import InvalidConfigError, Query, Sphere, run
from elicitation.catalogue import Setting, get_algorithm
from elicitation.display import DisplayGrid, apportion, float_sum, shown
from elicitation.families import Draw
from elicitation.lpme import lpme, robust_step
from elicitation.oracles import ExactOracle, random_linear_metric, random_quadratic_metric
from elicitation.qpme import qpme
from elicitation.types import ImperceptibleError, SearchStep, ask_step

PRIORS = np.array([0.6496350364963503, 0.3503649635036496])


def test_apportion_keeps_the_total_and_rounds_each_value_by_less_than_one() -> None:
    values = np.array([33.3, 33.3, 33.4])
    result = apportion(values, 100)
    assert result.sum() == 100
    assert np.all(np.abs(result - values) < 1.0)


def _apportion_on_arrays(values: np.ndarray, total_units: int) -> np.ndarray:
    """Largest remainders on numpy arrays, `apportion`'s rule as first written: the reference it matches."""
    floors = np.floor(values + 1e-9)
    remainders = np.round(values - floors, 9)
    shortfall = round(total_units - float(floors.sum()))
    if shortfall > 0:
        floors[np.argsort(-remainders, kind="stable")[:shortfall]] += 1
    elif shortfall < 0:
        positive = [index for index in np.argsort(remainders, kind="stable") if floors[index] > 0]
        floors[positive[:-shortfall]] -= 1
    return floors


def test_apportion_rounds_exactly_as_on_arrays() -> None:
    rng = np.random.default_rng(11)
    for k in (2, 3, 4, 7, 9):
        # Shares of a total, halves (ties), zeros, float noise, near-ties; totals below and above the sum.
        shares = rng.dirichlet(np.ones(k), size=300) * rng.choice([100.0, 1000.0, 37.0], size=(300, 1))
        ties = np.round(shares * 2.0) / 2.0
        ties[::3, 0] = 0.0
        noisy = np.round(shares) + rng.choice([-1e-10, 0.0, 1e-10], size=shares.shape)
        close = ties + rng.choice([-1e-7, 0.0, 1e-7], size=shares.shape)  # apart only to 9 digits
        for values in np.concatenate((shares, ties, noisy, close)):
            for total in {round(values.sum()) + step for step in (-2, -1, 0, 1, 2)}:
                assert apportion(values, total).tobytes() == _apportion_on_arrays(values, total).tobytes()


def test_float_sum_adds_as_numpy_sums_bit_for_bit() -> None:
    # Every length numpy sums one by one, in 8 partial sums or in halves; signs, zeros and magnitudes mixed
    # so that any other order of the additions would show in the last bits.
    rng = np.random.default_rng(26)
    for count in [*range(0, 140), 255, 256, 257, 600]:
        for _ in range(20):
            values = (
                rng.random(count) * 10.0 ** rng.integers(-6, 6, size=count) * rng.choice([-1.0, 1.0], count)
            )
            values[rng.random(count) < 0.2] = rng.choice([0.0, -0.0])
            expected = values.sum()
            assert np.array([float_sum(values.tolist())]).tobytes() == np.array([expected]).tobytes()
            rows = values[: count - count % 3].reshape(3, -1) if count >= 3 else values.reshape(1, -1)
            assert [float_sum(row) for row in rows.tolist()] == rows.sum(axis=1).tolist()
    assert np.signbit(float_sum([-0.0, -0.0])) == np.signbit(np.array([-0.0, -0.0]).sum())


def test_shown_pair_is_snap_and_keys_bit_for_bit() -> None:
    # Sides inside the sphere, on it and beyond it (pulled in), spheres too small to hold a displayed point
    # (the same error), one to three groups and every grid precision.
    rng = np.random.default_rng(26)
    outcomes = set()
    for trial in range(1500):
        k, n_groups = int(rng.integers(2, 6)), int(rng.integers(1, 4)) if trial % 3 == 0 else 1
        try:
            grid = DisplayGrid.from_priors(rng.dirichlet(np.full(k, 3.0), size=n_groups), trial % 3)
        except InvalidConfigError:
            continue
        radius = min(1.0 / k, float(rng.choice([0.4 / k, 0.05, 0.01, 0.002])))
        sphere = Sphere(np.full(k, 1.0 / k) + rng.normal(scale=0.01, size=k) * (trial % 2), radius)
        directions = rng.normal(size=(2, *grid.shape))
        directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
        scale = rng.choice([0.3, 0.99, 1.0, 1.2], size=(2, *grid.shape[:-1], 1))
        first, second = np.broadcast_to(sphere.center, grid.shape) + directions * radius * scale
        try:
            expected_first, expected_second = grid.snap(np.stack((first, second)), sphere)
        except InvalidConfigError as error:
            with pytest.raises(InvalidConfigError, match=re.escape(str(error))):
                grid.shown_pair(first, second, sphere)
            outcomes.add("error")
            continue
        shown_first, shown_second, key, reverse = grid.shown_pair(first, second, sphere)
        assert shown_first.tobytes() == expected_first.tobytes() and shown_first.shape == expected_first.shape
        assert shown_second.tobytes() == expected_second.tobytes() and not shown_first.flags.writeable
        assert (key, reverse) == grid.keys(expected_first, expected_second)
        nearest = np.floor(first * grid.class_steps + 0.5) / grid.class_steps
        pulled = grid.snap(first, sphere).tobytes() != nearest.tobytes()
        outcomes.add("pulled in" if pulled else "snapped")
    assert outcomes == {"error", "pulled in", "snapped"}


@pytest.mark.parametrize(("n_classes", "n_groups"), [(2, 1), (3, 1), (5, 1), (2, 2), (3, 3)])
def test_flat_counts_are_counts_bit_for_bit(n_classes: int, n_groups: int) -> None:
    rng = np.random.default_rng(n_classes * 10 + n_groups)
    for decimals in (0, 1, 2):
        grid = DisplayGrid.from_priors(rng.dirichlet(np.full(n_classes, 3.0), size=n_groups), decimals)
        steps = grid.class_steps.reshape(grid.shape)
        for _ in range(100):
            rates = rng.uniform(0.0, 1.0, size=grid.shape)
            # Half-way between two displayed counts too, where the rounding is decided.
            halfway = (np.floor(rates * steps) + 0.5) / steps
            for sample in (rates, halfway):
                assert grid.flat_counts(sample) == grid.counts(sample).ravel().tolist()
    with pytest.raises(InvalidConfigError, match="rates must have shape"):
        grid.flat_counts(np.zeros(n_classes + 1))


def test_keys_are_the_pairs_keys_both_ways_and_distance_broadcasts_either_pair() -> None:
    grid = DisplayGrid.from_priors([[0.6, 0.4], [0.3, 0.7]])
    rng = np.random.default_rng(5)
    first, second = rng.uniform(0.4, 0.9, size=(2, 2, 2))
    assert grid.keys(first, second) == (grid.key(first, second), grid.key(second, first))
    pairs = rng.uniform(0.4, 0.9, size=(6, 2, 2, 2))
    others = rng.uniform(0.4, 0.9, size=(3, 2, 2, 2))
    each = [[float(grid.distance(*pair, *other)) for pair in pairs] for other in others]
    beside = others[:, np.newaxis]
    assert grid.distance(pairs[:, 0], pairs[:, 1], beside[:, :, 0], beside[:, :, 1]).tolist() == each
    assert grid.distance(beside[:, :, 0], beside[:, :, 1], pairs[:, 0], pairs[:, 1]).tolist() == each


@pytest.mark.parametrize("n_groups", [1, 2])
def test_snapping_rows_together_snaps_each_as_alone(n_groups: int) -> None:
    priors = [[0.6, 0.4], [0.3, 0.7]][:n_groups]
    grid = DisplayGrid.from_priors(priors)
    sphere = Sphere(np.array([0.7, 0.6]), 0.12)
    rng = np.random.default_rng(n_groups)
    # Half of the points outside the sphere, so that rows are pulled in for different numbers of rounds.
    points = sphere.center + rng.normal(scale=0.1, size=(300, 2, *grid.shape))
    for pair in points:
        together = grid.snap(pair, sphere)
        assert together.tobytes() == np.stack([grid.snap(side, sphere) for side in pair]).tobytes()


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


def test_a_refused_step_returns_nothing_and_a_refused_mirror_keeps_the_answer_given() -> None:
    query = Query(np.array([0.7, 0.8]), np.array([0.8, 0.7]))
    step = ask_step(query)
    asked = next(step)
    assert isinstance(asked, SearchStep) and np.array_equal(asked.first, query.first)
    with pytest.raises(StopIteration) as stop:
        step.throw(ImperceptibleError())
    assert stop.value.value is None
    decision = robust_step(query, "repeat")
    next(decision)
    mirror = decision.send(True)
    assert np.array_equal(mirror.first, query.second)
    with pytest.raises(StopIteration) as stop:
        decision.throw(ImperceptibleError())
    assert stop.value.value == (True, 1)


@pytest.mark.parametrize("seed", range(6))
def test_lpme_shown_in_whole_people_ends_its_search_where_the_display_stops_and_stays_close(
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    sphere = Sphere(np.array([0.77, 0.78]), 0.155)
    grid = DisplayGrid.from_priors(PRIORS)
    metric = random_linear_metric(rng, 2, nonnegative=True)
    exact = run(lpme(sphere, 0.01), ExactOracle(metric))
    result = run(shown(lpme(sphere, 0.01), grid, sphere), ExactOracle(metric))
    # The boundary search's last halvings compare classifiers one person apart at most: refused, not faked.
    assert result.details["display_skipped"]["ended"] >= 1
    assert result.num_queries < exact.num_queries
    # The angle stops at what whole people resolve on this sphere (a person of 35 is 0.19 rad of it).
    assert abs(result.details["angles"][0] - exact.details["angles"][0]) < 0.2


def _groups_setting() -> Setting:
    priors = np.array([[0.89, 0.11], [0.69, 0.31]])
    return Setting(Sphere(np.array([0.92, 0.29]), 0.0463), n_groups=2, priors=priors)


@pytest.mark.parametrize("name", ["fair_qpme", "tradeoff"])
def test_fair_searches_end_cleanly_when_the_display_refuses_their_steps(name: str) -> None:
    # Adult's common sphere: four people in the largest class, so most search steps cannot be shown.
    setting = _groups_setting()
    grid = DisplayGrid.from_priors(setting.priors)
    algorithm = get_algorithm(name)
    params = {"a": [0.6, 0.8], "B_pairs": [[[1.0, 0.0], [0.0, 1.0]]]} if name == "tradeoff" else {}
    draw = Draw(n_classes=2, sphere=setting.sphere, n_groups=2, tau=setting.group_weights(None))
    metric = algorithm.random_metric(np.random.default_rng(3), draw, params or None)
    result = run(shown(algorithm.build(setting, params), grid, setting.sphere), ExactOracle(metric))
    assert result.details["display_skipped"]["ended"] >= 1
    for query, _answer in result.log:
        assert not grid.same(query.first, query.second)
    assert 0.0 <= result.metric.lam <= 1.0


def test_a_grid_of_tenths_apportions_class_sizes_at_tenths_and_counts_in_tenths() -> None:
    grid = DisplayGrid.from_priors([[0.8864, 0.1136], [0.6875, 0.3125]], 1)
    assert np.array_equal(grid.totals, [[89, 11], [69, 31]])
    assert np.array_equal(grid.class_steps, [[886, 114], [688, 312]])
    sphere = Sphere(np.array([0.92, 0.29]), 0.0463)
    snapped = grid.snap(np.array([[0.9211, 0.2893], [0.9102, 0.3011]]), sphere)
    assert np.allclose(snapped * grid.class_steps, np.round(snapped * grid.class_steps))
    assert np.array_equal(grid.counts(snapped), np.round(snapped * grid.class_steps))
    # Whole people cannot tell these two apart; tenths of a person can.
    whole = DisplayGrid.from_priors([[0.8864, 0.1136], [0.6875, 0.3125]])
    other = snapped + np.array([[1 / 886, 0.0], [0.0, 0.0]])
    assert whole.same(snapped, other) and not grid.same(snapped, other)
    with pytest.raises(InvalidConfigError, match="decimals"):
        DisplayGrid.from_priors([0.6, 0.4], 3)
