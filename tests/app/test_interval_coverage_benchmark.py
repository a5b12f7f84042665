"""The demo's interval coverage benchmark's own correctness, in its quick mode (the numbers live in docs/)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from benchmarks.expert_minutes import cost_ratio_person
from benchmarks.interval_coverage import VERSIONS, demo_runtime, lapse_name, main, measure_person, summarize


def test_quick_benchmark_runs_both_versions_and_its_checks_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "coverage.json"
    assert main(["--quick", "--out", str(out)]) == 0
    assert "CHECK FAILED" not in capsys.readouterr().err
    report = json.loads(out.read_text())
    assert [row["version"] for row in report["versions"]] == list(VERSIONS)
    assert report["current_version"] == VERSIONS[-1]
    # The current version samples 300 particles at k = 2, the one before the default 600.
    assert [row["n_particles"] for row in report["versions"]] == [[600], [300]]
    for row in report["versions"]:
        for person in row["people_detail"]:
            assert person["low"] <= person["stated"] <= person["high"]
            assert person["covered"] == (person["low"] <= person["truth"] <= person["high"])


def test_a_version_the_app_does_not_build_fails_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--version", "active_quadratic-0", "--out", "/dev/null"]) == 1
    assert "is not a version of active_quadratic" in capsys.readouterr().err


def test_the_true_ratio_is_relative_to_the_stated_base_and_coverage_counts_it() -> None:
    # A cost-ratio clinician (their weights are the class shares times their costs): the true ratio per
    # person is their cost ratio, or its inverse when the stated base is the malignant class.
    runtime = demo_runtime()
    clinician = cost_ratio_person(np.random.default_rng(7), runtime.space)
    per_person = clinician.a / np.asarray(runtime.space.priors)
    cost = per_person[-1] / per_person[0]
    outcome = measure_person(runtime, VERSIONS[-1], generator=1, noise="logistic", seed=7)
    assert outcome.generator == "cost_ratio_person"
    assert outcome.truth == pytest.approx(cost) or outcome.truth == pytest.approx(1.0 / cost)
    assert outcome.base_disagrees == (outcome.truth < 1.0)
    summary = summarize([outcome, replace(outcome, truth=outcome.high * 2.0, covered=False)])
    assert summary["covered"] == 1 and summary["truth_above_interval"] == 1
    low, high = summary["coverage_95"]
    assert 0.0 < low < 0.5 < high < 1.0


def test_quick_benchmark_with_a_lapse_runs_it_beside_the_current_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "coverage.json"
    assert main(["--quick", "--version", VERSIONS[-1], "--lapse", "0.05", "--out", str(out)]) == 0
    assert "CHECK FAILED" not in capsys.readouterr().err
    report = json.loads(out.read_text())
    assert [row["version"] for row in report["versions"]] == [VERSIONS[-1], lapse_name(0.05)]
    plain, lapsing = (row["people_detail"] for row in report["versions"])
    # The same people and seeds under both (paired), each with an agreement on random pairs.
    assert [(p["generator"], p["noise"], p["seed"]) for p in plain] == [
        (p["generator"], p["noise"], p["seed"]) for p in lapsing
    ]
    assert all(0.5 < person["agreement"] <= 1.0 for person in plain + lapsing)


def test_a_lapse_outside_zero_to_one_fails_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick", "--version", VERSIONS[-1], "--lapse", "1.0", "--out", "/dev/null"]) == 1
    assert "a lapse rate lies in [0, 1)" in capsys.readouterr().err
