"""Whether the demo's "likely range (90 % sure)" of a cost ratio holds the simulated person's true ratio.

Run: ``.venv/bin/python benchmarks/interval_coverage.py`` (``--people N`` per version, ``--version V`` to
choose the versions, ``--lapse L`` (repeatable) to add the current version's elicitor with the answer
model's lapse rate ``L`` (`elicitation.active.active_elicitor`'s ``lapse``; not a recorded version: built as
`benchmarks.search_effort.demo_elicitor` builds it, checked question for question against the app's at
``L = 0``), ``--quick`` for a smoke run, which the test suite runs). The demo study's elicitor is
built as the app builds a session's (`app.sessions.runtime.StudyRuntime.elicitor`: the breast-cancer space,
the demo's budget, displayed and with plainly new screens), once per recorded version of its algorithm
(default: active_quadratic-4 and the current active_quadratic-6, 300 particles from a shared burnt-in
prior). It meets the expert benchmark's sensible people (`benchmarks.expert_minutes.SENSIBLE_PEOPLE`:
Appendix H draws kept when sensible on the sphere, cost-ratio clinicians, squared-miss regret; none of them
the elicitor's prior) answering through its three noise models (`NOISE`), cycled as in
`benchmarks.search_effort.people`, each person with the same seeds under every version (paired).

The result page reads the elicited metric through `StudyRuntime.words`: per class, the cost of a mistake on
one person relative to the cheapest class (``times_per_person``: the gradient at the query region's centre
divided by the class's share of the people shown, Section 2 of docs/active-elicitation.md) and its stated
interval (``credible``: the elicitor's ``details["intervals"]["cost_ratio"]``, relative to
``details["cost_ratio_base"]``). The person's true ratio is computed the same way from their hidden metric:
the same centre, the same class shares and the same base class as the stated interval. When the person's
own cheapest class is another one, their true ratio relative to the stated base is below 1; it is compared
as it is (the interval reaches below 1 when some of the posterior finds the base class the dearer one, so
such a person, nearly indifferent, may still be inside), and such people are counted apart
(``base_disagrees``). The demo has two classes, so each person has one stated
ratio: the dearer class's, the headline's.

Per version and per generator/noise cell it reports the coverage (the share of people whose true ratio lies
inside the stated interval) with a Wilson 95 % interval, the median interval width relative to the stated
ratio, the median ``|log(stated ratio / true ratio)|`` and the median of the posterior mean of the
answers' inverse temperature (how consistent the elicitor takes the people to be), and the mean agreement
of the elicited metric with the person's own preferences on random pairs of the query region
(`elicitation.evaluation.agreement`, the search-effort benchmark's measure). Checks (they fail the
run): every session ends within its budget with a finite estimate, the stated intervals are at 90 %, the
base class's own interval is ``[1, 1]``, the words' interval is the elicitor's and their ratio is the one
recomputed here, and the elicitor is the app's of that version. Results go to
``benchmarks/results/interval_coverage.json``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binomtest
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.cli.web import DEMO_STUDY  # noqa: E402
from app.codec import encode_metric, to_jsonable  # noqa: E402
from app.explain import reading_for  # noqa: E402
from app.sessions.displayed import DISPLAY_MARK  # noqa: E402
from app.sessions.runtime import StudyRuntime, study_runtime  # noqa: E402
from app.sessions.study import new_study  # noqa: E402
from benchmarks.expert_minutes import NOISE, SENSIBLE_PEOPLE  # noqa: E402
from benchmarks.http_roundtrip import check, machine, run_checked  # noqa: E402
from benchmarks.search_effort import AGREEMENT_PAIRS, VARIANTS, demo_elicitor, people, run_person  # noqa: E402
from elicitation import QuadraticMetric  # noqa: E402
from elicitation.evaluation import agreement  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "interval_coverage.json"
#: The demo's elicitor before this round's lean search, and the current one.
VERSIONS = ("active_quadratic-4", "active_quadratic-6")
#: The level the result page states ("Likely range (90 % sure)").
STATED_LEVEL = 0.90
#: How closely the words' ratio must match the one recomputed here (both are the same floating-point sums).
RATIO_RTOL = 1e-9
#: The search-effort benchmark's build of the current version (shared prior, lean search, 300 particles),
#: which ``--lapse`` variants start from.
CURRENT_BUILD = next(variant for variant in VARIANTS if variant.version == VERSIONS[-1])


@dataclass(frozen=True)
class Outcome:
    """One person's stated ratio, its interval and their true ratio (relative to the stated base class)."""

    version: str
    generator: str
    noise: str
    seed: int
    questions: int
    stopped_by: str
    n_particles: int | None
    stated: float
    low: float
    high: float
    truth: float
    covered: bool
    #: The person's own cheapest class per person is not the stated base class.
    base_disagrees: bool
    #: The posterior mean of the answers' inverse temperature (how consistent the elicitor takes the
    #: person to be): a narrow interval follows from a high one.
    beta_mean: float
    #: Share of random pairs of the query region the elicited metric orders as the person's own does.
    agreement: float


