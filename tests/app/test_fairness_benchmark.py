"""The fairness trade-off benchmark's own correctness, in its quick mode (the numbers live in docs/)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from benchmarks.fairness_tradeoff import adult_setting, check, main, run_person, summarize


def test_quick_benchmark_runs_and_its_checks_pass(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("adult/appendix-h/probit {") and "CHECK FAILED" not in out


def test_one_session_is_measured_consistently_and_bad_measurements_are_caught() -> None:
    setting = adult_setting()
    person = run_person(setting, "rank-one", "same", 3)
    assert check([person]) == []
    assert person.shown_classifiers == 2 * person.questions
    assert person.screens == person.questions + setting.other_screens
    assert person.tradeoff_questions == person.questions // 2
    # The frontier spans accuracy against equality with at least 8 candidates, and every one is sensible.
    assert len(setting.candidates) >= 8
    summary = summarize([person])
    assert 0.0 <= summary["below_baseline_share"] <= 1.0
    assert summary["coverage"] in (0.0, 1.0)
    broken = replace(person, repeated_screens=1, lam_low=person.lam_hat + 0.1)
    problems = check([broken])
    assert len(problems) == 2 and "repeated" in problems[1] and "interval" in problems[0]
