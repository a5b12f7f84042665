from typing import Any
from playwright.sync_api import Page, expect

def test_views(page: Page, live_server: Any) -> None:
    study = live_server.create_study(evaluation_queries=0, checks=False, practice_queries=1)
    token = live_server.invite(study)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{live_server.url}/sessions/{token}")
    page.screenshot(path="/tmp/vis/v-consent.png", full_page=True)
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    page.screenshot(path="/tmp/vis/v-instructions.png", full_page=True)
    with page.expect_navigation():
        page.get_by_test_id("begin").click()
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    page.screenshot(path="/tmp/vis/v-practice.png", full_page=False)
    while "/result" not in page.url:
        with page.expect_navigation():
            page.get_by_test_id("choose-right").click()
    page.wait_for_timeout(1500)
    page.screenshot(path="/tmp/vis/v-result.png", full_page=True)
    page.goto(f"{live_server.url}/sessions/nonexistenttoken")
    page.screenshot(path="/tmp/vis/v-404.png", full_page=True)
