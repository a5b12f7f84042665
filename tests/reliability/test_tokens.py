"""Secrets: participant tokens are unguessable (>= 128 bits), stored only as digests and compared in
constant time; nothing secret is read from the repository."""

from __future__ import annotations

import base64
import hmac
import subprocess
from pathlib import Path
from typing import Any

import pytest
from reliability_support import PROJECT_ROOT, create_small_study
from sqlalchemy import select

from app import sessions
from app.main import create_app
from app.models import ElicitationSession
from app.sessions import tokens as tokens_module
from app.settings import Settings

MIN_TOKEN_BITS = 128


def _new_tokens(settings: Settings, count: int) -> tuple[Any, list[str]]:
    study = create_small_study(settings)
    app = create_app(settings)
    tokens = []
    with app.state.sessionmaker() as db:
        for _ in range(count):
            _session, token = sessions.create_session(db, app.state.session_cache, study.id)
            tokens.append(token)
    return app, tokens


def test_participant_tokens_are_unguessable_and_stored_as_digests(sqlite_file_settings: Settings) -> None:
    app, tokens = _new_tokens(sqlite_file_settings, 200)
    try:
        assert len(set(tokens)) == len(tokens)
        for token in tokens:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            assert len(raw) * 8 >= MIN_TOKEN_BITS
        assert sessions.TOKEN_BYTES * 8 >= MIN_TOKEN_BITS
        with app.state.sessionmaker() as db:
            stored = db.scalars(select(ElicitationSession.token_hash)).all()
        assert sorted(stored) == sorted(sessions.hash_token(token) for token in tokens)
    finally:
        app.state.engine.dispose()
    # Not even the database file holds a token (WAL included): only SHA-256 digests.
    path = Path(sqlite_file_settings.database_url.removeprefix("sqlite:///"))
    content = b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))
    assert not any(token.encode() in content for token in tokens)


def test_token_lookup_compares_digests_in_constant_time(
    sqlite_file_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, tokens = _new_tokens(sqlite_file_settings, 1)
    compared: list[tuple[Any, Any]] = []
    original = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return original(a, b)

    monkeypatch.setattr(tokens_module.hmac, "compare_digest", spy)
    try:
        with app.state.sessionmaker() as db:
            view = sessions.get_view(db, app.state.session_cache, tokens[0])
        assert view.status.value == "invited"
        assert compared == [(sessions.hash_token(tokens[0]),) * 2]
    finally:
        app.state.engine.dispose()


def test_no_secret_comes_from_the_repository() -> None:
    """Secrets have no defaults in code and no ``.env``-style file is tracked."""
    assert Settings.model_fields["secret_key"].default is None
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    leaked = [
        name
        for name in tracked
        if Path(name).name in {".env", ".env.local"} or name.endswith((".pem", ".key"))
    ]
    assert leaked == []
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", ".env"], cwd=PROJECT_ROOT, capture_output=True, check=False
    )
    assert ignored.returncode == 0, ".env (read by the settings) must be git-ignored"
