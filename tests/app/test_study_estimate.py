"""One honest estimate: the length a participant is told comes from one source and holds.

The consent page, the instructions, the question page's "Question N of about M", its progress bars and
the API's progress all count from the session script (`SessionPlan.estimated_total`); the minutes are a
range from people's pace (`planning.study_pace`). QPME here, whose sessions once ended with a total one
above what they asked.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from app_support import Participant, make_study, new_session
from fastapi.testclient import TestClient

from app.planning import study_estimate
from elicitation import QuadraticMetric

TRUTH = QuadraticMetric(np.array([0.6, 0.8]), np.array([[-0.4, 0.1], [0.1, -0.3]]))


def _stated(html: str) -> tuple[int, int, int]:
    """(questions, fewest minutes, most minutes) as a consent or instructions page states them."""
    match = re.search(
        r'data-testid="study-length">[^<]*?about (\d+) questions?[^<]*?(\d+) to (\d+) minutes', html, re.I
    )
    assert match, html[:3000]
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


@pytest.mark.parametrize("where", ["join", "invitation", "instructions"])
def test_every_page_states_the_count_the_question_page_starts_from(
    client: TestClient, app: Any, study: Any, where: str
) -> None:
    with app.state.sessionmaker() as db:
        told = study_estimate(db, app.state.session_cache, study)
    token = new_session(client, study, consent=where == "instructions")
    page = {
        "join": f"/studies/{study.id}/join",
        "invitation": f"/sessions/{token}",
        "instructions": f"/sessions/{token}/instructions",
    }[where]
    assert _stated(client.get(page).text) == (told.questions, told.minutes_low, told.minutes_high)
    assert told.minutes_low < told.minutes_high
    if where != "instructions":
        client.post(f"/sessions/{token}/consent", data={"consent": "yes"})
    state = client.get(f"/api/v1/sessions/{token}").json()
    assert state["progress"]["estimated_total"] == told.questions
    assert f"Question 1 of about {told.questions}" in client.get(f"/sessions/{token}").text
    # Nothing was simulated for it: the page never waits for the planner.
    assert len(app.state.plan_cache) == 0


def test_the_last_question_has_nothing_left_and_a_finished_session_adds_up(
    client: TestClient, app: Any
) -> None:
    study = make_study(app, evaluation_queries=3)
    token = new_session(client, study)
    participant = Participant(TRUTH)
    state = client.get(f"/api/v1/sessions/{token}").json()
    told = state["progress"]["estimated_total"]
    totals = []
    while state["query"] is not None:
        totals.append(state["progress"]["estimated_total"])
        page = client.get(f"/sessions/{token}").text
        last = len(totals) == state["progress"]["estimated_total"]
        assert ('data-testid="progress-left"' in page) is not last
        state = participant.answer(client, token, state)
    answered = state["progress"]["answered"]
    assert state["progress"]["estimated_total"] == answered  # done: the total is what was asked
    assert totals[-1] == answered  # the last question said it was the last
    assert abs(told - answered) <= 2 and totals == [told] * len(totals)
    # On the last question the progress bar of its section was full.
    last_page = page
    current = re.search(r'aria-current="step">.*?<progress max="(\d+)" value="(\d+)"', last_page, re.S)
    assert current and current.group(1) == current.group(2)
