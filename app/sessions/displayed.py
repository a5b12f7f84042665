"""Which elicitor a session runs: displayed, never-repeated questions, or exact rates for old sessions.

Every study algorithm asks new sessions' questions as the charts show them (`elicitation.display.displayed`):
the active elicitors choose among candidate pairs snapped to the display grid, so they update on exactly the
pair a person saw; the bisection algorithms' searches are wrapped by `elicitation.display.shown`, which snaps
each step and ends a search whose next step would look like one already shown. QPME, LPME and the active
elicitors show whole people; fair QPME, the trade-off search and diagonal QPME show tenths of a person
(`Algorithm.display_decimals`), because whole people cannot carry their searches on the regions they are
used with (``docs/realistic-queries.md``). New sessions record ``<version>+shown-<n>``; sessions recorded
before keep the version they were recorded with and replay their exact queries unchanged.

``+shown-2`` sessions also get plainly new screens: the active elicitors keep each question at least three
people apart from the one before and skip pairs decided by dominance (`elicitation.display.displayed` with
``fresh_screens``), and the session plan keeps a classifier on its side from one screen to the next and
draws its final comparisons like that too (`app.plan.SessionPlan`). ``+shown-1`` sessions replay as asked.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from elicitation import Elicitor, ReplayMismatchError
from elicitation.display import displayed

from ..algorithms import AlgorithmSpec

__all__ = ["DISPLAY_MARK", "DISPLAY_MARKS", "build_session_elicitor", "fresh_screens", "session_version"]

#: Appended to an algorithm's version for sessions whose questions are the displayed ones (plainly new).
DISPLAY_MARK = "+shown-2"
#: Every mark this code replays, and whether its sessions have plainly new screens.
DISPLAY_MARKS = {"+shown-1": False, DISPLAY_MARK: True}


def session_version(spec: AlgorithmSpec) -> str:
    """The version a new session of ``spec`` records."""
    return spec.version + DISPLAY_MARK if spec.algorithm.displayed else spec.version


def fresh_screens(version: str | None) -> bool:
    """Whether a session recorded with ``version`` (None: a new one) has plainly new screens."""
    if version is None:
        return True
    return any(version.endswith(mark) and fresh for mark, fresh in DISPLAY_MARKS.items())


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
    recorded = current if version is None else version
    for mark, fresh in DISPLAY_MARKS.items():
        base = recorded.removesuffix(mark)
        if not spec.algorithm.displayed or base == recorded or not spec.algorithm.knows(base):
            continue
        # A displayed session (of this or an earlier version): its questions, snapped as they were.
        chosen = None if base == spec.version else base
        return displayed(
            lambda shown_space, chosen=chosen: spec.build(shown_space, params, seed=seed, version=chosen),
            space,
            spec.algorithm.display_decimals,
            fresh_screens=fresh,
        )
    raise ReplayMismatchError(
        f"the session was recorded with {spec.name} version {version!r}; this server runs "
        f"{session_version(spec)!r} (and replays {spec.version!r})"
    )
