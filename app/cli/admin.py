"""Back-office `elicit` subcommands: ``admin`` (accounts, tokens) and more ``study`` actions.

Passwords are never taken from the command line (they would end up in shell history and ``ps``): they
come from ``ELICIT_ADMIN_PASSWORD``, from standard input with ``--password-stdin``, or from a prompt.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from ..admin import export, studies
from ..admin.auth import (
    AdminError,
    create_api_token,
    create_user,
    find_user,
    revoke_api_token,
    set_password,
)
from ..admin.downloads import DOWNLOADS, write_download
from ..admin.models import Role, User
from ..errors import AppError
from ..json_input import JSONInputError, decode_json
from ..planning import plan_study
from ..sessions import SessionCache
from ..settings import Settings
from ..study_config import StudyConfigError, load_study_config
from .web import (
    cli_principal,
    confirm_close,
    database_session,
    print_status,
    public_link,
    save_invitation_links,
)

__all__ = ["PASSWORD_ENV", "register"]

PASSWORD_ENV = "ELICIT_ADMIN_PASSWORD"


def _read_password(args: argparse.Namespace) -> str:
    if os.environ.get(PASSWORD_ENV):
        return os.environ[PASSWORD_ENV]
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise AdminError(f"no password: set {PASSWORD_ENV}, pass --password-stdin, or run in a terminal")
    first = getpass.getpass("Password: ")
    if getpass.getpass("Repeat the password: ") != first:
        raise AdminError("the passwords differ")
    return first


def _fail(exc: Exception) -> int:
    message = exc.message if isinstance(exc, AppError) else str(exc)
    print(f"error: {message}", file=sys.stderr)
    return 2


def _cmd_admin_create(args: argparse.Namespace) -> int:
    try:
        password = _read_password(args)
        with database_session(Settings()) as db:
            user = create_user(db, args.email, password, args.role)
    except AppError as exc:
        return _fail(exc)
    print(f"created {user.role} {user.email} (id {user.id})")
    return 0


def _cmd_admin_password(args: argparse.Namespace) -> int:
    try:
        password = _read_password(args)
        with database_session(Settings()) as db:
            user = find_user(db, args.email)
            if user is None:
                raise AdminError(f"no account {args.email}")
            set_password(db, user, password)
    except AppError as exc:
        return _fail(exc)
    print(f"password of {args.email} changed; its browser sessions have ended")
    return 0


def _cmd_admin_list(args: argparse.Namespace) -> int:
    with database_session(Settings()) as db:
        users = list(db.scalars(select(User).order_by(User.id)))
    if args.json:
        accounts = [{"id": user.id, "email": user.email, "role": str(user.role)} for user in users]
        print(json.dumps(accounts, indent=2))
        return 0
    if not users:
        print("no accounts yet; create one with `elicit admin create --email ... --role admin`")
    for user in users:
        print(f"{user.id}  {user.email}  {user.role}")
    return 0


def _cmd_token_create(args: argparse.Namespace) -> int:
    with database_session(Settings()) as db:
        user = find_user(db, args.email)
        if user is None:
            return _fail(AdminError(f"no account {args.email}"))
        try:
            token, secret = create_api_token(db, user, args.name)
        except AppError as exc:
            return _fail(exc)
    print(f"token {token.id} for {user.email}: {secret}")
    print("keep it secret: it is shown only now (the database stores its hash)", file=sys.stderr)
    return 0


def _cmd_token_revoke(args: argparse.Namespace) -> int:
    with database_session(Settings()) as db:
        admin = User(id=-1, email="cli", password_hash="", role=Role.ADMIN.value, session_epoch=0)
        try:
            revoke_api_token(db, admin, args.token_id)
        except AppError as exc:
            return _fail(exc)
    print(f"token {args.token_id} revoked")
    return 0


def _study_status(args: argparse.Namespace) -> int:

    settings = Settings()
    try:
        with database_session(settings) as db:
            study, control = studies.visible_study(db, cli_principal(db, None), args.study_id)
            if args.status == "closed" and not args.yes:
                refused = confirm_close(repr(study.name))
                if refused is not None:
                    return refused
            control = studies.set_status(db, study, control, args.status, confirm=True)
    except AppError as exc:
        return _fail(exc)
    join = public_link(settings, f"/studies/{study.id}/join") if study.open_enrolment else None
    print_status(str(study.id), control.status, join, export.iso_utc(control.enrolment_expires_at))
    return 0


def _cmd_study_duplicate(args: argparse.Namespace) -> int:

    try:
        with database_session(Settings()) as db:
            principal = cli_principal(db, args.owner)
            study, control = studies.visible_study(db, cli_principal(db, None), args.study_id)
            copy = studies.duplicate_study(db, principal, study, control)
    except AppError as exc:
        return _fail(exc)
    print(f"created draft {copy.id} ({copy.name})")
    return 0


def _cmd_study_assign(args: argparse.Namespace) -> int:

    try:
        with database_session(Settings()) as db:
            owner = find_user(db, args.owner)
            if owner is None:
                raise AdminError(f"no account {args.owner}")
            study, control = studies.visible_study(db, cli_principal(db, None), args.study_id)
            studies.give_study(db, study, control, owner)
    except AppError as exc:
        return _fail(exc)
    print(f"study {study.id} now belongs to {owner.email}")
    return 0


def _cmd_study_invite(args: argparse.Namespace) -> int:

    settings = Settings()
    expires = datetime.now(UTC) + timedelta(days=args.expires_in_days) if args.expires_in_days else None
    try:
        with database_session(settings) as db:
            principal = cli_principal(db, None)
            study, control = studies.visible_study(db, principal, args.study_id)
            created = studies.create_invitations(
                db, SessionCache(0), principal, study, control, args.count, expires_at=expires
            )
    except AppError as exc:
        return _fail(exc)
    links = (
        (invitation.id, public_link(settings, f"/sessions/{token}"), export.iso_utc(invitation.expires_at))
        for invitation, token in created
    )
    save_invitation_links(args.output, links, len(created))
    return 0


def _cmd_study_plan(args: argparse.Namespace) -> int:

    try:
        config = load_study_config(args.file)
    except StudyConfigError as exc:
        return _fail(exc)
    plan = plan_study(config, trials=args.trials, seconds_per_query=args.seconds_per_query)
    print(
        f"elicitation queries: mean {plan.queries_mean:.1f}, p90 {plan.queries_p90:.0f} "
        f"(bound {plan.queries_max_bound})"
    )
    print(f"comparisons per participant: mean {plan.comparisons_mean:.0f}, p90 {plan.comparisons_p90:.0f}")
    print(
        f"minutes per participant: mean {plan.minutes_mean:.1f}, p90 {plan.minutes_p90:.1f} "
        f"at {plan.seconds_per_query:.1f} s per comparison ({plan.seconds_source})"
    )
    if plan.error_a_mean is not None:
        print(f"error of a: mean {plan.error_a_mean:.4f}, p90 {plan.error_a_p90:.4f}")
    if plan.error_b_mean is not None:
        print(f"error of B: mean {plan.error_b_mean:.4f}, p90 {plan.error_b_p90:.4f}")
    if plan.error_lam_mean is not None:
        print(f"error of lambda: mean {plan.error_lam_mean:.4f}")
    if plan.agreement_mean is not None:
        print(f"agreement with the simulated person on random pairs: mean {plan.agreement_mean:.3f}")
    return 0


def _cmd_study_export(args: argparse.Namespace) -> int:

    try:
        with database_session(Settings()) as db:
            study, _control = studies.visible_study(db, cli_principal(db, None), args.study_id)
            write_download(db, study, args.what, args.output, args.include_pilots)
    except AppError as exc:
        return _fail(exc)
    print(f"wrote {args.what} of study {study.id} to {args.output}")
    return 0


def _cmd_study_import(args: argparse.Namespace) -> int:

    try:
        archive = decode_json(Path(args.file).read_bytes())
    except OSError as exc:
        print(f"error: {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except JSONInputError as exc:
        print(f"error: {args.file} {exc}", file=sys.stderr)
        return 2
    try:
        with database_session(Settings()) as db:
            owner = cli_principal(db, args.owner).user.id if args.owner else None
            study, verified = export.import_archive(db, SessionCache(0), archive, owner_id=owner)
    except AppError as exc:
        return _fail(exc)
    print(f"imported study {study.id} ({study.name}); {verified} finished sessions replayed identically")
    return 0


def _study_subparsers(subparsers: Any) -> Any:
    """The ``study`` group's action parsers (made by app.cli.web), so new actions sit beside create/list."""
    study = subparsers.choices.get("study")
    if study is None:
        study = subparsers.add_parser("study", help="manage studies")
        return study.add_subparsers(dest="study_command", metavar="ACTION", required=True)
    for action in study._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    raise RuntimeError("the study command has no actions")


