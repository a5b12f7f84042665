"""Every file a study exports, in one table, so the pages, the JSON API and the command line (local and
``--url``) serve the same bytes under the same names.

A `Download` has the name ``elicit study export ID NAME`` takes, its file name on the server
(``/admin/studies/{id}/export/{file}`` for the pages, ``/api/v1/studies/{id}/export/{file}`` for a bearer
token) and what writes it. The tables a study can grow large in (results, answer logs, the archive) are
streamed from a database session of their own; the others are built whole, so an error (a missing optional
package, say) is an error answer rather than a cut-off file.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from fastapi import Request
from fastapi.responses import Response, StreamingResponse
from sqlalchemy.orm import Session

from ..models import Study
from . import best, export, panel, studies
from .auth import AdminError, Principal

__all__ = [
    "DOWNLOADS",
    "Download",
    "ExportFile",
    "api_documentation",
    "by_command",
    "download_response",
    "write_download",
]

_CSV = "text/csv; charset=utf-8"
_JSON = "application/json"
_PARQUET = "application/vnd.apache.parquet"

#: What writes a file: its pieces (text or bytes) from the study, read through ``db``; the flag asks for the
#: coordinators' pilot sessions too (only the tables of sessions and answers have any to add).
Writer = Callable[[Session, Study, bool], Iterable[str | bytes]]


@dataclass(frozen=True)
class Download:
    """One exported file of a study."""

    command: str  # `elicit study export ID <command>`
    filename: str  # /admin/studies/{id}/export/<filename> and /api/v1/studies/{id}/export/<filename>
    media_type: str
    label: str  # the link's text
    page: str  # where it is linked: "results", "panel", or the results page's "best" or "candidates" section
    write: Writer
    streamed: bool = False  # large tables are sent as they are read
    saved_as: str = ""  # the downloaded file's name before ``-<study id>`` (default: the file's stem)

    def attachment(self, study: Study) -> str:
        """The file name a browser saves it under: the name, the study's id and the extension."""
        stem, _, extension = self.filename.rpartition(".")
        return f"{self.saved_as or stem}-{study.id}.{extension}"


def _results_csv(db: Session, study: Study, pilots: bool) -> Iterator[str]:
    return export.csv_lines(
        export.result_columns(study), export.result_rows(db, study, include_pilots=pilots)
    )


def _results_json(db: Session, study: Study, pilots: bool) -> Iterator[str]:
    return export.json_lines(study, export.result_rows(db, study, include_pilots=pilots))


def _answers_csv(db: Session, study: Study, pilots: bool) -> Iterator[str]:
    rows = export.answer_log_rows(db, study, include_pilots=pilots)
    return export.csv_lines(export.answer_log_columns(study), rows)


def _approval_csv(db: Session, study: Study, pilots: bool) -> Iterator[str]:
    # Pilots are the coordinator's own runs: never submissions to approve.
    return export.csv_lines(export.approval_columns(study), export.approval_rows(db, study))


def _archive(db: Session, study: Study, pilots: bool) -> Iterator[bytes]:
    # The archive always holds every session, pilots marked: it is what an import replays.
    return export.study_archive_json(db, study)


def _parquet(columns: Any, rows: Any) -> Writer:
    return lambda db, study, pilots: [
        export.parquet_bytes(columns(study), rows(db, study, include_pilots=pilots))
    ]


def _panel(kind: str) -> Writer:
    return lambda db, study, pilots: [panel.panel_file(panel.study_panel(db, study), kind)]


def _best(kind: str) -> Writer:
    return lambda db, study, pilots: [best.best_file(best.study_best(db, study), kind)]


