"""HTTP benchmark of the participant app: accuracy over HTTP, answer round trips, resume after a restart.

Run: ``.venv/bin/python benchmarks/http_roundtrip.py`` (``--quick`` for a smoke run, which the test suite
runs). It starts real uvicorn processes on a temporary SQLite file and reports:

1. **Accuracy.** A QPME k = 2 session driven over HTTP by an automated participant with a known quadratic
   metric, and the elicitor that session runs (its own displayed elicitor, built from its stored seed and
   version) driven in-process by the same metric: both must give the same metric.
2. **Round trip.** One answer (POST answer -> next query with both confusion matrices) over HTTP, median
   and p99, for QPME k = 2 and for the default elicitor (active quadratic k = 2, the demo's settings),
   against a bare FastAPI JSON endpoint (pydantic body in, a query-sized JSON out) served the same way,
   each app answer followed by a bare request so that both see the same load. Each is timed twice: with
   answers sent at once, and with a pause of ``--think-ms`` before every app answer and every bare request,
   as a person looks at a question (the app computes an active elicitor's possible next questions
   meanwhile, `app.sessions.speculation`; a machine idle for that long also answers its next request
   slower, which the bare endpoint's paused requests measure). Targets: app / bare at most
   `ROUND_TRIP_TARGET` for QPME.
3. **Resume.** Active-elicitor sessions with exactly ``--resume-answers`` logged answers (each still
   waiting for its next answer), then the server is killed (SIGKILL) and restarted: the first request for
   the session after one ``/healthz`` request (target `RESUME_TARGET_MS`), the first request of a fresh
   process that has served nothing at all ("cold"), and the same request once cached.

Every non-timing check (same metric, answers reached, same state after the restart) raises
`BenchmarkCheckError` when false, so the script exits non-zero; timing targets are printed as met or not
(timings are noisy on a shared machine). Results go to ``benchmarks/results/http_roundtrip.json`` with the
date, the machine, the load average and the commit; ``benchmarks/readme_measured.py`` writes the README's
Measured section from that file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.cli.web import upgrade_database  # noqa: E402
from app.db import make_engine, make_sessionmaker  # noqa: E402
from app.sessions import SessionCache, create_study  # noqa: E402
from app.settings import Settings  # noqa: E402
from benchmarks.servers import ServerProcess  # noqa: E402
from elicitation import QuadraticMetric, run  # noqa: E402
from elicitation.evaluation import elicitation_errors  # noqa: E402

#: The participant's true metric: more weight on the second class, diminishing returns.
TRUE_METRIC = QuadraticMetric(np.array([0.35, 0.8]), np.array([[-0.35, 0.05], [0.05, -0.3]]))
ROUND_TRIP_TARGET = 2.0
RESUME_TARGET_MS = 25.0
#: A stopping tolerance no session reaches, so the long sessions ask as many questions as they are told.
TINY_TOLERANCE = 1e-6
RESULTS = ROOT / "benchmarks" / "results" / "http_roundtrip.json"
#: The largest question budget a study may set (`max_queries`).
MAX_QUESTIONS = 1000
#: The demo's question space, as a synthetic sphere (the class priors of the breast-cancer data).
DEMO_SPACE: dict[str, Any] = {"kind": "synthetic", "radius": 0.2, "priors": [0.655, 0.345]}

ACCURACY_STUDY: dict[str, Any] = {
    "name": "benchmark: QPME k=2",
    "task": "Decide whether a tumour is benign or malignant.",
    "class_names": ["benign", "malignant"],
    "population": "patients",
    "algorithm": "qpme",
    "algorithm_params": {"epsilon": 0.01},
    "query_space": {"kind": "synthetic", "radius": 0.2},
    "practice_queries": 2,
    "checks": True,
    "evaluation_queries": 15,
}


def active_study(max_queries: int, tolerance: float | None = None, practice: int = 0) -> dict[str, Any]:
    """The default elicitor (active quadratic, k = 2) on the demo's priors; elicitor questions only, after
    ``practice`` practice pairs."""
    params: dict[str, Any] = {"max_queries": max_queries}
    if tolerance is not None:
        params["tolerance"] = tolerance
    return {
        "name": f"benchmark: active quadratic k=2, at most {max_queries} questions",
        "task": "Decide whether a tumour is benign or malignant.",
        "class_names": ["benign", "malignant"],
        "population": "patients",
        "algorithm": "active_quadratic",
        "algorithm_params": params,
        "query_space": DEMO_SPACE,
        "practice_queries": practice,
        "checks": False,
        "evaluation_queries": 0,
    }


def long_study(answers: int) -> dict[str, Any]:
    """A study whose sessions are still waiting for an elicitor answer after ``answers`` logged answers.

    Its question budget is one more than ``answers``, at most `MAX_QUESTIONS`; practice pairs make up the
    rest of a longer log (a 1,000-answer log: 1 practice pair and 999 elicitor answers).
    """
    budget = min(answers + 1, MAX_QUESTIONS)
    return active_study(budget, TINY_TOLERANCE, practice=answers + 1 - budget)


class BenchmarkCheckError(RuntimeError):
    """A check the benchmark states (same metric, answers reached, same state) is false."""


def check(condition: bool, message: str) -> None:
    """Raise `BenchmarkCheckError` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise BenchmarkCheckError(message)


