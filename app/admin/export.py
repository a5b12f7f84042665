"""Export and import: results (CSV/JSON, streamed), answer logs, replayable study archives.

Every result row carries the algorithm, its version and the SHA-256 of the study configuration. Rows are
produced one session at a time from a server-side cursor (``yield_per``), so a study with thousands of
sessions streams without being loaded into memory. Text cells that a spreadsheet would run as a formula
(starting with ``= + - @``, tab or carriage return) are prefixed with an apostrophe; numbers stay numbers.

A study archive (`study_archive`) holds the configuration, every session with its whole answer log (undone
answers and undo rows included), committed results and exclusions; `import_archive` loads it into another
database and replays every finished session, refusing an archive whose logs no longer reproduce their
metrics. Each session also exports as the ``elicitation-answer-log`` format that ``elicit replay`` reads.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson
from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from elicitation.families import get_family

from ..algorithms import get_algorithm
from ..charts.comparison import displayed_counts
from ..metric_views import stated_intervals
from ..models import (
    Answer,
    ElicitationSession,
    LogAction,
    Phase,
    Result,
    SessionStatus,
    Study,
    StudyControl,
    StudyStatus,
    as_utc,
)
from ..outcome import AGREEMENT_KEYS, agreement_interval
from ..panels import PanelConfig, preset_of
from ..sessions import SessionCache, StudyRuntime, study_runtime
from ..sessions.displayed import session_version
from ..sessions.replay import numeric_platform
from ..study_config import config_hash
from .archive import ARCHIVE_FORMAT, ARCHIVE_VERSION, parse_archive
from .auth import AdminError
from .models import Exclusion
from .monitor import verify_replay

__all__ = [
    "ARCHIVE_FORMAT",
    "approval_columns",
    "approval_rows",
    "csv_lines",
    "gunzip_chunks",
    "gzip_archive",
    "import_archive",
    "interval_cells",
    "interval_columns",
    "iso_utc",
    "neutralise",
    "panel_columns",
    "parquet_bytes",
    "replay_log",
    "result_columns",
    "result_rows",
    "study_archive",
    "study_archive_json",
]

#: Sessions fetched per round trip while streaming.
BATCH = 200
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> Any:
    """A text cell that a spreadsheet would evaluate gets a leading apostrophe; other values pass."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def iso_utc(moment: datetime | None) -> str | None:
    """ISO 8601 with the UTC offset; SQLite hands back naive datetimes, which are UTC by convention here."""
    aware = as_utc(moment)
    return None if aware is None else aware.isoformat()


def panel_columns(study: Study) -> list[str]:
    """One ``panel_<parameter>`` column per link parameter the study keeps (none without a panel)."""
    panel = study.config.get("panel") or {}
    return [f"panel_{name}" for name in panel.get("parameters", [])]


def result_columns(study: Study) -> list[str]:
    """The named columns of the study's result rows (they depend on classes, groups, panel and algorithm)."""
    config = study.config
    classes = list(config["class_names"])
    groups = list(config.get("group_names") or [])
    columns = [
        "study_id",
        "session_id",
        "participant_code",
        "completion_code",
        *panel_columns(study),
        "status",
        "pilot",
        "excluded",
        "exclusion_reason",
        "algorithm",
        "algorithm_version",
        "config_hash",
        "created_at",
        "consented_at",
        "finished_at",
        "duration_s",
        "num_queries",
        "metric_type",
    ]
    columns += get_algorithm(study.algorithm).algorithm.family.export_columns(classes, groups)
    columns.append("evaluation_pairs")
    for key in AGREEMENT_KEYS:
        columns += [f"agreement_{key}_pct", f"agreement_{key}_low_pct", f"agreement_{key}_high_pct"]
    # Not beside metric_type: readers take the columns right after it as the metric's coefficients.
    columns += ["checks_shown", "checks_passed", "ended_early_reason"]
    columns += interval_columns(classes, groups)
    return columns


