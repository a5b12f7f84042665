"""The new-study form of the back office: form fields <-> a study configuration dict.

Every default comes from one source: `StudyConfig`'s field defaults (the algorithm left at
"recommended" is the study's recommended elicitor for its groups), the chosen algorithm's parameter model
(the searches' tolerance ``epsilon``; the active elicitors stop on their own rule and take none from the
form) and the core's default question-region radius. A field left empty takes that default; the advanced
JSON box, when filled, replaces the whole form.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from elicitation.rates import DEFAULT_SYNTHETIC_RADIUS

from ..algorithms import REGISTRY
from ..errors import ConflictError
from ..i18n import LANGUAGES
from ..json_input import JSONInputError, decode_json
from ..models import Study, StudyControl
from ..panels import PANEL_PRESETS
from ..planning import PlanCache, PlannerResult
from ..sessions import SessionCache
from ..study_config import StudyConfig, StudyConfigError, default_algorithm, parse_study_config
from . import studies
from .auth import AdminError, Principal

__all__ = [
    "BUNDLED_DATASETS",
    "CUSTOM_PANEL",
    "TOLERANCE_PARAM",
    "BundledDataset",
    "CsvUpload",
    "FormOutcome",
    "blank_form",
    "config_from_form",
    "dataset_choices",
    "form_from_config",
    "seconds_from_form",
    "submit_study_form",
    "with_csv_space",
]

#: The parameter the form's "Tolerance" field fills, for the algorithms that have it.
TOLERANCE_PARAM = "epsilon"
#: The panel choice whose parameters the form spells out (the others are `PANEL_PRESETS`' names).
CUSTOM_PANEL = "custom"
#: What the empty form suggests for the fields a study must fill in (examples, not defaults).
_EXAMPLES = {"class_names": "benign, malignant", "population": "patients"}


@dataclass(frozen=True)
class BundledDataset:
    """A dataset shipped with the lab, as the form's picker describes it (checked against the data by
    tests/admin/test_admin_study_form_datasets.py)."""

    name: str  # `elicitation.lab.datasets.load_dataset`'s name
    title: str
    classes: tuple[str, ...]
    groups: tuple[str, ...]  # the protected attribute's groups; empty without one
    rows: int


#: The datasets the picker offers (loading them to read their classes would cost seconds per process).
BUNDLED_DATASETS: tuple[BundledDataset, ...] = (
    BundledDataset("breast-cancer", "Breast cancer biopsies (Wisconsin)", ("benign", "malignant"), (), 683),
    BundledDataset(
        "adult", "Adult census income", ("income <=50K", "income >50K"), ("Female", "Male"), 45222
    ),
    BundledDataset(
        "default", "Credit card default (Taiwan)", ("no default", "default"), ("Male", "Female"), 30000
    ),
    BundledDataset("iris", "Iris flowers", ("setosa", "versicolor", "virginica"), (), 150),
    BundledDataset("wine", "Wine cultivars", ("class_0", "class_1", "class_2"), (), 178),
    BundledDataset("vehicle", "Vehicle silhouettes", ("bus", "opel", "saab", "van"), (), 846),
    BundledDataset("digits", "Handwritten digits", tuple(str(digit) for digit in range(10)), (), 1797),
)
_BY_DATASET = {item.name: item for item in BUNDLED_DATASETS}
#: The picker's value for a dataset with groups used without them.
_WITHOUT_GROUPS = ":without-groups"


def dataset_choices() -> list[tuple[str, str]]:
    """The picker's (value, label) pairs: each bundled dataset with its classes and size, and a dataset with
    groups once as a fairness study over them and once without."""
    choices = []
    for item in BUNDLED_DATASETS:
        about = f"{item.title}: classes {', '.join(item.classes)}; {item.rows:,} people"
        if item.groups:
            choices.append((item.name, f"{about}; groups {', '.join(item.groups)} (fairness study)"))
            choices.append((item.name + _WITHOUT_GROUPS, f"{about}; without groups"))
        else:
            choices.append((item.name, about))
    return choices


def _dataset_fields(choice: str) -> dict[str, Any]:
    """The configuration's query space, classes and groups for a picked bundled dataset."""
    name = choice.removesuffix(_WITHOUT_GROUPS)
    item = _BY_DATASET.get(name)
    if item is None:
        raise AdminError(f"dataset: unknown choice {choice!r}", status_code=422)
    groups = bool(item.groups) and not choice.endswith(_WITHOUT_GROUPS)
    return {
        "query_space": {"kind": "dataset", "recipe": {"dataset": name, "groups": groups, "seed": 0}},
        "class_names": list(item.classes),
        "group_names": list(item.groups) if groups else [],
    }


