"""Operations: `/healthz` says ready only on a reachable, fully migrated database; `elicit --version`;
the templates, static files and migrations are found the same way in a checkout and in a wheel."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from app_support import make_study, new_session
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


@pytest.mark.parametrize("name", ["templates", "static", "migrations", "locales"])
def test_resources_are_found_beside_the_package_in_a_checkout(name: str) -> None:
    assert resource_dir(name) == REPOSITORY / name
    assert PACKAGE_DIR == REPOSITORY / "app"


def test_a_missing_resource_folder_is_named() -> None:
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        resource_dir("nothing-here")


@pytest.fixture
def metrics_app(settings: Settings) -> Any:
    application = create_app(settings.model_copy(update={"metrics_token": "scrape-secret"}))
    yield application
    application.state.engine.dispose()


def _scrape(client: TestClient) -> str:
    response = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text: str = response.text
    return text


def _sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample line of the exposition text (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in labels.items())
    prefix = f"{name}{{{wanted}}} " if labels else f"{name} "
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix) :])
    return 0.0


def test_metrics_count_requests_by_route_template_answers_and_sessions(metrics_app: Any) -> None:
    study = make_study(metrics_app)
    with TestClient(metrics_app) as client:
        token = new_session(client, study)
        state = client.get(f"/api/v1/sessions/{token}").json()
        answered = client.post(
            f"/api/v1/sessions/{token}/answers", json={"seq": state["query"]["seq"], "preferred": "first"}
        )
        assert answered.status_code == 200
        client.get("/no/such/page")
        text = _scrape(client)
    route = "/api/v1/sessions/{token}/answers"
    assert _sample(text, "elicit_http_requests_total", method="POST", route=route, status="200") == 1
    assert _sample(text, "elicit_http_request_duration_seconds_count", method="POST", route=route) == 1
    assert _sample(text, "elicit_http_requests_total", method="GET", route="<unmatched>", status="404") == 1
    assert token not in text  # labels are route templates, never the secret path
    assert _sample(text, "elicit_answers_stored_total") == 1
    assert _sample(text, "elicit_sessions", status="active") == 1
    assert _sample(text, "elicit_sessions", status="done") == 0


def test_metrics_count_every_request_of_a_route_by_its_status(metrics_app: Any) -> None:
    with TestClient(metrics_app) as client:
        for _ in range(3):
            client.get("/api/v1/sessions/no-such-token")
        client.get("/healthz")
        text = _scrape(client)
    route = "/api/v1/sessions/{token}"
    assert _sample(text, "elicit_http_requests_total", method="GET", route=route, status="404") == 3
    assert _sample(text, "elicit_http_requests_total", method="GET", route=route, status="200") == 0
    assert _sample(text, "elicit_http_request_duration_seconds_count", method="GET", route=route) == 3
    assert _sample(text, "elicit_http_requests_total", method="GET", route="/healthz", status="200") == 1


@pytest.mark.parametrize("header", [None, "Bearer wrong", "Basic scrape-secret", "scrape-secret"])
def test_metrics_need_the_bearer_token(metrics_app: Any, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    with TestClient(metrics_app) as client:
        assert client.get("/metrics", headers=headers).status_code == 404


def test_metrics_are_off_without_a_token(client: Any) -> None:
    assert client.get("/metrics", headers={"Authorization": "Bearer "}).status_code == 404
