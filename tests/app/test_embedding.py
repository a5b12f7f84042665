"""Embedding: a study's frame-ancestors allow-list on its participant pages, the default refusal
everywhere else, origin validation, and the participant cookie that works inside a cross-site frame."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import METRIC, Participant, make_study
from fastapi.testclient import TestClient

from app.embedding import content_security_policy, normalise_origin
from app.models import StudyControl, StudyStatus
from app.routes.pages import PARTICIPANT_COOKIE

ORIGINS = ["https://*.qualtrics.com", "http://127.0.0.2:8001"]


def _framing(response: Any) -> tuple[str, str | None]:
    policy = response.headers["content-security-policy"]
    ancestors = next(part.strip() for part in policy.split(";") if "frame-ancestors" in part)
    return ancestors, response.headers.get("x-frame-options")


def _join(client: TestClient, study: Any) -> Any:
    response = client.post(f"/studies/{study.id}/join", data={"consent": "yes"}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return response


def test_a_study_without_an_allow_list_refuses_every_frame(client: TestClient, study: Any) -> None:
    assert _framing(client.get(f"/studies/{study.id}/join")) == ("frame-ancestors 'none'", "DENY")
    token = _join(client, study).headers["location"].split("/")[2]
    assert _framing(client.get(f"/sessions/{token}")) == ("frame-ancestors 'none'", "DENY")


def test_an_allow_listed_study_may_be_framed_by_its_origins_on_every_participant_page(
    client: TestClient, app: Any
) -> None:
    study = make_study(app, frame_ancestors=ORIGINS)
    other = make_study(app, name="not embeddable")
    allowed = ("frame-ancestors https://*.qualtrics.com http://127.0.0.2:8001", None)
    assert _framing(client.get(f"/studies/{study.id}/join")) == allowed
    joined = _join(client, study)
    assert _framing(joined) == allowed
    token = joined.headers["location"].split("/")[2]
    assert _framing(client.get(f"/sessions/{token}/instructions")) == allowed
    assert _framing(client.get(f"/sessions/{token}")) == allowed
    assert _framing(client.get(f"/studies/{study.id}/join")) == allowed  # welcome back
    Participant(METRIC).finish(client, token)
    assert _framing(client.get(f"/sessions/{token}/result")) == allowed
    # Everything else keeps the default: other studies, the home page, the back office, the API.
    assert _framing(client.get(f"/studies/{other.id}/join")) == ("frame-ancestors 'none'", "DENY")
    assert _framing(client.get("/")) == ("frame-ancestors 'none'", "DENY")
    assert _framing(client.get("/admin/login")) == ("frame-ancestors 'none'", "DENY")
    assert _framing(client.get(f"/api/v1/sessions/{token}")) == ("frame-ancestors 'none'", "DENY")
    # The rest of the policy is unchanged.
    policy = client.get(f"/studies/{study.id}/join").headers["content-security-policy"]
    assert policy == content_security_policy(ORIGINS) and "script-src 'self';" in policy


def test_error_pages_of_an_allow_listed_study_may_be_framed_too(client: TestClient, app: Any) -> None:
    study = make_study(app, frame_ancestors=ORIGINS)
    allowed = ("frame-ancestors https://*.qualtrics.com http://127.0.0.2:8001", None)
    token = _join(client, study).headers["location"].split("/")[2]
    # A stale answer on a session page: the 409 page carries the session, and so the study's list.
    state = client.get(f"/api/v1/sessions/{token}").json()
    client.post(
        f"/api/v1/sessions/{token}/answers", json={"seq": state["query"]["seq"], "preferred": "first"}
    )
    stale = client.post(
        f"/sessions/{token}/answers", data={"seq": state["query"]["seq"], "preferred": "second"}
    )
    assert stale.status_code == 409 and _framing(stale) == allowed
    # The study is paused: a newcomer's join page says so, inside the frame.
    with app.state.sessionmaker() as db:
        db.add(StudyControl(study_id=study.id, status=StudyStatus.PAUSED.value))
        db.commit()
    client.cookies.clear()
    paused = client.get(f"/studies/{study.id}/join")
    assert paused.status_code == 409 and "paused" in paused.text and _framing(paused) == allowed
    refused = client.post(f"/studies/{study.id}/join", data={"consent": "yes"})
    assert refused.status_code == 409 and _framing(refused) == allowed
    # Another study's errors keep the default.
    other = make_study(app, name="plain")
    with app.state.sessionmaker() as db:
        db.add(StudyControl(study_id=other.id, status=StudyStatus.PAUSED.value))
        db.commit()
    assert _framing(client.get(f"/studies/{other.id}/join")) == ("frame-ancestors 'none'", "DENY")


@pytest.mark.parametrize(
    ("base_url", "in_frames"),
    [
        ("http://127.0.0.1", True),
        ("http://localhost:8000", True),
        ("https://studio.example.org", True),
        ("http://studio.example.org", False),
    ],
)
def test_an_embeddable_study_cookie_is_samesite_none_partitioned_where_browsers_keep_it(
    app: Any, base_url: str, in_frames: bool
) -> None:
    study = make_study(app, frame_ancestors=ORIGINS)
    with TestClient(app, base_url=base_url) as client:
        cookie = _join(client, study).headers["set-cookie"]
        assert cookie.startswith(f"{PARTICIPANT_COOKIE}=") and "HttpOnly" in cookie
        assert f"Path=/studies/{study.id}" in cookie
        if in_frames:
            assert "SameSite=none" in cookie and "Secure" in cookie and cookie.endswith("; Partitioned")
        else:
            # A SameSite=None cookie without Secure is dropped by browsers: top-level visits keep Lax.
            assert "SameSite=lax" in cookie and "Partitioned" not in cookie
        forgotten = client.post(f"/studies/{study.id}/join/forget", follow_redirects=False)
        cleared = forgotten.headers["set-cookie"]
        assert "Max-Age=0" in cleared or "max-age=0" in cleared.lower()
        assert ("Partitioned" in cleared) is in_frames


def test_a_study_without_an_allow_list_keeps_its_lax_cookie_on_loopback(app: Any) -> None:
    study = make_study(app)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        cookie = _join(client, study).headers["set-cookie"]
        assert "SameSite=lax" in cookie and "Partitioned" not in cookie


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("https://survey.example.org", "https://survey.example.org"),
        ("HTTPS://Survey.Example.org/", "https://survey.example.org"),
        ("https://*.qualtrics.com", "https://*.qualtrics.com"),
        ("http://127.0.0.2:8001", "http://127.0.0.2:8001"),
        ("  https://a-b.example.org:443  ", "https://a-b.example.org:443"),
    ],
)
def test_normalise_origin_accepts_origins(value: str, expected: str) -> None:
    assert normalise_origin(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        "*",
        "'self'",
        "https://example.org/path",
        "https://example.org?x=1",
        "https://example.org 'unsafe-inline'",
        "https://example.org;script-src *",
        "javascript://example.org",
        "ftp://example.org",
        "https://user@example.org",
        "https://exa*mple.org",
        "https://*.*.example.org",
        "https://example.org:0",
        "https://example.org:70000",
        "http://999.1.1.1",
        "example.org",
        "https://-bad.example.org",
    ],
)
def test_normalise_origin_refuses_anything_else(value: str) -> None:
    with pytest.raises(ValueError, match=r"origin|port|IP address"):
        normalise_origin(value)
