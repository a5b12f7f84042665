"""How long people take per comparison, read from the answer log.

Two readings. `comparison_ms` is any answer's time (the page timer, else the server-side gap): the
dashboard's median and each session's detail use it. `measured_seconds_per_query` is what a study's plan
is priced with, and counts people only: answers given on the participant page (never through the JSON
API, which scripts, simulated participants and benchmarks use), with a plausible page timer, per session
and then across sessions, so that one long session does not outweigh the others (docs/admin.md,
"Seconds per comparison").
"""

from __future__ import annotations

import statistics
import uuid
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import Answer, AnswerChannel, ElicitationSession, LogAction

__all__ = [
    "HUMAN_ANSWERS_PER_SESSION",
    "PLAUSIBLE_SECONDS",
    "comparison_ms",
    "human_comparison_ms",
    "measured_seconds_per_query",
]

#: A page timer (seconds in view, hidden time left out) outside this range is not a person reading two
#: charts: a scripted click, or a tab left open; the same range bounds the time a coordinator may set.
PLAUSIBLE_SECONDS = (0.5, 600.0)
#: A session counts towards the measured time once it has this many plausible page answers.
HUMAN_ANSWERS_PER_SESSION = 3


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


def measured_seconds_per_query(db: Session, study_id: uuid.UUID) -> float | None:
    """People's seconds per comparison in the study: the median over sessions (with at least
    `HUMAN_ANSWERS_PER_SESSION` plausible page answers) of each session's median; None before any."""
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
    medians = [
        statistics.median(times) for times in per_session.values() if len(times) >= HUMAN_ANSWERS_PER_SESSION
    ]
    return statistics.median(medians) / 1000.0 if medians else None
