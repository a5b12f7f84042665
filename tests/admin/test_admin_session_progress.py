"""The dashboard shows each session's progress against its own expected total, as its participant sees it.

A session this process served at its current point costs nothing; one it did not (another worker, a
restart) is replayed within a time budget, and the study's typical session stands in beyond it.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from admin_support import STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient
from test_admin_active import TRUTH

from app.admin import monitor
from app.models import ElicitationSession, Study

#: An active elicitor with a generous budget: its stopping rule, not the budget, decides a session's length.
ACTIVE_STUDY: dict[str, Any] = {
    **STUDY_CONFIG,
    "name": "Active progress",
    "algorithm": "active_quadratic",
    "algorithm_params": {"max_queries": 30, "beta": 200.0, "min_cell_gap": 2.0},
    "practice_queries": 1,
    "checks": True,
    "dominance_checks": 1,
    "repeat_checks": 1,
    "evaluation_queries": 3,
}
#: Practice, the elicitor's budget, checks and evaluation pairs: the study's typical (largest) session.
BUDGET_TOTAL = 1 + 30 + 2 + 3


def _open_study(client: TestClient, accounts: dict[str, Any]) -> str:
    headers = bearer(accounts["alice"]["token"])
    created = client.post("/api/v1/studies", json=ACTIVE_STUDY, headers=headers)
    assert created.status_code == 201, created.text
    study_id: str = created.json()["id"]
    opened = client.patch(f"/api/v1/studies/{study_id}", json={"status": "open"}, headers=headers)
    assert opened.status_code == 200
    return study_id


def _answering(client: TestClient, study_id: str, answers: int) -> tuple[str, dict[str, Any]]:
    """A session with ``answers`` answers; its token and its state as its participant last saw it."""
    token: str = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    participant = Participant(TRUTH)
    state = client.get(f"/api/v1/sessions/{token}").json()
    for _ in range(answers):
        state = participant.answer(client, token, state)
    return token, state


def _rows(client: TestClient, study_id: str) -> list[dict[str, Any]]:
    body = client.get(f"/admin/studies/{study_id}/monitor.json").json()
    rows: list[dict[str, Any]] = body["sessions"]
    return rows


def test_a_session_is_shown_against_its_own_expected_total(
    client: TestClient, accounts: dict[str, Any], app: Any
) -> None:
    study_id = _open_study(client, accounts)
    _token, state = _answering(client, study_id, 6)
    own_total = state["progress"]["estimated_total"]
    assert own_total == BUDGET_TOTAL  # the budget stands until the elicitor stops (as its participant sees)
    login(client, "alice@example.org")
    [row] = _rows(client, study_id)
    assert (row["answered"], row["estimated_total"], row["own_estimate"]) == (6, own_total, True)
    html = client.get(f"/admin/studies/{study_id}/monitor").text
    assert f"6 of about {own_total} answers · stage: questions" in html and "(typical)" not in html
    # Another worker (or a restart) never served it: the dashboard replays the log once and gets the same.
    app.state.session_cache.clear()
    [row] = _rows(client, study_id)
    assert (row["estimated_total"], row["own_estimate"]) == (own_total, True)


def test_the_replayed_elicitor_spares_the_participant_a_replay(
    client: TestClient, accounts: dict[str, Any], app: Any
) -> None:
    study_id = _open_study(client, accounts)
    token, state = _answering(client, study_id, 3)
    cache = app.state.session_cache
    cache.clear()
    login(client, "alice@example.org")
    _rows(client, study_id)
    hits = cache.hits
    state = Participant(TRUTH).answer(client, token, state)
    assert cache.hits > hits and state["progress"]["answered"] == 4
    [row] = _rows(client, study_id)
    assert (row["answered"], row["estimated_total"]) == (4, state["progress"]["estimated_total"])


def test_beyond_the_replay_budget_the_typical_session_stands_in(
    client: TestClient, accounts: dict[str, Any], app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    study_id = _open_study(client, accounts)
    _answering(client, study_id, 2)
    monkeypatch.setattr(monitor, "PROGRESS_REPLAY_BUDGET_S", 0.0)
    app.state.session_cache.clear()
    login(client, "alice@example.org")
    [row] = _rows(client, study_id)
    assert (row["estimated_total"], row["own_estimate"], row["total_words"]) == (
        BUDGET_TOTAL,
        False,
        "at most",
    )
    html = client.get(f"/admin/studies/{study_id}/monitor.json").json()["html"]["sessions"]
    assert f"2 of at most {BUDGET_TOTAL}" in html and "(typical)" in html


class _Clock:
    """A monotonic clock that advances one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def test_the_most_recently_active_sessions_are_replayed_first(
    client: TestClient, accounts: dict[str, Any], app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    study_id = _open_study(client, accounts)
    oldest, state = _answering(client, study_id, 1)
    _answering(client, study_id, 1)
    _answering(client, study_id, 1)
    Participant(TRUTH).answer(client, oldest, state)  # the oldest session answered last
    cache = app.state.session_cache
    cache.clear()
    # The budget runs out after the first replay (the clock moves a second per reading).
    monkeypatch.setattr(monitor, "time", _Clock())
    monkeypatch.setattr(monitor, "PROGRESS_REPLAY_BUDGET_S", 1.5)
    with app.state.sessionmaker() as db:
        study = db.get(Study, uuid.UUID(study_id))
        assert study is not None
        dashboard = monitor.study_dashboard(db, cache, study)
        sessions = {str(item.id): item for item in db.query(ElicitationSession).filter_by(study_id=study.id)}
    own = [row for row in dashboard.sessions if row["own_estimate"]]
    assert len(own) == 1 and len(dashboard.sessions) == 3
    assert own[0]["answered"] == 2 and dashboard.sessions[-1] is own[0]  # listed last: created first
    assert sessions[own[0]["session_id"]].created_at == min(item.created_at for item in sessions.values())
