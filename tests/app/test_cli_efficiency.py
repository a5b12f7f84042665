"""`elicit benchmark efficiency`: the issue-7 benchmark sections through the CLI, on a tiny setting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.experiments import main


def test_efficiency_exact_section_writes_tables_json_and_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "benchmark",
            "efficiency",
            "--quick",
            "--sections",
            "exact",
            "--classes",
            "2",
            "--trials",
            "1",
            "--output",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "## Exact oracle" in out and "| 2 |" in out
    report = json.loads((tmp_path / "efficiency.json").read_text())
    assert report["trials"] == 1 and set(report) == {"trials", "seed", "exact"}
    row = report["exact"]["2"]
    assert len(row["curve_a"]) == len(row["curve_B"]) > 1
    assert (tmp_path / "efficiency_errors.html").stat().st_size > 0


def test_efficiency_rejects_unknown_sections_and_other_benchmarks_reject_sections(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["benchmark", "efficiency", "--sections", "exactly", "--no-progress"])
    assert exc.value.code == 2
    assert "sections must be some of exact, noisy, fair, timing" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["benchmark", "qpme", "--sections", "exact", "--no-progress"])
    assert exc.value.code == 2
    assert "--sections: only applies to the efficiency benchmark" in capsys.readouterr().err
