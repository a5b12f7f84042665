"""Diagonal QPME and the lambda-only trade-off search as study algorithms: config, API, form, sessions."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import numpy as np
import pytest
from admin_support import STUDY_CONFIG, Participant, bearer, hidden, login
from fastapi.testclient import TestClient

from app.algorithms import REGISTRY, group_tau
from app.codec import decode_metric
from app.study_config import StudyConfigError, parse_study_config
from elicitation import FairQuadraticMetric, QuadraticMetric, elicitation_errors

#: A diagonal-B quadratic metric (Definition 2 with B diagonal, NSD) on three classes.
DIAGONAL_TRUTH = QuadraticMetric(np.array([0.3, 0.8, 0.5]), np.diag([-0.3, -0.2, -0.25]))

DIAGONAL_STUDY: dict[str, Any] = {
    **STUDY_CONFIG,
    "class_names": ["low", "medium", "high"],
    "algorithm": "diagonal_qpme",
    "algorithm_params": {"epsilon": 0.02, "cycles": 1},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.4, 0.35, 0.25]},
}

PRIORS = [[0.6, 0.4], [0.7, 0.3]]
KNOWN_A = [0.4, 0.9]
KNOWN_B = [[[1.0, 0.2], [0.2, 0.5]]]

TRADEOFF_STUDY: dict[str, Any] = {
    **STUDY_CONFIG,
    "group_names": ["women under 50", "women over 50"],
    "algorithm": "tradeoff",
    "algorithm_params": {"a": KNOWN_A, "B_pairs": KNOWN_B, "epsilon": 0.05, "group_shares": [0.4, 0.6]},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": PRIORS},
}


def _run_session(client: TestClient, token: str, config: dict[str, Any], truth: Any) -> dict[str, Any]:
    """Create and open ``config`` over the API, let an automated participant with ``truth`` finish it."""
    headers = bearer(token)
    created = client.post("/api/v1/studies", json=config, headers=headers)
    assert created.status_code == 201, created.text
    study_id = created.json()["id"]
    opened = client.patch(f"/api/v1/studies/{study_id}", json={"status": "open"}, headers=headers)
    assert opened.status_code == 200, opened.text
    started = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
    assert started.status_code == 201, started.text
    final = Participant(truth).finish(client, started.json()["token"])
    assert final["status"] == "done"
    assert final["result"]["checks"]["all_passed"] is True
    results = client.get(f"/api/v1/studies/{study_id}/results", headers=headers)
    assert results.status_code == 200, results.text
    # the back office shows and replays the session: dashboard, archive (replayable), monitor/results pages
    assert client.get(f"/api/v1/studies/{study_id}/dashboard", headers=headers).status_code == 200
    archive = client.get(f"/api/v1/studies/{study_id}/archive", headers=headers)
    assert archive.status_code == 200, archive.text
    session_id = archive.json()["sessions"][0]["id"]
    replay = client.get(f"/api/v1/studies/{study_id}/sessions/{session_id}/replay-log", headers=headers)
    assert replay.status_code == 200, replay.text
    login(client, "alice@example.org")
    for page in ("monitor", "results", f"sessions/{session_id}"):
        shown = client.get(f"/admin/studies/{study_id}/{page}")
        assert shown.status_code == 200, (page, shown.text[:2000])
    session_page = client.get(f"/admin/studies/{study_id}/sessions/{session_id}").text
    assert 'data-testid="replay-check" class="notice notice--success"' in session_page
    return {"study_id": study_id, "final": final}


def test_both_algorithms_are_registered_with_versions() -> None:
    assert REGISTRY["diagonal_qpme"].version == "diagonal_qpme-1"
    assert not REGISTRY["diagonal_qpme"].needs_groups
    assert REGISTRY["tradeoff"].version == "tradeoff-1"
    assert REGISTRY["tradeoff"].needs_groups


def test_diagonal_qpme_session_elicits_a_diagonal_metric_end_to_end(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    done = _run_session(client, accounts["alice"]["token"], DIAGONAL_STUDY, DIAGONAL_TRUTH)
    metric = decode_metric(done["final"]["result"]["metric"])
    assert isinstance(metric, QuadraticMetric)
    assert np.count_nonzero(metric.B - np.diag(np.diag(metric.B))) == 0, "B must come out diagonal"
    errors = elicitation_errors(DIAGONAL_TRUTH, metric)
    assert errors.a < 0.05 and errors.B is not None and errors.B < 0.1, errors
    rows = list(
        csv.DictReader(
            io.StringIO(
                client.get(
                    f"/api/v1/studies/{done['study_id']}/results.csv",
                    headers=bearer(accounts["alice"]["token"]),
                ).text
            )
        )
    )
    assert (
        rows[0]["algorithm"] == "diagonal_qpme" and rows[0]["algorithm_version"] == "diagonal_qpme-1+shown-3"
    )
    assert float(rows[0]["B_low_medium"]) == 0.0 and float(rows[0]["B_high_high"]) < 0.0


@pytest.mark.parametrize("lam", [0.15, 0.7])
def test_tradeoff_session_recovers_lambda_within_epsilon(
    client: TestClient, accounts: dict[str, Any], lam: float
) -> None:
    tau = group_tau(PRIORS, [0.4, 0.6])
    truth = FairQuadraticMetric(a=np.array(KNOWN_A), B_pairs={(0, 1): np.array(KNOWN_B[0])}, lam=lam, tau=tau)
    done = _run_session(client, accounts["alice"]["token"], TRADEOFF_STUDY, truth)
    metric = decode_metric(done["final"]["result"]["metric"])
    assert isinstance(metric, FairQuadraticMetric)
    assert abs(metric.lam - lam) <= 0.05
    # a and B are the known ones (normalised as in Definition 3), not re-estimated
    np.testing.assert_allclose(metric.a, truth.a)
    np.testing.assert_allclose(metric.B_pairs[(0, 1)], truth.B_pairs[(0, 1)])
    # elicitor queries: one halving each, ceil(log2(1 / epsilon)) of them
    assert done["final"]["result"]["num_queries"] <= 5


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"B_pairs": KNOWN_B}, "algorithm_params: a: Field required"),
        ({"a": KNOWN_A}, "algorithm_params: B_pairs: Field required"),
        ({"a": [0.4, 0.9, 0.1], "B_pairs": KNOWN_B}, "a: give 2 costs"),
        ({"a": [-0.4, 0.9], "B_pairs": KNOWN_B}, "a: must be finite, non-negative"),
        (
            {"a": KNOWN_A, "B_pairs": [[[1.0, 2.0], [2.0, 1.0]]]},
            r"B_pairs\[0\] must be positive semi-definite",
        ),
        ({"a": KNOWN_A, "B_pairs": [[[1.0, 0.5], [0.0, 1.0]]]}, r"B_pairs\[0\] must be symmetric"),
        ({"a": KNOWN_A, "B_pairs": [[[1.0, 0.0], [0.0]]]}, r"B_pairs\[0\] must be a square matrix"),
        ({"a": KNOWN_A, "B_pairs": [np.eye(3).tolist()]}, r"B_pairs\[0\] must be 2x2"),
        ({"a": KNOWN_A, "B_pairs": KNOWN_B * 2}, "B_pairs: give 1 matrices"),
        ({"a": KNOWN_A, "B_pairs": KNOWN_B, "epsilon": 1.5}, "epsilon"),
    ],
)
def test_tradeoff_params_are_validated_naming_the_field(params: dict[str, Any], message: str) -> None:
    with pytest.raises(StudyConfigError, match=message):
        parse_study_config({**TRADEOFF_STUDY, "algorithm_params": params})


def test_tradeoff_needs_groups_and_three_groups_need_three_matrices() -> None:
    with pytest.raises(StudyConfigError, match="needs at least 2 groups"):
        parse_study_config({**TRADEOFF_STUDY, "group_names": []})
    three = {
        **TRADEOFF_STUDY,
        "group_names": ["a", "b", "c"],
        "algorithm_params": {"a": KNOWN_A, "B_pairs": KNOWN_B * 3, "epsilon": 0.05},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.6, 0.4], [0.7, 0.3], [0.5, 0.5]]},
    }
    assert parse_study_config(three).algorithm == "tradeoff"
    with pytest.raises(StudyConfigError, match=r"give 3 matrices \(one per group pair"):
        parse_study_config({**three, "algorithm_params": {"a": KNOWN_A, "B_pairs": KNOWN_B}})


def test_api_rejects_a_bad_tradeoff_config_with_422(client: TestClient, accounts: dict[str, Any]) -> None:
    bad = {**TRADEOFF_STUDY, "algorithm_params": {"a": KNOWN_A, "B_pairs": [[[1.0, 2.0], [2.0, 1.0]]]}}
    response = client.post("/api/v1/studies", json=bad, headers=bearer(accounts["alice"]["token"]))
    assert response.status_code == 422
    assert "positive semi-definite" in response.json()["message"]


def test_api_plan_of_both_algorithms(client: TestClient, accounts: dict[str, Any]) -> None:
    headers = bearer(accounts["alice"]["token"])
    for config in (DIAGONAL_STUDY, TRADEOFF_STUDY):
        study_id = client.post("/api/v1/studies", json=config, headers=headers).json()["id"]
        plan = client.get(f"/api/v1/studies/{study_id}/plan", headers=headers)
        assert plan.status_code == 200, plan.text
        body = plan.json()
        assert body["failed_trials"] == 0
        if config is TRADEOFF_STUDY:
            # The study's known costs are the simulated people's own (a is never wrong); their trade-off
            # is read through probit noise, as people in a study with groups answer (about 0.11 here).
            assert body["error_lam_mean"] <= 0.15 and body["error_a_mean"] == pytest.approx(0.0, abs=1e-12)


def test_form_offers_both_algorithms_and_creates_a_diagonal_study(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    csrf = login(client, accounts["alice"]["email"])
    page = client.get("/admin/studies/new")
    assert 'value="diagonal_qpme"' in page.text and 'value="tradeoff"' in page.text
    response = client.post(
        "/admin/studies/new",
        data={
            "csrf_token": hidden(page.text, "csrf_token") or csrf,
            "name": "diagonal",
            "task": "t",
            "class_names": "low, medium, high",
            "algorithm": "diagonal_qpme",
            "epsilon": "0.05",
            "radius": "0.2",
            "practice_queries": "1",
            "evaluation_queries": "2",
        },
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    study = client.get(response.headers["location"])
    assert study.status_code == 200 and "diagonal_qpme" in study.text


def test_form_tradeoff_without_known_metric_names_the_missing_fields(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    login(client, accounts["alice"]["email"])
    page = client.get("/admin/studies/new")
    fields = {
        "csrf_token": hidden(page.text, "csrf_token"),
        "name": "lambda only",
        "task": "t",
        "class_names": "benign, malignant",
        "group_names": "younger, older",
        "algorithm": "tradeoff",
        "epsilon": "0.05",
    }
    response = client.post("/admin/studies/new", data=fields, follow_redirects=False)
    assert response.status_code == 422
    assert "algorithm_params: a: Field required" in response.text
    assert "B_pairs: Field required" in response.text
    config = {**TRADEOFF_STUDY, "name": "lambda only (json)"}
    ok = client.post(
        "/admin/studies/new", data={**fields, "config_json": json.dumps(config)}, follow_redirects=False
    )
    assert ok.status_code == 303, ok.text
