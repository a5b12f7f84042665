"""What a participant is told before starting: about how many questions, and how many minutes.

One source for the count: the session script's own `SessionPlan.estimated_total` before the first
answer, the number the question page, its progress bar and the API continue from (practice, the
study's typical elicitor run, checks, and the evaluation pairs expected before the agreement is pinned).
The minutes are a range meant to hold for 80 % of people: the fewest comparisons at a quick person's
pace (10th percentile) to the most at a slow one's (90th), from `pace.study_pace` (the prior for people
pooled with the study's measured sessions, pilots and click-throughs left out) or the time per
comparison the coordinator set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy.orm import Session

from ..models import Study, StudyControl
from ..sessions import SessionCache
from ..study_config import StudyConfig
from .pace import Pace, session_paces, study_pace
from .planner import PlanCache, PlannerResult

__all__ = ["StudyEstimate", "minutes_range", "study_estimate", "study_pace_of", "study_plan"]


@dataclass(frozen=True)
class StudyEstimate:
    """About how many comparisons (practice, questions and checks together) a session takes, and the
    minutes it takes 8 in 10 people (``minutes_low`` to ``minutes_high``)."""

    questions: int
    minutes_low: int
    minutes_high: int


def study_pace_of(db: Session, study: Study) -> Pace:
    """The pace ``study`` is priced with: its measured sessions pooled with the prior, or the time per
    comparison its coordinator set (with the pooled spread)."""
    control = db.get(StudyControl, study.id)
    return study_pace(session_paces(db, study.id), control.seconds_per_query if control else None)


def study_plan(db: Session, plans: PlanCache, study: Study) -> PlannerResult:
    """The planner's forecast for ``study`` as configured (simulated now unless cached): the coordinator's
    study page and the plan endpoint."""
    control = db.get(StudyControl, study.id)
    pace = study_pace_of(db, study)
    return plans.plan(
        StudyConfig.model_validate(study.config),
        seconds_per_query=control.seconds_per_query if control else None,
        measured_seconds=pace.median if pace.sessions else None,
    )


def minutes_range(fewest: int, most: int, pace: Pace) -> tuple[int, int]:
    """Whole minutes from ``fewest`` comparisons at a quick person's pace to ``most`` at a slow one's."""
    return max(1, math.floor(fewest * pace.low / 60.0)), max(1, math.ceil(most * pace.high / 60.0))


def study_estimate(db: Session, cache: SessionCache, study: Study) -> StudyEstimate:
    """How long a new session of ``study`` is, as its consent page and instructions state it."""
    runtime = cache.runtime(study)
    plan = runtime.plan(0)
    expected = runtime.expected_queries
    fewest, most = (
        plan.estimated_total(0, expected, False, (pairs, pairs, pairs)) for pairs in plan.evaluation_bounds()
    )
    low, high = minutes_range(fewest, most, study_pace_of(db, study))
    return StudyEstimate(
        questions=plan.estimated_total(0, expected, False), minutes_low=low, minutes_high=high
    )