def _default(field: str) -> Any:
    """The `StudyConfig` default of ``field``."""
    return StudyConfig.model_fields[field].get_default(call_default_factory=True)


def _takes_tolerance(algorithm: str) -> bool:
    """Whether the algorithm has the form's search tolerance (the active ones stop on their own rule)."""
    spec = REGISTRY.get(algorithm)
    return spec is not None and TOLERANCE_PARAM in spec.params_model.model_fields


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _floats(value: str, field: str) -> list[float] | None:
    if not value.strip():
        return None
    try:
        return [float(part) for part in _split(value)]
    except ValueError:
        raise AdminError(f"{field}: give numbers separated by commas", status_code=422) from None


def _text(form: dict[str, Any], field: str) -> str:
    return str(form.get(field) or "").strip()


def blank_form() -> dict[str, Any]:
    """The empty new-study form: the configuration's defaults, examples where a study must choose."""
    return {
        "name": "",
        "task": "",
        "class_names": _EXAMPLES["class_names"],
        "group_names": "",
        "population": _EXAMPLES["population"],
        "language": _default("language"),
        "languages": [],
        "algorithm": "",
        "epsilon": "",
        "radius": DEFAULT_SYNTHETIC_RADIUS,
        "priors": "",
        "practice_queries": _default("practice_queries"),
        "checks": "on" if _default("checks") else "",
        "evaluation_queries": _default("evaluation_queries"),
        "consent_text": _default("consent_text"),
        "instructions_text": _default("instructions_text"),
        "panel": "",
        "panel_name": "",
        "panel_parameters": "",
        "panel_id_parameter": "",
        "panel_require_id": "",
        "completion_code": "",
        "redirect_url": "",
        "redirect_delay_seconds": _default("redirect_delay_seconds"),
        "frame_ancestors": "",
        "open_enrolment": "on" if _default("open_enrolment") else "",
        "resume_by_participant_code": "on" if _default("resume_by_participant_code") else "",
        "config_json": "",
        "seconds_per_query": "",
        "dataset": "",
        "label_column": "",
        "group_column": "",
    }


