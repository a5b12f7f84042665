"""Closing a large SQLite study while participants of another study answer.

Run: ``.venv/bin/python benchmarks/close_study.py`` (``--sessions 500`` for a quicker run). It serves the
app (one uvicorn worker, temporary SQLite file with ``synchronous=FULL``), opens two studies, fills the
first with ``--sessions`` finished sessions of 77 logged answers each (written straight into the database,
shaped like real log rows), lets ``--participants`` automated participants answer the second study in a
loop, and closes the first (``PATCH {"status": "closed", "confirm": true}``, which keeps a snapshot
archive). Reported: how long the close took, every answer given in the other study while it ran (failures,
p50/p99; the participants start a second before it), the server's peak memory before and after, and
the stored snapshot's size. Bars: 0 failed answers, p99 during the close < 1 s, memory bounded.
Results go to ``benchmarks/results/close_study.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import sqlalchemy as sa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.models import Answer, ElicitationSession, Result  # noqa: E402
from benchmarks.back_office import admin_token, save_result  # noqa: E402
from benchmarks.load import Measured, load_study, participant  # noqa: E402
from benchmarks.servers import APP_FACTORY, ServerProcess  # noqa: E402

ROWS_PER_SESSION = 77
P99_BAR_MS = 1000.0


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _log_row(session_id: uuid.UUID, seq: int, rng: np.random.Generator, now: datetime) -> dict[str, Any]:
    first, second = rng.uniform(0.3, 0.9, 2).round(6).tolist(), rng.uniform(0.3, 0.9, 2).round(6).tolist()
    confusion = [[int(x) for x in rng.integers(0, 60, 2)] for _ in range(2)]
    return {
        "session_id": session_id,
        "seq": seq,
        "action": "answer",
        "phase": "elicitation",
        "phase_index": seq,
        "query": {
            "first": first,
            "second": second,
            "search": "lpme",
            "kind": "sphere",
            "coordinate": 1,
            "step": seq,
        },
        "shown": {
            "left": {"rates": first, "confusion": confusion},
            "right": {"rates": second, "confusion": confusion},
        },
        "swapped": bool(seq % 2),
        "preferred": "first",
        "elicitor_answer": True,
        "tie_break": None,
        "check": None,
        "time_on_page_ms": 4000 + seq,
        "hidden_ms": 0,
        "server_elapsed_ms": 4100 + seq,
        "undoes_seq": None,
        "undone_at": None,
        "created_at": now,
    }


def fill(database_url: str, study_id: str, sessions: int) -> int:
    """Write ``sessions`` finished sessions with their logs and results into the study."""
    engine = sa.create_engine(database_url)
    session_table, answer_table, result_table = (
        ElicitationSession.__table__,
        Answer.__table__,
        Result.__table__,
    )
    rng = np.random.default_rng(0)
    now = datetime.now(UTC)
    rows = 0
    with engine.begin() as connection:
        for start in range(0, sessions, 100):
            session_rows, answer_rows, result_rows = [], [], []
            for _ in range(min(100, sessions - start)):
                session_id = uuid.uuid4()
                session_rows.append(
                    {
                        "id": session_id,
                        "study_id": uuid.UUID(study_id),
                        "token_hash": secrets.token_hex(32),
                        "participant_code": None,
                        "seed": int(rng.integers(0, 2**31)),
                        "algorithm": "qpme",
                        "algorithm_version": "1",
                        "status": "done",
                        "completion_code": secrets.token_hex(5),
                        "created_at": now,
                        "consented_at": now,
                        "finished_at": now,
                    }
                )
                answer_rows += [_log_row(session_id, seq, rng, now) for seq in range(ROWS_PER_SESSION)]
                metric = {
                    "type": "quadratic",
                    "a": [0.6, 0.8],
                    "B": [[-0.3, 0.0], [0.0, -0.3]],
                    "require_nsd": True,
                }
                result_rows.append(
                    {
                        "session_id": session_id,
                        "metric": metric,
                        "num_queries": ROWS_PER_SESSION,
                        "details": {},
                        "evaluation": {},
                        "checks": {},
                        "summary": "",
                        "created_at": now,
                    }
                )
            connection.execute(session_table.insert(), session_rows)
            connection.execute(answer_table.insert(), answer_rows)
            connection.execute(result_table.insert(), result_rows)
            rows += len(answer_rows)
    engine.dispose()
    return rows


async def answer_while(url: str, study_id: str, n: int, stop: threading.Event) -> Measured:
    out = Measured()
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(60.0)) as client:

        async def loop() -> None:
            while not stop.is_set():
                await participant(client, study_id, out)

        await asyncio.gather(*(loop() for _ in range(n)))
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="elicit-close-") as directory:
        database_url = f"sqlite:///{Path(directory) / 'close.db'}"
        token = admin_token(database_url)
        env = {"DATABASE_URL": database_url, "SECRET_KEY": "benchmark-secret"}
        options = ["--no-access-log", "--timeout-keep-alive", "75"]
        with ServerProcess(APP_FACTORY, env=env, options=options) as server:
            url, pid = server.url, server.process.pid
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=url, headers=headers, timeout=600) as admin:
                ids = []
                for _ in range(2):
                    created = admin.post("/api/v1/studies", json=load_study(0.05))
                    created.raise_for_status()
                    ids.append(created.json()["id"])
                    admin.patch(f"/api/v1/studies/{ids[-1]}", json={"status": "open"}).raise_for_status()
                big, other = ids
                log_rows = fill(database_url, big, args.sessions)
                admin.get(f"/api/v1/studies/{big}/dashboard").raise_for_status()  # warm the page cache
                before_mb = peak_rss_mb(pid)
                stop = threading.Event()
                answers: list[Measured] = []
                runner = threading.Thread(
                    target=lambda: answers.append(
                        asyncio.run(answer_while(url, other, args.participants, stop))
                    )
                )
                runner.start()
                time.sleep(1.0)  # participants are answering when the close starts
                started = time.perf_counter()
                closed = admin.patch(f"/api/v1/studies/{big}", json={"status": "closed", "confirm": True})
                close_s = time.perf_counter() - started
                stop.set()
                runner.join()
                after_mb = peak_rss_mb(pid)
                snapshots = admin.get(f"/api/v1/studies/{big}/snapshots").json()["snapshots"]
                size = len(admin.get(f"/api/v1/studies/{big}/snapshots/{snapshots[0]['id']}").content)
    during = answers[0]
    summary = during.summary()
    return {
        "sessions": args.sessions,
        "log_rows": log_rows,
        "close_status": closed.status_code,
        "close_s": round(close_s, 2),
        "answers_during_close": summary,
        "failed_answers": during.errors,
        "problems": during.problems[:5],
        "server_peak_rss_mb_before": round(before_mb, 1),
        "server_peak_rss_mb_after": round(after_mb, 1),
        "snapshot_json_mb": round(size / 1e6, 1),
        "passed": closed.status_code == 200 and during.errors == 0 and summary["p99_ms"] < P99_BAR_MS,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2700)
    parser.add_argument("--participants", type=int, default=4)
    args = parser.parse_args(argv)
    result = measure(args)
    return save_result("close_study", result)


if __name__ == "__main__":
    sys.exit(main())
