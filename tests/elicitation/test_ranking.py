"""Tests for the ranking experiment of Appendix H (tiny configurations; the full run is a benchmark)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from elicitation.errors import InvalidConfigError
from elicitation.lab.datasets import load_dataset
from elicitation.lab.ranking import (
    FAMILIES,
    PAPER_TABLE2,
    PAPER_TABLE3,
    ClassifierPool,
    format_ranking_table,
    general_ranking_trial,
    ranking_trial,
    run_ranking_benchmark,
    train_pool,
)
from elicitation.types import Sphere


def _synthetic_pool(rng: np.random.Generator, n: int, k: int, m: int | None = None) -> ClassifierPool:
    matrices = rng.dirichlet(np.ones(k), size=(n, k)) * 0.4 + 0.6 * np.eye(k)
    rates = np.diagonal(matrices, axis1=1, axis2=2).copy()
    general = matrices[:, ~np.eye(k, dtype=bool)]
    group_rates = None if m is None else np.clip(rates[:, None, :] + rng.normal(0, 0.05, (n, m, k)), 0, 1)
    names = tuple(f"c{i}" for i in range(n))
    return ClassifierPool("synthetic", names, ("logistic",) * n, rates, group_rates, general)


def test_train_pool_trains_every_family_and_measures_rates() -> None:
    pool = train_pool(load_dataset("iris"), 0, per_family=2)
    assert len(pool.names) == 8
    assert [pool.families.count(f) for f in FAMILIES] == [2, 2, 2, 2]
    assert pool.rates.shape == (8, 3)
    assert np.all((pool.rates >= 0.0) & (pool.rates <= 1.0))
    assert pool.group_rates is None
    # a trained classifier on iris is far better than chance on some class
    assert pool.rates.max() > 0.9


def test_train_pool_measures_group_rates_for_fair_datasets() -> None:
    pool = train_pool(load_dataset("default"), 1, per_family=1, train_rows=300, test_rows=600)
    assert pool.group_rates is not None
    assert pool.group_rates.shape == (4, 2, 2)
    assert np.all((pool.group_rates >= 0.0) & (pool.group_rates <= 1.0))


def test_train_pool_rejects_bad_counts() -> None:
    with pytest.raises(InvalidConfigError, match="per_family"):
        train_pool(load_dataset("iris"), 0, per_family=0)
    with pytest.raises(InvalidConfigError, match="train_rows"):
        train_pool(load_dataset("iris"), 0, train_rows=10)


def test_ranking_trial_elicited_metric_ranks_well() -> None:
    rng = np.random.default_rng(3)
    pool = _synthetic_pool(rng, 40, 3)
    sphere = Sphere.around_uniform(3, 0.15)
    ndcgs, taus = [], []
    for t in range(4):
        scores = ranking_trial(pool, sphere, np.random.default_rng([7, t]))
        assert set(scores) == {"elicited", "accuracy", "linear"}
        ndcgs.append(scores["elicited"][0])
        taus.append(scores["elicited"][1])
        for ndcg, tau in scores.values():
            assert 0.0 <= ndcg <= 1.0 and -1.0 <= tau <= 1.0
    assert np.mean(ndcgs) > 0.97
    assert np.mean(taus) > 0.8


def test_ranking_trial_is_deterministic_given_the_rng() -> None:
    pool = _synthetic_pool(np.random.default_rng(0), 20, 2)
    sphere = Sphere.around_uniform(2, 0.2)
    first = ranking_trial(pool, sphere, np.random.default_rng(5))
    second = ranking_trial(pool, sphere, np.random.default_rng(5))
    assert first == second


def test_fair_ranking_trial_uses_group_rates_and_table_2_baselines() -> None:
    pool = _synthetic_pool(np.random.default_rng(1), 30, 2, m=2)
    tau = np.array([[0.4, 0.3], [0.6, 0.7]])
    scores = ranking_trial(pool, Sphere.around_uniform(2, 0.2), np.random.default_rng(2), tau=tau)
    assert set(scores) == {"elicited", "linear (no fairness)", "accuracy + equalized odds"}
    assert scores["elicited"][1] > 0.8
    with pytest.raises(InvalidConfigError, match="no group rates"):
        ranking_trial(
            _synthetic_pool(np.random.default_rng(1), 5, 2),
            Sphere.around_uniform(2, 0.2),
            np.random.default_rng(2),
            tau=tau,
        )


def test_train_pool_measures_general_rates_consistent_with_the_diagonal() -> None:
    pool = train_pool(load_dataset("wine"), 0, per_family=1)
    assert pool.general_rates is not None and pool.general_rates.shape == (4, 6)
    row_errors = pool.general_rates.reshape(4, 3, 2).sum(axis=2)
    assert np.allclose(row_errors, 1.0 - pool.rates)


def test_general_ranking_trial_scores_the_four_table_3_metrics() -> None:
    pool = _synthetic_pool(np.random.default_rng(2), 30, 3)
    scores = general_ranking_trial(pool, Sphere.around_uniform(3, 0.1), np.random.default_rng(4))
    assert set(scores) == set(PAPER_TABLE3["adult-general"])
    for ndcg, tau in scores.values():
        assert 0.0 <= ndcg <= 1.0 and -1.0 <= tau <= 1.0
    # the full quadratic model of the oracle's own rates ranks best
    assert scores["quadratic-general"][1] >= max(tau for _, tau in scores.values()) - 1e-9
    assert scores["quadratic-general"][1] > 0.8
    with pytest.raises(InvalidConfigError, match="no general rates"):
        bare = ClassifierPool("x", ("a", "b"), ("svm", "svm"), pool.rates[:2], None, None)
        general_ranking_trial(bare, Sphere.around_uniform(3, 0.1), np.random.default_rng(4))


def test_run_ranking_benchmark_reports_every_dataset_with_the_paper_alongside() -> None:
    calls: list[tuple[int, int, str]] = []
    report = run_ranking_benchmark(
        ["iris", "default-fair", "default-general"],
        2,
        0,
        progress=lambda done, total, label: calls.append((done, total, label)),
        per_family=1,
        train_rows=300,
        test_rows=600,
    )
    json.dumps(report)  # JSON-safe for the CLI's --output
    assert report["benchmark"] == "ranking" and report["trials"] == 2
    assert calls[-1][:2] == (6, 6)
    iris = report["datasets"]["iris"]
    assert iris["pool_size"] == 4 and iris["n_classes"] == 3 and not iris["fair"]
    assert set(iris["methods"]) == {"elicited", "accuracy", "linear"}
    assert iris["failed_trials"] == 0
    assert 0.0 < iris["sphere_radius"] <= 0.2
    fair = report["datasets"]["default-fair"]
    assert fair["fair"] and fair["n_groups"] == 2
    assert fair["paper"]["elicited (fair QPME)"] == {"ndcg": 1.0, "kendall_tau": 0.9981}
    general = report["datasets"]["default-general"]
    assert general["kind"] == "general"
    assert set(general["methods"]) == set(PAPER_TABLE3["default-general"])
    table = format_ranking_table(report)
    assert "| default-general | quadratic-diagonal |" in table
    assert "| default-fair | elicited |" in table
    assert "FPME (Hiranandani et al. 2020) (not run)" in table
    assert f"{PAPER_TABLE2['default-fair']['accuracy + equalized odds'][1]:.4f}" in table
    assert "iris" in format_ranking_table(report, markdown=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"datasets": ["mnist"]}, "unknown ranking dataset"),
        ({"datasets": []}, "unknown ranking dataset"),
        ({"trials": 0}, "trials"),
        ({"seed": -2}, "seed"),
    ],
)
def test_run_ranking_benchmark_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {"datasets": ["iris"], "trials": 1, "seed": 0, **kwargs}
    with pytest.raises(InvalidConfigError, match=message):
        run_ranking_benchmark(**arguments)  # type: ignore[arg-type]
