"""Errors raised by the elicitation core; each class names whose fault it is."""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "DegenerateMetricError",
    "ElicitationError",
    "InvalidAnswerError",
    "InvalidConfigError",
    "NumericalError",
    "ReplayMismatchError",
]


class ElicitationError(Exception):
    """Base class of every error raised by `elicitation`; never raised directly."""


class InvalidConfigError(ElicitationError, ValueError):
    """The caller passed a bad parameter (shape, range, tolerance...)."""


class InvalidAnswerError(ElicitationError, ValueError):
    """An elicitor received something other than a boolean answer."""


class ReplayMismatchError(ElicitationError):
    """A stored answer log and the current code disagree on the queries asked."""


class CheckpointError(ElicitationError):
    """A stored elicitor checkpoint is unreadable, damaged, or belongs to another configuration.

    A checkpoint only saves a replay: callers catch this and replay the answer log instead.
    """


class NumericalError(ElicitationError):
    """The maths failed: a singular system or a non-finite estimate."""


class DegenerateMetricError(NumericalError):
    """The metric violates an assumption the algorithm relies on (e.g. zero gradient at o).

    ``queries_asked`` counts the queries the elicitor had asked when it found out: they were answered, so a
    caller that recovers and goes on (fair QPME's ``"anchored"`` design) counts them too.
    """

    def __init__(self, message: str, *, queries_asked: int = 0) -> None:
        super().__init__(message)
        self.queries_asked = queries_asked
