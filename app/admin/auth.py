"""Back-office authentication: argon2 passwords, signed session cookies, CSRF tokens, bearer tokens.

Browser sessions are stateless signed cookies (itsdangerous, HttpOnly, SameSite=Lax, Secure over HTTPS)
carrying the user id, the user's ``session_epoch`` (bumped at logout, so a copied cookie dies with it) and
a per-session CSRF token that every form must echo. Before login a separate signed cookie carries the
login form's CSRF token (double submit). API clients send ``Authorization: Bearer <token>``; only the
SHA-256 digest of a token is stored and a revoked token stops working at once. Failed logins are logged
and rate limited per account and address (see `_over_limit` for the policy).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Annotated, Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import Depends, Request
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import case, func, select
from sqlalchemy.orm import Session
from zxcvbn import zxcvbn

from ..deps import DbSessionDep
from ..errors import AppError
from ..models import utcnow
from .models import ApiToken, LoginAttempt, Role, User

__all__ = [
    "API_TOKEN_PREFIX",
    "LOGIN_CSRF_COOKIE",
    "MAX_FAILED_LOGINS",
    "MIN_PASSWORD_LENGTH",
    "NO_CREDENTIALS",
    "SESSION_COOKIE",
    "SESSION_MAX_AGE_S",
    "AdminError",
    "ApiUserDep",
    "AuthError",
    "LoginRequiredError",
    "Principal",
    "TooManyAttemptsError",
    "UiUserDep",
    "admitted_principal",
    "authenticate",
    "change_password",
    "check_csrf",
    "check_password",
    "cookie_principal",
    "create_api_token",
    "create_user",
    "find_user",
    "first_admin",
    "has_credentials",
    "hash_password",
    "issue_session_cookie",
    "list_api_tokens",
    "login_csrf_token",
    "login_required",
    "new_csrf_token",
    "revoke_api_token",
    "set_password",
    "verify_password",
]

logger = logging.getLogger("app.admin.auth")

SESSION_COOKIE = "elicit_admin"
LOGIN_CSRF_COOKIE = "elicit_login_csrf"
#: A browser session lasts a working day; then the coordinator logs in again.
SESSION_MAX_AGE_S = 12 * 3600
MIN_PASSWORD_LENGTH = 12
MAX_PASSWORD_LENGTH = 1024
#: The zxcvbn score (0-4) a password needs: 3 stands for about 10^8 to 10^10 guesses, "safely unguessable"
#: against online guessing and a slow hash like argon2 taken offline.
MIN_PASSWORD_SCORE = 3
#: zxcvbn's running time grows steeply with length; beyond this many characters only the start is rated
#: (a password whose first 64 characters are strong is strong).
RATED_PASSWORD_CHARACTERS = 64
_MORE_WORDS = "add another word or two; uncommon words are better."
#: Failed logins allowed per account and client address in `FAILURE_WINDOW`; times `CLIENT_FACTOR` per
#: client address, times `ACCOUNT_FACTOR` per account from addresses it never logged in from.
MAX_FAILED_LOGINS = 5
CLIENT_FACTOR = 4
ACCOUNT_FACTOR = 10
FAILURE_WINDOW = timedelta(minutes=15)
#: An address the account logged in from within this many days is trusted for that account.
KNOWN_ADDRESS_DAYS = 90
API_TOKEN_PREFIX = "elk_"
NO_CREDENTIALS = "log in or send Authorization: Bearer <token>"
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_HASHER = PasswordHasher()  # argon2id with the library's current recommended parameters


class AdminError(AppError):
    """A back-office request that cannot be done as asked (bad field, wrong state); 400 unless set."""

    status_code = 400
    code = "bad_request"
    title = "That did not work"

    def __init__(self, message: str, *, status_code: int = 400, code: str = "bad_request") -> None:
        super().__init__(message)
        self.status_code = status_code
        self.code = code


class AuthError(AppError):
    """No valid credentials (API: 401 with ``WWW-Authenticate: Bearer``)."""

    status_code = 401
    code = "unauthorized"
    title = "Please log in"


class LoginRequiredError(Exception):
    """A back-office page was requested without a valid session; the handler redirects to the login."""

    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


class TooManyAttemptsError(AdminError):
    """Too many failed logins recently for this address or client."""

    def __init__(self) -> None:
        super().__init__(
            "Too many failed attempts. Please wait 15 minutes and try again.",
            status_code=429,
            code="too_many_attempts",
        )


@dataclass(frozen=True)
class Principal:
    """Who is calling: the user and how (``cookie`` carries a CSRF token; ``token`` does not need one)."""

    user: User
    via: str
    csrf: str = ""

    @property
    def is_admin(self) -> bool:
        return self.user.role == Role.ADMIN.value


# -- passwords and users -----------------------------------------------------------------------------------


def check_password(password: str, email: str) -> None:
    """Refuse a password that is too short or long, blank, or easy to guess, with what to do instead.

    "Easy to guess" is zxcvbn's estimate (Dropbox's strength estimator: dictionaries of common passwords,
    names and words, keyboard patterns, repeats, sequences, dates) below `MIN_PASSWORD_SCORE`; the
    account's e-mail address counts as known to a guesser.
    """
    if len(password) < MIN_PASSWORD_LENGTH:
        raise _weak(f"the password must have at least {MIN_PASSWORD_LENGTH} characters")
    if len(password) > MAX_PASSWORD_LENGTH:
        raise _weak(f"the password must have at most {MAX_PASSWORD_LENGTH} characters")
    if not password.strip():
        raise _weak("the password must not be blank")
    known = [email, *re.split(r"[@._+-]+", email), "elicitation", "studio", "elicit"]
    rating = zxcvbn(password[:RATED_PASSWORD_CHARACTERS], user_inputs=[word for word in known if word])
    if rating["score"] < MIN_PASSWORD_SCORE:
        feedback = rating["feedback"]
        advice = " ".join([feedback["warning"], *feedback["suggestions"]]).strip()
        raise _weak(f"the password is too easy to guess: {advice or _MORE_WORDS}")


def _weak(message: str) -> AdminError:
    return AdminError(message, status_code=422, code="weak_password")


def hash_password(password: str) -> str:
    """An argon2id hash (salted, parameters embedded) of a password `check_password` accepted."""
    return _HASHER.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    try:
        return _HASHER.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def normalise_email(email: str) -> str:
    cleaned = email.strip().lower()
    if len(cleaned) > 254 or not _EMAIL.match(cleaned):
        raise AdminError(f"not an e-mail address: {email!r}")
    return cleaned


def create_user(db: Session, email: str, password: str, role: str) -> User:
    """Create an account (commits); refuses duplicates, unknown roles and weak passwords."""
    email = normalise_email(email)
    if role not in {item.value for item in Role}:
        raise AdminError(f"role must be one of {', '.join(item.value for item in Role)}, got {role!r}")
    if db.scalars(select(User).where(User.email == email)).first() is not None:
        raise AdminError(f"an account for {email} exists already", status_code=409, code="exists")
    check_password(password, email)
    user = User(email=email, password_hash=hash_password(password), role=role, session_epoch=0)
    db.add(user)
    db.commit()
    return user


def set_password(db: Session, user: User, password: str) -> None:
    """Change the password and end every browser session of the user (commits)."""
    check_password(password, user.email)
    user.password_hash = hash_password(password)
    user.session_epoch += 1
    db.commit()


def change_password(db: Session, request: Request, user: User, current: str, new: str) -> None:
    """The user changes their own password (commits): the current one is checked like a login (counted
    and rate limited, so a stolen session cannot guess it), the new one by `check_password`; every
    browser session of the user ends."""
    try:
        authenticate(db, request, user.email, current)
    except AuthError:
        raise AdminError(
            "the current password is not correct", status_code=403, code="wrong_password"
        ) from None
    set_password(db, user, new)


def find_user(db: Session, email: str) -> User | None:
    return db.scalars(select(User).where(User.email == email.strip().lower())).first()


def first_admin(db: Session) -> User | None:
    """The earliest administrator account (the one who set the installation up), or None."""
    return db.scalars(select(User).where(User.role == Role.ADMIN.value).order_by(User.id)).first()


# -- login with rate limit -----------------------------------------------------------------------------------


def _client(request: Request) -> str:
    return (request.client.host if request.client else "unknown")[:100]


def _failures(db: Session, since: datetime, *conditions: Any) -> int:
    statement = select(func.count()).where(
        LoginAttempt.succeeded.is_(False), LoginAttempt.created_at >= since, *conditions
    )
    return int(db.scalar(statement) or 0)


def _over_limit(db: Session, email: str, client: str) -> bool:
    """Whether the attempt just recorded exceeds one of the three buckets of the login policy.

    1. this account from this address: `MAX_FAILED_LOGINS` (a guesser is stopped; the coordinator at
       another address is not);
    2. this address, any account: `MAX_FAILED_LOGINS` x `CLIENT_FACTOR` (one client trying many accounts);
    3. this account from addresses it has never logged in from (within `KNOWN_ADDRESS_DAYS`):
       `MAX_FAILED_LOGINS` x `ACCOUNT_FACTOR` (a guesser spread over many addresses). Addresses the
       account logged in from before are exempt, so nobody can lock a coordinator out by e-mail alone.
    """
    since = utcnow() - FAILURE_WINDOW
    if _failures(db, since, LoginAttempt.email == email, LoginAttempt.client == client) > MAX_FAILED_LOGINS:
        return True
    if _failures(db, since, LoginAttempt.client == client) > MAX_FAILED_LOGINS * CLIENT_FACTOR:
        return True
    known = select(LoginAttempt.client).where(
        LoginAttempt.email == email,
        LoginAttempt.succeeded.is_(True),
        LoginAttempt.created_at >= utcnow() - timedelta(days=KNOWN_ADDRESS_DAYS),
    )
    if db.scalar(known.where(LoginAttempt.client == client).limit(1)) is not None:
        return False
    return _unknown_address_failures(db, since, email, known) > MAX_FAILED_LOGINS * ACCOUNT_FACTOR


def _unknown_address_failures(db: Session, since: datetime, email: str, known: Any) -> int:
    """Failures for ``email`` from addresses outside ``known``, each address counting at most its own
    share (`MAX_FAILED_LOGINS`): one address alone can never use up the account's budget."""
    per_client = (
        select(func.count().label("n"))
        .where(
            LoginAttempt.succeeded.is_(False),
            LoginAttempt.created_at >= since,
            LoginAttempt.email == email,
            LoginAttempt.client.not_in(known),
        )
        .group_by(LoginAttempt.client)
        .subquery()
    )
    share = case((per_client.c.n > MAX_FAILED_LOGINS, MAX_FAILED_LOGINS), else_=per_client.c.n)
    return int(db.scalar(select(func.coalesce(func.sum(share), 0))) or 0)


