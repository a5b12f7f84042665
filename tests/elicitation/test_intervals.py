"""The result's stated intervals: ``details["intervals"]`` for the trade-off and per-person cost ratios."""

from __future__ import annotations

import numpy as np

from elicitation import Sphere, run
from elicitation.active import active_fair, active_linear
from elicitation.active.families import FamilySpec
from elicitation.active.intervals import DEFAULT_INTERVAL_LEVEL, class_shares, posterior_intervals
from elicitation.oracles import ExactOracle, LogisticOracle, random_fair_metric, random_linear_metric


def test_class_shares_recover_the_population_from_group_priors_and_tau() -> None:
    groups = np.array([0.3, 0.7])
    priors = np.array([[0.9, 0.1], [0.6, 0.4]])
    joint = groups[:, None] * priors  # P(G = g, Y = i)
    tau = joint / joint.sum(axis=0, keepdims=True)
    assert np.allclose(class_shares(priors, tau), joint.sum(axis=0))
    assert np.allclose(class_shares(np.array([[0.25, 0.75]]), None), [0.25, 0.75])


def test_intervals_are_weighted_quantiles_relative_to_the_cheapest_class() -> None:
    spec = FamilySpec("fair", 2, np.full((2, 2), 0.5))
    # Particles ((1 - lam) a, lam B): lam = 1 - |alpha|; a = (0.6, 0.8) per rate, shares (0.8, 0.2).
    lams = np.linspace(0.1, 0.9, 9)
    theta = np.zeros((9, 2 + 6))
    theta[:, :2] = (1.0 - lams)[:, None] * np.array([0.6, 0.8])
    weights = np.full(9, 1.0 / 9)
    intervals, base = posterior_intervals(
        spec, theta, weights, theta[4], level=7 / 9, shares=np.array([0.8, 0.2]), center=np.zeros(2)
    )
    assert np.allclose(intervals["lam"], [0.2, 0.8])
    # Per person 0.6 / 0.8 = 0.75 and 0.8 / 0.2 = 4: class 0 is the cheapest, class 1 costs 16/3 as much.
    assert base == 0
    assert np.allclose(intervals["cost_ratio"], [[1.0, 1.0], [16 / 3, 16 / 3]])


def test_active_fair_reports_the_interval_of_lam_at_its_level_and_holds_the_truth() -> None:
    metric = random_fair_metric(np.random.default_rng(21), 2, 2)
    result = run(
        active_fair(Sphere.around_uniform(2, 0.2), tau=metric.tau, seed=2, max_queries=40, tolerance=0.0),
        LogisticOracle(metric, 500.0, rng=np.random.default_rng(4)),
    )
    details = result.details
    assert details["interval_level"] == DEFAULT_INTERVAL_LEVEL == 0.9
    low, high = details["intervals"]["lam"]
    assert 0.0 <= low <= result.metric.lam <= high <= 1.0
    assert low <= metric.lam <= high
    assert high - low < 0.5
    base = details["cost_ratio_base"]
    assert details["intervals"]["cost_ratio"][base] == [1.0, 1.0]
    # The 90 % interval sits inside the 95 % one of the same posterior.
    wide = details["credible_intervals"]["lam"]
    assert float(wide["lower"]) <= low and high <= float(wide["upper"])


def test_active_linear_ratio_interval_holds_the_true_per_person_ratio() -> None:
    metric = random_linear_metric(np.random.default_rng(5), 3, nonnegative=True)
    result = run(
        active_linear(Sphere.around_uniform(3, 0.2), seed=1, beta=None, max_queries=30, tolerance=0.0),
        ExactOracle(metric),
    )
    intervals = result.details["intervals"]
    assert "lam" not in intervals
    base = result.details["cost_ratio_base"]
    truth = np.abs(metric.a) / np.abs(metric.a[base])  # uniform class shares
    for (low, high), value in zip(intervals["cost_ratio"], truth, strict=True):
        assert low - 1e-9 <= value <= high + 1e-9
