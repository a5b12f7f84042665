"""The participant pages in other languages: the German catalogue is complete, a pseudo-locale leaves no
English on any participant page, pages carry their language and direction, studies choose a language."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jinja2
import pytest
from app_support import METRIC, SMALL_STUDY, Participant, make_study, new_session
from babel.messages.catalog import Catalog, Message
from babel.messages.checkers import python_format
from babel.messages.pofile import read_po, write_po
from fastapi.testclient import TestClient
from sqlalchemy import update

from app.charts.common import fmt, join_names, separators
from app.charts.result import mistake_cost_figure
from app.i18n import (
    DEFAULT_LANGUAGE,
    LANGUAGES,
    Catalogues,
    configure_templates,
    negotiate,
    shipped_catalogues,
    text_direction,
)
from app.main import create_app
from app.models import Result, StudyControl, StudyStatus
from app.sessions import create_session, create_study
from app.study_config import DEFAULT_CONSENT_TEXT, StudyConfig, StudyConfigError, parse_study_config

ROOT = Path(__file__).resolve().parents[2]
#: What a session whose answers gave no metric stores as its summary (app.sessions.service).
FAILED_SUMMARY = (
    "Thank you. Your answers did not add up to a single consistent metric, which happens; they are "
    "recorded and will still help the study."
)
LOCALES = ROOT / "locales"

#: Pseudo-translation: every ASCII letter becomes an accented look-alike; placeholders and markup stay.
_ACCENTED = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "áƀçďéƒĝĥíĵķĺɱñöþʠŕšţúṽŵẋýžÁƁÇĎÉƑĜĤÍĴĶĹṀÑÖÞǪŔŠŢÚṼŴẊÝŽ",
)
_KEEP = re.compile(r"(%\(\w+\)s|%%|<[^>]*>|&\w+;)")
#: Words a page may show in English in any language: the product's name.
_BRAND = {"Elicitation", "Studio"}
_ENGLISH_WORD = re.compile(r"[A-Za-z]{2,}")


def pseudo(text: str) -> str:
    """``text`` in the pseudo-locale: accented and bracketed, placeholders and tags untouched."""
    parts = _KEEP.split(text)
    return "⟦" + "".join(part if _KEEP.fullmatch(part) else part.translate(_ACCENTED) for part in parts) + "⟧"


def extracted_catalog(tmp_path: Path) -> Catalog:
    """Every message the sources mark today, extracted as docs/translations.md says."""
    pot = tmp_path / "messages.pot"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "babel.messages.frontend",
            "extract",
            "-F",
            "babel.cfg",
            "-o",
            str(pot),
            "--ignore-dirs=.* __pycache__",
            "--omit-header",
            ".",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    with pot.open("rb") as source:
        return read_po(source)


def _key(message: Message) -> tuple[str | None, str]:
    return message.context, message.id if isinstance(message.id, str) else message.id[0]


def test_german_catalogue_translates_every_message_the_sources_mark(tmp_path: Path) -> None:
    extracted = extracted_catalog(tmp_path)
    with (LOCALES / "de" / "LC_MESSAGES" / "messages.po").open("rb") as source:
        german = read_po(source, locale="de")
    translated = {_key(message): message for message in german if message.id}
    assert len(translated) > 150
    problems = []
    for message in extracted:
        if not message.id:
            continue
        found = translated.get(_key(message))
        if found is None:
            problems.append(f"missing: {message.id!r}")
        elif found.fuzzy:
            problems.append(f"fuzzy: {message.id!r}")
        elif not all(
            isinstance(s, str) and s.strip() for s in (found.string if found.pluralizable else [found.string])
        ):
            problems.append(f"untranslated: {message.id!r}")
        else:
            try:
                python_format(german, found)
            except Exception as exc:  # babel's TranslationError names the placeholder
                problems.append(f"placeholders of {message.id!r}: {exc}")
    assert problems == []


@pytest.fixture
def pseudo_locales(tmp_path: Path) -> Path:
    """A locales folder whose German catalogue is the pseudo-translation of every extracted message."""
    extracted = extracted_catalog(tmp_path)
    catalog = Catalog(locale="de")
    for message in extracted:
        if not message.id:
            continue
        if isinstance(message.id, tuple):
            string: Any = tuple(pseudo(form) for form in message.id)
        else:
            string = pseudo(message.id)
        catalog.add(message.id, string, context=message.context, flags=message.flags)
    folder = tmp_path / "locales" / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    with (folder / "messages.po").open("wb") as target:
        write_po(target, catalog)
    return tmp_path / "locales"


class _VisibleText(HTMLParser):
    """The text a person reads (and hears) on a page, and the chart figures it embeds."""

    _SKIP = frozenset({"script", "style", "template"})

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.figures: list[Any] = []
        self.strings: Any = None
        self._stack: list[str] = []
        self._json_target: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag not in {"br", "input", "meta", "link", "img", "hr"}:
            self._stack.append(tag if values.get("data-testid") != "completion-code" else "script")
        for name in ("aria-label", "title", "alt", "placeholder"):
            if values.get(name):
                self.text.append(str(values[name]))
        if tag == "script" and values.get("type") == "application/json":
            self._json_target = "strings" if values.get("id") == "page-strings" else "figure"

    def handle_endtag(self, tag: str) -> None:
        if self._stack:
            self._stack.pop()
        self._json_target = None

    def handle_data(self, data: str) -> None:
        if self._json_target == "strings":
            self.strings = json.loads(data)
        elif self._json_target == "figure":
            self.figures.append(json.loads(data))
        elif not any(tag in self._SKIP for tag in self._stack):
            self.text.append(data)


_FIGURE_TEXT_KEYS = {"text", "name", "label", "customdata", "hovertemplate", "title", "names", "caption"}


def _figure_strings(value: Any, key: str | None = None) -> Iterator[str]:
    if isinstance(value, dict):
        for name, item in value.items():
            yield from _figure_strings(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from _figure_strings(item, key)
    elif isinstance(value, str) and key in _FIGURE_TEXT_KEYS:
        yield re.sub(r"%\{[^}]*\}|<extra>.*?</extra>|<br>", " ", value)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


def english_left(html: str) -> list[str]:
    """Words of two or more plain ASCII letters on the page: English that the catalogue did not translate."""
    parser = _VisibleText()
    parser.feed(html)
    texts = list(parser.text)
    for figure in parser.figures:
        texts.extend(_figure_strings(figure))
    texts.extend(_strings(parser.strings or {}))
    words = {word for text in texts for word in _ENGLISH_WORD.findall(re.sub(r"%\(\w+\)s", "", text))}
    return sorted(words - _BRAND)


#: The study's own words in the pseudo-locale too: whatever English is left came from the app.
PSEUDO_STUDY = {
    **SMALL_STUDY,
    "name": pseudo("Tumour study"),
    "task": pseudo("Decide whether a tumour is benign or malignant."),
    "class_names": [pseudo("benign"), pseudo("malignant")],
    "population": pseudo("patients"),
    "consent_text": pseudo("You agree."),
    "instructions_text": pseudo("Compare."),
    "language": "de",
}
#: The same study recruited on a panel: its ID in the link, the link refused without one.
PSEUDO_PANEL_STUDY = {
    **PSEUDO_STUDY,
    "panel": {"name": pseudo("Panel"), "parameters": ["pid"], "id_parameter": "pid", "require_id": True},
}
PSEUDO_FAIR_STUDY = {
    **PSEUDO_STUDY,
    "algorithm": "fair_qpme",
    "algorithm_params": {"epsilon": 0.3},
    "group_names": [pseudo("north"), pseudo("south")],
    "query_space": {"kind": "synthetic", "radius": 0.15},
}


class _FirstAlways(Participant):
    """Prefers the first classifier every time (any answers are valid, and fairness needs no metric here)."""

    def __init__(self) -> None:
        super().__init__(None)

    def choose(self, query: dict[str, Any]) -> str:
        return "first"


def _assert_translated(response: Any, label: str) -> None:
    assert '<html lang="de" dir="ltr">' in response.text, label
    assert english_left(response.text) == [], label


def test_pseudo_locale_leaves_no_english_on_any_participant_page(
    sqlite_settings: Any, pseudo_locales: Path
) -> None:
    app = create_app(sqlite_settings)
    app.state.catalogues = Catalogues(pseudo_locales)
    for config in (PSEUDO_PANEL_STUDY, PSEUDO_FAIR_STUDY):
        with app.state.sessionmaker() as db:
            study = create_study(db, config)
        client = TestClient(app, headers={"accept-language": "de"})
        link = f"/studies/{study.id}/join"
        if "panel" in config:
            no_id = client.get(link)
            assert 'data-testid="form-errors"' in no_id.text
            _assert_translated(no_id, "panel link without its ID")
            link += "?pid=12345"
        join = client.get(link)
        assert join.status_code == 200
        assert ('data-testid="panel-id"' in join.text) == ("panel" in config)
        with app.state.sessionmaker() as db:
            _invited, invitation = create_session(db, app.state.session_cache, study.id, require_open=False)
        invited = client.get(f"/sessions/{invitation}")
        assert 'data-testid="consent"' in invited.text
        _assert_translated(invited, "invitation's consent page")
        not_ticked = client.post(f"/sessions/{invitation}/consent", data={})
        assert not_ticked.status_code == 422
        _assert_translated(not_ticked, "invitation's consent page without consent")
        _assert_translated(join, "consent page")
        refused = client.post(link, data={})
        assert refused.status_code == 422
        _assert_translated(refused, "consent page without consent")
        joined = client.post(link, data={"consent": "yes"}, follow_redirects=False)
        assert joined.status_code == 303
        token = joined.headers["location"].split("/")[2]
        _assert_translated(client.get(f"/sessions/{token}/instructions"), "instructions")
        participant = Participant(METRIC) if config is PSEUDO_PANEL_STUDY else _FirstAlways()
        state = client.get(f"/api/v1/sessions/{token}").json()
        seen_practice = seen_question = False
        for _ in range(500):
            if state["query"] is None:
                break
            page = client.get(f"/sessions/{token}")
            assert page.status_code == 200
            _assert_translated(page, f"question {state['query']['seq']}")
            seen_practice |= state["query"]["practice"]
            seen_question |= not state["query"]["practice"]
            if state["query"]["seq"] >= 2:
                break
            state = participant.answer(client, token, state)
        assert seen_practice and seen_question
        _assert_translated(client.get(f"/studies/{study.id}/join"), "welcome back")
        # An answer sent twice with different choices: the conflict page.
        seq = state["query"]["seq"]
        client.post(f"/sessions/{token}/answers", data={"seq": seq, "preferred": "first"})
        moved_on = client.post(f"/sessions/{token}/answers", data={"seq": seq, "preferred": "second"})
        assert moved_on.status_code == 409
        _assert_translated(moved_on, "answered differently")
        participant.finish(client, token)
        result = client.get(f"/sessions/{token}/result")
        assert result.status_code == 200
        assert 'data-testid="result-headline"' in result.text
        assert 'data-testid="forward"' in result.text
        _assert_translated(result, "thank-you page")
        _assert_translated(client.get(f"/studies/{study.id}/join"), "welcome back, finished")
        with app.state.sessionmaker() as db:
            db.merge(StudyControl(study_id=study.id, status=StudyStatus.CLOSED.value))
            db.commit()
        closed = TestClient(app).get(f"/studies/{study.id}/join")
        assert closed.status_code == 409
        _assert_translated(closed, "closed study")
    missing = client.get("/sessions/not-a-token")
    assert missing.status_code == 404
    _assert_translated(missing, "unknown link (browser language)")
    _assert_translated(client.get("/"), "start page (browser language)")


def test_english_words_are_found_where_the_catalogue_lacks_them(sqlite_settings: Any, tmp_path: Path) -> None:
    """The check above can fail: with an empty German catalogue the pages are English and it says so."""
    folder = tmp_path / "empty" / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    with (folder / "messages.po").open("wb") as target:
        write_po(target, Catalog(locale="de"))
    app = create_app(sqlite_settings)
    app.state.catalogues = Catalogues(tmp_path / "empty")
    study = make_study(app, **{key: PSEUDO_STUDY[key] for key in ("name", "task", "class_names", "language")})
    page = TestClient(app).get(f"/studies/{study.id}/join")
    assert {"Before", "start", "Start"} <= set(english_left(page.text))


def test_a_german_study_shows_german_pages_and_scripts_strings(app: Any) -> None:
    study = make_study(app, language="de", population="Patienten", class_names=["gutartig", "bösartig"])
    client = TestClient(app)
    join = client.get(f"/studies/{study.id}/join")
    assert join.status_code == 200
    assert '<html lang="de" dir="ltr">' in join.text
    assert "Bevor Sie beginnen" in join.text
    assert "Ich habe das Obenstehende gelesen" in join.text
    token = client.post(f"/studies/{study.id}/join", data={"consent": "yes"}).url.path.split("/")[2]
    page = client.get(f"/sessions/{token}")
    assert "Ich bevorzuge" in page.text
    assert "Von 100 Patienten" in page.text
    parser = _VisibleText()
    parser.feed(page.text)
    assert parser.strings["hideTables"] == "Tabellen ausblenden"
    assert parser.strings["seconds"] == {"one": "%(num)s Sekunde", "other": "%(num)s Sekunden"}
    sankey = next(figure for figure in parser.figures if "boxes" in figure)
    assert sankey["data"][0]["node"]["label"][0].startswith("Tatsächlich: gutartig")
    # The JSON API and its English section labels stay as they are, whatever the study's language.
    api = client.get(f"/api/v1/sessions/{token}").json()
    assert {section["label"] for section in api["progress"]["sections"]} <= {
        "Practice",
        "Questions",
        "Last comparisons",
    }


def test_a_failed_session_thanks_the_participant_in_the_studys_language(app: Any) -> None:
    """A session whose answers gave no metric has no plain words; its stored summary is shown translated."""
    study = make_study(app, language="de")
    client = TestClient(app)
    token = new_session(client, study)
    Participant(METRIC).finish(client, token)
    with app.state.sessionmaker() as db:
        db.execute(
            update(Result).values(metric={"type": "failed", "reason": "inconsistent"}, summary=FAILED_SUMMARY)
        )
        db.commit()
    app.state.session_cache.clear()
    page = client.get(f"/sessions/{token}/result")
    assert page.status_code == 200
    assert "Ihre Antworten ergaben keine einheitliche Metrik" in page.text
    assert 'data-testid="result-headline"' not in page.text


def test_an_english_study_and_the_back_office_stay_english(app: Any, study: Any) -> None:
    page = TestClient(app, headers={"accept-language": "de"}).get(f"/studies/{study.id}/join")
    assert '<html lang="en" dir="ltr">' in page.text
    assert "Before you start" in page.text


def test_the_start_page_and_unknown_links_follow_the_browser_language(app: Any) -> None:
    client = TestClient(app)
    assert 'lang="de"' in client.get("/", headers={"accept-language": "de-CH, en;q=0.5"}).text
    assert 'lang="en"' in client.get("/", headers={"accept-language": "fr, en;q=0.5"}).text
    missing = client.get("/sessions/nope", headers={"accept-language": "de"})
    assert missing.status_code == 404
    assert "Link nicht gefunden" in missing.text


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "en"),
        ("", "en"),
        ("de", "de"),
        ("de-AT,de;q=0.9", "de"),
        ("fr-FR, de;q=0.7, en;q=0.8", "en"),
        ("fr-FR, de;q=0.9, en;q=0.8", "de"),
        ("en;q=0, de;q=0.1", "de"),
        ("*", "en"),
        ("not a header ;;; q=x", "en"),
    ],
)
def test_negotiate_picks_the_best_language_on_offer(header: str | None, expected: str) -> None:
    assert negotiate(header) == expected


def test_right_to_left_languages_set_dir_and_mirror_the_answer_arrows(tmp_path: Path) -> None:
    assert text_direction("ar") == "rtl"
    assert text_direction("he") == "rtl"
    assert text_direction("de") == "ltr"
    assert text_direction("xx-nonsense") == "ltr"
    catalogues = Catalogues(tmp_path, languages={**LANGUAGES, "ar": "العربية"})
    context = catalogues.template_context("ar")
    assert context["arrows"] == {"left": "→", "right": "←"}
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(ROOT / "templates"), autoescape=True)
    configure_templates(env)
    env.globals["app_name"] = "Elicitation Studio"
    html = env.get_template("home.html").render(**context)
    assert '<html lang="ar" dir="rtl">' in html


#: Physical sides in a stylesheet: on a right-to-left page they would not mirror.
_PHYSICAL_SIDES = re.compile(
    r"(?:margin|padding|border|inset)-(?:left|right)|text-align:\s*(?:left|right)|float:\s*(?:left|right)"
    r"|(?<![-\w])(?:left|right)\s*:"
)


def test_participant_stylesheet_uses_logical_sides_only() -> None:
    """app.css writes start/end (margin-inline-start, text-align: start ...), so a right-to-left page
    mirrors; the charts' own left-to-right ends are set with ``direction: ltr``."""
    css = (ROOT / "static" / "css" / "app.css").read_text(encoding="utf-8")
    assert _PHYSICAL_SIDES.findall(css) == []
    assert _PHYSICAL_SIDES.findall(".a { margin-left: 1px; right: 0; text-align: right }") == [
        "margin-left",
        "right:",
        "text-align: right",
    ]


