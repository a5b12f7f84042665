"""`benchmarks/http_roundtrip.py`: its quick run passes every non-timing check, and a false check fails it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from app_support import make_study

from app.sessions.displayed import DISPLAY_MARK
from benchmarks import http_roundtrip


@pytest.mark.slow
def test_the_quick_benchmark_passes_its_checks(tmp_path: Path) -> None:
    out = tmp_path / "http_roundtrip.json"
    assert http_roundtrip.main(["--quick", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    accuracy = report["accuracy"]
    assert accuracy["identical_metric"] is True
    assert accuracy["algorithm_version"].endswith(DISPLAY_MARK)  # the session's own, displayed elicitor
    assert accuracy["http"]["elicitor_queries"] == accuracy["in_process"]["elicitor_queries"]
    assert {name: rt["app"]["n"] for name, rt in report["round_trip_ms"].items()} == {
        "qpme": 30,
        "active": 30,
        "qpme_paused": 30,
        "active_paused": 30,
    }
    pauses = {name: rt["think_ms"] for name, rt in report["round_trip_ms"].items()}
    assert pauses == {"qpme": 0.0, "active": 0.0, "qpme_paused": 100.0, "active_paused": 100.0}
    assert {n: resume["logged_answers"] for n, resume in report["resume"].items()} == {"12": 12}
    assert report["machine"]["date"] and report["machine"]["cpu_count"]


def test_a_long_session_that_stops_short_fails_the_benchmark(app: Any, client: Any) -> None:
    study = make_study(app, **http_roundtrip.active_study(3))
    with pytest.raises(http_roundtrip.BenchmarkCheckError, match="stopped at 3 answers, not 5"):
        http_roundtrip.fill(client, study.id, 5)


def test_a_long_session_reaches_its_stated_length(app: Any, client: Any) -> None:
    study = make_study(app, **http_roundtrip.long_study(5))
    _token, state = http_roundtrip.fill(client, study.id, 5)
    assert state["progress"]["answered"] == 5 and state["query"] is not None


def test_a_different_metric_fails_the_accuracy_check(
    app: Any, client: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = make_study(app, **http_roundtrip.ACCURACY_STUDY)
    original = http_roundtrip.answer
    other = http_roundtrip.QuadraticMetric(np.array([0.8, 0.35]), np.array([[-0.3, 0.0], [0.0, -0.35]]))

    def someone_else(client: Any, token: str, metric: Any, state: dict[str, Any]) -> Any:
        """The participant over HTTP answers with another metric than the in-process reference."""
        return original(client, token, other, state)

    monkeypatch.setattr(http_roundtrip, "answer", someone_else)
    with pytest.raises(http_roundtrip.BenchmarkCheckError, match="differs from the session's own"):
        http_roundtrip.measure_accuracy(client, settings, study.id)
