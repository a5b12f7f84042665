"""Bad-input battery: every malformed, oversized, hostile or misdirected request gets a clear 4xx, stores
nothing, and no study text or participant input is ever rendered as markup."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from reliability_support import assert_no_active_content, create_small_study
from sqlalchemy import func, select

from app import sessions
from app.main import MAX_REQUEST_BODY_BYTES, create_app
from app.models import Answer, ElicitationSession
from app.settings import Settings
from app.study_config import StudyConfigError

SCRIPT = '<script>alert("pwned")</script>'
IMG = '"><img src=x onerror=alert(1)>'
BREAKOUT = "</script><script>alert(2)</script>"
PAYLOADS = (SCRIPT, IMG, BREAKOUT)

#: Every free-text field of a study configuration carries a payload (names are limited to 60 characters).
HOSTILE_STUDY: dict[str, Any] = {
    "name": f"{SCRIPT} study",
    "task": f"{IMG} decides {BREAKOUT}",
    "class_names": [BREAKOUT, IMG],
    "population": SCRIPT,
    "consent_text": f"{IMG}\n\n{SCRIPT}",
    "instructions_text": f"{BREAKOUT}\n\n{IMG}",
}


@pytest.fixture
def env(sqlite_file_settings: Settings) -> Iterator[dict[str, Any]]:
    study = create_small_study(sqlite_file_settings)
    closed = create_small_study(sqlite_file_settings, name="closed", open_enrolment=False)
    app = create_app(sqlite_file_settings)
    with app.state.sessionmaker() as db:
        _session, token = sessions.create_session(db, app.state.session_cache, study.id, consented=True)
    with TestClient(app, raise_server_exceptions=True, follow_redirects=False) as client:
        yield {"app": app, "client": client, "study": study, "closed": closed, "token": token}
    app.state.engine.dispose()


def _counts(app: Any) -> tuple[int, int]:
    with app.state.sessionmaker() as db:
        answers = db.scalar(select(func.count()).select_from(Answer)) or 0
        sessions = db.scalar(select(func.count()).select_from(ElicitationSession)) or 0
    return answers, sessions


def _answers_url(env: dict[str, Any]) -> str:
    return f"/api/v1/sessions/{env['token']}/answers"


JSON_TYPE = {"content-type": "application/json"}
# Each case: (request kwargs, expected status, field named in the 422 body or None).
ANSWER_CASES: dict[str, tuple[dict[str, Any], int, str | None]] = {
    "malformed json": (
        {"content": b'{"seq": 0, "preferred": ', "headers": JSON_TYPE},
        422,
        "body",
    ),
    "not utf-8": ({"content": b"\xff\xfe\xfa", "headers": JSON_TYPE}, 400, None),
    "json array": ({"json": [0, "first"]}, 422, "body"),
    "json string": ({"json": "first"}, 422, "body"),
    "empty body": ({"content": b"", "headers": JSON_TYPE}, 422, "body"),
    "seq as text": ({"json": {"seq": "zero", "preferred": "first"}}, 422, "seq"),
    "seq as float": ({"json": {"seq": 0.5, "preferred": "first"}}, 422, "seq"),
    "seq as bool": ({"json": {"seq": [True], "preferred": "first"}}, 422, "seq"),
    "seq missing": ({"json": {"preferred": "first"}}, 422, "seq"),
    "negative seq": ({"json": {"seq": -1, "preferred": "first"}}, 422, "seq"),
    "huge seq": ({"json": {"seq": 10**30, "preferred": "first"}}, 409, None),
    "seq of a future query": ({"json": {"seq": 1, "preferred": "first"}}, 409, None),
    "preferred unknown": ({"json": {"seq": 0, "preferred": "left"}}, 422, "preferred"),
    "preferred as html": ({"json": {"seq": 0, "preferred": SCRIPT}}, 422, "preferred"),
    "preferred as number": ({"json": {"seq": 0, "preferred": 1}}, 422, "preferred"),
    "very long preferred": ({"json": {"seq": 0, "preferred": "x" * 50_000}}, 422, "preferred"),
    "negative timing": (
        {"json": {"seq": 0, "preferred": "first", "time_on_page_ms": -5}},
        422,
        "time_on_page_ms",
    ),
    "timing as text": ({"json": {"seq": 0, "preferred": "first", "hidden_ms": "soon"}}, 422, "hidden_ms"),
    # A field named like a location ("query") must still be named in the error.
    "unknown field": ({"json": {"seq": 0, "preferred": "first", "query": {"first": [1, 0]}}}, 422, "query"),
    "another unknown field": ({"json": {"seq": 0, "preferred": "first", "rates": [1, 0]}}, 422, "rates"),
    "oversized json": (
        {"json": {"seq": 0, "preferred": "first", "pad": "x" * (MAX_REQUEST_BODY_BYTES + 1)}},
        413,
        None,
    ),
    "oversized chunked": (
        {"content": iter([b'{"seq": 0, "pad": "', b"x" * (MAX_REQUEST_BODY_BYTES + 1), b'"}'])},
        413,
        None,
    ),
    # Small enough for the limit, too deep for the JSON parser's recursion: refused, not a 500.
    "deeply nested json": (
        {"content": b"[" * 20_000 + b"]" * 20_000, "headers": JSON_TYPE},
        400,
        None,
    ),
}


@pytest.mark.parametrize("case", list(ANSWER_CASES), ids=list(ANSWER_CASES))
def test_bad_answer_is_refused_and_stores_nothing(env: dict[str, Any], case: str) -> None:
    kwargs, status, field = ANSWER_CASES[case]
    client: TestClient = env["client"]
    before = _counts(env["app"])
    response = client.post(_answers_url(env), **kwargs)
    assert response.status_code == status, response.text[:300]
    assert _counts(env["app"]) == before
    if response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
        assert isinstance(body["error"], str) and body["message"]
        if status == 422:
            assert body["error"] == "validation_error"
            assert field in {item["field"] for item in body["fields"]}, body
        if status == 409:
            assert body["error"] == "stale_seq"
            assert body["state"]["query"]["seq"] == 0
    # The session still takes its first answer normally afterwards.
    ok = client.post(_answers_url(env), json={"seq": 0, "preferred": "first"})
    assert ok.status_code == 200


def test_unknown_and_malformed_tokens_are_indistinguishable(env: dict[str, Any]) -> None:
    client: TestClient = env["client"]
    unknown = secrets.token_urlsafe(32)
    bodies = set()
    for token in (unknown, "short", "x" * 5000, "tok en", "ünïcode", "'; DROP TABLE answer;--"):
        for method, suffix, body in (
            ("GET", "", None),
            ("POST", "/answers", {"seq": 0, "preferred": "first"}),
            ("POST", "/undo", {}),
            ("POST", "/consent", None),
        ):
            response = client.request(method, f"/api/v1/sessions/{token}{suffix}", json=body)
            assert response.status_code == 404, (token, suffix, response.status_code)
            bodies.add(response.text)
        page = client.get(f"/sessions/{token}")
        assert page.status_code == 404
        assert_no_active_content(page.text)
    # The same answer whether the token was well formed or not: nothing leaks about what exists.
    assert len(bodies) == 1
    # Path tricks end in a 404 (possibly after the standard trailing-slash redirect), never in a file.
    for path in ("/api/v1/sessions/../../etc/passwd", "/api/v1/sessions/%2e%2e%2f", "/sessions/a%2fb"):
        response = client.get(path, follow_redirects=True)
        assert response.status_code == 404, path
    assert _counts(env["app"])[0] == 0


def test_study_ids_never_reveal_closed_or_missing_studies(env: dict[str, Any]) -> None:
    """A closed study, an unknown one, a malformed id and a session token used as a study id: one 404."""
    client: TestClient = env["client"]
    before = _counts(env["app"])
    bodies = set()
    for study_id in (env["closed"].id, uuid.uuid4(), "not-a-uuid", env["token"], "x" * 5000):
        response = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
        assert response.status_code == 404
        bodies.add(response.text)
        page = client.get(f"/studies/{study_id}/join")
        assert page.status_code == 404
        joined = client.post(f"/studies/{study_id}/join", data={"consent": "yes"})
        assert joined.status_code == 404
    assert len(bodies) == 1
    assert _counts(env["app"]) == before


def test_a_token_only_opens_its_own_session(env: dict[str, Any]) -> None:
    """A session token of one study gives no access to another study or another session."""
    client: TestClient = env["client"]
    other = client.post(f"/api/v1/studies/{env['study'].id}/sessions", json={"consent": True}).json()["token"]
    client.post(_answers_url(env), json={"seq": 0, "preferred": "first"})
    mine = client.get(f"/api/v1/sessions/{env['token']}").json()
    theirs = client.get(f"/api/v1/sessions/{other}").json()
    assert mine["progress"]["answered"] == 1 and theirs["progress"]["answered"] == 0
    # The study id is not a credential for the closed study's sessions either.
    assert client.get(f"/api/v1/sessions/{env['closed'].id}").status_code == 404


def test_participant_code_is_bounded_and_stored_as_data(env: dict[str, Any]) -> None:
    client: TestClient = env["client"]
    study_id = env["study"].id
    before = _counts(env["app"])
    too_long = client.post(f"/api/v1/studies/{study_id}/sessions", json={"participant_code": "p" * 201})
    assert too_long.status_code == 422
    assert "participant_code" in {item["field"] for item in too_long.json()["fields"]}
    wrong_type = client.post(f"/api/v1/studies/{study_id}/sessions", json={"participant_code": ["a"]})
    assert wrong_type.status_code == 422
    page = client.post(f"/studies/{study_id}/join", data={"consent": "yes", "participant_code": "p" * 201})
    assert page.status_code == 422
    assert_no_active_content(page.text)
    assert _counts(env["app"]) == before
    created = client.post(f"/api/v1/studies/{study_id}/sessions", json={"participant_code": SCRIPT})
    assert created.status_code == 201
    with env["app"].state.sessionmaker() as db:
        codes = db.scalars(select(ElicitationSession.participant_code)).all()
    assert SCRIPT in codes  # kept verbatim as data; escaping is the renderer's job


def test_form_posts_with_hostile_values_are_refused_and_escaped(env: dict[str, Any]) -> None:
    client: TestClient = env["client"]
    token = env["token"]
    before = _counts(env["app"])
    for data in (
        {"seq": "0", "preferred": SCRIPT},
        {"seq": IMG, "preferred": "first"},
        {"seq": "0", "preferred": "first", "time_on_page_ms": BREAKOUT},
        {"seq": "-3", "preferred": "first"},
    ):
        response = client.post(f"/sessions/{token}/answers", data=data)
        assert response.status_code == 422, data
        assert_no_active_content(response.text)
        for payload in PAYLOADS:
            assert payload not in response.text
    undo = client.post(f"/sessions/{token}/undo", data={"seq": SCRIPT})
    assert undo.status_code == 422
    assert_no_active_content(undo.text)
    assert _counts(env["app"]) == before


def test_study_texts_are_rendered_as_text_on_every_page(
    env: dict[str, Any], sqlite_file_settings: Settings
) -> None:
    """HTML/JS in every text field of a study: escaped on the join, consent, instructions, question and
    thank-you pages, and inert inside the embedded chart JSON."""
    study = create_small_study(sqlite_file_settings, **HOSTILE_STUDY)
    client: TestClient = env["client"]
    pages = []
    join = client.get(f"/studies/{study.id}/join")
    assert join.status_code == 200
    pages.append(join.text)
    refused = client.post(f"/studies/{study.id}/join", data={"participant_code": IMG})
    assert refused.status_code == 422
    pages.append(refused.text)
    joined = client.post(f"/studies/{study.id}/join", data={"consent": "yes", "participant_code": SCRIPT})
    assert joined.status_code == 303
    token = joined.headers["location"].split("/")[2]
    for path in (f"/sessions/{token}/instructions", f"/sessions/{token}"):
        response = client.get(path)
        assert response.status_code == 200, path
        pages.append(response.text)
    invited = client.post(f"/api/v1/studies/{study.id}/sessions", json={})
    consent_page = client.get(f"/sessions/{invited.json()['token']}")
    assert consent_page.status_code == 200
    pages.append(consent_page.text)
    state = client.get(f"/api/v1/sessions/{token}").json()
    while state["query"] is not None:
        state = client.post(
            f"/api/v1/sessions/{token}/answers", json={"seq": state["query"]["seq"], "preferred": "first"}
        ).json()
    stale = client.post(f"/sessions/{token}/answers", data={"seq": "0", "preferred": "second"})
    pages.append(client.get(stale.headers["location"]).text if stale.status_code == 303 else stale.text)
    result = client.get(f"/sessions/{token}/result")
    assert result.status_code == 200
    pages.append(result.text)
    for page in pages:
        assert_no_active_content(page)
        for payload in PAYLOADS:
            assert payload not in page
    # The texts are shown, escaped (Jinja) or as JSON strings (charts), not dropped.
    assert any("&lt;script&gt;alert(" in page for page in pages)
    assert any("\\u003c/script\\u003e" in page or "\\u003c" in page for page in pages)


def test_unsafe_redirect_urls_and_oversized_texts_are_refused_at_study_creation(
    sqlite_file_settings: Settings,
) -> None:
    for overrides in (
        {"redirect_url": "javascript:alert(1)"},
        {"redirect_url": "data:text/html,<script>alert(1)</script>"},
        {"name": "n" * 201},
        {"consent_text": "c" * 10_001},
        {"class_names": ["a" * 61, "b"]},
        {"population": ""},
    ):
        with pytest.raises(StudyConfigError):
            create_small_study(sqlite_file_settings, **overrides)
