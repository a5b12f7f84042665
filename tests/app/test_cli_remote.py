"""`elicit --url … study …`: the study commands against a running server through its JSON API, with the
same output as on the local database, and clear refusals (wrong token, local-only command, no server)."""

from __future__ import annotations

import csv
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from app.cli import main
from app.main import create_app
from app.settings import Settings

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

    assert main(["--url", server, "study", "list", "--json"]) == 0
    remote_listing = json.loads(capsys.readouterr().out)
    assert main(["study", "list", "--json"]) == 0
    assert remote_listing == json.loads(capsys.readouterr().out)  # the same rows as the local listing

    assert main(["--url", server, "study", "open", study_id]) == 0
    assert capsys.readouterr().out.strip() == f"study {study_id} is open"
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
