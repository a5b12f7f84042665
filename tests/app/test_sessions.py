"""Session-service behaviour that HTTP tests cannot force: races on the same seq, cache validation."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import new_session
from fastapi.testclient import TestClient
from sqlalchemy import select

from app import repository, sessions
from app.errors import ConflictError
from app.models import Answer, AnswerChannel, ElicitationSession
from app.sessions import service


def rows(app: Any) -> list[Answer]:
    with app.state.sessionmaker() as db:
        return list(db.scalars(select(Answer).order_by(Answer.seq)).all())


@pytest.mark.parametrize(
    ("mine", "theirs", "conflict"), [("first", "first", False), ("first", "second", True)]
)
def test_a_concurrent_answer_to_the_same_seq_is_settled_by_the_unique_constraint(
    client: TestClient,
    app: Any,
    study: Any,
    monkeypatch: pytest.MonkeyPatch,
    mine: str,
    theirs: str,
    conflict: bool,
) -> None:
    token = new_session(client, study)
    original = service._answer_values
    raced = False

    def racing_answer_values(*args: Any, **kwargs: Any) -> dict[str, Any]:
        nonlocal raced
        if not raced:
            raced = True  # another tab commits the same seq between our read and our insert
            with app.state.sessionmaker() as other:
                sessions.submit_answer(
                    other, sessions.SessionCache(), token, seq=0, preferred=theirs, channel=AnswerChannel.API
                )
        return original(*args, **kwargs)

    monkeypatch.setattr(service, "_answer_values", racing_answer_values)
    with app.state.sessionmaker() as db:
        if conflict:
            with pytest.raises(ConflictError) as exc:
                sessions.submit_answer(
                    db, app.state.session_cache, token, seq=0, preferred=mine, channel=AnswerChannel.API
                )
            assert exc.value.code == "already_answered"
        else:
            view = sessions.submit_answer(
                db, app.state.session_cache, token, seq=0, preferred=mine, channel=AnswerChannel.API
            )
            assert view.answered == 1
    assert [(row.seq, row.preferred) for row in rows(app)] == [(0, theirs)]


def test_rows_written_by_another_worker_are_seen_despite_the_cache(
    client: TestClient, app: Any, study: Any
) -> None:
    token = new_session(client, study)
    first = client.post(f"/api/v1/sessions/{token}/answers", json={"seq": 0, "preferred": "first"}).json()
    # another worker (its own cache) answers the next question
    with app.state.sessionmaker() as other:
        elsewhere = sessions.submit_answer(
            other,
            sessions.SessionCache(),
            token,
            seq=first["query"]["seq"],
            preferred="second",
            channel=AnswerChannel.API,
        )
    here = client.get(f"/api/v1/sessions/{token}").json()
    assert here["progress"]["answered"] == 2
    assert here == elsewhere.to_api()


def test_an_answer_computes_the_plan_step_once_and_shows_what_a_fresh_process_shows(
    client: TestClient, app: Any, study: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.plan import SessionPlan

    token = new_session(client, study)
    state = client.get(f"/api/v1/sessions/{token}").json()
    original = SessionPlan.next_step
    calls = 0

    def counted(self: SessionPlan, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(SessionPlan, "next_step", counted)
    answered = 0
    while state["query"] is not None and answered < 8:
        calls = 0
        body = {"seq": state["query"]["seq"], "preferred": "first"}
        state = client.post(f"/api/v1/sessions/{token}/answers", json=body).json()
        answered += 1
        # The step answered was noted by the request that showed it; only the next one is computed.
        assert calls == 1
        with app.state.sessionmaker() as fresh:
            assert sessions.get_view(fresh, sessions.SessionCache(), token).to_api() == state


def test_a_noted_step_is_not_shown_under_another_configuration(
    client: TestClient, app: Any, study: Any
) -> None:
    token = new_session(client, study)
    client.get(f"/api/v1/sessions/{token}")
    cache = app.state.session_cache
    with app.state.sessionmaker() as db:
        session = sessions.tokens.load_session(db, token)
        runtime = cache.runtime_of(db, session.study_id)
        assert cache.step_at(session.id, runtime, 0) is not None
        cache.forget_study(session.study_id)
        rebuilt = cache.runtime_of(db, session.study_id)
    assert rebuilt is not runtime
    assert cache.step_at(session.id, rebuilt, 0) is None
    assert cache.step_at(session.id, runtime, 1) is None


def test_a_session_is_read_as_a_record_of_its_row_and_of_where_its_log_ends(
    client: TestClient, app: Any, study: Any
) -> None:
    token = new_session(client, study)
    with app.state.sessionmaker() as db:
        assert sessions.tokens.load_session(db, token).last_seq is None
    state = client.get(f"/api/v1/sessions/{token}").json()
    for _ in range(2):
        body = {"seq": state["query"]["seq"], "preferred": "first"}
        state = client.post(f"/api/v1/sessions/{token}/answers", json=body).json()
    with app.state.sessionmaker() as db:
        record = sessions.tokens.load_session(db, token)
        stored = db.get(ElicitationSession, record.id)
        assert stored is not None
        columns = [column.key for column in ElicitationSession.__table__.columns]
        assert {name: getattr(record, name) for name in columns} == {
            name: getattr(stored, name) for name in columns
        }
        assert record.last_seq == 1
        assert record.study is stored.study


def test_an_answer_reads_the_log_only_when_it_grew_beyond_the_cached_rows(
    client: TestClient, app: Any, study: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = new_session(client, study)
    state = client.get(f"/api/v1/sessions/{token}").json()
    original = repository.log_entries
    reads: list[int] = []

    def counted(*args: Any, after_seq: int = -1) -> Any:
        reads.append(after_seq)
        return original(*args, after_seq=after_seq)

    monkeypatch.setattr(repository, "log_entries", counted)
    for _ in range(3):
        body = {"seq": state["query"]["seq"], "preferred": "first"}
        state = client.post(f"/api/v1/sessions/{token}/answers", json=body).json()
    assert reads == []  # this process wrote every row it has cached
    with app.state.sessionmaker() as other:  # another worker answers the next question
        elsewhere = sessions.submit_answer(
            other, sessions.SessionCache(), token, seq=3, preferred="second", channel=AnswerChannel.API
        )
    reads.clear()
    assert client.get(f"/api/v1/sessions/{token}").json() == elsewhere.to_api()
    assert reads == [2]  # only the row beyond the cached ones
