"""Elicitor checkpoints beside the answer log, so that any worker continues a session without replaying it.

A worker whose cache misses a session would replay its whole log: for the active elicitor that repeats every
particle update and candidate search, about 15 ms an answer, so a participant whose requests alternate
between workers paid for the whole log on every request. Instead, whenever a worker has computed an active
elicitor's next query, it saves the elicitor's state (`elicitation.active.ActiveElicitor.checkpoint`) with
how many elicitor answers it absorbed, the seq of the last one, and a digest of that part of the log.

Another worker uses the checkpoint only if the digest of the log it has just read is the same (same
session, seed, algorithm version and study configuration version; the same answers in the same rows with
the same stored queries) and the core accepts the bytes (their own digest, format and configuration
fingerprint). It then replays and checks only the answers after the checkpoint. Anything else (no
checkpoint, an undo since, a damaged or foreign one, a mismatch after it) falls back to the full replay, so
the log stays the source of truth and the checkpoint only ever saves time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import struct
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from elicitation import CheckpointError, Pending, ReplayMismatchError
from elicitation.active import ActiveElicitor

from .. import repository as repo
from ..models import utcnow
from .replay import replay_verified
from .runtime import ElicitorState, StudyRuntime

__all__ = [
    "DIGEST_LABEL",
    "RecordedSession",
    "encoded",
    "log_digest",
    "restore_state",
    "save_blob",
    "save_state",
    "waiting_active_elicitor",
]

logger = logging.getLogger("app.sessions.checkpoints")

#: Heads every log digest; change it when what the digest covers changes, and old checkpoints are ignored.
DIGEST_LABEL = "elicitor-checkpoint/1"
_ROW = struct.Struct("<q?")


class RecordedSession(Protocol):
    """What a checkpoint is bound to: a session row, or its copy outside the request's transaction."""

    @property
    def id(self) -> Any: ...
    @property
    def seed(self) -> int: ...
    @property
    def algorithm(self) -> str: ...
    @property
    def algorithm_version(self) -> str | None: ...


def log_digest(runtime: StudyRuntime, session: RecordedSession, rows: Sequence[Any]) -> str | None:
    """SHA-256 (hex) binding a checkpoint to the session's elicitor and to ``rows``, its elicitation prefix.

    None when a stored query has no regular rate arrays (such a log is left to the replay to report).
    """
    digest = hashlib.sha256()
    binding = [
        DIGEST_LABEL,
        str(session.id),
        session.seed,
        session.algorithm,
        session.algorithm_version,
        runtime.config_version,
    ]
    digest.update(json.dumps(binding).encode())
    try:
        first = np.asarray([row.query["first"] for row in rows], dtype="<f8")
        second = np.asarray([row.query["second"] for row in rows], dtype="<f8")
    except (KeyError, TypeError, ValueError):
        return None
    for row in rows:
        digest.update(_ROW.pack(row.seq, bool(row.elicitor_answer)))
    digest.update(repr(first.shape).encode() + first.tobytes() + second.tobytes())
    return digest.hexdigest()


def restore_state(
    db: Session, runtime: StudyRuntime, session: RecordedSession, elicitation: list[Any]
) -> tuple[ElicitorState, int] | None:
    """The elicitor state after ``elicitation`` continued from the session's checkpoint, and where that stood.

    None when there is no checkpoint this log can use; the caller then replays the whole log.
    """
    saved = repo.get_checkpoint(db, session.id)
    if saved is None or saved.n_answers > len(elicitation):
        return None
    n = saved.n_answers
    if saved.last_seq != (elicitation[n - 1].seq if n else -1):
        return None
    expected = log_digest(runtime, session, elicitation[:n])
    if expected is None or not hmac.compare_digest(saved.log_digest, expected):
        return None
    blob = bytes(saved.state)

    def restored() -> Any:
        fresh = runtime.elicitor(session.seed, session.algorithm_version)
        if not isinstance(fresh, ActiveElicitor):
            raise CheckpointError(f"the session's elicitor ({fresh.name}) takes no checkpoints")
        restored = fresh.restore(blob)
        if restored.n_answered != n:
            raise CheckpointError(f"the checkpoint holds {restored.n_answered} answers, its row says {n}")
        return restored

    try:
        return replay_verified(restored, elicitation, after=n), n
    except (CheckpointError, ReplayMismatchError) as exc:
        # A mismatch after a checkpoint is decided by the full replay, not by the checkpoint.
        logger.warning("session %s: checkpoint after %d answers not used: %s", session.id, n, exc)
        return None


def save_state(
    db: Session,
    runtime: StudyRuntime,
    session: RecordedSession,
    elicitation: list[Any],
    state: ElicitorState,
) -> bool:
    """Save ``state`` (after ``elicitation``) as the session's checkpoint and commit; True if it was saved.

    Only an active elicitor waiting for an answer has one. The caller's transaction must hold nothing
    uncommitted. A failure to save (a concurrent save, a busy database) is logged and costs nothing but a
    later replay.
    """
    blob = encoded(state)
    return blob is not None and save_blob(db, runtime, session, elicitation, blob)


def waiting_active_elicitor(state: ElicitorState | None) -> ActiveElicitor[Any] | None:
    """The active elicitor of ``state`` if it waits for an answer (the states that have checkpoints)."""
    if isinstance(state, Pending) and isinstance(state.elicitor, ActiveElicitor):
        return state.elicitor
    return None


def encoded(state: ElicitorState) -> bytes | None:
    """The checkpoint of ``state``: only an active elicitor waiting for an answer has one (else None)."""
    elicitor = waiting_active_elicitor(state)
    if elicitor is None:
        return None
    try:
        blob: bytes = elicitor.checkpoint()
    except CheckpointError:
        return None
    return blob


def save_blob(
    db: Session, runtime: StudyRuntime, session: RecordedSession, elicitation: Sequence[Any], blob: bytes
) -> bool:
    """Save ``blob``, an active elicitor's checkpoint after ``elicitation``, as the session's checkpoint and
    commit (`save_state`, or the background's `app.sessions.speculation`); True if it was saved."""
    digest = log_digest(runtime, session, elicitation)
    if digest is None:
        return False
    values = {
        "session_id": session.id,
        "n_answers": len(elicitation),
        "last_seq": elicitation[-1].seq if elicitation else -1,
        "log_digest": digest,
        "state": blob,
        "saved_at": utcnow(),
    }
    try:
        repo.save_checkpoint(db, values)
        db.commit()
    except IntegrityError:
        db.rollback()  # another worker saved the first checkpoint of this session at the same moment
        return False
    except OperationalError as exc:
        db.rollback()
        logger.warning("session %s: checkpoint not saved: %s", session.id, exc)
        return False
    return True
