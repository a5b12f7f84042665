"""Helpers shared by the browser tests: an automated participant answering over the JSON API, and the
back-office login."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import numpy as np
from playwright.sync_api import Page

__all__ = ["answer_to_the_end", "labels_outside_their_charts", "sign_in"]


def answer_to_the_end(base_url: str, token: str, prefers: Callable[[np.ndarray, np.ndarray], bool]) -> None:
    """An automated participant answers a consented session over the JSON API until it is done."""
    with httpx.Client(base_url=base_url, timeout=30) as client:
        state = client.get(f"/api/v1/sessions/{token}").json()
        while state["query"] is not None:
            query = state["query"]
            first, second = np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"])
            response = client.post(
                f"/api/v1/sessions/{token}/answers",
                json={
                    "seq": query["seq"],
                    "preferred": "first" if prefers(first, second) else "second",
                    "time_on_page_ms": 2000,
                },
            )
            assert response.status_code == 200, response.text
            state = response.json()
        assert state["status"] == "done"


def sign_in(page: Page, email: str, password: str) -> None:
    """Fill the back-office login form the page shows and submit it, waiting for the page it leads to."""
    page.get_by_test_id("login-email").fill(email)
    page.get_by_test_id("login-password").fill(password)
    with page.expect_navigation():
        page.get_by_test_id("login-submit").click()


#: Every piece of text plotly.js draws in each chart of the page, with the chart's own box.
_TEXT_BOXES = """() => [...document.querySelectorAll('[data-figure]')].map(plot => {
  const box = plot.getBoundingClientRect();
  const texts = [...plot.querySelectorAll('svg text')]
    .filter(t => t.textContent.trim() && t.getBBox().width > 0);
  return {
    id: plot.dataset.figure,
    box: {left: box.left, right: box.right, top: box.top, bottom: box.bottom},
    texts: texts.map(t => { const r = t.getBoundingClientRect();
      return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom}; }),
  };
})"""


def labels_outside_their_charts(page: Page) -> tuple[set[str], list[tuple[str, str]]]:
    """The ids of the page's drawn charts, and each (chart, text with its box and the chart's) that does not
    fit inside its chart's box (1 px of slack): a label cut at the chart's edge, as a reader would see it."""
    charts = page.evaluate(_TEXT_BOXES)
    outside = []
    for chart in charts:
        box = chart["box"]
        assert chart["texts"], f"chart {chart['id']} drew no text"
        for text in chart["texts"]:
            inside = (
                text["left"] >= box["left"] - 1
                and text["right"] <= box["right"] + 1
                and text["top"] >= box["top"] - 1
                and text["bottom"] <= box["bottom"] + 1
            )
            if not inside:
                where = ", ".join(f"{side} {text[side]:.0f}/{box[side]:.0f}" for side in box)
                outside.append((chart["id"], f"{text['text']!r} ({where})"))
    return {chart["id"] for chart in charts}, outside
