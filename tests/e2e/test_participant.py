"""The participant's path in a real browser: invitation, consent, practice, answers, reload, undo, finish.

A simulated participant with a known linear metric reads the numbers the page displays (the accessible
tables beside the charts) and answers with the mouse or the keyboard; the database and the JSON API are
then checked for what was recorded.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import httpx
import numpy as np
import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import select

from app.models import Answer, ElicitationSession
from app.sessions import consent, hash_token

pytestmark = pytest.mark.e2e

#: The simulated participant's metric over the displayed rates (benign, malignant): misses hurt more.
ORACLE_WEIGHTS = np.array([0.3, 0.8]) / np.linalg.norm([0.3, 0.8])
#: Metric differences below this (on displayed, rounded numbers) are answered "about the same".
TIE_TOLERANCE = 1e-6
#: LPME with tolerance 0.2 rad recovers the direction to about this angle (generous: display rounding).
ANGLE_TOLERANCE = 0.3
#: A hidden tab longer than session.js's notice threshold (2 s).
AWAY_MS = 2300
#: Time for plotly's responsive resize after a viewport change.
RESIZE_SETTLE_MS = 400


def _displayed_confusion(page: Page, side: str) -> np.ndarray:
    """The side's counts as shown in its table (rows true class, columns predicted class)."""
    cells = page.locator(f'[data-testid="classifier-{side}"] td[data-true][data-predicted]')
    values = [float(text.split()[0]) for text in cells.all_inner_texts()]
    k = round(len(values) ** 0.5)
    return np.array(values).reshape(k, k)


def _displayed_group(page: Page, side: str, group: int) -> np.ndarray:
    """One group's counts as shown in its table on ``side``."""
    cells = page.get_by_test_id(f"counts-{side}-{group}").locator("td[data-true][data-predicted]")
    return np.array([float(text.split()[0]) for text in cells.all_inner_texts()])


def _displayed_rates(page: Page, side: str) -> np.ndarray:
    confusion = _displayed_confusion(page, side)
    rates: np.ndarray = np.diag(confusion) / confusion.sum(axis=1)
    return rates


def _oracle_choice(page: Page) -> str:
    """'left', 'right' or 'tie' by the oracle's metric on the displayed numbers."""
    gap = float(ORACLE_WEIGHTS @ (_displayed_rates(page, "left") - _displayed_rates(page, "right")))
    if abs(gap) <= TIE_TOLERANCE:
        return "tie"
    return "left" if gap > 0 else "right"


def _seq(page: Page) -> int:
    return int(page.get_by_test_id("comparison").get_attribute("data-seq") or "-1")


def _answer(page: Page, *, keyboard: bool, choice: str | None = None) -> str:
    """Answer the current question (by the oracle unless ``choice`` is given) and wait for the next page."""
    choice = choice or _oracle_choice(page)
    with page.expect_navigation():
        if keyboard:
            page.keyboard.press({"left": "ArrowLeft", "right": "ArrowRight", "tie": "t"}[choice])
        else:
            page.get_by_test_id(f"choose-{choice}").click()
    return choice


def _api_state(server: Any, token: str) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/api/v1/sessions/{token}", timeout=10)
    assert response.status_code == 200, response.text
    state: dict[str, Any] = response.json()
    return state


def _answers(server: Any, token: str) -> list[Answer]:
    with server.app.state.sessionmaker() as db:
        session = db.scalars(
            select(ElicitationSession).where(ElicitationSession.token_hash == hash_token(token))
        ).one()
        rows = db.scalars(select(Answer).where(Answer.session_id == session.id).order_by(Answer.id)).all()
        db.expunge_all()
        return list(rows)


def _boxes(page: Page) -> list[dict[str, float]]:
    """Both classifier cards' rectangles, measured in one go (charts may still be resizing)."""
    boxes: list[dict[str, float]] = page.evaluate(
        """() => ["left", "right"].map(side => {
            const r = document.querySelector(`[data-testid="classifier-${side}"]`).getBoundingClientRect();
            return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
        })"""
    )
    return boxes


def _expect_charts_drawn(page: Page) -> None:
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    containers = page.locator("[data-figure]")
    assert containers.count() > 0
    for index in range(containers.count()):
        expect(containers.nth(index).locator("svg.main-svg").first).to_be_attached()


