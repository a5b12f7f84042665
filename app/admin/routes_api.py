"""Back-office JSON API under /api/v1: studies, planner, invitations, monitoring, results, tokens.

Authentication: ``Authorization: Bearer <token>`` (tokens from ``/admin/tokens`` or ``elicit admin token
create``), or the browser session plus an ``X-CSRF-Token`` header for unsafe methods. Studies of other
coordinators answer 404, exactly like studies that do not exist.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, File, Form, Path, Request, UploadFile, status
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from ..deps import CacheDep, DbSessionDep, SettingsDep
from ..study_config import StudyConfig
from . import export, monitor, studies
from .auth import AdminError, ApiUserDep, Principal, create_api_token, revoke_api_token
from .models import ApiToken, StudyControl
from .planner import PlanCache

__all__ = ["plan_cache", "router", "study_out"]

router = APIRouter(prefix="/api/v1", tags=["back office"])


class StudyPatchIn(BaseModel):
    """Change a study: its configuration (only before the first answer), status or settings."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | None = None
    status: str | None = Field(default=None, description="open, paused or closed")
    confirm: bool = Field(default=False, description="required to close a study")
    seconds_per_query: float | None = Field(default=None, ge=0.5, le=600)
    enrolment_expires_at: datetime | None = None


class InvitationsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    count: int = Field(ge=1, le=studies.MAX_INVITATIONS)
    expires_at: datetime | None = None
    labels: list[str] | None = Field(default=None, description="optional label per link (e.g. panel ids)")


class ExclusionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=2000)


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)


def plan_cache(request: Request) -> PlanCache:
    """The app's `PlanCache` (made by `app.admin.web.install`)."""
    cache: PlanCache = request.app.state.plan_cache
    return cache


def _base(request: Request, settings: Any) -> str:
    return settings.public_base_url or str(request.base_url).rstrip("/")


def study_out(study: Any, control: StudyControl | None, base: str) -> dict[str, Any]:
    """The API shape of a study."""
    return {
        "id": str(study.id),
        "name": study.name,
        "status": studies.status_of(control).value,
        "algorithm": study.algorithm,
        "config": study.config,
        "config_hash": studies.config_hash(study.config),
        "expected_queries": study.expected_queries,
        "open_enrolment": study.open_enrolment,
        "join_url": f"{base}/studies/{study.id}/join" if study.open_enrolment else None,
        "seconds_per_query": control.seconds_per_query if control else None,
        "enrolment_expires_at": control.enrolment_expires_at.isoformat()
        if control and control.enrolment_expires_at
        else None,
        "created_at": study.created_at.isoformat() if study.created_at else None,
    }


@router.get("/studies")
def list_studies(
    principal: ApiUserDep, db: DbSessionDep, request: Request, settings: SettingsDep
) -> dict[str, Any]:
    """Studies the caller may see (admins: all; coordinators: their own), with session counts."""
    base = _base(request, settings)
    return {
        "studies": [
            {**study_out(entry.study, entry.control, base), "sessions": entry.counts}
            for entry in studies.list_visible_studies(db, principal)
        ]
    }


@router.post("/studies", status_code=status.HTTP_201_CREATED)
def create_study(
    principal: ApiUserDep,
    db: DbSessionDep,
    request: Request,
    settings: SettingsDep,
    config: dict[str, Any] = Body(description="a study configuration, as for `elicit study create`"),  # noqa: B008
) -> dict[str, Any]:
    """Create a draft study from a configuration (validated field by field; 422 names the field)."""
    study, control = studies.create_study_for(db, principal, config)
    return study_out(study, control, _base(request, settings))


