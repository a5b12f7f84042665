"""Annotated dependency aliases shared by the routes: settings, DB session and the session cache."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, Request
from sqlalchemy.orm import Session

from .services import SessionCache
from .settings import Settings

__all__ = ["CacheDep", "DbSessionDep", "SettingsDep"]


#: Threads of their own for closing DB sessions. Closing returns the connection to the pool; on the shared
#: request thread pool it could wait behind handlers that are themselves waiting for a pooled connection,
#: which deadlocks until the pool timeout under load (seen with 200 concurrent participants).
_CLOSE_LIMITER = anyio.CapacityLimiter(8)

# The trivial dependencies are ``async`` so that FastAPI does not send each through the thread pool.


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_db(request: Request) -> AsyncIterator[Session]:
    """One SQLAlchemy session per request; anything not committed is rolled back when it closes.

    Creating a session does no I/O; closing it (rollback, connection back to the pool) does, so it runs
    in a worker thread, on threads of its own (`_CLOSE_LIMITER`).
    """
    db: Session = request.app.state.sessionmaker()
    try:
        yield db
    finally:
        await anyio.to_thread.run_sync(db.close, limiter=_CLOSE_LIMITER)


async def get_cache(request: Request) -> SessionCache:
    cache: SessionCache = request.app.state.session_cache
    return cache


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbSessionDep = Annotated[Session, Depends(get_db)]
CacheDep = Annotated[SessionCache, Depends(get_cache)]
