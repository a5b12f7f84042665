"""Alembic is the only way the schema changes: upgrade, downgrade to base, upgrade again, no drift."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from app_support import POSTGRES_URL
from sqlalchemy import create_engine, inspect, text

from app.cli_web import alembic_config
from app.db import Base, make_engine
from app.settings import Settings

TABLES = {"study", "elicitation_session", "answer", "result"}


@pytest.fixture(params=["sqlite"] + (["postgres"] if POSTGRES_URL else []))
def empty_settings(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Settings]:
    if request.param == "sqlite":
        yield Settings(database_url=f"sqlite:///{tmp_path / 'migrate.db'}")
        return
    schema = f"migrate_test_{uuid.uuid4().hex[:12]}"
    yield Settings(database_url=POSTGRES_URL or "", database_schema=schema)
    engine = create_engine(POSTGRES_URL or "")
    with engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


def tables(settings: Settings) -> set[str]:
    engine = make_engine(settings)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def drift(settings: Settings) -> list[object]:
    engine = make_engine(settings)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            return list(compare_metadata(context, Base.metadata))
    finally:
        engine.dispose()


def test_upgrade_downgrade_upgrade_and_no_drift(empty_settings: Settings) -> None:
    config = alembic_config(empty_settings)
    command.upgrade(config, "head")
    assert tables(empty_settings) >= TABLES
    command.downgrade(config, "base")
    assert tables(empty_settings) & TABLES == set()
    command.upgrade(config, "head")
    assert tables(empty_settings) >= TABLES
    assert drift(empty_settings) == []


def test_sqlite_connections_are_durable(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'pragmas.db'}")
    engine = make_engine(settings)
    try:
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        engine.dispose()
