"""The paper's Section 6 experiments as pure, seeded runs that return plain data (no I/O, no printing).

Theory of operation
-------------------
* `simulate` runs one elicitation of a named algorithm against a simulated oracle (exact, Definition 4's
  threshold noise, or a logistic human) on the synthetic sphere of Section 6 (centre ``o = (1/k, ..., 1/k)``,
  radius ``rho``), for a given or a random metric drawn by `elicitation.oracles`. Its elicitor is built from
  JSON-safe ``params`` by `build_elicitor`, the same function `replay_log` uses, so a simulated session's
  answer log (`answer_log`) replays offline to the same queries and result.
* `run_qpme_benchmark`, `run_fair_benchmark` and `run_noise_benchmark` repeat `simulate` over random
  metrics. Trial ``t`` of a setting uses the seed ``trial_seed(seed, k, m, t)``, so each trial can be re-run
  alone (``elicit simulate --seed ...``) and every cell of the noise grid sees the same metrics and oracle
  coins (a paired comparison). Each setting reports mean/median/p90/max errors, mean queries beside the
  paper's Table 4, how many trials violate Assumption 3 (regularity) and queries as a multiple of Theorem 2's
  lower bound.
* `measure_timing` measures the live cost of the core: the time of one ``send`` (generating the next query)
  and of replaying a 2,000-answer log with query checks, with an injected clock so this module stays free
  of the wall clock.
* `benchmark_figures` turns a report into Plotly figure dicts (box plots like Figure 3, a query-count chart
  and a noise heat map); the command line writes them as HTML.

Paper symbols
-------------
==================  ==================  ==========================================================
paper               code                meaning
==================  ==================  ==========================================================
``k``, ``m``        ``n_classes``,      number of rates (classes) and of groups
                    ``n_groups``
``rho``             ``radius``          radius of the query sphere around ``o``
``varrho``          ``inner_radius``    radius of QPME's small spheres (``None``: the elicitor's default)
``epsilon``         ``epsilon``         LPME binary-search tolerance (``1e-2`` in Section 6)
``epsilon_Omega``   ``noise_level``     Definition 4's threshold (``noise="threshold"``)
``tau``             ``tau``             group prevalences of a fair metric (known to the elicitor)
==================  ==================  ==========================================================
"""

from __future__ import annotations

import gc
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from .driver import Done, Pending, replay, run
from .errors import InvalidConfigError, NumericalError
from .evaluation import (
    elicitation_errors,
    fair_degrees_of_freedom,
    query_lower_bound,
    theorem2_lower_bound,
)
from .lpme import lpme
from .oracles import (
    ExactOracle,
    LogisticOracle,
    ThresholdNoiseOracle,
    random_fair_metric,
    random_linear_metric,
    random_quadratic_metric,
    satisfies_regularity,
)
from .qpme import default_inner_radius, qpme
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
from .variants import (
    DEFAULT_CUBIC_TOLERANCE,
    CubicMetric,
    cubic_qpme,
    diagonal_qpme,
    general_qpme,
    general_sphere,
)

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_DESCRIPTIONS",
    "CUBIC_SHARE",
    "DEFAULT_EPSILON",
    "DEFAULT_RADIUS",
    "DEFAULT_TRIALS",
    "FAIR_SETTINGS",
    "LOG_FORMAT",
    "LOG_VERSION",
    "NEAR_ZERO_GRADIENT",
    "NOISE_INNER_RADII",
    "NOISE_LEVELS",
    "NOISE_MODELS",
    "PAPER_FAIR_QUERIES",
    "PAPER_QPME_QUERIES",
    "PUBLISHED_QPME_ERRORS",
    "QPME_CLASSES",
    "TIMING_CASES",
    "Builder",
    "Progress",
    "Simulation",
    "answer_log",
    "benchmark_figures",
    "build_elicitor",
    "measure_timing",
    "replay_log",
    "run_fair_benchmark",
    "run_noise_benchmark",
    "run_qpme_benchmark",
    "simulate",
    "summarize",
    "trial_seed",
]

#: Section 6's LPME tolerance and query-sphere radius.
DEFAULT_EPSILON: Final = 1e-2
DEFAULT_RADIUS: Final = 0.2
#: Random metrics per setting in Section 6.
DEFAULT_TRIALS: Final = 100
#: Settings of Section 6: k for QPME, (k, m) for fair QPME.
QPME_CLASSES: Final = (2, 3, 4, 5)
FAIR_SETTINGS: Final = tuple((k, m) for k in (2, 3, 4, 5) for m in (2, 3, 4, 5))
#: The noise grid (issue 2): inner radius varrho x Definition 4's eps_Omega.
NOISE_INNER_RADII: Final = (0.005, 0.02, 0.05, 0.1)
NOISE_LEVELS: Final = (0.0, 1e-4, 1e-3)
NOISE_MODELS: Final = ("exact", "threshold", "logistic")
#: Table 4 (Appendix G): mean queries of the authors' QPME over 100 metrics, by k.
PAPER_QPME_QUERIES: Final[Mapping[int, float]] = {2: 265.43, 3: 669.29, 4: 1205.91, 5: 1879.74}
#: Table 4 (Appendix G): mean queries of the authors' fair QPME, by (k, m).
PAPER_FAIR_QUERIES: Final[Mapping[tuple[int, int], float]] = {
    (2, 2): 332.10, (2, 3): 867.65, (2, 4): 1663.73, (2, 5): 2738.59,
    (3, 2): 796.37, (3, 3): 2127.44, (3, 4): 4094.31, (3, 5): 6734.15,
    (4, 2): 1398.14, (4, 3): 3808.67, (4, 4): 7363.82, (4, 5): 12180.84,
    (5, 2): 2130.92, (5, 3): 5887.99, (5, 4): 11454.18, (5, 5): 18999.71,
}  # fmt: skip
#: Mean errors of the authors' published implementation in Section 6's setting (issue 2), by k.
PUBLISHED_QPME_ERRORS: Final[Mapping[int, Mapping[str, float]]] = {
    2: {"a": 0.014, "B": 0.044},
    3: {"a": 0.042, "B": 0.17},
    4: {"a": 0.042, "B": 0.18},
    5: {"a": 0.067, "B": 0.28},
}