def _start_from_invitation(page: Page, server: Any, study: Any) -> str:
    token = server.invite(study)
    page.goto(f"{server.url}/sessions/{token}")
    expect(page.get_by_test_id("consent")).to_be_visible()
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    expect(page.get_by_test_id("instructions")).to_be_visible()
    _expect_charts_drawn(page)  # the worked example
    with page.expect_navigation():
        page.get_by_test_id("begin").click()
    expect(page.get_by_test_id("comparison")).to_be_visible()
    return token


def _start_consented(page: Page, server: Any, study: Any) -> str:
    """A session that has already consented, opened at its first question (skips the entry pages)."""
    token = server.invite(study)
    with server.app.state.sessionmaker() as db:
        consent(db, server.app.state.session_cache, token)
    page.goto(f"{server.url}/sessions/{token}")
    expect(page.get_by_test_id("comparison")).to_be_visible()
    return token


@pytest.fixture(scope="module")
def study(live_server: Any) -> Any:
    return live_server.create_study()


def test_participant_goes_from_invitation_to_thank_you_with_mouse_and_keyboard(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    token = _start_from_invitation(page, live_server, study)
    expect(page.get_by_test_id("practice-banner")).to_be_visible()

    answered = 0
    while "/result" not in page.url:
        _expect_charts_drawn(page)
        state = _api_state(live_server, token)
        # What the page shows on the left is what the API calls "first", rounded for display.
        np.testing.assert_allclose(
            _displayed_confusion(page, "left"), state["query"]["first"]["confusion"], atol=0.51
        )
        np.testing.assert_allclose(
            _displayed_confusion(page, "right"), state["query"]["second"]["confusion"], atol=0.51
        )
        assert _seq(page) == state["query"]["seq"] == answered
        _answer(page, keyboard=answered % 2 == 1)
        answered += 1
        assert answered <= 40, "the study should end well within its query budget"
        if answered == 1 and "/result" not in page.url:
            expect(page.get_by_test_id("practice-banner")).to_have_count(0)

    expect(page.get_by_test_id("thank-you")).to_be_visible()
    code = page.get_by_test_id("completion-code").inner_text().strip()
    state = _api_state(live_server, token)
    assert state["status"] == "done" and state["query"] is None
    assert state["result"]["completion_code"] == code
    assert state["progress"]["answered"] == answered
    rows = _answers(live_server, token)
    assert len(rows) == answered
    assert all(row.time_on_page_ms is not None and row.time_on_page_ms > 0 for row in rows)
    assert {row.preferred for row in rows} <= {"first", "second", "tie"}
    elicited = np.asarray(state["result"]["metric"]["a"], dtype=float)
    angle = float(np.arccos(np.clip(elicited @ ORACLE_WEIGHTS / np.linalg.norm(elicited), -1, 1)))
    assert angle < ANGLE_TOLERANCE, f"elicited {elicited} is {angle:.3f} rad from the oracle's weights"


def test_keys_choose_left_right_and_about_the_same(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    token = _start_consented(page, live_server, study)
    for key, recorded in (
        ("ArrowRight", "second"),
        ("T", "tie"),
        ("ArrowLeft", "first"),
    ):
        with page.expect_navigation():
            page.keyboard.press(key)
        assert _answers(live_server, token)[-1].preferred == recorded
    # ArrowDown scrolls the page; it must never submit an answer.
    count = len(_answers(live_server, token))
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(300)
    assert len(_answers(live_server, token)) == count


def test_reload_mid_session_shows_the_same_question(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    token = _start_consented(page, live_server, study)
    for _ in range(3):
        _answer(page, keyboard=False)
    seq, left, right = _seq(page), _displayed_confusion(page, "left"), _displayed_confusion(page, "right")
    page.reload()
    _expect_charts_drawn(page)
    assert _seq(page) == seq == _api_state(live_server, token)["query"]["seq"]
    np.testing.assert_array_equal(_displayed_confusion(page, "left"), left)
    np.testing.assert_array_equal(_displayed_confusion(page, "right"), right)
    # Opening the link afresh (a new tab, another device) resumes at the same place too.
    page.goto(f"{live_server.url}/sessions/{token}")
    assert _seq(page) == seq


def test_double_click_sends_one_answer_and_records_one(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    token = _start_consented(page, live_server, study)
    before = len(_answers(live_server, token))
    posts: list[str] = []
    page.on("request", lambda request: posts.append(request.url) if request.method == "POST" else None)
    button = page.get_by_test_id("choose-left")
    with page.expect_navigation():
        # Two clicks in the same task, before any navigation can start: the guard must swallow the second.
        button.evaluate("button => { button.click(); button.click(); }")
    assert len([url for url in posts if url.endswith("/answers")]) == 1
    assert len(_answers(live_server, token)) == before + 1
    # A real mouse double click on the next question records one answer as well.
    with page.expect_navigation():
        page.get_by_test_id("choose-right").dblclick()
    page.wait_for_load_state("load")
    rows = _answers(live_server, token)
    assert len(rows) == before + 2
    assert [row.seq for row in rows] == list(range(before + 2))


def test_buttons_are_disabled_once_an_answer_is_on_its_way(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    _start_consented(page, live_server, study)
    # Keep the page in place: a listener added after session.js's cancels the submission it lets through.
    page.get_by_test_id("answer-form").evaluate(
        "form => form.addEventListener('submit', event => event.preventDefault())"
    )
    page.get_by_test_id("choose-tie").click()
    for test_id in ("choose-left", "choose-right", "choose-tie"):
        expect(page.get_by_test_id(test_id)).to_be_disabled()
    expect(page.get_by_test_id("answer-form")).to_have_attribute("aria-busy", "true")
    # The choice travels in a hidden field (disabled buttons are not submitted), with the timings.
    form = page.get_by_test_id("answer-form")
    assert form.locator('input[type="hidden"][name="preferred"]').input_value() == "tie"
    assert int(form.locator('input[name="time_on_page_ms"]').input_value()) > 0
    assert form.locator('input[name="hidden_ms"]').input_value() == "0"
    # Keys are ignored as well once the answer is on its way.
    page.keyboard.press("ArrowLeft")
    assert form.locator('input[type="hidden"][name="preferred"]').input_value() == "tie"


def test_undo_returns_to_the_previous_question(page: Page, live_server: Any, study: Any, health: Any) -> None:
    token = _start_consented(page, live_server, study)
    _answer(page, keyboard=False)
    answered = _api_state(live_server, token)["progress"]["answered"]
    left, right = _displayed_confusion(page, "left"), _displayed_confusion(page, "right")
    _answer(page, keyboard=True)
    assert _api_state(live_server, token)["progress"]["answered"] == answered + 1
    with page.expect_navigation():
        page.get_by_test_id("undo").click()
    _expect_charts_drawn(page)
    np.testing.assert_array_equal(_displayed_confusion(page, "left"), left)
    np.testing.assert_array_equal(_displayed_confusion(page, "right"), right)
    state = _api_state(live_server, token)
    assert state["progress"]["answered"] == answered
    # The log keeps the undone answer, marked, and the undo itself; the page posts the current seq.
    rows = _answers(live_server, token)
    assert [row.undone_at is not None for row in rows if row.action == "answer"][-1] is True
    assert _seq(page) == state["query"]["seq"] == len(rows)
    # Answering again continues from here.
    _answer(page, keyboard=False)
    assert _api_state(live_server, token)["progress"]["answered"] == answered + 1


def test_hidden_tab_is_logged_and_greeted_with_a_resume_notice(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    token = _start_consented(page, live_server, study)
    expect(page.get_by_test_id("resume-notice")).to_have_count(0)
    # Headless tabs never become hidden on their own: drive the Page Visibility API by hand.
    page.evaluate(
        """() => {
            const set = (hidden) => {
                Object.defineProperty(document, "hidden", {configurable: true, get: () => hidden});
                Object.defineProperty(document, "visibilityState", {
                    configurable: true, get: () => (hidden ? "hidden" : "visible")});
                document.dispatchEvent(new Event("visibilitychange"));
            };
            window.__setHidden = set;
            set(true);
        }"""
    )
    page.wait_for_timeout(AWAY_MS)
    page.evaluate("() => window.__setHidden(false)")
    notice = page.get_by_test_id("resume-notice")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text("paused")
    _answer(page, keyboard=False)
    row = _answers(live_server, token)[-1]
    assert row.hidden_ms is not None and row.hidden_ms >= AWAY_MS - 100
    assert row.time_on_page_ms is not None and row.time_on_page_ms >= row.hidden_ms


def test_open_enrolment_link_starts_a_session_after_consent(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    page.goto(f"{live_server.url}/studies/{study.id}/join")
    expect(page.get_by_test_id("consent")).to_be_visible()
    page.get_by_test_id("consent-checkbox").check()
    with page.expect_navigation():
        page.get_by_test_id("consent-submit").click()
    expect(page.get_by_test_id("instructions")).to_be_visible()
    token = page.url.split("/sessions/")[1].split("/")[0]
    assert _api_state(live_server, token)["progress"]["answered"] == 0


def test_classifiers_sit_side_by_side_on_a_laptop_and_on_a_portrait_tablet(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    _start_consented(page, live_server, study)
    _expect_charts_drawn(page)
    left, right = page.get_by_test_id("classifier-left"), page.get_by_test_id("classifier-right")
    expect(left.get_by_role("heading", name="Classifier A")).to_be_visible()
    expect(right.get_by_role("heading", name="Classifier B")).to_be_visible()
    a, b = _boxes(page)
    assert a["right"] <= b["left"] and abs(a["top"] - b["top"]) < 1
    # Counts written on the flows are the table's numbers; the boxes carry class names and totals.
    flow_labels = left.locator(".flow-label")
    labels = sorted(float(text) for text in flow_labels.all_text_contents())
    assert labels and set(labels) <= set(_displayed_confusion(page, "left").ravel().tolist())
    expect(left.locator(".sankey-box-label").first).to_contain_text("benign")
    page.set_viewport_size({"width": 768, "height": 1024})
    page.wait_for_timeout(RESIZE_SETTLE_MS)
    # Redrawn for the new width, every flow with a count carries it once, on the flow or beside a thin one
    # (charts.js: labelFlows): one set, not stale copies. The redraw may still be under way on a busy
    # machine, so wait for it.
    page.wait_for_function(
        """(chart) => {
            const counted = [...chart.querySelectorAll(".sankey-link")].filter(
                (path) => path.__data__ && path.__data__.link && path.__data__.link.label);
            return counted.length > 0 && chart.querySelectorAll(".flow-label").length === counted.length;
        }""",
        arg=left.element_handle(),
    )
    redrawn = Counter(float(text) for text in flow_labels.all_text_contents())
    assert redrawn and not redrawn - Counter(_displayed_confusion(page, "left").ravel().tolist())
    a, b = _boxes(page)
    assert a["right"] <= b["left"] and abs(a["top"] - b["top"]) < 1
    # Charts follow their container's width instead of overflowing it.
    plot = right.locator("[data-figure] svg.main-svg").first
    expect(plot).to_have_attribute("width", re.compile(r"^\d+"))
    width = float(plot.get_attribute("width") or 0)
    assert 0 < width <= b["right"] - b["left"]
    # The whole question fits the screen: both classifiers and the answer buttons, without scrolling.
    expect(page.get_by_test_id("choose-right")).to_be_in_viewport()
    expect(right).to_be_in_viewport(ratio=1)


def test_table_view_is_read_by_screen_readers_and_shown_on_request(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    _start_consented(page, live_server, study)
    table = page.get_by_test_id("counts-left-0")
    wrapper = table.locator("xpath=ancestor::*[@data-counts-table][1]")
    # Collapsed visually (a clipped 1 px box), but in the accessibility tree with caption and headers.
    box = wrapper.bounding_box()
    assert box is not None and box["width"] <= 1 and box["height"] <= 1
    expect(page.get_by_role("table", name=re.compile("Classifier A"))).to_have_count(1)
    expect(table.get_by_role("columnheader", name="Predicted malignant")).to_have_count(1)
    expect(table.get_by_role("rowheader", name="Actually benign")).to_have_count(1)
    toggle = page.get_by_test_id("table-toggle")
    expect(toggle).to_have_attribute("aria-expanded", "false")
    toggle.click()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    box = wrapper.bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 50
    expect(table.locator("td.is-wrong").first).to_contain_text("wrong")


def test_question_page_draws_its_charts_under_a_csp_without_inline_styles(
    page: Page, live_server: Any, study: Any, health: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plotly.js normally injects <style> elements; the partial's hooks make that unnecessary."""
    import app.main

    strict = app.main.CONTENT_SECURITY_POLICY.replace("style-src 'self' 'unsafe-inline'", "style-src 'self'")
    assert "unsafe-inline" not in strict
    monkeypatch.setattr(app.main, "CONTENT_SECURITY_POLICY", strict)
    token = live_server.invite(study)
    with live_server.app.state.sessionmaker() as db:
        consent(db, live_server.app.state.session_cache, token)
    response = page.goto(f"{live_server.url}/sessions/{token}")
    assert response is not None and "unsafe-inline" not in response.headers["content-security-policy"]
    _expect_charts_drawn(page)
    # plotly's own stylesheet arrived from the file: its layered SVGs are stacked, not laid out in a column.
    position = page.locator("[data-figure] svg.main-svg").first.evaluate(
        "svg => getComputedStyle(svg).position"
    )
    assert position == "absolute"


def test_fairness_question_shows_one_panel_per_group_on_each_side(
    page: Page, live_server: Any, health: Any, fairness_study: Any
) -> None:
    fair = fairness_study
    token = _start_consented(page, live_server, fair)
    _expect_charts_drawn(page)
    for side, label in (("left", "Classifier A"), ("right", "Classifier B")):
        card = page.get_by_test_id(f"classifier-{side}")
        expect(card.locator(".panel__group")).to_have_text(
            [re.compile(r"^Group: women\b"), re.compile(r"^Group: men\b")]
        )
        expect(card.locator("[data-figure]")).to_have_count(4)  # flow chart + bar chart per group
        for group in (0, 1):
            expect(page.get_by_test_id(f"counts-{side}-{group}")).to_contain_text(label)
    # Each group says whether A and B differ in it, and says it truly (the tables are what is shown).
    for group in (0, 1):
        same = np.array_equal(_displayed_group(page, "left", group), _displayed_group(page, "right", group))
        for side in ("left", "right"):
            marker = page.get_by_test_id(f"panel-{side}-{group}").get_by_test_id(
                "same" if same else "differs"
            )
            expect(marker).to_be_visible()
    expect(page.get_by_test_id("comparison")).to_contain_text("100 applicants in each group")
    expect(page.get_by_test_id("legend")).to_contain_text("repays")
    # Groups sit side by side within each classifier: both on the first screen.
    for panel in ("panel-left-1", "panel-right-1"):
        expect(page.get_by_test_id(panel)).to_be_in_viewport(ratio=1)
    state = _api_state(live_server, token)
    shown = state["query"]["first"]["confusion"]
    assert np.asarray(shown).shape == (2, 2, 2)
    for group in (0, 1):
        cells = page.get_by_test_id(f"counts-left-{group}").locator("td[data-true][data-predicted]")
        values = np.array([float(text.split()[0]) for text in cells.all_inner_texts()]).reshape(2, 2)
        np.testing.assert_allclose(values, shown[group], atol=0.51)
        assert values.sum() == pytest.approx(100.0)
    with page.expect_navigation():
        page.keyboard.press("ArrowLeft")
    assert _api_state(live_server, token)["progress"]["answered"] == 1


def test_without_javascript_the_tables_show_the_numbers_and_answers_still_work(
    browser: Any, live_server: Any, study: Any
) -> None:
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1366, "height": 900})
    try:
        page = context.new_page()
        token = live_server.invite(study)
        with live_server.app.state.sessionmaker() as db:
            consent(db, live_server.app.state.session_cache, token)
        page.goto(f"{live_server.url}/sessions/{token}")
        table = page.get_by_test_id("counts-left-0")
        expect(table).to_be_visible()
        box = table.bounding_box()
        assert box is not None and box["width"] > 200
        expect(page.get_by_test_id("table-toggle")).to_be_hidden()
        with page.expect_navigation():
            page.get_by_test_id("choose-left").click()
        row = _answers(live_server, token)[-1]
        assert row.preferred == "first" and row.time_on_page_ms is None
    finally:
        context.close()
