"""Uploaded CSV datasets in the study form: a real query space from the file, clear 422s for bad files."""

from __future__ import annotations

import json
import uuid
from typing import Any

import numpy as np
import pytest
from admin_support import hidden, login
from fastapi.testclient import TestClient

from app.admin import studies
from app.models import Study


def _csv(
    n: int = 300, *, seed: int = 0, label: str = "diagnosis", classes: tuple[str, ...] = ("healthy", "sick")
) -> str:
    """A small CSV: numeric and categorical features, a group column, a label that depends on them."""
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    sex = rng.choice(["female", "male"], size=n)
    smoker = rng.choice(["yes", "no", ""], size=n)
    score = x1 + 0.5 * x2 + rng.normal(scale=0.8, size=n)
    y = np.where(score > 0, classes[-1], classes[0])
    lines = [f"age,score,smoker,sex,{label}"]
    lines += [f"{a:.3f},{b:.3f},{s},{g},{c}" for a, b, s, g, c in zip(x1, x2, smoker, sex, y, strict=True)]
    return "\n".join(lines) + "\n"


def _fields(csrf: str, **overrides: str) -> dict[str, str]:
    return {
        "csrf_token": csrf,
        "name": "uploaded",
        "task": "Decide whether a patient is sick.",
        "class_names": "ignored, names",
        "algorithm": "qpme",
        "epsilon": "0.2",
        "practice_queries": "1",
        "evaluation_queries": "2",
        "label_column": "diagnosis",
        "action": "save",
        "open_enrolment": "on",
        **overrides,
    }


def _post(client: TestClient, csrf: str, content: bytes, filename: str = "data.csv", **overrides: str) -> Any:
    return client.post(
        "/admin/studies/new",
        data=_fields(csrf, **overrides),
        files={"dataset_csv": (filename, content, "text/csv")},
        follow_redirects=False,
    )


def _count_studies(app: Any) -> int:
    with app.state.sessionmaker() as db:
        return db.query(Study).count()


