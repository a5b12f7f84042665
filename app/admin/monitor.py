"""Monitoring: per-study dashboard numbers and per-session detail, as plain data plus Plotly figure dicts.

Everything here is read-only and derived from the answer log and the committed results (the log is the
truth). Figures are JSON-safe dicts that the templates embed as ``application/json`` and
``static/js/charts.js`` draws with the locally served plotly.js.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from elicitation import Done, ElicitationError, Sphere

from .. import repository as repo
from ..algorithms import get_algorithm
from ..charts import monitor as monitor_charts
from ..charts.inert import inert_figure
from ..codec import decode_metric, encode_metric
from ..explain import MetricWords
from ..metric_views import coordinator_figures
from ..models import (
    Answer,
    ElicitationSession,
    LogAction,
    Phase,
    Result,
    SessionStatus,
    Study,
    as_utc,
    utcnow,
)
from ..outcome import accuracy_baseline, agreement_interval
from ..planning import comparison_ms, measured_seconds_per_query
from ..sessions import (
    Failed,
    SessionCache,
    SessionProgress,
    effective_rows,
    elicitor_rows,
    replay_verified,
    session_progress,
)
from ..study_config import StudyConfig, build_space
from .models import Exclusion

__all__ = [
    "IDLE_ALERT_MIN",
    "LIVE_SESSIONS",
    "PROGRESS_REPLAY_BUDGET_S",
    "STOPPED_AFTER_MIN",
    "UNDO_ALERT",
    "ElicitedMetric",
    "SessionDetail",
    "StudyDashboard",
    "included_metrics",
    "session_detail",
    "study_dashboard",
    "verify_replay",
]

#: A session with at least this many undos is listed as possibly inconsistent.
UNDO_ALERT = 3
#: An answering session quiet for this long is marked as possibly abandoned on the dashboard.
IDLE_ALERT_MIN = 10
#: A session that consented, has not finished and gave no answer for this long counts as stopped (the
#: drop-off chart); people reading, or away for a call, are usually back well within it.
STOPPED_AFTER_MIN = 30
#: The dashboard lists this many of the latest sessions.
LIVE_SESSIONS = 200
#: What the coordinator reads for the stage of the last recorded answer (checks count as questions:
#: participants are not told which pairs are checks, and the coordinator's list should not single them out).
_STAGES = {
    Phase.PRACTICE.value: "practice",
    Phase.ELICITATION.value: "questions",
    Phase.CHECK.value: "questions",
    Phase.EVALUATION.value: "evaluation pairs",
}
#: What the dashboard calls each session status (the dashboard's counters and its chart say "answering").
STATUS_WORDS = {
    SessionStatus.INVITED.value: "invited",
    SessionStatus.ACTIVE.value: "answering",
    SessionStatus.DONE.value: "done",
}
#: Answers-per-minute chart window.
RATE_WINDOW_MIN = 60
#: Seconds a dashboard computation may spend replaying sessions to learn their own expected totals.
PROGRESS_REPLAY_BUDGET_S = 0.5


def _ago(minutes: float) -> str:
    """A time span as a coordinator glances at it: "just now", "4 min ago", "2 h ago", "3 days ago"."""
    if minutes < 1:
        return "just now"
    if minutes < 60:
        return f"{int(minutes)} min ago"
    if minutes < 48 * 60:
        return f"{int(minutes // 60)} h ago"
    return f"{int(minutes // (24 * 60))} days ago"


@dataclass
class StudyDashboard:
    """Numbers, the latest sessions' progress and the figures of the live dashboard."""

    by_status: dict[str, int]
    excluded: int
    #: Pilot sessions (coordinators trying the study), counted nowhere else on the dashboard.
    pilots: int
    #: Unfinished sessions without an answer for `STOPPED_AFTER_MIN` (counted in ``by_status`` as active).
    stopped: int
    answers_last_5_min: int
    answers_per_minute: float
    median_seconds_per_query: float | None
    #: People's time per comparison, as the planner prices the study with it (`planning.pace`).
    people_seconds_per_query: float | None
    inconsistent: list[dict[str, Any]]
    dropoff: dict[int, int]
    sessions: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    generated_at: datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "by_status": self.by_status,
            "excluded": self.excluded,
            "pilots": self.pilots,
            "stopped": self.stopped,
            "answers_last_5_min": self.answers_last_5_min,
            "answers_per_minute": self.answers_per_minute,
            "median_seconds_per_query": self.median_seconds_per_query,
            "people_seconds_per_query": self.people_seconds_per_query,
            "inconsistent": self.inconsistent,
            "dropoff": {str(key): value for key, value in sorted(self.dropoff.items())},
            "sessions": self.sessions,
        }

    def live(self) -> dict[str, Any]:
        """What the dashboard page polls: `to_dict` plus the figures and when it was computed."""
        moment = as_utc(self.generated_at)
        return {
            **self.to_dict(),
            "generated_at": moment.isoformat() if moment else None,
            "figures": [{"id": item["id"], "figure": inert_figure(item["figure"])} for item in self.figures],
        }


