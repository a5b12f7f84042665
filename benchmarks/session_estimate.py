"""How honest the length a participant is told is: simulated people take the demo and a fairness study.

Run: ``.venv/bin/python benchmarks/session_estimate.py`` (``--people N`` per study, ``--quick`` for 4).
Each study is created on a fresh SQLite database; the consent page's count and minutes are read from
`app.planning.study_estimate`, as the page reads them, then simulated people take the study over the
JSON API. They do not all come from the elicitor's own prior: a quarter each are a random metric of the
study's family answering with logistic noise (careful, ``BETA`` 200, and hurried, 60), a metric outside
the family's prior (nearly linear; or mostly equal treatment) with threshold noise (differences below
0.004 answered at random), and the family's metric answering exactly. Per person it records the screens
taken; the question page's count before the first answer (the API's ``estimated_total``, the number the
page shows as "of about N"); whether the last question said it was the last (total = answered + 1 on
it); and whether the finished session's progress says answered = total.

Bars (issue: one honest estimate): the consent page's count and the question page's first count are
within 2 screens of what each person took, and the finished progress is exact. Results are printed and
written to ``benchmarks/results/session_estimate.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from app.algorithms import group_tau  # noqa: E402
from app.cli.web import DEMO_STUDY, upgrade_database  # noqa: E402
from app.main import create_app  # noqa: E402
from app.planning import study_estimate  # noqa: E402
from app.sessions import create_study  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.study_config import build_space, parse_study_config  # noqa: E402
from benchmarks.expert_minutes import (  # noqa: E402
    FAIR_STUDY,
    _rates,
    _shown,
    random_fair_person,
    random_quadratic_person,
)
from elicitation import Metric  # noqa: E402
from elicitation.oracles import random_fair_metric, random_quadratic_metric  # noqa: E402

#: Careful and hurried people's inverse temperatures (logistic noise on the metric difference).
BETA = 200.0
HURRIED_BETA = 60.0
#: Threshold noise: differences smaller than this are answered by a coin.
THRESHOLD = 0.004
#: The honest-count bar: the count stated at the start is within this many screens of what is taken.
COUNT_TOLERANCE = 2


def _family_metric(rng: np.random.Generator, space: Any) -> Metric:
    """A random metric of the study's family, drawn as the expert benchmark draws its people."""
    return (random_fair_person if space.n_groups > 1 else random_quadratic_person)(rng, space)


def _other_metric(rng: np.random.Generator, space: Any) -> Metric:
    """A person outside the elicitor's prior: nearly linear (quadratic terms 5 % or less of the weight),
    or in a study with groups one who weighs equal treatment 70-95 %."""
    if space.n_groups > 1:
        tau = group_tau(space.priors, None)
        return random_fair_metric(rng, space.n_classes, space.n_groups, tau=tau, tradeoff_range=(0.7, 0.95))
    return random_quadratic_metric(rng, space.n_classes, linear_share=(0.95, 1.0))


def _answer(
    metric: Metric, kind: str, first: np.ndarray, second: np.ndarray, rng: np.random.Generator
) -> bool:
    """Whether the person prefers ``first``, with the noise of their ``kind``."""
    gap = float(metric.value_gap(first, second))
    preferred = bool(metric.prefers(first, second))
    if kind == "exact":
        return preferred
    if kind == "threshold":
        return preferred if gap >= THRESHOLD else bool(rng.random() < 0.5)
    beta = BETA if kind == "careful" else HURRIED_BETA
    return preferred if rng.random() < 1.0 / (1.0 + np.exp(-beta * gap)) else not preferred


def simulate(
    client: TestClient, study: Any, metric: Metric, kind: str, n_groups: int, rng: Any
) -> dict[str, Any]:
    """One person's session over the JSON API; what it was told and what it took."""
    token = client.post(f"/api/v1/studies/{study.id}/sessions", json={"consent": True}).json()["token"]
    state = client.get(f"/api/v1/sessions/{token}").json()
    first_total = state["progress"]["estimated_total"]
    totals = []
    while state["query"] is not None:
        query = state["query"]
        totals.append(state["progress"]["estimated_total"])
        left, right = _shown(query)
        prefers_first = _answer(metric, kind, _rates(left, n_groups), _rates(right, n_groups), rng)
        state = client.post(
            f"/api/v1/sessions/{token}/answers",
            json={"seq": query["seq"], "preferred": "first" if prefers_first else "second"},
        ).json()
    screens = state["progress"]["answered"]
    return {
        "kind": kind,
        "screens": screens,
        "first_total": first_total,
        "last_said_last": bool(totals) and totals[-1] == screens,
        "finished_exact": state["progress"]["estimated_total"] == screens,
    }


KINDS = ("careful", "hurried", "threshold", "exact")
DRAWS: dict[str, Callable[[np.random.Generator, Any], Metric]] = {
    "careful": _family_metric,
    "hurried": _family_metric,
    "threshold": _other_metric,
    "exact": _family_metric,
}


def run_study(config: dict[str, Any], people: int, seed: int) -> dict[str, Any]:
    """Simulate ``people`` participants of ``config`` on a fresh temporary database."""
    with tempfile.TemporaryDirectory() as folder:
        settings = Settings(database_url=f"sqlite:///{folder}/bench.db")
        upgrade_database(settings)
        app = create_app(settings)
        with app.state.sessionmaker() as db:
            study = create_study(db, config)
            told = study_estimate(db, app.state.session_cache, study)
            space = build_space(parse_study_config(study.config))
        rng = np.random.default_rng(seed)
        kinds = [KINDS[index % len(KINDS)] for index in range(people)]
        metrics = [DRAWS[kind](rng, space) for kind in kinds]
        with TestClient(app) as client:
            rows = [
                simulate(client, study, metric, kind, space.n_groups, np.random.default_rng([seed, index]))
                for index, (metric, kind) in enumerate(zip(metrics, kinds, strict=True))
            ]
    consent = told.questions
    screens = np.array([row["screens"] for row in rows])
    first = np.array([row["first_total"] for row in rows])
    return {
        "study": config["name"],
        "people": people,
        "consent_count": consent,
        "consent_minutes": [told.minutes_low, told.minutes_high],
        "screens_min": int(screens.min()),
        "screens_max": int(screens.max()),
        "screens_mean": float(screens.mean()),
        "consent_error_max": int(np.max(np.abs(consent - screens))),
        "consent_within": float(np.mean(np.abs(consent - screens) <= COUNT_TOLERANCE)),
        "first_count_error_max": int(np.max(np.abs(first - screens))),
        "first_count_within": float(np.mean(np.abs(first - screens) <= COUNT_TOLERANCE)),
        "first_equals_consent": float(np.mean(first == consent)),
        "last_said_last": float(np.mean([row["last_said_last"] for row in rows])),
        "finished_exact": float(np.mean([row["finished_exact"] for row in rows])),
        "people_detail": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=24, help="simulated people per study")
    parser.add_argument("--quick", action="store_true", help="4 people per study (smoke run)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--study", choices=("both", "demo", "fair"), default="both")
    args = parser.parse_args()
    people = 4 if args.quick else args.people
    report = []
    if args.study in ("both", "demo"):
        report.append(run_study(DEMO_STUDY, people, args.seed))
    if args.study in ("both", "fair"):
        report.append(run_study(FAIR_STUDY, people, args.seed + 1))
    for summary in report:
        print(f"\n{summary['study']} ({summary['people']} people)")
        for key, value in summary.items():
            if key not in ("study", "people", "people_detail"):
                print(f"  {key:24s} {value}")
    out = ROOT / "benchmarks" / "results" / "session_estimate.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
