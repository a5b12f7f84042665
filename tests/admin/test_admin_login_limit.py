"""The login limit: atomic under simultaneous attempts, and no lock-out of a coordinator by e-mail alone."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest
from admin_support import PASSWORD

from app.admin import auth
from app.admin.auth import (
    ACCOUNT_FACTOR,
    CLIENT_FACTOR,
    MAX_FAILED_LOGINS,
    AuthError,
    TooManyAttemptsError,
    authenticate,
)

ALICE = "alice@example.org"


def attempt(app: Any, email: str, password: str, address: str) -> str:
    """One login through `authenticate` on a session of its own: "ok", "wrong" or "refused"."""
    request = SimpleNamespace(client=SimpleNamespace(host=address))
    with app.state.sessionmaker() as db:
        try:
            authenticate(db, request, email, password)  # type: ignore[arg-type]
        except TooManyAttemptsError:
            return "refused"
        except AuthError:
            return "wrong"
    return "ok"


def test_login_limit_holds_under_simultaneous_attempts(
    app: Any, accounts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[str] = []
    verify = auth.verify_password

    def counting(password_hash: str, password: str) -> bool:
        checked.append(password)
        return verify(password_hash, password)

    monkeypatch.setattr(auth, "verify_password", counting)
    passwords = [f"wrong guess {i}" for i in range(39)] + [PASSWORD]
    start = threading.Barrier(len(passwords))
    outcomes: list[str] = []

    def one(password: str) -> None:
        start.wait()
        outcomes.append(attempt(app, ALICE, password, "203.0.113.9"))

    threads = [threading.Thread(target=one, args=(password,)) for password in passwords]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == len(passwords)
    # At most the limit's worth of wrong passwords reach the check (a success frees its slot).
    assert len([password for password in checked if password != PASSWORD]) <= MAX_FAILED_LOGINS
    assert outcomes.count("wrong") <= MAX_FAILED_LOGINS
    assert outcomes.count("refused") >= len(passwords) - MAX_FAILED_LOGINS - outcomes.count("ok")
    # Once the limit holds, the right password is refused as well.
    assert attempt(app, ALICE, PASSWORD, "203.0.113.9") == "refused"


def test_guesser_at_another_address_does_not_lock_out_the_coordinator(
    app: Any, accounts: dict[str, Any]
) -> None:
    for _ in range(MAX_FAILED_LOGINS):
        assert attempt(app, ALICE, "guess", "198.51.100.7") == "wrong"
    assert attempt(app, ALICE, PASSWORD, "198.51.100.7") == "refused"
    assert attempt(app, ALICE, PASSWORD, "192.0.2.10") == "ok"


def test_one_address_trying_many_accounts_is_stopped(app: Any, accounts: dict[str, Any]) -> None:
    limit = MAX_FAILED_LOGINS * CLIENT_FACTOR
    for index in range(limit):
        assert attempt(app, f"user{index}@example.org", "guess", "198.51.100.8") == "wrong"
    assert attempt(app, "bob@example.org", PASSWORD, "198.51.100.8") == "refused"


def test_distributed_guessing_stops_but_known_addresses_still_log_in(
    app: Any, accounts: dict[str, Any]
) -> None:
    assert attempt(app, ALICE, PASSWORD, "192.0.2.10") == "ok"  # alice's usual address
    limit = MAX_FAILED_LOGINS * ACCOUNT_FACTOR
    for index in range(limit):
        assert attempt(app, ALICE, "guess", f"10.0.{index // 250}.{index % 250}") == "wrong"
    # Guessing from yet another address is refused, even with the right password...
    assert attempt(app, ALICE, PASSWORD, "10.9.9.9") == "refused"
    # ...but alice, at an address she logged in from before, is not locked out.
    assert attempt(app, ALICE, PASSWORD, "192.0.2.10") == "ok"
