"""Speculative next questions: a session served with them asks exactly the questions, and ends with exactly
the result, of one served without, whatever happens between its answers."""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from app_support import METRIC, Participant, settle, worker
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.cli.web import DEMO_STUDY
from app.models import ElicitorCheckpoint
from app.server import RequestCounter
from app.sessions import create_study
from app.settings import Settings
from app.study_config import parse_study_config
from benchmarks import answer_cpu

#: Every session of these tests starts from this seed, so that runs with and without speculation compare.
SESSION_SEED = 8_172_635_401


def _shorter(config: dict[str, Any]) -> dict[str, Any]:
    """One of answer_cpu's larger studies with ten elicitor questions."""
    return {**config, "algorithm_params": {"max_queries": 10}}


STUDIES = {
    "demo": DEMO_STUDY,
    "quadratic5": _shorter(answer_cpu.STUDIES["quadratic5"][0]),
    "fair3": _shorter(answer_cpu.STUDIES["fair3"][0]),
}


class Person(Participant):
    """Prefers by a fixed random linear metric over the rates: not the elicitors' prior, and it fits every
    study's rate shape (one group's rates or two)."""

    def __init__(self, seed: int) -> None:
        super().__init__(METRIC)
        self.rng = np.random.default_rng(seed)
        self.weights: np.ndarray | None = None

    def choose(self, query: dict[str, Any]) -> str:
        first = np.asarray(query["first"]["rates"], dtype=float).ravel()
        second = np.asarray(query["second"]["rates"], dtype=float).ravel()
        if self.weights is None:
            self.weights = self.rng.uniform(0.2, 1.0, first.size)
        return "first" if self.weights @ first >= self.weights @ second else "second"


@pytest.fixture
def template(
    sqlite_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., Settings]:
    """Settings for a fresh SQLite database per call (speculation on unless said otherwise); every new
    session gets `SESSION_SEED`."""
    monkeypatch.setattr(secrets, "randbits", lambda _bits: SESSION_SEED)
    made = iter(range(1000))

    def settings(**values: Any) -> Settings:
        path = tmp_path / f"db-{next(made)}.sqlite"
        shutil.copy(sqlite_template, path)
        return Settings(database_url=f"sqlite:///{path}", **values)

    return settings


def _study(app: Any, name: str) -> str:
    with app.state.sessionmaker() as db:
        return str(create_study(db, parse_study_config(STUDIES[name])).id)


def _join(client: TestClient, study_id: str) -> str:
    created = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
    assert created.status_code == 201, created.text
    token: str = created.json()["token"]
    return token


def _without_codes(state: dict[str, Any]) -> dict[str, Any]:
    """A state as the participant sees it, less the random completion code of a finished session."""
    result = state.get("result")
    if isinstance(result, dict):
        state = {**state, "result": {k: v for k, v in result.items() if k != "completion_code"}}
    return state


def _session(
    clients: list[TestClient],
    token: str,
    person: Person,
    *,
    undo_at: tuple[int, ...] = (),
    think: bool = True,
) -> list[dict[str, Any]]:
    """Answer the whole session, the n-th request through ``clients[n % len(clients)]``, undoing the last
    answer after the answers numbered in ``undo_at``; every state the participant saw, in order."""
    seen = [_without_codes(clients[0].get(f"/api/v1/sessions/{token}").json())]
    if think:
        settle(clients[0].app)
    turn = 0
    while seen[-1]["query"] is not None:
        client = clients[turn % len(clients)]
        state = seen[-1]
        if think:
            state = person.answer(client, token, state)
        else:
            query = state["query"]
            body = {"seq": query["seq"], "preferred": person.choose(query)}
            response = client.post(f"/api/v1/sessions/{token}/answers", json=body)
            assert response.status_code == 200, response.text
            state = response.json()
        turn += 1
        seen.append(_without_codes(state))
        if turn in undo_at and state["query"] is not None:
            undone = client.post(f"/api/v1/sessions/{token}/undo", json={"seq": state["query"]["seq"]})
            assert undone.status_code == 200, undone.text
            seen.append(_without_codes(undone.json()))
        assert turn < 300, "the session did not finish"
    return seen


def _reference(template: Callable[..., Settings], name: str, **options: Any) -> list[dict[str, Any]]:
    """The session served without speculation (every answer computes its own next state)."""
    with worker(template(speculative_questions=False)) as (app, client):
        assert app.state.session_cache.speculator is None
        token = _join(client, _study(app, name))
        return _session([client], token, Person(1), **options)


@pytest.mark.parametrize("name", list(STUDIES))
def test_a_session_asks_and_ends_as_without_speculation(template: Callable[..., Settings], name: str) -> None:
    expected = _reference(template, name, undo_at=(3, 7))
    with worker(template()) as (app, client):
        token = _join(client, _study(app, name))
        seen = _session([client], token, Person(1), undo_at=(3, 7))
        cache = app.state.session_cache
        assert cache.branches_taken > 0
    assert seen == expected
    assert expected[-1]["status"] == "done" and expected[-1]["result"] is not None


def test_answers_alternating_between_two_workers_end_as_without_speculation(
    template: Callable[..., Settings],
) -> None:
    expected = _reference(template, "quadratic5")
    settings = template()
    with worker(settings) as (app, client), worker(settings) as (other, second):
        token = _join(client, _study(app, "quadratic5"))
        seen = _session([client, second], token, Person(1))
        # After the first answer, each worker's branches were computed for a state the other then moved past.
        assert app.state.session_cache.branches_taken == 1
        assert other.state.session_cache.branches_taken == 0
    assert seen == expected


