"""The HTTP server side of `elicit serve`: uvicorn's h11 protocol with a deadline for request headers.

uvicorn times out idle keep-alive connections and the app times out slow bodies, but nothing limits how
long a client may take to finish a request's *headers*: a client sending one header byte every few
seconds holds its connection (and a file descriptor) for ever. `HeaderDeadlineProtocol` closes any
connection whose next request's headers are not complete within `HEADER_TIMEOUT_S` of it becoming ready
for one (its opening, or the end of the previous response). A reverse proxy in front should still set its
own (nginx ``client_header_timeout``).
"""

from __future__ import annotations

import asyncio

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HEADER_TIMEOUT_S", "HeaderDeadlineProtocol"]

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