def demo_runtime() -> StudyRuntime:
    """The demo study's runtime, as the app builds it for the stored demo study (nothing is stored)."""
    return study_runtime(new_study(DEMO_STUDY))


def per_person_costs(metric: QuadraticMetric, center: np.ndarray, shares: np.ndarray) -> np.ndarray:
    """What a mistake on one person of each class costs, ``(k,)``: the weight of the class's correct rate at
    the region's centre (the gradient) divided by the class's share of the people shown."""
    result: np.ndarray = np.abs(metric.gradient(center)) / shares
    return result


def lapse_name(lapse: float) -> str:
    """The report's name of the current version's elicitor with the answer model's lapse rate ``lapse``."""
    return f"{VERSIONS[-1]} + lapse {lapse:g}"


def lapse_elicitor(runtime: StudyRuntime, seed: int, lapse: float) -> Any:
    """The current version's elicitor for a session with ``seed``, its answer model lapsing at ``lapse``."""
    params = runtime.params.model_dump()
    return demo_elicitor(runtime.space, params, seed, replace(CURRENT_BUILD, lapse=lapse))


def measure_person(
    runtime: StudyRuntime, version: str, generator: int, noise: str, seed: int, lapse: float | None = None
) -> Outcome:
    """One simulated person's session with the app's elicitor of ``version`` (with ``lapse``: the current
    version's with that lapse rate, reported as `lapse_name`), and what its result states."""
    space = runtime.space
    person = SENSIBLE_PEOPLE[generator](np.random.default_rng(seed), space)
    oracle = NOISE[noise](person, np.random.default_rng([seed, 1]))
    if lapse is None:
        elicitor = runtime.elicitor(seed, version + DISPLAY_MARK)
    else:
        version = lapse_name(lapse)
        elicitor = lapse_elicitor(runtime, seed, lapse)
    result, _, _, _ = run_person(elicitor, oracle)
    budget = runtime.params.max_queries  # type: ignore[attr-defined]
    check(
        0 < result.num_queries <= budget
        and result.details["stopped_by"] in ("budget", "tolerance", "exhausted"),
        f"{version}, seed {seed}: {result.num_queries} answers (budget {budget}), "
        f"stopped by {result.details['stopped_by']}",
    )
    details = to_jsonable(dict(result.details))
    check(details["interval_level"] == STATED_LEVEL, f"{version}: intervals at {details['interval_level']}")
    base = details["cost_ratio_base"]
    stated_intervals = details["intervals"]["cost_ratio"]
    check(stated_intervals[base] == [1.0, 1.0], f"{version}, seed {seed}: base interval {stated_intervals}")
    # What the result page reads: its ratio and interval of the dearer class, relative to the cheapest one.
    words = runtime.words(encode_metric(result.metric), details)
    check(words is not None, f"{version}, seed {seed}: the result has no words")
    assert words is not None
    dearer = 1 - base
    cost = words.costs[dearer]
    check(
        cost.credible is not None and list(cost.credible) == stated_intervals[dearer],
        f"{version}, seed {seed}: the page states {cost.credible}, the elicitor {stated_intervals[dearer]}",
    )
    assert cost.credible is not None
    reading = reading_for(space, runtime.config.population, details=details)
    estimate = per_person_costs(result.metric, reading.center, reading.class_shares)
    check(
        bool(np.all(np.isfinite(estimate)))
        and int(np.argmin(estimate)) == base
        and np.isclose(estimate[dearer] / estimate[base], cost.times_per_person, rtol=RATIO_RTOL, atol=0.0),
        f"{version}, seed {seed}: the page's ratio {cost.times_per_person} is not the recomputed one",
    )
    truth = per_person_costs(person, reading.center, reading.class_shares)
    region = runtime.spec.algorithm.query_region(space)
    pairs = np.random.default_rng([seed, 2])
    true_ratio = float(truth[dearer] / truth[base])
    low, high = cost.credible
    return Outcome(
        version=version,
        generator=SENSIBLE_PEOPLE[generator].__name__,
        noise=noise,
        seed=seed,
        questions=int(result.num_queries),
        stopped_by=str(details["stopped_by"]),
        n_particles=details["n_particles"],
        stated=float(cost.times_per_person),
        low=float(low),
        high=float(high),
        truth=true_ratio,
        covered=bool(low <= true_ratio <= high),
        base_disagrees=int(np.argmin(truth)) != base,
        beta_mean=float(np.dot(details["beta_grid"], details["beta_posterior"])),
        agreement=float(agreement(person, result.metric, region, pairs, n_pairs=AGREEMENT_PAIRS)),
    )


