"""/docs and /redoc work offline: every asset comes from this server, started without inline script."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_only_local_assets(client: TestClient, page: str) -> None:
    response = client.get(page)
    assert response.status_code == 200
    policy = response.headers["content-security-policy"]
    script_src = re.search(r"script-src ([^;]*)", policy)
    assert script_src and script_src.group(1).strip() == "'self'"
    assert "http" not in policy
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", response.text), "inline script"
    assets = re.findall(r'(?:src|href)="([^"]+)"', response.text)
    assert assets and all(url.startswith("/") and not url.startswith("//") for url in assets), assets
    for url in assets:
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert len(asset.content) > 100, url
    spec = re.search(r'(?:data-openapi-url|spec-url)="([^"]+)"', response.text)
    assert spec and client.get(spec.group(1)).json()["info"]["title"] == "Elicitation Studio"


def test_docs_assets_outside_the_list_are_not_served(client: TestClient, app: Any) -> None:
    assert client.get("/docs/assets/favicon.png").status_code == 404
    assert client.get("/docs/assets/..%2F__init__.py").status_code == 404
