"""The results and panel pages' Python snippets: they run as they stand on the study's real export in a
fresh interpreter, never import the web app, and nothing a participant or coordinator typed becomes code."""

from __future__ import annotations

import ast
import html
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from admin_support import METRIC, STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient

from elicitation import FairQuadraticMetric, LinearMetric, Metric
from elicitation.catalogue.registry import group_tau

HOSTILE_CODE = "P-1042\nimport os; os.system('echo pwned')  #"
HOSTILE_CLASS = "benign\nimport shutil; shutil.rmtree('/')  #"
HOSTILE_GROUP = "younger'); __import__('os').system('echo pwned')  #"
#: What a snippet may import: the core, numpy, the standard json module and scikit-learn.
ALLOWED_MODULES = {
    "json",
    "numpy",
    "elicitation",
    "sklearn",
    "sklearn.datasets",
    "sklearn.linear_model",
    "sklearn.model_selection",
    "sklearn.tree",
}
#: The fixed text a snippet may hold besides the server's ids (the study's and sessions' UUIDs).
FIXED_STRINGS = {"utf-8", "consensus", "metric", "sensitive_features"}
#: Appended to every snippet run: the web app was never imported.
NO_APP = (
    "\nimport sys\nassert not [name for name in sys.modules if name == 'app' or name.startswith('app.')]\n"
)
PRIORS = [[0.6, 0.4], [0.7, 0.3]]
TAU = group_tau(PRIORS, [0.4, 0.6])
FAIR_PEOPLE = [
    FairQuadraticMetric(
        a=np.array([0.4, 0.9]), B_pairs={(0, 1): np.array([[1.0, 0.2], [0.2, 0.5]])}, lam=lam, tau=TAU
    )
    for lam in (0.2, 0.6)
]
CONFIGS: dict[str, tuple[dict[str, Any], list[Metric]]] = {
    "linear": (STUDY_CONFIG, [LinearMetric(np.array([0.35, 0.94])), LinearMetric(np.array([0.9, 0.4]))]),
    "quadratic": (
        {**STUDY_CONFIG, "algorithm": "qpme", "algorithm_params": {"epsilon": 0.2}},
        [METRIC, METRIC],
    ),
    "fair": (
        {
            **STUDY_CONFIG,
            "group_names": [HOSTILE_GROUP, "older"],
            "algorithm": "fair_qpme",
            "algorithm_params": {"epsilon": 0.25, "group_shares": [0.4, 0.6]},
            "query_space": {"kind": "synthetic", "radius": 0.2, "priors": PRIORS},
        },
        FAIR_PEOPLE,
    ),
}


def _study(client: TestClient, token: str, family: str) -> tuple[str, list[str]]:
    """A study of ``family`` (a hostile class name) with two finished participants, the first hostile."""
    config, people = CONFIGS[family]
    config = {**config, "class_names": [HOSTILE_CLASS, "malignant"]}
    created = client.post("/api/v1/studies", json=config, headers=bearer(token))
    assert created.status_code == 201, created.text
    sid: str = created.json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    for code, metric in zip((HOSTILE_CODE, "P2"), people, strict=True):
        session = client.post(
            f"/api/v1/studies/{sid}/sessions", json={"consent": True, "participant_code": code}
        )
        assert session.status_code == 201, session.text
        assert Participant(metric).finish(client, session.json()["token"])["status"] == "done"
    rows = client.get(f"/api/v1/studies/{sid}/results", headers=bearer(token)).json()["results"]
    return sid, [row["session_id"] for row in rows]


def _snippet(page: str) -> str:
    match = re.search(r'<pre class="code" data-testid="snippet"[^>]*>(.*?)</pre>', page, re.S)
    assert match, "no snippet on the page"
    return html.unescape(match.group(1))


def _assert_safe(code: str, ids: set[str]) -> ast.Module:
    """Only the allowed imports, no string but the fixed ones and the server's ids, no typed text."""
    tree = ast.parse(code)
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= ALLOWED_MODULES, imported - ALLOWED_MODULES
    strings = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert strings <= FIXED_STRINGS | ids, strings - FIXED_STRINGS - ids
    for typed in (HOSTILE_CODE, HOSTILE_CLASS, HOSTILE_GROUP):
        for line in typed.splitlines():
            assert line not in code
    return tree


