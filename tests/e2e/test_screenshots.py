"""README screenshots, regenerated on demand; skipped otherwise so ordinary runs never rewrite images.

UPDATE_SCREENSHOTS=1 .venv/bin/pytest -m e2e tests/e2e/test_screenshots.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("UPDATE_SCREENSHOTS") != "1", reason="set UPDATE_SCREENSHOTS=1 to regenerate"
    ),
]

IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
#: A common laptop viewport; device scale 1 keeps the PNG small.
VIEWPORT = {"width": 1440, "height": 1000}


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
