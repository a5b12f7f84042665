"""Back-office pages: login, CSRF, rate limit, role scoping, study form with planner, monitoring, results."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest
from admin_support import METRIC, PASSWORD, STUDY_CONFIG, Participant, bearer, hidden, login, open_study
from fastapi.testclient import TestClient

from app.admin.auth import MAX_FAILED_LOGINS, SESSION_COOKIE


def _form(**overrides: Any) -> dict[str, str]:
    form = {
        "name": "Form study <i>x</i>",
        "task": "Decide benign or malignant.",
        "class_names": "benign, malignant",
        "group_names": "",
        "population": "patients",
        "algorithm": "lpme",
        "epsilon": "0.2",
        "radius": "0.2",
        "priors": "0.65, 0.35",
        "practice_queries": "1",
        "checks": "on",
        "evaluation_queries": "3",
        "consent_text": "Consent.",
        "instructions_text": "Instructions.",
        "redirect_url": "",
        "open_enrolment": "on",
        "seconds_per_query": "",
        "config_json": "",
    }
    form.update(overrides)
    return form


def test_pages_need_login_and_login_sets_a_hardened_cookie(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    response = client.get("/admin/studies/new", follow_redirects=False)
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/login?next=%2Fadmin%2Fstudies%2Fnew"
    page = client.get("/admin/login")
    csrf = hidden(page.text, "csrf_token")
    done = client.post(
        "/admin/login",
        data={
            "email": "alice@example.org",
            "password": PASSWORD,
            "csrf_token": csrf,
            "next": "https://evil.example/",
        },
        follow_redirects=False,
    )
    assert done.status_code == 303 and done.headers["location"] == "/admin"  # no open redirect
    cookie = next(value for name, value in done.headers.multi_items() if value.startswith(SESSION_COOKIE))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "alice" not in cookie
    assert client.get("/admin").status_code == 200


def test_login_form_without_csrf_token_is_refused(client: TestClient, accounts: dict[str, Any]) -> None:
    client.get("/admin/login")
    response = client.post("/admin/login", data={"email": "alice@example.org", "password": PASSWORD})
    assert response.status_code == 403
    assert SESSION_COOKIE not in client.cookies


def test_failed_logins_are_rate_limited_and_recorded(
    client: TestClient, accounts: dict[str, Any], caplog: Any
) -> None:
    csrf = hidden(client.get("/admin/login").text, "csrf_token")
    for _ in range(MAX_FAILED_LOGINS):
        wrong = client.post(
            "/admin/login", data={"email": "alice@example.org", "password": "nope", "csrf_token": csrf}
        )
        assert wrong.status_code == 401
        assert "not correct" in wrong.text
    # Even the right password is refused while the limit holds.
    blocked = client.post(
        "/admin/login", data={"email": "alice@example.org", "password": PASSWORD, "csrf_token": csrf}
    )
    assert blocked.status_code == 429
    assert "Too many failed attempts" in blocked.text
    assert any("failed login" in record.getMessage() for record in caplog.records)


def test_every_form_needs_the_csrf_token(client: TestClient, accounts: dict[str, Any]) -> None:
    csrf = login(client, "alice@example.org")
    study = client.post(
        "/api/v1/studies", json=STUDY_CONFIG, headers=bearer(accounts["alice"]["token"])
    ).json()
    sid = study["id"]
    posts = [
        (f"/admin/studies/{sid}/status", {"status": "open"}),
        (f"/admin/studies/{sid}/duplicate", {}),
        (f"/admin/studies/{sid}/invitations", {"count": "2"}),
        (f"/admin/studies/{sid}/settings", {"expires_in_days": "3"}),
        ("/admin/studies/new", _form()),
        ("/admin/tokens", {"name": "x"}),
        ("/admin/logout", {}),
    ]
    for path, data in posts:
        refused = client.post(path, data={**data, "csrf_token": "forged"}, follow_redirects=False)
        assert refused.status_code == 403, path
        missing = client.post(path, data=data, follow_redirects=False)
        assert missing.status_code in (403, 422), path
    # Nothing changed: the study is still a draft, and still the only one.
    assert (
        client.get(f"/api/v1/studies/{sid}", headers=bearer(accounts["alice"]["token"])).json()["status"]
        == "draft"
    )
    assert (
        len(client.get("/api/v1/studies", headers=bearer(accounts["alice"]["token"])).json()["studies"]) == 1
    )
    ok = client.post(
        f"/admin/studies/{sid}/status", data={"status": "open", "csrf_token": csrf}, follow_redirects=False
    )
    assert ok.status_code == 303


def test_coordinators_see_only_their_studies_in_pages(client: TestClient, accounts: dict[str, Any]) -> None:
    sid = client.post(
        "/api/v1/studies", json=STUDY_CONFIG, headers=bearer(accounts["alice"]["token"])
    ).json()["id"]
    login(client, "bob@example.org")
    assert "Screening" not in client.get("/admin").text
    for path in ("", "/edit", "/monitor", "/results", "/export/results.csv"):
        response = client.get(f"/admin/studies/{sid}{path}")
        assert response.status_code == 404, path
    client.cookies.clear()
    login(client, "admin@example.org")
    page = client.get("/admin")
    # The admin sees it, with the name escaped (never rendered as markup).
    assert "Screening &lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "<script>alert(1)" not in page.text


def test_study_form_plans_then_creates_and_rejects_bad_fields(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    planned = client.post("/admin/studies/new", data={**_form(), "action": "plan", "csrf_token": csrf})
    assert planned.status_code == 200
    assert 'data-testid="planner"' in planned.text and "Minutes per participant" in planned.text
    bad = client.post(
        "/admin/studies/new",
        data={**_form(class_names="one", epsilon="x"), "action": "save", "csrf_token": csrf},
    )
    assert bad.status_code == 422 and 'data-testid="form-errors"' in bad.text
    bad_classes = client.post(
        "/admin/studies/new", data={**_form(class_names="one"), "action": "save", "csrf_token": csrf}
    )
    assert bad_classes.status_code == 422 and "class_names" in bad_classes.text
    created = client.post(
        "/admin/studies/new", data={**_form(), "action": "save", "csrf_token": csrf}, follow_redirects=False
    )
    assert created.status_code == 303
    page = client.get(created.headers["location"])
    assert 'data-testid="study-status">draft' in page.text
    assert "Form study &lt;i&gt;x&lt;/i&gt;" in page.text


def _resume_box(html: str) -> str:
    """The study form's resume-by-participant-code checkbox element."""
    match = re.search(r'<input type="checkbox" name="resume_by_participant_code"[^>]*>', html)
    assert match is not None, "the study form has no resume-by-code checkbox"
    return match.group(0)


