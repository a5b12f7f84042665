"""The panel view of a study (page, JSON API, exports): consensus, intervals, agreement matrix and camps."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import numpy as np
import pytest
from admin_support import STUDY_CONFIG, bearer, finished_session, login, open_study
from fastapi.testclient import TestClient
from markupsafe import escape

from elicitation import FairQuadraticMetric, LinearMetric, Metric, QuadraticMetric
from elicitation.catalogue.registry import group_tau

#: Two camps of automated participants answering LPME: one weighs benign errors, one malignant ones.
CAMPS = (np.array([0.95, 0.3]), np.array([0.3, 0.95]))
HOSTILE_CODE = '=HYPERLINK("http://evil")<b>x</b>'
PRIORS = [[0.6, 0.4], [0.7, 0.3]]


def _session_ids(client: TestClient, token: str, sid: str) -> dict[str, str]:
    """Participant code -> session id, from the results export."""
    rows = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()["results"]
    return {row["participant_code"]: row["session_id"] for row in rows}


def _two_camp_study(client: TestClient, token: str) -> tuple[str, list[str], list[int]]:
    sid = open_study(client, token, STUDY_CONFIG)
    codes = [HOSTILE_CODE if index == 0 else f"P{index + 1}" for index in range(8)]
    camp_of = [index % 2 for index in range(8)]
    for code, camp in zip(codes, camp_of, strict=True):
        finished_session(client, sid, LinearMetric(CAMPS[camp]), code)
    ids = _session_ids(client, token, sid)
    return sid, [ids[code] for code in codes], camp_of


def test_panel_api_finds_the_two_camps_and_a_consensus_between_them(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid, sessions, truth = _two_camp_study(client, token)
    response = client.get(f"/api/v1/studies/{sid}/panel", headers=bearer(token))
    assert response.status_code == 200, response.text
    panel = response.json()
    assert panel["available"] and panel["reason"] is None
    assert [member["session_id"] for member in panel["members"]] == sessions
    assert panel["members"][0]["participant_code"] == HOSTILE_CODE
    assert panel["split"] is True and len(panel["camps"]) == 2
    found = {frozenset(camp["members"]) for camp in panel["camps"]}
    assert found == {
        frozenset(s for s, c in zip(sessions, truth, strict=True) if c == camp) for camp in (0, 1)
    }
    # The consensus lies between the camps: about equal weights, each inside its interval.
    consensus = np.array(panel["consensus"]["metric"]["a"])
    assert abs(consensus[0] - consensus[1]) < 0.1
    for column in ("a_benign", "a_malignant"):
        item = panel["consensus"]["coefficients"][column]
        assert item["low"] <= item["value"] <= item["high"]
    # Agreement: members of a camp answer alike far more often than across camps, and each camp's centre
    # agrees with the consensus more often than the camps agree with each other.
    agreement = np.array(panel["agreement"])
    same = np.equal.outer(truth, truth)
    off = ~np.eye(8, dtype=bool)
    across = agreement[~same].mean()
    assert agreement[same & off].mean() > 0.9 > across
    assert min(camp["with_consensus"] for camp in panel["camps"]) > across
    assert panel["method"]["pairs"] == 1000 and "average score" in panel["method"]["consensus"]
    # Same sessions, same numbers.
    again = client.get(f"/api/v1/studies/{sid}/panel", headers=bearer(token)).json()
    assert again == panel

    table = list(
        csv.DictReader(
            io.StringIO(client.get(f"/api/v1/studies/{sid}/panel.csv", headers=bearer(token)).text)
        )
    )
    assert [row["row"] for row in table] == ["consensus", "camp centre", "camp centre"] + ["participant"] * 8
    assert float(table[0]["a_benign_low"]) <= float(table[0]["a_benign"]) <= float(table[0]["a_benign_high"])
    assert table[3]["participant_code"] == "'" + HOSTILE_CODE  # a spreadsheet formula stays text
    pairs = client.get(f"/api/v1/studies/{sid}/panel-agreement.csv", headers=bearer(token))
    assert pairs.status_code == 200 and pairs.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(pairs.text)))
    assert len(rows) == 8 * 7 // 2
    assert sum(row["same_camp"] == "True" for row in rows) == 2 * (4 * 3 // 2)


def test_panel_page_shows_the_split_charts_and_downloads(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    sid, _sessions, _truth = _two_camp_study(client, accounts["alice"]["token"])
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{sid}/panel")
    assert page.status_code == 200
    assert 'data-testid="panel-summary"' in page.text
    split = re.search(r'data-testid="panel-split">(.*?)<', page.text)
    assert split and split.group(1) == "splits into 2 camps"
    for figure in ("fig-panel-consensus", "fig-panel-agreement", "fig-panel-map"):
        assert f'data-figure="{figure}"' in page.text
    # A participant code is page text, escaped, and chart text, made inert.
    assert HOSTILE_CODE not in page.text and str(escape(HOSTILE_CODE)) in page.text
    assert "<b>x</b>" not in page.text
    results = client.get(f"/admin/studies/{sid}/results")
    assert f'href="/admin/studies/{sid}/panel"' in results.text
    for kind, media in (
        ("panel.json", "application/json"),
        ("panel.csv", "text/csv"),
        ("panel-agreement.csv", "text/csv"),
    ):
        download = client.get(f"/admin/studies/{sid}/export/{kind}")
        assert download.status_code == 200 and download.headers["content-type"].startswith(media)
        assert f"-{sid}." in download.headers["content-disposition"]
    assert client.get(f"/admin/studies/{sid}/export/panel.json").json()["split"] is True


def test_panel_needs_two_participants_and_leaves_out_excluded_ones(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = open_study(client, token, STUDY_CONFIG)
    empty = client.get(f"/api/v1/studies/{sid}/panel", headers=bearer(token)).json()
    assert not empty["available"] and "no finished participants" in empty["reason"]
    assert empty["members"] == [] and empty["consensus"] is None and empty["camps"] == []
    finished_session(client, sid, LinearMetric(CAMPS[0]), "A")
    finished_session(client, sid, LinearMetric(CAMPS[1]), "B")
    first, second = (_session_ids(client, token, sid)[code] for code in ("A", "B"))
    both = client.get(f"/api/v1/studies/{sid}/panel", headers=bearer(token)).json()
    assert both["available"] and len(both["members"]) == 2 and both["split"] is False
    excluded = client.post(
        f"/api/v1/studies/{sid}/sessions/{second}/exclusion",
        json={"reason": "sped through"},
        headers=bearer(token),
    )
    assert excluded.status_code == 201
    alone = client.get(f"/api/v1/studies/{sid}/panel", headers=bearer(token)).json()
    assert not alone["available"] and "one finished participant" in alone["reason"]
    assert [member["session_id"] for member in alone["members"]] == [first]
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{sid}/panel")
    assert page.status_code == 200 and 'data-testid="panel-unavailable"' in page.text
    assert client.get(f"/admin/studies/{sid}/export/panel.csv").text.count("\r\n") == 1  # the header only
    # Another coordinator's study does not exist for bob.
    assert (
        client.get(f"/api/v1/studies/{sid}/panel", headers=bearer(accounts["bob"]["token"])).status_code
        == 404
    )


FAMILIES = {
    "quadratic": (
        {**STUDY_CONFIG, "algorithm": "qpme", "algorithm_params": {"epsilon": 0.2}},
        [
            QuadraticMetric(np.array([0.3, 0.8]), np.diag([-0.3, -0.2])),
            QuadraticMetric(np.array([0.8, 0.3]), np.diag([-0.1, -0.4])),
            QuadraticMetric(np.array([0.5, 0.6]), np.diag([-0.2, -0.2])),
        ],
    ),
    "fair_quadratic": (
        {
            **STUDY_CONFIG,
            "group_names": ["younger", "older"],
            "algorithm": "fair_qpme",
            "algorithm_params": {"epsilon": 0.25, "group_shares": [0.4, 0.6]},
            "query_space": {"kind": "synthetic", "radius": 0.2, "priors": PRIORS},
        },
        [
            FairQuadraticMetric(
                a=np.array([0.4, 0.9]),
                B_pairs={(0, 1): np.array([[1.0, 0.2], [0.2, 0.5]])},
                lam=lam,
                tau=group_tau(PRIORS, [0.4, 0.6]),
            )
            for lam in (0.2, 0.5, 0.7)
        ],
    ),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_panel_of_every_family(client: TestClient, accounts: dict[str, Any], family: str) -> None:
    config, people = FAMILIES[family]
    token = accounts["alice"]["token"]
    sid = open_study(client, token, config)
    for index, metric in enumerate(people):
        finished_session(client, sid, metric, f"P{index + 1}")
    panel = client.get(f"/api/v1/studies/{sid}/panel", headers=bearer(token)).json()
    assert panel["available"] and panel["consensus"]["metric"]["type"] == family
    consensus = Metric.from_dict(panel["consensus"]["metric"])
    stored = [Metric.from_dict(member["metric"]) for member in panel["members"]]
    # The consensus scores like the members' average score (up to a positive factor) on random rates.
    rng = np.random.default_rng(0)
    shape = (2, 2) if family == "fair_quadratic" else (2,)
    rates = [0.4 + 0.3 * rng.random(shape) for _ in range(20)]
    mean = np.array([np.mean([metric(r) for metric in stored]) for r in rates])
    own = np.array([consensus(r) for r in rates])
    assert np.allclose(own, (own @ mean / (mean @ mean)) * mean, atol=1e-9)
    columns = set(panel["consensus"]["coefficients"])
    assert {"a_benign", "a_malignant"} <= columns
    if family == "fair_quadratic":
        assert {"lam", "B_younger_older_benign_malignant"} <= columns
    login(client, "alice@example.org")
    assert client.get(f"/admin/studies/{sid}/panel").status_code == 200