def authenticate(db: Session, request: Request, email: str, password: str) -> User:
    """Check a password login; every attempt is recorded, failures are logged and rate limited.

    The attempt is committed (as a failure) before the limits are counted, so simultaneous attempts
    see each other: of any number sent at once, at most the limit's worth reach the password check. An
    attempt the limits refuse is deleted again: only checked passwords count.
    """
    email_key = email.strip().lower()[:254]
    client = _client(request)
    attempt = LoginAttempt(email=email_key, client=client, succeeded=False, created_at=utcnow())
    db.add(attempt)
    db.commit()
    if _over_limit(db, email_key, client):
        # A refused attempt checked no password: it must not count against anyone's budget (else one
        # address, refused again and again, would fill the account's bucket for every other address).
        db.delete(attempt)
        db.commit()
        logger.warning("login refused (rate limit) for %r from %s", email_key, client)
        raise TooManyAttemptsError()
    user = find_user(db, email_key) if email_key else None
    # Verify against a dummy hash for unknown users, so timing does not reveal which addresses exist.
    ok = verify_password(user.password_hash if user else _dummy_hash(), password)
    if user is None or not ok:
        logger.warning("failed login for %r from %s", email_key, client)
        raise AuthError("The e-mail address or the password is not correct.")
    attempt.succeeded = True
    if _HASHER.check_needs_rehash(user.password_hash):
        user.password_hash = _HASHER.hash(password)
    db.commit()
    logger.info("login of %s from %s", user.email, client)
    return user


