"""Trade-off questions of the active fair elicitor: pairs on which accuracy and the group gap disagree."""

from __future__ import annotations

import numpy as np
import pytest

from elicitation import FairQuadraticMetric, InvalidConfigError, Sphere
from elicitation.active import active_fair, active_linear
from elicitation.display import DisplayGrid
from elicitation.oracles import ProbitOracle, random_fair_metric
from elicitation.rates import SyntheticSpace

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
    with pytest.raises(InvalidConfigError, match="tradeoff_every applies to fair metrics only"):
        active_linear(Sphere.around_uniform(2, 0.2), seed=0, tradeoff_every=2)
    with pytest.raises(InvalidConfigError, match="tradeoff_every"):
        _elicitor(np.full((2, 2), 0.5), -1, 0)
