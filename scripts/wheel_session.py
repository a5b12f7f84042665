"""Drive one participant of a running server through its JSON API, standard library only.

Used by ``scripts/check-wheel`` against a server installed from the wheel alone: it creates a session in
the given open-enrolment study, consents, answers every question (the first option on even questions, the
second on odd ones) until the session is done, and fails loudly if the server ever answers with an error.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any

MAX_ANSWERS = 500


def _call(method: str, url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        result: dict[str, Any] = json.load(response)
        return result


def main(base_url: str, study_id: str) -> int:
    created = _call(
        "POST", f"{base_url}/api/v1/studies/{study_id}/sessions", {"participant_code": "wheel-check"}
    )
    session_url = f"{base_url}/api/v1/sessions/{created['token']}"
    state = _call("POST", f"{session_url}/consent")
    answers = 0
    while state["status"] != "done":
        if answers >= MAX_ANSWERS:
            print(f"wheel check: no end after {MAX_ANSWERS} answers", file=sys.stderr)
            return 1
        seq = state["query"]["seq"]
        state = _call(
            "POST", f"{session_url}/answers", {"seq": seq, "preferred": "first" if seq % 2 == 0 else "second"}
        )
        answers += 1
    if not state.get("result"):
        print("wheel check: the finished session has no result", file=sys.stderr)
        return 1
    print(f"wheel check: one participant answered {answers} questions and got a result")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1].rstrip("/"), sys.argv[2]))
