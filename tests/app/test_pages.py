"""HTML pages: consent before anything counts, the question form, PRG, undo, thank-you, errors, headers."""

from __future__ import annotations

import re
from typing import Any

import pytest
from app_support import METRIC, Participant, make_study, new_session
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.main import create_app
from app.models import Answer, ElicitationSession
from app.settings import Settings


def count_sessions(app: Any) -> int:
    with app.state.sessionmaker() as db:
        return int(db.scalar(select(func.count()).select_from(ElicitationSession)) or 0)


def seq_of(html: str) -> int:
    match = re.search(r'name="seq" value="(\d+)"', html)
    assert match, "the answer form carries seq"
    return int(match.group(1))


def join(client: TestClient, study: Any) -> str:
    response = client.post(f"/studies/{study.id}/join", data={"consent": "yes"}, follow_redirects=False)
    assert response.status_code == 303
    location = response.headers["location"]
    assert location.endswith("/instructions")
    return location.split("/")[2]


def test_join_page_creates_nothing(client: TestClient, app: Any, study: Any) -> None:
    for _ in range(3):  # link previewers fetch the page; no session may be counted
        response = client.get(f"/studies/{study.id}/join")
        assert response.status_code == 200
        assert 'data-testid="consent"' in response.text
    assert count_sessions(app) == 0


def test_join_without_consent_rerenders_with_message(client: TestClient, app: Any, study: Any) -> None:
    response = client.post(f"/studies/{study.id}/join", data={}, follow_redirects=False)
    assert response.status_code == 422
    assert 'data-testid="form-errors"' in response.text
    assert count_sessions(app) == 0


def test_join_with_consent_starts_a_session(client: TestClient, app: Any, study: Any) -> None:
    token = join(client, study)
    assert count_sessions(app) == 1
    instructions = client.get(f"/sessions/{token}/instructions")
    assert instructions.status_code == 200
    assert 'data-testid="instructions"' in instructions.text
    assert 'data-testid="comparison"' in instructions.text  # the worked example uses the real charts
    page = client.get(f"/sessions/{token}")
    assert page.status_code == 200
    for hook in ("choose-left", "choose-right", "choose-tie", "progress", "practice-banner"):
        assert f'data-testid="{hook}"' in page.text
    assert 'data-testid="undo"' not in page.text  # nothing to undo yet


def test_invitation_shows_consent_until_confirmed(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study, consent=False)
    page = client.get(f"/sessions/{token}")
    assert page.status_code == 200 and 'data-testid="consent"' in page.text
    assert client.get(f"/sessions/{token}/instructions", follow_redirects=False).status_code == 303
    refused = client.post(f"/sessions/{token}/consent", data={}, follow_redirects=False)
    assert refused.status_code == 422
    confirmed = client.post(f"/sessions/{token}/consent", data={"consent": "yes"}, follow_redirects=False)
    assert confirmed.status_code == 303 and confirmed.headers["location"].endswith("/instructions")
    assert 'data-testid="choose-left"' in client.get(f"/sessions/{token}").text


