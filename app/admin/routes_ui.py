"""Back-office pages under /admin: login, studies, planner, invitations, monitoring, results, tokens.

Every page needs a logged-in coordinator or admin (anyone else is redirected to the login page); every
form carries the session's CSRF token; studies of other coordinators are 404 pages.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response, StreamingResponse
from starlette.datastructures import UploadFile

from elicitation.region import region_summary

from .. import repository as repo
from ..algorithms import REGISTRY
from ..deps import CacheDep, DbSessionDep, SettingsDep
from ..models import SessionStatus
from ..panels import PanelConfig, panel_link, preset_of
from ..planning import study_plan
from ..study_config import (
    config_hash,
)
from . import best, export, monitor, panel, snippets, studies, study_form
from .admission import AdmittedRoute
from .auth import (
    AdminError,
    AuthError,
    Principal,
    UiUserDep,
    authenticate,
    change_password,
    check_csrf,
    check_login_csrf,
    clear_session_cookie,
    create_api_token,
    issue_session_cookie,
    list_api_tokens,
    login_csrf_token,
    new_csrf_token,
    revoke_api_token,
)
from .downloads import DOWNLOADS, download_response
from .http import (
    MAX_ARCHIVE_BODY_BYTES,
    MAX_ARCHIVE_BYTES,
    MAX_BODY_BYTES,
    MAX_STUDY_BODY_BYTES,
    IncludePilotsQuery,
    RowIdPath,
    parse_json_upload,
    plan_cache,
)

__all__ = ["router"]

router = APIRouter(
    prefix="/admin", include_in_schema=False, route_class=AdmittedRoute, max_body_size=MAX_BODY_BYTES
)
#: Seconds between two refreshes of an open dashboard (it pauses while the tab is hidden).
MONITOR_POLL_S = 5
CsrfField = Annotated[str, Form()]


def _render(request: Request, template: str, context: dict[str, Any], status_code: int = 200) -> Response:
    templates = request.app.state.templates
    response: Response = templates.TemplateResponse(
        request, f"admin/{template}", context, status_code=status_code
    )
    return response


def _page(
    request: Request, principal: Principal, template: str, status_code: int = 200, **context: Any
) -> Response:
    return _render(
        request, template, {"principal": principal, "csrf": principal.csrf, **context}, status_code
    )


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _safe_next(target: str | None) -> str:
    """Only local back-office paths are followed after login (no open redirect)."""
    if not target:
        return "/admin"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/admin") or target.startswith("//"):
        return "/admin"
    return target


# -- login ---------------------------------------------------------------------------------------------------


@router.get("/login")
def show_login(request: Request, next: str | None = None) -> Response:
    cookie_carrier = Response()
    token = login_csrf_token(request, cookie_carrier)
    response = _render(
        request, "login.html", {"next": _safe_next(next), "error": None, "email": "", "csrf": token}
    )
    for value in cookie_carrier.headers.getlist("set-cookie"):
        response.headers.append("set-cookie", value)
    return response


@router.post("/login")
def login(
    request: Request,
    db: DbSessionDep,
    email: Annotated[str, Form(max_length=254)] = "",
    password: Annotated[str, Form(max_length=1024)] = "",
    csrf_token: CsrfField = "",
    next: Annotated[str, Form()] = "/admin",
) -> Response:
    check_login_csrf(request, csrf_token)
    try:
        user = authenticate(db, request, email, password)
    except (AuthError, AdminError) as exc:
        status = exc.status_code if isinstance(exc, AdminError) else 401
        response = _render(
            request,
            "login.html",
            {"next": _safe_next(next), "error": exc.message, "email": email, "csrf": csrf_token},
            status_code=status,
        )
        return response
    response = _see_other(_safe_next(next))
    issue_session_cookie(request, response, user)
    return response


@router.post("/logout")
def logout(principal: UiUserDep, db: DbSessionDep, csrf_token: CsrfField = "") -> Response:
    check_csrf(principal, csrf_token)
    user = db.merge(principal.user)
    user.session_epoch += 1  # every cookie of this user stops working, not just this browser's
    db.commit()
    response = _see_other("/admin/login")
    clear_session_cookie(response)
    return response


# -- studies -------------------------------------------------------------------------------------------------


@router.get("")
def list_studies(request: Request, principal: UiUserDep, db: DbSessionDep) -> Response:
    return _page(request, principal, "studies.html", entries=studies.list_visible_studies(db, principal))


def _study_form(
    request: Request,
    principal: Principal,
    form: dict[str, Any],
    *,
    study: Any = None,
    errors: list[str],
    plan: Any,
) -> Response:
    return _page(
        request,
        principal,
        "study_form.html",
        status_code=422 if errors else 200,
        form=form,
        study=study,
        errors=errors,
        plan=plan,
        algorithms=sorted(REGISTRY.values(), key=lambda spec: spec.name),
        max_csv_mb=studies.MAX_CSV_BYTES // 1_000_000,
        datasets=study_form.dataset_choices(),
    )


@router.get("/studies/new")
def new_study(request: Request, principal: UiUserDep) -> Response:
    return _study_form(request, principal, study_form.blank_form(), errors=[], plan=None)


async def _form_dict(request: Request) -> tuple[dict[str, Any], study_form.CsvUpload | None]:
    """The form's text fields, and the dataset CSV if one was chosen (read up to one byte over the limit)."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > studies.MAX_CSV_BYTES + _FORM_SLACK_BYTES:
        # refuse before the multipart body is spooled; nothing is stored
        return {}, study_form.CsvUpload(b"\0" * (studies.MAX_CSV_BYTES + 1), "")
    form = await request.form()
    fields = {key: value for key, value in form.items() if isinstance(value, str)}
    upload = form.get("dataset_csv")
    if isinstance(upload, UploadFile) and upload.filename:
        raw = await upload.read(studies.MAX_CSV_BYTES + 1)
        # the client's file name is a label at most (sanitised in studies.csv_dataset_space), never a path
        return fields, study_form.CsvUpload(raw, upload.filename)
    return fields, None


