"""A fairness study on Adult with the recommended elicitor, in Chromium on a laptop and on a phone: the
participant's result states its intervals (a range when the answers did not settle the trade-off), the
coordinator's results page ranks the real candidate classifiers with each one's chance of being best, and
the panel page shows each member's trade-off with its interval. No serious or critical axe finding; wide
tables scroll inside their own region, never the page.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from e2e_support import answer_to_the_end, sign_in
from playwright.sync_api import Page, expect
from test_accessibility import _assert_accessible

from app.admin.auth import create_user, find_user
from app.admin.models import Role
from app.algorithms import group_tau
from elicitation.lab.feasible import build_space
from elicitation.oracles import random_fair_metric

pytestmark = pytest.mark.e2e

PASSWORD = "browser test password for a throw-away database"
EMAIL = "decisions@example.org"


@pytest.fixture(scope="module")
def decided(live_server: Any) -> dict[str, Any]:
    space = build_space("adult", groups=True, seed=0)
    study = live_server.create_study(
        name="Income decisions",
        task="A classifier decides whether a person's income is above 50K.",
        class_names=list(space.class_names),
        group_names=list(space.group_names),
        algorithm="active_fair",
        algorithm_params={},
        query_space={"kind": "dataset", "recipe": {"dataset": "adult", "groups": True, "seed": 0}},
        practice_queries=0,
        checks=False,
        evaluation_queries=0,
    )
    rng = np.random.default_rng(8)
    tokens = []
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        for index, lam in enumerate((0.2, 0.6, 0.8)):
            created = client.post(
                f"/api/v1/studies/{study.id}/sessions",
                json={"consent": True, "participant_code": f"Officer {index + 1}"},
            )
            token = created.json()["token"]
            truth = random_fair_metric(
                rng, 2, 2, tau=group_tau(space.priors, None), tradeoff_range=(lam, lam)
            )
            answer_to_the_end(live_server.url, token, truth.prefers)
            tokens.append(token)
    with live_server.app.state.sessionmaker() as db:
        if find_user(db, EMAIL) is None:
            create_user(db, EMAIL, PASSWORD, Role.ADMIN.value)
    return {"study": study, "tokens": tokens}


def _folder(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("DECISION_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _no_sideways_scroll(page: Page) -> None:
    wide = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert wide <= 1, f"the page scrolls sideways by {wide}px"


def test_participant_result_states_its_intervals(
    screen: Page, live_server: Any, decided: dict[str, Any], tmp_path: Path
) -> None:
    page = screen
    name = "phone" if page.viewport_size and page.viewport_size["width"] < 500 else "laptop"
    if name == "laptop":
        page.set_viewport_size({"width": 1280, "height": 800})
    token = decided["tokens"][1]
    state = httpx.get(f"{live_server.url}/api/v1/sessions/{token}").json()
    low, high = state["result"]["intervals"]["lam"]
    page.goto(f"{live_server.url}/sessions/{token}/result")
    summary = page.get_by_test_id("metric-summary")
    expect(summary).to_be_visible()
    expect(page.get_by_test_id("result-tradeoff")).to_contain_text(
        f"{round(100 * low)}% to {round(100 * high)}%"
    )
    _assert_accessible(page, "participant result")
    _no_sideways_scroll(page)
    summary.screenshot(path=str(_folder(tmp_path) / f"result-intervals-{name}.png"))


def test_results_page_ranks_the_candidates_and_panel_page_shows_intervals(
    screen: Page, live_server: Any, decided: dict[str, Any], tmp_path: Path
) -> None:
    page = screen
    name = "phone" if page.viewport_size and page.viewport_size["width"] < 500 else "laptop"
    if name == "laptop":
        page.set_viewport_size({"width": 1280, "height": 800})
    study = decided["study"]
    page.goto(f"{live_server.url}/admin/login")
    sign_in(page, EMAIL, PASSWORD)
    page.goto(f"{live_server.url}/admin/studies/{study.id}/results")
    section = page.get_by_test_id("candidate-ranking")
    expect(section.get_by_test_id("candidate-row")).to_have_count(17)
    expect(section.get_by_test_id("candidate-ranking-row")).to_have_count(3)
    expect(page.get_by_test_id("row-lam")).to_have_count(3)
    _assert_accessible(page, "results with candidates")
    _no_sideways_scroll(page)
    folder = _folder(tmp_path)
    section.screenshot(path=str(folder / f"candidates-{name}.png"))
    page.get_by_test_id("results-table").screenshot(path=str(folder / f"results-lam-{name}.png"))
    with page.expect_download() as download:
        page.get_by_role("link", name="Candidate ranking CSV").click()
    assert download.value.suggested_filename == f"candidate-ranking-{study.id}.csv"
    page.goto(f"{live_server.url}/admin/studies/{study.id}/panel")
    members = page.get_by_test_id("panel-members")
    expect(members.get_by_test_id("member-lam")).to_have_count(3)
    _assert_accessible(page, "panel with intervals")
    _no_sideways_scroll(page)
    members.screenshot(path=str(folder / f"panel-lam-{name}.png"))