#: Every export of a study, in the order the results page and ``elicit study export --help`` list them.
DOWNLOADS: Final = (
    Download("results", "results.csv", _CSV, "Results CSV", "results", _results_csv, streamed=True),
    Download(
        "results-json",
        "results.json",
        _JSON,
        "Results JSON",
        "results",
        _results_json,
        streamed=True,
    ),
    Download(
        "results-parquet",
        "results.parquet",
        _PARQUET,
        "Results Parquet",
        "results",
        _parquet(export.result_columns, export.result_rows),
    ),
    Download(
        "approval",
        "approval.csv",
        _CSV,
        "For approval: completion codes",
        "results",
        _approval_csv,
        streamed=True,
    ),
    Download("answers", "answers.csv", _CSV, "Answer logs CSV", "results", _answers_csv, streamed=True),
    Download(
        "answers-parquet",
        "answers.parquet",
        _PARQUET,
        "Answer logs Parquet",
        "results",
        _parquet(export.answer_log_columns, export.answer_log_rows),
    ),
    Download(
        "archive",
        "archive.json",
        _JSON,
        "Study archive (replayable)",
        "results",
        _archive,
        streamed=True,
        saved_as="study",
    ),
    Download("panel", "panel.json", _JSON, "Panel JSON", "panel", _panel("panel.json")),
    Download("panel-csv", "panel.csv", _CSV, "Panel CSV", "panel", _panel("panel.csv")),
    Download(
        "panel-agreement",
        "panel-agreement.csv",
        _CSV,
        "Agreement CSV",
        "panel",
        _panel("panel-agreement.csv"),
    ),
    Download(
        "best-classifiers",
        "best-classifiers.json",
        _JSON,
        "Best classifiers JSON",
        "best",
        _best("best-classifiers.json"),
    ),
    Download(
        "best-classifiers-csv",
        "best-classifiers.csv",
        _CSV,
        "Best classifiers CSV",
        "best",
        _best("best-classifiers.csv"),
    ),
    Download(
        "candidate-ranking-csv",
        "candidate-ranking.csv",
        _CSV,
        "Candidate ranking CSV",
        "candidates",
        _best("candidate-ranking.csv"),
    ),
)
_BY_FILE: Final = {item.filename: item for item in DOWNLOADS}
#: The file names as a path parameter's choices (the API documents them; another name is a 422).
ExportFile = enum.StrEnum("ExportFile", {item.filename: item.filename for item in DOWNLOADS})  # type: ignore[misc]
by_command: Final = {item.command: item for item in DOWNLOADS}


def _encoded(pieces: Iterable[str | bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield piece.encode("utf-8") if isinstance(piece, str) else piece


def download_response(
    request: Request, principal: Principal, study_id: str, filename: str, include_pilots: bool = False
) -> Response:
    """The file ``filename`` of the study as an attachment (pilot sessions only with ``include_pilots``);
    404 for a study the caller may not see or a file name that is no export."""
    item = _BY_FILE.get(filename)
    with request.app.state.sessionmaker() as db:
        study, _control = studies.visible_study(db, principal, study_id)
        if item is None:
            raise AdminError("unknown export", status_code=404, code="not_found")
        headers = {"Content-Disposition": f'attachment; filename="{item.attachment(study)}"'}
        if not item.streamed:
            body = b"".join(_encoded(item.write(db, study, include_pilots)))
            return Response(body, media_type=item.media_type, headers=headers)

    def stream() -> Iterator[bytes]:
        # A session of its own: the request's closes before the body is sent.
        with request.app.state.sessionmaker() as stream_db:
            again, _ = studies.visible_study(stream_db, principal, study_id)
            yield from _encoded(item.write(stream_db, again, include_pilots))

    return StreamingResponse(stream(), media_type=item.media_type, headers=headers)


def write_download(db: Session, study: Study, command: str, path: str, include_pilots: bool = False) -> None:
    """Write the export ``command`` names to the file ``path``: the same bytes the server sends."""
    with open(path, "wb") as handle:
        for piece in _encoded(by_command[command].write(db, study, include_pilots)):
            handle.write(piece)


def api_documentation() -> str:
    """The export route's description: every file name and what it holds."""
    return "; ".join(f"`{item.filename}` ({item.label})" for item in DOWNLOADS)
