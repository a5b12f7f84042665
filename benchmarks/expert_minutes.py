"""An expert's ten minutes: simulated people with noise complete the demo and a fairness study over the API.

Run: ``.venv/bin/python benchmarks/expert_minutes.py`` (``--people N`` per study, ``--quick`` for 3). Each
simulated person has a hidden metric and answers every screen from the numbers the chart shows: the
confusion matrices as the participant page rounds them (`app.charts.rounded_counts` at
`app.charts.display_decimals`), read back as rates, with noise. The demo's people are sensible (they never
prefer a classifier worse in every class inside the query sphere) and come from three generators, none of
them the elicitor's prior (`SENSIBLE_PEOPLE`: Appendix H draws kept only when sensible, clinicians with a
cost ratio, people whose regret grows with the square of the miss rates), crossed with three noise models
(`NOISE`: logistic ``P(correct) = sigmoid(BETA * |phi(A) - phi(B)|)``, probit as steep near a tie, and
lapses); ``--population appendix-h`` takes the Appendix H draws as they come instead (most of them prefer
a classifier inside the sphere to ones better in every class), with logistic noise. ``--version`` runs
the demo with an earlier version of its algorithm that the catalogue still replays, on the same people;
``--display-mark +shown-2`` records every session with an earlier script (one of
`app.sessions.displayed.DISPLAY_MARKS`: its practice pairs, checks and final comparisons) on the same people
and session seeds, so the elicitor asks the same questions. The fairness study's people are random fair
metrics with logistic noise. Per person it records:

* screens: every comparison answered (practice, questions, checks, final comparisons);
* consecutive repeats: screens that display the same pair as the screen before (either order);
* identical pairs: screens whose two sides display the same;
* below baseline: shown classifiers (per side and group) getting fewer people right than "predict the
  group's most common class for everyone";
* look-alike screens: screens whose every displayed cell is within `LOOK_ALIKE_PEOPLE` people of the
  screen before (in either order of the two sides);
* side switches: screens showing a classifier the screen before showed on the other side (displayed
  exactly alike);
* dominance share: of the scored questions (the elicitor's and the final comparisons; practice and the
  declared checks apart), the pairs where one classifier gets at least as many people right in every
  class and group and more in one: any sensible person picks it, so the answer teaches nothing;
* distinct classifiers: how many different displayed classifiers a session showed, and how often the
  most shown one appeared;
* agreement: the elicited metric against the person's true preference on random pairs drawn uniformly
  from the study's query region, the sphere its questions sit in or, for an algorithm asking each group
  in its own, one sphere per group (`elicitation.evaluation.agreement`), and the same split by what this
  person can tell apart (`elicitation.evaluation.noisy_agreement`): agreement on the pairs the person
  answers correctly at least 75 % of the time, the share of such pairs, and the person's own agreement
  with their true preference (how often their answers match it on the same pairs).

The bars (issue "An expert's ten minutes"): at most 40 screens, no repeat, no identical pair, at most 10 %
of shown classifiers below the baseline, and agreement >= 0.95 for every person; and (plainly new
screens) no look-alike screen, no side switch, at most 10 % dominance pairs among the scored questions.
The agreement bar is reported as stated (all random pairs) and, next to it, on the pairs each person can
tell apart: with a noise level fixed in the metric's normalisation, a metric that is nearly flat across
the small sphere leaves most random pairs below what the person notices (docs/realistic-queries.md).
Results are printed and written to ``benchmarks/results/expert_minutes.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from app.algorithms import REGISTRY, AlgorithmSpec, get_algorithm, group_tau  # noqa: E402
from app.charts.comparison import display_decimals, rounded_counts  # noqa: E402
from app.cli.web import DEMO_STUDY, upgrade_database  # noqa: E402
from app.codec import decode_metric  # noqa: E402
from app.main import create_app  # noqa: E402
from app.repository import log_rows  # noqa: E402
from app.sessions import create_session, create_study  # noqa: E402
from app.sessions.displayed import DISPLAY_MARK, DISPLAY_MARKS, session_version  # noqa: E402
from app.sessions.tokens import load_session  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.study_config import build_space, parse_study_config  # noqa: E402
from elicitation import Metric, QuadraticMetric, Sphere  # noqa: E402
from elicitation.evaluation import noisy_agreement  # noqa: E402
from elicitation.geometry import gradient_floor  # noqa: E402
from elicitation.oracles import (  # noqa: E402
    LapseOracle,
    LogisticOracle,
    ProbitOracle,
    random_fair_metric,
    random_quadratic_metric,
)

#: Inverse temperature of the simulated people's answers (metric differences of 0.01 are right 88 % of
#: the time, 0.005 about 73 %): careful but fallible.
BETA = 200.0
#: Probit people: value noise as steep near a tie as logistic ``BETA`` (slope ``BETA / 4`` at a tie).
PROBIT_SIGMA = 4.0 / (BETA * np.sqrt(2.0 * np.pi))
#: Lapsing people: right on every pair except that this share of answers is a coin flip.
LAPSE = 0.05
#: A clinician's cost of a missed malignant tumour relative to a false alarm: log-uniform in this range.
COST_RATIO_RANGE = (0.5, 20.0)
#: Random pairs from the query sphere on which agreement is measured.
AGREEMENT_PAIRS = 4000
MAX_SCREENS = 40
MAX_BELOW_BASELINE = 0.10
MIN_AGREEMENT = 0.95
#: A screen looks like the one before when every displayed cell is within this many people of it.
LOOK_ALIKE_PEOPLE = 2.0
MAX_DOMINANCE = 0.10
#: Phases whose answers are scored (the elicitor's questions and the final comparisons).
SCORED_PHASES = ("elicitation", "evaluation")

#: The fairness study: Adult income with two groups, the active fair elicitor, the demo's schedule.
FAIR_STUDY: dict[str, Any] = {
    **DEMO_STUDY,
    "name": "Benchmark: income decisions, fair",
    "task": "A classifier decides whether a person's income is above 50K.",
    "class_names": ["income <=50K", "income >50K"],
    "group_names": ["Female", "Male"],
    "population": "people",
    "algorithm": "active_fair",
    "query_space": {"kind": "dataset", "recipe": {"dataset": "adult", "groups": True, "seed": 0}},
}


@dataclass(frozen=True)
class Person:
    """What one simulated person's session showed and what it elicited."""

    screens: int
    consecutive_repeats: int
    identical_pairs: int
    shown_classifiers: int
    below_baseline: int
    agreement: float
    #: Agreement on the random pairs this person answers correctly at least 75 % of the time.
    agreement_noticeable: float
    #: Share of the random pairs that are noticeable, and how often the person's own answers would match
    #: their true preference on all of them.
    noticeable_share: float
    self_agreement: float
    seconds: float
    look_alike: int = 0
    side_switches: int = 0
    scored: int = 0
    dominance: int = 0
    distinct_classifiers: int = 0
    most_shown: int = 0
    #: Who the person was: the generator of their metric and their noise model.
    generator: str = ""
    noise: str = ""


