"""The paper's Section 6 experiments: seeded benchmark runs over random metrics that return plain data."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import numpy as np

from ..catalogue import ALGORITHMS as CATALOGUE
from ..errors import NumericalError
from ..evaluation import (
    agreement,
    fair_degrees_of_freedom,
    query_lower_bound,
    ranking_quality,
    sample_query_pairs,
    theorem2_lower_bound,
)
from ..families import check_generator
from .simulation import DEFAULT_EPSILON, DEFAULT_RADIUS, Simulation, check_float, check_int, simulate

__all__ = [
    "DEFAULT_TRIALS",
    "FAIR_SETTINGS",
    "NEAR_ZERO_GRADIENT",
    "NOISE_INNER_RADII",
    "NOISE_LEVELS",
    "PAPER_FAIR_QUERIES",
    "PAPER_QPME_QUERIES",
    "POOL_SIZE",
    "PUBLISHED_QPME_ERRORS",
    "QPME_CLASSES",
    "Progress",
    "run_fair_benchmark",
    "run_noise_benchmark",
    "run_qpme_benchmark",
    "summarize",
    "summarize_low",
    "trial_seed",
]

#: Random metrics per setting in Section 6.
DEFAULT_TRIALS: Final = 100
#: Settings of Section 6: k for QPME, (k, m) for fair QPME.
QPME_CLASSES: Final = (2, 3, 4, 5)
FAIR_SETTINGS: Final = tuple((k, m) for k in (2, 3, 4, 5) for m in (2, 3, 4, 5))
#: The noise grid: inner radius varrho x Definition 4's eps_Omega.
NOISE_INNER_RADII: Final = (0.005, 0.02, 0.05, 0.1)
NOISE_LEVELS: Final = (0.0, 1e-4, 1e-3)
#: Table 4 (Appendix G): mean queries of the authors' QPME over 100 metrics, by k.
PAPER_QPME_QUERIES: Final[Mapping[int, float]] = {2: 265.43, 3: 669.29, 4: 1205.91, 5: 1879.74}
#: Table 4 (Appendix G): mean queries of the authors' fair QPME, by (k, m).
PAPER_FAIR_QUERIES: Final[Mapping[tuple[int, int], float]] = {
    (2, 2): 332.10, (2, 3): 867.65, (2, 4): 1663.73, (2, 5): 2738.59,
    (3, 2): 796.37, (3, 3): 2127.44, (3, 4): 4094.31, (3, 5): 6734.15,
    (4, 2): 1398.14, (4, 3): 3808.67, (4, 4): 7363.82, (4, 5): 12180.84,
    (5, 2): 2130.92, (5, 3): 5887.99, (5, 4): 11454.18, (5, 5): 18999.71,
}  # fmt: skip
#: Mean errors of the authors' published implementation in Section 6's setting, by k.
PUBLISHED_QPME_ERRORS: Final[Mapping[int, Mapping[str, float]]] = {
    2: {"a": 0.014, "B": 0.044},
    3: {"a": 0.042, "B": 0.17},
    4: {"a": 0.042, "B": 0.18},
    5: {"a": 0.067, "B": 0.28},
}

#: Random classifiers (rate vectors uniform in the query ball) on which a trial's Kendall tau is measured.
POOL_SIZE: Final = 100
#: Streams of a trial seed beyond `simulate`'s metric (0) and oracle (1): agreement pairs and the pool.
_PAIRS_STREAM: Final = 2
_POOL_STREAM: Final = 3

#: A metric "has a near-zero gradient entry" when ``min_i |d_i| / ||d|| < NEAR_ZERO_GRADIENT`` at ``o``.
NEAR_ZERO_GRADIENT: Final = 0.05

#: ``progress(done, total, label)`` is called after every trial.
Progress = Callable[[int, int, str], None]


def trial_seed(seed: int, n_classes: int, n_groups: int, trial: int) -> int:
    """The `simulate` seed of trial ``trial`` of setting ``(n_classes, n_groups)`` in a run seeded ``seed``.

    Seeds are 62-bit integers derived with `numpy.random.SeedSequence`, so every trial is independent of
    the others and can be re-run alone with ``elicit simulate --seed``.
    """
    state = np.random.SeedSequence([seed, n_classes, n_groups, trial]).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 | int(state[1]) >> 1


def _describe(values: Sequence[float], percentile: int, extreme: str) -> dict[str, float]:
    """Mean, median, the ``percentile``-th percentile (key ``p<percentile>``) and ``extreme`` (``"max"`` or
    ``"min"``) of ``values``; empty gives NaNs."""
    keys = ("mean", "median", f"p{percentile}", extreme)
    if len(values) == 0:
        return dict.fromkeys(keys, math.nan)
    array = np.asarray(values, dtype=np.float64)
    bound = np.max(array) if extreme == "max" else np.min(array)
    numbers = (np.mean(array), np.median(array), np.percentile(array, percentile), bound)
    return {key: float(number) for key, number in zip(keys, numbers, strict=True)}


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Mean, median, 90th percentile and maximum of ``values`` (NaN-free; empty gives NaNs)."""
    return _describe(values, 90, "max")


