"""Archive import trusts nothing: a refused archive is a 4xx that stores nothing (fuzzed with hypothesis)."""

from __future__ import annotations

import copy
import secrets
import uuid
from typing import Any

import pytest
from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(["bogus", "weird", "", "open", "done", "answer", "x" * 300]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def _archive(client: TestClient, token: str) -> dict[str, Any]:
    sid = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    done = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True, "participant_code": "P1"})
    Participant(METRIC).finish(client, done.json()["token"])
    under_way = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    Participant(METRIC).answer(client, under_way, client.get(f"/api/v1/sessions/{under_way}").json())
    archive: dict[str, Any] = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(token)).json()
    return archive


def _fresh_ids(archive: dict[str, Any]) -> dict[str, Any]:
    """The same archive under new study and session ids (so each import is independent of the last)."""
    copied = copy.deepcopy(archive)
    copied["study"]["id"] = str(uuid.uuid4())
    for session in copied["sessions"]:
        session["id"] = str(uuid.uuid4())
        session["token_hash"] = secrets.token_hex(32)
    return copied


@pytest.fixture
def archive(client: TestClient, accounts: dict[str, Any]) -> dict[str, Any]:
    return _archive(client, accounts["alice"]["token"])


def _assert_refused_and_absent(client: TestClient, token: str, body: dict[str, Any], status: int) -> None:
    response = client.post("/api/v1/studies/import", json=body, headers=bearer(token))
    assert response.status_code == status, response.text
    assert response.json()["error"] != "exists" or status == 409
    study_id = body["study"]["id"]
    assert client.get(f"/api/v1/studies/{study_id}", headers=bearer(token)).status_code == 404
    assert client.get("/api/v1/studies", headers=bearer(token)).status_code == 200


def _session(body: dict[str, Any], finished: bool) -> dict[str, Any]:
    session: dict[str, Any] = next(s for s in body["sessions"] if (s["result"] is not None) == finished)
    return session


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda a: a["study"].__setitem__("status", "bogus"), id="study-status"),
        pytest.param(lambda a: _session(a, True).__setitem__("status", "weird"), id="session-status"),
        pytest.param(lambda a: _session(a, True).__setitem__("seed", 2**70), id="seed-overflow"),
        pytest.param(lambda a: a["study"].__setitem__("seconds_per_query", "x"), id="seconds-text"),
        pytest.param(lambda a: _session(a, True).pop("created_at"), id="missing-not-null"),
        pytest.param(lambda a: _session(a, True)["answers"][0].__setitem__("seq", 7), id="seq-gap"),
        pytest.param(
            lambda a: _session(a, False)["answers"][0]["query"].__setitem__("first", [[1, 2], [3]]),
            id="query-shape",
        ),
        pytest.param(
            lambda a: _session(a, True)["answers"][-1]["shown"]["left"].__setitem__("confusion", "x"),
            id="shown-shape",
        ),
        pytest.param(lambda a: _session(a, True)["result"].__setitem__("metric", {"type": "x"}), id="metric"),
        pytest.param(
            lambda a: _session(a, True)["result"]["evaluation"].__setitem__("elicited", {"percent": ""}),
            id="agreement-text",
        ),
        pytest.param(
            lambda a: _session(a, True)["result"]["evaluation"]["accuracy"].__setitem__(
                "interval_percent", [1]
            ),
            id="agreement-interval",
        ),
        pytest.param(
            lambda a: _session(a, True)["result"]["evaluation"].__setitem__("equal_weights", [3]),
            id="agreement-list",
        ),
        pytest.param(
            lambda a: _session(a, True)["result"]["checks"]["dominance"].__setitem__("shown", None),
            id="check-count-null",
        ),
        pytest.param(
            lambda a: _session(a, True)["result"]["checks"].__setitem__("repeat", {"shown": 1, "passed": 2}),
            id="check-more-passed-than-shown",
        ),
        pytest.param(
            lambda a: _session(a, True).__setitem__("participant_code", "p" * 201), id="code-too-long"
        ),
    ],
)
def test_import_refuses_bad_fields_with_422_and_stores_nothing(
    client: TestClient, accounts: dict[str, Any], archive: dict[str, Any], tamper: Any
) -> None:
    body = _fresh_ids(archive)
    tamper(body)
    _assert_refused_and_absent(client, accounts["alice"]["token"], body, 422)
    csrf = login(client, "alice@example.org")
    assert csrf and client.get("/admin").status_code == 200


