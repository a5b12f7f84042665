"""Resume in a real browser: the study's join link continues the session; the personal link works anywhere."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e


def _click(page: Page, test_id: str) -> None:
    with page.expect_navigation():
        page.get_by_test_id(test_id).click()


def _seq(page: Page) -> str | None:
    return page.get_by_test_id("comparison").get_attribute("data-seq")


def test_join_link_in_the_same_browser_continues_and_the_personal_link_works_elsewhere(
    page: Page, phone: Page, live_server: Any, health: Any
) -> None:
    study = live_server.create_study(practice_queries=1)
    join = f"{live_server.url}/studies/{study.id}/join"
    page.goto(join)
    page.get_by_test_id("consent-checkbox").check()
    _click(page, "consent-submit")
    personal_link = page.get_by_test_id("personal-link-url").input_value()
    assert personal_link.startswith(f"{live_server.url}/sessions/")
    _click(page, "begin")
    for _ in range(2):
        _click(page, "choose-left")
    seq = _seq(page)
    assert seq == "2"
    # Later, in the same browser, the participant opens the study's link again.
    page.goto("about:blank")
    page.goto(join)
    expect(page.get_by_test_id("welcome-back")).to_contain_text("2 questions answered")
    _click(page, "continue")
    expect(page.get_by_test_id("comparison")).to_be_visible()
    assert _seq(page) == seq and page.url == personal_link
    # The personal link, bookmarked, continues on another device (a phone that has no cookie yet) ...
    phone.goto(personal_link)
    expect(phone.get_by_test_id("comparison")).to_be_visible()
    assert _seq(phone) == seq
    # ... where the join link now continues too, since that device has seen the session.
    phone.goto(join)
    expect(phone.get_by_test_id("welcome-back")).to_be_visible()
    # "Not you?" on a shared computer: the next person starts their own session.
    page.goto(join)
    _click(page, "start-afresh")
    expect(page.get_by_test_id("consent")).to_be_visible()
