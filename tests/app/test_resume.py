"""Coming back: the join link in the same browser, the personal link, and a returning participant code.

The join link remembers the session in an HttpOnly, SameSite=Lax cookie scoped to the study's own path;
a participant code that joins again (from another browser) continues its session through a further
personal link while every earlier link keeps working; a study can turn that off.
"""

from __future__ import annotations

from typing import Any

from app_support import make_study
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.admin.monitor import study_dashboard
from app.models import ElicitationSession
from app.routes.pages import PARTICIPANT_COOKIE


def _count_sessions(app: Any) -> int:
    with app.state.sessionmaker() as db:
        return int(db.scalar(select(func.count()).select_from(ElicitationSession)) or 0)


def _join(client: TestClient, study: Any, code: str | None = None) -> tuple[str, str]:
    """Consent on the open link; the token the browser is sent to and where it is sent."""
    data = {"consent": "yes", **({"participant_code": code} if code else {})}
    response = client.post(f"/studies/{study.id}/join", data=data, follow_redirects=False)
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    return location.split("/")[2], location


def _answer(client: TestClient, token: str, preferred: str = "second") -> None:
    state = client.get(f"/api/v1/sessions/{token}").json()
    response = client.post(
        f"/api/v1/sessions/{token}/answers", json={"seq": state["query"]["seq"], "preferred": preferred}
    )
    assert response.status_code == 200, response.text


def _flagged_codes(app: Any, study: Any) -> list[str]:
    """Participant codes the coordinator's session list marks as started more than once."""
    with app.state.sessionmaker() as db:
        rows = study_dashboard(db, app.state.session_cache, study).sessions
    return sorted(row["participant_code"] for row in rows if row["duplicate_code"])


def _answered(client: TestClient, token: str) -> int:
    answered: int = client.get(f"/api/v1/sessions/{token}").json()["progress"]["answered"]
    return answered


