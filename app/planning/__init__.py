"""How long a study takes and what it will ask, for the coordinator and the participant alike.

`planner` simulates a configuration against random metrics (cached per configuration in `PlanCache`);
`pace` reads people's time per comparison from the answer log; `estimate` turns both into what a
participant is told before starting ("about N questions, about M minutes"). Neither the participant pages
nor the back office own this: both import it from here.
"""

from .estimate import StudyEstimate, study_estimate, study_plan
from .pace import (
    HUMAN_ANSWERS_PER_SESSION,
    PLAUSIBLE_SECONDS,
    comparison_ms,
    human_comparison_ms,
    measured_seconds_per_query,
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
    "PLAUSIBLE_SECONDS",
    "PlanCache",
    "PlannerResult",
    "StudyEstimate",
    "comparison_ms",
    "human_comparison_ms",
    "imperceptible",
    "measured_seconds_per_query",
    "plan_study",
    "study_estimate",
    "study_plan",
]
