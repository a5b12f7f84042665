"""HTTP benchmark of the participant app: accuracy over HTTP, answer round trip, resume cost.

Run: ``.venv/bin/python benchmarks/http_roundtrip.py`` (``--quick`` for a smoke run). It starts real
uvicorn processes on a temporary SQLite file and reports:

1. A full QPME k = 2 session driven over HTTP by an automated participant with a known quadratic metric,
   and the same elicitation run in-process (`elicitation.run`): both must give the same metric and error.
2. One answer round trip (POST answer -> next query with both confusion matrices) over HTTP: median and
   p99, against a bare FastAPI JSON endpoint (pydantic body in, small JSON out) served the same way in
   the same run; the target is a ratio <= 3.
3. Resuming a session with >= 2,000 logged answers after a server restart (SIGKILL, new process, first
   request for that session: log load + replay + stored-query checks), against the cached answer.

Results are printed and written to ``benchmarks/results/http_roundtrip.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.cli.web import upgrade_database  # noqa: E402
from app.db import make_engine, make_sessionmaker  # noqa: E402
from app.sessions import create_study  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.study_config import build_space, parse_study_config  # noqa: E402
from benchmarks.servers import ServerProcess  # noqa: E402
from elicitation import QuadraticMetric, run  # noqa: E402
from elicitation.evaluation import elicitation_errors  # noqa: E402

#: The participant's true metric: more weight on the second class, diminishing returns.
TRUE_METRIC = QuadraticMetric(np.array([0.35, 0.8]), np.array([[-0.35, 0.05], [0.05, -0.3]]))
ROUND_TRIP_TARGET = 3.0
RESUME_TARGET_MS = 100.0

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


def resume_study(n_classes: int, epsilon: float) -> dict[str, Any]:
    """A long study: QPME on many classes with a fine tolerance, so one session logs thousands of answers."""
    return {
        "name": f"benchmark: long QPME k={n_classes}",
        "task": "A long session for the resume benchmark.",
        "class_names": [f"class {i + 1}" for i in range(n_classes)],
        "algorithm": "qpme",
        "algorithm_params": {"epsilon": epsilon},
        "query_space": {"kind": "synthetic", "radius": round(0.9 / n_classes, 4)},
        "practice_queries": 0,
        "checks": True,
        "evaluation_queries": 100,
    }


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


def drive(
    client: httpx.Client, token: str, metric: Any, timings: list[float] | None = None
) -> dict[str, Any]:
    """Answer every query of a session with ``metric``; record each answer round trip (ms) in ``timings``."""
    state: dict[str, Any] = client.get(f"/api/v1/sessions/{token}").json()
    while state["query"] is not None:
        query = state["query"]
        body = {"seq": query["seq"], "preferred": choose(metric, query)}
        started = time.perf_counter()
        response = client.post(f"/api/v1/sessions/{token}/answers", json=body)
        elapsed = (time.perf_counter() - started) * 1000.0
        response.raise_for_status()
        state = response.json()
        if timings is not None and state["query"] is not None:
            timings.append(elapsed)
    return state


def new_session(client: httpx.Client, study_id: Any) -> str:
    response = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
    response.raise_for_status()
    token: str = response.json()["token"]
    return token


# -- the three measurements ---------------------------------------------------------------------------------


def measure(args: argparse.Namespace) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="http-roundtrip-"))
    settings = Settings(database_url=f"sqlite:///{workdir / 'bench.db'}", sqlite_synchronous=args.synchronous)
    upgrade_database(settings)
    engine = make_engine(settings)
    with make_sessionmaker(engine)() as db:
        accuracy_study = create_study(db, ACCURACY_STUDY)
        long_study = create_study(db, resume_study(args.resume_classes, args.resume_epsilon))
    engine.dispose()
    os.environ["SQLITE_SYNCHRONOUS"] = args.synchronous
    report: dict[str, Any] = {"sqlite_synchronous": args.synchronous, "cpu_count": os.cpu_count()}

    # Servers end with SIGKILL: the resume measurement below restarts after a crash, not a clean shutdown.
    app_env = {"DATABASE_URL": settings.database_url}
    with (
        ServerProcess(env=app_env, log=sys.stderr, kill_at_exit=True) as app_server,
        ServerProcess("benchmarks.http_roundtrip:bare_app", log=sys.stderr, kill_at_exit=True) as bare_server,
        httpx.Client(base_url=app_server.url) as client,
        httpx.Client(base_url=bare_server.url) as bare,
    ):
        # 1. accuracy over HTTP == in-process
        token = new_session(client, accuracy_study.id)
        final = drive(client, token, TRUE_METRIC)
        http_metric = QuadraticMetric(
            np.asarray(final["result"]["metric"]["a"]), np.asarray(final["result"]["metric"]["B"])
        )
        config = parse_study_config(ACCURACY_STUDY)
        space = build_space(config)
        from elicitation.qpme import qpme

        local = run(qpme(space.sphere, config.algorithm_params["epsilon"]), TRUE_METRIC.prefers)
        http_errors = elicitation_errors(TRUE_METRIC, http_metric)
        local_errors = elicitation_errors(TRUE_METRIC, local.metric)
        report["accuracy"] = {
            "http": {
                "a": http_errors.a,
                "B": http_errors.B,
                "elicitor_queries": final["result"]["num_queries"],
            },
            "in_process": {"a": local_errors.a, "B": local_errors.B, "elicitor_queries": local.num_queries},
            "identical_metric": bool(
                np.allclose(http_metric.a, local.metric.a, atol=1e-12)
                and np.allclose(http_metric.B, local.metric.B, atol=1e-12)
            ),
            "session_answers": final["progress"]["answered"],
            "evaluation_agreement": final["result"]["evaluation"],
        }

        # 2. answer round trip vs a bare endpoint, interleaved session by session so load affects both
        app_times: list[float] = []
        bare_times: list[float] = []
        while len(app_times) < args.round_trips:
            before = len(app_times)
            drive(client, new_session(client, accuracy_study.id), TRUE_METRIC, app_times)
            for seq in range(len(app_times) - before):
                started = time.perf_counter()
                bare.post("/answers", json={"seq": seq, "preferred": "first"}).raise_for_status()
                bare_times.append((time.perf_counter() - started) * 1000.0)
        report["round_trip_ms"] = {
            "app": {
                "median": statistics.median(app_times),
                "p99": percentile(app_times, 99),
                "n": len(app_times),
            },
            "bare": {
                "median": statistics.median(bare_times),
                "p99": percentile(bare_times, 99),
                "n": len(bare_times),
            },
        }
        report["round_trip_ms"]["ratio_median"] = (
            report["round_trip_ms"]["app"]["median"] / report["round_trip_ms"]["bare"]["median"]
        )

        # 3a. fill a long session (answers over HTTP, same path as a participant)
        long_token = new_session(client, long_study.id)
        warm_token = new_session(client, accuracy_study.id)
        rng = np.random.default_rng(0)
        long_metric = QuadraticMetric(
            rng.uniform(0.2, 1.0, size=args.resume_classes),
            -np.diag(rng.uniform(0.2, 1.0, size=args.resume_classes)),
        )
        state: dict[str, Any] = client.get(f"/api/v1/sessions/{long_token}").json()
        while state["query"] is not None and state["progress"]["answered"] < args.resume_answers:
            query = state["query"]
            body = {"seq": query["seq"], "preferred": choose(long_metric, query)}
            response = client.post(f"/api/v1/sessions/{long_token}/answers", json=body)
            response.raise_for_status()
            state = response.json()
        logged = state["progress"]["answered"]

    # 3b. restart (the server above was killed with SIGKILL) and time the first request of that session
    resume: list[float] = []
    cached: list[float] = []
    for _ in range(args.restarts):
        with (
            ServerProcess(env=app_env, log=sys.stderr, kill_at_exit=True) as server,
            httpx.Client(base_url=server.url) as client,
        ):
            client.get(f"/api/v1/sessions/{warm_token}").raise_for_status()  # imports, pools, first request
            started = time.perf_counter()
            first_state = client.get(f"/api/v1/sessions/{long_token}")
            resume.append((time.perf_counter() - started) * 1000.0)
            first_state.raise_for_status()
            assert first_state.json() == state, "a restarted server must show the same next query"
            started = time.perf_counter()
            client.get(f"/api/v1/sessions/{long_token}").raise_for_status()
            cached.append((time.perf_counter() - started) * 1000.0)
    floor_ms = replay_floor_ms(settings, long_study.id, args.restarts)
    report["resume"] = {
        "logged_answers": logged,
        "in_process_replay_floor_ms": floor_ms,
        "first_request_after_restart_ms": {"median": statistics.median(resume), "all": resume},
        "cached_request_ms": {"median": statistics.median(cached), "all": cached},
    }
    return report


def replay_floor_ms(settings: Settings, study_id: Any, repeats: int) -> float:
    """Median time of the bare `elicitation.replay` of the long session's elicitor answers (no DB, no app)."""
    from sqlalchemy import select

    from app.models import Answer, ElicitationSession, Study
    from app.sessions import SessionCache, effective_rows, elicitor_rows

    engine = make_engine(settings)
    with make_sessionmaker(engine)() as db:
        study = db.get(Study, study_id)
        session = db.scalars(select(ElicitationSession).where(ElicitationSession.study_id == study_id)).one()
        rows = db.scalars(select(Answer).where(Answer.session_id == session.id).order_by(Answer.seq)).all()
        runtime = SessionCache().runtime(study)
    engine.dispose()
    answers = [bool(row.elicitor_answer) for row in elicitor_rows(effective_rows(rows))]
    from elicitation import NumericalError, replay

    times = []
    for _ in range(max(1, repeats)):
        elicitor = runtime.spec.build(runtime.space, runtime.params)
        started = time.perf_counter()
        with contextlib.suppress(NumericalError):  # a session whose elicitor failed still replays to there
            replay(elicitor, answers)
        times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small numbers, for a smoke run")
    parser.add_argument("--round-trips", type=int, default=600, help="answer round trips to time")
    parser.add_argument("--resume-answers", type=int, default=2000, help="answers in the long session")
    parser.add_argument("--resume-classes", type=int, default=10)
    parser.add_argument("--resume-epsilon", type=float, default=1e-4)
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--synchronous", choices=["FULL", "NORMAL"], default="FULL")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "http_roundtrip.json")
    args = parser.parse_args(argv)
    if args.quick:
        args.round_trips, args.resume_answers, args.restarts = 60, 200, 1
    report = measure(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2))
    acc, rt, res = report["accuracy"], report["round_trip_ms"], report["resume"]
    print(f"SQLite synchronous={report['sqlite_synchronous']}, {report['cpu_count']} CPUs")
    print(
        f"accuracy: HTTP ||a-a^||={acc['http']['a']:.4g} ||B-B^||={acc['http']['B']:.4g} | in-process "
        f"||a-a^||={acc['in_process']['a']:.4g} ||B-B^||={acc['in_process']['B']:.4g} | identical metric: "
        f"{acc['identical_metric']} ({acc['http']['elicitor_queries']} elicitor queries, "
        f"{acc['session_answers']} answers in the session)"
    )
    print(
        f"round trip: app median {rt['app']['median']:.2f} ms, p99 {rt['app']['p99']:.2f} ms "
        f"(n={rt['app']['n']}); "
        f"bare median {rt['bare']['median']:.2f} ms, p99 {rt['bare']['p99']:.2f} ms; "
        f"ratio {rt['ratio_median']:.2f}x (target <= {ROUND_TRIP_TARGET:g}x)"
    )
    first = res["first_request_after_restart_ms"]["median"]
    print(
        f"resume: {res['logged_answers']} logged answers, first request after restart {first:.1f} ms "
        f"(target < {RESUME_TARGET_MS:g} ms), cached {res['cached_request_ms']['median']:.1f} ms; bare "
        f"elicitation.replay of its elicitor answers in-process: {res['in_process_replay_floor_ms']:.1f} ms"
    )
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
