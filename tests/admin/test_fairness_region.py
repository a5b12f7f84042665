"""A two-group fairness study on Adult: each group is asked among its own realistic classifiers.

Simulated people answer over the JSON API from the numbers the charts show; every shown classifier beats
its group's "everyone is the most common class" baseline, no question repeats the one before, and the
elicited metric agrees with each person on random pairs from the groups' spheres.
"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from admin_support import bearer, login
from fastapi.testclient import TestClient

from app.admin.monitor import candidate_pool, candidate_table
from app.algorithms import get_algorithm, group_tau
from app.charts.comparison import display_decimals, rounded_counts
from app.codec import decode_metric
from app.models import Study
from app.sessions import worked_example
from app.study_config import build_space, parse_study_config
from benchmarks.expert_minutes import FAIR_STUDY
from elicitation import FairQuadraticMetric
from elicitation.evaluation import agreement
from elicitation.oracles import random_fair_metric


def _shown(query: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Both sides' confusion matrices ``(m, k, k)`` exactly as the participant page rounds them."""
    left = np.asarray(query["first"]["confusion"], dtype=np.float64)
    right = np.asarray(query["second"]["confusion"], dtype=np.float64)
    decimals = display_decimals(left, right)
    return rounded_counts(left, decimals), rounded_counts(right, decimals)


def _rates(counts: np.ndarray) -> np.ndarray:
    result: np.ndarray = np.diagonal(counts, axis1=1, axis2=2) / counts.sum(axis=2)
    return result


def _session(client: TestClient, study_id: str, metric: FairQuadraticMetric) -> tuple[int, dict[str, Any]]:
    """One person answering exactly from the displayed numbers; checks every screen, returns the count."""
    token = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    state = client.get(f"/api/v1/sessions/{token}").json()
    previous: set[bytes] = set()
    screens = 0
    while state["query"] is not None:
        left, right = _shown(state["query"])
        assert not np.array_equal(left, right), "a pair whose sides display alike"
        picture = left.tobytes() + right.tobytes()
        assert picture not in previous, "a screen displaying like the one before"
        previous = {picture, right.tobytes() + left.tobytes()}
        for side in (left, right):
            correct = np.trace(side, axis1=1, axis2=2)
            baseline = side.sum(axis=2).max(axis=1)
            assert np.all(correct >= baseline), f"a classifier below the baseline: {side.tolist()}"
        first = metric.prefers(_rates(left), _rates(right))
        state = client.post(
            f"/api/v1/sessions/{token}/answers",
            json={"seq": state["query"]["seq"], "preferred": "first" if first else "second"},
        ).json()
        screens += 1
    return screens, state


@pytest.mark.slow
def test_adult_fairness_study_asks_each_group_among_its_own_good_classifiers(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    created = client.post("/api/v1/studies", json=FAIR_STUDY, headers=bearer(accounts["alice"]["token"]))
    assert created.status_code == 201, created.text
    study_id = created.json()["id"]
    config = parse_study_config(FAIR_STUDY)
    space = build_space(config)
    region = get_algorithm("active_fair").algorithm.query_region(space)
    assert isinstance(region, tuple) and len(region) == 2
    assert not np.allclose(region[0].center, region[1].center)

    csrf = login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{study_id}").text
    assert 'data-testid="region-per-group"' in page
    for group, own in zip(("Female", "Male"), region, strict=True):
        assert f"{group}, rates within {own.radius:.3f} of ({own.center[0]:.3f}, {own.center[1]:.3f})" in page

    # The instructions' worked example and the results page's candidates come from the same spheres.
    with client.app.state.sessionmaker() as db:  # type: ignore[attr-defined]
        study = db.get(Study, uuid.UUID(study_id))
        runtime = client.app.state.session_cache.runtime(study)  # type: ignore[attr-defined]
        example = worked_example(runtime)
        candidates = candidate_table(study)
    for side in ("left", "right"):
        for row, own in zip(np.asarray(example[side]["rates"]), region, strict=True):
            assert own.contains(row)
        counts = rounded_counts(np.asarray(example[side]["confusion"]), 0)
        assert np.all(np.trace(counts, axis1=1, axis2=2) >= counts.sum(axis=2).max(axis=1))
    assert len(candidates) == len(candidate_pool(space, region))
    for rates in candidate_pool(space, region):
        assert all(own.contains(row) for row, own in zip(rates, region, strict=True))

    client.post(f"/admin/studies/{study_id}/status", data={"status": "open", "csrf_token": csrf})
    tau = group_tau(space.priors, None)
    rng = np.random.default_rng(4)
    for _person in range(3):
        metric = random_fair_metric(rng, 2, 2, tau=tau)
        screens, state = _session(client, study_id, metric)
        assert screens <= 40
        elicited = decode_metric(state["result"]["metric"])
        assert agreement(metric, elicited, region, rng, n_pairs=2000) >= 0.95