def interval_columns(classes: list[str], groups: list[str]) -> list[str]:
    """The credible intervals of what a result's words state (`MetricWords.intervals`), low and high."""
    names = ["per_rate", *(f"per_person_{name}" for name in classes)]
    if groups:
        names.insert(0, "lam")
    return ["interval_level", *(f"interval_{name}_{end}" for name in names for end in ("low", "high"))]


def interval_cells(stated: dict[str, Any]) -> dict[str, float | None]:
    """The interval columns of one result from `stated_intervals` (empty without a posterior)."""
    intervals = stated["intervals"]
    flat = {key: value for key, value in intervals.items() if key != "per_person"}
    flat.update({f"per_person_{name}": pair for name, pair in intervals.get("per_person", {}).items()})
    cells: dict[str, float | None] = {"interval_level": stated["interval_level"]}
    for name, (low, high) in flat.items():
        cells[f"interval_{name}_low"], cells[f"interval_{name}_high"] = float(low), float(high)
    return cells


def agreement_cells(evaluation: dict[str, Any]) -> dict[str, float | None]:
    """Each agreement percentage with its 95 % Wilson interval (``_low_pct``, ``_high_pct``)."""
    cells: dict[str, float | None] = {}
    for key in AGREEMENT_KEYS:
        percent, low, high = agreement_interval(evaluation.get(key))
        cells[f"agreement_{key}_pct"] = percent
        cells[f"agreement_{key}_low_pct"] = low
        cells[f"agreement_{key}_high_pct"] = high
    return cells


def _metric_cells(study: Study, metric: dict[str, Any]) -> dict[str, Any]:
    config = study.config
    cells: dict[str, Any] = {"metric_type": metric.get("type")}
    if metric.get("type") == "failed":
        # The session ended early: its elicitor could not go on with these answers, for this reason.
        cells["ended_early_reason"] = str(metric.get("reason", ""))
        return cells
    family = get_family(str(metric["type"]))
    cells.update(
        family.export_cells(metric, list(config["class_names"]), list(config.get("group_names") or []))
    )
    return cells


def _excluded(db: Session, study: Study) -> dict[uuid.UUID, str]:
    statement = (
        select(Exclusion.session_id, Exclusion.reason)
        .join(ElicitationSession, Exclusion.session_id == ElicitationSession.id)
        .where(ElicitationSession.study_id == study.id, Exclusion.lifted_at.is_(None))
    )
    return {session_id: reason for session_id, reason in db.execute(statement)}


def _sessions_of(study: Study, include_pilots: bool) -> Any:
    """The condition on `ElicitationSession` of an export: the study's sessions, pilots only on request."""
    of_study = ElicitationSession.study_id == study.id
    return of_study if include_pilots else of_study & ElicitationSession.pilot.is_(False)