@router.post("/studies/from-csv", status_code=status.HTTP_201_CREATED)
def create_study_from_csv(
    principal: ApiUserDep,
    db: DbSessionDep,
    request: Request,
    settings: SettingsDep,
    config: str = Form(description="the study configuration as JSON; its query space comes from the file"),
    label_column: str = Form(description="the CSV column holding the true class"),
    file: UploadFile = File(description="UTF-8 CSV with a header row, at most 10 MB"),  # noqa: B008
    group_column: str = Form(default="", description="optional protected-group column (fairness studies)"),
) -> dict[str, Any]:
    """Create a draft study whose query space is built from an uploaded CSV dataset (multipart form).

    The classes (and groups) are the label (and group) column's values and replace ``class_names``
    (``group_names``); the space's full description is stored, the file is not. 422 names the problem.
    """
    data = parse_json_upload(config.encode("utf-8"), studies.MAX_CSV_BYTES)
    if not isinstance(data, dict):
        raise AdminError("config: must be a JSON object", status_code=422)
    raw = file.file.read(studies.MAX_CSV_BYTES + 1)
    space = studies.csv_dataset_space(raw, label_column, group_column or None, name=file.filename or "")
    data = {
        **data,
        "query_space": space,
        "class_names": list(space["class_names"]),
        "group_names": list(space["group_names"]),
    }
    study, control = studies.create_study_for(db, principal, data)
    return study_out(study, control, _base(request, settings))


@router.get("/studies/{study_id}")
def show_study(
    study_id: str, principal: ApiUserDep, db: DbSessionDep, request: Request, settings: SettingsDep
) -> dict[str, Any]:
    """One study (404 if it does not exist or belongs to another coordinator)."""
    study, control = studies.visible_study(db, principal, study_id)
    return study_out(study, control, _base(request, settings))


@router.patch("/studies/{study_id}")
def update_study(
    study_id: str,
    body: StudyPatchIn,
    principal: ApiUserDep,
    db: DbSessionDep,
    cache: CacheDep,
    request: Request,
    settings: SettingsDep,
) -> dict[str, Any]:
    """Edit the configuration (409 once anyone answered), change status, planner time or link expiry."""
    study, control = studies.visible_study(db, principal, study_id)
    if body.config is not None or body.seconds_per_query is not None or body.enrolment_expires_at is not None:
        studies.edit_study(
            db,
            cache,
            study,
            control,
            body.config,
            seconds_per_query=body.seconds_per_query,
            enrolment_expires_at=body.enrolment_expires_at,
        )
    if body.status is not None:
        control = studies.set_status(
            db, study, db.get(StudyControl, study.id), body.status, confirm=body.confirm, by=principal.user.id
        )
    return study_out(study, db.get(StudyControl, study.id), _base(request, settings))


@router.post("/studies/{study_id}/duplicate", status_code=status.HTTP_201_CREATED)
def duplicate_study(
    study_id: str, principal: ApiUserDep, db: DbSessionDep, request: Request, settings: SettingsDep
) -> dict[str, Any]:
    """A draft copy of the study's configuration, owned by the caller."""
    study, control = studies.visible_study(db, principal, study_id)
    copy = studies.duplicate_study(db, principal, study, control)
    return study_out(copy, db.get(StudyControl, copy.id), _base(request, settings))


@router.get("/studies/{study_id}/plan")
def plan(study_id: str, principal: ApiUserDep, db: DbSessionDep, request: Request) -> dict[str, Any]:
    """The planner: expected queries (mean, p90), minutes per participant and elicitation error."""
    study, control = studies.visible_study(db, principal, study_id)
    result = plan_cache(request).plan(
        StudyConfig.model_validate(study.config),
        seconds_per_query=control.seconds_per_query if control else None,
        measured_seconds=monitor.measured_seconds_per_query(db, study.id),
    )
    return result.to_dict()


@router.post("/studies/{study_id}/invitations", status_code=status.HTTP_201_CREATED)
def create_invitations(
    study_id: str,
    body: InvitationsIn,
    principal: ApiUserDep,
    db: DbSessionDep,
    cache: CacheDep,
    request: Request,
    settings: SettingsDep,
) -> dict[str, Any]:
    """``count`` personal links; the tokens are in this answer only (they are stored hashed)."""
    study, control = studies.visible_study(db, principal, study_id)
    created = studies.create_invitations(
        db, cache, principal, study, control, body.count, expires_at=body.expires_at, labels=body.labels
    )
    base = _base(request, settings)
    return {
        "invitations": [
            {
                "id": invitation.id,
                "label": invitation.label,
                "token": token,
                "url": f"{base}/sessions/{token}",
                "expires_at": invitation.expires_at.isoformat() if invitation.expires_at else None,
            }
            for invitation, token in created
        ]
    }


