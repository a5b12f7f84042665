"""`elicit --url … study …`: the study commands against a running server through its JSON API, with the
same output as on the local database (every export byte for byte), and clear refusals (wrong token,
local-only command, no server, a close nobody confirmed)."""

from __future__ import annotations

import csv
import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import uvicorn
from app_support import METRIC, Participant

from app.admin.downloads import DOWNLOADS
from app.cli import main
from app.main import create_app
from app.settings import Settings
from elicitation import QuadraticMetric

TOML_STUDY = """
name = "Remote screening"
task = "A classifier decides whether a loan applicant is likely to repay."
class_names = ["repays", "defaults"]
population = "applicants"
algorithm = "lpme"

[query_space]
kind = "synthetic"
radius = 0.15
"""
PASSWORD = "a long enough password 123"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[str]:
    """A migrated SQLite database with an admin and a bearer token (in ELICIT_TOKEN), served on loopback."""
    database = f"sqlite:///{tmp_path / 'remote.db'}"
    monkeypatch.setenv("DATABASE_URL", database)
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", PASSWORD)
    assert main(["db", "upgrade"]) == 0
    assert main(["admin", "create", "--email", "lead@example.org", "--role", "admin"]) == 0
    capsys.readouterr()
    assert main(["admin", "token", "create", "--email", "lead@example.org", "--name", "laptop"]) == 0
    monkeypatch.setenv("ELICIT_TOKEN", capsys.readouterr().out.strip().rsplit(": ", 1)[1])
    app = create_app(Settings(database_url=database))
    port = _free_port()
    runner = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not runner.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the test server did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    runner.should_exit = True
    thread.join(timeout=10)
    app.state.engine.dispose()


