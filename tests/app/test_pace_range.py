"""The stated minutes hold for at least 8 in 10 sessions, on simulated and on recorded sessions.

People's paces come from several generators, not from the pace prior alone: the issue's first-hand 10-20
s a question, slow readers (gamma around 22 s), a mix with one in five much slower, and the prior's own
log-normal. Each session's answers vary around its person's pace (gamma noise). A range is stated from a
dozen measured sessions (and, for the populations the prior is meant for, from none), then checked on
fresh sessions of the same population. Fast click-throughs and single sessions never set the pace.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from app_support import Participant, make_study, new_session
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.models import Answer, ElicitationSession, LogAction
from app.planning import (
    MIN_READING_SECONDS,
    Pace,
    minutes_range,
    session_paces,
    study_estimate,
    study_pace,
)
from elicitation import QuadraticMetric

#: The demo's fewest and most comparisons (evaluation pairs may end early).
FEWEST, MOST = 37, 40
COVERAGE = 0.8
POPULATIONS: dict[str, Callable[[np.random.Generator], float]] = {
    "10-20 s a question": lambda rng: float(rng.uniform(10.0, 20.0)),
    "slow readers": lambda rng: float(rng.gamma(9.0, 22.0 / 9.0)),
    "one in five much slower": lambda rng: 30.0 if rng.random() < 0.2 else float(rng.uniform(8.0, 14.0)),
    "the prior's own": lambda rng: float(rng.lognormal(math.log(12.0), 0.4)),
}


def _session_seconds(rng: np.random.Generator, person: float, comparisons: int) -> np.ndarray:
    """One session's answer times around its person's pace (gamma, coefficient of variation 1/2)."""
    return np.clip(rng.gamma(4.0, person / 4.0, comparisons), 0.5, 600.0)


def _coverage(pace: Pace, population: Callable[[np.random.Generator], float], seed: int) -> float:
    rng = np.random.default_rng(seed)
    low, high = minutes_range(FEWEST, MOST, pace)
    held = 0
    for _ in range(400):
        minutes = _session_seconds(rng, population(rng), int(rng.integers(FEWEST, MOST + 1))).sum() / 60.0
        held += low <= minutes <= high
    return held / 400


@pytest.mark.parametrize("name", POPULATIONS)
def test_a_range_from_a_dozen_measured_sessions_holds_for_8_in_10(name: str) -> None:
    population = POPULATIONS[name]
    rng = np.random.default_rng(7)
    measured = [float(_session_seconds(rng, population(rng), MOST).mean()) for _ in range(12)]
    assert _coverage(study_pace(measured), population, seed=11) >= COVERAGE


@pytest.mark.parametrize("name", ["10-20 s a question", "the prior's own"])
def test_before_any_measurement_the_prior_range_holds_for_the_people_it_describes(name: str) -> None:
    assert _coverage(study_pace([]), POPULATIONS[name], seed=3) >= COVERAGE


def test_one_session_never_sets_the_pace() -> None:
    prior = study_pace([])
    assert prior.median == pytest.approx(12.0) and prior.low < 8.0 and prior.high > 19.0
    # A 2.4 s click-through that slipped past the reading filter, or one slow session: a quarter at most.
    for pace in (2.4, 45.0):
        moved = study_pace([pace]).median
        held = min(max(pace, MIN_READING_SECONDS), 60.0)
        assert abs(math.log(moved / 12.0)) == pytest.approx(abs(math.log(held / 12.0)) / 4)
    # Set by the coordinator: that median, and the spread people have.
    assert study_pace([], seconds_per_query=20.0).median == pytest.approx(20.0)


def _page_session(client: TestClient, token: str, rng: np.random.Generator, person: float) -> None:
    """A person answering every question on the participant page, page timer around their pace."""
    participant = Participant(QuadraticMetric(np.array([0.6, 0.8]), np.array([[-0.4, 0.1], [0.1, -0.3]])))
    state = client.get(f"/api/v1/sessions/{token}").json()
    while state["query"] is not None:
        seconds = float(_session_seconds(rng, person, 1)[0])
        form = {
            "seq": str(state["query"]["seq"]),
            "preferred": participant.choose(state["query"]),
            "time_on_page_ms": str(round(seconds * 1000)),
            "hidden_ms": "0",
        }
        assert client.post(f"/sessions/{token}/answers", data=form, follow_redirects=False).status_code == 303
        state = client.get(f"/api/v1/sessions/{token}").json()


def _recorded_minutes(app: Any, tokens: set[str]) -> list[float]:
    """Each later session's minutes as recorded in the answer log (the page timers of its answers)."""
    with app.state.sessionmaker() as db:
        rows = db.execute(
            select(Answer.session_id, Answer.time_on_page_ms)
            .join(ElicitationSession, Answer.session_id == ElicitationSession.id)
            .where(Answer.action == LogAction.ANSWER.value)
        ).all()
    per_session: dict[Any, float] = {}
    for session_id, milliseconds in rows:
        per_session[session_id] = per_session.get(session_id, 0.0) + milliseconds / 60_000
    return [per_session[key] for key in tokens]


def test_recorded_sessions_take_the_minutes_their_consent_page_stated(client: TestClient, app: Any) -> None:
    study = make_study(app, algorithm="lpme", algorithm_params={"epsilon": 0.2, "cycles": 1})
    rng = np.random.default_rng(5)
    population = POPULATIONS["10-20 s a question"]
    for _ in range(8):
        _page_session(client, new_session(client, study), rng, population(rng))
    # A coordinator's quick click-through is not a pace: it changes nothing.
    with app.state.sessionmaker() as db:
        before = session_paces(db, study.id)
    _page_session(client, new_session(client, study), rng, 1.5)
    with app.state.sessionmaker() as db:
        assert session_paces(db, study.id) == before
        told = study_estimate(db, app.state.session_cache, study)
    page = client.get(f"/studies/{study.id}/join").text
    assert f"{told.minutes_low} to {told.minutes_high} minutes" in page
    with app.state.sessionmaker() as db:
        known = set(db.scalars(select(ElicitationSession.id)))
    for _ in range(10):
        _page_session(client, new_session(client, study), rng, population(rng))
    with app.state.sessionmaker() as db:
        later = set(db.scalars(select(ElicitationSession.id))) - known
    minutes = _recorded_minutes(app, later)
    held = sum(told.minutes_low <= value <= told.minutes_high for value in minutes)
    assert held / len(minutes) >= COVERAGE, (told, minutes)
