"""JSON API under /api/v1 for scripts, automated participants and tests (the service behind the pages)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

import anyio.to_thread
import orjson
from fastapi import APIRouter, Body, Request, Response, status
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy.orm import Session
from starlette.types import Message

from .. import sessions
from ..api_errors import ERROR_RESPONSES
from ..deps import CacheDep, DbSessionDep, SettingsDep, get_db
from ..models import AnswerChannel
from ..sessions import SessionCache

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["sessions"], responses=ERROR_RESPONSES)


class SessionCreateIn(BaseModel):
    """Optional body of a new session; ``consent: true`` records consent at once (for scripts).

    A ``participant_code`` that already started a session of a study that resumes by participant code
    continues that session (under a further link) instead of starting another.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    participant_code: str | None = Field(default=None, max_length=200)
    consent: bool = False
    panel: dict[str, str] | None = Field(
        default=None,
        max_length=10,
        description="the study's panel parameters as the panel sent them (e.g. PROLIFIC_PID); stored with "
        "the session and exported; the panel ID is the participant code unless one is given",
    )


class SessionCreatedOut(BaseModel):
    token: str = Field(description="secret token of the session; keep it private")
    url: str = Field(description="the participant's link (consent page first unless consent was given)")
    resumed: bool = Field(
        default=False,
        description="true when the participant code continues the session it started earlier "
        "(the study resumes by participant code); the token is a further link to that session",
    )


class AnswerIn(BaseModel):
    """An answer to the query with sequence number ``seq``; ``first`` is the option shown on the left."""

    model_config = ConfigDict(extra="forbid", strict=True)

    seq: int = Field(ge=0)
    preferred: Literal["first", "second", "tie"]
    time_on_page_ms: int | None = Field(default=None, ge=0)
    hidden_ms: int | None = Field(default=None, ge=0)


