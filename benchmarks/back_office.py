"""Shared by the back-office benchmarks: a migrated database with an admin's API token, and the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from app.admin.auth import create_api_token, create_user
from app.cli.web import upgrade_database
from app.db import make_engine, make_sessionmaker
from app.settings import Settings

__all__ = ["admin_token", "save_result"]

ROOT = Path(__file__).resolve().parent.parent


def admin_token(database_url: str) -> str:
    """Migrate the database at ``database_url`` and return a new admin's bearer token."""
    settings = Settings(database_url=database_url)
    upgrade_database(settings)
    with make_sessionmaker(make_engine(settings))() as db:
        user = create_user(db, "bench@example.org", "benchmark-password-long", "admin")
        _token, secret = create_api_token(db, user, "benchmark")
    return secret


def save_result(name: str, result: dict[str, Any]) -> int:
    """Print ``result``, write it to ``benchmarks/results/<name>.json``; exit code 0 if it passed."""
    text = json.dumps(result, indent=2)
    print(text)
    out = ROOT / "benchmarks" / "results" / f"{name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    return 0 if result["passed"] else 1
