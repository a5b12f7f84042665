"""Panels and embedding in Chromium: a page on another loopback origin frames an allow-listed study and
completes it (its cookie works in the frame); a study without the allow-list refuses to be framed; a
Prolific-style link resumes by its PID and ends on the panel's completion address with the code.

The "other site" is a small HTTP server on 127.0.0.2: another IP address is another site to the browser
(another port on 127.0.0.1 would be the same site, where even a SameSite=Lax cookie is sent).
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import Browser, FrameLocator, Page, expect

pytestmark = pytest.mark.e2e

#: A short study (LPME, coarse tolerance, no practice, checks or evaluation pairs): a handful of clicks.
SHORT = {
    "algorithm": "lpme",
    "algorithm_params": {"epsilon": 0.4, "cycles": 1},
    "practice_queries": 0,
    "checks": False,
    "evaluation_queries": 0,
}
#: A per-session completion code.
CODE = re.compile(r"^[0-9A-F]{5}-[0-9A-F]{5}$")
#: More questions than the short study can ask (a loop bound, not an expectation).
MAX_CLICKS = 60


@dataclass
class OtherSite:
    """A web site on another origin: ``/frame?src=`` frames ``src``; ``/complete`` is a panel's end page."""

    origin: str


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/frame":
            src = parse_qs(parts.query)["src"][0]
            body = (
                "<!doctype html><title>Survey</title><h1>A survey that embeds the study</h1>"
                f'<iframe id="study" src="{html.escape(src)}" width="1000" height="800"></iframe>'
                # What the survey hears from the frame, one JSON line per message.
                '<pre id="messages"></pre><script>window.addEventListener("message", function (e) {'
                'document.getElementById("messages").textContent += '
                'JSON.stringify({origin: e.origin, data: e.data}) + "\\n"; });</script>'
            )
        else:
            body = f'<!doctype html><title>Panel</title><p id="panel-end">{html.escape(self.path)}</p>'
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


