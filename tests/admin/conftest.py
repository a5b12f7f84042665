"""Fixtures for the back-office tests: a migrated SQLite copy per test, accounts, clients and a study."""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admin_support import PASSWORD
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from app.admin import auth
from app.admin import models as admin_models  # noqa: F401  (tables on Base.metadata)
from app.admin.auth import create_api_token, create_user
from app.cli_web import upgrade_database
from app.db import Base
from app.main import create_app
from app.settings import Settings

#: PostgreSQL URL for the parametrised tests (CI sets it); unset means SQLite only.
POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL")


@pytest.fixture(autouse=True)
def fast_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Argon2id with tiny cost parameters: the tests check behaviour, not the hash's strength."""
    monkeypatch.setattr(auth, "_HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
    auth._DUMMY.clear()


@pytest.fixture(scope="session")
def admin_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("admin-template") / "template.db"
    upgrade_database(Settings(database_url=f"sqlite:///{path}"))
    return path


@pytest.fixture(scope="session")
def admin_postgres_schema() -> Iterator[str]:
    """A PostgreSQL schema of this worker's own, migrated once (only when TEST_POSTGRES_URL is set)."""
    schema = f"admin_test_{uuid.uuid4().hex[:12]}"
    upgrade_database(Settings(database_url=POSTGRES_URL or "", database_schema=schema))
    yield schema
    engine = create_engine(POSTGRES_URL or "")
    with engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    engine.dispose()


@pytest.fixture(
    params=["sqlite"] + ([pytest.param("postgres", marks=pytest.mark.postgres)] if POSTGRES_URL else [])
)
def settings(request: pytest.FixtureRequest, admin_template: Path, tmp_path: Path) -> Settings:
    """An isolated, migrated database: a SQLite copy, or the emptied PostgreSQL schema."""
    secret = "test-secret-key-for-signing"
    if request.param == "postgres":
        schema = request.getfixturevalue("admin_postgres_schema")
        engine = create_engine(POSTGRES_URL or "", connect_args={"options": f"-csearch_path={schema}"})
        with engine.begin() as connection:
            names = ", ".join(table.name for table in Base.metadata.sorted_tables)
            connection.execute(text(f"TRUNCATE {names} CASCADE"))
        engine.dispose()
        return Settings(database_url=POSTGRES_URL or "", database_schema=schema, secret_key=secret)
    path = tmp_path / "admin.db"
    shutil.copy(admin_template, path)
    return Settings(database_url=f"sqlite:///{path}", secret_key=secret)


@pytest.fixture
def app(settings: Settings) -> Iterator[Any]:
    application = create_app(settings)
    yield application
    application.state.engine.dispose()


@pytest.fixture
def accounts(app: Any) -> dict[str, Any]:
    """An admin and two coordinators, each with a bearer token."""
    made: dict[str, Any] = {}
    with app.state.sessionmaker() as db:
        for key, email, role in (
            ("admin", "admin@example.org", "admin"),
            ("alice", "alice@example.org", "coordinator"),
            ("bob", "bob@example.org", "coordinator"),
        ):
            user = create_user(db, email, PASSWORD, role)
            _token, secret = create_api_token(db, user, f"{key} token")
            made[key] = {"user_id": user.id, "email": email, "token": secret}
    return made


@pytest.fixture
def client(app: Any) -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