def config_from_form(form: dict[str, Any]) -> dict[str, Any]:
    """A configuration dict from the study form (or from its advanced JSON box, which wins)."""
    advanced = _text(form, "config_json")
    if advanced:
        try:
            data = decode_json(advanced)
        except JSONInputError as exc:
            raise AdminError(f"configuration JSON {exc}", status_code=422) from None
        if not isinstance(data, dict):
            raise AdminError("configuration JSON: must be an object", status_code=422)
        return data
    config: dict[str, Any] = {
        "name": form.get("name", ""),
        "task": form.get("task", ""),
        "class_names": _split(str(form.get("class_names", ""))),
        "group_names": _split(str(form.get("group_names", ""))),
        "checks": form.get("checks") == "on",
        "open_enrolment": form.get("open_enrolment") == "on",
        "resume_by_participant_code": form.get("resume_by_participant_code") == "on",
        "frame_ancestors": _split(str(form.get("frame_ancestors", "")).replace("\n", ",")),
    }
    for field in ("population", "language", "algorithm", "consent_text", "instructions_text", "redirect_url"):
        if _text(form, field):
            config[field] = form[field]
    further = [code for code in LANGUAGES if form.get(f"also-{code}") == "on"]
    if further:
        config["languages"] = further
    if _text(form, "completion_code"):
        config["completion_code"] = _text(form, "completion_code")
    panel = _panel_from_form(form)
    if panel is not None:
        config["panel"] = panel
    space: dict[str, Any] = {"kind": "synthetic"}
    params: dict[str, Any] = {}
    try:
        if _text(form, "radius"):
            space["radius"] = float(_text(form, "radius"))
        tolerance = float(_text(form, "epsilon")) if _text(form, "epsilon") else None
        for field in ("practice_queries", "evaluation_queries", "redirect_delay_seconds"):
            if _text(form, field):
                config[field] = int(_text(form, field))
    except ValueError:
        raise AdminError(
            "radius, tolerance, the query counts and the redirect delay must be numbers", status_code=422
        ) from None
    priors = _floats(str(form.get("priors", "")), "class shares")
    if priors is not None:
        space["priors"] = priors
    if _text(form, "dataset"):
        picked = _dataset_fields(_text(form, "dataset"))
        space = picked.pop("query_space")
        config.update(picked)
    if tolerance is not None and _takes_tolerance(
        config.get("algorithm") or default_algorithm(config["group_names"])
    ):
        params[TOLERANCE_PARAM] = tolerance
    config["algorithm_params"] = params
    config["query_space"] = space
    return config


def _panel_from_form(form: dict[str, Any]) -> str | dict[str, Any] | None:
    """The configuration's ``panel``: a preset's name, the spelled-out custom one, or None."""
    choice = _text(form, "panel")
    if not choice:
        return None
    if choice != CUSTOM_PANEL:
        if choice not in PANEL_PRESETS:
            raise AdminError(f"panel: unknown choice {choice!r}", status_code=422)
        return choice
    panel: dict[str, Any] = {
        "parameters": _split(str(form.get("panel_parameters", ""))),
        "id_parameter": _text(form, "panel_id_parameter") or None,
        "require_id": form.get("panel_require_id") == "on",
    }
    if _text(form, "panel_name"):
        panel["name"] = _text(form, "panel_name")
    return panel


def _panel_fields(panel: dict[str, Any] | None) -> dict[str, Any]:
    """The form's panel fields for a stored ``panel`` (a preset shows as its name)."""
    if not panel:
        return {}
    for name, preset in PANEL_PRESETS.items():
        if preset.model_dump() == panel:
            return {"panel": name}
    return {
        "panel": CUSTOM_PANEL,
        "panel_name": panel.get("name", ""),
        "panel_parameters": ", ".join(panel.get("parameters", [])),
        "panel_id_parameter": panel.get("id_parameter") or "",
        "panel_require_id": "on" if panel.get("require_id") else "",
    }


def form_from_config(config: dict[str, Any]) -> dict[str, Any]:
    """The form showing a stored configuration (a dataset space goes to the advanced JSON box)."""
    space = config.get("query_space") or {}
    synthetic = space.get("kind", "synthetic") == "synthetic"
    algorithm = config.get("algorithm") or ""
    params = config.get("algorithm_params") or {}
    return {
        **blank_form(),
        "name": config.get("name", ""),
        "task": config.get("task", ""),
        "class_names": ", ".join(config.get("class_names", [])),
        "group_names": ", ".join(config.get("group_names", [])),
        "population": config.get("population", _default("population")),
        "language": config.get("language", _default("language")),
        "languages": list(config.get("languages", [])),
        "algorithm": algorithm,
        "epsilon": params.get(TOLERANCE_PARAM, "") if _takes_tolerance(algorithm) else "",
        "radius": space.get("radius", DEFAULT_SYNTHETIC_RADIUS),
        "priors": ", ".join(str(p) for p in space.get("priors", []) or []) if synthetic else "",
        "practice_queries": config.get("practice_queries", _default("practice_queries")),
        "checks": "on" if config.get("checks", _default("checks")) else "",
        "evaluation_queries": config.get("evaluation_queries", _default("evaluation_queries")),
        "consent_text": config.get("consent_text", _default("consent_text")),
        "instructions_text": config.get("instructions_text", _default("instructions_text")),
        **_panel_fields(config.get("panel")),
        "completion_code": config.get("completion_code") or "",
        "redirect_url": config.get("redirect_url") or "",
        "redirect_delay_seconds": config.get("redirect_delay_seconds", _default("redirect_delay_seconds")),
        "frame_ancestors": "\n".join(config.get("frame_ancestors") or []),
        "open_enrolment": "on" if config.get("open_enrolment", _default("open_enrolment")) else "",
        "resume_by_participant_code": "on"
        if config.get("resume_by_participant_code", _default("resume_by_participant_code"))
        else "",
        "config_json": "" if synthetic else json.dumps(config, indent=2),
    }


