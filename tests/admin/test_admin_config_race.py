"""A configuration change and a session's first answer: one wins, the other is refused, never both."""

from __future__ import annotations

from typing import Any

import pytest
from admin_support import METRIC, STUDY_CONFIG, Participant, bearer
from fastapi.testclient import TestClient

from app.admin import studies
from app.admin.auth import Principal
from app.admin.models import User
from app.models import AnswerChannel
from app.sessions import SessionCache, service, submit_answer

CHANGED = {**STUDY_CONFIG, "algorithm_params": {"epsilon": 0.1, "cycles": 1}, "name": "changed"}


def _open_with_session(client: TestClient, token: str) -> tuple[str, str, dict[str, Any]]:
    sid: str = client.post("/api/v1/studies", json=STUDY_CONFIG, headers=bearer(token)).json()["id"]
    client.patch(f"/api/v1/studies/{sid}", json={"status": "open"}, headers=bearer(token))
    session = client.post(f"/api/v1/studies/{sid}/sessions", json={"consent": True}).json()["token"]
    state = client.get(f"/api/v1/sessions/{session}").json()
    return sid, session, state


def _edit_elsewhere(app: Any, user_id: int, sid: str) -> None:
    """The coordinator's change, committed by another request (its own DB session and cache)."""
    with app.state.sessionmaker() as db:
        principal = Principal(user=db.get(User, user_id), via="token")
        study, control = studies.visible_study(db, principal, sid)
        studies.edit_study(db, SessionCache(8), study, control, CHANGED)


def test_change_committed_before_the_first_answer_refuses_the_answer(
    client: TestClient, app: Any, accounts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, session, state = _open_with_session(client, accounts["alice"]["token"])
    compute = service._answer_values

    def change_meanwhile(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(service, "_answer_values", compute)
        _edit_elsewhere(app, accounts["alice"]["user_id"], sid)
        return compute(*args, **kwargs)

    monkeypatch.setattr(service, "_answer_values", change_meanwhile)
    refused = client.post(
        f"/api/v1/sessions/{session}/answers", json={"seq": state["query"]["seq"], "preferred": "first"}
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"] == "study_changed"
    # Nothing was stored, and the session goes on under the new configuration (no replay mismatch).
    study = client.get(f"/api/v1/studies/{sid}", headers=bearer(accounts["alice"]["token"])).json()
    assert study["name"] == "changed"
    final = Participant(METRIC).finish(client, session)
    assert final["status"] == "done"


def test_first_answer_committed_during_the_change_refuses_the_change(
    client: TestClient, app: Any, accounts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    sid, session, state = _open_with_session(client, accounts["alice"]["token"])
    columns = studies._config_columns

    def answer_meanwhile(config: Any) -> Any:
        monkeypatch.setattr(studies, "_config_columns", columns)
        with app.state.sessionmaker() as db:
            submit_answer(
                db,
                app.state.session_cache,
                session,
                seq=state["query"]["seq"],
                preferred="first",
                channel=AnswerChannel.API,
            )
        return columns(config)

    monkeypatch.setattr(studies, "_config_columns", answer_meanwhile)
    refused = client.patch(
        f"/api/v1/studies/{sid}", json={"config": CHANGED}, headers=bearer(accounts["alice"]["token"])
    )
    assert refused.status_code == 409
    assert refused.json()["error"] == "has_answers"
    study = client.get(f"/api/v1/studies/{sid}", headers=bearer(accounts["alice"]["token"])).json()
    assert study["name"] == STUDY_CONFIG["name"]
    # The participant's answer stands and the session replays without a mismatch.
    assert Participant(METRIC).finish(client, session)["status"] == "done"
