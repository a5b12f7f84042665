"""Reading a session's answer log: which answers stand once undos are applied, and which the elicitor saw.

The log is append-only: an undo is a row of its own naming the answer it takes back, never a deletion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConflictError
from ..models import LogAction, Phase

__all__ = ["effective_rows", "elicitor_rows"]


def effective_rows(rows: Sequence[Any]) -> list[Any]:
    """The answers that stand: the log with every undone answer removed."""
    stack: list[Any] = []
    # The enum values are read once: this runs over the whole log on every request.
    answer, undo = LogAction.ANSWER.value, LogAction.UNDO.value
    for row in rows:
        if row.action == answer:
            stack.append(row)
        elif row.action == undo:
            if not stack or stack[-1].seq != row.undoes_seq:
                raise ConflictError(
                    f"log row {row.seq} undoes {row.undoes_seq}, which is not the last answer"
                )
            stack.pop()
    return stack


def elicitor_rows(effective: Sequence[Any]) -> list[Any]:
    """The standing answers the elicitor received (practice, checks and evaluation pairs never reach it)."""
    elicitation = Phase.ELICITATION.value
    return [row for row in effective if row.phase == elicitation]
