"""Helpers shared by the app tests: the small test study, an automated participant, a live server."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import uvicorn
from fastapi.testclient import TestClient

from app.main import create_app
from app.sessions import create_study
from elicitation import QuadraticMetric

#: The known metric of the automated participant (a quadratic with diminishing returns).
METRIC = QuadraticMetric(np.array([0.3, 0.8]), np.array([[-0.3, 0.0], [0.0, -0.2]]))

#: A small, fast study: QPME on two classes with a coarse tolerance; every phase present.
SMALL_STUDY: dict[str, Any] = {
    "name": "Test study <b>bold</b>",
    "task": "Decide whether a tumour is benign or malignant.",
    "class_names": ["benign", "malignant"],
    "population": "patients",
    "algorithm": "qpme",
    "algorithm_params": {"epsilon": 0.2},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.65, 0.35]},
    "practice_queries": 1,
    "checks": True,
    "dominance_checks": 1,
    "repeat_checks": 1,
    "evaluation_queries": 3,
    "redirect_url": "https://panel.example.org/done?study=1",
}


def make_study(app: Any, **overrides: Any) -> Any:
    """Create a study (the small one, with ``overrides``) in ``app``'s database."""
    with app.state.sessionmaker() as db:
        return create_study(db, {**SMALL_STUDY, **overrides})


def new_session(client: httpx.Client, study: Any, *, consent: bool = True) -> str:
    response = client.post(f"/api/v1/studies/{study.id}/sessions", json={"consent": consent})
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


def settle(app: Any) -> None:
    """Let ``app``'s background finish what its requests left (checkpoints' saves, speculative next
    states), as it does while a participant thinks."""
    speculator = app.state.session_cache.speculator
    if speculator is not None:
        assert speculator.wait_until_idle(), "the background did not finish within its timeout"


class Participant:
    """An automated participant with a known metric answering over the JSON API; it thinks after each
    answer (`settle`) when its client is an in-process app's."""

    def __init__(self, metric: Any) -> None:
        self.metric = metric

    def choose(self, query: dict[str, Any]) -> str:
        first = np.asarray(query["first"]["rates"])
        second = np.asarray(query["second"]["rates"])
        return "first" if self.metric.prefers(first, second) else "second"

    def answer(self, client: httpx.Client, token: str, state: dict[str, Any]) -> dict[str, Any]:
        query = state["query"]
        response = client.post(
            f"/api/v1/sessions/{token}/answers",
            json={
                "seq": query["seq"],
                "preferred": self.choose(query),
                "time_on_page_ms": 1500,
                "hidden_ms": 0,
            },
        )
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        app = getattr(client, "app", None)
        if app is not None and hasattr(app, "state"):
            settle(app)
        return result

    def finish(self, client: httpx.Client, token: str) -> dict[str, Any]:
        state = client.get(f"/api/v1/sessions/{token}").json()
        for _ in range(500):
            if state["query"] is None:
                return state
            state = self.answer(client, token, state)
        raise AssertionError("session did not finish within 500 answers")


@contextlib.contextmanager
def worker(settings: Any) -> Iterator[tuple[Any, TestClient]]:
    """An app of its own on ``settings``' database and its test client: a worker with its own cache."""
    app = create_app(settings)
    try:
        with TestClient(app) as client:
            yield app, client
    finally:
        app.state.engine.dispose()


@contextlib.contextmanager
def serving(app: Any, http: Any) -> Iterator[int]:
    """``app`` served by uvicorn (protocol class ``http``) in a thread on a free local port; yields it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, http=http, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(500):
        if server.started:
            break
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
