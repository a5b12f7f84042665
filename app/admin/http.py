"""What the back office's JSON API and pages share: path types, uploads, the plan cache."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path, Query, Request
from fastapi.dependencies.models import Dependant

from ..json_input import JSONInputError, decode_json
from ..planning import PlanCache
from . import studies
from .auth import AdminError

__all__ = [
    "MAX_ARCHIVE_BODY_BYTES",
    "MAX_ARCHIVE_BYTES",
    "MAX_BODY_BYTES",
    "MAX_STUDY_BODY_BYTES",
    "IncludePilotsQuery",
    "RowIdPath",
    "parse_json_upload",
    "plan_cache",
    "reject_unknown_query",
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


#: How many unknown parameter names a refusal repeats back.
MAX_NAMED_UNKNOWN = 3


def reject_unknown_query(request: Request) -> None:
    """Refuse (422) a query parameter the operation does not declare instead of ignoring it: a typo such
    as ``include_pilot=true`` would otherwise answer as if the caller had not asked."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if dependant is None:
        return
    unknown = sorted(set(request.query_params) - _declared_query_names(dependant))
    if unknown:
        named = ", ".join(repr(name[:40]) for name in unknown[:MAX_NAMED_UNKNOWN])
        raise AdminError(f"unknown query parameter {named}", status_code=422, code="unknown_query_parameter")


def _declared_query_names(dependant: Dependant) -> set[str]:
    """The query parameter names an operation and its dependencies declare."""
    names = {parameter.alias for parameter in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= _declared_query_names(dependency)
    return names


def plan_cache(request: Request) -> PlanCache:
    """The app's `PlanCache` (made by `app.admin.web.install`)."""
    cache: PlanCache = request.app.state.plan_cache
    return cache


def parse_json_upload(raw: bytes, limit: int, what: str = "the file") -> Any:
    """Decode an uploaded JSON file (or form field, named by ``what``) with a size limit; 422 says why
    it is not JSON."""
    if len(raw) > limit:
        raise AdminError(f"the file is larger than {limit // 1_000_000} MB", status_code=413)
    try:
        return decode_json(raw)
    except JSONInputError as exc:
        raise AdminError(f"{what} {exc}", status_code=422) from None
