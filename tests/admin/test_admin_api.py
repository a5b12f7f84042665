"""Back-office JSON API: authorisation matrix, study life cycle, invitations, monitoring, exports."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient


def create(client: TestClient, token: str, **overrides: Any) -> dict[str, Any]:
    response = client.post("/api/v1/studies", json={**STUDY_CONFIG, **overrides}, headers=bearer(token))
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def open_study(client: TestClient, token: str, study_id: str) -> None:
    response = client.patch(f"/api/v1/studies/{study_id}", json={"status": "open"}, headers=bearer(token))
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "open"


def finish_participant(client: TestClient, study_id: str, code: str | None = None) -> str:
    body: dict[str, Any] = {"consent": True}
    if code is not None:
        body["participant_code"] = code
    response = client.post(f"/api/v1/studies/{study_id}/sessions", json=body)
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    state = Participant(METRIC).finish(client, token)
    assert state["status"] == "done"
    return token


def test_api_anonymous_gets_401_with_bearer_challenge(client: TestClient, accounts: dict[str, Any]) -> None:
    for method, path in (
        ("get", "/api/v1/studies"),
        ("post", "/api/v1/studies"),
        ("get", "/api/v1/tokens"),
    ):
        response = getattr(client, method)(path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"] == "unauthorized"


def test_api_participant_token_and_revoked_token_are_rejected(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    study = create(client, accounts["alice"]["token"])
    open_study(client, accounts["alice"]["token"], study["id"])
    participant = client.post(f"/api/v1/studies/{study['id']}/sessions", json={"consent": True}).json()[
        "token"
    ]
    # A participant's session token is no back-office credential, neither as bearer nor anywhere else.
    assert client.get("/api/v1/studies", headers=bearer(participant)).status_code == 401
    assert client.get(f"/api/v1/studies/{study['id']}", headers=bearer(participant)).status_code == 401
    assert client.get("/admin", follow_redirects=False).status_code == 303
    # Revoking a token takes effect at once.
    tokens = client.get("/api/v1/tokens", headers=bearer(accounts["bob"]["token"])).json()["tokens"]
    revoked = client.delete(f"/api/v1/tokens/{tokens[0]['id']}", headers=bearer(accounts["bob"]["token"]))
    assert revoked.status_code == 200 and revoked.json()["revoked"] is True
    assert client.get("/api/v1/studies", headers=bearer(accounts["bob"]["token"])).status_code == 401


@pytest.mark.parametrize(
    ("who", "expected"),
    [("alice", 200), ("bob", 404), ("admin", 200)],
)
def test_api_authorisation_matrix_on_every_study_endpoint(
    client: TestClient, accounts: dict[str, Any], who: str, expected: int
) -> None:
    study = create(client, accounts["alice"]["token"])
    sid = study["id"]
    open_study(client, accounts["alice"]["token"], sid)
    session_token = finish_participant(client, sid)
    assert session_token
    session_id = client.get(
        f"/api/v1/studies/{sid}/results", headers=bearer(accounts["alice"]["token"])
    ).json()["results"][0]["session_id"]
    headers = bearer(accounts[who]["token"])
    reads = [
        f"/api/v1/studies/{sid}",
        f"/api/v1/studies/{sid}/plan",
        f"/api/v1/studies/{sid}/dashboard",
        f"/api/v1/studies/{sid}/results",
        f"/api/v1/studies/{sid}/results.csv",
        f"/api/v1/studies/{sid}/answers.csv",
        f"/api/v1/studies/{sid}/archive",
        f"/api/v1/studies/{sid}/sessions/{session_id}/replay-log",
    ]
    for path in reads:
        response = client.get(path, headers=headers)
        assert response.status_code == expected, (path, response.text[:200])
    writes = [
        ("patch", f"/api/v1/studies/{sid}", {"seconds_per_query": 5}),
        ("post", f"/api/v1/studies/{sid}/invitations", {"count": 1}),
        ("post", f"/api/v1/studies/{sid}/sessions/{session_id}/exclusion", {"reason": "test"}),
    ]
    for method, path, body in writes:
        response = getattr(client, method)(path, json=body, headers=headers)
        assert response.status_code in ((200, 201) if expected == 200 else (404,)), (
            path,
            response.text[:200],
        )
        if expected == 404:
            assert response.json()["error"] == "not_found"
    duplicate = client.post(f"/api/v1/studies/{sid}/duplicate", headers=headers)
    assert duplicate.status_code == (201 if expected == 200 else 404)
    # The other coordinator's listing does not even mention the study.
    listing = client.get("/api/v1/studies", headers=headers).json()["studies"]
    assert (sid in {item["id"] for item in listing}) is (expected == 200)


def test_api_unknown_and_malformed_study_ids_are_404(client: TestClient, accounts: dict[str, Any]) -> None:
    headers = bearer(accounts["admin"]["token"])
    assert client.get("/api/v1/studies/not-a-uuid", headers=headers).status_code == 404
    assert (
        client.get("/api/v1/studies/00000000-0000-0000-0000-000000000000", headers=headers).status_code == 404
    )


def test_api_create_validates_config_and_names_the_field(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    response = client.post("/api/v1/studies", json={**STUDY_CONFIG, "class_names": ["only"]}, headers=headers)
    assert response.status_code == 422
    assert "class_names" in response.json()["message"]
    response = client.post("/api/v1/studies", json={**STUDY_CONFIG, "colour": "red"}, headers=headers)
    assert response.status_code == 422
    assert "colour" in response.json()["message"]


def test_api_study_life_cycle_draft_open_pause_close(client: TestClient, accounts: dict[str, Any]) -> None:
    token = accounts["alice"]["token"]
    study = create(client, token)
    sid = study["id"]
    assert study["status"] == "draft"
    # Nobody can join a draft.
    refused = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True})
    assert refused.status_code == 409 and refused.json()["error"] == "study_draft"
    open_study(client, token, sid)
    assert client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).status_code == 201
    paused = client.patch(f"/api/v1/studies/{sid}", json={"status": "paused"}, headers=bearer(token))
    assert paused.json()["status"] == "paused"
    assert client.post(f"/api/v1/studies/{sid}/sessions", json={}).json()["error"] == "study_paused"
    # Closing needs confirmation, and is final.
    unconfirmed = client.patch(f"/api/v1/studies/{sid}", json={"status": "closed"}, headers=bearer(token))
    assert unconfirmed.status_code == 409 and unconfirmed.json()["error"] == "confirmation_required"
    closed = client.patch(
        f"/api/v1/studies/{sid}", json={"status": "closed", "confirm": True}, headers=bearer(token)
    )
    assert closed.json()["status"] == "closed"
    reopen = client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    assert reopen.status_code == 409
    # The session made while open is still there.
    dashboard = client.get(f"/api/v1/studies/{sid}/dashboard", headers=bearer(token)).json()
    assert dashboard["by_status"]["active"] == 1
    # Closing kept an export: the archive as it was at that moment.
    kept = client.get(f"/api/v1/studies/{sid}/snapshots", headers=bearer(token)).json()["snapshots"]
    assert [item["reason"] for item in kept] == ["closed"]
    snapshot = client.get(f"/api/v1/studies/{sid}/snapshots/{kept[0]['id']}", headers=bearer(token)).json()
    assert snapshot["archive"]["study"]["status"] == "closed" and len(snapshot["archive"]["sessions"]) == 1
    assert (
        client.get(
            f"/api/v1/studies/{sid}/snapshots/{kept[0]['id']}", headers=bearer(accounts["bob"]["token"])
        ).status_code
        == 404
    )


def test_api_edit_only_until_the_first_answer(client: TestClient, accounts: dict[str, Any]) -> None:
    token = accounts["alice"]["token"]
    sid = create(client, token)["id"]
    edited = client.patch(
        f"/api/v1/studies/{sid}", json={"config": {**STUDY_CONFIG, "name": "Renamed"}}, headers=bearer(token)
    )
    assert edited.status_code == 200 and edited.json()["name"] == "Renamed"
    open_study(client, token, sid)
    finish_participant(client, sid)
    refused = client.patch(
        f"/api/v1/studies/{sid}", json={"config": {**STUDY_CONFIG, "name": "Again"}}, headers=bearer(token)
    )
    assert refused.status_code == 409 and refused.json()["error"] == "has_answers"
    copy = client.post(f"/api/v1/studies/{sid}/duplicate", headers=bearer(token)).json()
    assert copy["status"] == "draft" and copy["name"] == "Copy of Renamed"
    assert copy["config_hash"] != edited.json()["config_hash"]


def test_api_invitations_expire_and_consent_respects_status(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = create(client, token)["id"]
    # Draft: no personal link may go out yet (its person could only be told the study has not started).
    refused = client.post(f"/api/v1/studies/{sid}/invitations", json={"count": 3}, headers=bearer(token))
    assert refused.status_code == 409 and refused.json()["error"] == "study_draft"
    assert client.get(f"/api/v1/studies/{sid}/dashboard", headers=bearer(token)).json()["by_status"] == {
        "invited": 0,
        "active": 0,
        "done": 0,
    }
    open_study(client, token, sid)
    made = client.post(f"/api/v1/studies/{sid}/invitations", json={"count": 3}, headers=bearer(token))
    assert made.status_code == 201
    links = made.json()["invitations"]
    assert len(links) == 3 and len({item["token"] for item in links}) == 3
    # Paused: the invited person cannot consent until the study opens again.
    first = links[0]["token"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "paused"}, headers=bearer(token))
    paused = client.post(f"/api/v1/sessions/{first}/consent")
    assert paused.status_code == 409 and paused.json()["error"] == "study_paused"
    open_study(client, token, sid)
    assert client.post(f"/api/v1/sessions/{first}/consent").json()["status"] == "active"
    past = client.post(
        f"/api/v1/studies/{sid}/invitations",
        json={"count": 1, "expires_at": "2000-01-01T00:00:00Z"},
        headers=bearer(token),
    )
    assert past.status_code == 422
    # An invitation that has expired (moved into the past in the database) refuses consent.
    soon = client.post(
        f"/api/v1/studies/{sid}/invitations",
        json={"count": 1, "expires_at": "2999-01-01T00:00:00Z"},
        headers=bearer(token),
    ).json()["invitations"][0]
    from app.models import Invitation

    app = client.app
    with app.state.sessionmaker() as db:  # type: ignore[attr-defined]
        invitation = db.get(Invitation, soon["id"])
        from datetime import UTC, datetime

        invitation.expires_at = datetime(2001, 1, 1, tzinfo=UTC)
        db.commit()
    expired = client.post(f"/api/v1/sessions/{soon['token']}/consent")
    assert expired.status_code == 409 and expired.json()["error"] == "link_expired"
    too_many = client.post(f"/api/v1/studies/{sid}/invitations", json={"count": 0}, headers=bearer(token))
    assert too_many.status_code == 422


def test_api_dashboard_exclusion_and_results_csv(client: TestClient, accounts: dict[str, Any]) -> None:
    token = accounts["alice"]["token"]
    sid = create(client, token, algorithm="qpme", algorithm_params={"epsilon": 0.2})["id"]
    open_study(client, token, sid)
    finish_participant(client, sid, code='=HYPERLINK("http://evil")')
    finish_participant(client, sid, code="P-2")
    client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True})
    dashboard = client.get(f"/api/v1/studies/{sid}/dashboard", headers=bearer(token)).json()
    assert dashboard["by_status"] == {"invited": 0, "active": 1, "done": 2}
    assert dashboard["dropoff"] == {} and dashboard["stopped"] == 0  # started just now: not stopped
    assert dashboard["median_seconds_per_query"] == pytest.approx(1.5)
    assert dashboard["people_seconds_per_query"] is None  # scripted participants are not people's time
    results = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()
    assert results["study"]["algorithm_version"] == "qpme-3+shown-3"  # new sessions ask displayed questions
    rows = results["results"]
    assert len(rows) == 3
    done = [row for row in rows if row["status"] == "done"]
    assert all(row["a_benign"] is not None and row["B_benign_malignant"] is not None for row in done)
    assert all(len(row["config_hash"]) == 64 for row in rows)
    excluded_id = done[1]["session_id"]
    exclusion = client.post(
        f"/api/v1/studies/{sid}/sessions/{excluded_id}/exclusion",
        json={"reason": "failed attention"},
        headers=bearer(token),
    )
    assert exclusion.status_code == 201
    again = client.post(
        f"/api/v1/studies/{sid}/sessions/{excluded_id}/exclusion",
        json={"reason": "twice"},
        headers=bearer(token),
    )
    assert again.status_code == 409
    response = client.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(token))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(response.text)))
    assert len(table) == 3
    codes = {row["participant_code"] for row in table}
    assert '\'=HYPERLINK("http://evil")' in codes  # neutralised, not evaluated by a spreadsheet
    excluded = next(row for row in table if row["session_id"] == excluded_id)
    assert excluded["excluded"] == "True" and excluded["exclusion_reason"] == "failed attention"
    # Negative coefficients stay numbers (only text cells are neutralised).
    assert any(row["B_benign_benign"].startswith("-") for row in table if row["status"] == "done")
    lifted = client.post(
        f"/api/v1/studies/{sid}/sessions/{excluded_id}/exclusion/lift", headers=bearer(token)
    )
    assert lifted.status_code == 200
    archive = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(token)).json()
    kept = next(s for s in archive["sessions"] if s["id"] == excluded_id)["exclusions"]
    assert kept[0]["reason"] == "failed attention" and kept[0]["lifted_at"] is not None


def test_api_plan_reports_queries_minutes_and_error(client: TestClient, accounts: dict[str, Any]) -> None:
    token = accounts["alice"]["token"]
    sid = create(client, token)["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"seconds_per_query": 10}, headers=bearer(token))
    plan = client.get(f"/api/v1/studies/{sid}/plan", headers=bearer(token)).json()
    assert plan["trials"] >= 3
    assert 1 <= plan["queries_mean"] <= plan["queries_max_bound"]
    assert (
        plan["queries_p90"] >= plan["queries_mean"] - 1e-9 or plan["queries_p90"] <= plan["queries_max_bound"]
    )
    assert plan["seconds_per_query"] == 10
    assert plan["minutes_mean"] == pytest.approx(plan["comparisons_mean"] * 10 / 60)
    assert plan["other_comparisons"] == 1 + 2 + 3
    assert plan["error_a_mean"] is not None and plan["error_b_mean"] is None  # LPME: no B


def test_api_cookie_session_needs_csrf_header_for_writes(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    csrf = login(client, accounts["alice"]["email"])
    assert client.get("/api/v1/studies").status_code == 200
    refused = client.post("/api/v1/studies", json=STUDY_CONFIG)
    assert refused.status_code == 403 and refused.json()["error"] == "csrf_failed"
    accepted = client.post("/api/v1/studies", json=STUDY_CONFIG, headers={"X-CSRF-Token": csrf})
    assert accepted.status_code == 201


def test_a_failed_invitation_batch_stores_no_session(
    client: TestClient, accounts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy import func, select

    from app import sessions
    from app.models import ElicitationSession

    token = accounts["alice"]["token"]
    sid = create(client, token)["id"]
    open_study(client, token, sid)
    made = 0
    original = sessions.create_session

    def failing_third(*args: Any, **kwargs: Any) -> Any:
        nonlocal made
        made += 1
        if made == 3:
            raise RuntimeError("the database went away mid-batch")
        return original(*args, **kwargs)

    monkeypatch.setattr(sessions, "create_session", failing_third)
    with pytest.raises(RuntimeError):
        client.post(f"/api/v1/studies/{sid}/invitations", json={"count": 5}, headers=bearer(token))
    monkeypatch.undo()
    with client.app.state.sessionmaker() as db:  # type: ignore[attr-defined]
        count = db.scalar(select(func.count()).select_from(ElicitationSession))
    assert made == 3 and count == 0  # the two sessions made before the failure were never committed


def test_api_create_and_edit_take_resume_by_participant_code(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    assert create(client, token)["config"]["resume_by_participant_code"] is False  # the default
    study = create(client, token, resume_by_participant_code=False)
    assert study["config"]["resume_by_participant_code"] is False
    edited = client.patch(
        f"/api/v1/studies/{study['id']}",
        json={"config": {**STUDY_CONFIG, "resume_by_participant_code": True}},
        headers=bearer(token),
    )
    assert edited.status_code == 200 and edited.json()["config"]["resume_by_participant_code"] is True
    bad = client.post(
        "/api/v1/studies",
        json={**STUDY_CONFIG, "resume_by_participant_code": "yes please"},
        headers=bearer(token),
    )
    assert bad.status_code == 422 and "resume_by_participant_code" in bad.text
