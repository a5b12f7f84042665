"""How long people take per comparison, read from the answer log.

Three readings. `comparison_ms` is any answer's time (the page timer, else the server-side gap): the
dashboard's median and each session's detail use it. `measured_seconds_per_query` counts people only:
answers given on the participant page (never through the JSON API, which scripts, simulated participants
and benchmarks use), with a plausible page timer, in sessions that are not pilots and were not clicked
through faster than anyone reads (`MIN_READING_SECONDS`), per session and then across sessions, so that
one long session does not outweigh the others. `study_pace` is what a study is priced with: those
sessions' paces pooled with a prior for people (worth `PRIOR_SESSIONS` sessions around
`PRIOR_MEDIAN_SECONDS`), so that no single session sets what the next participant is told, with the
range of a new person's pace that the stated minutes need (docs/admin.md, "Seconds per comparison").
"""

from __future__ import annotations

import math
import statistics
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from scipy.stats import t as student_t
from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import Answer, AnswerChannel, ElicitationSession, LogAction

__all__ = [
    "HUMAN_ANSWERS_PER_SESSION",
    "MIN_READING_SECONDS",
    "PLAUSIBLE_SECONDS",
    "PRIOR_LOG_SPREAD",
    "PRIOR_MEDIAN_SECONDS",
    "PRIOR_SESSIONS",
    "PRIOR_SPREAD_WEIGHT",
    "RANGE_LEVEL",
    "Pace",
    "comparison_ms",
    "human_comparison_ms",
    "measured_seconds_per_query",
    "session_paces",
    "study_pace",
]

#: A page timer (seconds in view, hidden time left out) outside this range is not a person reading two
#: charts: a scripted click, or a tab left open; the same range bounds the time a coordinator may set.
PLAUSIBLE_SECONDS = (0.5, 600.0)
#: A session counts towards the measured time once it has this many plausible page answers.
HUMAN_ANSWERS_PER_SESSION = 3
#: A session whose median answer took less than this did not read the charts (two charts of 100 people
#: each): a click-through, such as a coordinator's quick trial, and not a participant's pace.
MIN_READING_SECONDS = 3.0
#: People's pace before any session is measured: log-normal seconds per comparison with this median and
#: log spread (10th-90th percentiles 7-20 s; a new user reading the demo took 10-20 s a question).
PRIOR_MEDIAN_SECONDS = 12.0
PRIOR_LOG_SPREAD = 0.4
#: The prior's centre weighs as much as this many measured sessions (one session moves the log pace a
#: quarter of the way towards its own), its spread as much as `PRIOR_SPREAD_WEIGHT`.
PRIOR_SESSIONS = 3
PRIOR_SPREAD_WEIGHT = 10
#: Probability that a new person's pace lies in the stated range. The stated minutes should hold for 8 in
#: 10 sessions; a 90 % predictive range does so even from a few sessions (tests/app/test_pace_range.py),
#: an 80 % one only on average.
RANGE_LEVEL = 0.9
#: A session's mean seconds per comparison is held within this range before pooling: slower than a
#: minute a comparison is someone away from a tab left in view, not a pace to promise.
SESSION_PACE_RANGE = (MIN_READING_SECONDS, 60.0)


def comparison_ms(row: Any) -> int | None:
    """Time the participant spent on a comparison: the page timer, else the server-side gap."""
    if row.time_on_page_ms is not None:
        return int(row.time_on_page_ms)
    return None if row.server_elapsed_ms is None else int(row.server_elapsed_ms)


def human_comparison_ms(row: Any) -> int | None:
    """Time a person looked at a comparison on the participant page (None: not a plausible person's time).

    Only PAGE answers qualify (JSON API answers and rows recorded before channels were logged do not);
    the time is the page timer minus the time the tab was hidden, within `PLAUSIBLE_SECONDS`.
    """
    if row.channel != AnswerChannel.PAGE.value or row.time_on_page_ms is None:
        return None
    visible = int(row.time_on_page_ms) - int(row.hidden_ms or 0)
    low, high = PLAUSIBLE_SECONDS
    return visible if low * 1000 <= visible <= high * 1000 else None


