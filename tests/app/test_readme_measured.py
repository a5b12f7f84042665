"""The README's Measured section is what `benchmarks/readme_measured.py` writes from docs/measured/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import readme_measured


def test_the_readme_measured_section_is_generated_from_the_committed_results() -> None:
    assert readme_measured.main(["--check"]) == 0


def test_every_number_comes_from_the_reports() -> None:
    roundtrip = json.loads((readme_measured.MEASURED / "http_roundtrip.json").read_text())
    roundtrip["round_trip_ms"]["qpme"]["ratio_median"] = 9.87
    roundtrip["machine"]["date"] = "2031-01-02 03:04 UTC"
    text = readme_measured.section(roundtrip, None)
    assert "**9.87× a bare FastAPI JSON endpoint**" in text
    assert "2031-01-02 03:04 UTC" in text
    assert "A panel's launch" not in text  # no panel report, no panel sentence
    assert readme_measured.render(f"a\n{readme_measured.START}\nold\n{readme_measured.END}\nb", text) == (
        f"a\n{text}\nb"
    )


def test_a_quick_run_never_reaches_the_readme(tmp_path: Path) -> None:
    quick = tmp_path / "quick.json"
    quick.write_text(json.dumps({"quick": True}))
    with pytest.raises(SystemExit, match="smoke run"):
        readme_measured.main(["--roundtrip", str(quick), "--panel", str(tmp_path / "none.json")])
