"""A session's deterministic script: which comparison comes next, where, and how it is shown.

Given the study configuration, the session seed and the effective answer log, `next_step` says what the
participant sees next: practice pairs (never fed to the elicitor), the elicitor's queries with attention
and consistency checks interleaved at seeded positions, then the evaluation pairs (until the agreement
estimate is precise enough, or all are asked), then done. The plan's own pairs are drawn on the display
grid (`elicitation.display`): they show exactly, their two sides never display alike, and a repeat check
never repeats the screen just before it. Every random
choice (left/right position, tie-breaks, practice/check/evaluation pairs) comes from a
``numpy.random.Generator`` seeded by ``(session seed, purpose, index)``, so replaying the log rebuilds the
same screens and the same elicitor answers.

How far apart consecutive screens are kept is the session's `Screens` (recorded with its display mark,
`app.sessions.displayed`). From `Screens.FRESH` on every screen is plainly new: a classifier stays on its
side from one screen to the next (the left/right coin decides only when neither side resembles one of the
screen before), and the plan's own pairs are at least `FRESH_CELL_GAP` people apart from the screen
before, its final comparisons never decided by dominance. `Screens.NEIGHBOURS` also keeps them apart from
the screen after, which is already known: the elicitor's pending question follows a practice pair or a
check, and it does not depend on them (the elicitor never sees them).
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from elicitation import Metric, Query, Sphere
from elicitation.active.selection import FRESH_CELL_GAP
from elicitation.display import DisplayGrid

from .codec import decode_query
from .i18n import N_
from .models import Phase

__all__ = [
    "CHECK_DOMINANCE",
    "CHECK_REPEAT",
    "EVALUATION_AGREEMENT_PRIOR",
    "EVALUATION_MIN_PAIRS",
    "Choice",
    "LoggedAnswer",
    "Screens",
    "Section",
    "SessionPlan",
    "Step",
    "elicitor_choice",
    "evaluation_agreement",
    "evaluation_left",
    "evaluation_progress",
    "wilson_interval",
]

CHECK_DOMINANCE = "dominance"
CHECK_REPEAT = "repeat"
#: Random pairs stay this fraction of the radius inside the sphere (rounding never pushes them out).
BALL_MARGIN = 0.95
#: Dominance pairs move each rate by this fraction of the radius range, so the better one is visibly better.
DOMINANCE_SHIFT = (0.6, 0.8)
#: Smallest per-class share of the dominance direction (every rate strictly improves).
DOMINANCE_MIN_COMPONENT = 0.5
#: Evaluation pairs asked before the agreement estimate may end the evaluation early.
EVALUATION_MIN_PAIRS = 8
#: Normal quantile of the 95 % Wilson interval reported (and used to stop) for the agreement M.
WILSON_Z = 1.959963984540054
#: Chance that a person's answer to an evaluation pair agrees with their elicited metric, as the length
#: estimate assumes it (the evaluation ends early only after a run of agreeing answers); the demo's and
#: the fairness study's simulated people end early as often as this predicts (docs/realistic-queries.md).
EVALUATION_AGREEMENT_PRIOR = 0.9
#: Draws of a plan pair tried before accepting one whose sides display alike (the sphere is too small).
_PAIR_DRAWS = 16
#: With `Screens.NEIGHBOURS`: draws tried for a pair apart from the screens on both sides of it.
_NEIGHBOURS_PAIR_DRAWS = 64
#: Plan pairs first drawn and judged at once, twice as many each time none of them is usable (a final
#: comparison's first draw is often decided by dominance, a practice pair's seldom unusable).
_PAIR_BATCH = 2


def wilson_interval(agreed: int, decided: int, z: float = WILSON_Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``agreed / decided`` (``(0, 1)`` when nothing decided).

    The interval always contains the proportion: at 0 or 1 of them, rounding would otherwise leave an end
    a few 1e-15 on the wrong side of it."""
    if decided <= 0:
        return 0.0, 1.0
    share = agreed / decided
    denominator = 1.0 + z * z / decided
    centre = (share + z * z / (2 * decided)) / denominator
    half = z * math.sqrt(share * (1.0 - share) / decided + z * z / (4 * decided * decided)) / denominator
    return max(0.0, min(share, centre - half)), min(1.0, max(share, centre + half))


