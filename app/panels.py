"""Recruitment panels: which link parameters a study stores, the panel ID, and the completion redirect.

A panel (Prolific, MTurk, a survey tool) sends people to the study's open link with its own parameters,
e.g. ``join?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=…``. The study's `PanelConfig` names the parameters to
keep: they are stored with the session as they arrived (read-only, exported), and the panel ID parameter
becomes the participant code (a returning panel ID continues its session where the study opts in). When
the session ends, the participant is sent to the coordinator's redirect address, a template whose
``{placeholders}`` (the completion code, the participant code, any stored parameter) are filled in
URL-encoded and only ever in its query string: nothing a participant sends becomes a link except as an
encoded query value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "MAX_PANEL_VALUE_LENGTH",
    "PANEL_PRESETS",
    "REDIRECT_PLACEHOLDERS",
    "PanelConfig",
    "PanelValues",
    "check_redirect_template",
    "checked_values",
    "fill_redirect",
    "panel_link",
    "panel_values",
    "preset_of",
    "redirect_placeholders",
]

#: Longest value kept per parameter (the participant code column holds 200 characters).
MAX_PANEL_VALUE_LENGTH = 200
#: A link parameter's name: letters, digits, ``_``, ``.``, ``-``; it is also an export column's suffix.
_PARAMETER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]{0,63}$")
#: Placeholders every redirect template may use, beside the names of the study's stored parameters.
REDIRECT_PLACEHOLDERS = ("completion_code", "participant_code")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
#: Characters a coordinator's address may not hold: they would need escaping wherever it is written out.
_FORBIDDEN = frozenset("\\\"'<>`")


class PanelConfig(BaseModel):
    """A study's recruitment panel: the link parameters kept with each session, and which is the ID."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str = Field(default="the panel", min_length=1, max_length=60, description='e.g. "Prolific"')
    parameters: list[str] = Field(min_length=1, max_length=10)
    id_parameter: str | None = Field(
        default=None, description="the parameter that identifies a person; it becomes the participant code"
    )
    require_id: bool = Field(
        default=False, description="only people arriving with the ID parameter may start (not previews)"
    )

    @field_validator("parameters")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        cleaned = [name.strip() for name in names]
        for name in cleaned:
            if not _PARAMETER_NAME.match(name):
                raise ValueError(
                    f"{name!r} is not a parameter name (a letter, then letters, digits, _ . - ; at most 64)"
                )
            if name in REDIRECT_PLACEHOLDERS:
                raise ValueError(f"{name!r} is reserved for the redirect address")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError("parameter names must be distinct")
        return cleaned

    @model_validator(mode="after")
    def _id_is_a_parameter(self) -> PanelConfig:
        if self.id_parameter is not None and self.id_parameter not in self.parameters:
            raise ValueError(f"id_parameter {self.id_parameter!r} must be one of the parameters")
        if self.require_id and self.id_parameter is None:
            raise ValueError("require_id needs an id_parameter")
        return self


#: The panels whose parameters are known: a configuration may name one instead of spelling it out.
PANEL_PRESETS: dict[str, PanelConfig] = {
    "prolific": PanelConfig(
        name="Prolific",
        parameters=["PROLIFIC_PID", "STUDY_ID", "SESSION_ID"],
        id_parameter="PROLIFIC_PID",
        require_id=True,
    ),
    "mturk": PanelConfig(
        name="MTurk",
        parameters=["workerId", "assignmentId", "hitId"],
        id_parameter="workerId",
        require_id=True,
    ),
}


#: How a preset's panel writes its values into a study URL, for the coordinator to paste (MTurk appends
#: its parameters itself).
_LINK_PLACEHOLDERS = {"prolific": "{{%{name}%}}", "mturk": None}


def preset_of(panel: PanelConfig | None) -> str | None:
    """The preset a panel configuration is (``"prolific"``, ``"mturk"``), or None."""
    if panel is None:
        return None
    return next((name for name, preset in PANEL_PRESETS.items() if preset == panel), None)


