"""Closing a study: the snapshot is built outside the write lock, and answers after the close are marked."""

from __future__ import annotations

import csv
import io
import os
from typing import Any

import pytest
from admin_support import METRIC, STUDY_CONFIG, Participant, bearer
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from app.admin import export, snapshots
from app.admin.models import LoginAttempt
from app.models import utcnow


def _open_study(client: TestClient, token: str) -> str:
    sid: str = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    return sid


def _close(client: TestClient, token: str, sid: str) -> Any:
    return client.patch(
        f"/api/v1/studies/{sid}", json={"status": "closed", "confirm": True}, headers=bearer(token)
    )


def test_close_builds_its_snapshot_while_others_can_write(
    client: TestClient, app: Any, accounts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = accounts["alice"]["token"]
    sid = _open_study(client, token)
    Participant(METRIC).finish(
        client, client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    )
    build = export._archive_sessions
    writes: list[str] = []

    def build_while_writing(db: Any, study: Any) -> Any:
        # Another connection commits in the middle of the snapshot: impossible if the close held the
        # write lock (on SQLite it would wait for it; with a short busy timeout it fails at once).
        with app.state.sessionmaker() as other:
            if other.get_bind().dialect.name == "sqlite":
                other.execute(text("PRAGMA busy_timeout=200"))
            other.add(
                LoginAttempt(email="probe@example.org", client="probe", succeeded=False, created_at=utcnow())
            )
            other.commit()
            writes.append("committed")
        yield from build(db, study)

    monkeypatch.setattr(export, "_archive_sessions", build_while_writing)
    closed = _close(client, token, sid)
    assert closed.status_code == 200, closed.text
    assert writes == ["committed"]
    kept = client.get(f"/api/v1/studies/{sid}/snapshots", headers=bearer(token)).json()["snapshots"]
    snapshot = client.get(f"/api/v1/studies/{sid}/snapshots/{kept[0]['id']}", headers=bearer(token))
    assert snapshot.status_code == 200
    body = snapshot.json()
    assert body["reason"] == "closed"
    assert body["archive"]["study"]["status"] == "closed"
    assert [session["status"] for session in body["archive"]["sessions"]] == ["done"]


def test_answers_after_the_close_are_kept_and_marked(client: TestClient, accounts: dict[str, Any]) -> None:
    token = accounts["alice"]["token"]
    sid = _open_study(client, token)
    participant = Participant(METRIC)
    session = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    state = participant.answer(client, session, client.get(f"/api/v1/sessions/{session}").json())
    assert _close(client, token, sid).status_code == 200
    # A session under way may finish; its later answers are kept and marked as given after the close.
    assert participant.finish(client, session)["status"] == "done"
    assert state is not None
    log = list(
        csv.DictReader(
            io.StringIO(client.get(f"/api/v1/studies/{sid}/answers.csv", headers=bearer(token)).text)
        )
    )
    marks = [row["after_close"] for row in log]
    assert marks[0] == "False"
    assert set(marks[1:]) == {"True"}
    kept = client.get(f"/api/v1/studies/{sid}/snapshots", headers=bearer(token)).json()["snapshots"]
    archive = client.get(f"/api/v1/studies/{sid}/snapshots/{kept[0]['id']}", headers=bearer(token)).json()[
        "archive"
    ]
    assert len(archive["sessions"][0]["answers"]) == 1  # the snapshot is the study as it was at closing


def test_a_large_study_is_archived_by_a_worker_process(
    client: TestClient, accounts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every study counts as large here: the archive is built and stored by the spawned worker, on its own
    # engine (the same database file or PostgreSQL schema), and is there when the close returns.
    monkeypatch.setattr(snapshots, "SNAPSHOT_PROCESS_ROWS", -1)
    worker_pids: list[int] = []
    submit = snapshots._worker_pool().submit

    def submit_and_note(*args: Any) -> Any:
        future = submit(*args)
        worker_pids.extend(snapshots._worker_pool()._processes)
        return future

    monkeypatch.setattr(snapshots._worker_pool(), "submit", submit_and_note)
    token = accounts["alice"]["token"]
    sid = _open_study(client, token)
    Participant(METRIC).finish(
        client, client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    )
    assert _close(client, token, sid).status_code == 200
    assert worker_pids and os.getpid() not in worker_pids
    kept = client.get(f"/api/v1/studies/{sid}/snapshots", headers=bearer(token)).json()["snapshots"]
    assert [snapshot["reason"] for snapshot in kept] == ["closed"]
    archive = client.get(f"/api/v1/studies/{sid}/snapshots/{kept[0]['id']}", headers=bearer(token)).json()[
        "archive"
    ]
    assert archive["study"]["status"] == "closed"
    assert [session["status"] for session in archive["sessions"]] == ["done"]


def test_an_in_memory_database_is_archived_in_the_request() -> None:
    engine = create_engine("sqlite://")
    with Session(engine) as db:
        assert snapshots._database_of(db) is None
    with Session(create_engine("sqlite:////tmp/some.db")) as db:
        assert snapshots._database_of(db) == snapshots._Database("sqlite:////tmp/some.db", None)
