"""What a participant is told before starting: about how many questions and how many minutes.

One function owns the numbers, so that their source can change in one place: today the study planner's
simulation of the study as configured (cached per configuration), priced at the study's time per
comparison (set by the coordinator, else measured in its sessions, else the planner's default). A
participant's page never waits for a simulation: until the configuration has been simulated in this
process (the coordinator's study page does it, or the background run the first visitor starts), the
pages say nothing about the length rather than guess.
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


def study_estimate(db: Session, plans: PlanCache, study: Study) -> StudyEstimate | None:
    """The planner's average session for ``study`` as configured, in whole questions and minutes (>= 1);
    None while it is being simulated."""
    config = StudyConfig.model_validate(study.config)
    control = db.get(StudyControl, study.id)
    plan = plans.cached_plan(
        config,
        seconds_per_query=control.seconds_per_query if control else None,
        measured_seconds=measured_seconds_per_query(db, study.id),
    )
    if plan is None:
        return None
    return StudyEstimate(
        questions=max(1, round(plan.comparisons_mean)), minutes=max(1, math.ceil(plan.minutes_mean - 0.25))
    )
