"""Fixtures for the app tests: a migrated template database copied per test, apps, clients and studies.

The schema is built once per worker with ``alembic upgrade head`` (SQLite template file, copied per test).
When ``TEST_POSTGRES_URL`` is set, every test using ``settings`` also runs on PostgreSQL, in a schema of
its own (created and migrated once per worker, emptied before each test, dropped at the end).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from app_support import POSTGRES_URL, make_study
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from app.cli_web import upgrade_database
from app.main import create_app
from app.settings import Settings

#: Tables in dependency order (children first) for emptying the PostgreSQL schema between tests.
TABLES = ("result", "answer", "elicitation_session", "study")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade_database(Settings(database_url=f"sqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[str]:
    if not POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    schema = f"app_test_{uuid.uuid4().hex[:12]}"
    upgrade_database(Settings(database_url=POSTGRES_URL, database_schema=schema))
    yield schema
    engine = create_engine(POSTGRES_URL)
    with engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


def _empty_postgres(schema: str) -> None:
    engine = create_engine(POSTGRES_URL or "", connect_args={"options": f"-csearch_path={schema}"})
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {', '.join(TABLES)} CASCADE"))
    engine.dispose()


@pytest.fixture(
    params=["sqlite"] + ([pytest.param("postgres", marks=pytest.mark.postgres)] if POSTGRES_URL else [])
)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings for an isolated, migrated database (SQLite copy, or an emptied PostgreSQL schema)."""
    if request.param == "postgres":
        schema = request.getfixturevalue("postgres_schema")
        _empty_postgres(schema)
        return Settings(database_url=POSTGRES_URL or "", database_schema=schema)
    template = request.getfixturevalue("sqlite_template")
    path = tmp_path / "test.db"
    shutil.copy(template, path)
    return Settings(database_url=f"sqlite:///{path}")


@pytest.fixture
def sqlite_settings(sqlite_template: Path, tmp_path: Path) -> Settings:
    """SQLite-only settings, for tests about SQLite itself or real processes."""
    path = tmp_path / "test.db"
    shutil.copy(sqlite_template, path)
    return Settings(database_url=f"sqlite:///{path}")


@pytest.fixture
def app(settings: Settings) -> Iterator[Any]:
    application = create_app(settings)
    yield application
    application.state.engine.dispose()


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client


@pytest.fixture
def study(app: Any) -> Any:
    return make_study(app)
