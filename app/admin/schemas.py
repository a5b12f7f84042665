"""Response bodies of the back-office JSON API, as OpenAPI documents them and FastAPI checks them.

Models of bodies built by the routes forbid unknown keys, so a field added to a route's dict without being
documented here fails loudly (a 500 in the tests) instead of vanishing from the answer or the schema.
Timestamps are ISO 8601 strings with a UTC offset (`iso_utc`), exactly as the exports write them.
"""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .monitor import STOPPED_AFTER_MIN

__all__ = [
    "ArchiveOut",
    "BestClassifiersOut",
    "DashboardOut",
    "ExclusionLiftedOut",
    "ExclusionOut",
    "InvitationsOut",
    "PanelOut",
    "PasswordChangedOut",
    "PlanOut",
    "ReplayLogOut",
    "ResultsOut",
    "SnapshotDetailOut",
    "SnapshotsOut",
    "StudiesOut",
    "StudyImportedOut",
    "StudyOut",
    "TokenCreatedOut",
    "TokenOut",
    "TokensOut",
]

#: An ISO 8601 date and time with its UTC offset (RFC 3339), as a string.
Timestamp = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
ConfigHash = Annotated[
    str, Field(pattern="^[0-9a-f]{64}$", description="SHA-256 of the stored configuration")
]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StudyOut(_Out):
    """A study as the API shows it."""

    id: uuid.UUID
    name: str
    status: Literal["draft", "open", "paused", "closed"]
    algorithm: str
    config: dict[str, Any] = Field(description="the validated study configuration, as stored")
    config_hash: ConfigHash
    expected_queries: int = Field(description="typical number of elicitor queries (a simulated run)")
    open_enrolment: bool
    join_url: str | None = Field(description="the open-enrolment link (null without open enrolment)")
    seconds_per_query: float | None = Field(description="the planner's time per comparison, if set")
    enrolment_expires_at: Timestamp | None
    created_at: Timestamp | None


class StudyListedOut(StudyOut):
    sessions: dict[str, int] = Field(description="number of sessions by status (invited, active, done)")


class StudiesOut(_Out):
    studies: list[StudyListedOut]


class StudyImportedOut(StudyOut):
    verified: int = Field(description="finished sessions replayed and found to reproduce their metric")


class PlanOut(_Out):
    """The planner's forecast (`app.planning.PlannerResult`)."""

    trials: int
    failed_trials: int
    queries_mean: float
    queries_p90: float
    queries_max_bound: int
    other_comparisons: int = Field(description="practice, check and evaluation comparisons")
    comparisons_mean: float
    comparisons_p90: float
    seconds_per_query: float
    seconds_source: str
    minutes_mean: float
    minutes_p90: float
    error_a_mean: float | None
    error_a_p90: float | None
    error_b_mean: float | None
    error_b_p90: float | None
    error_lam_mean: float | None
    agreement_mean: float | None = Field(
        description="share of random pairs of the query region the estimate orders as the simulated person"
    )
    min_cell_gap: float
    imperceptible_share: float | None
    perceptibility_warning: bool


class InvitationOut(_Out):
    id: int
    label: str | None
    token: str = Field(description="the secret token; shown in this answer only")
    url: str
    expires_at: Timestamp | None


class InvitationsOut(_Out):
    invitations: list[InvitationOut]


class InconsistentOut(_Out):
    session_id: uuid.UUID
    participant_code: str | None
    status: str
    excluded: bool
    reasons: list[str]


class SessionProgressOut(_Out):
    session_id: uuid.UUID
    participant_code: str | None
    status: str
    pilot: bool = Field(description="a coordinator's own trial session, counted in none of the numbers")
    excluded: bool
    answered: int = Field(description="answers given (undone ones not counted)")
    estimated_total: int = Field(
        description="comparisons the session takes: actual when done, else its own estimate (as its "
        "participant's progress shows it) or, when that is not at hand, the study's typical session"
    )
    own_estimate: bool = Field(description="whether estimated_total is the session's own (else the study's)")
    total_words: Literal["about", "at most"] = Field(
        description='how to read estimated_total: "at most" when it is the study\'s question budget'
    )
    percent: int
    stage: str = Field(description="not started, consented, practice, questions, evaluation pairs, finished")
    created_at: Timestamp
    last_activity_at: Timestamp = Field(description="the latest answer, undo, consent or creation")
    last_activity: str = Field(description="the same in words (just now, 4 min ago, ...)")
    idle: bool = Field(description="answering but quiet for 10 minutes or more")
    finished_at: Timestamp | None
    duration_s: float | None = Field(
        description="seconds from consent to the last answer (finished) or to the latest activity (under "
        "way); null before consent"
    )
    duration: str | None = Field(description="the same in words (45 s, 12 min, 1 h 05 min)")
    stopped: bool = Field(
        description=f"consented, unfinished and without an answer for {STOPPED_AFTER_MIN} minutes or more"
    )
    duplicate_code: bool = Field(
        description="another session of this study started with the same participant code"
    )


