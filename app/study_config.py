"""Study configuration: the validated model behind `elicit study create <file.json|file.toml>`."""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import (
    AnyHttpUrl,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from elicitation import ElicitationError
from elicitation.lab.spaces import space_from_dict

from .algorithms import REGISTRY, UnknownAlgorithmError, get_algorithm
from .embedding import MAX_FRAME_ANCESTORS, normalise_origin
from .i18n import DEFAULT_LANGUAGE, LANGUAGES, N_, shipped_catalogues
from .json_input import JSONInputError, decode_json
from .panels import PANEL_PRESETS, PanelConfig, check_redirect_template, redirect_placeholders

__all__ = [
    "DEFAULT_ALGORITHM",
    "DEFAULT_CONSENT_TEXT",
    "DEFAULT_GROUP_ALGORITHM",
    "DEFAULT_INSTRUCTIONS_TEXT",
    "DEFAULT_POPULATION",
    "StudyConfig",
    "StudyConfigError",
    "build_space",
    "config_hash",
    "default_algorithm",
    "format_validation_error",
    "load_study_config",
    "parse_study_config",
    "read_study_config_file",
]

#: The elicitor for people unless a study says otherwise: the active one asks the fewest questions, only
#: pairs that display differently, and copes with the odd inconsistent answer (the paper's QPME stays a
#: choice).
DEFAULT_ALGORITHM = "active_quadratic"
#: The same for a study with groups: the active fairness elicitor (the one without groups cannot ask them).
DEFAULT_GROUP_ALGORITHM = "active_fair"
DEFAULT_CONSENT_TEXT = N_(
    "This study asks you to compare pairs of classifiers and say which one you would rather use. "
    "We record your answers, how long each one took, and nothing that identifies you. You may stop at "
    "any time; your answers are then not used."
)
DEFAULT_INSTRUCTIONS_TEXT = N_(
    "Each question shows two classifiers that were applied to the same 100 people. Look at how many of "
    "each group they get right and wrong, and pick the one you would rather use. There are no right or "
    "wrong answers: we want to learn which mistakes matter most to you."
)
#: Who the classifier decides about, unless a study says: its participants' word for people.
DEFAULT_POPULATION = N_("people")
#: The fields whose defaults are written in the study's language (the default in any language is replaced
#: by the default in the study's, so changing a study's language changes the texts nobody edited).
_TRANSLATED_DEFAULTS = {
    "consent_text": DEFAULT_CONSENT_TEXT,
    "instructions_text": DEFAULT_INSTRUCTIONS_TEXT,
    "population": DEFAULT_POPULATION,
}

#: A study-wide completion code: what panels accept, and nothing that needs escaping in a link.
_COMPLETION_CODE = re.compile(r"^[A-Za-z0-9_-]{0,32}$")


class StudyConfigError(ValueError):
    """A configuration file is unreadable or invalid; the message lists every problem by field."""


class StudyConfig(BaseModel):
    """Everything a study needs; unknown keys are rejected so that typos do not pass silently."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str = Field(min_length=1, max_length=200)
    task: str = Field(
        min_length=1, max_length=2000, description="what the classifier decides, in plain words"
    )
    class_names: list[str] = Field(min_length=2, max_length=10)
    group_names: list[str] = Field(default_factory=list, max_length=10)
    population: str = Field(
        default=DEFAULT_POPULATION, min_length=1, max_length=60, description='e.g. "patients"'
    )
    language: str = Field(
        default=DEFAULT_LANGUAGE,
        description="the language of the participant pages",
        json_schema_extra={"enum": list(LANGUAGES)},
    )
    languages: list[str] = Field(
        default_factory=list,
        max_length=10,
        description="further languages the participant pages offer besides `language`: the browser's "
        "preferred one among them is shown, and every page has a switcher",
        json_schema_extra={"items": {"enum": list(LANGUAGES)}},
    )
    algorithm: str = Field(
        default=DEFAULT_ALGORITHM,
        description=f"the elicitor; left out or empty: {DEFAULT_ALGORITHM!r}, or {DEFAULT_GROUP_ALGORITHM!r} "
        "for a study with groups",
    )
    algorithm_params: dict[str, Any] = Field(default_factory=dict)
    query_space: dict[str, Any] = Field(default_factory=lambda: {"kind": "synthetic"})
    practice_queries: int = Field(default=2, ge=0, le=10)
    checks: bool = True
    dominance_checks: int = Field(default=2, ge=0, le=10)
    repeat_checks: int = Field(default=2, ge=0, le=10)
    evaluation_queries: int = Field(default=15, ge=0, le=100)
    evaluation_precision: float | None = Field(
        default=0.15,
        gt=0.0,
        lt=0.5,
        description="end evaluation pairs once the 95% interval of M is at most +/- this (none: ask all)",
    )
    consent_text: str = Field(default=DEFAULT_CONSENT_TEXT, min_length=1, max_length=10000)
    instructions_text: str = Field(default=DEFAULT_INSTRUCTIONS_TEXT, min_length=1, max_length=10000)
    panel: PanelConfig | None = Field(
        default=None,
        description='link parameters kept with each session, or a preset name: "prolific", "mturk"',
    )
    completion_code: str | None = Field(
        default=None,
        description="one code for everyone who finishes (Prolific's model); none: a code per session",
    )
    redirect_url: str | None = Field(
        default=None,
        max_length=2000,
        description="where a finished participant is sent; {completion_code}, {participant_code} and the "
        "panel's parameters are filled in (URL-encoded) after the ?",
    )
    redirect_delay_seconds: int = Field(
        default=10, ge=0, le=600, description="seconds the thank-you page shows before it forwards"
    )
    frame_ancestors: list[str] = Field(
        default_factory=list,
        max_length=MAX_FRAME_ANCESTORS,
        description="origins allowed to show the participant pages in a frame (none: nobody)",
    )
    open_enrolment: bool = True
    resume_by_participant_code: bool = Field(
        default=False,
        description="a participant code (or panel ID) that joins again continues its session instead of "
        "starting another; off by default, since anyone who knows a code could then continue that session",
    )
    show_summary: bool = True

    @model_validator(mode="before")
    @classmethod
    def _recommended_algorithm(cls, data: Any) -> Any:
        """A study that names no algorithm gets the recommended one for its groups (or for none)."""
        if isinstance(data, dict) and data.get("algorithm") in (None, ""):
            return {**data, "algorithm": default_algorithm(data.get("group_names"))}
        return data

    @field_validator("class_names", "group_names")
    @classmethod
    def _distinct_names(cls, names: list[str]) -> list[str]:
        cleaned = [name.strip() for name in names]
        if any(not name or len(name) > 60 for name in cleaned):
            raise ValueError("names must be non-empty and at most 60 characters")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError(f"names must be distinct, got {cleaned}")
        return cleaned

    @field_validator("panel", mode="before")
    @classmethod
    def _panel_preset(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in PANEL_PRESETS:
                raise ValueError(f"unknown panel {value!r}; presets: {', '.join(PANEL_PRESETS)}")
            return PANEL_PRESETS[value].model_copy()
        return value

    @field_validator("completion_code")
    @classmethod
    def _code(cls, value: str | None) -> str | None:
        if value is not None and not _COMPLETION_CODE.match(value):
            raise ValueError("use 1 to 32 letters, digits, _ or - (the code the panel expects)")
        return value or None

    @field_validator("frame_ancestors")
    @classmethod
    def _origins(cls, origins: list[str]) -> list[str]:
        normalised = [normalise_origin(origin) for origin in origins]
        return list(dict.fromkeys(normalised))

    @field_validator("redirect_url", mode="before")
    @classmethod
    def _blank_redirect(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return str(value) if value is not None and not isinstance(value, str) else value

    @field_validator("language")
    @classmethod
    def _known_language(cls, code: str) -> str:
        if code not in LANGUAGES:
            known = ", ".join(f"{key} ({name})" for key, name in LANGUAGES.items())
            raise ValueError(f"language {code!r} is not offered; choose one of {known}")
        return code

    @field_validator("languages")
    @classmethod
    def _known_languages(cls, codes: list[str]) -> list[str]:
        for code in codes:
            cls._known_language(code)
        return list(dict.fromkeys(codes))

    @property
    def offered_languages(self) -> list[str]:
        """The languages of the participant pages: the study's own first, then the further ones."""
        return list(dict.fromkeys([self.language, *self.languages]))

    @model_validator(mode="after")
    def _defaults_in_language(self) -> StudyConfig:
        """Default texts nobody edited follow the study's language."""
        catalogues = shipped_catalogues()
        for field, default in _TRANSLATED_DEFAULTS.items():
            if getattr(self, field) in catalogues.every_translation(default):
                setattr(self, field, catalogues.translations(self.language).gettext(default))
        return self

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, name: str) -> str:
        try:
            get_algorithm(name)
        except UnknownAlgorithmError as exc:
            raise ValueError(str(exc.args[0])) from None
        return name

    @model_validator(mode="after")
    def _consistent(self) -> StudyConfig:
        if self.redirect_url is not None:
            try:
                check_redirect_template(self.redirect_url, redirect_placeholders(self.panel))
            except ValueError as exc:
                raise ValueError(f"redirect_url: {exc}") from None
            try:
                AnyHttpUrl(self.redirect_url.replace("{", "").replace("}", ""))
            except ValidationError:
                raise ValueError(f"redirect_url: {self.redirect_url!r} is not a valid address") from None
        spec = REGISTRY[self.algorithm]
        if len(self.group_names) == 1:
            raise ValueError("group_names: give at least 2 groups, or none for a study without groups")
        if spec.needs_groups and not self.group_names:
            raise ValueError(f"group_names: algorithm {self.algorithm!r} needs at least 2 groups")
        if not spec.needs_groups and self.group_names:
            raise ValueError(f"group_names: algorithm {self.algorithm!r} does not use groups; remove them")
        try:
            params = spec.parse_params(self.algorithm_params)
        except ValidationError as exc:
            raise ValueError(f"algorithm_params: {format_validation_error(exc)}") from None
        self.algorithm_params = params.model_dump()
        try:
            space = build_space(self)
        except (ElicitationError, ValueError, TypeError) as exc:
            raise ValueError(f"query_space: {exc}") from None
        self.query_space = space.to_dict()
        try:
            spec.build(space, params)
        except ElicitationError as exc:
            raise ValueError(f"algorithm_params: {exc}") from None
        return self

    @property
    def total_checks(self) -> int:
        """Attention and consistency checks per session (0 when checks are off)."""
        return self.dominance_checks + self.repeat_checks if self.checks else 0


