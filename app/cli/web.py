"""Web-app `elicit` subcommands: serve, db upgrade, study create/list, demo."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from .. import repository
from ..admin.auth import AdminError, Principal, find_user, first_admin
from ..admin.export import iso_utc
from ..admin.models import Role, User
from ..admin.studies import create_study_for, give_study, list_visible_studies, write_invitations_csv
from ..db import make_engine, make_sessionmaker
from ..models import StudyControl, StudyStatus
from ..schema import alembic_config, upgrade_database
from ..server import HeaderDeadlineProtocol
from ..sessions import create_study
from ..settings import Settings
from ..study_config import StudyConfigError, load_study_config, parse_study_config

__all__ = [
    "DEMO_STUDY",
    "STUDY_LIST_KEYS",
    "alembic_config",
    "cli_principal",
    "confirm_close",
    "print_status",
    "print_study_list",
    "register",
    "upgrade_database",
]


#: The demo: a breast-cancer screening task as in the paper's user study (Appendix I), with the active
#: elicitor. At most 40 screens: 2 practice pairs, at most 24 questions, 2 checks and at most 12 final
#: comparisons (fewer once the agreement estimate is tight).
DEMO_STUDY: dict[str, Any] = {
    "name": "Demo: breast cancer screening",
    "task": (
        "A classifier reads a biopsy report and decides whether a breast tumour is benign or malignant. "
        "Every classifier makes some mistakes; you decide which kind of mistakes you would rather live with."
    ),
    "class_names": ["benign", "malignant"],
    "population": "patients",
    "algorithm": "active_quadratic",
    "algorithm_params": {"max_queries": 24},
    # Real classifiers on the bundled Breast Cancer Wisconsin data (elicitation.lab.feasible), as in the
    # paper's user study; the questions sit among classifiers that beat "everyone is benign". Trained once
    # here, then stored as a full description that rebuilds instantly.
    "query_space": {"kind": "dataset", "recipe": {"dataset": "breast-cancer", "seed": 0}},
    "practice_queries": 2,
    "checks": True,
    "dominance_checks": 1,
    "repeat_checks": 1,
    "evaluation_queries": 12,
    "open_enrolment": True,
}


def database_session(settings: Settings) -> Session:
    """A database session for one command (the caller closes it)."""
    return make_sessionmaker(make_engine(settings))()


def public_link(settings: Settings, path: str) -> str:
    """The absolute URL of ``path`` as participants and coordinators reach the server."""
    return f"{settings.public_base_url or 'http://127.0.0.1:8000'}{path}"


def save_invitation_links(
    output: str | None, links: Iterable[tuple[Any, str, str | None]], count: int
) -> None:
    """Write invitation links as CSV to the file ``output`` (saying so), or to standard output."""
    out = open(output, "w", newline="", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
    try:
        write_invitations_csv(out, links, lineterminator="\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if output:
        print(f"{count} invitation links written to {output}")


#: Seconds an idle connection stays open (uvicorn's default is 5). A person takes several seconds per
#: question; a browser that reuses its connection just as the server closes it sees a failed request, so
#: connections outlive a question's thinking time (nginx's own default is 75 s).
KEEP_ALIVE_S = 75


def _cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    settings = Settings()
    if not args.no_migrate:
        upgrade_database(settings)
    uvicorn.run(
        "app.main:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        proxy_headers=True,
        http=HeaderDeadlineProtocol,
        timeout_keep_alive=KEEP_ALIVE_S,
    )
    return 0


def _cmd_db_upgrade(args: argparse.Namespace) -> int:
    upgrade_database(Settings(), args.revision)
    print(f"database upgraded to {args.revision}")
    return 0


def cli_principal(db: Session, email: str | None) -> Principal:
    """Act as the named account (``--as``), or as an administrator when none is given."""
    if email:
        user = find_user(db, email)
        if user is None:
            raise AdminError(f"no account {email}")
        return Principal(user=user, via="cli")
    return Principal(user=User(id=None, email="cli", password_hash="", role=Role.ADMIN.value), via="cli")


def print_status(study_id: str, status: str, join_url: str | None, expires_at: str | None = None) -> None:
    """Say which state a study is in and print its open link only when that link takes people now (an
    open study whose open link has not expired; ``expires_at`` is ISO 8601 with its offset)."""
    if status == StudyStatus.DRAFT.value:
        print(f"study {study_id} is a draft: nobody can take part until `elicit study open {study_id}`")
        return
    print(f"study {study_id} is {status}")
    if status != StudyStatus.OPEN.value or not join_url:
        return
    if expires_at is not None and datetime.fromisoformat(expires_at) <= datetime.now(UTC):
        print(f"no participant link: the open link expired at {expires_at}")
        return
    print(f"participant link: {join_url}")


def confirm_close(what: str) -> int | None:
    """Ask at the terminal before closing ``what`` for good: None when confirmed, else the exit status
    (2, with a one-line error, when there is no terminal to ask at: scripts pass ``--yes``)."""
    if not sys.stdin.isatty():
        print(
            "error: closing is final and needs a confirmation: pass --yes (no terminal to ask at)",
            file=sys.stderr,
        )
        return 2
    try:
        answer = input(f"Close {what} for good? Its data stays. Type 'close' to confirm: ")
    except EOFError:
        answer = ""
    if answer.strip() != "close":
        print("not closed")
        return 1
    return None


def _cmd_study_create(args: argparse.Namespace) -> int:

    try:
        config = load_study_config(args.file)
    except StudyConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    settings = Settings()
    with database_session(settings) as db:
        try:
            study, control = create_study_for(db, cli_principal(db, None), config)
        except AdminError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            return 2
        print(f"created study {study.id} ({study.name})")
        print_status(str(study.id), control.status, None)
    return 0


#: The keys of each study in `elicit study list --json`, locally and with ``--url`` alike.
STUDY_LIST_KEYS = ("id", "name", "status", "algorithm", "open_enrolment", "created_at", "sessions")


def print_study_list(rows: list[dict[str, Any]], as_json: bool) -> None:
    """`elicit study list`: each study's id, name, algorithm, state and enrolment, and its sessions."""
    if as_json:
        print(json.dumps([{key: row[key] for key in STUDY_LIST_KEYS} for row in rows], indent=2))
        return
    if not rows:
        print("no studies yet; create one with `elicit study create FILE` or `elicit demo`")
    for row in rows:
        enrolment = "open link" if row["open_enrolment"] else "invitations only"
        sessions = row["sessions"]
        print(
            f"{row['id']}  {row['name']}  [{row['algorithm']}]  {row['status']}, enrolment: {enrolment}  "
            f"sessions: {sessions.get('active', 0)} active, {sessions.get('done', 0)} done"
        )