def with_csv_space(config: dict[str, Any], form: dict[str, Any], raw: bytes, filename: str) -> dict[str, Any]:
    """``config`` with the query space built from an uploaded CSV (classes and groups taken from it)."""
    space = studies.csv_dataset_space(
        raw,
        str(form.get("label_column", "")),
        str(form.get("group_column", "")) or None,
        name=filename,
    )
    return {
        **config,
        "query_space": space,
        "class_names": list(space["class_names"]),
        "group_names": list(space["group_names"]),
    }


def seconds_from_form(form: dict[str, Any]) -> float | None:
    """The planner's seconds per comparison (None when left empty: measured, else the planner's default)."""
    raw = _text(form, "seconds_per_query")
    if not raw:
        return None
    try:
        return float(raw)
    except ValueError:
        raise AdminError("seconds per comparison: give a number", status_code=422) from None


@dataclass(frozen=True)
class CsvUpload:
    """An uploaded dataset CSV: its bytes (at most one over the limit) and the client's file name."""

    raw: bytes
    filename: str


@dataclass(frozen=True)
class FormOutcome:
    """What submitting the form did: the study it saved, or the form to show again with its messages and,
    after planning, the plan."""

    saved: Study | None
    form: dict[str, Any]
    errors: tuple[str, ...] = ()
    plan: PlannerResult | None = None


def submit_study_form(
    db: Session,
    principal: Principal,
    form: dict[str, Any],
    *,
    study: Study | None,
    control: StudyControl | None,
    upload: CsvUpload | None,
    plans: PlanCache,
    sessions: SessionCache,
) -> FormOutcome:
    """Plan (``action=plan``) or save the form as a new study (``study`` None) or as ``study``'s new
    configuration; invalid input comes back with messages and stores nothing.

    With a dataset CSV the query space is built from it and stored whole in the configuration; after
    planning, the form keeps that configuration in its JSON box so the file need not be chosen again.
    """
    try:
        config_dict = config_from_form(form)
        if upload is not None and _text(form, "dataset") and not _text(form, "config_json"):
            raise AdminError(
                "dataset: pick a bundled dataset or upload a CSV file, not both", status_code=422
            )
        if upload is not None:
            config_dict = with_csv_space(config_dict, form, upload.raw, upload.filename)
        seconds = seconds_from_form(form)
        config = parse_study_config(config_dict)
    except (AdminError, StudyConfigError) as exc:
        message = exc.message if isinstance(exc, AdminError) else str(exc)
        return FormOutcome(saved=None, form=form, errors=tuple(message.split("; ")))
    if form.get("action") == "plan":
        if upload is not None:
            form = {**form, "config_json": json.dumps(config.model_dump(mode="json"), indent=2)}
        return FormOutcome(saved=None, form=form, plan=plans.plan(config, seconds_per_query=seconds))
    try:
        if study is None:
            study, _control = studies.create_study_for(db, principal, config, seconds_per_query=seconds)
        else:
            studies.edit_study(db, sessions, study, control, config, seconds_per_query=seconds)
    except (AdminError, ConflictError) as exc:
        return FormOutcome(saved=None, form=form, errors=(exc.message,))
    return FormOutcome(saved=study, form=form)
