"""Drivers that run an elicitor against an oracle, or rebuild its state from a logged answer list.

The web app never keeps state it cannot rebuild: `replay` feeds a fresh elicitor the recorded answers,
checks every regenerated query against the stored one (``REPLAY_ATOL``) and returns either the pending
query or the finished result.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

import numpy as np

from .errors import InvalidAnswerError, InvalidConfigError, ReplayMismatchError
from .types import Elicitation, Elicitor, FloatArray, Query

__all__ = ["REPLAY_ATOL", "Done", "Pending", "first_mismatch", "replay", "run"]

#: Largest difference between a logged and a regenerated query rate that still counts as "the same query".
REPLAY_ATOL = 1e-9

M = TypeVar("M")


@dataclass(frozen=True, eq=False)
class Pending(Generic[M]):
    """An elicitor waiting for an answer to ``query`` after ``n_answered`` answers; ``log`` holds the queries
    and answers so far (a restored elicitor's checkpointed part is read only where it is used)."""

    elicitor: Elicitor[Elicitation[M]]
    query: Query
    n_answered: int
    log: Sequence[tuple[Query, bool]]


class _JoinedLog(Sequence[tuple[Query, bool]]):
    """``head`` followed by ``tail``, read item by item: indexing or slicing past the head never reads it.

    A restored elicitor's head is its log up to the checkpoint, which a caller may hand over undecoded (the
    web app's stored queries); a pending state's log is mostly read only after the checkpoint.
    """

    def __init__(self, head: Sequence[tuple[Query, bool]], tail: Sequence[tuple[Query, bool]]) -> None:
        self._head = head
        self._tail = tail

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        position = operator.index(index)
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("log index out of range")
        head = len(self._head)
        return self._head[position] if position < head else self._tail[position - head]


@dataclass(frozen=True, eq=False)
class Done(Generic[M]):
    """A finished elicitation; ``result.log`` holds every query and answer."""

    result: Elicitation[M]


def _finish(value: Elicitation[M], log: list[tuple[Query, bool]]) -> Elicitation[M]:
    if value.num_queries != len(log):
        raise AssertionError(f"elicitor reported {value.num_queries} queries but asked {len(log)}")
    return replace(value, log=tuple(log))


def run(
    elicitor: Elicitor[Elicitation[M]],
    oracle: Callable[[FloatArray, FloatArray], Any],
    *,
    max_queries: int | None = None,
) -> Elicitation[M]:
    """Drive ``elicitor`` to completion, answering each query with ``oracle(first, second)``.

    Parameters
    ----------
    elicitor : Elicitor
        A fresh (not yet started) elicitor, e.g. ``qpme(sphere)``.
    oracle : callable
        ``oracle(first, second) -> bool``; ``True`` means ``first`` is preferred.
    max_queries : int, optional
        Safety bound; defaults to the elicitor's own ``max_queries``.

    Returns
    -------
    Elicitation
        The elicitor's result with ``log`` filled in.

    Raises
    ------
    InvalidAnswerError
        If the oracle returns something other than a boolean.
    """
    limit = elicitor.max_queries if max_queries is None else max_queries
    log: list[tuple[Query, bool]] = []
    try:
        query = next(elicitor)
        while True:
            if len(log) >= limit:
                raise InvalidConfigError(f"elicitor {elicitor.name!r} exceeded its budget of {limit} queries")
            answer = oracle(query.first, query.second)
            if not isinstance(answer, (bool, np.bool_)):
                raise InvalidAnswerError(f"the oracle must return a boolean, got {answer!r}")
            log.append((query, bool(answer)))
            query = elicitor.send(bool(answer))
    except StopIteration as stop:
        return _finish(stop.value, log)


def replay(
    elicitor: Elicitor[Elicitation[M]],
    answers: Sequence[bool],
    *,
    expected_queries: Sequence[Query] | None = None,
    atol: float = REPLAY_ATOL,
    answered: Sequence[tuple[Query, bool]] = (),
) -> Pending[M] | Done[M]:
    """Feed ``answers`` to a fresh ``elicitor`` and return where it stands.

    Parameters
    ----------
    elicitor : Elicitor
        A fresh elicitor built from the same configuration and seed as the logged session, or one restored
        from a checkpoint taken after the queries and answers ``answered``.
    answers : sequence of bool
        The recorded answers, in order (for a restored elicitor: those after its checkpoint).
    expected_queries : sequence of Query, optional
        The queries stored with those answers (same length); each regenerated query must match its stored
        twin within ``atol``.
    answered : sequence of (Query, bool), optional
        A restored elicitor's log up to its checkpoint: it heads the returned log and counts as answered. A
        pending state reads it only where its log is read there (it may decode items on demand).

    Returns
    -------
    Pending or Done
        ``Pending(elicitor, query, n_answered, log)`` when the elicitor wants another answer, else
        ``Done(result)``.

    Raises
    ------
    ReplayMismatchError
        If a regenerated query differs from the stored one, or the log holds more answers than the elicitor
        asks for.
    InvalidAnswerError
        If a logged answer is not a boolean.
    """
    if expected_queries is not None and len(expected_queries) != len(answers):
        raise InvalidConfigError(
            f"expected_queries has {len(expected_queries)} entries but answers has {len(answers)}"
        )
    log: list[tuple[Query, bool]] = []
    try:
        query = next(elicitor)
        for index, answer in enumerate(answers):
            if not isinstance(answer, (bool, np.bool_)):
                raise InvalidAnswerError(f"logged answer {index} is not a boolean: {answer!r}")
            log.append((query, bool(answer)))
            query = elicitor.send(bool(answer))
    except StopIteration as stop:
        _check_log(log, expected_queries, atol, elicitor.name)
        if len(log) < len(answers):
            raise ReplayMismatchError(
                f"the elicitor finished after {len(log)} answers but the log holds {len(answers)}"
            ) from None
        return Done(_finish(stop.value, [*answered, *log]))
    except Exception:
        # A diverged log can make the elicitor fail; the divergence is the error to report.
        _check_log(log, expected_queries, atol, elicitor.name)
        raise
    _check_log(log, expected_queries, atol, elicitor.name)
    joined = _JoinedLog(answered, tuple(log)) if answered else tuple(log)
    return Pending(elicitor=elicitor, query=query, n_answered=len(answered) + len(log), log=joined)


_FLOAT64 = np.dtype(np.float64)
_first_of = operator.attrgetter("first")
_second_of = operator.attrgetter("second")
_dtype_of = operator.attrgetter("dtype")
_shape_of = operator.attrgetter("shape")


def _stacked(rates: Sequence[Any]) -> FloatArray:
    """``rates`` (float64 arrays of one shape, or nested lists) as one ``(n, *shape)`` array.

    Arrays are checked with one ``map`` per property and joined as bytes: about 6x cheaper than
    ``np.stack`` for thousands of small arrays.
    """
    if set(map(type, rates)) == {np.ndarray} and set(map(_dtype_of, rates)) == {_FLOAT64}:
        shapes = set(map(_shape_of, rates))
        if len(shapes) != 1:
            raise ValueError(f"rates of several shapes: {sorted(shapes)}")
        joined = np.frombuffer(b"".join(map(np.ndarray.tobytes, rates)), dtype=np.float64)
        return joined.reshape(len(rates), *shapes.pop())
    return np.asarray(rates, dtype=np.float64)


def first_mismatch(
    queries: Sequence[Query], first: Sequence[Any], second: Sequence[Any], atol: float = REPLAY_ATOL
) -> int | None:
    """Index of the first of ``queries`` whose rates differ from ``first[i]``/``second[i]`` beyond ``atol``.

    One vectorised comparison for a whole log (comparing query by query costs more than replaying on long
    logs); the stored rates may be arrays or the nested lists of a JSON log. Returns None when all match;
    raises ``ValueError`` when the stored rates have another shape.
    """
    if not queries:
        return None
    gaps = []
    for mine, theirs in ((list(map(_first_of, queries)), first), (list(map(_second_of, queries)), second)):
        regenerated = _stacked(mine)
        stored = _stacked(theirs)
        if stored.shape != regenerated.shape:
            raise ValueError(
                f"regenerated rates have shape {regenerated.shape[1:]}, stored ones {stored.shape[1:]}"
            )
        if regenerated.tobytes() == stored.tobytes():
            continue  # bit for bit the same, the usual case: no arithmetic needed
        gaps.append(np.abs(regenerated - stored).reshape(len(queries), -1).max(axis=1))
    if not gaps:
        return None
    differs = np.maximum.reduce(gaps) > atol
    return int(np.argmax(differs)) if differs.any() else None


def _check_log(
    log: Sequence[tuple[Query, bool]], expected: Sequence[Query] | None, atol: float, name: str
) -> None:
    """Raise `ReplayMismatchError` at the first regenerated query that differs from its stored twin."""
    if expected is None or not log:
        return
    regenerated = [query for query, _answer in log]
    stored = expected[: len(regenerated)]
    try:
        index = first_mismatch(regenerated, [q.first for q in stored], [q.second for q in stored], atol)
    except ValueError:  # shapes differ between queries: compare them one by one
        index = next(
            (
                i
                for i, (query, twin) in enumerate(zip(regenerated, stored, strict=True))
                if not query.matches(twin, atol)
            ),
            None,
        )
    if index is not None:
        raise ReplayMismatchError(
            f"replayed query {index} ({regenerated[index].search or name}) differs from the logged one; "
            "the session was recorded with a different configuration or algorithm version, or with a "
            "numerical library (BLAS) that rounds differently"
        )
