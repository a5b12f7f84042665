"""Helpers of the reliability tests: real uvicorn processes, throw-away databases, robust participants."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from db_support import POSTGRES_URL

from app.db import make_engine, make_sessionmaker
from app.sessions import create_study
from app.settings import Settings
from benchmarks.servers import ServerProcess
from benchmarks.servers import postgres_database as fresh_postgres_database

PROJECT_ROOT = Path(__file__).resolve().parents[2]
#: How long a participant keeps retrying one request while servers are killed and restarted.
RETRY_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 20.0


class Server(ServerProcess):
    """The app on ``database_url``; ``DATABASE_SCHEMA`` is ``schema`` or unset (never the test run's)."""

    def __init__(self, database_url: str, *, schema: str | None = None, workers: int = 1) -> None:
        env = {"DATABASE_URL": database_url, "DATABASE_SCHEMA": schema or None}
        super().__init__(env=env, workers=workers)


@contextmanager
def servers(database_url: str, count: int, *, schema: str | None = None) -> Iterator[list[Server]]:
    """``count`` server processes on one database, started in parallel, stopped at the end."""
    started = [Server(database_url, schema=schema) for _ in range(count)]
    try:
        for server in started:
            server.wait_ready()
        yield started
    finally:
        for server in started:
            server.stop()


def postgres_database() -> AbstractContextManager[str]:
    """A fresh PostgreSQL database ``elicit_rel_<random>`` on the test server, dropped afterwards.

    Connection errors propagate: when ``TEST_POSTGRES_URL`` is set, an unreachable server fails the test.
    """
    assert POSTGRES_URL, "callers skip when TEST_POSTGRES_URL is unset"
    return fresh_postgres_database(POSTGRES_URL, "elicit_rel")


def create_small_study(settings: Settings, **overrides: Any) -> Any:
    """The app tests' small QPME k = 2 study (every phase present) in ``settings``' database."""
    from app_support import SMALL_STUDY

    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as db:
            return create_study(db, {**SMALL_STUDY, **overrides})
    finally:
        engine.dispose()


def choose(metric: Any, query: dict[str, Any]) -> str:
    """The answer of a participant with ``metric``: the option shown on the left is ``first``."""
    first = np.asarray(query["first"]["rates"])
    second = np.asarray(query["second"]["rates"])
    return "first" if metric.prefers(first, second) else "second"


@dataclass
class Acknowledged:
    """What one automated participant saw acknowledged by a server (HTTP 200/201)."""

    tokens: list[str] = field(default_factory=list)
    answers: dict[str, dict[int, str]] = field(default_factory=dict)
    final_states: dict[str, dict[str, Any]] = field(default_factory=dict)
    retries: int = 0
    errors: list[str] = field(default_factory=list)


class RobustParticipant:
    """Completes sessions over the JSON API, retrying a request after any connection error.

    ``base_url`` is called before every attempt, so a participant follows a restarted server. A retried
    answer is the same ``(seq, preferred)``: the server records it once whether or not the first attempt
    was committed before the connection broke.
    """

    def __init__(self, base_url: Callable[[], str], study_id: str, metric: Any) -> None:
        self.base_url = base_url
        self.study_id = study_id
        self.metric = metric
        self.seen = Acknowledged()
        self._client = httpx.Client(timeout=REQUEST_TIMEOUT_S)

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        deadline = time.monotonic() + RETRY_TIMEOUT_S
        while True:
            try:
                return self._client.request(method, self.base_url() + path, json=body)
            except httpx.TransportError:
                self.seen.retries += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def complete_session(self) -> None:
        created = self.request("POST", f"/api/v1/studies/{self.study_id}/sessions", {"consent": True})
        if created.status_code != 201:
            self.seen.errors.append(f"create: {created.status_code} {created.text[:200]}")
            return
        token = created.json()["token"]
        self.seen.tokens.append(token)
        answers = self.seen.answers.setdefault(token, {})
        state = self.request("GET", f"/api/v1/sessions/{token}").json()
        while state["query"] is not None:
            seq = state["query"]["seq"]
            preferred = choose(self.metric, state["query"])
            response = self.request(
                "POST", f"/api/v1/sessions/{token}/answers", {"seq": seq, "preferred": preferred}
            )
            if response.status_code != 200:
                self.seen.errors.append(f"answer {seq}: {response.status_code} {response.text[:200]}")
                return
            answers[seq] = preferred
            state = response.json()
        self.seen.final_states[token] = state

    def run(self, sessions: int, until: threading.Event | None = None) -> None:
        """Complete ``sessions`` sessions, and keep starting new ones until ``until`` is set."""
        try:
            done = 0
            while not self.seen.errors:
                self.complete_session()
                done += 1
                if done >= sessions and (until is None or until.is_set()):
                    break
        except Exception as exc:  # reported by the test, which fails on any error
            self.seen.errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            self._client.close()


def run_participants(
    participants: list[RobustParticipant], sessions: int, until: threading.Event | None = None
) -> list[threading.Thread]:
    threads = [threading.Thread(target=p.run, args=(sessions, until), daemon=True) for p in participants]
    for thread in threads:
        thread.start()
    return threads


class _Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of each ``<script>`` element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._script: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._text)))
            self._script = None


def assert_no_active_content(page: str) -> None:
    """No inline script, no event-handler attribute, no javascript: URL; embedded JSON parses as JSON.

    A payload that escaped from a text field or a JSON block would show up as one of these.
    """
    parser = _Tags()
    parser.feed(page)
    parser.close()
    for tag, attrs in parser.tags:
        handlers = [name for name in attrs if name.startswith("on")]
        assert not handlers, f"<{tag}> carries event handlers {handlers}"
        for name in ("href", "src", "action", "formaction"):
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith("javascript:"), f"<{tag} {name}={value!r}>"
    for attrs, body in parser.scripts:
        if attrs.get("src"):
            assert not body.strip(), "a script with src must be empty"
            continue
        assert attrs.get("type") == "application/json", f"inline script {body[:80]!r}"
        json.loads(body)
