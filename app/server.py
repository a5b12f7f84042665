"""The HTTP server side of the app: deadlines for a request's headers (`HeaderDeadlineProtocol`, used by
`elicit serve`) and for its body (`RequestEnvelope`, in every app), and the count of requests in flight.

uvicorn times out idle keep-alive connections, but nothing limits how long a client may take to finish a
request: a client sending one header byte every few seconds, or one body byte every ten, holds its
connection (and a file descriptor, and for a body a task of the app) for ever. `HeaderDeadlineProtocol`
closes any connection whose next request's headers are not complete within `HEADER_TIMEOUT_S` of it
becoming ready for one (its opening, or the end of the previous response). `RequestEnvelope` gives
every request's body a deadline counted from the end of its headers (``BODY_TIMEOUT_S``, 120 s by
default): a body still arriving then is answered 408 and the connection closed. A reverse proxy in front
should still set its own (nginx ``client_header_timeout``, ``client_body_timeout``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable

import anyio
import h11
from fastapi import HTTPException
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from .deps import close_sessions, track_sessions
from .metrics import RequestMetrics

__all__ = [
    "HEADER_TIMEOUT_S",
    "BodyTooSlowError",
    "HeaderDeadlineProtocol",
    "RequestCounter",
    "RequestEnvelope",
]

#: Seconds a client has to send a request's headers (nginx's ``client_header_timeout`` default is 60 s;
#: a request's headers are a few hundred bytes, one packet on any network a participant uses).
HEADER_TIMEOUT_S = 30.0


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol that closes a connection whose request headers do not arrive in time."""

    header_timeout_s = HEADER_TIMEOUT_S
    _header_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._disarm_header_deadline()  # a request's headers are in (or the connection is ending)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm_header_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_deadline()
        super().connection_lost(exc)

    def _arm_header_deadline(self) -> None:
        self._disarm_header_deadline()
        self._header_deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_late)

    def _disarm_header_deadline(self) -> None:
        if self._header_deadline is not None:
            self._header_deadline.cancel()
            self._header_deadline = None

    def _headers_too_late(self) -> None:
        self._header_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


class BodyTooSlowError(HTTPException):
    """A request body that did not arrive in time (408).

    An `HTTPException`, so that FastAPI's body parsing passes it on unchanged (it turns other errors into
    400) and the app's error handler answers it as a page or JSON, like any other error.
    """

    def __init__(self, timeout_s: float) -> None:
        super().__init__(
            status_code=408,
            detail=f"The request did not arrive within {timeout_s:g} seconds and was stopped; "
            "please try again.",
        )


class RequestCounter:
    """How many HTTP requests this process is serving (`RequestEnvelope` counts them), so that background
    work (`app.sessions.speculation`) starts only when there are none."""

    def __init__(self) -> None:
        self._count = 0
        self._last_ended = 0.0
        self._lock = threading.Lock()

    def busy(self, within: float = 0.0) -> bool:
        """Whether a request is being served now, or one ended less than ``within`` seconds ago."""
        return self._count > 0 or time.monotonic() - self._last_ended < within

    def enter(self) -> None:
        with self._lock:
            self._count += 1

    def leave(self) -> None:
        with self._lock:
            self._count -= 1
            self._last_ended = time.monotonic()


class RequestEnvelope:
    """The ASGI layer every HTTP request of the app goes through outside FastAPI's own stack, in one layer
    (each layer wraps every message of every request): the count of requests in flight (`RequestCounter`),
    the body's deadline, the response's security headers (``secure``, `app.main.SecurityHeaders`), the
    request metrics (`app.metrics.RequestMetrics`, timing the whole request), and the DB sessions the request
    opened closed after its response (`app.deps.close_sessions`).

    Every request's body must have arrived ``body_timeout_s`` after the request reached the app: each read
    of the body waits at most until the deadline; a read that would wait longer raises `BodyTooSlowError`
    in whatever was reading (the body parser, the back office's admission, a form), and the answer then
    closes the connection (the rest of the body is never read). Reads after the body is complete (waiting
    for the client to go away) have no deadline.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        counter: RequestCounter,
        body_timeout_s: float,
        secure: Callable[[str, Iterable[tuple[bytes, bytes]]], list[tuple[bytes, bytes]]],
        metrics: RequestMetrics,
    ) -> None:
        self.app = app
        self.counter = counter
        self.body_timeout_s = body_timeout_s
        self.secure = secure
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.counter.enter()
        try:
            started = time.perf_counter()
            status = 500
            timeout_s = self.body_timeout_s
            deadline = anyio.current_time() + timeout_s
            complete = late = False
            opened = track_sessions(scope)

            async def receive_in_time() -> Message:
                nonlocal complete, late
                if complete:
                    return await receive()
                with anyio.move_on_after(deadline - anyio.current_time()):
                    message = await receive()
                    complete = message["type"] != "http.request" or not message.get("more_body", False)
                    return message
                late = True
                raise BodyTooSlowError(timeout_s)

            async def send_enveloped(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                    if late:
                        MutableHeaders(scope=message)["connection"] = "close"
                    message["headers"] = self.secure(scope["path"], message.get("headers", ()))
                await send(message)

            try:
                await self.app(scope, receive_in_time, send_enveloped)
            finally:
                try:
                    await close_sessions(opened)
                finally:
                    self.metrics.record(scope, status, time.perf_counter() - started)
        finally:
            self.counter.leave()
