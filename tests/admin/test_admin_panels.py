"""Recruitment panels end to end over HTTP: a Prolific-style link, its values in the export, a returning
panel ID, the study-wide completion code and the templated redirect; the settings in the form and the API."""

from __future__ import annotations

import copy
import csv
import html
import io
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient

from app.admin.auth import create_api_token, create_user
from app.routes.pages import PARTICIPANT_COOKIE

REDIRECT = (
    "https://app.prolific.com/submissions/complete?cc={completion_code}&pid={PROLIFIC_PID}&s={SESSION_ID}"
)
PROLIFIC = {
    **STUDY_CONFIG,
    "panel": "prolific",
    "completion_code": "C1A2B3C4",
    "redirect_url": REDIRECT,
}
#: A Prolific ID with characters that mean something in a URL (a panel never sends these; a person might).
PID = "5f1a&next=https://evil.example/#x y"


def _open_study(client: TestClient, token: str, config: dict[str, Any]) -> str:
    created = client.post("/api/v1/studies", json=config, headers=bearer(token))
    assert created.status_code == 201, created.text
    sid: str = created.json()["id"]
    opened = client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    assert opened.status_code == 200, opened.text
    return sid


def _form_action(page: str) -> str:
    match = re.search(r'<form method="post" action="([^"]+)"', page)
    assert match, "no form on the page"
    return html.unescape(match.group(1))


def _consent(client: TestClient, sid: str, params: dict[str, str]) -> tuple[str, str]:
    """Open the panel's link, consent on it; the session token and where the browser is sent."""
    page = client.get(f"/studies/{sid}/join", params=params)
    assert page.status_code == 200, page.text
    response = client.post(_form_action(page.text), data={"consent": "yes"}, follow_redirects=False)
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    return location.split("/")[2], location


def _results_csv(client: TestClient, sid: str, token: str) -> list[dict[str, str]]:
    response = client.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(token))
    assert response.status_code == 200, response.text
    return list(csv.DictReader(io.StringIO(response.text)))


def test_prolific_link_lands_in_the_export_resumes_by_pid_and_redirects_with_the_code(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    coordinator = accounts["alice"]["token"]
    sid = _open_study(client, coordinator, {**PROLIFIC, "resume_by_participant_code": True})
    link = {"PROLIFIC_PID": PID, "STUDY_ID": "st-42", "SESSION_ID": "first visit", "utm_source": "x"}

    page = client.get(f"/studies/{sid}/join", params=link)
    assert page.status_code == 200
    assert 'data-testid="panel-id"' in page.text and html.escape(PID) in page.text
    assert 'name="participant_code"' not in page.text  # the panel ID is not an editable box
    action = urlsplit(_form_action(page.text))
    assert parse_qs(action.query) == {
        "PROLIFIC_PID": [PID],
        "STUDY_ID": ["st-42"],
        "SESSION_ID": ["first visit"],
    }  # only the configured parameters travel on

    token, location = _consent(client, sid, link)
    assert location.endswith("/instructions")
    participant = Participant(METRIC)
    state = client.get(f"/api/v1/sessions/{token}").json()
    participant.answer(client, token, state)
    participant.answer(client, token, client.get(f"/api/v1/sessions/{token}").json())

    # The study opted in: the same PID from another browser (no cookie), on a later Prolific session,
    # continues with one click.
    client.cookies.clear()
    again = client.get(f"/studies/{sid}/join", params={**link, "SESSION_ID": "second visit"})
    assert again.status_code == 200
    assert 'data-testid="welcome-back"' in again.text and 'data-testid="consent-submit"' not in again.text
    resumed = client.post(_form_action(again.text), data={"consent": "yes"}, follow_redirects=False)
    assert resumed.status_code == 303
    second_token = resumed.headers["location"].split("/")[2]
    assert second_token != token and resumed.headers["location"] == f"/sessions/{second_token}"
    assert client.get(f"/api/v1/sessions/{second_token}").json()["progress"]["answered"] == 2

    done = participant.finish(client, second_token)
    assert done["result"]["completion_code"] == "C1A2B3C4"
    expected = (
        "https://app.prolific.com/submissions/complete?cc=C1A2B3C4"
        "&pid=5f1a%26next%3Dhttps%3A%2F%2Fevil.example%2F%23x%20y&s=first%20visit"
    )
    assert done["result"]["redirect_url"] == expected
    result = client.get(f"/sessions/{second_token}/result")
    assert result.status_code == 200
    assert 'data-testid="completion-code">C1A2B3C4<' in result.text
    assert f'data-forward-url="{html.escape(expected)}"' in result.text
    assert 'data-forward-seconds="10"' in result.text
    assert f'content="10;url={html.escape(expected)}"' in result.text  # the no-script forward
    assert "Return to Prolific" in result.text

    rows = _results_csv(client, sid, coordinator)
    assert len(rows) == 1  # the returning PID did not start a second session
    row = rows[0]
    assert row["participant_code"] == PID
    assert (row["panel_PROLIFIC_PID"], row["panel_STUDY_ID"], row["panel_SESSION_ID"]) == (
        PID,
        "st-42",
        "first visit",  # read-only: the values the session started with
    )
    assert row["status"] == "done" and "panel_utm_source" not in row
    archive = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(coordinator)).json()
    assert archive["sessions"][0]["panel"] == {
        "PROLIFIC_PID": PID,
        "STUDY_ID": "st-42",
        "SESSION_ID": "first visit",
    }


