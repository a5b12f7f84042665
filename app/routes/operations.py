"""Operations endpoints: `/healthz` for load balancers, orchestrators and Docker's HEALTHCHECK (ready only
when the database answers and carries every migration this installation ships); `/metrics` for Prometheus."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Header, Request, status
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from sqlalchemy.exc import SQLAlchemyError

from ..errors import NotFoundError
from ..metrics import CONTENT_TYPE, metrics_authorised, render_metrics
from ..schema import head_revision, schema_status

__all__ = ["router"]

router = APIRouter(tags=["operations"])


class HealthOut(BaseModel):
    status: Literal["ok", "unavailable"]
    database: Literal["reachable", "unreachable"]
    schema_revision: str | None
    expected_revision: str
    reason: str | None = None


@router.get(
    "/healthz",
    response_model=HealthOut,
    responses={503: {"model": HealthOut, "description": "database unreachable or not migrated to head"}},
)
def health(request: Request) -> JSONResponse:
    """Ready to serve: the database is reachable and its schema is at this installation's head."""
    expected = head_revision()
    try:
        with request.app.state.engine.connect() as connection:
            schema = schema_status(connection)
    except SQLAlchemyError as exc:
        body = HealthOut(
            status="unavailable",
            database="unreachable",
            schema_revision=None,
            expected_revision=expected,
            reason=f"the database does not answer ({type(exc).__name__})",
        )
        return JSONResponse(body.model_dump(), status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
    if not schema.at_head:
        body = HealthOut(
            status="unavailable",
            database="reachable",
            schema_revision=schema.current,
            expected_revision=expected,
            reason="the database is not migrated to this version: run `elicit db upgrade`",
        )
        return JSONResponse(body.model_dump(), status_code=status.HTTP_503_SERVICE_UNAVAILABLE)
    body = HealthOut(
        status="ok", database="reachable", schema_revision=schema.current, expected_revision=expected
    )
    return JSONResponse(body.model_dump(), headers={"Cache-Control": "no-store"})


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus exposition text"},
        404: {"description": "metrics are off (no METRICS_TOKEN) or the bearer token is wrong"},
    },
)
def metrics(request: Request, authorization: str | None = Header(default=None)) -> Response:
    """Request counts and latencies per route, answers stored, sessions by status (bearer METRICS_TOKEN)."""
    expected = request.app.state.settings.metrics_token
    # A wrong or missing token looks like metrics being off: the endpoint's existence is not advertised.
    if not expected or not metrics_authorised(expected, authorization):
        raise NotFoundError("not found")
    body = render_metrics(request.app.state.metrics_registry, request.app.state.study_collector)
    return Response(body, media_type=CONTENT_TYPE)
