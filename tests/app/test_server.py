"""`elicit serve`'s protocol: request headers must arrive in time; bodies and normal requests pass."""

from __future__ import annotations

import argparse
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from app_support import serving
from fastapi.testclient import TestClient

from app.cli import web
from app.server import HEADER_TIMEOUT_S, HeaderDeadlineProtocol

DEADLINE_S = 0.5


class _ShortDeadline(HeaderDeadlineProtocol):
    header_timeout_s = DEADLINE_S


async def _echo_length(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A tiny ASGI app: answers with the number of body bytes it received."""
    if scope["type"] != "http":
        return
    size, more = 0, True
    while more:
        message = await receive()
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = str(size).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]}
    )
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def port() -> Iterator[int]:
    with serving(_echo_length, _ShortDeadline) as free:
        yield free


def _closed_within(connection: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``connection`` (reads EOF) within ``seconds``."""
    connection.settimeout(seconds)
    try:
        while True:
            if connection.recv(4096) == b"":
                return True
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def _response_body(connection: socket.socket) -> bytes:
    """Read one response (headers, then its Content-Length of body) and return the body."""
    connection.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    while len(body) < length:
        body += connection.recv(4096)
    return body


def _request(connection: socket.socket, body: bytes = b"") -> bytes:
    connection.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    return _response_body(connection)


def test_unfinished_headers_are_cut_off(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n")  # no blank line: the headers never end
        assert not _closed_within(connection, DEADLINE_S / 2)
        assert _closed_within(connection, DEADLINE_S * 4)


def test_a_silent_connection_is_cut_off(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        assert _closed_within(connection, DEADLINE_S * 4)


def test_a_kept_alive_connection_gets_a_new_deadline_for_each_request(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        assert _request(connection, b"abc") == b"3"
        time.sleep(DEADLINE_S * 0.6)
        assert _request(connection, b"abcd") == b"4"  # the deadline restarted with the response
        connection.sendall(b"GET / HTTP/1.1\r\nHo")  # then a trickle that never ends its headers
        assert _closed_within(connection, DEADLINE_S * 4)


def test_a_slow_body_after_complete_headers_is_not_cut_off(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nab")
        time.sleep(DEADLINE_S * 2)
        connection.sendall(b"cde")
        assert _response_body(connection) == b"5"


def test_elicit_serve_runs_uvicorn_with_the_header_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: seen.update(kwargs))
    args = argparse.Namespace(no_migrate=True, host="127.0.0.1", port=8123, workers=2)
    assert web._cmd_serve(args) == 0
    assert (
        seen["http"] is HeaderDeadlineProtocol and HeaderDeadlineProtocol.header_timeout_s == HEADER_TIMEOUT_S
    )
    # Connections outlive a person's thinking time, so a reused one does not race the server closing it.
    assert seen["timeout_keep_alive"] == web.KEEP_ALIVE_S >= 60


def test_a_serving_app_runs_blas_on_one_thread(settings: Any) -> None:
    """The app's start-up (its lifespan, in the server's main thread) limits BLAS to one thread."""
    import asyncio

    from threadpoolctl import threadpool_info, threadpool_limits

    from app.main import create_app

    def blas_threads() -> set[int]:
        return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}

    app = create_app(settings)

    async def serving() -> set[int]:
        async with app.router.lifespan_context(app):
            return blas_threads()

    with threadpool_limits(limits=2, user_api="blas"):
        assert blas_threads() == {2}
        assert asyncio.run(serving()) == {1}


_FRESH_PROCESS = """
import asyncio, json, sys
from sqlalchemy import inspect
from app.main import create_app
from app.models import Answer
from app.settings import Settings

app = create_app(Settings(database_url=sys.argv[1]))
before = (inspect(Answer).configured, sorted(app.state.catalogues._translations))

async def serving():
    async with app.router.lifespan_context(app):
        return (inspect(Answer).configured, sorted(app.state.catalogues._translations))

print(json.dumps([before, asyncio.run(serving())]))
"""


def test_start_up_prepares_what_the_first_request_would_pay_for(sqlite_settings: Any) -> None:
    """In a fresh process, the lifespan configures the ORM mappers and compiles every shipped catalogue."""
    import json
    import subprocess
    import sys

    from app.i18n import LANGUAGES, shipped_catalogues

    shipped = sorted(code for code in LANGUAGES if shipped_catalogues().path(code).is_file())
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_PROCESS, sqlite_settings.database_url],
        capture_output=True,
        text=True,
        check=True,
    )
    before, after = json.loads(done.stdout.strip().splitlines()[-1])
    assert before[0] is False and not set(shipped) <= set(before[1])
    assert after[0] is True and set(shipped) <= set(after[1])


def test_a_request_is_counted_in_flight_until_its_response_errors_included(app: Any) -> None:
    counter = app.state.requests_in_flight
    seen: list[bool] = []

    @app.get("/test/in-flight")
    def in_flight() -> dict[str, bool]:
        seen.append(counter.busy())
        return {"ok": True}

    @app.get("/test/in-flight-fails")
    def in_flight_fails() -> None:
        seen.append(counter.busy())
        raise RuntimeError("the handler fails")

    with TestClient(app, raise_server_exceptions=False) as client:
        assert client.get("/test/in-flight").status_code == 200
        assert not counter.busy()
        response = client.get("/test/in-flight-fails")
        assert response.status_code == 500
        assert response.headers["x-frame-options"] == "DENY"  # the 500 page is enveloped too
        assert not counter.busy()
    assert seen == [True, True]