def _log_rows(db: Session, session_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[Any]]:
    rows: dict[uuid.UUID, list[Any]] = {key: [] for key in session_ids}
    if not session_ids:
        return rows
    statement = (
        select(
            Answer.session_id,
            Answer.seq,
            Answer.action,
            Answer.phase,
            Answer.undoes_seq,
            Answer.time_on_page_ms,
            Answer.server_elapsed_ms,
            Answer.check,
            Answer.created_at,
        )
        .join(ElicitationSession, Answer.session_id == ElicitationSession.id)
        .where(ElicitationSession.id.in_(session_ids))
        .order_by(Answer.session_id, Answer.seq)
    )
    for row in db.execute(statement):
        rows[row.session_id].append(row)
    return rows


def study_dashboard(
    db: Session, cache: SessionCache, study: Study, *, now: datetime | None = None
) -> StudyDashboard:
    """Participants by status, answer rate, median time per comparison, where people stopped and warning
    signs, and the latest sessions' progress, each against its own expected total where it is at hand.

    Pilot sessions are listed (marked) but counted in none of the numbers or charts.
    """
    now = now or utcnow()
    sessions = list(db.scalars(select(ElicitationSession).where(ElicitationSession.study_id == study.id)))
    people = [session for session in sessions if not session.pilot]
    ids = [session.id for session in sessions]
    logs = _log_rows(db, ids)
    results = (
        {result.session_id: result for result in db.scalars(select(Result).where(Result.session_id.in_(ids)))}
        if ids
        else {}
    )
    excluded = (
        {
            row.session_id
            for row in db.scalars(
                select(Exclusion).where(Exclusion.session_id.in_(ids), Exclusion.lifted_at.is_(None))
            )
        }
        if ids
        else set()
    )
    by_status = Counter(session.status for session in people)
    times: list[int] = []
    minute_counts: Counter[int] = Counter()
    recent = 0
    dropoff: Counter[int] = Counter()
    inconsistent = []
    for session in people:
        rows = logs[session.id]
        answers = [row for row in rows if row.action == LogAction.ANSWER.value]
        for row in answers:
            value = comparison_ms(row)
            if value is not None:
                times.append(value)
            created = as_utc(row.created_at)
            if created is not None:
                age_min = int((now - created).total_seconds() // 60)
                if 0 <= age_min < RATE_WINDOW_MIN:
                    minute_counts[age_min] += 1
                if now - created <= timedelta(minutes=5):
                    recent += 1
        if _stopped(session, rows, now):
            dropoff[len(effective_rows(rows))] += 1
        reasons = []
        undos = sum(1 for row in rows if row.action == LogAction.UNDO.value)
        if undos >= UNDO_ALERT:
            reasons.append(f"{undos} answers reversed")
        failed_checks = [
            row.check.get("type", "check")
            for row in answers
            if row.phase == Phase.CHECK.value and row.check and not row.check.get("passed")
        ]
        for kind in sorted(set(failed_checks)):
            reasons.append(f"failed {kind} check")
        result = results.get(session.id)
        if result is not None and result.metric.get("type") == "failed":
            reasons.append("ended early, no metric: " + str(result.metric.get("reason", ""))[:120])
        if reasons:
            inconsistent.append(
                {
                    "session_id": str(session.id),
                    "participant_code": session.participant_code,
                    "status": session.status,
                    "excluded": session.id in excluded,
                    "reasons": reasons,
                }
            )
    median_s = statistics.median(times) / 1000.0 if times else None
    latest = sorted(sessions, key=lambda item: as_utc(item.created_at) or now, reverse=True)[:LIVE_SESSIONS]
    progress = _progress_of(db, cache, latest, logs, now)
    runtime = cache.runtime(study)
    upper_bound = runtime.spec.seeded
    typical_total = runtime.plan(0).estimated_total(0, runtime.expected_queries, False)
    # A participant code shared by several sessions: one person started twice (or a code was reused).
    codes = Counter(session.participant_code for session in people if session.participant_code)
    session_rows = [
        {
            **_session_progress(
                session, logs[session.id], progress[session.id], upper_bound, session.id in excluded, now
            ),
            "duplicate_code": codes[session.participant_code] > 1 if session.participant_code else False,
        }
        for session in latest
    ]
    per_minute = [minute_counts.get(RATE_WINDOW_MIN - 1 - i, 0) for i in range(RATE_WINDOW_MIN)]
    statuses = [status.value for status in SessionStatus]
    counts = {status: by_status.get(status, 0) for status in statuses}
    stopped = sum(dropoff.values())
    # The chart splits the active sessions as the numbers above it do: still answering, or stopped.
    shown = {
        STATUS_WORDS[SessionStatus.INVITED.value]: counts[SessionStatus.INVITED.value],
        STATUS_WORDS[SessionStatus.ACTIVE.value]: counts[SessionStatus.ACTIVE.value] - stopped,
        "stopped": stopped,
        STATUS_WORDS[SessionStatus.DONE.value]: counts[SessionStatus.DONE.value],
    }
    figures = [
        monitor_charts.status_figure(shown, len(excluded)),
        monitor_charts.answer_rate_figure(per_minute),
        monitor_charts.dropoff_figure(dropoff, typical_total, STOPPED_AFTER_MIN),
    ]
    return StudyDashboard(
        by_status=counts,
        excluded=len(excluded),
        pilots=len(sessions) - len(people),
        stopped=stopped,
        answers_last_5_min=recent,
        answers_per_minute=recent / 5.0,
        median_seconds_per_query=median_s,
        people_seconds_per_query=measured_seconds_per_query(db, study.id),
        inconsistent=inconsistent,
        dropoff=dict(dropoff),
        sessions=session_rows,
        figures=figures,
        generated_at=now,
    )


def _last_activity(session: ElicitationSession, rows: list[Any], now: datetime) -> datetime:
    """The latest answer, undo, consent or creation of ``session``."""
    moments = [as_utc(row.created_at) for row in rows]
    candidates = [*moments, as_utc(session.consented_at), as_utc(session.created_at)]
    return max([moment for moment in candidates if moment] or [now])


def _stopped(session: ElicitationSession, rows: list[Any], now: datetime) -> bool:
    """Whether ``session`` consented, has not finished, and gave no answer for `STOPPED_AFTER_MIN`."""
    if session.status != SessionStatus.ACTIVE.value:
        return False
    return now - _last_activity(session, rows, now) >= timedelta(minutes=STOPPED_AFTER_MIN)


def _duration_words(seconds: float) -> str:
    """A session's length as a coordinator reads it: "45 s", "12 min", "1 h 05 min"."""
    if seconds < 60:
        return f"{int(seconds)} s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def _progress_of(
    db: Session,
    cache: SessionCache,
    sessions: list[ElicitationSession],
    logs: dict[uuid.UUID, list[Any]],
    now: datetime,
) -> dict[uuid.UUID, SessionProgress]:
    """Each session's progress against its own expected total (`sessions.session_progress`).

    What this process noted while serving a session costs nothing; a session it has not served at its
    current point is replayed, most recently active first, until `PROGRESS_REPLAY_BUDGET_S` is spent (the
    dashboard polls every few seconds); the rest show the study's typical total until a later poll.
    """
    order = sorted(sessions, key=lambda item: _last_activity(item, logs[item.id], now), reverse=True)
    deadline = time.monotonic() + PROGRESS_REPLAY_BUDGET_S
    return {
        session.id: session_progress(
            db, cache, session, logs[session.id], may_replay=time.monotonic() < deadline
        )
        for session in order
    }


