"""Which elicitor a session runs: displayed, never-repeated questions, or exact rates for old sessions.

Every study algorithm asks new sessions' questions as the charts show them (`elicitation.display.displayed`):
the active elicitors choose among candidate pairs snapped to the display grid, so they update on exactly the
pair a person saw; the bisection algorithms' searches are wrapped by `elicitation.display.shown`, which snaps
each step and ends a search whose next step would look like one already shown. QPME, LPME and the active
elicitors show whole people; fair QPME, the trade-off search and diagonal QPME show tenths of a person
(`Algorithm.display_decimals`), because whole people cannot carry their searches on the regions they are
used with (``docs/realistic-queries.md``). New sessions record ``<version>+shown-<n>``; sessions recorded
before keep the version they were recorded with and replay their exact queries unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from elicitation import Elicitor, ReplayMismatchError
from elicitation.display import displayed

from ..algorithms import AlgorithmSpec

__all__ = ["DISPLAY_MARK", "build_session_elicitor", "session_version"]

#: Appended to an algorithm's version for sessions whose questions are the displayed ones.
DISPLAY_MARK = "+shown-1"


def session_version(spec: AlgorithmSpec) -> str:
    """The version a new session of ``spec`` records."""
    return spec.version + DISPLAY_MARK if spec.algorithm.displayed else spec.version


def build_session_elicitor(
    spec: AlgorithmSpec,
    space: Any,
    params: BaseModel | dict[str, Any] | None,
    *,
    seed: int,
    version: str | None = None,
) -> Elicitor[Any]:
    """A fresh elicitor for a session recorded with ``version`` (default: what a new session records).

    Raises
    ------
    ReplayMismatchError
        If ``version`` is neither this code's version of the algorithm, one it keeps for earlier sessions,
        nor the one before display snapping.
    """
    current = session_version(spec)
    if version == spec.version or (version is None and current == spec.version):
        return spec.build(space, params, seed=seed)
    if version is not None and version in spec.algorithm.earlier:
        return spec.build(space, params, seed=seed, version=version)
    if version is None or version == current:
        return displayed(
            lambda shown_space: spec.build(shown_space, params, seed=seed),
            space,
            spec.algorithm.display_decimals,
        )
    earlier = version.removesuffix(DISPLAY_MARK)
    if spec.algorithm.displayed and earlier != version and earlier in spec.algorithm.earlier:
        # A displayed session of an earlier version: that version's questions, snapped as they were.
        return displayed(
            lambda shown_space: spec.build(shown_space, params, seed=seed, version=earlier),
            space,
            spec.algorithm.display_decimals,
        )
    raise ReplayMismatchError(
        f"the session was recorded with {spec.name} version {version!r}; this server runs "
        f"{session_version(spec)!r} (and replays {spec.version!r})"
    )