#: Room for the study form's text fields next to a CSV of the largest allowed size.
_FORM_SLACK_BYTES = 1_000_000


@router.post("/studies/new", max_body_size=MAX_STUDY_BODY_BYTES)
async def create_study(request: Request, principal: UiUserDep) -> Response:
    form, upload = await _form_dict(request)
    if not form and upload is not None:
        return _too_large(request, principal, None)
    check_csrf(principal, form.get("csrf_token"))
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(_save_study_form, request, principal, form, None, upload)


def _too_large(request: Request, principal: Principal, study_id: str | None) -> Response:
    """The form again (blank, or the study's saved one) with the size error; nothing was read or stored."""
    message = f"CSV file: the upload is larger than the limit of {studies.MAX_CSV_BYTES // 1_000_000} MB"
    form, study = study_form.blank_form(), None
    if study_id is not None:
        with request.app.state.sessionmaker() as db:
            study, _control = studies.visible_study(db, principal, study_id)
            form = study_form.form_from_config(study.config)
    return _study_form(request, principal, form, study=study, errors=[message], plan=None)


def _save_study_form(
    request: Request,
    principal: Principal,
    form: dict[str, Any],
    study_id: str | None,
    upload: study_form.CsvUpload | None = None,
) -> Response:
    """Plan or save the study form (`study_form.submit_study_form`); the study's page once saved, else the
    form again with its messages or its plan."""
    with request.app.state.sessionmaker() as db:
        study = control = None
        if study_id is not None:
            study, control = studies.visible_study(db, principal, study_id)
        outcome = study_form.submit_study_form(
            db,
            principal,
            form,
            study=study,
            control=control,
            upload=upload,
            plans=plan_cache(request),
            sessions=request.app.state.session_cache,
        )
        if outcome.saved is not None:
            return _see_other(f"/admin/studies/{outcome.saved.id}")
        return _study_form(
            request, principal, outcome.form, study=study, errors=list(outcome.errors), plan=outcome.plan
        )


