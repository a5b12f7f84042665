"""Tidy exports: one column per confusion-matrix cell (as shown and as computed), Wilson intervals next to
every agreement percentage, the earlier columns kept, and optional Parquet downloads."""

from __future__ import annotations

import builtins
import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from admin_support import METRIC, STUDY_CONFIG, bearer, finished_session, login, open_study
from fastapi.testclient import TestClient

from app.admin.export import ANSWER_LOG_COLUMNS, agreement_cells
from app.charts.comparison import display_decimals, rounded_counts
from app.charts.monitor import agreement_figure
from app.plan import wilson_interval
from elicitation import load_results
from elicitation.oracles import random_fair_metric

FAIR = {
    **STUDY_CONFIG,
    "algorithm": "fair_qpme",
    "algorithm_params": {"epsilon": 0.2},
    "group_names": ["women", "men"],
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.6, 0.4], [0.7, 0.3]]},
}
#: The results columns scripts read before the tidy columns were added, in their order.
EARLIER_RESULT_COLUMNS = [
    "study_id",
    "session_id",
    "participant_code",
    "status",
    "excluded",
    "exclusion_reason",
    "algorithm",
    "algorithm_version",
    "config_hash",
    "created_at",
    "consented_at",
    "finished_at",
    "duration_s",
    "num_queries",
    "metric_type",
    "a_benign",
    "a_malignant",
    "evaluation_pairs",
    "agreement_elicited_pct",
    "agreement_accuracy_pct",
    "agreement_equal_weights_pct",
    "checks_shown",
    "checks_passed",
]


def _csv(client: TestClient, url: str, token: str) -> list[dict[str, str]]:
    response = client.get(url, headers=bearer(token))
    assert response.status_code == 200, response.text
    return list(csv.DictReader(io.StringIO(response.text)))


def _study(client: TestClient, token: str, config: dict[str, Any]) -> str:
    sid = open_study(client, token, config)
    for code in ("P1", "P2"):
        finished_session(client, sid, METRIC if not config.get("group_names") else _fair(), code)
    return sid


def _fair() -> Any:
    return random_fair_metric(np.random.default_rng(3), 2, 2, tau=[[0.5, 0.6], [0.5, 0.4]])


@pytest.mark.parametrize("config", [STUDY_CONFIG, FAIR], ids=["plain", "groups"])
def test_answer_log_has_one_column_per_cell_as_shown_and_as_computed(
    client: TestClient, accounts: dict[str, Any], config: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    sid = _study(client, token, config)
    response = client.get(f"/api/v1/studies/{sid}/answers.csv", headers=bearer(token))
    header = next(csv.reader(io.StringIO(response.text)))
    assert header[: len(ANSWER_LOG_COLUMNS)] == ANSWER_LOG_COLUMNS, "the earlier columns stay, in order"
    classes = config["class_names"]
    groups = config.get("group_names") or []
    prefixes = [f"{g}_" for g in groups] or [""]
    cells = [f"{p}{t}_{q}" for p in prefixes for t in classes for q in classes]
    for side in ("left", "right"):
        for kind in ("shown", "computed"):
            assert [f"{side}_{kind}_{cell}" in header for cell in cells] == [True] * len(cells)
    rows = list(csv.DictReader(io.StringIO(response.text)))
    answered = [row for row in rows if row["left_confusion"]]
    assert answered
    for row in answered:
        left = np.asarray(json.loads(row["left_confusion"]), dtype=np.float64)
        right = np.asarray(json.loads(row["right_confusion"]), dtype=np.float64)
        decimals = display_decimals(left, right)
        for side, exact in (("left", left), ("right", right)):
            computed = np.array([float(row[f"{side}_computed_{cell}"]) for cell in cells])
            np.testing.assert_array_equal(computed, exact.reshape(-1))
            shown = np.array([float(row[f"{side}_shown_{cell}"]) for cell in cells])
            np.testing.assert_array_equal(shown, rounded_counts(exact, decimals).reshape(-1))
            per_matrix = shown.reshape(-1, len(classes) ** 2).sum(axis=1)
            np.testing.assert_allclose(per_matrix, 100.0, atol=1e-9)
    undo_rows = [row for row in rows if row["action"] == "undo"]
    assert all(row[f"left_shown_{cells[0]}"] == "" for row in undo_rows)


def test_results_give_a_wilson_interval_next_to_every_agreement_percentage(
    client: TestClient, accounts: dict[str, Any], tmp_path: Path
) -> None:
    token = accounts["alice"]["token"]
    sid = _study(client, token, STUDY_CONFIG)
    response = client.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(token))
    header = next(csv.reader(io.StringIO(response.text)))
    assert [column for column in header if column in EARLIER_RESULT_COLUMNS] == EARLIER_RESULT_COLUMNS
    for key in ("elicited", "accuracy", "equal_weights"):
        at = header.index(f"agreement_{key}_pct")
        assert header[at + 1 : at + 3] == [f"agreement_{key}_low_pct", f"agreement_{key}_high_pct"]
    archive = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(token)).json()
    evaluations = {s["id"]: s["result"]["evaluation"] for s in archive["sessions"] if s.get("result")}
    for row in csv.DictReader(io.StringIO(response.text)):
        if row["status"] != "done":
            continue
        for key in ("elicited", "accuracy", "equal_weights"):
            item = evaluations[row["session_id"]][key]
            low, high = wilson_interval(item["agreed"], item["decided"])
            assert float(row[f"agreement_{key}_low_pct"]) == pytest.approx(100 * low, abs=1e-9)
            assert float(row[f"agreement_{key}_high_pct"]) == pytest.approx(100 * high, abs=1e-9)
            assert float(row[f"agreement_{key}_low_pct"]) <= float(row[f"agreement_{key}_pct"])
    # the results page shows the interval beside M, and the export still loads back bit for bit
    login(client, accounts["alice"]["email"])
    page = client.get(f"/admin/studies/{sid}/results")
    assert 'data-testid="agreement-note"' in page.text and "Wilson" in page.text
    assert "evaluation answers, with 95% intervals" in page.text and "95% interval" in page.text
    path = tmp_path / "results.csv"
    path.write_text(response.text, encoding="utf-8")
    results = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()["results"]
    loaded = load_results(path)
    for row in results:
        if row["status"] == "done":
            assert loaded[row["session_id"]].to_dict()["a"] == [row["a_benign"], row["a_malignant"]]


