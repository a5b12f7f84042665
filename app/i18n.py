"""Participant pages in the study's language: the languages on offer, their catalogues, text direction.

Every participant-facing string is an English msgid; a study's ``language`` picks the catalogue that
translates it (``locales/<code>/LC_MESSAGES/messages.po``, compiled in memory the first time a language is
used, so no compiled ``.mo`` file is kept in the repository or can go stale). Templates use Jinja's i18n
extension (``{% trans %}``, ``_()``) with the callables of `template_context`; Python code that writes
participant text takes a ``tr`` (a `gettext.NullTranslations`, English by default); the scripts of the
page read one string table (`page_strings`) that the page carries as JSON. See docs/translations.md.
"""

from __future__ import annotations

import gettext as _gettext
import io
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from babel import Locale, UnknownLocaleError
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.support import Translations
from jinja2 import Environment, pass_context
from jinja2.runtime import Context
from markupsafe import Markup

from .charts.common import N_, fmt
from .resources import resource_dir

__all__ = [
    "DEFAULT_LANGUAGE",
    "DOMAIN",
    "ENGLISH",
    "LANGUAGES",
    "N_",
    "Catalogues",
    "Direction",
    "Translator",
    "negotiate",
    "shipped_catalogues",
    "text_direction",
]

#: The languages a study can be run in: code -> the language's own name (the study form lists them).
LANGUAGES: Mapping[str, str] = {"en": "English", "de": "Deutsch"}
DEFAULT_LANGUAGE = "en"
#: The gettext domain: ``locales/<code>/LC_MESSAGES/messages.po``.
DOMAIN = "messages"
#: What turns an English msgid into the page's language (English itself: the msgids unchanged).
Translator = _gettext.NullTranslations
ENGLISH: Translator = _gettext.NullTranslations()
Direction = Literal["ltr", "rtl"]


def text_direction(language: str) -> Direction:
    """``"rtl"`` for a language written right to left (Arabic, Hebrew, Persian ...), else ``"ltr"``."""
    try:
        order = Locale.parse(language, sep="-").character_order
    except (UnknownLocaleError, ValueError):
        return "ltr"
    return "rtl" if order == "right-to-left" else "ltr"


_ACCEPT_ITEM = re.compile(r"^\s*([A-Za-z]{1,8}(?:-[A-Za-z0-9]{1,8})*|\*)\s*(?:;\s*q\s*=\s*([0-9.]+))?\s*$")


def negotiate(
    accept_language: str | None,
    available: Mapping[str, str] | Sequence[str] = LANGUAGES,
    default: str = DEFAULT_LANGUAGE,
) -> str:
    """The best of ``available`` for an ``Accept-Language`` header, else ``default`` (a study's own
    language among those it offers; English for pages that belong to no study)."""
    ranked: list[tuple[float, int, str]] = []
    for index, item in enumerate((accept_language or "").split(",")[:20]):
        match = _ACCEPT_ITEM.match(item)
        if not match:
            continue
        try:
            quality = float(match.group(2)) if match.group(2) else 1.0
        except ValueError:
            continue
        ranked.append((-quality, index, match.group(1).lower()))
    for quality, _index, tag in sorted(ranked):
        if quality >= 0:
            break
        primary = tag.split("-")[0]
        if primary in available:
            return primary
    return default


def _compile(path: Path) -> Translator:
    """A ``.po`` file as gettext translations (fuzzy entries left out, as ``msgfmt`` leaves them out)."""
    with path.open("rb") as source:
        catalog = read_po(source, domain=DOMAIN)
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    buffer.seek(0)
    return Translations(fp=buffer, domain=DOMAIN)


def _jinja_callables(tr: Translator) -> dict[str, Callable[..., str]]:
    """Jinja's "newstyle" gettext callables over ``tr``: format with ``%`` and escape the values.

    The same behaviour as ``Environment.install_gettext_callables(..., newstyle=True)``, but handed to one
    template render in its context, so that pages of different languages render side by side.
    """

    def finish(context: Context, text: str, variables: dict[str, Any]) -> str:
        result: str = (Markup(text) if context.eval_ctx.autoescape else text) % variables
        return result

    @pass_context
    def gettext(__context: Context, __string: str, **variables: Any) -> str:
        return finish(__context, tr.gettext(__string), variables)

    @pass_context
    def ngettext(__context: Context, __singular: str, __plural: str, __num: int, **variables: Any) -> str:
        variables.setdefault("num", __num)
        return finish(__context, tr.ngettext(__singular, __plural, __num), variables)

    @pass_context
    def pgettext(__context: Context, __string_ctx: str, __string: str, **variables: Any) -> str:
        variables.setdefault("context", __string_ctx)
        return finish(__context, tr.pgettext(__string_ctx, __string), variables)

    @pass_context
    def npgettext(
        __context: Context, __string_ctx: str, __singular: str, __plural: str, __num: int, **variables: Any
    ) -> str:
        variables.setdefault("context", __string_ctx)
        variables.setdefault("num", __num)
        return finish(__context, tr.npgettext(__string_ctx, __singular, __plural, __num), variables)

    return {"gettext": gettext, "ngettext": ngettext, "pgettext": pgettext, "npgettext": npgettext}


