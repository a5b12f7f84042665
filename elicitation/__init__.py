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
from .oracles import (
    ExactOracle,
    LogisticOracle,
    ThresholdNoiseOracle,
    random_fair_metric,
    random_linear_metric,
    random_quadratic_metric,
    satisfies_regularity,
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
    "ExactOracle",
    "FairQuadraticMetric",
    "InvalidAnswerError",
    "InvalidConfigError",
    "LinearMetric",
    "LogisticOracle",
    "Metric",
    "NumericalError",
    "Pending",
    "QuadraticMetric",
    "Query",
    "ReplayMismatchError",
    "Sphere",
    "ThresholdNoiseOracle",
    "random_fair_metric",
    "random_linear_metric",
    "random_quadratic_metric",
    "replay",
    "run",
    "satisfies_regularity",
]
