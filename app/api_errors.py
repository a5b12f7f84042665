"""OpenAPI description of the JSON API's error bodies (as produced by `app.errors`), shared by its routes.

Documenting them keeps the published schema truthful: clients (and the schemathesis fuzz tests) can rely on
every status the API answers with being listed, with the body it really has. Routes build their
``responses=`` from `error_responses`, so every error status has one description and the one body model.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ERROR_DESCRIPTIONS", "ERROR_RESPONSES", "ErrorOut", "FieldErrorOut", "error_responses"]


class FieldErrorOut(BaseModel):
    field: str = Field(description="dotted location of the invalid value, e.g. 'seq' (or 'body')")
    message: str


class ErrorOut(BaseModel):
    """Every error of the JSON API: a stable machine-readable ``error`` code and a human message."""

    error: str = Field(
        description="participant API: not_found, validation_error, already_answered, stale_seq, "
        "session_finished, consent_required, nothing_to_undo, replay_mismatch, study_draft, study_paused, "
        "study_closed, link_expired, invalid_input, http_error or internal_error; back office also: "
        "unauthorized, csrf_failed, invalid, invalid_config, has_answers, bad_transition, "
        "confirmation_required, already_excluded, not_excluded, exists, replay, weak_password, "
        "wrong_password or too_many_attempts"
    )
    message: str
    fields: list[FieldErrorOut] | None = Field(default=None, description="422 only: one entry per problem")
    state: dict[str, Any] | None = Field(default=None, description="409 only: the session's current state")


#: What each error status means, in words shared by every operation that can answer with it.
ERROR_DESCRIPTIONS: dict[int, str] = {
    400: "the body is not valid JSON text or form data (e.g. not UTF-8)",
    401: "no valid credentials: log in or send `Authorization: Bearer <token>` (a `WWW-Authenticate` header "
    "says so)",
    403: "a browser session sent an unsafe request without its `X-CSRF-Token`",
    404: "unknown or malformed id or token, or a study the caller may not see (never says which)",
    409: "conflicts with the current state (the `error` code says which)",
    413: "request body larger than the limit",
    422: "malformed request; `fields` names each invalid field, or `message` the invalid value",
    429: "too many failed password checks from this address or for this account: wait 15 minutes",
}


def error_responses(*statuses: int, **descriptions: str) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entries for ``statuses``, each with the `ErrorOut` body.

    A keyword ``s409="..."`` replaces the shared description of that status for one operation.
    """
    unknown = set(descriptions) - {f"s{status}" for status in statuses}
    if unknown:
        raise ValueError(f"descriptions for statuses not listed: {sorted(unknown)}")
    return {
        status: {"model": ErrorOut, "description": descriptions.get(f"s{status}", ERROR_DESCRIPTIONS[status])}
        for status in statuses
    }


#: The statuses any participant API operation may answer with besides its success status.
ERROR_RESPONSES = error_responses(
    400,
    404,
    409,
    413,
    422,
    s404="unknown or malformed token or study id (never says which)",
    s409="conflicts with the session's state; the body has the state",
    s422="malformed body; `fields` names each invalid field",
)
