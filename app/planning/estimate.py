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

from ..models import Study, StudyControl
from ..study_config import StudyConfig
from .pace import measured_seconds_per_query
from .planner import PlanCache, PlannerResult

__all__ = ["StudyEstimate", "study_estimate", "study_plan"]


@dataclass(frozen=True)
class StudyEstimate:
    """About how many comparisons (practice, questions and checks together) and minutes a session takes."""

    questions: int
    minutes: int


def _pricing(db: Session, study: Study) -> dict[str, float | None]:
    """The per-comparison times ``study``'s plan is priced with: the coordinator's, and the measured."""
    control = db.get(StudyControl, study.id)
    return {
        "seconds_per_query": control.seconds_per_query if control else None,
        "measured_seconds": measured_seconds_per_query(db, study.id),
    }


def study_plan(db: Session, plans: PlanCache, study: Study) -> PlannerResult:
    """The planner's forecast for ``study`` as configured (simulated now unless cached): the coordinator's
    study page and the plan endpoint."""
    return plans.plan(StudyConfig.model_validate(study.config), **_pricing(db, study))


def study_estimate(db: Session, plans: PlanCache, study: Study) -> StudyEstimate | None:
    """The planner's average session for ``study`` as configured, in whole questions and minutes (>= 1);
    None while it is being simulated."""
    plan = plans.cached_plan(StudyConfig.model_validate(study.config), **_pricing(db, study))
    if plan is None:
        return None
    return StudyEstimate(
        questions=max(1, round(plan.comparisons_mean)), minutes=max(1, math.ceil(plan.minutes_mean - 0.25))
    )
