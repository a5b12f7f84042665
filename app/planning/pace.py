"""How long people take per comparison, read from the answer log.

The planner prices its simulated sessions with this, and the dashboard shows it per session; both read a
comparison's time the same way (`comparison_ms`).
"""

from __future__ import annotations

import statistics
import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ..models import Answer, ElicitationSession, LogAction

__all__ = ["comparison_ms", "measured_seconds_per_query"]


def comparison_ms(row: Any) -> int | None:
    """Time the participant spent on a comparison: the page timer, else the server-side gap."""
    if row.time_on_page_ms is not None:
        return int(row.time_on_page_ms)
    return None if row.server_elapsed_ms is None else int(row.server_elapsed_ms)


def measured_seconds_per_query(db: Session, study_id: uuid.UUID) -> float | None:
    """Median seconds per answered comparison over the study's sessions (None before any answer)."""
    statement = (
        select(Answer.time_on_page_ms, Answer.server_elapsed_ms)
        .join(ElicitationSession, Answer.session_id == ElicitationSession.id)
        .where(ElicitationSession.study_id == study_id, Answer.action == LogAction.ANSWER.value)
    )
    times = [comparison_ms(row) for row in db.execute(statement)]
    values = [value for value in times if value is not None]
    return statistics.median(values) / 1000.0 if values else None
