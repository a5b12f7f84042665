"""Plainly new screens: a session's consecutive screens look different, a classifier keeps its side from one
screen to the next, and its final comparisons are never decided by dominance; sessions recorded before
keep their script."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from app_support import make_study, new_session
from fastapi.testclient import TestClient

from app import repository as repo
from app.algorithms import REGISTRY
from app.codec import decode_query
from app.sessions.displayed import DISPLAY_MARK, build_session_elicitor, fresh_screens
from app.sessions.tokens import load_session
from elicitation import QuadraticMetric, run
from elicitation.display import DisplayGrid, displayed
from elicitation.oracles import LogisticOracle
from elicitation.rates import SyntheticSpace

METRIC = QuadraticMetric(np.array([0.35, 0.8]), np.array([[-0.35, 0.05], [0.05, -0.3]]))
ACTIVE = {
    "algorithm": "active_quadratic",
    "algorithm_params": {"max_queries": 20},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.65, 0.35]},
    "practice_queries": 2,
    "dominance_checks": 1,
    "repeat_checks": 1,
    "evaluation_queries": 10,
}


def _screens(app: Any, token: str, client: TestClient) -> tuple[list[Any], list[tuple[np.ndarray, ...]]]:
    """Answer a whole session noisily over the API; its log rows and each screen's (left, right) rates."""
    rng = np.random.default_rng(0)
    state = client.get(f"/api/v1/sessions/{token}").json()
    while state["query"] is not None:
        query = state["query"]
        first, second = np.asarray(query["first"]["rates"]), np.asarray(query["second"]["rates"])
        prefers = METRIC.prefers(first, second) != (rng.random() < 0.1)
        answer = {"seq": query["seq"], "preferred": "first" if prefers else "second"}
        state = client.post(f"/api/v1/sessions/{token}/answers", json=answer).json()
    with app.state.sessionmaker() as db:
        session = load_session(db, token)
        assert session.algorithm_version.endswith(DISPLAY_MARK)
        rows = list(repo.log_rows(db, session.id))
    screens = []
    for row in rows:
        query = decode_query(row.query)
        screens.append((query.second, query.first) if row.swapped else (query.first, query.second))
    return rows, screens


@pytest.mark.parametrize("session", range(2))
def test_a_session_keeps_classifiers_on_their_side_and_shows_plainly_new_screens(
    app: Any, session: int
) -> None:
    # Every session draws its own seed, so each run and each parameter sees other questions.
    study = make_study(app, **ACTIVE)
    client = TestClient(app)
    rows, screens = _screens(app, new_session(client, study), client)
    grid = DisplayGrid.from_priors([0.65, 0.35])
    switches = look_alike = 0
    for (left, right), (before_left, before_right) in zip(screens[1:], screens[:-1], strict=True):
        switches += grid.same(left, before_right) or grid.same(right, before_left)
        look_alike += bool(grid.distance(left, right, before_left, before_right) < 3.0)
    assert switches == 0
    # The repeat check shows an earlier question again (declared); every other screen is plainly new.
    repeats = sum(row.phase == "check" and (row.check or {}).get("type") == "repeat" for row in rows)
    assert look_alike <= repeats
    evaluation = [screen for screen, row in zip(screens, rows, strict=True) if row.phase == "evaluation"]
    assert not any(grid.dominated(*screen) for screen in evaluation)


def test_sessions_recorded_before_keep_their_questions_and_their_script() -> None:
    spec = REGISTRY["active_quadratic"]
    space = SyntheticSpace(2, radius=0.2, priors=[0.65, 0.35])
    params = spec.parse_params({"max_queries": 12})
    version = spec.version + "+shown-1"
    assert not fresh_screens(version) and fresh_screens(None) and fresh_screens(spec.version + DISPLAY_MARK)

    def asked(elicitor: Any) -> list[list[float]]:
        oracle = LogisticOracle(METRIC, 200.0, rng=np.random.default_rng(1))
        return [query.first.tolist() + query.second.tolist() for query, _answer in run(elicitor, oracle).log]

    earlier = asked(build_session_elicitor(spec, space, params, seed=4, version=version))
    unruled = asked(displayed(lambda shown: spec.build(shown, params, seed=4), space))
    current = asked(build_session_elicitor(spec, space, params, seed=4))
    assert earlier == unruled and current != earlier
    grid = DisplayGrid.from_priors(space.priors)
    apart = [
        grid.distance(*np.reshape(pair, (2, 2)), *np.reshape(before, (2, 2)))
        for before, pair in itertools.pairwise(current)
    ]
    assert min(apart) >= 3.0