def _shown(query: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The two confusion stacks ``(m, k, k)`` exactly as the participant page displays them."""
    left = np.asarray(query["first"]["confusion"], dtype=np.float64)
    right = np.asarray(query["second"]["confusion"], dtype=np.float64)
    decimals = display_decimals(left, right)
    shown_left, shown_right = rounded_counts(left, decimals), rounded_counts(right, decimals)
    if shown_left.ndim == 2:
        shown_left, shown_right = shown_left[None], shown_right[None]
    return shown_left, shown_right


def _rates(counts: np.ndarray, n_groups: int) -> np.ndarray:
    rates = np.diagonal(counts, axis1=1, axis2=2) / counts.sum(axis=2)
    result: np.ndarray = rates[0] if n_groups == 1 else rates
    return result


def _below_baseline(counts: np.ndarray) -> int:
    correct = np.trace(counts, axis1=1, axis2=2)
    baseline = counts.sum(axis=2).max(axis=1)
    return int(np.sum(correct < baseline))


def _correct(counts: np.ndarray) -> np.ndarray:
    """People of each class (and group) a displayed classifier gets right."""
    correct: np.ndarray = np.diagonal(counts, axis1=1, axis2=2)
    return correct


def dominates(left: np.ndarray, right: np.ndarray) -> bool:
    """Whether one side gets at least as many people right in every class and group, and more in one."""
    difference = _correct(left) - _correct(right)
    return bool(
        (np.all(difference >= 0) and np.any(difference > 0))
        or (np.all(difference <= 0) and np.any(difference < 0))
    )


def looks_alike(screen: tuple[np.ndarray, np.ndarray], before: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether every displayed cell of ``screen`` is within `LOOK_ALIKE_PEOPLE` of ``before`` (in either
    order of its sides)."""
    (left, right), (old_left, old_right) = screen, before
    same = max(np.abs(left - old_left).max(), np.abs(right - old_right).max())
    swapped = max(np.abs(left - old_right).max(), np.abs(right - old_left).max())
    return bool(min(same, swapped) <= LOOK_ALIKE_PEOPLE)


def switches_sides(screen: tuple[np.ndarray, np.ndarray], before: tuple[np.ndarray, np.ndarray]) -> bool:
    """Whether a classifier of ``before`` appears on the other side of ``screen`` (displayed alike)."""
    (left, right), (old_left, old_right) = screen, before
    return bool(np.array_equal(left, old_right) or np.array_equal(right, old_left))


def screen_measures(screens: list[tuple[np.ndarray, np.ndarray]], phases: list[str]) -> dict[str, int]:
    """Look-alike screens, side switches, scored and dominance questions, distinct classifiers shown."""
    pairs = list(zip(screens[1:], screens[:-1], strict=True))
    scored = [screen for screen, phase in zip(screens, phases, strict=True) if phase in SCORED_PHASES]
    shown = Counter(side.tobytes() for screen in screens for side in screen)
    return {
        "look_alike": sum(looks_alike(screen, before) for screen, before in pairs),
        "side_switches": sum(switches_sides(screen, before) for screen, before in pairs),
        "scored": len(scored),
        "dominance": sum(dominates(*screen) for screen in scored),
        "distinct_classifiers": len(shown),
        "most_shown": max(shown.values(), default=0),
    }


def _phases(app: Any, token: str) -> list[str]:
    """The phase of every screen of the session, in order (practice, elicitation, check, evaluation)."""
    with app.state.sessionmaker() as db:
        session = load_session(db, token)
        return [str(row.phase) for row in log_rows(db, session.id)]


def new_session(app: Any, study: Any, seed: int, version: str) -> str:
    """A consented session of ``study`` with session seed ``seed``, recorded as algorithm ``version``: what
    the API creates, with the seed fixed so that runs with other display marks show the same people the
    same elicitor questions. Returns its token."""
    with app.state.sessionmaker() as db:
        session, token = create_session(db, app.state.session_cache, study.id, consented=True, commit=False)
        session.seed = seed
        session.algorithm_version = version
        db.commit()
    return token


def simulate(
    client: TestClient,
    token: str,
    study: Any,
    metric: Metric,
    n_groups: int,
    rng: np.random.Generator,
    noise: str = "logistic",
) -> Person:
    """One person's session ``token`` over the JSON API, answering from the displayed numbers with
    ``noise``."""
    oracle = NOISE[noise](metric, rng)
    started = time.perf_counter()
    state = client.get(f"/api/v1/sessions/{token}").json()
    previous: tuple[bytes, bytes] | None = None
    screens = repeats = identical = shown = below = 0
    pictures: list[tuple[np.ndarray, np.ndarray]] = []
    while state["query"] is not None:
        query = state["query"]
        left, right = _shown(query)
        pictures.append((left, right))
        picture = (left.tobytes(), right.tobytes())
        if previous is not None and (picture == previous or picture == previous[::-1]):
            repeats += 1
        identical += bool(np.array_equal(left, right))
        shown += 2 * left.shape[0]
        below += _below_baseline(left) + _below_baseline(right)
        first_preferred = oracle(_rates(left, n_groups), _rates(right, n_groups))
        response = client.post(
            f"/api/v1/sessions/{token}/answers",
            json={
                "seq": query["seq"],
                "preferred": "first" if first_preferred else "second",
                "time_on_page_ms": 9000,
                "hidden_ms": 0,
            },
        )
        state = response.json()
        screens += 1
        previous = picture
    elicited = decode_metric(state["result"]["metric"])
    report = noisy_agreement(metric, elicited, _region(study), rng, beta=BETA, n_pairs=AGREEMENT_PAIRS)
    measures = screen_measures(pictures, _phases(client.app, token))
    return Person(
        screens,
        repeats,
        identical,
        shown,
        below,
        report.overall,
        report.noticeable,
        report.noticeable_share,
        report.self_agreement,
        time.perf_counter() - started,
        **measures,
        noise=noise,
    )


def _region(study: Any) -> Any:
    """The sphere (or the spheres per group) the study's questions sit in."""
    config = parse_study_config(study.config)
    return get_algorithm(config.algorithm).algorithm.query_region(build_space(config))


def _describe(region: Any) -> Any:
    spheres = [region] if isinstance(region, Sphere) else list(region)
    return [{"center": own.center.tolist(), "radius": own.radius} for own in spheres]


Draw = Callable[[np.random.Generator, Any], Metric]


def run_study(
    config: dict[str, Any],
    people: int,
    draws: Sequence[Draw],
    seed: int,
    *,
    noises: Sequence[str] = ("logistic",),
    version: str | None = None,
    mark: str = DISPLAY_MARK,
) -> dict[str, Any]:
    """Simulate ``people`` participants of ``config`` on a fresh temporary database.

    Person ``i`` is drawn by ``draws[i % len(draws)]`` and answers with noise
    ``noises[(i // len(draws)) % len(noises)]``, so every generator meets every noise model. The same
    ``seed`` gives the same people (hidden metrics) and the same session seeds, so a run with another
    display ``mark`` (the script sessions record) shows them the same elicitor questions with that mark's
    practice pairs, checks and final comparisons. ``version``: new sessions ask as this earlier version of
    the study's algorithm (`current_version`).
    """
    with tempfile.TemporaryDirectory() as folder, current_version(config["algorithm"], version):
        settings = Settings(database_url=f"sqlite:///{folder}/bench.db")
        upgrade_database(settings)
        app = create_app(settings)
        with app.state.sessionmaker() as db:
            study = create_study(db, config)
            space = build_space(parse_study_config(study.config))
        recorded = session_version(get_algorithm(config["algorithm"])).removesuffix(DISPLAY_MARK) + mark
        # The people (their hidden metrics) are fixed by the seed, whatever their sessions ask; each
        # person's answers and agreement pairs come from a generator of their own.
        rng = np.random.default_rng(seed)
        drawn = [draws[index % len(draws)] for index in range(people)]
        metrics = [draw(rng, space) for draw in drawn]
        session_seeds = np.random.default_rng([seed, people]).integers(2**62, size=people)
        with TestClient(app) as client:
            results = [
                dataclasses.replace(
                    simulate(
                        client,
                        new_session(app, study, int(session_seeds[index]), recorded),
                        study,
                        metric,
                        space.n_groups,
                        np.random.default_rng([seed, index]),
                        noises[(index // len(draws)) % len(noises)],
                    ),
                    generator=drawn[index].__name__,
                )
                for index, metric in enumerate(metrics)
            ]
    shown = sum(person.shown_classifiers for person in results)
    summary = {
        "study": config["name"],
        "algorithm_version": recorded,
        "people": people,
        # People who never prefer a classifier worse in every class inside the query sphere (quadratic).
        "sensible_people": sum(
            isinstance(metric, QuadraticMetric) and sensible(metric, space.sphere) for metric in metrics
        ),
        "spheres": _describe(_region(study)),
        "screens_max": max(person.screens for person in results),
        "screens_mean": float(np.mean([person.screens for person in results])),
        "consecutive_repeats": sum(person.consecutive_repeats for person in results),
        "identical_pairs": sum(person.identical_pairs for person in results),
        "below_baseline_share": sum(person.below_baseline for person in results) / shown,
        "agreement_min": min(person.agreement for person in results),
        "agreement_mean": float(np.mean([person.agreement for person in results])),
        "people_below": sum(person.agreement < MIN_AGREEMENT for person in results),
        "agreement_noticeable_min": float(np.nanmin([person.agreement_noticeable for person in results])),
        "agreement_noticeable_mean": float(np.nanmean([person.agreement_noticeable for person in results])),
        "noticeable_share_min": min(person.noticeable_share for person in results),
        "self_agreement_min": min(person.self_agreement for person in results),
        "seconds_per_person": float(np.mean([person.seconds for person in results])),
        "look_alike": sum(person.look_alike for person in results),
        "side_switches": sum(person.side_switches for person in results),
        "dominance_share": sum(person.dominance for person in results)
        / max(1, sum(person.scored for person in results)),
        "distinct_classifiers_mean": float(np.mean([person.distinct_classifiers for person in results])),
        "shown_per_session_mean": float(np.mean([2 * person.screens for person in results])),
        "most_shown_max": max(person.most_shown for person in results),
        "agreement_by_person_kind": _by_kind(results),
        "people_detail": [asdict(person) for person in results],
    }
    summary["bars"] = {
        "screens": summary["screens_max"] <= MAX_SCREENS,
        "no_consecutive_repeat": summary["consecutive_repeats"] == 0,
        "no_identical_pair": summary["identical_pairs"] == 0,
        "below_baseline": summary["below_baseline_share"] <= MAX_BELOW_BASELINE,
        "agreement_every_person": summary["agreement_min"] >= MIN_AGREEMENT,
        "agreement_every_person_noticeable": summary["agreement_noticeable_min"] >= MIN_AGREEMENT,
        "no_look_alike": summary["look_alike"] == 0,
        "no_side_switch": summary["side_switches"] == 0,
        "dominance": summary["dominance_share"] <= MAX_DOMINANCE,
    }
    return summary


def _by_kind(results: list[Person]) -> dict[str, list[float]]:
    """Agreement min and mean per generator and per noise model."""
    kinds: dict[str, list[float]] = {}
    for key in sorted({person.generator for person in results} | {person.noise for person in results}):
        values = [person.agreement for person in results if key in (person.generator, person.noise)]
        kinds[key] = [min(values), float(np.mean(values))]
    return kinds


@contextlib.contextmanager
def current_version(name: str, version: str | None) -> Iterator[None]:
    """While open, new sessions of algorithm ``name`` record and ask as ``version``, an earlier version
    the catalogue keeps for recorded sessions (None: the current one): old and new on the same people."""
    spec = REGISTRY[name]
    if version is None or version == spec.version:
        yield
        return
    algorithm = dataclasses.replace(
        spec.algorithm, version=version, builder=spec.algorithm.earlier[version], earlier={}
    )
    REGISTRY[name] = AlgorithmSpec(algorithm, spec.params_model)
    try:
        yield
    finally:
        REGISTRY[name] = spec


def random_quadratic_person(rng: np.random.Generator, space: Any) -> Metric:
    """Appendix H's random quadratic metric as it comes (``a >= 0``, ``B`` concave)."""
    return random_quadratic_metric(rng, space.n_classes)


def sensible(metric: QuadraticMetric, sphere: Sphere) -> bool:
    """Whether ``metric`` never prefers a classifier worse in every class inside ``sphere``."""
    return bool(np.all(gradient_floor(metric.a, metric.B, sphere) >= 0.0))


def sensible_quadratic_person(rng: np.random.Generator, space: Any) -> Metric:
    """An Appendix H draw, redrawn until it is sensible on the study's sphere (rejection)."""
    while True:
        metric = random_quadratic_metric(rng, space.n_classes)
        if sensible(metric, space.sphere):
            return metric


def cost_ratio_person(rng: np.random.Generator, space: Any) -> Metric:
    """A clinician who counts mistakes: a missed case of the last class costs ``c`` false alarms, ``c``
    log-uniform in `COST_RATIO_RANGE` (binary studies; the other classes' mistakes cost one each)."""
    ratio = np.exp(rng.uniform(*np.log(COST_RATIO_RANGE)))
    costs = np.ones(space.n_classes)
    costs[-1] = ratio
    k = space.n_classes
    return QuadraticMetric(np.asarray(space.priors) * costs, np.zeros((k, k)))


def squared_miss_person(rng: np.random.Generator, space: Any) -> Metric:
    """A person whose regret grows with the square of the miss rates: ``phi(r) = <w, r> - (1 - r)^T S
    (1 - r)`` with ``w >= 0`` and ``S`` positive semi-definite with non-negative entries, so the gradient
    ``w + 2 S (1 - r)`` is non-negative on the whole unit cube."""
    k = space.n_classes
    weights = rng.random(k)
    spread = rng.random(k)
    S = np.diag(rng.random(k)) + rng.random() * np.outer(spread, spread)
    S *= rng.uniform(0.5, 4.0)
    return QuadraticMetric(weights + 2.0 * S @ np.ones(k), -2.0 * S)


#: The demo's sensible people: three generators, none of them the elicitor's prior.
SENSIBLE_PEOPLE: tuple[Draw, ...] = (sensible_quadratic_person, cost_ratio_person, squared_miss_person)
#: How simulated people slip, by name: each answer comes from an oracle of the person's metric.
NOISE: dict[str, Callable[[Metric, np.random.Generator], Callable[[Any, Any], bool]]] = {
    "logistic": lambda metric, rng: LogisticOracle(metric, BETA, rng=rng),
    "probit": lambda metric, rng: ProbitOracle(metric, PROBIT_SIGMA, rng=rng),
    "lapse": lambda metric, rng: LapseOracle(metric, LAPSE, rng=rng),
}


def random_fair_person(rng: np.random.Generator, space: Any) -> Metric:
    return random_fair_metric(rng, space.n_classes, space.n_groups, tau=group_tau(space.priors, None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=30, help="simulated people per study")
    parser.add_argument("--quick", action="store_true", help="3 people per study (smoke run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--study", choices=("both", "demo", "fair"), default="both", help="which study to simulate"
    )
    parser.add_argument(
        "--population",
        choices=("sensible", "appendix-h"),
        default="sensible",
        help="the demo's people: sensible ones (three generators, three noise models) or Appendix H's draws",
    )
    parser.add_argument("--version", help="the demo's algorithm version (an earlier one the catalogue keeps)")
    parser.add_argument(
        "--display-mark",
        choices=sorted(DISPLAY_MARKS),
        default=DISPLAY_MARK,
        help="the script every session records (default: a new session's)",
    )
    args = parser.parse_args()
    people = 3 if args.quick else args.people
    report = []
    if args.study in ("both", "demo"):
        if args.population == "sensible":
            demo = run_study(
                DEMO_STUDY,
                people,
                SENSIBLE_PEOPLE,
                args.seed,
                noises=tuple(NOISE),
                version=args.version,
                mark=args.display_mark,
            )
        else:
            demo = run_study(
                DEMO_STUDY,
                people,
                (random_quadratic_person,),
                args.seed,
                version=args.version,
                mark=args.display_mark,
            )
        report.append(demo)
    if args.study in ("both", "fair"):
        report.append(
            run_study(FAIR_STUDY, people, (random_fair_person,), args.seed + 1, mark=args.display_mark)
        )
    for summary in report:
        print(f"\n{summary['study']} ({summary['algorithm_version']}, {summary['people']} people, ", end="")
        print(f"spheres {summary['spheres']})")
        for key in (
            "screens_max",
            "screens_mean",
            "consecutive_repeats",
            "identical_pairs",
            "below_baseline_share",
            "agreement_min",
            "agreement_mean",
            "people_below",
            "agreement_noticeable_min",
            "agreement_noticeable_mean",
            "noticeable_share_min",
            "self_agreement_min",
            "look_alike",
            "side_switches",
            "dominance_share",
            "distinct_classifiers_mean",
            "shown_per_session_mean",
            "most_shown_max",
            "sensible_people",
            "agreement_by_person_kind",
            "seconds_per_person",
        ):
            print(f"  {key:26s} {summary[key]}")
        print("  bars:", summary["bars"])
    out = ROOT / "benchmarks" / "results" / "expert_minutes.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
