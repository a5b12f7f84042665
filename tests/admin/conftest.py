"""Fixtures for the back-office tests: a migrated database per test (root conftest) and accounts."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admin_support import PASSWORD
from argon2 import PasswordHasher
from db_support import DATABASES, isolated_settings

from app.admin import auth
from app.admin import models as admin_models  # noqa: F401  (tables on Base.metadata)
from app.admin.auth import create_api_token, create_user
from app.main import create_app
from app.settings import Settings


@pytest.fixture(autouse=True)
def fast_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Argon2id with tiny cost parameters: the tests check behaviour, not the hash's strength."""
    monkeypatch.setattr(auth, "_HASHER", PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1))
    auth._DUMMY.clear()


@pytest.fixture(params=DATABASES)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """An isolated, migrated database (root conftest) with a signing key for the back-office cookies."""
    result: Settings = isolated_settings(request, tmp_path, secret_key="test-secret-key-for-signing")
    return result


@pytest.fixture
def fresh_app(sqlite_template: Path, tmp_path: Path) -> Iterator[Any]:
    """A second app on an empty migrated SQLite database (where an exported archive is imported)."""
    path = tmp_path / "fresh.db"
    shutil.copy(sqlite_template, path)
    application = create_app(Settings(database_url=f"sqlite:///{path}", secret_key="another-secret"))
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
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """The test database as the `elicit` command finds it (environment), with no password preset."""
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    if settings.database_schema:
        monkeypatch.setenv("DATABASE_SCHEMA", settings.database_schema)
    else:
        monkeypatch.delenv("DATABASE_SCHEMA", raising=False)
    monkeypatch.delenv("ELICIT_ADMIN_PASSWORD", raising=False)
    return settings
