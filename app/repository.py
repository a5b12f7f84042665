"""Typed select/insert helpers; callers pass the SQLAlchemy session and own the transaction."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from .db import relax_durability
from .models import (
    Answer,
    ElicitationSession,
    ElicitorCheckpoint,
    LogAction,
    Result,
    SessionLink,
    Study,
    StudyControl,
    StudyStatus,
)

__all__ = [
    "LOG_COLUMNS",
    "LogEntry",
    "SessionRecord",
    "add",
    "count_answers",
    "find_session_by_code",
    "find_study_by_name",
    "get_checkpoint",
    "get_result",
    "get_session_link",
    "get_study",
    "insert_answer",
    "list_studies",
    "log_entries",
    "log_rows",
    "mark_undone",
    "save_checkpoint",
    "session_by_id",
    "session_by_token_hash",
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


def open_studies(db: Session, limit: int) -> Sequence[Study]:
    """The ``limit`` newest studies taking participants (open, or made before the back office's control)."""
    statement = (
        select(Study)
        .outerjoin(StudyControl, StudyControl.study_id == Study.id)
        .where((StudyControl.status == StudyStatus.OPEN.value) | StudyControl.study_id.is_(None))
        .order_by(Study.created_at.desc())
        .limit(limit)
    )
    return db.scalars(statement).all()


def session_counts(db: Session) -> dict[tuple[uuid.UUID, str], int]:
    """Number of sessions per (study, status)."""
    rows = db.execute(
        select(ElicitationSession.study_id, ElicitationSession.status, func.count()).group_by(
            ElicitationSession.study_id, ElicitationSession.status
        )
    ).all()
    return {(study_id, status): count for study_id, status, count in rows}


def count_answers(db: Session) -> int:
    """Answers stored so far, in every study (undo rows not counted; undone answers stay in the log)."""
    return (
        db.scalar(select(func.count()).select_from(Answer).where(Answer.action == LogAction.ANSWER.value))
        or 0
    )


@dataclass(frozen=True)
class _DriverStatement:
    """A Core statement compiled for one dialect, with SQLAlchemy's own conversion of each value going in
    (by parameter name) and of each column coming out."""

    sql: str
    #: The parameters' names in the SQL's order (positional paramstyles), else None (named ones).
    order: tuple[str, ...] | None
    binds: tuple[tuple[str, Any], ...]
    results: tuple[Any, ...]

    def parameters(self, values: dict[str, Any]) -> Any:
        converted = dict(values)
        for name, convert in self.binds:
            converted[name] = convert(converted[name])
        return converted if self.order is None else tuple(converted[name] for name in self.order)

    def row(self, raw: Sequence[Any]) -> tuple[Any, ...]:
        return tuple(
            value if convert is None or value is None else convert(value)
            for convert, value in zip(self.results, raw, strict=True)
        )


@functools.lru_cache(maxsize=32)
def _driver_statement(dialect: Dialect, statement: Any, names: tuple[str, ...]) -> _DriverStatement | None:
    """``statement`` with the parameters ``names`` compiled for ``dialect``; None when SQLAlchemy would
    add values of its own (an insert's column default), which only its execution supplies."""
    compiled = statement.compile(dialect=dialect, column_keys=list(names))
    if set(compiled.binds) != set(names):
        return None
    binds = []
    for name in names:
        convert = compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect)
        if convert is not None:
            binds.append((name, convert))
    selected = statement.selected_columns if statement.is_select else ()
    results = tuple(column.type.dialect_impl(dialect).result_processor(dialect, None) for column in selected)
    order = tuple(compiled.positiontup or ()) if dialect.positional else None
    return _DriverStatement(compiled.string, order, tuple(binds), results)


