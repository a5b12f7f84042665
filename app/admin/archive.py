"""The study archive as it is read back: every field typed, bounded and checked before anything is stored.

An archive comes from a file a coordinator uploads, so nothing in it is trusted: statuses must be known
values, numbers must fit their columns, texts their lengths, logged queries and displayed options must
have the study's shape and finite rates. `parse_archive` turns any problem into one `AdminError` (422)
whose message names the field (``sessions.3.answers.12.query.first``).
"""

from __future__ import annotations

import math
import uuid
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ..codec import CodecError, decode_metric
from ..models import AnswerChannel, LogAction, Phase, SessionStatus, StudyStatus
from ..outcome import AGREEMENT_KEYS
from ..planning import PLAUSIBLE_SECONDS
from ..study_config import StudyConfig, StudyConfigError, parse_study_config
from .auth import AdminError

__all__ = ["ARCHIVE_FORMAT", "ARCHIVE_VERSION", "ArchiveIn", "parse_archive"]

ARCHIVE_FORMAT = "elicitation-study-archive"
ARCHIVE_VERSION = 1
#: Columns are 32-bit integers on PostgreSQL (the seed a 64-bit one).
INT32 = 2**31 - 1
INT64 = 2**63 - 1

Int32 = Annotated[StrictInt, Field(ge=0, le=INT32)]
Text200 = Annotated[StrictStr, Field(max_length=200)]
Text50 = Annotated[StrictStr, Field(min_length=1, max_length=50)]
ParameterName = Annotated[StrictStr, Field(min_length=1, max_length=64)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


def _finite_array(value: Any, shape: tuple[int, ...], field: str) -> None:
    """``value`` is a nested list of finite numbers of exactly ``shape``."""
    if not shape:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"{field}: must be a finite number")
        return
    if not isinstance(value, list) or len(value) != shape[0]:
        raise ValueError(f"{field}: must be a list of {shape[0]}")
    for item in value:
        _finite_array(item, shape[1:], field)


