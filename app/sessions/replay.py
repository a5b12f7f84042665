"""The one replay-and-verify of a recorded session: rebuild its elicitor and check every stored query.

Used by the participant service on every request that misses the cache and by the back office's replay check
(also run on import); ``elicit replay`` builds a study export's elicitor the same way
(`app.sessions.displayed.build_session_elicitor`) and checks it through the core's driver. The regenerated
queries are compared with the stored ones after the replay, all at once (`elicitation.first_mismatch`),
straight from their JSON: building `Query` objects for ``expected_queries`` would cost as much as the replay.
If the elicitor fails (any `ElicitationError` but a mismatch), the driver's per-query check
(`elicitation.replay` with ``expected_queries``) decides whether the log diverged first, so a diverged log
is always reported as a mismatch, never as the elicitor's failure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info  # type: ignore[import-untyped]

from elicitation import (
    CheckpointError,
    ElicitationError,
    Pending,
    Query,
    ReplayMismatchError,
    first_mismatch,
    replay,
)

from ..codec import CodecError, decode_query
from .runtime import ElicitorState, Failed

__all__ = ["numeric_platform", "replay_verified"]


@functools.cache
def numeric_platform() -> str:
    """The numerical library this process computes with, as a person reads it (``numpy 2.3.5, openblas
    SkylakeX``): the active elicitors' questions depend on its kernels, which OpenBLAS picks by CPU, so a
    replay elsewhere may ask differently (docs/active-elicitation.md, "Determinism")."""
    blas = {  # numpy and scipy may each bring the same library: named once
        f"{library['internal_api']} {library.get('architecture') or ''}".strip(): None
        for library in threadpool_info()
        if library["user_api"] == "blas"
    }
    return ", ".join([f"numpy {np.__version__}", *blas])


def replay_verified(
    fresh_elicitor: Callable[[], Any], rows: Sequence[Any], *, after: int = 0
) -> ElicitorState:
    """Replay the elicitor answers of ``rows`` through ``fresh_elicitor()``; `ReplayMismatchError` on drift.

    ``rows`` are the standing elicitation rows of a log (``elicitor_answer`` and the stored ``query`` JSON).
    With ``after = n``, ``fresh_elicitor()`` builds an elicitor restored from a checkpoint taken after the
    first ``n`` rows (`checkpoints.restore_state`, whose log digest vouches that those rows are the ones it
    absorbed): only the later rows are replayed and checked.
    Returns `Pending`, `Done`, or `Failed` when the elicitor could not go on (the session then ends early).
    """
    later = rows[after:]
    answers = [bool(row.elicitor_answer) for row in later]
    answered = _StoredLog(rows[:after])
    try:
        outcome = replay(fresh_elicitor(), answers, answered=answered)
    except (ReplayMismatchError, CheckpointError):
        # A diverged log, or a checkpoint to give up for a full replay: the caller's to handle.
        raise
    except ElicitationError as exc:
        expected = [_stored_query(row) for row in later]
        try:
            replay(fresh_elicitor(), answers, expected_queries=expected, answered=answered)
        except (ReplayMismatchError, CheckpointError):
            raise
        except ElicitationError:
            pass
        return Failed.of(exc)
    log = outcome.log if isinstance(outcome, Pending) else outcome.result.log
    _check_replayed(log[after:], later)
    return outcome


class _StoredLog(Sequence[tuple[Query, bool]]):
    """The (query, answer) pairs of stored rows, each query decoded only when read.

    It heads a restored elicitor's log (`elicitation.replay`'s ``answered``): a finished session's result
    reads it whole, a pending one hardly ever, and decoding a long log's queries cost more than restoring
    the checkpoint (the checkpoint's log digest already vouches for these rows).
    """

    def __init__(self, rows: Sequence[Any]) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        row = self._rows[index]
        return _stored_query(row), bool(row.elicitor_answer)


def _stored_query(row: Any) -> Query:
    try:
        return decode_query(row.query or {})
    except CodecError as codec_error:
        raise ReplayMismatchError(f"a stored query cannot be read: {codec_error}") from None


def _check_replayed(log: Sequence[tuple[Query, bool]], rows: Sequence[Any]) -> None:
    """Raise `ReplayMismatchError` unless each regenerated query matches its stored one (``REPLAY_ATOL``)."""
    if len(log) != len(rows):
        raise ReplayMismatchError(f"replay produced {len(log)} queries but the log holds {len(rows)} answers")
    if not rows:
        return
    try:
        index = first_mismatch(
            [query for query, _answer in log],
            [row.query["first"] for row in rows],
            [row.query["second"] for row in rows],
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayMismatchError(f"the stored queries do not have the regenerated shape: {exc}") from None
    if index is not None:
        raise ReplayMismatchError(
            f"replayed query {index} (log seq {rows[index].seq}) differs from the logged one; the session "
            "was recorded with a different configuration or algorithm version, or on a computer whose "
            f"numerical library rounds differently (this one computes with {numeric_platform()})"
        )
