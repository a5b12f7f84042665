"""OpenAPI description of the JSON API's error bodies (as produced by `app.errors`), shared by its routes.

Documenting them keeps the published schema truthful: clients (and the schemathesis fuzz test) can rely on
every status the API answers with being listed, with the body it really has.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["ERROR_RESPONSES", "ErrorOut", "FieldErrorOut"]


class FieldErrorOut(BaseModel):
    field: str = Field(description="dotted location of the invalid value, e.g. 'seq' (or 'body')")
    message: str


class ErrorOut(BaseModel):
    """Every error of the JSON API: a stable machine-readable ``error`` code and a human message."""

    error: str = Field(
        description="not_found, validation_error, already_answered, stale_seq, session_finished, "
        "consent_required, nothing_to_undo, replay_mismatch, http_error or internal_error"
    )
    message: str
    fields: list[FieldErrorOut] | None = Field(default=None, description="422 only: one entry per problem")
    state: dict[str, Any] | None = Field(default=None, description="409 only: the session's current state")


#: The statuses any JSON API operation may answer with besides its success status.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "the body is not valid JSON text (e.g. not UTF-8)"},
    404: {"model": ErrorOut, "description": "unknown or malformed token or study id (never says which)"},
    409: {"model": ErrorOut, "description": "conflicts with the session's state; the body has the state"},
    413: {"model": ErrorOut, "description": "request body larger than the limit"},
    422: {"model": ErrorOut, "description": "malformed body; `fields` names each invalid field"},
}
