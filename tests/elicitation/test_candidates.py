"""The candidate frontier of the bundled fairness data: real classifiers spanning accuracy and equality."""

from __future__ import annotations

import json

import numpy as np
import pytest

from elicitation.errors import InvalidConfigError
from elicitation.lab.candidates import (
    SPECS,
    Frontier,
    frontier_key,
    frontier_path,
    shipped_frontier,
    train_frontier,
)
from elicitation.lab.datasets import load_dataset
from elicitation.lab.feasible import FeasibleModel, fit_feasible_model

ADULT = {"dataset": "adult", "groups": True, "seed": 0}


@pytest.fixture(scope="module")
def frontier() -> Frontier:
    found = shipped_frontier(ADULT)
    assert found is not None
    return found


def _gap(rates: np.ndarray, priors: np.ndarray, which: str) -> float:
    """Between the two groups: the true-positive rate gap, or the positive-rate (selection) gap."""
    if which == "tpr":
        return float(abs(rates[0, 1] - rates[1, 1]))
    selected = priors[:, 1] * rates[:, 1] + priors[:, 0] * (1.0 - rates[:, 0])
    return float(abs(selected[0] - selected[1]))


def test_shipped_frontier_spans_accuracy_and_equality_with_real_classifiers(frontier: Frontier) -> None:
    assert frontier.group_names == ("Female", "Male")
    assert len(frontier.candidates) >= 8
    methods = {candidate.method for candidate in frontier.candidates}
    assert methods == {"most accurate", "thresholds", "reduction", "mixture"}
    for candidate in frontier.candidates:
        assert candidate.rates.shape == (2, 2) and np.all((candidate.rates >= 0) & (candidate.rates <= 1))
        assert np.allclose(candidate.confusion.sum(axis=(1, 2)), 100.0)
        assert np.allclose(candidate.confusion.sum(axis=2) / 100.0, candidate.priors)
    overall = [float(np.mean(candidate.accuracy)) for candidate in frontier.candidates]
    accurate = frontier.candidates[0]
    assert accurate.method == "most accurate" and overall[0] >= max(overall) - 0.002
    # Equal-treatment thresholds close the gap they target on held-out people (within sampling error),
    # and pay for it in accuracy: the frontier trades one for the other.
    by_label = {candidate.label: candidate for candidate in frontier.candidates}
    tpr = by_label["Group thresholds, equal true-positive rates exactly"]
    dp = by_label["Group thresholds, equal positive rates exactly"]
    assert _gap(tpr.rates, tpr.priors, "tpr") < 0.03 < _gap(accurate.rates, accurate.priors, "tpr")
    assert _gap(dp.rates, dp.priors, "dp") < 0.03 < 0.15 < _gap(accurate.rates, accurate.priors, "dp")
    assert np.mean(dp.accuracy) < np.mean(accurate.accuracy) - 0.01
    slack_gaps = [
        _gap(by_label[f"Group thresholds, equal positive rates {within}"].rates, dp.priors, "dp")
        for within in ("exactly", "within 2 points", "within 5 points", "within 10 points")
    ]
    assert slack_gaps == sorted(slack_gaps), "a looser slack leaves a wider gap"
    # No two candidates are the same classifier.
    rates = frontier.rates.reshape(len(frontier.candidates), -1)
    distances = np.abs(rates[:, None, :] - rates[None, :, :]).max(axis=2) + np.eye(len(rates))
    assert distances.min() > 1e-6


def test_shipped_frontier_is_what_training_gives_on_the_studys_split(frontier: Frontier) -> None:
    model = FeasibleModel.from_recipe(ADULT)
    assert frontier.key == frontier_key(model.space.recipe)
    quick = [spec for spec in SPECS if spec.method != "reduction"][:3]
    retrained = train_frontier(model, quick)
    shipped = {candidate.label: candidate for candidate in frontier.candidates}
    for candidate in retrained.candidates:
        assert np.allclose(candidate.rates, shipped[candidate.label].rates, atol=1e-9), candidate.label


def test_frontier_round_trips_and_is_only_served_for_its_own_split(frontier: Frontier) -> None:
    again = Frontier.from_dict(json.loads(json.dumps(frontier.to_dict())))
    assert np.array_equal(again.rates, frontier.rates)
    assert [c.label for c in again.candidates] == [c.label for c in frontier.candidates]
    assert shipped_frontier({**ADULT, "seed": 1}) is None
    assert shipped_frontier({**ADULT, "groups": False}) is None
    assert shipped_frontier({"dataset": "breast-cancer", "groups": True}) is None
    assert frontier_path("adult").is_file()


def test_frontier_needs_groups() -> None:
    model = fit_feasible_model(load_dataset("breast-cancer"), seed=0)
    with pytest.raises(InvalidConfigError, match="groups"):
        train_frontier(model, SPECS[:1])
