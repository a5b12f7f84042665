"""What the repository runs on the DB-API cursor writes and reads what SQLAlchemy would, on every database."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import new_session
from fastapi.testclient import TestClient
from sqlalchemy import insert, text
from sqlalchemy.exc import IntegrityError

from app import repository as repo
from app.models import Answer, ElicitationSession, utcnow
from app.sessions import create_session
from app.sessions.tokens import hash_token, load_session


def _values(session_id: Any, seq: int) -> dict[str, Any]:
    """An answer row with a value of every kind the log stores (UUID, JSON, booleans, NULLs, a timestamp)."""
    return {
        "session_id": session_id,
        "seq": seq,
        "action": "answer",
        "phase": "elicitation",
        "phase_index": 2,
        "query": {"first": [0.25, 0.5], "second": [0.1, 1e-17], "kind": "pair", "nested": {"ok": True}},
        "shown": {"left": {"confusion": [[1.5, 2], [3, 4]]}, "right": None},
        "swapped": True,
        "preferred": "second",
        "elicitor_answer": False,
        "tie_break": None,
        "check": None,
        "time_on_page_ms": 1234,
        "hidden_ms": None,
        "server_elapsed_ms": 0,
        "channel": "api",
        "undoes_seq": None,
        "created_at": utcnow(),
    }


def _stored(db: Any, seq: int) -> dict[str, Any]:
    """The row at ``seq`` as the database driver returns it (no SQLAlchemy type conversion)."""
    row = (
        db.connection().execute(text("SELECT * FROM answer WHERE seq = :seq"), {"seq": seq}).mappings().one()
    )
    return {name: value for name, value in row.items() if name not in {"id", "seq"}}


def test_an_answer_is_stored_as_the_core_insert_stores_it(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    with app.state.sessionmaker() as db:
        session_id = load_session(db, token).id
        values = _values(session_id, 0)
        repo.insert_answer(db, values)
        db.connection().execute(insert(Answer), {**values, "seq": 1})
        db.commit()
        assert _stored(db, 0) == _stored(db, 1)
        # and SQLAlchemy reads it back as it was given
        entries = repo.log_entries(db, session_id)
        assert tuple(entries[0])[1:] == tuple(entries[1])[1:]  # all but seq
        assert entries[0].query == values["query"]


def test_an_answer_at_a_recorded_seq_raises_sqlalchemys_integrity_error(
    client: TestClient, app: Any, study: Any
) -> None:
    token = new_session(client, study)
    with app.state.sessionmaker() as db:
        session_id = load_session(db, token).id
        repo.insert_answer(db, _values(session_id, 0))
        db.commit()
        with pytest.raises(IntegrityError):
            repo.insert_answer(db, _values(session_id, 0))
        db.rollback()
        repo.insert_answer(db, _values(session_id, 1))  # the transaction is usable again
        db.commit()
        assert [entry.seq for entry in repo.log_entries(db, session_id)] == [0, 1]


def test_an_answer_without_a_defaulted_column_gets_its_default(
    client: TestClient, app: Any, study: Any
) -> None:
    token = new_session(client, study)
    with app.state.sessionmaker() as db:
        session_id = load_session(db, token).id
        values = _values(session_id, 0)
        del values["action"], values["created_at"]
        repo.insert_answer(db, values)
        db.commit()
        (entry,) = repo.log_entries(db, session_id)
        assert entry.action == "answer"
        assert entry.created_at is not None


@pytest.mark.parametrize("consented", [False, True])
def test_a_session_record_holds_what_the_orm_reads(app: Any, study: Any, consented: bool) -> None:
    with app.state.sessionmaker() as db:
        session, token = create_session(
            db,
            app.state.session_cache,
            study.id,
            participant_code="P-7",
            panel={"source": "panel ä"},
            consented=consented,
            pilot=True,
        )
    with app.state.sessionmaker() as db:
        by_token = repo.session_by_token_hash(db, hash_token(token))
        by_id = repo.session_by_id(db, session.id)
        stored = db.get(ElicitationSession, session.id)
        assert by_token is not None and by_id is not None and stored is not None
        columns = [column.key for column in ElicitationSession.__table__.columns]
        expected = {name: getattr(stored, name) for name in columns}
        assert {name: getattr(by_token, name) for name in columns} == expected
        assert {name: getattr(by_id, name) for name in columns} == expected
        assert by_token.last_seq is None
        assert repo.session_by_token_hash(db, hash_token(token)[::-1]) is None
