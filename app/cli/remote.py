"""`elicit --url URL study …`: the study commands against a deployed server, through its back-office JSON API.

The same commands, arguments and output as on the local database, so scripts work against either; the
bearer token (from `elicit admin token create` on the server, or the back office's Tokens page) comes
from ``--token`` or, better (it stays out of the process list), the ``ELICIT_TOKEN`` environment
variable. Only the standard library talks HTTP here, so a researcher's laptop needs nothing more.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..admin.downloads import by_command
from ..json_input import JSONInputError, decode_json
from ..study_config import StudyConfigError, parse_study_config, read_study_config_file
from .web import confirm_close, print_status, print_study_list, save_invitation_links

__all__ = ["REMOTE_COMMANDS", "Remote", "RemoteError", "run_remote"]

#: Seconds to wait for the server (an archive import replays every finished session).
REQUEST_TIMEOUT_S = 300


class RemoteError(Exception):
    """The server refused a request or could not be reached; the message says which and why."""


class Remote:
    """A client of one server's back-office JSON API, authenticated by a bearer token."""

    def __init__(self, url: str, token: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in {"http", "https"} or not parts.netloc:
            raise RemoteError(f"--url must be an http(s) address of the server, got {url!r}")
        self.base = url.rstrip("/")
        self.token = token

    def call(self, method: str, path: str, body: Any = None) -> bytes:
        """Send one request to ``/api/v1{path}``; the raw response body, or RemoteError."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json, text/csv"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(
            f"{self.base}/api/v1{path}", data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                content: bytes = response.read()
                return content
        except urllib.error.HTTPError as exc:
            raise RemoteError(f"the server answered {exc.code}: {_error_text(exc.read())}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            raise RemoteError(f"cannot reach {self.base}: {reason}") from None

    def json(self, method: str, path: str, body: Any = None) -> Any:
        return json.loads(self.call(method, path, body))


def _error_text(body: bytes) -> str:
    """The API's error message (``{"detail": …}`` or ``{"error": {"message": …}}``), else the body's start."""
    try:
        document = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return body[:200].decode("utf-8", "replace")
    if isinstance(document, dict):
        error = document.get("error")
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])
        if "detail" in document:
            return (
                json.dumps(document["detail"])
                if not isinstance(document["detail"], str)
                else document["detail"]
            )
    return json.dumps(document)[:200]


def _study_list(args: argparse.Namespace, remote: Remote) -> int:
    print_study_list(remote.json("GET", "/studies")["studies"], args.json)
    return 0


def _study_create(args: argparse.Namespace, remote: Remote) -> int:
    config = read_study_config_file(args.file)
    try:
        parse_study_config(
            config
        )  # the same validation as the server's, with the file's name, before sending
    except StudyConfigError as exc:
        raise StudyConfigError(f"{args.file}: {exc}") from None
    study = remote.json("POST", "/studies", config)
    print(f"created study {study['id']} ({study['name']})")
    print_status(study["id"], study["status"], study.get("join_url"), study.get("enrolment_expires_at"))
    return 0


def _study_status(args: argparse.Namespace, remote: Remote) -> int:
    if args.status == "closed" and not args.yes:
        refused = confirm_close(f"study {args.study_id}")
        if refused is not None:
            return refused
    study = remote.json(
        "PATCH", f"/studies/{_quote(args.study_id)}", {"status": args.status, "confirm": True}
    )
    print_status(study["id"], study["status"], study.get("join_url"), study.get("enrolment_expires_at"))
    return 0


def _study_duplicate(args: argparse.Namespace, remote: Remote) -> int:
    if args.owner:
        raise RemoteError("--owner works on the local database only; the copy belongs to the token's account")
    copy = remote.json("POST", f"/studies/{_quote(args.study_id)}/duplicate")
    print(f"created draft {copy['id']} ({copy['name']})")
    return 0


def _study_invite(args: argparse.Namespace, remote: Remote) -> int:
    body: dict[str, Any] = {"count": args.count}
    if args.expires_in_days:
        body["expires_at"] = (datetime.now(UTC) + timedelta(days=args.expires_in_days)).isoformat()
    created = remote.json("POST", f"/studies/{_quote(args.study_id)}/invitations", body)["invitations"]
    links = ((invitation["id"], invitation["url"], invitation["expires_at"]) for invitation in created)
    save_invitation_links(args.output, links, len(created))
    return 0


def _study_export(args: argparse.Namespace, remote: Remote) -> int:
    filename = by_command[args.what].filename
    query = "?include_pilots=true" if args.include_pilots else ""
    content = remote.call("GET", f"/studies/{_quote(args.study_id)}/export/{filename}{query}")
    Path(args.output).write_bytes(content)
    print(f"wrote {args.what} of study {args.study_id} to {args.output}")
    return 0


def _study_import(args: argparse.Namespace, remote: Remote) -> int:
    if args.owner:
        raise RemoteError(
            "--owner works on the local database only; the study belongs to the token's account"
        )
    try:
        archive = decode_json(Path(args.file).read_bytes())
    except OSError as exc:
        raise RemoteError(f"{args.file}: {exc.strerror or exc}") from None
    except JSONInputError as exc:
        raise RemoteError(f"{args.file} {exc}") from None
    study = remote.json("POST", "/studies/import", archive)
    print(
        f"imported study {study['id']} ({study['name']}); "
        f"{study['verified']} finished sessions replayed identically"
    )
    return 0


def _quote(study_id: str) -> str:
    return urllib.parse.quote(study_id, safe="")


#: (command, action) -> the remote implementation; every other command works on the local database only.
REMOTE_COMMANDS = {
    ("study", "list"): _study_list,
    ("study", "create"): _study_create,
    ("study", "open"): _study_status,
    ("study", "pause"): _study_status,
    ("study", "close"): _study_status,
    ("study", "duplicate"): _study_duplicate,
    ("study", "invite"): _study_invite,
    ("study", "export"): _study_export,
    ("study", "import"): _study_import,
}


def run_remote(args: argparse.Namespace, url: str, token: str | None) -> int:
    """Run the parsed command against the server at ``url``; the exit status (2 for any refusal)."""
    key = (args.command, getattr(args, "study_command", None))
    command = REMOTE_COMMANDS.get(key)
    if command is None:
        name = " ".join(part for part in key if part)
        print(
            f"error: `elicit {name}` works on the local database only; run it without --url", file=sys.stderr
        )
        return 2
    if not token:
        print("error: --url needs a bearer token: set ELICIT_TOKEN (or pass --token)", file=sys.stderr)
        return 2
    try:
        return command(args, Remote(url, token))
    except (RemoteError, StudyConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
