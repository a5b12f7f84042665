"""Read a study's exports back into metrics: the results table (CSV or JSON) and the study archive.

The web app exports a study three ways: the results table as CSV and as JSON (one row per session, one
column per coefficient, written from `Metric.to_dict`), and the archive (JSON, optionally gzip-compressed)
that stores each finished session's metric dict itself. `load_results` reads any of them and rebuilds
the metrics through `Metric.from_dict`, so the coefficients are the stored floats bit for bit.

The results table leaves out what a fair metric needs besides its coefficients (the group prevalences
``tau``): pass ``tau`` for it, or load the archive, which carries the whole study configuration.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import InvalidConfigError
from .types import NSD_ATOL, Metric, check_tau, pair_index

__all__ = ["RESULT_KEYS", "load_results"]

#: What `load_results` can key its metrics by.
RESULT_KEYS = ("session_id", "participant_code")
_GZIP_MAGIC = b"\x1f\x8b"
_COEFFICIENT_PREFIXES = ("a_", "B_", "C_")


def load_results(
    path: str | PathLike[str],
    *,
    key: str = "session_id",
    include_excluded: bool = False,
    tau: npt.ArrayLike | None = None,
) -> dict[str, Metric]:
    """The elicited metric of every finished session in a study export, keyed by session or participant.

    Parameters
    ----------
    path : str or path-like
        The results table (``results.csv`` or the results JSON) or the study archive (JSON, gzip or not);
        the format is recognised from the content.
    key : {"session_id", "participant_code"}
        What the returned mapping is keyed by. Sessions without a participant code are left out when
        keying by participant code.
    include_excluded : bool
        Also return sessions the coordinator excluded (left out by default, as in the results page).
    tau : array_like, shape (n_groups, n_classes), optional
        Group prevalences of a fair study, needed only to rebuild fair metrics from the results table.

    Returns
    -------
    dict of str to Metric
        In the export's order (sessions by creation time); sessions that did not finish, or whose
        elicitation failed, are not included.

    Raises
    ------
    InvalidConfigError
        If the file is not a study export, a metric cannot be rebuilt (naming the session), two sessions
        share a participant code when keying by it, or a fair metric is read from the table without ``tau``.
    """
    if key not in RESULT_KEYS:
        raise InvalidConfigError(f"key must be one of {list(RESULT_KEYS)}, got {key!r}")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise InvalidConfigError(f"cannot read the export {str(path)!r}: {exc.strerror or exc}") from exc
    if raw.startswith(_GZIP_MAGIC):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise InvalidConfigError(f"{str(path)!r} is not a readable gzip file: {exc}") from exc
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidConfigError(f"{str(path)!r} is not UTF-8 text: {exc}") from exc
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidConfigError(f"{str(path)!r} is not valid JSON: {exc}") from exc
        entries = _json_entries(document, tau)
    else:
        entries = _table_entries(list(csv.reader(io.StringIO(text, newline=""))), tau)
    return _keyed(entries, key, include_excluded)


def _keyed(
    entries: Iterable[tuple[dict[str, Any], Metric]], key: str, include_excluded: bool
) -> dict[str, Metric]:
    metrics: dict[str, Metric] = {}
    for identity, metric in entries:
        if identity["excluded"] and not include_excluded:
            continue
        name = identity[key]
        if name is None or name == "":
            continue
        if name in metrics:
            raise InvalidConfigError(
                f"two finished sessions share the {key} {name!r}; key the results by session_id"
            )
        metrics[str(name)] = metric
    return metrics


def _json_entries(document: object, tau: npt.ArrayLike | None) -> list[tuple[dict[str, Any], Metric]]:
    if isinstance(document, Mapping) and isinstance(document.get("sessions"), list):
        return _archive_entries(document["sessions"])
    if isinstance(document, Mapping) and isinstance(document.get("results"), list):
        rows = document["results"]
        if not rows:
            return []
        if not all(isinstance(row, Mapping) for row in rows):
            raise InvalidConfigError("every entry of 'results' must be a JSON object (one session)")
        return _table_entries([list(rows[0]), *([row.get(name) for name in rows[0]] for row in rows)], tau)
    raise InvalidConfigError(
        "not a study export: expected the archive (with 'sessions') or the results JSON (with 'results')"
    )


def _archive_entries(sessions: Sequence[Any]) -> list[tuple[dict[str, Any], Metric]]:
    entries = []
    for session in sessions:
        if not isinstance(session, Mapping):
            raise InvalidConfigError("every entry of 'sessions' must be a JSON object")
        result = session.get("result")
        stored = result.get("metric") if isinstance(result, Mapping) else None
        if not isinstance(stored, Mapping) or stored.get("type") == "failed":
            continue
        identity = {
            "session_id": session.get("id"),
            "participant_code": session.get("participant_code"),
            "excluded": any(
                isinstance(item, Mapping) and item.get("lifted_at") is None
                for item in session.get("exclusions") or []
            ),
        }
        entries.append((identity, _decode(stored, identity["session_id"])))
    return entries


def _decode(stored: Mapping[str, Any], session_id: object) -> Metric:
    try:
        return Metric.from_dict(stored)
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"session {session_id}: {exc}") from None


def _table_entries(table: list[list[Any]], tau: npt.ArrayLike | None) -> list[tuple[dict[str, Any], Metric]]:
    if not table:
        return []
    header = [str(name) for name in table[0]]
    for needed in ("session_id", "metric_type"):
        if needed not in header:
            raise InvalidConfigError(f"not a study results table: it has no {needed!r} column")
    start = header.index("metric_type") + 1
    stop = start
    while stop < len(header) and (header[stop].startswith(_COEFFICIENT_PREFIXES) or header[stop] == "lam"):
        stop += 1
    columns = header[start:stop]
    n_classes = sum(1 for name in columns if name.startswith("a_"))
    entries = []
    for row in table[1:]:
        if not row:
            continue
        cells = dict(zip(header, row, strict=False))
        kind = cells.get("metric_type")
        if kind in (None, "", "failed"):
            continue
        identity = {
            "session_id": cells["session_id"],
            "participant_code": cells.get("participant_code"),
            "excluded": cells.get("excluded") in (True, "True", "true"),
        }
        try:
            values = [float(cell) for cell in row[start:stop]]
        except (TypeError, ValueError) as exc:
            raise InvalidConfigError(
                f"session {identity['session_id']}: a coefficient is not a number ({exc})"
            ) from None
        stored = _stored_metric(str(kind), values, n_classes, columns, tau, identity["session_id"])
        entries.append((identity, _decode(stored, identity["session_id"])))
    return entries


def _stored_metric(
    kind: str,
    values: list[float],
    k: int,
    columns: list[str],
    tau: npt.ArrayLike | None,
    session_id: object,
) -> dict[str, Any]:
    """The `Metric.to_dict` form of one row's coefficient cells (the inverse of the families' export)."""
    a, rest = values[:k], values[k:]
    if k < 2 or any(not math.isfinite(value) for value in values):
        raise InvalidConfigError(
            f"session {session_id}: the coefficient columns are incomplete or not finite"
        )
    if kind == "linear" and not rest:
        return {"type": kind, "a": a}
    if kind == "quadratic" and len(rest) == k * k:
        B = np.array(rest).reshape(k, k)
        nsd = bool(np.max(np.linalg.eigvalsh((B + B.T) / 2.0)) <= NSD_ATOL)
        return {"type": kind, "a": a, "B": B.tolist(), "require_nsd": nsd}
    if kind == "cubic" and len(rest) == k * k + k**3:
        B = np.array(rest[: k * k]).reshape(k, k)
        C = np.array(rest[k * k :]).reshape(k, k, k)
        return {"type": kind, "a": a, "B": B.tolist(), "C": C.tolist()}
    if kind == "fair_quadratic" and columns[-1] == "lam" and (len(rest) - 1) % (k * k) == 0:
        n_pairs = (len(rest) - 1) // (k * k)
        n_groups = round((1 + math.sqrt(1 + 8 * n_pairs)) / 2)
        if n_groups * (n_groups - 1) // 2 != n_pairs:
            raise InvalidConfigError(
                f"session {session_id}: {n_pairs} group-pair matrices fit no number of groups"
            )
        if tau is None:
            raise InvalidConfigError(
                "a fair metric needs the group prevalences tau, which the results table does not carry: "
                "pass tau=... or load the study archive"
            )
        prevalences = check_tau(tau, n_groups=n_groups, n_classes=k)
        pairs = [
            {"u": u, "v": v, "B": np.array(rest[index * k * k : (index + 1) * k * k]).reshape(k, k).tolist()}
            for index, (u, v) in enumerate(pair_index(n_groups))
        ]
        return {"type": kind, "a": a, "B_pairs": pairs, "lam": rest[-1], "tau": prevalences.tolist()}
    raise InvalidConfigError(
        f"session {session_id}: cannot rebuild a {kind!r} metric from the table's {len(values)} coefficient "
        "columns; load the study archive instead"
    )
