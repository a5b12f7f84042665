"""`benchmarks/answer_cpu.py` and `benchmarks/search_effort.py`: their quick runs measure what they say."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import anyio.to_thread
import pytest

import app.sessions.checkpoints as checkpoints
from benchmarks import answer_cpu, search_effort


def test_the_answer_parts_are_measured_where_they_happen_and_the_app_is_left_as_it_was(
    tmp_path: Path,
) -> None:
    originals = (anyio.to_thread.run_sync, checkpoints.save_state, secrets.randbits)
    out = tmp_path / "answer_cpu.json"
    assert answer_cpu.main(["--quick", "--out", str(out)]) == 0
    assert (anyio.to_thread.run_sync, checkpoints.save_state, secrets.randbits) == originals
    studies = json.loads(out.read_text())["studies"]
    demo = studies["demo"]["off"]["elicitor_answers"]
    qpme = studies["qpme"]["off"]["elicitor_answers"]
    assert demo["answers"]["count"] == 24  # the demo's question budget, every one fed to the elicitor
    for part in ("load", "answer row", "question search", "checkpoint", "view and JSON"):
        assert demo[part]["median"] > 0.0, part
    # QPME has no particle posterior and no checkpoint: nothing of them is counted for it.
    assert qpme["question search"]["mean"] == qpme["posterior update"]["mean"] == 0.0
    assert qpme["checkpoint"]["median"] < 0.05
    assert demo["request"]["median"] > qpme["request"]["median"]
    # With speculation the same answers take the state computed while the person thought: the search and the
    # checkpoint's save happen in the background, whose CPU time is counted apart.
    speculating = studies["demo"]["on"]
    ahead = speculating["elicitor_answers"]
    assert ahead["answers"]["count"] == 24
    assert speculating["branches"]["taken"] == 24
    assert ahead["question search"]["mean"] == ahead["checkpoint"]["mean"] == 0.0
    assert ahead["background"]["median"] > 0.0
    assert ahead["request"]["median"] < demo["request"]["median"]
    assert studies["demo"]["checkpoint_bytes"] > 0 == studies["qpme"]["checkpoint_bytes"]


@pytest.mark.slow
def test_the_search_effort_benchmark_compares_every_variant_on_the_same_people(tmp_path: Path) -> None:
    out = tmp_path / "search_effort.json"
    assert search_effort.main(["--quick", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    names = [row["name"] for row in report["variants"]]
    assert names == [variant.name for variant in search_effort.VARIANTS] and names[0] == "default"
    default = report["variants"][0]
    assert default["difference_from_default"] == 0.0 and default["search"]["random_pairs"] == 768
    # Both recorded versions of the demo's algorithm are measured (each checked against the app's).
    versions = {row["version"]: row for row in report["variants"] if row["version"]}
    assert set(versions) == {"active_quadratic-4", "active_quadratic-6"}
    assert versions["active_quadratic-6"]["shared_prior"] and not default["shared_prior"]
    for row in report["variants"]:
        assert 0.5 < row["agreement_lowest"] <= row["agreement_mean"] <= 1.0
        assert (
            len(row["agreements"]) == report["people"] and min(row["agreements"]) == row["agreement_lowest"]
        )
        assert row["questions_mean"] > 0 and row["step_cpu_ms"]["median"] > 0.0


def test_the_search_effort_benchmark_runs_only_the_variants_asked_for_beside_the_default(
    tmp_path: Path,
) -> None:
    out = tmp_path / "search_effort.json"
    assert search_effort.main(["--quick", "--variant", "lean", "--out", str(out)]) == 0
    assert [row["name"] for row in json.loads(out.read_text())["variants"]] == ["default", "lean"]
    assert search_effort.main(["--quick", "--variant", "leaner", "--out", str(out)]) == 1
