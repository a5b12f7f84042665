"""Annotated dependency aliases shared by the routes: settings, DB session and the session cache."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from .services import SessionCache
from .settings import Settings

__all__ = ["CacheDep", "DbSessionDep", "SettingsDep"]


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_db(request: Request) -> Iterator[Session]:
    """One SQLAlchemy session per request; anything not committed is rolled back when it closes."""
    with request.app.state.sessionmaker() as db:
        yield db


def get_cache(request: Request) -> SessionCache:
    cache: SessionCache = request.app.state.session_cache
    return cache


SettingsDep = Annotated[Settings, Depends(get_settings)]
DbSessionDep = Annotated[Session, Depends(get_db)]
CacheDep = Annotated[SessionCache, Depends(get_cache)]
