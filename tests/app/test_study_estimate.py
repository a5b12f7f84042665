"""The study-length estimate a participant is shown before starting and in the instructions."""

from __future__ import annotations

import math
import re
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.planning.planner import plan_study
from app.study_config import StudyConfig

#: Longest the background simulation may take here (the planner stops itself after 6 s of wall time).
WARM_TIMEOUT_S = 60.0


@pytest.mark.parametrize("where", ["join", "invitation", "instructions"])
def test_consent_and_instructions_state_the_planners_estimate(
    client: TestClient, app: Any, study: Any, where: str
) -> None:
    config = StudyConfig.model_validate(study.config)
    plan = plan_study(config)
    questions = round(plan.comparisons_mean)
    app.state.plan_cache.plan(config)  # as the coordinator's study page does
    if where == "join":
        html = client.get(f"/studies/{study.id}/join").text
    else:
        created = client.post(f"/api/v1/studies/{study.id}/sessions", json={"consent": where != "invitation"})
        token = created.json()["token"]
        html = client.get(
            f"/sessions/{token}" if where == "invitation" else f"/sessions/{token}/instructions"
        ).text
    match = re.search(
        r'data-testid="study-length">[^<]*?about (\d+) questions?[^<]*?about (\d+) minutes?',
        html,
        re.IGNORECASE,
    )
    assert match, html[:2000]
    assert int(match.group(1)) == questions
    assert int(match.group(2)) == max(1, math.ceil(plan.minutes_mean - 0.25))
    assert "ten minutes" not in html


def test_a_participant_never_waits_for_the_planner(client: TestClient, app: Any, study: Any) -> None:
    """Before the configuration is simulated, the page says nothing about the length (never a guess)
    and starts the simulation in the background; once it is done, the page states it."""
    plans = app.state.plan_cache
    assert len(plans) == 0
    html = client.get(f"/studies/{study.id}/join").text
    assert 'data-testid="consent"' in html and 'data-testid="study-length"' not in html
    deadline = time.monotonic() + WARM_TIMEOUT_S
    while len(plans) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(plans) == 1, "the first visit starts the planner's simulation in the background"
    assert 'data-testid="study-length"' in client.get(f"/studies/{study.id}/join").text
