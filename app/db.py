"""Declarative base with a constraint naming convention, engine/session factories and SQLite pragmas."""

from __future__ import annotations

import json
from typing import Any

import orjson
from sqlalchemy import MetaData, create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from .settings import Settings

__all__ = ["NAMING_CONVENTION", "Base", "make_engine", "make_sessionmaker", "relax_durability"]

#: Marks a pooled SQLite connection whose ``synchronous`` level `relax_durability` lowered.
_RELAXED = "relaxed_synchronous"

#: Deterministic constraint names, so that batch migrations on SQLite can drop and recreate them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Base class of every ORM model."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def load_json(text: str | bytes) -> Any:
    """Parse a stored JSON value: orjson (4x faster; resuming a long session parses every logged query),
    falling back to the standard parser for the NaN/Infinity literals orjson refuses."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def make_engine(settings: Settings) -> Engine:
    """Build the engine for ``settings.database_url`` with the durability pragmas SQLite needs."""
    url = settings.database_url
    connect_args: dict[str, Any] = {}
    if url.startswith("sqlite"):
        # Handlers run in a thread pool; SQLAlchemy's pool hands each connection to one thread at a time.
        connect_args["check_same_thread"] = False
    elif url.startswith("postgresql") and settings.database_schema:
        connect_args["options"] = f"-csearch_path={settings.database_schema}"
    engine = create_engine(
        url,
        connect_args=connect_args,
        pool_pre_ping=not url.startswith("sqlite"),
        json_deserializer=load_json,
    )
    if url.startswith("sqlite"):
        synchronous = settings.sqlite_synchronous

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            # WAL: readers never block the writer and a commit is one sequential append.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA synchronous={synchronous}")
            # Concurrent writers (two tabs, two workers) wait for the lock instead of failing at once.
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.close()

        @event.listens_for(engine, "checkin")
        def _restore_synchronous(dbapi_connection: Any, record: Any) -> None:
            if record.info.pop(_RELAXED, False) and dbapi_connection is not None:
                dbapi_connection.execute(f"PRAGMA synchronous={synchronous}")

    return engine


def relax_durability(connection: Connection) -> None:
    """Let the current transaction commit without waiting for the disk; for data that only saves work.

    A crash may then lose the transaction, never corrupt the database, and every other commit keeps its
    durability. PostgreSQL: ``synchronous_commit`` off for this transaction. SQLite (WAL):
    ``synchronous=NORMAL`` until the connection returns to the pool, where the configured level is set
    again; the level cannot change inside a transaction, so one already open keeps it.
    """
    dialect = connection.dialect.name
    if dialect == "postgresql":
        connection.exec_driver_sql("SET LOCAL synchronous_commit TO OFF")
    elif dialect == "sqlite":
        pooled = connection.connection
        if not pooled.dbapi_connection.in_transaction:  # type: ignore[union-attr]
            connection.exec_driver_sql("PRAGMA synchronous=NORMAL")
            pooled.info[_RELAXED] = True


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Sessions that keep loaded objects usable after commit (services return them to templates)."""
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)
