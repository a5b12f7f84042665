"""README screenshots, regenerated on demand; skipped otherwise so ordinary runs never rewrite images.

UPDATE_SCREENSHOTS=1 .venv/bin/pytest -m e2e tests/e2e/test_screenshots.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from app.admin.auth import create_user
from app.admin.models import Role

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("UPDATE_SCREENSHOTS") != "1", reason="set UPDATE_SCREENSHOTS=1 to regenerate"
    ),
]

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
#: A common laptop viewport; device scale 1 keeps the PNG small.
VIEWPORT = {"width": 1440, "height": 1000}
#: The participant steps are shown as the issue's reviewers saw them: a laptop and a phone.
LAPTOP_STEPS = {"width": 1366, "height": 900}
FAIRNESS_STUDY: dict[str, Any] = {
    "name": "Credit decisions",
    "task": "A classifier decides whether a loan applicant will repay.",
    "class_names": ["repays", "defaults"],
    "group_names": ["women", "men"],
    "population": "applicants",
    "algorithm": "fair_qpme",
    "algorithm_params": {"epsilon": 0.3},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.75, 0.25], [0.65, 0.35]]},
    "practice_queries": 0,
    "checks": False,
    "evaluation_queries": 0,
}
#: Only for the throw-away database of this test.
ADMIN_PASSWORD = "screenshot password for a throw-away database"


def test_screenshot_participant_comparison_page(page: Page, live_server: Any, health: Any) -> None:
    study = live_server.create_study(practice_queries=0, checks=False)
    token = live_server.invite(study)
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server.url}/sessions/{token}")
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    with page.expect_navigation():
        page.get_by_test_id("begin").click()
    # A question from the middle of the search, where the two classifiers trade one error for the other.
    for _ in range(2):
        with page.expect_navigation():
            page.get_by_test_id("choose-right").click()
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / "participant.png"), full_page=False)


def _shoot(page: Page, name: str) -> None:
    """The viewport as the participant sees it on arrival (charts drawn), saved as docs/img/<name>.png."""
    if page.locator("[data-figure]").count():
        expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / f"{name}.png"), full_page=False)


def _click_through(page: Page, test_id: str) -> None:
    with page.expect_navigation():
        page.get_by_test_id(test_id).click()


def _participant_steps(page: Page, live_server: Any, device: str) -> None:
    study = live_server.create_study(practice_queries=1)
    page.goto(f"{live_server.url}/studies/{study.id}/join")
    _shoot(page, f"participant-1-consent-{device}")
    page.get_by_test_id("consent-checkbox").check()
    _click_through(page, "consent-submit")
    _shoot(page, f"participant-2-instructions-{device}")
    _click_through(page, "begin")
    _shoot(page, f"participant-3-practice-{device}")
    for _ in range(3):
        _click_through(page, "choose-right")
    _shoot(page, f"participant-4-question-{device}")
    while "/result" not in page.url:
        _click_through(page, "choose-left")
    _shoot(page, f"participant-6-thank-you-{device}")
    fair = live_server.create_study(**FAIRNESS_STUDY)
    page.goto(f"{live_server.url}/studies/{fair.id}/join")
    page.get_by_test_id("consent-checkbox").check()
    _click_through(page, "consent-submit")
    _click_through(page, "begin")
    _click_through(page, "choose-right")
    _shoot(page, f"participant-5-fairness-{device}")


def test_screenshot_participant_steps_on_a_laptop(page: Page, live_server: Any, health: Any) -> None:
    page.set_viewport_size(LAPTOP_STEPS)
    _participant_steps(page, live_server, "laptop")


def test_screenshot_participant_steps_on_a_phone(phone: Page, live_server: Any) -> None:
    _participant_steps(phone, live_server, "phone")


def _finish_over_api(base_url: str, study_id: Any, weights: np.ndarray, answers: int | None = None) -> None:
    """An automated participant (linear metric ``weights``) answering over the JSON API."""
    with httpx.Client(base_url=base_url, timeout=10) as client:
        created = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        state = client.get(f"/api/v1/sessions/{token}").json()
        count = 0
        while state["query"] is not None and (answers is None or count < answers):
            query = state["query"]
            first, second = np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"])
            preferred = "first" if weights @ first >= weights @ second else "second"
            response = client.post(
                f"/api/v1/sessions/{token}/answers",
                json={"seq": query["seq"], "preferred": preferred, "time_on_page_ms": 4000 + 700 * count},
            )
            assert response.status_code == 200, response.text
            state = response.json()
            count += 1


def test_screenshot_admin_dashboard(page: Page, live_server: Any, health: Any) -> None:
    study = live_server.create_study(name="Breast cancer screening (pilot)")
    for index, weights in enumerate(([0.3, 0.8], [0.5, 0.6], [0.2, 0.9], [0.6, 0.4])):
        _finish_over_api(live_server.url, study.id, np.asarray(weights), answers=5 if index == 3 else None)
    with live_server.app.state.sessionmaker() as db:
        create_user(db, "coordinator@example.org", ADMIN_PASSWORD, Role.ADMIN.value)
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{live_server.url}/admin/login")
    page.get_by_test_id("login-email").fill("coordinator@example.org")
    page.get_by_test_id("login-password").fill(ADMIN_PASSWORD)
    with page.expect_navigation():
        page.get_by_test_id("login-submit").click()
    page.goto(f"{live_server.url}/admin/studies/{study.id}/monitor")
    expect(page.get_by_test_id("monitor")).to_be_visible()
    if page.locator("[data-figure]").count():
        expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / "admin-dashboard.png"), full_page=False)
