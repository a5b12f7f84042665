"""ORM tables: studies, participant sessions, the append-only answer log and committed results.

Also the two tables enrolment reads: a study's control row (owner, status, link expiry; a study without
one, made with ``elicit study create`` before the back office, is open and owned by nobody, so only
admins see it) and personal invitations.
"""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, datetime
from typing import Any, overload

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .db import Base

__all__ = [
    "Answer",
    "AnswerChannel",
    "ElicitationSession",
    "ElicitorCheckpoint",
    "Invitation",
    "LogAction",
    "Phase",
    "Result",
    "SessionLink",
    "SessionStatus",
    "Study",
    "StudyControl",
    "StudyStatus",
    "as_utc",
    "utcnow",
]


def utcnow() -> datetime:
    """The current time in UTC (timezone-aware)."""
    return datetime.now(UTC)


@overload
def as_utc(moment: datetime) -> datetime: ...
@overload
def as_utc(moment: None) -> None: ...
def as_utc(moment: datetime | None) -> datetime | None:
    """``moment`` with its UTC offset: SQLite hands back naive datetimes, which are UTC by convention here."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


class SessionStatus(enum.StrEnum):
    """Life cycle of a session: invited (not counted) -> active (consented) -> done (result committed)."""

    INVITED = "invited"
    ACTIVE = "active"
    DONE = "done"


class Phase(enum.StrEnum):
    """What an answered comparison was for; only ELICITATION answers are fed to the elicitor."""

    PRACTICE = "practice"
    ELICITATION = "elicitation"
    CHECK = "check"
    EVALUATION = "evaluation"


class LogAction(enum.StrEnum):
    """A log row either answers the query at its sequence number or undoes the last effective answer."""

    ANSWER = "answer"
    UNDO = "undo"


class AnswerChannel(enum.StrEnum):
    """How an answer arrived: the participant page a person clicks, or the JSON API (scripts, bots,
    panels' own front ends). Only PAGE answers with a plausible page timer price a study's minutes."""

    PAGE = "page"
    API = "api"


class Study(Base):
    """A study: its validated configuration (JSON) and what was derived from it at creation."""

    __tablename__ = "study"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    name: Mapped[str] = mapped_column(String(200))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    algorithm: Mapped[str] = mapped_column(String(50))
    #: Typical number of elicitor queries (a simulated run at creation); places the interleaved checks.
    expected_queries: Mapped[int] = mapped_column(Integer)
    open_enrolment: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: Bumped by every configuration change; a session's first answer is only stored if the version it
    #: was computed from is still current (the change and the first answer cannot both succeed).
    config_version: Mapped[int] = mapped_column(Integer, default=0, server_default="0")

    sessions: Mapped[list[ElicitationSession]] = relationship(back_populates="study")


class ElicitationSession(Base):
    """One participant's session: study, seed and status; its state is the replay of its answer log."""

    __tablename__ = "elicitation_session"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=uuid.uuid4)
    study_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("study.id"), index=True)
    #: SHA-256 of the participant's secret link token; the token itself is never stored.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    participant_code: Mapped[str | None] = mapped_column(String(200))
    #: Seeds positions, tie-breaks, practice, check and evaluation pairs (never the elicitor itself).
    seed: Mapped[int] = mapped_column(BigInteger)
    algorithm: Mapped[str] = mapped_column(String(50))
    algorithm_version: Mapped[str] = mapped_column(String(50))
    status: Mapped[str] = mapped_column(String(20), default=SessionStatus.INVITED.value)
    completion_code: Mapped[str | None] = mapped_column(String(32))
    #: The study's panel parameters as the participant's link carried them (read-only; exported).
    panel: Mapped[dict[str, str] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    consented_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    #: A coordinator trying the study as a participant: kept out of paces, estimates, results, panel and
    #: exports unless they are asked for.
    pilot: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    study: Mapped[Study] = relationship(back_populates="sessions")


class SessionLink(Base):
    """A further personal link to a session: a participant code that comes back from another device gets
    one, so that every link handed out keeps working. Like the session's own token, only its digest is
    stored."""

    __tablename__ = "session_link"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("elicitation_session.id"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Answer(Base):
    """One row of a session's append-only log: an answer to the query shown at ``seq``, or an undo.

    ``query`` holds the pair in the elicitor's order (``first``/``second`` rates plus the elicitor's audit
    fields); ``shown`` the left/right rates and confusion matrices as displayed; ``swapped`` is true when
    the elicitor's ``first`` was shown on the right. ``preferred`` is the participant's choice as shown
    (left = ``first``), ``elicitor_answer`` what the elicitor receives (after mapping and tie-break).
    """

    __tablename__ = "answer"
    __table_args__ = (UniqueConstraint("session_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("elicitation_session.id"), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    action: Mapped[str] = mapped_column(String(10), default=LogAction.ANSWER.value)
    phase: Mapped[str | None] = mapped_column(String(20))
    #: Position within its phase (practice 0.., check 0.., ...) among the effective answers.
    phase_index: Mapped[int | None] = mapped_column(Integer)
    query: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    shown: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    swapped: Mapped[bool | None] = mapped_column(Boolean)
    preferred: Mapped[str | None] = mapped_column(String(10))
    elicitor_answer: Mapped[bool | None] = mapped_column(Boolean)
    #: The seeded coin that decided a "tie" answer (null when the answer was not a tie).
    tie_break: Mapped[bool | None] = mapped_column(Boolean)
    #: Check rows: what a consistent answer would have been and whether it was given.
    check: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    time_on_page_ms: Mapped[int | None] = mapped_column(Integer)
    hidden_ms: Mapped[int | None] = mapped_column(Integer)
    #: Server-side time since the previous log row (or consent), a fallback when the page timer is missing.
    server_elapsed_ms: Mapped[int | None] = mapped_column(Integer)
    #: Answer rows: the `AnswerChannel` it came through (null: recorded before channels were logged).
    channel: Mapped[str | None] = mapped_column(String(10))
    #: Undo rows: the seq of the answer they undid. Answer rows: when they were undone (kept for audit).
    undoes_seq: Mapped[int | None] = mapped_column(Integer)
    undone_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ElicitorCheckpoint(Base):
    """The active elicitor's saved state after a session's first ``n_answers`` elicitor answers.

    A cache beside the log, one row per session (rewritten as the session goes on): any worker that finds
    ``log_digest`` equal to the digest of the log it read continues from ``state`` instead of replaying
    the log (`app.sessions.checkpoints`). Losing or corrupting it costs a replay, never an answer.
    """

    __tablename__ = "elicitor_checkpoint"

    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("elicitation_session.id"), primary_key=True)
    n_answers: Mapped[int] = mapped_column(Integer)
    last_seq: Mapped[int] = mapped_column(Integer)
    log_digest: Mapped[str] = mapped_column(String(64))
    state: Mapped[bytes] = mapped_column(LargeBinary)
    saved_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Result(Base):
    """The committed outcome of a finished session (a cache: replaying the log rebuilds it)."""

    __tablename__ = "result"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("elicitation_session.id"), unique=True)
    metric: Mapped[dict[str, Any]] = mapped_column(JSON)
    num_queries: Mapped[int] = mapped_column(Integer)
    details: Mapped[dict[str, Any]] = mapped_column(JSON)
    evaluation: Mapped[dict[str, Any]] = mapped_column(JSON)
    checks: Mapped[dict[str, Any]] = mapped_column(JSON)
    summary: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class StudyStatus(enum.StrEnum):
    """Enrolment state: only OPEN studies accept new participants or consents; data is never dropped."""

    DRAFT = "draft"
    OPEN = "open"
    PAUSED = "paused"
    CLOSED = "closed"


class StudyControl(Base):
    """Back-office state of a study: owner, enrolment status, planner timing, open-link expiry."""

    __tablename__ = "study_control"

    study_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("study.id"), primary_key=True)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("app_user.id"), index=True)
    status: Mapped[str] = mapped_column(String(20), default=StudyStatus.DRAFT.value)
    #: Seconds per comparison the planner assumes (None: measured from earlier sessions, else a default).
    seconds_per_query: Mapped[float | None] = mapped_column(Float)
    #: The open-enrolment link stops accepting new participants after this time (None: no expiry).
    enrolment_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: When the study was closed; answers given later (by sessions already under way) are marked late.
    closed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Invitation(Base):
    """A personal invitation: an invited (not yet consented) session, with an optional expiry."""

    __tablename__ = "invitation"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("study.id"), index=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("elicitation_session.id"), unique=True)
    label: Mapped[str | None] = mapped_column(String(200))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[int | None] = mapped_column(ForeignKey("app_user.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
