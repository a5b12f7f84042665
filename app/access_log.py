"""Participant tokens, codes and panel IDs never reach the access log in clear.

Only the SHA-256 of a participant's token is stored, so a log line must not carry the token itself; and a
participant code or panel ID (``join?PROLIFIC_PID=…``, ``?participant_code=…``) is enough to find a
person on their panel. `TokenRedactor` (installed on uvicorn's access logger by the app factory) writes
the path with the token in it, and the value of every query parameter, replaced by ``~`` and the first
12 hex digits of its SHA-256 (for a token, the same prefix as the stored ``token_hash``), so a
coordinator can still tell which session or which panel ID a request belonged to, and nobody else can.
"""

from __future__ import annotations

import hashlib
import logging
import re

__all__ = ["ACCESS_LOGGER", "TokenRedactor", "install", "redact_path"]

ACCESS_LOGGER = "uvicorn.access"
#: ``/sessions/{token}`` and ``/api/v1/sessions/{token}`` (and everything below them).
_SESSION_PATH = re.compile(r"(/sessions/)([^/?#]+)")
#: A query parameter's value: from ``=`` to the next ``&``, ``;`` or ``#``.
_QUERY_VALUE = re.compile(r"(=)([^&;#]+)")
_DIGEST_CHARS = 12


def _digest(match: re.Match[str]) -> str:
    secret = match.group(2)
    return f"{match.group(1)}~{hashlib.sha256(secret.encode('utf-8')).hexdigest()[:_DIGEST_CHARS]}"


def redact_path(path: str) -> str:
    """``path`` with every participant token and every query value replaced by ``~`` and its digest
    prefix (a query value is digested as it was sent, percent-encoding and all)."""
    route, mark, query = path.partition("?")
    return _SESSION_PATH.sub(_digest, route) + mark + _QUERY_VALUE.sub(_digest, query)


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
