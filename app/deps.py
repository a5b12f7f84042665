"""Annotated dependency aliases shared by the routes: settings, DB session and the session cache."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Annotated, Any

import anyio.to_thread
from fastapi import Depends, Request
from sqlalchemy.orm import Session
from sqlalchemy.pool import QueuePool

from .sessions import SessionCache
from .settings import Settings

__all__ = ["CacheDep", "DbSessionDep", "SettingsDep", "connection_slots"]


#: Threads of their own for closing DB sessions (closing returns the connection to the pool).
_CLOSE_LIMITER = anyio.CapacityLimiter(8)


def connection_slots(app: Any) -> anyio.Semaphore | None:
    """One slot per connection the engine's pool can hand out (None: the pool never makes callers wait).

    A request takes a slot in the event loop before its handler runs. Without this, under load every
    thread of the shared pool was a handler blocked on an empty connection pool, while the requests
    holding the connections waited for a thread to validate their response and close their session:
    a deadlock broken only by the 30 s pool timeout (500s; seen with 200 concurrent participants).
    """
    if not hasattr(app.state, "db_connection_slots"):
        pool = app.state.engine.pool
        overflow = getattr(pool, "_max_overflow", -1)
        capacity = pool.size() + overflow if isinstance(pool, QueuePool) and overflow >= 0 else 0
        app.state.db_connection_slots = anyio.Semaphore(capacity) if capacity > 0 else None
    slots: anyio.Semaphore | None = app.state.db_connection_slots
    return slots


# The trivial dependencies are ``async`` so that FastAPI does not send each through the thread pool.


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_db(request: Request) -> AsyncIterator[Session]:
    """One SQLAlchemy session per request; anything not committed is rolled back when it closes.

    Creating a session does no I/O; closing one that holds a transaction (rollback, connection back to the
    pool) does, so that runs in a worker thread, on threads of its own (`_CLOSE_LIMITER`). A session whose
    last use was its commit holds no connection and closes in the event loop (most answers end so).
    """
    slots = connection_slots(request.app)
    async with slots if slots is not None else contextlib.nullcontext():
        db: Session = request.app.state.sessionmaker()
        try:
            yield db
        finally:
            if db.in_transaction():
                await anyio.to_thread.run_sync(db.close, limiter=_CLOSE_LIMITER)
            else:
                db.close()  # committed and not used since: no connection to return, nothing to block on


async def get_cache(request: Request) -> SessionCache:
    cache: SessionCache = request.app.state.session_cache
    return cache


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbSessionDep = Annotated[Session, Depends(get_db)]
CacheDep = Annotated[SessionCache, Depends(get_cache)]