def _session_progress(
    session: ElicitationSession,
    rows: list[Any],
    progress: SessionProgress,
    upper_bound: bool,
    excluded: bool,
    now: datetime,
) -> dict[str, Any]:
    """One row of the dashboard's session list: answers given of about how many, stage, last activity.

    The total is the session's own estimate (as its participant's progress bar shows it) when at hand;
    otherwise the study's typical session, which for the active elicitors is their question budget, so
    it reads "at most".
    """
    answered = progress.answered
    status = session.status
    last = _last_activity(session, rows, now)
    idle_min = max(0.0, (now - last).total_seconds() / 60.0)
    finished = as_utc(session.finished_at)
    started = as_utc(session.consented_at)
    # Consent to the last answer (finished) or to the latest activity (still under way), as exported.
    ended = finished if finished is not None else last
    duration = (ended - started).total_seconds() if started is not None else None
    total = progress.estimated_total
    stage = {
        SessionStatus.INVITED.value: "not started",
        SessionStatus.DONE.value: "finished",
    }.get(status)
    if stage is None:
        phases = [row.phase for row in effective_rows(rows)]
        stage = _STAGES.get(phases[-1], "questions") if phases else "consented"
    return {
        "session_id": str(session.id),
        "participant_code": session.participant_code,
        "status": status,
        "pilot": session.pilot,
        "excluded": excluded,
        "answered": answered,
        "estimated_total": total,
        "own_estimate": progress.own,
        "total_words": "about" if progress.own or not upper_bound else "at most",
        "percent": round(100.0 * answered / total) if total else 0,
        "stage": stage,
        "created_at": (as_utc(session.created_at) or now).isoformat(),
        "last_activity_at": last.isoformat(),
        "last_activity": _ago(idle_min),
        "idle": status == SessionStatus.ACTIVE.value and idle_min >= IDLE_ALERT_MIN,
        "finished_at": finished.isoformat() if finished else None,
        "duration_s": None if duration is None else round(max(0.0, duration), 3),
        "duration": None if duration is None else _duration_words(max(0.0, duration)),
        "stopped": _stopped(session, rows, now),
    }


