"""Decoding JSON that a person typed or uploaded: whatever the text, a value or one clear error.

The standard parser raises `RecursionError`, not `json.JSONDecodeError`, for arrays or objects nested
deeper than the interpreter's recursion limit (100,000 ``[`` in an upload did that), and `UnicodeDecodeError`
for bytes that are not UTF-8. `decode_json` turns all three into `JSONInputError`, whose message says
what is wrong and where, so every caller answers bad input the same way (422 on the web, exit 2 in the CLI).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JSONInputError", "decode_json"]


class JSONInputError(ValueError):
    """Text that is not one JSON value; the message reads after the name of what was given."""


def decode_json(raw: str | bytes) -> Any:
    """The JSON value in ``raw`` (UTF-8 when bytes), or `JSONInputError` saying why there is none."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise JSONInputError("is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONInputError(
            f"is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise JSONInputError("is not usable JSON: its arrays or objects are nested too deeply") from None
