"""Operations: `/healthz` says ready only on a reachable, fully migrated database; `elicit --version`;
the templates, static files and migrations are found the same way in a checkout and in a wheel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app import __version__
from app.main import create_app
from app.resources import PACKAGE_DIR, resource_dir
from app.schema import head_revision
from app.settings import Settings

REPOSITORY = Path(__file__).resolve().parents[2]


def test_healthz_ok_on_a_migrated_database(client: Any) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"] == "reachable"
    assert body["schema_revision"] == body["expected_revision"] == head_revision()
    assert response.headers["cache-control"] == "no-store"


def test_healthz_unavailable_before_migrations(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'empty.db'}"))
    with TestClient(app) as client:
        response = client.get("/healthz")
    app.state.engine.dispose()
    assert response.status_code == 503
    body = response.json()
    assert body["database"] == "reachable"
    assert body["schema_revision"] is None
    assert "elicit db upgrade" in body["reason"]


def test_healthz_unavailable_when_the_database_does_not_answer(tmp_path: Path) -> None:
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'no-such-folder' / 'x.db'}"))
    with TestClient(app) as client:
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == "unreachable"


def test_elicit_version_prints_the_installed_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "--version"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"elicit {__version__}"
    assert __version__ != "0+unknown"


@pytest.mark.parametrize("name", ["templates", "static", "migrations"])
def test_resources_are_found_beside_the_package_in_a_checkout(name: str) -> None:
    assert resource_dir(name) == REPOSITORY / name
    assert PACKAGE_DIR == REPOSITORY / "app"


def test_a_missing_resource_folder_is_named() -> None:
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        resource_dir("nothing-here")
