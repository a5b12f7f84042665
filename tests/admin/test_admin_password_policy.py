"""Passwords: blank, low-variety, common and e-mail-based passwords are refused, with advice (zxcvbn)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from admin_support import PASSWORD

from app.admin.auth import AdminError, check_password, create_user, set_password, verify_password
from app.admin.models import User
from app.cli import main
from app.settings import Settings

EMAIL = "coordinator@example.org"


@pytest.mark.parametrize(
    ("password", "message"),
    [
        (" " * 12, "must not be blank"),
        ("\t \n" * 5, "must not be blank"),
        ("aaaaaaaaaaaa", 'too easy to guess: Repeats like "aaa" are easy to guess.'),
        ("abcabcabcabc", "too easy to guess: Repeats like"),
        ("password1234", "too easy to guess: This is a very common password."),
        ("qwertyuiop12", "too easy to guess"),
        ("123456789012", "too easy to guess"),
        ("coordinator@example.org", "too easy to guess"),  # the account's own e-mail address
        ("Coordinator2026", "too easy to guess"),
        ("short", "at least 12 characters"),
    ],
)
def test_weak_passwords_are_refused_with_a_reason(password: str, message: str) -> None:
    with pytest.raises(AdminError) as caught:
        check_password(password, EMAIL)
    assert message in caught.value.message


@pytest.mark.parametrize(
    "password",
    [PASSWORD, "Tr0ub4dor&3-horse", "ferngully-octopus-1987-lantern", secrets.token_urlsafe(768)[:1024]],
)
def test_strong_passwords_pass(password: str) -> None:
    check_password(password, EMAIL)


def test_create_user_and_set_password_refuse_weak_passwords(app: Any) -> None:
    with app.state.sessionmaker() as db:
        with pytest.raises(AdminError, match="too easy to guess"):
            create_user(db, EMAIL, "password1234", "coordinator")
        assert db.query(User).count() == 0
        user = create_user(db, EMAIL, PASSWORD, "coordinator")
        with pytest.raises(AdminError, match="must not be blank"):
            set_password(db, user, " " * 16)
        db.refresh(user)
        assert verify_password(user.password_hash, PASSWORD)


def test_the_cli_refuses_a_weak_password_with_the_advice(
    cli_env: Settings, app: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", "aaaaaaaaaaaa")
    assert main(["admin", "create", "--email", EMAIL, "--role", "coordinator"]) == 2
    assert 'error: the password is too easy to guess: Repeats like "aaa"' in capsys.readouterr().err
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", PASSWORD)
    assert main(["admin", "create", "--email", EMAIL, "--role", "coordinator"]) == 0
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", "password1234")
    assert main(["admin", "set-password", "--email", EMAIL]) == 2
    assert "This is a very common password." in capsys.readouterr().err
    with app.state.sessionmaker() as db:
        (user,) = db.query(User).all()
        assert verify_password(user.password_hash, PASSWORD)
