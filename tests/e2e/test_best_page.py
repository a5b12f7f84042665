"""The best-classifier table of a fairness study on Adult in Chromium, on a laptop and on a phone.

Three automated participants with fair metrics answer over the JSON API; the coordinator opens the
results page, sees each metric's best classifier with its trade-off beside the most accurate one, and
downloads the table. The wide table scrolls inside its own region: the page itself never scrolls sideways.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_support import answer_to_the_end, sign_in
from playwright.sync_api import Page, expect

from app.admin.auth import create_user
from app.admin.models import Role
from app.sessions import create_session
from elicitation.lab.feasible import build_space
from elicitation.oracles import random_fair_metric

pytestmark = pytest.mark.e2e

PASSWORD = "browser test password for a throw-away database"
EMAIL = "best@example.org"


@pytest.fixture(scope="module")
def best_study(live_server: Any) -> Any:
    space = build_space("adult", groups=True, seed=0)
    study = live_server.create_study(
        name="Income decisions",
        class_names=list(space.class_names),
        group_names=list(space.group_names),
        algorithm="fair_qpme",
        algorithm_params={"epsilon": 0.05},
        query_space=space.to_dict(),
    )
    app = live_server.app
    rng = np.random.default_rng(8)
    for index in range(3):
        with app.state.sessionmaker() as db:
            _session, token = create_session(
                db,
                app.state.session_cache,
                study.id,
                participant_code=f"Officer {index + 1}",
                consented=True,
                require_open=False,
            )
        answer_to_the_end(live_server.url, token, random_fair_metric(rng, 2, 2, tau=space.tau).prefers)
    with app.state.sessionmaker() as db:
        create_user(db, EMAIL, PASSWORD, Role.ADMIN.value)
    return study


def _open_results(page: Page, base: str, study: Any) -> None:
    page.goto(f"{base}/admin/login")
    sign_in(page, EMAIL, PASSWORD)
    page.goto(f"{base}/admin/studies/{study.id}/results")
    expect(page.get_by_test_id("best-table")).to_be_visible()


def _screenshot(page: Page, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("BEST_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    page.get_by_test_id("best-classifiers").screenshot(path=str(folder / f"{name}.png"))
    page.get_by_test_id("results-table").screenshot(path=str(folder / f"{name}-participants.png"))
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    chart = page.locator('[data-figure="fig-agreement-all"]')
    expect(chart.locator(".scatterlayer .js-line")).to_have_count(3)  # one interval over each bar
    chart.screenshot(path=str(folder / f"{name}-agreement.png"))


def _session_agreement(page: Page, tmp_path: Path, name: str) -> None:
    """A participant's page from the results table: the agreement chart has its intervals too."""
    with page.expect_navigation():
        page.get_by_test_id("results-table").get_by_role("link").first.click()
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    chart = page.locator('[data-figure="fig-agreement"]')
    expect(chart.locator(".scatterlayer .js-line")).to_have_count(3)
    _assert_no_sideways_page_scroll(page)
    folder = Path(os.environ.get("BEST_SCREENSHOTS", tmp_path))
    chart.screenshot(path=str(folder / f"{name}-session-agreement.png"))


def _assert_no_sideways_page_scroll(page: Page) -> None:
    wide = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 1, f"the page scrolls sideways by {wide}px"


def test_laptop_results_page_lists_each_metrics_best_classifier(
    page: Page, live_server: Any, best_study: Any, health: Any, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    _open_results(page, live_server.url, best_study)
    table = page.get_by_test_id("best-table")
    expect(table.get_by_test_id("best-row-participant")).to_have_count(3)
    expect(table.get_by_test_id("best-row-accuracy")).to_contain_text("Most accurate")
    expect(table.get_by_test_id("best-row-consensus")).to_contain_text("Panel consensus")
    expect(table.locator("thead")).to_contain_text("Share on equal treatment")
    expect(table.locator("thead")).to_contain_text("Female, income >50K: decided correctly")
    # every agreement percentage has its 95 % interval beside it
    agreement = page.get_by_test_id("row-agreement-elicited")
    expect(agreement).to_have_count(3)
    for cell in agreement.all():
        expect(cell).to_have_text(re.compile(r"^\d+% \(\d+–\d+\)$"))
    _assert_no_sideways_page_scroll(page)
    with page.expect_download() as download:
        page.get_by_role("link", name="Best classifiers CSV").click()
    assert download.value.suggested_filename == f"best-classifiers-{best_study.id}.csv"
    _screenshot(page, tmp_path, "admin-best-desktop")
    health.assert_clean()  # every chart drawn within the Content Security Policy


def test_phone_results_page_scrolls_the_best_table_inside_its_region(
    phone: Page, live_server: Any, best_study: Any, tmp_path: Path
) -> None:
    _open_results(phone, live_server.url, best_study)
    _assert_no_sideways_page_scroll(phone)
    region = phone.get_by_role("region", name="Best classifiers table")
    assert region.evaluate("el => el.scrollWidth > el.clientWidth"), "the table scrolls within its region"
    _screenshot(phone, tmp_path, "admin-best-phone")


def test_laptop_session_page_draws_each_agreement_with_its_interval(
    page: Page, live_server: Any, best_study: Any, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    _open_results(page, live_server.url, best_study)
    _session_agreement(page, tmp_path, "admin-best-desktop")