def _settled(agreed: int, decided: int, precision: float) -> bool:
    """Whether ``agreed`` of ``decided`` evaluation answers pin the agreement to ``precision`` (95 %)."""
    if decided < EVALUATION_MIN_PAIRS:
        return False
    low, high = wilson_interval(agreed, decided)
    return (high - low) / 2.0 <= precision


@functools.lru_cache(maxsize=4096)
def _expected_left(agreed: int, decided: int, asked: int, limit: int, precision: float) -> float:
    if asked >= limit or _settled(agreed, decided, precision):
        return 0.0
    agree = _expected_left(agreed + 1, decided + 1, asked + 1, limit, precision)
    disagree = _expected_left(agreed, decided + 1, asked + 1, limit, precision)
    return 1.0 + EVALUATION_AGREEMENT_PRIOR * agree + (1.0 - EVALUATION_AGREEMENT_PRIOR) * disagree


def evaluation_left(agreed: int, decided: int, asked: int, limit: int, precision: float | None) -> float:
    """Evaluation pairs still expected after ``asked`` of at most ``limit`` were asked (``decided`` of them
    not "about the same", ``agreed`` of those as the elicited metric picks): all the rest without a
    ``precision`` goal, else the expectation when each later answer agrees with probability
    `EVALUATION_AGREEMENT_PRIOR` and the evaluation ends as soon as the agreement is pinned (as
    `SessionPlan.next_step` ends it)."""
    if precision is None:
        return float(max(0, limit - asked))
    return _expected_left(agreed, decided, asked, limit, precision)


class _Purpose(enum.IntEnum):
    """Independent random streams of a session (part of each generator's seed)."""

    POSITION = 1
    TIE_BREAK = 2
    PRACTICE = 3
    DOMINANCE = 4
    REPEAT = 5
    EVALUATION = 6
    SCHEDULE = 7


class Screens(enum.IntEnum):
    """How far a session's plan keeps consecutive screens apart; a session keeps the rule it was recorded
    with (`app.sessions.displayed.DISPLAY_MARKS`), so its screens never change."""

    #: Never displayed exactly like the screen before (``+shown-1``).
    DISTINCT = 1
    #: Plainly apart from the screen before, a classifier on its side (``+shown-2``).
    FRESH = 2
    #: Practice pairs and checks also plainly apart from the elicitor's question after them (``+shown-3``).
    NEIGHBOURS = 3


class Choice(enum.StrEnum):
    """An answer in the order shown (first = left) or in the elicitor's order, depending on context."""

    FIRST = "first"
    SECOND = "second"
    TIE = "tie"


def elicitor_choice(preferred: str, swapped: bool) -> Choice:
    """Map a choice as shown (first = left) to the elicitor's order (``swapped``: its first is right)."""
    choice = Choice(preferred)
    if choice is Choice.TIE or not swapped:
        return choice
    return Choice.SECOND if choice is Choice.FIRST else Choice.FIRST


_PHASE_OF = operator.attrgetter("phase")


class LoggedAnswer(Protocol):
    """What the plan needs from an effective log row (`app.models.Answer` satisfies it)."""

    seq: int
    phase: str | None
    query: dict[str, Any] | None
    swapped: bool | None
    preferred: str | None
    elicitor_answer: bool | None


@dataclass(frozen=True)
class Section:
    """One part of a session as the progress display names it: comparisons done of (about) how many."""

    key: str
    #: English (the JSON API shows it so); pages translate it.
    label: str
    done: int
    total: int
    current: bool

    def to_api(self) -> dict[str, Any]:
        """The JSON API's shape (``dataclasses.asdict`` without its recursive copying, on every answer)."""
        return {
            "key": self.key,
            "label": self.label,
            "done": self.done,
            "total": self.total,
            "current": self.current,
        }


@dataclass(frozen=True)
class Step:
    """The next comparison: ``query`` in the elicitor's order, shown swapped when ``swapped``."""

    phase: Phase
    phase_index: int
    query: Query
    swapped: bool
    #: Check steps: ``{"type": "dominance"}`` (first dominates) or ``{"type": "repeat", "of_seq": n,
    #: "expected": "first"|"second"|"tie"}`` (the earlier answer, in the elicitor's order).
    check: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def left(self) -> np.ndarray:
        return self.query.second if self.swapped else self.query.first

    @property
    def right(self) -> np.ndarray:
        return self.query.first if self.swapped else self.query.second


