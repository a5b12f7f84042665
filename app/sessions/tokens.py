"""Participant tokens: stored only as SHA-256 digests, looked up, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from sqlalchemy.orm import Session

from .. import repository as repo
from ..errors import NotFoundError

__all__ = ["TOKEN_BYTES", "completion_code", "hash_token", "load_session", "new_token"]

#: Entropy of a participant token (``secrets.token_urlsafe``): 256 bits.
TOKEN_BYTES = 32
_TOKEN_LENGTH = 43
_TOKEN_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def hash_token(token: str) -> str:
    """SHA-256 hex digest of a token; only digests are stored."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def _well_formed(token: str) -> bool:
    return len(token) == _TOKEN_LENGTH and set(token) <= _TOKEN_ALPHABET


def load_session(db: Session, token: str) -> repo.SessionRecord:
    """The session of ``token`` (a read-only record); `NotFoundError` for a malformed or unknown token (never
    says which)."""
    if not _well_formed(token):
        raise NotFoundError()
    digest = hash_token(token)
    session = repo.session_by_token_hash(db, digest)
    stored = session.token_hash if session is not None else None
    if session is None:
        # Not the session's own token: perhaps a further link (rare, so looked up only now).
        link = repo.get_session_link(db, digest)
        if link is not None:
            session, stored = repo.session_by_id(db, link.session_id), link.token_hash
    if session is None or stored is None or not hmac.compare_digest(stored, digest):
        raise NotFoundError()
    return session


def completion_code() -> str:
    """The code a finished participant hands back to the recruiting platform (e.g. ``3FA9C-01B7D``)."""
    raw = secrets.token_hex(5).upper()
    return f"{raw[:5]}-{raw[5:]}"