#: A metric "has a near-zero gradient entry" when ``min_i |d_i| / ||d|| < NEAR_ZERO_GRADIENT`` at ``o``.
NEAR_ZERO_GRADIENT: Final = 0.05

#: ``progress(done, total, label)`` is called after every trial.
Progress = Callable[[int, int, str], None]
#: A monotonic clock in seconds (``time.perf_counter``), injected by the caller of `measure_timing`.
Clock = Callable[[], float]

#: Largest accepted seed (numpy seeds are unbounded, but JSON readers are not).
_MAX_SEED: Final = 2**63 - 1


# ----------------------------------------------------------------------------------------------------------
# Algorithms: random metric, JSON-safe params, elicitor, errors
# ----------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Algorithm:
    """How `simulate` and `replay_log` handle one algorithm name."""

    family: type[Metric]
    #: Whether the algorithm has an inner radius varrho (QPME's small spheres).
    inner_radius: bool
    description: str
    #: LPME tolerance when the caller gives none.
    default_epsilon: float = DEFAULT_EPSILON


_ALGORITHMS: Final[Mapping[str, _Algorithm]] = {
    "lpme": _Algorithm(LinearMetric, False, "linear metric <a, r> (Algorithm 2)"),
    "qpme": _Algorithm(QuadraticMetric, True, "quadratic metric <a, r> + r^T B r / 2 (Algorithm 1)"),
    "fair_qpme": _Algorithm(FairQuadraticMetric, True, "fair quadratic metric (a, B^{uv}, lam) (Section 4)"),
    "tradeoff": _Algorithm(
        FairQuadraticMetric, False, "trade-off lam alone, a and B^{uv} known (Algorithm 5)"
    ),
    "diagonal_qpme": _Algorithm(QuadraticMetric, True, "quadratic metric with diagonal B, O~(k) (Section 5)"),
    "general_qpme": _Algorithm(
        QuadraticMetric, True, "quadratic metric in the k^2 - k off-diagonal rates (Appendix E)"
    ),
    "cubic_qpme": _Algorithm(
        CubicMetric, True, "cubic metric by QPME at basis points (Section 7)", DEFAULT_CUBIC_TOLERANCE
    ),
}
#: Algorithm names `simulate`, `build_elicitor` and `replay_log` accept.
ALGORITHMS: Final = tuple(_ALGORITHMS)
#: One line per algorithm: the metric family it elicits and where the paper describes it.
ALGORITHM_DESCRIPTIONS: Final[Mapping[str, str]] = {
    name: spec.description for name, spec in _ALGORITHMS.items()
}


def _check_algorithm(algorithm: object) -> _Algorithm:
    if not isinstance(algorithm, str) or algorithm not in _ALGORITHMS:
        raise InvalidConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}")
    return _ALGORITHMS[algorithm]


