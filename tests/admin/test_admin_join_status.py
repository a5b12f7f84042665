"""The join page of a study that takes nobody right now says so, instead of a consent form that fails."""

from __future__ import annotations

from typing import Any

import pytest
from admin_support import STUDY_CONFIG, bearer
from fastapi.testclient import TestClient


@pytest.mark.parametrize(
    ("steps", "wording"),
    [
        pytest.param([], "not started yet", id="draft"),
        pytest.param(["open", "paused"], "paused", id="paused"),
        pytest.param(["open", "closed"], "closed", id="closed"),
    ],
)
def test_join_page_of_a_study_not_open_explains_instead_of_offering_consent(
    client: TestClient, accounts: dict[str, Any], steps: list[str], wording: str
) -> None:
    token = accounts["alice"]["token"]
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    for status in steps:
        body = {"status": status, "confirm": True}
        assert client.patch(f"/api/v1/studies/{sid}", json=body, headers=bearer(token)).status_code == 200
    page = client.get(f"/studies/{sid}/join")
    assert page.status_code == 409
    assert wording in page.text
    assert 'name="consent"' not in page.text


def test_join_page_of_an_open_study_offers_consent(client: TestClient, accounts: dict[str, Any]) -> None:
    token = accounts["alice"]["token"]
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    page = client.get(f"/studies/{sid}/join")
    assert page.status_code == 200
    assert 'name="consent"' in page.text
