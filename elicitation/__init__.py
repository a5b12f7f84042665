"""Elicitation Studio's algorithm core: metric elicitation from pairwise preferences (QPME, UAI 2022)."""

from .confusion import confusion_from_labels, rates_from_confusion, rates_from_labels
from .driver import REPLAY_ATOL, Done, Pending, first_mismatch, replay, run
from .errors import (
    CheckpointError,
    DegenerateMetricError,
    ElicitationError,
    InvalidAnswerError,
    InvalidConfigError,
    NumericalError,
    ReplayMismatchError,
)
from .evaluation import (
    ElicitationErrors,
    RankingQuality,
    agreement,
    elicitation_errors,
    ranking_quality,
    theorem2_lower_bound,
)
from .fair import fair_qpme, tradeoff_search
from .lpme import DEFAULT_TOLERANCE, lpme
from .optimal import BestRates, best_rates
from .oracles import (
    ExactOracle,
    LapseOracle,
    LogisticOracle,
    ProbitOracle,
    ThresholdNoiseOracle,
    random_fair_metric,
    random_linear_metric,
    random_quadratic_metric,
    satisfies_regularity,
)
from .qpme import ShiftedQuadratic, qpme, shifted_quadratic
from .results import load_results
from .types import (
    Elicitation,
    Elicitor,
    FairQuadraticMetric,
    LinearMetric,
    Metric,
    QuadraticMetric,
    Query,
    RandomState,
    Sphere,
    as_generator,
)

__all__ = [
    "DEFAULT_TOLERANCE",
    "REPLAY_ATOL",
    "BestRates",
    "CheckpointError",
    "DegenerateMetricError",
    "Done",
    "Elicitation",
    "ElicitationError",
    "ElicitationErrors",
    "Elicitor",
    "ExactOracle",
    "FairQuadraticMetric",
    "InvalidAnswerError",
    "InvalidConfigError",
    "LapseOracle",
    "LinearMetric",
    "LogisticOracle",
    "Metric",
    "NumericalError",
    "Pending",
    "ProbitOracle",
    "QuadraticMetric",
    "Query",
    "RandomState",
    "RankingQuality",
    "ReplayMismatchError",
    "ShiftedQuadratic",
    "Sphere",
    "ThresholdNoiseOracle",
    "agreement",
    "as_generator",
    "best_rates",
    "confusion_from_labels",
    "elicitation_errors",
    "fair_qpme",
    "first_mismatch",
    "load_results",
    "lpme",
    "qpme",
    "random_fair_metric",
    "random_linear_metric",
    "random_quadratic_metric",
    "ranking_quality",
    "rates_from_confusion",
    "rates_from_labels",
    "replay",
    "run",
    "satisfies_regularity",
    "shifted_quadratic",
    "theorem2_lower_bound",
    "tradeoff_search",
]
