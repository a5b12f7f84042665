"""The expert-panel page in Chromium: reached from the results page, charts drawn, no label clipped.

Twelve automated participants from two camps answer a three-class study over the JSON API (one of them
with a long name); the coordinator opens the results page, follows the link to the panel and sees the
split, on a laptop and on a phone. Every text Plotly draws (ticks, cell values, point labels, legends)
must lie inside its chart.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from e2e_support import answer_to_the_end, labels_outside_their_charts, sign_in
from playwright.sync_api import Page, expect

from app.admin.auth import create_user
from app.admin.models import Role
from app.sessions import create_session
from elicitation import FairQuadraticMetric, LinearMetric
from elicitation.catalogue.registry import group_tau

pytestmark = pytest.mark.e2e

PASSWORD = "browser test password for a throw-away database"
STUDY: dict[str, Any] = {
    "name": "Screening panel",
    "class_names": ["benign", "malignant", "needs a second biopsy"],
    "algorithm": "lpme",
    "algorithm_params": {"epsilon": 0.2, "cycles": 1},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.5, 0.3, 0.2]},
    "practice_queries": 0,
    "checks": False,
    "evaluation_queries": 0,
}
CAMPS = (np.array([0.9, 0.35, 0.2]), np.array([0.2, 0.45, 0.9]))
LONG_NAME = "Dr. Amelia Okonkwo-Fitzgerald (oncology, Leeds)"


@pytest.fixture(scope="module")
def panel_study(live_server: Any) -> Any:
    study = live_server.create_study(**STUDY)
    app = live_server.app
    rng = np.random.default_rng(5)
    for index in range(12):
        code = LONG_NAME if index == 0 else f"Expert {index + 1}"
        with app.state.sessionmaker() as db:
            _session, token = create_session(
                db,
                app.state.session_cache,
                study.id,
                participant_code=code,
                consented=True,
                require_open=False,
            )
        answer_to_the_end(
            live_server.url, token, LinearMetric(CAMPS[index % 2] + 0.03 * rng.standard_normal(3)).prefers
        )
    with app.state.sessionmaker() as db:
        create_user(db, "panel@example.org", PASSWORD, Role.ADMIN.value)
    return study


def _fill_fair_panel(live_server: Any, study: Any) -> None:
    """Six participants of a two-group fairness study: three care mostly about mistakes, three about gaps."""
    app = live_server.app
    tau = group_tau(study.config["query_space"]["priors"], None)
    for index in range(6):
        metric = FairQuadraticMetric(
            a=np.array([0.5, 0.85]), B_pairs={(0, 1): np.eye(2)}, lam=(0.05, 0.8)[index % 2], tau=tau
        )
        with app.state.sessionmaker() as db:
            _session, token = create_session(
                db,
                app.state.session_cache,
                study.id,
                participant_code=f"Reviewer {index + 1}",
                consented=True,
                require_open=False,
            )
        answer_to_the_end(live_server.url, token, metric.prefers)


def _login(page: Page, base: str) -> None:
    page.goto(f"{base}/admin/login")
    sign_in(page, "panel@example.org", PASSWORD)


def _open_panel(page: Page, base: str, study: Any, *, login: bool = True) -> None:
    if login:
        _login(page, base)
    page.goto(f"{base}/admin/studies/{study.id}/results")
    with page.expect_navigation():
        page.get_by_test_id("open-panel").click()
    expect(page.get_by_test_id("panel-split")).to_have_text("splits into 2 camps")
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    expect(page.locator('[data-figure="fig-panel-membership"] .ytick').first).to_be_visible()


def _assert_no_clipped_text(page: Page) -> None:
    drawn, outside = labels_outside_their_charts(page)
    assert drawn == {"fig-panel-consensus", "fig-panel-agreement", "fig-panel-membership", "fig-panel-map"}
    assert outside == []


def _screenshot(page: Page, tmp_path: Path, name: str) -> None:
    folder = Path(os.environ.get("PANEL_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    for index, chart in enumerate(page.locator("figure.chart").all()):
        chart.screenshot(path=str(folder / f"{name}-chart-{index + 1}.png"))


def test_laptop_panel_page_shows_both_camps_with_every_label_inside_its_chart(
    page: Page, live_server: Any, panel_study: Any, health: Any, tmp_path: Path
) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    _open_panel(page, live_server.url, panel_study)
    _assert_no_clipped_text(page)
    # The long name is cut on the charts, whole in the tables.
    expect(page.get_by_test_id("panel-members")).to_contain_text(LONG_NAME)
    expect(page.get_by_test_id("panel-camp")).to_have_count(2)
    with page.expect_download() as download:
        page.get_by_test_id("download-panel-csv").click()
    assert download.value.suggested_filename == f"panel-{panel_study.id}.csv"
    _screenshot(page, tmp_path, "admin-panel-desktop")


def test_phone_panel_page_keeps_every_label_inside_its_chart(
    phone: Page, live_server: Any, panel_study: Any, tmp_path: Path
) -> None:
    _open_panel(phone, live_server.url, panel_study)
    _assert_no_clipped_text(phone)
    _screenshot(phone, tmp_path, "admin-panel-phone")


def test_fair_panel_page_names_the_gap_penalties_without_clipping(
    page: Page, live_server: Any, panel_study: Any, fairness_study: Any, health: Any, tmp_path: Path
) -> None:
    _fill_fair_panel(live_server, fairness_study)
    page.set_viewport_size({"width": 1366, "height": 900})
    _open_panel(page, live_server.url, fairness_study)
    _assert_no_clipped_text(page)
    expect(page.get_by_test_id("panel-coefficients")).to_contain_text("share on equal treatment")
    _screenshot(page, tmp_path, "admin-panel-fair-desktop")