def test_join_names_reads_as_a_list() -> None:
    assert join_names([]) == ""
    assert join_names(["north"]) == "north"
    assert join_names(["north", "south"]) == "north and south"
    assert join_names(["a", "b", "c"]) == "a, b and c"


def test_study_language_is_validated_and_default_texts_follow_it() -> None:
    base = {"name": "S", "task": "T", "class_names": ["a", "b"]}
    assert StudyConfig.model_validate(base).language == DEFAULT_LANGUAGE
    with pytest.raises(StudyConfigError, match="language 'xx' is not offered; choose one of en"):
        parse_study_config({**base, "language": "xx"})
    german = StudyConfig.model_validate({**base, "language": "de"})
    assert german.consent_text.startswith("In dieser Studie vergleichen Sie")
    assert german.population == "Personen"
    # A default in any language follows a change of language; a text somebody wrote stays.
    back = StudyConfig.model_validate({**german.model_dump(), "language": "en"})
    assert back.consent_text == DEFAULT_CONSENT_TEXT
    assert back.population == "people"
    own = StudyConfig.model_validate({**base, "language": "de", "consent_text": "Eigener Text."})
    assert own.consent_text == "Eigener Text."
    assert "enum" in StudyConfig.model_json_schema()["properties"]["language"]


def test_numbers_are_written_with_the_languages_decimal_mark() -> None:
    german = shipped_catalogues().translations("de")
    assert fmt(3.6, 1, german) == "3,6"
    assert fmt(3.6, 1) == "3.6"
    assert fmt(12.0, 0, german) == "12"
    assert separators(german) == ",." and separators() == ".,"
    figure = mistake_cost_figure(["a", "b"], [1.0, 3.64], [None, (3.1, 4.2)], range_label="x", tr=german)
    assert figure["data"][0]["text"] == ["1,0×", "3,6×"]
    assert figure["layout"]["separators"] == ",."
    page = Catalogues(LOCALES).template_context("de")["number"]
    assert page(0.0125, 4) == "0,0125"


