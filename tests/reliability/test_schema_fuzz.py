"""Property-based fuzzing of the JSON API against its own OpenAPI schema (schemathesis).

Every operation of ``/openapi.json`` (participant and back office) gets generated requests, valid and
invalid; the response must never be a 5xx, its status must be documented, and its body must have the
documented media type and schema. Path parameters are either generated or set to real ids (an open study,
a consented session; for the back office also a finished session, a snapshot and a token), so that
generated bodies reach the handlers instead of stopping at 404.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from reliability_support import create_small_study
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from app import sessions
from app.cli.web import upgrade_database
from app.main import create_app
from app.settings import Settings

#: Generated requests per API operation: enough to hit every documented status, bounded for CI.
MAX_EXAMPLES = 40
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


@pytest.fixture(scope="module")
def fuzz_target(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path: Path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    settings = Settings(database_url=f"sqlite:///{path}")
    upgrade_database(settings)
    study = create_small_study(settings)
    app = create_app(settings)
    with app.state.sessionmaker() as db:
        _session, token = sessions.create_session(db, app.state.session_cache, study.id, consented=True)
    return {"app": app, "study_id": str(study.id), "token": token}


#: The participant API (public: a token or an open study id is all a caller has). The back office's
#: operations need an admin's token and are fuzzed by `test_back_office_api_conforms_to_its_schema`.
PUBLIC_TAG = "sessions"


def _operations(app: Any) -> list[Any]:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    return [operation for operation in operations if PUBLIC_TAG in (operation.tags or [])]


def _fuzz(operation: Any, mode: GenerationMode, path_parameters: dict[str, str] | None) -> bool:
    """Run the checks on generated cases; False when ``mode`` cannot produce any case for this operation
    (a negative case needs something to break: with a fixed path and no body there is nothing)."""

    @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
    def check(case: Any) -> None:
        case.call_and_validate(checks=CHECKS)

    try:
        check()
    except Unsatisfiable:
        if mode is GenerationMode.POSITIVE:
            raise
        return False
    return True


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
@pytest.mark.parametrize("targets", ["random", "real"])
def test_api_conforms_to_its_schema(fuzz_target: dict[str, Any], mode: GenerationMode, targets: str) -> None:
    """Random or real path parameters x schema-valid or schema-violating requests, every operation."""
    operations = _operations(fuzz_target["app"])
    assert {operation.path for operation in operations} >= {
        "/api/v1/studies/{study_id}/sessions",
        "/api/v1/sessions/{token}",
        "/api/v1/sessions/{token}/answers",
        "/api/v1/sessions/{token}/undo",
    }
    fuzzed = set()
    for operation in operations:
        names = {parameter.name for parameter in operation.path_parameters}
        real = {name: fuzz_target[name] for name in names if name in fuzz_target}
        if targets == "real" and not real:
            continue
        if _fuzz(operation, mode, real if targets == "real" else None):
            fuzzed.add(operation.path)
    assert "/api/v1/sessions/{token}/answers" in fuzzed


#: Generated requests per back-office operation and mode, with real ids (or without path parameters).
ADMIN_MAX_EXAMPLES = 8
#: With generated ids, which all end in the documented 404 or 422, fewer suffice.
ADMIN_RANDOM_ID_EXAMPLES = 3
#: Operations that change what other operations see: run last, each on data of its own.
ADMIN_LAST = {("PATCH", "/api/v1/studies/{study_id}"), ("DELETE", "/api/v1/tokens/{token_id}")}


@pytest.fixture(scope="module")
def admin_target(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A database of its own with an admin token and real ids for every path parameter: an open study
    with a finished session, a closed study with its snapshot, a study for PATCH and a token to revoke."""
    from app_support import METRIC, Participant
    from fastapi.testclient import TestClient

    from app.admin.auth import create_api_token, create_user

    path: Path = tmp_path_factory.mktemp("admin-fuzz") / "admin-fuzz.db"
    settings = Settings(database_url=f"sqlite:///{path}", secret_key="admin-fuzz-secret")
    upgrade_database(settings)
    open_study = create_small_study(settings)
    closed_study = create_small_study(settings, name="closed")
    patched_study = create_small_study(settings, name="patched")
    app = create_app(settings)
    with app.state.sessionmaker() as db:
        admin = create_user(db, "fuzz-admin@example.org", "a long enough password", "admin")
        _token, secret = create_api_token(db, admin, "fuzz")
        spare, _secret = create_api_token(db, admin, "to revoke")
    headers = {"Authorization": f"Bearer {secret}"}
    with TestClient(app) as client:
        token = client.post(f"/api/v1/studies/{open_study.id}/sessions", json={"consent": True}).json()[
            "token"
        ]
        Participant(METRIC).finish(client, token)
        session_id = client.get(f"/api/v1/studies/{open_study.id}/results", headers=headers).json()[
            "results"
        ][0]["session_id"]
        closed = client.patch(
            f"/api/v1/studies/{closed_study.id}", json={"status": "closed", "confirm": True}, headers=headers
        )
        assert closed.status_code == 200, closed.text
        snapshot_id = client.get(f"/api/v1/studies/{closed_study.id}/snapshots", headers=headers).json()[
            "snapshots"
        ][0]["id"]
    return {
        "app": app,
        "headers": headers,
        "study_id": str(open_study.id),
        "session_id": session_id,
        "closed_study_id": str(closed_study.id),
        "snapshot_id": snapshot_id,
        "patched_study_id": str(patched_study.id),
        "token_id": spare.id,
    }


