"""Where the CPU time of one answer goes: the JSON answer request of a study, part by part, in process.

Run: ``.venv/bin/python benchmarks/answer_cpu.py`` (``--sessions N``, ``--quick`` for a smoke run, which the
test suite runs). The app (`app.main.create_app`, a fresh SQLite file with ``synchronous=FULL``) serves the
demo study (the default elicitor, active quadratic k = 2, with its practice pairs, checks and final
comparisons) and a QPME k = 2 study (``--studies`` adds an active quadratic k = 5 and an active fair k = 3,
two groups study: elicitor questions only, on synthetic spaces); simulated participants (the panel
benchmark's diagonal quadratic metrics at k = 2, the expert benchmark's sensible quadratic and random fair
people beyond; none the elicitor's prior) answer whole sessions through
``POST /api/v1/sessions/{token}/answers`` over httpx's in-process ASGI transport, with the request's thread
pool run inline so that every part of a request runs on the measuring thread. Each request's CPU time
(`time.process_time`, one BLAS thread as in a web worker) is split into parts by timing the functions
that do them, each part without the parts it calls:

* load: the session by its token, its log rows, the live elicitor from the cache (`_Context.of_token`);
* answer row: the log row built and inserted, and its commit;
* elicitor: the posterior update, the question search (`choose_query`), the posterior estimate and the
  rest of the elicitor's step (display snapping, bookkeeping);
* checkpoint: the elicitor's checkpoint encoded, written and committed (`checkpoints.save_state`);
* plan: the session script's next step (`_Context.step`);
* view and JSON: the state, the next comparison's confusion matrices and displayed counts, encoded;
* finishing: the result of a session's last answer (`_Context.finalize_if_complete`);
* framework: the rest, FastAPI's routing, validation and middleware and the in-process transport.

The same client also posts to the bare FastAPI endpoint of ``benchmarks/http_roundtrip.py`` (no database)
between answers: its CPU time is the floor of a request in this setup. Reported: per study, the median and
mean CPU ms of each part over the answers that feed the elicitor (the demo's costly ones) and over all
answers, and a participant's joining (creating the session and reading its first question, which starts the
elicitor). Results go to ``benchmarks/results/answer_cpu.json``. A wrapped function that no longer exists
fails the run (the parts would silently go missing otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlalchemy.orm  # noqa: E402

import app.repository as repository  # noqa: E402
import app.routes.api as api_routes  # noqa: E402
import elicitation.active.elicitor as active_elicitor  # noqa: E402
import elicitation.types as elicitation_types  # noqa: E402
from app.cli.web import DEMO_STUDY, upgrade_database  # noqa: E402
from app.db import make_engine, make_sessionmaker  # noqa: E402
from app.main import create_app  # noqa: E402
from app.sessions import checkpoints, create_study, service  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.study_config import build_space, parse_study_config  # noqa: E402
from benchmarks.expert_minutes import random_fair_person, sensible_quadratic_person  # noqa: E402
from benchmarks.http_roundtrip import ACCURACY_STUDY, bare_app, machine  # noqa: E402
from benchmarks.panel_launch import participant_metric  # noqa: E402
from elicitation.posterior import ParticlePosterior  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "answer_cpu.json"
#: The parts in the order they are reported; "framework" is what the timed functions leave.
PARTS = (
    "load",
    "answer row",
    "posterior update",
    "question search",
    "posterior estimate",
    "elicitor, other",
    "checkpoint",
    "plan",
    "view and JSON",
    "finishing",
    "framework",
)


def _synthetic(name: str, algorithm: str, classes: list[str], **extra: Any) -> dict[str, Any]:
    """A study of elicitor questions only (no practice, checks or final comparisons) on a synthetic space."""
    return {
        "name": name,
        "task": "Decide which classifier to use.",
        "class_names": classes,
        "population": "people",
        "algorithm": algorithm,
        "algorithm_params": {"max_queries": 24},
        "query_space": {"kind": "synthetic", "radius": 0.15},
        "practice_queries": 0,
        "checks": False,
        "evaluation_queries": 0,
        **extra,
    }


#: The studies that can be measured: (configuration, a simulated person's metric from ``(rng, space)``):
#: the panel benchmark's people at k = 2, the expert benchmark's generators beyond.
STUDIES: dict[str, tuple[dict[str, Any], Callable[[np.random.Generator, Any], Any]]] = {
    "demo": (DEMO_STUDY, lambda rng, _space: participant_metric(rng)),
    "qpme": (ACCURACY_STUDY, lambda rng, _space: participant_metric(rng)),
    "quadratic5": (
        _synthetic("active quadratic k = 5", "active_quadratic", ["a", "b", "c", "d", "e"]),
        sensible_quadratic_person,
    ),
    "fair3": (
        _synthetic(
            "active fair k = 3, 2 groups",
            "active_fair",
            ["a", "b", "c"],
            group_names=["x", "y"],
            query_space={"kind": "synthetic", "radius": 0.15, "priors": [[0.5, 0.3, 0.2], [0.4, 0.4, 0.2]]},
        ),
        random_fair_person,
    ),
}
DEFAULT_STUDIES = ("demo", "qpme")


@dataclass(frozen=True)
class Study:
    id: str
    config: dict[str, Any]
    person: Callable[[np.random.Generator, Any], Any]


class PartClock:
    """CPU time per part of the current request, each part without the timed parts it calls."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []
        self._wrapped: list[tuple[Any, str, Any]] = []

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        self._stack.append([0.0])
        started = time.process_time()
        try:
            yield
        finally:
            spent = time.process_time() - started
            nested = self._stack.pop()[0]
            self.parts[name] += spent - nested
            if self._stack:
                self._stack[-1][0] += spent

    @property
    def nested(self) -> bool:
        return bool(self._stack)

    def wrap(self, owner: Any, attribute: str, name: str, *, top_level_only: bool = False) -> None:
        """Time ``owner.attribute`` as part ``name`` (``top_level_only``: only when no timed part called it;
        inside one it stays that part's)."""
        original: Callable[..., Any] = getattr(owner, attribute)
        self._wrapped.append((owner, attribute, original))

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if top_level_only and self.nested:
                return original(*args, **kwargs)
            with self.part(name):
                return original(*args, **kwargs)

        setattr(owner, attribute, timed)

    def unwrap(self) -> None:
        """Put every wrapped function back."""
        while self._wrapped:
            owner, attribute, original = self._wrapped.pop()
            setattr(owner, attribute, original)


