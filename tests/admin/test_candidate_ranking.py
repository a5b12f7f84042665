"""Decisions among real candidates: a fairness study on Adult ranks the dataset's candidate classifiers by
each participant's elicited cost, with each candidate's posterior chance of being best, alike on the
results page, in the JSON API and in the candidate-ranking CSV."""

from __future__ import annotations

import csv
import html
import io
import re
from typing import Any

import numpy as np
import pytest
from admin_support import bearer, finished_session, login
from fastapi.testclient import TestClient

from app.algorithms import group_tau
from app.codec import decode_metric
from app.study_config import build_space, parse_study_config
from benchmarks.expert_minutes import FAIR_STUDY
from elicitation.oracles import random_fair_metric

#: The Adult study with groups, left to the recommended elicitor for groups.
ADULT_STUDY = {key: value for key, value in FAIR_STUDY.items() if key != "algorithm"}


@pytest.mark.slow
def test_participants_rank_the_real_candidates_alike_on_the_page_the_api_and_the_csv(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    created = client.post("/api/v1/studies", json=ADULT_STUDY, headers=headers)
    assert created.status_code == 201, created.text
    study_id = created.json()["id"]
    client.patch(f"/api/v1/studies/{study_id}", json={"status": "open"}, headers=headers)
    space = build_space(parse_study_config(ADULT_STUDY))
    rng = np.random.default_rng(8)
    truths = {}
    for code, lam in (("equal", 0.8), ("accurate", 0.2)):
        truths[code] = random_fair_metric(
            rng, 2, 2, tau=group_tau(space.priors, None), tradeoff_range=(lam, lam)
        )
        finished_session(client, study_id, truths[code], code)

    body = client.get(f"/api/v1/studies/{study_id}/best-classifiers", headers=headers).json()
    candidates = body["candidates"]
    assert body["candidate_reason"] is None and len(candidates) >= 8
    assert {item["method"] for item in candidates} == {"most accurate", "thresholds", "reduction", "mixture"}
    rates = np.array([[list(part["rates"].values()) for part in item["groups"]] for item in candidates])
    rankings = {
        item["participant_code"]: item for item in body["candidate_rankings"] if item["kind"] == "participant"
    }
    assert set(rankings) == set(truths)
    assert [item["kind"] for item in body["candidate_rankings"]] == [
        "participant",
        "participant",
        "consensus",
    ]
    members = client.get(f"/api/v1/studies/{study_id}/panel", headers=headers).json()["members"]
    stored = {member["participant_code"]: member["metric"] for member in members}
    for code, ranking in rankings.items():
        elicited = decode_metric(stored[code])
        costs = [float(elicited(r)) for r in rates]
        assert ranking["costs"] == pytest.approx(costs)
        assert ranking["order"] == sorted(range(len(costs)), key=lambda i: (costs[i], i))
        assert sum(ranking["chance_best"]) == pytest.approx(1.0)
        # The person's own best candidate is among the elicited ranking's top three, and has a real chance.
        truth = [float(truths[code](r)) for r in rates]
        own_best = int(np.argmin(truth))
        assert own_best in ranking["order"][:3], (code, own_best, ranking["order"][:5])
        assert ranking["chance_best"][own_best] >= 0.1
    consensus = body["candidate_rankings"][-1]
    assert consensus["chance_best"] is None and sorted(consensus["order"]) == list(range(len(candidates)))

    table = client.get(f"/api/v1/studies/{study_id}/candidate-ranking.csv", headers=headers)
    assert table.status_code == 200 and table.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(table.text)))
    assert len(rows) == 3 * len(candidates)
    for row in rows:
        if row["kind"] != "participant":
            assert row["chance_best"] == ""
            continue
        ranking = rankings[row["participant_code"]]
        index = ranking["order"][int(row["rank"]) - 1]
        assert row["candidate"] == candidates[index]["label"]
        assert float(row["cost"]) == pytest.approx(ranking["costs"][index])
        assert float(row["chance_best"]) == pytest.approx(ranking["chance_best"][index])
        assert float(row["rate_Female_income >50K"]) == pytest.approx(rates[index, 0, 1])

    login(client, accounts["alice"]["email"])
    page = html.unescape(client.get(f"/admin/studies/{study_id}/results").text)
    assert page.count('data-testid="candidate-row"') == len(candidates)
    shown = re.findall(
        r'data-testid="candidate-ranking-row"><th scope="row">(.*?)</th>(.*?)</tr>', page, re.S
    )
    assert {code for code, _ in shown} == set(rankings)
    for code, cells in shown:
        ranking = rankings[code]
        for index in ranking["order"][:3]:
            label = candidates[index]["label"]
            assert f'{label} <span class="muted">({100 * ranking["chance_best"][index]:.0f}%)</span>' in cells
    best_for = re.findall(r'data-testid="candidate-best-for">(\d+) of 2<', page)
    assert sum(int(count) for count in best_for) == 2


def test_a_study_whose_split_has_no_trained_candidates_says_so(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    other = {
        **ADULT_STUDY,
        "name": "another split",
        "query_space": {"kind": "dataset", "recipe": {"dataset": "adult", "groups": True, "seed": 1}},
    }
    created = client.post("/api/v1/studies", json=other, headers=headers)
    assert created.status_code == 201, created.text
    body = client.get(f"/api/v1/studies/{created.json()['id']}/best-classifiers", headers=headers).json()
    assert body["candidates"] == [] and "No candidate classifiers were trained" in body["candidate_reason"]
    login(client, accounts["alice"]["email"])
    page = client.get(f"/admin/studies/{created.json()['id']}/results").text
    assert 'data-testid="candidates-unavailable"' in page and 'data-testid="candidate-table"' not in page
