"""Participant tokens never reach the access log: the token in a session's path is a password.

Only the SHA-256 of a participant's token is stored, so a log line must not carry the token itself.
`TokenRedactor` (installed on uvicorn's access logger by the app factory) writes the path with the token
replaced by ``~`` and the first 12 hex digits of its SHA-256, the same prefix as the stored ``token_hash``,
so a coordinator can still tell which session a request belonged to.
"""

from __future__ import annotations

import hashlib
import logging
import re

__all__ = ["ACCESS_LOGGER", "TokenRedactor", "install", "redact_path"]

ACCESS_LOGGER = "uvicorn.access"
#: ``/sessions/{token}`` and ``/api/v1/sessions/{token}`` (and everything below them).
_SESSION_PATH = re.compile(r"(/sessions/)([^/?#]+)")
_DIGEST_CHARS = 12


def _digest(match: re.Match[str]) -> str:
    token = match.group(2)
    return f"{match.group(1)}~{hashlib.sha256(token.encode('utf-8')).hexdigest()[:_DIGEST_CHARS]}"


def redact_path(path: str) -> str:
    """``path`` with every participant token replaced by ``~`` and its digest prefix."""
    return _SESSION_PATH.sub(_digest, path)


class TokenRedactor(logging.Filter):
    """Rewrites the path of uvicorn's access records ``(client, method, path, http_version, status)``."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_path(args[2]), *args[3:])
        return True


def install() -> None:
    """Add the redactor to uvicorn's access logger (once per process, however many apps are built)."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(item, TokenRedactor) for item in logger.filters):
        logger.addFilter(TokenRedactor())
