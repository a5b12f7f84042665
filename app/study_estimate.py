"""What a participant is told before starting: about how many questions and how many minutes.

One function owns the numbers, so that their source can change in one place: today the study planner's
simulation of the study as configured (cached per configuration), priced at the study's time per
comparison (set by the coordinator, else measured in its sessions, else the planner's default).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy.orm import Session

from .admin.monitor import measured_seconds_per_query
from .admin.planner import PlanCache
from .models import Study, StudyControl
from .study_config import StudyConfig

__all__ = ["StudyEstimate", "study_estimate"]


@dataclass(frozen=True)
class StudyEstimate:
    """About how many comparisons (practice, questions and checks together) and minutes a session takes."""

    questions: int
    minutes: int


def study_estimate(db: Session, plans: PlanCache, study: Study) -> StudyEstimate:
    """The planner's average session for ``study`` as configured, in whole questions and minutes (>= 1)."""
    config = StudyConfig.model_validate(study.config)
    control = db.get(StudyControl, study.id)
    plan = plans.plan(
        config,
        seconds_per_query=control.seconds_per_query if control else None,
        measured_seconds=measured_seconds_per_query(db, study.id),
    )
    return StudyEstimate(
        questions=max(1, round(plan.comparisons_mean)), minutes=max(1, math.ceil(plan.minutes_mean - 0.25))
    )