def _cmd_study_list(args: argparse.Namespace) -> int:
    with database_session(Settings()) as db:
        rows = [
            {
                "id": str(entry.study.id),
                "name": entry.study.name,
                "status": entry.status.value,
                "algorithm": entry.study.algorithm,
                "open_enrolment": entry.study.open_enrolment,
                "created_at": iso_utc(entry.study.created_at),
                "sessions": entry.counts,
            }
            for entry in list_visible_studies(db, cli_principal(db, None))
        ]
    print_study_list(rows, args.json)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    settings = Settings()
    with database_session(settings) as db:
        owner = find_user(db, args.owner) if args.owner else first_admin(db)
        if args.owner and owner is None:
            print(
                f"error: no back-office account {args.owner}; create it with "
                f"`elicit admin create --email {args.owner} --role coordinator`",
                file=sys.stderr,
            )
            return 2
        study = repository.find_study_by_name(db, DEMO_STUDY["name"])
        if study is None:
            study = create_study(db, parse_study_config(DEMO_STUDY))
            print(f"created the demo study {study.id}")
        else:
            print(f"the demo study exists: {study.id}")
        control = db.get(StudyControl, study.id)
        # Without an owner only administrators see the study; a named owner takes it over.
        if owner is not None and (args.owner or control is None or control.owner_id is None):
            control = give_study(db, study, control, owner)
        if control is not None and control.owner_id is not None:
            print(f"it belongs to {db.get(User, control.owner_id).email} in the back office")
        else:
            print(
                "no back-office account owns it yet: create one with `elicit admin create`, then run "
                "`elicit demo` again (or `elicit demo --owner EMAIL`)"
            )
        print(f"participant link: {public_link(settings, f'/studies/{study.id}/join')}")
    return 0


def register(subparsers: Any) -> None:
    """Add serve, db, study and demo to the `elicit` command."""
    serve = subparsers.add_parser("serve", help="migrate the database, then serve the app with uvicorn")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    serve.add_argument("--no-migrate", action="store_true", help="skip `alembic upgrade head`")
    serve.set_defaults(func=_cmd_serve)

    db = subparsers.add_parser("db", help="database schema management")
    db_sub = db.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = db_sub.add_parser("upgrade", help="apply migrations (default: up to head)")
    upgrade.add_argument("revision", nargs="?", default="head")
    upgrade.set_defaults(func=_cmd_db_upgrade)

    study = subparsers.add_parser("study", help="create and list studies")
    study_sub = study.add_subparsers(dest="study_command", metavar="ACTION", required=True)
    create = study_sub.add_parser("create", help="create a study from a JSON or TOML configuration file")
    create.add_argument("file", help="path to the study configuration (.json or .toml)")
    create.set_defaults(func=_cmd_study_create)
    listing = study_sub.add_parser("list", help="list studies with their session counts")
    listing.add_argument("--json", action="store_true", help="print a JSON array instead of text")
    listing.set_defaults(func=_cmd_study_list)

    demo = subparsers.add_parser(
        "demo",
        help="create the demo study (once), give it to the first administrator, print its participant link",
    )
    demo.add_argument(
        "--owner",
        metavar="EMAIL",
        help="the account that owns the demo (default: the first admin)",
    )
    demo.set_defaults(func=_cmd_demo)
