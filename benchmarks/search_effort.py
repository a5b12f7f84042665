"""What a cheaper question search costs the demo's elicitor: agreement, questions and CPU per question.

Run: ``.venv/bin/python benchmarks/search_effort.py`` (``--people N`` per variant, ``--variant NAME`` to
run only some variants beside the default, ``--quick`` for a smoke run, which the test suite runs). The
demo study's elicitor (sensible quadratic metrics on the bundled breast-cancer classifiers, displayed and
with plainly new screens, as a new session of `elicit serve` runs it) is built with each variant's
`elicitation.active.SearchEffort`, particle count and prior (burnt in by each session from its seed, or
the configuration's shared burnt-in prior, `elicitation.posterior.shared_prior`); a variant that is a
recorded version of the demo's algorithm (the default search is active_quadratic-4, the lean search from
the shared prior on 300 particles active_quadratic-6, as -5 with two classes) must ask exactly the
questions of the app's elicitor of that version for the same seed (checked). Every variant meets the
same simulated people: the expert benchmark's sensible people (`benchmarks.expert_minutes`: Appendix H's
random quadratic metrics kept when sensible on the sphere, cost-ratio clinicians and squared-miss regret,
none of them the elicitor's prior) answering through its three noise models (logistic, probit and
lapses), each person with the same seed in every variant, so the comparison is paired; each person meets
every variant in turn, so a change of the machine's load touches all alike.

Per variant it reports the agreement of the elicited metric with the person's true preference on 4,000
random pairs of the study's query region (mean, 10th percentile, lowest, how many people fall below the
expert benchmark's bar of 0.95, and the paired mean difference from the default with a normal 95 %
interval; every person's agreement is kept, in the same order for every variant, so that any two variants
can be compared pairwise), the questions asked, and the elicitor's CPU time per question (median, mean, p90;
`time.process_time`, one BLAS thread as in a web worker), the first question (the start: burn-in and first
search, what a participant's joining costs; mean and median, since with a shared prior only a process's
first session of the study burns it in) and the final step (the estimate) apart. Results go to
``benchmarks/results/search_effort.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.algorithms import get_algorithm  # noqa: E402
from app.cli.web import DEMO_STUDY  # noqa: E402
from app.sessions.displayed import DISPLAY_MARK, build_session_elicitor  # noqa: E402
from app.study_config import build_space, parse_study_config  # noqa: E402
from benchmarks.expert_minutes import NOISE, SENSIBLE_PEOPLE  # noqa: E402
from benchmarks.http_roundtrip import check, machine, run_checked  # noqa: E402
from elicitation.active import (  # noqa: E402
    DEFAULT_BETA_GRID,
    DEFAULT_SEARCH,
    LEAN_SEARCH,
    SearchEffort,
    active_quadratic,
)
from elicitation.display import displayed  # noqa: E402
from elicitation.evaluation import agreement  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "search_effort.json"
AGREEMENT_PAIRS = 4000
#: The expert benchmark's bar for every person (`benchmarks/expert_minutes.py`): people below it are counted.
AGREEMENT_BAR = 0.95


@dataclass(frozen=True)
class Variant:
    name: str
    search: SearchEffort
    #: Posterior particles (None: the elicitor's default for the study's noise model).
    n_particles: int | None = None
    #: The prior burnt in once per configuration (`elicitation.posterior.shared_prior`), not per session.
    shared_prior: bool = False
    #: The recorded version of the demo's algorithm this variant is (None: none); checked question for
    #: question against the app's elicitor of that version.
    version: str | None = None
    #: The answer model's lapse rate (`elicitation.active.active_elicitor`'s ``lapse``; 0: none).
    lapse: float = 0.0


VARIANTS = (
    Variant("default", DEFAULT_SEARCH, version="active_quadratic-4"),
    Variant("half candidates", SearchEffort(random_pairs=384, tie_particles=16, ties_per_particle=24)),
    Variant("2 moves", SearchEffort(moves=2)),
    Variant("300 particles", DEFAULT_SEARCH, n_particles=300),
    Variant("lean", LEAN_SEARCH, n_particles=300),
    Variant("lean, 6 burn-in sweeps", replace(LEAN_SEARCH, burn_in=6), n_particles=300),
    Variant(
        "lean, shared prior", LEAN_SEARCH, n_particles=300, shared_prior=True, version="active_quadratic-6"
    ),
)


def demo_elicitor(space: Any, params: dict[str, Any], seed: int, variant: Variant) -> Any:
    """The demo's elicitor for a new session (as `app.catalogue` builds it), with ``variant``'s search."""

    def build(shown_space: Any) -> Any:
        return active_quadratic(
            shown_space,
            seed=seed,
            beta=DEFAULT_BETA_GRID if params["beta"] is None else params["beta"],
            max_queries=params["max_queries"],
            tolerance=params["tolerance"],
            min_cell_gap=params["min_cell_gap"],
            estimate="consensus",
            sensible=True,
            n_particles=variant.n_particles,
            search=variant.search,
            shared_prior=variant.shared_prior,
            lapse=variant.lapse,
        )

    return displayed(build, space, 0, fresh_screens=True)


def run_person(
    elicitor: Any, oracle: Callable[[Any, Any], bool]
) -> tuple[Any, list[float], float, list[Any]]:
    """Drive ``elicitor`` to its end: (result, CPU ms of the first question (the start) and of each answered
    step, CPU ms of the last, queries)."""
    queries = []
    started = time.process_time()
    query = next(elicitor)
    steps = [(time.process_time() - started) * 1000.0]
    while True:
        queries.append(query)
        answer = bool(oracle(query.first, query.second))
        started = time.process_time()
        try:
            query = elicitor.send(answer)
        except StopIteration as stop:
            return stop.value, steps, (time.process_time() - started) * 1000.0, queries
        steps.append((time.process_time() - started) * 1000.0)


def people(count: int, seed: int) -> list[tuple[int, str, int]]:
    """(generator index, noise model, seed) of each simulated person, cycling through every combination."""
    combos = [(g, n) for g in range(len(SENSIBLE_PEOPLE)) for n in NOISE]
    return [(*combos[i % len(combos)], seed + i) for i in range(count)]


def measure(args: argparse.Namespace) -> dict[str, Any]:
    config = parse_study_config(DEMO_STUDY)
    space = build_space(config)
    spec = get_algorithm(config.algorithm)
    params = spec.parse_params(config.algorithm_params)
    region = spec.algorithm.query_region(space)
    crowd = people(args.people, args.seed)
    variants = [v for v in VARIANTS if v is VARIANTS[0] or not args.variant or v.name in args.variant]
    unknown = set(args.variant or ()) - {v.name for v in VARIANTS}
    check(not unknown, f"no variant named {sorted(unknown)}; the variants are {[v.name for v in VARIANTS]}")
    # A variant that is a recorded version asks exactly the app's questions of it (same seed and answers).
    metric = SENSIBLE_PEOPLE[0](np.random.default_rng(args.seed), space)
    for variant in variants:
        if variant.version is None:
            continue
        reference = build_session_elicitor(
            spec, space, params, seed=args.seed, version=variant.version + DISPLAY_MARK
        )
        ours = demo_elicitor(space, params.model_dump(), args.seed, variant)
        _, _, _, app_queries = run_person(reference, metric.prefers)
        _, _, _, bench_queries = run_person(ours, metric.prefers)
        check(
            len(app_queries) == len(bench_queries)
            and all(
                np.array_equal(a.first, b.first) and np.array_equal(a.second, b.second)
                for a, b in zip(app_queries, bench_queries, strict=True)
            ),
            f"the benchmark's {variant.name!r} elicitor asks other questions than the app's "
            f"{variant.version}",
        )
    report: dict[str, Any] = {"machine": machine(), "people": len(crowd), "variants": []}
    # Each person meets every variant in turn, so that a change of the machine's load touches all alike.
    runs: dict[str, dict[str, list[float]]] = {
        v.name: {"agreement": [], "questions": [], "first_ms": [], "step_ms": [], "final_ms": []}
        for v in variants
    }
    for generator, noise, seed in crowd:
        person = SENSIBLE_PEOPLE[generator](np.random.default_rng(seed), space)
        for variant in variants:
            oracle = NOISE[noise](person, np.random.default_rng([seed, 1]))
            elicitor = demo_elicitor(space, params.model_dump(), seed, variant)
            result, steps, final, _ = run_person(elicitor, oracle)
            pairs = np.random.default_rng([seed, 2])
            own = runs[variant.name]
            own["first_ms"].append(steps[0])
            own["step_ms"] += steps[1:]
            own["final_ms"].append(final)
            own["questions"].append(int(result.num_queries))
            own["agreement"].append(agreement(person, result.metric, region, pairs, n_pairs=AGREEMENT_PAIRS))
    baseline = np.asarray(runs[VARIANTS[0].name]["agreement"])
    for variant in variants:
        own = runs[variant.name]
        difference = np.asarray(own["agreement"]) - baseline
        spread = float(np.std(difference, ddof=1)) if len(crowd) > 1 else 0.0
        report["variants"].append(
            {
                "name": variant.name,
                "search": asdict(variant.search),
                "n_particles": variant.n_particles,
                "shared_prior": variant.shared_prior,
                "version": variant.version,
                "agreement_mean": round(float(np.mean(own["agreement"])), 4),
                "agreement_lowest": round(float(np.min(own["agreement"])), 4),
                "agreement_p10": round(float(np.percentile(own["agreement"], 10)), 4),
                "below_bar": int(np.sum(np.asarray(own["agreement"]) < AGREEMENT_BAR)),
                "difference_from_default": round(float(np.mean(difference)), 4),
                "difference_95": round(1.96 * spread / np.sqrt(len(crowd)), 4),
                "questions_mean": round(float(np.mean(own["questions"])), 2),
                "step_cpu_ms": {
                    "median": round(statistics.median(own["step_ms"]), 2),
                    "mean": round(float(np.mean(own["step_ms"])), 2),
                    "p90": round(float(np.percentile(own["step_ms"], 90)), 2),
                },
                "final_cpu_ms_mean": round(float(np.mean(own["final_ms"])), 2),
                "first_question_cpu_ms_mean": round(float(np.mean(own["first_ms"])), 2),
                "first_question_cpu_ms_median": round(statistics.median(own["first_ms"]), 2),
                # Person by person (the same order in every variant), for other paired comparisons.
                "agreements": [round(value, 4) for value in own["agreement"]],
            }
        )
    report["load_average_after"] = machine()["load_average"]
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=60, help="simulated people per variant")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument(
        "--variant",
        action="append",
        help="run only this variant beside the default (repeatable; default: every variant)",
    )
    parser.add_argument("--quick", action="store_true", help="2 people per variant (smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.people = 2
    with threadpool_limits(limits=1):
        report = run_checked(lambda: measure(args), args.out)
    if report is None:
        return 1
    where = report["machine"]
    print(
        f"{where['date']}, {where['cpu_count']} CPUs, load {where['load_average'][0]} before / "
        f"{report['load_average_after'][0]} after, commit {where['commit']}; {report['people']} people"
    )
    print("| variant | agreement mean | p10 | lowest | below 0.95 | vs default (95 %) | questions |", end="")
    print(" CPU ms per question p50 / mean / p90 | first question mean / p50 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in report["variants"]:
        cpu = row["step_cpu_ms"]
        print(
            f"| {row['name']} | {row['agreement_mean']:.4f} | {row['agreement_p10']:.4f} | "
            f"{row['agreement_lowest']:.4f} | {row['below_bar']} | "
            f"{row['difference_from_default']:+.4f} ± {row['difference_95']:.4f} | {row['questions_mean']} | "
            f"{cpu['median']} / {cpu['mean']} / {cpu['p90']} | "
            f"{row['first_question_cpu_ms_mean']} / {row['first_question_cpu_ms_median']} |"
        )
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