def test_old_results_without_a_stored_interval_get_it_from_their_counts() -> None:
    cells = agreement_cells({"elicited": {"agreed": 9, "decided": 10, "percent": 90.0}})
    low, high = wilson_interval(9, 10)
    assert cells["agreement_elicited_low_pct"] == pytest.approx(100 * low)
    assert cells["agreement_elicited_high_pct"] == pytest.approx(100 * high)
    assert cells["agreement_accuracy_pct"] is None and cells["agreement_accuracy_low_pct"] is None


def test_parquet_downloads_hold_the_csv_tables(client: TestClient, accounts: dict[str, Any]) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    token = accounts["alice"]["token"]
    sid = _study(client, token, FAIR)
    for name in ("results", "answers"):
        response = client.get(f"/api/v1/studies/{sid}/{name}.parquet", headers=bearer(token))
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/vnd.apache.parquet"
        table = pq.read_table(io.BytesIO(response.content)).to_pylist()
        rows = _csv(client, f"/api/v1/studies/{sid}/{name}.csv", token)
        assert len(table) == len(rows)
        assert list(table[0]) == list(rows[0])
        for parquet_row, csv_row in zip(table, rows, strict=True):
            for column, value in parquet_row.items():
                text = csv_row[column]
                if value is None:
                    assert text == ""
                elif isinstance(value, bool):
                    assert text == str(value)
                elif isinstance(value, float):
                    assert float(text) == value, column  # the CSV's repr round-trips exactly
                else:
                    assert text.lstrip("'") == str(value)
    login(client, accounts["alice"]["email"])
    download = client.get(f"/admin/studies/{sid}/export/results.parquet")
    assert download.status_code == 200 and download.content.startswith(b"PAR1")


def test_parquet_without_pyarrow_is_a_clear_501(
    client: TestClient, accounts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = accounts["alice"]["token"]
    sid = _study(client, token, STUDY_CONFIG)
    real_import = builtins.__import__

    def without_pyarrow(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "pyarrow" or name.startswith("pyarrow."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_pyarrow)
    response = client.get(f"/api/v1/studies/{sid}/results.parquet", headers=bearer(token))
    assert response.status_code == 501
    assert "pip install 'elicitation-studio[parquet]'" in response.text
    assert client.get(f"/api/v1/studies/{sid}/results.csv", headers=bearer(token)).status_code == 200


def test_agreement_charts_draw_each_percentage_with_its_interval() -> None:
    figure = agreement_figure([("elicited metric", 90.0, 59.6, 98.2), ("accuracy", None, None, None)])
    bars, intervals = figure["figure"]["data"]
    assert bars["y"] == [90.0, 0.0] and "95% interval" in bars["hovertemplate"]
    assert intervals["x"] == ["elicited metric", "elicited metric", None]
    assert intervals["y"] == [59.6, 98.2, None]