def result_rows(db: Session, study: Study, *, include_pilots: bool = False) -> Iterator[dict[str, Any]]:
    """One row per session (every status; excluded ones marked; pilots only with ``include_pilots``),
    streamed in creation order."""
    columns = result_columns(study)
    digest = config_hash(study.config)
    excluded = _excluded(db, study)
    runtime: StudyRuntime | None = None
    statement = (
        select(ElicitationSession, Result)
        .outerjoin(Result, Result.session_id == ElicitationSession.id)
        .where(_sessions_of(study, include_pilots))
        .order_by(ElicitationSession.created_at, ElicitationSession.id)
        .execution_options(yield_per=BATCH)
    )
    for session, result in db.execute(statement):
        row: dict[str, Any] = dict.fromkeys(columns)
        started = session.consented_at or session.created_at
        duration = None
        if session.finished_at is not None and started is not None:
            duration = round((as_utc(session.finished_at) - as_utc(started)).total_seconds(), 3)
        row.update(
            study_id=str(study.id),
            session_id=str(session.id),
            participant_code=session.participant_code,
            completion_code=session.completion_code,
            status=session.status,
            pilot=session.pilot,
            excluded=session.id in excluded,
            exclusion_reason=excluded.get(session.id),
            algorithm=session.algorithm,
            algorithm_version=session.algorithm_version,
            config_hash=digest,
            created_at=iso_utc(session.created_at),
            consented_at=iso_utc(session.consented_at),
            finished_at=iso_utc(session.finished_at),
            duration_s=duration,
        )
        for name, value in (session.panel or {}).items():
            if f"panel_{name}" in row:
                row[f"panel_{name}"] = value
        if result is not None:
            row["num_queries"] = result.num_queries
            row.update(_metric_cells(study, result.metric))
            evaluation = result.evaluation or {}
            row["evaluation_pairs"] = evaluation.get("pairs")
            row.update(agreement_cells(evaluation))
            checks = result.checks or {}
            kinds = [value for value in checks.values() if isinstance(value, dict)]
            row["checks_shown"] = sum(int(item.get("shown", 0)) for item in kinds)
            row["checks_passed"] = sum(int(item.get("passed", 0)) for item in kinds)
            runtime = runtime or study_runtime(study)
            stated = stated_intervals(runtime.words(result.metric, result.details))
            row.update((key, value) for key, value in interval_cells(stated).items() if key in row)
        yield row


#: The columns of the approval file that name a submission on each preset panel (the panel's own
#: parameter names, which its bulk approval matches); any other panel: its ID parameter.
APPROVAL_KEYS = {"prolific": ("PROLIFIC_PID",), "mturk": ("workerId", "assignmentId")}
_APPROVAL_TAIL = ["completion_code", "excluded", "exclusion_reason", "finished_at", "session_id"]


def _approval_keys(study: Study) -> tuple[str, ...]:
    config = study.config.get("panel")
    if not config:
        return ()
    preset = preset_of(PanelConfig.model_validate(config))
    if preset is not None:
        return APPROVAL_KEYS[preset]
    return (config["id_parameter"],) if config.get("id_parameter") else ()


def approval_columns(study: Study) -> list[str]:
    """The approval file's header: the panel's submission keys (Prolific's ``PROLIFIC_PID``, MTurk's
    ``workerId`` and ``assignmentId``; else the participant code), then the completion code."""
    return [*(_approval_keys(study) or ("participant_code",)), *_APPROVAL_TAIL]


def approval_rows(db: Session, study: Study) -> Iterator[dict[str, Any]]:
    """One row per finished session (only they were given a code; never a pilot), for approving panel
    submissions."""
    keys = _approval_keys(study)
    excluded = _excluded(db, study)
    statement = (
        select(ElicitationSession)
        .where(_sessions_of(study, False), ElicitationSession.status == SessionStatus.DONE.value)
        .order_by(ElicitationSession.finished_at, ElicitationSession.id)
        .execution_options(yield_per=BATCH)
    )
    for session in db.scalars(statement):
        link = session.panel or {}
        row: dict[str, Any] = (
            {key: link.get(key) for key in keys} if keys else {"participant_code": session.participant_code}
        )
        yield row | {
            "completion_code": session.completion_code,
            "excluded": session.id in excluded,
            "exclusion_reason": excluded.get(session.id),
            "finished_at": iso_utc(session.finished_at),
            "session_id": str(session.id),
        }


