"""No developer wording where people read: templates, static files, algorithm labels and rendered pages.

Participants and coordinators never see issue numbers, the paper's algorithm numbers or LaTeX; the
paper's names for methods (QPME, ...) are fine, the way a reader of the docs would meet them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from admin_support import STUDY_CONFIG, Participant, bearer, login
from fastapi.testclient import TestClient

from app.admin.best import METHOD
from app.algorithms import REGISTRY, group_tau
from elicitation import FairQuadraticMetric, QuadraticMetric

ROOT = Path(__file__).resolve().parents[2]

#: What gives a page away as written for developers, with the reason shown when a test fails.
DEVELOPER_WORDING = {
    "an issue number": re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE),
    "a paper algorithm number": re.compile(r"\bAlgorithm\s+\d+"),
    "a LaTeX command": re.compile(r"\\(?:frac|hat|lambda|mathbf|mathrm|sum|cdot|text|left|right)\b"),
    "a LaTeX super- or subscript": re.compile(r"[A-Za-z)]\s*[\^_]\{"),
    "matrix jargon": re.compile(r"\bPSD\b|positive semi-?definite", re.IGNORECASE),
}


#: What gives a page's visible text away (outside code, the stored configuration and charts' data): a value
#: printed the way Python prints it, or an internal name where a coordinator reads words.
SHOWN_AS_CODE = {
    "a Python repr": re.compile(r"\b(?:None|True|False)\b(?!\s+so far)|\[\d\.\d+, "),
    "an internal algorithm name": re.compile(
        r"\b(?:active_(?:linear|quadratic|fair)|fair_qpme|diagonal_qpme|lpme|qpme|tradeoff)\b"
    ),
    "the paper's symbol for agreement": re.compile(r"\bM \(|\bAgreement M\b|\bM per\b"),
    "a number in scientific notation": re.compile(r"\b\d(?:\.\d+)?e[-+]?\d+\b"),
}

#: Where a page shows code or raw data on purpose; left out of the visible-text check.
_CODE_BLOCKS = re.compile(
    r"<(script|style|pre|code|textarea|details|select)\b.*?</\1>", re.DOTALL | re.IGNORECASE
)


def visible_text(html: str) -> str:
    """A page's words as read, without its code blocks, stored configuration, form values and tags."""
    return re.sub(r"<[^>]+>", " ", _CODE_BLOCKS.sub(" ", html))


def shown_as_code(html: str) -> list[str]:
    """Each `SHOWN_AS_CODE` finding in ``html``'s visible text as ``"<what>: <match>"``."""
    text = visible_text(html)
    return [
        f"{what}: {match.group(0)!r}"
        for what, pattern in SHOWN_AS_CODE.items()
        for match in pattern.finditer(text)
    ]


def test_the_visible_text_check_finds_code_outside_code_blocks() -> None:
    page = "<td>active_quadratic</td><p>coordinate None</p><th>M (elicited)</th><td>[0.754, 0.829]</td>"
    assert len(shown_as_code(page)) == 4
    assert len(shown_as_code("<p>a bound below 1e-10 here</p>")) == 1
    assert shown_as_code('<p>None so far.</p><code>active_fair</code><details>{"x": null}</details>') == []


def developer_wording(text: str) -> list[str]:
    """Each finding as ``"<what>: <match>"`` (empty when the text reads as written for people)."""
    return [
        f"{what}: {match.group(0)!r}"
        for what, pattern in DEVELOPER_WORDING.items()
        for match in pattern.finditer(text)
    ]


def test_the_checker_finds_what_the_issue_showed() -> None:
    seen = "(issue 7) Algorithm 4 B^{uv} \\hat{a} one PSD matrix"
    assert len(developer_wording(seen)) == 5
    assert developer_wording("QPME, the paper's searches; 9 in 10 participants; B_pairs") == []


def _people_files() -> list[Path]:
    files = sorted((ROOT / "templates").rglob("*.html"))
    files += sorted(path for path in (ROOT / "static").rglob("*") if path.suffix in (".js", ".css", ".html"))
    return [path for path in files if "vendor" not in path.parts]


@pytest.mark.parametrize("path", _people_files(), ids=lambda path: str(path.relative_to(ROOT)))
def test_no_template_or_static_file_has_developer_wording(path: Path) -> None:
    assert developer_wording(path.read_text(encoding="utf-8")) == []


def test_how_the_best_classifier_is_found_reads_as_words() -> None:
    assert developer_wording(METHOD) == [] and shown_as_code(f"<p>{METHOD}</p>") == []


def test_algorithm_labels_in_the_new_study_form_are_plain_words() -> None:
    for name, spec in REGISTRY.items():
        assert developer_wording(spec.description) == [], name


PRIORS = [[0.6, 0.4], [0.7, 0.3]]

FAIR_CONFIG: dict[str, Any] = {
    **STUDY_CONFIG,
    "name": "Fair screening",
    "group_names": ["younger", "older"],
    "algorithm": "fair_qpme",
    "algorithm_params": {"epsilon": 0.25, "group_shares": [0.4, 0.6]},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": PRIORS},
}


def _participants() -> list[Any]:
    quadratic = QuadraticMetric(np.array([0.3, 0.8]), np.array([[-0.3, 0.0], [0.0, -0.2]]))
    fair = FairQuadraticMetric(
        a=np.array([0.4, 0.9]),
        B_pairs={(0, 1): np.array([[1.0, 0.2], [0.2, 0.5]])},
        lam=0.4,
        tau=group_tau(PRIORS, [0.4, 0.6]),
    )
    return [
        pytest.param(
            {**STUDY_CONFIG, "algorithm": "qpme", "algorithm_params": {"epsilon": 0.2}}, quadratic, id="qpme"
        ),
        pytest.param(FAIR_CONFIG, fair, id="fair_qpme"),
    ]


@pytest.mark.parametrize(("config", "truth"), _participants())
def test_pages_people_read_have_no_developer_wording(
    client: TestClient, accounts: dict[str, Any], config: dict[str, Any], truth: Any
) -> None:
    token = accounts["alice"]["token"]
    study_id = client.post("/api/v1/studies", json=config, headers=bearer(token)).json()["id"]
    opened = client.patch(f"/api/v1/studies/{study_id}", json={"status": "open"}, headers=bearer(token))
    assert opened.status_code == 200
    person = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True}).json()["token"]
    assert Participant(truth).finish(client, person)["status"] == "done"
    login(client, "alice@example.org")
    monitor = client.get(f"/admin/studies/{study_id}/monitor")
    session_id = re.search(rf"/admin/studies/{study_id}/sessions/([0-9a-f-]{{36}})", monitor.text)
    assert session_id is not None
    pages = [
        "/admin",
        "/admin/studies/new",
        "/admin/import",
        "/admin/tokens",
        f"/admin/studies/{study_id}",
        f"/admin/studies/{study_id}/monitor",
        f"/admin/studies/{study_id}/results",
        f"/admin/studies/{study_id}/panel",
        f"/admin/studies/{study_id}/sessions/{session_id.group(1)}",
        f"/sessions/{person}/result",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert developer_wording(response.text) == [], path
        if path.startswith("/admin"):
            assert shown_as_code(response.text) == [], path