def default_algorithm(group_names: Any) -> str:
    """The recommended elicitor for a study with these ``group_names`` (none, or at least two)."""
    return DEFAULT_GROUP_ALGORITHM if group_names else DEFAULT_ALGORITHM


def config_hash(config: dict[str, Any]) -> str:
    """SHA-256 of the canonical JSON of a stored study configuration (carried by every export)."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def build_space(config: StudyConfig) -> Any:
    """The study's query space, rebuilt from ``config.query_space`` plus its class and group names."""
    description = dict(config.query_space)
    description.setdefault("kind", "synthetic")
    if description["kind"] == "synthetic":
        description.setdefault("n_classes", len(config.class_names))
        description.setdefault("n_groups", max(1, len(config.group_names)))
        description.setdefault("class_names", list(config.class_names))
        description.setdefault("group_names", list(config.group_names))
    space = space_from_dict(description)
    if list(space.class_names) != list(config.class_names):
        raise ValueError(
            f"the space's classes {list(space.class_names)} differ from class_names {config.class_names}"
        )
    if len(config.group_names) and list(space.group_names) != list(config.group_names):
        raise ValueError(
            f"the space's groups {list(space.group_names)} differ from group_names {config.group_names}"
        )
    return space


def format_validation_error(exc: ValidationError) -> str:
    """One ``field.path: message`` per problem, joined with semicolons."""
    parts = []
    for error in exc.errors():
        location = ".".join(str(item) for item in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{location}: {message}" if location else message)
    return "; ".join(parts)


def parse_study_config(data: Any) -> StudyConfig:
    """Validate a decoded configuration; `StudyConfigError` names each offending field."""
    if not isinstance(data, dict):
        raise StudyConfigError(f"a study configuration must be a table/object, got {type(data).__name__}")
    try:
        return StudyConfig.model_validate(data)
    except ValidationError as exc:
        raise StudyConfigError(format_validation_error(exc)) from None


def read_study_config_file(path: str | Path) -> Any:
    """The raw contents of a ``.json`` or ``.toml`` study configuration file (not yet validated)."""
    file = Path(path)
    suffix = file.suffix.lower()
    if suffix not in {".json", ".toml"}:
        raise StudyConfigError(f"{file}: a study configuration must be a .json or .toml file")
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise StudyConfigError(f"{file}: cannot read: {exc.strerror or exc}") from None
    if suffix == ".json":
        try:
            return decode_json(raw)
        except JSONInputError as exc:
            raise StudyConfigError(f"{file} {exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise StudyConfigError(f"{file}: not valid TOML: {exc}") from None
    return data


def load_study_config(path: str | Path) -> StudyConfig:
    """Read and validate a ``.json`` or ``.toml`` study configuration file."""
    data = read_study_config_file(path)
    try:
        return parse_study_config(data)
    except StudyConfigError as exc:
        raise StudyConfigError(f"{path}: {exc}") from None