def _admin_path_parameters(target: dict[str, Any], operation: Any) -> dict[str, Any]:
    """Real ids for the operation's path parameters (snapshots are the closed study's; PATCH has its own)."""
    names = {parameter.name for parameter in operation.path_parameters}
    real = {name: target[name] for name in names if name in target}
    if "snapshot_id" in names:
        real["study_id"] = target["closed_study_id"]
    if operation.method.upper() == "PATCH":
        real["study_id"] = target["patched_study_id"]
    return real


def test_back_office_api_conforms_to_its_schema(admin_target: dict[str, Any]) -> None:
    """Every back-office operation, called with an admin's bearer token, with schema-valid and
    schema-violating requests and with random or real ids: never a 5xx, every status documented, every
    body of the documented media type and schema, and no invalid request accepted. Without credentials
    every operation answers the documented 401."""
    app = admin_target["app"]
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    back_office = [op for op in operations if "back office" in (op.tags or [])]
    back_office.sort(key=lambda op: (op.method.upper(), op.path) in ADMIN_LAST)
    assert len(back_office) >= 22
    assert {"/api/v1/studies/{study_id}/results.csv", "/api/v1/tokens/{token_id}"} <= {
        op.path for op in back_office
    }
    successes: set[tuple[str, str]] = set()

    for operation in back_office:
        real = _admin_path_parameters(admin_target, operation)
        for path_parameters in [None, real] if real else [None]:
            examples = ADMIN_RANDOM_ID_EXAMPLES if real and path_parameters is None else ADMIN_MAX_EXAMPLES
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

                @given(case=operation.as_strategy(generation_mode=mode, path_parameters=path_parameters))
                @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
                def check(case: Any) -> None:
                    response = case.call_and_validate(checks=CHECKS, headers=admin_target["headers"])
                    if response.status_code < 300:
                        successes.add((case.operation.method.upper(), case.operation.path))

                try:
                    check()
                except Unsatisfiable:
                    if mode is GenerationMode.POSITIVE:
                        raise  # a negative case needs something to break: a fixed path and no body has none

        @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
        @settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
        def anonymous(case: Any) -> None:
            response = case.call_and_validate(checks=CHECKS)
            assert response.status_code == 401, (case.operation.path, response.status_code)

        anonymous()

    # The real ids let generated requests through to the handlers: every read answered 2xx at least once.
    reads = {(op.method.upper(), op.path) for op in back_office if op.method.upper() == "GET"}
    assert reads <= successes, sorted(reads - successes)
