"""Figures leave the server with inert text: plotly.js reads a small HTML subset in every label, title,
hover text and tick, so a participant code, class name or CSV label holding ``<a href=...>`` would become
a live link on the page. `inert_figure` is the one place where every figure is made safe before it is
embedded in a page (the ``figure_json`` template filter) or sent as JSON (the live dashboard).

Only the line break and the hover box's ``<extra></extra>`` that the chart code itself writes survive;
every other ``<``, ``>`` and ``&`` is written as an HTML entity, which plotly.js shows as that character
(it looks for tags before it decodes entities). What plotly.js never sees (the layout hints charts.js
reads with ``textContent``) is left as it is.
"""

from __future__ import annotations

import re
from typing import Any

from jinja2.utils import htmlsafe_json_dumps
from markupsafe import Markup

__all__ = ["figure_json", "inert_figure", "inert_text"]

#: The only markup in figure text: what the chart code writes (a line break, the hover box's suffix).
_KEPT = re.compile(r"(<br>|<extra>|</extra>)")
#: Keys of a figure whose contents plotly.js draws; others are hints for charts.js only.
_DRAWN_KEYS = ("data", "layout", "compact")


def inert_text(text: str) -> str:
    """``text`` with every ``&``, ``<`` and ``>`` as an entity except the chart code's own markup."""
    parts = _KEPT.split(text)
    return "".join(
        part if index % 2 else part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for index, part in enumerate(parts)
    )


def _inert(value: Any) -> Any:
    if isinstance(value, str):
        return inert_text(value)
    if isinstance(value, dict):
        return {_inert(key) if isinstance(key, str) else key: _inert(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_inert(item) for item in value]
    return value


def inert_figure(figure: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``figure`` whose drawn text (data, layout, compact forms) cannot carry markup or links."""
    return {key: _inert(value) if key in _DRAWN_KEYS else value for key, value in figure.items()}


def figure_json(figure: dict[str, Any]) -> Markup:
    """Jinja filter: the figure, made inert, as JSON safe inside ``<script type="application/json">``."""
    return htmlsafe_json_dumps(inert_figure(figure))