def _driver_run(
    db: Session, statement: Any, values: dict[str, Any], *, fetch: bool
) -> tuple[Any, ...] | None:
    """Run a prebuilt Core ``statement`` with ``values`` on the transaction's DB-API cursor, as SQLAlchemy
    compiles and converts it, and return its first row if ``fetch``: on the participant's path Core's
    execution around a one-row statement cost as much as the statement. A DB-API error is raised as
    SQLAlchemy's (`IntegrityError` for a seq already recorded); a statement SQLAlchemy would add values to
    runs through Core."""
    connection = db.connection()
    dialect = connection.dialect
    compiled = _driver_statement(dialect, statement, tuple(values))
    if compiled is None:
        result = connection.execute(statement, values)
        return result.first() if fetch else None
    parameters = compiled.parameters(values)
    cursor = connection.connection.cursor()
    try:
        cursor.execute(compiled.sql, parameters)
        raw = cursor.fetchone() if fetch else None
    except dialect.loaded_dbapi.Error as exc:
        raise DBAPIError.instance(
            compiled.sql, parameters, exc, dialect.loaded_dbapi.Error, dialect=dialect
        ) from exc
    finally:
        cursor.close()
    return None if raw is None else compiled.row(raw)


@dataclass(frozen=True, slots=True, eq=False)
class SessionRecord:
    """A participant session's row as a request reads it, read-only, and where its log ended then.

    Read on the DB-API cursor (`_driver_run`): the ORM's per-object work, and Core's execution, cost more
    than the query on every participant request. A request that changes the session loads the
    `ElicitationSession` itself.
    """

    id: uuid.UUID
    study_id: uuid.UUID
    token_hash: str
    participant_code: str | None
    seed: int
    algorithm: str
    algorithm_version: str
    status: str
    completion_code: str | None
    panel: dict[str, str] | None
    created_at: datetime
    consented_at: datetime | None
    finished_at: datetime | None
    pilot: bool
    #: The seq of the session's last log row (None: nothing logged yet).
    last_seq: int | None
    #: The request's DB session, which read the row (the study is read through it, like the ORM object's).
    db: Session = field(repr=False)

    @property
    def study(self) -> Study:
        """The session's study, read on first use (the participant's requests use the cached runtime)."""
        study = self.db.get(Study, self.study_id)
        if study is None:  # a foreign key: only a concurrent deletion of the study gets here
            raise LookupError(f"study {self.study_id} of session {self.id} is gone")
        return study


_SESSION = ElicitationSession.__table__.c
_ANSWER = Answer.__table__.c
#: A `SessionRecord`'s fields in order: the session's columns, then its log's last seq (an index lookup).
_SESSION_RECORD = select(
    *(_SESSION[item.name] for item in fields(SessionRecord)[:-2]),
    select(func.max(_ANSWER.seq)).where(_ANSWER.session_id == _SESSION.id).scalar_subquery(),
)
#: Built once: every participant request runs one, and building a statement costs more than its cached SQL.
_SESSION_BY_TOKEN = _SESSION_RECORD.where(_SESSION.token_hash == bindparam("token_hash"))
_SESSION_BY_ID = _SESSION_RECORD.where(_SESSION.id == bindparam("session_id"))


def session_by_token_hash(db: Session, token_hash: str) -> SessionRecord | None:
    """The session with this token digest, as a read-only record."""
    row = _driver_run(db, _SESSION_BY_TOKEN, {"token_hash": token_hash}, fetch=True)
    return None if row is None else SessionRecord(*row, db)


def session_by_id(db: Session, session_id: uuid.UUID) -> SessionRecord | None:
    """The session with this id, as a read-only record."""
    row = _driver_run(db, _SESSION_BY_ID, {"session_id": session_id}, fetch=True)
    return None if row is None else SessionRecord(*row, db)


def get_session_link(db: Session, token_hash: str) -> SessionLink | None:
    """The further personal link with this token digest (a returning participant code was given one)."""
    return db.scalars(select(SessionLink).where(SessionLink.token_hash == token_hash)).first()


def find_session_by_code(
    db: Session, study_id: uuid.UUID, participant_code: str
) -> ElicitationSession | None:
    """The earliest session of ``study_id`` that a participant joined with ``participant_code``."""
    return db.scalars(
        select(ElicitationSession)
        .where(
            ElicitationSession.study_id == study_id,
            ElicitationSession.participant_code == participant_code,
        )
        .order_by(ElicitationSession.created_at, ElicitationSession.id)
        .limit(1)
    ).first()


def log_rows(db: Session, session_id: uuid.UUID) -> Sequence[Answer]:
    """The whole log of a session (answers and undos), in sequence order."""
    return db.scalars(select(Answer).where(Answer.session_id == session_id).order_by(Answer.seq)).all()


