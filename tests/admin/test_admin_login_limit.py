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
from app.admin.models import LoginAttempt
from app.models import utcnow

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
    # Refused attempts count for nothing (on PostgreSQL some of the burst may be refused while fewer than
    # the limit's worth were checked): the address may go on until exactly the limit's worth of wrong
    # passwords were checked in all, and is then refused, the right password as well.
    for _ in range(MAX_FAILED_LOGINS + 1):
        if attempt(app, ALICE, "one more guess", "203.0.113.9") == "refused":
            break
    assert len([password for password in checked if password != PASSWORD]) == MAX_FAILED_LOGINS
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


def test_refused_attempts_do_not_count_so_one_address_cannot_lock_an_account_out(
    app: Any, accounts: dict[str, Any]
) -> None:
    # One address keeps trying long after it is refused: more attempts than the account's whole budget.
    outcomes = [
        attempt(app, ALICE, "guess", "198.51.100.20") for _ in range(MAX_FAILED_LOGINS * ACCOUNT_FACTOR + 10)
    ]
    assert outcomes.count("wrong") == MAX_FAILED_LOGINS
    assert outcomes.count("refused") == len(outcomes) - MAX_FAILED_LOGINS
    with app.state.sessionmaker() as db:
        assert db.query(LoginAttempt).filter_by(client="198.51.100.20").count() == MAX_FAILED_LOGINS
    # The coordinator, from an address she never used, still gets in.
    assert attempt(app, ALICE, PASSWORD, "192.0.2.77") == "ok"


def test_one_address_counts_at_most_its_share_of_the_account_budget(
    app: Any, accounts: dict[str, Any]
) -> None:
    # A burst from one address left more failures than the whole account budget (simultaneous attempts
    # are all recorded before any is counted).
    with app.state.sessionmaker() as db:
        for _ in range(MAX_FAILED_LOGINS * ACCOUNT_FACTOR + 5):
            db.add(LoginAttempt(email=ALICE, client="198.51.100.21", succeeded=False, created_at=utcnow()))
        db.commit()
    assert attempt(app, ALICE, PASSWORD, "192.0.2.78") == "ok"
    # Spread over enough addresses, the budget still stops a guesser: 9 more addresses with 5 each.
    for index in range(ACCOUNT_FACTOR - 1):
        for _ in range(MAX_FAILED_LOGINS):
            assert attempt(app, ALICE, "guess", f"10.1.0.{index}") == "wrong"
    assert attempt(app, ALICE, PASSWORD, "10.2.0.1") == "refused"