def _lang(html: str) -> str:
    match = re.search(r'<html lang="([a-z]+)"', html)
    assert match
    return match.group(1)


def test_a_study_in_several_languages_follows_the_browser_and_the_switcher_keeps_the_answers(
    client: TestClient, app: Any
) -> None:
    study = make_study(app, languages=["de"])
    assert StudyConfig.model_validate(study.config).offered_languages == ["en", "de"]
    german = {"Accept-Language": "de-DE,de;q=0.9,en;q=0.5"}
    join = client.get(f"/studies/{study.id}/join", headers=german).text
    assert _lang(join) == "de" and 'data-testid="language-switch"' in join
    token = new_session(client, study)
    state = Participant(METRIC).answer(client, token, client.get(f"/api/v1/sessions/{token}").json())
    question = client.get(f"/sessions/{token}", headers=german).text
    # The bundled data's class names in the page's language, the coordinator's words as written.
    assert _lang(question) == "de" and "gutartig" in question and "bösartig" in question
    assert "Test study &lt;b&gt;bold&lt;/b&gt;" in question
    switch = re.search(r'href="([^"]*)" hreflang="en"', question)
    assert switch and switch.group(1) == f"/sessions/{token}?lang=en"
    english = client.get(switch.group(1), headers=german)
    assert _lang(english.text) == "en" and "benign" in english.text
    assert "participant_language=en" in english.headers["set-cookie"]
    # The choice stays (the cookie) over the browser's preference, and no answer was lost.
    again = client.get(f"/sessions/{token}", headers=german).text
    assert _lang(again) == "en"
    assert f'name="seq" value="{state["query"]["seq"]}"' in again
    assert client.get(f"/api/v1/sessions/{token}").json()["progress"]["answered"] == 1


def test_a_study_in_one_language_ignores_the_browser_and_a_foreign_switch(
    client: TestClient, app: Any
) -> None:
    study = make_study(app)
    page = client.get(f"/studies/{study.id}/join?lang=de", headers={"Accept-Language": "de"}).text
    assert _lang(page) == "en" and 'data-testid="language-switch"' not in page
    german_only = make_study(app, name="nur deutsch", language="de")
    assert (
        _lang(client.get(f"/studies/{german_only.id}/join", headers={"Accept-Language": "en"}).text) == "de"
    )


def test_offered_languages_must_be_known() -> None:
    with pytest.raises(StudyConfigError, match="language 'xx' is not offered"):
        parse_study_config({**SMALL_STUDY, "languages": ["de", "xx"]})
    config = parse_study_config({**SMALL_STUDY, "language": "de", "languages": ["en", "de", "en"]})
    assert config.offered_languages == ["de", "en"]
