"""`elicit admin ...` and the back-office `elicit study ...` actions against a migrated SQLite file."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from admin_support import PASSWORD, STUDY_CONFIG, login

from app.admin.auth import verify_password
from app.admin.models import User
from app.cli import main
from app.models import StudyControl
from app.settings import Settings


def _users(app: Any) -> list[User]:
    from sqlalchemy import select

    with app.state.sessionmaker() as db:
        return list(db.scalars(select(User)))


def test_cli_admin_create_reads_the_password_from_env_or_stdin_never_argv(
    cli_env: Settings, app: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", PASSWORD)
    assert main(["admin", "create", "--email", "Root@Example.org", "--role", "admin"]) == 0
    monkeypatch.delenv("ELICIT_ADMIN_PASSWORD")
    monkeypatch.setattr("sys.stdin", io.StringIO("another long password\n"))
    assert (
        main(["admin", "create", "--email", "c@example.org", "--role", "coordinator", "--password-stdin"])
        == 0
    )
    users = {user.email: user for user in _users(app)}
    assert users["root@example.org"].role == "admin"
    assert verify_password(users["c@example.org"].password_hash, "another long password")
    assert users["c@example.org"].password_hash.startswith("$argon2id$")
    # No password option exists; a short password and a duplicate are refused with a message.
    with pytest.raises(SystemExit):
        main(["admin", "create", "--email", "x@example.org", "--role", "admin", "--password", "secret"])
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    assert main(["admin", "create", "--email", "x@example.org", "--role", "admin", "--password-stdin"]) == 2
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", PASSWORD)
    assert main(["admin", "create", "--email", "c@example.org", "--role", "admin"]) == 2
    err = capsys.readouterr().err
    assert "at least 12 characters" in err and "exists already" in err


def test_cli_token_create_and_revoke(
    cli_env: Settings, app: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from fastapi.testclient import TestClient

    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", PASSWORD)
    main(["admin", "create", "--email", "a@example.org", "--role", "admin"])
    capsys.readouterr()
    assert main(["admin", "token", "create", "--email", "a@example.org", "--name", "script"]) == 0
    out = capsys.readouterr().out
    secret = out.strip().split(": ", 1)[1]
    token_id = int(out.split()[1])
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {secret}"}
        assert client.get("/api/v1/studies", headers=headers).status_code == 200
        assert main(["admin", "token", "revoke", str(token_id)]) == 0
        assert client.get("/api/v1/studies", headers=headers).status_code == 401


def test_cli_study_actions_status_invite_plan_export_import(
    cli_env: Settings, app: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    config_file = tmp_path / "study.json"
    config_file.write_text(json.dumps(STUDY_CONFIG))
    assert main(["study", "plan", str(config_file), "--trials", "5", "--seconds-per-query", "6"]) == 0
    out = capsys.readouterr().out
    assert "elicitation queries: mean" in out and "at 6.0 s per comparison" in out
    assert main(["study", "create", str(config_file)]) == 0
    study_id = capsys.readouterr().out.split()[2]
    assert main(["study", "open", study_id]) == 0
    assert main(["study", "pause", study_id]) == 0
    # At a terminal, close asks; anything but "close" keeps the study as it is.
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    assert main(["study", "close", study_id]) == 1
    with app.state.sessionmaker() as db:
        assert db.get(StudyControl, __import__("uuid").UUID(study_id)).status == "paused"
    assert main(["study", "open", study_id]) == 0
    output = tmp_path / "links.csv"
    assert main(["study", "invite", study_id, "--count", "4", "--output", str(output)]) == 0
    rows = list(csv.DictReader(output.open()))
    assert len(rows) == 4 and all("/sessions/" in row["url"] for row in rows)
    archive = tmp_path / "archive.json"
    assert main(["study", "export", study_id, "archive", "--output", str(archive)]) == 0
    assert len(json.loads(archive.read_text())["sessions"]) == 4
    assert main(["study", "export", study_id, "results", "--output", str(tmp_path / "r.csv")]) == 0
    assert len(list(csv.DictReader((tmp_path / "r.csv").open()))) == 4
    # The expert panel's files (no finished participant yet: the JSON says why there is no panel).
    assert main(["study", "export", study_id, "panel", "--output", str(tmp_path / "p.json")]) == 0
    assert json.loads((tmp_path / "p.json").read_text())["available"] is False
    assert main(["study", "export", study_id, "panel-csv", "--output", str(tmp_path / "p.csv")]) == 0
    assert (tmp_path / "p.csv").read_text().startswith("row,camp,session_id,participant_code,")
    # A synthetic study has no best classifiers (the JSON says why).
    assert main(["study", "export", study_id, "best-classifiers", "--output", str(tmp_path / "b.json")]) == 0
    assert "dataset" in json.loads((tmp_path / "b.json").read_text())["reason"]
    pq = pytest.importorskip("pyarrow.parquet")
    assert (
        main(["study", "export", study_id, "results-parquet", "--output", str(tmp_path / "r.parquet")]) == 0
    )
    assert pq.read_table(tmp_path / "r.parquet").num_rows == 4
    # Importing into the same database is refused (the study exists); the message says why.
    capsys.readouterr()
    assert main(["study", "import", str(archive)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["study", "close", study_id, "--yes"]) == 0
    assert main(["study", "duplicate", study_id]) == 0
    assert "created draft" in capsys.readouterr().out
    pq = pytest.importorskip("pyarrow.parquet")  # last: the optional extra
    parquet = tmp_path / "r.parquet"
    assert main(["study", "export", study_id, "results-parquet", "--output", str(parquet)]) == 0
    assert pq.read_table(parquet).num_rows == 4


def _demo_owner(app: Any) -> str | None:
    from sqlalchemy import select

    from app.models import Study

    with app.state.sessionmaker() as db:
        study = db.scalars(select(Study).where(Study.name == "Demo: breast cancer screening")).one()
        control = db.get(StudyControl, study.id)
        if control is None or control.owner_id is None:
            return None
        return db.get(User, control.owner_id).email  # type: ignore[union-attr]


def test_cli_demo_goes_to_the_first_admin_or_the_named_owner_who_then_sees_it(
    cli_env: Settings, app: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    from fastapi.testclient import TestClient

    # Before any account exists the demo is made anyway, and the command says how to give it an owner.
    assert main(["demo"]) == 0
    assert "no back-office account owns it yet" in capsys.readouterr().out
    assert _demo_owner(app) is None
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", PASSWORD)
    main(["admin", "create", "--email", "first@example.org", "--role", "admin"])
    main(["admin", "create", "--email", "second@example.org", "--role", "admin"])
    main(["admin", "create", "--email", "coord@example.org", "--role", "coordinator"])
    capsys.readouterr()
    assert main(["demo"]) == 0
    assert "belongs to first@example.org" in capsys.readouterr().out
    assert _demo_owner(app) == "first@example.org"
    with TestClient(app) as client:
        login(client, "coord@example.org")
        assert "Demo: breast cancer screening" not in client.get("/admin").text
    # A named owner takes the demo over; an unknown name is refused and changes nothing.
    assert main(["demo", "--owner", "nobody@example.org"]) == 2
    assert "no back-office account nobody@example.org" in capsys.readouterr().err
    assert main(["demo", "--owner", "Coord@Example.org"]) == 0
    assert "belongs to coord@example.org" in capsys.readouterr().out
    assert _demo_owner(app) == "coord@example.org"
    # Running it again without --owner keeps the owner it has.
    assert main(["demo"]) == 0
    assert _demo_owner(app) == "coord@example.org"
    with TestClient(app) as client:
        login(client, "coord@example.org")
        listing = client.get("/admin")
        assert listing.status_code == 200 and "Demo: breast cancer screening" in listing.text