@router.get("/studies/{study_id}")
def show_study(
    study_id: str, request: Request, principal: UiUserDep, db: DbSessionDep, settings: SettingsDep
) -> Response:
    study, control = studies.visible_study(db, principal, study_id)
    plan = study_plan(db, plan_cache(request), study)
    base = settings.public_base_url or str(request.base_url).rstrip("/")
    join_url = f"{base}/studies/{study.id}/join" if study.open_enrolment else None
    stored_panel = study.config.get("panel")
    panel = PanelConfig.model_validate(stored_panel) if stored_panel else None
    return _page(
        request,
        principal,
        "study.html",
        study=study,
        control=control,
        status=studies.status_of(control).value,
        plan=plan,
        answered=studies.answered_count(db, study.id),
        join_url=join_url,
        panel=panel,
        panel_preset=preset_of(panel),
        panel_url=panel_link(join_url, panel) if join_url and panel else None,
        config_hash=config_hash(study.config),
        config_json=json.dumps(study.config, indent=2),
        snapshots=studies.snapshots(db, study.id),
        region=_region(request, study),
    )


def _region(request: Request, study: Any) -> dict[str, Any]:
    """Where the study's questions sit: the sphere (or each group's) and the accuracy of its classifiers."""
    runtime = request.app.state.session_cache.runtime(study)
    space = runtime.space
    summary = region_summary(runtime.region, space.priors)
    names = list(space.group_names) or [""]
    summary["groups"] = [
        {**group, "name": name} for group, name in zip(summary["groups"], names, strict=True)
    ]
    return summary


@router.get("/studies/{study_id}/edit")
def edit_study(study_id: str, request: Request, principal: UiUserDep, db: DbSessionDep) -> Response:
    study, control = studies.visible_study(db, principal, study_id)
    form = study_form.form_from_config(study.config)
    form["seconds_per_query"] = control.seconds_per_query if control and control.seconds_per_query else ""
    errors = []
    if studies.answered_count(db, study.id):
        errors.append("This study has answers already; its configuration can no longer change. Duplicate it.")
    return _study_form(request, principal, form, study=study, errors=errors, plan=None)


@router.post("/studies/{study_id}/edit", max_body_size=MAX_STUDY_BODY_BYTES)
async def save_study(study_id: str, request: Request, principal: UiUserDep) -> Response:
    form, upload = await _form_dict(request)
    if not form and upload is not None:
        return _too_large(request, principal, study_id)
    check_csrf(principal, form.get("csrf_token"))
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(_save_study_form, request, principal, form, study_id, upload)


@router.post("/studies/{study_id}/status")
def change_status(
    study_id: str,
    principal: UiUserDep,
    db: DbSessionDep,
    status: Annotated[str, Form()],
    csrf_token: CsrfField = "",
    confirm: Annotated[str, Form()] = "",
) -> Response:
    check_csrf(principal, csrf_token)
    study, control = studies.visible_study(db, principal, study_id)
    studies.set_status(db, study, control, status, confirm=confirm == "yes", by=principal.user.id)
    return _see_other(f"/admin/studies/{study.id}")


@router.post("/studies/{study_id}/settings")
def change_settings(
    study_id: str,
    principal: UiUserDep,
    db: DbSessionDep,
    cache: CacheDep,
    csrf_token: CsrfField = "",
    expires_in_days: Annotated[str, Form()] = "",
) -> Response:
    check_csrf(principal, csrf_token)
    study, control = studies.visible_study(db, principal, study_id)
    expires = _expiry(expires_in_days)
    studies.edit_study(db, cache, study, control, enrolment_expires_at=expires, clear_expiry=expires is None)
    return _see_other(f"/admin/studies/{study.id}")