def _check_int(value: object, name: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidConfigError(f"{name} must be an integer, got {value!r}")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        allowed = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise InvalidConfigError(f"{name} must be an integer {allowed}, got {number}")
    return number


def _check_float(value: object, name: str, *, low: float, high: float, open_low: bool = True) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidConfigError(f"{name} must be a number, got {value!r}") from None
    below = number <= low if open_low else number < low
    if not math.isfinite(number) or below or number >= high:
        bracket = "(" if open_low else "["
        raise InvalidConfigError(f"{name} must lie in {bracket}{low:g}, {high:g}), got {value!r}")
    return number


def _sphere_from_params(algorithm: str, params: Mapping[str, Any]) -> Sphere:
    k = _check_int(params.get("n_classes"), "params.n_classes", 2)
    radius = _check_float(params.get("radius", DEFAULT_RADIUS), "params.radius", low=0.0, high=1.0)
    if algorithm == "general_qpme":
        if "center" in params:
            raise InvalidConfigError("params.center is not supported for general_qpme (always R_ij = 1/k)")
        return general_sphere(k, radius)
    center = params.get("center")
    if center is None:
        return Sphere.around_uniform(k, radius)
    sphere = Sphere(np.asarray(center, dtype=np.float64), radius)
    if sphere.n_classes != k:
        raise InvalidConfigError(f"params.center has {sphere.n_classes} entries but params.n_classes is {k}")
    return sphere


def _pairs_from_params(raw: object) -> dict[tuple[int, int], npt.NDArray[np.float64]]:
    if not isinstance(raw, Sequence):
        raise InvalidConfigError("params.B_pairs must be a list of {u, v, B} objects")
    pairs: dict[tuple[int, int], npt.NDArray[np.float64]] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not {"u", "v", "B"} <= set(item):
            raise InvalidConfigError(f"params.B_pairs[{index}] must be an object with keys u, v, B")
        u = _check_int(item["u"], f"params.B_pairs[{index}].u", 0)
        v = _check_int(item["v"], f"params.B_pairs[{index}].v", 0)
        pairs[(u, v)] = np.asarray(item["B"], dtype=np.float64)
    return pairs


def build_elicitor(algorithm: str, params: Mapping[str, Any]) -> Elicitor[Elicitation[Any]]:
    """Build a fresh elicitor from an algorithm name and JSON-safe parameters.

    Parameters
    ----------
    algorithm : str
        One of `ALGORITHMS`.
    params : mapping
        ``n_classes``, ``radius`` (default 0.2), optional ``center`` (default ``o = 1/k``), ``epsilon``
        (default 1e-2); ``qpme``/``fair_qpme`` optionally ``inner_radius`` and ``qpme`` ``reconstruction``;
        ``fair_qpme`` ``n_groups`` and ``tau`` (``(n_groups, n_classes)``); ``tradeoff`` ``a``,
        ``B_pairs`` (list of ``{"u", "v", "B"}``) and ``tau``. This is the ``params`` object of the
        answer-log format (docs/benchmarks.md).

    Returns
    -------
    Elicitor

    Raises
    ------
    InvalidConfigError
        Unknown algorithm or bad parameters (naming the parameter).
    """
    if not isinstance(params, Mapping):
        raise InvalidConfigError(f"params must be an object, got {type(params).__name__}")
    spec = _check_algorithm(algorithm)
    sphere = _sphere_from_params(algorithm, params)
    epsilon = _check_float(params.get("epsilon", spec.default_epsilon), "params.epsilon", low=0.0, high=1.0)
    inner = params.get("inner_radius")
    inner_radius = None if inner is None else _check_float(inner, "params.inner_radius", low=0.0, high=1.0)
    if algorithm == "lpme":
        return lpme(sphere, epsilon=epsilon)
    if algorithm == "qpme":
        reconstruction = params.get("reconstruction", "lstsq")
        return qpme(sphere, epsilon=epsilon, inner_radius=inner_radius, reconstruction=reconstruction)
    if algorithm == "diagonal_qpme":
        return diagonal_qpme(sphere, epsilon, inner_radius=inner_radius)
    if algorithm == "general_qpme":
        return general_qpme(sphere, epsilon, inner_radius=inner_radius)
    if algorithm == "cubic_qpme":
        return cubic_qpme(sphere, epsilon, qpme_radius=inner_radius)
    if "tau" not in params:
        raise InvalidConfigError(f"params.tau (group prevalences) is required for {algorithm}")
    tau = np.asarray(params["tau"], dtype=np.float64)
    if algorithm == "tradeoff":
        from .fair import tradeoff_search

        if "a" not in params or "B_pairs" not in params:
            raise InvalidConfigError(
                "params.a and params.B_pairs (the known metric) are required for tradeoff"
            )
        return tradeoff_search(
            sphere,
            a=np.asarray(params["a"], dtype=np.float64),
            B_pairs=_pairs_from_params(params["B_pairs"]),
            tau=tau,
            epsilon=epsilon,
        )
    from .fair import fair_qpme

    groups = _check_int(params.get("n_groups", tau.shape[0]), "params.n_groups", 2)
    result: Elicitor[Elicitation[Any]] = fair_qpme(
        sphere, groups=groups, tau=tau, epsilon=epsilon, inner_radius=inner_radius
    )
    return result


#: Share of ``||C||_F^2`` in the unit total of a random cubic metric (the rest as for quadratic metrics).
CUBIC_SHARE: Final = 0.2


def _random_metric(algorithm: str, rng: np.random.Generator, sphere: Sphere, n_groups: int) -> Metric:
    k = sphere.n_classes
    if algorithm == "lpme":
        return random_linear_metric(rng, k)
    if algorithm in ("qpme", "general_qpme"):
        return random_quadratic_metric(rng, k, sphere=sphere)
    if algorithm == "diagonal_qpme":
        # B keeps the diagonal of a random NSD matrix (itself NSD); the metric renormalises.
        base = random_quadratic_metric(rng, k, sphere=sphere)
        return QuadraticMetric(base.a, np.diag(np.diag(base.B)))
    if algorithm == "cubic_qpme":
        base = random_quadratic_metric(rng, k, sphere=sphere)
        tensor = rng.standard_normal((k, k, k))
        C = np.mean([np.transpose(tensor, axes) for axes in itertools.permutations(range(3))], axis=0)
        C = C * math.sqrt(CUBIC_SHARE / (1.0 - CUBIC_SHARE)) / float(np.linalg.norm(C))
        return CubicMetric(base.a, base.B, C)
    return random_fair_metric(rng, k, n_groups)


def _params(
    algorithm: str,
    metric: Metric,
    *,
    n_classes: int,
    radius: float,
    epsilon: float,
    inner_radius: float | None,
    reconstruction: str,
) -> dict[str, Any]:
    params: dict[str, Any] = {"n_classes": n_classes, "radius": radius, "epsilon": epsilon}
    if algorithm not in ("lpme", "tradeoff") and inner_radius is not None:
        params["inner_radius"] = inner_radius
    if algorithm == "qpme":
        params["reconstruction"] = reconstruction
    if isinstance(metric, FairQuadraticMetric):
        params["n_groups"] = metric.n_groups
        params["tau"] = metric.tau.tolist()
        if algorithm == "tradeoff":
            params["a"] = metric.a.tolist()
            params["B_pairs"] = [{"u": u, "v": v, "B": B.tolist()} for (u, v), B in metric.B_pairs.items()]
    return params


def _make_oracle(
    noise: str, metric: Metric, level: float, rng: np.random.Generator
) -> ExactOracle | ThresholdNoiseOracle | LogisticOracle:
    if noise == "exact":
        return ExactOracle(metric)
    if noise == "threshold":
        return ThresholdNoiseOracle(metric, level, rng=rng)
    return LogisticOracle(metric, level, rng=rng)


@dataclass(frozen=True, eq=False)
class Simulation:
    """One simulated elicitation: its configuration, the hidden metric and what the elicitor made of it.

    ``params`` is the JSON-safe elicitor configuration (`build_elicitor`); ``errors`` maps ``"a"``, ``"B"``,
    ``"B_pairs"``, ``"lam"`` (whichever apply) to the errors of `elicitation.evaluation`; ``regular`` says
    whether the metric satisfies Assumption 3 (``None`` when the check does not apply); ``wrong_answers``
    counts oracle answers that disagreed with the noise-free answer; ``min_gradient_entry`` is
    ``min_i |d_i| / ||d||`` for the gradient ``d`` at ``o`` of a quadratic metric (small values are the
    near-zero gradient entries behind the heavy error tails of the paper's closed-form reconstruction).
    """

    algorithm: str
    params: Mapping[str, Any]
    seed: int
    noise: str
    noise_level: float
    metric: Metric
    result: Elicitation[Any]
    errors: Mapping[str, float]
    regular: bool | None
    wrong_answers: int
    inner_radius: float | None = field(default=None)
    min_gradient_entry: float | None = field(default=None)


def _error_dict(algorithm: str, true: Metric, estimate: Metric) -> dict[str, float]:
    errors = elicitation_errors(true, estimate)
    values = {"a": errors.a, "B": errors.B, "B_pairs": errors.B_pairs, "lam": errors.lam, "C": errors.C}
    if algorithm == "tradeoff":
        values = {"lam": errors.lam}
    return {name: float(value) for name, value in values.items() if value is not None}


def _check_metric(algorithm: str, metric: Metric, sphere: Sphere, n_groups: int) -> Metric:
    spec = _ALGORITHMS[algorithm]
    if not isinstance(metric, spec.family):
        raise InvalidConfigError(
            f"metric must be a {spec.family.__name__} for {algorithm}, got {type(metric).__name__}"
        )
    k = int(getattr(metric, "n_classes", -1))
    if k != sphere.n_classes:
        what = (
            "rates (k^2 - k off-diagonal rates for general_qpme)"
            if algorithm == "general_qpme"
            else "classes"
        )
        raise InvalidConfigError(
            f"the metric has {k} rates but the query sphere has {sphere.n_classes} {what}"
        )
    diagonal = isinstance(metric, QuadraticMetric) and bool(np.all(np.diag(np.diag(metric.B)) == metric.B))
    if algorithm == "diagonal_qpme" and not diagonal:
        raise InvalidConfigError("metric.B must be diagonal for diagonal_qpme")
    if isinstance(metric, FairQuadraticMetric) and metric.n_groups != n_groups:
        raise InvalidConfigError(f"the metric has {metric.n_groups} groups but n_groups is {n_groups}")
    return metric


def simulate(
    algorithm: str,
    *,
    n_classes: int,
    n_groups: int = 2,
    epsilon: float | None = None,
    radius: float = DEFAULT_RADIUS,
    inner_radius: float | None = None,
    noise: str = "exact",
    noise_level: float = 0.0,
    seed: int = 0,
    metric: Metric | None = None,
    reconstruction: str = "lstsq",
) -> Simulation:
    """Run one elicitation against a simulated oracle on Section 6's synthetic sphere.

    Parameters
    ----------
    algorithm : str
        One of `ALGORITHMS`.
    n_classes : int
        ``k >= 2``.
    n_groups : int
        ``m >= 2`` (fair algorithms only).
    epsilon : float, optional
        Tolerance in ``(0, 1)``: LPME's angle tolerance, or the trade-off search's tolerance on ``lam``;
        default 1e-2 (``cubic_qpme``: its own finer default).
    radius : float
        ``rho`` in ``(0, 1/k]``; the sphere is centred at ``o = (1/k, ..., 1/k)`` (``general_qpme``: the
        sphere of off-diagonal rates around ``R_ij = 1/k``, `elicitation.variants.general_sphere`).
    inner_radius : float, optional
        ``varrho`` in ``(0, rho)`` for QPME-based algorithms (``cubic_qpme``: the radius of its QPME
        spheres); ``None`` uses the elicitor's default.
    noise : {"exact", "threshold", "logistic"}
        Oracle model (see `elicitation.oracles`).
    noise_level : float
        ``epsilon_Omega >= 0`` for ``"threshold"``, the inverse temperature ``beta > 0`` for
        ``"logistic"``; must be 0 for ``"exact"``.
    seed : int
        ``>= 0``; the random metric comes from ``default_rng([seed, 0])``, the oracle's coins from
        ``default_rng([seed, 1])``.
    metric : Metric, optional
        The hidden metric; drawn at random (following the paper's assumptions) when omitted.
    reconstruction : {"lstsq", "closed_form"}
        QPME's reconstruction of ``(a, B)``.

    Returns
    -------
    Simulation

    Raises
    ------
    InvalidConfigError
        On any bad argument, naming it.
    NumericalError
        If the elicitor cannot reconstruct a finite metric (e.g. a degenerate metric).
    """
    spec = _check_algorithm(algorithm)
    k = _check_int(n_classes, "n_classes", 2)
    m = _check_int(n_groups, "n_groups", 2)
    eps = _check_float(spec.default_epsilon if epsilon is None else epsilon, "epsilon", low=0.0, high=1.0)
    rho = _check_float(radius, "radius", low=0.0, high=1.0)
    if inner_radius is not None:
        if not spec.inner_radius:
            raise InvalidConfigError(f"inner_radius does not apply to {algorithm} (it has no inner spheres)")
        _check_float(inner_radius, "inner_radius", low=0.0, high=rho)
    if noise not in NOISE_MODELS:
        raise InvalidConfigError(f"noise must be one of {', '.join(NOISE_MODELS)}; got {noise!r}")
    level = float(noise_level)
    if noise == "exact" and level != 0.0:
        raise InvalidConfigError("noise_level must be 0 for the exact oracle")
    if noise == "threshold" and (not math.isfinite(level) or level < 0.0):
        raise InvalidConfigError(f"noise_level (eps_Omega) must be a finite number >= 0, got {noise_level!r}")
    if noise == "logistic" and (not math.isfinite(level) or level <= 0.0):
        raise InvalidConfigError(f"noise_level (beta) must be a positive finite number, got {noise_level!r}")
    trial = _check_int(seed, "seed", 0, _MAX_SEED)
    sphere = general_sphere(k, rho) if algorithm == "general_qpme" else Sphere.around_uniform(k, rho)
    hidden = (
        _random_metric(algorithm, np.random.default_rng([trial, 0]), sphere, m)
        if metric is None
        else _check_metric(algorithm, metric, sphere, m)
    )
    params = _params(
        algorithm,
        hidden,
        n_classes=k,
        radius=rho,
        epsilon=eps,
        inner_radius=inner_radius,
        reconstruction=reconstruction,
    )
    elicitor = build_elicitor(algorithm, params)
    oracle = _make_oracle(noise, hidden, level, np.random.default_rng([trial, 1]))
    result = run(elicitor, oracle)
    varrho = None
    regular: bool | None = None
    if isinstance(hidden, QuadraticMetric):
        varrho = default_inner_radius(sphere) if inner_radius is None else float(inner_radius)
        regular = satisfies_regularity(hidden, sphere, varrho, pivot=_pivot(result))
    else:
        varrho = inner_radius
    return Simulation(
        algorithm=algorithm,
        params=params,
        seed=trial,
        noise=noise,
        noise_level=level,
        metric=hidden,
        result=result,
        errors=_error_dict(algorithm, hidden, result.metric),
        regular=regular,
        wrong_answers=oracle.wrong_answers,
        inner_radius=varrho,
        min_gradient_entry=_min_gradient_entry(hidden, sphere),
    )


def _min_gradient_entry(metric: Metric, sphere: Sphere) -> float | None:
    if not isinstance(metric, QuadraticMetric):
        return None
    gradient = metric.gradient(sphere.center)
    norm = float(np.linalg.norm(gradient))
    return float(np.min(np.abs(gradient)) / norm) if norm > 0.0 else 0.0


def _pivot(result: Elicitation[Any]) -> int:
    pivot = result.details.get("pivot")
    if pivot is None:
        shifted = result.details.get("shifted")
        pivot = getattr(shifted, "pivot", 0)
    return int(pivot) if isinstance(pivot, (int, np.integer)) else 0


# ----------------------------------------------------------------------------------------------------------
# Answer logs: export and offline replay
# ----------------------------------------------------------------------------------------------------------

#: ``format`` tag and version of the answer-log JSON documents (docs/benchmarks.md).
LOG_FORMAT: Final = "elicitation-answer-log"
LOG_VERSION: Final = 1


def _query_dict(query: Query) -> dict[str, Any]:
    return {
        "first": query.first.tolist(),
        "second": query.second.tolist(),
        "search": query.search,
        "kind": query.kind,
        "coordinate": query.coordinate,
        "step": query.step,
    }


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
        "answers": [
            {"seq": index, "answer": answer, "query": _query_dict(query)}
            for index, (query, answer) in enumerate(simulation.result.log)
        ],
    }