def _words(value: int) -> list[int]:
    """A non-negative integer as `numpy.random.SeedSequence` reads it from an entropy list: its 32-bit
    words, lowest first (``[0]`` for 0)."""
    words = [value & 0xFFFFFFFF]
    value >>= 32
    while value:
        words.append(value & 0xFFFFFFFF)
        value >>= 32
    return words


def _rng(seed: int, purpose: _Purpose, index: int) -> np.random.Generator:
    """The generator ``np.random.default_rng([seed, purpose, index])``, its entropy handed to the
    `numpy.random.SeedSequence` as the uint32 words it would make of that list (the same stream, without
    numpy's conversion of each Python integer: this runs on every answer)."""
    entropy = np.array([*_words(seed), int(purpose), *_words(index)], dtype=np.uint32)
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))


#: numpy's `SeedSequence` (a pool of four 32-bit words) and `PCG64` constants, for `_coin`.
_MASK32, _MASK64, _MASK128 = (1 << 32) - 1, (1 << 64) - 1, (1 << 128) - 1
_HASH_INIT_A, _HASH_MULT_A = 0x43B0D7E5, 0x931E8875
_HASH_INIT_B, _HASH_MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_POOL_SIZE = 4
_PCG_MULTIPLIER = 0x2360ED051FC65DA44385DF649FCCF645


def _hashmix(value: int, constant: int, multiplier: int) -> tuple[int, int]:
    """`SeedSequence`'s hash of one 32-bit word, and the hash constant after it."""
    value ^= constant
    constant = constant * multiplier & _MASK32
    value = value * constant & _MASK32
    return value ^ value >> 16, constant


def _mix(x: int, y: int) -> int:
    """`SeedSequence`'s mix of two 32-bit words."""
    result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _MASK32
    return result ^ result >> 16


def _first_word(seed: int, purpose: _Purpose, index: int) -> int:
    """The first 64-bit word of ``_rng(seed, purpose, index)``'s bit generator, computed on Python integers
    as numpy computes it: `SeedSequence` hashes the entropy words into a pool of four and draws PCG64's
    128-bit state and increment from it, and PCG64 seeds itself and steps once before its first output
    (numpy's stream compatibility keeps both; `tests/app/test_plan.py` checks the words against numpy's).
    A left/right coin needs only this word, and within a request building numpy's generator for it costs
    about twice as much."""
    entropy = [*_words(seed), int(purpose), *_words(index)]
    constant = _HASH_INIT_A
    pool = []
    for word in entropy[:_POOL_SIZE] + [0] * (_POOL_SIZE - len(entropy)):
        word, constant = _hashmix(word, constant, _HASH_MULT_A)
        pool.append(word)
    for source in range(_POOL_SIZE):
        for target in range(_POOL_SIZE):
            if source != target:
                word, constant = _hashmix(pool[source], constant, _HASH_MULT_A)
                pool[target] = _mix(pool[target], word)
    for extra in entropy[_POOL_SIZE:]:
        for target in range(_POOL_SIZE):
            word, constant = _hashmix(extra, constant, _HASH_MULT_A)
            pool[target] = _mix(pool[target], word)
    # generate_state(4, np.uint64): eight 32-bit words, each pair read as one 64-bit word (low word first).
    constant = _HASH_INIT_B
    words = []
    for i in range(2 * _POOL_SIZE):
        word, constant = _hashmix(pool[i % _POOL_SIZE], constant, _HASH_MULT_B)
        words.append(word)
    seeds = [low | high << 32 for low, high in zip(words[::2], words[1::2], strict=True)]
    initial, increment = seeds[0] << 64 | seeds[1], ((seeds[2] << 64 | seeds[3]) << 1 | 1) & _MASK128
    # PCG64 seeding (one step from 0, add the initial state, another step), then the first step and output.
    state = (increment + initial) & _MASK128
    for _ in range(2):
        state = (state * _PCG_MULTIPLIER + increment) & _MASK128
    high, low = state >> 64, state & _MASK64
    rotation, word = high >> 58, high ^ low
    return (word >> rotation | word << (64 - rotation)) & _MASK64


def _coin(seed: int, purpose: _Purpose, index: int) -> bool:
    """``_rng(seed, purpose, index).random() < 0.5``: its first double is the first word's top 53 bits
    over 2**53, below one half exactly when the word's top bit is clear."""
    return _first_word(seed, purpose, index) >> 63 == 0


