"""A study in German, in a real browser: every page of the path speaks German, including what the page's
scripts write (flow-chart totals, the table toggle, the "paused" notice), the keyboard still answers and
axe-core finds no serious violation on the German pages."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from test_accessibility import _assert_accessible

pytestmark = pytest.mark.e2e

GERMAN = {
    "name": "Brustkrebs-Früherkennung",
    "task": "Ein Klassifikator entscheidet anhand einer Biopsie, ob ein Tumor gutartig oder bösartig ist.",
    "class_names": ["gutartig", "bösartig"],
    "population": "Patienten",
    "language": "de",
    # No forward to a panel: the thank-you page stays put while it is checked.
    "redirect_url": None,
}
#: A hidden tab longer than session.js's notice threshold (2 s).
AWAY_MS = 2300
#: Where screenshots go when SCREENSHOT_DIR is set (for looking at the translated page by eye).
SCREENSHOT_DIR = os.environ.get("SCREENSHOT_DIR")


def _shoot(page: Page, name: str) -> None:
    if SCREENSHOT_DIR:
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / name), full_page=True)


def test_a_german_study_is_german_from_consent_to_thank_you(
    page: Page, live_server: Any, health: Any
) -> None:
    study = live_server.create_study(**GERMAN)
    page.goto(f"{live_server.url}/studies/{study.id}/join")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("html")).to_have_attribute("dir", "ltr")
    expect(page.get_by_role("heading", name="Bevor Sie beginnen")).to_be_visible()
    _assert_accessible(page, "German consent page")
    page.get_by_label("Ich habe das Obenstehende gelesen und bin mit der Teilnahme einverstanden.").check()
    with page.expect_navigation():
        page.get_by_role("button", name="Starten").click()
    expect(page.get_by_role("heading", name="So funktioniert es")).to_be_visible()
    with page.expect_navigation():
        page.get_by_role("link", name="Beginnen").click()

    # The practice question: German buttons, German chart labels written by charts.js from the table.
    expect(page.get_by_test_id("practice-banner")).to_contain_text("Übung")
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    expect(page.get_by_role("button", name="Ich bevorzuge Klassifikator A")).to_be_visible()
    expect(page.locator(".sankey-box-label__total").first).to_have_text("65 insgesamt")
    toggle = page.get_by_test_id("table-toggle")
    expect(toggle).to_have_text("Zahlen als Tabellen zeigen")
    toggle.click()
    expect(toggle).to_have_text("Tabellen ausblenden")
    expect(page.get_by_test_id("counts-left-0")).to_contain_text("Tatsächlich: gutartig")
    _shoot(page, "question-de-desktop.png")
    _assert_accessible(page, "German practice question")

    # The "paused" notice of session.js, with German plural forms.
    page.evaluate(
        """() => {
            const set = (hidden) => {
                Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
                document.dispatchEvent(new Event("visibilitychange"));
            };
            set(true);
            window.__setHidden = set;
        }"""
    )
    page.wait_for_timeout(AWAY_MS)
    page.evaluate("() => window.__setHidden(false)")
    expect(page.get_by_test_id("resume-notice")).to_contain_text(
        re.compile(r"Die Studie war \d+ Sekunden lang pausiert")
    )

    # Answer everything by keyboard (left arrow: Classifier A) to the thank-you page.
    for _ in range(60):
        if "/result" in page.url:
            break
        expect(page.get_by_test_id("choices")).to_be_visible()
        with page.expect_navigation():
            page.keyboard.press("ArrowLeft")
    expect(page.get_by_role("heading", name="Vielen Dank!")).to_be_visible()
    expect(page.get_by_test_id("result-headline")).to_contain_text("Fehler")
    expect(page.get_by_test_id("cost-table")).to_contain_text("Kosten pro Person")
    _assert_accessible(page, "German thank-you page")


def test_a_german_question_fits_a_phone(phone: Page, live_server: Any) -> None:
    page = phone
    width = page.viewport_size["width"]
    study = live_server.create_study(**GERMAN, practice_queries=0)
    page.goto(f"{live_server.url}/studies/{study.id}/join")
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    with page.expect_navigation():
        page.get_by_test_id("begin").click()
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    left = page.get_by_test_id("choose-left")
    right = page.get_by_test_id("choose-right")
    # The buttons say "Ich bevorzuge A" on a phone (the word "Klassifikator" is hidden) and sit on one row.
    expect(left).to_have_accessible_name("Ich bevorzuge A")
    left_box, right_box = left.bounding_box(), right.bounding_box()
    assert left_box is not None and right_box is not None
    assert abs(left_box["y"] - right_box["y"]) < 4
    bar = page.get_by_test_id("choices").bounding_box()
    assert bar is not None and bar["height"] <= 90, "the answer bar stays one slim row in German too"
    assert right_box["x"] + right_box["width"] <= width
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    _shoot(page, "question-de-phone.png")
