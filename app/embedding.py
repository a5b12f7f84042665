"""Embedding a study in another site's frame: the allow-listed origins, the policy header and the cookie.

By default no page may be framed (``frame-ancestors 'none'`` and ``X-Frame-Options: DENY``). A study may
name the origins allowed to frame its participant pages (a survey tool, an MTurk HIT); those pages then
send that list instead and no ``X-Frame-Options`` (which cannot name an origin). Inside a cross-site
frame a ``SameSite=Lax`` cookie is never sent, so such a study's "this browser's session" cookie is
``SameSite=None; Secure; Partitioned``: kept per embedding site, and only over https (or on a loopback
host, which browsers treat as secure).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import Response

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "MAX_FRAME_ANCESTORS",
    "allow_framing",
    "content_security_policy",
    "cookie_in_frames",
    "normalise_origin",
    "set_partitioned_cookie",
]

#: No inline script and no injected styles: plotly.js's own rules come from /static/css/plotly.css (see
#: templates/sessions/_comparison.html); it styles elements through the DOM, which CSP does not restrict.
_POLICY_HEAD = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
)
#: Most origins a study may allow to frame it.
MAX_FRAME_ANCESTORS = 20
#: ``scheme://host[:port]`` with an optional leading ``*.`` (any subdomain, as CSP allows): no path,
#: query, user name, quotes or spaces, so nothing typed can add a directive to the header.
_ORIGIN = re.compile(
    r"^(?P<scheme>https?)://(?P<host>(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)"
    r"(:(?P<port>[0-9]{1,5}))?$"
)


def content_security_policy(frame_ancestors: Sequence[str] = ()) -> str:
    """The pages' policy; framing only by ``frame_ancestors`` (already normalised), else by nobody."""
    ancestors = " ".join(frame_ancestors) if frame_ancestors else "'none'"
    return f"{_POLICY_HEAD}frame-ancestors {ancestors}"


CONTENT_SECURITY_POLICY = content_security_policy()


def normalise_origin(value: str) -> str:
    """An origin as the policy writes it (lower case, no trailing slash); `ValueError` for anything else."""
    origin = value.strip().lower().removesuffix("/")
    match = _ORIGIN.match(origin)
    if match is None:
        raise ValueError(
            f"{value!r} is not an origin: give https://host or https://host:port "
            "(optionally https://*.host), without a path"
        )
    port = match.group("port")
    if port is not None and not 0 < int(port) < 65536:
        raise ValueError(f"{value!r}: the port must be between 1 and 65535")
    host = match.group("host")
    if host.rsplit(".", 1)[-1].isdigit():
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise ValueError(f"{value!r}: not a valid IP address") from None
    return origin


def allow_framing(response: Response, frame_ancestors: Sequence[str]) -> Response:
    """Let ``frame_ancestors`` frame this response (no-op for an empty list: the default policy stands)."""
    if frame_ancestors:
        response.headers["content-security-policy"] = content_security_policy(frame_ancestors)
    return response


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def cookie_in_frames(request: Request) -> bool:
    """Whether a cookie set for this request can be sent inside a cross-site frame (needs ``Secure``)."""
    return request.url.scheme == "https" or _loopback(request.url.hostname or "")


def set_partitioned_cookie(response: Response, key: str, value: str, *, max_age: int, path: str) -> None:
    """``Set-Cookie`` for a cross-site frame: ``HttpOnly; Secure; SameSite=None; Partitioned``.

    Starlette writes ``Partitioned`` only on Python 3.14+, so the attribute is appended to its header here.
    """
    response.set_cookie(key, value, max_age=max_age, path=path, secure=True, httponly=True, samesite="none")
    name, header = response.raw_headers[-1]
    response.raw_headers[-1] = (name, header + b"; Partitioned")