def _ball_point(rng: np.random.Generator, sphere: Sphere, radius: float) -> np.ndarray:
    """A uniform random point of the ball of ``radius`` around the sphere's centre."""
    k = sphere.n_classes
    direction = rng.standard_normal(k)
    direction /= np.linalg.norm(direction)
    point: np.ndarray = sphere.center + radius * rng.random() ** (1.0 / k) * direction
    return point


class SessionPlan:
    """The deterministic script of one session (study settings + space + seed); holds no state beyond
    memos of what it computed (the same for the same inputs)."""

    def __init__(
        self,
        *,
        space: Any,
        seed: int,
        practice_queries: int,
        dominance_checks: int,
        repeat_checks: int,
        evaluation_queries: int,
        expected_queries: int,
        evaluation_precision: float | None = None,
        region: Sphere | Sequence[Sphere] | None = None,
        screens: Screens = Screens.DISTINCT,
    ) -> None:
        self.space = space
        self.seed = int(seed)
        self.sphere: Sphere = space.sphere
        self.n_groups = int(space.n_groups)
        # Where the questions sit (the algorithm's `query_region`): practice, checks and final comparisons
        # come from the same sphere, or from each group's own.
        if region is None or isinstance(region, Sphere):
            self.group_spheres: tuple[Sphere, ...] = (region or self.sphere,) * self.n_groups
            self.region: Sphere | tuple[Sphere, ...] = region or self.sphere
        else:
            self.group_spheres = tuple(region)
            self.region = self.group_spheres
        self.practice_queries = practice_queries
        self.evaluation_queries = evaluation_queries
        self.evaluation_precision = evaluation_precision
        self.grid = DisplayGrid.from_priors(space.priors)
        self.screens = screens
        self.fresh_screens = screens >= Screens.FRESH
        self._pair_draws = _NEIGHBOURS_PAIR_DRAWS if screens >= Screens.NEIGHBOURS else _PAIR_DRAWS
        kinds: list[str] = []
        for j in range(max(dominance_checks, repeat_checks)):
            if j < dominance_checks:
                kinds.append(CHECK_DOMINANCE)
            if j < repeat_checks:
                kinds.append(CHECK_REPEAT)
        self.check_kinds: tuple[str, ...] = tuple(kinds)
        self.check_slots: tuple[int, ...] = self._schedule(len(kinds), max(1, expected_queries))
        # Memo of the seeded left/right coin per position (a plan lives as long as its study's runtime).
        self._swaps: dict[int, bool] = {}
        # Memo of `_verdict` per evaluation row object: (row, metric, verdict), used only while the same row
        # and metric objects come back (the session cache keeps both from one answer to the next); emptied
        # when the session is complete, so that a finished session's plan holds no log rows.
        self._verdicts: dict[int, tuple[LoggedAnswer, Metric, bool | None]] = {}

    @property
    def n_checks(self) -> int:
        return len(self.check_kinds)

    def _schedule(self, n_checks: int, expected: int) -> tuple[int, ...]:
        """Elicitor answer counts after which each check is shown: evenly spread, jittered by one."""
        slots: list[int] = []
        for j in range(n_checks):
            base = round((j + 1) * expected / (n_checks + 1))
            jitter = int(_rng(self.seed, _Purpose.SCHEDULE, j).integers(-1, 2))
            slot = max(1, base + jitter, slots[-1] if slots else 1)
            slots.append(slot)
        return tuple(slots)

    # -- random draws -------------------------------------------------------------------------------------

    def swapped(self, position: int) -> bool:
        """Whether the comparison at effective ``position`` shows the elicitor's first option on the right."""
        cached = self._swaps.get(position)
        if cached is None:
            cached = _coin(self.seed, _Purpose.POSITION, position)
            self._swaps[position] = cached
        return cached

    def tie_break(self, position: int) -> bool:
        """The recorded coin for an "about the same" answer at effective ``position`` (True: first)."""
        return _coin(self.seed, _Purpose.TIE_BREAK, position)

    def _random_rates(self, rng: np.random.Generator) -> np.ndarray:
        if self.n_groups == 1:
            return _ball_point(rng, self.sphere, self.sphere.radius * BALL_MARGIN)
        return np.stack([_ball_point(rng, own, own.radius * BALL_MARGIN) for own in self.group_spheres])

    def _random_pair(
        self, purpose: _Purpose, index: int, label: str, avoid: Sequence[Query], scored: bool = False
    ) -> Query:
        """A seeded random pair whose sides display differently and unlike each of ``avoid`` (the screens
        beside it); with `fresh_screens` plainly apart from them and, if ``scored``, not decided by
        dominance."""
        rng = _rng(self.seed, purpose, index)
        drawn, batch = 0, _PAIR_BATCH
        while True:
            # The draws are judged a few at a time, all at once (the generator is drawn in the same order,
            # and what a batch draws beyond the pair taken is thrown away with it): the first usable pair
            # wins, else the last one drawn.
            size = min(batch, self._pair_draws - drawn)
            rates = np.array([self._random_rates(rng) for _ in range(2 * size)])
            pairs = self.grid.snap(rates, self.region).reshape((size, 2, *self.grid.shape))
            first, second = pairs[:, 0], pairs[:, 1]
            unusable = (self.grid.gap(first, second) == 0) | self._alike(first, second, avoid)
            if self.fresh_screens and scored:
                unusable |= self.grid.dominated(first, second)
            usable = np.flatnonzero(~unusable).tolist()
            drawn, batch = drawn + size, 2 * batch
            if usable or drawn == self._pair_draws:
                pick = usable[0] if usable else size - 1
                return Query(first=first[pick], second=second[pick], search=label, kind=label, step=index)

    def _displays_like(self, first: np.ndarray, second: np.ndarray, others: Sequence[Query]) -> bool:
        """Whether the pair displays like one of ``others`` in either order (with `fresh_screens`: within
        `FRESH_CELL_GAP` people of it)."""
        return bool(self._alike(first, second, others))

    def _alike(self, first: np.ndarray, second: np.ndarray, others: Sequence[Query]) -> np.ndarray:
        """`_displays_like` of every pair along the leading axes of ``first`` and ``second``, all at once:
        displaying alike in either order is a displayed distance of zero (`DisplayGrid.distance`)."""
        lead = np.ndim(first) - len(self.grid.shape)
        if not others:
            return np.zeros(np.shape(first)[:lead], dtype=bool)
        # The others along a new first axis, against every pair at once.
        beside = np.stack([np.stack((other.first, other.second)) for other in others])
        beside = beside.reshape((len(others), 2, *(1,) * lead, *self.grid.shape))
        distance = self.grid.distance(first, second, beside[:, 0], beside[:, 1])
        close = distance < FRESH_CELL_GAP if self.fresh_screens else distance == 0.0
        return np.asarray(close.any(axis=0))

    def side(self, default: bool, query: Query, before: LoggedAnswer | None, previous: Query | None) -> bool:
        """Whether to show ``query`` swapped after the screen ``before`` (which showed ``previous``): with
        `fresh_screens`, the way that keeps a classifier resembling one of the screen before (within
        `FRESH_CELL_GAP` people) on that one's side; otherwise, or when neither way does, ``default`` (the
        seeded coin)."""
        if not self.fresh_screens or previous is None or before is None or before.swapped is None:
            return default
        left, right = (
            (previous.second, previous.first) if before.swapped else (previous.first, previous.second)
        )
        first, second, old_right, old_left = map(
            self.grid.flat_counts, (query.first, query.second, right, left)
        )
        unit = 10**self.grid.decimals
        # Kept: first left beside the right before, second right beside the left before; turned: crossed.
        kept = min(_gap(first, old_right) / unit, _gap(second, old_left) / unit)
        turned = min(_gap(second, old_right) / unit, _gap(first, old_left) / unit)
        if min(kept, turned) >= FRESH_CELL_GAP or kept == turned:
            return default
        return bool(turned > kept)

    def practice_query(self, index: int, avoid: Sequence[Query] = ()) -> Query:
        return self._random_pair(_Purpose.PRACTICE, index, "practice", avoid)

    def evaluation_query(self, index: int, avoid: Sequence[Query] = ()) -> Query:
        return self._random_pair(_Purpose.EVALUATION, index, "evaluation", avoid, scored=True)

    def dominance_query(self, index: int, avoid: Sequence[Query] = ()) -> Query:
        """A pair whose first option shows more people right in every class and group, plainly apart from
        each of ``avoid`` if a draw is (apartness first, then strict dominance)."""
        rng = _rng(self.seed, _Purpose.DOMINANCE, index)
        k = self.sphere.n_classes
        direction = rng.uniform(DOMINANCE_MIN_COMPONENT, 1.0, size=k)
        direction /= np.linalg.norm(direction)
        share = rng.uniform(*DOMINANCE_SHIFT)
        shifts = [own.radius * share / 2.0 for own in self.group_spheres]
        # The first draw of each kind that falls short: weakly dominating and apart (3), strictly but not
        # apart (2), weakly and not apart (1).
        fallbacks: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for _ in range(self._pair_draws):
            bases = [
                _ball_point(rng, own, own.radius * BALL_MARGIN - shift)
                for own, shift in zip(self.group_spheres, shifts, strict=True)
            ]
            good = np.stack([b + shift * direction for b, shift in zip(bases, shifts, strict=True)])
            bad = np.stack([b - shift * direction for b, shift in zip(bases, shifts, strict=True)])
            if self.n_groups == 1:
                good, bad = good[0], bad[0]
            good, bad = self.grid.snap(good, self.region), self.grid.snap(bad, self.region)
            # As displayed, the better one gets more people right in every class (and group); a sphere too
            # small for that in a rare class settles for at least as many everywhere and more somewhere.
            margin = self.grid.counts(good) - self.grid.counts(bad)
            apart = not self._displays_like(good, bad, avoid)
            if np.all(margin > 0):
                if apart:
                    break
                fallbacks.setdefault(2, (good, bad))
            elif np.all(margin >= 0) and np.any(margin > 0):
                fallbacks.setdefault(3 if apart else 1, (good, bad))
        else:
            if fallbacks:
                good, bad = fallbacks[max(fallbacks)]
        return Query(first=good, second=bad, search="check", kind=CHECK_DOMINANCE, step=index)

    # -- the script ---------------------------------------------------------------------------------------

    def next_step(
        self,
        rows: Sequence[LoggedAnswer],
        elicitor_query: Query | None,
        metric: Metric | None = None,
    ) -> Step | None:
        """The step after the effective ``rows``; ``elicitor_query`` is the pending query (None: finished).

        ``metric`` is the elicited metric once the elicitor has finished: with `evaluation_precision` set,
        the evaluation ends as soon as the 95 % interval of its agreement with the answers is that tight.
        Returns None when the session is complete.
        """
        # Counted on the phase strings in C (Phase is a StrEnum): this runs over the whole log per request.
        counts = Counter(map(_PHASE_OF, rows))
        position = len(rows)
        before = rows[-1] if rows else None
        previous = _logged_query(before) if before is not None else None
        beside = () if previous is None else (previous,)
        # With `Screens.NEIGHBOURS` the plan's pairs before the elicitor's pending question avoid it too.
        around = beside
        if self.screens >= Screens.NEIGHBOURS and elicitor_query is not None:
            around = (*beside, elicitor_query)
        if counts[Phase.PRACTICE] < self.practice_queries:
            index = counts[Phase.PRACTICE]
            query = self.practice_query(index, around if index == self.practice_queries - 1 else beside)
            swapped = self.side(self.swapped(position), query, before, previous)
            return Step(Phase.PRACTICE, index, query, swapped)
        checks_done = counts[Phase.CHECK]
        elicited = counts[Phase.ELICITATION]
        check_due = checks_done < self.n_checks and (
            elicitor_query is None or self.check_slots[checks_done] <= elicited
        )
        if check_due and elicited > 0:
            elicitation_rows = [row for row in rows if row.phase == Phase.ELICITATION]
            # A repeat never repeats the screen just before it (it would look like a lost click); with
            # nothing else to repeat it waits for the next question, unless the questions are over.
            if rows[-1].phase == Phase.ELICITATION and (
                len(elicitation_rows) > 1 or elicitor_query is not None
            ):
                elicitation_rows = elicitation_rows[:-1]
            if elicitation_rows or self.check_kinds[checks_done] == CHECK_DOMINANCE:
                neighbours = around if self.screens >= Screens.NEIGHBOURS else ()
                step = self._check_step(checks_done, position, elicitation_rows, neighbours)
                return replace(step, swapped=self.side(step.swapped, step.query, before, previous))
        if elicitor_query is not None:
            swapped = self.side(self.swapped(position), elicitor_query, before, previous)
            return Step(Phase.ELICITATION, elicited, elicitor_query, swapped)
        if counts[Phase.EVALUATION] < self.evaluation_queries and not self._evaluation_settled(rows, metric):
            index = counts[Phase.EVALUATION]
            query = self.evaluation_query(index, beside)
            swapped = self.side(self.swapped(position), query, before, previous)
            return Step(Phase.EVALUATION, index, query, swapped)
        self._verdicts.clear()
        return None

    def _evaluation_settled(self, rows: Sequence[LoggedAnswer], metric: Metric | None) -> bool:
        """True once enough evaluation pairs pin the elicited metric's agreement to `evaluation_precision`."""
        if metric is None or self.evaluation_precision is None:
            return False
        return _settled(*evaluation_agreement(rows, metric, self._verdict), self.evaluation_precision)

    def evaluation_progress(
        self, rows: Sequence[LoggedAnswer], metric: Metric | None
    ) -> tuple[int, int, int]:
        """`evaluation_progress` of ``rows``, each evaluation answer judged once per row and metric object
        (every answer of the final comparisons judges them all again)."""
        return evaluation_progress(rows, metric, self._verdict)

    def _verdict(self, row: LoggedAnswer, metric: Metric) -> bool | None:
        """`_verdict`, memoised by the row object (and checked to be the same row and metric objects)."""
        noted = self._verdicts.get(id(row))
        if noted is not None and noted[0] is row and noted[1] is metric:
            return noted[2]
        verdict = _verdict(row, metric)
        if len(self._verdicts) > 2 * self.evaluation_queries:
            self._verdicts.clear()  # many answers undone: keep those of the log as it stands
        self._verdicts[id(row)] = (row, metric, verdict)
        return verdict

    def _check_step(
        self,
        index: int,
        position: int,
        elicitation_rows: Sequence[LoggedAnswer],
        neighbours: Sequence[Query],
    ) -> Step:
        """Check ``index``: a dominance pair, or a repeat of one of ``elicitation_rows``; either plainly
        apart from each of ``neighbours`` (the screens beside it) where a pair or a question to repeat is."""
        kind = self.check_kinds[index]
        if kind == CHECK_DOMINANCE:
            return Step(
                Phase.CHECK,
                index,
                self.dominance_query(index, neighbours),
                self.swapped(position),
                check={"type": CHECK_DOMINANCE, "expected": Choice.FIRST.value},
            )
        apart = self._unlike(elicitation_rows, neighbours)
        candidates = apart or elicitation_rows
        pick = int(_rng(self.seed, _Purpose.REPEAT, index).integers(0, len(candidates)))
        original = candidates[pick]
        if original.query is None or original.preferred is None or original.swapped is None:
            raise ValueError(f"log row {original.seq} lacks the query or answer a repeat check needs")
        query = decode_query(original.query)
        query = Query(first=query.first, second=query.second, search="check", kind=CHECK_REPEAT, step=index)
        expected = elicitor_choice(original.preferred, original.swapped)
        return Step(
            Phase.CHECK,
            index,
            query,
            not original.swapped,
            check={"type": CHECK_REPEAT, "of_seq": original.seq, "expected": expected.value},
        )

    def _unlike(self, rows: Sequence[LoggedAnswer], others: Sequence[Query]) -> list[LoggedAnswer]:
        """The ``rows`` whose logged question does not display like one of ``others`` (`_displays_like`; a
        row without one counts as unlike), all judged at once."""
        if not others:
            return list(rows)
        queries = [_logged_query(row) for row in rows]
        shown = [query for query in queries if query is not None]
        if not shown:
            return list(rows)
        alike = iter(
            self._alike(
                np.stack([query.first for query in shown]),
                np.stack([query.second for query in shown]),
                others,
            ).tolist()
        )
        return [row for row, query in zip(rows, queries, strict=True) if query is None or not next(alike)]

    def evaluation_bounds(self) -> tuple[int, int]:
        """The fewest and the most evaluation pairs a session asks (the fewest: every answer agreeing)."""
        limit = self.evaluation_queries
        if self.evaluation_precision is None:
            return limit, limit
        precision = self.evaluation_precision
        return next((n for n in range(1, limit + 1) if _settled(n, n, precision)), limit), limit

    def estimated_total(
        self,
        answered_elicitor: int,
        elicitor_total: int,
        finished: bool,
        evaluation: tuple[int, int, int] = (0, 0, 0),
    ) -> int:
        """Comparisons in the session: practice + elicitor (estimate or actual) + checks + evaluation pairs
        (those asked, ``evaluation[2]``, and those still expected, `evaluation_left` of ``evaluation``).
        The one count a participant is told, on the consent page, the question page and in the API."""
        elicitor = answered_elicitor if finished else max(elicitor_total, answered_elicitor + 1)
        return self.practice_queries + elicitor + self.n_checks + evaluation[2] + self._left(evaluation)

    def _left(self, evaluation: tuple[int, int, int]) -> int:
        """The evaluation pairs still expected (`evaluation_left`), in whole comparisons."""
        return round(evaluation_left(*evaluation, self.evaluation_queries, self.evaluation_precision))

    def sections(
        self,
        rows: Sequence[LoggedAnswer],
        elicitor_total: int,
        finished: bool,
        step: Step | None,
        evaluation: tuple[int, int, int] = (0, 0, 0),
    ) -> list[Section]:
        """The session's parts for the progress display: practice, the questions (checks included, they are
        not announced as different), and the last comparisons (as many as `estimated_total` expects);
        ``current`` marks where ``step`` is."""
        counts = Counter(map(_PHASE_OF, rows))
        elicited = counts[Phase.ELICITATION]
        questions_total = (elicited if finished else max(elicitor_total, elicited + 1)) + self.n_checks
        phase = step.phase if step is not None else None
        final_total = counts[Phase.EVALUATION] + self._left(evaluation) if step is not None else 0
        parts = [
            Section(
                "practice",
                N_("Practice"),
                counts[Phase.PRACTICE],
                self.practice_queries,
                phase is Phase.PRACTICE,
            ),
            Section(
                "questions",
                N_("Questions"),
                elicited + counts[Phase.CHECK],
                questions_total,
                phase in (Phase.ELICITATION, Phase.CHECK),
            ),
            Section(
                "final",
                N_("Last comparisons"),
                counts[Phase.EVALUATION],
                max(final_total, counts[Phase.EVALUATION]),
                phase is Phase.EVALUATION,
            ),
        ]
        return [part for part in parts if part.total > 0]