def test_import_duplicate_session_ids_are_a_conflict_not_a_crash(
    client: TestClient, accounts: dict[str, Any], archive: dict[str, Any]
) -> None:
    body = _fresh_ids(archive)
    body["sessions"][1]["id"] = body["sessions"][0]["id"]
    _assert_refused_and_absent(client, accounts["alice"]["token"], body, 422)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            found += _paths(item, (*prefix, index))
    return found


def _mutate(body: dict[str, Any], path: tuple[Any, ...], value: Any, delete: bool) -> None:
    parent: Any = body
    for part in path[:-1]:
        parent = parent[part]
    if delete and isinstance(parent, dict):
        parent.pop(path[-1])
    else:
        parent[path[-1]] = value


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_import_fuzzed_archives_never_5xx_and_refusals_store_nothing(
    client: TestClient, accounts: dict[str, Any], archive: dict[str, Any], data: st.DataObject
) -> None:
    token = accounts["alice"]["token"]
    body = _fresh_ids(archive)
    # The study's id is how the test finds what was stored: the study object and its id stay.
    paths = [path for path in _paths(body) if path[:2] != ("study", "id") and path != ("study",)]
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        path = data.draw(st.sampled_from(paths), label="path")
        try:
            _mutate(
                body, path, data.draw(JSON_VALUES, label="value"), data.draw(st.booleans(), label="delete")
            )
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced this path's parent
    response = client.post("/api/v1/studies/import", json=body, headers=bearer(token))
    assert response.status_code in (201, 409, 422), response.text
    stored = client.get(f"/api/v1/studies/{body['study']['id']}", headers=bearer(token))
    if response.status_code == 201:
        assert stored.status_code == 200
        for view in ("results", "dashboard", "archive"):
            page = client.get(f"/api/v1/studies/{body['study']['id']}/{view}", headers=bearer(token))
            assert page.status_code == 200, view
    else:
        assert stored.status_code == 404
    assert client.get("/api/v1/studies", headers=bearer(token)).status_code == 200


def _drifted(archive: dict[str, Any], numerics: str) -> dict[str, Any]:
    """The archive with its first logged elicitor question moved, as another computer's rounding could have
    asked it, and said to come from a server computing with ``numerics``."""
    body = _fresh_ids(archive)
    body["numerics"] = numerics
    answer = next(row for row in _session(body, True)["answers"] if row["phase"] == "elicitation")
    answer["query"]["first"] = [round(rate * 0.9, 6) for rate in answer["query"]["first"]]
    return body


def test_a_refused_replay_names_the_numerical_libraries_when_the_archive_came_from_another(
    client: TestClient, accounts: dict[str, Any], archive: dict[str, Any]
) -> None:
    """An active elicitor's questions depend on the BLAS kernels the CPU gets: the refusal says so, and
    names both computers' libraries when the archive says which one it came from."""
    from app.sessions.replay import numeric_platform

    token = accounts["alice"]["token"]
    here = numeric_platform()
    assert archive["numerics"] == here and here.startswith("numpy ")
    elsewhere = _drifted(archive, "numpy 2.0.0, openblas Zen")
    response = client.post("/api/v1/studies/import", json=elsewhere, headers=bearer(token))
    assert response.status_code == 422, response.text
    message = response.json()["message"]
    assert "differs from the logged one" in message
    assert f"rounds differently (this one computes with {here})" in message
    assert "made on a server that computed with numpy 2.0.0, openblas Zen: the active elicitors" in message
    assert "same numerical library and CPU family" in message
    same_place = client.post(
        "/api/v1/studies/import", json=_drifted(archive, here), headers=bearer(token)
    ).json()["message"]
    assert f"rounds differently (this one computes with {here})" in same_place
    assert "made on a server" not in same_place
    # The same questions to another metric (a last near-tie gone the other way): both libraries named.
    other_metric = _fresh_ids(archive)
    other_metric["numerics"] = "numpy 2.0.0, openblas Zen"
    metric = _session(other_metric, True)["result"]["metric"]
    metric["a"] = [round(weight * 0.8, 6) for weight in metric["a"]]
    message = client.post("/api/v1/studies/import", json=other_metric, headers=bearer(token)).json()[
        "message"
    ]
    assert "replay gives a different metric" in message
    assert f"computed with numpy 2.0.0, openblas Zen, this one with {here}: the active elicitors" in message