def instrument(clock: PartClock) -> None:
    """Wrap the functions that do each part of an answer (see the module docstring)."""
    clock.wrap(service._Context, "of_token", "load")
    clock.wrap(service, "_answer_values", "answer row")
    clock.wrap(repository, "insert_answer", "answer row")
    clock.wrap(sqlalchemy.orm.Session, "commit", "answer row", top_level_only=True)
    clock.wrap(ParticlePosterior, "update", "posterior update")
    clock.wrap(active_elicitor, "choose_query", "question search")
    clock.wrap(active_elicitor, "_posterior_estimate", "posterior estimate")
    clock.wrap(elicitation_types.Elicitor, "send", "elicitor, other")
    clock.wrap(checkpoints, "save_state", "checkpoint")
    clock.wrap(service._Context, "step", "plan")
    clock.wrap(service._Context, "view", "view and JSON")
    clock.wrap(api_routes, "_state", "view and JSON")
    clock.wrap(service._Context, "finalize_if_complete", "finishing")


async def _inline(func: Callable[..., Any], *args: Any, **_options: Any) -> Any:
    """`anyio.to_thread.run_sync` on the calling thread, so that `time.process_time` sees one request."""
    return func(*args)


def summary(rows: list[dict[str, float]]) -> dict[str, dict[str, float]]:
    """Median and mean CPU ms of every part, and of the whole request, over ``rows``."""
    out: dict[str, dict[str, float]] = {}
    for name in (*PARTS, "request"):
        values = np.asarray([row.get(name, 0.0) for row in rows]) * 1000.0
        out[name] = {"median": round(float(np.median(values)), 3), "mean": round(float(np.mean(values)), 3)}
    out["answers"] = {"count": len(rows)}
    return out


