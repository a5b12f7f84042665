"""Back-office JSON API under /api/v1: studies, planner, invitations, monitoring, results, tokens.

Authentication: ``Authorization: Bearer <token>`` (tokens from ``/admin/tokens`` or ``elicit admin token
create``), or the browser session plus an ``X-CSRF-Token`` header for unsafe methods. Studies of other
coordinators answer 404, exactly like studies that do not exist.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, File, Form, Request, UploadFile, status
from fastapi.responses import Response, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
)

from .. import repository as repo
from ..api_errors import error_responses
from ..deps import CacheDep, DbSessionDep, SettingsDep
from ..models import StudyControl
from ..planning import PLAUSIBLE_SECONDS, study_plan
from ..study_config import config_hash
from . import best, export, monitor, panel, studies
from .admission import AdmittedRoute
from .auth import (
    AdminError,
    ApiUserDep,
    change_password,
    create_api_token,
    list_api_tokens,
    revoke_api_token,
)
from .downloads import ExportFile, api_documentation, download_response
from .http import (
    MAX_ARCHIVE_BODY_BYTES,
    MAX_BODY_BYTES,
    MAX_STUDY_BODY_BYTES,
    IncludePilotsQuery,
    RowIdPath,
    parse_json_upload,
    plan_cache,
    reject_unknown_query,
)
from .models import ApiToken
from .schemas import (
    ArchiveOut,
    BestClassifiersOut,
    DashboardOut,
    ExclusionLiftedOut,
    ExclusionOut,
    InvitationsOut,
    PanelOut,
    PasswordChangedOut,
    PlanOut,
    ReplayLogOut,
    ResultsOut,
    SnapshotDetailOut,
    SnapshotsOut,
    StudiesOut,
    StudyImportedOut,
    StudyOut,
    TokenCreatedOut,
    TokenOut,
    TokensOut,
)

__all__ = ["router", "study_out"]

#: Declares bearer authentication in OpenAPI (Swagger UI's "Authorize"); `api_user` does the checking.
BEARER_SCHEME = HTTPBearer(auto_error=False, description="a back-office API token (`elk_…`)")
#: Every operation needs credentials (401 without them); the rest is listed per operation.
router = APIRouter(
    prefix="/api/v1",
    tags=["back office"],
    responses=error_responses(401),
    dependencies=[Depends(BEARER_SCHEME), Depends(reject_unknown_query)],
    route_class=AdmittedRoute,
    max_body_size=MAX_BODY_BYTES,
)

#: Errors of any state-changing request with a body: unreadable body (400), a browser session without
#: its CSRF header (403), body over the size limit (413), invalid fields (422).
WRITE_ERRORS = (400, 403, 413, 422)
#: Errors of a state-changing request without a body.
ACTION_ERRORS = (403,)


def _iso_text(value: Any) -> Any:
    """Only JSON strings are date-times here (pydantic would also take a number as a Unix time)."""
    if not isinstance(value, str):
        raise ValueError("must be an ISO 8601 date-time string with a UTC offset")
    return value


#: A date-time with an explicit offset: a naive one would be read in an unknown time zone.
IsoDateTime = Annotated[AwareDatetime, BeforeValidator(_iso_text)]


class StudyPatchIn(BaseModel):
    """Change a study: its configuration (only before the first answer), status or settings."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] | None = None
    status: Literal["draft", "open", "paused", "closed"] | None = Field(
        default=None, description="open, paused or closed (closing is final and needs `confirm`)"
    )
    confirm: StrictBool = Field(default=False, description="required to close a study")
    seconds_per_query: StrictFloat | None = Field(
        default=None, ge=PLAUSIBLE_SECONDS[0], le=PLAUSIBLE_SECONDS[1]
    )
    enrolment_expires_at: IsoDateTime | None = None


class InvitationsIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    count: StrictInt = Field(ge=1, le=studies.MAX_INVITATIONS)
    expires_at: IsoDateTime | None = None
    labels: list[Annotated[StrictStr, Field(max_length=200)]] | None = Field(
        default=None, description="optional label per link (e.g. panel ids)"
    )


class ExclusionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: StrictStr = Field(min_length=1, max_length=2000)


class PasswordChangeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    current_password: StrictStr = Field(max_length=1024)
    new_password: StrictStr = Field(max_length=1024)


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: StrictStr = Field(min_length=1, max_length=100)


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
        "config_hash": config_hash(study.config),
        "expected_queries": study.expected_queries,
        "open_enrolment": study.open_enrolment,
        "join_url": f"{base}/studies/{study.id}/join" if study.open_enrolment else None,
        "seconds_per_query": control.seconds_per_query if control else None,
        "enrolment_expires_at": export.iso_utc(control.enrolment_expires_at) if control else None,
        "created_at": export.iso_utc(study.created_at),
    }


@router.get("/studies", response_model=StudiesOut)
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


@router.post(
    "/studies",
    max_body_size=MAX_STUDY_BODY_BYTES,
    status_code=status.HTTP_201_CREATED,
    response_model=StudyOut,
    responses=error_responses(*WRITE_ERRORS),
)
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


@router.post(
    "/studies/from-csv",
    max_body_size=MAX_STUDY_BODY_BYTES,
    status_code=status.HTTP_201_CREATED,
    response_model=StudyOut,
    responses=error_responses(*WRITE_ERRORS),
)
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
    data = parse_json_upload(config.encode("utf-8"), studies.MAX_CSV_BYTES, "config")
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


@router.get("/studies/{study_id}", response_model=StudyOut, responses=error_responses(404, 422))
def show_study(
    study_id: str, principal: ApiUserDep, db: DbSessionDep, request: Request, settings: SettingsDep
) -> dict[str, Any]:
    """One study (404 if it does not exist or belongs to another coordinator)."""
    study, control = studies.visible_study(db, principal, study_id)
    return study_out(study, control, _base(request, settings))


@router.patch(
    "/studies/{study_id}",
    max_body_size=MAX_STUDY_BODY_BYTES,
    response_model=StudyOut,
    responses=error_responses(
        *WRITE_ERRORS,
        404,
        409,
        s409="has_answers (the configuration is frozen), bad_transition or confirmation_required",
    ),
)
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
            db, study, studies.control_of(db, study), body.status, confirm=body.confirm, by=principal.user.id
        )
    return study_out(study, studies.control_of(db, study), _base(request, settings))


@router.post(
    "/studies/{study_id}/duplicate",
    status_code=status.HTTP_201_CREATED,
    response_model=StudyOut,
    responses=error_responses(*ACTION_ERRORS, 404, 422),
)
def duplicate_study(
    study_id: str, principal: ApiUserDep, db: DbSessionDep, request: Request, settings: SettingsDep
) -> dict[str, Any]:
    """A draft copy of the study's configuration, owned by the caller."""
    study, control = studies.visible_study(db, principal, study_id)
    copy = studies.duplicate_study(db, principal, study, control)
    return study_out(copy, studies.control_of(db, copy), _base(request, settings))


@router.get("/studies/{study_id}/plan", response_model=PlanOut, responses=error_responses(404, 422))
def plan(study_id: str, principal: ApiUserDep, db: DbSessionDep, request: Request) -> dict[str, Any]:
    """The planner: expected queries (mean, p90), minutes per participant and elicitation error."""
    study, _control = studies.visible_study(db, principal, study_id)
    return study_plan(db, plan_cache(request), study).to_dict()


@router.post(
    "/studies/{study_id}/invitations",
    status_code=status.HTTP_201_CREATED,
    response_model=InvitationsOut,
    responses=error_responses(*WRITE_ERRORS, 404, 409, s409="study_closed: it takes no new participants"),
)
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
                "expires_at": export.iso_utc(invitation.expires_at),
            }
            for invitation, token in created
        ]
    }


@router.get("/studies/{study_id}/dashboard", response_model=DashboardOut, responses=error_responses(404, 422))
def dashboard(study_id: str, principal: ApiUserDep, db: DbSessionDep, cache: CacheDep) -> dict[str, Any]:
    """Live numbers: participants by status, answer rate, median time per query, drop-off, warnings, and
    each session's progress against its own expected total."""
    study, _control = studies.visible_study(db, principal, study_id)
    return monitor.study_dashboard(db, cache, study).to_dict()


