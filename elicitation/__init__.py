"""Elicitation Studio's algorithm core: metric elicitation from pairwise preferences (QPME, UAI 2022)."""

from .driver import REPLAY_ATOL, Done, Pending, replay, run
from .errors import (
    DegenerateMetricError,
    ElicitationError,
    InvalidAnswerError,
    InvalidConfigError,
    NumericalError,
    ReplayMismatchError,
)
from .types import (
    Elicitation,
    Elicitor,
    FairQuadraticMetric,
    LinearMetric,
    Metric,
    QuadraticMetric,
    Query,
    Sphere,
)

__all__ = [
    "REPLAY_ATOL",
    "DegenerateMetricError",
    "Done",
    "Elicitation",
    "ElicitationError",
    "Elicitor",
    "FairQuadraticMetric",
    "InvalidAnswerError",
    "InvalidConfigError",
    "LinearMetric",
    "Metric",
    "NumericalError",
    "Pending",
    "QuadraticMetric",
    "Query",
    "ReplayMismatchError",
    "Sphere",
    "replay",
    "run",
]