def _serve(host: str) -> Iterator[OtherSite]:
    server = ThreadingHTTPServer((host, 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, name=f"site-{host}", daemon=True)
    thread.start()
    yield OtherSite(origin=f"http://{host}:{server.server_address[1]}")
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def other_site() -> Iterator[OtherSite]:
    yield from _serve("127.0.0.2")


@pytest.fixture(scope="module")
def third_site() -> Iterator[OtherSite]:
    yield from _serve("127.0.0.3")


def _click_in(frame: FrameLocator, test_id: str) -> None:
    button = frame.get_by_test_id(test_id)
    expect(button).to_be_visible()
    button.click()


def _finish_in_frame(frame: FrameLocator) -> None:
    """Answer every question inside the frame (always the left classifier) until the thank-you page."""
    thanks = frame.get_by_test_id("thank-you")
    for _ in range(MAX_CLICKS):
        comparison = frame.get_by_test_id("comparison")
        expect(comparison.or_(thanks)).to_be_visible()
        if thanks.is_visible():
            return
        seq = comparison.get_attribute("data-seq")
        frame.get_by_test_id("choose-left").click()
        expect(frame.locator(f'[data-testid="comparison"][data-seq="{seq}"]')).to_have_count(0)
    raise AssertionError(f"no thank-you page after {MAX_CLICKS} answers")


def test_an_allow_listed_study_is_completed_inside_another_sites_frame(
    page: Page, live_server: Any, other_site: OtherSite
) -> None:
    study = live_server.create_study(name="Embedded study", frame_ancestors=[other_site.origin], **SHORT)
    join = f"{live_server.url}/studies/{study.id}/join?participant_code=x"
    page.goto(f"{other_site.origin}/frame?src={join}")
    frame = page.frame_locator("#study")
    expect(frame.get_by_test_id("consent")).to_be_visible()
    frame.get_by_test_id("consent-checkbox").check()
    _click_in(frame, "consent-submit")
    _click_in(frame, "begin")
    expect(frame.get_by_test_id("comparison")).to_be_visible()
    seq = frame.get_by_test_id("comparison").get_attribute("data-seq")
    frame.get_by_test_id("choose-left").click()
    expect(frame.locator(f'[data-testid="comparison"][data-seq="{seq}"]')).to_have_count(0)

    # The survey page is reloaded: inside the frame, the study's cookie (SameSite=None; Secure;
    # Partitioned) is sent, so the join link greets the participant back instead of a new consent form.
    page.reload()
    expect(frame.get_by_test_id("welcome-back")).to_contain_text("1 question answered")
    _click_in(frame, "continue")
    _finish_in_frame(frame)
    expect(frame.get_by_test_id("completion-code")).to_have_text(CODE)
    # Still inside the survey page: nothing navigated the top window away.
    assert page.url.startswith(other_site.origin)


def _messages(page: Page) -> list[dict[str, Any]]:
    text = page.locator("#messages").text_content() or ""
    return [json.loads(line) for line in text.splitlines() if line]


def test_an_embedded_study_finishes_inside_its_frame_and_tells_the_host(
    page: Page, live_server: Any, other_site: OtherSite
) -> None:
    complete = f"{other_site.origin}/complete?cc={{completion_code}}&rid={{rid}}"
    panel = {"name": "the survey", "parameters": ["rid"], "id_parameter": "rid", "require_id": True}
    for delay, moved_by in ((1, "countdown"), (600, "button")):
        study = live_server.create_study(
            name=f"Framed study ({moved_by})",
            frame_ancestors=[other_site.origin],
            panel=panel,
            redirect_url=complete,
            redirect_delay_seconds=delay,
            **SHORT,
        )
        join = f"{live_server.url}/studies/{study.id}/join?rid=R-{moved_by}"
        page.goto(f"{other_site.origin}/frame?src={quote(join, safe='')}")
        frame = page.frame_locator("#study")
        frame.get_by_test_id("consent-checkbox").check()
        _click_in(frame, "consent-submit")
        _click_in(frame, "begin")
        _finish_in_frame(frame)
        code = frame.get_by_test_id("completion-code").text_content() or ""
        assert CODE.match(code.strip())
        # The host page hears that the participant finished, with the code, from the study's origin.
        expect(page.locator("#messages")).to_contain_text(code.strip())
        (message,) = _messages(page)
        assert message["origin"] == live_server.url
        assert message["data"]["type"] == "elicitation-studio:finished"
        assert message["data"]["completion_code"] == code.strip()
        if moved_by == "button":
            frame.get_by_test_id("redirect").click()
        # The frame goes on to the address with the code; the survey page around it stays.
        expect(frame.locator("#panel-end")).to_contain_text(f"cc={code.strip()}&rid=R-{moved_by}")
        assert page.url.startswith(f"{other_site.origin}/frame")
        expect(page.locator("h1")).to_have_text("A survey that embeds the study")


def _refused(page: Page, site: OtherSite, src: str) -> None:
    """Frame ``src`` on ``site`` and check the browser refused it for its frame-ancestors policy."""
    messages: list[str] = []
    page.on("console", lambda message: messages.append(message.text))
    page.goto(f"{site.origin}/frame?src={src}")
    expect(page.locator("#study")).to_be_attached()
    page.wait_for_timeout(500)
    frame = page.frame_locator("#study")
    expect(frame.get_by_test_id("consent")).to_have_count(0)
    child = next(frame for frame in page.frames if frame is not page.main_frame)
    assert not child.url.startswith(src.split("?")[0]) or child.content().find("consent") < 0
    assert any("frame-ancestors" in text for text in messages), messages


def test_a_study_without_the_allow_list_refuses_to_be_framed(
    page: Page, live_server: Any, other_site: OtherSite
) -> None:
    study = live_server.create_study(name="Not embeddable", **SHORT)
    _refused(page, other_site, f"{live_server.url}/studies/{study.id}/join")


def test_an_allow_listed_study_refuses_origins_not_on_its_list(
    page: Page, live_server: Any, other_site: OtherSite, third_site: OtherSite
) -> None:
    study = live_server.create_study(name="Embedded elsewhere", frame_ancestors=[other_site.origin], **SHORT)
    _refused(page, third_site, f"{live_server.url}/studies/{study.id}/join")


def test_a_prolific_link_resumes_by_pid_and_forwards_to_the_completion_address(
    browser: Browser, page: Page, live_server: Any, other_site: OtherSite
) -> None:
    study = live_server.create_study(
        name="Prolific study",
        panel="prolific",
        resume_by_participant_code=True,
        completion_code="C1A2B3C4",
        redirect_url=f"{other_site.origin}/complete?cc={{completion_code}}&pid={{PROLIFIC_PID}}",
        redirect_delay_seconds=2,
        **SHORT,
    )
    link = f"{live_server.url}/studies/{study.id}/join?PROLIFIC_PID=5f1a%2Bx&STUDY_ID=st&SESSION_ID=se"
    page.goto(link)
    expect(page.get_by_test_id("panel-id")).to_contain_text("5f1a+x")
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    with page.expect_navigation():
        page.get_by_test_id("begin").click()
    seq = page.get_by_test_id("comparison").get_attribute("data-seq")
    with page.expect_navigation():
        page.get_by_test_id("choose-left").click()

    # The study opted in: the same PID on another device continues at the same question in one click.
    other = browser.new_context()
    try:
        phone = other.new_page()
        phone.goto(link)
        expect(phone.get_by_test_id("welcome-back")).to_be_visible()
        with phone.expect_navigation():
            phone.get_by_test_id("continue").click()
        expect(phone.get_by_test_id("comparison")).to_be_visible()
        assert phone.get_by_test_id("comparison").get_attribute("data-seq") == str(int(seq or 0) + 1)
        for _ in range(MAX_CLICKS):
            if phone.get_by_test_id("thank-you").count():
                break
            with phone.expect_navigation():
                phone.get_by_test_id("choose-left").click()
        expect(phone.get_by_test_id("completion-code")).to_have_text("C1A2B3C4")
        expect(phone.get_by_test_id("forward-note")).to_be_visible()
        # After the countdown the browser is on the panel's page, with the code and the encoded PID.
        phone.wait_for_url(f"{other_site.origin}/complete?**", timeout=10_000)
        query = parse_qs(urlsplit(phone.url).query)
        assert query == {"cc": ["C1A2B3C4"], "pid": ["5f1a+x"]}
        assert "pid=5f1a%2Bx" in phone.url
    finally:
        other.close()

    # "Stay on this page" stops the countdown.
    page.goto(link)
    expect(page.get_by_test_id("welcome-back")).to_be_visible()
    with page.expect_navigation():
        page.get_by_test_id("continue").click()
    expect(page.get_by_test_id("forward-note")).to_be_visible()
    page.get_by_test_id("forward-stay").click()
    expect(page.get_by_test_id("forward-note")).to_be_hidden()
    page.wait_for_timeout(3000)
    assert page.url.startswith(live_server.url) and page.url.endswith("/result")