def test_sessions_evicting_each_other_from_a_one_session_cache_end_as_without_speculation(
    template: Callable[..., Settings],
) -> None:
    expected = _reference(template, "demo")
    with worker(template(session_cache_size=1)) as (app, client):
        study_id = _study(app, "demo")
        tokens = [_join(client, study_id), _join(client, study_id)]
        states = {token: [client.get(f"/api/v1/sessions/{token}").json()] for token in tokens}
        people = {token: Person(1) for token in tokens}
        while any(states[token][-1]["query"] is not None for token in tokens):
            for token in tokens:
                if states[token][-1]["query"] is not None:
                    states[token].append(people[token].answer(client, token, states[token][-1]))
        # The other session's requests evicted them, but perhaps at the last answer (the other had finished).
        assert app.state.session_cache.branches_taken <= 1
    for token in tokens:
        assert [_without_codes(state) for state in states[token]] == expected


def test_answers_faster_than_the_background_end_as_without_speculation(
    template: Callable[..., Settings],
) -> None:
    expected = _reference(template, "demo", think=False)
    with worker(template()) as (app, client):
        token = _join(client, _study(app, "demo"))
        seen = _session([client], token, Person(1), think=False)
    assert seen == expected


def test_a_busy_server_computes_no_branch_and_its_requests_never_wait(
    template: Callable[..., Settings],
) -> None:
    """While a request is in flight the background starts nothing; requests go on (they take the ordinary
    path) and the background catches up once the server is idle."""
    expected = _reference(template, "fair3")
    with worker(template()) as (app, client):
        speculator = app.state.session_cache.speculator
        busy = [True]
        speculator.busy = lambda _within: busy[0]
        token = _join(client, _study(app, "fair3"))
        seen = _session([client], token, Person(1), think=False)
        time.sleep(0.05)
        assert speculator.branches_computed == 0
        assert app.state.session_cache.branches_taken == 0
        busy[0] = False
        assert speculator.wait_until_idle()
    assert seen == expected


def test_a_server_never_idle_still_saves_every_sessions_latest_checkpoint(
    template: Callable[..., Settings],
) -> None:
    """Branches wait for a quiet server, saves do not wait behind them: without this a worker that was
    never idle kept no checkpoint after a session's first answers, and a restart replayed whole logs."""
    settings = template()
    with worker(settings) as (app, client):
        speculator = app.state.session_cache.speculator
        speculator.busy = lambda _within: True
        study_id = _study(app, "quadratic5")
        tokens = [_join(client, study_id) for _ in range(2)]
        states = {token: client.get(f"/api/v1/sessions/{token}").json() for token in tokens}
        people = {token: Person(index) for index, token in enumerate(tokens)}
        for _ in range(3):
            for token in tokens:
                query = states[token]["query"]
                body = {"seq": query["seq"], "preferred": people[token].choose(query)}
                states[token] = client.post(f"/api/v1/sessions/{token}/answers", json=body).json()
        deadline = time.monotonic() + 10.0
        while True:
            with app.state.sessionmaker() as db:
                saved = sorted(row.n_answers for row in db.scalars(select(ElicitorCheckpoint)))
            if saved == [3, 3] or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert saved == [3, 3]
        assert speculator.branches_computed == 0
    with worker(settings) as (other, fresh):
        for token in tokens:
            assert fresh.get(f"/api/v1/sessions/{token}").json() == states[token]
        assert other.state.session_cache.resumes == {"cache": 0, "checkpoint": 2, "replay": 0}


def test_the_taken_branch_is_saved_as_the_checkpoint_after_the_response(
    template: Callable[..., Settings],
) -> None:
    settings = template()
    with worker(settings) as (app, client):
        token = _join(client, _study(app, "quadratic5"))
        person = Person(1)
        state = client.get(f"/api/v1/sessions/{token}").json()
        settle(app)
        for _ in range(3):
            state = person.answer(client, token, state)
        assert app.state.session_cache.branches_taken == 3
        with app.state.sessionmaker() as db:
            saved = db.scalars(select(ElicitorCheckpoint)).one()
        assert saved.n_answers == 3
    with worker(settings) as (other, fresh):
        assert fresh.get(f"/api/v1/sessions/{token}").json() == state
        assert other.state.session_cache.resumes == {"cache": 0, "checkpoint": 1, "replay": 0}


def test_metrics_count_answers_computed_ahead_and_in_their_request(template: Callable[..., Settings]) -> None:
    with worker(template(metrics_token="scrape-secret")) as (app, client):
        token = _join(client, _study(app, "quadratic5"))
        person = Person(1)
        state = client.get(f"/api/v1/sessions/{token}").json()
        settle(app)
        for _ in range(2):
            state = person.answer(client, token, state)  # the participant thinks: computed ahead
        app.state.session_cache.speculator.busy = lambda _within: True  # from now on a server never idle
        for _ in range(2):  # the first takes what was computed before; the second finds nothing ahead
            answered = client.post(
                f"/api/v1/sessions/{token}/answers",
                json={"seq": state["query"]["seq"], "preferred": person.choose(state["query"])},
            )
            state = answered.raise_for_status().json()
        scraped = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"}).text
    assert 'elicit_active_answers_total{computed="ahead"} 3.0' in scraped
    assert 'elicit_active_answers_total{computed="in_request"} 1.0' in scraped


def test_the_request_counter_is_busy_while_serving_and_for_a_quiet_time_after() -> None:
    counter = RequestCounter()
    assert not counter.busy(0.0)
    counter.enter()
    counter.enter()
    counter.leave()
    assert counter.busy(0.0)
    counter.leave()
    assert not counter.busy(0.0)
    assert counter.busy(60.0)  # the last request ended less than a minute ago