def verify_replay(
    cache: SessionCache,
    study: Study,
    rows: list[Any],
    result: Result | None,
    *,
    seed: int,
    version: str | None = None,
) -> dict[str, Any]:
    """Replay the session's elicitor answers offline-style and compare with the committed metric.

    ``seed`` and ``version`` are the session's: the active elicitors ask different queries without the
    seed, and sessions recorded before display snapping replay their exact queries.
    """
    runtime = cache.runtime(study)
    elicitation = elicitor_rows(effective_rows(rows))
    try:
        outcome = replay_verified(lambda: runtime.elicitor(seed, version), elicitation)
    except ElicitationError as exc:
        return {"ok": False, "message": f"the answers do not replay with this version of the app: {exc}"}
    if isinstance(outcome, Failed):
        # The answers did not determine a metric: consistent only if that is what was committed.
        recorded_failure = result is not None and result.metric.get("type") == "failed"
        verdict = "reproduces the recorded failure" if recorded_failure else "fails"
        return {"ok": recorded_failure, "message": f"replay {verdict}: {outcome.message}"}
    if not isinstance(outcome, Done):
        counted = len(elicitation)
        answers = "answer" if counted == 1 else "answers"
        return {
            "ok": True,
            "message": f"replays to the question on screen now after {counted} elicitation {answers}",
        }
    if result is None or result.metric.get("type") == "failed":
        return {"ok": True, "message": "replays to a metric; no result is committed yet"}
    replayed = encode_metric(outcome.result.metric)
    same = np.allclose(np.asarray(replayed["a"]), np.asarray(result.metric["a"]), atol=1e-9)
    return {
        "ok": bool(same),
        "message": "replay reproduces the committed metric" if same else "replay gives a different metric",
    }