_DUMMY: list[str] = []


def _dummy_hash() -> str:
    if not _DUMMY:
        _DUMMY.append(_HASHER.hash(secrets.token_urlsafe(16)))
    return _DUMMY[0]


# -- cookies and CSRF ----------------------------------------------------------------------------------------


def _serializer(request: Request, salt: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(request.app.state.admin_secret, salt=salt)


def new_csrf_token() -> str:
    return secrets.token_urlsafe(24)


def issue_session_cookie(request: Request, response: Any, user: User, csrf: str | None = None) -> None:
    """Log ``user`` in on ``response``: a signed, HttpOnly, SameSite=Lax cookie with a CSRF token (fresh
    unless ``csrf`` is given: the page in ``response`` already carries it)."""
    value = _serializer(request, "admin-session").dumps(
        {"u": user.id, "e": user.session_epoch, "c": csrf or new_csrf_token()}
    )
    response.set_cookie(
        SESSION_COOKIE,
        value,
        max_age=SESSION_MAX_AGE_S,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
    )
    response.delete_cookie(LOGIN_CSRF_COOKIE, path="/admin")


def clear_session_cookie(response: Any) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/")


def login_csrf_token(request: Request, response: Any) -> str:
    """The login form's CSRF token; a fresh one is also set on ``response`` as a signed cookie."""
    serializer = _serializer(request, "login-csrf")
    existing = request.cookies.get(LOGIN_CSRF_COOKIE)
    if existing:
        try:
            token: str = serializer.loads(existing, max_age=SESSION_MAX_AGE_S)
            return token
        except BadSignature:
            pass
    token = secrets.token_urlsafe(24)
    response.set_cookie(
        LOGIN_CSRF_COOKIE,
        serializer.dumps(token),
        max_age=SESSION_MAX_AGE_S,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/admin",
    )
    return token


def check_login_csrf(request: Request, submitted: str) -> None:
    raw = request.cookies.get(LOGIN_CSRF_COOKIE, "")
    try:
        expected: str = _serializer(request, "login-csrf").loads(raw, max_age=SESSION_MAX_AGE_S)
    except BadSignature:
        expected = ""
    if not expected or not hmac.compare_digest(expected, submitted or ""):
        raise AdminError(
            "The form expired or did not come from this site. Please reload the page and try again.",
            status_code=403,
            code="csrf_failed",
        )


def check_csrf(principal: Principal, submitted: str | None) -> None:
    """Every state-changing browser request must echo the session's CSRF token (403 otherwise)."""
    if principal.via != "cookie":
        return
    if not submitted or not hmac.compare_digest(principal.csrf, submitted):
        raise AdminError(
            "The form expired or did not come from this site. Please reload the page and try again.",
            status_code=403,
            code="csrf_failed",
        )


def cookie_principal(request: Request, db: Session) -> Principal | None:
    """Who the request's back-office login cookie signs in (None: no valid one)."""
    raw = request.cookies.get(SESSION_COOKIE)
    if not raw:
        return None
    try:
        data = _serializer(request, "admin-session").loads(raw, max_age=SESSION_MAX_AGE_S)
        user_id, epoch, csrf = int(data["u"]), int(data["e"]), str(data["c"])
    except (BadSignature, KeyError, TypeError, ValueError):
        return None
    user = db.get(User, user_id)
    if user is None or user.session_epoch != epoch:
        return None
    return Principal(user=user, via="cookie", csrf=csrf)


# -- bearer tokens -----------------------------------------------------------------------------------------


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_api_token(db: Session, user: User, name: str) -> tuple[ApiToken, str]:
    """A new bearer token for ``user`` (commits); the secret is returned once and only its digest kept."""
    name = name.strip()
    if not name or len(name) > 100:
        raise AdminError("name: a token needs a name of 1 to 100 characters", status_code=422, code="invalid")
    secret = API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(user_id=user.id, name=name, token_hash=_digest(secret), created_at=utcnow())
    db.add(token)
    db.commit()
    return token, secret


def list_api_tokens(db: Session, user: User) -> list[ApiToken]:
    """The user's API tokens, oldest first (revoked ones too, marked)."""
    return list(db.scalars(select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.id)))