class UndoIn(BaseModel):
    """Optional guard: the ``seq`` of the query currently shown (a repeated undo is then a no-op)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    seq: int | None = Field(default=None, ge=0)


class OptionOut(BaseModel):
    rates: list[Any] = Field(description="rates (n_classes,) or (n_groups, n_classes)")
    confusion: list[Any] = Field(description="confusion matrix out of 100: (k, k) or (m, k, k)")
    shown: list[Any] = Field(
        description="the confusion matrix exactly as the page shows it (rounded to the query's decimals, "
        "rows and totals still adding up to 100): show these numbers, the elicitor learns from them"
    )


class QueryOut(BaseModel):
    seq: int
    practice: bool
    decimals: int = Field(description="decimals of the shown counts: 0 (whole people), 1 or 2")
    first: OptionOut
    second: OptionOut


class ProgressOut(BaseModel):
    answered: int
    estimated_total: int


class SessionStateOut(BaseModel):
    status: Literal["invited", "active", "done"]
    phase: Literal["consent", "practice", "questions", "done"]
    progress: ProgressOut
    query: QueryOut | None
    result: dict[str, Any] | None = Field(
        description="once done: completion_code, redirect_url, metric, num_queries, summary, interval_level "
        'and intervals (credible intervals of what the summary states: "lam" for the trade-off, '
        '"per_rate" and "per_person" by class for the cost ratios; empty without a posterior), '
        "evaluation, checks"
    )


def _state(view: sessions.SessionView) -> Response:
    """The session state as JSON, serialised by orjson without a second validation pass.

    ``response_model`` still documents the shape (and the schema fuzz tests hold the API to it); skipping
    FastAPI's validate-then-encode of the nested rate and confusion lists saves a sizeable part of an answer.
    """
    return Response(
        orjson.dumps(view.to_api(), option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json"
    )


class JsonBodyRoute(APIRoute):
    """A route whose JSON body is validated once, straight from its bytes, when the request is plain: the
    answer route, where FastAPI's general path (decode to Python objects, then solve the parameters one by
    one) cost more than the answer's own database work.

    Plain means: the ``application/json`` content type, a body that arrived, and a body the model accepts in
    JSON mode. Everything else (another content type, a body that failed to arrive, a body the model refuses)
    goes through FastAPI's own handler, so every error response stays exactly FastAPI's. The endpoint must
    be ``async`` and take only path parameters (strings), one pydantic model as its body and the `Request`;
    its router is included without dependencies of its own (the plain path does not run them).
    """

    def get_route_handler(self) -> Callable[[Request], Awaitable[Response]]:
        standard = super().get_route_handler()
        endpoint, dependant = self.endpoint, self.dependant
        (body,) = dependant.body_params
        model = body.field_info.annotation
        request_name = dependant.request_param_name
        if not (
            inspect.iscoroutinefunction(endpoint)
            and isinstance(model, type)
            and issubclass(model, BaseModel)
            and request_name is not None
            and all(param.field_info.annotation is str for param in dependant.path_params)
            and not (dependant.query_params or dependant.header_params or dependant.cookie_params)
            and not dependant.dependencies
        ):
            raise TypeError(f"{endpoint.__name__} does not fit a JsonBodyRoute")
        path_names = tuple(param.name for param in dependant.path_params)

        async def handler(request: Request) -> Response:
            if request.headers.get("content-type") != "application/json":
                return await standard(request)
            try:
                raw = await request.body()
            except Exception as exc:
                # FastAPI's handler reads it again and answers the failure as it always does.
                return await standard(_failed_read(request, exc))
            try:
                parsed = model.model_validate_json(raw)
            except ValidationError:
                return await standard(request)  # the body is kept: FastAPI's 422, word for word
            params = request.path_params
            arguments = {name: params[name] for name in path_names}
            response: Response = await endpoint(**arguments, **{body.name: parsed, request_name: request})
            return response

        return handler


def _failed_read(request: Request, error: Exception) -> Request:
    """``request`` again, whose body read raises ``error`` (for FastAPI's own answer to a failed read)."""

    async def receive() -> Message:
        raise error

    return Request(request.scope, receive)


@router.post(
    "/studies/{study_id}/sessions",
    status_code=status.HTTP_201_CREATED,
    response_model=SessionCreatedOut,
    responses={
        404: {"description": "no open-enrolment study with this id"},
        409: {"description": "the study does not take new participants now (draft, paused, closed, expired)"},
        422: {"description": "malformed body, or panel values the study does not keep (invalid_input)"},
    },
)
def create_session(
    study_id: str,
    request: Request,
    db: DbSessionDep,
    cache: CacheDep,
    settings: SettingsDep,
    body: Annotated[SessionCreateIn | None, Body()] = None,
) -> dict[str, Any]:
    """Start a session in an open-enrolment study (or continue the one a returning participant code began)."""
    body = body or SessionCreateIn()
    joined = sessions.start_session(
        db, cache, study_id, participant_code=body.participant_code, consented=body.consent, panel=body.panel
    )
    base = settings.public_base_url or str(request.base_url).rstrip("/")
    return {"token": joined.token, "url": f"{base}/sessions/{joined.token}", "resumed": joined.continued}


async def _served(
    request: Request, work: Callable[[Session, SessionCache], sessions.SessionView]
) -> Response:
    """``work`` run with the request's DB session and the session cache on a worker thread, answered as the
    session's state (`_state`, on that thread too).

    The participant routes are ``async`` and take the session and the cache here rather than as
    dependencies: FastAPI resolves each dependency of a plain route per request, and the route's thread hop
    is the same one.
    """
    db = await get_db(request)
    cache: SessionCache = request.app.state.session_cache
    return await anyio.to_thread.run_sync(lambda: _state(work(db, cache)))


@router.get("/sessions/{token}", response_model=SessionStateOut, responses={404: {"description": "unknown"}})
async def show_session(token: str, request: Request) -> Response:
    """The session's status, progress and the query to answer next."""
    return await _served(request, lambda db, cache: sessions.get_view(db, cache, token))


@router.post("/sessions/{token}/consent", response_model=SessionStateOut)
async def give_consent(token: str, request: Request) -> Response:
    """Confirm consent (idempotent); until then nothing is counted."""
    return await _served(request, lambda db, cache: sessions.consent(db, cache, token))


async def submit_answer(token: str, answer: AnswerIn, request: Request) -> Response:
    """Answer the query ``seq``; returns the state with the next query. Repeats are recorded once."""
    return await _served(
        request,
        lambda db, cache: sessions.submit_answer(
            db,
            cache,
            token,
            seq=answer.seq,
            preferred=answer.preferred,
            channel=AnswerChannel.API,
            time_on_page_ms=answer.time_on_page_ms,
            hidden_ms=answer.hidden_ms,
        ),
    )


router.add_api_route(
    "/sessions/{token}/answers",
    submit_answer,
    methods=["POST"],
    response_model=SessionStateOut,
    responses={
        409: {"description": "conflicting answer, stale seq or finished session (body has the state)"}
    },
    route_class_override=JsonBodyRoute,
)


@router.post("/sessions/{token}/undo", response_model=SessionStateOut)
async def undo_answer(
    token: str, request: Request, body: Annotated[UndoIn | None, Body()] = None
) -> Response:
    """Undo the last answer (kept in the log, marked as undone)."""
    seq = body.seq if body is not None else None
    return await _served(request, lambda db, cache: sessions.undo(db, cache, token, seq=seq))