def register(subparsers: Any) -> None:
    """Add ``admin`` and the back-office ``study`` actions to the `elicit` command."""
    admin = subparsers.add_parser("admin", help="back-office accounts and API tokens")
    admin_sub = admin.add_subparsers(dest="admin_command", metavar="ACTION", required=True)
    create = admin_sub.add_parser(
        "create", help=f"create an account (password from {PASSWORD_ENV}, --password-stdin or a prompt)"
    )
    create.add_argument("--email", required=True)
    create.add_argument("--role", required=True, choices=[role.value for role in Role])
    create.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    create.set_defaults(func=_cmd_admin_create)
    password = admin_sub.add_parser(
        "set-password", help="change a password (ends the account's browser sessions)"
    )
    password.add_argument("--email", required=True)
    password.add_argument("--password-stdin", action="store_true")
    password.set_defaults(func=_cmd_admin_password)
    listing = admin_sub.add_parser("list", help="list accounts")
    listing.add_argument("--json", action="store_true", help="print a JSON array instead of text")
    listing.set_defaults(func=_cmd_admin_list)
    token = admin_sub.add_parser("token", help="create or revoke API bearer tokens")
    token_sub = token.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    token_create = token_sub.add_parser("create", help="a new bearer token (printed once)")
    token_create.add_argument("--email", required=True)
    token_create.add_argument("--name", required=True)
    token_create.set_defaults(func=_cmd_token_create)
    token_revoke = token_sub.add_parser("revoke", help="revoke a token by id")
    token_revoke.add_argument("token_id", type=int)
    token_revoke.set_defaults(func=_cmd_token_revoke)

    study_sub = _study_subparsers(subparsers)
    for name, status, text in (
        ("open", "open", "open a study for enrolment"),
        ("pause", "paused", "pause enrolment (people already answering can finish)"),
        ("close", "closed", "close a study for good (asks for confirmation; data stays)"),
    ):
        parser = study_sub.add_parser(name, help=text)
        parser.add_argument("study_id")
        parser.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        parser.set_defaults(func=_study_status, status=status)
    duplicate = study_sub.add_parser("duplicate", help="copy a study's configuration into a new draft")
    duplicate.add_argument("study_id")
    duplicate.add_argument("--owner", help="e-mail of the coordinator who owns the copy")
    duplicate.set_defaults(func=_cmd_study_duplicate)
    assign = study_sub.add_parser("assign", help="give a study to a coordinator")
    assign.add_argument("study_id")
    assign.add_argument("--owner", required=True)
    assign.set_defaults(func=_cmd_study_assign)
    invite = study_sub.add_parser("invite", help="create personal invitation links (CSV)")
    invite.add_argument("study_id")
    invite.add_argument("--count", type=int, required=True)
    invite.add_argument("--expires-in-days", type=float)
    invite.add_argument("--output", help="CSV file (default: standard output)")
    invite.set_defaults(func=_cmd_study_invite)
    plan = study_sub.add_parser("plan", help="simulate a configuration file: queries, minutes, error")
    plan.add_argument("file")
    plan.add_argument("--trials", type=int, default=20)
    plan.add_argument("--seconds-per-query", type=float)
    plan.set_defaults(func=_cmd_study_plan)
    export = study_sub.add_parser(
        "export",
        help="write one of the study's exports (the same files as the results page's links): "
        + ", ".join(f"{item.command} ({item.filename})" for item in DOWNLOADS),
    )
    export.add_argument("study_id")
    export.add_argument(
        "what",
        choices=[item.command for item in DOWNLOADS],
    )
    export.add_argument("--output", required=True)
    export.add_argument(
        "--include-pilots",
        action="store_true",
        help="also the pilot sessions (a coordinator's own trial runs) in the results and answer logs",
    )
    export.set_defaults(func=_cmd_study_export)
    imported = study_sub.add_parser(
        "import", help="load a study archive (every finished session is replayed)"
    )
    imported.add_argument("file")
    imported.add_argument("--owner", help="e-mail of the coordinator who owns the imported study")
    imported.set_defaults(func=_cmd_study_import)