class AnswerRowIn(_Strict):
    seq: Int32
    action: LogAction
    phase: Phase | None = None
    phase_index: Int32 | None = None
    query: dict[str, Any] | None = None
    shown: dict[str, Any] | None = None
    swapped: StrictBool | None = None
    preferred: Literal["first", "second", "tie"] | None = None
    elicitor_answer: StrictBool | None = None
    tie_break: StrictBool | None = None
    check: dict[str, Any] | None = None
    time_on_page_ms: Int32 | None = None
    hidden_ms: Int32 | None = None
    server_elapsed_ms: Int32 | None = None
    channel: AnswerChannel | None = None
    undoes_seq: Int32 | None = None
    undone_at: AwareDatetime | None = None
    created_at: AwareDatetime

    @field_validator("query")
    @classmethod
    def _query_shape(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        if value is not None:
            shape = _context_shape(info)
            for side in ("first", "second"):
                _finite_array(value.get(side), shape, f"query.{side}")
            for name in ("search", "kind"):
                if not isinstance(value.get(name, ""), str):
                    raise ValueError(f"query.{name}: must be text")
            if not isinstance(value.get("step", 0), int) or isinstance(value.get("step", 0), bool):
                raise ValueError("query.step: must be an integer")
        return value

    @field_validator("shown")
    @classmethod
    def _shown_shape(cls, value: dict[str, Any] | None, info: ValidationInfo) -> dict[str, Any] | None:
        if value is not None:
            shape = _context_shape(info)
            k = shape[-1]
            for side in ("left", "right"):
                option = value.get(side)
                if not isinstance(option, dict):
                    raise ValueError(f"shown.{side}: must be an object with rates and confusion")
                _finite_array(option.get("rates"), shape, f"shown.{side}.rates")
                _finite_array(option.get("confusion"), (*shape[:-1], k, k), f"shown.{side}.confusion")
        return value


Percent = Annotated[float, Field(ge=0.0, le=100.0, allow_inf_nan=False)]
Count = Annotated[StrictInt, Field(ge=0, le=INT32)]


class AgreementIn(_Strict):
    """One agreement measure of a result's evaluation, as the exports and the results page read it."""

    agreed: Count = 0
    decided: Count = 0
    ties: Count = 0
    percent: Percent | None = None
    interval_percent: tuple[Percent, Percent] | None = None

    @field_validator("interval_percent")
    @classmethod
    def _ordered(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and value[0] > value[1]:
            raise ValueError("interval_percent: the low end is above the high end")
        return value

    @field_validator("decided")
    @classmethod
    def _decided(cls, value: int, info: ValidationInfo) -> int:
        if value < info.data.get("agreed", 0):
            raise ValueError("decided: fewer pairs decided than agreed")
        return value


class CheckCountsIn(_Strict):
    """One kind of check of a result (`app.outcome.check_summary`): how many were shown and passed."""

    shown: Count = 0
    passed: Count = 0

    @field_validator("passed")
    @classmethod
    def _passed(cls, value: int, info: ValidationInfo) -> int:
        if value > info.data.get("shown", 0):
            raise ValueError("passed: more checks passed than shown")
        return value


def _validate_part(model: type[BaseModel], value: Any, path: str) -> None:
    """Validate one nested part of a result; a `ValueError` names its first problem by its full path."""
    try:
        model.model_validate(value)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise ValueError(f"{path}.{where}: {problem['msg']}") from None


class ResultIn(_Strict):
    metric: dict[str, Any]
    num_queries: Int32
    details: dict[str, Any]
    evaluation: dict[str, Any]
    checks: dict[str, Any]
    summary: Annotated[StrictStr, Field(max_length=100_000)]
    created_at: AwareDatetime

    @field_validator("evaluation")
    @classmethod
    def _evaluation(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key in AGREEMENT_KEYS:
            if value.get(key) is not None:
                if not isinstance(value[key], dict):
                    raise ValueError(f"evaluation.{key}: must be an object")
                _validate_part(AgreementIn, value[key], f"evaluation.{key}")
        return value

    @field_validator("checks")
    @classmethod
    def _checks(cls, value: dict[str, Any]) -> dict[str, Any]:
        # The exports add up every kind's counts: each object-valued entry is one kind of check.
        for kind, counts in value.items():
            if kind == "all_passed":
                if not isinstance(counts, bool):
                    raise ValueError("checks.all_passed: must be true or false")
                continue
            if not isinstance(counts, dict):
                raise ValueError(f"checks.{kind}: must be an object with shown and passed counts")
            _validate_part(CheckCountsIn, counts, f"checks.{kind}")
        return value

    @field_validator("metric")
    @classmethod
    def _metric(cls, value: dict[str, Any]) -> dict[str, Any]:
        if value.get("type") == "failed":
            return value
        try:
            decode_metric(value)
        except CodecError as exc:
            raise ValueError(str(exc)) from None
        return value


class ExclusionIn(_Strict):
    reason: Annotated[StrictStr, Field(min_length=1, max_length=2000)]
    created_at: AwareDatetime
    lifted_at: AwareDatetime | None = None


class SessionIn(_Strict):
    id: uuid.UUID
    token_hash: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
    participant_code: Text200 | None = None
    seed: Annotated[StrictInt, Field(ge=0, le=INT64)]
    algorithm: Text50
    algorithm_version: Text50
    status: SessionStatus
    completion_code: Annotated[StrictStr, Field(max_length=32)] | None = None
    panel: Annotated[dict[ParameterName, Text200], Field(max_length=10)] | None = None
    created_at: AwareDatetime
    consented_at: AwareDatetime | None = None
    finished_at: AwareDatetime | None = None
    pilot: StrictBool = False
    answers: list[AnswerRowIn] = Field(max_length=100_000)
    result: ResultIn | None = None
    exclusions: list[ExclusionIn] = Field(default_factory=list, max_length=1000)

    @field_validator("answers")
    @classmethod
    def _sequence(cls, value: list[AnswerRowIn]) -> list[AnswerRowIn]:
        if [row.seq for row in value] != list(range(len(value))):
            raise ValueError("log rows must be numbered 0, 1, 2, ... without gaps or repeats")
        return value


class StudyIn(_Strict):
    id: uuid.UUID
    name: Annotated[StrictStr, Field(min_length=1, max_length=200)]
    config: dict[str, Any]
    config_hash: Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
    algorithm: Text50
    expected_queries: Annotated[StrictInt, Field(ge=1, le=INT32)]
    open_enrolment: StrictBool
    created_at: AwareDatetime
    status: StudyStatus = StudyStatus.OPEN
    seconds_per_query: (
        Annotated[
            float,
            Field(ge=PLAUSIBLE_SECONDS[0], le=PLAUSIBLE_SECONDS[1], allow_inf_nan=False, strict=True),
        ]
        | None
    ) = None


class ArchiveIn(_Strict):
    format: Literal["elicitation-study-archive"]
    version: Literal[1]
    numerics: Text200 | None = None
    study: StudyIn
    sessions: list[SessionIn] = Field(max_length=1_000_000)


def _context_shape(info: ValidationInfo) -> tuple[int, ...]:
    shape: tuple[int, ...] = (info.context or {})["rates_shape"]
    return shape


def rates_shape(config: StudyConfig) -> tuple[int, ...]:
    """The shape of one option's rates in a study: ``(k,)``, or ``(m, k)`` with groups."""
    k = len(config.class_names)
    return (len(config.group_names), k) if config.group_names else (k,)


def _message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
    return "invalid archive: " + "; ".join(parts)


def parse_archive(data: Any) -> tuple[ArchiveIn, StudyConfig]:
    """The validated archive and its study configuration, or `AdminError` (422) naming the first problems."""
    if not isinstance(data, dict) or data.get("format") != ARCHIVE_FORMAT:
        raise AdminError(f"not a study archive (format must be {ARCHIVE_FORMAT!r})", status_code=422)
    if data.get("version") != ARCHIVE_VERSION:
        raise AdminError(f"unsupported archive version {data.get('version')!r}", status_code=422)
    study = data.get("study")
    try:
        config = parse_study_config(study.get("config") if isinstance(study, dict) else None)
    except StudyConfigError as exc:
        raise AdminError(f"invalid archive: study.config: {exc}", status_code=422) from None
    try:
        archive = ArchiveIn.model_validate(data, context={"rates_shape": rates_shape(config)})
    except ValidationError as exc:
        raise AdminError(_message(exc), status_code=422) from None
    if archive.study.algorithm != config.algorithm:
        raise AdminError("invalid archive: study.algorithm differs from its configuration", status_code=422)
    return archive, config