def test_join_sets_an_httponly_samesite_cookie_scoped_to_the_study(client: TestClient, study: Any) -> None:
    response = client.post(f"/studies/{study.id}/join", data={"consent": "yes"}, follow_redirects=False)
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{PARTICIPANT_COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie
    assert f"Path=/studies/{study.id}" in cookie
    assert "Secure" not in cookie  # plain http in tests; https requests get Secure


def test_join_link_in_the_same_browser_continues_the_session(
    client: TestClient, app: Any, study: Any
) -> None:
    token, location = _join(client, study)
    assert location.endswith("/instructions")
    _answer(client, token)
    page = client.get(f"/studies/{study.id}/join")
    assert page.status_code == 200
    assert 'data-testid="welcome-back"' in page.text
    assert f'href="/sessions/{token}"' in page.text
    assert "1 question answered" in page.text
    # Consenting again from the join page (an old tab) continues too: still one session.
    again, location = _join(client, study)
    assert again == token and location == f"/sessions/{token}"
    assert _count_sessions(app) == 1 and _answered(client, token) == 1


def test_another_browser_on_the_join_link_starts_its_own_session(
    client: TestClient, app: Any, study: Any
) -> None:
    first, _ = _join(client, study)
    with TestClient(app) as other:
        assert 'data-testid="consent"' in other.get(f"/studies/{study.id}/join").text
        second, _ = _join(other, study)
    assert second != first and _count_sessions(app) == 2


def test_not_you_forgets_the_session_in_this_browser(client: TestClient, app: Any, study: Any) -> None:
    first, _ = _join(client, study)
    response = client.post(f"/studies/{study.id}/join/forget", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == f"/studies/{study.id}/join"
    assert 'data-testid="consent"' in client.get(f"/studies/{study.id}/join").text
    second, _ = _join(client, study)
    assert second != first and _count_sessions(app) == 2


def test_the_personal_link_is_shown_to_bookmark(client: TestClient, study: Any) -> None:
    token, _ = _join(client, study)
    for page in (f"/sessions/{token}/instructions", f"/sessions/{token}"):
        html = client.get(page).text
        assert 'data-testid="personal-link"' in html
        assert f'value="http://testserver/sessions/{token}"' in html


def test_visiting_a_personal_link_teaches_the_browser_its_join_link(
    client: TestClient, app: Any, study: Any
) -> None:
    with TestClient(app) as first_device:
        token, _ = _join(first_device, study)
    assert 'data-testid="consent"' in client.get(f"/studies/{study.id}/join").text
    client.get(f"/sessions/{token}")
    assert f'href="/sessions/{token}"' in client.get(f"/studies/{study.id}/join").text


def test_a_returning_participant_code_continues_its_session_when_the_study_opts_in(
    client: TestClient, app: Any
) -> None:
    study = make_study(app, resume_by_participant_code=True)
    first, _ = _join(client, study, code="PANEL-17")
    _answer(client, first)
    with TestClient(app) as other_device:
        second, location = _join(other_device, study, code="PANEL-17")
    assert second != first and location == f"/sessions/{second}"
    assert _count_sessions(app) == 1
    # Both links lead to the same answers, and an answer through one is seen through the other.
    assert _answered(client, second) == _answered(client, first) == 1
    _answer(client, second)
    assert _answered(client, first) == 2
    assert _flagged_codes(app, study) == []


def test_by_default_a_returning_code_in_another_browser_starts_a_new_session(
    client: TestClient, app: Any, study: Any
) -> None:
    # Knowing someone's participant code (or panel ID) is not enough to take over their session.
    first, _ = _join(client, study, code="PANEL-17")
    with TestClient(app) as other_device:
        second, location = _join(other_device, study, code="PANEL-17")
    assert second != first and location.endswith("/instructions")
    assert _count_sessions(app) == 2
    assert _flagged_codes(app, study) == ["PANEL-17", "PANEL-17"]


def test_a_cookie_of_another_study_or_a_stale_one_is_ignored(
    client: TestClient, app: Any, study: Any
) -> None:
    other = make_study(app, name="Another study")
    token, _ = _join(client, other)
    client.cookies.set(PARTICIPANT_COOKIE, token, path=f"/studies/{study.id}")
    assert 'data-testid="consent"' in client.get(f"/studies/{study.id}/join").text
    client.cookies.set(PARTICIPANT_COOKIE, "not-a-token", path=f"/studies/{study.id}")
    assert 'data-testid="consent"' in client.get(f"/studies/{study.id}/join").text
    fresh, _ = _join(client, study)
    assert fresh != token and _count_sessions(app) == 2


def _api_session(client: TestClient, study: Any, **body: Any) -> dict[str, Any]:
    response = client.post(f"/api/v1/studies/{study.id}/sessions", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def test_the_json_api_continues_a_returning_participant_code_when_the_study_opts_in(
    client: TestClient, app: Any
) -> None:
    study = make_study(app, resume_by_participant_code=True)
    first = _api_session(client, study, participant_code="PANEL-9", consent=True)
    assert first["resumed"] is False
    _answer(client, first["token"])
    again = _api_session(client, study, participant_code="PANEL-9", consent=True)
    assert again["resumed"] is True and again["token"] != first["token"]
    assert again["url"] == f"http://testserver/sessions/{again['token']}"
    assert _count_sessions(app) == 1 and _answered(client, again["token"]) == 1
    # The page flow and the JSON API share the codes: the join link continues the same session.
    token, location = _join(client, study, code="PANEL-9")
    assert location == f"/sessions/{token}" and _answered(client, token) == 1
    assert _count_sessions(app) == 1
    # Without a code, or with another one, the API starts a new session.
    assert _api_session(client, study, consent=True)["resumed"] is False
    assert _api_session(client, study, participant_code="PANEL-10")["resumed"] is False
    assert _count_sessions(app) == 3


def test_the_json_api_consents_a_returning_code_only_when_asked(client: TestClient, app: Any) -> None:
    study = make_study(app, resume_by_participant_code=True)
    first = _api_session(client, study, participant_code="PANEL-3")
    assert client.get(f"/api/v1/sessions/{first['token']}").json()["status"] == "invited"
    looked = _api_session(client, study, participant_code="PANEL-3")
    assert looked["resumed"] is True
    assert client.get(f"/api/v1/sessions/{looked['token']}").json()["status"] == "invited"
    consented = _api_session(client, study, participant_code="PANEL-3", consent=True)
    assert consented["resumed"] is True
    assert client.get(f"/api/v1/sessions/{first['token']}").json()["status"] == "active"


def test_the_json_api_starts_anew_when_the_study_does_not_resume_by_code(
    client: TestClient, app: Any, study: Any
) -> None:
    first = _api_session(client, study, participant_code="PANEL-17", consent=True)
    again = _api_session(client, study, participant_code="PANEL-17", consent=True)
    assert first["resumed"] is again["resumed"] is False
    assert _count_sessions(app) == 2
    assert _flagged_codes(app, study) == ["PANEL-17", "PANEL-17"]