def test_study_commands_work_against_a_server(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "study.toml"
    config.write_text(TOML_STUDY)
    assert main(["--url", server, "study", "create", str(config)]) == 0
    created = capsys.readouterr().out
    assert "created study" in created and "Remote screening" in created
    study_id = created.split()[2]
    # A draft, as locally: no participant link (the server would answer 409 to it).
    assert "is a draft" in created and "/join" not in created

    assert main(["--url", server, "study", "list", "--json"]) == 0
    remote_listing = json.loads(capsys.readouterr().out)
    assert main(["study", "list", "--json"]) == 0
    assert remote_listing == json.loads(capsys.readouterr().out)  # the same rows as the local listing

    assert main(["--url", server, "study", "list"]) == 0
    remote_lines = capsys.readouterr().out
    assert main(["study", "list"]) == 0
    assert remote_lines == capsys.readouterr().out and "[lpme]  draft, enrolment: open link" in remote_lines

    assert main(["--url", server, "study", "open", study_id]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"study {study_id} is open",
        f"participant link: {server}/studies/{study_id}/join",
    ]
    links = tmp_path / "links.csv"
    assert main(["--url", server, "study", "invite", study_id, "--count", "2", "--output", str(links)]) == 0
    rows = list(csv.DictReader(links.open(encoding="utf-8")))
    assert len(rows) == 2 and all(row["url"].startswith(f"{server}/sessions/") for row in rows)

    archive = tmp_path / "archive.json"
    assert main(["--url", server, "study", "export", study_id, "archive", "--output", str(archive)]) == 0
    assert json.loads(archive.read_text(encoding="utf-8"))["study"]["id"] == study_id
    results = tmp_path / "results.csv"
    assert main(["--url", server, "study", "export", study_id, "results", "--output", str(results)]) == 0
    header = results.read_text(encoding="utf-8").splitlines()[0]
    assert "participant_code" in header.split(",")
    agreement = tmp_path / "agreement.csv"
    command = ["--url", server, "study", "export", study_id, "panel-agreement", "--output", str(agreement)]
    assert main(command) == 0
    assert agreement.read_text(encoding="utf-8").startswith("session_id_a,participant_code_a,")
    best = tmp_path / "best.csv"
    command = ["--url", server, "study", "export", study_id, "best-classifiers-csv", "--output", str(best)]
    assert main(command) == 0
    assert best.read_text(encoding="utf-8").startswith("label,kind,session_id,participant_code,")

    capsys.readouterr()
    assert main(["--url", server, "study", "duplicate", study_id]) == 0
    assert capsys.readouterr().out.startswith("created draft ")
    assert main(["--url", server, "study", "close", study_id, "--yes"]) == 0
    assert capsys.readouterr().out.strip() == f"study {study_id} is closed"


def test_remote_refusals_say_why(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["--url", server, "db", "upgrade"]) == 2
    assert "local database only" in capsys.readouterr().err
    monkeypatch.setenv("ELICIT_TOKEN", "not-a-token")
    assert main(["--url", server, "study", "list"]) == 2
    assert "401" in capsys.readouterr().err
    monkeypatch.delenv("ELICIT_TOKEN")
    assert main(["--url", server, "study", "list"]) == 2
    assert "ELICIT_TOKEN" in capsys.readouterr().err
    assert main(["--url", f"http://127.0.0.1:{_free_port()}", "--token", "x", "study", "list"]) == 2
    assert "cannot reach" in capsys.readouterr().err
    assert main(["--url", "ftp://example.org", "--token", "x", "study", "list"]) == 2
    assert "http(s) address" in capsys.readouterr().err


#: A Prolific study on the synthetic space whose finished participants fill every export.
PANEL_STUDY = {
    "name": "Remote exports",
    "task": "A classifier decides whether a tumour is benign or malignant.",
    "class_names": ["benign", "malignant"],
    "algorithm": "lpme",
    "algorithm_params": {"epsilon": 0.2, "cycles": 1},
    "query_space": {"kind": "synthetic", "radius": 0.2},
    "practice_queries": 0,
    "evaluation_queries": 2,
    "panel": "prolific",
}


def test_every_export_is_the_same_file_locally_and_remotely(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")
    config = tmp_path / "study.json"
    config.write_text(json.dumps(PANEL_STUDY))
    assert main(["--url", server, "study", "create", str(config)]) == 0
    study_id = capsys.readouterr().out.split()[2]
    assert main(["--url", server, "study", "open", study_id]) == 0
    codes = {}
    with httpx.Client(base_url=server, timeout=30) as client:
        for pid, metric in (("PID-A", METRIC), ("PID-B", QuadraticMetric(np.array([0.8, 0.3]), METRIC.B))):
            link = {"PROLIFIC_PID": pid, "STUDY_ID": "S1", "SESSION_ID": pid + "-s"}
            body = {"consent": True, "panel": link}
            created = client.post(f"/api/v1/studies/{study_id}/sessions", json=body)
            assert created.status_code == 201, created.text
            state = Participant(metric).finish(client, created.json()["token"])
            codes[pid] = state["result"]["completion_code"]
        # A participant who has not finished has no code yet and is not up for approval.
        body = {"consent": True, "panel": {"PROLIFIC_PID": "PID-C", "STUDY_ID": "S1", "SESSION_ID": "c"}}
        assert client.post(f"/api/v1/studies/{study_id}/sessions", json=body).status_code == 201

    for item in DOWNLOADS:
        local, remote = tmp_path / f"local-{item.filename}", tmp_path / f"remote-{item.filename}"
        assert main(["study", "export", study_id, item.command, "--output", str(local)]) == 0
        command = ["--url", server, "study", "export", study_id, item.command, "--output", str(remote)]
        assert main(command) == 0
        assert local.stat().st_size > 0, item.command
        if item.command == "archive":
            # The one difference is the moment each archive was written.
            documents = [json.loads(path.read_bytes()) for path in (local, remote)]
            assert [document.pop("exported_at") for document in documents] != [None, None]
            assert documents[0] == documents[1]
        else:
            assert local.read_bytes() == remote.read_bytes(), item.command
    capsys.readouterr()

    approval = list(csv.DictReader((tmp_path / "remote-approval.csv").open(encoding="utf-8")))
    assert [(row["PROLIFIC_PID"], row["completion_code"]) for row in approval] == list(codes.items())
    assert list(approval[0])[:2] == ["PROLIFIC_PID", "completion_code"]
    results = list(csv.DictReader((tmp_path / "remote-results.csv").open(encoding="utf-8")))
    by_pid = {row["panel_PROLIFIC_PID"]: row["completion_code"] for row in results}
    assert by_pid == {**codes, "PID-C": ""}
    document = json.loads((tmp_path / "remote-results.json").read_text(encoding="utf-8"))
    assert {row["panel_PROLIFIC_PID"]: row["completion_code"] for row in document["results"]} == {
        **codes,
        "PID-C": None,
    }
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "remote-results.parquet").to_pydict()
    assert dict(zip(table["panel_PROLIFIC_PID"], table["completion_code"], strict=True)) == {
        **codes,
        "PID-C": None,
    }


def test_close_without_a_terminal_says_to_pass_yes(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "study.toml"
    config.write_text(TOML_STUDY)
    assert main(["--url", server, "study", "create", str(config)]) == 0
    study_id = capsys.readouterr().out.split()[2]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["--url", server, "study", "close", study_id]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "--yes" in captured.err and "Traceback" not in captured.err
    assert main(["--url", server, "study", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "draft"
