"""The question page fits one screen: the question, A and B, and the answer bar, nothing covered.

At 1280 x 800 and 1366 x 768 (the commonest laptop screens) and on a 390 x 844 touch phone, an ordinary
question, a practice question and a two-group fairness question show their question text, both
classifiers with every chart, and the answer buttons without scrolling, the bar below the charts. A
participant compares by looking, not by scrolling and remembering. No box label is written over a flow,
every flow carries its count, the phone's boxes name their class, and a device without keys shows no
keyboard hint. ``SCREENSHOT_DIR=...`` keeps a screenshot of each case to look at.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from app.cli.web import DEMO_STUDY
from app.sessions import consent

pytestmark = pytest.mark.e2e

#: Questions of the demo checked one after the other (its pairs differ from screen to screen).
DEMO_QUESTIONS = 4

#: The screens a question must fit: name -> (viewport, touch phone).
SCREENS: dict[str, tuple[dict[str, int], bool]] = {
    "laptop-1280x800": ({"width": 1280, "height": 800}, False),
    "laptop-1366x768": ({"width": 1366, "height": 768}, False),
    "phone-390x844": ({"width": 390, "height": 844}, True),
}

#: Geometry of what the participant sees: the question, the two cards, every chart, the answer bar, the
#: flow charts' box labels, flow labels and flows, in CSS pixels.
LAYOUT_SCRIPT = """() => {
  const rect = el => { const r = el.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  const visible = el => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const sankeys = [...document.querySelectorAll('.chart--sankey [data-figure]')].filter(visible).map(plot => {
    const nodes = [...plot.querySelectorAll('.sankey-node rect')].map(rect);
    const middle = (plot.getBoundingClientRect().left + plot.getBoundingClientRect().right) / 2;
    const leftNodes = nodes.filter(n => n.right < middle), rightNodes = nodes.filter(n => n.left > middle);
    return {
      flowsFrom: Math.max(...leftNodes.map(n => n.right)),
      flowsTo: Math.min(...rightNodes.map(n => n.left)),
      plot: rect(plot),
      boxLabels: [...plot.querySelectorAll('.sankey-box-label')]
        .map(l => ({...rect(l), text: l.textContent})),
      flows: plot.querySelectorAll('.sankey-link').length,
      flowLabels: [...plot.querySelectorAll('.flow-label')].map(l => ({...rect(l), text: l.textContent})),
      counts: JSON.parse(document.getElementById(plot.dataset.figure).textContent).data[0].link.label,
    };
  });
  return {
    question: rect(document.querySelector('.comparison__lead')),
    cards: ['left', 'right'].map(s => rect(document.querySelector(`[data-testid="classifier-${s}"]`))),
    charts: [...document.querySelectorAll('[data-figure]')].filter(visible).map(rect),
    bar: rect(document.querySelector('[data-testid="choices"]')),
    buttons: [...document.querySelectorAll('[data-testid^="choose-"]')].map(rect),
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
def studies(live_server: Any) -> dict[str, Any]:
    return {
        "question": live_server.create_study(practice_queries=0),
        "practice": live_server.create_study(practice_queries=1),
        # Real classifiers of the bundled breast-cancer data: thin flows (a few missed cancers).
        "demo": live_server.create_study(**{**DEMO_STUDY, "practice_queries": 0}),
    }


@pytest.fixture(params=sorted(SCREENS))
def screen(request: pytest.FixtureRequest, open_device: Any) -> Any:
    """A page on one of `SCREENS`: its name, the page, and whether it is a touch phone."""
    viewport, touch = SCREENS[request.param]
    return request.param, open_device(viewport, touch), touch


def _open_question(page: Page, live_server: Any, study: Any) -> dict[str, Any]:
    """Open a consented session's first question; return its measured layout."""
    token = live_server.invite(study)
    with live_server.app.state.sessionmaker() as db:
        consent(db, live_server.app.state.session_cache, token)
    page.goto(f"{live_server.url}/sessions/{token}")
    expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
    layout: dict[str, Any] = page.evaluate(LAYOUT_SCRIPT)
    return layout


@pytest.mark.parametrize("kind", ["question", "practice", "fairness", "demo"])
def test_the_question_both_classifiers_and_the_answer_bar_fit_the_first_screen(
    kind: str, screen: Any, live_server: Any, studies: dict[str, Any], fairness_study: Any
) -> None:
    name, page, touch = screen
    layout = _open_question(page, live_server, fairness_study if kind == "fairness" else studies[kind])
    for _ in range(DEMO_QUESTIONS if kind == "demo" else 0):
        _assert_in_view(layout, kind, touch)
        with page.expect_navigation():
            page.get_by_test_id("choose-left").click()
        expect(page.locator("html")).to_have_attribute("data-charts", "drawn")
        layout = page.evaluate(LAYOUT_SCRIPT)
    if kind == "practice":
        expect(page.get_by_test_id("practice-banner")).to_be_visible()
    if os.environ.get("SCREENSHOT_DIR"):
        page.screenshot(path=str(Path(os.environ["SCREENSHOT_DIR"]) / f"question-{kind}-{name}.png"))
    _assert_in_view(layout, kind, touch)
    if touch:
        expect(page.get_by_test_id("keyboard-hint")).to_be_hidden()
        expect(page.locator(".classifier__key").first).to_be_hidden()
    else:
        expect(page.get_by_test_id("keyboard-hint")).to_be_visible()


def _assert_in_view(layout: dict[str, Any], kind: str, touch: bool) -> None:
    """The question, both cards, every chart and the answer bar on screen; every flow and box labelled."""
    viewport = layout["viewport"]
    assert _within(layout["question"], viewport), layout["question"]
    a, b = layout["cards"]
    assert a["right"] <= b["left"] and abs(a["top"] - b["top"]) < 1, "A and B side by side"
    assert _within(a, viewport) and _within(b, viewport), layout["cards"]
    # Every chart drawn (a two-group phone shows its bar charts only: they carry every number).
    assert len(layout["charts"]) == (4 if kind != "fairness" else (4 if touch else 8))
    for chart in layout["charts"]:
        assert _within(chart, viewport), chart
        assert not _overlaps(chart, layout["bar"]), (chart, layout["bar"])
    assert _within(layout["bar"], viewport), (layout["bar"], viewport)
    assert all(_within(button, viewport) for button in layout["buttons"])
    assert layout["bar"]["top"] >= max(card["bottom"] for card in layout["cards"])
    for sankey in layout["sankeys"]:
        # Box labels stand beside the boxes, never over the flows between them.
        assert sankey["boxLabels"], "every flow chart labels its boxes"
        for label in sankey["boxLabels"]:
            assert label["right"] <= sankey["flowsFrom"] + 1 or label["left"] >= sankey["flowsTo"] - 1, label
        # Every flow carries its count, thin ones too; the labels stay inside the chart.
        assert sorted(label["text"] for label in sankey["flowLabels"]) == sorted(sankey["counts"])
        assert len(sankey["flowLabels"]) == sankey["flows"]
        for label in sankey["flowLabels"]:
            assert _within(
                {
                    key: label[key] - sankey["plot"][edge]
                    for key, edge in (("left", "left"), ("right", "left"), ("top", "top"), ("bottom", "top"))
                },
                {
                    "width": sankey["plot"]["right"] - sankey["plot"]["left"],
                    "height": sankey["plot"]["bottom"] - sankey["plot"]["top"],
                },
            ), label
        # The boxes name their class, on the phone too.
        texts = " ".join(label["text"] for label in sankey["boxLabels"])
        assert all(
            cls in texts
            for cls in (["repays", "defaults"] if kind == "fairness" else ["benign", "malignant"])
        )
    if touch:
        assert layout["bar"]["bottom"] - layout["bar"]["top"] <= 90, "the answer bar is one slim row"


def test_a_tap_on_the_phone_answers(phone: Page, live_server: Any, studies: dict[str, Any]) -> None:
    _open_question(phone, live_server, studies["question"])
    seq = phone.get_by_test_id("comparison").get_attribute("data-seq")
    with phone.expect_navigation():
        phone.get_by_test_id("choose-right").tap()
    assert phone.get_by_test_id("comparison").get_attribute("data-seq") != seq
