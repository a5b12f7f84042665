"""Back-office bodies: credentials before a byte is read, size limits while streaming, no DB while reading."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from admin_support import STUDY_CONFIG, bearer

from app.admin.http import MAX_ARCHIVE_BODY_BYTES, MAX_BODY_BYTES, MAX_STUDY_BODY_BYTES
from app.deps import connection_slots

CHUNK = 64 * 1024


class Upload:
    """An ASGI client side of one POST: records how many body chunks the server asked for."""

    def __init__(self, body: bytes, *, declare_length: bool = True, pause_after: int | None = None) -> None:
        self.chunks = [body[i : i + CHUNK] for i in range(0, len(body), CHUNK)] or [b""]
        self.declare_length = declare_length
        self.length = len(body)
        self.pause_after = pause_after
        self.paused = anyio.Event()
        self.resume = anyio.Event()
        self.chunks_read = 0
        self.status: int | None = None
        self.body = b""

    async def receive(self) -> dict[str, Any]:
        if self.chunks_read >= len(self.chunks):
            await anyio.sleep_forever()
        if self.pause_after is not None and self.chunks_read == self.pause_after:
            self.paused.set()
            await self.resume.wait()
        index = self.chunks_read
        self.chunks_read += 1
        more = index + 1 < len(self.chunks)
        return {"type": "http.request", "body": self.chunks[index], "more_body": more}

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")

    async def post(self, app: Any, path: str, headers: dict[str, str]) -> None:
        raw = [(name.lower().encode(), value.encode()) for name, value in headers.items()]
        if self.declare_length:
            raw.append((b"content-length", str(self.length).encode()))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "POST",
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": raw,
            "client": ("127.0.0.1", 5000),
            "server": ("testserver", 80),
            "state": {},
        }
        await app(scope, self.receive, self.send)


def run(work: Callable[[], Awaitable[None]]) -> None:
    anyio.run(work)


def big_json(size: int) -> bytes:
    return json.dumps({"padding": "x" * size}).encode()


@pytest.mark.parametrize("path", ["/api/v1/studies", "/api/v1/studies/import", "/api/v1/tokens"])
@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer elk_not-a-real-token"}, {"Cookie": "elicit_admin=forged.value.sig"}],
    ids=["anonymous", "unknown-token", "forged-cookie"],
)
def test_admission_unauthenticated_body_is_never_read(
    app: Any, accounts: dict[str, Any], path: str, headers: dict[str, str]
) -> None:
    upload = Upload(big_json(900_000))

    async def work() -> None:
        await upload.post(app, path, {"content-type": "application/json", **headers})

    run(work)
    assert upload.status == 401
    assert upload.chunks_read == 0
    assert json.loads(upload.body)["error"] == "unauthorized"


def test_admission_anonymous_form_upload_redirects_to_login_unread(
    app: Any, accounts: dict[str, Any]
) -> None:
    upload = Upload(b"--x\r\n" + b"y" * 900_000)

    async def work() -> None:
        await upload.post(app, "/admin/import", {"content-type": "multipart/form-data; boundary=x"})

    run(work)
    assert upload.status == 303
    assert upload.chunks_read == 0


@pytest.mark.parametrize(
    ("path", "limit"),
    [
        ("/api/v1/tokens", MAX_BODY_BYTES),
        ("/api/v1/studies", MAX_STUDY_BODY_BYTES),
        ("/api/v1/studies/import", MAX_ARCHIVE_BODY_BYTES),
    ],
)
def test_admission_declared_oversized_body_is_refused_unread(
    app: Any, accounts: dict[str, Any], path: str, limit: int
) -> None:
    upload = Upload(b"")
    upload.length = limit + 1

    async def work() -> None:
        headers = {
            "content-type": "application/json",
            "Authorization": f"Bearer {accounts['alice']['token']}",
        }
        await upload.post(app, path, headers)

    run(work)
    assert upload.status == 413
    assert upload.chunks_read == 0


def test_admission_undeclared_oversized_body_is_cut_off_while_streaming(
    app: Any, accounts: dict[str, Any]
) -> None:
    upload = Upload(big_json(3 * MAX_BODY_BYTES), declare_length=False)

    async def work() -> None:
        headers = {
            "content-type": "application/json",
            "Authorization": f"Bearer {accounts['alice']['token']}",
        }
        await upload.post(app, "/api/v1/tokens", headers)

    run(work)
    assert upload.status == 413
    # Reading stops at the first chunk past the limit, not at the end of the body.
    assert upload.chunks_read == MAX_BODY_BYTES // CHUNK + 1


def test_admission_slow_upload_holds_no_database_connection(app: Any, accounts: dict[str, Any]) -> None:
    body = json.dumps(STUDY_CONFIG).encode() + b" " * 300_000  # valid JSON, five chunks long
    upload = Upload(body, pause_after=2)
    observed: dict[str, Any] = {}

    async def work() -> None:
        slots = connection_slots(app)
        observed["capacity"] = None if slots is None else slots.value
        async with anyio.create_task_group() as group:
            headers = {"content-type": "application/json", **bearer(accounts["alice"]["token"])}
            group.start_soon(upload.post, app, "/api/v1/studies", headers)
            await upload.paused.wait()
            pool = app.state.engine.pool
            observed["checked_out"] = pool.checkedout() if hasattr(pool, "checkedout") else 0
            observed["slots_free"] = None if slots is None else slots.value
            upload.resume.set()

    run(work)
    assert observed["checked_out"] == 0
    assert observed["slots_free"] == observed["capacity"]
    assert upload.status == 201, upload.body
    assert json.loads(upload.body)["name"] == STUDY_CONFIG["name"]