def _expiry(days: str) -> datetime | None:
    if not days.strip():
        return None
    try:
        value = float(days)
    except ValueError:
        raise AdminError("expiry: give a number of days", status_code=422) from None
    if not 0 < value <= 3650:
        raise AdminError("expiry: between 0 and 3650 days", status_code=422)
    return datetime.now(UTC) + timedelta(days=value)


@router.post("/studies/{study_id}/duplicate")
def duplicate_study(
    study_id: str, principal: UiUserDep, db: DbSessionDep, csrf_token: CsrfField = ""
) -> Response:
    check_csrf(principal, csrf_token)
    study, control = studies.visible_study(db, principal, study_id)
    copy = studies.duplicate_study(db, principal, study, control)
    return _see_other(f"/admin/studies/{copy.id}/edit")


@router.post("/studies/{study_id}/pilots")
def start_pilot(
    study_id: str, principal: UiUserDep, db: DbSessionDep, cache: CacheDep, csrf_token: CsrfField = ""
) -> Response:
    """Take the study as a participant in a pilot session (left out of the analysis)."""
    check_csrf(principal, csrf_token)
    study, control = studies.visible_study(db, principal, study_id)
    return _see_other(f"/sessions/{studies.start_pilot(db, cache, study, control)}")


@router.post("/studies/{study_id}/invitations")
def create_invitations(
    study_id: str,
    request: Request,
    principal: UiUserDep,
    db: DbSessionDep,
    cache: CacheDep,
    settings: SettingsDep,
    count: Annotated[int, Form(ge=1, le=studies.MAX_INVITATIONS)],
    csrf_token: CsrfField = "",
    expires_in_days: Annotated[str, Form()] = "",
) -> Response:
    """Create personal links and download them as CSV (the tokens are not stored, only their hashes)."""
    check_csrf(principal, csrf_token)
    study, control = studies.visible_study(db, principal, study_id)
    created = studies.create_invitations(
        db, cache, principal, study, control, count, expires_at=_expiry(expires_in_days)
    )
    base = settings.public_base_url or str(request.base_url).rstrip("/")
    buffer = io.StringIO()
    studies.write_invitations_csv(
        buffer,
        (
            (invitation.id, f"{base}/sessions/{token}", export.iso_utc(invitation.expires_at))
            for invitation, token in created
        ),
    )
    return Response(
        buffer.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="invitations-{study.id}.csv"'},
    )


# -- monitoring ----------------------------------------------------------------------------------------------


@router.get("/studies/{study_id}/monitor")
def monitor_study(
    study_id: str, request: Request, principal: UiUserDep, db: DbSessionDep, cache: CacheDep
) -> Response:
    study, control = studies.visible_study(db, principal, study_id)
    return _page(
        request,
        principal,
        "monitor.html",
        study=study,
        status=studies.status_of(control).value,
        dashboard=monitor.study_dashboard(db, cache, study),
        poll_seconds=MONITOR_POLL_S,
    )


@router.get("/studies/{study_id}/monitor.json")
def monitor_numbers(
    study_id: str, request: Request, principal: UiUserDep, db: DbSessionDep, cache: CacheDep
) -> Response:
    """What the open dashboard polls: its numbers, session list and figures as JSON, with the changing
    parts of the page rendered by the same template macros as the page itself."""
    study, control = studies.visible_study(db, principal, study_id)
    dashboard = monitor.study_dashboard(db, cache, study)
    live = request.app.state.templates.env.get_template("admin/_monitor_live.html").module
    body = {
        "status": studies.status_of(control).value,
        **dashboard.live(),
        "html": {"numbers": str(live.numbers(dashboard)), "sessions": str(live.sessions(study, dashboard))},
    }
    return Response(json.dumps(body), media_type="application/json", headers={"Cache-Control": "no-store"})


