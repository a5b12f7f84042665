"""The length benchmark's own checks, in a quick mode: a small study, a handful of simulated people.

`benchmarks/session_estimate.py` measures the demo and the fairness study (docs/realistic-queries.md);
here its machinery runs on a study whose sessions take a known number of screens (QPME asks a fixed
number of questions and the evaluation pairs have no early end), so every bar must hold exactly.
"""

from __future__ import annotations

from app_support import SMALL_STUDY

from benchmarks.session_estimate import run_study


def test_the_benchmark_finds_an_exact_count_exact() -> None:
    config = {**SMALL_STUDY, "evaluation_precision": None}
    summary = run_study(config, people=4, seed=0)
    assert summary["screens_min"] == summary["screens_max"] == summary["consent_count"]
    assert summary["consent_error_max"] == summary["first_count_error_max"] == 0
    for bar in ("first_equals_consent", "last_said_last", "finished_exact", "consent_within"):
        assert summary[bar] == 1.0, bar
    low, high = summary["consent_minutes"]
    assert 1 <= low < high