def _gap(counts: list[int], others: list[int]) -> int:
    """How far one side looks from another, in display steps: the largest difference of a count."""
    return max(abs(count - other) for count, other in zip(counts, others, strict=True))


def _logged_query(row: LoggedAnswer) -> Query | None:
    """The pair a log row showed (None for a row without one)."""
    return None if row.query is None else decode_query(row.query)


def _verdict(row: LoggedAnswer, metric: Metric) -> bool | None:
    """Whether ``metric`` picks what the person did on an evaluation answer; None for any other row, and
    for an answer "about the same" or without its query (left out, as in the reported measure M)."""
    if row.phase != Phase.EVALUATION or row.preferred is None or row.swapped is None:
        return None
    choice = elicitor_choice(row.preferred, row.swapped)
    query = _logged_query(row)
    if choice is Choice.TIE or query is None:
        return None
    return metric.prefers(query.first, query.second) == (choice is Choice.FIRST)


def evaluation_agreement(
    rows: Sequence[LoggedAnswer],
    metric: Metric,
    verdict: Callable[[LoggedAnswer, Metric], bool | None] = _verdict,
) -> tuple[int, int]:
    """(agreed, decided) over the logged evaluation answers: how often ``metric`` picks what the person did
    (``verdict`` of each row: `_verdict`, or a plan's memo of it).

    "About the same" answers are left out, as in the reported measure M.
    """
    verdicts = [
        judged
        for row in rows
        if row.phase == Phase.EVALUATION and (judged := verdict(row, metric)) is not None
    ]
    return sum(verdicts), len(verdicts)


def evaluation_progress(
    rows: Sequence[LoggedAnswer],
    metric: Metric | None,
    verdict: Callable[[LoggedAnswer, Metric], bool | None] = _verdict,
) -> tuple[int, int, int]:
    """(agreed, decided, asked) of the evaluation pairs in ``rows``, as `SessionPlan.estimated_total`
    takes them; without the elicited metric (or the rows' queries) the answers so far count as agreeing,
    which is what an evaluation still under way most likely means."""
    asked = list(map(_PHASE_OF, rows)).count(Phase.EVALUATION)
    if metric is None or asked == 0:
        return asked, asked, asked
    agreed, decided = evaluation_agreement(rows, metric, verdict)
    return agreed, decided, asked
