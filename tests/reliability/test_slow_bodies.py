"""Every route's body has a deadline: a body dribbled a byte at a time is cut off with 408, and the
connection is closed, against a live server run like `elicit serve`.

Before the deadline covered every route, the login form, the join page and the participant's answers
(none of them behind the back office's admission) kept such a connection open for as long as the client
liked (more than 140 s at a byte every 10 s).
"""

from __future__ import annotations

import shutil
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from app_support import make_study, serving

from app.main import create_app
from app.server import HeaderDeadlineProtocol
from app.settings import Settings

#: The deadline the test server runs with (the default is 120 s).
DEADLINE_S = 1.0
#: How long the test keeps dribbling before it calls the connection "never closed".
GIVE_UP_S = 8.0
#: A byte every this many seconds.
DRIBBLE_S = 0.2


@pytest.fixture
def server(sqlite_template: Path, tmp_path: Path) -> Iterator[dict[str, Any]]:
    path = tmp_path / "slow.db"
    shutil.copy(sqlite_template, path)
    app = create_app(Settings(database_url=f"sqlite:///{path}", body_timeout_s=DEADLINE_S))
    study = make_study(app)
    with serving(app, HeaderDeadlineProtocol) as port:
        base = f"http://127.0.0.1:{port}"
        created = httpx.post(f"{base}/api/v1/studies/{study.id}/sessions", json={"consent": True})
        assert created.status_code == 201, created.text
        yield {"port": port, "study": study.id, "token": created.json()["token"], "base": base}
    app.state.engine.dispose()


def _dribble(port: int, path: str, content_type: str) -> tuple[float, bytes]:
    """Send complete headers announcing a 400-byte body, then one body byte every `DRIBBLE_S`; the
    seconds until the server answered or closed the connection, and what it sent (``inf`` if it never
    did within `GIVE_UP_S`)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        "Content-Length: 400\r\n\r\n"
    ).encode()
    received = b""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(head)
        started = time.monotonic()
        while time.monotonic() - started < GIVE_UP_S:
            try:
                connection.sendall(b"a")
                connection.settimeout(DRIBBLE_S)
                chunk = connection.recv(65536)
            except TimeoutError:
                continue
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - started, received
            if not chunk:
                return time.monotonic() - started, received
            received += chunk
            # The answer came; the server must now close the connection (the body was never finished).
            connection.settimeout(GIVE_UP_S)
            try:
                while more := connection.recv(65536):
                    received += more
            except (TimeoutError, ConnectionResetError):
                pass
            return time.monotonic() - started, received
    return float("inf"), received


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/admin/login", "application/x-www-form-urlencoded"),
        ("/studies/{study}/join", "application/x-www-form-urlencoded"),
        ("/sessions/{token}/answers", "application/x-www-form-urlencoded"),
        ("/api/v1/sessions/{token}/answers", "application/json"),
    ],
)
def test_a_dribbled_body_is_cut_off_at_the_deadline(
    server: dict[str, Any], path: str, content_type: str
) -> None:
    target = path.format(study=server["study"], token=server["token"])
    seconds, received = _dribble(server["port"], target, content_type)
    assert seconds < DEADLINE_S + 3.0, f"{target}: still open after {seconds:.1f} s"
    assert seconds >= DEADLINE_S * 0.9, f"{target}: cut off after {seconds:.1f} s, before the deadline"
    assert received.startswith(b"HTTP/1.1 408 "), received[:200]


def test_a_body_that_arrives_in_time_is_served(server: dict[str, Any]) -> None:
    answered = httpx.post(
        f"{server['base']}/api/v1/sessions/{server['token']}/answers", json={"seq": 0, "preferred": "first"}
    )
    assert answered.status_code == 200, answered.text
