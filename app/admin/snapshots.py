"""The archive a study keeps when it closes: read in one consistent snapshot, compressed, stored.

A closing study's archive is read in one read transaction (readers never block writers, so participants
of this and every other study keep answering) and compressed as it is written, one batch of sessions at
a time; only the final insert of the compressed archive is a (short) write. Compressing hundreds of
thousands of log rows holds the Python interpreter for seconds, which would hold up every other request
of this server process: a study with more than `SNAPSHOT_PROCESS_ROWS` log rows is therefore archived by
a worker process of its own (one per server process, started on first use), while the request that
closed the study waits for it without holding the interpreter. Either way the snapshot is stored when the
close returns.
"""

from __future__ import annotations

import multiprocessing
import threading
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from ..db import make_engine, make_sessionmaker
from ..models import Answer, ElicitationSession, Study, utcnow
from ..settings import Settings
from .export import gzip_archive
from .models import StudySnapshot

__all__ = ["SNAPSHOT_PROCESS_ROWS", "keep_closing_snapshot"]

#: A closing study with more log rows than this is archived in a worker process (a few thousand rows
#: take milliseconds in the request itself; a worker process costs a second to start the first time).
SNAPSHOT_PROCESS_ROWS = 20_000

_pool: ProcessPoolExecutor | None = None
_pool_lock = threading.Lock()


@dataclass(frozen=True)
class _Database:
    """What a worker process needs to reach the server's database: its URL and PostgreSQL schema."""

    url: str
    schema: str | None


def keep_closing_snapshot(db: Session, study: Study, by: int | None) -> None:
    """Store ``study``'s archive as it is now (just closed), as a ``"closed"`` snapshot (commits)."""
    database = _database_of(db)
    if database is not None and _log_rows(db, study) > SNAPSHOT_PROCESS_ROWS:
        _worker_pool().submit(_store_in_worker, database, study.id, by).result()
        return
    _store(db, study, by)


def _store(db: Session, study: Study, by: int | None) -> None:
    with Session(bind=db.get_bind()) as reader:
        _begin_consistent_read(reader)
        packed = gzip_archive(reader, study)
    db.add(
        StudySnapshot(
            study_id=study.id, reason="closed", created_by=by, created_at=utcnow(), archive_gz=packed
        )
    )
    db.commit()


def _store_in_worker(database: _Database, study_id: uuid.UUID, by: int | None) -> None:
    """`_store` in a worker process, on an engine of its own (the server's cannot cross processes)."""
    engine = make_engine(Settings(database_url=database.url, database_schema=database.schema))
    try:
        with make_sessionmaker(engine)() as db:
            study = db.get(Study, study_id)
            if study is None:
                raise LookupError(f"study {study_id} is not in the database the worker reached")
            _store(db, study, by)
    finally:
        engine.dispose()


def _worker_pool() -> ProcessPoolExecutor:
    """This server process's archiving worker: spawned (never forked from a threaded server) on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        return _pool


def _database_of(db: Session) -> _Database | None:
    """How a worker process reaches ``db``'s database; None when it cannot (an in-memory SQLite database)."""
    url = db.get_bind().url
    if url.get_backend_name() == "sqlite":
        if url.database in (None, "", ":memory:") or (url.database or "").startswith("file::memory:"):
            return None
        return _Database(url.render_as_string(hide_password=False), None)
    schema = db.execute(text("SELECT current_schema()")).scalar_one_or_none()
    return _Database(url.render_as_string(hide_password=False), schema if schema != "public" else None)


def _log_rows(db: Session, study: Study) -> int:
    statement = (
        select(func.count())
        .select_from(Answer)
        .join(ElicitationSession, Answer.session_id == ElicitationSession.id)
        .where(ElicitationSession.study_id == study.id)
    )
    return int(db.execute(statement).scalar_one())


def _begin_consistent_read(db: Session) -> None:
    """Make the session's following statements see one state of the database.

    Python's sqlite3 only opens a transaction before a write, so without an explicit BEGIN every SELECT
    would see its own state; PostgreSQL's default (read committed) likewise sees each statement's own.
    """
    if db.get_bind().dialect.name == "sqlite":
        db.connection().exec_driver_sql("BEGIN")
    else:
        db.connection(execution_options={"isolation_level": "REPEATABLE READ"})
