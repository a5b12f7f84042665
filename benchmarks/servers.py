"""Real uvicorn server processes and throw-away PostgreSQL databases, for the benchmarks and the tests.

The benchmarks import this as ``benchmarks.servers`` (their scripts put the project root on ``sys.path``)
and so do the tests (pytest runs with ``pythonpath = ["."]``): one way to start, probe and end a server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
#: The participant app; other factories (e.g. the bare endpoint of ``http_roundtrip.py``) are named as such.
APP_FACTORY = "app.main:create_app"
#: A server process must answer within this time after it is spawned (a loaded 2-core machine).
STARTUP_TIMEOUT_S = 90.0
#: Respawns on another port when the probed free port was taken before uvicorn could bind it.
BIND_RETRIES = 3


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ServerProcess:
    """``uvicorn --factory FACTORY`` on 127.0.0.1 (or ``command`` plus ``--host``/``--port``, e.g. ``elicit
    serve``), spawned at construction; `wait_ready` before use.

    ``env`` changes the inherited environment (``None`` removes a variable); ``PYTHONPATH`` is the project
    root. The server's stderr goes to ``log``, or else to a temporary file whose tail explains a failed
    start; a file, not a pipe, because a pipe nobody reads would block a server that logs a lot. Without
    a fixed ``port`` a free one is probed, and a start that lost it to another process is retried.
    As a context manager it is ready inside the block and stopped after it, with SIGKILL (as a crash)
    if ``kill_at_exit``.
    """

    def __init__(
        self,
        factory: str = APP_FACTORY,
        *,
        env: Mapping[str, str | None] | None = None,
        workers: int = 1,
        port: int | None = None,
        options: Sequence[str] = (),
        log: IO[Any] | None = None,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        kill_at_exit: bool = False,
        ready_path: str | None = "/",
        command: Sequence[str] | None = None,
    ) -> None:
        self.factory = factory
        self.ready_path = ready_path
        self.command = None if command is None else list(command)
        self.env = {**os.environ, "PYTHONPATH": str(ROOT)}
        for name, value in (env or {}).items():
            if value is None:
                self.env.pop(name, None)
            else:
                self.env[name] = value
        self.workers = workers
        self.options = list(options)
        self.startup_timeout = startup_timeout
        self.kill_at_exit = kill_at_exit
        self._fixed_port = port
        self._own_log = log is None
        self._log_target = log
        self._spawn()

    def _spawn(self) -> None:
        self.port = self._fixed_port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if self.command is not None:
            command = [*self.command, "--host", "127.0.0.1", "--port", str(self.port)]
        else:
            command = [sys.executable, "-m", "uvicorn", "--factory", self.factory, "--host", "127.0.0.1"]
            command += ["--port", str(self.port), "--workers", str(self.workers), "--log-level", "warning"]
        command += self.options
        self.log = tempfile.TemporaryFile() if self._log_target is None else self._log_target  # noqa: SIM115
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=self.log
        )

    def _stderr(self) -> str:
        if not self._own_log:
            return "(stderr went to the caller's log)"
        self.log.seek(0)
        text: str = self.log.read().decode(errors="replace")
        self.log.close()
        return text[-2000:]

    def _answers(self) -> bool:
        """True once the server is up: ``GET ready_path`` answers 200, or (no ``ready_path``) it accepts a
        TCP connection, which sends no request (uvicorn listens only after the app's start-up)."""
        if self.ready_path is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=2.0):
                    return True
            except OSError:
                return False
        try:
            return httpx.get(f"{self.url}{self.ready_path}", timeout=2.0).status_code == 200
        except httpx.TransportError:
            return False

    def wait_ready(self) -> ServerProcess:
        """Block until the server answers (`_answers`); raise `RuntimeError` if the process dies or takes
        too long."""
        deadline = time.monotonic() + self.startup_timeout
        respawns = 0
        while True:
            if self._answers():
                return self
            if self.process.poll() is not None:
                stderr = self._stderr()
                taken = "address already in use" in stderr.lower() and self._fixed_port is None
                if taken and respawns < BIND_RETRIES:
                    respawns += 1
                    self._spawn()
                    continue
                raise RuntimeError(f"{self.factory} exited with {self.process.returncode}: {stderr}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.factory} did not answer within {self.startup_timeout:.0f} s")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL: no shutdown handler runs, nothing is flushed that was not already committed."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        self._close_log()

    def stop(self) -> None:
        """SIGTERM (a graceful shutdown), SIGKILL if it has not ended within 20 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=20)
        self._close_log()

    def _close_log(self) -> None:
        if self._own_log:
            self.log.close()

    def __enter__(self) -> ServerProcess:
        try:
            return self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc_info: object) -> None:
        if self.kill_at_exit:
            self.kill()
        else:
            self.stop()


@contextmanager
def postgres_database(server_url: str, prefix: str) -> Iterator[str]:
    """A fresh database ``{prefix}_<random>`` on the PostgreSQL server of ``server_url``, dropped afterwards.

    Yields its URL. Connection errors propagate: an unreachable server fails the caller.
    """
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()
