"""How long a study takes and what it will ask, for the coordinator and the participant alike.

`planner` simulates a configuration against random metrics (cached per configuration in `PlanCache`) for
the coordinator; `pace` reads people's time per comparison from the answer log and pools it with a prior;
`estimate` turns the session script's own count and that pace into what a participant is told before
starting ("about N questions, M1 to M2 minutes"). Neither the participant pages
nor the back office own this: both import it from here.
"""

from .estimate import StudyEstimate, minutes_range, study_estimate, study_pace_of, study_plan
from .pace import (
    HUMAN_ANSWERS_PER_SESSION,
    MIN_READING_SECONDS,
    PLAUSIBLE_SECONDS,
    Pace,
    comparison_ms,
    human_comparison_ms,
    measured_seconds_per_query,
    session_paces,
    study_pace,
)
from .planner import (
    DEFAULT_MIN_CELL_GAP,
    DEFAULT_SECONDS_PER_QUERY,
    IMPERCEPTIBLE_WARNING_SHARE,
    PlanCache,
    PlannerResult,
    imperceptible,
    plan_study,
)

__all__ = [
    "DEFAULT_MIN_CELL_GAP",
    "DEFAULT_SECONDS_PER_QUERY",
    "HUMAN_ANSWERS_PER_SESSION",
    "IMPERCEPTIBLE_WARNING_SHARE",
    "MIN_READING_SECONDS",
    "PLAUSIBLE_SECONDS",
    "Pace",
    "PlanCache",
    "PlannerResult",
    "StudyEstimate",
    "comparison_ms",
    "human_comparison_ms",
    "imperceptible",
    "measured_seconds_per_query",
    "minutes_range",
    "plan_study",
    "session_paces",
    "study_estimate",
    "study_pace",
    "study_pace_of",
    "study_plan",
]