def _people_times(db: Session, study_id: uuid.UUID) -> list[list[int]]:
    """Each qualifying session's plausible page times (ms): not a pilot, at least
    `HUMAN_ANSWERS_PER_SESSION` of them, and a median of at least `MIN_READING_SECONDS`."""
    statement = (
        select(Answer.session_id, Answer.channel, Answer.time_on_page_ms, Answer.hidden_ms)
        .join(ElicitationSession, Answer.session_id == ElicitationSession.id)
        .where(
            ElicitationSession.study_id == study_id,
            ElicitationSession.pilot.is_(False),
            Answer.action == LogAction.ANSWER.value,
            Answer.channel == AnswerChannel.PAGE.value,
            Answer.time_on_page_ms.is_not(None),
        )
    )
    per_session: dict[uuid.UUID, list[int]] = defaultdict(list)
    for row in db.execute(statement):
        value = human_comparison_ms(row)
        if value is not None:
            per_session[row.session_id].append(value)
    return [
        times
        for times in per_session.values()
        if len(times) >= HUMAN_ANSWERS_PER_SESSION and statistics.median(times) >= MIN_READING_SECONDS * 1000
    ]


def measured_seconds_per_query(db: Session, study_id: uuid.UUID) -> float | None:
    """People's seconds per comparison as measured in the study: the median over the qualifying sessions
    (`_people_times`) of each session's median; None before any."""
    medians = [statistics.median(times) for times in _people_times(db, study_id)]
    return statistics.median(medians) / 1000.0 if medians else None


def session_paces(db: Session, study_id: uuid.UUID) -> list[float]:
    """Each qualifying session's mean seconds per comparison (what its minutes were, per comparison)."""
    return [statistics.fmean(times) / 1000.0 for times in _people_times(db, study_id)]


@dataclass(frozen=True)
class Pace:
    """Seconds per comparison a study is priced with: a typical person's (``median``) and the range that
    holds a new person's pace with probability `RANGE_LEVEL` (``low``, ``high``), from ``sessions``
    measured sessions and the prior."""

    median: float
    low: float
    high: float
    sessions: int


def study_pace(paces: list[float], seconds_per_query: float | None = None) -> Pace:
    """People's pace from measured session ``paces`` (`session_paces`) pooled with the prior.

    Log seconds per comparison are normal with unknown centre and spread, under the conjugate prior
    (centre `PRIOR_MEDIAN_SECONDS` worth `PRIOR_SESSIONS` sessions, spread `PRIOR_LOG_SPREAD` worth
    `PRIOR_SPREAD_WEIGHT`); the range is the posterior predictive Student-t interval for a new person,
    which widens when measured sessions disagree with the prior or with each other. Each session's pace is
    first held within `SESSION_PACE_RANGE`. A time the coordinator set (``seconds_per_query``) replaces
    the centre and keeps the spread.
    """
    low_bound, high_bound = SESSION_PACE_RANGE
    logs = [math.log(min(max(pace, low_bound), high_bound)) for pace in paces]
    count = len(logs)
    prior = math.log(PRIOR_MEDIAN_SECONDS)
    mean = statistics.fmean(logs) if logs else prior
    weight = PRIOR_SESSIONS + count
    degrees = PRIOR_SPREAD_WEIGHT + count
    centre = (PRIOR_SESSIONS * prior + count * mean) / weight
    scatter = sum((value - mean) ** 2 for value in logs)
    conflict = PRIOR_SESSIONS * count / weight * (mean - prior) ** 2
    variance = (PRIOR_SPREAD_WEIGHT * PRIOR_LOG_SPREAD**2 + scatter + conflict) / degrees
    if seconds_per_query is not None:
        centre = math.log(seconds_per_query)
    half = float(student_t.ppf(0.5 + RANGE_LEVEL / 2.0, degrees)) * math.sqrt(variance * (1.0 + 1.0 / weight))
    return Pace(
        median=math.exp(centre), low=math.exp(centre - half), high=math.exp(centre + half), sessions=count
    )
