"""Application settings from the environment (pydantic-settings); secrets never have defaults in code."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Every knob of the app; read from environment variables (and an optional ``.env`` file)."""

    model_config = SettingsConfigDict(env_file=".env", env_file_encoding="utf-8", extra="ignore")

    #: SQLAlchemy URL; SQLite by default, e.g. ``postgresql+psycopg://user@host:5432/db`` for PostgreSQL.
    database_url: str = "sqlite:///./elicitation.db"
    #: PostgreSQL only: put every table in this schema (tests use a throw-away schema per run).
    database_schema: str | None = None
    #: FULL fsyncs the WAL on every commit, so an acknowledged answer survives even a power loss;
    #: NORMAL (with WAL) survives a killed process but may lose the last commits on power loss.
    sqlite_synchronous: Literal["FULL", "NORMAL"] = "FULL"
    #: Absolute base of the links the app prints (CLI) and returns (API ``url``); empty = request's base.
    public_base_url: str = ""
    #: Live elicitor generators kept in memory (sessions); resuming without a cache hit replays the log.
    session_cache_size: int = Field(default=512, ge=0)
    #: Compute an active elicitor's two possible next states in the background while its participant thinks
    #: (`SPECULATIVE_QUESTIONS`; `app.sessions.speculation`), and save its checkpoints there too: an answer
    #: then only takes the state its answer chose. The questions and results are the same either way; off,
    #: every answer computes its next question (and saves its checkpoint) itself, and no CPU goes to the
    #: branch not taken.
    speculative_questions: bool = True
    #: Threads that run a worker's requests at once (`REQUEST_THREADS`). A request is mostly Python and small
    #: numpy calls under one interpreter lock, so more threads only contend for it: anyio's default of 40
    #: nearly doubled the CPU of a demo answer when many participants answered at once (docs/scaling.md,
    #: "Where the time of an answer goes"). Raise it when long back-office requests (closing or importing a
    #: large study) must not hold back participants.
    request_threads: int = Field(default=2, ge=1)
    #: Log full tracebacks of unexpected errors (always on; the participant only ever sees a generic page).
    debug: bool = False
    #: Bearer token Prometheus presents to scrape ``/metrics``; unset, ``/metrics`` does not exist (404).
    metrics_token: str | None = None
    #: Seconds a request's body may take to arrive after its headers (every route; 408 and the connection
    #: closed after that). The largest body is a 50 MB study archive.
    body_timeout_s: float = Field(default=120.0, gt=0)
    #: Secret for signing cookies of the back office (later issues); only ever taken from the environment.
    secret_key: str | None = None

    @field_validator("public_base_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("database_schema")
    @classmethod
    def _identifier(cls, value: str | None) -> str | None:
        if value is not None and not value.replace("_", "").isalnum():
            raise ValueError("database_schema must be letters, digits and underscores only")
        return value or None
