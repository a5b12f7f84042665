"""Trade-off questions of the active fair elicitor: pairs on which accuracy and the group gap disagree."""

from __future__ import annotations

import numpy as np
import pytest

from elicitation import FairQuadraticMetric, InvalidConfigError, Sphere, run
from elicitation.active import active_fair, active_linear
from elicitation.display import DisplayGrid
from elicitation.oracles import ProbitOracle, random_fair_metric
from elicitation.rates import SyntheticSpace
from elicitation.region import sensible_frontier

#: Small spheres per group, far apart, as on Adult (women's 89 % / 11 %, men's 69 % / 31 %).
PRIORS = [[0.89, 0.11], [0.69, 0.31]]
SPHERES = (Sphere(np.array([0.954, 0.545]), 0.03), Sphere(np.array([0.854, 0.534]), 0.074))


def _elicitor(tau: np.ndarray, every: int, seed: int):
    space = SyntheticSpace(2, radius=0.02, priors=PRIORS, n_groups=2)
    return active_fair(
        space,
        tau=tau,
        seed=seed,
        max_queries=20,
        tolerance=0.0,
        n_particles=300,
        display=DisplayGrid.from_priors(PRIORS),
        group_spheres=SPHERES,
        tradeoff_every=every,
    )


def _terms(metric: FairQuadraticMetric, rates: np.ndarray) -> tuple[float, float]:
    """(cost of mistakes overall, cost of the gap between the groups) of ``rates`` under ``metric``."""
    mistakes = float(np.sum(metric.tau * (1.0 - rates), axis=0) @ metric.a)
    gap = rates[0] - rates[1]
    return mistakes, 0.5 * float(gap @ metric.B_pairs[(0, 1)] @ gap)


def test_every_second_question_trades_accuracy_against_the_gap_under_the_current_estimate() -> None:
    person = random_fair_metric(np.random.default_rng(3), 2, 2)
    oracle = ProbitOracle(person, 0.008, rng=np.random.default_rng(4))
    elicitor = _elicitor(person.tau, 2, seed=1)
    query = next(elicitor)
    turns = 0
    for step in range(20):
        estimate = elicitor.current_metric()
        if step % 2 == 1:
            (m1, g1), (m2, g2) = _terms(estimate, query.first), _terms(estimate, query.second)
            # One side makes fewer mistakes overall, the other has the smaller gap.
            assert (m1 - m2) * (g1 - g2) < 0.0
            turns += 1
        try:
            query = elicitor.send(oracle(query.first, query.second))
        except StopIteration as stop:
            assert stop.value.details["tradeoff_every"] == 2
            break
    assert turns == 10


def test_tradeoff_questions_narrow_lam_where_questions_for_the_whole_metric_do_not() -> None:
    spreads = {0: [], 2: []}
    for seed in range(3):
        person = random_fair_metric(np.random.default_rng(10 + seed), 2, 2, tradeoff_range=(0.15, 0.85))
        for every in spreads:
            elicitor = _elicitor(person.tau, every, seed)
            oracle = ProbitOracle(person, 0.008, rng=np.random.default_rng(seed))
            query = next(elicitor)
            prior = elicitor.tradeoff_spread
            try:
                while True:
                    query = elicitor.send(oracle(query.first, query.second))
                    last = elicitor.tradeoff_spread
            except StopIteration:
                spreads[every].append(last / prior)
    # On small spheres far apart, 20 questions for the whole metric leave lam's spread near its prior's.
    assert np.mean(spreads[2]) < np.mean(spreads[0]) - 0.1


def test_tradeoff_questions_need_a_fair_metric() -> None:
    with pytest.raises(InvalidConfigError, match="apply to fair metrics only"):
        active_linear(Sphere.around_uniform(2, 0.2), seed=0, tradeoff_every=2)
    with pytest.raises(InvalidConfigError, match="tradeoff_every"):
        _elicitor(np.full((2, 2), 0.5), -1, 0)


#: Two groups' sensible classifiers on the data, far outside the query spheres (Adult's frontier, rounded).
POOLS = (
    np.array([[0.985, 0.479], [0.974, 0.561], [0.912, 0.777], [0.884, 0.829]]),
    np.array([[0.997, 0.161], [0.935, 0.524], [0.82, 0.762], [0.719, 0.865]]),
)


