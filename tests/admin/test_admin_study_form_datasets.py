"""The study form builds any study the configuration file can: a picker of the bundled datasets (classes,
groups and size as the data has them), the recommended elicitor per kind of study, and the advanced JSON
box as the whole truth even with the fields above left empty."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from admin_support import hidden, login
from fastapi.testclient import TestClient

from app.admin.study_form import BUNDLED_DATASETS, dataset_choices
from app.models import Study
from app.study_config import StudyConfig
from elicitation.lab.datasets import DATASET_NAMES, load_dataset


@pytest.mark.parametrize("item", BUNDLED_DATASETS, ids=lambda item: item.name)
def test_the_picker_describes_each_bundled_dataset_as_its_data_has_it(item: Any) -> None:
    dataset = load_dataset(item.name)
    assert (item.classes, item.groups, item.rows) == (
        dataset.class_names,
        dataset.group_names,
        dataset.n_rows,
    )


def test_the_picker_offers_every_bundled_dataset() -> None:
    assert sorted(item.name for item in BUNDLED_DATASETS) == sorted(DATASET_NAMES)
    labels = dict(dataset_choices())
    assert labels["adult"].endswith("groups Female, Male (fairness study)")
    assert "45,222 people" in labels["adult"] and labels["adult:without-groups"].endswith("without groups")


def _form(csrf: str, **fields: str) -> dict[str, str]:
    return {
        "csrf_token": csrf,
        "action": "save",
        "practice_queries": "0",
        "evaluation_queries": "0",
        **fields,
    }


def _saved(client: TestClient, app: Any, data: dict[str, str]) -> dict[str, Any]:
    response = client.post("/admin/studies/new", data=data, follow_redirects=False)
    assert response.status_code == 303, response.text
    with app.state.sessionmaker() as db:
        study = db.get(Study, uuid.UUID(response.headers["location"].rsplit("/", 1)[-1]))
        return {"algorithm": study.algorithm, **study.config}


def test_a_picked_dataset_with_groups_makes_a_fairness_study_with_the_group_elicitor(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    login(client, accounts["alice"]["email"])
    page = client.get("/admin/studies/new")
    assert 'data-testid="field-dataset"' in page.text and "Breast cancer biopsies (Wisconsin)" in page.text
    assert ' required data-testid="field-name"' not in page.text  # the JSON box may set the name instead
    fields = _form(hidden(page.text, "csrf_token"), name="Loans", task="Decide whether income is high.")
    config = _saved(client, app, {**fields, "dataset": "adult", "class_names": "ignored, names"})
    assert config["algorithm"] == "active_fair"
    assert config["class_names"] == ["income <=50K", "income >50K"]
    assert config["group_names"] == ["Female", "Male"]
    assert (
        config["query_space"]["kind"] == "dataset" and config["query_space"]["recipe"]["dataset"] == "adult"
    )
    without = _saved(client, app, {**fields, "dataset": "breast-cancer"})
    assert without["algorithm"] == "active_quadratic" and without["group_names"] == []
    assert without["class_names"] == ["benign", "malignant"]


def test_a_dataset_and_a_csv_together_or_an_unknown_dataset_are_refused(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    login(client, accounts["alice"]["email"])
    csrf = hidden(client.get("/admin/studies/new").text, "csrf_token")
    both = client.post(
        "/admin/studies/new",
        data=_form(csrf, name="x", task="t", dataset="iris", label_column="y"),
        files={"dataset_csv": ("d.csv", b"a,y\n1,2\n", "text/csv")},
    )
    assert both.status_code == 422 and "not both" in both.text
    unknown = client.post("/admin/studies/new", data=_form(csrf, name="x", task="t", dataset="<b>x</b>"))
    assert unknown.status_code == 422 and "unknown choice" in unknown.text
    assert "<b>x</b>" not in unknown.text  # shown escaped, never as markup
    with app.state.sessionmaker() as db:
        assert db.query(Study).count() == 0


def test_the_json_box_is_the_whole_study_when_the_fields_are_empty(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    login(client, accounts["alice"]["email"])
    csrf = hidden(client.get("/admin/studies/new").text, "csrf_token")
    wanted = {
        "name": "From JSON",
        "task": "Decide whether a tumour is benign.",
        "class_names": ["benign", "malignant"],
        "algorithm": "lpme",
        "query_space": {"kind": "dataset", "recipe": {"dataset": "breast-cancer", "seed": 0}},
    }
    config = _saved(client, app, {**_form(csrf, name="", task=""), "config_json": json.dumps(wanted)})
    assert config["name"] == "From JSON" and config["algorithm"] == "lpme"
    # The form's own fields are ignored: its 0 practice questions did not replace the default.
    assert config["practice_queries"] == StudyConfig.model_fields["practice_queries"].default != 0
