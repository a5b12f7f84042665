"""The `elicit` command. Each group of subcommands lives in its own module with a ``register`` function.

`web` (serve, db, study create/list, demo), `admin` (accounts, tokens, study lifecycle, plan, export, import)
and `experiments` (simulate, benchmark, replay). To add commands, write a module with
``register(subparsers)`` that adds parsers whose ``func`` default is ``func(args) -> int`` and add it to
`COMMAND_GROUPS`. With ``--url`` the study commands go to a server instead (`remote`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from .. import __version__
from . import admin, experiments, web
from .remote import run_remote

__all__ = ["COMMAND_GROUPS", "build_parser", "main"]

#: Modules whose ``register(subparsers)`` adds subcommands, in help order (`admin` extends `web`'s ``study``).
COMMAND_GROUPS = (web, admin, experiments)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered command group."""
    parser = argparse.ArgumentParser(
        prog="elicit",
        description="Elicitation Studio: serve the participant app and manage studies.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--url",
        default=os.environ.get("ELICIT_URL") or None,
        help="send study commands to this server's JSON API (default $ELICIT_URL; unset: local database)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("ELICIT_TOKEN") or None,
        help="bearer token for --url (better: set $ELICIT_TOKEN, which stays out of the process list)",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for group in COMMAND_GROUPS:
        group.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``elicit`` console script; returns the process exit status."""
    args = build_parser().parse_args(argv)
    if args.url:
        return run_remote(args, args.url, args.token)
    status: int = args.func(args)
    return status
