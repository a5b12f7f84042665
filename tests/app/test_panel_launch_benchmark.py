"""`benchmarks/panel_launch.py`: its quick run serves every participant through `elicit serve` without an
error, and counts what it reports."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from benchmarks import panel_launch


@pytest.mark.slow
def test_the_quick_panel_launch_serves_everyone(tmp_path: Path) -> None:
    out = tmp_path / "panel_launch.json"
    # A thread of its own: the benchmark runs its own event loop, and a browser test earlier in the same
    # worker may have left one running in this thread.
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(panel_launch.main, ["--quick", "--out", str(out)]).result() == 0
    report = json.loads(out.read_text())
    assert report["errors"] == 0 and report["problems"] == []
    assert report["finished"] == report["participants"] == 20
    assert report["answers"]["n"] == 20 * 4
    assert report["joins"]["n"] == 20
    assert report["server_cpu_cores"] > 0.0 and report["client_cpu_cores"] > 0.0
    assert report["participants_per_core"] > 0 and report["server_cpu_ms_per_answer"] > 0.0
