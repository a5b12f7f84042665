"""The results page's scoring snippet: nothing a participant or coordinator typed becomes code."""

from __future__ import annotations

import ast
import html
import re
from typing import Any

import pytest
from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient

HOSTILE_CODE = "P-1042\nimport os; os.system('echo pwned')  #"
HOSTILE_CLASS = "benign\nimport shutil; shutil.rmtree('/')  #"
ALLOWED_MODULES = {"numpy", "elicitation", "app.codec"}


def _snippet_and_page(client: TestClient, token: str, config: dict[str, Any]) -> tuple[str, str]:
    sid = client.post("/api/v1/studies", json=config, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    created = client.post(
        f"/api/v1/studies/{sid}/sessions", json={"consent": True, "participant_code": HOSTILE_CODE}
    )
    assert created.status_code == 201, created.text
    assert Participant(METRIC).finish(client, created.json()["token"])["status"] == "done"
    page = client.get(f"/admin/studies/{sid}/results")
    assert page.status_code == 200
    match = re.search(r'<pre class="code" data-testid="snippet">(.*?)</pre>', page.text, re.S)
    assert match, "no snippet on the results page"
    return html.unescape(match.group(1)), page.text


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(STUDY_CONFIG, id="linear"),
        pytest.param(
            {**STUDY_CONFIG, "algorithm": "qpme", "algorithm_params": {"epsilon": 0.2}}, id="quadratic"
        ),
    ],
)
def test_snippet_code_holds_no_typed_text(client: TestClient, accounts: dict[str, Any], config: Any) -> None:
    login(client, "alice@example.org")
    config = {**config, "class_names": [HOSTILE_CLASS, "malignant"]}
    code, page = _snippet_and_page(client, accounts["alice"]["token"], config)
    tree = ast.parse(code)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= ALLOWED_MODULES
    assert not [
        node for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]
    for typed in (HOSTILE_CODE, HOSTILE_CLASS):
        for line in typed.splitlines():
            assert line not in code
    # Who and which classes are said beside the code, as escaped page text.
    named = re.search(r'<strong data-testid="snippet-participant">(.*?)</strong>', page, re.S)
    assert named and "<" not in named.group(1) and html.unescape(named.group(1)) == HOSTILE_CODE
