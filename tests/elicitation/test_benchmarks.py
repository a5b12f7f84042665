"""Tests of the seeded experiment runners behind `elicit simulate`, `elicit benchmark` and `elicit replay`."""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import numpy as np
import pytest

from elicitation import (
    Done,
    FairQuadraticMetric,
    InvalidConfigError,
    LinearMetric,
    Pending,
    QuadraticMetric,
    ReplayMismatchError,
    Sphere,
)
from elicitation.families import FAMILIES, Draw
from elicitation.lab.benchmarks import (
    NEAR_ZERO_GRADIENT,
    run_fair_benchmark,
    run_noise_benchmark,
    run_qpme_benchmark,
    summarize,
    trial_seed,
)
from elicitation.lab.figures import benchmark_figures
from elicitation.lab.log_replay import LOG_FORMAT, answer_log, replay_log
from elicitation.lab.simulation import DEFAULT_EPSILON, Simulation, build_elicitor, simulate
from elicitation.lab.timing import measure_timing
from elicitation.oracles import random_fair_metric, satisfies_regularity
from elicitation.qpme import default_inner_radius

# Exact oracle, epsilon = 1e-2, k = 2: QPME recovers a and B to a few hundredths (Section 6 / issue 2 bars).
A_TOL = 0.05
B_TOL = 0.12


@pytest.fixture(scope="module")
def qpme_k2() -> Simulation:
    return simulate("qpme", n_classes=2, seed=7)


def test_simulate_qpme_exact_oracle_recovers_metric(qpme_k2: Simulation) -> None:
    assert qpme_k2.errors["a"] < A_TOL
    assert qpme_k2.errors["B"] < B_TOL
    assert qpme_k2.result.num_queries == len(qpme_k2.result.log) > 0
    assert qpme_k2.wrong_answers == 0
    assert qpme_k2.regular in (True, False)
    assert isinstance(qpme_k2.metric, QuadraticMetric)


def test_simulate_is_deterministic_for_a_seed(qpme_k2: Simulation) -> None:
    again = simulate("qpme", n_classes=2, seed=7)
    assert len(again.result.log) == len(qpme_k2.result.log)
    for (q1, a1), (q2, a2) in zip(again.result.log, qpme_k2.result.log, strict=True):
        assert a1 == a2
        assert np.array_equal(q1.first, q2.first) and np.array_equal(q1.second, q2.second)
    other = simulate("qpme", n_classes=2, seed=8)
    assert not np.allclose(other.metric.a, qpme_k2.metric.a)  # type: ignore[attr-defined]


def test_simulate_elicits_a_given_linear_metric() -> None:
    metric = LinearMetric(np.array([0.3, -0.5, 0.8]))
    sim = simulate("lpme", n_classes=3, metric=metric)
    assert sim.metric is metric
    assert sim.errors["a"] < 0.03
    assert np.sign(sim.result.metric.a).tolist() == [1.0, -1.0, 1.0]


def test_simulate_threshold_noise_counts_wrong_answers() -> None:
    # A huge eps_Omega makes every comparison unreliable, so the fair coin must get some wrong.
    sim = simulate("lpme", n_classes=2, noise="threshold", noise_level=10.0, seed=1)
    assert 0 < sim.wrong_answers < sim.result.num_queries


