"""Fairness trade-off benchmark: does the elicitor for groups recover ``lam`` and say how sure it is?

Run: ``.venv/bin/python benchmarks/fairness_tradeoff.py`` (``--people N`` per cell, ``--quick`` for the
suite's smoke run). Method and measured numbers: docs/fairness-tradeoff.md.

Settings:

* ``adult``: the bundled Adult data with groups Female/Male (`benchmarks.expert_minutes.FAIR_STUDY`'s
  query space: one sphere per group among the data's classifiers), the study's elicitor as a session runs
  it (displayed questions, the catalogue's default budget), the schedule's practice, check and evaluation
  screens counted on top;
* ``synthetic``: the paper's fairness experiment (k = 2, m = 2, every group in the sphere of radius 0.2 at
  ``o``, the person's ``tau`` known to the elicitor), questions shown in whole people out of 100.

Simulated people are never drawn from the elicitor's prior: ``lam`` is uniform in ``[0.15, 0.85]`` and the
costs come from one of three generators (``appendix-h``: the paper's random ``a`` and positive definite
``B``; ``equal-opportunity``: only the gap in the positive class's rate costs; ``rank-one``: one random
direction of the gap costs), and they answer from the rates the page shows with one of three noise models
(``probit``: value noise of standard deviation `SIGMA`; ``lapse``: exact but a coin on `LAPSE` of the
screens; ``same``: "about the same", decided by a coin as the app does, when the values differ by less than
`CLOSE`).

Per person: ``|lam - lam_hat|``, ``|a - a_hat|``, ``sum |B - B_hat|_F``, agreement on random pairs of the
query region, whether the 90 % interval for ``lam`` holds the truth and its width, Kendall's tau between
the elicited and the true ranking of the study's real candidate classifiers (`elicitation.lab.candidates`),
screens, shown classifiers below the pooled majority baseline and not sensible (some group gets fewer
people right than its own trivial classifier, `elicitation.region.sensible_frontier`), trade-off
questions on which the person's accuracy and gap terms conflict, and the information about ``lam`` (drop
of its posterior variance) per question of each kind.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.algorithms import get_algorithm, group_tau  # noqa: E402
from app.sessions.displayed import build_session_elicitor  # noqa: E402
from app.study_config import build_space, parse_study_config  # noqa: E402
from benchmarks.expert_minutes import FAIR_STUDY  # noqa: E402
from elicitation import FairQuadraticMetric, Sphere  # noqa: E402
from elicitation.active import active_fair  # noqa: E402
from elicitation.display import DisplayedSpace, DisplayGrid  # noqa: E402
from elicitation.evaluation import agreement, elicitation_errors, kendall_tau, sample_query_pairs  # noqa: E402
from elicitation.lab.candidates import shipped_frontier  # noqa: E402
from elicitation.oracles import (  # noqa: E402
    LapseOracle,
    ProbitOracle,
    ThresholdNoiseOracle,
    random_fair_metric,
)
from elicitation.rates import SyntheticSpace  # noqa: E402
from elicitation.region import sensible_frontier  # noqa: E402

#: The fairness study as the benchmark runs it: the study's space and schedule, the elicitor's default budget.
STUDY: dict[str, Any] = {**FAIR_STUDY, "algorithm_params": {}}
#: Range of the people's trade-off (the issue's simulated people).
LAM_RANGE = (0.15, 0.85)
#: Probit value noise on the normalised cost (as steep near a tie as logistic noise of beta = 200).
SIGMA = 0.008
LAPSE = 0.05
CLOSE = 0.005
AGREEMENT_PAIRS = 4000
#: Random pairs of the query region on which we count how often the answer depends on ``lam``.
FLIP_PAIRS = 2000
GENERATORS = ("appendix-h", "equal-opportunity", "rank-one")
NOISES = ("probit", "lapse", "same")
#: Targets of the issue (Adult with groups, ``appendix-h`` people, probit noise).
TARGETS = {
    "lam_error_mean": 0.08,
    "coverage_min": 0.85,
    "agreement_mean": 0.95,
    "agreement_min": 0.90,
    "screens_max": 60,
    "below_baseline_share": 0.25,
    "start_estimate_off": 2,
}


@dataclass(frozen=True)
class Person:
    """What one simulated person's session measured."""

    setting: str
    generator: str
    noise: str
    lam: float
    lam_hat: float
    lam_low: float
    lam_high: float
    covered: bool
    error_a: float
    error_b: float
    agreement: float
    kendall_tau: float | None
    questions: int
    screens: int
    start_estimate: int
    repeated_screens: int
    identical_screens: int
    shown_classifiers: int
    below_pooled_baseline: int
    not_sensible: int
    tradeoff_questions: int
    tradeoff_conflicts: int
    lam_info_tradeoff: float | None
    lam_info_other: float | None
    lam_flip_share: float
    seconds: float