@router.get("/studies/{study_id}/sessions/{session_id}")
def show_session(
    study_id: str, session_id: str, request: Request, principal: UiUserDep, db: DbSessionDep, cache: CacheDep
) -> Response:
    study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    detail = monitor.session_detail(db, cache, study, session)
    return _page(request, principal, "session.html", study=study, detail=detail)


@router.post("/studies/{study_id}/sessions/{session_id}/exclude")
def exclude_session(
    study_id: str,
    session_id: str,
    principal: UiUserDep,
    db: DbSessionDep,
    reason: Annotated[str, Form(max_length=2000)] = "",
    csrf_token: CsrfField = "",
) -> Response:
    check_csrf(principal, csrf_token)
    study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    studies.exclude_session(db, principal, session, reason)
    return _see_other(f"/admin/studies/{study.id}/sessions/{session.id}")


@router.post("/studies/{study_id}/sessions/{session_id}/lift")
def lift_exclusion(
    study_id: str, session_id: str, principal: UiUserDep, db: DbSessionDep, csrf_token: CsrfField = ""
) -> Response:
    check_csrf(principal, csrf_token)
    study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    studies.lift_exclusion(db, principal, session)
    return _see_other(f"/admin/studies/{study.id}/sessions/{session.id}")


@router.get("/studies/{study_id}/sessions/{session_id}/replay.json")
def session_replay_log(study_id: str, session_id: str, principal: UiUserDep, db: DbSessionDep) -> Response:

    study, _control, session = studies.visible_session(db, principal, study_id, session_id)
    rows = list(repo.log_rows(db, session.id))
    return Response(
        json.dumps(export.replay_log(study, session, rows), indent=1),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="replay-{session.id}.json"'},
    )


# -- results and export --------------------------------------------------------------------------------------


@router.get("/studies/{study_id}/results")
def show_results(
    study_id: str, request: Request, principal: UiUserDep, db: DbSessionDep, cache: CacheDep
) -> Response:
    study, _control = studies.visible_study(db, principal, study_id)
    rows = list(export.result_rows(db, study))
    finished = [row for row in rows if row["metric_type"] not in (None, "failed")]
    return _page(
        request,
        principal,
        "results.html",
        study=study,
        rows=finished,
        # Everyone who finished is listed, also when their answers gave no metric: they were shown a
        # completion code, and the coordinator approves them by it.
        done=[row for row in rows if row["status"] == SessionStatus.DONE.value],
        columns=export.result_columns(study),
        figures=[
            *monitor.coefficient_figures(study, finished),
            *[item for item in [monitor.ranking_figure(db, study)] if item is not None],
        ],
        snippet=snippets.results_snippet(study, monitor.included_metrics(db, study)),
        words=monitor.participant_words(db, cache, study),
        candidates=monitor.candidate_table(study),
        best=best.study_best(db, study),
        pilots=studies.pilot_count(db, study.id),
        labels=monitor.coefficient_labels(study),
        config_hash=config_hash(study.config),
        downloads=DOWNLOADS,
    )


@router.get("/studies/{study_id}/panel")
def show_panel(study_id: str, request: Request, principal: UiUserDep, db: DbSessionDep) -> Response:
    study, _control = studies.visible_study(db, principal, study_id)
    view = panel.study_panel(db, study)
    return _page(
        request,
        principal,
        "panel.html",
        study=study,
        view=view,
        figures=panel.panel_figures(view),
        snippet=snippets.consensus_snippet(study),
        downloads=DOWNLOADS,
    )


@router.get("/studies/{study_id}/export/{kind}")
def download(
    study_id: str,
    kind: str,
    request: Request,
    principal: UiUserDep,
    include_pilots: IncludePilotsQuery = False,
) -> Response:
    return download_response(request, principal, study_id, kind, include_pilots)


