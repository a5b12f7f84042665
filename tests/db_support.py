"""The database side of the app and back-office tests: which databases to run on, and isolated settings.

The fixtures these build on (``sqlite_template``, ``postgres_schema``) live in the root ``conftest.py``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

#: PostgreSQL URL for the parametrised tests (CI sets it); unset means SQLite only.
POSTGRES_URL = os.environ.get("TEST_POSTGRES_URL")
#: ``params`` of a database-parametrised fixture: SQLite always, PostgreSQL when configured.
DATABASES = ["sqlite"] + ([pytest.param("postgres", marks=pytest.mark.postgres)] if POSTGRES_URL else [])


def isolated_settings(request: pytest.FixtureRequest, tmp_path: Path, **overrides: Any) -> Any:
    """Settings for an isolated, migrated database of ``request.param``: a fresh copy of the SQLite
    template, or the worker's PostgreSQL schema with every table emptied."""
    from sqlalchemy import create_engine, text

    from app.admin import models as _admin_models  # noqa: F401  (the back office's tables on Base.metadata)
    from app.db import Base
    from app.settings import Settings

    if request.param == "postgres":
        schema = request.getfixturevalue("postgres_schema")
        engine = create_engine(POSTGRES_URL or "", connect_args={"options": f"-csearch_path={schema}"})
        with engine.begin() as connection:
            names = ", ".join(table.name for table in Base.metadata.sorted_tables)
            connection.execute(text(f"TRUNCATE {names} CASCADE"))
        engine.dispose()
        return Settings(database_url=POSTGRES_URL or "", database_schema=schema, **overrides)
    path = tmp_path / "test.db"
    shutil.copy(request.getfixturevalue("sqlite_template"), path)
    return Settings(database_url=f"sqlite:///{path}", **overrides)