def summarize_low(values: Sequence[float]) -> dict[str, float]:
    """Mean, median, 10th percentile and minimum of ``values``: the bad tail of a score where higher is
    better (agreement, Kendall tau); empty gives NaNs."""
    return _describe(values, 10, "min")


def _behaviour(sim: Simulation) -> dict[str, float]:
    """How the elicited metric behaves against the truth: agreement on random query pairs in the ball and
    Kendall tau on a pool of random classifiers' rates (each from its own stream of the trial seed)."""
    true, elicited = sim.metric, sim.result.metric
    ball = CATALOGUE[sim.algorithm].synthetic_sphere(sim.params["n_classes"], sim.params["radius"])
    groups = sim.params.get("n_groups")
    score = agreement(true, elicited, ball, np.random.default_rng([sim.seed, _PAIRS_STREAM]))
    pool, _ = sample_query_pairs(
        ball, POOL_SIZE, np.random.default_rng([sim.seed, _POOL_STREAM]), n_groups=groups
    )
    return {"agreement": score, "kendall_tau": ranking_quality(true, elicited, pool).kendall_tau}


def _trial(
    algorithm: str,
    k: int,
    m: int,
    seed: int,
    trial: int,
    options: Mapping[str, Any],
    *,
    behaviour: bool = False,
) -> dict[str, Any]:
    record: dict[str, Any] = {"trial": trial, "seed": trial_seed(seed, k, m, trial)}
    try:
        sim = simulate(algorithm, n_classes=k, n_groups=m, seed=record["seed"], **options)
        measured = _behaviour(sim) if behaviour else {}
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
        **measured,
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
        **{
            measure: summarize_low([r[measure] for r in ok])
            for measure in ("agreement", "kendall_tau")
            if ok and all(measure in r for r in ok)
        },
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
    return check_int(trials, "trials", 1)


def _options(
    epsilon: float,
    radius: float,
    inner_radius: float | None,
    reconstruction: str = "signed",
    family: str = "authors",
) -> dict[str, Any]:
    return {
        "epsilon": epsilon,
        "radius": radius,
        "inner_radius": inner_radius,
        "reconstruction": reconstruction,
        "generator": check_generator(family),
    }


