"""A study that names no algorithm gets the recommended elicitor for its groups: config, API, form and CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from admin_support import PASSWORD, STUDY_CONFIG, bearer, hidden, login
from fastapi.testclient import TestClient

from app.cli import main
from app.settings import Settings
from app.study_config import StudyConfigError, parse_study_config

#: A small two-group study that leaves the algorithm out.
GROUP_STUDY: dict[str, Any] = {
    **{key: value for key, value in STUDY_CONFIG.items() if key not in ("algorithm", "algorithm_params")},
    "group_names": ["women", "men"],
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.6, 0.4], [0.7, 0.3]]},
}
PLAIN_STUDY = {key: value for key, value in GROUP_STUDY.items() if key != "group_names"}
PLAIN_STUDY["query_space"] = {"kind": "synthetic", "radius": 0.2, "priors": [0.6, 0.4]}


@pytest.mark.parametrize("algorithm", [None, ""], ids=["absent-or-null", "empty"])
def test_config_without_algorithm_takes_the_recommended_one_for_its_groups(algorithm: str | None) -> None:
    extra = {} if algorithm is None else {"algorithm": algorithm}
    assert parse_study_config({**GROUP_STUDY, **extra}).algorithm == "active_fair"
    assert parse_study_config({**PLAIN_STUDY, **extra}).algorithm == "active_quadratic"
    assert parse_study_config({**GROUP_STUDY, "algorithm": None}).algorithm == "active_fair"
    # A named algorithm is kept, and still refused when it cannot use the groups.
    with pytest.raises(StudyConfigError, match="does not use groups"):
        parse_study_config({**GROUP_STUDY, "algorithm": "active_quadratic"})
    with pytest.raises(StudyConfigError, match="give at least 2 groups"):
        parse_study_config({**GROUP_STUDY, "group_names": ["women"]})


def test_api_creates_a_group_study_without_algorithm_with_the_fairness_elicitor(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    headers = bearer(accounts["alice"]["token"])
    created = client.post("/api/v1/studies", json=GROUP_STUDY, headers=headers)
    assert created.status_code == 201, created.text
    assert created.json()["algorithm"] == "active_fair"
    assert created.json()["config"]["algorithm"] == "active_fair"
    plain = client.post("/api/v1/studies", json={**PLAIN_STUDY, "name": "plain"}, headers=headers)
    assert plain.status_code == 201, plain.text
    assert plain.json()["algorithm"] == "active_quadratic"


def test_form_left_at_recommended_creates_a_fairness_study_for_groups(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    login(client, accounts["alice"]["email"])
    page = client.get("/admin/studies/new").text
    assert '<option value="" selected>Recommended' in page
    response = client.post(
        "/admin/studies/new",
        data={
            "csrf_token": hidden(page, "csrf_token"),
            "name": "groups, recommended",
            "task": "t",
            "class_names": "benign, malignant",
            "group_names": "women, men",
            "algorithm": "",
            "radius": "0.2",
            "practice_queries": "1",
            "evaluation_queries": "2",
        },
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    shown = client.get(response.headers["location"]).text
    assert "active_fair" in shown


def test_cli_study_create_without_algorithm_uses_the_fairness_elicitor_for_groups(
    settings: Settings,
    app: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABASE_URL", settings.database_url)
    if settings.database_schema:
        monkeypatch.setenv("DATABASE_SCHEMA", settings.database_schema)
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", PASSWORD)
    config_file = tmp_path / "groups.toml"
    config_file.write_text(
        "\n".join(
            [
                'name = "groups from a file"',
                'task = "t"',
                'class_names = ["benign", "malignant"]',
                'group_names = ["women", "men"]',
            ]
        )
    )
    assert main(["study", "create", str(config_file)]) == 0
    out = capsys.readouterr().out
    assert main(["study", "list"]) == 0
    listed = capsys.readouterr().out
    study_id = out.split()[2]
    assert any(study_id in line and "active_fair" in line for line in listed.splitlines()), listed