def _parse_answers(raw: object) -> tuple[list[bool], list[Query | None]]:
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
        # Undo rows, and the answers they undid, stay in an exported log for audit but are not answers.
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
                queries.append(
                    Query(
                        np.asarray(query["first"], dtype=np.float64),
                        np.asarray(query["second"], dtype=np.float64),
                    )
                )
            except (TypeError, ValueError) as exc:
                raise InvalidConfigError(f"{where}.query is not a pair of rate arrays: {exc}") from exc
        else:
            raise InvalidConfigError(f"{where}.query must be an object with first and second rate arrays")
        answers.append(answer)
    return answers, queries


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
    answers, queries = _parse_answers(document["answers"])
    checked = [q for q in queries if q is not None]
    if checked and len(checked) != len(queries):
        raise InvalidConfigError("either every answer or none must carry its query")
    algorithm = document["algorithm"]
    if not isinstance(algorithm, str):
        raise InvalidConfigError(f"algorithm must be a string, got {algorithm!r}")
    elicitor = (build or _build_from_params)(algorithm, document)
    return replay(elicitor, answers, expected_queries=checked if checked else None)


# ----------------------------------------------------------------------------------------------------------
# Benchmarks
# ----------------------------------------------------------------------------------------------------------


def trial_seed(seed: int, n_classes: int, n_groups: int, trial: int) -> int:
    """The `simulate` seed of trial ``trial`` of setting ``(n_classes, n_groups)`` in a run seeded ``seed``.

    Seeds are 62-bit integers derived with `numpy.random.SeedSequence`, so every trial is independent of
    the others and can be re-run alone with ``elicit simulate --seed``.
    """
    state = np.random.SeedSequence([seed, n_classes, n_groups, trial]).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Mean, median, 90th percentile and maximum of ``values`` (NaN-free; empty gives NaNs)."""
    if len(values) == 0:
        return {"mean": math.nan, "median": math.nan, "p90": math.nan, "max": math.nan}
    array = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(np.mean(array)),
        "median": float(np.median(array)),
        "p90": float(np.percentile(array, 90)),
        "max": float(np.max(array)),
    }


def _trial(
    algorithm: str, k: int, m: int, seed: int, trial: int, options: Mapping[str, Any]
) -> dict[str, Any]:
    record: dict[str, Any] = {"trial": trial, "seed": trial_seed(seed, k, m, trial)}
    try:
        sim = simulate(algorithm, n_classes=k, n_groups=m, seed=record["seed"], **options)
    except NumericalError as exc:
        record.update(failure=f"{type(exc).__name__}: {exc}", num_queries=None, errors={}, regular=None)
        return record
    record.update(
        failure=None,
        num_queries=sim.result.num_queries,
        errors=dict(sim.errors),
        regular=sim.regular,
        wrong_answers=sim.wrong_answers,
        min_gradient_entry=sim.min_gradient_entry,
    )
    return record


def _summary(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ok = [r for r in records if r["failure"] is None]
    names = sorted({name for r in ok for name in r["errors"]})
    errors = {name: summarize([r["errors"][name] for r in ok]) for name in names}
    regular = [r for r in ok if r["regular"] is not False]
    return {
        "trials": len(records),
        "failures": len(records) - len(ok),
        "regularity_violations": sum(1 for r in ok if r["regular"] is False),
        "near_zero_gradient": sum(
            1
            for r in ok
            if r.get("min_gradient_entry") is not None and r["min_gradient_entry"] < NEAR_ZERO_GRADIENT
        ),
        "errors": errors,
        "errors_regular": {name: summarize([r["errors"][name] for r in regular]) for name in names},
        "queries": summarize([float(r["num_queries"]) for r in ok]),
        "wrong_answers": summarize([float(r.get("wrong_answers", 0)) for r in ok]),
    }


class _Counter:
    def __init__(self, total: int, progress: Progress | None) -> None:
        self.done = 0
        self.total = total
        self.progress = progress

    def tick(self, label: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, self.total, label)


def _check_trials(trials: int) -> int:
    return _check_int(trials, "trials", 1)


def _options(
    epsilon: float, radius: float, inner_radius: float | None, reconstruction: str = "lstsq"
) -> dict[str, Any]:
    return {
        "epsilon": epsilon,
        "radius": radius,
        "inner_radius": inner_radius,
        "reconstruction": reconstruction,
    }


def run_qpme_benchmark(
    *,
    classes: Sequence[int] = QPME_CLASSES,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    radius: float = DEFAULT_RADIUS,
    inner_radius: float | None = None,
    reconstruction: str = "lstsq",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Section 6, quadratic metrics: QPME on ``trials`` random metrics per ``k`` with an exact oracle.

    Returns
    -------
    dict
        ``{"benchmark": "qpme", "config": {...}, "settings": [...]}``; each setting holds ``n_classes``,
        ``records`` (one per trial: seed, num_queries, errors, regular, failure) and ``summary`` (`summarize`
        of each error and of the queries, failures, regularity violations, the paper's Table 4 queries,
        the published errors, Theorem 2's lower bound and the mean queries as a multiple of it).
    """
    n = _check_trials(trials)
    ks = [_check_int(k, "classes", 2) for k in classes]
    options = _options(epsilon, radius, inner_radius, reconstruction)
    counter = _Counter(n * len(ks), progress)
    settings = []
    for k in ks:
        records = []
        for t in range(n):
            records.append(_trial("qpme", k, 2, seed, t, options))
            counter.tick(f"qpme k={k}")
        summary = _summary(records)
        bound = theorem2_lower_bound(k, epsilon)
        summary.update(
            paper_queries=PAPER_QPME_QUERIES.get(k),
            published_errors=dict(PUBLISHED_QPME_ERRORS[k]) if k in PUBLISHED_QPME_ERRORS else None,
            lower_bound=bound,
            queries_over_lower_bound=summary["queries"]["mean"] / bound if bound > 0 else math.nan,
        )
        settings.append({"n_classes": k, "records": records, "summary": summary})
    config = {"trials": n, "seed": seed, "oracle": "exact", **options}
    return {"benchmark": "qpme", "config": config, "settings": settings}