class DashboardOut(_Out):
    by_status: dict[str, int] = Field(description="sessions by status, pilot sessions not counted")
    excluded: int
    pilots: int = Field(description="pilot sessions (coordinators trying the study), counted nowhere else")
    stopped: int = Field(
        description=f"consented, unfinished sessions without an answer for {STOPPED_AFTER_MIN} minutes or "
        "more (in by_status as active)"
    )
    answers_last_5_min: int
    answers_per_minute: float
    median_seconds_per_query: float | None = Field(
        description="median time per comparison over every answer (page timer, else the server-side gap)"
    )
    people_seconds_per_query: float | None = Field(
        description="people's time per comparison as the planner measures it: participant-page answers "
        "with a plausible timer, the median of each session's median (null before any such session)"
    )
    inconsistent: list[InconsistentOut]
    dropoff: dict[str, int] = Field(description="stopped sessions (see stopped) by number of answers given")
    sessions: list[SessionProgressOut] = Field(description="the latest 200 sessions, newest first")


class ResultsStudyOut(_Out):
    id: uuid.UUID
    name: str
    algorithm: str
    algorithm_version: str
    config_hash: ConfigHash


class ResultRowOut(BaseModel):
    """One session's row; besides these columns it has the coefficients of its metric (``a_<class>``,
    ``B_<class>_<class>``, ``B_<group>_<group>_<class>_<class>``, ``lam``), null when there is none."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, float | None] = Field(init=False)

    study_id: uuid.UUID
    session_id: uuid.UUID
    participant_code: str | None
    completion_code: str | None = Field(
        description="the code the participant was shown at the end (study-wide or their own); null until done"
    )
    status: str
    pilot: bool = Field(description="a coordinator's own trial session (only with include_pilots=true)")
    excluded: bool
    exclusion_reason: str | None
    algorithm: str
    algorithm_version: str
    config_hash: ConfigHash
    created_at: Timestamp | None
    consented_at: Timestamp | None
    finished_at: Timestamp | None
    duration_s: float | None
    num_queries: int | None
    metric_type: str | None
    evaluation_pairs: int | None
    agreement_elicited_pct: float | None
    agreement_elicited_low_pct: float | None = Field(description="95 % Wilson interval, lower end")
    agreement_elicited_high_pct: float | None = Field(description="95 % Wilson interval, upper end")
    agreement_accuracy_pct: float | None
    agreement_accuracy_low_pct: float | None
    agreement_accuracy_high_pct: float | None
    agreement_equal_weights_pct: float | None
    agreement_equal_weights_low_pct: float | None
    agreement_equal_weights_high_pct: float | None
    checks_shown: int | None
    checks_passed: int | None
    ended_early_reason: str | None = Field(
        description="why the elicitation ended before its plan (metric_type 'failed'), else null"
    )


class ResultsOut(_Out):
    """The results export (streamed): the study's identity and one row per session."""

    study: ResultsStudyOut
    results: list[ResultRowOut]


class ReplayLogOut(_Out):
    """A session in the ``elicitation-answer-log`` format that ``elicit replay FILE`` reads."""

    format: Literal["elicitation-answer-log"]
    version: int
    algorithm: str
    algorithm_version: str
    params: dict[str, Any]
    space: dict[str, Any] | None
    seed: int
    study_id: uuid.UUID
    session_id: uuid.UUID
    config_hash: ConfigHash
    answers: list[dict[str, Any]] = Field(
        description="elicitor answers in order: seq, answer (true: first preferred), query, undone (if so)"
    )


class ArchiveExclusionOut(_Out):
    reason: str
    created_at: Timestamp | None
    lifted_at: Timestamp | None