#: What replaying a session needs from each log row (the large display columns stay in the database).
#: Plain table columns: a Core statement skips the ORM's per-statement work on the participant's hot path.
LOG_COLUMNS = (
    _ANSWER.seq,
    _ANSWER.action,
    _ANSWER.phase,
    _ANSWER.swapped,
    _ANSWER.preferred,
    _ANSWER.elicitor_answer,
    _ANSWER.undoes_seq,
    _ANSWER.created_at,
    _ANSWER.query,
)


class LogEntry(NamedTuple):
    """A log row just written by this process, shaped like the rows `log_entries` reads back."""

    seq: int
    action: str
    phase: str | None
    swapped: bool | None
    preferred: str | None
    elicitor_answer: bool | None
    undoes_seq: int | None
    created_at: datetime
    query: dict[str, Any] | None

    @classmethod
    def of(cls, values: dict[str, Any]) -> LogEntry:
        fields: dict[str, Any] = {name: values.get(name) for name in cls._fields}
        return cls(**fields)


_LOG_AFTER = (
    select(*LOG_COLUMNS)
    .where(_ANSWER.session_id == bindparam("session_id"), _ANSWER.seq > bindparam("after_seq"))
    .order_by(_ANSWER.seq)
)


def log_entries(db: Session, session_id: uuid.UUID, *, after_seq: int = -1) -> Sequence[Any]:
    """Light log rows (`LOG_COLUMNS`) with ``seq > after_seq``, in sequence order."""
    return db.connection().execute(_LOG_AFTER, {"session_id": session_id, "after_seq": after_seq}).all()


def lock_config_version(db: Session, study_id: uuid.UUID) -> int:
    """The study's configuration version, read so that it cannot change before this transaction ends.

    SQLite: the transaction takes the write lock now (BEGIN IMMEDIATE); PostgreSQL: a share lock on the
    study row, which a configuration change (it locks the row for update) waits for.
    """
    if db.get_bind().dialect.name == "sqlite":
        connection = db.connection()
        if not connection.connection.dbapi_connection.in_transaction:  # type: ignore[union-attr]
            connection.exec_driver_sql("BEGIN IMMEDIATE")
    statement = select(Study.config_version).where(Study.id == study_id).with_for_update(read=True)
    return int(db.scalar(statement) or 0)


_INSERT_ANSWER = insert(Answer)


def insert_answer(db: Session, values: dict[str, Any]) -> None:
    """Stage one log row on the DB-API cursor (`_driver_run`; the caller commits)."""
    _driver_run(db, _INSERT_ANSWER, values, fetch=False)


def mark_undone(db: Session, session_id: uuid.UUID, seq: int, when: datetime) -> None:
    """Mark the answer at ``seq`` as undone (it stays in the log for audit)."""
    db.execute(
        update(Answer).where(Answer.session_id == session_id, Answer.seq == seq).values(undone_at=when)
    )


def get_result(db: Session, session_id: uuid.UUID) -> Result | None:
    return db.scalars(select(Result).where(Result.session_id == session_id)).first()


def get_checkpoint(db: Session, session_id: uuid.UUID) -> Any | None:
    """The session's elicitor checkpoint, light (``n_answers``, ``last_seq``, ``log_digest``, ``state``)."""
    statement = select(
        ElicitorCheckpoint.n_answers,
        ElicitorCheckpoint.last_seq,
        ElicitorCheckpoint.log_digest,
        ElicitorCheckpoint.state,
    ).where(ElicitorCheckpoint.session_id == session_id)
    return db.connection().execute(statement).first()


def save_checkpoint(db: Session, values: dict[str, Any]) -> None:
    """Replace the session's checkpoint with ``values`` (a row of `ElicitorCheckpoint`; the caller commits).

    An update, else an insert: a concurrent insert of the same session fails the commit with an
    `IntegrityError`, which the caller treats as "another worker saved one".
    """
    key = ElicitorCheckpoint.session_id == values["session_id"]
    # A checkpoint lost in a crash costs a replay, never an answer: its commit need not wait for the disk.
    relax_durability(db.connection())
    changed = db.connection().execute(update(ElicitorCheckpoint).where(key).values(values)).rowcount
    if not changed:
        db.connection().execute(insert(ElicitorCheckpoint), values)
