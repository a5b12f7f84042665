"""One simulated elicitation of a named algorithm against a simulated oracle (paper, Section 6).

`simulate` draws a metric (or takes one), builds the elicitor from JSON-safe ``params`` with
`build_elicitor` (the builder the answer-log replay uses too, so a simulated session replays offline to the
same queries) and runs it against an exact, threshold-noise (Definition 4) or logistic oracle on the
synthetic sphere around ``o = (1/k, ..., 1/k)``.

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from ..catalogue import ALGORITHMS as CATALOGUE
from ..catalogue import Algorithm, Setting
from ..driver import run
from ..errors import InvalidConfigError
from ..families import Draw, check_generator
from ..families.cubic import CUBIC_SHARE
from ..oracles import ExactOracle, LogisticOracle, ThresholdNoiseOracle, satisfies_regularity
from ..qpme import default_inner_radius
from ..types import Elicitation, Elicitor, Metric, QuadraticMetric, Sphere, pair_index

__all__ = [
    "ALGORITHMS",
    "ALGORITHM_DESCRIPTIONS",
    "CUBIC_SHARE",
    "DEFAULT_EPSILON",
    "DEFAULT_RADIUS",
    "MAX_SEED",
    "NOISE_MODELS",
    "Simulation",
    "build_elicitor",
    "check_float",
    "check_int",
    "simulate",
]

#: Section 6's LPME tolerance and query-sphere radius.
DEFAULT_EPSILON: Final = 1e-2
DEFAULT_RADIUS: Final = 0.2
NOISE_MODELS: Final = ("exact", "threshold", "logistic")

#: Largest accepted seed (numpy seeds are unbounded, but JSON readers are not).
MAX_SEED: Final = 2**63 - 1


#: Algorithm names `simulate`, `build_elicitor` and `replay_log` accept: the catalogue's algorithms that run
#: on a bare sphere of rates (the active ones choose queries from a study's query space).
ALGORITHMS: Final = tuple(name for name, spec in CATALOGUE.items() if not spec.needs_space)
#: One line per algorithm: the metric family it elicits and where the paper describes it.
ALGORITHM_DESCRIPTIONS: Final[Mapping[str, str]] = {name: CATALOGUE[name].elicits for name in ALGORITHMS}
#: Keys of ``params`` that describe the sphere and the groups; the others are the algorithm's parameters.
_SETTING_KEYS: Final = frozenset({"n_classes", "radius", "center", "n_groups", "tau"})


def _check_algorithm(algorithm: object) -> Algorithm:
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise InvalidConfigError(f"algorithm must be one of {', '.join(ALGORITHMS)}; got {algorithm!r}")
    return CATALOGUE[algorithm]


def check_int(value: object, name: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InvalidConfigError(f"{name} must be an integer, got {value!r}")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        allowed = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise InvalidConfigError(f"{name} must be an integer {allowed}, got {number}")
    return number


def check_float(value: object, name: str, *, low: float, high: float, open_low: bool = True) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InvalidConfigError(f"{name} must be a number, got {value!r}") from None
    below = number <= low if open_low else number < low
    if not math.isfinite(number) or below or number >= high:
        bracket = "(" if open_low else "["
        raise InvalidConfigError(f"{name} must lie in {bracket}{low:g}, {high:g}), got {value!r}")
    return number


def _sphere_from_params(spec: Algorithm, params: Mapping[str, Any]) -> Sphere:
    k = check_int(params.get("n_classes"), "params.n_classes", 2)
    radius = check_float(params.get("radius", DEFAULT_RADIUS), "params.radius", low=0.0, high=1.0)
    if spec.sphere is not None:
        if "center" in params:
            raise InvalidConfigError(
                f"params.center is not supported for {spec.name} (n_classes and radius fix its sphere)"
            )
        return spec.sphere(k, radius)
    center = params.get("center")
    if center is None:
        return Sphere.around_uniform(k, radius)
    sphere = Sphere(np.asarray(center, dtype=np.float64), radius)
    if sphere.n_classes != k:
        raise InvalidConfigError(f"params.center has {sphere.n_classes} entries but params.n_classes is {k}")
    return sphere


def _pairs_from_params(raw: object, n_groups: int) -> list[Any]:
    """The log's ``B_pairs`` (``{u, v, B}`` objects) as the catalogue's matrices in `pair_index` order."""
    if not isinstance(raw, Sequence):
        raise InvalidConfigError("params.B_pairs must be a list of {u, v, B} objects")
    pairs: dict[tuple[int, int], Any] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not {"u", "v", "B"} <= set(item):
            raise InvalidConfigError(f"params.B_pairs[{index}] must be an object with keys u, v, B")
        u = check_int(item["u"], f"params.B_pairs[{index}].u", 0)
        v = check_int(item["v"], f"params.B_pairs[{index}].v", 0)
        pairs[(u, v)] = item["B"]
    expected = pair_index(n_groups)
    if set(pairs) != set(expected):
        raise InvalidConfigError(f"params.B_pairs must give one matrix per group pair {list(expected)}")
    return [pairs[pair] for pair in expected]


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
    sphere = _sphere_from_params(spec, params)
    own = {key: value for key, value in params.items() if key not in _SETTING_KEYS}
    if not spec.needs_groups:
        return spec.build(Setting(sphere), own, prefix="params.")
    if "tau" not in params:
        raise InvalidConfigError(f"params.tau (group prevalences) is required for {algorithm}")
    tau = np.asarray(params["tau"], dtype=np.float64)
    groups = check_int(params.get("n_groups", tau.shape[0]), "params.n_groups", 2)
    if "B_pairs" in own:
        own["B_pairs"] = _pairs_from_params(own["B_pairs"], groups)
    return spec.build(Setting(sphere, groups, tau=tau), own, prefix="params.")


def _params(
    spec: Algorithm,
    metric: Metric,
    *,
    n_classes: int,
    radius: float,
    epsilon: float,
    inner_radius: float | None,
    reconstruction: str,
) -> dict[str, Any]:
    """The JSON-safe ``params`` of an answer log: the sphere, the declared parameters that were set, and
    for group metrics the groups (and the known coefficients for algorithms that are told them)."""
    params: dict[str, Any] = {"n_classes": n_classes, "radius": radius, "epsilon": epsilon}
    if spec.param("inner_radius") is not None and inner_radius is not None:
        params["inner_radius"] = inner_radius
    if spec.param("reconstruction") is not None:
        params["reconstruction"] = reconstruction
    groups = spec.family.n_groups(metric)
    if groups is not None:
        stored = metric.to_dict()
        params["n_groups"] = groups
        params["tau"] = stored["tau"]
        if spec.param("B_pairs") is not None:
            params["a"] = stored["a"]
            params["B_pairs"] = stored["B_pairs"]
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


def _check_metric(spec: Algorithm, metric: Metric, sphere: Sphere, n_groups: int) -> Metric:
    if not isinstance(metric, spec.family.metric_type):
        wanted = spec.family.metric_type.__name__
        raise InvalidConfigError(f"metric must be a {wanted} for {spec.name}, got {type(metric).__name__}")
    k = int(getattr(metric, "n_classes", -1))
    if k != sphere.n_classes:
        what = "classes" if spec.classes_from_rates is None else f"rates ({spec.elicits})"
        raise InvalidConfigError(
            f"the metric has {k} rates but the query sphere has {sphere.n_classes} {what}"
        )
    if spec.check_metric is not None:
        spec.check_metric(metric)
    groups = spec.family.n_groups(metric)
    if groups is not None and groups != n_groups:
        raise InvalidConfigError(f"the metric has {groups} groups but n_groups is {n_groups}")
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
    reconstruction: str = "signed",
    generator: str = "authors",
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
    reconstruction : {"signed", "lstsq", "closed_form"}
        QPME's reconstruction of ``(a, B)``.
    generator : {"authors", "wishart"}
        Random metric generator (`elicitation.families.GENERATORS`): the published experiments' draw, or
        generic metrics (Wishart curvature, badly scaled gradient) for the quadratic and fair families.

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
    k = check_int(n_classes, "n_classes", 2)
    m = check_int(n_groups, "n_groups", 2)
    eps = check_float(
        spec.defaults()["epsilon"] if epsilon is None else epsilon, "epsilon", low=0.0, high=1.0
    )
    rho = check_float(radius, "radius", low=0.0, high=1.0)
    if inner_radius is not None:
        if spec.param("inner_radius") is None:
            raise InvalidConfigError(f"inner_radius does not apply to {algorithm} (it has no inner spheres)")
        check_float(inner_radius, "inner_radius", low=0.0, high=rho)
    if noise not in NOISE_MODELS:
        raise InvalidConfigError(f"noise must be one of {', '.join(NOISE_MODELS)}; got {noise!r}")
    level = float(noise_level)
    if noise == "exact" and level != 0.0:
        raise InvalidConfigError("noise_level must be 0 for the exact oracle")
    if noise == "threshold" and (not math.isfinite(level) or level < 0.0):
        raise InvalidConfigError(f"noise_level (eps_Omega) must be a finite number >= 0, got {noise_level!r}")
    if noise == "logistic" and (not math.isfinite(level) or level <= 0.0):
        raise InvalidConfigError(f"noise_level (beta) must be a positive finite number, got {noise_level!r}")
    trial = check_int(seed, "seed", 0, MAX_SEED)
    check_generator(generator)
    if metric is not None and generator != "authors":
        raise InvalidConfigError("generator applies to random metrics; a given metric is not drawn")
    sphere = spec.synthetic_sphere(k, rho)
    hidden = (
        spec.random_metric(
            np.random.default_rng([trial, 0]),
            Draw(sphere.n_classes, sphere=sphere, n_groups=m, generator=generator),
        )
        if metric is None
        else _check_metric(spec, metric, sphere, m)
    )
    params = _params(
        spec,
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
        errors=spec.errors(hidden, result.metric),
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
