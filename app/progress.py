"""The sections a participant's progress bar shows: practice, questions, final checks.

Attention and consistency checks are interleaved with the questions and deliberately not announced, so
they count as questions here; the evaluation pairs at the end are the "final checks".
"""

from __future__ import annotations

from dataclasses import dataclass

from .models import Phase

__all__ = ["ProgressSection", "progress_sections"]


@dataclass(frozen=True)
class ProgressSection:
    """One section: its name, its (estimated) size, how many of it are answered, and where the person is."""

    name: str
    size: int
    done: int
    state: str  # "done", "current" or "upcoming"


def progress_sections(
    *, practice: int, evaluation: int, total: int, answered: int, phase: Phase | None
) -> list[ProgressSection]:
    """Split ``total`` screens (an estimate while the questions last) into the sections that have any.

    ``phase`` is the phase of the comparison on screen (None when nothing is on screen, i.e. finished).
    """
    questions = max(total - practice - evaluation, 0)
    bounds = (("Practice", practice), ("Questions", questions), ("Final checks", evaluation))
    if phase is Phase.PRACTICE:
        current = 0
    elif phase is Phase.EVALUATION:
        current = 2
    elif phase is None:
        current = 3
    else:
        current = 1
    sections = []
    start = 0
    for index, (name, size) in enumerate(bounds):
        if size == 0:
            continue
        if index < current:
            state, done = "done", size
        elif index == current:
            state, done = "current", min(max(answered - start, 0), size)
        else:
            state, done = "upcoming", 0
        sections.append(ProgressSection(name=name, size=size, done=done, state=state))
        start += size
    return sections
