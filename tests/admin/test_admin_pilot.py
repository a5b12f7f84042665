"""Pilot mode: a coordinator takes their own study from the study page, and nothing of it counts.

A pilot starts at the consent page (also in a draft), is marked on the dashboard, and stays out of the
time per comparison (so out of every participant's stated length), the results, the panel and the
exports, unless an export asks for it with ``include_pilots=true``; the archive keeps it, marked.
"""

from __future__ import annotations

import csv
import io
import re
import uuid
from typing import Any

from admin_support import METRIC, STUDY_CONFIG, bearer, finished_session, hidden, login, open_study
from fastapi.testclient import TestClient

from app.admin.auth import create_api_token, create_user
from app.models import ElicitationSession
from app.planning import measured_seconds_per_query

#: The coordinator's quick click-through of the evidence (2.4 s an answer), and a plausible reader's pace.
FAST_MS = 2_400
READER_MS = 30_000


def _start_pilot(client: TestClient, study_id: str) -> str:
    """Press the study page's pilot button; the pilot's token (the page it lands on is its consent)."""
    page = client.get(f"/admin/studies/{study_id}")
    assert page.status_code == 200 and 'data-testid="start-pilot"' in page.text
    started = client.post(
        f"/admin/studies/{study_id}/pilots",
        data={"csrf_token": hidden(page.text, "csrf_token")},
        follow_redirects=False,
    )
    assert started.status_code == 303, started.text
    match = re.fullmatch(r"/sessions/([^/]+)", started.headers["location"])
    assert match, started.headers["location"]
    return match.group(1)


def _take_on_page(client: TestClient, token: str, time_on_page_ms: int) -> None:
    """Consent, then answer every question on the participant page at ``time_on_page_ms`` each."""
    consent = client.get(f"/sessions/{token}")
    assert consent.status_code == 200 and 'data-testid="consent"' in consent.text
    assert (
        client.post(f"/sessions/{token}/consent", data={"consent": "yes"}, follow_redirects=False).status_code
        == 303
    )
    for _ in range(200):
        query = client.get(f"/api/v1/sessions/{token}").json()["query"]
        if query is None:
            return
        form = {"seq": str(query["seq"]), "preferred": "first", "time_on_page_ms": str(time_on_page_ms)}
        response = client.post(
            f"/sessions/{token}/answers", data={**form, "hidden_ms": "0"}, follow_redirects=False
        )
        assert response.status_code == 303, response.text
    raise AssertionError("the session did not finish within 200 answers")


def _stated_minutes(client: TestClient, study_id: str) -> str:
    html = client.get(f"/studies/{study_id}/join").text
    match = re.search(r'data-testid="study-length">([^<]*)<', html)
    assert match, html[:2000]
    return match.group(1)


def test_a_pilot_runs_a_draft_from_the_study_page_and_is_marked_on_the_dashboard(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    created = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(accounts["alice"]["token"]))
    study_id = created.json()["id"]
    login(client, "alice@example.org")
    assert "draft" in client.get(f"/admin/studies/{study_id}").text
    token = _start_pilot(client, study_id)
    _take_on_page(client, token, FAST_MS)
    assert client.get(f"/api/v1/sessions/{token}").json()["status"] == "done"
    assert client.get(f"/sessions/{token}/result").status_code == 200
    dashboard = client.get(
        f"/api/v1/studies/{study_id}/dashboard", headers=bearer(accounts["alice"]["token"])
    ).json()
    assert dashboard["pilots"] == 1
    assert dashboard["by_status"] == {"invited": 0, "active": 0, "done": 0}
    assert [row["pilot"] for row in dashboard["sessions"]] == [True]
    monitor = client.get(f"/admin/studies/{study_id}/monitor").text
    assert 'data-testid="pilot-badge"' in monitor
    assert re.search(r'data-testid="count-pilots">1<', monitor)
    # The same draft still refuses people.
    assert client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).status_code == 409


