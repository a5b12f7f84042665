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

from app.admin.auth import create_user, find_user
from app.admin.models import Role
from app.study_config import StudyConfig
from elicitation import QuadraticMetric

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("UPDATE_SCREENSHOTS") != "1", reason="set UPDATE_SCREENSHOTS=1 to regenerate"
    ),
]

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
#: A common laptop viewport; device scale 1 keeps the PNG small.
VIEWPORT = {"width": 1440, "height": 1000}
#: The coordinator's pages as the issue's reviewers saw them: a laptop and a phone.
LAPTOP_STEPS = {"width": 1366, "height": 900}
#: The participant steps as a new user saw them: the commonest laptop screen (1280 x 800) and a phone.
PARTICIPANT_LAPTOP = {"width": 1280, "height": 800}
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


def _shoot(page: Page, name: str, *, full_page: bool = False) -> None:
    """The viewport as the reader sees it on arrival (charts drawn), saved as docs/img/<name>.png."""
    if page.locator("[data-figure]").count():
        expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(IMAGES / f"{name}.png"), full_page=full_page)


def _click_through(page: Page, test_id: str) -> None:
    with page.expect_navigation():
        page.get_by_test_id(test_id).click()


def _participant_steps(page: Page, live_server: Any, fair: Any, device: str) -> None:
    study = live_server.create_study(practice_queries=1)
    # Simulated once, as the coordinator's study page does, so the consent page states the study's length.
    live_server.app.state.plan_cache.plan(StudyConfig.model_validate(study.config))
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
    page.goto(f"{live_server.url}/studies/{fair.id}/join")
    page.get_by_test_id("consent-checkbox").check()
    _click_through(page, "consent-submit")
    _click_through(page, "begin")
    _click_through(page, "choose-right")
    _shoot(page, f"participant-5-fairness-{device}")


def test_screenshot_participant_steps_on_a_laptop(
    page: Page, live_server: Any, health: Any, fairness_study: Any
) -> None:
    page.set_viewport_size(PARTICIPANT_LAPTOP)
    _participant_steps(page, live_server, fairness_study, "laptop")


def test_screenshot_participant_steps_on_a_phone(phone: Page, live_server: Any, fairness_study: Any) -> None:
    _participant_steps(phone, live_server, fairness_study, "phone")


def _finish_over_api(base_url: str, study_id: Any, metric: Any, answers: int | None = None) -> str:
    """An automated participant (a known metric) answering over the JSON API; returns its token."""
    with httpx.Client(base_url=base_url, timeout=10) as client:
        created = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
        assert created.status_code == 201, created.text
        token: str = created.json()["token"]
        state = client.get(f"/api/v1/sessions/{token}").json()
        count = 0
        while state["query"] is not None and (answers is None or count < answers):
            query = state["query"]
            first, second = np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"])
            preferred = "first" if metric.prefers(first, second) else "second"
            response = client.post(
                f"/api/v1/sessions/{token}/answers",
                json={"seq": query["seq"], "preferred": preferred, "time_on_page_ms": 4000 + 700 * count},
            )
            assert response.status_code == 200, response.text
            state = response.json()
            count += 1
        return token


#: The coordinator's screenshots: the demo's task with the active elicitor (credible intervals), three
#: participants done and one answering.
SCREENING_STUDY: dict[str, Any] = {
    "name": "Breast cancer screening",
    "task": "A classifier decides whether a breast tumour is benign or malignant.",
    "class_names": ["benign", "malignant"],
    "population": "patients",
    "algorithm": "active_quadratic",
    "algorithm_params": {},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.65, 0.35]},
    "practice_queries": 1,
    "checks": True,
    "evaluation_queries": 6,
}
PARTICIPANTS = (
    QuadraticMetric(np.array([0.45, 0.89]), np.zeros((2, 2))),
    QuadraticMetric(np.array([0.3, 0.8]), np.array([[-0.3, 0.0], [0.0, -0.4]])),
    QuadraticMetric(np.array([0.5, 0.7]), np.array([[-0.05, 0.0], [0.0, -0.05]])),
    QuadraticMetric(np.array([0.6, 0.4]), np.zeros((2, 2))),
)


def _log_in(page: Page, live_server: Any) -> None:
    """Log ``page`` in to the back office as the screenshots' coordinator (made on first use)."""
    with live_server.app.state.sessionmaker() as db:
        if find_user(db, "coordinator@example.org") is None:
            create_user(db, "coordinator@example.org", ADMIN_PASSWORD, Role.ADMIN.value)
    page.goto(f"{live_server.url}/admin/login")
    page.get_by_test_id("login-email").fill("coordinator@example.org")
    page.get_by_test_id("login-password").fill(ADMIN_PASSWORD)
    _click_through(page, "login-submit")