# -- the bare comparison endpoint (served by uvicorn --factory benchmarks.http_roundtrip:bare_app) ---------


class BareAnswerIn(BaseModel):
    seq: int
    preferred: str


def bare_app() -> Any:
    """A FastAPI app with one JSON endpoint and no database: the floor of an HTTP round trip."""
    from fastapi import FastAPI

    app = FastAPI()
    payload = {
        "status": "active",
        "phase": "questions",
        "progress": {"answered": 1, "estimated_total": 70},
        "query": {
            "seq": 1,
            "practice": False,
            "first": {"rates": [0.41, 0.62], "confusion": [[20.5, 29.5], [19.0, 31.0]]},
            "second": {"rates": [0.55, 0.47], "confusion": [[27.5, 22.5], [26.5, 23.5]]},
        },
        "result": None,
    }

    @app.get("/")
    def ready() -> dict[str, bool]:
        return {"ok": True}

    @app.post("/answers")
    def answer(body: BareAnswerIn) -> dict[str, Any]:
        return {**payload, "query": {**payload["query"], "seq": body.seq + 1}}

    return app


# -- helpers ----------------------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def choose(metric: Any, query: dict[str, Any]) -> str:
    first = np.asarray(query["first"]["rates"])
    second = np.asarray(query["second"]["rates"])
    return "first" if metric.prefers(first, second) else "second"


def answer(
    client: httpx.Client, token: str, metric: Any, state: dict[str, Any]
) -> tuple[dict[str, Any], float]:
    """Answer the state's query with ``metric``: (the next state, the round trip in ms)."""
    query = state["query"]
    body = {"seq": query["seq"], "preferred": choose(metric, query)}
    started = time.perf_counter()
    response = client.post(f"/api/v1/sessions/{token}/answers", json=body)
    elapsed = (time.perf_counter() - started) * 1000.0
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result, elapsed


def new_session(client: httpx.Client, study_id: Any) -> str:
    response = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
    response.raise_for_status()
    token: str = response.json()["token"]
    return token


def state_of(client: httpx.Client, token: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/sessions/{token}")
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def timed_get(client: httpx.Client, path: str) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    response = client.get(path)
    return response, (time.perf_counter() - started) * 1000.0


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "p99": percentile(values, 99), "n": len(values)}


def machine() -> dict[str, Any]:
    """Where and when this ran: date, CPU, cores, load average, Python, commit."""
    cpu = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    names = (
        [line for line in cpuinfo.read_text().splitlines() if line.startswith("model name")]
        if cpuinfo.exists()
        else []
    )
    if names:
        cpu = names[0].split(":", 1)[1].strip()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = None
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "commit": commit,
    }


# -- the measurements ---------------------------------------------------------------------------------------


def session_row(settings: Settings, study_id: Any) -> tuple[Any, Any]:
    """The study and its one session (seed and version are what the reference elicitor is built from)."""
    from sqlalchemy import select

    from app.models import ElicitationSession, Study

    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as db:
            study = db.get(Study, study_id)
            session = db.scalars(
                select(ElicitationSession).where(ElicitationSession.study_id == study_id)
            ).one()
            db.expunge_all()
            return study, session
    finally:
        engine.dispose()


