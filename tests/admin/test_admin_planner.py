"""The planner's in-process cache: a study page simulates once per configuration, a changed one afresh."""

from __future__ import annotations

from typing import Any

import pytest
from admin_support import STUDY_CONFIG, bearer, login
from fastapi.testclient import TestClient

from app.planning import planner
from app.planning.planner import PlanCache, plan_study
from app.study_config import parse_study_config


@pytest.fixture
def simulations(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every simulation the planner runs, recorded (the configuration simulated)."""
    calls: list[Any] = []
    simulate = planner._simulate

    def counted(config: Any, *args: Any) -> Any:
        calls.append(config)
        return simulate(config, *args)

    monkeypatch.setattr(planner, "_simulate", counted)
    return calls


def test_plan_cache_simulates_once_per_configuration_and_prices_every_call(simulations: list[Any]) -> None:
    config = parse_study_config(STUDY_CONFIG)
    cache = PlanCache(size=2)
    first = cache.plan(config)
    again = cache.plan(config, seconds_per_query=20.0)
    assert len(simulations) == 1
    assert first == plan_study(config)  # the cached plan is the plan
    assert again.seconds_per_query == 20.0 and again.seconds_source == "set for this study"
    assert again.minutes_mean == pytest.approx(first.comparisons_mean * 20.0 / 60.0)
    assert cache.plan(config, measured_seconds=3.0).seconds_source.startswith("people's sessions")
    assert len(simulations) == 2  # plan_study above simulated; the cache did not

    renamed = parse_study_config({**STUDY_CONFIG, "name": "Renamed"})
    finer = parse_study_config({**STUDY_CONFIG, "algorithm_params": {"epsilon": 0.1, "cycles": 1}})
    cache.plan(renamed)
    cache.plan(finer)
    assert len(simulations) == 4 and len(cache) == 2
    cache.plan(config)  # the least recently used entry was dropped: bounded
    assert len(simulations) == 5


def test_plan_cache_key_has_config_hash_algorithm_and_planner_version() -> None:
    config = parse_study_config(STUDY_CONFIG)
    key = PlanCache.key(config, trials=20, seed=0)
    assert key[1:3] == ("lpme-1", planner.PLANNER_VERSION)
    assert key != PlanCache.key(parse_study_config({**STUDY_CONFIG, "practice_queries": 2}), 20, 0)
    assert key != PlanCache.key(config, trials=5, seed=0) != PlanCache.key(config, trials=20, seed=1)
    with pytest.raises(ValueError, match="at least one"):
        PlanCache(size=0)


def test_second_study_page_view_does_not_rerun_the_planner_and_a_config_change_does(
    client: TestClient, accounts: dict[str, Any], simulations: list[Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    created = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=headers)
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    login(client, accounts["alice"]["email"])

    for _view in range(3):
        page = client.get(f"/admin/studies/{sid}")
        assert page.status_code == 200 and 'data-testid="planner"' in page.text
    assert client.get(f"/api/v1/studies/{sid}/plan", headers=headers).status_code == 200
    assert len(simulations) == 1

    edited = client.patch(
        f"/api/v1/studies/{sid}",
        json={"config": {**STUDY_CONFIG, "algorithm_params": {"epsilon": 0.1, "cycles": 1}}},
        headers=headers,
    )
    assert edited.status_code == 200, edited.text
    assert client.get(f"/admin/studies/{sid}").status_code == 200
    assert len(simulations) == 2
    assert simulations[-1].algorithm_params["epsilon"] == 0.1
    assert client.get(f"/admin/studies/{sid}").status_code == 200
    assert len(simulations) == 2