def test_simulate_fair_qpme_and_tradeoff() -> None:
    fair = simulate("fair_qpme", n_classes=2, n_groups=2, seed=3)
    assert set(fair.errors) == {"a", "B_pairs", "lam"}
    assert fair.errors["a"] < 0.1 and fair.errors["lam"] < 0.1
    assert fair.params["tau"] == fair.metric.tau.tolist()  # type: ignore[attr-defined]
    tradeoff = simulate("tradeoff", n_classes=2, n_groups=3, seed=3)
    assert set(tradeoff.errors) == {"lam"}
    assert tradeoff.errors["lam"] <= DEFAULT_EPSILON


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"algorithm": "nope", "n_classes": 2}, "algorithm"),
        ({"algorithm": "qpme", "n_classes": 1}, "n_classes"),
        ({"algorithm": "qpme", "n_classes": 2, "epsilon": 0.0}, "epsilon"),
        ({"algorithm": "qpme", "n_classes": 2, "inner_radius": 0.3}, "inner_radius"),
        ({"algorithm": "lpme", "n_classes": 2, "inner_radius": 0.05}, "inner_radius"),
        ({"algorithm": "qpme", "n_classes": 2, "noise": "loud"}, "noise"),
        ({"algorithm": "qpme", "n_classes": 2, "noise_level": 0.1}, "noise_level"),
        ({"algorithm": "qpme", "n_classes": 2, "noise": "logistic", "noise_level": 0.0}, "noise_level"),
        ({"algorithm": "qpme", "n_classes": 2, "seed": -1}, "seed"),
        ({"algorithm": "qpme", "n_classes": 2, "metric": LinearMetric(np.ones(2))}, "metric"),
        ({"algorithm": "lpme", "n_classes": 3, "metric": LinearMetric(np.ones(2))}, "classes"),
    ],
)
def test_simulate_rejects_bad_arguments_naming_them(kwargs: dict[str, Any], name: str) -> None:
    algorithm = kwargs.pop("algorithm")
    with pytest.raises(InvalidConfigError, match=name):
        simulate(algorithm, **kwargs)


def test_trial_seeds_are_stable_and_distinct() -> None:
    seeds = [trial_seed(0, k, m, t) for k, m, t in itertools.product((2, 3), (2, 3), range(20))]
    assert len(set(seeds)) == len(seeds)
    assert trial_seed(0, 2, 2, 0) == trial_seed(0, 2, 2, 0)
    assert all(0 <= s < 2**63 for s in seeds)


def test_summarize_statistics() -> None:
    stats = summarize([float(v) for v in range(1, 11)])
    assert stats == pytest.approx({"mean": 5.5, "median": 5.5, "p90": 9.1, "max": 10.0})
    assert all(math.isnan(v) for v in summarize([]).values())


def test_qpme_benchmark_reports_beside_the_paper() -> None:
    calls: list[tuple[int, int, str]] = []
    report = run_qpme_benchmark(classes=(2,), trials=2, seed=5, progress=lambda *a: calls.append(a))
    assert calls == [(1, 2, "qpme k=2"), (2, 2, "qpme k=2")]
    (setting,) = report["settings"]
    summary = setting["summary"]
    assert summary["paper_queries"] == pytest.approx(265.43)
    assert summary["published_errors"] == {"a": 0.014, "B": 0.044}
    assert summary["trials"] == 2 and summary["failures"] == 0
    assert summary["errors"]["a"]["mean"] < A_TOL
    assert summary["lower_bound"] > 0
    assert summary["queries_over_lower_bound"] == pytest.approx(
        summary["queries"]["mean"] / summary["lower_bound"]
    )
    entries = [r["min_gradient_entry"] for r in setting["records"]]
    assert all(0.0 <= e <= 1 / math.sqrt(2) + 1e-12 for e in entries)
    assert summary["near_zero_gradient"] == sum(e < NEAR_ZERO_GRADIENT for e in entries)
    # Each record can be re-run alone with its seed.
    record = setting["records"][1]
    alone = simulate("qpme", n_classes=2, seed=record["seed"])
    assert alone.result.num_queries == record["num_queries"]
    assert alone.errors["a"] == pytest.approx(record["errors"]["a"])


def test_noise_benchmark_uses_the_same_metrics_in_every_cell() -> None:
    report = run_noise_benchmark(
        classes=(2,), inner_radii=(0.02, 0.1), noise_levels=(0.0, 1e-3), trials=2, seed=1
    )
    assert [(s["inner_radius"], s["noise_level"]) for s in report["settings"]] == [
        (0.02, 0.0),
        (0.02, 1e-3),
        (0.1, 0.0),
        (0.1, 1e-3),
    ]
    seeds = {tuple(r["seed"] for r in s["records"]) for s in report["settings"]}
    assert len(seeds) == 1
    exact = [s for s in report["settings"] if s["noise_level"] == 0.0]
    assert all(s["summary"]["wrong_answers"]["max"] == 0 for s in exact)


