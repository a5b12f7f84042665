"""Answer-log documents of simulated sessions: export and offline replay with every logged query checked."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ..answer_log import encode_answers, parse_answers
from ..driver import Done, Pending, replay
from ..errors import InvalidConfigError
from ..types import Elicitation, Elicitor
from .simulation import Simulation, build_elicitor

__all__ = ["LOG_FORMAT", "LOG_VERSION", "Builder", "answer_log", "replay_log"]

#: ``format`` tag and version of the answer-log JSON documents (docs/benchmarks.md).
LOG_FORMAT: Final = "elicitation-answer-log"
LOG_VERSION: Final = 1


def answer_log(simulation: Simulation) -> dict[str, Any]:
    """The simulation's answer log as a JSON-safe document that `replay_log` accepts.

    Returns
    -------
    dict
        ``{"format", "version", "algorithm", "params", "seed", "answers": [{"seq", "answer", "query"}]}``
        (see docs/benchmarks.md).
    """
    return {
        "format": LOG_FORMAT,
        "version": LOG_VERSION,
        "algorithm": simulation.algorithm,
        "params": dict(simulation.params),
        "seed": simulation.seed,
        "answers": encode_answers(simulation.result.log),
    }


#: ``build(algorithm, document)`` returns a fresh elicitor for an answer-log document.
Builder = Callable[[str, Mapping[str, Any]], Elicitor[Elicitation[Any]]]


def _build_from_params(algorithm: str, document: Mapping[str, Any]) -> Elicitor[Elicitation[Any]]:
    return build_elicitor(algorithm, document["params"])


def replay_log(document: Mapping[str, Any], *, build: Builder | None = None) -> Pending[Any] | Done[Any]:
    """Rebuild an elicitation from an exported answer log, checking every logged query.

    Parameters
    ----------
    document : mapping
        An answer log (`answer_log`, or the admin export): ``algorithm``, ``params``, ``seed`` and
        ``answers``; a logged ``query`` may be omitted (then it is not checked) but must be given for all
        or none of the answers.
    build : callable, optional
        ``build(algorithm, document)`` returns the fresh elicitor; the default is
        ``build_elicitor(algorithm, document["params"])`` (the parameters `simulate` records). The app's
        command line passes a builder that also understands study exports (query space + registry params).

    Returns
    -------
    Pending or Done
        Where the replayed elicitation stands (see `elicitation.replay`).

    Raises
    ------
    InvalidConfigError
        If the document is malformed (naming the field).
    ReplayMismatchError
        If a replayed query differs from the logged one, or the log is longer than the elicitation.
    """
    if not isinstance(document, Mapping):
        raise InvalidConfigError("an answer log must be a JSON object")
    fmt = document.get("format", LOG_FORMAT)
    if fmt != LOG_FORMAT:
        raise InvalidConfigError(f"format must be {LOG_FORMAT!r}, got {fmt!r}")
    version = document.get("version", LOG_VERSION)
    if version != LOG_VERSION:
        raise InvalidConfigError(f"version must be {LOG_VERSION} (this code's log format), got {version!r}")
    for key in ("algorithm", "params", "answers"):
        if key not in document:
            raise InvalidConfigError(f"the answer log has no {key!r} field")
    answers, queries = parse_answers(document["answers"])
    checked = [q for q in queries if q is not None]
    if checked and len(checked) != len(queries):
        raise InvalidConfigError("either every answer or none must carry its query")
    algorithm = document["algorithm"]
    if not isinstance(algorithm, str):
        raise InvalidConfigError(f"algorithm must be a string, got {algorithm!r}")
    elicitor = (build or _build_from_params)(algorithm, document)
    return replay(elicitor, answers, expected_queries=checked if checked else None)
