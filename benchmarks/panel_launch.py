"""A panel's launch: N participants start the demo study within a few seconds and answer at a person's pace.

Run: ``.venv/bin/python benchmarks/panel_launch.py`` (``--quick`` for a smoke run, ``--participants 300``,
``--launch 8``, ``--think 8``, ``--answers 12`` to stop each participant after that many answers,
``--workers W`` to pass ``elicit serve --workers``). It creates a fresh SQLite database with the demo study
(the default elicitor, active quadratic k = 2, on the bundled breast-cancer classifiers, with its practice
pairs, checks and final comparisons) and serves it with ``elicit serve`` exactly as the README starts it
(migrations, its default number of workers unless ``--workers``) on 127.0.0.1. Then N participants, one
asyncio task each on one shared ``httpx.AsyncClient``, each start at a uniformly random moment of the first
``--launch`` seconds (join: create a consented session, read its first question) and answer every question
after a think time uniform in ``[0.75, 1.25] x --think`` seconds. Each participant has a quadratic metric
of their own (random weights and diagonal curvature, not the elicitor's prior) and answers the other way
round one time in twenty.

It reports the client-side latency of the answers (p50, p90, p99, max) and of joining, answers per second,
errors (any non-2xx answer, transport error, or a participant who did not get as far as told; an answer
whose reused connection broke before any response is sent again once, as browsers do, and counted), the CPU
time of the server processes and of the clients themselves (both in cores: CPU seconds per wall second),
the server's CPU time per answer and how many participants one core therefore serves at this pace, and the
load average. The bar: p99 of the answers <= `P99_TARGET_MS` with no error. Errors fail the run
(exit 1); the latency verdict is printed. Results go to ``benchmarks/results/panel_launch.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.cli.web import DEMO_STUDY, upgrade_database  # noqa: E402
from app.db import make_engine, make_sessionmaker  # noqa: E402
from app.sessions import create_study  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.study_config import parse_study_config  # noqa: E402
from benchmarks.http_roundtrip import machine  # noqa: E402
from benchmarks.load import post_answer  # noqa: E402
from benchmarks.servers import ServerProcess  # noqa: E402
from elicitation import QuadraticMetric  # noqa: E402

P99_TARGET_MS = 1000.0
#: Share of answers a participant gives the other way round than their metric says.
SLIP_RATE = 0.05
RESULTS = ROOT / "benchmarks" / "results" / "panel_launch.json"
#: Seconds a participant waits for one response before it counts as an error.
REQUEST_TIMEOUT_S = 60.0


@dataclass
class Measured:
    answers_ms: list[float] = field(default_factory=list)
    joins_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    finished: int = 0
    retries: int = 0

    def fail(self, problem: str) -> None:
        self.errors.append(problem)


def participant_metric(rng: np.random.Generator) -> QuadraticMetric:
    """A person's metric: weights uniform in [0.2, 1], diagonal curvature uniform in [-0.6, -0.05]."""
    return QuadraticMetric(rng.uniform(0.2, 1.0, size=2), np.diag(-rng.uniform(0.05, 0.6, size=2)))


