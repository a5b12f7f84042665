"""Every chart's text fits inside the chart, at the sizes the screenshots use (a 1280 x 800 laptop and a
390 x 844 phone): the participant's thank-you page, the coordinator's results, session, dashboard and
panel pages, for a quadratic and a two-group fairness study whose class names are as long as Adult's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from conftest import FAIRNESS_STUDY, PHONE
from e2e_support import answer_to_the_end, labels_outside_their_charts, sign_in
from playwright.sync_api import Browser, Page, expect

from app.admin.auth import create_user
from app.admin.models import Role
from app.sessions import create_session
from app.sessions.tokens import load_session
from elicitation import FairQuadraticMetric, QuadraticMetric
from elicitation.catalogue.registry import group_tau

pytestmark = pytest.mark.e2e

LAPTOP = {"width": 1280, "height": 800}
PASSWORD = "chart labels password 12345"
#: Adult's classes and groups: the longest names of the bundled datasets with groups.
NAMES = {"class_names": ["income <=50K", "income >50K"], "population": "people"}
QUADRATIC = {
    **FAIRNESS_STUDY,
    **NAMES,
    "name": "Income decisions",
    "group_names": [],
    "algorithm": "qpme",
    "algorithm_params": {"epsilon": 0.3, "cycles": 1},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.75, 0.25]},
    "evaluation_queries": 2,
}
FAIR = {**FAIRNESS_STUDY, **NAMES, "name": "Fair income decisions", "group_names": ["Female", "Male"]}


def _finish(live_server: Any, study: Any, metrics: list[Any]) -> str:
    """Participants with these metrics finish over the JSON API; the last one's session token."""
    token = ""
    for index, metric in enumerate(metrics):
        with live_server.app.state.sessionmaker() as db:
            _session, token = create_session(
                db,
                live_server.app.state.session_cache,
                study.id,
                participant_code=f"Participant {index + 1}",
                consented=True,
                require_open=False,
            )
        answer_to_the_end(live_server.url, token, metric.prefers)
    return token


@pytest.fixture(scope="module")
def finished(live_server: Any) -> Iterator[list[tuple[Any, str]]]:
    """A quadratic and a fairness study, each with three finished participants who disagree."""
    quadratic = live_server.create_study(**QUADRATIC)
    bowl = np.array([[-0.3, 0.0], [0.0, -0.2]])
    quadratic_token = _finish(
        live_server,
        quadratic,
        [QuadraticMetric(np.array(a), bowl) for a in ([0.3, 0.8], [0.8, 0.3], [0.6, 0.6])],
    )
    fair = live_server.create_study(**FAIR)
    tau = group_tau(fair.config["query_space"]["priors"], None)
    fair_token = _finish(
        live_server,
        fair,
        [
            FairQuadraticMetric(a=np.array([0.5, 0.85]), B_pairs={(0, 1): np.eye(2)}, lam=lam, tau=tau)
            for lam in (0.05, 0.8, 0.21)
        ],
    )
    with live_server.app.state.sessionmaker() as db:
        create_user(db, "charts@example.org", PASSWORD, Role.ADMIN.value)
    yield [(quadratic, quadratic_token), (fair, fair_token)]


def _pages(base: str, study: Any, token: str, session_id: str) -> list[str]:
    admin = f"{base}/admin/studies/{study.id}"
    return [
        f"{base}/sessions/{token}/result",
        f"{admin}/results",
        f"{admin}/sessions/{session_id}",
        f"{admin}/monitor",
        f"{admin}/panel",
    ]


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_no_chart_label_is_cut_at_laptop_or_phone_width(
    browser: Browser, live_server: Any, finished: list[tuple[Any, str]], viewport: dict[str, int]
) -> None:
    context = browser.new_context(viewport=viewport, is_mobile=viewport == PHONE, has_touch=viewport == PHONE)
    page: Page = context.new_page()
    page.goto(f"{live_server.url}/admin/login")
    sign_in(page, "charts@example.org", PASSWORD)
    cut: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for study, token in finished:
        with live_server.app.state.sessionmaker() as db:
            session_id = str(load_session(db, token).id)
        for url in _pages(live_server.url, study, token, session_id):
            page.goto(url)
            expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
            drawn, outside = labels_outside_their_charts(page)
            seen |= {f"{url.rsplit('/', 1)[-1]}:{chart}" for chart in drawn}
            cut += [(url.removeprefix(live_server.url), chart, text) for chart, text in outside]
    context.close()
    assert cut == [], "\n".join(" | ".join(item) for item in cut)
    # Every kind of chart was drawn and measured: participant's, results', dashboard's and panel's.
    assert {"result", "results", "monitor", "panel"} <= {name.split(":")[0] for name in seen}, seen