def revoke_api_token(db: Session, principal_user: User, token_id: int) -> ApiToken:
    """Revoke a token of the user (admins: any token); unknown or foreign tokens are 404."""
    token = db.get(ApiToken, token_id)
    if token is None or (token.user_id != principal_user.id and principal_user.role != Role.ADMIN.value):
        raise AdminError("no such token", status_code=404, code="not_found")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        db.commit()
    return token


def _bearer_principal(request: Request, db: Session) -> Principal | None:
    header = request.headers.get("authorization", "")
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    secret = credentials.strip()
    if not secret.startswith(API_TOKEN_PREFIX) or len(secret) > 100:
        raise AuthError("invalid bearer token")
    token = db.scalars(select(ApiToken).where(ApiToken.token_hash == _digest(secret))).first()
    if token is None or token.revoked_at is not None:
        raise AuthError("invalid or revoked bearer token")
    user = db.get(User, token.user_id)
    if user is None:
        raise AuthError("invalid bearer token")
    token.last_used_at = utcnow()
    db.commit()
    return Principal(user=user, via="token")


# -- dependencies ------------------------------------------------------------------------------------------


def has_credentials(request: Request) -> bool:
    """Whether the request carries a bearer token or a session cookie at all (checked without the DB)."""
    return bool(request.headers.get("authorization") or request.cookies.get(SESSION_COOKIE))