# ----------------------------------------------------------------------------------------------------------
# Simulated people
# ----------------------------------------------------------------------------------------------------------


def _cost_vector(rng: np.random.Generator) -> np.ndarray:
    angle = rng.uniform(0.05, np.pi / 2 - 0.05)
    return np.array([np.cos(angle), np.sin(angle)])


def make_person(generator: str, rng: np.random.Generator, tau: np.ndarray) -> FairQuadraticMetric:
    """A person's cost (k = 2, m = 2, ``1/2 |B|_F = 1`` as Definition 3 normalises) from ``generator``."""
    lam = float(rng.uniform(*LAM_RANGE))
    if generator == "appendix-h":
        metric = random_fair_metric(rng, 2, 2, tau=tau, tradeoff_range=(lam, lam))
        return metric
    if generator == "equal-opportunity":
        gap = np.diag([0.0, 2.0])
    elif generator == "rank-one":
        u = rng.standard_normal(2)
        u /= np.linalg.norm(u)
        gap = 2.0 * np.outer(u, u)
    else:
        raise ValueError(f"unknown generator {generator!r}")
    return FairQuadraticMetric(_cost_vector(rng), {(0, 1): gap}, lam, tau)


def make_oracle(noise: str, metric: FairQuadraticMetric, seed: int) -> Callable[[Any, Any], bool]:
    rng = np.random.default_rng(seed)
    if noise == "probit":
        return ProbitOracle(metric, SIGMA, rng=rng)
    if noise == "lapse":
        return LapseOracle(metric, LAPSE, rng=rng)
    if noise == "same":
        return ThresholdNoiseOracle(metric, CLOSE, rng=rng)
    raise ValueError(f"unknown noise model {noise!r}")


# ----------------------------------------------------------------------------------------------------------
# Settings
# ----------------------------------------------------------------------------------------------------------


@dataclass
class Setting:
    """A query space, how to build the elicitor on it and the candidates whose ranking is compared."""

    name: str
    priors: np.ndarray  # (m, k): P(Y = i | G = g)
    group_weights: np.ndarray  # (m,): share of each group among the people
    spheres: tuple[Sphere, ...]
    other_screens: int
    candidates: np.ndarray  # (n, m, k)
    grid: DisplayGrid
    build: Callable[[FairQuadraticMetric, int, str | None], Any]
    tau: Callable[[np.random.Generator], np.ndarray]


def _combinations(group_points: Sequence[np.ndarray]) -> np.ndarray:
    """Every classifier made of one frontier point per group, ``(n, m, k)``."""
    grids = np.meshgrid(*[np.arange(len(points)) for points in group_points], indexing="ij")
    index = np.stack([grid.ravel() for grid in grids], axis=1)
    return np.stack([np.stack([group_points[g][row[g]] for g in range(len(group_points))]) for row in index])


def _spread(points: np.ndarray, count: int) -> np.ndarray:
    """``count`` of a group's frontier points, evenly from the most accurate on negatives to positives."""
    points = points[np.argsort(-points[:, 0])]
    result: np.ndarray = points[np.unique(np.linspace(0, len(points) - 1, count).round().astype(int))]
    return result