#: The 200 answer of a streamed CSV export: text, not JSON (FastAPI would describe it as JSON).
CSV_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "CSV with a header row (RFC 4180, CRLF line ends), streamed",
        "content": {"text/csv": {"schema": {"type": "string"}}},
    }
}


@router.get(
    "/studies/{study_id}/results",
    response_model=ResultsOut,
    responses=error_responses(404, 422),
    response_description="the results JSON, streamed",
)
def results(
    study_id: str, principal: ApiUserDep, request: Request, include_pilots: IncludePilotsQuery = False
) -> StreamingResponse:
    """Elicited metrics, one row per participant (named columns, algorithm, version, config hash)."""
    return download_response(request, principal, study_id, "results.json", include_pilots)


@router.get(
    "/studies/{study_id}/results.csv",
    response_class=StreamingResponse,
    responses={**CSV_RESPONSE, **error_responses(404, 422)},
)
def results_csv(
    study_id: str, principal: ApiUserDep, request: Request, include_pilots: IncludePilotsQuery = False
) -> StreamingResponse:
    """The same rows as CSV (text cells neutralised against spreadsheet formulas); streamed."""
    return download_response(request, principal, study_id, "results.csv", include_pilots)


@router.get(
    "/studies/{study_id}/answers.csv",
    response_class=StreamingResponse,
    responses={**CSV_RESPONSE, **error_responses(404, 422)},
)
def answers_csv(
    study_id: str, principal: ApiUserDep, request: Request, include_pilots: IncludePilotsQuery = False
) -> StreamingResponse:
    """Every answer-log row of every session (undone answers and undo rows included); streamed."""
    return download_response(request, principal, study_id, "answers.csv", include_pilots)


#: The 200 answer of a Parquet download.
PARQUET_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/vnd.apache.parquet": {}}, "description": "a Parquet file"},
    501: {"description": "the server lacks the optional pyarrow package"},
}


@router.get(
    "/studies/{study_id}/results.parquet",
    response_class=Response,
    responses={**PARQUET_RESPONSE, **error_responses(404, 422)},
)
def results_parquet(
    study_id: str, principal: ApiUserDep, request: Request, include_pilots: IncludePilotsQuery = False
) -> Response:
    """The results table as Parquet (same columns as the CSV); needs the server's optional pyarrow."""
    return download_response(request, principal, study_id, "results.parquet", include_pilots)


@router.get(
    "/studies/{study_id}/answers.parquet",
    response_class=Response,
    responses={**PARQUET_RESPONSE, **error_responses(404, 422)},
)
def answers_parquet(
    study_id: str, principal: ApiUserDep, request: Request, include_pilots: IncludePilotsQuery = False
) -> Response:
    """Every answer-log row as Parquet (same columns as the CSV); needs the server's optional pyarrow."""
    return download_response(request, principal, study_id, "answers.parquet", include_pilots)


