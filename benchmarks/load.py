"""Load benchmark: N concurrent automated participants completing QPME sessions over HTTP.

Run: ``nice -n 19 .venv/bin/python benchmarks/load.py`` (``--quick`` for a smoke run,
``--participants 10,50,200``, ``--backends sqlite:1,postgres:1,postgres:2``). For every backend
(database and number of uvicorn worker processes) and every N it:

1. creates a fresh database (a SQLite file, or a PostgreSQL database ``elicit_load_<random>`` on
   ``--postgres-url``, dropped afterwards), migrates it and creates a QPME k = 2 study (coarse
   ``epsilon``, no practice, checks or evaluation pairs, so every answer is an elicitor answer);
2. serves it with ``uvicorn --workers W`` on 127.0.0.1 and lets N asyncio participants (one shared
   ``httpx.AsyncClient``) each create a session and answer until it is done, as fast as they can;
3. serves the bare FastAPI endpoint of ``benchmarks/http_roundtrip.py`` (pydantic body in, a query-sized
   JSON out, no database) with the same W and lets N clients send ``BARE_REQUESTS_PER_CLIENT`` requests
   each, back to back.

It reports answers/s, p50/p99 latency of an answer round trip and errors (any non-2xx, any transport
error, any session not finished) for both, and the ratio app/bare. Everything is bounded: N sessions of
a known length per run and ``--run-timeout`` seconds per run (a timeout counts as errors). Loopback only.
Results go to stdout (a Markdown table) and ``benchmarks/results/load.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

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

#: The participants' metric: more weight on the second class, diminishing returns.
METRIC = QuadraticMetric(np.array([0.35, 0.8]), np.array([[-0.35, 0.05], [0.05, -0.3]]))
DEFAULT_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
STARTUP_TIMEOUT_S = 120.0
#: Server keep-alive (uvicorn's default is 5 s). Starved of CPU, a client may wait longer than 5 s before
#: reusing a connection, and a request sent just as the server closes it fails with a ReadError.
KEEP_ALIVE_S = 75
#: Requests per bare client (the app's clients send one session's worth, ~46 at epsilon 0.2).
BARE_REQUESTS_PER_CLIENT = 15


def load_study(epsilon: float) -> dict[str, Any]:
    """QPME on two classes; nothing but elicitor questions, so answers/s measures the session engine."""
    return {
        "name": f"load benchmark: QPME k=2, epsilon {epsilon}",
        "task": "Decide whether a tumour is benign or malignant.",
        "class_names": ["benign", "malignant"],
        "population": "patients",
        "algorithm": "qpme",
        "algorithm_params": {"epsilon": epsilon},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.655, 0.345]},
        "practice_queries": 0,
        "checks": False,
        "evaluation_queries": 0,
    }


@contextmanager
def serve(factory: str, workers: int, env: dict[str, str], log: IO[Any] | None = None) -> Iterator[str]:
    """``uvicorn --factory FACTORY --workers W`` on a free loopback port until the block ends (SIGTERM).

    The server's stderr (warnings and tracebacks of failed requests) goes to ``log`` (default: discarded
    unless the server fails to start).
    """
    options = ["--no-access-log", "--timeout-keep-alive", str(KEEP_ALIVE_S)]
    with ServerProcess(
        factory, env=env, workers=workers, options=options, log=log, startup_timeout=STARTUP_TIMEOUT_S
    ) as server:
        if workers > 1:
            time.sleep(3.0)  # let every worker finish importing before the clock starts
        yield server.url


@contextmanager
def database(backend: str, postgres_url: str) -> Iterator[str]:
    """A fresh, empty database URL for one run."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="elicit-load-") as directory:
            yield f"sqlite:///{Path(directory) / 'load.db'}"
        return
    with postgres_database(postgres_url, "elicit_load") as url:
        yield url