@router.get("/studies/{study_id}/dashboard")
def dashboard(study_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """Live numbers: participants by status, answer rate, median time per query, drop-off, warnings."""
    study, _control = studies.visible_study(db, principal, study_id)
    return monitor.study_dashboard(db, study).to_dict()


def _stream(
    request: Request, principal: Principal, study_id: str, produce: Any, media_type: str, name: str
) -> Any:
    """Stream from a database session of its own (the request's session closes before the body is sent)."""
    with request.app.state.sessionmaker() as db:
        study, _control = studies.visible_study(db, principal, study_id)
        filename = f"{name}-{study.id}"

    def body() -> Iterator[str]:
        with request.app.state.sessionmaker() as stream_db:
            study_again, _ = studies.visible_study(stream_db, principal, study_id)
            yield from produce(stream_db, study_again)

    extension = "csv" if media_type.startswith("text/csv") else "json"
    headers = {"Content-Disposition": f'attachment; filename="{filename}.{extension}"'}
    return StreamingResponse(body(), media_type=media_type, headers=headers)


def results_json_response(request: Request, principal: Principal, study_id: str) -> Any:
    return _stream(
        request,
        principal,
        study_id,
        lambda db, study: export.json_lines(study, export.result_rows(db, study)),
        "application/json",
        "results",
    )


def results_csv_response(request: Request, principal: Principal, study_id: str) -> Any:
    return _stream(
        request,
        principal,
        study_id,
        lambda db, study: export.csv_lines(export.result_columns(study), export.result_rows(db, study)),
        "text/csv; charset=utf-8",
        "results",
    )


def answers_csv_response(request: Request, principal: Principal, study_id: str) -> Any:
    return _stream(
        request,
        principal,
        study_id,
        lambda db, study: export.csv_lines(export.ANSWER_LOG_COLUMNS, export.answer_log_rows(db, study)),
        "text/csv; charset=utf-8",
        "answers",
    )


@router.get("/studies/{study_id}/results")
def results(study_id: str, principal: ApiUserDep, request: Request) -> Any:
    """Elicited metrics, one row per participant (named columns, algorithm, version, config hash)."""
    return results_json_response(request, principal, study_id)


@router.get("/studies/{study_id}/results.csv")
def results_csv(study_id: str, principal: ApiUserDep, request: Request) -> Any:
    """The same rows as CSV (text cells neutralised against spreadsheet formulas); streamed."""
    return results_csv_response(request, principal, study_id)


@router.get("/studies/{study_id}/answers.csv")
def answers_csv(study_id: str, principal: ApiUserDep, request: Request) -> Any:
    """Every answer-log row of every session (undone answers and undo rows included); streamed."""
    return answers_csv_response(request, principal, study_id)


@router.get("/studies/{study_id}/archive")
def archive(study_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """The replayable study archive: configuration, sessions, full logs, results, exclusions."""
    study, _control = studies.visible_study(db, principal, study_id)
    return export.study_archive(db, study)


@router.get("/studies/{study_id}/snapshots")
def list_snapshots(study_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """Archives kept when the study was closed (id, reason, time)."""
    study, _control = studies.visible_study(db, principal, study_id)
    return {"snapshots": [_snapshot_out(item) for item in studies.snapshots(db, study.id)]}


#: Integer row ids in paths: out-of-range numbers are a 422, never an overflow in the database driver.
RowIdPath = Annotated[int, Path(ge=1, le=2**63 - 1)]


@router.get("/studies/{study_id}/snapshots/{snapshot_id}")
def show_snapshot(
    study_id: str, snapshot_id: RowIdPath, principal: ApiUserDep, db: DbSessionDep
) -> dict[str, Any]:
    """One kept archive, exactly as it was taken."""
    study, _control = studies.visible_study(db, principal, study_id)
    snapshot = studies.snapshot(db, study.id, snapshot_id)
    return {**_snapshot_out(snapshot), "archive": snapshot.archive}


def _snapshot_out(snapshot: Any) -> dict[str, Any]:
    return {"id": snapshot.id, "reason": snapshot.reason, "created_at": snapshot.created_at.isoformat()}


@router.post("/studies/import", status_code=status.HTTP_201_CREATED)
def import_study(
    principal: ApiUserDep,
    db: DbSessionDep,
    cache: CacheDep,
    request: Request,
    settings: SettingsDep,
    archive: dict[str, Any] = Body(description="a study archive from GET /studies/{id}/archive"),  # noqa: B008
) -> dict[str, Any]:
    """Load a study archive (every finished session is replayed and must reproduce its metric)."""
    study, verified = export.import_archive(db, cache, archive, owner_id=principal.user.id)
    return {
        **study_out(study, db.get(StudyControl, study.id), _base(request, settings)),
        "verified": verified,
    }


@router.get("/studies/{study_id}/sessions/{session_id}/replay-log")
def replay_log(study_id: str, session_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """The session's elicitor answers in the format ``elicit replay FILE`` reads."""
    from sqlalchemy import select

    from ..models import Answer

    study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    rows = list(db.scalars(select(Answer).where(Answer.session_id == session.id).order_by(Answer.seq)))
    return export.replay_log(study, session, rows)


@router.post("/studies/{study_id}/sessions/{session_id}/exclusion", status_code=status.HTTP_201_CREATED)
def exclude(
    study_id: str, session_id: str, body: ExclusionIn, principal: ApiUserDep, db: DbSessionDep
) -> dict[str, Any]:
    """Exclude a session from the analysis, with a reason (kept and exported; nothing is deleted)."""
    _study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    exclusion = studies.exclude_session(db, principal, session, body.reason)
    return {
        "session_id": str(session.id),
        "reason": exclusion.reason,
        "created_at": exclusion.created_at.isoformat(),
    }


@router.post("/studies/{study_id}/sessions/{session_id}/exclusion/lift")
def lift(study_id: str, session_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """Take an excluded session back into the analysis (the exclusion stays on record, marked lifted)."""
    _study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    exclusion = studies.lift_exclusion(db, principal, session)
    return {
        "session_id": str(session.id),
        "lifted_at": exclusion.lifted_at.isoformat() if exclusion.lifted_at else None,
    }


@router.get("/tokens")
def list_tokens(principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """The caller's API tokens (never their secrets)."""
    from sqlalchemy import select

    tokens = db.scalars(select(ApiToken).where(ApiToken.user_id == principal.user.id).order_by(ApiToken.id))
    return {"tokens": [_token_out(token) for token in tokens]}


def _token_out(token: ApiToken) -> dict[str, Any]:
    return {
        "id": token.id,
        "name": token.name,
        "created_at": token.created_at.isoformat() if token.created_at else None,
        "last_used_at": token.last_used_at.isoformat() if token.last_used_at else None,
        "revoked": token.revoked_at is not None,
    }


@router.post("/tokens", status_code=status.HTTP_201_CREATED)
def new_token(body: TokenIn, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """A new bearer token for the caller; the secret appears in this answer only."""
    token, secret = create_api_token(db, principal.user, body.name)
    return {**_token_out(token), "token": secret}


@router.delete("/tokens/{token_id}")
def revoke_token(token_id: RowIdPath, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """Revoke a token at once (admins may revoke anyone's)."""
    return _token_out(revoke_api_token(db, principal.user, token_id))


def parse_json_upload(raw: bytes, limit: int) -> Any:
    """Decode an uploaded JSON file with a size limit and a clear message."""
    if len(raw) > limit:
        raise AdminError(f"the file is larger than {limit // 1_000_000} MB", status_code=413)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise AdminError("the file is not UTF-8 text", status_code=422) from None
    except json.JSONDecodeError as exc:
        raise AdminError(f"the file is not valid JSON: {exc}", status_code=422) from None
