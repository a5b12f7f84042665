"""The thank-you page's result is plain: one number per idea in view, the rest folded, the table fits.

A participant of an active-elicitor study reads a headline with one number, a chart and a cost table
with the likely range; "per rate", the curvature and the formula wait in "How this is calculated". On a
390 px phone the table fits the screen (or, when it cannot, shows that it scrolls).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_support import answer_to_the_end
from playwright.sync_api import Page, expect

from app.sessions import consent
from elicitation import QuadraticMetric

pytestmark = pytest.mark.e2e

#: Someone who holds a missed malignant tumour several times as bad as a false alarm, with curvature.
PERSON = QuadraticMetric(np.array([0.3, 0.8]), np.array([[-0.3, 0.0], [0.0, -0.4]]))

STUDY: dict[str, Any] = {
    "algorithm": "active_quadratic",
    "algorithm_params": {"max_queries": 12},
    "practice_queries": 0,
    "checks": False,
    "evaluation_queries": 0,
    "redirect_url": None,
}


@pytest.fixture(scope="module")
def result_path(live_server: Any) -> str:
    study = live_server.create_study(**STUDY)
    token = live_server.invite(study)
    with live_server.app.state.sessionmaker() as db:
        consent(db, live_server.app.state.session_cache, token)
    answer_to_the_end(live_server.url, token, PERSON.prefers)
    return f"{live_server.url}/sessions/{token}/result"


@pytest.mark.parametrize("device", ["laptop", "phone"])
def test_the_result_says_one_number_per_idea_and_folds_the_rest(
    device: str, result_path: str, open_device: Any
) -> None:
    page: Page = open_device(
        {"width": 1280, "height": 800} if device == "laptop" else {"width": 390, "height": 844},
        device == "phone",
    )
    page.goto(result_path)
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    summary = page.get_by_test_id("metric-summary")
    headline = page.get_by_test_id("result-headline").inner_text()
    assert "times as much" in headline and "per rate" not in headline.lower()
    # Per rate, curvature and formula are in the details, folded.
    for hidden in ("result-per-rate", "result-formula", "per-rate-table"):
        expect(page.get_by_test_id(hidden)).to_be_hidden()
    visible_text = summary.inner_text()
    for jargon in ("Per rate", "credible", "score =", "score ≈", "curvature"):
        assert jargon not in visible_text, jargon
    table = page.get_by_test_id("cost-table")
    expect(table).to_be_visible()
    assert "Likely range (90% sure)" in table.inner_text()
    # The table fits its box: no column is cut off behind a scroll bar.
    fits = page.evaluate(
        "() => { const box = document.querySelector('.table-scroll');"
        " return box.scrollWidth <= box.clientWidth + 1; }"
    )
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=str(Path(os.environ["SCREENSHOT_DIR"]) / f"result-{device}.png"), full_page=True)
    assert fits
    page.get_by_text("How this is calculated").click()
    expect(page.get_by_test_id("result-per-rate")).to_be_visible()
    expect(page.get_by_test_id("per-rate-table")).to_be_visible()
