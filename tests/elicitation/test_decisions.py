"""Each candidate's posterior chance of being the best of a set, from an active elicitor's result."""

from __future__ import annotations

import numpy as np
import pytest

from elicitation import FairQuadraticMetric
from elicitation.active import active_fair, best_probabilities
from elicitation.driver import run
from elicitation.errors import InvalidConfigError
from elicitation.lab.candidates import shipped_frontier
from elicitation.lab.feasible import build_space
from elicitation.oracles import random_fair_metric


def test_the_truths_best_candidate_is_the_likeliest_after_a_noise_free_session() -> None:
    frontier = shipped_frontier({"dataset": "adult", "groups": True, "seed": 0})
    assert frontier is not None
    space = build_space("adult", groups=True, seed=0)
    rng = np.random.default_rng(2)
    for lam in (0.2, 0.7):
        truth = random_fair_metric(rng, 2, 2, tau=space.tau, tradeoff_range=(lam, lam))
        elicitor = active_fair(space, tau=space.tau, group_spheres=space.group_spheres, seed=3)
        result = run(elicitor, truth.prefers)
        chances = best_probabilities(result.details, frontier.rates)
        assert chances.shape == (len(frontier.candidates),)
        assert chances.sum() == pytest.approx(1.0) and np.all(chances >= 0)
        costs = np.array([truth(rates) for rates in frontier.rates])
        # The truth's best candidate gets a good share; the truth's worst almost none.
        assert chances[int(np.argmin(costs))] >= 0.2, (lam, chances.round(2))
        assert chances[int(np.argmax(costs))] <= 0.05


def test_a_certain_posterior_picks_its_own_best_and_bad_input_is_refused() -> None:
    tau = np.full((2, 2), 0.5)
    metric = FairQuadraticMetric(np.array([0.6, 0.8]), {(0, 1): np.eye(2)}, 0.3, tau)
    theta = np.concatenate([(1 - metric.lam) * metric.a, metric.lam * np.array([1.0, 0.0, 1.0])])
    details = {"family": {"kind": "fair", "n_classes": 2, "tau": tau.tolist()}, "posterior_sample": [theta]}
    candidates = np.array([[[0.9, 0.5], [0.6, 0.8]], [[0.8, 0.7], [0.8, 0.7]], [[0.5, 0.5], [0.5, 0.5]]])
    chances = best_probabilities(details, candidates)
    assert chances.tolist() == [0.0, 1.0, 0.0]
    assert int(np.argmin([metric(rates) for rates in candidates])) == 1
    with pytest.raises(InvalidConfigError, match="shape"):
        best_probabilities(details, candidates[:, 0])
    with pytest.raises(InvalidConfigError, match="active elicitor"):
        best_probabilities({"family": details["family"]}, candidates)
