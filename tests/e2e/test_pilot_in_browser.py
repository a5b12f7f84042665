"""A coordinator pilots their study from the study page in Chromium, and the dashboard tells the pilot, the
people answering and those who stopped apart, with each session's duration, at laptop and phone size.

``LOOK_DIR=/some/dir`` also saves the dashboard's screenshots there (1280 x 800 and 390 x 844) to look at.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e_support import sign_in
from playwright.sync_api import Page, expect
from sqlalchemy import select, update

from app.admin.auth import create_user
from app.admin.models import Role
from app.admin.monitor import STOPPED_AFTER_MIN
from app.models import Answer, ElicitationSession, utcnow
from app.sessions.tokens import hash_token

pytestmark = pytest.mark.e2e

PASSWORD = "pilot test password for a throw-away database"
#: The brief's desktop size, smaller than the docs' laptop screenshots.
DESKTOP = {"width": 1280, "height": 800}


def _answer_over_api(base_url: str, study_id: Any, answers: int) -> Any:
    """A scripted participant who answers ``answers`` questions (always the left one); a condition that
    finds their session."""
    with httpx.Client(base_url=base_url, timeout=10) as client:
        token = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
        state = client.get(f"/api/v1/sessions/{token}").json()
        for _ in range(answers):
            seq = state["query"]["seq"]
            state = client.post(
                f"/api/v1/sessions/{token}/answers", json={"seq": seq, "preferred": "first"}
            ).json()
    return ElicitationSession.token_hash == hash_token(token)


def _look(page: Page, name: str) -> None:
    where = os.environ.get("LOOK_DIR")
    if where:
        expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
        page.screenshot(path=str(Path(where) / f"{name}.png"), full_page=True)


def test_a_pilot_from_the_study_page_shows_on_the_dashboard_as_such(
    page: Page, phone: Page, live_server: Any, health: Any
) -> None:
    study = live_server.create_study()
    with live_server.app.state.sessionmaker() as db:
        create_user(db, "pilot@example.org", PASSWORD, Role.ADMIN.value)
    stopped = _answer_over_api(live_server.url, study.id, 3)
    _answer_over_api(live_server.url, study.id, 2)  # still answering
    with live_server.app.state.sessionmaker() as db:  # the first person left 45 minutes ago
        stopped = db.scalars(select(ElicitationSession.id).where(stopped)).one()
        earlier = utcnow() - timedelta(minutes=STOPPED_AFTER_MIN + 15)
        db.execute(update(Answer).where(Answer.session_id == stopped).values(created_at=earlier))
        db.execute(
            update(ElicitationSession)
            .where(ElicitationSession.id == stopped)
            .values(created_at=earlier - timedelta(minutes=2), consented_at=earlier - timedelta(minutes=2))
        )
        db.commit()
    page.set_viewport_size(DESKTOP)
    page.goto(f"{live_server.url}/admin/studies/{study.id}")
    sign_in(page, "pilot@example.org", PASSWORD)
    with page.expect_navigation():
        page.get_by_test_id("start-pilot").click()
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    with page.expect_navigation():
        page.get_by_test_id("begin").click()
    while "/result" not in page.url:
        with page.expect_navigation():
            page.get_by_test_id("choose-left").click()
    page.goto(f"{live_server.url}/admin/studies/{study.id}/monitor")
    expect(page.get_by_test_id("count-pilots")).to_contain_text("1")
    expect(page.get_by_test_id("count-active")).to_have_text("1")
    expect(page.get_by_test_id("count-stopped")).to_contain_text("1")
    expect(page.get_by_test_id("count-done")).to_have_text("0")  # the pilot finished, and is no participant
    expect(page.get_by_test_id("pilot-badge")).to_have_count(1)
    expect(page.get_by_test_id("stopped-badge")).to_have_count(1)
    pilot_row = page.locator('[data-testid="session-row"][data-pilot="true"]')
    expect(pilot_row.get_by_test_id("session-duration")).not_to_have_text("—")
    _look(page, "dashboard-desktop")
    phone.context.add_cookies(page.context.cookies())
    phone.goto(f"{live_server.url}/admin/studies/{study.id}/monitor")
    expect(phone.get_by_test_id("pilot-badge")).to_have_count(1)
    _look(phone, "dashboard-phone")
