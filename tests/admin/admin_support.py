"""Helpers shared by the back-office tests: the small study, bearer headers and a form login."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

# The participant-side helpers (automated participant with a known metric) live beside the app tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "app"))

from app_support import METRIC, Participant

__all__ = [
    "METRIC",
    "PASSWORD",
    "STUDY_CONFIG",
    "Participant",
    "bearer",
    "finished_session",
    "hidden",
    "login",
    "open_study",
]

PASSWORD = "correct horse battery staple"

#: A small, fast study (LPME, k = 2, coarse tolerance, one cycle) with every phase present.
STUDY_CONFIG: dict[str, Any] = {
    "name": "Screening <script>alert(1)</script>",
    "task": "Decide whether a tumour is benign or malignant.",
    "class_names": ["benign", "malignant"],
    "population": "patients",
    "algorithm": "lpme",
    "algorithm_params": {"epsilon": 0.2, "cycles": 1},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [0.65, 0.35]},
    "practice_queries": 1,
    "checks": True,
    "dominance_checks": 1,
    "repeat_checks": 1,
    "evaluation_queries": 3,
}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def login(client: TestClient, email: str, password: str = PASSWORD) -> str:
    """Log ``client`` in through the form; returns the CSRF token the pages carry."""
    page = client.get("/admin/login")
    assert page.status_code == 200
    csrf = hidden(page.text, "csrf_token")
    response = client.post(
        "/admin/login",
        data={"email": email, "password": password, "csrf_token": csrf, "next": "/admin"},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    home = client.get("/admin")
    assert home.status_code == 200
    return hidden(home.text, "csrf_token")


def hidden(html: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match, f"no hidden {name} in page"
    return match.group(1)


def open_study(client: TestClient, token: str, config: dict[str, Any]) -> str:
    """Create a study over the API and open it; its id."""
    created = client.post("/api/v1/studies", json=config, headers=bearer(token))
    assert created.status_code == 201, created.text
    sid: str = created.json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    return sid


def finished_session(client: TestClient, sid: str, metric: Any, code: str) -> None:
    """One automated participant with ``metric`` and participant code ``code`` answers to the end."""
    created = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True, "participant_code": code})
    assert created.status_code == 201, created.text
    assert Participant(metric).finish(client, created.json()["token"])["status"] == "done"