def adult_setting() -> Setting:
    config = parse_study_config(STUDY)
    space = build_space(config)
    spec = get_algorithm(config.algorithm)
    params = spec.parse_params(config.algorithm_params)
    priors = np.asarray(space.priors, dtype=np.float64)
    sizes = np.asarray(space.group_sizes, dtype=np.float64)
    weights = sizes / sizes.sum()
    # The study's real candidates (`elicitation.lab.candidates`); without them, combinations of the
    # groups' frontier classifiers.
    frontier = shipped_frontier(space.recipe)
    candidates = (
        frontier.rates
        if frontier is not None
        else _combinations(
            [_spread(sensible_frontier(space.plug_in_rates(g), priors[g]), 4) for g in range(space.n_groups)]
        )
    )

    def build(metric: FairQuadraticMetric, seed: int, version: str | None) -> Any:
        return build_session_elicitor(spec, space, params, seed=seed, version=version)

    return Setting(
        name="adult",
        priors=priors,
        group_weights=weights,
        spheres=tuple(space.group_spheres),
        other_screens=config.practice_queries + config.total_checks + config.evaluation_queries,
        candidates=candidates,
        grid=DisplayGrid.from_priors(priors),
        build=build,
        tau=lambda rng: group_tau(priors, None),
    )


def synthetic_setting() -> Setting:
    space = SyntheticSpace(2, radius=0.2, n_groups=2)
    priors = np.asarray(space.priors, dtype=np.float64)
    grid = DisplayGrid.from_priors(priors)
    shown = DisplayedSpace(space, grid)
    candidates = sample_query_pairs(space.sphere, 12, np.random.default_rng(7), n_groups=2)[0]

    def build(metric: FairQuadraticMetric, seed: int, version: str | None) -> Any:
        del version
        return active_fair(shown, tau=metric.tau, seed=seed, tradeoff_every=2, display=grid)

    return Setting(
        name="synthetic",
        priors=priors,
        group_weights=np.full(2, 0.5),
        spheres=(space.sphere, space.sphere),
        other_screens=0,
        candidates=candidates,
        grid=grid,
        build=build,
        tau=lambda rng: np.asarray(random_fair_metric(rng, 2, 2).tau),
    )


# ----------------------------------------------------------------------------------------------------------
# One session
# ----------------------------------------------------------------------------------------------------------


def _flip_share(metric: FairQuadraticMetric, setting: Setting, rng: np.random.Generator) -> float:
    """Share of random pairs of the query region whose answer changes as ``lam`` moves over `LAM_RANGE`."""
    first, second = sample_query_pairs(setting.spheres, FLIP_PAIRS, rng, n_groups=len(setting.spheres))
    low = FairQuadraticMetric(metric.a, metric.B_pairs, LAM_RANGE[0], metric.tau)
    high = FairQuadraticMetric(metric.a, metric.B_pairs, LAM_RANGE[1], metric.tau)
    flips = [low.prefers(a, b) != high.prefers(a, b) for a, b in zip(first, second, strict=True)]
    return float(np.mean(flips))


def _conflicts(metric: FairQuadraticMetric, first: np.ndarray, second: np.ndarray) -> bool:
    """True when the person's accuracy term and gap term prefer different sides of the pair."""
    accuracy = [float(np.sum(metric.tau * side, axis=0) @ metric.a) for side in (first, second)]
    gap = [
        sum(0.5 * (side[u] - side[v]) @ B @ (side[u] - side[v]) for (u, v), B in metric.B_pairs.items())
        for side in (first, second)
    ]
    return (accuracy[0] - accuracy[1]) * (gap[1] - gap[0]) < 0.0


