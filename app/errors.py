"""Domain errors -> HTTP status, rendered as pages in the app's style or JSON bodies under /api."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Protocol

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from elicitation import ReplayMismatchError

from .access_log import redact_path
from .embedding import allow_framing
from .i18n import N_, negotiate

__all__ = [
    "AppError",
    "ConflictError",
    "InvalidInputError",
    "NotFoundError",
    "StateView",
    "install_error_handlers",
    "validation_messages",
]

logger = logging.getLogger("app.errors")


class StateView(Protocol):
    """What a conflict carries so the client can carry on: the session's current state (its JSON shape)."""

    def to_api(self) -> dict[str, Any]: ...


class AppError(Exception):
    """Base of the app's own errors; ``status_code`` and ``code`` decide the response."""

    status_code = 500
    code = "error"
    title = N_("Something went wrong")
    #: False when going back to the session cannot help (the study does not take the person now).
    resumable = True
    #: Origins that may frame the error page: those of the study whose page failed (default: nobody).
    frame_ancestors: Sequence[str] = ()

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFoundError(AppError):
    """Unknown or malformed token or study id; the message never says which."""

    status_code = 404
    code = "not_found"
    title = N_("Link not found")

    def __init__(
        self, message: str = N_("This link is not valid. Please check that you copied all of it.")
    ) -> None:
        super().__init__(message)


class InvalidInputError(AppError):
    """A value the request carried does not fit the study (e.g. a panel parameter it does not keep)."""

    status_code = 422
    code = "invalid_input"
    title = "This link is not complete"


class ConflictError(AppError):
    """The request does not fit the session's current state (stale seq, finished, not consented)."""

    status_code = 409
    code = "conflict"
    title = N_("This question has moved on")

    def __init__(
        self,
        message: str,
        view: StateView | None = None,
        *,
        code: str = "conflict",
        title: str | None = None,
        resumable: bool = True,
    ) -> None:
        super().__init__(message)
        self.view = view
        self.code = code
        self.resumable = resumable
        if title is not None:
            self.title = title


def validation_messages(exc: RequestValidationError) -> list[dict[str, str]]:
    """One ``{"field", "message"}`` per problem; ``field`` is the dotted location without body/query."""
    messages = []
    for error in exc.errors():
        # Only the first item says where (body, query, ...): a field may itself be called "query".
        location = list(error.get("loc", ()))
        if location and location[0] in ("body", "query", "path", "header", "cookie"):
            location = location[1:]
        message = str(error.get("msg", "invalid"))
        if error.get("type") == "json_invalid":
            # Its location is a character offset into the body, not a field.
            reason = (error.get("ctx") or {}).get("error", "decode error")
            where = f" at character {location[0]}" if location else ""
            message, location = f"the body is not valid JSON ({reason}{where})", []
        messages.append({"field": ".".join(str(item) for item in location) or "body", "message": message})
    return messages


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/")


#: Participant pages of a conflict whose message names a question number (the API keeps the message):
#: code -> (title, message).
_CONFLICT_PAGES = {
    "already_answered": (
        N_("This question has moved on"),
        N_("You already answered this question differently; your recorded answer stands."),
    ),
    "stale_seq": (
        N_("This question has moved on"),
        N_("This page is out of date: your answers have moved on since it was shown."),
    ),
    "session_finished": (
        N_("You have finished"),
        N_("You have already answered every question of this study."),
    ),
    "consent_required": (
        N_("Please confirm your consent first"),
        N_("Please confirm that you agree to take part before answering."),
    ),
    "nothing_to_undo": (N_("Nothing to undo"), N_("There is no answer to undo.")),
}


def _page_language(request: Request, view: Any) -> str | None:
    """The error page's language: the page's own (its study's), else the session's, else the browser's.

    The back office stays English.
    """
    chosen = getattr(request.state, "language", None)
    if chosen is None and view is not None and getattr(view, "config", None) is not None:
        chosen = view.config.language
    if chosen is None and not request.url.path.startswith("/admin"):
        chosen = negotiate(request.headers.get("accept-language"))
    return chosen