def csv_lines(columns: list[str], rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """CSV text, one line at a time (header first), with formula-neutralised text cells."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate(0)
        return text

    writer.writerow([neutralise(column) for column in columns])
    yield flush()
    for row in rows:
        writer.writerow(
            ["" if row.get(column) is None else neutralise(row.get(column)) for column in columns]
        )
        yield flush()


#: What a coordinator runs to get the Parquet downloads.
PARQUET_INSTALL = "pip install 'elicitation-studio[parquet]'"


def parquet_bytes(columns: list[str], rows: Iterator[dict[str, Any]]) -> bytes:
    """The rows as one Parquet file (the same columns and values as the CSV, with their types).

    Parquet needs the optional ``pyarrow`` package; without it this raises `AdminError` (501) naming the
    command that installs it, and the CSV and JSON exports stay available.
    """
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise AdminError(
            "Parquet downloads need the optional pyarrow package, which this server lacks "
            f"({PARQUET_INSTALL}); the CSV and JSON downloads have the same columns",
            status_code=501,
            code="parquet_unavailable",
        ) from None
    values: dict[str, list[Any]] = {column: [] for column in columns}
    for row in rows:
        for column in columns:
            values[column].append(row.get(column))
    table = pa.table({column: pa.array(cells) for column, cells in values.items()})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def json_lines(study: Study, rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    """A JSON document ``{"study": {...}, "results": [...]}`` produced row by row."""
    header = {
        "id": str(study.id),
        "name": study.name,
        "algorithm": study.algorithm,
        "algorithm_version": session_version(get_algorithm(study.algorithm)),
        "config_hash": config_hash(study.config),
    }
    yield '{"study": ' + json.dumps(header) + ', "results": ['
    first = True
    for row in rows:
        yield ("" if first else ", ") + json.dumps(row)
        first = False
    yield "]}\n"


ANSWER_LOG_COLUMNS = [
    "session_id",
    "participant_code",
    "seq",
    "action",
    "phase",
    "phase_index",
    "preferred",
    "swapped",
    "elicitor_answer",
    "tie_break",
    "undoes_seq",
    "undone",
    "check_type",
    "check_passed",
    "first_rates",
    "second_rates",
    "left_confusion",
    "right_confusion",
    "time_on_page_ms",
    "hidden_ms",
    "server_elapsed_ms",
    "channel",
    "created_at",
    "after_close",
]


def _cell_names(study: Study) -> list[str]:
    """``<true>_<predicted>`` per cell, prefixed by ``<group>_`` in a study with groups."""
    classes = [str(name) for name in study.config["class_names"]]
    groups = [str(name) for name in study.config.get("group_names") or []]
    cells = [f"{true}_{predicted}" for true in classes for predicted in classes]
    return [f"{group}_{cell}" for group in groups for cell in cells] if groups else cells


def answer_log_columns(study: Study) -> list[str]:
    """`ANSWER_LOG_COLUMNS`, then one column per confusion-matrix cell of each side of the question: as
    the participant saw it (``left_shown_...``, rounded the way the page rounds) and as computed
    (``left_computed_...``), out of 100 people (per group)."""
    cells = _cell_names(study)
    return ANSWER_LOG_COLUMNS + [
        f"{side}_{kind}_{cell}"
        for side in ("left", "right")
        for kind in ("shown", "computed")
        for cell in cells
    ]


def _confusion_cells(shown: dict[str, Any], names: list[str]) -> dict[str, float]:
    """The tidy cells of one logged question (none for rows that showed nothing, such as undo rows)."""
    if "left" not in shown or "right" not in shown:
        return {}
    computed = {side: np.asarray(shown[side]["confusion"], dtype=np.float64) for side in ("left", "right")}
    rounded = dict(
        zip(("left", "right"), displayed_counts(computed["left"], computed["right"])[:2], strict=True)
    )
    cells: dict[str, float] = {}
    for side in ("left", "right"):
        for kind, values in (("shown", rounded[side]), ("computed", computed[side])):
            flat = values.reshape(-1)
            if flat.shape[0] != len(names):
                return {}  # a log row of another shape (never written by this study): leave the cells out
            cells.update({f"{side}_{kind}_{name}": float(v) for name, v in zip(names, flat, strict=True)})
    return cells


def answer_log_rows(db: Session, study: Study, *, include_pilots: bool = False) -> Iterator[dict[str, Any]]:
    """Every log row of every session of the study (answers, undone answers and undo rows; pilots' only
    with ``include_pilots``).

    ``after_close`` marks rows recorded after the study was closed: closing stops enrolment, but sessions
    already under way may finish, and their later answers are kept, marked, rather than refused.
    """
    control = db.get(StudyControl, study.id)
    closed_at = as_utc(control.closed_at) if control is not None and control.closed_at else None
    statement = (
        select(Answer, ElicitationSession.participant_code)
        .join(ElicitationSession, Answer.session_id == ElicitationSession.id)
        .where(_sessions_of(study, include_pilots))
        .order_by(ElicitationSession.created_at, Answer.session_id, Answer.seq)
        .execution_options(yield_per=BATCH * 10)
    )
    names = _cell_names(study)
    for answer, code in db.execute(statement):
        query = answer.query or {}
        shown = answer.shown or {}
        yield _confusion_cells(shown, names) | {
            "session_id": str(answer.session_id),
            "participant_code": code,
            "seq": answer.seq,
            "action": answer.action,
            "phase": answer.phase,
            "phase_index": answer.phase_index,
            "preferred": answer.preferred,
            "swapped": answer.swapped,
            "elicitor_answer": answer.elicitor_answer,
            "tie_break": answer.tie_break,
            "undoes_seq": answer.undoes_seq,
            "undone": answer.undone_at is not None,
            "check_type": (answer.check or {}).get("type"),
            "check_passed": (answer.check or {}).get("passed"),
            "first_rates": json.dumps(query["first"]) if "first" in query else None,
            "second_rates": json.dumps(query["second"]) if "second" in query else None,
            "left_confusion": json.dumps(shown["left"]["confusion"]) if "left" in shown else None,
            "right_confusion": json.dumps(shown["right"]["confusion"]) if "right" in shown else None,
            "time_on_page_ms": answer.time_on_page_ms,
            "hidden_ms": answer.hidden_ms,
            "server_elapsed_ms": answer.server_elapsed_ms,
            "channel": answer.channel,
            "created_at": iso_utc(answer.created_at),
            "after_close": closed_at is not None and as_utc(answer.created_at) > closed_at,
        }


def replay_log(study: Study, session: ElicitationSession, rows: list[Answer]) -> dict[str, Any]:
    """The session in the ``elicitation-answer-log`` format of ``elicit replay`` (elicitor answers only)."""
    answers = []
    for row in rows:
        if row.action != LogAction.ANSWER.value or row.phase != Phase.ELICITATION.value:
            continue
        entry: dict[str, Any] = {"seq": row.seq, "answer": bool(row.elicitor_answer), "query": row.query}
        if row.undone_at is not None:
            entry["undone"] = True
        answers.append(entry)
    return {
        "format": "elicitation-answer-log",
        "version": 1,
        "algorithm": study.algorithm,
        "algorithm_version": session.algorithm_version,
        "params": study.config.get("algorithm_params", {}),
        "space": study.config.get("query_space"),
        "seed": session.seed,
        "study_id": str(study.id),
        "session_id": str(session.id),
        "config_hash": config_hash(study.config),
        "answers": answers,
    }


_ANSWER_FIELDS = (
    "seq",
    "action",
    "phase",
    "phase_index",
    "query",
    "shown",
    "swapped",
    "preferred",
    "elicitor_answer",
    "tie_break",
    "check",
    "time_on_page_ms",
    "hidden_ms",
    "server_elapsed_ms",
    "channel",
    "undoes_seq",
)
_RESULT_FIELDS = ("metric", "num_queries", "details", "evaluation", "checks", "summary")


def _archive_head(db: Session, study: Study) -> dict[str, Any]:
    control = db.get(StudyControl, study.id)
    return {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "exported_at": iso_utc(datetime.now(UTC)),
        "numerics": numeric_platform(),
        "study": {
            "id": str(study.id),
            "name": study.name,
            "config": study.config,
            "config_hash": config_hash(study.config),
            "algorithm": study.algorithm,
            "algorithm_version": session_version(get_algorithm(study.algorithm)),
            "expected_queries": study.expected_queries,
            "open_enrolment": study.open_enrolment,
            "created_at": iso_utc(study.created_at),
            "status": (control.status if control else StudyStatus.OPEN.value),
            "seconds_per_query": control.seconds_per_query if control else None,
        },
    }


def _archive_sessions(db: Session, study: Study) -> Iterator[dict[str, Any]]:
    """The study's sessions with logs, results and exclusions, `BATCH` sessions per round of queries."""
    ids = list(
        db.scalars(
            select(ElicitationSession.id)
            .where(ElicitationSession.study_id == study.id)
            .order_by(ElicitationSession.created_at, ElicitationSession.id)
        )
    )
    for start in range(0, len(ids), BATCH):
        batch = ids[start : start + BATCH]
        # Plain rows, not ORM objects: nothing to track, and the batch is gone once it is written out.
        sessions = {
            row.id: row
            for row in db.execute(
                select(*ElicitationSession.__table__.c).where(ElicitationSession.id.in_(batch))
            )
        }
        logs: dict[uuid.UUID, list[Any]] = {key: [] for key in batch}
        log = (
            select(*Answer.__table__.c)
            .where(Answer.session_id.in_(batch))
            .order_by(Answer.session_id, Answer.seq)
        )
        for row in db.execute(log):
            logs[row.session_id].append(row)
        results = {
            row.session_id: row
            for row in db.execute(select(*Result.__table__.c).where(Result.session_id.in_(batch)))
        }
        exclusions: dict[uuid.UUID, list[Any]] = {key: [] for key in batch}
        excluded = (
            select(*Exclusion.__table__.c).where(Exclusion.session_id.in_(batch)).order_by(Exclusion.id)
        )
        for row in db.execute(excluded):
            exclusions[row.session_id].append(row)
        for key in batch:
            yield _archive_session(study, sessions[key], logs[key], results.get(key), exclusions[key])


def _archive_session(
    study: Study, session: Any, rows: list[Any], result: Any, exclusions: list[Any]
) -> dict[str, Any]:
    return {
        "id": str(session.id),
        "token_hash": session.token_hash,
        "participant_code": session.participant_code,
        "seed": session.seed,
        "algorithm": session.algorithm,
        "algorithm_version": session.algorithm_version,
        "status": session.status,
        "completion_code": session.completion_code,
        "panel": session.panel,
        "created_at": iso_utc(session.created_at),
        "consented_at": iso_utc(session.consented_at),
        "finished_at": iso_utc(session.finished_at),
        "pilot": bool(session.pilot),
        "answers": [
            {
                **{name: getattr(row, name) for name in _ANSWER_FIELDS},
                "undone_at": iso_utc(row.undone_at),
                "created_at": iso_utc(row.created_at),
            }
            for row in rows
        ],
        "result": None
        if result is None
        else {
            **{name: getattr(result, name) for name in _RESULT_FIELDS},
            "created_at": iso_utc(result.created_at),
        },
        "exclusions": [
            {
                "reason": item.reason,
                "created_at": iso_utc(item.created_at),
                "lifted_at": iso_utc(item.lifted_at),
            }
            for item in exclusions
        ],
        "replay_log": replay_log(study, session, rows),
    }


def study_archive(db: Session, study: Study) -> dict[str, Any]:
    """Everything needed to re-run the study and replay every session offline, as one JSON object."""
    return {**_archive_head(db, study), "sessions": list(_archive_sessions(db, study))}


def study_archive_json(db: Session, study: Study) -> Iterator[bytes]:
    """`study_archive` as JSON, one session at a time (never the whole archive in memory)."""
    head = orjson.dumps({**_archive_head(db, study), "sessions": []})
    yield head[: -len(b"]}")]
    for index, session in enumerate(_archive_sessions(db, study)):
        yield (b"," if index else b"") + orjson.dumps(session)
    yield b"]}"


def gzip_archive(db: Session, study: Study) -> bytes:
    """The study archive as gzip-compressed JSON, compressed while it is written (fastest level: the
    archive is mostly numbers, where the higher levels buy little)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=1, mtime=0) as packed:
        for chunk in study_archive_json(db, study):
            packed.write(chunk)
    return buffer.getvalue()


def gunzip_chunks(packed: bytes, size: int = 1 << 16) -> Iterator[bytes]:
    """Decompress a stored archive piece by piece (for streaming it to a client)."""
    with gzip.GzipFile(fileobj=io.BytesIO(packed), mode="rb") as stream:
        while chunk := stream.read(size):
            yield chunk


#: On SQLite an import commits whenever its transaction has held the database's one write lock this long,
#: then pauses `IMPORT_PAUSE_S` so that waiting writers (participants' answers, in every study) get the
#: lock: both far below the 10 s busy timeout after which a waiting writer fails.
IMPORT_SLICE_S = 0.25
#: Longer than SQLite's longest retry interval (100 ms), so a writer waiting for the lock always sees it free.
IMPORT_PAUSE_S = 0.15


@dataclass
class _ImportedSession:
    """One archived session as rows ready to insert, its replay already verified."""

    session: dict[str, Any]
    answers: list[dict[str, Any]]
    result: dict[str, Any] | None
    exclusions: list[dict[str, Any]]


def import_archive(
    db: Session, cache: SessionCache, archive: Any, *, owner_id: int | None = None
) -> tuple[Study, int]:
    """Load a study archive into this database; every session must replay, finished ones to their metric.

    Every field is validated and every session replayed before the first write (`app.admin.archive`), so
    a refused archive leaves no trace; returns the study and the number of sessions verified against a
    committed result. The writing is `_write_import`'s: on SQLite in short transactions, so other
    studies' participants keep answering meanwhile.
    """
    parsed, config = parse_archive(archive)
    data = parsed.study
    if config.model_dump(mode="json") != data.config or config_hash(data.config) != data.config_hash:
        raise AdminError("the archive's configuration does not match its hash", status_code=422)
    if db.get(Study, data.id) is not None:
        raise AdminError(
            "a study with this id exists in this database already", status_code=409, code="exists"
        )
    session_ids = [item.id for item in parsed.sessions]
    token_hashes = [item.token_hash for item in parsed.sessions]
    if len(set(session_ids)) != len(session_ids) or len(set(token_hashes)) != len(token_hashes):
        raise AdminError("the archive lists a session twice", status_code=422)
    if _existing_sessions(db, session_ids, token_hashes):
        raise AdminError(
            "sessions of this archive exist in this database already", status_code=409, code="exists"
        )
    db.rollback()  # end the read transaction: nothing of this request is held while the sessions replay
    study = Study(
        id=data.id,
        name=data.name,
        config=data.config,
        algorithm=data.algorithm,
        expected_queries=data.expected_queries,
        open_enrolment=data.open_enrolment,
        created_at=data.created_at,
    )
    prepared: list[_ImportedSession] = []
    verified = 0
    try:
        for item in parsed.sessions:
            fields = item.model_dump(mode="python", exclude={"answers", "result", "exclusions"})
            session = {**fields, "study_id": study.id, "status": item.status.value}
            answers = [{**entry.model_dump(mode="python"), "session_id": item.id} for entry in item.answers]
            result = None
            if item.result is not None:
                result = {**item.result.model_dump(mode="python"), "session_id": item.id}
            check = verify_replay(
                cache,
                study,
                [Answer(**row) for row in answers],
                None if result is None else Result(**result),
                seed=item.seed,
                version=item.algorithm_version,
            )
            if not check["ok"]:
                raise AdminError(
                    f"session {item.id}: {check['message']}{_elsewhere(parsed.numerics, check['message'])}",
                    status_code=422,
                    code="replay",
                )
            verified += result is not None
            exclusions = [
                {**exclusion.model_dump(mode="python"), "session_id": item.id}
                for exclusion in item.exclusions
            ]
            prepared.append(_ImportedSession(session, answers, result, exclusions))
    finally:
        cache.clear()
    _write_import(db, study, owner_id, data.status.value, data.seconds_per_query, prepared)
    return study, verified


def _elsewhere(numerics: str | None, refusal: str) -> str:
    """What a ``refusal`` of a session's replay may owe to the computer the archive came from, when the
    archive says which library that computed with (this computer's is named unless the refusal does)."""
    here = numeric_platform()
    if numerics is None or numerics == here:
        return ""
    ours = "" if here in refusal else f", this one with {here}"
    return (
        f". The archive was made on a server that computed with {numerics}{ours}: the active elicitors "
        "replay exactly only on a computer with the same numerical library and CPU family, so import it "
        "on one"
    )


def _write_import(
    db: Session,
    study: Study,
    owner_id: int | None,
    status: str,
    seconds_per_query: float | None,
    sessions: list[_ImportedSession],
) -> None:
    """Insert a verified import. On SQLite (one write lock for the whole database) the rows go in
    transactions of at most about `IMPORT_SLICE_S`, with the study kept a draft (nobody can join it)
    until its last session is in; elsewhere in one transaction. If a write fails, what was written is
    removed again."""
    sliced = db.get_bind().dialect.name == "sqlite"
    db.add(study)
    db.add(
        StudyControl(
            study_id=study.id,
            owner_id=owner_id,
            status=StudyStatus.DRAFT.value if sliced else status,
            seconds_per_query=seconds_per_query,
            updated_at=datetime.now(UTC),
        )
    )
    try:
        db.flush()
        began = time.monotonic()
        for model, rows in _import_statements(sessions):
            db.execute(insert(model), rows)
            if sliced and time.monotonic() - began > IMPORT_SLICE_S:
                db.commit()
                time.sleep(IMPORT_PAUSE_S)
                began = time.monotonic()
        if sliced:
            db.execute(update(StudyControl).where(StudyControl.study_id == study.id).values(status=status))
        db.commit()
    except BaseException as exc:
        db.rollback()
        if sliced:
            _remove_import(db, study.id)
        if isinstance(exc, IntegrityError):
            raise AdminError(f"the archive does not fit this database: {exc.orig}", status_code=422) from None
        raise


def _import_statements(sessions: list[_ImportedSession]) -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """An import's inserts in order, none of more than `BATCH` answers (a long session goes in pieces,
    so no single statement holds the lock for long)."""
    for item in sessions:
        yield ElicitationSession, [item.session]
        for start in range(0, len(item.answers), BATCH):
            yield Answer, item.answers[start : start + BATCH]
        if item.result is not None:
            yield Result, [item.result]
        if item.exclusions:
            yield Exclusion, item.exclusions


def _remove_import(db: Session, study_id: uuid.UUID) -> None:
    """Delete what a failed sliced import had committed (its study, sessions and their rows)."""
    sessions = select(ElicitationSession.id).where(ElicitationSession.study_id == study_id)
    for model in (Answer, Result, Exclusion):
        db.execute(delete(model).where(model.session_id.in_(sessions)))
    db.execute(delete(ElicitationSession).where(ElicitationSession.study_id == study_id))
    db.execute(delete(StudyControl).where(StudyControl.study_id == study_id))
    db.execute(delete(Study).where(Study.id == study_id))
    db.commit()


def _existing_sessions(db: Session, session_ids: list[uuid.UUID], token_hashes: list[str]) -> bool:
    for start in range(0, len(session_ids), BATCH):
        ids = session_ids[start : start + BATCH]
        hashes = token_hashes[start : start + BATCH]
        clash = select(ElicitationSession.id).where(
            ElicitationSession.id.in_(ids) | ElicitationSession.token_hash.in_(hashes)
        )
        if db.scalars(clash.limit(1)).first() is not None:
            return True
    return False