def run_person(
    setting: Setting, generator: str, noise: str, seed: int, *, version: str | None = None
) -> Person:
    """One simulated person's whole session on ``setting`` (seeded: the same arguments, the same run)."""
    started = time.monotonic()
    rng = np.random.default_rng(seed)
    metric = make_person(generator, rng, setting.tau(rng))
    oracle = make_oracle(noise, metric, seed + 1)
    elicitor = setting.build(metric, seed, version)
    query = next(elicitor)
    start_estimate = int(elicitor.expected_remaining)
    shown: list[tuple[np.ndarray, np.ndarray]] = []
    info: dict[bool, list[float]] = {True: [], False: []}
    conflicts = tradeoff = 0
    drops: list[float] = []
    result = None
    while result is None:
        before = elicitor.tradeoff_spread
        shown.append((query.first, query.second))
        try:
            query = elicitor.send(oracle(query.first, query.second))
        except StopIteration as stop:
            result = stop.value
            break
        drops.append(before**2 - elicitor.tradeoff_spread**2)
    every = int(result.details["tradeoff_every"])
    for step, ((first, second), drop) in enumerate(zip(shown, [*drops, None], strict=True)):
        turn = every > 0 and step % every == every - 1
        tradeoff += turn
        conflicts += turn and _conflicts(metric, first, second)
        if drop is not None:
            info[turn].append(drop)
    estimate = result.metric
    errors = elicitation_errors(metric, estimate)
    low, high = result.details["intervals"]["lam"]
    counts = [setting.grid.counts(side) for pair in shown for side in pair]
    keys = [setting.grid.key(a, b) for a, b in shown]
    repeated = sum(
        keys[i] in (keys[i - 1], setting.grid.key(*shown[i - 1][::-1])) for i in range(1, len(keys))
    )
    identical = sum(setting.grid.key(a, a) == setting.grid.key(a, b) for a, b in shown)
    correct = np.array([c.sum(axis=1) for c in counts], dtype=np.float64)  # (n, m): people right per group
    baseline = setting.grid.class_steps.max(axis=1).astype(np.float64)  # the trivial classifier, as shown
    pooled_baseline = float(np.max(setting.group_weights @ setting.grid.class_steps))
    true_costs = np.array([metric(c) for c in setting.candidates])
    elicited_costs = np.array([estimate(c) for c in setting.candidates])
    tau = (
        None
        if np.ptp(true_costs) == 0 or np.ptp(elicited_costs) == 0
        else kendall_tau(true_costs, elicited_costs)
    )
    return Person(
        setting=setting.name,
        generator=generator,
        noise=noise,
        lam=metric.lam,
        lam_hat=float(estimate.lam),
        lam_low=float(low),
        lam_high=float(high),
        covered=bool(low <= metric.lam <= high),
        error_a=float(errors.a),
        error_b=float(errors.B_pairs),
        agreement=agreement(metric, estimate, setting.spheres, rng, n_pairs=AGREEMENT_PAIRS),
        kendall_tau=tau,
        questions=int(result.num_queries),
        screens=int(result.num_queries) + setting.other_screens,
        start_estimate=start_estimate + setting.other_screens,
        repeated_screens=int(repeated),
        identical_screens=int(identical),
        shown_classifiers=len(counts),
        below_pooled_baseline=int(np.sum(correct @ setting.group_weights < pooled_baseline)),
        not_sensible=int(np.sum(np.any(correct < baseline, axis=1))),
        tradeoff_questions=tradeoff,
        tradeoff_conflicts=conflicts,
        lam_info_tradeoff=float(np.mean(info[True])) if info[True] else None,
        lam_info_other=float(np.mean(info[False])) if info[False] else None,
        lam_flip_share=_flip_share(metric, setting, rng),
        seconds=time.monotonic() - started,
    )


# ----------------------------------------------------------------------------------------------------------
# Summaries and checks
# ----------------------------------------------------------------------------------------------------------


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [value for value in values if value is not None]
    return float(np.mean(kept)) if kept else None


def summarize(people: Sequence[Person]) -> dict[str, Any]:
    """The cell's means and extremes (the docs' tables)."""
    shown = sum(p.shown_classifiers for p in people)
    return {
        "people": len(people),
        "lam_error_mean": _mean([abs(p.lam - p.lam_hat) for p in people]),
        "error_a_mean": _mean([p.error_a for p in people]),
        "error_b_mean": _mean([p.error_b for p in people]),
        "coverage": _mean([float(p.covered) for p in people]),
        "width_mean": _mean([p.lam_high - p.lam_low for p in people]),
        "agreement_mean": _mean([p.agreement for p in people]),
        "agreement_min": min(p.agreement for p in people),
        "kendall_tau_mean": _mean([p.kendall_tau for p in people]),
        "screens_mean": _mean([p.screens for p in people]),
        "screens_max": max(p.screens for p in people),
        "start_estimate_off_max": max(abs(p.start_estimate - p.screens) for p in people),
        "repeated_screens": sum(p.repeated_screens for p in people),
        "identical_screens": sum(p.identical_screens for p in people),
        "below_baseline_share": sum(p.below_pooled_baseline for p in people) / shown,
        "not_sensible_share": sum(p.not_sensible for p in people) / shown,
        "tradeoff_conflict_share": (
            sum(p.tradeoff_conflicts for p in people) / max(1, sum(p.tradeoff_questions for p in people))
        ),
        "lam_info_tradeoff": _mean([p.lam_info_tradeoff for p in people]),
        "lam_info_other": _mean([p.lam_info_other for p in people]),
        "lam_flip_share": _mean([p.lam_flip_share for p in people]),
    }