def run_fair_benchmark(
    *,
    settings: Sequence[tuple[int, int]] = FAIR_SETTINGS,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    radius: float = DEFAULT_RADIUS,
    inner_radius: float | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Section 6, fairness metrics: fair QPME on ``trials`` random metrics per ``(k, m)``, exact oracle.

    Returns
    -------
    dict
        ``{"benchmark": "fair", "config": {...}, "settings": [...]}`` as `run_qpme_benchmark`, with
        ``n_groups`` per setting; the lower bound counts `fair_degrees_of_freedom` at Theorem 2's tolerance
        ``k sqrt(k) epsilon``.
    """
    n = _check_trials(trials)
    pairs = [(_check_int(k, "k", 2), _check_int(m, "m", 2)) for k, m in settings]
    options = _options(epsilon, radius, inner_radius)
    del options["reconstruction"]
    counter = _Counter(n * len(pairs), progress)
    results = []
    for k, m in pairs:
        records = []
        for t in range(n):
            records.append(_trial("fair_qpme", k, m, seed, t, options))
            counter.tick(f"fair k={k} m={m}")
        summary = _summary(records)
        bound = query_lower_bound(fair_degrees_of_freedom(k, m), k * math.sqrt(k) * epsilon)
        summary.update(
            paper_queries=PAPER_FAIR_QUERIES.get((k, m)),
            published_errors=None,
            lower_bound=bound,
            queries_over_lower_bound=summary["queries"]["mean"] / bound if bound > 0 else math.nan,
        )
        results.append({"n_classes": k, "n_groups": m, "records": records, "summary": summary})
    config = {"trials": n, "seed": seed, "oracle": "exact", **options}
    return {"benchmark": "fair", "config": config, "settings": results}


def run_noise_benchmark(
    *,
    classes: Sequence[int] = (3,),
    inner_radii: Sequence[float] = NOISE_INNER_RADII,
    noise_levels: Sequence[float] = NOISE_LEVELS,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    radius: float = DEFAULT_RADIUS,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Theorem 1's trade-off: QPME errors over ``varrho x eps_Omega`` with Definition 4's noisy oracle.

    Every cell of the grid uses the same metrics and oracle coins (trial seeds do not depend on the cell).
    ``eps_Omega = 0`` is the exact oracle.

    Returns
    -------
    dict
        ``{"benchmark": "noise", "config": {...}, "settings": [...]}``; each setting holds ``n_classes``,
        ``inner_radius``, ``noise_level``, ``records`` and ``summary``.
    """
    n = _check_trials(trials)
    ks = [_check_int(k, "classes", 2) for k in classes]
    radii = [_check_float(r, "inner_radii", low=0.0, high=radius) for r in inner_radii]
    levels = [_check_float(e, "noise_levels", low=0.0, high=1.0, open_low=False) for e in noise_levels]
    counter = _Counter(n * len(ks) * len(radii) * len(levels), progress)
    results = []
    for k in ks:
        for varrho in radii:
            for level in levels:
                options = _options(epsilon, radius, varrho)
                options.update(noise="threshold" if level > 0 else "exact", noise_level=level)
                records = []
                for t in range(n):
                    records.append(_trial("qpme", k, 2, seed, t, options))
                    counter.tick(f"noise k={k} varrho={varrho:g} eps_Omega={level:g}")
                results.append(
                    {
                        "n_classes": k,
                        "inner_radius": varrho,
                        "noise_level": level,
                        "records": records,
                        "summary": _summary(records),
                    }
                )
    config = {
        "trials": n,
        "seed": seed,
        "oracle": "threshold (fair coin)",
        "epsilon": epsilon,
        "radius": radius,
    }
    return {"benchmark": "noise", "config": config, "settings": results}


# ----------------------------------------------------------------------------------------------------------
# Timing
# ----------------------------------------------------------------------------------------------------------


def _send_times(elicitor: Elicitor[Elicitation[Any]], oracle: ExactOracle, clock: Clock) -> list[float]:
    """Seconds per step: the first query, the next query after each answer, and last the final result."""
    times: list[float] = []
    start = clock()
    query = next(elicitor)
    times.append(clock() - start)
    try:
        while True:
            answer = oracle(query.first, query.second)
            start = clock()
            query = elicitor.send(answer)
            times.append(clock() - start)
    except StopIteration:
        times.append(clock() - start)
    return times


#: `measure_timing`'s default next-query cases: (label, algorithm, k, m).
TIMING_CASES: Final = (("qpme k=5", "qpme", 5, 2), ("fair_qpme k=3 m=3", "fair_qpme", 3, 3))


def measure_timing(
    clock: Clock,
    *,
    seed: int = 0,
    cases: Sequence[tuple[str, str, int, int]] = TIMING_CASES,
    replay_answers: int = 2000,
    repeats: int = 5,
) -> dict[str, Any]:
    """Measure the live cost of the core with ``clock`` (e.g. ``time.perf_counter``).

    * Next query: every ``send`` of each case's elicitation (by default QPME with k = 5 and fair QPME with
      k = 3, m = 3) against an exact oracle that returns a query, in microseconds (mean, median, p90, max);
      ``finish`` is the last ``send``, which computes the final metric instead.
    * Replay: `elicitation.replay` of the first ``replay_answers`` answers of a fair QPME log (k = 3, the
      fewest groups whose log is long enough) with every query checked, as the app does on resume; the
      median of ``repeats`` runs (elicitor construction excluded, the simulations' heap frozen as the app
      freezes its own), in milliseconds.

    Returns
    -------
    dict
        ``{"next_query": {label: stats_us}, "replay": {"algorithm", "n_classes", "n_groups", "answers",
        "log_length", "ms", "runs_ms"}}``.

    Raises
    ------
    InvalidConfigError
        On bad arguments, or if no fair QPME log with up to 8 groups is ``replay_answers`` long.
    """
    rng_seed = _check_int(seed, "seed", 0, _MAX_SEED)
    count = _check_int(replay_answers, "replay_answers", 1)
    runs = _check_int(repeats, "repeats", 1)
    next_query: dict[str, dict[str, float]] = {}
    for label, algorithm, k, m in cases:
        sim = simulate(algorithm, n_classes=k, n_groups=m, seed=rng_seed)
        elicitor = build_elicitor(algorithm, sim.params)
        *query_times, finish = _send_times(elicitor, ExactOracle(sim.metric), clock)
        stats = summarize([1e6 * t for t in query_times])
        stats["finish"] = 1e6 * finish
        stats["queries"] = float(sim.result.num_queries)
        next_query[label] = stats
    for m in range(2, 9):
        sim = simulate("fair_qpme", n_classes=3, n_groups=m, seed=rng_seed)
        if sim.result.num_queries < count:
            continue
        answers = [answer for _, answer in sim.result.log[:count]]
        queries = [query for query, _ in sim.result.log[:count]]
        samples = []
        # The web app freezes its long-lived start-up heap (app.main); freeze this benchmark's simulations
        # likewise, so full GC passes do not bill the replay for walking data it never touches.
        gc.collect()
        gc.freeze()
        try:
            for _ in range(runs):
                elicitor = build_elicitor("fair_qpme", sim.params)
                start = clock()
                replay(elicitor, answers, expected_queries=queries)
                samples.append(1e3 * (clock() - start))
        finally:
            gc.unfreeze()
        replay_case = {
            "algorithm": "fair_qpme",
            "n_classes": 3,
            "n_groups": m,
            "log_length": sim.result.num_queries,
            "answers": count,
            "ms": float(np.median(samples)),
            "runs_ms": samples,
        }
        return {"next_query": next_query, "replay": replay_case}
    raise InvalidConfigError(f"replay_answers={count} is longer than any fair QPME log with k=3, m<=8")


# ----------------------------------------------------------------------------------------------------------
# Figures (Plotly figure dicts; the command line renders them to HTML)
# ----------------------------------------------------------------------------------------------------------

_ERROR_TITLES: Final[Mapping[str, str]] = {
    "a": "||a - â||₂",
    "B": "||B - B̂||_F",
    "B_pairs": "Σ ||B^uv - B̂^uv||_F",
    "lam": "|λ - λ̂|",
    "C": "||C - Ĉ||_F",
}


def _box_figure(
    settings: Sequence[Mapping[str, Any]], error: str, label: Callable[[Mapping[str, Any]], str], title: str
) -> dict[str, Any]:
    traces = []
    for setting in settings:
        values = [
            r["errors"][error] for r in setting["records"] if r["failure"] is None and error in r["errors"]
        ]
        traces.append({"type": "box", "name": label(setting), "y": values, "boxpoints": "outliers"})
    return {
        "data": traces,
        "layout": {
            "title": {"text": title},
            "yaxis": {"title": {"text": _ERROR_TITLES.get(error, error)}},
            "showlegend": False,
        },
    }


def _queries_figure(
    settings: Sequence[Mapping[str, Any]], label: Callable[[Mapping[str, Any]], str]
) -> dict[str, Any]:
    names = [label(s) for s in settings]
    ours = [s["summary"]["queries"]["mean"] for s in settings]
    paper = [s["summary"].get("paper_queries") for s in settings]
    bound = [s["summary"].get("lower_bound") for s in settings]
    return {
        "data": [
            {"type": "bar", "name": "this implementation (mean)", "x": names, "y": ours},
            {"type": "bar", "name": "paper, Table 4", "x": names, "y": paper},
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "Theorem 2 lower bound",
                "x": names,
                "y": bound,
            },
        ],
        "layout": {
            "title": {"text": "Mean number of queries"},
            "barmode": "group",
            "yaxis": {"title": {"text": "queries"}},
        },
    }


