"""A participant session in one room: tokens, the answer log, replay, enrolment, the service, view models.

Routes and the back office call the use cases re-exported here; the modules behind them are
`tokens` (secrets and lookup), `log` (undo-aware reading of the answer log), `replay` (the one
replay-and-verify), `checkpoints` (the active elicitor's state saved beside the log, so that any worker
continues a session without replaying it), `runtime` (per-process study runtimes and live elicitors),
`enrolment` (is the study taking people), `study` (storing a new study), `views` (what pages and the API
show) and `service` (the use cases, which own their transactions).
"""

from .enrolment import check_enrolment, find_study, open_study, status_of
from .log import effective_rows, elicitor_rows
from .replay import replay_verified
from .runtime import Failed, SessionCache, StudyRuntime, study_runtime
from .service import (
    MAX_TIMING_MS,
    Joined,
    SessionProgress,
    consent,
    create_session,
    get_instructions,
    get_view,
    join_study,
    returning_by_code,
    returning_view,
    session_progress,
    start_session,
    submit_answer,
    undo,
)
from .study import create_study, typical_queries
from .tokens import TOKEN_BYTES, hash_token
from .views import SessionView, comparison_model, worked_example

__all__ = [
    "MAX_TIMING_MS",
    "TOKEN_BYTES",
    "Failed",
    "Joined",
    "SessionCache",
    "SessionProgress",
    "SessionView",
    "StudyRuntime",
    "check_enrolment",
    "comparison_model",
    "consent",
    "create_session",
    "create_study",
    "effective_rows",
    "elicitor_rows",
    "find_study",
    "get_instructions",
    "get_view",
    "hash_token",
    "join_study",
    "open_study",
    "replay_verified",
    "returning_by_code",
    "returning_view",
    "session_progress",
    "start_session",
    "status_of",
    "study_runtime",
    "submit_answer",
    "typical_queries",
    "undo",
    "worked_example",
]