@router.get("/studies/{study_id}/snapshots/{snapshot_id}.json")
def download_snapshot(
    study_id: str, snapshot_id: RowIdPath, principal: UiUserDep, db: DbSessionDep
) -> Response:
    study, _control = studies.visible_study(db, principal, study_id)
    item = studies.snapshot(db, study.id, snapshot_id)
    return StreamingResponse(
        export.gunzip_chunks(item.archive_gz),
        media_type="application/json",
        headers={
            "Content-Disposition": f'attachment; filename="study-{study.id}-{item.reason}-{item.id}.json"'
        },
    )


@router.get("/import")
def show_import(request: Request, principal: UiUserDep) -> Response:
    return _page(request, principal, "import.html", error=None)


@router.post("/import", max_body_size=MAX_ARCHIVE_BODY_BYTES)
async def import_study(request: Request, principal: UiUserDep) -> Response:
    form = await request.form()
    check_csrf(principal, str(form.get("csrf_token", "")))
    upload = form.get("archive")
    if not isinstance(upload, UploadFile):
        return _page(request, principal, "import.html", status_code=422, error="choose an archive file")
    raw = await upload.read(MAX_ARCHIVE_BYTES + 1)
    from starlette.concurrency import run_in_threadpool

    def work() -> Response:
        try:
            archive = parse_json_upload(raw, MAX_ARCHIVE_BYTES)
            with request.app.state.sessionmaker() as db:
                study, _verified = export.import_archive(
                    db, request.app.state.session_cache, archive, owner_id=principal.user.id
                )
        except AdminError as exc:
            return _page(request, principal, "import.html", status_code=exc.status_code, error=exc.message)
        return _see_other(f"/admin/studies/{study.id}")

    return await run_in_threadpool(work)


# -- tokens --------------------------------------------------------------------------------------------------


@router.get("/account")
def account(request: Request, principal: UiUserDep) -> Response:
    return _page(request, principal, "account.html", changed=False, error=None)


@router.post("/account/password")
def change_own_password(
    request: Request,
    principal: UiUserDep,
    db: DbSessionDep,
    current_password: Annotated[str, Form(max_length=1024)] = "",
    new_password: Annotated[str, Form(max_length=1024)] = "",
    repeat_password: Annotated[str, Form(max_length=1024)] = "",
    csrf_token: CsrfField = "",
) -> Response:
    """Change the caller's password; this browser stays logged in (with a new cookie), others are not."""
    check_csrf(principal, csrf_token)
    try:
        if new_password != repeat_password:
            raise AdminError("the two new passwords differ")
        user = db.merge(principal.user)
        change_password(db, request, user, current_password, new_password)
    except AdminError as exc:
        return _page(
            request, principal, "account.html", status_code=exc.status_code, changed=False, error=exc.message
        )
    # The change ended every session of the user, this one too: it continues under a new cookie.
    renewed = Principal(user=user, via="cookie", csrf=new_csrf_token())
    response = _page(request, renewed, "account.html", changed=True, error=None)
    issue_session_cookie(request, response, user, csrf=renewed.csrf)
    return response


@router.get("/tokens")
def list_tokens(request: Request, principal: UiUserDep, db: DbSessionDep) -> Response:
    tokens = list_api_tokens(db, principal.user)
    return _page(request, principal, "tokens.html", tokens=tokens, new_token=None)


@router.post("/tokens")
def new_token(
    request: Request,
    principal: UiUserDep,
    db: DbSessionDep,
    name: Annotated[str, Form(max_length=100)] = "",
    csrf_token: CsrfField = "",
) -> Response:
    check_csrf(principal, csrf_token)
    _token, secret = create_api_token(db, principal.user, name)
    tokens = list_api_tokens(db, principal.user)
    return _page(request, principal, "tokens.html", status_code=201, tokens=tokens, new_token=secret)


@router.post("/tokens/{token_id}/revoke")
def revoke_token(
    token_id: RowIdPath, principal: UiUserDep, db: DbSessionDep, csrf_token: CsrfField = ""
) -> Response:
    check_csrf(principal, csrf_token)
    revoke_api_token(db, principal.user, token_id)
    return _see_other("/admin/tokens")
