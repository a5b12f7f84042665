"""The dashboard's drop-off counts only sessions that stopped, on an axis of the study's length, and each
session's duration is on the dashboard."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, finished_session, login, open_study
from fastapi.testclient import TestClient

from app.admin import monitor
from app.charts.monitor import dropoff_figure
from app.models import Study, utcnow


def _dashboard(app: Any, study_id: str, minutes_later: float) -> monitor.StudyDashboard:
    with app.state.sessionmaker() as db:
        study = db.get(Study, uuid.UUID(study_id))
        return monitor.study_dashboard(
            db, app.state.session_cache, study, now=utcnow() + timedelta(minutes=minutes_later)
        )


def test_only_sessions_quiet_for_the_stated_time_count_as_stopped(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    study_id = open_study(client, accounts["alice"]["token"], STUDY_CONFIG)
    finished_session(client, study_id, METRIC, "done-1")
    person = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    state = client.get(f"/api/v1/sessions/{person}").json()
    for _ in range(2):
        state = Participant(METRIC).answer(client, person, state)
    answering = _dashboard(app, study_id, monitor.STOPPED_AFTER_MIN - 1)
    assert answering.dropoff == {} and answering.stopped == 0
    assert answering.by_status["active"] == 1
    stopped = _dashboard(app, study_id, monitor.STOPPED_AFTER_MIN + 1)
    assert stopped.dropoff == {2: 1} and stopped.stopped == 1
    rows = {row["participant_code"]: row for row in stopped.sessions}
    assert rows[None]["stopped"] and not rows["done-1"]["stopped"]
    # The page says what "stopped" means, and the counts beside it add up.
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{study_id}/monitor").text
    assert f"no answer for {monitor.STOPPED_AFTER_MIN} min" in page
    assert 'data-testid="count-stopped">0<' in page and 'data-testid="count-active">1<' in page


def test_each_session_shows_its_duration_as_the_export_does(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    study_id = open_study(client, token, STUDY_CONFIG)
    finished_session(client, study_id, METRIC, "done-1")
    exported = client.get(f"/api/v1/studies/{study_id}/results", headers=bearer(token)).json()["results"]
    dashboard = client.get(f"/api/v1/studies/{study_id}/dashboard", headers=bearer(token)).json()
    row = dashboard["sessions"][0]
    assert row["duration_s"] == exported[0]["duration_s"] and row["duration"] == f"{int(row['duration_s'])} s"
    login(client, "alice@example.org")
    assert 'data-testid="session-duration"' in client.get(f"/admin/studies/{study_id}/monitor").text


def test_the_dropoff_axis_spans_the_study_with_bars_one_answer_wide() -> None:
    figure = dropoff_figure({0: 1, 12: 2}, typical_total=40, stopped_after_min=30)["figure"]
    xaxis = figure["layout"]["xaxis"]
    assert xaxis["range"] == [-0.5, 40.5]
    (bars,) = figure["data"]
    assert bars["x"] == [0, 12] and bars["width"] == [0.8, 0.8]
    # A session that went past the typical length still fits.
    assert dropoff_figure({55: 1}, 40, 30)["figure"]["layout"]["xaxis"]["range"] == [-0.5, 55.5]