def summarize(outcomes: list[Outcome]) -> dict[str, Any]:
    """Coverage with its Wilson 95 % interval, median relative width and median log error of ``outcomes``."""
    covered = sum(outcome.covered for outcome in outcomes)
    wilson = binomtest(covered, len(outcomes)).proportion_ci(confidence_level=0.95, method="wilson")
    return {
        "people": len(outcomes),
        "covered": covered,
        "coverage": round(covered / len(outcomes), 3),
        "coverage_95": [round(float(wilson.low), 3), round(float(wilson.high), 3)],
        "width_over_ratio_median": round(
            float(np.median([(o.high - o.low) / o.stated for o in outcomes])), 4
        ),
        "abs_log_error_median": round(
            float(np.median([abs(np.log(o.stated / o.truth)) for o in outcomes])), 4
        ),
        "truth_below_interval": sum(o.truth < o.low for o in outcomes),
        "truth_above_interval": sum(o.truth > o.high for o in outcomes),
        "base_disagrees": sum(o.base_disagrees for o in outcomes),
        "questions_mean": round(float(np.mean([o.questions for o in outcomes])), 2),
        "beta_mean_median": round(float(np.median([o.beta_mean for o in outcomes])), 1),
        "agreement_mean": round(float(np.mean([o.agreement for o in outcomes])), 4),
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    runtime = demo_runtime()
    spec = runtime.spec
    check(runtime.space.n_classes == 2, "the demo study has two classes (one stated ratio per person)")
    for version in args.version:
        check(
            version == spec.version or version in spec.algorithm.earlier,
            f"{version} is not a version of {spec.name} the app builds (current {spec.version})",
        )
    for lapse in args.lapse:
        check(0.0 <= lapse < 1.0, f"a lapse rate lies in [0, 1), got {lapse}")
    if args.lapse:
        # The lapse variants' build, at lapse 0, asks exactly the app's questions of the current version.
        person = SENSIBLE_PEOPLE[0](np.random.default_rng(args.seed), runtime.space)
        _, _, _, app_queries = run_person(
            runtime.elicitor(args.seed, VERSIONS[-1] + DISPLAY_MARK), person.prefers
        )
        _, _, _, own_queries = run_person(lapse_elicitor(runtime, args.seed, 0.0), person.prefers)
        check(
            spec.version == VERSIONS[-1]
            and len(app_queries) == len(own_queries)
            and all(
                np.array_equal(a.first, b.first) and np.array_equal(a.second, b.second)
                for a, b in zip(app_queries, own_queries, strict=True)
            ),
            f"the lapse variants' elicitor at lapse 0 asks other questions than the app's {VERSIONS[-1]}",
        )
    crowd = people(args.people, args.seed)
    runs: list[tuple[str, float | None]] = [(version, None) for version in args.version]
    runs += [(lapse_name(lapse), lapse) for lapse in args.lapse]
    outcomes: dict[str, list[Outcome]] = {name: [] for name, _ in runs}
    # Each person meets every version in turn, with the same seeds: a paired comparison.
    for generator, noise, seed in crowd:
        for name, lapse in runs:
            outcomes[name].append(measure_person(runtime, name, generator, noise, seed, lapse))
    report: dict[str, Any] = {
        "machine": machine(),
        "current_version": spec.version,
        "level": STATED_LEVEL,
        "versions": [],
    }
    for version, own in outcomes.items():
        cells = {}
        for generator in SENSIBLE_PEOPLE:
            for noise in NOISE:
                members = [o for o in own if o.generator == generator.__name__ and o.noise == noise]
                if members:
                    cells[f"{generator.__name__} / {noise}"] = summarize(members)
        report["versions"].append(
            {
                "version": version,
                "n_particles": sorted({o.n_particles for o in own}, key=str),
                "all": summarize(own),
                "by_generator": {
                    g.__name__: summarize([o for o in own if o.generator == g.__name__])
                    for g in SENSIBLE_PEOPLE
                    if any(o.generator == g.__name__ for o in own)
                },
                "by_noise": {
                    n: summarize([o for o in own if o.noise == n])
                    for n in NOISE
                    if any(o.noise == n for o in own)
                },
                "cells": cells,
                "people_detail": [asdict(o) for o in own],
            }
        )
    report["load_average_after"] = machine()["load_average"]
    return report


def _row(name: str, summary: dict[str, Any]) -> str:
    low, high = summary["coverage_95"]
    return (
        f"| {name} | {summary['people']} | {summary['covered']} ({summary['coverage']:.0%}) | "
        f"{low:.2f}-{high:.2f} | {summary['truth_below_interval']} / {summary['truth_above_interval']} | "
        f"{summary['width_over_ratio_median']:.3f} | {summary['abs_log_error_median']:.3f} | "
        f"{summary['base_disagrees']} | {summary['beta_mean_median']:.0f} | {summary['agreement_mean']:.4f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--people",
        type=int,
        default=900,
        help="simulated people per version (100 per generator and noise model)",
    )
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument(
        "--version",
        action="append",
        help=f"a version of the demo's algorithm (repeatable; default {VERSIONS})",
    )
    parser.add_argument(
        "--lapse",
        type=float,
        action="append",
        default=[],
        help=f"also run {VERSIONS[-1]}'s elicitor with this answer-model lapse rate (repeatable)",
    )
    parser.add_argument("--quick", action="store_true", help="2 people per version (smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.version = args.version or list(VERSIONS)
    if args.quick:
        args.people = 2
    with threadpool_limits(limits=1):
        report = run_checked(lambda: measure(args), args.out)
    if report is None:
        return 1
    where = report["machine"]
    print(
        f"{where['date']}, load {where['load_average'][0]} before / {report['load_average_after'][0]} after, "
        f"commit {where['commit']}; stated level {report['level']:.0%}"
    )
    print("| people | n | inside | Wilson 95 % | truth below / above | width / ratio (median) |", end="")
    print(
        " \\|log(stated / true)\\| (median) | other cheapest class | posterior mean beta (median) |", end=""
    )
    print(" agreement (mean) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in report["versions"]:
        print(_row(f"**{row['version']}** (particles {row['n_particles']})", row["all"]))
        for name, summary in {**row["by_generator"], **row["by_noise"], **row["cells"]}.items():
            print(_row(name, summary))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
