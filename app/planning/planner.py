"""Study planner: simulate a configuration against random metrics before anyone is invited.

For each trial a random metric of the algorithm's family is drawn (Appendix H's generators), a simulated
participant answers the elicitor, and the planner records the number of elicitor queries, the coefficient
errors of the estimate and its agreement with the participant on random pairs of the query region. The
participant is exact, except in a study with groups: there people's trade-off ``lam`` is uniform in
`FAIR_LAM_RANGE` (not the elicitor's prior) and they answer with probit noise `FAIR_SIGMA`, so that the
promised error of ``lam`` is what noisy people reach (checked against the benchmark's measured sessions,
docs/fairness-tradeoff.md). Practice, check and evaluation comparisons come from the study's
session plan; minutes per participant use a per-comparison time the coordinator sets, or the median
measured in people's earlier sessions of the study (`pace`: participant pages only, never the JSON API),
or `DEFAULT_SECONDS_PER_QUERY`.

Perceptibility: a comparison is *imperceptible* when no cell of the two confusion matrices (out of
100 people, from the study's query space) differs by at least ``min_cell_gap`` (the algorithm's own
``min_cell_gap`` parameter, else `DEFAULT_MIN_CELL_GAP`). The planner reports the share of simulated
elicitor queries that are imperceptible and warns above `IMPERCEPTIBLE_WARNING_SHARE` (QPME's inner
spheres typically do this; the active elicitors never show such pairs).

The simulation is the expensive part (seconds for the active elicitors) and depends only on the
configuration, the algorithm's version and the planner's own code; `PlanCache` keeps recent simulations in
process, so a study page that shows the plan on every view simulates once per configuration. The
per-comparison time (which changes as answers come in) is applied to the cached simulation on every call.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from elicitation import ElicitationError, ExactOracle, ProbitOracle, agreement, elicitation_errors, run
from elicitation.catalogue import Setting
from elicitation.families import Draw
from elicitation.oracles import random_fair_metric

from ..algorithms import get_algorithm
from ..charts.comparison import displayed_counts
from ..plan import evaluation_left
from ..sessions.displayed import build_session_elicitor
from ..study_config import StudyConfig, build_space, config_hash
from .pace import PRIOR_MEDIAN_SECONDS

__all__ = [
    "DEFAULT_MIN_CELL_GAP",
    "DEFAULT_PLAN_CACHE_SIZE",
    "DEFAULT_SECONDS_PER_QUERY",
    "DEFAULT_TRIALS",
    "FAIR_LAM_RANGE",
    "FAIR_SIGMA",
    "IMPERCEPTIBLE_WARNING_SHARE",
    "PLANNER_VERSION",
    "PlanCache",
    "PlannerResult",
    "imperceptible",
    "plan_study",
]

#: A comparison of two classifiers takes about this long when nothing was measured yet (seconds): the
#: prior for people that measured sessions are pooled with (`pace.study_pace`).
DEFAULT_SECONDS_PER_QUERY = PRIOR_MEDIAN_SECONDS
DEFAULT_TRIALS = 20
#: Two classifiers a person is shown must differ by this many people (out of 100) in some confusion cell.
DEFAULT_MIN_CELL_GAP = 2.0
#: The planner warns when more than this share of the elicitor's queries is imperceptible.
IMPERCEPTIBLE_WARNING_SHARE = 0.10
#: The planner stops early (with fewer trials, reported) after this much wall time per request.
TIME_BUDGET_S = 6.0
#: Part of every cache key: bump it when the simulation below changes what it reports.
PLANNER_VERSION = 4
#: Simulated people of a study with groups: their trade-off, and the standard deviation of the probit noise
#: on their normalised cost (as steep near a tie as logistic noise of beta = 200).
FAIR_LAM_RANGE = (0.15, 0.85)
FAIR_SIGMA = 0.008
#: Random pairs of the query region on which each trial's agreement is measured.
AGREEMENT_PAIRS = 1000
#: Simulations a `PlanCache` keeps (one per study configuration; a result is well under 1 kB).
DEFAULT_PLAN_CACHE_SIZE = 128


@dataclass(frozen=True)
class _Simulation:
    """What the simulated participants did: everything of a plan except the time per comparison."""

    trials: int
    failed_trials: int
    queries_mean: float
    queries_p90: float
    queries_max_bound: int
    other_comparisons: int
    error_a_mean: float | None
    error_a_p90: float | None
    error_b_mean: float | None
    error_b_p90: float | None
    error_lam_mean: float | None
    #: Mean share of random pairs of the query region that the estimate orders as the participant does.
    agreement_mean: float | None
    #: Perceptibility threshold used (people out of 100 in some confusion cell).
    min_cell_gap: float
    #: Share of simulated elicitor queries below that threshold, or displaying (in whole people) the same
    #: pair as the question just before them, in either order (None when no trial produced queries).
    imperceptible_share: float | None


@dataclass(frozen=True)
class PlannerResult(_Simulation):
    """What a study will cost a participant and how precise it will be (simulated, then priced in time)."""

    comparisons_mean: float
    comparisons_p90: float
    seconds_per_query: float
    seconds_source: str
    minutes_mean: float
    minutes_p90: float

    @property
    def perceptibility_warning(self) -> bool:
        """True when too many queries would be imperceptible to a person."""
        return self.imperceptible_share is not None and self.imperceptible_share > IMPERCEPTIBLE_WARNING_SHARE

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "perceptibility_warning": self.perceptibility_warning}


def _random_metric(config: StudyConfig, space: Any, rng: np.random.Generator) -> Any:
    """A simulated participant's metric: the algorithm's family, non-negative weights, the study's sphere
    and groups."""
    algorithm = get_algorithm(config.algorithm).algorithm
    params = dict(config.algorithm_params)
    tau = None
    if algorithm.needs_groups:
        tau = Setting.of_space(space).group_weights(params.get("group_shares"))
        # An algorithm that draws its own people (the trade-off search: the study's known costs) keeps them.
        if algorithm.family.name == "fair_quadratic" and algorithm.draw_metric is None:
            return random_fair_metric(
                rng, space.n_classes, space.n_groups, tau=tau, tradeoff_range=FAIR_LAM_RANGE
            )
    draw = Draw(
        n_classes=space.n_classes, sphere=space.sphere, n_groups=space.n_groups, tau=tau, nonnegative=True
    )
    return algorithm.random_metric(rng, draw, params)


def imperceptible(space: Any, first: Any, second: Any, min_cell_gap: float) -> bool:
    """True when no confusion cell (out of 100) of ``first`` and ``second`` differs by ``min_cell_gap``."""
    left = np.asarray(space.confusion(np.asarray(first, dtype=np.float64)), dtype=np.float64)
    right = np.asarray(space.confusion(np.asarray(second, dtype=np.float64)), dtype=np.float64)
    return bool(np.max(np.abs(left - right)) < min_cell_gap)


def _shown_picture(space: Any, first: Any, second: Any) -> tuple[bytes, bytes]:
    """The pair out of 100 exactly as the participant page shows it (hashable, in the order given)."""
    left, right, _decimals = displayed_counts(
        space.confusion(np.asarray(first, dtype=np.float64)),
        space.confusion(np.asarray(second, dtype=np.float64)),
    )
    return left.tobytes(), right.tobytes()


def _stat(values: list[float], q: float | None = None) -> float | None:
    if not values:
        return None
    return float(np.percentile(values, q)) if q is not None else float(np.mean(values))


def _simulate(config: StudyConfig, trials: int, seed: int, time_budget_s: float) -> _Simulation:
    """Run ``trials`` simulated participants with random metrics (seeded: the same config, the same runs)."""
    spec = get_algorithm(config.algorithm)
    space = build_space(config)
    params = spec.parse_params(config.algorithm_params)
    gap = float(getattr(params, "min_cell_gap", DEFAULT_MIN_CELL_GAP))
    shown = 0
    hidden = 0
    rng = np.random.default_rng(seed)
    queries: list[float] = []
    errors_a: list[float] = []
    errors_b: list[float] = []
    errors_lam: list[float] = []
    agreements: list[float] = []
    failed = 0
    started = time.monotonic()
    for trial in range(trials):
        if trial >= 3 and time.monotonic() - started > time_budget_s:
            break
        metric = _random_metric(config, space, rng)
        oracle = (
            ProbitOracle(metric, FAIR_SIGMA, rng=np.random.default_rng(seed + trial))
            if spec.algorithm.needs_groups
            else ExactOracle(metric)
        )
        try:
            result = run(build_session_elicitor(spec, space, params, seed=seed + trial), oracle)
        except ElicitationError:
            failed += 1
            continue
        queries.append(float(result.num_queries))
        previous: tuple[bytes, bytes] | None = None
        for query, _answer in result.log:
            shown += 1
            picture = _shown_picture(space, query.first, query.second)
            # A question displaying like the one before it looks like a click that did not register.
            repeated = previous is not None and picture in (previous, previous[::-1])
            hidden += repeated or imperceptible(space, query.first, query.second, gap)
            previous = picture
        errors = elicitation_errors(metric, result.metric)
        errors_a.append(float(errors.a))
        second = errors.B if errors.B is not None else errors.B_pairs
        if second is not None:
            errors_b.append(float(second))
        if errors.lam is not None:
            errors_lam.append(float(errors.lam))
        region = spec.algorithm.query_region(space)
        agreements.append(agreement(metric, result.metric, region, rng, n_pairs=AGREEMENT_PAIRS))
    bound = int(spec.build(space, params).max_queries)
    q_mean = _stat(queries) if queries else float(bound)
    q_p90 = _stat(queries, 90) if queries else float(bound)
    assert q_mean is not None and q_p90 is not None
    return _Simulation(
        trials=len(queries) + failed,
        failed_trials=failed,
        queries_mean=q_mean,
        queries_p90=q_p90,
        queries_max_bound=bound,
        # The evaluation pairs a session is expected to ask (they may end early), as participants are told.
        other_comparisons=config.practice_queries
        + config.total_checks
        + round(evaluation_left(0, 0, 0, config.evaluation_queries, config.evaluation_precision)),
        error_a_mean=_stat(errors_a),
        error_a_p90=_stat(errors_a, 90),
        error_b_mean=_stat(errors_b),
        error_b_p90=_stat(errors_b, 90),
        error_lam_mean=_stat(errors_lam),
        agreement_mean=_stat(agreements),
        min_cell_gap=gap,
        imperceptible_share=hidden / shown if shown else None,
    )


def _priced(
    simulation: _Simulation, seconds_per_query: float | None, measured_seconds: float | None
) -> PlannerResult:
    """The plan of a simulation at the study's time per comparison (set, else measured, else default)."""
    if seconds_per_query is not None:
        seconds, source = float(seconds_per_query), "set for this study"
    elif measured_seconds is not None:
        seconds, source = float(measured_seconds), "people's sessions of this study, pooled with the prior"
    else:
        seconds, source = DEFAULT_SECONDS_PER_QUERY, "the default; no session of people measured yet"
    comparisons_mean = simulation.queries_mean + simulation.other_comparisons
    comparisons_p90 = simulation.queries_p90 + simulation.other_comparisons
    return PlannerResult(
        **asdict(simulation),
        comparisons_mean=comparisons_mean,
        comparisons_p90=comparisons_p90,
        seconds_per_query=seconds,
        seconds_source=source,
        minutes_mean=comparisons_mean * seconds / 60.0,
        minutes_p90=comparisons_p90 * seconds / 60.0,
    )


