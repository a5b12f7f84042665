"""The question page fits one screen: A and B side by side, the answer bar covering nothing.

On a laptop (1366 x 900) the charts, their axes and the answer bar are all on the first screen, the bar
below the charts. A participant on a phone (390 x 844, touch) compares by looking, not by scrolling and
remembering: both classifiers, their flow and bar charts and the answer buttons fit the first screen, no
box label is written over a flow, and no keyboard hint is shown on a device without keys.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from app.sessions import consent

pytestmark = pytest.mark.e2e

#: Geometry of what the participant sees: the two cards, every chart, the answer bar, the flow chart
#: labels and the flows' extent (from the box columns' inner edges), in CSS pixels.
LAYOUT_SCRIPT = """() => {
  const rect = el => { const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const sankeys = [...document.querySelectorAll('.chart--sankey [data-figure]')].map(plot => {
    const nodes = [...plot.querySelectorAll('.sankey-node rect')].map(rect);
    const middle = (plot.getBoundingClientRect().left + plot.getBoundingClientRect().right) / 2;
    const leftNodes = nodes.filter(n => n.right < middle), rightNodes = nodes.filter(n => n.left > middle);
    return {
      flowsFrom: Math.max(...leftNodes.map(n => n.right)),
      flowsTo: Math.min(...rightNodes.map(n => n.left)),
      labels: [...plot.querySelectorAll('.sankey-box-label')].map(rect),
    };
  });
  return {
    cards: ['left', 'right'].map(s => rect(document.querySelector(`[data-testid="classifier-${s}"]`))),
    charts: [...document.querySelectorAll('[data-figure]')].map(rect),
    bar: rect(document.querySelector('[data-testid="choices"]')),
    viewport: {width: window.innerWidth, height: window.innerHeight},
    sankeys,
  };
}"""


def _overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


def _within(box: dict[str, float], viewport: dict[str, float]) -> bool:
    return (
        box["left"] >= 0
        and box["top"] >= 0
        and box["right"] <= viewport["width"]
        and box["bottom"] <= viewport["height"]
    )


@pytest.fixture(scope="module")
def study(live_server: Any) -> Any:
    return live_server.create_study(practice_queries=1)


def _open_question(page: Page, live_server: Any, study: Any) -> dict[str, Any]:
    """Open a consented session's first question; return its measured layout."""
    token = live_server.invite(study)
    with live_server.app.state.sessionmaker() as db:
        consent(db, live_server.app.state.session_cache, token)
    page.goto(f"{live_server.url}/sessions/{token}")
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    layout: dict[str, Any] = page.evaluate(LAYOUT_SCRIPT)
    return layout


def _assert_one_screen(layout: dict[str, Any]) -> None:
    """Both cards, all four charts and the answer bar on screen; no chart under the bar."""
    viewport = layout["viewport"]
    a, b = layout["cards"]
    assert a["right"] <= b["left"] and abs(a["top"] - b["top"]) < 1
    assert _within(a, viewport) and _within(b, viewport), layout["cards"]
    assert len(layout["charts"]) == 4
    for chart in layout["charts"]:
        assert _within(chart, viewport), chart
        assert not _overlaps(chart, layout["bar"]), (chart, layout["bar"])
    assert _within(layout["bar"], viewport)
    assert layout["bar"]["top"] >= max(card["bottom"] for card in layout["cards"])


def test_laptop_shows_the_whole_question_with_the_answer_bar_below_the_charts(
    page: Page, live_server: Any, study: Any, health: Any
) -> None:
    page.set_viewport_size({"width": 1366, "height": 900})
    layout = _open_question(page, live_server, study)
    _assert_one_screen(layout)
    for sankey in layout["sankeys"]:
        for label in sankey["labels"]:
            assert label["right"] <= sankey["flowsFrom"] + 1 or label["left"] >= sankey["flowsTo"] - 1, label
    expect(page.get_by_test_id("keyboard-hint")).to_be_visible()


def test_phone_shows_a_and_b_together_with_the_answer_bar_covering_nothing(
    phone: Page, live_server: Any, study: Any
) -> None:
    layout = _open_question(phone, live_server, study)
    assert layout["viewport"] == {"width": 390, "height": 844}
    _assert_one_screen(layout)
    assert layout["bar"]["bottom"] - layout["bar"]["top"] <= 90, "the answer bar is one slim row"
    # Box labels stand beside the boxes, never over the flows between them.
    for sankey in layout["sankeys"]:
        assert sankey["labels"], "every flow chart labels its boxes"
        for label in sankey["labels"]:
            assert label["right"] <= sankey["flowsFrom"] + 1 or label["left"] >= sankey["flowsTo"] - 1, label
    # Touch screen: no keyboard hint, no key caps; the buttons still answer.
    expect(phone.get_by_test_id("keyboard-hint")).to_be_hidden()
    expect(phone.locator(".classifier__key").first).to_be_hidden()
    seq = phone.get_by_test_id("comparison").get_attribute("data-seq")
    with phone.expect_navigation():
        phone.get_by_test_id("choose-right").tap()
    assert phone.get_by_test_id("comparison").get_attribute("data-seq") != seq
