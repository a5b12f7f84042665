"""Shared pieces of every chart: the colour-blind-safe palette, fonts, titles and name checks.

Every chart function in this package returns a JSON-safe ``{"data": [...], "layout": {...}}`` Plotly figure
dict; templates embed it in a ``<script type="application/json">`` tag and ``static/js/charts.js`` draws it
with the locally served plotly.js. Nothing here touches the database, the request or the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from gettext import NullTranslations
from typing import Any

__all__ = [
    "BUNDLED_NAMES",
    "CATEGORY_AXIS",
    "CLASS_COLORS",
    "DIVERGING_SCALE",
    "ENGLISH",
    "FONT",
    "GRID",
    "INK",
    "MUTED",
    "N_",
    "OKABE_ITO",
    "Figure",
    "back_office_figure",
    "check_names",
    "class_color",
    "decimal_mark",
    "display_name",
    "fmt",
    "join_names",
    "rgba",
    "separators",
    "set_title",
    "stacked_bar_layout",
    "two_lines",
]


#: Chart text is English unless a caller passes its page's translations (``tr``, see app.i18n); the
#: charts only call ``tr.gettext`` and the like, so they need nothing of the app.
ENGLISH = NullTranslations()

#: A Plotly figure as plain JSON-safe data: ``{"data": [...], "layout": {...}}``.
Figure = dict[str, Any]


def N_(message: str) -> str:
    """Mark ``message`` for the catalogue without translating it here (it is translated where it is shown)."""
    return message


#: The bundled datasets' class and group names (`elicitation.lab.datasets`): a study that uses one as it is
#: shows it in the page's language ("benign" is "gutartig" on a German page). A coordinator's own names
#: are shown as typed.
BUNDLED_NAMES = frozenset(
    {
        N_("benign"),
        N_("malignant"),
        N_("income <=50K"),
        N_("income >50K"),
        N_("no default"),
        N_("default"),
        N_("Female"),
        N_("Male"),
        N_("bus"),
        N_("van"),
    }
)


def display_name(name: str, tr: NullTranslations) -> str:
    """A class or group name in the page's language when it is a bundled dataset's, else as written."""
    return tr.gettext(name) if name in BUNDLED_NAMES else name


#: The Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008), by name.
OKABE_ITO: Mapping[str, str] = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "bluish_green": "#009E73",
    "reddish_purple": "#CC79A7",
    "sky_blue": "#56B4E9",
    "vermillion": "#D55E00",
    "yellow": "#F0E442",
    "black": "#000000",
}
#: Class ``i`` is always drawn in ``CLASS_COLORS[i % len(CLASS_COLORS)]``; blue/orange first because that
#: pair stays distinct under every common colour-vision deficiency and in greyscale.
CLASS_COLORS: tuple[str, ...] = tuple(OKABE_ITO.values())

FONT = {"family": "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"}
INK = "#1f2933"
MUTED = "#52606d"
GRID = "#d9e2ec"
#: Layout for an axis of names (classes, participant codes, statuses): always categories. Left to guess,
#: plotly takes an axis whose names are mostly numbers ("1042", a session id's first 8 hex digits such as
#: "40417712", classes "0" and "1") for a numeric one: the names become positions, the other names NaN,
#: and a heat map's cells and texts get "NaN" coordinates (console errors, a chart drawn wrongly).
CATEGORY_AXIS: Mapping[str, str] = {"type": "category"}
# A diverging blue-white-orange scale built from Okabe-Ito ends: readable with colour-vision deficiencies.
DIVERGING_SCALE = [[0.0, "#0072B2"], [0.5, "#f7f7f7"], [1.0, "#D55E00"]]


def class_color(index: int) -> str:
    """The palette colour of class ``index`` (cycling when there are more classes than colours)."""
    if index < 0:
        raise ValueError(f"class index must be non-negative, got {index}")
    return CLASS_COLORS[index % len(CLASS_COLORS)]


def rgba(hex_color: str, alpha: float) -> str:
    red, green, blue = (int(hex_color[pos : pos + 2], 16) for pos in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha:g})"


def decimal_mark(tr: NullTranslations = ENGLISH) -> str:
    """The decimal mark of ``tr``'s language ("." in English, "," in German)."""
    # Translators: the character between the whole and the fractional part of a number (1.5 in English).
    return tr.pgettext("decimal mark", ".")