def _literal(tree: ast.Module, name: str) -> Any:
    """The list literal of the first ``name = np.array([...])`` in the snippet."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and [ast.unparse(target) for target in node.targets] == [name]:
            call = node.value
            if isinstance(call, ast.Call) and ast.unparse(call.func) == "np.array":
                return np.array(ast.literal_eval(call.args[0]))
    raise AssertionError(f"no {name} = np.array([...]) in the snippet")


def _run(code: str, folder: Path) -> list[str]:
    """Run the snippet in a fresh, isolated interpreter in ``folder``; its printed lines."""
    done = subprocess.run(
        [sys.executable, "-I", "-c", code + NO_APP],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _expected(metric: Metric, tree: ast.Module, fair: bool) -> float:
    y_true, y_pred = _literal(tree, "y_true"), _literal(tree, "y_pred")
    if fair:
        return metric.score(
            y_true, y_pred, labels=[0, 1], sensitive_features=_literal(tree, "groups"), groups=[0, 1]
        )
    return metric.score(y_true, y_pred, labels=[0, 1])


def _check_output(lines: list[str], expected: float, fair: bool) -> None:
    assert float(lines[0]) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert [line.split("(")[0] for line in lines[1:]] == ["LogisticRegression", "DecisionTreeClassifier"]
    scores = [float(line.rsplit(" ", 1)[1]) for line in lines[1:]]
    assert all(math.isfinite(value) for value in scores)
    if fair:
        assert all(value <= 0 for value in scores)  # the negative cost


@pytest.mark.parametrize("family", list(CONFIGS))
def test_results_snippet_runs_on_the_real_export_and_holds_no_typed_text(
    client: TestClient, accounts: dict[str, Any], tmp_path: Path, family: str
) -> None:
    token = accounts["alice"]["token"]
    sid, sessions = _study(client, token, family)
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{sid}/results")
    assert page.status_code == 200
    code = _snippet(page.text)
    tree = _assert_safe(code, {f"results-{sid}.csv", sessions[0]})
    assert f"metrics[{sessions[0]!r}]" in code and "load_results(" in code
    # Who and what the numbers stand for are said beside the code, as escaped page text.
    named = re.search(r'<strong data-testid="snippet-participant">(.*?)</strong>', page.text, re.S)
    assert named and "<" not in named.group(1) and html.unescape(named.group(1)) == HOSTILE_CODE
    assert f"<code>0</code> = {html.escape(HOSTILE_CLASS, quote=False)}" in page.text.replace("&#39;", "'")
    download = client.get(f"/admin/studies/{sid}/export/results.csv")
    assert f'filename="results-{sid}.csv"' in download.headers["content-disposition"]
    (tmp_path / f"results-{sid}.csv").write_bytes(download.content)
    archive = client.get(f"/api/v1/studies/{sid}/archive", headers=bearer(token)).json()
    stored = next(item["result"]["metric"] for item in archive["sessions"] if item["id"] == sessions[0])
    fair = family == "fair"
    _check_output(_run(code, tmp_path), _expected(Metric.from_dict(stored), tree, fair), fair)


@pytest.mark.parametrize("family", ["linear", "fair"])
def test_panel_snippet_runs_on_the_real_panel_json(
    client: TestClient, accounts: dict[str, Any], tmp_path: Path, family: str
) -> None:
    sid, _sessions = _study(client, accounts["alice"]["token"], family)
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{sid}/panel")
    assert page.status_code == 200
    code = _snippet(page.text)
    tree = _assert_safe(code, {f"panel-{sid}.json"})
    download = client.get(f"/admin/studies/{sid}/export/panel.json")
    assert f'filename="panel-{sid}.json"' in download.headers["content-disposition"]
    (tmp_path / f"panel-{sid}.json").write_bytes(download.content)
    consensus = Metric.from_dict(download.json()["consensus"]["metric"])
    fair = family == "fair"
    _check_output(_run(code, tmp_path), _expected(consensus, tree, fair), fair)


def test_fair_snippet_without_finished_sessions_reads_the_archive(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    token = accounts["alice"]["token"]
    created = client.post("/api/v1/studies", json=CONFIGS["fair"][0], headers=bearer(token))
    sid = created.json()["id"]
    login(client, "alice@example.org")
    page = client.get(f"/admin/studies/{sid}/results")
    code = _snippet(page.text)
    _assert_safe(code, {f"study-{sid}.json"})
    assert "next(iter(metrics.values()))" in code and "Study archive (replayable)" in page.text
