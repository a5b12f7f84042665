"""Property-based fuzzing of the public JSON API against its own OpenAPI schema (schemathesis).

Every operation of ``/openapi.json`` gets generated requests, valid and invalid; the response must never
be a 5xx, its status must be documented, and its body must match the documented schema. Path parameters
are either generated or set to a real open study and a real, consented session, so that generated bodies
reach the session engine instead of stopping at 404.
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

from app import services
from app.cli_web import upgrade_database
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
        _session, token = services.create_session(db, app.state.session_cache, study.id, consented=True)
    return {"app": app, "study_id": str(study.id), "token": token}


#: The participant API (public: a token or an open study id is all a caller has). The back office's
#: operations need an admin login and are fuzzed by their own tests.
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


#: Generated requests per back-office operation and mode; the check is only "never a 5xx".
ADMIN_MAX_EXAMPLES = 10


def test_back_office_api_never_answers_with_a_server_error(fuzz_target: dict[str, Any]) -> None:
    """Every back-office operation, called by an admin's bearer token with generated (valid and invalid)
    requests and with random or real study ids, answers 2xx/4xx: hostile input never reaches a 500.

    Schema conformance is not asserted here: the back-office routes do not yet document every 4xx.
    """
    from app.admin.auth import create_api_token, create_user

    app = fuzz_target["app"]
    with app.state.sessionmaker() as db:
        admin = create_user(db, "fuzz-admin@example.org", "a long enough password", "admin")
        _token, secret = create_api_token(db, admin, "fuzz")
    headers = {"Authorization": f"Bearer {secret}"}
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    back_office = [op for op in operations if PUBLIC_TAG not in (op.tags or []) and op.method != "delete"]
    assert {op.path for op in back_office} >= {"/api/v1/studies", "/api/v1/studies/{study_id}/results"}
    for operation in back_office:
        names = {parameter.name for parameter in operation.path_parameters}
        for path_parameters in (None, {k: fuzz_target[k] for k in names if k in fuzz_target} or None):
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters)

                @given(case=strategy)
                @settings(
                    max_examples=ADMIN_MAX_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck)
                )
                def check(case: Any) -> None:
                    case.call_and_validate(checks=[not_a_server_error], headers=headers)

                try:
                    check()
                except Unsatisfiable:
                    continue  # nothing to break (no body, fixed path): the positive run covered it