def measure_accuracy(client: httpx.Client, settings: Settings, study_id: Any) -> dict[str, Any]:
    """A QPME session over HTTP against its own elicitor in-process: the same metric, the same questions."""
    token = new_session(client, study_id)
    state = state_of(client, token)
    while state["query"] is not None:
        state, _ = answer(client, token, TRUE_METRIC, state)
    check(state["status"] == "done", f"the accuracy session ended as {state['status']!r}, not done")
    http_metric = QuadraticMetric(
        np.asarray(state["result"]["metric"]["a"]), np.asarray(state["result"]["metric"]["B"])
    )
    study, session = session_row(settings, study_id)
    reference = SessionCache().runtime(study).elicitor(session.seed, session.algorithm_version)
    local = run(reference, TRUE_METRIC.prefers)
    identical = bool(
        np.allclose(http_metric.a, local.metric.a, rtol=0.0, atol=1e-12)
        and np.allclose(http_metric.B, local.metric.B, rtol=0.0, atol=1e-12)
    )
    same_count = int(state["result"]["num_queries"]) == int(local.num_queries)
    check(identical, "the metric elicited over HTTP differs from the session's own elicitor run in-process")
    check(same_count, "the session over HTTP asked another number of elicitor questions than in-process")
    http_errors = elicitation_errors(TRUE_METRIC, http_metric)
    local_errors = elicitation_errors(TRUE_METRIC, local.metric)
    return {
        "algorithm_version": session.algorithm_version,
        "http": {"a": http_errors.a, "B": http_errors.B, "elicitor_queries": state["result"]["num_queries"]},
        "in_process": {"a": local_errors.a, "B": local_errors.B, "elicitor_queries": local.num_queries},
        "identical_metric": identical,
        "session_answers": state["progress"]["answered"],
    }


def measure_round_trips(
    client: httpx.Client, bare: httpx.Client, study_id: Any, count: int, think_s: float
) -> dict[str, Any]:
    """``count`` answer round trips over whole sessions, each followed by one bare request, with a pause of
    ``think_s`` seconds before every answer and every bare request."""
    app_times: list[float] = []
    bare_times: list[float] = []
    while len(app_times) < count:
        token = new_session(client, study_id)
        state = state_of(client, token)
        while state["query"] is not None and len(app_times) < count:
            time.sleep(think_s)
            state, elapsed = answer(client, token, TRUE_METRIC, state)
            if state["query"] is None:
                continue  # the last answer also finishes the session: not a plain round trip
            app_times.append(elapsed)
            time.sleep(think_s)
            started = time.perf_counter()
            bare.post("/answers", json={"seq": len(bare_times), "preferred": "first"}).raise_for_status()
            bare_times.append((time.perf_counter() - started) * 1000.0)
    app, floor = summary(app_times), summary(bare_times)
    return {
        "app": app,
        "bare": floor,
        "ratio_median": app["median"] / floor["median"],
        "think_ms": think_s * 1000.0,
    }


def fill(client: httpx.Client, study_id: Any, answers: int) -> tuple[str, dict[str, Any]]:
    """A session answered exactly ``answers`` times over HTTP, still waiting for the next answer."""
    rng = np.random.default_rng(answers)
    metric = QuadraticMetric(rng.uniform(0.2, 1.0, size=2), -np.diag(rng.uniform(0.2, 1.0, size=2)))
    token = new_session(client, study_id)
    state = state_of(client, token)
    while state["query"] is not None and state["progress"]["answered"] < answers:
        state, _ = answer(client, token, metric, state)
    reached = state["progress"]["answered"]
    check(reached == answers, f"the long session stopped at {reached} answers, not {answers}")
    check(state["query"] is not None, f"the long session of {answers} answers has no next question")
    return token, state


