"""Best classifier for each metric of a dataset-backed study: results page, JSON API and both exports."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import numpy as np
import pytest
from admin_support import STUDY_CONFIG, bearer, finished_session, login, open_study
from fastapi.testclient import TestClient
from markupsafe import escape

from elicitation import LinearMetric
from elicitation.lab.feasible import build_space as build_dataset_space
from elicitation.lab.optimal import best_classifier
from elicitation.oracles import random_fair_metric

HOSTILE_CODE = '=HYPERLINK("http://evil")<b>x</b>'


@pytest.fixture(scope="module")
def cancer_space() -> dict[str, Any]:
    return build_dataset_space("breast-cancer", seed=0).to_dict()


def _cancer_study(client: TestClient, token: str, space: dict[str, Any]) -> str:
    config = {**STUDY_CONFIG, "class_names": space["class_names"], "query_space": space}
    sid = open_study(client, token, config)
    for code, weights in ((HOSTILE_CODE, [0.9, 0.4]), ("P2", [0.3, 0.95]), ("P3", [0.6, 0.8])):
        finished_session(client, sid, LinearMetric(np.array(weights)), code)
    return sid


def test_best_classifiers_api_gives_each_metric_its_optimum_beside_the_alternatives(
    client: TestClient, accounts: dict[str, Any], cancer_space: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = _cancer_study(client, token, cancer_space)
    response = client.get(f"/api/v1/studies/{sid}/best-classifiers", headers=bearer(token))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["reason"] is None and "exact" in body["method"]
    kinds = [row["kind"] for row in body["classifiers"]]
    assert kinds == ["accuracy", "participant", "participant", "participant", "consensus"]
    results = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()["results"]
    stored = {row["session_id"]: row for row in results}
    space = build_dataset_space("breast-cancer", seed=0)
    for row in body["classifiers"][1:]:
        assert row["value"] >= row["value_of_best_trained"] - 1e-12
        assert row["value"] >= row["value_of_most_accurate"] - 1e-12
        assert row["exact"] and row["gap"] <= 1e-9
        (group,) = row["groups"]
        assert sum(part["probability"] for part in group["mixture"]) == pytest.approx(1.0)
        confusion = np.array(group["confusion"])
        assert confusion.sum() == pytest.approx(100.0)
        assert row["correct_of_100"] == [pytest.approx(round(float(np.trace(confusion)), 1))]
        if row["kind"] == "participant":
            item = stored[row["session_id"]]
            metric = LinearMetric(np.array([item["a_" + name] for name in body["class_names"]]))
            expected = best_classifier(space, metric)
            assert row["value"] == pytest.approx(expected.optimum.value, abs=1e-12)
            np.testing.assert_allclose(list(group["rates"].values()), expected.rates, atol=1e-9)
    # accuracy row: the most accurate classifier is right for at least as many people as any other row
    most = body["classifiers"][0]["correct_of_100"][0]
    assert all(row["correct_of_100"][0] <= most + 1e-9 for row in body["classifiers"])

    table = client.get(f"/api/v1/studies/{sid}/best-classifiers.csv", headers=bearer(token))
    assert table.status_code == 200 and table.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(table.text)))
    assert [row["kind"] for row in rows] == kinds
    assert rows[1]["label"] == "'" + HOSTILE_CODE, "a formula-like participant code is neutralised"
    classes = body["class_names"]
    for row, item in zip(rows, body["classifiers"], strict=True):
        cells = [[float(row[f"confusion_{t}_{p}"]) for p in classes] for t in classes]
        np.testing.assert_allclose(cells, item["groups"][0]["confusion"], rtol=0, atol=1e-12)
        assert json.loads(row["mixture"]) == item["groups"][0]["mixture"]


def test_results_page_shows_the_best_classifiers_table(
    client: TestClient, accounts: dict[str, Any], cancer_space: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = _cancer_study(client, token, cancer_space)
    login(client, accounts["alice"]["email"])
    page = client.get(f"/admin/studies/{sid}/results")
    assert page.status_code == 200
    assert 'data-testid="best-table"' in page.text
    assert page.text.count('data-testid="best-row-participant"') == 3
    assert 'data-testid="best-row-accuracy"' in page.text and 'data-testid="best-row-consensus"' in page.text
    assert str(escape(HOSTILE_CODE)) in page.text and HOSTILE_CODE not in page.text
    download = client.get(f"/admin/studies/{sid}/export/best-classifiers.json")
    assert download.status_code == 200 and len(download.json()["classifiers"]) == 5


def test_a_synthetic_study_says_why_it_has_no_best_classifier(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = open_study(client, token, STUDY_CONFIG)
    finished_session(client, sid, LinearMetric(np.array([0.9, 0.4])), "P1")
    body = client.get(f"/api/v1/studies/{sid}/best-classifiers", headers=bearer(token)).json()
    assert body["classifiers"] == [] and "dataset" in body["reason"]
    login(client, accounts["alice"]["email"])
    page = client.get(f"/admin/studies/{sid}/results")
    assert 'data-testid="best-unavailable"' in page.text


def test_a_fair_study_optimises_both_groups_together_with_its_tradeoff(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    space = build_dataset_space("adult", groups=True, seed=0)
    config = {
        **STUDY_CONFIG,
        "class_names": list(space.class_names),
        "group_names": list(space.group_names),
        "algorithm": "fair_qpme",
        "algorithm_params": {"epsilon": 0.05},
        "query_space": space.to_dict(),
    }
    sid = open_study(client, token, config)
    metric = random_fair_metric(np.random.default_rng(4), 2, 2, tau=space.tau)
    finished_session(client, sid, metric, "F1")
    body = client.get(f"/api/v1/studies/{sid}/best-classifiers", headers=bearer(token)).json()
    row = next(item for item in body["classifiers"] if item["kind"] == "participant")
    assert row["lower_is_better"] and row["lam"] is not None and 0.0 <= row["lam"] <= 1.0
    assert [part["group"] for part in row["groups"]] == list(space.group_names)
    assert row["value"] <= row["value_of_best_trained"] + 1e-12
    assert row["value"] <= row["value_of_most_accurate"] + 1e-12
    login(client, accounts["alice"]["email"])
    page = client.get(f"/admin/studies/{sid}/results")
    assert "Share on equal treatment" in page.text and f"{row['lam']:.3f}" in page.text
