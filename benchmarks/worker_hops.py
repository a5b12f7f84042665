"""Worker hops: the active elicitor's time per answer when every request goes to another worker process.

Run: ``nice -n 19 .venv/bin/python benchmarks/worker_hops.py`` (``--quick`` for a smoke run,
``--answers 100``, ``--rounds 2``, ``--modes one,two``, ``--postgres-url URL`` for PostgreSQL instead of a
SQLite file).

It creates a fresh database (a SQLite file, or a PostgreSQL database ``elicit_hops_<random>`` dropped
afterwards), migrates it and creates an active-quadratic study (k = 2, the demo's defaults) whose sessions
ask exactly ``--answers`` questions (a tiny stopping tolerance; no practice, checks or evaluation pairs, so
every request is an elicitor answer). It starts two uvicorn processes on different ports on that database.
Then, ``--rounds`` times, one automated participant (a fixed quadratic metric) answers a whole session
with every answer posted to the same process ("one worker"), and another with the answers alternating
between the two ("two workers": each process sees every other answer, so its cache is always stale). The
client-side time of each answer round trip (POST the answer -> the next query) is recorded.

It reports, per mode, the mean, median and p90 time per answer and the means of the first and last ten
answers (a cost that grows with the log shows as last >> first), the ratio two/one of the means (the bar:
at most 2), and each process's count of how request states were obtained (`elicit_elicitor_resumes`:
cache, checkpoint, full replay). Results go to stdout (Markdown) and ``benchmarks/results/worker_hops.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.cli.web import upgrade_database  # noqa: E402
from app.db import make_engine, make_sessionmaker  # noqa: E402
from app.sessions import create_study  # noqa: E402
from app.settings import Settings  # noqa: E402
from benchmarks.servers import ServerProcess, postgres_database  # noqa: E402
from elicitation import QuadraticMetric  # noqa: E402

#: The participant's metric: more weight on the second class, diminishing returns.
METRIC = QuadraticMetric(np.array([0.35, 0.8]), np.array([[-0.35, 0.05], [0.05, -0.3]]))
#: A stopping tolerance no session of 100 answers reaches, so every session asks exactly ``--answers``.
TINY_TOLERANCE = 1e-6
#: Bearer token the benchmark's servers expose ``/metrics`` with (loopback only, thrown away at the end).
METRICS_TOKEN = "worker-hops-benchmark"
RESULTS = ROOT / "benchmarks" / "results" / "worker_hops.json"
FIRST_LAST = 10


def hops_study(answers: int) -> dict[str, Any]:
    """Active quadratic on two classes asking exactly ``answers`` questions, nothing else."""
    return {
        "name": f"worker hops: active quadratic k=2, {answers} answers",
        "task": "Decide whether a tumour is benign or malignant.",
        "class_names": ["benign", "malignant"],
        "population": "patients",
        "algorithm": "active_quadratic",
        "algorithm_params": {"max_queries": answers, "tolerance": TINY_TOLERANCE},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.655, 0.345]},
        "practice_queries": 0,
        "checks": False,
        "evaluation_queries": 0,
        "open_enrolment": True,
    }


@contextmanager
def database(postgres_url: str | None) -> Iterator[str]:
    """A fresh, migrated database URL (SQLite file in a temporary folder, or a throw-away PostgreSQL one)."""
    with ExitStack() as stack:
        if postgres_url:
            url = stack.enter_context(postgres_database(postgres_url, "elicit_hops"))
        else:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="worker-hops-"))
            url = f"sqlite:///{folder}/hops.db"
        upgrade_database(Settings(database_url=url))
        yield url


def new_study(url: str, answers: int) -> str:
    engine = make_engine(Settings(database_url=url))
    try:
        with make_sessionmaker(engine)() as db:
            return str(create_study(db, hops_study(answers)).id)
    finally:
        engine.dispose()


def choose(query: dict[str, Any]) -> str:
    first = np.asarray(query["first"]["rates"])
    second = np.asarray(query["second"]["rates"])
    return "first" if METRIC.prefers(first, second) else "second"


def run_session(client: httpx.Client, bases: list[str], study_id: str) -> list[float]:
    """One session answered to the end; answer ``i`` goes to ``bases[i % len(bases)]``. Seconds per answer."""
    created = client.post(f"{bases[0]}/api/v1/studies/{study_id}/sessions", json={"consent": True})
    created.raise_for_status()
    token = created.json()["token"]
    state = client.get(f"{bases[-1]}/api/v1/sessions/{token}").json()
    times = []
    while state["query"] is not None:
        base = bases[len(times) % len(bases)]
        body = {"seq": state["query"]["seq"], "preferred": choose(state["query"])}
        started = time.perf_counter()
        response = client.post(f"{base}/api/v1/sessions/{token}/answers", json=body)
        times.append(time.perf_counter() - started)
        response.raise_for_status()
        state = response.json()
    if state["status"] != "done":
        raise RuntimeError(f"session ended in status {state['status']!r}")
    return times


def resume_counts(client: httpx.Client, base: str) -> dict[str, float]:
    """The process's ``elicit_elicitor_resumes_total`` by source (empty if the server does not count them)."""
    response = client.get(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    counts: dict[str, float] = {}
    if response.status_code != 200:
        return counts
    for line in response.text.splitlines():
        if line.startswith("elicit_elicitor_resumes_total{"):
            labels, value = line.rsplit(" ", 1)
            counts[labels.split('source="', 1)[1].split('"', 1)[0]] = float(value)
    return counts


def summary(times: list[float]) -> dict[str, float]:
    ms = [1000.0 * t for t in times]
    return {
        "answers": len(ms),
        "mean_ms": statistics.fmean(ms),
        "median_ms": statistics.median(ms),
        "p90_ms": float(np.percentile(ms, 90)),
        "first_mean_ms": statistics.fmean(ms[:FIRST_LAST]),
        "last_mean_ms": statistics.fmean(ms[-FIRST_LAST:]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=100, help="questions per session")
    parser.add_argument("--rounds", type=int, default=2, help="sessions per mode (modes alternate)")
    parser.add_argument("--postgres-url", default=None, help="use a throw-away database on this server")
    parser.add_argument(
        "--modes", default="one,two", help="which modes to run: one (one worker), two (alternating), or both"
    )
    parser.add_argument("--quick", action="store_true", help="20 answers, one round")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    answers, rounds = (20, 1) if args.quick else (args.answers, args.rounds)
    load_before = os.getloadavg()
    modes = {"one": "one worker", "two": "two workers"}
    chosen = [modes[name] for name in args.modes.split(",")]
    times: dict[str, list[float]] = {mode: [] for mode in chosen}
    with database(args.postgres_url) as url:
        study_id = new_study(url, answers)
        env = {"DATABASE_URL": url, "METRICS_TOKEN": METRICS_TOKEN, "DATABASE_SCHEMA": None}
        with ExitStack() as stack:
            servers = [stack.enter_context(ServerProcess(env=env)) for _ in range(2)]
            bases = [server.url for server in servers]
            with httpx.Client(timeout=120) as client:
                for _ in range(rounds):
                    for mode in chosen:
                        times[mode] += run_session(
                            client, bases[:1] if mode == "one worker" else bases, study_id
                        )
                resumes = {base: resume_counts(client, base) for base in bases}
    results = {mode: summary(values) for mode, values in times.items()}
    ratio = (
        results["two workers"]["mean_ms"] / results["one worker"]["mean_ms"] if len(results) == 2 else None
    )
    report = {
        "database": "postgresql" if args.postgres_url else "sqlite",
        "answers_per_session": answers,
        "rounds": rounds,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "modes": results,
        "ratio_two_to_one": ratio,
        "resumes_by_process": list(resumes.values()),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"database {report['database']}, {answers} answers x {rounds} sessions per mode")
    print(f"load average before {load_before[0]:.1f}, after {report['load_average_after'][0]:.1f}\n")
    print("| mode | mean ms | median ms | p90 ms | first 10 ms | last 10 ms |")
    print("|---|---|---|---|---|---|")
    for mode, row in results.items():
        print(
            f"| {mode} | {row['mean_ms']:.1f} | {row['median_ms']:.1f} | {row['p90_ms']:.1f} | "
            f"{row['first_mean_ms']:.1f} | {row['last_mean_ms']:.1f} |"
        )
    if ratio is not None:
        print(f"\ntwo workers / one worker (means): {ratio:.2f} (bar: <= 2)")
    for base, counts in resumes.items():
        print(f"{base}: resumes {counts}")
    return 0 if ratio is None or ratio <= 2.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
