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
    seq = hashlib.sha256(b"3").hexdigest()[:12]
    assert redact_path(f"/sessions/{TOKEN}/answers?seq=3") == f"/sessions/~{digest}/answers?seq=~{seq}"
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


def _digest(value: str) -> str:
    return "~" + hashlib.sha256(value.encode()).hexdigest()[:12]


def test_redact_path_hashes_panel_ids_and_participant_codes_in_the_query() -> None:
    study = "/studies/2f1c7e0a-0000-4000-8000-000000000001/join"
    path = (
        f"{study}?PROLIFIC_PID=5f8a9b0c1d2e3f4a5b6c7d8e&STUDY_ID=abc&SESSION_ID=x%20y&participant_code=P-17"
    )
    redacted = redact_path(path)
    for value in ("5f8a9b0c1d2e3f4a5b6c7d8e", "abc", "x%20y", "P-17"):
        assert value not in redacted.partition("?")[2]
    assert redacted == (
        f"{study}?PROLIFIC_PID={_digest('5f8a9b0c1d2e3f4a5b6c7d8e')}&STUDY_ID={_digest('abc')}"
        f"&SESSION_ID={_digest('x%20y')}&participant_code={_digest('P-17')}"
    )
    # A bare flag and an empty value have nothing to hide; the path before the query is kept.
    assert redact_path("/admin/login?next=&flag") == "/admin/login?next=&flag"


def test_access_log_lines_of_a_panel_join_carry_no_panel_id(
    app: Any, study: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    logger = logging.getLogger(ACCESS_LOGGER)
    panel_id = "5f8a9b0c1d2e3f4a5b6c7d8e"
    path = f"/studies/{study.id}/join?PROLIFIC_PID={panel_id}&participant_code=PANEL-17"
    logger.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", path, "1.1", 200)
    line = [record.getMessage() for record in caplog.records if record.name == ACCESS_LOGGER][-1]
    assert panel_id not in line and "PANEL-17" not in line
    assert _digest(panel_id) in line and f"/studies/{study.id}/join?" in line