def test_answer_form_post_redirect_get(client: TestClient, app: Any, study: Any) -> None:
    token = join(client, study)
    page = client.get(f"/sessions/{token}").text
    seq = seq_of(page)
    form = {"seq": str(seq), "preferred": "second", "time_on_page_ms": "", "hidden_ms": ""}
    response = client.post(f"/sessions/{token}/answers", data=form, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == f"/sessions/{token}"
    # The same form sent again (double click, reload) records nothing new and goes to the current query.
    again = client.post(f"/sessions/{token}/answers", data=form, follow_redirects=False)
    assert again.status_code == 303
    conflicting = client.post(f"/sessions/{token}/answers", data={**form, "preferred": "first"})
    assert conflicting.status_code == 409
    assert 'data-testid="continue"' in conflicting.text
    with app.state.sessionmaker() as db:
        rows = db.scalars(select(Answer)).all()
    assert len(rows) == 1 and rows[0].time_on_page_ms is None
    next_page = client.get(f"/sessions/{token}").text
    assert seq_of(next_page) == seq + 1
    assert 'data-testid="undo"' in next_page


def test_undo_form_goes_back(client: TestClient, study: Any) -> None:
    token = join(client, study)
    first_page = client.get(f"/sessions/{token}").text
    client.post(f"/sessions/{token}/answers", data={"seq": "0", "preferred": "first"})
    response = client.post(f"/sessions/{token}/undo", data={"seq": "1"}, follow_redirects=False)
    assert response.status_code == 303
    again = client.get(f"/sessions/{token}").text
    assert seq_of(again) == 2
    # the same comparison is shown again (same chart data)
    charts = re.findall(r'<script type="application/json" id="[^"]+">(.*?)</script>', first_page, re.S)
    assert charts and charts == re.findall(
        r'<script type="application/json" id="[^"]+">(.*?)</script>', again, re.S
    )
    # a stale undo form (double click) just shows the current question
    stale = client.post(f"/sessions/{token}/undo", data={"seq": "1"}, follow_redirects=False)
    assert stale.status_code == 303


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"seq": "0", "preferred": "maybe"}, "preferred"),
        ({"preferred": "first"}, "seq"),
        ({"seq": "x", "preferred": "first"}, "seq"),
        ({"seq": "0", "preferred": "first", "hidden_ms": "-3"}, "hidden_ms"),
    ],
)
def test_malformed_form_is_a_422_page(
    client: TestClient, study: Any, form: dict[str, str], field: str
) -> None:
    token = join(client, study)
    response = client.post(f"/sessions/{token}/answers", data=form)
    assert response.status_code == 422
    assert 'data-testid="error-422"' in response.text
    assert f"<code>{field}</code>" in response.text


def test_thank_you_page_after_the_result(client: TestClient, app: Any, study: Any) -> None:
    token = join(client, study)
    result_before = client.get(f"/sessions/{token}/result", follow_redirects=False)
    assert result_before.status_code == 303  # no completion code before the result is committed
    final = Participant(METRIC).finish(client, token)
    response = client.get(f"/sessions/{token}", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].endswith("/result")
    page = client.get(f"/sessions/{token}/result")
    assert page.status_code == 200
    assert final["result"]["completion_code"] in page.text
    assert 'data-testid="redirect"' in page.text
    assert 'href="https://panel.example.org/done?study=1"' in page.text
    assert 'data-testid="metric-summary"' in page.text
    assert 'data-figure="metric-costs"' in page.text and 'data-testid="cost-table"' in page.text
    # plotly.js must find its stylesheet hook, or the strict CSP would block the style it injects
    assert 'id="plotly.js-style-global"' in page.text
    form = {"seq": str(final["progress"]["answered"]), "preferred": "first"}
    assert client.post(f"/sessions/{token}/answers", data=form).status_code == 409


def test_no_redirect_link_without_redirect_url(client: TestClient, app: Any) -> None:
    plain = make_study(app, name="plain", redirect_url=None, show_summary=False)
    token = new_session(client, plain)
    Participant(METRIC).finish(client, token)
    page = client.get(f"/sessions/{token}/result").text
    assert 'data-testid="redirect"' not in page and 'data-testid="metric-summary"' not in page


def test_study_text_is_escaped(client: TestClient, app: Any) -> None:
    evil = make_study(app, name="<script>alert(1)</script>", consent_text="<img src=x onerror=alert(1)>")
    page = client.get(f"/studies/{evil.id}/join").text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page


def test_unknown_pages_are_404_pages(client: TestClient, study: Any) -> None:
    for path in ["/sessions/" + "A" * 43, "/sessions/short", "/studies/nope/join", "/nothing-here"]:
        response = client.get(path)
        assert response.status_code == 404, path
        assert 'data-testid="error-404"' in response.text
        assert "text/html" in response.headers["content-type"]