@dataclass
class Measured:
    requests: int = 0
    errors: int = 0
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    retries: int = 0

    def fail(self, problem: str) -> None:
        self.errors += 1
        if len(self.problems) < 20:
            self.problems.append(problem)

    def summary(self) -> dict[str, float]:
        lat = self.latencies_ms or [float("nan")]
        return {
            "requests": self.requests,
            "errors": self.errors,
            "retries": self.retries,
            "seconds": round(self.seconds, 3),
            "per_second": round(self.requests / self.seconds, 1) if self.seconds else 0.0,
            "p50_ms": round(float(np.percentile(lat, 50)), 2),
            "p99_ms": round(float(np.percentile(lat, 99)), 2),
            "mean_ms": round(statistics.fmean(lat), 2),
        }


def choose(query: dict[str, Any]) -> str:
    first = np.asarray(query["first"]["rates"])
    second = np.asarray(query["second"]["rates"])
    return "first" if METRIC.prefers(first, second) else "second"


async def post_retrying(client: httpx.AsyncClient, path: str, body: dict[str, Any], out: Measured) -> Any:
    """POST, retried once if the connection broke before a response (as browsers do for a reused
    connection). Answers are idempotent: the same ``(seq, preferred)`` is recorded once either way."""
    try:
        return await client.post(path, json=body)
    except (httpx.ReadError, httpx.RemoteProtocolError):
        out.retries += 1
        return await client.post(path, json=body)


async def post_answer(
    client: httpx.AsyncClient, token: str, body: dict[str, Any], out: Any
) -> tuple[dict[str, Any] | None, float]:
    """POST one answer (`post_retrying`): the next state, or None once the failure is recorded with
    ``out.fail``; and the round trip in ms."""
    started = time.perf_counter()
    response = await post_retrying(client, f"/api/v1/sessions/{token}/answers", body, out)
    elapsed = (time.perf_counter() - started) * 1000.0
    if response.status_code != 200:
        out.fail(f"answer {body['seq']}: {response.status_code} {response.text[:200]}")
        return None, elapsed
    state: dict[str, Any] = response.json()
    return state, elapsed


async def participant(client: httpx.AsyncClient, study_id: str, out: Measured) -> None:
    """One session from creation to the thank-you state; every answer's round trip is timed."""
    try:
        created = await client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
        if created.status_code != 201:
            out.fail(f"create: {created.status_code} {created.text[:200]}")
            return
        token = created.json()["token"]
        response = await client.get(f"/api/v1/sessions/{token}")
        state = response.json()
        while state["query"] is not None:
            body = {"seq": state["query"]["seq"], "preferred": choose(state["query"])}
            state, elapsed = await post_answer(client, token, body, out)
            if state is None:
                return
            out.latencies_ms.append(elapsed)
            out.requests += 1
        if state["status"] != "done":
            out.fail(f"session ended as {state['status']}")
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        out.fail(f"{type(exc).__name__}: {exc}")


async def bare_client(client: httpx.AsyncClient, requests: int, out: Measured) -> None:
    try:
        for seq in range(requests):
            started = time.perf_counter()
            response = await post_retrying(client, "/answers", {"seq": seq, "preferred": "first"}, out)
            elapsed = (time.perf_counter() - started) * 1000.0
            if response.status_code != 200:
                out.fail(f"bare: {response.status_code}")
                return
            out.latencies_ms.append(elapsed)
            out.requests += 1
    except httpx.HTTPError as exc:
        out.fail(f"bare {type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Participants:
    study_id: str

    async def __call__(self, client: httpx.AsyncClient, out: Measured) -> None:
        await participant(client, self.study_id, out)


@dataclass(frozen=True)
class BareClients:
    requests: int

    async def __call__(self, client: httpx.AsyncClient, out: Measured) -> None:
        await bare_client(client, self.requests, out)


async def drive(url: str, n: int, timeout: float, make: Any) -> Measured:
    out = Measured()
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=httpx.Timeout(120.0)) as client:
        started = time.perf_counter()
        tasks = [asyncio.create_task(make(client, out)) for _ in range(n)]
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
            out.fail("run timeout")
        out.seconds = time.perf_counter() - started
    return out