def test_fair_benchmark_reports_table4() -> None:
    report = run_fair_benchmark(settings=((2, 2),), trials=1, seed=2)
    summary = report["settings"][0]["summary"]
    assert summary["paper_queries"] == pytest.approx(332.10)
    assert set(summary["errors"]) == {"a", "B_pairs", "lam"}
    figures = benchmark_figures(report)
    assert {"fair_error_lam", "fair_mean_lam", "fair_queries"} <= set(figures)
    (line,) = figures["fair_mean_a"]["data"]
    assert line["name"] == "m=2" and line["x"] == [2] and line["y"] == [summary["errors"]["a"]["mean"]]


def test_benchmark_figures_are_plotly_figure_dicts() -> None:
    report = run_qpme_benchmark(classes=(2, 3), trials=1, seed=0)
    figures = benchmark_figures(report)
    assert set(figures) == {"qpme_error_a", "qpme_error_B", "qpme_queries"}
    boxes = figures["qpme_error_a"]["data"]
    assert [trace["type"] for trace in boxes] == ["box", "box"]
    assert [trace["name"] for trace in boxes] == ["k=2", "k=3"]
    assert len(boxes[0]["y"]) == 1
    noise = run_noise_benchmark(classes=(2,), inner_radii=(0.05,), noise_levels=(0.0,), trials=1)
    assert set(benchmark_figures(noise)) == {"noise_k2_error_a", "noise_k2_error_B"}


def test_measure_timing_with_an_injected_clock() -> None:
    ticks = itertools.count()
    report = measure_timing(
        lambda: float(next(ticks)), cases=(("lpme k=2", "lpme", 2, 2),), replay_answers=40, repeats=2
    )
    stats = report["next_query"]["lpme k=2"]
    # Each send is bracketed by two clock reads, so the fake clock says exactly one second per query.
    assert stats["median"] == pytest.approx(1e6) and stats["finish"] == pytest.approx(1e6)
    assert report["replay"]["answers"] == 40
    assert len(report["replay"]["runs_ms"]) == 2


# ----------------------------------------------------------------------------------------------------------
# Answer logs
# ----------------------------------------------------------------------------------------------------------


def test_answer_log_replays_to_the_same_result(qpme_k2: Simulation) -> None:
    log = answer_log(qpme_k2)
    assert log["format"] == LOG_FORMAT and log["seed"] == 7
    outcome = replay_log(log)
    assert isinstance(outcome, Done)
    assert np.allclose(outcome.result.metric.a, qpme_k2.result.metric.a, atol=0, rtol=0)
    assert outcome.result.num_queries == qpme_k2.result.num_queries


def test_replay_of_a_prefix_is_pending_at_the_next_query(qpme_k2: Simulation) -> None:
    log = answer_log(qpme_k2)
    log["answers"] = log["answers"][:10]
    outcome = replay_log(log)
    assert isinstance(outcome, Pending)
    assert outcome.n_answered == 10
    assert outcome.query.matches(qpme_k2.result.log[10][0], 0.0)


def test_replay_detects_a_tampered_query(qpme_k2: Simulation) -> None:
    log = answer_log(qpme_k2)
    tampered = copy.deepcopy(log)
    tampered["answers"][5]["query"]["first"][0] += 1e-3
    with pytest.raises(ReplayMismatchError, match="5"):
        replay_log(tampered)
    other_config = copy.deepcopy(log)
    other_config["params"]["epsilon"] = 0.02
    with pytest.raises(ReplayMismatchError):
        replay_log(other_config)