def test_a_prolific_study_refuses_to_start_without_a_pid_or_with_a_malformed_one(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    coordinator = accounts["alice"]["token"]
    sid = _open_study(client, coordinator, PROLIFIC)
    bare = client.get(f"/studies/{sid}/join")
    assert bare.status_code == 200
    assert "please open this study from Prolific" in bare.text
    assert 'data-testid="consent-submit"' not in bare.text
    refused = client.post(f"/studies/{sid}/join", data={"consent": "yes", "participant_code": "typed"})
    assert refused.status_code == 422 and "open this study from Prolific" in refused.text
    too_long = client.get(f"/studies/{sid}/join", params={"PROLIFIC_PID": "x" * 201})
    assert (
        "PROLIFIC_PID is not valid" in too_long.text and 'data-testid="consent-submit"' not in too_long.text
    )
    control = client.get(f"/studies/{sid}/join", params={"PROLIFIC_PID": "a\x00b"})
    assert "PROLIFIC_PID is not valid" in control.text
    assert _results_csv(client, sid, coordinator) == []  # nothing was stored


def test_another_pid_on_a_shared_browser_starts_its_own_session(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    coordinator = accounts["alice"]["token"]
    sid = _open_study(client, coordinator, PROLIFIC)
    first, _ = _consent(client, sid, {"PROLIFIC_PID": "AAA"})
    assert client.cookies.get(PARTICIPANT_COOKIE) == first
    same = client.get(f"/studies/{sid}/join", params={"PROLIFIC_PID": "AAA"})
    assert 'data-testid="welcome-back"' in same.text and f"/sessions/{first}" in same.text
    other = client.get(f"/studies/{sid}/join", params={"PROLIFIC_PID": "BBB"})
    assert 'data-testid="consent-submit"' in other.text  # not the session of AAA
    second, location = _consent(client, sid, {"PROLIFIC_PID": "BBB"})
    assert second != first and location.endswith("/instructions")
    codes = sorted(row["participant_code"] for row in _results_csv(client, sid, coordinator))
    assert codes == ["AAA", "BBB"]


def test_without_a_study_wide_code_each_session_gets_its_own(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    coordinator = accounts["alice"]["token"]
    config = {
        **STUDY_CONFIG,
        "panel": {"name": "the survey", "parameters": ["rid"], "id_parameter": "rid"},
        "redirect_url": "https://survey.example.org/end?code={completion_code}&who={participant_code}&rid={rid}",
        "redirect_delay_seconds": 0,
    }
    sid = _open_study(client, coordinator, config)
    codes = []
    for rid in ("R_1", "R_2"):
        client.cookies.clear()
        token, _ = _consent(client, sid, {"rid": rid})
        done = Participant(METRIC).finish(client, token)
        code = done["result"]["completion_code"]
        assert re.fullmatch(r"[0-9A-F]{5}-[0-9A-F]{5}", code)
        assert done["result"]["redirect_url"] == (
            f"https://survey.example.org/end?code={code}&who={rid}&rid={rid}"
        )
        codes.append(code)
    assert codes[0] != codes[1]
    # Without the ID (not required here) the consent page asks for a code as before.
    client.cookies.clear()
    page = client.get(f"/studies/{sid}/join")
    assert 'name="participant_code"' in page.text and 'data-testid="consent-submit"' in page.text


def test_panel_and_redirect_settings_are_validated_with_clear_messages(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    coordinator = accounts["alice"]["token"]
    cases = [
        ({"redirect_url": "https://{participant_code}.example.org/"}, "only appear after the ?"),
        ({"redirect_url": "https://example.org/{completion_code}/x"}, "only appear after the ?"),
        ({"redirect_url": "https://example.org/?pid={PROLIFIC_PID}"}, "unknown placeholder {PROLIFIC_PID}"),
        ({"redirect_url": "javascript:alert(1)//?{completion_code}"}, "https:// or http://"),
        ({"redirect_url": "https://example.org/?a={"}, "must enclose a placeholder"),
        ({"panel": "qualtrics"}, "unknown panel 'qualtrics'"),
        ({"panel": {"parameters": ["a b"]}}, "is not a parameter name"),
        ({"panel": {"parameters": ["rid"], "id_parameter": "pid"}}, "must be one of the parameters"),
        ({"completion_code": "has space"}, "letters, digits, _ or -"),
        ({"redirect_delay_seconds": -1}, "redirect_delay_seconds"),
    ]
    for change, message in cases:
        response = client.post(
            "/api/v1/studies", json={**STUDY_CONFIG, **change}, headers=bearer(coordinator)
        )
        assert response.status_code == 422, (change, response.text)
        assert message in response.text, (change, response.text)


def test_study_form_saves_and_shows_panel_completion_and_framing_settings(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    form = {
        "csrf_token": csrf,
        "action": "save",
        "name": "Panel study",
        "task": "Decide whether a tumour is benign or malignant.",
        "class_names": "benign, malignant",
        "algorithm": "lpme",
        "epsilon": "0.2",
        "checks": "on",
        "open_enrolment": "on",
        "panel": "prolific",
        "completion_code": "C1A2B3C4",
        "redirect_url": REDIRECT,
        "redirect_delay_seconds": "3",
        "frame_ancestors": "https://*.Qualtrics.com/\nhttp://127.0.0.2:8001",
    }
    saved = client.post("/admin/studies/new", data=form, follow_redirects=False)
    assert saved.status_code == 303, saved.text
    sid = saved.headers["location"].rsplit("/", 1)[1]
    config = client.get(f"/api/v1/studies/{sid}", headers=bearer(accounts["alice"]["token"])).json()["config"]
    assert config["panel"]["parameters"] == ["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"]
    assert config["completion_code"] == "C1A2B3C4" and config["redirect_url"] == REDIRECT
    assert config["redirect_delay_seconds"] == 3 and config["resume_by_participant_code"] is False
    assert config["frame_ancestors"] == ["https://*.qualtrics.com", "http://127.0.0.2:8001"]
    page = client.get(f"/admin/studies/{sid}")
    assert (
        f"/studies/{sid}/join?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&amp;STUDY_ID={{{{%STUDY_ID%}}}}"
        "&amp;SESSION_ID={{%SESSION_ID%}}</code>" in page.text
    )
    edit = client.get(f"/admin/studies/{sid}/edit")
    assert '<option value="prolific" selected>' in edit.text
    assert 'value="C1A2B3C4"' in edit.text and html.escape(REDIRECT) in edit.text
    assert "https://*.qualtrics.com\nhttp://127.0.0.2:8001</textarea>" in edit.text

    custom = {
        **form,
        "panel": "custom",
        "panel_parameters": "rid, source",
        "panel_id_parameter": "rid",
        "panel_name": "the survey",
        "resume_by_participant_code": "on",
        "redirect_url": "https://survey.example.org/end?code={completion_code}&src={source}",
        "completion_code": "",
        "frame_ancestors": "",
    }
    saved = client.post(f"/admin/studies/{sid}/edit", data=custom, follow_redirects=False)
    assert saved.status_code == 303, saved.text
    config = client.get(f"/api/v1/studies/{sid}", headers=bearer(accounts["alice"]["token"])).json()["config"]
    assert config["panel"] == {
        "name": "the survey",
        "parameters": ["rid", "source"],
        "id_parameter": "rid",
        "require_id": False,
    }
    assert config["completion_code"] is None and config["frame_ancestors"] == []
    assert config["resume_by_participant_code"] is True
    edit = client.get(f"/admin/studies/{sid}/edit")
    assert '<option value="custom" selected>' in edit.text and 'value="rid, source"' in edit.text
    page = client.get(f"/admin/studies/{sid}")
    assert f"/studies/{sid}/join?rid=…&amp;source=…</code>" in page.text
    assert "The link to give the survey" in page.text

    bad_redirect = {**custom, "redirect_url": "https://survey.example.org/{rid}"}
    refused = client.post(f"/admin/studies/{sid}/edit", data=bad_redirect)
    assert refused.status_code == 422 and "only appear after the ?" in refused.text
    assert 'value="https://survey.example.org/{rid}"' in refused.text  # nothing typed is lost
    refused = client.post(f"/admin/studies/{sid}/edit", data={**custom, "frame_ancestors": "https://a.org/x"})
    assert refused.status_code == 422 and "is not an origin" in refused.text
    assert "https://a.org/x</textarea>" in refused.text


def test_panel_values_survive_an_archive_export_and_import(
    client: TestClient, accounts: dict[str, Any], fresh_app: Any
) -> None:
    coordinator = accounts["alice"]["token"]
    sid = _open_study(client, coordinator, PROLIFIC)
    token, _ = _consent(client, sid, {"PROLIFIC_PID": PID, "STUDY_ID": "st", "SESSION_ID": "s1"})
    Participant(METRIC).finish(client, token)
    archive = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(coordinator)).json()
    original = client.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(coordinator)).text
    assert PID in original
    with fresh_app.state.sessionmaker() as db:
        user = create_user(db, "importer@example.org", "a long enough password", "coordinator")
        _token, secret = create_api_token(db, user, "import")
    with TestClient(fresh_app) as other:
        imported = other.post("/api/v1/studies/import", json=archive, headers=bearer(secret))
        assert imported.status_code == 201, imported.text
        assert other.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(secret)).text == original
        bad = copy.deepcopy(archive)
        bad["study"]["id"] = "00000000-0000-4000-8000-000000000002"
        bad["sessions"][0]["id"] = "00000000-0000-4000-8000-000000000003"
        bad["sessions"][0]["panel"] = {"PROLIFIC_PID": "x" * 201}
        refused = other.post("/api/v1/studies/import", json=bad, headers=bearer(secret))
        assert refused.status_code == 422 and "panel" in refused.json()["message"]


def test_a_panel_id_is_shown_as_text_never_as_markup(client: TestClient, accounts: dict[str, Any]) -> None:
    sid = _open_study(client, accounts["alice"]["token"], PROLIFIC)
    page = client.get(f"/studies/{sid}/join", params={"PROLIFIC_PID": '<script>alert(1)</script>"'})
    assert page.status_code == 200
    assert "<script>alert(1)" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "PROLIFIC_PID=%3Cscript%3Ealert%281%29%3C%2Fscript%3E%22" in page.text  # the form's address