@dataclass
class SessionDetail:
    """One session's log, checks, convergence and metric figures."""

    session: ElicitationSession
    rows: list[Answer]
    result: Result | None
    exclusions: list[Exclusion]
    replay_check: dict[str, Any]
    figures: list[dict[str, Any]]

    @staticmethod
    def rates(side: dict[str, Any] | None) -> str:
        """A shown classifier's rates for the log table: one per class in the study's order, to 3 decimals,
        separated by " / " (groups, when there are several, by "; ")."""
        if not side:
            return ""
        rates = np.atleast_2d(np.asarray(side["rates"], dtype=np.float64))
        return "; ".join(" / ".join(f"{rate:.3f}" for rate in row) for row in rates)


def _elicited_rows(rows: list[Answer]) -> list[Answer]:
    """The standing elicitation rows that carry their query (what the convergence chart draws)."""
    return [
        row
        for row in rows
        if row.phase == Phase.ELICITATION.value and row.query is not None and row.undone_at is None
    ]


def session_detail(
    db: Session, cache: SessionCache, study: Study, session: ElicitationSession
) -> SessionDetail:
    rows = list(repo.log_rows(db, session.id))
    result = db.scalars(select(Result).where(Result.session_id == session.id)).first()
    exclusions = list(
        db.scalars(select(Exclusion).where(Exclusion.session_id == session.id).order_by(Exclusion.created_at))
    )
    config = study.config
    class_names = list(config["class_names"])
    group_names = list(config.get("group_names") or [])
    convergence = monitor_charts.convergence_figure(_elicited_rows(rows))
    figures = [convergence] if convergence is not None else []
    if result is not None and result.metric.get("type") != "failed":
        figures += coordinator_figures(result.metric, class_names, group_names)
        evaluation = result.evaluation or {}
        names = [
            ("elicited", "elicited metric"),
            ("accuracy", "accuracy"),
            ("equal_weights", "equal weights"),
        ]
        values = [
            (label, *agreement_interval(evaluation.get(key)))
            for key, label in names
            if isinstance(evaluation.get(key), dict)
        ]
        if values:
            figures.append(monitor_charts.agreement_figure(values))
    replay_check = verify_replay(
        cache, study, rows, result, seed=session.seed, version=session.algorithm_version
    )
    return SessionDetail(
        session=session,
        rows=rows,
        result=result,
        exclusions=exclusions,
        replay_check=replay_check,
        figures=figures,
    )


def coefficient_labels(study: Study) -> dict[str, str]:
    """Export column -> what a coordinator reads ("weight: benign", "curvature: benign × malignant")."""
    config = study.config
    classes = [str(name) for name in config["class_names"]]
    groups = [str(name) for name in config.get("group_names") or []]
    labels = {f"a_{name}": f"weight: {name}" for name in classes}
    labels["lam"] = "share on equal treatment"
    for first in classes:
        for second in classes:
            labels[f"B_{first}_{second}"] = f"curvature: {first} × {second}"
            for u, group_u in enumerate(groups):
                for group_v in groups[u + 1 :]:
                    labels[f"B_{group_u}_{group_v}_{first}_{second}"] = (
                        f"gap penalty {group_u}–{group_v}: {first} × {second}"
                    )
    return labels


