"""Behind the shipped proxy the app sees each client's own address and scheme.

`elicit serve` runs with the proxy settings of `compose.yaml`'s app containers, and requests reach it the
way nginx (`deploy/nginx.conf`) sends them: from the proxy's address (here 127.0.0.2, which, like the
proxy container's address, is not uvicorn's default trusted 127.0.0.1), carrying X-Forwarded-For and
X-Forwarded-Proto. Without ``FORWARDED_ALLOW_IPS`` every client looked like the proxy: 21 wrong logins
from one client made another user's correct password get 429, and the session cookie lost ``Secure``.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.admin.auth import MAX_FAILED_LOGINS, create_user
from app.main import create_app
from app.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PROXY_ADDRESS = "127.0.0.2"
PASSWORD = "proxy test password for a throw-away database"


def _compose_environment() -> dict[str, str]:
    """The app containers' environment variables in compose.yaml, with their defaults filled in."""
    text = (ROOT / "compose.yaml").read_text(encoding="utf-8")
    block = text.split("x-app-environment: &app-environment\n", 1)[1].split("\n\n", 1)[0]
    values: dict[str, str] = {}
    for line in block.splitlines():
        match = re.match(r"^  ([A-Z_]+): (.*)$", line)
        if match:
            default = re.fullmatch(r"\$\{[A-Z_]+:-(.*)\}", match.group(2))
            values[match.group(1)] = default.group(1) if default else match.group(2)
    return values


def _nginx_headers() -> dict[str, str]:
    """The request headers deploy/nginx.conf sets for the app."""
    text = (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    return dict(re.findall(r"^\s*proxy_set_header\s+(\S+)\s+(.+?);", text, flags=re.MULTILINE))


@pytest.fixture
def served(sqlite_file_settings: Settings, tmp_path: Path) -> Iterator[str]:
    """`elicit serve` (one worker) on a migrated SQLite file with one account, started with the compose
    file's proxy settings; yields its base URL."""
    app = create_app(sqlite_file_settings)
    with app.state.sessionmaker() as db:
        create_user(db, "alice@example.org", PASSWORD, "coordinator")
    app.state.engine.dispose()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in {"FORWARDED_ALLOW_IPS", "DATABASE_SCHEMA"}
    }
    compose = _compose_environment()
    if "FORWARDED_ALLOW_IPS" in compose:
        environment["FORWARDED_ALLOW_IPS"] = compose["FORWARDED_ALLOW_IPS"]
    environment.update(DATABASE_URL=sqlite_file_settings.database_url, SECRET_KEY="proxy-test-secret")
    command = [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--workers", "1", "--no-migrate"],
        env=environment,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None:
                raise AssertionError(process.stderr.read().decode() if process.stderr else "serve exited")
            time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=20)


def _login(proxy: httpx.Client, base: str, client_address: str, password: str) -> httpx.Response:
    """One login as the proxy forwards it for ``client_address`` over HTTPS (the cookie of the login form
    is sent back by hand: a Secure cookie never travels over the test's plain HTTP)."""
    forwarded = {"X-Forwarded-For": client_address, "X-Forwarded-Proto": "https"}
    proxy.cookies.clear()  # each client is a browser of its own
    form = proxy.get(f"{base}/admin/login", headers=forwarded)
    assert form.status_code == 200
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf is not None
    cookie = form.headers["set-cookie"].split(";", 1)[0]
    return proxy.post(
        f"{base}/admin/login",
        data={
            "email": "alice@example.org",
            "password": password,
            "csrf_token": csrf.group(1),
            "next": "/admin",
        },
        headers={**forwarded, "Cookie": cookie},
    )


def test_the_shipped_proxy_overwrites_the_forwarded_headers() -> None:
    headers = _nginx_headers()
    # Set to what nginx saw, not appended to what the client sent: the app trusts these headers.
    assert headers["X-Forwarded-For"] == "$remote_addr"
    assert "$proxy_add_x_forwarded_for" not in (ROOT / "deploy" / "nginx.conf").read_text(encoding="utf-8")
    assert headers["X-Forwarded-Proto"] == "$forwarded_proto"


def test_behind_the_proxy_each_client_has_its_own_login_bucket_and_https_cookies(served: str) -> None:
    transport = httpx.HTTPTransport(local_address=PROXY_ADDRESS)
    with httpx.Client(transport=transport, follow_redirects=False) as proxy:
        statuses = [_login(proxy, served, "203.0.113.5", "not the password").status_code for _ in range(6)]
        assert statuses == [401] * MAX_FAILED_LOGINS + [429], statuses
        # Another client behind the same proxy is not the guesser: its correct password works...
        ok: Any = _login(proxy, served, "198.51.100.6", PASSWORD)
        assert ok.status_code == 303, ok.text[:300]
        # ...and the session cookie is Secure, since the client spoke HTTPS to the proxy.
        session_cookie = next(
            value
            for key, value in ok.headers.multi_items()
            if key == "set-cookie" and "elicit_admin=" in value
        )
        assert "Secure" in session_cookie and "HttpOnly" in session_cookie
