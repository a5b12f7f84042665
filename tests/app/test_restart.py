"""A real uvicorn process on a real SQLite file: killed mid-session, restarted, the same next query."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from app_support import METRIC, SMALL_STUDY, Participant

from app.db import make_engine, make_sessionmaker
from app.services import create_study
from app.settings import Settings

pytestmark = pytest.mark.slow
STARTUP_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def server(settings: Settings, port: int) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``uvicorn --factory app.main:create_app`` against ``settings``' database until killed."""
    env = {**os.environ, "DATABASE_URL": settings.database_url}
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "app.main:create_app", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.1)
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)


def test_resume_after_a_killed_server(sqlite_settings: Settings) -> None:
    engine = make_engine(sqlite_settings)
    with make_sessionmaker(engine)() as db:
        study = create_study(db, SMALL_STUDY)
    engine.dispose()
    participant = Participant(METRIC)
    port = free_port()
    with (
        server(sqlite_settings, port) as process,
        httpx.Client(base_url=f"http://127.0.0.1:{port}") as client,
    ):
        created = client.post(f"/api/v1/studies/{study.id}/sessions", json={"consent": True})
        assert created.status_code == 201
        token = created.json()["token"]
        state: dict[str, Any] = client.get(f"/api/v1/sessions/{token}").json()
        for _ in range(7):
            state = participant.answer(client, token, state)
        # No graceful shutdown: every acknowledged answer must already be on disk.
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    with server(sqlite_settings, port), httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
        resumed = client.get(f"/api/v1/sessions/{token}")
        assert resumed.status_code == 200
        assert resumed.json() == state
        final = participant.finish(client, token)
    assert final["status"] == "done"
    assert final["result"]["checks"]["all_passed"] is True
