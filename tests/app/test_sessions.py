"""Session-service behaviour that HTTP tests cannot force: races on the same seq, cache validation."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import new_session
from fastapi.testclient import TestClient
from sqlalchemy import select

from app import sessions
from app.errors import ConflictError
from app.models import Answer, AnswerChannel
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
