"""No text in a chart can become a link or markup: figures are made inert where they leave the server."""

from __future__ import annotations

import json
import re
from typing import Any

from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient

from app.charts.inert import inert_figure, inert_text

LINK = '<a href="https://evil.example/">click</a>'
ALLOWED = re.compile(r"<br>|<extra>|</extra>")


def _drawn_strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in [*_drawn_strings(key), *_drawn_strings(item)]]
    if isinstance(value, list):
        return [text for item in value for text in _drawn_strings(item)]
    return []


def _assert_inert(figure: dict[str, Any]) -> None:
    for key in ("data", "layout", "compact"):
        for text in _drawn_strings(figure.get(key)):
            assert "<" not in ALLOWED.sub("", text), text


def test_inert_text_keeps_only_the_chart_codes_markup() -> None:
    assert inert_text(f"Actually {LINK}<br>12 in total") == (
        'Actually &lt;a href="https://evil.example/"&gt;click&lt;/a&gt;<br>12 in total'
    )
    assert inert_text("A & B <b>bold</b> %{x}<extra></extra>") == (
        "A &amp; B &lt;b&gt;bold&lt;/b&gt; %{x}<extra></extra>"
    )
    figure = {"data": [{"x": [LINK]}], "compact": {"categories": {LINK: "a"}}, "boxes": {"names": [LINK]}}
    inert = inert_figure(figure)
    assert inert["data"][0]["x"] == [inert_text(LINK)]
    assert list(inert["compact"]["categories"]) == [inert_text(LINK)]  # keys still match the drawn x
    assert inert["boxes"] == {"names": [LINK]}  # charts.js writes these with textContent


def test_participant_and_class_text_never_reaches_a_chart_as_markup(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    config = {**STUDY_CONFIG, "class_names": [f"benign {LINK}", "malignant"]}
    sid = client.post("/api/v1/studies", json=config, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    created = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True, "participant_code": LINK})
    session = created.json()["token"]
    participant = Participant(METRIC)
    first = client.get(f"/sessions/{session}")
    assert first.status_code == 200
    participant.finish(client, session)
    pages = [client.get(f"/sessions/{session}/result").text]
    login(client, "alice@example.org")
    for path in ("results", "monitor"):
        page = client.get(f"/admin/studies/{sid}/{path}")
        assert page.status_code == 200
        pages.append(page.text)
    figures = [
        json.loads(block)
        for text in pages
        for block in re.findall(r'<script type="application/json" id="[^"]*">(.*?)</script>', text, re.S)
    ]
    assert figures, "no chart on the pages"
    for figure in figures:
        _assert_inert(figure)
    live = client.get(f"/admin/studies/{sid}/monitor.json")
    assert live.status_code == 200
    for item in live.json()["figures"]:
        _assert_inert(item["figure"])
