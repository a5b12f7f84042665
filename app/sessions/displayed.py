"""Which elicitor a session runs: displayed, never-repeated questions, or exact rates for old sessions.

Every study algorithm asks new sessions' questions as the charts show them (`elicitation.display.displayed`):
the active elicitors choose among candidate pairs snapped to the display grid, so they update on exactly the
pair a person saw; the bisection algorithms' searches are wrapped by `elicitation.display.shown`, which snaps
each step and ends a search whose next step would look like one already shown. QPME, LPME and the active
elicitors show whole people; fair QPME, the trade-off search and diagonal QPME show tenths of a person
(`Algorithm.display_decimals`), because whole people cannot carry their searches on the regions they are
used with (``docs/realistic-queries.md``). New sessions record ``<version>+shown-<n>``; sessions recorded
before keep the version they were recorded with and replay their exact queries unchanged.

From ``+shown-2`` on sessions get plainly new screens: the active elicitors keep each question at least
three people apart from the one before (`elicitation.display.displayed` with ``fresh_screens``), and the
session plan keeps a classifier on its side from one screen to the next and draws its own pairs apart from
the screen before (`app.plan.Screens`). ``+shown-3`` sessions ask the same questions, and the plan's
practice pairs and checks are also apart from the question after them. Each session keeps the script of
its mark, so ``+shown-1`` and ``+shown-2`` sessions replay as asked.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from elicitation import Elicitor, ReplayMismatchError
from elicitation.display import displayed

from ..algorithms import AlgorithmSpec
from ..plan import Screens

__all__ = ["DISPLAY_MARK", "DISPLAY_MARKS", "build_session_elicitor", "session_screens", "session_version"]

#: Appended to an algorithm's version for sessions whose questions are the displayed ones (plainly new).
DISPLAY_MARK = "+shown-3"
#: Every mark this code replays, and how far apart its sessions' screens are kept (from `Screens.FRESH`
#: on, the active elicitors' questions too).
DISPLAY_MARKS = {"+shown-1": Screens.DISTINCT, "+shown-2": Screens.FRESH, DISPLAY_MARK: Screens.NEIGHBOURS}


def session_version(spec: AlgorithmSpec) -> str:
    """The version a new session of ``spec`` records."""
    return spec.version + DISPLAY_MARK if spec.algorithm.displayed else spec.version


def session_screens(version: str | None) -> Screens:
    """How far apart a session recorded with ``version`` (None: a new one) keeps its screens (a version
    without a display mark: `Screens.DISTINCT`)."""
    if version is None:
        return DISPLAY_MARKS[DISPLAY_MARK]
    return next(
        (screens for mark, screens in DISPLAY_MARKS.items() if version.endswith(mark)), Screens.DISTINCT
    )


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
    for mark, screens in DISPLAY_MARKS.items():
        base = recorded.removesuffix(mark)
        if not spec.algorithm.displayed or base == recorded or not spec.algorithm.knows(base):
            continue
        # A displayed session (of this or an earlier version): its questions, snapped as they were.
        chosen = None if base == spec.version else base
        return displayed(
            lambda shown_space, chosen=chosen: spec.build(shown_space, params, seed=seed, version=chosen),
            space,
            spec.algorithm.display_decimals,
            fresh_screens=screens >= Screens.FRESH,
        )
    raise ReplayMismatchError(
        f"the session was recorded with {spec.name} version {version!r}; this server runs "
        f"{session_version(spec)!r} (and replays {spec.version!r})"
    )
