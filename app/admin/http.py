"""What the back office's JSON API and pages share: path types, uploads, streamed exports, the plan cache."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import Path, Query, Request
from fastapi.responses import Response, StreamingResponse

from ..json_input import JSONInputError, decode_json
from ..planning import PlanCache
from . import best, export, panel, studies
from .auth import AdminError, Principal

__all__ = [
    "MAX_ARCHIVE_BODY_BYTES",
    "MAX_ARCHIVE_BYTES",
    "MAX_BODY_BYTES",
    "MAX_STUDY_BODY_BYTES",
    "PARQUET_TABLES",
    "IncludePilotsQuery",
    "RowIdPath",
    "answers_csv_response",
    "best_export",
    "panel_export",
    "parquet_response",
    "parse_json_upload",
    "plan_cache",
    "results_csv_response",
    "results_json_response",
]

#: Largest body of a back-office request without a configuration, dataset or archive in it.
MAX_BODY_BYTES = 1_000_000
#: Largest body carrying a study configuration or a dataset CSV (room for the form around the file).
MAX_STUDY_BODY_BYTES = 2 * studies.MAX_CSV_BYTES
#: Largest uploaded study archive (the body that carries it may have a little form overhead more).
MAX_ARCHIVE_BYTES = 50_000_000
MAX_ARCHIVE_BODY_BYTES = MAX_ARCHIVE_BYTES + 1_000_000
#: A database row id in a URL (snapshots, tokens): a positive 64-bit integer.
RowIdPath = Annotated[int, Path(ge=1, le=2**63 - 1)]
#: The exports' switch for the coordinators' own pilot sessions, which they leave out unless asked.
IncludePilotsQuery = Annotated[
    bool, Query(description="also the pilot sessions (a coordinator's own trial runs), marked in `pilot`")
]


def plan_cache(request: Request) -> PlanCache:
    """The app's `PlanCache` (made by `app.admin.web.install`)."""
    cache: PlanCache = request.app.state.plan_cache
    return cache


def _stream(
    request: Request, principal: Principal, study_id: str, produce: Any, media_type: str, name: str
) -> StreamingResponse:
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


def results_json_response(
    request: Request, principal: Principal, study_id: str, include_pilots: bool = False
) -> StreamingResponse:
    return _stream(
        request,
        principal,
        study_id,
        lambda db, study: export.json_lines(
            study, export.result_rows(db, study, include_pilots=include_pilots)
        ),
        "application/json",
        "results",
    )


def results_csv_response(
    request: Request, principal: Principal, study_id: str, include_pilots: bool = False
) -> StreamingResponse:
    return _stream(
        request,
        principal,
        study_id,
        lambda db, study: export.csv_lines(
            export.result_columns(study), export.result_rows(db, study, include_pilots=include_pilots)
        ),
        "text/csv; charset=utf-8",
        "results",
    )


def answers_csv_response(
    request: Request, principal: Principal, study_id: str, include_pilots: bool = False
) -> StreamingResponse:
    return _stream(
        request,
        principal,
        study_id,
        lambda db, study: export.csv_lines(
            export.answer_log_columns(study), export.answer_log_rows(db, study, include_pilots=include_pilots)
        ),
        "text/csv; charset=utf-8",
        "answers",
    )


#: The Parquet downloads: name -> (columns, rows) of the study, the same tables as the CSV downloads.
PARQUET_TABLES: dict[str, tuple[Any, Any]] = {
    "results.parquet": (export.result_columns, export.result_rows),
    "answers.parquet": (export.answer_log_columns, export.answer_log_rows),
}


def parquet_response(
    request: Request, principal: Principal, study_id: str, kind: str, include_pilots: bool = False
) -> Response:
    """One of `PARQUET_TABLES` as a Parquet file (501 with the install command when pyarrow is missing)."""
    columns, rows = PARQUET_TABLES[kind]
    with request.app.state.sessionmaker() as db:
        study, _control = studies.visible_study(db, principal, study_id)
        body = export.parquet_bytes(columns(study), rows(db, study, include_pilots=include_pilots))
        name = kind.removesuffix(".parquet")
        headers = {"Content-Disposition": f'attachment; filename="{name}-{study.id}.parquet"'}
    return Response(body, media_type="application/vnd.apache.parquet", headers=headers)


def parse_json_upload(raw: bytes, limit: int, what: str = "the file") -> Any:
    """Decode an uploaded JSON file (or form field, named by ``what``) with a size limit; 422 says why
    it is not JSON."""
    if len(raw) > limit:
        raise AdminError(f"the file is larger than {limit // 1_000_000} MB", status_code=413)
    try:
        return decode_json(raw)
    except JSONInputError as exc:
        raise AdminError(f"{what} {exc}", status_code=422) from None


def best_export(view: best.BestView, kind: str) -> Response:
    """One of `best.BEST_FILES` as a download: every metric's best classifier, as JSON or as a CSV table."""
    media_type, extension = best.BEST_FILES[kind]
    stem = kind.rsplit(".", 1)[0]
    headers = {"Content-Disposition": f'attachment; filename="{stem}-{view.study.id}.{extension}"'}
    return Response(best.best_file(view, kind), media_type=media_type, headers=headers)


def panel_export(view: panel.PanelView, kind: str) -> Response:
    """One of `panel.PANEL_FILES` as a download (the JSON document or one of the two CSV tables)."""
    media_type, prefix, extension = panel.PANEL_FILES[kind]
    headers = {"Content-Disposition": f'attachment; filename="{prefix}-{view.study.id}.{extension}"'}
    return Response(panel.panel_file(view, kind), media_type=media_type, headers=headers)