def _config(n: int, seed: int, oracle: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The report's ``config``: the run's settings, the metric generator under the key ``family``."""
    settings = {key: value for key, value in options.items() if key != "generator"}
    return {"trials": n, "seed": seed, "oracle": oracle, **settings, "family": options["generator"]}


def run_qpme_benchmark(
    *,
    classes: Sequence[int] = QPME_CLASSES,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    radius: float = DEFAULT_RADIUS,
    inner_radius: float | None = None,
    reconstruction: str = "signed",
    family: str = "authors",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Section 6, quadratic metrics: QPME on ``trials`` random metrics per ``k`` with an exact oracle.

    ``family`` picks the metric generator (`elicitation.families.GENERATORS`): ``"authors"``, the one the
    published code used, or ``"wishart"``, generic metrics within the same assumptions.

    Returns
    -------
    dict
        ``{"benchmark": "qpme", "config": {...}, "settings": [...]}``; each setting holds ``n_classes``,
        ``records`` (one per trial: seed, num_queries, errors, agreement, kendall_tau, regular, failure) and
        ``summary`` (`summarize` of each error and of the queries, `summarize_low` of the agreement on
        random pairs in the sphere and of Kendall tau on `POOL_SIZE` random classifiers, failures,
        regularity violations, the paper's Table 4 queries, the published errors (authors' generator
        only), Theorem 2's lower bound and the mean queries as a multiple of it).
    """
    n = _check_trials(trials)
    ks = [check_int(k, "classes", 2) for k in classes]
    options = _options(epsilon, radius, inner_radius, reconstruction, family)
    counter = _Counter(n * len(ks), progress)
    settings = []
    for k in ks:
        records = []
        for t in range(n):
            records.append(_trial("qpme", k, 2, seed, t, options, behaviour=True))
            counter.tick(f"qpme k={k}")
        summary = _summary(records)
        bound = theorem2_lower_bound(k, epsilon)
        published = k in PUBLISHED_QPME_ERRORS and options["generator"] == "authors"
        summary.update(
            paper_queries=PAPER_QPME_QUERIES.get(k),
            published_errors=dict(PUBLISHED_QPME_ERRORS[k]) if published else None,
            lower_bound=bound,
            queries_over_lower_bound=summary["queries"]["mean"] / bound if bound > 0 else math.nan,
        )
        settings.append({"n_classes": k, "records": records, "summary": summary})
    return {"benchmark": "qpme", "config": _config(n, seed, "exact", options), "settings": settings}


def run_fair_benchmark(
    *,
    settings: Sequence[tuple[int, int]] = FAIR_SETTINGS,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    radius: float = DEFAULT_RADIUS,
    inner_radius: float | None = None,
    family: str = "authors",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Section 6, fairness metrics: fair QPME on ``trials`` random metrics per ``(k, m)``, exact oracle.

    Returns
    -------
    dict
        ``{"benchmark": "fair", "config": {...}, "settings": [...]}`` as `run_qpme_benchmark` (agreement
        and Kendall tau on group rates, one point per group), with ``n_groups`` per setting; the lower
        bound counts `fair_degrees_of_freedom` at Theorem 2's tolerance ``k sqrt(k) epsilon``.
    """
    n = _check_trials(trials)
    pairs = [(check_int(k, "k", 2), check_int(m, "m", 2)) for k, m in settings]
    options = _options(epsilon, radius, inner_radius, family=family)
    del options["reconstruction"]
    counter = _Counter(n * len(pairs), progress)
    results = []
    for k, m in pairs:
        records = []
        for t in range(n):
            records.append(_trial("fair_qpme", k, m, seed, t, options, behaviour=True))
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
    return {"benchmark": "fair", "config": _config(n, seed, "exact", options), "settings": results}


def run_noise_benchmark(
    *,
    classes: Sequence[int] = (3,),
    inner_radii: Sequence[float] = NOISE_INNER_RADII,
    noise_levels: Sequence[float] = NOISE_LEVELS,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    epsilon: float = DEFAULT_EPSILON,
    radius: float = DEFAULT_RADIUS,
    family: str = "authors",
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Theorem 1's trade-off: QPME errors over ``varrho x eps_Omega`` with Definition 4's noisy oracle.

    Every cell of the grid uses the same metrics and oracle coins (trial seeds do not depend on the cell).
    ``eps_Omega = 0`` is the exact oracle; ``family`` picks the metric generator.

    Returns
    -------
    dict
        ``{"benchmark": "noise", "config": {...}, "settings": [...]}``; each setting holds ``n_classes``,
        ``inner_radius``, ``noise_level``, ``records`` and ``summary``.
    """
    n = _check_trials(trials)
    ks = [check_int(k, "classes", 2) for k in classes]
    radii = [check_float(r, "inner_radii", low=0.0, high=radius) for r in inner_radii]
    levels = [check_float(e, "noise_levels", low=0.0, high=1.0, open_low=False) for e in noise_levels]
    generator = check_generator(family)
    counter = _Counter(n * len(ks) * len(radii) * len(levels), progress)
    results = []
    for k in ks:
        for varrho in radii:
            for level in levels:
                options = _options(epsilon, radius, varrho, family=generator)
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
        "family": generator,
    }
    return {"benchmark": "noise", "config": config, "settings": results}