def test_replay_skips_undone_answers_and_undo_rows(qpme_k2: Simulation) -> None:
    # The app's log numbers every row: an answer later undone, then the undo row itself, keep their seq.
    log = answer_log(qpme_k2)
    answers = log["answers"]
    undone = dict(answers[3], seq=3, undone=True, answer=not answers[3]["answer"])
    undo = {"seq": 4, "action": "undo"}
    later = [dict(a, seq=a["seq"] + 2) for a in answers[3:]]
    log["answers"] = [*answers[:3], undone, undo, *later]
    outcome = replay_log(log)
    assert isinstance(outcome, Done) and outcome.result.num_queries == qpme_k2.result.num_queries


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["answers"][0].update(answer="yes"), r"answers\[0\]\.answer"),
        (lambda d: d["answers"][1].update(seq=0), r"answers\[1\]\.seq"),
        (lambda d: d.pop("params"), "params"),
        (lambda d: d.update(version=99), "version"),
        (lambda d: d.update(algorithm="magic"), "algorithm"),
        (lambda d: d["answers"][2].pop("query"), "every answer or none"),
        (lambda d: d["params"].update(n_classes=1), "n_classes"),
    ],
)
def test_replay_rejects_malformed_logs(qpme_k2: Simulation, mutate: Any, message: str) -> None:
    log = copy.deepcopy(answer_log(qpme_k2))
    mutate(log)
    with pytest.raises(InvalidConfigError, match=message):
        replay_log(log)


def test_build_elicitor_tradeoff_requires_the_known_metric() -> None:
    metric = random_fair_metric(np.random.default_rng(0), 2, 2)
    with pytest.raises(InvalidConfigError, match="B_pairs"):
        build_elicitor("tradeoff", {"n_classes": 2, "tau": metric.tau.tolist(), "a": [1.0, 1.0]})


@pytest.mark.parametrize(
    ("algorithm", "k", "errors"),
    [
        ("diagonal_qpme", 3, {"a", "B"}),
        ("general_qpme", 2, {"a", "B"}),
        ("cubic_qpme", 2, {"a", "B", "C"}),
    ],
)
def test_simulate_variants_recover_their_metrics(algorithm: str, k: int, errors: set[str]) -> None:
    sim = simulate(algorithm, n_classes=k, seed=3)
    assert set(sim.errors) == errors
    assert max(sim.errors.values()) < B_TOL
    replayed = replay_log(answer_log(sim))
    assert isinstance(replayed, Done) and replayed.result.num_queries == sim.result.num_queries


def test_simulate_variant_metrics_have_the_right_shape() -> None:
    diagonal = simulate("diagonal_qpme", n_classes=3, seed=0).metric
    assert isinstance(diagonal, QuadraticMetric)
    assert np.array_equal(diagonal.B, np.diag(np.diag(diagonal.B)))
    general = simulate("general_qpme", n_classes=2, seed=0)
    assert general.metric.n_classes == 2 and len(general.result.log[0][0].first) == 2  # q = k^2 - k = 2
    with pytest.raises(InvalidConfigError, match="diagonal"):
        simulate("diagonal_qpme", n_classes=2, metric=QuadraticMetric(np.ones(2), -np.ones((2, 2))))
    with pytest.raises(InvalidConfigError, match="radius"):
        simulate("general_qpme", n_classes=4)


def test_ranking_figures_group_methods_by_dataset() -> None:
    report = {
        "benchmark": "ranking",
        "datasets": {
            "adult": {"methods": {"elicited": {"ndcg_mean": 1.0, "kendall_tau_mean": 0.9}}},
            "vehicle": {
                "methods": {
                    "elicited": {"ndcg_mean": 0.99, "kendall_tau_mean": 0.8},
                    "accuracy": {"ndcg_mean": 0.9, "kendall_tau_mean": 0.1},
                }
            },
        },
    }
    figures = benchmark_figures(report)
    assert set(figures) == {"ranking_ndcg", "ranking_kendall_tau"}
    bars = {trace["name"]: trace["y"] for trace in figures["ranking_kendall_tau"]["data"]}
    assert bars == {"accuracy": [None, 0.1], "elicited": [0.9, 0.8]}


