"""The `elicit` command. Each group of subcommands lives in its own module with a ``register`` function.

To add commands (``simulate``, ``benchmark``, ``replay``, ``admin``...), write a module with
``register(subparsers)`` that adds parsers whose ``func`` default is ``func(args) -> int`` and add its name
to `COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

__all__ = ["COMMAND_MODULES", "build_parser", "main"]

#: Modules whose ``register(subparsers)`` adds subcommands, in help order. Modules that are not part of
#: this checkout yet (being written in parallel) are skipped; any other import error is raised.
COMMAND_MODULES: tuple[str, ...] = ("app.cli_web", "app.cli_admin", "app.cli_experiments")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered command group."""
    parser = argparse.ArgumentParser(
        prog="elicit",
        description="Elicitation Studio: serve the participant app and manage studies.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``elicit`` console script; returns the process exit status."""
    args = build_parser().parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
