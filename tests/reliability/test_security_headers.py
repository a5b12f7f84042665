"""Security headers on every route and every error page, and no inline script on any HTML page.

The routes are enumerated from the app itself (participant pages, JSON API, back office, static files,
OpenAPI pages), so a route added later is covered without editing this file.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from reliability_support import assert_no_active_content, create_small_study

from app import sessions
from app.main import create_app
from app.settings import Settings


@pytest.fixture
def target(sqlite_file_settings: Settings) -> Iterator[dict[str, Any]]:
    study = create_small_study(sqlite_file_settings)
    app = create_app(sqlite_file_settings)

    @app.get("/_test/boom", include_in_schema=False)
    def boom() -> None:
        raise RuntimeError("an unexpected failure, to see the 500 page")

    with app.state.sessionmaker() as db:
        session, token = sessions.create_session(db, app.state.session_cache, study.id, consented=True)
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as client:
        yield {"client": client, "study_id": str(study.id), "token": token, "session_id": str(session.id)}
    app.state.engine.dispose()


def _routes(routes: list[Any]) -> Iterator[tuple[str, str]]:
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes)
        elif getattr(route, "methods", None):
            for method in sorted(route.methods - {"HEAD"}):
                yield method, route.path


def _fill(path: str, target: dict[str, Any]) -> str:
    values = {"study_id": target["study_id"], "token": target["token"], "session_id": target["session_id"]}
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values.get(m.group(1), str(uuid.uuid4())), path)


def assert_secure_headers(response: Any, path: str) -> None:
    headers = response.headers
    policy = headers.get("content-security-policy", "")
    assert "frame-ancestors 'none'" in policy, (path, response.status_code, policy)
    directives = {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}
    assert "'self'" in directives.get("script-src", []), (path, policy)
    assert "'unsafe-inline'" not in directives["script-src"], (path, policy)
    assert "'none'" in directives.get("object-src", []), (path, policy)
    assert headers.get("x-content-type-options") == "nosniff", (path, response.status_code)
    assert headers.get("x-frame-options") == "DENY", (path, response.status_code)
    assert headers.get("referrer-policy") == "no-referrer", (path, response.status_code)


def test_every_route_sends_security_headers(target: dict[str, Any]) -> None:
    client: TestClient = target["client"]
    app = client.app
    seen = 0
    for method, template in _routes(app.routes):  # type: ignore[attr-defined]
        if template.startswith("/_test/"):
            continue
        path = _fill(template, target)
        response = client.request(method, path)
        assert response.status_code < 500, (method, path, response.status_code, response.text[:300])
        assert_secure_headers(response, template)
        if "text/html" in response.headers.get("content-type", ""):
            assert_no_active_content(response.text)
        seen += 1
    assert seen >= 20
    for path in ("/static/css/app.css", "/static/js/session.js", "/static/vendor/plotly.min.js"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert_secure_headers(response, path)


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status"),
    [
        ("GET", "/no/such/page", {}, 404),
        ("GET", "/api/v1/no/such/thing", {}, 404),
        ("GET", "/sessions/not-a-token", {}, 404),
        ("GET", "/api/v1/sessions/not-a-token", {}, 404),
        ("DELETE", "/", {}, 405),
        ("POST", "/api/v1/sessions/{token}/answers", {"json": {"seq": -1, "preferred": "first"}}, 422),
        ("POST", "/sessions/{token}/answers", {"data": {"seq": "x", "preferred": "first"}}, 422),
        ("POST", "/api/v1/sessions/{token}/answers", {"json": {"seq": 7, "preferred": "first"}}, 409),
        ("POST", "/api/v1/sessions/{token}/answers", {"content": b"{" * 70_000}, 413),
        ("GET", "/_test/boom", {}, 500),
        ("GET", "/static/../pyproject.toml", {}, 404),
    ],
)
def test_error_pages_send_security_headers(
    target: dict[str, Any], method: str, path: str, kwargs: dict[str, Any], status: int
) -> None:
    client: TestClient = target["client"]
    response = client.request(method, path.replace("{token}", target["token"]), **kwargs)
    assert response.status_code == status, response.text[:300]
    assert_secure_headers(response, path)
    if "text/html" in response.headers.get("content-type", ""):
        assert_no_active_content(response.text)
        assert "Traceback" not in response.text and "RuntimeError" not in response.text
