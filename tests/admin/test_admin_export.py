"""Export round trip: export -> import into a fresh database -> identical results; replayable logs."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from admin_support import METRIC, STUDY_CONFIG, Participant, bearer
from fastapi.testclient import TestClient

from app.admin.auth import create_api_token, create_user
from app.admin.export import neutralise
from app.cli import main

QPME = {**STUDY_CONFIG, "algorithm": "qpme", "algorithm_params": {"epsilon": 0.2}}


def _run_study(client: TestClient, token: str) -> str:
    sid = client.post("/api/v1/studies", json=QPME, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    participant = Participant(METRIC)
    for code in ("P1", "P2"):
        session = client.post(
            f"/api/v1/studies/{sid}/sessions", json={"consent": True, "participant_code": code}
        )
        session_token = session.json()["token"]
        state = client.get(f"/api/v1/sessions/{session_token}").json()
        if code == "P2":  # an answer and its undo stay in the log
            state = participant.answer(client, session_token, state)
            state = participant.answer(client, session_token, state)
            state = client.post(f"/api/v1/sessions/{session_token}/undo", json={}).json()
        participant.finish(client, session_token)
    client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True})  # one unfinished session
    rows = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()["results"]
    done = [row for row in rows if row["status"] == "done"]
    client.post(
        f"/api/v1/studies/{sid}/sessions/{done[0]['session_id']}/exclusion",
        json={"reason": "=cmd|' /C calc'!A0"},
        headers=bearer(token),
    )
    return sid


def test_export_import_round_trip_gives_identical_results(
    client: TestClient, accounts: dict[str, Any], fresh_app: Any
) -> None:
    token = accounts["alice"]["token"]
    sid = _run_study(client, token)
    archive = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(token)).json()
    original_json = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()
    original_csv = client.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(token)).text
    original_log = client.get(f"/api/v1/studies/{sid}/answers.csv", headers=bearer(token)).text
    with fresh_app.state.sessionmaker() as db:
        user = create_user(db, "importer@example.org", "a long enough password", "coordinator")
        _token, secret = create_api_token(db, user, "import")
    with TestClient(fresh_app) as other:
        imported = other.post("/api/v1/studies/import", json=archive, headers=bearer(secret))
        assert imported.status_code == 201, imported.text
        assert imported.json()["verified"] == 2  # both finished sessions replayed to their metric
        assert imported.json()["config_hash"] == archive["study"]["config_hash"]
        assert other.get(f"/api/v1/studies/{sid}/results", headers=bearer(secret)).json() == original_json
        assert other.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(secret)).text == original_csv
        assert other.get(f"/api/v1/studies/{sid}/answers.csv", headers=bearer(secret)).text == original_log
        again = other.post("/api/v1/studies/import", json=archive, headers=bearer(secret))
        assert again.status_code == 409
        renamed = copy.deepcopy(archive)
        renamed["study"]["id"] = "00000000-0000-4000-8000-000000000001"
        clash = other.post("/api/v1/studies/import", json=renamed, headers=bearer(secret))
        assert clash.status_code == 409 and "sessions" in clash.json()["message"]
    excluded = [row for row in original_json["results"] if row["excluded"]]
    assert [row["exclusion_reason"] for row in excluded] == ["=cmd|' /C calc'!A0"]  # JSON keeps the text
    assert "'=cmd|' /C calc'!A0" in original_csv  # CSV neutralises it
    assert "undo" in original_log
    # Every answer came through the JSON API, and says so in the log and after the round trip.
    log_rows = list(csv.DictReader(io.StringIO(original_log)))
    assert {row["channel"] for row in log_rows if row["action"] == "answer"} == {"api"}


def test_import_refuses_an_archive_whose_log_does_not_replay(
    client: TestClient, accounts: dict[str, Any], fresh_app: Any
) -> None:
    token = accounts["alice"]["token"]
    sid = _run_study(client, token)
    archive = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(token)).json()
    tampered = copy.deepcopy(archive)
    done = next(s for s in tampered["sessions"] if s["result"] is not None)
    answer = next(a for a in done["answers"] if a["phase"] == "elicitation" and a["undone_at"] is None)
    answer["elicitor_answer"] = not answer["elicitor_answer"]
    wrong_hash = copy.deepcopy(archive)
    wrong_hash["study"]["config"]["name"] = "changed"
    with fresh_app.state.sessionmaker() as db:
        user = create_user(db, "importer@example.org", "a long enough password", "admin")
        _token, secret = create_api_token(db, user, "import")
    with TestClient(fresh_app) as other:
        refused = other.post("/api/v1/studies/import", json=tampered, headers=bearer(secret))
        assert refused.status_code == 422 and "replay" in refused.json()["message"].lower()
        assert other.get("/api/v1/studies", headers=bearer(secret)).json()["studies"] == []  # nothing written
        refused = other.post("/api/v1/studies/import", json=wrong_hash, headers=bearer(secret))
        assert refused.status_code == 422 and "hash" in refused.json()["message"]
        refused = other.post("/api/v1/studies/import", json={"format": "x"}, headers=bearer(secret))
        assert refused.status_code == 422


def test_session_replay_log_replays_offline_with_elicit_replay(
    client: TestClient, accounts: dict[str, Any], tmp_path: Path, capsys: Any
) -> None:
    token = accounts["alice"]["token"]
    sid = _run_study(client, token)
    rows = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()["results"]
    session_id = next(row["session_id"] for row in rows if row["participant_code"] == "P2")
    log = client.get(f"/api/v1/studies/{sid}/sessions/{session_id}/replay-log", headers=bearer(token)).json()
    assert any(entry.get("undone") for entry in log["answers"])
    path = tmp_path / "session.json"
    path.write_text(json.dumps(log))
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "REPLAY MISMATCH" not in out and out.strip()
    # A log from another configuration is detected as such.
    standing = next(entry for entry in log["answers"] if not entry.get("undone"))
    standing["query"]["first"] = [0.9, 0.1]
    path.write_text(json.dumps(log))
    assert main(["replay", str(path)]) == 1


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=SUM(A1)", "'=SUM(A1)"),
        ("+1", "'+1"),
        ("-x", "'-x"),
        ("@cmd", "'@cmd"),
        ("\tx", "'\tx"),
        ("plain", "plain"),
        (-0.5, -0.5),
        (None, None),
    ],
)
def test_neutralise_only_touches_formula_like_text(value: Any, expected: Any) -> None:
    assert neutralise(value) == expected
