"""axe-core on every back-office page a coordinator meets, on a laptop and on a phone: no serious or
critical violation.

One small study with a finished participant (so the results, panel and session pages have charts and
tables) and one without (so the empty states are checked too); each page is checked once its charts are
drawn.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import numpy as np
import pytest
from e2e_support import answer_to_the_end, sign_in
from playwright.sync_api import Page
from test_accessibility import _assert_accessible

from app.admin.auth import create_user, find_user
from app.admin.models import Role

pytestmark = pytest.mark.e2e

#: Only for this test's throw-away database.
PASSWORD = "axe test password for a throw-away database"
EMAIL = "axe-coordinator@example.org"
WEIGHTS = np.array([0.35, 0.94])


def _finished_participants(base_url: str, study_id: Any, count: int) -> None:
    with httpx.Client(base_url=base_url, timeout=30) as client:
        tokens = [
            client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
            for _ in range(count)
        ]
    for index, token in enumerate(tokens):
        weights = WEIGHTS + 0.1 * index
        answer_to_the_end(base_url, token, lambda first, second, w=weights: bool(w @ first >= w @ second))


def test_coordinator_pages_have_no_serious_axe_violation(screen: Page, live_server: Any) -> None:
    page = screen
    with live_server.app.state.sessionmaker() as db:
        if find_user(db, EMAIL) is None:
            create_user(db, EMAIL, PASSWORD, Role.ADMIN.value)
    study = live_server.create_study(name="Accessible study", evaluation_queries=2)
    empty = live_server.create_study(name="Nobody yet")
    _finished_participants(live_server.url, study.id, 2)
    page.goto(f"{live_server.url}/admin/login")
    _assert_accessible(page, "login")
    sign_in(page, EMAIL, PASSWORD)
    base = f"/admin/studies/{study.id}"
    pages = {
        "studies": "/admin",
        "new study form": "/admin/studies/new",
        "import": "/admin/import",
        "API tokens": "/admin/tokens",
        "study": base,
        "dashboard": f"{base}/monitor",
        "results": f"{base}/results",
        "expert panel": f"{base}/panel",
        "empty study's results": f"/admin/studies/{empty.id}/results",
        "empty study's dashboard": f"/admin/studies/{empty.id}/monitor",
        "empty study's panel": f"/admin/studies/{empty.id}/panel",
    }
    for where, path in pages.items():
        page.goto(f"{live_server.url}{path}")
        _assert_accessible(page, where)
    page.goto(f"{live_server.url}{base}/monitor")
    session = re.search(rf"{base}/sessions/[0-9a-f-]{{36}}", page.content())
    assert session is not None
    page.goto(f"{live_server.url}{session.group(0)}")
    _assert_accessible(page, "session")
