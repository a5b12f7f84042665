"""Fixtures for the back-office tests: a migrated SQLite copy per test, accounts, clients and a study."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admin_support import PASSWORD
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from app.admin import auth
from app.admin.auth import create_api_token, create_user
from app.cli_web import upgrade_database
from app.main import create_app
from app.settings import Settings


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


@pytest.fixture
def settings(admin_template: Path, tmp_path: Path) -> Settings:
    path = tmp_path / "admin.db"
    shutil.copy(admin_template, path)
    return Settings(database_url=f"sqlite:///{path}", secret_key="test-secret-key-for-signing")


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
