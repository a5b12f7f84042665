"""The study-length estimate a participant is shown before starting and in the instructions."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.admin.planner import plan_study
from app.study_config import StudyConfig


@pytest.mark.parametrize("where", ["join", "invitation", "instructions"])
def test_consent_and_instructions_state_the_planners_estimate(
    client: TestClient, app: Any, study: Any, where: str
) -> None:
    plan = plan_study(StudyConfig.model_validate(study.config))
    questions = round(plan.comparisons_mean)
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