def test_study_form_round_trips_resume_by_participant_code(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    assert " checked" not in _resume_box(client.get("/admin/studies/new").text)  # off unless chosen
    # An unticked checkbox is simply absent from the posted form.
    created = client.post(
        "/admin/studies/new", data={**_form(), "action": "save", "csrf_token": csrf}, follow_redirects=False
    )
    assert created.status_code == 303
    study_path = created.headers["location"]
    study_id = study_path.rstrip("/").split("/")[-1]
    stored = client.get(f"/api/v1/studies/{study_id}").json()["config"]
    assert stored["resume_by_participant_code"] is False
    assert " checked" not in _resume_box(client.get(f"{study_path}/edit").text)
    saved = client.post(
        f"{study_path}/edit",
        data={**_form(resume_by_participant_code="on"), "action": "save", "csrf_token": csrf},
        follow_redirects=False,
    )
    assert saved.status_code == 303
    assert client.get(f"/api/v1/studies/{study_id}").json()["config"]["resume_by_participant_code"] is True
    assert " checked" in _resume_box(client.get(f"{study_path}/edit").text)


def test_invitations_csv_monitor_session_and_results_pages(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = client.post(
        "/api/v1/studies",
        json={**STUDY_CONFIG, "algorithm": "qpme", "algorithm_params": {"epsilon": 0.2}},
        headers=bearer(token),
    ).json()["id"]
    csrf = login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{sid}").text
    # the query region in words: the synthetic sphere's accuracy range next to the baseline
    assert 'data-testid="query-region"' in page and "Where the questions sit" in page
    assert 'of 100 right; "everyone is the most common class" gets' in page
    client.post(f"/admin/studies/{sid}/status", data={"status": "open", "csrf_token": csrf})
    response = client.post(f"/admin/studies/{sid}/invitations", data={"count": "2", "csrf_token": csrf})
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/csv")
    links = list(csv.DictReader(io.StringIO(response.text)))
    assert len(links) == 2
    participant_token = links[0]["url"].rsplit("/", 1)[1]
    client.post(f"/api/v1/sessions/{participant_token}/consent")
    Participant(METRIC).finish(client, participant_token)
    monitor = client.get(f"/admin/studies/{sid}/monitor")
    assert monitor.status_code == 200
    assert re.search(r'data-testid="count-done">1<', monitor.text)
    assert re.search(r'data-testid="count-invited">1<', monitor.text)
    assert 'type="application/json" id="fig-dropoff"' in monitor.text
    done_row = re.search(
        rf'data-status="done"[^>]*>\s*<td[^>]*><a href="/admin/studies/{sid}/sessions/([0-9a-f-]{{36}})',
        monitor.text,
    )
    assert done_row is not None
    session_id = done_row.group(1)
    detail = client.get(f"/admin/studies/{sid}/sessions/{session_id}")
    assert detail.status_code == 200
    assert "replay reproduces the committed metric" in detail.text
    for figure in ("fig-convergence", "fig-a", "fig-b", "fig-agreement"):
        assert f'id="{figure}"' in detail.text, figure
    excluded = client.post(
        f"/admin/studies/{sid}/sessions/{session_id}/exclude",
        data={"reason": "<b>sleepy</b>", "csrf_token": csrf},
        follow_redirects=True,
    )
    assert "&lt;b&gt;sleepy&lt;/b&gt;" in excluded.text
    results = client.get(f"/admin/studies/{sid}/results")
    assert results.status_code == 200
    assert "from elicitation import load_results" in results.text
    # The only finished participant is excluded: no coefficient or ranking chart yet, and the snippet loads
    # whoever comes first rather than naming them.
    assert "next(iter(metrics.values()))" in results.text
    assert 'id="fig-coefficients"' not in results.text and 'id="fig-ranking"' not in results.text
    downloaded = client.get(f"/admin/studies/{sid}/export/results.csv")
    table = list(csv.DictReader(io.StringIO(downloaded.text)))
    assert [row["exclusion_reason"] for row in table if row["status"] == "done"] == ["<b>sleepy</b>"]
    replay_log = client.get(f"/admin/studies/{sid}/sessions/{session_id}/replay.json").json()
    assert replay_log["format"] == "elicitation-answer-log" and replay_log["answers"]
    assert client.get(f"/admin/studies/{sid}/export/unknown").status_code == 404
    client.post(f"/admin/studies/{sid}/sessions/{session_id}/lift", data={"csrf_token": csrf})
    ranked = client.get(f"/admin/studies/{sid}/results").text
    figure = json.loads(re.search(r'id="fig-ranking">(.*?)</script>', ranked).group(1))  # type: ignore[union-attr]
    assert 'id="fig-coefficients"' in ranked
    heatmap = figure["data"][0]
    assert heatmap["y"][0] == "accuracy (baseline)" and len(heatmap["y"]) == 2
    assert all(sorted(row) == list(range(1, 9)) for row in heatmap["z"])  # each row ranks the whole pool


def test_tokens_page_creates_and_revokes(client: TestClient, accounts: dict[str, Any]) -> None:
    csrf = login(client, "bob@example.org")
    created = client.post("/admin/tokens", data={"name": "laptop", "csrf_token": csrf})
    assert created.status_code == 201
    secret = re.search(r"<code>(elk_[^<]+)</code>", created.text).group(1)  # type: ignore[union-attr]
    assert client.get("/api/v1/studies", headers=bearer(secret)).status_code == 200
    token_id = re.search(r"/admin/tokens/(\d+)/revoke", created.text.split("laptop", 1)[1]).group(1)  # type: ignore[union-attr]
    client.post(f"/admin/tokens/{token_id}/revoke", data={"csrf_token": csrf})
    assert client.get("/api/v1/studies", headers=bearer(secret)).status_code == 401


def test_logout_ends_every_session_of_the_user(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    stolen = client.cookies.get(SESSION_COOKIE)
    client.post("/admin/logout", data={"csrf_token": csrf})
    with TestClient(app) as other:
        other.cookies.set(SESSION_COOKIE, stolen or "")
        assert other.get("/admin", follow_redirects=False).status_code == 303


def test_open_link_prefills_the_panel_participant_code_escaped(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    page = client.get(f"/studies/{sid}/join", params={"participant_code": 'PANEL-7"><b>'})
    assert page.status_code == 200
    assert 'value="PANEL-7&#34;&gt;&lt;b&gt;"' in page.text
    joined = client.post(
        f"/studies/{sid}/join", data={"consent": "yes", "participant_code": "PANEL-7"}, follow_redirects=False
    )
    assert joined.status_code == 303
    rows = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()["results"]
    assert [row["participant_code"] for row in rows] == ["PANEL-7"]


def test_paused_study_turns_participants_away_with_a_page(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    invited = client.post(f"/api/v1/studies/{sid}/invitations", json={"count": 1}, headers=bearer(token))
    invitation = invited.json()["invitations"][0]["token"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "paused"}, headers=bearer(token))
    joined = client.post(f"/studies/{sid}/join", data={"consent": "yes"})
    assert joined.status_code == 409 and "paused" in joined.text
    consent = client.post(f"/sessions/{invitation}/consent", data={"consent": "yes"})
    assert consent.status_code == 409 and "paused" in consent.text
    dashboard = client.get(f"/api/v1/studies/{sid}/dashboard", headers=bearer(token)).json()
    assert dashboard["by_status"] == {"invited": 1, "active": 0, "done": 0}


def test_import_page_validates_the_upload(client: TestClient, accounts: dict[str, Any]) -> None:
    csrf = login(client, "alice@example.org")
    for content, message in (
        (b"\xff\xfe not utf-8", "not UTF-8"),
        (b"{not json", "not valid JSON"),
        (b'{"format": "something else"}', "not a study archive"),
    ):
        response = client.post(
            "/admin/import",
            data={"csrf_token": csrf},
            files={"archive": ("a.json", content, "application/json")},
        )
        assert response.status_code == 422, message
        assert message in response.text
    forged = client.post(
        "/admin/import", data={"csrf_token": "x"}, files={"archive": ("a.json", b"{}", "application/json")}
    )
    assert forged.status_code == 403


def test_closing_from_the_page_needs_confirmation_and_keeps_an_archive(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    sid = client.post(
        "/api/v1/studies", json=STUDY_CONFIG, headers=bearer(accounts["alice"]["token"])
    ).json()["id"]
    csrf = login(client, "alice@example.org")
    unconfirmed = client.post(f"/admin/studies/{sid}/status", data={"status": "closed", "csrf_token": csrf})
    assert unconfirmed.status_code == 409 and "confirm" in unconfirmed.text
    closed = client.post(
        f"/admin/studies/{sid}/status", data={"status": "closed", "confirm": "yes", "csrf_token": csrf}
    )
    assert closed.status_code == 200 and 'data-testid="study-status">closed' in closed.text
    link = re.search(rf'href="(/admin/studies/{sid}/snapshots/\d+\.json)"', closed.text)
    assert link is not None
    archive = client.get(link.group(1)).json()
    assert archive["format"] == "elicitation-study-archive" and archive["study"]["status"] == "closed"


def test_replayed_csrf_tokens_are_refused(app: Any, client: TestClient, accounts: dict[str, Any]) -> None:
    """A token from an ended login, or from another user's login, never authorises a form."""
    ended = login(client, "alice@example.org")
    assert client.post("/admin/logout", data={"csrf_token": ended}, follow_redirects=False).status_code == 303
    current = login(client, "alice@example.org")
    assert current != ended
    with TestClient(app) as other:
        bobs = login(other, "bob@example.org")
    for token in (ended, bobs):
        refused = client.post(
            "/admin/tokens", data={"name": "replayed", "csrf_token": token}, follow_redirects=False
        )
        assert refused.status_code == 403
    assert "replayed" not in client.get("/admin/tokens").text
    accepted = client.post(
        "/admin/tokens", data={"name": "fresh", "csrf_token": current}, follow_redirects=False
    )
    assert accepted.status_code == 201
    assert "fresh" in client.get("/admin/tokens").text


def test_draft_study_refuses_invitations_and_an_invitee_of_a_paused_study_is_told_so(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    csrf = login(client, "alice@example.org")
    draft_page = client.get(f"/admin/studies/{sid}")
    assert 'data-testid="invitations-draft"' in draft_page.text
    assert 'data-testid="create-invitations"' not in draft_page.text
    refused = client.post(f"/admin/studies/{sid}/invitations", data={"count": "2", "csrf_token": csrf})
    assert refused.status_code == 409
    assert "Open the study first" in refused.text and "moved on" not in refused.text
    assert (
        client.get(f"/api/v1/studies/{sid}/dashboard", headers=bearer(token)).json()["by_status"]["invited"]
        == 0
    )
    client.post(f"/admin/studies/{sid}/status", data={"status": "open", "csrf_token": csrf})
    made = client.post(f"/admin/studies/{sid}/invitations", data={"count": "1", "csrf_token": csrf})
    assert made.status_code == 200
    link = next(csv.DictReader(io.StringIO(made.text)))["url"]
    person = link.rsplit("/", 1)[1]
    client.post(f"/admin/studies/{sid}/status", data={"status": "paused", "csrf_token": csrf})
    assert 'data-testid="invitations-paused"' in client.get(f"/admin/studies/{sid}").text
    # The invited person reads the consent page, agrees, and learns the study is paused: no dead-end
    # "continue" button back to the same refusal.
    assert client.get(f"/sessions/{person}").status_code == 200
    answer = client.post(f"/sessions/{person}/consent", data={"consent": "yes"})
    assert answer.status_code == 409
    assert "This study is paused" in answer.text and "try this link again later" in answer.text
    assert "moved on" not in answer.text and 'data-testid="continue"' not in answer.text


def test_dashboard_numbers_poll_shows_each_sessions_progress_and_last_activity(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    csrf = login(client, "alice@example.org")
    client.post(f"/admin/studies/{sid}/status", data={"status": "open", "csrf_token": csrf})
    planned = (
        client.get(f"/api/v1/studies/{sid}", headers=bearer(token)).json()["expected_queries"] + 1 + 2 + 3
    )
    first = client.post(
        f"/api/v1/studies/{sid}/sessions", json={"consent": True, "participant_code": "<b>P-1</b>"}
    ).json()["token"]
    participant = Participant(METRIC)
    state = client.get(f"/api/v1/sessions/{first}").json()
    for _ in range(3):
        state = participant.answer(client, first, state)
    second = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    participant.finish(client, second)

    live = client.get(f"/admin/studies/{sid}/monitor.json")
    assert live.status_code == 200 and live.headers["content-type"].startswith("application/json")
    assert live.headers["cache-control"] == "no-store"
    body = live.json()
    assert body["status"] == "open" and body["by_status"] == {"invited": 0, "active": 1, "done": 1}
    rows = {row["participant_code"]: row for row in body["sessions"]}
    answering, finished = rows["<b>P-1</b>"], rows[None]
    assert (answering["answered"], answering["estimated_total"], answering["stage"]) == (
        3,
        planned,
        "questions",
    )
    assert answering["last_activity"] == "just now" and not answering["idle"]
    assert finished["answered"] == finished["estimated_total"] > 3 and finished["stage"] == "finished"
    assert finished["finished_at"] is not None and body["sessions"][0]["session_id"] == finished["session_id"]
    assert {item["id"] for item in body["figures"]} == {"fig-status", "fig-rate", "fig-dropoff"}
    # The page's changing parts, rendered by the page's own macros: escaped, with the same hooks.
    html = body["html"]["sessions"]
    assert "&lt;b&gt;P-1&lt;/b&gt;" in html and "<b>P-1</b>" not in html
    assert f"3 of about {planned} answers · stage: questions" in html and 'data-status="done"' in html
    assert 'data-testid="count-done">1<' in body["html"]["numbers"]
    # The dashboard page shows the same list and says it updates itself; the JSON API carries it too.
    page = client.get(f"/admin/studies/{sid}/monitor").text
    assert f'data-live-url="/admin/studies/{sid}/monitor.json"' in page and "/static/js/monitor.js" in page
    assert f"3 of about {planned} answers · stage: questions" in page
    api = client.get(f"/api/v1/studies/{sid}/dashboard", headers=bearer(token)).json()
    assert [row["answered"] for row in api["sessions"]] == [finished["answered"], 3]
    # Nobody else's numbers: another coordinator gets a 404, a logged-out browser the login page.
    login(client, "bob@example.org")
    assert client.get(f"/admin/studies/{sid}/monitor.json").status_code == 404
    client.post("/admin/logout", data={"csrf_token": hidden(client.get("/admin").text, "csrf_token")})
    assert client.get(f"/admin/studies/{sid}/monitor.json", follow_redirects=False).status_code == 303


def test_dashboard_marks_a_session_quiet_after_ten_minutes(
    client: TestClient, accounts: dict[str, Any], app: Any
) -> None:
    from datetime import timedelta

    from app.admin import monitor
    from app.models import Study, utcnow

    token = accounts["alice"]["token"]
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    person = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    Participant(METRIC).answer(client, person, client.get(f"/api/v1/sessions/{person}").json())
    with app.state.sessionmaker() as db:
        study = db.get(Study, __import__("uuid").UUID(sid))
        soon = monitor.study_dashboard(
            db, app.state.session_cache, study, now=utcnow() + timedelta(minutes=monitor.IDLE_ALERT_MIN - 1)
        )
        later = monitor.study_dashboard(
            db, app.state.session_cache, study, now=utcnow() + timedelta(minutes=monitor.IDLE_ALERT_MIN + 1)
        )
        days = monitor.study_dashboard(
            db, app.state.session_cache, study, now=utcnow() + timedelta(days=3, minutes=1)
        )
    assert not soon.sessions[0]["idle"] and soon.sessions[0]["last_activity"] == "9 min ago"
    assert later.sessions[0]["idle"] and later.sessions[0]["last_activity"] == "11 min ago"
    assert days.sessions[0]["last_activity"] == "3 days ago"


def test_result_pages_say_per_patient_and_per_rate_what_a_known_metric_costs(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    import numpy as np

    from elicitation import LinearMetric

    token = accounts["alice"]["token"]
    config = {**STUDY_CONFIG, "algorithm_params": {"epsilon": 0.02, "cycles": 1}}
    sid = client.post("/api/v1/studies", json=config, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    person = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    final = Participant(LinearMetric(np.array([0.4545, 0.8908]))).finish(client, person)
    a = np.asarray(final["result"]["metric"]["a"])
    per_rate, per_patient = a[1] / a[0], (a[1] / 35) / (a[0] / 65)
    # The known metric comes back (to what 100 patients can show), and a reader's "times as much" (per
    # patient) is not the weights' ratio.
    assert abs(per_rate - 0.8908 / 0.4545) < 0.1 and per_patient == pytest.approx(per_rate * 65 / 35)
    summary = final["result"]["summary"]
    assert f"costs you about {per_patient:.1f} times as much" in summary
    assert f"Per rate it is {per_rate:.1f} times" in summary
    thanks = client.get(f"/sessions/{person}/result").text
    assert (
        f"A mistake on one malignant patient (calling them benign) costs you about {per_patient:.1f} times"
        in thanks
    )
    assert f'data-testid="cost-per-person">{per_patient:.1f}×<' in thanks
    assert f'data-testid="cost-per-rate">{per_rate:.1f}×<' in thanks
    assert "score = " in thanks and "share of malignant patients decided correctly" in thanks
    assert "has no curvature" in thanks and "Curvature B" not in thanks
    login(client, "alice@example.org")
    results = client.get(f"/admin/studies/{sid}/results").text
    assert f'data-testid="row-per-person">malignant {per_patient:.1f}× benign' in results
    assert f'data-testid="row-per-rate">{per_rate:.1f}×<' in results
    assert 'data-testid="candidates"' in results and "of 65</td>" in results and "of 35</td>" in results


def test_a_class_whose_mistakes_hardly_counted_is_said_in_words_never_as_an_astronomical_ratio(
    client: TestClient, accounts: dict[str, Any], app: Any
) -> None:
    import uuid

    from sqlalchemy import select

    from app.models import ElicitationSession, Result

    sid = open_study(client, accounts["alice"]["token"], STUDY_CONFIG)
    person = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    Participant(METRIC).finish(client, person)
    # A result whose benign mistakes cost next to nothing (as a fairness search that ends at its edge
    # leaves): every ratio to them is of the order 1e299.
    with app.state.sessionmaker() as db:
        result = db.scalars(
            select(Result)
            .join(ElicitationSession, ElicitationSession.id == Result.session_id)
            .where(ElicitationSession.study_id == uuid.UUID(sid))
        ).one()
        result.metric = {**result.metric, "a": [1e-300, 1.0]}
        db.commit()
    thanks = client.get(f"/sessions/{person}/result").text
    assert "hardly counted" in thanks and 'id="metric-costs"' not in thanks
    assert re.findall(r'data-testid="cost-per-(?:person|rate)">([^<]*)<', thanks) == ["hardly", "yes"] * 2
    assert "Counted in your choices" in thanks and "Which mistakes counted in your choices" in thanks
    assert "relative to the cheapest" not in thanks and not re.search(r"\d{7,}", thanks)
    login(client, "alice@example.org")
    results = client.get(f"/admin/studies/{sid}/results").text
    assert 'data-testid="row-per-person">only malignant mistakes counted<' in results
    assert 'data-testid="row-per-rate">—<' in results and not re.search(r"\d{7,}×", results)
