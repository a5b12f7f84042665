"""The access log never carries a participant's token, only a prefix of its SHA-256."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pytest

from app.access_log import ACCESS_LOGGER, redact_path

TOKEN = "Zq3x_secret-participant-token-0123456789abcdef"


def test_redact_path_replaces_every_session_token() -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()[:12]
    assert redact_path(f"/sessions/{TOKEN}/answers?seq=3") == f"/sessions/~{digest}/answers?seq=3"
    assert redact_path(f"/api/v1/sessions/{TOKEN}") == f"/api/v1/sessions/~{digest}"
    assert redact_path("/admin/studies/abc/monitor") == "/admin/studies/abc/monitor"


def test_access_log_lines_of_the_app_carry_no_token(app: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    logger = logging.getLogger(ACCESS_LOGGER)
    # The record exactly as uvicorn's access logger makes it.
    logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "POST", f"/sessions/{TOKEN}/answers", "1.1", 303)
    lines = [record.getMessage() for record in caplog.records if record.name == ACCESS_LOGGER]
    assert lines and TOKEN not in lines[-1]
    assert hashlib.sha256(TOKEN.encode()).hexdigest()[:12] in lines[-1]
