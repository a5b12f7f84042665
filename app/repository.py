"""Typed select/insert helpers; callers pass the SQLAlchemy session and own the transaction."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, select, update
from sqlalchemy.orm import Session, joinedload

from .models import Answer, ElicitationSession, Result, Study

__all__ = [
    "LOG_COLUMNS",
    "add",
    "find_study_by_name",
    "get_result",
    "get_session_by_token_hash",
    "get_study",
    "list_studies",
    "log_entries",
    "log_rows",
    "mark_undone",
    "session_counts",
]


def add(db: Session, obj: object) -> None:
    """Stage a new row (flushed on commit)."""
    db.add(obj)


def get_study(db: Session, study_id: uuid.UUID) -> Study | None:
    return db.get(Study, study_id)


def find_study_by_name(db: Session, name: str) -> Study | None:
    return db.scalars(select(Study).where(Study.name == name).order_by(Study.created_at).limit(1)).first()


def list_studies(db: Session) -> Sequence[Study]:
    return db.scalars(select(Study).order_by(Study.created_at)).all()


def session_counts(db: Session) -> dict[tuple[uuid.UUID, str], int]:
    """Number of sessions per (study, status)."""
    rows = db.execute(
        select(ElicitationSession.study_id, ElicitationSession.status, func.count()).group_by(
            ElicitationSession.study_id, ElicitationSession.status
        )
    ).all()
    return {(study_id, status): count for study_id, status, count in rows}


def get_session_by_token_hash(db: Session, token_hash: str) -> ElicitationSession | None:
    """The session with this token digest, its study loaded in the same query."""
    statement = (
        select(ElicitationSession)
        .options(joinedload(ElicitationSession.study))
        .where(ElicitationSession.token_hash == token_hash)
    )
    return db.scalars(statement).first()


def log_rows(db: Session, session_id: uuid.UUID) -> Sequence[Answer]:
    """The whole log of a session (answers and undos), in sequence order."""
    return db.scalars(select(Answer).where(Answer.session_id == session_id).order_by(Answer.seq)).all()


#: What replaying a session needs from each log row (the large display columns stay in the database).
LOG_COLUMNS = (
    Answer.seq,
    Answer.action,
    Answer.phase,
    Answer.swapped,
    Answer.preferred,
    Answer.elicitor_answer,
    Answer.undoes_seq,
    Answer.created_at,
    Answer.query,
)


def log_entries(db: Session, session_id: uuid.UUID, *, after_seq: int = -1) -> Sequence[Row[Any]]:
    """Light log rows (`LOG_COLUMNS`) with ``seq > after_seq``, in sequence order."""
    statement = (
        select(*LOG_COLUMNS)
        .where(Answer.session_id == session_id, Answer.seq > after_seq)
        .order_by(Answer.seq)
    )
    return db.execute(statement).all()


def mark_undone(db: Session, session_id: uuid.UUID, seq: int, when: datetime) -> None:
    """Mark the answer at ``seq`` as undone (it stays in the log for audit)."""
    db.execute(
        update(Answer).where(Answer.session_id == session_id, Answer.seq == seq).values(undone_at=when)
    )


def get_result(db: Session, session_id: uuid.UUID) -> Result | None:
    return db.scalars(select(Result).where(Result.session_id == session_id)).first()