class ArchiveSessionOut(_Out):
    id: uuid.UUID
    token_hash: str
    participant_code: str | None
    seed: int
    algorithm: str
    algorithm_version: str
    status: str
    completion_code: str | None
    panel: dict[str, str] | None = Field(default=None, description="the panel parameters the link carried")
    created_at: Timestamp | None
    consented_at: Timestamp | None
    finished_at: Timestamp | None
    pilot: bool = Field(description="a coordinator's own trial session (left out of the analysis)")
    answers: list[dict[str, Any]] = Field(description="the whole log: answers, undone answers, undo rows")
    result: dict[str, Any] | None
    exclusions: list[ArchiveExclusionOut]
    replay_log: ReplayLogOut


class ArchiveStudyOut(_Out):
    id: uuid.UUID
    name: str
    config: dict[str, Any]
    config_hash: ConfigHash
    algorithm: str
    algorithm_version: str
    expected_queries: int
    open_enrolment: bool
    created_at: Timestamp | None
    status: str
    seconds_per_query: float | None


class ArchiveOut(_Out):
    """The replayable study archive (`POST /api/v1/studies/import` reads it back)."""

    format: Literal["elicitation-study-archive"]
    version: int
    exported_at: Timestamp
    numerics: str | None = Field(
        default=None,
        description="the numerical library the exporting server computed with (numpy, BLAS kernels): "
        "active elicitors replay exactly only where it is the same",
    )
    study: ArchiveStudyOut
    sessions: list[ArchiveSessionOut]


class SnapshotOut(_Out):
    id: int
    reason: str
    created_at: Timestamp


class SnapshotsOut(_Out):
    snapshots: list[SnapshotOut]


class SnapshotDetailOut(SnapshotOut):
    archive: dict[str, Any] = Field(description="the study archive as it was when the snapshot was taken")


class ExclusionOut(_Out):
    session_id: uuid.UUID
    reason: str
    created_at: Timestamp


class ExclusionLiftedOut(_Out):
    session_id: uuid.UUID
    lifted_at: Timestamp | None


class TokenOut(_Out):
    id: int
    name: str
    created_at: Timestamp | None
    last_used_at: Timestamp | None
    revoked: bool


class TokensOut(_Out):
    tokens: list[TokenOut]


class PasswordChangedOut(_Out):
    email: str
    sessions_ended: bool = Field(description="every browser session of the account was logged out")


class TokenCreatedOut(TokenOut):
    token: str = Field(description="the bearer secret; shown in this answer only")


class IntervalOut(_Out):
    """A value with its bootstrap percentile interval."""

    value: float
    low: float
    high: float


class PanelStudyOut(_Out):
    id: uuid.UUID
    name: str
    algorithm: str
    config_hash: ConfigHash
    class_names: list[str]
    group_names: list[str]


class PanelMethodOut(_Out):
    """How the panel's numbers are made (the same words as the panel page)."""

    consensus: str
    agreement: str
    camps: str
    seed: int = Field(
        description="seed of the question pairs and resamples (fixed: same sessions, same numbers)"
    )
    pairs: int = Field(description="random question pairs from the study's query region every metric answers")
    bootstrap_resamples: int
    level: float = Field(description="coverage of the bootstrap intervals")
    split_silhouette: float = Field(description="mean silhouette from which the panel counts as split")


class PanelMemberOut(_Out):
    session_id: uuid.UUID
    participant_code: str | None
    camp: int | None = Field(description="index into camps (null without a panel)")
    outlier: bool | None = Field(
        description="in a group too small to be a camp; counted with the closest camp"
    )
    agreement_with_consensus: float | None = Field(description="share of question pairs answered alike")
    position: list[float] | None = Field(description="place on the panel's map (distance ~ disagreement)")
    metric: dict[str, Any] = Field(description="the stored metric (Metric.to_dict)")
    interval_level: float | None = Field(description="level of the intervals (null without a posterior)")
    intervals: dict[str, Any] = Field(
        description="credible intervals of what the participant's result states, as the session's result"
    )


class PanelConsensusOut(_Out):
    metric: dict[str, Any] = Field(description="the consensus metric (Metric.from_dict reads it)")
    coefficients: dict[str, IntervalOut] = Field(description="by results-export column, with intervals")
    position: list[float]