def measure_resume(env: dict[str, str], token: str, state: dict[str, Any], restarts: int) -> dict[str, Any]:
    """First requests for the session in fresh processes: after one health check, and cold."""
    warm: list[float] = []
    cold: list[float] = []
    cached: list[float] = []
    path = f"/api/v1/sessions/{token}"
    for _ in range(restarts):
        with (
            ServerProcess(env=env, log=sys.stderr, kill_at_exit=True, ready_path=None) as server,
            httpx.Client(base_url=server.url, timeout=120.0) as client,
        ):
            response, elapsed = timed_get(client, path)
            response.raise_for_status()
            check(response.json() == state, "a restarted server (cold) shows another state of the session")
            cold.append(elapsed)
        with (
            ServerProcess(env=env, log=sys.stderr, kill_at_exit=True, ready_path=None) as server,
            httpx.Client(base_url=server.url, timeout=120.0) as client,
        ):
            client.get("/healthz").raise_for_status()
            response, elapsed = timed_get(client, path)
            response.raise_for_status()
            check(response.json() == state, "a restarted server shows another state of the session")
            warm.append(elapsed)
            response, elapsed = timed_get(client, path)
            response.raise_for_status()
            cached.append(elapsed)
    return {
        "logged_answers": state["progress"]["answered"],
        "first_request_after_health_check_ms": {"median": statistics.median(warm), "all": warm},
        "cold_first_request_ms": {"median": statistics.median(cold), "all": cold},
        "cached_request_ms": {"median": statistics.median(cached), "all": cached},
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="http-roundtrip-"))
    settings = Settings(database_url=f"sqlite:///{workdir / 'bench.db'}", sqlite_synchronous=args.synchronous)
    upgrade_database(settings)
    engine = make_engine(settings)
    with make_sessionmaker(engine)() as db:
        accuracy_study = create_study(db, ACCURACY_STUDY)
        default_study = create_study(db, active_study(24))
        long_studies = {n: create_study(db, long_study(n)) for n in args.resume_answers}
    engine.dispose()
    report: dict[str, Any] = {
        "machine": machine(),
        "sqlite_synchronous": args.synchronous,
        "quick": args.quick,
    }
    app_env = {"DATABASE_URL": settings.database_url, "SQLITE_SYNCHRONOUS": args.synchronous}
    # Servers end with SIGKILL: the resume measurement below restarts after a crash, not a clean shutdown.
    with (
        ServerProcess(env=app_env, log=sys.stderr, kill_at_exit=True) as app_server,
        ServerProcess("benchmarks.http_roundtrip:bare_app", log=sys.stderr, kill_at_exit=True) as bare_server,
        httpx.Client(base_url=app_server.url, timeout=120.0) as client,
        httpx.Client(base_url=bare_server.url, timeout=120.0) as bare,
    ):
        report["accuracy"] = measure_accuracy(client, settings, accuracy_study.id)
        think_s = args.think_ms / 1000.0
        report["round_trip_ms"] = {
            f"{name}{suffix}": measure_round_trips(client, bare, study.id, args.round_trips, pause)
            for suffix, pause in (("", 0.0), ("_paused", think_s))
            for name, study in (("qpme", accuracy_study), ("active", default_study))
        }
        filled = {n: fill(client, long_studies[n].id, n) for n in args.resume_answers}
    report["resume"] = {
        str(n): measure_resume(app_env, token, state, args.restarts) for n, (token, state) in filled.items()
    }
    report["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return report


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0.0:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def run_checked(measure_report: Callable[[], dict[str, Any]], out: Path) -> dict[str, Any] | None:
    """Run a benchmark's measurement and write its report to ``out`` (JSON); None, after printing which
    check failed, when one did (the benchmark then exits non-zero)."""
    try:
        report = measure_report()
    except BenchmarkCheckError as exc:
        print(f"CHECK FAILED: {exc}", file=sys.stderr)
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return report


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="small numbers, for a smoke run (the test suite)"
    )
    parser.add_argument(
        "--round-trips", type=int, default=600, help="answer round trips to time, per elicitor"
    )
    parser.add_argument(
        "--resume-answers", default="300,1000", help="logged answers of the long sessions (comma-separated)"
    )
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument(
        "--think-ms",
        type=_non_negative,
        default=100.0,
        help="the pause before each answer and bare request of the paused round trips, in ms",
    )
    parser.add_argument("--synchronous", choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.resume_answers = [int(n) for n in str(args.resume_answers).split(",")]
    if args.quick:
        args.round_trips, args.resume_answers, args.restarts = 30, [12], 1
    report = run_checked(lambda: measure(args), args.out)
    if report is None:
        return 1
    where = report["machine"]
    print(
        f"{where['date']}, {where['cpu']} ({where['cpu_count']} CPUs), load average "
        f"{where['load_average'][0]} before / {report['load_average_after'][0]} after, "
        f"commit {where['commit']}, "
        f"SQLite synchronous={report['sqlite_synchronous']}"
    )
    acc = report["accuracy"]
    print(
        f"accuracy: identical metric over HTTP and in-process ({acc['algorithm_version']}, "
        f"{acc['http']['elicitor_queries']} elicitor questions, {acc['session_answers']} answers in the "
        f"session): ||a-a^||={acc['http']['a']:.4g}, ||B-B^||={acc['http']['B']:.4g}"
    )
    for name, rt in report["round_trip_ms"].items():
        target = f" (target <= {ROUND_TRIP_TARGET:g}x: {verdict(rt['ratio_median'] <= ROUND_TRIP_TARGET)})"
        print(
            f"round trip, {name}: app median {rt['app']['median']:.2f} ms, p99 {rt['app']['p99']:.2f} ms "
            f"(n={rt['app']['n']}); bare median {rt['bare']['median']:.2f} ms; "
            f"ratio {rt['ratio_median']:.2f}x, pause before each request {rt['think_ms']:g} ms"
            + (target if name == "qpme" else "")
        )
    for n, res in report["resume"].items():
        warm = res["first_request_after_health_check_ms"]["median"]
        print(
            f"resume, active session of {n} answers (reached): first request after a health check "
            f"{warm:.1f} ms (target <= {RESUME_TARGET_MS:g} ms: {verdict(warm <= RESUME_TARGET_MS)}), cold "
            f"{res['cold_first_request_ms']['median']:.1f} ms, "
            f"cached {res['cached_request_ms']['median']:.1f} ms"
        )
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
