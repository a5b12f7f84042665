"""Wire the back office into the app: signing secret, routers, login redirects and 401 answers."""

from __future__ import annotations

import logging
import secrets
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from ..planning import PlanCache
from .auth import AuthError, LoginRequiredError
from .routes_api import router as api_router
from .routes_ui import router as ui_router
from .studies import coordinator_of

__all__ = ["install"]

logger = logging.getLogger("app.admin")


def install(app: FastAPI) -> None:
    """Add the back office to ``app`` (call once in the factory, before the participant routers)."""
    secret = app.state.settings.secret_key
    if not secret:
        # Without SECRET_KEY every restart (and every worker) has its own key: logins do not survive.
        logger.warning("SECRET_KEY is not set: back-office logins last only as long as this process")
        secret = secrets.token_urlsafe(32)
    app.state.admin_secret = secret
    app.state.plan_cache = PlanCache()
    # The participant pages never import the back office; they ask it whether whoever joins a study is
    # signed in as its coordinator (that session is a pilot).
    app.state.coordinator_of = coordinator_of
    app.include_router(api_router)
    app.include_router(ui_router)

    @app.exception_handler(LoginRequiredError)
    def _login_required(request: Request, exc: LoginRequiredError) -> Response:
        return RedirectResponse(f"/admin/login?next={quote(exc.next_url, safe='')}", status_code=303)

    @app.exception_handler(AuthError)
    def _unauthorized(request: Request, exc: AuthError) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse(
                {"error": exc.code, "message": exc.message},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        return RedirectResponse("/admin/login", status_code=303)
