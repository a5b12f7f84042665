"""Uncertainty as data: a fairness result's intervals in the API, the participant's page and the exports.

A noise-free person with a trade-off of 0.6 answers an Adult study with groups over the JSON API from the
counts the page shows. The result must never state a trade-off the answers did not support: the stated
interval holds 0.6, and when it is wider than `SETTLED_LAM_WIDTH` the words give the range instead of a
single share. The page, the API and the CSV/JSON/Parquet exports show the same numbers.
"""

from __future__ import annotations

import csv
import io
import re
import secrets
from typing import Any

import numpy as np
import pytest
from admin_support import bearer, finished_session, login
from fastapi.testclient import TestClient

from app.algorithms import group_tau
from app.explain import SETTLED_LAM_WIDTH, SETTLED_RATIO_FACTOR
from app.study_config import build_space, parse_study_config
from benchmarks.expert_minutes import FAIR_STUDY
from elicitation import FairQuadraticMetric
from elicitation.oracles import random_fair_metric

TRUE_LAM = 0.6
#: The sessions' seed, fixed: with a random one, a 90 % interval misses the truth about one run in ten (a
#: coverage rate the calibration benchmark measures, not one session's promise).
SESSION_SEED = 20221


@pytest.fixture
def fixed_session_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session this test creates gets `SESSION_SEED`."""
    monkeypatch.setattr(secrets, "randbits", lambda _bits: SESSION_SEED)


def _answer_from_the_page(client: TestClient, token: str, metric: FairQuadraticMetric) -> dict[str, Any]:
    state = client.get(f"/api/v1/sessions/{token}").json()
    while state["query"] is not None:
        sides = []
        for side in ("first", "second"):
            shown = np.asarray(state["query"][side]["shown"], dtype=np.float64)
            sides.append(np.diagonal(shown, axis1=1, axis2=2) / shown.sum(axis=2))
        first = metric.prefers(sides[0], sides[1])
        state = client.post(
            f"/api/v1/sessions/{token}/answers",
            json={"seq": state["query"]["seq"], "preferred": "first" if first else "second"},
        ).json()
    return state


def _open_study(
    client: TestClient, headers: dict[str, str], study: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    """Create and open ``study`` over the API; its description and its query space."""
    created = client.post("/api/v1/studies", json=study, headers=headers)
    assert created.status_code == 201, created.text
    client.patch(f"/api/v1/studies/{created.json()['id']}", json={"status": "open"}, headers=headers)
    return created.json(), build_space(parse_study_config(study))


def _person(space: Any, seed: int, lam: float) -> FairQuadraticMetric:
    """A random fair cost on ``space`` whose trade-off is exactly ``lam``."""
    tau = group_tau(space.priors, None)
    return random_fair_metric(np.random.default_rng(seed), 2, 2, tau=tau, tradeoff_range=(lam, lam))


def _synthetic_study(name: str, max_queries: int) -> dict[str, Any]:
    """A small two-group synthetic study that stops after ``max_queries`` questions."""
    return {
        "name": name,
        "task": "t",
        "class_names": ["benign", "malignant"],
        "group_names": ["women", "men"],
        "algorithm_params": {"max_queries": max_queries},
        "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.6, 0.4], [0.7, 0.3]]},
        "practice_queries": 0,
        "checks": False,
        "evaluation_queries": 0,
    }


@pytest.mark.slow
def test_a_noise_free_fair_result_states_intervals_alike_everywhere_and_holds_the_truth(
    client: TestClient, accounts: dict[str, Any], fixed_session_seed: None
) -> None:
    headers = bearer(accounts["alice"]["token"])
    study = {key: value for key, value in FAIR_STUDY.items() if key != "algorithm"}  # the default for groups
    created, space = _open_study(client, headers, study)
    assert created["algorithm"] == "active_fair"
    study_id = created["id"]
    truth = _person(space, 6, TRUE_LAM)
    token = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    result = _answer_from_the_page(client, token, truth)["result"]

    level = result["interval_level"]
    assert level == pytest.approx(0.90)
    intervals = result["intervals"]
    low, high = intervals["lam"]
    assert low <= TRUE_LAM <= high, f"the result states a trade-off of {low:.2f}-{high:.2f}, the truth is 0.6"
    assert set(intervals) == {"lam", "per_rate", "per_person"}
    assert set(intervals["per_person"]) == {"income <=50K", "income >50K"}

    # The words state the same interval, and a single share only when the interval is narrow.
    page = client.get(f"/sessions/{token}/result").text
    said = result["summary"]
    span = f"{round(100 * low)}% to {round(100 * high)}%"
    assert span in said and span in page
    if high - low > SETTLED_LAM_WIDTH:
        assert "did not settle how you weigh" in said and "you put about" not in said
        assert "did not settle how you weigh" in page and "Not settled by your answers" in page
    else:
        assert f"you put about {round(100 * result['metric']['lam'])}%" in said
    dearest = max(intervals["per_person"].values(), key=lambda pair: pair[1])
    settled = dearest[1] <= SETTLED_RATIO_FACTOR * dearest[0]
    assert ("did not settle how much" in said) is not settled
    if not settled:
        assert f"between {dearest[0]:.1f} and {dearest[1]:.1f} times" in said
    # The cost table's interval column shows the per-person intervals at the same level.
    assert "Likely range (90% sure)" in page
    for pair in intervals["per_person"].values():
        if pair[1] - pair[0] > 0.05:
            assert f"{pair[0]:.1f}× to {pair[1]:.1f}×" in page

    # The exports carry the same numbers.
    table = list(
        csv.DictReader(
            io.StringIO(client.get(f"/api/v1/studies/{study_id}/results.csv", headers=headers).text)
        )
    )
    assert len(table) == 1
    row = table[0]
    assert float(row["interval_level"]) == pytest.approx(level)
    assert [float(row["interval_lam_low"]), float(row["interval_lam_high"])] == pytest.approx([low, high])
    assert [float(row["interval_per_rate_low"]), float(row["interval_per_rate_high"])] == pytest.approx(
        intervals["per_rate"]
    )
    for name, pair in intervals["per_person"].items():
        cells = [
            float(row[f"interval_per_person_{name}_low"]),
            float(row[f"interval_per_person_{name}_high"]),
        ]
        assert cells == pytest.approx(pair)
    document = client.get(f"/api/v1/studies/{study_id}/results", headers=headers).json()
    assert document["results"][0]["interval_lam_low"] == pytest.approx(low)
    pyarrow = pytest.importorskip("pyarrow.parquet")
    parquet = client.get(f"/api/v1/studies/{study_id}/results.parquet", headers=headers)
    frame = pyarrow.read_table(io.BytesIO(parquet.content)).to_pylist()
    assert frame[0]["interval_lam_high"] == pytest.approx(high)


def test_panel_and_results_pages_show_each_members_trade_off_interval_as_the_api(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    created, space = _open_study(client, headers, _synthetic_study("panel of three", 12))
    study_id = created["id"]
    rng = np.random.default_rng(11)
    for person, lam in enumerate((0.2, 0.5, 0.8)):
        truth = random_fair_metric(rng, 2, 2, tau=group_tau(space.priors, None), tradeoff_range=(lam, lam))
        finished_session(client, study_id, truth, f"P{person}")
    members = client.get(f"/api/v1/studies/{study_id}/panel", headers=headers).json()["members"]
    assert len(members) == 3
    table = client.get(f"/api/v1/studies/{study_id}/panel.csv", headers=headers)
    assert table.status_code == 200, table.text
    by_session = {
        row["session_id"]: row
        for row in csv.DictReader(io.StringIO(table.text))
        if row["row"] == "participant"
    }
    for member in members:
        row = by_session[member["session_id"]]
        assert [float(row["lam_low"]), float(row["lam_high"])] == pytest.approx(member["intervals"]["lam"])
    login(client, accounts["alice"]["email"])
    panel_page = client.get(f"/admin/studies/{study_id}/panel").text
    results_page = client.get(f"/admin/studies/{study_id}/results").text
    cells = re.findall(r'data-testid="member-lam">(.*?)</td>', panel_page, flags=re.S)
    results_cells = re.findall(r'data-testid="row-lam">(.*?)</td>', results_page, flags=re.S)
    assert len(cells) == len(results_cells) == 3
    for member in members:
        low, high = member["intervals"]["lam"]
        assert member["interval_level"] == pytest.approx(0.9)
        shown = f"{100 * low:.0f}–{100 * high:.0f}"
        assert sum(shown in cell for cell in cells) >= 1, (shown, cells)
        assert sum(f"{low:.2f}–{high:.2f}" in cell for cell in results_cells) >= 1, results_cells
        unsettled = [cell for cell in cells if shown in cell and "not settled" in cell]
        assert bool(unsettled) == (high - low > SETTLED_LAM_WIDTH)


def test_a_short_session_that_leaves_the_trade_off_open_is_told_the_range_on_every_surface(
    client: TestClient, accounts: dict[str, Any], fixed_session_seed: None
) -> None:
    headers = bearer(accounts["alice"]["token"])
    created, space = _open_study(client, headers, _synthetic_study("three questions", 3))
    study_id = created["id"]
    truth = _person(space, 3, TRUE_LAM)
    token = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    result = _answer_from_the_page(client, token, truth)["result"]
    low, high = result["intervals"]["lam"]
    assert high - low > SETTLED_LAM_WIDTH, "three answers cannot settle the trade-off"
    assert low <= TRUE_LAM <= high
    span = f"anywhere from {round(100 * low)}% to {round(100 * high)}%"
    assert span in result["summary"] and "you put about" not in result["summary"]
    assert "A gap of" not in result["summary"], "a gap priced at an unsettled trade-off"
    page = client.get(f"/sessions/{token}/result").text
    assert span in page and "Not settled by your answers" in page and "you put about" not in page
    row = next(
        csv.DictReader(
            io.StringIO(client.get(f"/api/v1/studies/{study_id}/results.csv", headers=headers).text)
        )
    )
    assert [float(row["interval_lam_low"]), float(row["interval_lam_high"])] == pytest.approx([low, high])