def _page(request: Request, status: int, context: dict[str, Any]) -> Response:
    """The error page in the person's language (the title and message are catalogue msgids, or shown as
    they are when they are not)."""
    templates = request.app.state.templates
    language = _page_language(request, context.get("view"))
    request.state.language = language
    tr = request.app.state.catalogues.translations(language or "")
    context = {**context, "title": tr.gettext(context["title"]), "message": tr.gettext(context["message"])}
    template = f"errors/{status}.html" if status in (404, 409, 422) else "errors/500.html"
    token = request.path_params.get("token")
    resumable = context.pop("resumable", True)
    continue_url = f"/sessions/{token}" if token and status != 404 and resumable else None
    base = {"status": status, "fields": [], "continue_url": continue_url}
    response: Response = templates.TemplateResponse(
        request, template, {**base, **context}, status_code=status
    )
    return response


def install_error_handlers(app: FastAPI) -> None:
    """Register the single place where errors become responses."""

    @app.exception_handler(AppError)
    def _app_error(request: Request, exc: AppError) -> Response:
        view = getattr(exc, "view", None)
        if _wants_json(request):
            body: dict[str, Any] = {"error": exc.code, "message": exc.message}
            if view is not None:
                body["state"] = view.to_api()
            return JSONResponse(body, status_code=exc.status_code)
        title, message = _CONFLICT_PAGES.get(exc.code, (exc.title, exc.message))
        context = {"title": title, "message": message, "view": view, "resumable": exc.resumable}
        # A study shown in another site's frame shows its errors there too (a paused study, a stale answer).
        config = getattr(view, "config", None)
        ancestors = exc.frame_ancestors or getattr(config, "frame_ancestors", ())
        return allow_framing(_page(request, exc.status_code, context), ancestors)

    @app.exception_handler(ReplayMismatchError)
    def _replay_mismatch(request: Request, exc: ReplayMismatchError) -> Response:
        logger.warning("replay mismatch on %s: %s", redact_path(request.url.path), exc)
        message = N_(
            "This session was recorded with a different version of the study or of the elicitation "
            "software, so it cannot be continued safely. Your answers so far are kept. Please contact "
            "the study team."
        )
        if _wants_json(request):
            return JSONResponse({"error": "replay_mismatch", "message": message}, status_code=409)
        return _page(request, 409, {"title": N_("This session cannot be continued"), "message": message})

    @app.exception_handler(RequestValidationError)
    def _invalid(request: Request, exc: RequestValidationError) -> Response:
        messages = validation_messages(exc)
        summary = "; ".join(f"{item['field']}: {item['message']}" for item in messages)
        if _wants_json(request):
            return JSONResponse(
                {"error": "validation_error", "message": summary, "fields": messages}, status_code=422
            )
        context = {
            "title": N_("That answer could not be read"),
            "message": N_("The page sent something the study cannot use. Please go back and try again."),
            "fields": messages,
        }
        return _page(request, 422, context)

    @app.exception_handler(StarletteHTTPException)
    def _http(request: Request, exc: StarletteHTTPException) -> Response:
        status = exc.status_code
        if status == 404:
            error: AppError = NotFoundError(N_("There is no page at this address."))
        else:
            error = AppError(str(exc.detail))
            error.status_code = status
            error.code = "http_error"
            error.title = N_("This request could not be handled")
        if _wants_json(request):
            return JSONResponse({"error": error.code, "message": error.message}, status_code=status)
        return _page(request, status, {"title": error.title, "message": error.message})

    @app.exception_handler(Exception)
    def _unexpected(request: Request, exc: Exception) -> Response:
        logger.exception("unhandled error on %s %s", request.method, redact_path(request.url.path))
        message = N_("Something went wrong on our side. Your previous answers are safe; please try again.")
        if _wants_json(request):
            return JSONResponse({"error": "internal_error", "message": message}, status_code=500)
        try:
            return _page(request, 500, {"title": N_("Something went wrong"), "message": message})
        except Exception:  # the error page itself failed; fall back to plain HTML
            logger.exception("error page failed")
            return HTMLResponse("<h1>Something went wrong</h1>", status_code=500)
