"""People's time per comparison: only participant-page answers with a plausible page timer price a study.

Answers through the JSON API (scripts, simulated participants, benchmarks) and rows recorded before the
channel was logged are never counted; each session's median counts once.
"""

from __future__ import annotations

from typing import Any

import pytest
from app_support import new_session
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.admin.monitor import study_dashboard
from app.models import Answer, AnswerChannel
from app.planning import DEFAULT_SECONDS_PER_QUERY, measured_seconds_per_query, study_pace, study_plan


def _measured(app: Any, study: Any) -> float | None:
    with app.state.sessionmaker() as db:
        return measured_seconds_per_query(db, study.id)


def _page_answers(client: TestClient, token: str, timings: list[tuple[int | None, int | None]]) -> None:
    """Answer on the participant page, posting the page timer and hidden time the page's script fills."""
    for time_on_page, hidden in timings:
        seq = client.get(f"/api/v1/sessions/{token}").json()["query"]["seq"]
        form = {"seq": str(seq), "preferred": "first"}
        form["time_on_page_ms"] = "" if time_on_page is None else str(time_on_page)
        form["hidden_ms"] = "" if hidden is None else str(hidden)
        response = client.post(f"/sessions/{token}/answers", data=form, follow_redirects=False)
        assert response.status_code == 303, response.text


def _api_answers(client: TestClient, token: str, times_ms: list[int]) -> None:
    for time_on_page in times_ms:
        seq = client.get(f"/api/v1/sessions/{token}").json()["query"]["seq"]
        response = client.post(
            f"/api/v1/sessions/{token}/answers",
            json={"seq": seq, "preferred": "second", "time_on_page_ms": time_on_page},
        )
        assert response.status_code == 200, response.text


def _channels(app: Any) -> list[str | None]:
    with app.state.sessionmaker() as db:
        return list(db.scalars(select(Answer.channel).order_by(Answer.session_id, Answer.seq)))


def test_each_answer_records_the_channel_it_came_through(client: TestClient, app: Any, study: Any) -> None:
    page, api = new_session(client, study), new_session(client, study)
    _page_answers(client, page, [(9000, 0)])
    _api_answers(client, api, [9000])
    assert sorted(_channels(app), key=str) == [AnswerChannel.API.value, AnswerChannel.PAGE.value]


def test_api_answers_never_count_as_peoples_time(client: TestClient, app: Any, study: Any) -> None:
    for _ in range(2):
        _api_answers(client, new_session(client, study), [12_000, 12_000, 12_000, 12_000])
    assert _measured(app, study) is None
    _page_answers(client, new_session(client, study), [(20_000, 0), (30_000, 0), (40_000, 0)])
    assert _measured(app, study) == 30.0
    # The dashboard shows both: every answer's median time, and people's time that prices the plan.
    with app.state.sessionmaker() as db:
        dashboard = study_dashboard(db, app.state.session_cache, study)
    assert dashboard.people_seconds_per_query == 30.0 and dashboard.median_seconds_per_query == 12.0


def test_only_plausible_visible_page_time_counts(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    # Hidden time is left out (70 s in view of 100 s); a 0.2 s click, a 20-minute open tab and an answer
    # without the page's script are not a person's reading time.
    _page_answers(client, token, [(100_000, 30_000), (200, 0), (1_200_000, 0), (None, None), (6_000, 0)])
    assert _measured(app, study) is None  # two plausible answers: not yet a measured session
    _page_answers(client, token, [(10_000, 0)])
    assert _measured(app, study) == 10.0  # the median of 70 s, 6 s and 10 s


def test_every_session_weighs_the_same(client: TestClient, app: Any, study: Any) -> None:
    _page_answers(client, new_session(client, study), [(4_000, 0)] * 6)
    _page_answers(client, new_session(client, study), [(5_000, 0)] * 3)
    _page_answers(client, new_session(client, study), [(60_000, 0)] * 3)
    assert _measured(app, study) == 5.0


def test_answers_recorded_before_channels_are_not_counted(client: TestClient, app: Any, study: Any) -> None:
    _page_answers(client, new_session(client, study), [(7_000, 0)] * 3)
    assert _measured(app, study) == 7.0
    with app.state.sessionmaker() as db:
        db.execute(update(Answer).values(channel=None))
        db.commit()
    assert _measured(app, study) is None


def test_the_plan_is_priced_with_peoples_time_only(client: TestClient, app: Any, study: Any) -> None:
    _api_answers(client, new_session(client, study), [2_000, 2_000, 2_000, 2_000])
    with app.state.sessionmaker() as db:
        plan = study_plan(db, app.state.plan_cache, study)
    assert plan.seconds_per_query == DEFAULT_SECONDS_PER_QUERY
    assert "default" in plan.seconds_source
    _page_answers(client, new_session(client, study), [(15_000, 0)] * 3)
    with app.state.sessionmaker() as db:
        plan = study_plan(db, app.state.plan_cache, study)
    # One session of 15 s moves the prior's 12 s a quarter of the way (in log seconds), no further.
    pooled = study_pace([15.0]).median
    assert DEFAULT_SECONDS_PER_QUERY < pooled < 15.0
    assert plan.seconds_per_query == pytest.approx(pooled) and "people" in plan.seconds_source
    assert plan.minutes_mean == pytest.approx(plan.comparisons_mean * pooled / 60.0)
