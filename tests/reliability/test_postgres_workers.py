"""Scale-out: two server processes share one PostgreSQL database and serve any session interchangeably.

Each module run creates its own database (``elicit_rel_<random>``) on the ``TEST_POSTGRES_URL`` server,
migrates it with Alembic and drops it at the end. Without ``TEST_POSTGRES_URL`` the tests are skipped;
with it set and the server unreachable they fail (CI sets it).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from app_support import METRIC
from reliability_support import (
    POSTGRES_URL,
    RobustParticipant,
    choose,
    create_small_study,
    postgres_database,
    run_participants,
    servers,
)
from sqlalchemy import select

from app import sessions
from app.cli.web import upgrade_database
from app.codec import decode_metric
from app.db import make_engine, make_sessionmaker
from app.models import Answer, ElicitationSession, Result, SessionStatus
from app.sessions import SessionCache
from app.settings import Settings
from elicitation import run

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

CONCURRENT_PARTICIPANTS = 4
RACE_ROUNDS = 12
METRIC_ATOL = 1e-9


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[Settings, Any, list[str]]]:
    """A migrated throw-away PostgreSQL database, the small study in it, and two servers on it."""
    if not POSTGRES_URL:
        pytest.skip("TEST_POSTGRES_URL is not set")
    with postgres_database() as url:
        settings = Settings(database_url=url)
        upgrade_database(settings)
        study = create_small_study(settings)
        with servers(url, 2) as running:
            yield settings, study, [server.url for server in running]


def _new_session(client: httpx.Client, base: str, study: Any) -> str:
    response = client.post(f"{base}/api/v1/studies/{study.id}/sessions", json={"consent": True})
    assert response.status_code == 201, response.text
    token: str = response.json()["token"]
    return token


def test_one_participant_alternating_between_two_servers(cluster: tuple[Settings, Any, list[str]]) -> None:
    """Every request goes to the other process; each sees exactly what the previous one committed."""
    settings, study, (a, b) = cluster
    with httpx.Client(timeout=30) as client:
        token = _new_session(client, a, study)
        state = client.get(f"{b}/api/v1/sessions/{token}").json()
        bases = [a, b]
        turn = 0
        undone = False
        while state["query"] is not None:
            here, there = bases[turn % 2], bases[(turn + 1) % 2]
            turn += 1
            seq = state["query"]["seq"]
            response = client.post(
                f"{here}/api/v1/sessions/{token}/answers",
                json={"seq": seq, "preferred": choose(METRIC, state["query"])},
            )
            assert response.status_code == 200, response.text
            state = response.json()
            # The other process, whose cache is stale, must show exactly the same next state.
            assert client.get(f"{there}/api/v1/sessions/{token}").json() == state
            if not undone and state["progress"]["answered"] == 5:
                undone = True
                before = state
                undo = client.post(
                    f"{there}/api/v1/sessions/{token}/undo", json={"seq": state["query"]["seq"]}
                )
                assert undo.status_code == 200, undo.text
                assert undo.json()["progress"]["answered"] == 4
                # The re-shown question is the one answered last, on either process.
                assert client.get(f"{here}/api/v1/sessions/{token}").json() == undo.json()
                state = undo.json()
                first = state["query"]["first"]
                assert {"rates": first["rates"], "confusion": first["confusion"]} == _shown_at(
                    settings, token, before["query"]["seq"] - 1
                )
    assert state["status"] == "done"
    assert undone
    _check_sessions(settings, {token})


def _shown_at(settings: Settings, token: str, seq: int) -> Any:
    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as db:
            session = db.scalars(
                select(ElicitationSession).where(ElicitationSession.token_hash == sessions.hash_token(token))
            ).one()
            row = db.scalars(select(Answer).where(Answer.session_id == session.id, Answer.seq == seq)).one()
            assert row.shown is not None
            return row.shown["left"]
    finally:
        engine.dispose()


def test_concurrent_participants_on_both_servers(cluster: tuple[Settings, Any, list[str]]) -> None:
    """Four participants, each request to a randomly chosen process (seeded), all at the same time."""
    settings, study, urls = cluster
    participants = []
    for index in range(CONCURRENT_PARTICIPANTS):
        rng = random.Random(index)
        participants.append(RobustParticipant(lambda rng=rng: rng.choice(urls), str(study.id), METRIC))
    threads = run_participants(participants, sessions=2)
    for thread in threads:
        thread.join(timeout=240)
    assert not any(thread.is_alive() for thread in threads)
    assert [error for p in participants for error in p.seen.errors] == []
    tokens = {token for p in participants for token in p.seen.final_states}
    assert len(tokens) == 2 * CONCURRENT_PARTICIPANTS
    acknowledged = {token: answers for p in participants for token, answers in p.seen.answers.items()}
    _check_sessions(settings, tokens, acknowledged)


def test_double_submit_race_records_one_answer(cluster: tuple[Settings, Any, list[str]]) -> None:
    """Two threads post the same seq at once (to two processes, or to one): one row, the loser told so."""
    settings, study, (a, b) = cluster
    with httpx.Client(timeout=30) as client:
        token = _new_session(client, a, study)
        state = client.get(f"{a}/api/v1/sessions/{token}").json()
    outcomes: list[tuple[int, int]] = []
    for round_ in range(RACE_ROUNDS):
        if state["query"] is None:
            break
        seq = state["query"]["seq"]
        right = choose(METRIC, state["query"])
        wrong = "second" if right == "first" else "first"
        # Even rounds: the same answer twice (a double click); odd rounds: two tabs that disagree.
        answers = [right, right] if round_ % 2 == 0 else [right, wrong]
        targets = [a, b] if round_ % 3 != 2 else [a, a]
        responses = _post_together(
            [
                (f"{target}/api/v1/sessions/{token}/answers", {"seq": seq, "preferred": answer})
                for target, answer in zip(targets, answers, strict=True)
            ]
        )
        codes = sorted(response.status_code for response in responses)
        outcomes.append((seq, len(codes)))
        if answers[0] == answers[1]:
            assert codes == [200, 200]
            first, second = (response.json() for response in responses)
            assert first == second
        else:
            assert codes == [200, 409]
            conflict = next(r for r in responses if r.status_code == 409).json()
            assert conflict["error"] == "already_answered"
        with httpx.Client(timeout=30) as client:
            state = client.get(f"{b}/api/v1/sessions/{token}").json()
        assert state["progress"]["answered"] == seq + 1

    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as db:
            session = db.scalars(
                select(ElicitationSession).where(ElicitationSession.token_hash == sessions.hash_token(token))
            ).one()
            rows = db.scalars(
                select(Answer).where(Answer.session_id == session.id).order_by(Answer.seq)
            ).all()
    finally:
        engine.dispose()
    assert [row.seq for row in rows] == [seq for seq, _ in outcomes]
    assert len(outcomes) == RACE_ROUNDS


def _post_together(requests: list[tuple[str, dict[str, Any]]]) -> list[httpx.Response]:
    """POST every ``(url, body)`` from its own thread and client, released at the same instant."""
    barrier = threading.Barrier(len(requests))
    responses: list[httpx.Response | None] = [None] * len(requests)

    def post(index: int) -> None:
        url, body = requests[index]
        with httpx.Client(timeout=30) as own:
            barrier.wait()
            responses[index] = own.post(url, json=body)

    threads = [threading.Thread(target=post, args=(index,)) for index in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(response is not None for response in responses), "a racing request did not return"
    return [response for response in responses if response is not None]


def _check_sessions(
    settings: Settings, tokens: set[str], acknowledged: dict[str, dict[int, str]] | None = None
) -> None:
    """Contiguous logs, one result each, a clean replay, and the uninterrupted run's metric."""
    engine = make_engine(settings)
    cache = SessionCache()
    try:
        with make_sessionmaker(engine)() as db:
            for token in tokens:
                view = sessions.get_view(db, cache, token)
                assert view.status is SessionStatus.DONE
                rows = db.scalars(
                    select(Answer).where(Answer.session_id == view.session.id).order_by(Answer.seq)
                ).all()
                assert [row.seq for row in rows] == list(range(len(rows)))
                if acknowledged is not None:
                    assert {row.seq: row.preferred for row in rows} == acknowledged[token]
                results = db.scalars(select(Result).where(Result.session_id == view.session.id)).all()
                assert len(results) == 1
                runtime = cache.runtime(view.study)
                elicitor = runtime.elicitor(view.session.seed, view.session.algorithm_version)
                expected = run(elicitor, METRIC.prefers).metric
                stored = decode_metric(results[0].metric)
                np.testing.assert_allclose(stored.a, expected.a, atol=METRIC_ATOL)
                np.testing.assert_allclose(stored.B, expected.B, atol=METRIC_ATOL)
    finally:
        engine.dispose()
