"""JSON API: sessions, answers, idempotency, conflicts, undo, resume, replay integrity and bad input."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from app_support import METRIC, Participant, make_study, new_session
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.main import create_app
from app.models import Answer, ElicitationSession, Result


def state(client: TestClient, token: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/sessions/{token}")
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def answer(client: TestClient, token: str, seq: int, preferred: str = "first", **extra: Any) -> Any:
    return client.post(
        f"/api/v1/sessions/{token}/answers", json={"seq": seq, "preferred": preferred, **extra}
    )


def log(app: Any) -> list[Answer]:
    with app.state.sessionmaker() as db:
        return list(db.scalars(select(Answer).order_by(Answer.session_id, Answer.seq)).all())


def test_create_session_returns_token_and_link(client: TestClient, study: Any) -> None:
    response = client.post(f"/api/v1/studies/{study.id}/sessions", json={"participant_code": "P-17"})
    assert response.status_code == 201
    body = response.json()
    assert len(body["token"]) == 43
    assert body["url"].endswith(f"/sessions/{body['token']}")
    assert state(client, body["token"])["status"] == "invited"


def test_create_session_without_body_works(client: TestClient, study: Any) -> None:
    assert client.post(f"/api/v1/studies/{study.id}/sessions").status_code == 201


@pytest.mark.parametrize("study_id", ["00000000-0000-0000-0000-000000000000", "not-a-uuid", "1"])
def test_create_session_unknown_study_is_404(client: TestClient, study: Any, study_id: str) -> None:
    response = client.post(f"/api/v1/studies/{study_id}/sessions", json={})
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


def test_create_session_in_closed_study_looks_like_unknown(client: TestClient, app: Any) -> None:
    closed = make_study(app, name="closed", open_enrolment=False)
    unknown = client.post("/api/v1/studies/00000000-0000-0000-0000-000000000000/sessions")
    response = client.post(f"/api/v1/studies/{closed.id}/sessions")
    assert response.status_code == 404
    assert response.json() == unknown.json()


def test_create_session_rejects_unknown_fields(client: TestClient, study: Any) -> None:
    response = client.post(f"/api/v1/studies/{study.id}/sessions", json={"consent": True, "admin": True})
    assert response.status_code == 422
    assert response.json()["fields"][0]["field"] == "admin"


@pytest.mark.parametrize("token", ["x", "A" * 43, "A" * 42 + "!", "A" * 44])
def test_unknown_or_malformed_token_is_404_without_leaking(
    client: TestClient, study: Any, token: str
) -> None:
    new_session(client, study)
    for method, path in [
        ("get", f"/api/v1/sessions/{token}"),
        ("post", f"/api/v1/sessions/{token}/undo"),
        ("post", f"/api/v1/sessions/{token}/consent"),
    ]:
        response = getattr(client, method)(path)
        assert response.status_code == 404
        assert response.json() == {
            "error": "not_found",
            "message": "This link is not valid. Please check that you copied all of it.",
        }
    assert answer(client, token, 0).status_code == 404


def test_nothing_counts_before_consent(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study, consent=False)
    before = state(client, token)
    assert before["phase"] == "consent" and before["query"] is None
    refused = answer(client, token, 0)
    assert refused.status_code == 409
    assert refused.json()["error"] == "consent_required"
    assert log(app) == []
    after = client.post(f"/api/v1/sessions/{token}/consent")
    assert after.status_code == 200
    assert after.json()["status"] == "active" and after.json()["phase"] == "practice"
    assert client.post(f"/api/v1/sessions/{token}/consent").json() == after.json()


def test_full_session_recovers_metric_and_commits_result(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    final = Participant(METRIC).finish(client, token)
    assert final["status"] == "done" and final["phase"] == "done"
    result = final["result"]
    assert len(result["completion_code"]) == 11
    assert result["redirect_url"] == "https://panel.example.org/done?study=1"
    assert result["metric"]["type"] == "quadratic"
    assert result["evaluation"]["pairs"] == 3
    assert {"elicited", "accuracy", "equal_weights"} <= set(result["evaluation"])
    assert result["checks"]["dominance"] == {"shown": 1, "passed": 1}
    assert result["checks"]["repeat"] == {"shown": 1, "passed": 1}
    assert "malignant" in result["summary"]
    rows = log(app)
    phases = [row.phase for row in rows]
    assert phases[0] == "practice"
    assert phases[-3:] == ["evaluation"] * 3
    # Checks are interleaved with the elicitor's queries, not appended after them.
    first_check = phases.index("check")
    assert "elicitation" in phases[first_check + 1 :]
    assert [row.seq for row in rows] == list(range(len(rows)))
    # Only elicitation answers carry an answer for the elicitor.
    assert all((row.elicitor_answer is not None) == (row.phase == "elicitation") for row in rows)
    assert all(row.shown is not None and len(row.shown["left"]["confusion"]) == 2 for row in rows)
    with app.state.sessionmaker() as db:
        assert db.scalars(select(Result)).one().num_queries == phases.count("elicitation")


def test_elicitor_gets_answers_in_its_own_order(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    Participant(METRIC).finish(client, token)
    rows = [row for row in log(app) if row.phase == "elicitation"]
    assert {row.swapped for row in rows} == {True, False}, "positions should be randomised"
    for row in rows:
        left = row.shown["left"]["rates"]
        first = row.query["first"] if not row.swapped else row.query["second"]
        assert np.allclose(left, first)
        chose_left = row.preferred == "first"
        assert row.elicitor_answer == (chose_left != row.swapped)
        assert row.elicitor_answer == METRIC.prefers(
            np.array(row.query["first"]), np.array(row.query["second"])
        )


def test_tie_gets_a_recorded_tie_break(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    current = answer(client, token, 0).json()  # the practice question
    response = answer(client, token, current["query"]["seq"], "tie")
    assert response.status_code == 200
    row = log(app)[-1]
    assert row.phase == "elicitation" and row.preferred == "tie"
    assert row.tie_break is not None and row.elicitor_answer == row.tie_break


def test_double_submit_records_once(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    first = answer(client, token, 0, "second")
    again = answer(client, token, 0, "second")
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert len(log(app)) == 1


def test_conflicting_answer_is_409_with_current_state(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    after = answer(client, token, 0, "first").json()
    response = answer(client, token, 0, "second")
    assert response.status_code == 409
    assert response.json()["error"] == "already_answered"
    assert response.json()["state"] == after
    assert [row.preferred for row in log(app)] == ["first"]


def test_future_seq_is_409(client: TestClient, study: Any) -> None:
    token = new_session(client, study)
    response = answer(client, token, 5)
    assert response.status_code == 409
    assert response.json()["error"] == "stale_seq"
    assert response.json()["state"]["query"]["seq"] == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"preferred": "first"}, "seq"),
        ({"seq": -1, "preferred": "first"}, "seq"),
        ({"seq": "zero", "preferred": "first"}, "seq"),
        ({"seq": "0", "preferred": "first"}, "seq"),
        ({"seq": True, "preferred": "first"}, "seq"),
        ({"seq": 0, "preferred": "first", "hidden_ms": 1.5}, "hidden_ms"),
        ({"seq": 0, "preferred": "left"}, "preferred"),
        ({"seq": 0}, "preferred"),
        ({"seq": 0, "preferred": "first", "time_on_page_ms": -5}, "time_on_page_ms"),
        ({"seq": 0, "preferred": "first", "extra": 1}, "extra"),
    ],
)
def test_malformed_answer_is_422_naming_the_field(
    client: TestClient, study: Any, body: dict[str, Any], field: str
) -> None:
    token = new_session(client, study)
    response = client.post(f"/api/v1/sessions/{token}/answers", json=body)
    assert response.status_code == 422
    assert field in [item["field"] for item in response.json()["fields"]]
    assert field in response.json()["message"]


def test_answers_to_a_finished_session_are_409(client: TestClient, study: Any) -> None:
    token = new_session(client, study)
    final = Participant(METRIC).finish(client, token)
    response = answer(client, token, final["progress"]["answered"])
    assert response.status_code == 409
    assert response.json()["error"] == "session_finished"
    assert response.json()["state"]["result"] == final["result"]
    assert client.post(f"/api/v1/sessions/{token}/undo").status_code == 409


def test_undo_shows_the_same_query_again_and_keeps_the_log(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    start = state(client, token)
    after_one = answer(client, token, 0).json()
    after_two = answer(client, token, after_one["query"]["seq"], "second").json()
    assert after_two["progress"]["answered"] == 2
    undone = client.post(f"/api/v1/sessions/{token}/undo", json={"seq": after_two["query"]["seq"]})
    assert undone.status_code == 200
    body = undone.json()
    assert body["progress"]["answered"] == 1
    assert body["query"]["first"] == after_one["query"]["first"]
    assert body["query"]["second"] == after_one["query"]["second"]
    assert body["query"]["seq"] == 3  # answer 0, answer 1, undo 2: the next log position
    # A repeated click on the same (now stale) undo button changes nothing.
    repeat = client.post(f"/api/v1/sessions/{token}/undo", json={"seq": after_two["query"]["seq"]})
    assert repeat.status_code == 200 and repeat.json() == body
    rows = log(app)
    assert [row.action for row in rows] == ["answer", "answer", "undo"]
    assert rows[1].undone_at is not None and rows[2].undoes_seq == 1
    # Answering again continues from the restored point; undo back to the start works too.
    again = answer(client, token, 3, "first").json()
    assert again["progress"]["answered"] == 2
    client.post(f"/api/v1/sessions/{token}/undo")
    back = client.post(f"/api/v1/sessions/{token}/undo").json()
    assert back["progress"]["answered"] == 0
    assert back["query"]["first"] == start["query"]["first"]
    nothing = client.post(f"/api/v1/sessions/{token}/undo")
    assert nothing.status_code == 409 and nothing.json()["error"] == "nothing_to_undo"


def test_answer_stale_after_undo_is_refused(client: TestClient, study: Any) -> None:
    token = new_session(client, study)
    answer(client, token, 0)
    client.post(f"/api/v1/sessions/{token}/undo")
    # seq 1 was taken by the undo; a form from before the undo must not answer the re-shown query.
    response = answer(client, token, 1, "second")
    assert response.status_code == 409


def test_resume_in_a_new_app_gives_the_same_next_query(settings: Any, client: TestClient, study: Any) -> None:
    token = new_session(client, study)
    current = state(client, token)
    participant = Participant(METRIC)
    for _ in range(6):
        current = participant.answer(client, token, current)
    other = create_app(settings)
    try:
        with TestClient(other) as fresh:
            resumed = state(fresh, token)
            assert other.state.session_cache.hits == 0
            assert resumed == current
            finished = participant.finish(fresh, token)
    finally:
        other.state.engine.dispose()
    assert finished["status"] == "done"


def test_cache_and_replay_agree(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    current = state(client, token)
    participant = Participant(METRIC)
    for _ in range(5):
        current = participant.answer(client, token, current)
    assert app.state.session_cache.hits > 0
    app.state.session_cache.clear()
    assert state(client, token) == current


def test_replay_mismatch_is_reported_not_continued(
    settings: Any, client: TestClient, app: Any, study: Any
) -> None:
    token = new_session(client, study)
    current = state(client, token)
    participant = Participant(METRIC)
    for _ in range(4):
        current = participant.answer(client, token, current)
    with app.state.sessionmaker() as db:
        row = db.scalars(select(Answer).where(Answer.phase == "elicitation").order_by(Answer.seq)).first()
        assert row is not None
        tampered = dict(row.query or {})
        tampered["first"] = [value + 0.01 for value in tampered["first"]]
        row.query = tampered
        db.commit()
    app.state.session_cache.clear()
    response = client.get(f"/api/v1/sessions/{token}")
    assert response.status_code == 409
    assert response.json()["error"] == "replay_mismatch"
    page = client.get(f"/sessions/{token}")
    assert page.status_code == 409
    assert 'data-testid="error-409"' in page.text


def test_session_row_stores_seed_and_version_not_token(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    with app.state.sessionmaker() as db:
        session = db.scalars(select(ElicitationSession)).one()
    assert token not in session.token_hash and len(session.token_hash) == 64
    assert session.algorithm == "qpme" and session.algorithm_version.startswith("qpme")
    assert 0 <= session.seed < 2**63


def test_timings_are_logged(client: TestClient, app: Any, study: Any) -> None:
    token = new_session(client, study)
    answer(client, token, 0, time_on_page_ms=4200, hidden_ms=1300)
    row = log(app)[0]
    assert (row.time_on_page_ms, row.hidden_ms) == (4200, 1300)
    assert row.server_elapsed_ms is not None and row.server_elapsed_ms >= 0


def test_openapi_lists_the_api(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "/api/v1/studies/{study_id}/sessions" in paths
    assert "/api/v1/sessions/{token}" in paths
    assert "/api/v1/sessions/{token}/answers" in paths
    assert "/api/v1/sessions/{token}/undo" in paths
    assert client.get("/docs").status_code == 200


FAIR_STUDY = {
    "name": "fair screening",
    "class_names": ["benign", "malignant"],
    "group_names": ["women under 50", "women over 50"],
    "algorithm": "fair_qpme",
    "algorithm_params": {"epsilon": 0.2, "group_shares": [0.4, 0.6]},
    "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.6, 0.4], [0.7, 0.3]]},
}


def test_fair_study_shows_one_panel_per_group_and_elicits_a_fair_metric(client: TestClient, app: Any) -> None:
    from app.algorithms import group_tau
    from elicitation import FairQuadraticMetric

    fair = make_study(app, **FAIR_STUDY)
    tau = group_tau([[0.6, 0.4], [0.7, 0.3]], [0.4, 0.6])
    truth = FairQuadraticMetric(
        a=np.array([0.4, 0.9]), B_pairs={(0, 1): np.array([[1.0, 0.2], [0.2, 0.5]])}, lam=0.4, tau=tau
    )
    token = new_session(client, fair)
    first = state(client, token)
    assert np.shape(first["query"]["first"]["rates"]) == (2, 2)
    assert np.shape(first["query"]["first"]["confusion"]) == (2, 2, 2)
    page = client.get(f"/sessions/{token}").text
    assert "women under 50" in page and "women over 50" in page
    final = Participant(truth).finish(client, token)
    assert final["result"]["metric"]["type"] == "fair_quadratic"
    assert final["result"]["checks"]["all_passed"] is True
    assert "treating the groups equally" in final["result"]["summary"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"algorithm": "fair_qpme", "group_names": []}, "needs at least 2 groups"),
        ({"algorithm": "qpme"}, "does not use groups"),
        ({"algorithm_params": {"group_shares": [1.0]}}, "group_shares"),
    ],
)
def test_fair_config_is_validated(overrides: dict[str, Any], message: str) -> None:
    from app.study_config import StudyConfigError, parse_study_config

    config = {**FAIR_STUDY, "task": "t", **overrides}
    with pytest.raises(StudyConfigError, match=message):
        parse_study_config(config)


def test_dataset_space_study_shows_real_classifiers(client: TestClient, app: Any) -> None:
    real = make_study(
        app,
        name="real data",
        query_space={"kind": "dataset", "recipe": {"dataset": "breast-cancer", "seed": 0}},
    )
    assert "groups" in real.config["query_space"], "the trained space is stored, not retrained per request"
    token = new_session(client, real)
    query = state(client, token)["query"]
    for side in ("first", "second"):
        confusion = np.asarray(query[side]["confusion"])
        assert confusion.shape == (2, 2) and confusion.sum() == pytest.approx(100.0)
        # rows hold the true classes: the dataset's class balance, not an assumed one
        assert confusion.sum(axis=1) == pytest.approx([64.96, 35.04], abs=0.01)


@pytest.mark.parametrize("body", [{"seq": True}, {"seq": "1"}, {"consent": 1}])
def test_undo_and_enrolment_bodies_take_no_coerced_values(client: TestClient, study: Any, body: Any) -> None:
    token = new_session(client, study)
    if "consent" in body:
        response = client.post(f"/api/v1/studies/{study.id}/sessions", json=body)
    else:
        response = client.post(f"/api/v1/sessions/{token}/undo", json=body)
    assert response.status_code == 422
    assert next(iter(body)) in response.json()["message"]
