"""Durability: SQLite settings, and a server SIGKILLed at random moments under concurrent participants.

The crash test runs real uvicorn processes on one SQLite file. While six automated participants answer
over the JSON API, the serving process is killed with SIGKILL at seeded random moments; a replacement
process takes over and the participants retry whatever request the kill interrupted. (The replacements
are all started before the first kill, so the schedule measures crashes, not interpreter start-up.)
Afterwards the database must hold exactly the acknowledged answers, every session must replay to the
state its participant last saw, and every elicited metric must equal an uninterrupted in-process run of
the same participant.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from typing import Any

import numpy as np
import pytest
from app_support import METRIC
from reliability_support import RobustParticipant, Server, create_small_study, run_participants
from sqlalchemy import event, select, text

from app import sessions
from app.codec import decode_metric
from app.db import make_engine, make_sessionmaker
from app.main import create_app
from app.models import Answer, AnswerChannel, ElicitationSession, Result, SessionStatus
from app.settings import Settings
from elicitation import run

#: The crash schedule is reproducible: the same seed gives the same pauses between kills.
CRASH_SEED = 20261125
KILLS = 4
PARTICIPANTS = 6
#: A kill comes this long (uniform, seconds) after the replacement server is ready.
KILL_DELAY_S = (0.3, 1.5)
METRIC_ATOL = 1e-9


def test_sqlite_connections_are_durable(sqlite_file_settings: Settings) -> None:
    """WAL, synchronous=FULL (default) and foreign keys on every connection the app opens."""
    engine = make_engine(sqlite_file_settings)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert connection.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
            assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1
            assert connection.execute(text("PRAGMA busy_timeout")).scalar() >= 1000
    finally:
        engine.dispose()
    normal = make_engine(
        Settings(database_url=sqlite_file_settings.database_url, sqlite_synchronous="NORMAL")
    )
    try:
        with normal.connect() as connection:
            assert connection.execute(text("PRAGMA synchronous")).scalar() == 1
    finally:
        normal.dispose()


def test_sqlite_foreign_keys_are_enforced(sqlite_file_settings: Settings) -> None:
    engine = make_engine(sqlite_file_settings)
    try:
        with make_sessionmaker(engine)() as db:
            db.add(Answer(session_id=uuid.uuid4(), seq=0, action="answer"))
            with pytest.raises(Exception, match="FOREIGN KEY"):
                db.commit()
    finally:
        engine.dispose()


def test_each_answer_is_one_transaction(sqlite_file_settings: Settings) -> None:
    """Answering writes its log row (and, at the end, the result and status) in one commit per request."""
    study = create_small_study(sqlite_file_settings)
    app = create_app(sqlite_file_settings)
    commits: list[int] = []
    event.listen(app.state.engine, "commit", lambda _conn: commits.append(1))
    try:
        with app.state.sessionmaker() as db:
            _session, token = sessions.create_session(db, app.state.session_cache, study.id, consented=True)
        done = False
        answers = 0
        while not done:
            with app.state.sessionmaker() as db:
                view = sessions.get_view(db, app.state.session_cache, token)
                before = len(commits)
                if view.comparison is None:
                    done = True
                    continue
                after = sessions.submit_answer(
                    db,
                    app.state.session_cache,
                    token,
                    seq=view.next_seq,
                    preferred="first",
                    channel=AnswerChannel.API,
                )
                answers += 1
                # The answer row alone, or the last answer's row and then the result in a second commit.
                assert len(commits) - before in (1, 2)
                if len(commits) - before == 2:
                    assert after.status is SessionStatus.DONE
        with app.state.sessionmaker() as db:
            rows = db.scalars(select(Answer)).all()
            assert len(rows) == answers
            assert db.scalars(select(Result)).one() is not None
    finally:
        app.state.engine.dispose()


@pytest.mark.slow
def test_sigkilled_server_loses_no_acknowledged_answer(sqlite_file_settings: Settings) -> None:
    study = create_small_study(sqlite_file_settings)
    url = sqlite_file_settings.database_url
    rng = np.random.default_rng(CRASH_SEED)
    started = time.monotonic()
    # Every replacement is spawned up front: a restart then costs no import time, only the kill matters.
    pool = [Server(url) for _ in range(KILLS + 1)]
    try:
        for server in pool:
            server.wait_ready()
    except RuntimeError:
        for server in pool:
            server.stop()
        raise
    current = [pool[0]]
    participants = [
        RobustParticipant(lambda: current[0].url, str(study.id), METRIC) for _ in range(PARTICIPANTS)
    ]
    stop = threading.Event()
    threads = run_participants(participants, sessions=2, until=stop)
    kills = 0
    answers_at_kill: list[int] = []

    def acknowledged_count() -> int:
        # list() copies each dict in one C call, so a participant adding a session cannot break the sum.
        return sum(len(answers) for p in participants for answers in list(p.seen.answers.values()))

    try:
        # The schedule starts once every participant is mid-session (a loaded machine may take seconds).
        deadline = time.monotonic() + 60
        while not all(any(list(p.seen.answers.values())) for p in participants):
            assert time.monotonic() < deadline, "participants did not start answering"
            time.sleep(0.05)
        for standby in pool[1:]:
            time.sleep(float(rng.uniform(*KILL_DELAY_S)))
            victim = current[0]
            current[0] = standby
            victim.kill()
            kills += 1
            answers_at_kill.append(acknowledged_count())
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in threads), "a participant did not finish"
    finally:
        stop.set()
        for server in pool:
            server.stop()
    duration = time.monotonic() - started

    errors = [error for p in participants for error in p.seen.errors]
    assert errors == []
    acknowledged = {token: answers for p in participants for token, answers in p.seen.answers.items()}
    finals = {token: state for p in participants for token, state in p.seen.final_states.items()}
    total = sum(len(answers) for answers in acknowledged.values())
    retries = sum(p.seen.retries for p in participants)
    assert kills == KILLS
    # The kills fell while participants were answering (the count grew between kills, and after the last).
    assert answers_at_kill[0] > 0 and total > answers_at_kill[-1]
    assert retries > 0, "no request was ever interrupted by a kill"
    print(
        f"\ncrash test: {kills} SIGKILLs, {len(finals)} sessions, {total} acknowledged answers, "
        f"{retries} retried requests, {duration:.1f} s"
    )

    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    app = create_app(sqlite_file_settings)  # a fresh process-like app: empty cache, every state replayed
    try:
        _check_database(app, acknowledged, finals)
    finally:
        app.state.engine.dispose()


def _check_database(app: Any, acknowledged: dict[str, dict[int, str]], finals: dict[str, Any]) -> None:
    cache = app.state.session_cache
    with app.state.sessionmaker() as db:
        known = {sessions.hash_token(token): token for token in acknowledged}
        for session in db.scalars(select(ElicitationSession)).all():
            rows = db.scalars(
                select(Answer).where(Answer.session_id == session.id).order_by(Answer.seq)
            ).all()
            token = known.get(session.token_hash)
            if token is None:
                # A session whose creation was acknowledged to nobody (killed before the 201): untouched.
                assert rows == []
                continue
            # Every acknowledged answer exactly once, in order, and nothing that was not acknowledged.
            assert [row.seq for row in rows] == list(range(len(rows)))
            assert {row.seq: row.preferred for row in rows} == acknowledged[token]
            assert all(row.action == "answer" and row.undone_at is None for row in rows)
            assert session.status == SessionStatus.DONE.value
            results = db.scalars(select(Result).where(Result.session_id == session.id)).all()
            assert len(results) == 1

            # The session replays (stored queries checked) to exactly what its participant last saw.
            view = sessions.get_view(db, cache, token)
            assert view.to_api() == finals[token]

            # The elicited metric equals an uninterrupted in-process run of the same participant.
            runtime = cache.runtime(session.study)
            elicitor = runtime.elicitor(session.seed, session.algorithm_version)
            expected = run(elicitor, METRIC.prefers).metric
            stored = decode_metric(results[0].metric)
            np.testing.assert_allclose(stored.a, expected.a, atol=METRIC_ATOL)
            np.testing.assert_allclose(stored.B, expected.B, atol=METRIC_ATOL)
        assert len(finals) == len(acknowledged)