def test_security_headers(client: TestClient, study: Any) -> None:
    for path in ["/", f"/studies/{study.id}/join", "/nothing-here", "/api/v1/sessions/x"]:
        headers = client.get(path).headers
        csp = headers["content-security-policy"]
        script_src = next(part for part in csp.split(";") if part.strip().startswith("script-src"))
        assert "'unsafe-inline'" not in script_src
        if not path.startswith("/api"):
            assert "style-src 'self';" in csp
        assert "frame-ancestors 'none'" in csp
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"


def test_pages_have_no_inline_script(client: TestClient, study: Any) -> None:
    token = join(client, study)
    for path in [f"/sessions/{token}", f"/sessions/{token}/instructions", f"/studies/{study.id}/join"]:
        html = client.get(path).text
        for tag in re.findall(r"<script\b[^>]*>", html):
            assert 'type="application/json"' in tag or "src=" in tag, tag
        assert "onclick=" not in html


def test_plotly_is_served_locally_and_cached(client: TestClient) -> None:
    response = client.get("/static/vendor/plotly.min.js")
    assert response.status_code == 200
    assert "javascript" in response.headers["content-type"]
    assert "max-age=31536000" in response.headers["cache-control"]
    assert len(response.content) > 1_000_000


def test_unexpected_error_is_a_generic_500_page(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from app import sessions

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(sessions, "get_view", broken)
    app = create_app(settings)
    try:
        with TestClient(app, raise_server_exceptions=False) as client:
            page = client.get("/sessions/" + "A" * 43)
            api = client.get("/api/v1/sessions/" + "A" * 43)
    finally:
        app.state.engine.dispose()
    assert page.status_code == 500 and 'data-testid="error-500"' in page.text
    assert "secret internal detail" not in page.text and "Traceback" not in page.text
    assert api.status_code == 500 and api.json()["error"] == "internal_error"


def _footer(html: str) -> str:
    start = html.index('<footer class="site-footer">')
    return html[start : html.index("</footer>", start)]


def test_the_footer_says_how_to_come_back_as_it_really_works(
    client: TestClient, app: Any, study: Any
) -> None:
    # Without a code: this browser (the cookie), elsewhere the personal link the page offers.
    token = join(client, study)
    for path in (f"/sessions/{token}/instructions", f"/sessions/{token}"):
        page = client.get(path).text
        footer = _footer(page)
        assert "In this browser, the study's link brings you back" in footer, path
        assert "use your personal link" in footer and "Continue later or on another device" in page
        assert "same link later" not in page
    # A code the study continues sessions by (it opted in) is what brings the participant back elsewhere;
    # shown escaped.
    by_code = make_study(app, name="by code", resume_by_participant_code=True)
    code = "<b>ab-12</b>"
    client.cookies.clear()  # another browser
    response = client.post(
        f"/studies/{by_code.id}/join",
        data={"consent": "yes", "participant_code": code},
        follow_redirects=False,
    )
    coded = response.headers["location"].split("/")[2]
    footer = _footer(client.get(f"/sessions/{coded}").text)
    assert (
        'enter your participant code <strong data-testid="footer-code">&lt;b&gt;ab-12&lt;/b&gt;</strong>'
        in footer
    )
    # A study that does not continue by code (the default) never promises it.
    no_resume = make_study(app, name="no resume")
    response = client.post(
        f"/studies/{no_resume.id}/join",
        data={"consent": "yes", "participant_code": "x1"},
        follow_redirects=False,
    )
    other = response.headers["location"].split("/")[2]
    footer = _footer(client.get(f"/sessions/{other}").text)
    assert "participant code" not in footer and "use your personal link" in footer


def test_the_worked_example_explains_the_charts_without_suggesting_an_answer(
    client: TestClient, study: Any
) -> None:
    token = join(client, study)
    page = client.get(f"/sessions/{token}/instructions").text
    example = page[page.index("A worked example") : page.index('data-testid="comparison"')]
    assert "how many each classifier gets right and how many it gets wrong" in " ".join(example.split())
    assert "no right or wrong answer" in example
    for leading in ("you would choose", "worries you more", "should choose"):
        assert leading not in example