def check(people: Sequence[Person]) -> list[str]:
    """The benchmark's own correctness: every measurement well-formed, whatever the numbers are."""
    problems = []
    for p in people:
        where = f"{p.setting}/{p.generator}/{p.noise}"
        if not 0.0 <= p.lam_low <= p.lam_hat <= p.lam_high <= 1.0:
            problems.append(f"{where}: lam interval [{p.lam_low}, {p.lam_high}] does not hold {p.lam_hat}")
        if not 0.0 <= p.agreement <= 1.0 or p.questions < 1 or p.screens < p.questions:
            problems.append(f"{where}: agreement {p.agreement} or screens {p.screens} out of range")
        if p.repeated_screens or p.identical_screens:
            problems.append(
                f"{where}: {p.repeated_screens} repeated, {p.identical_screens} identical screens"
            )
        if p.shown_classifiers != 2 * p.questions or p.tradeoff_conflicts > p.tradeoff_questions:
            problems.append(f"{where}: counts of shown classifiers or trade-off questions inconsistent")
    return problems


def run_cell(
    setting: Setting, generator: str, noise: str, people: int, seed: int, **options: Any
) -> list[Person]:
    return [run_person(setting, generator, noise, seed + 1000 * i, **options) for i in range(people)]


def cells(people: int, seed: int, quick: bool) -> list[tuple[str, Callable[[], list[Person]]]]:
    """The benchmark's cells by name: the target cell first, then the comparisons and the calibration grid."""
    adult = adult_setting()
    found: list[tuple[str, Callable[[], list[Person]]]] = [
        ("adult/appendix-h/probit", lambda: run_cell(adult, "appendix-h", "probit", people, seed))
    ]
    if quick:
        return found
    found.append(
        (
            "adult/appendix-h/probit/active_fair-2",
            lambda: run_cell(adult, "appendix-h", "probit", people, seed, version="active_fair-2+shown-1"),
        )
    )
    found.append(
        (
            "synthetic/appendix-h/probit",
            lambda: run_cell(synthetic_setting(), "appendix-h", "probit", people, seed),
        )
    )
    for generator in GENERATORS:
        for noise in NOISES:
            if (generator, noise) != ("appendix-h", "probit"):
                found.append(
                    (
                        f"adult/{generator}/{noise}",
                        lambda g=generator, n=noise: run_cell(adult, g, n, max(2, people // 3), seed + 7),
                    )
                )
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=30, help="people in the target cell (others: a third)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="two people, the target cell only")
    parser.add_argument("--only", default="", help="run only the cells whose name contains this")
    parser.add_argument(
        "--output", type=Path, default=ROOT / "benchmarks" / "results" / "fairness_tradeoff.json"
    )
    args = parser.parse_args(argv)
    people = 2 if args.quick else args.people
    results: dict[str, list[Person]] = {}
    for name, run in cells(people, args.seed, args.quick):
        if args.only in name:
            results[name] = run()
            summary = summarize(results[name])
            print(
                name,
                json.dumps({key: round(v, 4) if isinstance(v, float) else v for key, v in summary.items()}),
            )
    problems = [problem for group in results.values() for problem in check(group)]
    if not args.quick:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "report": {name: summarize(group) for name, group in results.items()},
            "people": {name: [asdict(p) for p in group] for name, group in results.items()},
        }
        args.output.write_text(json.dumps(payload, indent=1, default=lambda value: value.item()))
    for problem in problems:
        print("CHECK FAILED:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