@pytest.mark.parametrize("generator", ["gaussian", "", None, "Wishart"])
def test_benchmarks_reject_an_unknown_metric_generator(generator: Any) -> None:
    with pytest.raises(InvalidConfigError, match="metric generator must be one of authors, wishart"):
        run_qpme_benchmark(classes=(2,), trials=1, family=generator)
    with pytest.raises(InvalidConfigError, match="metric generator"):
        run_fair_benchmark(settings=((2, 2),), trials=1, family=generator)
    with pytest.raises(InvalidConfigError, match="metric generator"):
        simulate("qpme", n_classes=2, generator=generator)


def test_wishart_generator_is_offered_by_the_quadratic_families_only() -> None:
    with pytest.raises(InvalidConfigError, match="generator must be one of authors; got"):
        simulate("lpme", n_classes=2, generator="wishart")
    with pytest.raises(InvalidConfigError, match="given metric"):
        simulate("qpme", n_classes=2, generator="wishart", metric=QuadraticMetric(np.ones(2), -np.eye(2)))


@pytest.mark.parametrize(
    ("runner", "kwargs"),
    [(run_qpme_benchmark, {"classes": (2, 3)}), (run_fair_benchmark, {"settings": ((2, 2),)})],
)
def test_benchmarks_with_either_generator_are_deterministic_and_report_behaviour(
    runner: Any, kwargs: dict[str, Any]
) -> None:
    reports = {family: runner(trials=2, seed=4, family=family, **kwargs) for family in ("authors", "wishart")}
    for family, report in reports.items():
        assert report["config"]["family"] == family
        assert runner(trials=2, seed=4, family=family, **kwargs) == report
        for setting in report["settings"]:
            summary = setting["summary"]
            assert summary["failures"] == 0
            for record in setting["records"]:
                assert 0.95 <= record["agreement"] <= 1.0
                assert 0.8 <= record["kendall_tau"] <= 1.0
            taus = [r["kendall_tau"] for r in setting["records"]]
            assert summary["kendall_tau"]["min"] == min(taus)
            assert summary["kendall_tau"]["mean"] == pytest.approx(np.mean(taus))
    authors, wishart = (reports[f]["settings"][0]["records"] for f in ("authors", "wishart"))
    assert [r["seed"] for r in authors] == [r["seed"] for r in wishart]
    assert [r["errors"] for r in authors] != [r["errors"] for r in wishart]


def test_wishart_quadratic_metrics_are_generic_and_within_the_assumptions() -> None:
    sphere = Sphere.around_uniform(4, 0.2)
    spreads, conditions = [], []
    for seed in range(40):
        metric = FAMILIES["quadratic"].random(
            np.random.default_rng(seed), Draw(4, sphere=sphere, generator="wishart")
        )
        assert isinstance(metric, QuadraticMetric)
        eigenvalues = np.linalg.eigvalsh(metric.B)
        assert np.all(eigenvalues <= 1e-12)  # negative semi-definite
        assert satisfies_regularity(metric, sphere, default_inner_radius(sphere))
        gradient = np.abs(metric.gradient(sphere.center))
        spreads.append(gradient.max() / gradient.min())
        conditions.append(eigenvalues.min() / eigenvalues.max())
    # Gradient entries span up to two orders of magnitude; curvature is far from isotropic.
    assert 10.0 < float(np.median(spreads)) <= 100.0 * 1.0001
    assert float(np.median(conditions)) > 20.0


def test_wishart_fair_metrics_keep_definition_3() -> None:
    costs = []
    for seed in range(20):
        metric = FAMILIES["fair_quadratic"].random(
            np.random.default_rng(seed), Draw(3, n_groups=3, generator="wishart")
        )
        assert isinstance(metric, FairQuadraticMetric)
        assert np.all(metric.a > 0.0) and metric.a @ metric.a == pytest.approx(1.0)
        assert sum(float(np.linalg.norm(B)) for B in metric.B_pairs.values()) == pytest.approx(2.0)
        assert all(np.linalg.eigvalsh(B).min() >= -1e-12 for B in metric.B_pairs.values())
        assert 0.25 <= metric.lam <= 0.75
        costs.append(metric.a.max() / metric.a.min())
    assert 5.0 < float(np.median(costs)) <= 100.0 * 1.0001