#: Plural messages of the page's scripts: key -> the message for a number (``%(num)s`` in it).
_PLURAL_STRINGS: Mapping[str, Callable[[Translator, int], str]] = {
    "seconds": lambda tr, n: tr.ngettext("%(num)s second", "%(num)s seconds", n),
    "minutes": lambda tr, n: tr.ngettext("%(num)s minute", "%(num)s minutes", n),
}
#: Numbers tried to find each plural category's form for the scripts (CLDR categories of integers).
_PLURAL_PROBES = range(0, 200)


def _script_strings(tr: Translator) -> dict[str, Any]:
    """The string table of static/js (session.js, charts.js) in one language.

    Plain messages are ``%(name)s`` templates; a plural message maps each CLDR plural category of the
    language ("one", "few", "other" ...) to its form, which the script picks with ``Intl.PluralRules``.
    """
    _ = tr.gettext
    strings: dict[str, Any] = {
        "pausedNotice": _(
            "Welcome back. The study was paused for %(duration)s while this tab was in the background; "
            "nothing was lost. Take your time with this question."
        ),
        "inTotal": _("%(count)s in total"),
        "hideTables": _("Hide the tables"),
    }
    return strings


def configure_templates(env: Environment) -> None:
    """Jinja's i18n extension on ``env`` (``{% trans %}``, ``_()``), English unless a page says otherwise."""
    env.add_extension("jinja2.ext.i18n")
    # Whitespace inside {% trans %} collapses, so a paragraph may wrap in the template and stay one msgid.
    env.policies["ext.i18n.trimmed"] = True
    # English outside a request (template modules, tests); every page gets its own language's callables
    # in its context (`Catalogues.template_context`), which take precedence over these.
    env.globals.update(Catalogues(resource_dir("locales")).template_context(DEFAULT_LANGUAGE))
    env.newstyle_gettext = True  # type: ignore[attr-defined]


class Catalogues:
    """The translations of every language a study can use, read from one folder (``locales/``).

    A language's catalogue is compiled the first time a page needs it and then kept for the process.
    """

    def __init__(self, directory: Path, languages: Mapping[str, str] = LANGUAGES) -> None:
        self.directory = directory
        self.languages = languages
        self._translations: dict[str, Translator] = {DEFAULT_LANGUAGE: ENGLISH}
        self._contexts: dict[str, dict[str, Any]] = {}

    def path(self, language: str) -> Path:
        return self.directory / language / "LC_MESSAGES" / f"{DOMAIN}.po"

    def translations(self, language: str) -> Translator:
        """``language``'s translations (English for an unknown code: the msgids)."""
        found = self._translations.get(language)
        if found is None:
            if language not in self.languages or not self.path(language).is_file():
                return ENGLISH
            found = self._translations[language] = _compile(self.path(language))
        return found

    def template_context(self, language: str | None) -> dict[str, Any]:
        """What every template of a page in ``language`` needs: gettext callables, ``lang``, ``dir`` ..."""
        code = language if language in self.languages else DEFAULT_LANGUAGE
        context = self._contexts.get(code)
        if context is None:
            tr = self.translations(code)
            direction = text_direction(code)
            context = {
                **_jinja_callables(tr),
                "lang": code,
                "language_names": self.languages,
                "text_direction": direction,
                # The arrow pointing at each side: the first classifier (A) is on the left in a
                # left-to-right page and on the right in a right-to-left one.
                "arrows": {"left": "←", "right": "→"} if direction == "ltr" else {"left": "→", "right": "←"},
                "page_strings": self.page_strings(code),
                # Numbers with the language's decimal mark: number(1.5, 1) is "1,5" in German.
                "number": lambda value, decimals: fmt(value, decimals, tr),
            }
            self._contexts[code] = context
        return context

    def page_strings(self, language: str) -> dict[str, Any]:
        """The scripts' string table in ``language``, plural messages per CLDR plural category."""
        tr = self.translations(language)
        strings = _script_strings(tr)
        plural_form = self._plural_rule(language)
        for key, message in _PLURAL_STRINGS.items():
            forms: dict[str, str] = {}
            for number in _PLURAL_PROBES:
                forms.setdefault(plural_form(number), message(tr, number))
            strings[key] = forms
        return strings

    @staticmethod
    def _plural_rule(language: str) -> Callable[[int], str]:
        try:
            rule: Callable[[int], str] = Locale.parse(language, sep="-").plural_form
        except (UnknownLocaleError, ValueError):
            rule = Locale.parse(DEFAULT_LANGUAGE).plural_form
        return rule

    def every_translation(self, message: str) -> frozenset[str]:
        """``message`` in every language on offer (to recognise a default text whatever its language)."""
        return frozenset(self.translations(code).gettext(message) for code in self.languages)


@lru_cache(maxsize=1)
def shipped_catalogues() -> Catalogues:
    """The catalogues this installation ships (``locales/`` of the checkout or the wheel)."""
    return Catalogues(resource_dir("locales"))
