"""Fixtures of the reliability tests: a migrated SQLite file, the small study and the participant's metric."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app.cli.web import upgrade_database
from app.settings import Settings

# The app tests' study and metric are the reference here too (one definition of "the small study").
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))


@pytest.fixture
def sqlite_file_settings(tmp_path: Path) -> Settings:
    """Settings of a freshly migrated SQLite file (a real file: the servers are separate processes)."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'reliability.db'}")
    upgrade_database(settings)
    return settings