def test_good_csv_creates_a_study_whose_queries_are_real_classifiers(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    csrf = login(client, accounts["alice"]["email"])
    page = client.get("/admin/studies/new")
    assert 'enctype="multipart/form-data"' in page.text and 'name="dataset_csv"' in page.text
    response = _post(
        client, hidden(page.text, "csrf_token"), _csv().encode(), filename="../../etc/passwd.csv"
    )
    assert response.status_code == 303, response.text
    study_id = response.headers["location"].rsplit("/", 1)[-1]
    with app.state.sessionmaker() as db:
        config = db.get(Study, uuid.UUID(study_id)).config
    space = config["query_space"]
    assert space["kind"] == "dataset" and "groups" in space, "the whole space is stored, not the file"
    assert config["class_names"] == ["healthy", "sick"] and config["group_names"] == []
    assert space["name"] == "passwd", "the client's file name is only a sanitised label"
    # editing shows the stored space in the JSON box; saving it again (no file) keeps the same space
    edit = client.get(f"/admin/studies/{study_id}/edit")
    assert edit.status_code == 200 and "&#34;groups&#34;" in edit.text
    saved = client.post(
        f"/admin/studies/{study_id}/edit",
        data={**_fields(csrf), "config_json": json.dumps({**config, "name": "renamed"})},
        follow_redirects=False,
    )
    assert saved.status_code == 303, saved.text
    with app.state.sessionmaker() as db:
        assert db.get(Study, uuid.UUID(study_id)).config["query_space"] == space
    # the study rebuilds without the file, and its queries are classifiers that exist on the held-out data
    opened = client.post(
        f"/admin/studies/{study_id}/status",
        data={"csrf_token": csrf, "status": "open"},
        follow_redirects=False,
    )
    assert opened.status_code in (200, 303), opened.text
    started = client.post(f"/api/v1/studies/{study_id}/sessions", json={"consent": True})
    assert started.status_code == 201, started.text
    query = client.get(f"/api/v1/sessions/{started.json()['token']}").json()["query"]
    from app.study_config import StudyConfig, build_space

    rebuilt = build_space(StudyConfig.model_validate(config))
    for side in ("first", "second"):
        rates = np.asarray(query[side]["rates"])
        confusion = np.asarray(query[side]["confusion"])
        assert confusion.shape == (2, 2) and confusion.sum() == pytest.approx(100.0)
        classifier = rebuilt.classifier(rates)  # a mixture of plug-in classifiers trained on the CSV
        np.testing.assert_allclose(classifier.rates, rates, atol=1e-6)
        assert classifier.weights.shape[1] == 2 and classifier.probabilities.sum() == pytest.approx(1.0)
        # the confusion matrix shown is the classifier's held-out one, at the CSV's class balance
        np.testing.assert_allclose(
            confusion / confusion.sum(axis=1, keepdims=True),
            np.diag(rates) + np.diag(1 - rates)[:, ::-1],
            atol=1e-2,
        )
        assert np.linalg.norm(rates - rebuilt.sphere.center) <= rebuilt.sphere.radius + 1e-9


def test_csv_with_a_group_column_makes_a_fairness_space(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    login(client, accounts["alice"]["email"])
    csrf = hidden(client.get("/admin/studies/new").text, "csrf_token")
    response = _post(client, csrf, _csv(600).encode(), group_column="sex", algorithm="fair_qpme")
    assert response.status_code == 303, response.text
    with app.state.sessionmaker() as db:
        study = db.query(Study).one()
        assert study.config["group_names"] == ["female", "male"]
        assert len(study.config["query_space"]["groups"]) == 2


def test_planning_with_a_csv_keeps_the_space_in_the_json_box(
    client: TestClient, accounts: dict[str, Any]
) -> None:
    login(client, accounts["alice"]["email"])
    csrf = hidden(client.get("/admin/studies/new").text, "csrf_token")
    response = _post(client, csrf, _csv().encode(), action="plan")
    assert response.status_code == 200, response.text
    assert (
        "&#34;kind&#34;: &#34;dataset&#34;" in response.text
        or "&quot;kind&quot;: &quot;dataset&quot;" in response.text
    )


@pytest.mark.parametrize(
    ("content", "overrides", "message"),
    [
        (_csv().encode(), {"label_column": "outcome"}, "label column &#39;outcome&#39; is not in the CSV"),
        (_csv().encode(), {"label_column": ""}, "label column: give the name"),
        (_csv(classes=("healthy",)).encode(), {}, "has a single class (&#39;healthy&#39;)"),
        (_csv().replace("female", "f\u00e9male").encode("latin-1"), {}, "not UTF-8 text"),
        (b"", {}, "empty"),
        (_csv().encode(), {"group_column": "smoker_status"}, "group column"),
        (_csv().encode(), {"group_column": "sex", "algorithm": "qpme"}, "does not use groups"),
    ],
)
def test_bad_csv_rerenders_the_form_with_a_clear_422(
    client: TestClient,
    app: Any,
    accounts: dict[str, Any],
    content: bytes,
    overrides: dict[str, str],
    message: str,
) -> None:
    login(client, accounts["alice"]["email"])
    csrf = hidden(client.get("/admin/studies/new").text, "csrf_token")
    response = _post(client, csrf, content, **overrides)
    assert response.status_code == 422, response.text
    assert 'data-testid="form-errors"' in response.text
    assert message in response.text, response.text[:3000]
    assert _count_studies(app) == 0


def test_oversized_csv_is_refused(
    client: TestClient, app: Any, accounts: dict[str, Any], monkeypatch: Any
) -> None:
    login(client, accounts["alice"]["email"])
    csrf = hidden(client.get("/admin/studies/new").text, "csrf_token")
    monkeypatch.setattr(studies, "MAX_CSV_BYTES", 2_000)
    response = _post(client, csrf, _csv().encode())
    assert response.status_code == 422
    assert "larger than the limit" in response.text
    assert _count_studies(app) == 0
    # a body far over the limit is refused from its Content-Length, before the form is read
    monkeypatch.setattr(studies, "MAX_CSV_BYTES", 10)
    big = _post(client, csrf, b"x" * 1_100_000)
    assert big.status_code == 422 and "larger than the limit" in big.text
    assert _count_studies(app) == 0


def test_csv_dataset_space_helper_limits_and_names() -> None:
    with pytest.raises(studies.AdminError, match="larger than the limit of 10 MB"):
        studies.csv_dataset_space(b"a" * (studies.MAX_CSV_BYTES + 1), "diagnosis")
    with pytest.raises(studies.AdminError, match=r"not UTF-8 text \(byte 0xe9"):
        studies.csv_dataset_space("label\n\u00e9\n".encode("latin-1"), "label")
    space = studies.csv_dataset_space(_csv().encode("utf-8-sig"), "diagnosis", name="C:\\x\\..\\my data.csv")
    assert space["name"] == "my-data" and space["class_names"] == ["healthy", "sick"]


def test_api_creates_a_study_from_a_csv_upload(
    client: TestClient, app: Any, accounts: dict[str, Any]
) -> None:
    headers = {"Authorization": f"Bearer {accounts['alice']['token']}"}
    config = {"name": "api upload", "task": "Decide whether a patient is sick.", "class_names": ["x", "y"]}
    response = client.post(
        "/api/v1/studies/from-csv",
        data={"config": json.dumps(config), "label_column": "diagnosis"},
        files={"file": ("/tmp/../data.csv", _csv().encode(), "text/csv")},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    with app.state.sessionmaker() as db:
        stored = db.get(Study, uuid.UUID(response.json()["id"])).config
    assert stored["class_names"] == ["healthy", "sick"] and stored["query_space"]["name"] == "data"
    bad = client.post(
        "/api/v1/studies/from-csv",
        data={"config": json.dumps(config), "label_column": "outcome"},
        files={"file": ("data.csv", _csv().encode(), "text/csv")},
        headers=headers,
    )
    assert bad.status_code == 422 and "label column 'outcome' is not in the CSV" in bad.json()["message"]
    latin = client.post(
        "/api/v1/studies/from-csv",
        data={"config": json.dumps(config), "label_column": "diagnosis"},
        files={"file": ("data.csv", "diagnosis\n\u00e9t\u00e9\n".encode("latin-1"), "text/csv")},
        headers=headers,
    )
    assert latin.status_code == 422 and "not UTF-8 text" in latin.json()["message"]
    anonymous = client.post(
        "/api/v1/studies/from-csv",
        data={"config": json.dumps(config), "label_column": "diagnosis"},
        files={"file": ("data.csv", _csv().encode(), "text/csv")},
    )
    assert anonymous.status_code == 401
    with app.state.sessionmaker() as db:
        assert db.query(Study).count() == 1
