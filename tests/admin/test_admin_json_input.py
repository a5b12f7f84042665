"""JSON a coordinator types or uploads: text that cannot be decoded is a 422 (CLI: exit 2) saying why.

100,000 nested ``[`` made the standard parser raise `RecursionError`, which became a 500 in the import
page, the study form's configuration box and ``POST /api/v1/studies/from-csv``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from admin_support import STUDY_CONFIG, bearer, hidden, login
from fastapi.testclient import TestClient

from app.admin.models import User
from app.cli import main
from app.json_input import JSONInputError, decode_json
from app.models import Study
from app.settings import Settings

#: Small enough for every size limit, far too deep for the parser's recursion.
NESTED = "[" * 100_000 + "]" * 100_000
TOO_DEEP = "nested too deeply"


def _count(app: Any, model: type[Any]) -> int:
    with app.state.sessionmaker() as db:
        return int(db.query(model).count())


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (NESTED, TOO_DEEP),
        (NESTED.encode(), TOO_DEEP),
        (
            "{not json",
            "is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
        ),
        (b"\xff\xfe[]", "is not UTF-8 text"),
        ("", "is not valid JSON: Expecting value (line 1, column 1)"),
    ],
)
def test_decode_json_names_the_problem(raw: str | bytes, message: str) -> None:
    with pytest.raises(JSONInputError) as caught:
        decode_json(raw)
    assert message in str(caught.value)


def test_decode_json_decodes_what_is_json() -> None:
    assert decode_json(b'{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    assert decode_json("[[[]]]") == [[[]]]


def test_import_page_refuses_deeply_nested_json_with_422(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    response = client.post(
        "/admin/import",
        data={"csrf_token": csrf},
        files={"archive": ("a.json", NESTED.encode(), "application/json")},
    )
    assert response.status_code == 422
    assert f"the file is not usable JSON: its arrays or objects are {TOO_DEEP}" in response.text
    assert _count(app, Study) == 0


def test_study_form_refuses_deeply_nested_configuration_json_with_422(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    csrf = login(client, "alice@example.org")
    form = client.get("/admin/studies/new")
    assert form.status_code == 200
    response = client.post(
        "/admin/studies/new",
        data={"csrf_token": hidden(form.text, "csrf_token"), "action": "save", "config_json": NESTED},
        follow_redirects=False,
    )
    assert response.status_code == 422
    assert f"configuration JSON is not usable JSON: its arrays or objects are {TOO_DEEP}" in response.text
    assert csrf and _count(app, Study) == 0


def test_api_from_csv_refuses_deeply_nested_config_with_422(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    response = client.post(
        "/api/v1/studies/from-csv",
        data={"config": NESTED, "label_column": "diagnosis"},
        files={"file": ("data.csv", b"x,diagnosis\n1,a\n2,b\n", "text/csv")},
        headers=bearer(accounts["alice"]["token"]),
    )
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["message"] == f"config is not usable JSON: its arrays or objects are {TOO_DEEP}"
    assert _count(app, Study) == 0


def test_cli_refuses_deeply_nested_files_with_exit_2(
    cli_env: Settings, app: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nested = tmp_path / "nested.json"
    nested.write_text(NESTED, encoding="utf-8")
    assert main(["study", "import", str(nested)]) == 2
    assert f"{nested} is not usable JSON" in capsys.readouterr().err
    assert main(["study", "create", str(nested)]) == 2
    assert TOO_DEEP in capsys.readouterr().err
    valid = tmp_path / "study.json"
    valid.write_text(json.dumps(STUDY_CONFIG), encoding="utf-8")
    assert main(["study", "create", str(valid)]) == 0
    assert _count(app, Study) == 1 and _count(app, User) == 0