def coefficient_figures(study: Study, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Distribution of each elicited coefficient across included participants (a box per coefficient).

    Horizontal boxes with the coefficients named in words on the y axis: long names never get cut.
    """
    columns = [key for key in (rows[0] if rows else {}) if key.startswith(("a_", "B_", "lam"))]
    labels = coefficient_labels(study)
    coefficients = {
        labels.get(column, column): [
            row[column] for row in rows if isinstance(row.get(column), int | float) and not row["excluded"]
        ]
        for column in columns
    }
    agreement = [
        (
            row["participant_code"] or row["session_id"][:8],
            row["agreement_elicited_pct"],
            row.get("agreement_elicited_low_pct"),
            row.get("agreement_elicited_high_pct"),
        )
        for row in rows
        if row.get("agreement_elicited_pct") is not None
    ]
    return monitor_charts.coefficients_figures(coefficients, agreement)


#: Candidate classifiers the results page ranks with every participant's metric.
POOL_SIZE = 8
#: Fixed seed: every view of every study ranks the same kind of pool (drawn in the study's own sphere).
POOL_SEED = 20221
#: Pool points stay this fraction of the radius inside the query sphere.
POOL_MARGIN = 0.9


def candidate_pool(space: Any, region: Any = None) -> list[np.ndarray]:
    """The ``POOL_SIZE`` classifiers (rates, or group rates) every participant's metric ranks.

    On a real dataset without groups these are the dataset's own plug-in classifiers (their held-out
    rates), evenly spread over those at least as accurate as "everyone is the most common class" (when
    there are enough of them); otherwise seeded points inside the query region
    (``region``: the study algorithm's, one sphere per group or the common one; default ``space.sphere``).
    """
    if space.n_groups == 1 and hasattr(space, "plug_in_rates"):
        trained = np.asarray(space.plug_in_rates())
        # The first k plug-ins are the trivial "always class i" classifiers; nobody needs them ranked, nor
        # the plug-ins below "everyone is the most common class" (the dataset's inverted thresholds get
        # 3 in 100 right): a coordinator compares metrics on classifiers someone might deploy.
        priors = np.ravel(np.asarray(space.priors, dtype=np.float64))
        real = [rates for rates in trained[space.n_classes :] if rates @ priors >= priors.max()]
        if len(real) >= POOL_SIZE:
            picks = np.linspace(0, len(real) - 1, POOL_SIZE).round().astype(int)
            return [real[i] for i in picks]
    rng = np.random.default_rng(POOL_SEED)
    spheres = (
        (space.sphere,) * space.n_groups if region is None or isinstance(region, Sphere) else tuple(region)
    )
    k = space.n_classes

    def point(sphere: Sphere) -> np.ndarray:
        direction = rng.standard_normal(k)
        direction /= np.linalg.norm(direction)
        radius = sphere.radius * POOL_MARGIN * rng.random() ** (1.0 / k)
        return np.asarray(sphere.center + radius * direction)

    if space.n_groups == 1:
        return [point(spheres[0]) for _ in range(POOL_SIZE)]
    return [np.stack([point(own) for own in spheres]) for _ in range(POOL_SIZE)]


def candidate_rows(space: Any, pool: list[np.ndarray]) -> list[dict[str, Any]]:
    """Each pool classifier as its confusion matrix out of 100 shows it: per class (and group) how many of
    that class's people it decides correctly, and how many of the 100 overall."""
    classes = list(space.class_names)
    groups = list(getattr(space, "group_names", ()) or [])
    rows = []
    for index, rates in enumerate(pool):
        confusion = np.asarray(space.confusion(rates), dtype=np.float64)
        stacks = confusion if confusion.ndim == 3 else confusion[None]
        cells = []
        for group_index, matrix in enumerate(stacks):
            prefix = f"{groups[group_index]}, " if len(stacks) > 1 and group_index < len(groups) else ""
            for class_index, name in enumerate(classes):
                right, total = float(matrix[class_index, class_index]), float(matrix[class_index].sum())
                cells.append({"label": f"{prefix}{name}", "right": round(right), "of": round(total)})
        right_overall = [round(float(np.trace(matrix))) for matrix in stacks]
        summary = "; ".join(f"{cell['label']} {cell['right']} of {cell['of']} right" for cell in cells)
        rows.append({"name": f"C{index + 1}", "cells": cells, "overall": right_overall, "summary": summary})
    return rows


def participant_words(db: Session, cache: SessionCache, study: Study) -> dict[str, MetricWords]:
    """Each finished session's metric in plain words (per person and per rate), keyed by session id."""
    runtime = cache.runtime(study)
    statement = (
        select(Result.session_id, Result.metric, Result.details)
        .join(ElicitationSession, Result.session_id == ElicitationSession.id)
        .where(ElicitationSession.study_id == study.id)
    )
    found: dict[str, MetricWords] = {}
    for session_id, metric, details in db.execute(statement):
        words = runtime.words(metric, details)
        if words is not None:
            found[str(session_id)] = words
    return found


def _space_and_region(study: Study) -> tuple[Any, Any]:
    """The study's query space and where its algorithm asks (one sphere per group or the common one)."""
    config = StudyConfig.model_validate(study.config)
    space = build_space(config)
    return space, get_algorithm(config.algorithm).algorithm.query_region(space)


def candidate_table(study: Study) -> list[dict[str, Any]]:
    """The results page's table of the ranked pool (same classifiers as `ranking_figure`)."""
    space, region = _space_and_region(study)
    return candidate_rows(space, candidate_pool(space, region))


@dataclass(frozen=True)
class ElicitedMetric:
    """A finished, included session's stored metric (`Metric.to_dict`) and who it belongs to."""

    session_id: uuid.UUID
    participant_code: str | None
    metric: dict[str, Any]
    #: The elicitor's stored details (an active elicitor's posterior sample gives the intervals).
    details: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """What the back office calls the participant: their code, else the session id's first 8 digits."""
        return self.participant_code or str(self.session_id)[:8]


def included_metrics(db: Session, study: Study) -> list[ElicitedMetric]:
    """Every elicited metric of the study that counts (not a pilot, not excluded, not failed), in enrolment
    order."""
    excluded = set(
        db.scalars(
            select(Exclusion.session_id)
            .join(ElicitationSession, Exclusion.session_id == ElicitationSession.id)
            .where(ElicitationSession.study_id == study.id, Exclusion.lifted_at.is_(None))
        )
    )
    statement = (
        select(ElicitationSession.id, ElicitationSession.participant_code, Result.metric, Result.details)
        .join(Result, Result.session_id == ElicitationSession.id)
        .where(ElicitationSession.study_id == study.id, ElicitationSession.pilot.is_(False))
        .order_by(ElicitationSession.created_at, ElicitationSession.id)
    )
    return [
        ElicitedMetric(session_id, code, metric, details)
        for session_id, code, metric, details in db.execute(statement)
        if session_id not in excluded and metric.get("type") != "failed"
    ]


def ranking_figure(db: Session, study: Study) -> dict[str, Any] | None:
    """Rank of each pool classifier (1 = best) under each included participant's metric and accuracy."""
    space, region = _space_and_region(study)
    pool = candidate_pool(space, region)
    labels: list[str] = []
    ranks: list[list[int]] = []
    accuracy = accuracy_baseline(space.priors)
    for item in included_metrics(db, study):
        metric = decode_metric(item.metric)
        values = np.array([metric(rates) for rates in pool])
        order = np.argsort(-values if metric.higher_is_better else values, kind="stable")
        rank = np.empty(POOL_SIZE, dtype=int)
        rank[order] = np.arange(1, POOL_SIZE + 1)
        labels.append(item.label)
        ranks.append(rank.tolist())
    if not ranks:
        return None
    baseline = np.array([accuracy(rates) for rates in pool])
    base_rank = np.empty(POOL_SIZE, dtype=int)
    base_rank[np.argsort(-baseline, kind="stable")] = np.arange(1, POOL_SIZE + 1)
    names = [f"C{i + 1}" for i in range(POOL_SIZE)]
    hover = [f"{row['name']}: {row['summary']}" for row in candidate_rows(space, pool)]
    return monitor_charts.ranking_figure(
        names, hover, ["accuracy (baseline)", *labels], [base_rank.tolist(), *ranks]
    )
