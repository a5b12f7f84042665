"""Fixtures for the app tests: a migrated database per test (root conftest), apps, clients and studies."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from app_support import make_study
from db_support import DATABASES, isolated_settings

from app.settings import Settings


@pytest.fixture(params=DATABASES)
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    """Settings for an isolated, migrated database (SQLite copy, or an emptied PostgreSQL schema)."""
    result: Settings = isolated_settings(request, tmp_path)
    return result


@pytest.fixture
def sqlite_settings(sqlite_template: Path, tmp_path: Path) -> Settings:
    """SQLite-only settings, for tests about SQLite itself or real processes."""
    path = tmp_path / "test.db"
    shutil.copy(sqlite_template, path)
    return Settings(database_url=f"sqlite:///{path}")


@pytest.fixture
def study(app: Any) -> Any:
    return make_study(app)