class PanelCampOut(_Out):
    name: str
    members: list[uuid.UUID] = Field(description="the camp's sessions (its centre is their consensus)")
    outliers: list[uuid.UUID] = Field(description="outliers counted with this camp (not in its centre)")
    within: float | None = Field(description="mean agreement between two members (null for one member)")
    with_consensus: float = Field(description="agreement of the camp's centre with the consensus")
    centre: dict[str, Any]
    coefficients: dict[str, float]
    position: list[float]


class PanelOut(_Out):
    """A study's panel: consensus, intervals, agreement matrix and camps of its included finished sessions."""

    study: PanelStudyOut
    method: PanelMethodOut
    available: bool = Field(description="false when there are fewer than two finished participants")
    reason: str | None = Field(description="why there is no panel (null when there is one)")
    members: list[PanelMemberOut]
    consensus: PanelConsensusOut | None
    mean_agreement: IntervalOut | None = Field(description="mean agreement over two distinct participants")
    agreement: list[list[float]] | None = Field(description="participant by participant, in members' order")
    split: bool | None = Field(description="whether the panel falls into more than one camp")
    silhouette: float | None
    camps: list[PanelCampOut]


class BestMixturePartOut(_Out):
    """One trained classifier of a mixture: its plug-in weights and the probability it decides a person."""

    probability: float
    plug_in_weights: list[float] = Field(description="w: predicts argmax_i w_i P(class i | features)")


class BestGroupOut(_Out):
    """The best classifier within one group (or overall without groups)."""

    group: str | None
    rates: dict[str, float] = Field(description="per class, the share of its people decided correctly")
    confusion: list[list[float]] = Field(description="out of 100 people; rows true class, columns predicted")
    mixture: list[BestMixturePartOut]


class BestClassifierOut(_Out):
    """One metric's best classifier on the study's dataset, and what the alternatives score under it."""

    label: str
    kind: Literal["accuracy", "participant", "consensus"]
    session_id: str | None
    participant_code: str | None
    metric_type: str | None
    lam: float | None = Field(description="a fair metric's trade-off between accuracy and fairness")
    lower_is_better: bool
    value: float | None = Field(description="the metric at its best classifier")
    value_of_most_accurate: float | None
    value_of_best_trained: float | None = Field(description="the best single trained classifier")
    gap: float = Field(description="no mixture scores better by more than this (exact searches)")
    exact: bool
    correct_of_100: list[float] = Field(description="people of 100 decided correctly, per group")
    groups: list[BestGroupOut]


class BestStudyOut(_Out):
    id: str
    name: str


class CandidateGroupOut(_Out):
    group: str
    rates: dict[str, float] = Field(
        description="per class, the share of its held-out people decided correctly"
    )
    confusion: list[list[float]] = Field(
        description="out of 100 people of the group: rows true, columns predicted"
    )


class CandidateOut(_Out):
    label: str
    method: str = Field(description='"most accurate", "thresholds", "reduction" or "mixture"')
    constraint: str | None = Field(description="fairlearn's constraint name")
    slack: float | None = Field(description="the constraint's allowed difference between the groups")
    gaps_points: dict[str, float] = Field(
        description="true_positive_rate and positive_rate gaps between the first two groups, in points"
    )
    groups: list[CandidateGroupOut]


class CandidateRankingOut(_Out):
    label: str
    kind: Literal["participant", "consensus"]
    session_id: uuid.UUID | None
    participant_code: str | None
    order: list[int] = Field(description="candidate indices, best (lowest cost) first")
    costs: list[float] = Field(description="the metric's cost of each candidate (lower is better)")
    chance_best: list[float] | None = Field(
        description="each candidate's posterior probability of being the best (null without a posterior)"
    )


class BestClassifiersOut(_Out):
    """Every included participant's (and the panel consensus's) best classifier on the study's dataset."""

    study: BestStudyOut
    class_names: list[str]
    group_names: list[str]
    method: str
    reason: str | None = Field(description="why there are none (a study without a dataset)")
    classifiers: list[BestClassifierOut]
    candidate_method: str = Field(description="how the candidate classifiers are made and ranked")
    candidate_reason: str | None = Field(
        description="why a study with groups has no candidates (none trained for its dataset split)"
    )
    candidates: list[CandidateOut] = Field(description="real candidate classifiers (studies with groups)")
    candidate_rankings: list[CandidateRankingOut] = Field(
        description="each participant's (and the consensus's) ranking of the candidates"
    )
