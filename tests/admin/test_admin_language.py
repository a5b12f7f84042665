"""A study's language from the back office: the JSON API's study body and the study form (the back office
itself stays English)."""

from __future__ import annotations

import re
from typing import Any

from admin_support import STUDY_CONFIG, bearer, login
from fastapi.testclient import TestClient

from app.study_config import DEFAULT_CONSENT_TEXT


def test_api_creates_a_german_study_and_refuses_a_language_not_on_offer(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    config = {key: value for key, value in STUDY_CONFIG.items() if key != "consent_text"}
    created = client.post("/api/v1/studies", json={**config, "language": "de"}, headers=headers)
    assert created.status_code == 201, created.text
    study = client.get(f"/api/v1/studies/{created.json()['id']}", headers=headers).json()
    assert study["config"]["language"] == "de"
    assert study["config"]["consent_text"].startswith("In dieser Studie vergleichen Sie")
    refused = client.post("/api/v1/studies", json={**STUDY_CONFIG, "language": "xx"}, headers=headers)
    assert refused.status_code == 422
    assert "language 'xx' is not offered" in refused.json()["message"]


def test_study_form_offers_the_languages_and_saves_the_choice(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    blank = client.get("/admin/studies/new")
    assert '<html lang="en"' in blank.text
    options = re.findall(r'<option value="(\w+)" lang="\w+"( selected)?>', blank.text)
    assert options == [("en", " selected"), ("de", "")]
    form = {
        "name": "Deutsche Studie",
        "task": "Gutartig oder bösartig?",
        "class_names": "gutartig, bösartig",
        "population": "Patienten",
        "language": "de",
        "algorithm": "lpme",
        "epsilon": "0.2",
        "practice_queries": "1",
        "evaluation_queries": "3",
        "consent_text": DEFAULT_CONSENT_TEXT,
        "also-en": "on",
        "action": "save",
        "csrf_token": csrf,
    }
    created = client.post("/admin/studies/new", data=form, follow_redirects=False)
    assert created.status_code == 303, created.text
    study_id = created.headers["location"].rstrip("/").split("/")[-1]
    edit = client.get(f"/admin/studies/{study_id}/edit")
    assert '<option value="de" lang="de" selected>' in edit.text
    # English is offered too, and stays offered through the form.
    assert 'name="also-en" checked' in edit.text and 'name="also-de" checked' not in edit.text
    stored = client.get(f"/api/v1/studies/{study_id}", headers=bearer(accounts["alice"]["token"])).json()
    assert stored["config"]["languages"] == ["en"]
    # The English default consent text left in the form became the German default.
    assert "In dieser Studie vergleichen Sie" in edit.text
    page = client.get(f"/admin/studies/{study_id}")
    assert 'data-testid="study-language">participant pages in Deutsch<' in page.text