@router.get("/studies/{study_id}/panel", response_model=PanelOut, responses=error_responses(404, 422))
def show_panel(study_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """The panel of the included finished sessions: consensus metric with bootstrap intervals, agreement
    between every two participants, and camps when the panel splits."""
    study, _control = studies.visible_study(db, principal, study_id)
    return panel.panel_json(panel.study_panel(db, study))


@router.get(
    "/studies/{study_id}/panel.csv",
    response_class=Response,
    responses={**CSV_RESPONSE, **error_responses(404, 422)},
)
def panel_csv(study_id: str, principal: ApiUserDep, request: Request) -> Response:
    """The consensus (with interval columns), each camp's centre and every participant, one row each."""
    return download_response(request, principal, study_id, "panel.csv")


@router.get(
    "/studies/{study_id}/panel-agreement.csv",
    response_class=Response,
    responses={**CSV_RESPONSE, **error_responses(404, 422)},
)
def panel_agreement_csv(study_id: str, principal: ApiUserDep, request: Request) -> Response:
    """Agreement between every two participants (percent of question pairs answered alike), one row each."""
    return download_response(request, principal, study_id, "panel-agreement.csv")


@router.get(
    "/studies/{study_id}/best-classifiers",
    response_model=BestClassifiersOut,
    responses=error_responses(404, 422),
)
def show_best_classifiers(study_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """For a study built on a dataset: each included participant's (and the panel consensus's) best
    classifier, a random mixture of the dataset's trained classifiers, beside the most accurate one."""
    study, _control = studies.visible_study(db, principal, study_id)
    return best.best_json(best.study_best(db, study))


@router.get(
    "/studies/{study_id}/best-classifiers.csv",
    response_class=Response,
    responses={**CSV_RESPONSE, **error_responses(404, 422)},
)
def best_classifiers_csv(study_id: str, principal: ApiUserDep, request: Request) -> Response:
    """The best classifiers as a table: rates and confusion cells per group and class, one row per metric."""
    return download_response(request, principal, study_id, "best-classifiers.csv")


@router.get(
    "/studies/{study_id}/export/{filename}",
    response_class=Response,
    responses={
        200: {
            "description": "the file, as an attachment",
            "content": {"text/csv": {}, "application/json": {}, "application/vnd.apache.parquet": {}},
        },
        501: PARQUET_RESPONSE[501],
        **error_responses(404, 422),
    },
    description="One export of the study, byte for byte the file the back office's download links and "
    "`elicit study export` give: " + api_documentation() + ".",
)
def export_file(
    study_id: str,
    filename: ExportFile,
    principal: ApiUserDep,
    request: Request,
    include_pilots: IncludePilotsQuery = False,
) -> Response:
    """One of the study's exports by file name."""
    return download_response(request, principal, study_id, filename.value, include_pilots)


@router.get(
    "/studies/{study_id}/candidate-ranking.csv",
    response_class=Response,
    responses={**CSV_RESPONSE, **error_responses(404, 422)},
)
def candidate_ranking_csv(study_id: str, principal: ApiUserDep, request: Request) -> Response:
    """For a study with groups: each metric's ranking of the real candidate classifiers, one row per metric
    and candidate (rank, cost, chance of being best, the gaps between the groups, rates per group)."""
    return download_response(request, principal, study_id, "candidate-ranking.csv")


@router.get("/studies/{study_id}/archive", response_model=ArchiveOut, responses=error_responses(404, 422))
def archive(study_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """The replayable study archive: configuration, sessions, full logs, results, exclusions."""
    study, _control = studies.visible_study(db, principal, study_id)
    return export.study_archive(db, study)


@router.get("/studies/{study_id}/snapshots", response_model=SnapshotsOut, responses=error_responses(404, 422))
def list_snapshots(study_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """Archives kept when the study was closed (id, reason, time)."""
    study, _control = studies.visible_study(db, principal, study_id)
    return {"snapshots": [_snapshot_out(item) for item in studies.snapshots(db, study.id)]}


#: Integer row ids in paths: out-of-range numbers are a 422, never an overflow in the database driver.
@router.get(
    "/studies/{study_id}/snapshots/{snapshot_id}",
    response_model=SnapshotDetailOut,
    responses=error_responses(404, 422),
)
def show_snapshot(
    study_id: str, snapshot_id: RowIdPath, principal: ApiUserDep, db: DbSessionDep
) -> StreamingResponse:
    """One kept archive, exactly as it was taken (streamed)."""
    study, _control = studies.visible_study(db, principal, study_id)
    snapshot = studies.snapshot(db, study.id, snapshot_id)
    head = json.dumps(_snapshot_out(snapshot))[: -len("}")] + ', "archive": '
    packed = snapshot.archive_gz

    def body() -> Iterator[bytes]:
        yield head.encode("utf-8")
        yield from export.gunzip_chunks(packed)
        yield b"}"

    return StreamingResponse(body(), media_type="application/json")


def _snapshot_out(snapshot: Any) -> dict[str, Any]:
    return {"id": snapshot.id, "reason": snapshot.reason, "created_at": export.iso_utc(snapshot.created_at)}


@router.post(
    "/studies/import",
    max_body_size=MAX_ARCHIVE_BODY_BYTES,
    status_code=status.HTTP_201_CREATED,
    response_model=StudyImportedOut,
    responses=error_responses(
        *WRITE_ERRORS, 409, s409="exists: the study or some of its sessions are in this database already"
    ),
)
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
        **study_out(study, studies.control_of(db, study), _base(request, settings)),
        "verified": verified,
    }


@router.get(
    "/studies/{study_id}/sessions/{session_id}/replay-log",
    response_model=ReplayLogOut,
    responses=error_responses(404, 422),
)
def replay_log(study_id: str, session_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """The session's elicitor answers in the format ``elicit replay FILE`` reads."""
    study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    rows = list(repo.log_rows(db, session.id))
    return export.replay_log(study, session, rows)


@router.post(
    "/studies/{study_id}/sessions/{session_id}/exclusion",
    status_code=status.HTTP_201_CREATED,
    response_model=ExclusionOut,
    responses=error_responses(*WRITE_ERRORS, 404, 409, s409="already_excluded"),
)
def exclude(
    study_id: str, session_id: str, body: ExclusionIn, principal: ApiUserDep, db: DbSessionDep
) -> dict[str, Any]:
    """Exclude a session from the analysis, with a reason (kept and exported; nothing is deleted)."""
    _study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    exclusion = studies.exclude_session(db, principal, session, body.reason)
    return {
        "session_id": str(session.id),
        "reason": exclusion.reason,
        "created_at": export.iso_utc(exclusion.created_at),
    }


@router.post(
    "/studies/{study_id}/sessions/{session_id}/exclusion/lift",
    response_model=ExclusionLiftedOut,
    responses=error_responses(*ACTION_ERRORS, 404, 409, 422, s409="not_excluded"),
)
def lift(study_id: str, session_id: str, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """Take an excluded session back into the analysis (the exclusion stays on record, marked lifted)."""
    _study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    exclusion = studies.lift_exclusion(db, principal, session)
    return {
        "session_id": str(session.id),
        "lifted_at": export.iso_utc(exclusion.lifted_at),
    }


@router.post(
    "/account/password",
    response_model=PasswordChangedOut,
    responses=error_responses(
        400,
        403,
        413,
        422,
        429,
        s403="wrong_password: the current password is wrong (or a browser session sent no X-CSRF-Token)",
        s422="weak_password: the new one is too short, blank or easy to guess (`message` says why)",
    ),
)
def change_own_password(
    body: PasswordChangeIn, principal: ApiUserDep, db: DbSessionDep, request: Request
) -> dict[str, Any]:
    """Change the caller's own password (the current one is checked like a login); every browser session
    of the account ends, API tokens keep working."""
    user = db.merge(principal.user)
    change_password(db, request, user, body.current_password, body.new_password)
    return {"email": user.email, "sessions_ended": True}


@router.get("/tokens", response_model=TokensOut)
def list_tokens(principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """The caller's API tokens (never their secrets)."""
    tokens = list_api_tokens(db, principal.user)
    return {"tokens": [_token_out(token) for token in tokens]}


def _token_out(token: ApiToken) -> dict[str, Any]:
    return {
        "id": token.id,
        "name": token.name,
        "created_at": export.iso_utc(token.created_at),
        "last_used_at": export.iso_utc(token.last_used_at),
        "revoked": token.revoked_at is not None,
    }


@router.post(
    "/tokens",
    status_code=status.HTTP_201_CREATED,
    response_model=TokenCreatedOut,
    responses=error_responses(*WRITE_ERRORS),
)
def new_token(body: TokenIn, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """A new bearer token for the caller; the secret appears in this answer only."""
    token, secret = create_api_token(db, principal.user, body.name)
    return {**_token_out(token), "token": secret}


@router.delete(
    "/tokens/{token_id}",
    response_model=TokenOut,
    responses=error_responses(*ACTION_ERRORS, 404, 422, s422="the token id is not an integer in range"),
)
def revoke_token(token_id: RowIdPath, principal: ApiUserDep, db: DbSessionDep) -> dict[str, Any]:
    """Revoke a token at once (admins may revoke anyone's)."""
    return _token_out(revoke_api_token(db, principal.user, token_id))