def test_tradeoff_questions_may_show_mixtures_of_the_data_classifiers_as_displayed() -> None:
    person = random_fair_metric(np.random.default_rng(5), 2, 2, tradeoff_range=(0.6, 0.6))
    space = SyntheticSpace(2, radius=0.02, priors=PRIORS, n_groups=2)
    grid = DisplayGrid.from_priors(PRIORS)
    elicitor = active_fair(
        space,
        tau=person.tau,
        seed=2,
        max_queries=12,
        tolerance=0.0,
        n_particles=300,
        display=grid,
        group_spheres=SPHERES,
        tradeoff_every=2,
        tradeoff_rates=POOLS,
    )
    result = run(elicitor, ProbitOracle(person, 0.008, rng=np.random.default_rng(6)))
    outside = 0
    for step, (query, _answer) in enumerate(result.log):
        assert grid.gap(query.first, query.second) >= 2
        for side in (query.first, query.second):
            # Every side is what the chart shows (whole people), and every group's rates lie between the
            # data's classifiers: at least as good as the worst of them on each class, less one person.
            assert np.allclose(grid.counts(side) / grid.class_steps, side)
            in_spheres = all(own.contains(row) for own, row in zip(SPHERES, side, strict=True))
            outside += not in_spheres
            if not in_spheres:
                assert step % 2 == 1
                for pool, row, steps in zip(POOLS, side, grid.class_steps, strict=True):
                    assert np.all(row >= pool.min(axis=0) - 1.0 / steps)
    # The trade-off questions use the data's classifiers, not only the small spheres.
    assert outside >= 4


def test_sensible_frontier_keeps_the_undominated_classifiers_above_the_trivial_one() -> None:
    priors = np.array([0.9, 0.1])
    rates = np.array(
        [
            [1.0, 0.0],  # trivial: dropped
            [0.99, 0.3],  # 92.1 right: kept
            [0.95, 0.5],  # 90.5 right, 0.5 above the trivial 90: within the 2 people rounding may cost
            [0.94, 0.45],  # dominated by the one above: dropped
            [0.85, 0.7],  # 83.5 right, below the trivial classifier: dropped
        ]
    )
    assert sensible_frontier(rates, priors).tolist() == [[0.99, 0.3]]
    assert sensible_frontier(rates, priors, margin=0.0).tolist() == [[0.99, 0.3], [0.95, 0.5]]


def test_tradeoff_rates_are_checked() -> None:
    space = SyntheticSpace(2, radius=0.2, n_groups=2)
    with pytest.raises(InvalidConfigError, match="one \\(n, 2\\) array of rates per group"):
        active_fair(space, tau=np.full((2, 2), 0.5), seed=0, tradeoff_every=2, tradeoff_rates=[POOLS[0]])
    with pytest.raises(InvalidConfigError, match="in \\[0, 1\\]"):
        active_fair(
            space, tau=np.full((2, 2), 0.5), seed=0, tradeoff_every=2, tradeoff_rates=[POOLS[0], -POOLS[1]]
        )


def test_the_start_estimate_counts_the_questions_spent_on_the_tradeoff() -> None:
    person = random_fair_metric(np.random.default_rng(8), 2, 2)
    space = SyntheticSpace(2, radius=0.02, priors=PRIORS, n_groups=2)
    estimates = {}
    for every in (0, 2):
        elicitor = active_fair(
            space,
            tau=person.tau,
            seed=4,
            max_queries=30,
            n_particles=300,
            display=DisplayGrid.from_priors(PRIORS),
            group_spheres=SPHERES,
            tradeoff_every=every,
            tradeoff_rates=POOLS if every else None,
        )
        query = next(elicitor)
        estimates[every] = elicitor.expected_remaining
    # Half the questions narrow lam only, so the whole metric needs twice as many: here the whole budget.
    assert estimates[0] < 30 and estimates[2] == 30
    oracle = ProbitOracle(person, 0.008, rng=np.random.default_rng(9))
    with pytest.raises(StopIteration) as stop:
        while True:
            query = elicitor.send(oracle(query.first, query.second))
    assert stop.value.value.num_queries == 30
