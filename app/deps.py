"""Annotated dependency aliases shared by the routes: settings, DB session and the session cache; and the
closing of a request's DB session after its response."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from fastapi import Depends, Request
from sqlalchemy.orm import Session
from sqlalchemy.pool import QueuePool
from starlette.types import Scope

from .sessions import SessionCache
from .settings import Settings

__all__ = [
    "CacheDep",
    "DbSessionDep",
    "SettingsDep",
    "close_sessions",
    "connection_slots",
    "get_db",
    "track_sessions",
]


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
        # A free slot is taken without yielding to the event loop (``fast_acquire``): the handler's thread
        # hop that follows yields anyway, and each extra pass of the loop costs every request.
        app.state.db_connection_slots = anyio.Semaphore(capacity, fast_acquire=True) if capacity > 0 else None
    slots: anyio.Semaphore | None = app.state.db_connection_slots
    return slots


#: Where a request keeps the DB sessions it opened, for `close_sessions` (an ASGI scope key).
_DB_SESSION_KEY = "elicit.db_session"

#: The DB sessions a request opened (at most one), each with the connection slots it took one of.
OpenedSessions = list[tuple[Session, anyio.Semaphore | None]]


def track_sessions(scope: Scope) -> OpenedSessions:
    """Where `get_db` notes the sessions of the request of ``scope`` (to pass to `close_sessions`)."""
    opened: OpenedSessions = []
    scope[_DB_SESSION_KEY] = opened
    return opened


async def close_sessions(opened: OpenedSessions) -> None:
    """Close the DB sessions a request opened (`get_db`), once its response is sent, and give their
    connection slots back (`app.server.RequestEnvelope` calls this after every request, errors included).

    A plain dependency opens the session and this closes it, instead of a dependency with ``yield``: FastAPI
    runs such a dependency's exit through an exit stack per request, which cost about as much as the whole
    of the session's own opening and closing. Anything not committed is rolled back when it closes, after
    an error too (the error page is rendered before this). Closing a session that holds a transaction
    (rollback, connection back to the pool) does I/O, so that runs in a worker thread, on threads of its
    own (`_CLOSE_LIMITER`); a session whose last use was its commit holds no connection and closes in the
    event loop (most answers end so).
    """
    for db, slots in opened:
        try:
            if db.in_transaction():
                await anyio.to_thread.run_sync(db.close, limiter=_CLOSE_LIMITER)
            else:
                db.close()  # committed and not used since: no connection to return
        finally:
            if slots is not None:
                slots.release()


# The trivial dependencies are ``async`` so that FastAPI does not send each through the thread pool.


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_db(request: Request) -> Session:
    """The request's SQLAlchemy session (one per request), opened once a connection slot is free
    (`connection_slots`); `close_sessions` closes it after the response, rolling back anything not committed.

    Creating a session does no I/O: the slot is taken in the event loop, before the handler's thread runs.
    """
    opened: OpenedSessions = request.scope[_DB_SESSION_KEY]
    if opened:
        return opened[0][0]
    slots = connection_slots(request.app)
    if slots is not None:
        await slots.acquire()
    try:
        db: Session = request.app.state.sessionmaker()
    except BaseException:
        if slots is not None:
            slots.release()
        raise
    opened.append((db, slots))
    return db


async def get_cache(request: Request) -> SessionCache:
    cache: SessionCache = request.app.state.session_cache
    return cache


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbSessionDep = Annotated[Session, Depends(get_db)]
CacheDep = Annotated[SessionCache, Depends(get_cache)]
