"""Admission of back-office requests with a body: who is calling is settled before a byte of it is read.

FastAPI reads and parses a request's body before it runs the route's dependencies, so without this an
anonymous client could make the server read and parse megabytes before being told it is not logged in,
and a slow upload would hold a database connection while its body trickled in. Routes of the back-office
routers use `AdmittedRoute`: for a state-changing request to a route that needs a principal it first
checks the credentials on a short database session of its own (closed again at once), answering 401 or
the login redirect without reading the body; then it reads the body, with the route's size limit
(enforced while streaming) within the app's body deadline, holding no database connection; only then
does the route's own work start. The dependencies `api_user` and `ui_user` reuse the principal found here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.to_thread
from fastapi import Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect

from ..deps import connection_slots
from .auth import (
    NO_CREDENTIALS,
    AuthError,
    admitted_principal,
    api_user,
    has_credentials,
    login_required,
    ui_user,
)

__all__ = ["AdmittedRoute"]

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_PRINCIPAL_DEPENDENCIES = {api_user: "api", ui_user: "ui"}

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


def _principal_kind(dependant: Dependant) -> str | None:
    """``"api"`` or ``"ui"`` if the route (through any of its dependencies) needs a logged-in caller."""
    for dependency in dependant.dependencies:
        kind = _PRINCIPAL_DEPENDENCIES.get(dependency.call) or _principal_kind(dependency)  # type: ignore[arg-type]
        if kind is not None:
            return kind
    return None


class AdmittedRoute(APIRoute):
    """An `APIRoute` whose unsafe requests are authenticated, then read in full, before the handler runs."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        kind = _principal_kind(self.dependant)
        if kind is None:
            return handler

        async def admitted(request: Request) -> Response:
            if request.method in _SAFE_METHODS:
                return await handler(request)
            if not has_credentials(request):
                raise AuthError(NO_CREDENTIALS) if kind == "api" else login_required(request)
            slots = connection_slots(request.app)
            async with slots if slots is not None else contextlib.nullcontext():
                request.state.principal = await anyio.to_thread.run_sync(admitted_principal, request, kind)
            try:
                await request.body()  # within the app's body deadline (`app.server.RequestEnvelope`)
            except ClientDisconnect:
                # The client is gone: nobody reads an answer, and nothing was stored.
                return Response(status_code=400)
            return await handler(request)

        return admitted
