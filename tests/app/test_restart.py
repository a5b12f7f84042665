"""A real uvicorn process on a real SQLite file: killed mid-session, restarted, the same next query."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from app_support import METRIC, SMALL_STUDY, Participant

from app.db import make_engine, make_sessionmaker
from app.sessions import create_study
from app.settings import Settings
from benchmarks.servers import ServerProcess, free_port

pytestmark = pytest.mark.slow


def test_resume_after_a_killed_server(sqlite_settings: Settings) -> None:
    engine = make_engine(sqlite_settings)
    with make_sessionmaker(engine)() as db:
        study = create_study(db, SMALL_STUDY)
    engine.dispose()
    participant = Participant(METRIC)
    # The restarted server listens on the same port, as a restarted deployment would.
    env, port = {"DATABASE_URL": sqlite_settings.database_url}, free_port()
    with (
        ServerProcess(env=env, port=port, kill_at_exit=True) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        created = client.post(f"/api/v1/studies/{study.id}/sessions", json={"consent": True})
        assert created.status_code == 201
        token = created.json()["token"]
        state: dict[str, Any] = client.get(f"/api/v1/sessions/{token}").json()
        for _ in range(7):
            state = participant.answer(client, token, state)
        # No graceful shutdown: every acknowledged answer must already be on disk.
        server.kill()
    with (
        ServerProcess(env=env, port=port, kill_at_exit=True) as server,
        httpx.Client(base_url=server.url) as client,
    ):
        resumed = client.get(f"/api/v1/sessions/{token}")
        assert resumed.status_code == 200
        assert resumed.json() == state
        final = participant.finish(client, token)
    assert final["status"] == "done"
    assert final["result"]["checks"]["all_passed"] is True
