"""Unauthenticated body flood: participants' answer time while anonymous clients post 10 MB bodies.

Run: ``.venv/bin/python benchmarks/body_flood.py`` (``--seconds 5`` for a quicker run). It serves the app
(one uvicorn worker, temporary SQLite file), opens a QPME study and lets a few automated participants
answer sessions in a loop: with the server otherwise idle, before and after a phase in which
``--attackers`` processes post 10 MB bodies without credentials (or with an unknown bearer token) to the
back office's JSON endpoints over raw sockets, as fast as the server lets them. Bar: the participants'
median answer time under the flood stays within 1.5x the idle median; every flood request is refused
(401, or the connection closed after it) without the server reading the body. Results are printed
and written to ``benchmarks/results/body_flood.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import select
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.back_office import admin_token, save_result  # noqa: E402
from benchmarks.load import Measured, load_study, participant, serve  # noqa: E402

BAR = 1.5
BODY_BYTES = 10_000_000
TARGETS = ("/api/v1/studies/import", "/api/v1/studies")
CHUNK = b"x" * 65536


def attacker(url: str, seconds: float, index: int, results: Any) -> None:
    """Post 10 MB bodies in a loop for ``seconds``; count answers by status (0: connection dropped)."""
    parts = urlsplit(url)
    deadline = time.monotonic() + seconds
    counts: dict[int, int] = {}
    sent_total = 0
    attempt = 0
    while time.monotonic() < deadline:
        path = TARGETS[attempt % len(TARGETS)]
        auth = "Authorization: Bearer elk_unknown-token\r\n" if attempt % 2 else ""
        attempt += 1
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {parts.hostname}\r\nContent-Type: application/json\r\n"
            f"{auth}Content-Length: {BODY_BYTES}\r\nConnection: close\r\n\r\n"
        ).encode()
        status = 0
        try:
            with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
                sock.sendall(head)
                sent = 0
                while sent < BODY_BYTES and not select.select([sock], [], [], 0)[0]:
                    sock.sendall(CHUNK)
                    sent += len(CHUNK)
                sent_total += sent
                status = int(sock.recv(64).split(b" ", 2)[1])
        except (OSError, IndexError, ValueError):
            status = -1  # the server closed the socket while the body was still being sent
        counts[status] = counts.get(status, 0) + 1
    results.put({"attacker": index, "requests": attempt, "statuses": counts, "bytes_sent": sent_total})


async def participants(url: str, study_id: str, n: int, seconds: float) -> Measured:
    """``n`` concurrent automated participants, each finishing sessions one after another for ``seconds``."""
    out = Measured()
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(base_url=url, timeout=httpx.Timeout(60.0)) as client:

        async def loop() -> None:
            while time.monotonic() < deadline:
                await participant(client, study_id, out)

        started = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(n)))
        out.seconds = time.perf_counter() - started
    return out


def open_study(url: str, token: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
        created = client.post("/api/v1/studies", json=load_study(0.05))
        created.raise_for_status()
        study_id: str = created.json()["id"]
        client.patch(f"/api/v1/studies/{study_id}", json={"status": "open"}).raise_for_status()
    return study_id


def measure(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="elicit-flood-") as directory:
        database_url = f"sqlite:///{Path(directory) / 'flood.db'}"
        token = admin_token(database_url)
        env = {"DATABASE_URL": database_url, "SECRET_KEY": "benchmark-secret"}
        with serve("app.main:create_app", 1, env) as url:
            study_id = open_study(url, token)
            asyncio.run(participants(url, study_id, args.participants, 2.0))  # warm-up
            idle = asyncio.run(participants(url, study_id, args.participants, args.seconds))
            queue: Any = multiprocessing.Queue()
            flooders = [
                multiprocessing.Process(target=attacker, args=(url, args.seconds + 1.0, index, queue))
                for index in range(args.attackers)
            ]
            for process in flooders:
                process.start()
            time.sleep(0.5)
            flooded = asyncio.run(participants(url, study_id, args.participants, args.seconds))
            attacks = [queue.get(timeout=60) for _ in flooders]
            for process in flooders:
                process.join(timeout=30)
            after = asyncio.run(participants(url, study_id, args.participants, args.seconds))
    # The idle figure brackets the flood (before and after), so a drift in the machine's load evens out.
    idle.latencies_ms += after.latencies_ms
    idle.requests += after.requests
    idle.errors += after.errors
    idle.seconds += after.seconds
    idle_median = statistics.median(idle.latencies_ms)
    flood_median = statistics.median(flooded.latencies_ms)
    statuses: dict[str, int] = {}
    for attack in attacks:
        for status, count in attack["statuses"].items():
            statuses[str(status)] = statuses.get(str(status), 0) + count
    return {
        "participants": args.participants,
        "attackers": args.attackers,
        "body_bytes": BODY_BYTES,
        "idle": idle.summary(),
        "flood": flooded.summary(),
        "ratio_median": round(flood_median / idle_median, 2),
        "bar": BAR,
        "passed": flood_median <= BAR * idle_median and flooded.errors == 0,
        "flood_requests": sum(attack["requests"] for attack in attacks),
        "flood_statuses": statuses,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each phase")
    parser.add_argument("--participants", type=int, default=2)
    parser.add_argument("--attackers", type=int, default=4)
    args = parser.parse_args(argv)
    result = measure(args)
    return save_result("body_flood", result)


if __name__ == "__main__":
    sys.exit(main())
