"""Elicitor checkpoints: another app instance (a worker) continues from them and ignores any it cannot use."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import METRIC, Participant, make_study, new_session, settle, worker
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app import repository as repo
from app import sessions
from app.codec import decode_metric
from app.main import create_app
from app.models import ElicitationSession, ElicitorCheckpoint, Result
from app.sessions import checkpoints, elicitor_rows, replay_verified
from app.sessions import replay as replay_module
from app.sessions.log import effective_rows
from elicitation import Done

#: A short active session with every phase around it (practice, checks, evaluation pairs).
ACTIVE = {"algorithm": "active_quadratic", "algorithm_params": {"max_queries": 7}}


@pytest.fixture
def active_study(app: Any) -> Any:
    return make_study(app, **ACTIVE)


def _state(client: TestClient, token: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/sessions/{token}")
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _session(app: Any, token: str) -> ElicitationSession:
    with app.state.sessionmaker() as db:
        return db.scalars(
            select(ElicitationSession).where(ElicitationSession.token_hash == sessions.hash_token(token))
        ).one()


def _checkpoint(app: Any, session_id: Any) -> ElicitorCheckpoint | None:
    with app.state.sessionmaker() as db:
        return db.get(ElicitorCheckpoint, session_id)


def _change_checkpoint(app: Any, session_id: Any, **values: Any) -> None:
    with app.state.sessionmaker() as db:
        db.execute(
            update(ElicitorCheckpoint).where(ElicitorCheckpoint.session_id == session_id).values(values)
        )
        db.commit()


def _elicitor_rows(app: Any, session_id: Any) -> list[Any]:
    with app.state.sessionmaker() as db:
        return elicitor_rows(effective_rows(repo.log_entries(db, session_id)))


def _answered(client: TestClient, token: str, count: int) -> dict[str, Any]:
    participant = Participant(METRIC)
    current = _state(client, token)
    for _ in range(count):
        current = participant.answer(client, token, current)
    return current


def test_a_new_worker_continues_from_the_checkpoint_without_replaying(
    settings: Any, app: Any, client: TestClient, active_study: Any
) -> None:
    token = new_session(client, active_study)
    current = _answered(client, token, 5)
    with worker(settings) as (other, fresh):
        assert _state(fresh, token) == current
        assert other.state.session_cache.resumes == {"cache": 0, "checkpoint": 1, "replay": 0}


def test_resuming_from_a_checkpoint_decodes_none_of_the_queries_it_already_absorbed(
    settings: Any, app: Any, client: TestClient, active_study: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long log's stored queries cost more to decode than the checkpoint to restore: a pending session
    reads only those after its checkpoint (checked against the replay); its result reads them all."""
    token = new_session(client, active_study)
    current = _answered(client, token, 5)
    elicited = len(_elicitor_rows(app, _session(app, token).id))
    assert elicited >= 3
    decoded: list[Any] = []
    real = replay_module._stored_query
    monkeypatch.setattr(replay_module, "_stored_query", lambda row: decoded.append(row.seq) or real(row))
    with worker(settings) as (other, fresh):
        assert _state(fresh, token) == current
        assert other.state.session_cache.resumes == {"cache": 0, "checkpoint": 1, "replay": 0}
        assert decoded == []
    rows = _elicitor_rows(app, _session(app, token).id)
    session = _session(app, token)
    with app.state.sessionmaker() as db:
        runtime = app.state.session_cache.runtime_of(db, session.study_id)
        restored = checkpoints.restore_state(db, runtime, session, rows)
    assert restored is not None
    state, at = restored
    assert at == len(rows) and decoded == []
    assert [query.first.tolist() for query, _answer in state.log] == [row.query["first"] for row in rows]
    assert decoded == [row.seq for row in rows]


def test_answers_alternating_between_workers_never_replay_and_end_with_the_replayed_result(
    settings: Any, app: Any, client: TestClient, active_study: Any
) -> None:
    token = new_session(client, active_study)
    participant = Participant(METRIC)
    with worker(settings) as (other, fresh):
        clients = [client, fresh]
        current = _state(client, token)
        turn = 0
        while current["query"] is not None:
            current = participant.answer(clients[turn % 2], token, current)
            turn += 1
            assert _state(clients[turn % 2], token) == current
        for instance in (app, other):
            assert instance.state.session_cache.resumes["replay"] <= 1  # only the new session's first state
        assert other.state.session_cache.resumes["checkpoint"] > 0
    session = _session(app, token)
    with app.state.sessionmaker() as db:
        stored = decode_metric(db.scalars(select(Result).where(Result.session_id == session.id)).one().metric)
        runtime = app.state.session_cache.runtime_of(db, session.study_id)
    rows = _elicitor_rows(app, session.id)
    replayed = replay_verified(lambda: runtime.elicitor(session.seed, session.algorithm_version), rows)
    assert isinstance(replayed, Done)
    assert replayed.result.metric.to_dict() == stored.to_dict()