def fmt(value: float, decimals: int, tr: NullTranslations = ENGLISH) -> str:
    """``value`` with ``decimals`` decimals, written with the decimal mark of ``tr``'s language."""
    text = f"{value:.{decimals}f}"
    mark = decimal_mark(tr)
    return text if mark == "." else text.replace(".", mark)


def separators(tr: NullTranslations = ENGLISH) -> str:
    """Plotly's ``layout.separators`` for ``tr``'s language: the decimal mark, then the thousands mark."""
    mark = decimal_mark(tr)
    return mark + ("," if mark == "." else ".")


def set_title(layout: dict[str, Any], title: str | None) -> None:
    """Give ``layout`` the heading every figure shares (left-aligned, 14 px); no title, no heading."""
    if title:
        layout["title"] = {"text": title, "x": 0.0, "xanchor": "left", "font": {"size": 14}}


def stacked_bar_layout(xaxis: dict[str, Any], title: str | None) -> dict[str, Any]:
    """The layout of a one-bar horizontal stack (progress, trade-off): no y axis, no zoom, no legend."""
    layout: dict[str, Any] = {
        "barmode": "stack",
        "font": {**FONT, "size": 13, "color": INK},
        "margin": {"l": 8, "r": 8, "t": 36 if title else 8, "b": 36},
        "height": 140 if title else 112,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {"fixedrange": True, "gridcolor": GRID, **xaxis},
        "yaxis": {"visible": False, "fixedrange": True},
        "showlegend": False,
    }
    set_title(layout, title)
    return layout


def check_names(names: Sequence[str], count: int, what: str) -> list[str]:
    names = [str(name) for name in names]
    if len(names) != count:
        raise ValueError(f"expected {count} {what} names, got {len(names)}: {names}")
    if any(not name.strip() for name in names):
        raise ValueError(f"{what} names must not be empty")
    return names


#: The back office's chart frame: system font, transparent background, no legend unless asked.
_BACK_OFFICE_LAYOUT = {
    "font": {"family": "system-ui, sans-serif", "size": 13, "color": INK},
    "margin": {"l": 56, "r": 12, "t": 16, "b": 48},
    "height": 300,
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "rgba(0,0,0,0)",
    "showlegend": False,
}


def back_office_figure(data: list[dict[str, Any]], title: str, **layout: Any) -> Figure:
    """A back-office figure; ``title`` goes to ``layout.meta`` only, since the page's figcaption shows it.

    Both axes make room for their labels (``automargin``), so no tick label or axis title is cut.
    """
    merged = {**_BACK_OFFICE_LAYOUT, "meta": {"title": title}, **layout}
    for axis in ("xaxis", "yaxis"):
        merged[axis] = {"automargin": True, **merged.get(axis, {})}
    return {"data": data, "layout": merged}


def join_names(names: Sequence[str], tr: NullTranslations = ENGLISH) -> str:
    """Names as a list in words: "a", "a and b", "a, b and c"."""
    if len(names) <= 1:
        return "".join(names)
    return tr.gettext("%(names)s and %(last)s") % {"names": ", ".join(names[:-1]), "last": names[-1]}


#: A coefficient name longer than this breaks after its colon: the results page draws three charts side
#: by side, and a fairness study's "gap penalty Female–Male: income <=50K × income >50K" would take the
#: whole chart's width (Plotly then cuts the label).
_ONE_LINE_CHARS = 26


def two_lines(name: str) -> str:
    """``name`` as it fits beside a narrow chart: broken after its colon when long."""
    head, colon, tail = name.partition(": ")
    return f"{head}:<br>{tail}" if colon and len(name) > _ONE_LINE_CHARS else name
