"""The answer-log wire format: queries and answers as JSON-safe dicts, and back.

The log is the truth (a session is rebuilt by replaying it), so every place that stores or reads one, the
web app, its exports and the command line's offline replay, uses this one format. A query is
``{"first", "second", "search", "kind", "coordinate", "step"}`` with the rate arrays as nested lists; a log
entry is ``{"seq", "answer", "query"}`` (``answer`` is ``True`` when ``first`` was preferred). Exported
logs may also keep undo rows (``"action": "undo"``) and the answers they undid (``"undone": true``) for
audit; those are not answers and are skipped when a log is read back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .errors import InvalidConfigError
from .types import Query

__all__ = ["decode_query", "encode_answers", "encode_query", "parse_answers"]


def encode_query(query: Query) -> dict[str, Any]:
    """A query as ``{"first", "second", "search", "kind", "coordinate", "step"}`` (rates as nested lists)."""
    return {
        "first": query.first.tolist(),
        "second": query.second.tolist(),
        "search": query.search,
        "kind": query.kind,
        "coordinate": query.coordinate,
        "step": query.step,
    }


def decode_query(data: Mapping[str, Any]) -> Query:
    """Inverse of `encode_query`; only ``first`` and ``second`` are required.

    Raises
    ------
    InvalidConfigError
        If a rate array is missing or malformed, or a label field has the wrong type.
    """
    try:
        return Query(
            first=np.asarray(data["first"], dtype=np.float64),
            second=np.asarray(data["second"], dtype=np.float64),
            search=str(data.get("search", "")),
            kind=str(data.get("kind", "")),
            coordinate=data.get("coordinate"),
            step=int(data.get("step", 0)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidConfigError(f"not a stored query: {exc}") from exc


def encode_answers(log: Sequence[tuple[Query, bool]]) -> list[dict[str, Any]]:
    """An elicitation's ``log`` as answer-log entries ``{"seq", "answer", "query"}``, ``seq`` from 0."""
    return [
        {"seq": index, "answer": answer, "query": encode_query(query)}
        for index, (query, answer) in enumerate(log)
    ]


def parse_answers(raw: object) -> tuple[list[bool], list[Query | None]]:
    """Read answer-log entries back: the answers in order and, per answer, its logged query or ``None``.

    ``seq`` must increase (it defaults to one past the previous entry); undo rows and undone answers are
    skipped.

    Raises
    ------
    InvalidConfigError
        Naming the first bad entry and field.
    """
    if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
        raise InvalidConfigError("answers must be a list of {seq, answer, query} objects")
    answers: list[bool] = []
    queries: list[Query | None] = []
    last_seq = -1
    for index, item in enumerate(raw):
        where = f"answers[{index}]"
        if not isinstance(item, Mapping):
            raise InvalidConfigError(f"{where} must be an object with keys seq, answer and query")
        seq = item.get("seq", last_seq + 1)
        if isinstance(seq, bool) or not isinstance(seq, int) or seq <= last_seq:
            raise InvalidConfigError(
                f"{where}.seq must be an integer above {last_seq} (log order), got {seq!r}"
            )
        last_seq = seq
        if item.get("action", "answer") != "answer" or item.get("undone") is True:
            continue
        answer = item.get("answer")
        if not isinstance(answer, bool):
            raise InvalidConfigError(
                f"{where}.answer must be true (first preferred) or false (second preferred), got {answer!r}"
            )
        query = item.get("query")
        if query is None:
            queries.append(None)
        elif isinstance(query, Mapping) and "first" in query and "second" in query:
            try:
                queries.append(decode_query(query))
            except InvalidConfigError as exc:
                detail = exc.__cause__ or exc
                raise InvalidConfigError(f"{where}.query is not a pair of rate arrays: {detail}") from exc
        else:
            raise InvalidConfigError(f"{where}.query must be an object with first and second rate arrays")
        answers.append(answer)
    return answers, queries