def test_the_checkpoint_follows_every_elicitor_answer(
    app: Any, client: TestClient, active_study: Any
) -> None:
    token = new_session(client, active_study)
    participant = Participant(METRIC)
    current = _state(client, token)
    session = _session(app, token)
    for _ in range(6):
        current = participant.answer(client, token, current)
        rows = _elicitor_rows(app, session.id)
        saved = _checkpoint(app, session.id)
        assert saved is not None
        assert saved.n_answers == len(rows)
        assert saved.last_seq == (rows[-1].seq if rows else -1)


def test_a_damaged_checkpoint_costs_a_replay_and_is_replaced(
    settings: Any, app: Any, client: TestClient, active_study: Any
) -> None:
    token = new_session(client, active_study)
    current = _answered(client, token, 4)
    session = _session(app, token)
    saved = _checkpoint(app, session.id)
    assert saved is not None
    damaged = saved.state[:-1] + bytes([saved.state[-1] ^ 0xFF])
    _change_checkpoint(app, session.id, state=damaged)
    with worker(settings) as (other, fresh):
        assert _state(fresh, token) == current
        assert other.state.session_cache.resumes == {"cache": 0, "checkpoint": 0, "replay": 1}
    repaired = _checkpoint(app, session.id)
    assert repaired is not None and repaired.state == saved.state
    with worker(settings) as (third, fresh):
        assert _state(fresh, token) == current
        assert third.state.session_cache.resumes["checkpoint"] == 1


def test_a_checkpoint_ahead_of_the_log_after_an_undo_is_not_used(
    settings: Any, app: Any, client: TestClient, active_study: Any
) -> None:
    token = new_session(client, active_study)
    current = _answered(client, token, 5)
    session = _session(app, token)
    before = _checkpoint(app, session.id)
    undone = client.post(f"/api/v1/sessions/{token}/undo", json={"seq": current["query"]["seq"]})
    assert undone.status_code == 200, undone.text
    settle(app)
    after = _checkpoint(app, session.id)
    assert before is not None and after is not None
    rows = _elicitor_rows(app, session.id)
    with worker(settings) as (other, fresh):
        assert _state(fresh, token) == undone.json()
        if before.n_answers > len(rows):  # the undone answer was an elicitor answer
            assert after.n_answers == len(rows)
        assert other.state.session_cache.resumes["replay"] == 0


def test_a_checkpoint_copied_from_another_session_is_not_used(
    settings: Any, app: Any, client: TestClient, active_study: Any
) -> None:
    first, second = new_session(client, active_study), new_session(client, active_study)
    _answered(client, first, 5)
    expected = _answered(client, second, 5)
    source = _checkpoint(app, _session(app, first).id)
    target = _session(app, second).id
    assert source is not None
    _change_checkpoint(
        app,
        target,
        n_answers=source.n_answers,
        last_seq=source.last_seq,
        log_digest=source.log_digest,
        state=source.state,
    )
    with worker(settings) as (other, fresh):
        assert _state(fresh, second) == expected
        assert other.state.session_cache.resumes == {"cache": 0, "checkpoint": 0, "replay": 1}


def test_a_checkpoint_standing_elsewhere_than_its_row_says_is_not_used(
    settings: Any, app: Any, client: TestClient, active_study: Any
) -> None:
    """A checkpoint whose row vouches for five answers but whose state holds three (a stale state under a
    fresh digest) would ask an old question; it is refused and the log replayed."""
    token = new_session(client, active_study)
    _answered(client, token, 3)
    session_id = _session(app, token).id
    stale = _checkpoint(app, session_id)
    current = _answered(client, token, 2)
    fresh_row = _checkpoint(app, session_id)
    assert stale is not None and fresh_row is not None and stale.n_answers < fresh_row.n_answers
    _change_checkpoint(app, session_id, state=stale.state)
    with worker(settings) as (other, fresh):
        assert _state(fresh, token) == current
        assert other.state.session_cache.resumes == {"cache": 0, "checkpoint": 0, "replay": 1}


def test_a_bisection_session_saves_no_checkpoint(app: Any, client: TestClient, study: Any) -> None:
    token = new_session(client, study)
    _answered(client, token, 4)
    assert _checkpoint(app, _session(app, token).id) is None


def test_checkpoint_commits_leave_every_pooled_sqlite_connection_fully_synchronous(
    sqlite_settings: Any,
) -> None:
    """A checkpoint's commit skips the disk flush (synchronous=NORMAL); the answers' commits never do."""
    app = create_app(sqlite_settings)
    try:
        with TestClient(app) as client:
            study = make_study(app, **ACTIVE)
            token = new_session(client, study)
            _answered(client, token, 4)
            assert _checkpoint(app, _session(app, token).id) is not None
            pool = app.state.engine.pool
            connections = [app.state.engine.connect() for _ in range(max(pool.checkedin(), 1))]
            try:
                levels = {c.exec_driver_sql("PRAGMA synchronous").scalar() for c in connections}
            finally:
                for connection in connections:
                    connection.close()
        assert levels == {2}  # FULL, the configured level
    finally:
        app.state.engine.dispose()
