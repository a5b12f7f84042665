"""Tests of LPME (Algorithm 2): accuracy, query budget, sphere containment, replay and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import answer_sequences, unit_vectors

from elicitation import (
    Done,
    InvalidAnswerError,
    InvalidConfigError,
    LinearMetric,
    NumericalError,
    Pending,
    Sphere,
    replay,
    run,
)
from elicitation.lpme import (
    DEFAULT_TOLERANCE,
    PROBES,
    Probe,
    _fast_antipodal_points,
    _fast_boundary_point,
    _unit_list,
    antipodal_points,
    boundary_point,
    lpme,
    lpme_max_queries,
    search_steps,
)

#: LPME's guarantee is ||a - a_hat|| = O(sqrt(k) epsilon); the constant we hold it to.
RECOVERY_CONSTANT = 1.0


def _sphere(k: int, radius: float = 0.2) -> Sphere:
    return Sphere.around_uniform(k, radius)


@st.composite
def problems(draw: st.DrawFn) -> tuple[Sphere, LinearMetric]:
    k = draw(st.integers(2, 5))
    radius = draw(st.floats(0.01, 1.0 / k))
    return _sphere(k, radius), LinearMetric(draw(unit_vectors(k)))


@settings(max_examples=40)
@given(problems())
def test_lpme_recovers_random_linear_metrics_within_sqrt_k_epsilon(
    problem: tuple[Sphere, LinearMetric],
) -> None:
    sphere, metric = problem
    elicitor = lpme(sphere)
    result = run(elicitor, metric.prefers)
    error = float(np.linalg.norm(result.metric.a - metric.a))
    assert error <= RECOVERY_CONSTANT * math.sqrt(sphere.n_classes) * DEFAULT_TOLERANCE
    assert result.num_queries == len(result.log) <= elicitor.max_queries
    for query, _ in result.log:
        assert sphere.contains(query.first) and sphere.contains(query.second)


@pytest.mark.parametrize("k", [2, 3, 4])
@pytest.mark.parametrize("early_stop", [True, False])
def test_lpme_fixed_and_early_stopping_cycles_agree(k: int, early_stop: bool) -> None:
    rng = np.random.default_rng(k)
    metric = LinearMetric(rng.normal(size=k))
    result = run(lpme(_sphere(k), early_stop=early_stop), metric.prefers)
    assert np.linalg.norm(result.metric.a - metric.a) <= math.sqrt(k) * DEFAULT_TOLERANCE
    expected_cycles = 3 if not early_stop else (1 if k == 2 else 2)
    assert result.details["cycles"] == expected_cycles


@pytest.mark.parametrize("probe", PROBES)
def test_lpme_early_stopping_saves_queries_and_refines(probe: Probe) -> None:
    rng = np.random.default_rng(7)
    metric = LinearMetric(rng.normal(size=4))
    fast = run(lpme(_sphere(4), probe=probe), metric.prefers)
    paper = run(lpme(_sphere(4), probe=probe, early_stop=False), metric.prefers)
    assert fast.num_queries < 0.6 * paper.num_queries
    assert np.linalg.norm(fast.metric.a - metric.a) <= np.linalg.norm(paper.metric.a - metric.a) + 1e-12
    assert fast.details["refined_searches"] == 3


def test_lpme_finds_the_signs_with_k_orthant_queries() -> None:
    metric = LinearMetric([0.6, -0.8, 0.0])
    result = run(lpme(_sphere(3)), metric.prefers)
    kinds = [query.kind for query, _ in result.log]
    assert kinds[:3] == ["orthant"] * 3 and "orthant" not in kinds[3:]
    assert [query.coordinate for query, _ in result.log[:3]] == [0, 1, 2]
    assert list(result.details["signs"][:2]) == [1.0, -1.0]
    assert np.allclose(result.metric.a, metric.a, atol=math.sqrt(3) * DEFAULT_TOLERANCE)


def test_lpme_works_on_a_small_off_centre_sphere() -> None:
    sphere = Sphere(np.array([0.3, 0.15, 0.55]), 0.01)
    metric = LinearMetric([-0.2, 0.9, 0.4])
    result = run(lpme(sphere, epsilon=1e-3, search="qpme/z2/lpme"), metric.prefers)
    assert np.linalg.norm(result.metric.a - metric.a) <= math.sqrt(3) * 1e-3
    assert all(query.search == "qpme/z2/lpme" for query, _ in result.log)
    assert all(sphere.contains(query.first) for query, _ in result.log)


def test_lpme_queries_are_labelled_with_strictly_increasing_steps() -> None:
    result = run(lpme(_sphere(3)), LinearMetric([1.0, 2.0, 3.0]).prefers)
    steps = [query.step for query, _ in result.log]
    assert steps == list(range(len(steps)))
    assert {query.kind for query, _ in result.log} == {"orthant", "shrink"}


def test_lpme_max_queries_formula() -> None:
    assert search_steps(1e-2) == 8  # (pi / 2) / 2^8 = 0.0061 <= 0.01 < 0.0123
    assert lpme_max_queries(2, 1e-2) == 2 + 1 * 1 * 8 * 2
    # One full sweep, then up to two refinement sweeps (3 halvings) each with a possible full fallback.
    assert lpme_max_queries(3, 1e-2) == 3 + 2 * 8 * 2 + 2 * (2 * 3 * 2 + 2 * 8 * 2)
    assert lpme_max_queries(3, 1e-2, early_stop=False) == 3 + 3 * 2 * 8 * 2
    assert lpme_max_queries(2, 1e-2, early_stop=False) == 2 + 3 * 1 * 8 * 2
    assert lpme(_sphere(3)).max_queries == lpme_max_queries(3, 1e-2)
    assert lpme_max_queries(3, 1e-2, probe="antipodal") == 3 + 2 * 8 + 2 * (2 * 3 + 2 * 8)
    assert lpme(_sphere(3), probe="antipodal", early_stop=False).max_queries == 3 + 3 * 2 * 8


def test_antipodal_probe_asks_one_query_per_halving_and_reads_the_centre_gradient() -> None:
    # A quadratic oracle: antipodal probes see the gradient at the centre exactly, whatever the curvature.
    from elicitation import QuadraticMetric

    sphere = Sphere(np.array([0.4, 0.5, 0.6]), 0.1)
    metric = QuadraticMetric([0.2, 0.3, -0.1], -np.array([[1.0, 0.3, 0.0], [0.3, 0.8, 0.1], [0.0, 0.1, 0.5]]))
    gradient = metric.gradient(sphere.center)
    result = run(lpme(sphere, probe="antipodal"), metric.prefers)
    assert np.linalg.norm(result.metric.a - gradient / np.linalg.norm(gradient)) <= math.sqrt(3) * 1e-2
    bisections = [query for query, _ in result.log if query.kind == "bisect"]
    # A full sweep over both angles, then a refinement sweep (3 halvings each) that confirms it.
    assert result.details["cycles"] == 2 and result.details["refined_searches"] == 2
    assert len(bisections) == 2 * search_steps(1e-2) + 2 * 3
    for query in bisections:
        assert np.allclose(query.first + query.second, 2 * sphere.center)


def test_antipodal_probe_is_more_robust_to_close_pair_noise() -> None:
    metric = LinearMetric([0.3, 0.5, 0.81])
    sphere = _sphere(3, 0.05)
    errors = {}
    for probe in PROBES:
        coin = np.random.default_rng(2)

        def oracle(first: np.ndarray, second: np.ndarray, coin: np.random.Generator = coin) -> bool:
            if metric.value_gap(first, second) <= 1e-3:
                return bool(coin.random() < 0.5)
            return metric.prefers(first, second)

        errors[probe] = np.linalg.norm(run(lpme(sphere, probe=probe), oracle).metric.a - metric.a)
    assert errors["antipodal"] < 0.05 < errors["boundary"]


@settings(max_examples=60)
@given(st.integers(2, 5), answer_sequences(max_size=250), st.sampled_from(PROBES))
def test_lpme_any_answers_end_within_budget_with_a_unit_estimate(
    k: int, answers: list[bool], probe: Probe
) -> None:
    elicitor = lpme(_sphere(k), probe=probe)
    # Cycle the drawn answers so that every run reaches its end.
    stream = iter(answers * (elicitor.max_queries // max(len(answers), 1) + 1) if answers else [])
    try:
        result = run(elicitor, lambda _first, _second: next(stream, True))
    except NumericalError:
        return
    assert result.num_queries <= elicitor.max_queries
    assert np.all(np.isfinite(result.metric.a))
    assert math.isclose(float(np.linalg.norm(result.metric.a)), 1.0, rel_tol=1e-9)


@settings(max_examples=40)
@given(st.integers(2, 4), st.lists(st.booleans(), max_size=120), st.sampled_from(PROBES), st.data())
def test_lpme_replay_of_any_prefix_matches_live_driving(
    k: int, answers: list[bool], probe: Probe, data: st.DataObject
) -> None:
    sphere = _sphere(k)
    live = lpme(sphere, probe=probe)
    query = next(live)
    live_queries = [query]
    fed = []
    try:
        for answer in answers:
            query = live.send(answer)
            fed.append(answer)
            live_queries.append(query)
    except StopIteration:
        pass
    prefix = data.draw(st.integers(0, len(fed)))
    state = replay(lpme(sphere, probe=probe), fed[:prefix], expected_queries=live_queries[:prefix])
    if prefix < len(live_queries):
        assert isinstance(state, Pending)
        assert state.query.matches(live_queries[prefix], atol=0.0)
        assert state.query.kind == live_queries[prefix].kind
    else:
        assert isinstance(state, Done)


def test_lpme_rejects_non_boolean_answers() -> None:
    elicitor = lpme(_sphere(2))
    next(elicitor)
    with pytest.raises(InvalidAnswerError):
        elicitor.send(1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1e-3}, "epsilon"),
        ({"epsilon": 2.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": "small"}, "epsilon"),
        ({"cycles": 0}, "cycles"),
        ({"cycles": 1.5}, "cycles"),
        ({"probe": "sideways"}, "probe"),
        ({"robust": "twice"}, "robust"),
        ({"robust": "noisy_bisection"}, "probe"),
        ({"embed": [0.5, 0.5, 0.5]}, "embed"),
    ],
)
def test_lpme_bad_config_names_the_parameter(kwargs: dict[str, object], name: str) -> None:
    with pytest.raises(InvalidConfigError, match=name):
        lpme(_sphere(3), **kwargs)  # type: ignore[arg-type]


def test_lpme_rejects_a_non_sphere() -> None:
    with pytest.raises(InvalidConfigError, match="sphere"):
        lpme((np.full(3, 1 / 3), 0.2))  # type: ignore[arg-type]


def test_sphere_leaving_the_cube_is_rejected_before_lpme() -> None:
    with pytest.raises(InvalidConfigError, match="radius"):
        Sphere(np.array([0.1, 0.5]), 0.2)


def test_lpme_refinement_falls_back_to_a_full_search_when_the_optimum_moves() -> None:
    # The oracle changes its mind after the first sweep: the refinement windows no longer hold the optimum.
    before, after = LinearMetric([0.9, 0.1, 0.4]), LinearMetric([0.1, 0.3, 0.95])
    sphere = _sphere(3)
    first_sweep = 3 + 2 * search_steps(1e-2)
    count = 0

    def fickle(first: np.ndarray, second: np.ndarray) -> bool:
        nonlocal count
        count += 1
        return (before if count <= first_sweep else after).prefers(first, second)

    elicitor = lpme(sphere, probe="antipodal")
    result = run(elicitor, fickle)
    assert result.details["refined_searches"] < 2 * (result.details["cycles"] - 1)
    assert result.num_queries <= elicitor.max_queries
    assert np.linalg.norm(result.metric.a - after.a) < np.linalg.norm(result.metric.a - before.a)


@settings(deadline=None, max_examples=300)
@given(
    k=st.integers(min_value=2, max_value=12),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_fast_query_points_equal_the_vector_algebra_bit_for_bit(k: int, seed: int) -> None:
    # The search loop builds its queries on plain floats (the marked fast path); they must be exactly the
    # points of Lemma 1's vector algebra, or replaying a log recorded with one would not match the other.
    rng = np.random.default_rng(seed)
    center = rng.uniform(0.05, 0.95, k)
    scale = rng.uniform(0.01, 0.3) * rng.choice([-1.0, 1.0], k)
    theta = rng.uniform(0.0, math.pi / 2, k - 1)
    fast = np.array(_fast_boundary_point(center.tolist(), scale.tolist(), theta.tolist()))
    assert fast.tobytes() == boundary_point(center, scale, theta).tobytes()
    for j in range(k - 1):
        middle = float(rng.uniform(0.0, math.pi / 2))
        tail = _unit_list(theta[j + 1 :].tolist()) if j + 1 < k - 1 else [1.0]
        first, second = _fast_antipodal_points(center.tolist(), scale.tolist(), tail, j, middle)
        readable_first, readable_second = antipodal_points(center, scale, theta, j, middle)
        assert np.array(first).tobytes() == readable_first.tobytes()
        assert np.array(second).tobytes() == readable_second.tobytes()