def choose(metric: QuadraticMetric, query: dict[str, Any], rng: np.random.Generator) -> str:
    prefers_first = metric.prefers(np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"]))
    if rng.random() < SLIP_RATE:
        prefers_first = not prefers_first
    return "first" if prefers_first else "second"


async def participant(
    client: httpx.AsyncClient,
    study_id: str,
    rng: np.random.Generator,
    args: argparse.Namespace,
    out: Measured,
) -> None:
    """Join at a random moment of the launch, then answer at a person's pace until done or ``--answers``."""
    metric = participant_metric(rng)
    await asyncio.sleep(rng.uniform(0.0, args.launch))
    try:
        started = time.perf_counter()
        created = await client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
        if created.status_code != 201:
            out.fail(f"join: {created.status_code} {created.text[:200]}")
            return
        token = created.json()["token"]
        response = await client.get(f"/api/v1/sessions/{token}")
        out.joins_ms.append((time.perf_counter() - started) * 1000.0)
        if response.status_code != 200:
            out.fail(f"first question: {response.status_code} {response.text[:200]}")
            return
        state = response.json()
        answered = 0
        while state["query"] is not None and (args.answers is None or answered < args.answers):
            await asyncio.sleep(args.think * rng.uniform(0.75, 1.25))
            body = {"seq": state["query"]["seq"], "preferred": choose(metric, state["query"], rng)}
            state, elapsed = await post_answer(client, token, body, out)
            if state is None:
                return
            out.answers_ms.append(elapsed)
            answered += 1
        if args.answers is None and state["status"] != "done":
            out.fail(f"a session ended as {state['status']!r}")
            return
        if args.answers is not None and answered < args.answers and state["status"] != "done":
            out.fail(f"a participant stopped after {answered} answers")
            return
        out.finished += 1
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        out.fail(f"{type(exc).__name__}: {exc}")


async def launch(url: str, study_id: str, args: argparse.Namespace) -> tuple[Measured, float]:
    """Every participant's task on one client; returns the measurements and the wall time."""
    out = Measured()
    limits = httpx.Limits(max_connections=args.participants, max_keepalive_connections=args.participants)
    timeout = httpx.Timeout(REQUEST_TIMEOUT_S)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=timeout) as client:
        started = time.perf_counter()
        seeds = np.random.SeedSequence(args.seed).spawn(args.participants)
        await asyncio.gather(
            *(participant(client, study_id, np.random.default_rng(s), args, out) for s in seeds)
        )
        wall = time.perf_counter() - started
    return out, wall


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and of its live children (uvicorn's workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    array = np.asarray(values)
    return {
        "n": len(values),
        "p50": round(float(np.percentile(array, 50)), 1),
        "p90": round(float(np.percentile(array, 90)), 1),
        "p99": round(float(np.percentile(array, 99)), 1),
        "max": round(float(array.max()), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--participants", type=int, default=300)
    parser.add_argument("--launch", type=float, default=8.0, help="seconds over which participants start")
    parser.add_argument("--think", type=float, default=8.0, help="mean seconds a person takes per question")
    parser.add_argument("--answers", type=int, default=None, help="answers per participant (default: all)")
    parser.add_argument("--workers", type=int, default=None, help="elicit serve --workers (default: its own)")
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument(
        "--quick", action="store_true", help="20 participants, 2 s launch, 1 s think, 4 answers"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.participants, args.launch, args.think, args.answers = 20, 2.0, 1.0, 4
    elicit = Path(sys.executable).with_name("elicit")
    with tempfile.TemporaryDirectory(prefix="panel-launch-") as folder:
        url = f"sqlite:///{Path(folder) / 'panel.db'}"
        settings = Settings(database_url=url)
        upgrade_database(settings)
        engine = make_engine(settings)
        with make_sessionmaker(engine)() as db:
            study_id = str(create_study(db, parse_study_config(DEMO_STUDY)).id)
        engine.dispose()
        command = [str(elicit), "serve"] + ([] if args.workers is None else ["--workers", str(args.workers)])
        before = machine()
        with ServerProcess(
            command=command, env={"DATABASE_URL": url}, ready_path="/healthz", kill_at_exit=False
        ) as server:
            time.sleep(2.0 if args.workers and args.workers > 1 else 0.5)  # every worker has imported
            server_cpu = process_cpu_seconds(server.process.pid)
            client_cpu = time.process_time()
            out, wall = asyncio.run(launch(server.url, study_id, args))
            client_cpu = time.process_time() - client_cpu
            server_cpu = process_cpu_seconds(server.process.pid) - server_cpu
    answers = percentiles(out.answers_ms)
    report = {
        "machine": before,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "quick": args.quick,
        "participants": args.participants,
        "launch_s": args.launch,
        "think_s": args.think,
        "answers_per_participant": args.answers,
        "workers": args.workers,
        "wall_s": round(wall, 1),
        "answers": answers,
        "answers_per_s": round(len(out.answers_ms) / wall, 1),
        "joins": percentiles(out.joins_ms),
        "finished": out.finished,
        "errors": len(out.errors),
        "retries": out.retries,
        "problems": out.errors[:20],
        "server_cpu_cores": round(server_cpu / wall, 2),
        "server_cpu_ms_per_answer": round(1000.0 * server_cpu / max(len(out.answers_ms), 1), 1),
        # A core answers 1 / (CPU per answer) times a second; a person asks once every think time.
        "participants_per_core": int(args.think * len(out.answers_ms) / server_cpu) if server_cpu else None,
        "client_cpu_cores": round(client_cpu / wall, 2),
        "p99_target_ms": P99_TARGET_MS,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for problem in report["problems"]:
        print(f"error: {problem}")
    met = answers.get("p99", float("inf")) <= P99_TARGET_MS
    print(
        f"{before['date']}, {before['cpu_count']} CPUs, load average {before['load_average'][0]} before / "
        f"{report['load_average_after'][0]} after; elicit serve, "
        f"{'default workers' if args.workers is None else f'{args.workers} workers'}"
    )
    print(
        f"{args.participants} participants starting within {args.launch:g} s, "
        f"one answer every ~{args.think:g} s: "
        f"{answers['n']} answers in {report['wall_s']} s ({report['answers_per_s']}/s), answer p50 "
        f"{answers.get('p50')} ms, p90 {answers.get('p90')} ms, p99 {answers.get('p99')} ms "
        f"(target <= {P99_TARGET_MS:g} ms: {'met' if met else 'NOT met'}), max {answers.get('max')} ms; "
        f"joining p99 {report['joins'].get('p99')} ms; {report['errors']} errors, {out.retries} answers sent "
        f"again after a broken connection, {out.finished} finished"
    )
    per_core = report["participants_per_core"]
    cpu = (
        f"CPU: server {report['server_cpu_cores']} cores ({report['server_cpu_ms_per_answer']} ms per answer"
    )
    print(
        f"{cpu}, joins included: one core serves about {per_core} participants answering every "
        f"{args.think:g} s), the clients themselves {report['client_cpu_cores']} cores; written to {args.out}"
    )
    return 1 if out.errors else 0


if __name__ == "__main__":
    sys.exit(main())