def plan_study(
    config: StudyConfig,
    *,
    trials: int = DEFAULT_TRIALS,
    seconds_per_query: float | None = None,
    measured_seconds: float | None = None,
    seed: int = 0,
    time_budget_s: float = TIME_BUDGET_S,
) -> PlannerResult:
    """Simulate ``trials`` participants with random metrics (seeded: the same config, the same plan)."""
    return _priced(_simulate(config, trials, seed, time_budget_s), seconds_per_query, measured_seconds)


class PlanCache:
    """Recent simulations in this process, least recently used first out (thread-safe).

    The key is everything a simulation depends on: the configuration's canonical hash, the algorithm's
    version, `PLANNER_VERSION`, the trials and the seed. A changed configuration has another hash, so it
    is simulated afresh; entries of old configurations simply age out.
    """

    def __init__(self, size: int = DEFAULT_PLAN_CACHE_SIZE) -> None:
        if size < 1:
            raise ValueError(f"a plan cache holds at least one plan, got size {size}")
        self.size = size
        self._entries: OrderedDict[tuple[Any, ...], _Simulation] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def key(config: StudyConfig, trials: int, seed: int) -> tuple[Any, ...]:
        version = get_algorithm(config.algorithm).version
        return (config_hash(config.model_dump(mode="json")), version, PLANNER_VERSION, trials, seed)

    def plan(
        self,
        config: StudyConfig,
        *,
        trials: int = DEFAULT_TRIALS,
        seconds_per_query: float | None = None,
        measured_seconds: float | None = None,
        seed: int = 0,
    ) -> PlannerResult:
        """`plan_study`, simulating only when this configuration was not simulated recently."""
        key = self.key(config, trials, seed)
        with self._lock:
            simulation = self._entries.get(key)
            if simulation is not None:
                self._entries.move_to_end(key)
        if simulation is None:
            # Simulated outside the lock: seconds of CPU must not hold up other studies' pages. Two
            # simultaneous first views of one study may both simulate (seeded alike); the later one stays.
            simulation = _simulate(config, trials, seed, TIME_BUDGET_S)
            self._store(key, simulation)
        return _priced(simulation, seconds_per_query, measured_seconds)

    def _store(self, key: tuple[Any, ...], simulation: _Simulation) -> None:
        with self._lock:
            self._entries[key] = simulation
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