def test_a_pilot_leaves_the_next_participants_minutes_alone(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    study_id = open_study(client, accounts["alice"]["token"], STUDY_CONFIG)
    login(client, "alice@example.org")
    client.get(
        f"/admin/studies/{study_id}"
    )  # the study page simulates the plan, as a coordinator's visit does
    before = _stated_minutes(client, study_id)
    for pace in (FAST_MS, READER_MS):
        _take_on_page(client, _start_pilot(client, study_id), pace)
    assert _stated_minutes(client, study_id) == before
    with app.state.sessionmaker() as db:
        assert measured_seconds_per_query(db, uuid.UUID(study_id)) is None
    # The same slow answers by a participant are people's time (the test above could fail).
    person = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": False}).json()["token"]
    _take_on_page(client, person, READER_MS)
    with app.state.sessionmaker() as db:
        assert measured_seconds_per_query(db, uuid.UUID(study_id)) is not None


def test_pilots_stay_out_of_results_panel_and_exports_unless_asked_for(
    client: TestClient, app: Any, fresh_app: Any, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    study_id = open_study(client, token, STUDY_CONFIG)
    finished_session(client, study_id, METRIC, "P-1")
    login(client, "alice@example.org")
    pilot = _start_pilot(client, study_id)
    _take_on_page(client, pilot, READER_MS)
    with app.state.sessionmaker() as db:
        pilot_id = str(next(s.id for s in db.query(ElicitationSession).filter_by(pilot=True)))

    def session_ids(path: str) -> set[str]:
        response = client.get(path, headers=bearer(token))
        assert response.status_code == 200, response.text
        if path.split("?")[0].endswith(".csv"):
            return {row["session_id"] for row in csv.DictReader(io.StringIO(response.text))}
        return {row["session_id"] for row in response.json()["results"]}

    base = f"/api/v1/studies/{study_id}"
    for path in (f"{base}/results", f"{base}/results.csv", f"{base}/answers.csv"):
        assert pilot_id not in session_ids(path), path
        assert pilot_id in session_ids(f"{path}?include_pilots=true"), path
    # A misspelt switch is refused, not read as "leave the pilots out".
    misspelt = client.get(f"{base}/results.csv?include_pilot=true", headers=bearer(token))
    assert misspelt.status_code == 422 and "include_pilot" in misspelt.text, misspelt.text
    with_pilots = client.get(f"{base}/results?include_pilots=true", headers=bearer(token)).json()["results"]
    assert {row["session_id"]: row["pilot"] for row in with_pilots}[pilot_id] is True
    ui = f"/admin/studies/{study_id}/export/results.csv"
    assert pilot_id not in client.get(ui).text and pilot_id in client.get(f"{ui}?include_pilots=true").text
    results_page = client.get(f"/admin/studies/{study_id}/results").text
    assert pilot_id[:8] not in results_page and 'data-testid="pilots-left-out"' in results_page
    panel = client.get(f"{base}/panel", headers=bearer(token)).json()
    assert pilot_id not in str(panel) and "P-1" in str(panel)
    # The archive is the whole study: the pilot is in it, marked, and an import keeps the mark.
    archive = client.get(f"{base}/archive", headers=bearer(token)).json()
    assert {item["id"]: item["pilot"] for item in archive["sessions"]}[pilot_id] is True
    with fresh_app.state.sessionmaker() as db:
        user = create_user(db, "importer@example.org", "a long enough password", "coordinator")
        _token, secret = create_api_token(db, user, "import")
    with TestClient(fresh_app) as fresh:
        imported = fresh.post("/api/v1/studies/import", json=archive, headers=bearer(secret))
        assert imported.status_code == 201, imported.text
    with fresh_app.state.sessionmaker() as db:
        assert [str(s.id) for s in db.query(ElicitationSession).filter_by(pilot=True)] == [pilot_id]


def test_a_closed_study_takes_no_pilot(client: TestClient, accounts: dict[str, Any]) -> None:
    token = accounts["alice"]["token"]
    study_id = open_study(client, token, STUDY_CONFIG)
    login(client, "alice@example.org")
    csrf = hidden(client.get(f"/admin/studies/{study_id}").text, "csrf_token")
    closed = client.patch(
        f"/api/v1/studies/{study_id}", json={"status": "closed", "confirm": True}, headers=bearer(token)
    )
    assert closed.status_code == 200, closed.text
    assert 'data-testid="start-pilot"' not in client.get(f"/admin/studies/{study_id}").text
    refused = client.post(
        f"/admin/studies/{study_id}/pilots", data={"csrf_token": csrf}, follow_redirects=False
    )
    assert refused.status_code == 409


def test_a_coordinator_joining_through_the_open_link_runs_a_pilot(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    study_id = open_study(client, accounts["alice"]["token"], STUDY_CONFIG)

    def join_as(email: str | None) -> bool:
        """Join through the open link (signed in as ``email``, or not at all); whether it is a pilot."""
        client.cookies.clear()
        if email is not None:
            login(client, email)
        joined = client.post(f"/studies/{study_id}/join", data={"consent": "yes"}, follow_redirects=False)
        assert joined.status_code == 303, joined.text
        with app.state.sessionmaker() as db:
            newest = max(db.query(ElicitationSession).all(), key=lambda session: session.created_at)
            return bool(newest.pilot)

    assert join_as("alice@example.org") is True  # the study's coordinator
    assert join_as("admin@example.org") is True  # an admin sees every study
    assert join_as("bob@example.org") is False  # another study's coordinator is a participant here
    assert join_as(None) is False
