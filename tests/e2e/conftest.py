"""Browser test fixtures: the system Chromium, a live uvicorn server on 127.0.0.1 and small studies.

The server runs in a background thread on a migrated temporary SQLite file (one per test module). The
browser is the system Chromium (``CHROMIUM_PATH`` or ``chromium`` on the PATH); without it the tests are
skipped with the reason, except under ``REQUIRE_BROWSER=1`` (CI), where a missing browser is an error.
Playwright's own browser downloads are never used. Every page records console errors and any request
that leaves 127.0.0.1; tests assert both lists stay empty.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import uvicorn

from app.cli.web import upgrade_database
from app.main import create_app
from app.sessions import create_session, create_study
from app.settings import Settings

#: Chromium flags for a root user in a container without network (see STYLE.md section 5).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: How long to wait for the live server to accept connections.
SERVER_START_TIMEOUT_S = 20.0
#: A laptop viewport: the layout shows the two classifiers side by side.
LAPTOP = {"width": 1366, "height": 900}
#: A phone held upright (CSS pixels): touch screen, no hover, no keyboard.
PHONE = {"width": 390, "height": 844}

#: A two-group fairness study (fair QPME, k = 2, m = 2) that goes straight to its questions.
FAIRNESS_STUDY: dict[str, Any] = {
    "name": "Credit decisions",
    "task": "A classifier decides whether a loan applicant will repay.",
    "class_names": ["repays", "defaults"],
    "group_names": ["women", "men"],
    "population": "applicants",
    "algorithm": "fair_qpme",
    "algorithm_params": {"epsilon": 0.3},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.75, 0.25], [0.65, 0.35]]},
    "practice_queries": 0,
    "checks": False,
    "evaluation_queries": 0,
}

#: A small linear study (LPME, k = 2, coarse tolerance): 8 elicitation queries plus every other phase.
LPME_STUDY: dict[str, Any] = {
    "name": "Breast cancer screening",
    "task": "A classifier decides from a biopsy whether a tumour is benign or malignant.",
    "class_names": ["benign", "malignant"],
    "population": "patients",
    "algorithm": "lpme",
    "algorithm_params": {"epsilon": 0.2, "cycles": 1},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.65, 0.35]},
    "practice_queries": 1,
    "checks": True,
    "dominance_checks": 1,
    "repeat_checks": 1,
    "evaluation_queries": 3,
    "redirect_url": "https://panel.example.org/done?study=e2e",
}


def _chromium_path() -> str | None:
    configured = os.environ.get("CHROMIUM_PATH")
    if configured:
        return configured if Path(configured).is_file() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Launch the system Chromium (never a downloaded one), headless, with container-safe flags."""
    path = _chromium_path()
    if path is None:
        configured = os.environ.get("CHROMIUM_PATH")
        reason = (
            f"CHROMIUM_PATH={configured} is not a file"
            if configured
            else "no system Chromium: set CHROMIUM_PATH or put `chromium` on the PATH"
        )
        if os.environ.get("REQUIRE_BROWSER") == "1":
            pytest.fail(f"REQUIRE_BROWSER=1 but {reason}", pytrace=False)
        pytest.skip(reason)
    return {**browser_type_launch_args, "executable_path": path, "args": CHROMIUM_ARGS, "headless": True}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict[str, Any]) -> dict[str, Any]:
    return {**browser_context_args, "viewport": LAPTOP, "locale": "en-GB", "service_workers": "block"}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class LiveServer:
    """A running app: its base URL and the app object (for direct database access in assertions)."""

    url: str
    app: Any

    def create_study(self, **overrides: Any) -> Any:
        with self.app.state.sessionmaker() as db:
            return create_study(db, {**LPME_STUDY, **overrides})

    def invite(self, study: Any) -> str:
        """An invitation link's token: a session that waits for consent."""
        with self.app.state.sessionmaker() as db:
            _session, token = create_session(
                db, self.app.state.session_cache, study.id, consented=False, require_open=False
            )
        return token


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """uvicorn serving ``create_app`` on 127.0.0.1 in a background thread, on a fresh migrated SQLite."""
    database = tmp_path_factory.mktemp("e2e") / "e2e.db"
    settings = Settings(database_url=f"sqlite:///{database}", sqlite_synchronous="NORMAL")
    upgrade_database(settings)
    app = create_app(settings)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="off"
        )
    )
    thread = threading.Thread(target=server.run, name="e2e-uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the test server did not start on 127.0.0.1:{port}")
        time.sleep(0.05)
    yield LiveServer(url=f"http://127.0.0.1:{port}", app=app)
    server.should_exit = True
    thread.join(timeout=10)
    app.state.engine.dispose()


@dataclass
class PageHealth:
    """What went wrong on a page that the page itself would not show: console errors, escaping requests."""

    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def assert_clean(self) -> None:
        assert self.console_errors == [], f"console errors: {self.console_errors}"
        assert self.external_requests == [], f"requests leaving 127.0.0.1: {self.external_requests}"


def watch(page: Any) -> PageHealth:
    """Record ``page``'s console errors, uncaught exceptions and requests to any other host."""
    record = PageHealth()

    def on_console(message: Any) -> None:
        if message.type == "error":
            record.console_errors.append(f"{message.text} @ {message.location.get('url', '')}")

    def on_request(request: Any) -> None:
        url = request.url
        record.requests.append(f"{request.method} {url}")
        if urlsplit(url).hostname != "127.0.0.1" and not url.startswith(("data:", "blob:", "about:")):
            record.external_requests.append(url)

    page.on("console", on_console)
    page.on("pageerror", lambda error: record.console_errors.append(f"uncaught: {error}"))
    # Listening (not routing) keeps the browser cache on, so plotly.js is fetched once per test.
    page.context.on("request", on_request)
    return record


@pytest.fixture
def health(page: Any) -> Iterator[PageHealth]:
    """Watch the laptop ``page``; the test fails if it logged errors or reached another host."""
    record = watch(page)
    yield record
    record.assert_clean()


@pytest.fixture
def phone(browser: Any) -> Iterator[Any]:
    """A page on a phone (390 x 844, touch, mobile viewport), watched like ``health`` watches ``page``."""
    context = browser.new_context(
        viewport=PHONE, has_touch=True, is_mobile=True, locale="en-GB", service_workers="block"
    )
    page = context.new_page()
    record = watch(page)
    yield page
    context.close()
    record.assert_clean()


@pytest.fixture
def open_device(browser: Any) -> Iterator[Any]:
    """Opens a page at any ``viewport`` (a touch phone with ``touch=True``), watched like ``health``
    watches ``page``; the test fails if one logged errors or reached another host."""
    opened: list[tuple[Any, PageHealth]] = []

    def open_page(viewport: dict[str, int], touch: bool = False) -> Any:
        context = browser.new_context(
            viewport=viewport, has_touch=touch, is_mobile=touch, locale="en-GB", service_workers="block"
        )
        page = context.new_page()
        opened.append((context, watch(page)))
        return page

    yield open_page
    for context, record in opened:
        context.close()
        record.assert_clean()


@pytest.fixture
def fairness_study(live_server: LiveServer) -> Any:
    """A new two-group fairness study (`FAIRNESS_STUDY`) on the live server."""
    return live_server.create_study(**FAIRNESS_STUDY)


@pytest.fixture(params=["laptop", "phone"])
def screen(request: pytest.FixtureRequest) -> Any:
    """The laptop page (1366 x 900) or the phone page (390 x 844, touch), each watched for errors."""
    if request.param == "phone":
        return request.getfixturevalue("phone")
    request.getfixturevalue("health")
    return request.getfixturevalue("page")
