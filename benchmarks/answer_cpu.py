"""Where the CPU time of one answer goes: the JSON answer request of a study, part by part, in process, served
with and without speculative next questions (`app.sessions.speculation`).

Run: ``.venv/bin/python benchmarks/answer_cpu.py`` (``--sessions N``, ``--quick`` for a smoke run, which the
test suite runs, ``--speculation off|on|both``). The app (`app.main.create_app`, a fresh SQLite file with
``synchronous=FULL``) serves the demo study (the default elicitor, active quadratic k = 2, with its practice
pairs, checks and final comparisons) and a QPME k = 2 study (``--studies`` adds an active quadratic k = 5 and
an active fair k = 3, two groups study: elicitor questions only, on synthetic spaces); simulated participants
(the panel benchmark's diagonal quadratic metrics at k = 2, the expert benchmark's sensible quadratic and
random fair people beyond; none the elicitor's prior) answer whole sessions through
``POST /api/v1/sessions/{token}/answers`` over httpx's in-process ASGI transport, with the request's thread
pool run inline so that every part of a request runs on the measuring thread. Each request's CPU time
(`time.thread_time` of that thread, one BLAS thread as in a web worker; the background's is counted apart) is
split into parts by timing the functions that do them, each part without the parts it calls:

* load: the session by its token, its log rows, the live elicitor from the cache (`_Context.of_token`);
* answer row: the log row built and inserted, and its commit;
* elicitor: the posterior update, the question search (`choose_query`), the posterior estimate and the
  rest of the elicitor's step (display snapping, bookkeeping);
* checkpoint: the elicitor's checkpoint encoded, written and committed (`checkpoints.save_state`,
  `encoded`, `save_blob`; with speculation, the request only takes a branch's, written in the background);
* plan: the session script's next step (`_Context.step`);
* view and JSON: the state, the next comparison's confusion matrices and displayed counts, encoded;
* finishing: the result of a session's last answer (`_Context.finalize_if_complete`);
* framework: the rest, FastAPI's routing, validation and middleware and the in-process transport.

With ``--speculation both`` (the default) every session is answered twice by the same simulated person with
the same session seed, once by an app without speculation and once by one with it (two apps on one database),
answer by answer in turn, so that the two runs ask the same questions and the machine's load falls on both
alike. After each answer of the speculating app its background finishes its work (the participant's think
time; it is held back while the measured request is in flight): its CPU time per answer (the checkpoint's save
and both branches) is reported beside the request's own, and so are the request's wall time in process, the
branches taken and the checkpoint's size (a state's memory).

The same client also posts to the bare FastAPI endpoint of ``benchmarks/http_roundtrip.py`` (no database)
between answers: its CPU time is the floor of a request in this setup. Reported: per study and mode, the
median and mean CPU ms of each part over the answers that feed the elicitor (the demo's costly ones) and over
all answers, and a participant's joining (creating the session and reading its first question, which starts
the elicitor). Results go to ``benchmarks/results/answer_cpu.json``. A wrapped function that no longer exists
fails the run (the parts would silently go missing otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import secrets
import sys
import tempfile
import threading
import time
import uuid
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
from sqlalchemy import func, select  # noqa: E402

import app.repository as repository  # noqa: E402
import app.routes.api as api_routes  # noqa: E402
import elicitation.active.elicitor as active_elicitor  # noqa: E402
import elicitation.types as elicitation_types  # noqa: E402
from app.cli.web import DEMO_STUDY, upgrade_database  # noqa: E402
from app.db import make_engine, make_sessionmaker  # noqa: E402
from app.main import create_app  # noqa: E402
from app.models import ElicitationSession, ElicitorCheckpoint  # noqa: E402
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
    """CPU time per part of the current request, each part without the timed parts it calls (on the
    measuring thread only: the speculation's background thread calls the same functions)."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)
        self._stack: list[list[float]] = []
        self._wrapped: list[tuple[Any, str, Any]] = []
        self.thread = threading.get_ident()
        #: Set while a measured request is in flight: the speculation's background waits for it to end.
        self.measuring = False

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        self._stack.append([0.0])
        started = time.thread_time()
        try:
            yield
        finally:
            spent = time.thread_time() - started
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
            if (top_level_only and self.nested) or threading.get_ident() != self.thread:
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
    clock.wrap(checkpoints, "save_blob", "checkpoint")
    clock.wrap(checkpoints, "encoded", "checkpoint")
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
        out[name] = _milliseconds([row.get(name, 0.0) for row in rows])
    out["answers"] = {"count": len(rows)}
    return out


#: The modes a run can measure, by the value of ``--speculation``.
MODES = {"off": ("off",), "on": ("on",), "both": ("off", "on")}


@dataclass
class Served:
    """One mode's app and what its answers cost."""

    mode: str
    app: Any
    rows: list[dict[str, float]]
    joins: list[float]

    @property
    def speculator(self) -> Any:
        return self.app.state.session_cache.speculator


async def answer_sessions(
    client: httpx.AsyncClient,
    clock: PartClock,
    study: Study,
    served: list[Served],
    sessions: int,
    seed: int,
) -> list[float]:
    """Whole sessions answered over the JSON API, each by every mode's app in turn, answer by answer, with
    the same person and session seed: per answer its parts (whether the elicitor got it, the wall time, the
    background's CPU after it), and each session's joining; returns the CPU ms of one bare request after
    each answer."""
    bare: list[float] = []
    rng = np.random.default_rng(seed)
    space = build_space(parse_study_config(study.config))
    for _ in range(sessions):
        metric = study.person(rng, space)
        session_seed = int(rng.integers(2**62))
        tokens: dict[str, str] = {}
        states: dict[str, dict[str, Any]] = {}
        for one in served:
            started = time.thread_time()
            with _session_seed(session_seed):
                created = await client.post(
                    f"http://{one.mode}/api/v1/studies/{study.id}/sessions", json={"consent": True}
                )
            tokens[one.mode] = created.json()["token"]
            states[one.mode] = (
                await client.get(f"http://{one.mode}/api/v1/sessions/{tokens[one.mode]}")
            ).json()
            one.joins.append((time.thread_time() - started) * 1000.0)
            _think(one)
        while any(states[one.mode]["query"] is not None for one in served):
            for one in served:
                query = states[one.mode]["query"]
                if query is None:
                    continue
                first, second = np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"])
                body = {
                    "seq": query["seq"],
                    "preferred": "first" if metric.prefers(first, second) else "second",
                }
                clock.parts.clear()
                clock.measuring = True
                wall = time.perf_counter()
                started = time.thread_time()
                response = await client.post(
                    f"http://{one.mode}/api/v1/sessions/{tokens[one.mode]}/answers", json=body
                )
                spent = time.thread_time() - started
                wall = time.perf_counter() - wall
                clock.measuring = False
                response.raise_for_status()
                states[one.mode] = response.json()
                row = dict(clock.parts)
                row["framework"] = spent - sum(row.values())
                row["request"] = spent
                row["wall"] = wall
                row["background"] = _think(one)
                row["elicitor"] = float(
                    any(row.get(name, 0.0) for name in ("posterior update", "elicitor, other"))
                    or row["background"] > 0.0
                )
                one.rows.append(row)
                started = time.thread_time()
                (
                    await client.post("http://bare/answers", json={"seq": 1, "preferred": "first"})
                ).raise_for_status()
                bare.append((time.thread_time() - started) * 1000.0)
        if len(served) > 1:
            compared = [json.dumps(_without_code(states[one.mode]), sort_keys=True) for one in served]
            if len(set(compared)) != 1:
                raise AssertionError("a session ended differently with and without speculation")
    if len(served) > 1:
        # The same questions in the same order: an answer the elicitor got without speculation is one it
        # got with it (where the request may have only taken the state computed ahead).
        for one in served[1:]:
            for row, reference in zip(one.rows, served[0].rows, strict=True):
                row["elicitor"] = reference["elicitor"]
    return bare


def _think(one: Served) -> float:
    """The participant's think time: the speculating app's background finishes; its CPU seconds."""
    speculator = one.speculator
    if speculator is None:
        return 0.0
    before = speculator.cpu_seconds
    if not speculator.wait_until_idle():
        raise AssertionError("the speculation's background did not finish")
    return float(speculator.cpu_seconds - before)


def _without_code(state: dict[str, Any]) -> dict[str, Any]:
    """A finished session's state less its random completion code."""
    result = state.get("result")
    if isinstance(result, dict):
        return {**state, "result": {k: v for k, v in result.items() if k != "completion_code"}}
    return state


@contextmanager
def _session_seed(seed: int) -> Iterator[None]:
    """New sessions get ``seed`` (`secrets.randbits`, which the session's creation draws it from)."""
    original = secrets.randbits
    secrets.randbits = lambda _bits: seed
    try:
        yield
    finally:
        secrets.randbits = original


def _median_mean(values_ms: Any) -> dict[str, float]:
    """Median and mean of milliseconds, to the microsecond (both 0 for no values)."""
    array = np.asarray(values_ms, dtype=float)
    if array.size == 0:
        return {"median": 0.0, "mean": 0.0}
    return {"median": round(float(np.median(array)), 3), "mean": round(float(np.mean(array)), 3)}


def _milliseconds(seconds: list[float]) -> dict[str, float]:
    """`_median_mean` of durations given in seconds."""
    return _median_mean(np.asarray(seconds, dtype=float) * 1000.0)


def mode_report(one: Served) -> dict[str, Any]:
    """What ``one`` mode's answers cost: parts, wall time, background CPU, branches, a state's size."""
    elicitor_rows = [row for row in one.rows if row["elicitor"]]
    cache = one.app.state.session_cache
    report: dict[str, Any] = {
        "elicitor_answers": summary(elicitor_rows) if elicitor_rows else None,
        "all_answers": summary(one.rows),
        "join_ms": _median_mean(one.joins),
    }
    for kind, rows in (("elicitor_answers", elicitor_rows), ("all_answers", one.rows)):
        if report[kind] is not None:
            report[kind]["wall"] = _milliseconds([row["wall"] for row in rows])
            report[kind]["background"] = _milliseconds([row["background"] for row in rows])
            report[kind]["request and background"] = _milliseconds(
                [row["request"] + row["background"] for row in rows]
            )
    if one.speculator is not None:
        report["branches"] = {"taken": cache.branches_taken, "missed": cache.branches_missed}
        cache.branches_taken = cache.branches_missed = 0
    return report


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
    clock = PartClock()
    apps = {
        mode: create_app(settings.model_copy(update={"speculative_questions": mode == "on"}))
        for mode in MODES[args.speculation]
    }
    hosts: dict[str, httpx.AsyncBaseTransport] = {"bare": httpx.ASGITransport(app=bare_app())}
    hosts.update({mode: httpx.ASGITransport(app=one) for mode, one in apps.items()})
    transport = _Router(hosts, hosts[MODES[args.speculation][0]])
    report: dict[str, Any] = {
        "machine": machine(),
        "sessions": args.sessions,
        "speculation": args.speculation,
        "studies": {},
    }
    run_sync = anyio.to_thread.run_sync
    async with contextlib.AsyncExitStack() as stack:
        for one in apps.values():
            await stack.enter_async_context(one.router.lifespan_context(one))
        client = await stack.enter_async_context(httpx.AsyncClient(transport=transport))
        for one in apps.values():
            speculator = one.state.session_cache.speculator
            if speculator is not None:
                idle = speculator.busy
                speculator.busy = lambda within, idle=idle: clock.measuring or idle(within)
        instrument(clock)
        anyio.to_thread.run_sync = _inline  # type: ignore[assignment]
        try:
            for name, study in studies.items():
                served = [Served(mode, one, [], []) for mode, one in apps.items()]
                bare = await answer_sessions(client, clock, study, served, args.sessions, args.seed)
                measured: dict[str, Any] = {one.mode: mode_report(one) for one in served}
                measured["bare_request_ms"] = _median_mean(bare)
                measured["checkpoint_bytes"] = _checkpoint_bytes(next(iter(apps.values())), study.id)
                report["studies"][name] = measured
        finally:
            anyio.to_thread.run_sync = run_sync
            clock.unwrap()
    report["load_average_after"] = machine()["load_average"]
    return report


def _checkpoint_bytes(app: Any, study_id: str) -> int:
    """The largest checkpoint of the study's sessions: about the memory of one elicitor state."""
    with app.state.sessionmaker() as db:
        sizes = db.execute(
            select(func.max(func.length(ElicitorCheckpoint.state)))
            .join(ElicitationSession, ElicitationSession.id == ElicitorCheckpoint.session_id)
            .where(ElicitationSession.study_id == uuid.UUID(study_id))
        ).scalar()
    return int(sizes or 0)


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
    parser.add_argument(
        "--speculation",
        choices=list(MODES),
        default="both",
        help="serve without speculative next questions, with them, or both, answer by answer in turn",
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
        f"{args.sessions} sessions per study, speculation {args.speculation}"
    )
    for name, measured in report["studies"].items():
        for mode in MODES[args.speculation]:
            for kind in ("elicitor_answers", "all_answers"):
                parts = measured[mode][kind]
                if parts is None:
                    continue
                count = parts["answers"]["count"]
                print(f"\n{name}, speculation {mode}, {kind.replace('_', ' ')} ({count}): ms median (mean)")
                for part in (*PARTS, "request"):
                    print(f"  {part:24s} {parts[part]['median']:8.2f} ({parts[part]['mean']:.2f})")
                for extra in ("wall", "background", "request and background"):
                    label = {"wall": "request wall time", "background": "background CPU"}.get(extra, extra)
                    print(f"  {label:24s} {parts[extra]['median']:8.2f} ({parts[extra]['mean']:.2f})")
            join = measured[mode]["join_ms"]
            print(f"  joining (create + first question) {join['median']:.2f} ({join['mean']:.2f})")
            if "branches" in measured[mode]:
                print(
                    f"  branches taken {measured[mode]['branches']['taken']}, missed "
                    f"{measured[mode]['branches']['missed']}"
                )
        bare = measured["bare_request_ms"]
        print(f"  bare endpoint            {bare['median']:8.2f} ({bare['mean']:.2f})")
        print(f"  largest checkpoint       {measured['checkpoint_bytes']} bytes")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