def panel_link(join_url: str, panel: PanelConfig) -> str:
    """The open link as the panel should be given it: its parameters with the panel's own placeholders
    (Prolific's ``{{%PROLIFIC_PID%}}``), none for MTurk, which appends them, and ``…`` for any other."""
    preset = preset_of(panel)
    pattern = _LINK_PLACEHOLDERS.get(preset, "…") if preset else "…"
    if pattern is None:
        return join_url
    query = "&".join(f"{name}={pattern.replace('{name}', name)}" for name in panel.parameters)
    return f"{join_url}?{query}"


@dataclass(frozen=True)
class PanelValues:
    """The configured parameters a link carried (stored as they arrived) and what was wrong with it."""

    values: dict[str, str]
    participant_code: str | None
    problems: tuple[str, ...] = ()


def panel_values(panel: PanelConfig | None, query: Mapping[str, str]) -> PanelValues:
    """The study's parameters out of a link's query string; others are ignored, none is ever trusted.

    A value is kept exactly as sent (stripped of surrounding blanks); an empty one counts as absent. A value
    longer than `MAX_PANEL_VALUE_LENGTH` is a problem to show, never silently cut.
    """
    if panel is None:
        return PanelValues({}, None)
    values: dict[str, str] = {}
    problems: list[str] = []
    for name in panel.parameters:
        raw = str(query.get(name) or "").strip()
        if not raw:
            continue
        if len(raw) > MAX_PANEL_VALUE_LENGTH or not raw.isprintable():
            problems.append(name)
            continue
        values[name] = raw
    code = values.get(panel.id_parameter) if panel.id_parameter else None
    return PanelValues(values, code, tuple(problems))


def checked_values(panel: PanelConfig | None, given: Mapping[str, str]) -> PanelValues:
    """Panel values a client sends outright (the JSON API): every name known, every value well formed,
    the ID present if the study requires it; `ValueError` names the first problem."""
    known = panel.parameters if panel is not None else []
    unknown = [name for name in given if name not in known]
    if unknown:
        keeps = ", ".join(known) if known else "no panel parameters"
        raise ValueError(f"panel: this study keeps {keeps}, not {unknown[0]!r}")
    arrived = panel_values(panel, given)
    if arrived.problems:
        raise ValueError(
            f"panel.{arrived.problems[0]}: at most {MAX_PANEL_VALUE_LENGTH} printable characters"
        )
    if panel is not None and panel.require_id and arrived.participant_code is None:
        raise ValueError(f"panel.{panel.id_parameter}: this study needs the panel ID to start a session")
    return arrived


def redirect_placeholders(panel: PanelConfig | None) -> tuple[str, ...]:
    """The placeholders a study's redirect template may use."""
    return REDIRECT_PLACEHOLDERS + (tuple(panel.parameters) if panel is not None else ())


def check_redirect_template(template: str, allowed: tuple[str, ...]) -> str:
    """``template`` if it is an http(s) address whose ``{placeholders}`` are known and in the query only.

    Raises `ValueError` naming the problem. The scheme, host and path are the coordinator's, fixed; a
    placeholder in them would let a participant's value choose where the link goes.
    """
    parts = urlsplit(template)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ValueError("the redirect address must start with https:// or http:// and name a host")
    if any(ch.isspace() or not ch.isprintable() or ch in _FORBIDDEN for ch in template):
        raise ValueError("the redirect address may not contain spaces, quotes, < > or backslashes")
    head = template.split("?", 1)[0]
    if "{" in head or "}" in head:
        raise ValueError("placeholders such as {completion_code} may only appear after the ? of the address")
    query = template[len(head) :]
    names = _PLACEHOLDER.findall(query)
    stray = _PLACEHOLDER.sub("", query)
    if "{" in stray or "}" in stray:
        raise ValueError("a { or } in the redirect address must enclose a placeholder name")
    unknown = [name for name in names if name not in allowed]
    if unknown:
        raise ValueError(
            f"unknown placeholder {{{unknown[0]}}} in the redirect address; use "
            + ", ".join(f"{{{name}}}" for name in allowed)
        )
    return template


def fill_redirect(template: str, values: Mapping[str, Any]) -> str:
    """The redirect address with each placeholder replaced by its value, percent-encoded (absent: empty)."""
    head, sep, query = template.partition("?")
    filled = _PLACEHOLDER.sub(lambda m: quote(str(values.get(m.group(1)) or ""), safe=""), query)
    return head + sep + filled
