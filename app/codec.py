"""Queries, metrics and elicitation results <-> JSON-safe dicts (numpy arrays <-> nested float lists).

Floats survive a JSON round trip exactly (``json`` writes ``repr``), so decoded queries compare equal to
the originals and replay checks stay at ``REPLAY_ATOL``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

import numpy as np

from elicitation import InvalidConfigError, Metric, Query
from elicitation.answer_log import decode_query as decode_logged_query
from elicitation.answer_log import encode_query

__all__ = [
    "CodecError",
    "decode_metric",
    "decode_query",
    "encode_metric",
    "encode_query",
    "to_jsonable",
]


class CodecError(ValueError):
    """A stored dict does not describe a query or metric."""


def to_jsonable(value: Any) -> Any:
    """Recursively convert numpy arrays/scalars, tuples, mappings and dataclasses to JSON-safe values.

    Non-finite floats become ``None`` (JSON has no NaN); unknown objects become their ``repr``.
    """
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Metric):
        return encode_metric(value)
    if isinstance(value, Query):
        return encode_query(value)
    if isinstance(value, Mapping):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(item) for item in value]
    if is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(asdict(value))
    return repr(value)


def decode_query(data: Mapping[str, Any]) -> Query:
    """Inverse of `encode_query` (the core's answer-log format), failing with a `CodecError`."""
    try:
        return decode_logged_query(data)
    except InvalidConfigError as exc:
        raise CodecError(str(exc)) from exc


def encode_metric(metric: Metric) -> dict[str, Any]:
    """A metric as a tagged dict (`Metric.to_dict`, the core's one metric codec)."""
    try:
        return metric.to_dict()
    except NotImplementedError:
        raise CodecError(f"cannot encode metric of type {type(metric).__name__}") from None


def decode_metric(data: Any) -> Metric:
    """Inverse of `encode_metric` (`Metric.from_dict`); the `CodecError` names the missing or bad field."""
    try:
        return Metric.from_dict(data)
    except InvalidConfigError as exc:
        raise CodecError(str(exc)) from None