async def answer_sessions(
    client: httpx.AsyncClient, clock: PartClock, study: Study, sessions: int, seed: int
) -> tuple[list[dict[str, float]], list[float], list[float]]:
    """Whole sessions answered over the JSON API: per answer its parts (and whether the elicitor got it), the
    CPU ms of one bare request after each answer, and of each session's joining."""
    rows: list[dict[str, float]] = []
    bare: list[float] = []
    joins: list[float] = []
    rng = np.random.default_rng(seed)
    space = build_space(parse_study_config(study.config))
    for _ in range(sessions):
        metric = study.person(rng, space)
        started = time.process_time()
        created = await client.post(f"/api/v1/studies/{study.id}/sessions", json={"consent": True})
        token = created.json()["token"]
        state = (await client.get(f"/api/v1/sessions/{token}")).json()
        joins.append((time.process_time() - started) * 1000.0)
        while state["query"] is not None:
            query = state["query"]
            first, second = np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"])
            body = {"seq": query["seq"], "preferred": "first" if metric.prefers(first, second) else "second"}
            clock.parts.clear()
            started = time.process_time()
            response = await client.post(f"/api/v1/sessions/{token}/answers", json=body)
            spent = time.process_time() - started
            response.raise_for_status()
            state = response.json()
            row = dict(clock.parts)
            row["framework"] = spent - sum(row.values())
            row["request"] = spent
            row["elicitor"] = float(
                any(row.get(name, 0.0) for name in ("posterior update", "elicitor, other"))
            )
            rows.append(row)
            started = time.process_time()
            (
                await client.post("http://bare/answers", json={"seq": 1, "preferred": "first"})
            ).raise_for_status()
            bare.append((time.process_time() - started) * 1000.0)
    return rows, bare, joins


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="answer-cpu-"))
    settings = Settings(database_url=f"sqlite:///{folder / 'answers.db'}")
    upgrade_database(settings)
    engine = make_engine(settings)
    with make_sessionmaker(engine)() as db:
        studies = {
            name: Study(str(create_study(db, parse_study_config(config)).id), config, person)
            for name, (config, person) in STUDIES.items()
            if name in args.studies
        }
    engine.dispose()
    app = create_app(settings)
    clock = PartClock()
    transport = _Router({"bare": httpx.ASGITransport(app=bare_app())}, httpx.ASGITransport(app=app))
    report: dict[str, Any] = {"machine": machine(), "sessions": args.sessions, "studies": {}}
    run_sync = anyio.to_thread.run_sync
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://app") as client,
    ):
        instrument(clock)
        anyio.to_thread.run_sync = _inline  # type: ignore[assignment]
        try:
            studied = {
                name: await answer_sessions(client, clock, study, args.sessions, args.seed)
                for name, study in studies.items()
            }
        finally:
            anyio.to_thread.run_sync = run_sync
            clock.unwrap()
        for name, (rows, bare, joins) in studied.items():
            elicitor_rows = [row for row in rows if row["elicitor"]]
            report["studies"][name] = {
                "elicitor_answers": summary(elicitor_rows) if elicitor_rows else None,
                "all_answers": summary(rows),
                "join_ms": {
                    "median": round(float(np.median(joins)), 3),
                    "mean": round(float(np.mean(joins)), 3),
                },
                "bare_request_ms": {
                    "median": round(float(np.median(bare)), 3),
                    "mean": round(float(np.mean(bare)), 3),
                },
            }
    report["load_average_after"] = machine()["load_average"]
    return report


class _Router(httpx.AsyncBaseTransport):
    """Requests to a named host go to that host's transport, every other one to ``default``."""

    def __init__(self, hosts: dict[str, httpx.AsyncBaseTransport], default: httpx.AsyncBaseTransport) -> None:
        self.hosts = hosts
        self.default = default

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        transport = self.hosts.get(request.url.host, self.default)
        return await transport.handle_async_request(request)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=12, help="whole sessions per study")
    parser.add_argument("--seed", type=int, default=20261128)
    parser.add_argument(
        "--studies",
        default=",".join(DEFAULT_STUDIES),
        help=f"comma-separated, of: {', '.join(STUDIES)} (default: {', '.join(DEFAULT_STUDIES)})",
    )
    parser.add_argument("--quick", action="store_true", help="one session per study (smoke run)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.studies = [name.strip() for name in str(args.studies).split(",")]
    unknown = sorted(set(args.studies) - set(STUDIES))
    if unknown:
        parser.error(f"unknown studies {unknown}; choose from {list(STUDIES)}")
    if args.quick:
        args.sessions = 1
    with threadpool_limits(limits=1):
        report = asyncio.run(measure(args))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    where = report["machine"]
    print(
        f"{where['date']}, {where['cpu_count']} CPUs, load {where['load_average'][0]} before / "
        f"{report['load_average_after'][0]} after, commit {where['commit']}; "
        f"{args.sessions} sessions per study"
    )
    for name, measured in report["studies"].items():
        for kind in ("elicitor_answers", "all_answers"):
            parts = measured[kind]
            if parts is None:
                continue
            print(f"\n{name}, {kind.replace('_', ' ')} ({parts['answers']['count']}): CPU ms median (mean)")
            for part in (*PARTS, "request"):
                print(f"  {part:20s} {parts[part]['median']:8.2f} ({parts[part]['mean']:.2f})")
        join = measured["join_ms"]
        print(f"  joining (create + first question) {join['median']:.2f} ({join['mean']:.2f})")
        bare = measured["bare_request_ms"]
        print(f"  bare endpoint        {bare['median']:8.2f} ({bare['mean']:.2f})")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
