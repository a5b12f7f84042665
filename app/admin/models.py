"""Back-office tables: accounts, API tokens, login attempts, exclusions and study snapshots.

They live beside the participant tables on the same ``Base.metadata``; none of them changes a participant
row. The study control and invitation tables, which enrolment reads too, are in `app.models`.
"""

from __future__ import annotations

import enum
import uuid
from datetime import datetime

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from ..db import Base
from ..models import utcnow

__all__ = [
    "ApiToken",
    "Exclusion",
    "LoginAttempt",
    "Role",
    "StudySnapshot",
    "User",
]


class Role(enum.StrEnum):
    """Admins see and do everything; coordinators only their own studies."""

    ADMIN = "admin"
    COORDINATOR = "coordinator"


class User(Base):
    """A back-office account; the password is stored only as an argon2id hash."""

    __tablename__ = "app_user"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    #: Bumped on password change or "log out everywhere": older session cookies stop working.
    session_epoch: Mapped[int] = mapped_column(Integer, default=0)


class ApiToken(Base):
    """A revocable bearer token; only its SHA-256 digest is stored (the token is shown once)."""

    __tablename__ = "api_token"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("app_user.id"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class LoginAttempt(Base):
    """Every password login attempt (failed ones drive the rate limit); kept as an audit trail."""

    __tablename__ = "login_attempt"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    email: Mapped[str] = mapped_column(String(254), index=True)
    client: Mapped[str] = mapped_column(String(100))
    succeeded: Mapped[bool] = mapped_column(Boolean)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class Exclusion(Base):
    """A coordinator's decision to leave a session out of the analysis; never deleted, only lifted."""

    __tablename__ = "exclusion"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("elicitation_session.id"), index=True)
    reason: Mapped[str] = mapped_column(Text)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("app_user.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    lifted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    lifted_by: Mapped[int | None] = mapped_column(ForeignKey("app_user.id"))


class StudySnapshot(Base):
    """A study archive taken when the study was closed: an export that is kept, whatever happens later.

    Stored as gzip-compressed JSON, written and read as a stream, so a study of thousands of sessions
    never has to be held in memory as one object.
    """

    __tablename__ = "study_snapshot"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("study.id"), index=True)
    reason: Mapped[str] = mapped_column(String(50))
    created_by: Mapped[int | None] = mapped_column(ForeignKey("app_user.id"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    archive_gz: Mapped[bytes] = mapped_column(LargeBinary)
