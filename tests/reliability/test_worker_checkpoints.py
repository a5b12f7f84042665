"""Two server processes on one database serve an active-elicitor session alternately, from checkpoints.

Every answer goes to the other process than the one before, so each process's cache is always one answer
behind; each must continue from the session's checkpoint (counted in its ``/metrics``) rather than replay
the log, show exactly the state the other process returned, and end with the result a full replay gives.
Runs on a SQLite file, and on PostgreSQL when ``TEST_POSTGRES_URL`` is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from app_support import METRIC
from reliability_support import POSTGRES_URL, choose, create_small_study, postgres_database
from sqlalchemy import select

from app import repository as repo
from app import sessions
from app.cli.web import upgrade_database
from app.codec import decode_metric
from app.db import make_engine, make_sessionmaker
from app.models import ElicitationSession, Result
from app.sessions import SessionCache, effective_rows, elicitor_rows, replay_verified
from app.settings import Settings
from benchmarks.servers import ServerProcess
from elicitation import Done

pytestmark = pytest.mark.slow

METRICS_TOKEN = "worker-checkpoint-test"
#: An active study of a dozen questions, with practice, checks and evaluation pairs around them.
ACTIVE = {"algorithm": "active_quadratic", "algorithm_params": {"max_queries": 12}}


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, sqlite_file_settings: Settings) -> Iterator[str]:
    if request.param == "sqlite":
        yield sqlite_file_settings.database_url
        return
    if not POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    with postgres_database() as url:
        upgrade_database(Settings(database_url=url))
        yield url


def _resumes(client: httpx.Client, base: str) -> dict[str, float]:
    response = client.get(f"{base}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    assert response.status_code == 200, response.text
    counts = {}
    for line in response.text.splitlines():
        if line.startswith("elicit_elicitor_resumes_total{"):
            labels, value = line.rsplit(" ", 1)
            counts[labels.split('source="', 1)[1].split('"', 1)[0]] = float(value)
    return counts


def test_answers_alternating_between_two_processes_continue_from_checkpoints(database_url: str) -> None:
    settings = Settings(database_url=database_url)
    study = create_small_study(settings, **ACTIVE)
    env = {"DATABASE_URL": database_url, "DATABASE_SCHEMA": None, "METRICS_TOKEN": METRICS_TOKEN}
    with ExitStack() as stack, httpx.Client(timeout=60) as client:
        a, b = (stack.enter_context(ServerProcess(env=env)).url for _ in range(2))
        created = client.post(f"{a}/api/v1/studies/{study.id}/sessions", json={"consent": True})
        assert created.status_code == 201, created.text
        token = created.json()["token"]
        state = client.get(f"{a}/api/v1/sessions/{token}").json()
        turn = 0
        while state["query"] is not None:
            here, there = (a, b) if turn % 2 == 0 else (b, a)
            turn += 1
            response = client.post(
                f"{here}/api/v1/sessions/{token}/answers",
                json={"seq": state["query"]["seq"], "preferred": choose(METRIC, state["query"])},
            )
            assert response.status_code == 200, response.text
            state = response.json()
            assert client.get(f"{there}/api/v1/sessions/{token}").json() == state
        assert state["status"] == "done"
        counts = {base: _resumes(client, base) for base in (a, b)}
    # The first process built the new session's first state (nothing to continue from yet); after that
    # neither process replayed: each continued from the checkpoint the other one had just saved.
    assert counts[a].get("replay", 0) == 1, counts
    assert counts[b].get("replay", 0) == 0, counts
    # Each of the 12 elicitor answers left the other process one answer behind.
    assert counts[a].get("checkpoint", 0) + counts[b].get("checkpoint", 0) >= 12, counts
    _check_result(settings, token)


def _check_result(settings: Settings, token: str) -> None:
    """The stored result is the one a full replay of the log (every stored query checked) gives."""
    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as db:
            session = db.scalars(
                select(ElicitationSession).where(ElicitationSession.token_hash == sessions.hash_token(token))
            ).one()
            stored = decode_metric(
                db.scalars(select(Result).where(Result.session_id == session.id)).one().metric
            )
            runtime = SessionCache().runtime_of(db, session.study_id)
            rows = elicitor_rows(effective_rows(repo.log_entries(db, session.id)))
        replayed: Any = replay_verified(
            lambda: runtime.elicitor(session.seed, session.algorithm_version), rows
        )
    finally:
        engine.dispose()
    assert isinstance(replayed, Done)
    assert len(rows) == 12
    assert replayed.result.metric.to_dict() == stored.to_dict()
