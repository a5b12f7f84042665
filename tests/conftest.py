"""Root test configuration: a derandomized hypothesis profile, and the migrated databases the app and
back-office tests share.

The schema is built once per worker with ``alembic upgrade head`` (a SQLite template file, copied per
test). When ``TEST_POSTGRES_URL`` is set, tests using ``settings`` also run on PostgreSQL, in a schema of
the worker's own (created and migrated once, emptied before each test, dropped at the end).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from db_support import POSTGRES_URL
from hypothesis import settings as hypothesis_settings

hypothesis_settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
hypothesis_settings.load_profile("ci")


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from app.cli.web import upgrade_database
    from app.settings import Settings

    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade_database(Settings(database_url=f"sqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def postgres_schema() -> Iterator[str]:
    """A PostgreSQL schema of this worker's own, migrated once."""
    from sqlalchemy import create_engine, text

    from app.cli.web import upgrade_database
    from app.settings import Settings

    if not POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    schema = f"test_{uuid.uuid4().hex[:12]}"
    upgrade_database(Settings(database_url=POSTGRES_URL, database_schema=schema))
    yield schema
    engine = create_engine(POSTGRES_URL)
    with engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


@pytest.fixture
def app(settings: Any) -> Iterator[Any]:
    """The application on ``settings`` (each test directory defines its ``settings``)."""
    from app.main import create_app

    application = create_app(settings)
    yield application
    application.state.engine.dispose()


@pytest.fixture
def client(app: Any) -> Iterator[Any]:
    from fastapi.testclient import TestClient

    with TestClient(app) as test_client:
        yield test_client
