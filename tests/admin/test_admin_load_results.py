"""`elicitation.load_results` on real exports: every finished session's metric comes back bit for bit from
the results CSV, the results JSON and the study archive (plain and gzip-compressed)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from admin_support import STUDY_CONFIG, Participant, bearer
from fastapi.testclient import TestClient

from elicitation import FairQuadraticMetric, InvalidConfigError, Metric, QuadraticMetric, load_results
from elicitation.catalogue.registry import group_tau

PRIORS = [[0.6, 0.4], [0.7, 0.3]]
QPME_STUDY: dict[str, Any] = {
    **STUDY_CONFIG,
    "class_names": ["benign", "malignant", "a_b"],  # a class name that itself looks like a column prefix
    "algorithm": "qpme",
    "algorithm_params": {"epsilon": 0.2},
    "query_space": {"kind": "synthetic", "radius": 0.2},
}
FAIR_STUDY: dict[str, Any] = {
    **STUDY_CONFIG,
    "name": "Fair screening",
    "group_names": ["younger", "older"],
    "algorithm": "fair_qpme",
    "algorithm_params": {"epsilon": 0.25, "group_shares": [0.4, 0.6]},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": PRIORS},
}
PEOPLE: dict[str, list[Metric]] = {
    "qpme": [
        QuadraticMetric(np.array([0.3, 0.8, 0.1]), np.diag([-0.3, -0.2, -0.1])),
        QuadraticMetric(np.array([0.9, 0.1, 0.4]), np.diag([-0.1, -0.5, -0.2])),
        QuadraticMetric(np.array([0.2, 0.2, 0.9]), np.diag([-0.4, -0.1, -0.3])),
    ],
    "fair_qpme": [
        FairQuadraticMetric(
            a=np.array([0.4, 0.9]),
            B_pairs={(0, 1): np.array([[1.0, 0.2], [0.2, 0.5]])},
            lam=lam,
            tau=group_tau(PRIORS, [0.4, 0.6]),
        )
        for lam in (0.2, 0.7)
    ],
}


def _run(client: TestClient, token: str, config: dict[str, Any]) -> str:
    study = client.post("/api/v1/studies", json=config, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{study}", json={"status": "open"}, headers=bearer(token))
    for index, truth in enumerate(PEOPLE[config["algorithm"]]):
        session = client.post(
            f"/api/v1/studies/{study}/sessions", json={"consent": True, "participant_code": f"P{index + 1}"}
        )
        Participant(truth).finish(client, session.json()["token"])
    client.post(f"/api/v1/studies/{study}/sessions", json={"consent": True})  # never finished
    return study


def _stored(archive: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        session["id"]: session["result"]["metric"]
        for session in archive["sessions"]
        if session["result"] is not None
    }


@pytest.mark.parametrize("config", [QPME_STUDY, FAIR_STUDY], ids=["qpme", "fair_qpme"])
def test_every_export_loads_back_the_stored_metrics_bit_for_bit(
    client: TestClient, accounts: dict[str, Any], tmp_path: Path, config: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    study = _run(client, token, config)
    archive = client.get(f"/api/v1/studies/{study}/archive", headers=bearer(token)).json()
    stored = _stored(archive)
    assert len(stored) == len(PEOPLE[config["algorithm"]])
    files = {
        "results.csv": client.get(f"/api/v1/studies/{study}/results.csv", headers=bearer(token)).content,
        "results.json": client.get(f"/api/v1/studies/{study}/results", headers=bearer(token)).content,
        "archive.json": json.dumps(archive).encode(),
        "archive.json.gz": gzip.compress(json.dumps(archive).encode()),
    }
    fair = config["algorithm"] == "fair_qpme"
    tau = next(iter(stored.values())).get("tau")
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content)
        table = name.startswith("results")
        loaded = load_results(path, tau=tau if fair and table else None)
        assert list(loaded) == list(stored), name
        for session_id, metric in loaded.items():
            # to_dict is the codec: equal dicts mean every coefficient is the same float.
            assert metric.to_dict() == stored[session_id], (name, session_id)
        by_code = load_results(path, key="participant_code", tau=tau if fair and table else None)
        assert sorted(by_code) == [f"P{i + 1}" for i in range(len(stored))]
    if fair:
        with pytest.raises(InvalidConfigError, match="pass tau"):
            load_results(tmp_path / "results.csv")


def test_excluded_sessions_are_left_out_unless_asked_for(
    client: TestClient, accounts: dict[str, Any], tmp_path: Path
) -> None:
    token = accounts["alice"]["token"]
    study = _run(client, token, QPME_STUDY)
    rows = client.get(f"/api/v1/studies/{study}/results", headers=bearer(token)).json()["results"]
    dropped = next(row["session_id"] for row in rows if row["participant_code"] == "P2")
    client.post(
        f"/api/v1/studies/{study}/sessions/{dropped}/exclusion",
        json={"reason": "answered at random"},
        headers=bearer(token),
    )
    archive = client.get(f"/api/v1/studies/{study}/archive", headers=bearer(token)).content
    table = client.get(f"/api/v1/studies/{study}/results.csv", headers=bearer(token)).content
    for name, content in (("archive.json", archive), ("results.csv", table)):
        path = tmp_path / name
        path.write_bytes(content)
        assert sorted(load_results(path, key="participant_code")) == ["P1", "P3"], name
        assert sorted(load_results(path, key="participant_code", include_excluded=True)) == ["P1", "P2", "P3"]


def test_load_results_rejects_what_is_not_an_export(tmp_path: Path) -> None:
    cases = {
        "other.json": (b'{"rows": []}', "not a study export"),
        "broken.json": (b'{"sessions": [', "not valid JSON"),
        "plain.csv": (b"name,value\r\nx,1\r\n", "no 'session_id' column"),
        "binary.bin": (b"\xff\xfe\x00", "not UTF-8"),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(InvalidConfigError, match=message):
            load_results(path)
    with pytest.raises(InvalidConfigError, match="cannot read the export"):
        load_results(tmp_path / "missing.csv")
    with pytest.raises(InvalidConfigError, match="key must be one of"):
        load_results(tmp_path / "other.json", key="email")