def run_backend(backend: str, workers: int, ns: list[int], args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for n in ns:
        with database(backend, args.postgres_url) as url:
            settings = Settings(database_url=url)
            upgrade_database(settings)
            engine = make_engine(settings)
            with make_sessionmaker(engine)() as db:
                study_id = str(create_study(db, load_study(args.epsilon)).id)
            engine.dispose()
            with (
                open(args.server_log, "a") as log,
                serve("app.main:create_app", workers, {"DATABASE_URL": url}, log) as app_url,
            ):
                app = asyncio.run(drive(app_url, n, args.run_timeout, Participants(study_id)))
        # The bare floor needs fewer requests to be measured well; the same concurrency N matters more.
        per_client = min(BARE_REQUESTS_PER_CLIENT, max(1, app.requests // n) if app.requests else 1)
        with serve("benchmarks.http_roundtrip:bare_app", workers, {}) as bare_url:
            bare = asyncio.run(drive(bare_url, n, args.run_timeout, BareClients(per_client)))
        a, b = app.summary(), bare.summary()
        row = {
            "backend": backend,
            "workers": workers,
            "participants": n,
            "app": a,
            "bare": b,
            "throughput_ratio": round(b["per_second"] / a["per_second"], 2) if a["per_second"] else None,
            "p50_ratio": round(a["p50_ms"] / b["p50_ms"], 2) if b["p50_ms"] else None,
            "load_average": [round(x, 1) for x in os.getloadavg()],
            "problems": app.problems + bare.problems,
        }
        rows.append(row)
        for problem in row["problems"]:
            print(f"    error: {problem}", flush=True)
        print(
            f"{backend:8s} W={workers} N={n:4d}: {a['per_second']:7.1f} answers/s, "
            f"p50 {a['p50_ms']:8.1f} ms, "
            f"p99 {a['p99_ms']:8.1f} ms, errors {a['errors']} (retried {a['retries']}); "
            f"bare {b['per_second']:7.1f}/s, "
            f"p50 {b['p50_ms']:7.1f} ms (load {row['load_average'][0]})",
            flush=True,
        )
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| database | workers | N | answers | answers/s | p50 ms | p99 ms | errors | bare req/s "
        "| bare p50 ms | bare p99 ms | bare/app throughput | app/bare p50 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        a, b = row["app"], row["bare"]
        lines.append(
            f"| {row['backend']} | {row['workers']} | {row['participants']} | {a['requests']} "
            f"| {a['per_second']} | {a['p50_ms']} | {a['p99_ms']} | {a['errors']} | {b['per_second']} "
            f"| {b['p50_ms']} | {b['p99_ms']} "
            f"| {row['throughput_ratio']} | {row['p50_ratio']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--participants", default="10,50,200", help="comma-separated N (default 10,50,200)")
    parser.add_argument(
        "--backends", default="sqlite:1,postgres:1,postgres:2", help="DATABASE:WORKERS, comma-separated"
    )
    parser.add_argument(
        "--epsilon", type=float, default=0.2, help="QPME search tolerance (coarse: short runs)"
    )
    parser.add_argument("--postgres-url", default=os.environ.get("TEST_POSTGRES_URL", DEFAULT_POSTGRES_URL))
    parser.add_argument("--run-timeout", type=float, default=600.0, help="seconds per run before giving up")
    parser.add_argument(
        "--server-log", type=Path, default=Path(tempfile.gettempdir()) / "elicit-load-server.log"
    )
    parser.add_argument("--quick", action="store_true", help="N = 5 on SQLite only (smoke test)")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks" / "results" / "load.json")
    args = parser.parse_args(argv)
    ns = [5] if args.quick else [int(x) for x in args.participants.split(",")]
    backends = ["sqlite:1"] if args.quick else args.backends.split(",")
    rows: list[dict[str, Any]] = []
    started = time.monotonic()
    for spec in backends:
        backend, workers = spec.split(":")
        if backend not in ("sqlite", "postgres"):
            parser.error(f"unknown backend {backend!r}")
        rows += run_backend(backend, int(workers), ns, args)
    table = markdown(rows)
    print()
    print(table)
    errors = sum(row["app"]["errors"] + row["bare"]["errors"] for row in rows)
    report = {
        "epsilon": args.epsilon,
        "cpus": os.cpu_count(),
        "total_seconds": round(time.monotonic() - started, 1),
        "rows": rows,
        "markdown": table,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(f"\n{len(rows)} runs in {report['total_seconds']} s; errors: {errors}; written to {args.output}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
