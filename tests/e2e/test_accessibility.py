"""axe-core on every participant page, on a laptop and on a phone: no serious or critical violation.

The pages are reached the way a participant reaches them (join link, consent, instructions, practice,
questions, a two-group fairness question, the thank-you page) and checked once their charts are drawn,
so that what axe inspects is what the participant sees, plotly's SVG included.
"""

from __future__ import annotations

from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

pytestmark = pytest.mark.e2e

#: Impact levels that fail the test (axe-core also reports "moderate" and "minor").
BLOCKING_IMPACTS = {"serious", "critical"}

AXE = Axe()


def _assert_accessible(page: Page, where: str) -> None:
    if page.locator("[data-figure]").count():
        expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    results = AXE.run(page)
    blocking = [
        f"{violation['id']} ({violation['impact']}): {violation['help']} -> "
        + "; ".join(" ".join(node["target"]) for node in violation["nodes"][:4])
        for violation in results.response["violations"]
        if violation["impact"] in BLOCKING_IMPACTS
    ]
    assert blocking == [], f"{where} ({page.url}):\n" + "\n".join(blocking)


def _submit(page: Page, test_id: str) -> None:
    with page.expect_navigation():
        page.get_by_test_id(test_id).click()


def test_participant_pages_have_no_serious_axe_violation(screen: Page, live_server: Any) -> None:
    page = screen
    study = live_server.create_study(practice_queries=1, checks=False, evaluation_queries=1)
    page.goto(f"{live_server.url}/studies/{study.id}/join")
    expect(page.get_by_test_id("consent")).to_be_visible()
    _assert_accessible(page, "join and consent")
    page.get_by_test_id("consent-checkbox").check()
    _submit(page, "consent-submit")
    expect(page.get_by_test_id("instructions")).to_be_visible()
    _assert_accessible(page, "instructions")
    _submit(page, "begin")
    expect(page.get_by_test_id("practice-banner")).to_be_visible()
    _assert_accessible(page, "practice question")
    _submit(page, "choose-left")
    expect(page.get_by_test_id("comparison")).to_be_visible()
    _assert_accessible(page, "question")
    while "/result" not in page.url:
        _submit(page, "choose-right")
    expect(page.get_by_test_id("thank-you")).to_be_visible()
    _assert_accessible(page, "thank-you and result")


def test_fairness_question_has_no_serious_axe_violation(
    screen: Page, live_server: Any, fairness_study: Any
) -> None:
    page = screen
    fair = fairness_study
    page.goto(f"{live_server.url}/studies/{fair.id}/join")
    page.get_by_test_id("consent-checkbox").check()
    _submit(page, "consent-submit")
    _assert_accessible(page, "fairness instructions")
    _submit(page, "begin")
    expect(page.get_by_test_id("comparison")).to_be_visible()
    _assert_accessible(page, "fairness question")


def test_panel_pages_have_no_serious_axe_violation(screen: Page, live_server: Any) -> None:
    """A Prolific link's consent page, its refusal without a PID, "welcome back" by PID and the countdown."""
    page = screen
    study = live_server.create_study(
        panel="prolific",
        resume_by_participant_code=True,
        completion_code="C1A2B3C4",
        redirect_url="https://app.prolific.com/submissions/complete?cc={completion_code}",
        redirect_delay_seconds=600,
        practice_queries=0,
        checks=False,
        evaluation_queries=0,
    )
    join = f"{live_server.url}/studies/{study.id}/join"
    page.goto(join)
    _assert_accessible(page, "panel link without its ID")
    page.goto(f"{join}?PROLIFIC_PID=5f1a9c0e2b7d&STUDY_ID=1&SESSION_ID=2")
    expect(page.get_by_test_id("panel-id")).to_be_visible()
    _assert_accessible(page, "panel consent")
    page.get_by_test_id("consent-checkbox").check()
    _submit(page, "consent-submit")
    _submit(page, "begin")
    while "/result" not in page.url:
        _submit(page, "choose-left")
    expect(page.get_by_test_id("forward-note")).to_be_visible()
    _assert_accessible(page, "thank-you with countdown")
    page.context.clear_cookies()
    page.goto(f"{join}?PROLIFIC_PID=5f1a9c0e2b7d&STUDY_ID=1&SESSION_ID=3")
    expect(page.get_by_test_id("welcome-back")).to_be_visible()
    _assert_accessible(page, "welcome back by panel ID")


#: Relative luminance of an sRGB colour "rgb(r, g, b)" (WCAG 2), for the contrast of the focus ring.
LUMINANCE_SCRIPT = """(colour) => {
  const [r, g, b] = colour.match(/[0-9.]+/g).slice(0, 3).map(Number).map(v => v / 255)
    .map(v => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}"""


def test_the_keyboard_focus_ring_contrasts_at_least_3_to_1_with_the_page(
    page: Page, live_server: Any, health: Any
) -> None:
    study = live_server.create_study(practice_queries=0)
    page.goto(f"{live_server.url}/studies/{study.id}/join")
    page.keyboard.press("Tab")
    focused = page.evaluate(
        "() => { const el = document.activeElement; const style = getComputedStyle(el);"
        " return {tag: el.tagName, style: style.outlineStyle, width: parseFloat(style.outlineWidth),"
        " ring: style.outlineColor, page: getComputedStyle(document.body).backgroundColor}; }"
    )
    assert focused["tag"] != "BODY", "Tab reaches a control"
    assert focused["style"] == "solid" and focused["width"] >= 2, focused
    ring, background = (page.evaluate(LUMINANCE_SCRIPT, focused[key]) for key in ("ring", "page"))
    contrast = (max(ring, background) + 0.05) / (min(ring, background) + 0.05)
    assert contrast >= 3.0, (focused, contrast)