def _coordinator_pages(page: Page, live_server: Any, device: str) -> None:
    """Dashboard and results as a coordinator sees them, and a participant's result with curvature."""
    study = live_server.create_study(**SCREENING_STUDY)
    tokens = [
        _finish_over_api(live_server.url, study.id, metric, answers=5 if index == 3 else None)
        for index, metric in enumerate(PARTICIPANTS)
    ]
    _log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/studies/{study.id}")
    expect(page.get_by_test_id("query-region")).to_be_visible()
    _shoot(page, f"admin-study-{device}", full_page=True)
    page.goto(f"{live_server.url}/admin/studies/{study.id}/monitor")
    expect(page.get_by_test_id("monitor")).to_have_attribute("data-live", "on")
    _shoot(page, f"admin-dashboard-{device}")
    page.goto(f"{live_server.url}/admin/studies/{study.id}/results")
    expect(page.get_by_test_id("results")).to_be_visible()
    _shoot(page, f"admin-results-{device}", full_page=True)
    page.goto(f"{live_server.url}/sessions/{tokens[1]}/result")
    _shoot(page, f"participant-7-result-curved-{device}", full_page=True)


def test_screenshot_coordinator_pages_on_a_laptop(page: Page, live_server: Any, health: Any) -> None:
    page.set_viewport_size(LAPTOP_STEPS)
    _coordinator_pages(page, live_server, "laptop")


def test_screenshot_coordinator_pages_on_a_phone(phone: Page, live_server: Any) -> None:
    _coordinator_pages(phone, live_server, "phone")


def _panel_pages(page: Page, live_server: Any, device: str) -> None:
    """The study form's panel, completion and framing settings, and a Prolific participant's entry and end."""
    _log_in(page, live_server)
    page.goto(f"{live_server.url}/admin/studies/new")
    page.get_by_test_id("field-panel").select_option("prolific")
    page.get_by_test_id("field-completion-code").fill("C1A2B3C4")
    page.get_by_test_id("field-redirect-url").fill(PROLIFIC_REDIRECT)
    page.get_by_test_id("field-frame-ancestors").fill("https://*.qualtrics.com")
    top = page.get_by_test_id("field-resume-by-code").bounding_box()
    bottom = page.get_by_test_id("field-frame-ancestors").bounding_box()
    assert top is not None and bottom is not None
    scroll = page.evaluate("() => window.scrollY")
    IMAGES.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(IMAGES / f"admin-study-form-panel-{device}.png"),
        full_page=True,
        clip={
            "x": 0,
            "y": scroll + top["y"] - 16,
            "width": page.viewport_size["width"] if page.viewport_size else 1366,
            "height": bottom["y"] + bottom["height"] - top["y"] + 32,
        },
    )
    study = live_server.create_study(
        name="Breast cancer screening (Prolific)",
        panel="prolific",
        completion_code="C1A2B3C4",
        redirect_url=PROLIFIC_REDIRECT,
        redirect_delay_seconds=60,
        practice_queries=0,
        checks=False,
        evaluation_queries=0,
    )
    page.goto(
        f"{live_server.url}/studies/{study.id}/join?PROLIFIC_PID=5f1a9c0e2b7d4e0012ab34cd&STUDY_ID=6543&SESSION_ID=abc"
    )
    _shoot(page, f"participant-panel-consent-{device}")
    page.get_by_test_id("consent-checkbox").check()
    _click_through(page, "consent-submit")
    _click_through(page, "begin")
    while "/result" not in page.url:
        _click_through(page, "choose-left")
    expect(page.get_by_test_id("forward-note")).to_be_visible()
    _shoot(page, f"participant-panel-thank-you-{device}")


#: Prolific's completion address as a coordinator would enter it.
PROLIFIC_REDIRECT = "https://app.prolific.com/submissions/complete?cc={completion_code}"


def test_screenshot_panel_settings_and_pages_on_a_laptop(page: Page, live_server: Any, health: Any) -> None:
    page.set_viewport_size(LAPTOP_STEPS)
    _panel_pages(page, live_server, "laptop")


def test_screenshot_panel_settings_and_pages_on_a_phone(phone: Page, live_server: Any) -> None:
    _panel_pages(phone, live_server, "phone")
