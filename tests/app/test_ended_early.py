"""A session whose elicitor raises `ElicitationError` mid-session ends early, gracefully and without loss.

The elicitor is the study's real one, wrapped so that it fails on a chosen answer (as a numerical failure
or any other core error would): the participant gets the thank-you page with their completion code and a
note that their answers are saved, the coordinator sees the reason on the dashboard and in the export, and
every answer given is in the log. Never a 500.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest
from app_support import METRIC, Participant, make_study, new_session
from fastapi.testclient import TestClient
from sqlalchemy import delete, select, update

from app import repository as repo
from app.admin.export import result_rows
from app.admin.monitor import study_dashboard
from app.models import ElicitationSession, Result, SessionStatus
from app.sessions.runtime import StudyRuntime
from elicitation import ElicitationError, Elicitor, InvalidConfigError, NumericalError, Query

#: Elicitor answers the wrapped elicitor absorbs; the next one makes it fail.
FAILS_AFTER = 3


def _failing(inner: Elicitor[Any], error: ElicitationError) -> Generator[Query, bool, Any]:
    query = next(inner)
    for _ in range(FAILS_AFTER):
        answer = yield query
        query = inner.send(answer)
    yield query
    raise error


@pytest.fixture(params=[NumericalError, InvalidConfigError], ids=["numerical", "config"])
def failing(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> type[ElicitationError]:
    """Every session elicitor of this test fails on its answer after `FAILS_AFTER` (built or replayed)."""
    error_type: type[ElicitationError] = request.param
    built = StudyRuntime.elicitor

    def elicitor(self: StudyRuntime, seed: int, version: str | None) -> Elicitor[Any]:
        inner = built(self, seed, version)
        error = error_type("no pair is left to ask")
        return Elicitor(_failing(inner, error), name=inner.name, max_queries=inner.max_queries)

    monkeypatch.setattr(StudyRuntime, "elicitor", elicitor)
    return error_type


def _answer_until_done(client: TestClient, token: str) -> tuple[dict[str, Any], int]:
    """Answer over the JSON API until the session is done: (final state, answers posted)."""
    participant = Participant(METRIC)
    state = client.get(f"/api/v1/sessions/{token}").json()
    posted = 0
    while state["query"] is not None:
        state = participant.answer(client, token, state)
        posted += 1
    return state, posted


def test_the_json_api_ends_the_session_with_its_code_and_keeps_every_answer(
    app: Any, failing: type[ElicitationError]
) -> None:
    study = make_study(app)
    client = TestClient(app)
    token = new_session(client, study)
    state, posted = _answer_until_done(client, token)
    assert state["status"] == "done"
    result = state["result"]
    assert result["ended_early"] is True and result["completion_code"]
    assert result["metric"]["type"] == "failed"
    assert result["metric"]["reason"] == f"{failing.__name__}: no pair is left to ask"
    # The practice pair, the answers the elicitor absorbed and the one it failed on; no checks or final
    # comparisons after the failure.
    with app.state.sessionmaker() as db:
        session = db.scalars(select(ElicitationSession)).one()
        rows = list(repo.log_rows(db, session.id))
    assert len(rows) == posted
    assert sum(row.phase == "elicitation" for row in rows) == FAILS_AFTER + 1
    assert [row.phase for row in rows][-1] == "elicitation"
    # A further answer is refused as the finished session it is; nothing is added.
    again = client.post(f"/api/v1/sessions/{token}/answers", json={"seq": posted, "preferred": "first"})
    assert again.status_code == 409 and again.json()["error"] == "session_finished"


def test_the_participant_pages_thank_with_the_code_and_a_note_that_answers_are_saved(
    app: Any, failing: type[ElicitationError]
) -> None:
    study = make_study(app)
    client = TestClient(app)
    token = new_session(client, study)
    participant = Participant(METRIC)
    for _ in range(50):
        state = client.get(f"/api/v1/sessions/{token}").json()
        if state["query"] is None:
            break
        form = {"seq": state["query"]["seq"], "preferred": participant.choose(state["query"])}
        response = client.post(f"/sessions/{token}/answers", data=form, follow_redirects=False)
        assert response.status_code == 303, response.text
    assert response.headers["location"] == f"/sessions/{token}/result"
    page = client.get(f"/sessions/{token}/result")
    assert page.status_code == 200
    assert 'data-testid="ended-early"' in page.text
    assert "Every answer you gave is saved" in page.text
    code = client.get(f"/api/v1/sessions/{token}").json()["result"]["completion_code"]
    assert f'data-testid="completion-code">{code}<' in page.text
    # The question page itself forwards to the thank-you page.
    again = client.get(f"/sessions/{token}", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == f"/sessions/{token}/result"


def test_a_failure_met_while_replaying_an_unfinished_log_ends_the_session_too(
    app: Any, failing: type[ElicitationError]
) -> None:
    """The failing answer was committed but the process died before the result: the next request, with
    nothing cached, replays the log, meets the failure and ends the session then."""
    study = make_study(app)
    client = TestClient(app)
    token = new_session(client, study)
    _state, posted = _answer_until_done(client, token)
    with app.state.sessionmaker() as db:
        db.execute(delete(Result))
        db.execute(update(ElicitationSession).values(status=SessionStatus.ACTIVE.value, completion_code=None))
        db.commit()
    app.state.session_cache.clear()
    state = TestClient(app).get(f"/api/v1/sessions/{token}").json()
    assert state["status"] == "done" and state["result"]["ended_early"] is True
    assert state["result"]["completion_code"] and state["progress"]["answered"] == posted


def test_the_coordinator_sees_the_reason_on_the_dashboard_and_in_the_export(
    app: Any, failing: type[ElicitationError]
) -> None:
    study = make_study(app)
    client = TestClient(app)
    _answer_until_done(client, new_session(client, study))
    reason = f"{failing.__name__}: no pair is left to ask"
    with app.state.sessionmaker() as db:
        stored = db.get(type(study), study.id)
        dashboard = study_dashboard(db, app.state.session_cache, stored)
        rows = list(result_rows(db, stored))
    assert [item["reasons"] for item in dashboard.inconsistent] == [[f"ended early, no metric: {reason}"]]
    assert len(rows) == 1 and rows[0]["status"] == "done"
    assert rows[0]["metric_type"] == "failed" and rows[0]["ended_early_reason"] == reason