def login_required(request: Request) -> LoginRequiredError:
    """The redirect to the login page that comes back to this page afterwards."""
    return LoginRequiredError(request.url.path + (f"?{request.url.query}" if request.url.query else ""))


def _ui_principal(request: Request, db: Session) -> Principal:
    principal = cookie_principal(request, db)
    if principal is None:
        raise login_required(request)
    return principal


def _api_principal(request: Request, db: Session) -> Principal:
    principal = _bearer_principal(request, db)
    if principal is not None:
        return principal
    principal = cookie_principal(request, db)
    if principal is None:
        raise AuthError(NO_CREDENTIALS)
    if request.method not in ("GET", "HEAD", "OPTIONS"):
        check_csrf(principal, request.headers.get("x-csrf-token"))
    return principal


def admitted_principal(request: Request, kind: str) -> Principal:
    """The caller of a back-office request (``kind`` ``"api"`` or ``"ui"``), checked before its body is
    read, on a database session of its own that is closed before the body arrives."""
    with request.app.state.sessionmaker() as db:
        return _api_principal(request, db) if kind == "api" else _ui_principal(request, db)


def _admitted(request: Request) -> Principal | None:
    principal: Principal | None = getattr(request.state, "principal", None)
    return principal


def ui_user(request: Request, db: DbSessionDep) -> Principal:
    """The logged-in user of a back-office page; anyone else is sent to the login page."""
    return _admitted(request) or _ui_principal(request, db)


def api_user(request: Request, db: DbSessionDep) -> Principal:
    """Bearer token, or the browser session (then unsafe methods need the ``X-CSRF-Token`` header)."""
    return _admitted(request) or _api_principal(request, db)


UiUserDep = Annotated[Principal, Depends(ui_user)]
ApiUserDep = Annotated[Principal, Depends(api_user)]
