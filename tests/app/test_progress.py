"""Progress sections and the study-length estimate a participant is shown."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.admin.planner import plan_study
from app.models import Phase
from app.progress import progress_sections
from app.study_config import StudyConfig


def _states(**kwargs: Any) -> list[tuple[str, int, int, str]]:
    return [(s.name, s.size, s.done, s.state) for s in progress_sections(**kwargs)]


def test_sections_follow_the_participant_through_practice_questions_and_final_checks() -> None:
    common = {"practice": 2, "evaluation": 3}
    assert _states(**common, total=20, answered=1, phase=Phase.PRACTICE) == [
        ("Practice", 2, 1, "current"),
        ("Questions", 15, 0, "upcoming"),
        ("Final checks", 3, 0, "upcoming"),
    ]
    # Interleaved checks are questions as far as the participant is told.
    for phase in (Phase.ELICITATION, Phase.CHECK):
        assert _states(**common, total=20, answered=6, phase=phase)[1] == ("Questions", 15, 4, "current")
    assert _states(**common, total=18, answered=16, phase=Phase.EVALUATION) == [
        ("Practice", 2, 2, "done"),
        ("Questions", 13, 13, "done"),
        ("Final checks", 3, 1, "current"),
    ]
    assert [s.state for s in progress_sections(**common, total=18, answered=18, phase=None)] == ["done"] * 3


def test_sections_without_practice_or_final_checks_are_left_out() -> None:
    assert _states(practice=0, evaluation=0, total=9, answered=4, phase=Phase.ELICITATION) == [
        ("Questions", 9, 4, "current")
    ]


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