def _mean_by_groups_figure(settings: Sequence[Mapping[str, Any]], error: str) -> dict[str, Any]:
    """Figure 3c-e's layout: mean error against k, one line per number of groups m."""
    traces = []
    for m in sorted({s["n_groups"] for s in settings}):
        cells = sorted((s for s in settings if s["n_groups"] == m), key=lambda s: s["n_classes"])
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": f"m={m}",
                "x": [s["n_classes"] for s in cells],
                "y": [s["summary"]["errors"].get(error, {}).get("mean") for s in cells],
            }
        )
    return {
        "data": traces,
        "layout": {
            "title": {"text": f"Fair QPME: mean {_ERROR_TITLES.get(error, error)} by k and m (Figure 3c-e)"},
            "xaxis": {"title": {"text": "number of classes k"}, "dtick": 1},
            "yaxis": {"title": {"text": _ERROR_TITLES.get(error, error)}},
        },
    }


def benchmark_figures(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Plotly figure dicts for a benchmark report, keyed by a file-name stem.

    ``qpme``: box plots of ``||a - a_hat||`` and ``||B - B_hat||_F`` per ``k`` (Figure 3a-b) and a query
    chart beside Table 4; ``fair``: box plots of the three errors per ``(k, m)``, their means against ``k``
    per ``m`` (Figure 3c-e) and the query chart; ``noise``: heat maps of the mean errors over
    ``varrho x eps_Omega`` per ``k``; ``ranking`` (the report of
    `elicitation.ranking.run_ranking_benchmark`): grouped bars of mean NDCG and Kendall's tau per dataset
    and method.
    """
    kind = report.get("benchmark")
    settings = report.get("settings", [])
    figures: dict[str, dict[str, Any]] = {}
    if kind == "qpme":
        label: Callable[[Mapping[str, Any]], str] = lambda s: f"k={s['n_classes']}"  # noqa: E731
        figures["qpme_error_a"] = _box_figure(settings, "a", label, "QPME: error in a (Figure 3a)")
        figures["qpme_error_B"] = _box_figure(settings, "B", label, "QPME: error in B (Figure 3b)")
        figures["qpme_queries"] = _queries_figure(settings, label)
    elif kind == "fair":
        label = lambda s: f"k={s['n_classes']} m={s['n_groups']}"  # noqa: E731
        figures["fair_error_a"] = _box_figure(settings, "a", label, "Fair QPME: error in a (Figure 3c)")
        figures["fair_error_B_pairs"] = _box_figure(
            settings, "B_pairs", label, "Fair QPME: error in B^uv (Figure 3d)"
        )
        figures["fair_error_lam"] = _box_figure(settings, "lam", label, "Fair QPME: error in λ (Figure 3e)")
        figures["fair_queries"] = _queries_figure(settings, label)
        for error in ("a", "B_pairs", "lam"):
            figures[f"fair_mean_{error}"] = _mean_by_groups_figure(settings, error)
    elif kind == "ranking":
        datasets = report.get("datasets", {})
        methods = sorted({method for entry in datasets.values() for method in entry.get("methods", {})})
        for measure, title in (("ndcg_mean", "mean NDCG"), ("kendall_tau_mean", "mean Kendall's tau")):
            traces = [
                {
                    "type": "bar",
                    "name": method,
                    "x": list(datasets),
                    "y": [
                        entry.get("methods", {}).get(method, {}).get(measure) for entry in datasets.values()
                    ],
                }
                for method in methods
            ]
            figures[f"ranking_{measure.removesuffix('_mean')}"] = {
                "data": traces,
                "layout": {
                    "title": {"text": f"Ranking real classifiers (Appendix H): {title}"},
                    "barmode": "group",
                },
            }
    elif kind == "noise":
        for k in sorted({s["n_classes"] for s in settings}):
            cells = [s for s in settings if s["n_classes"] == k]
            radii = sorted({s["inner_radius"] for s in cells})
            levels = sorted({s["noise_level"] for s in cells})
            for error in ("a", "B"):
                z = [
                    [
                        next(s["summary"]["errors"][error]["mean"] for s in cells
                             if s["inner_radius"] == r and s["noise_level"] == e)
                        for r in radii
                    ]
                    for e in levels
                ]  # fmt: skip
                figures[f"noise_k{k}_error_{error}"] = {
                    "data": [
                        {
                            "type": "heatmap",
                            "x": [f"ϱ={r:g}" for r in radii],
                            "y": [f"ε_Ω={e:g}" for e in levels],
                            "z": z,
                            "colorscale": "Viridis",
                            "texttemplate": "%{z:.3f}",
                        }
                    ],
                    "layout": {
                        "title": {"text": f"QPME k={k}: mean {_ERROR_TITLES[error]} under noise"},
                        "xaxis": {"title": {"text": "inner radius ϱ"}},
                        "yaxis": {"title": {"text": "Definition 4 noise ε_Ω"}},
                    },
                }
    return figures
