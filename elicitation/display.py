"""What a person sees of a query: whole people out of 100 per group, and the rates that picture shows.

Theory of operation
-------------------
A participant reads each classifier as a confusion matrix of 100 people (per group). The number of people
of true class ``i`` is fixed by the priors, ``N_i = 100 P(Y = i)`` apportioned to whole people so that the
classes add up to 100; the classifier gets ``n_i`` of them right. What the person sees of a rate vector is
therefore the rate ``n_i / N_i``: the *display grid*. Queries off the grid are rounded by the chart, so an
elicitor that updates on the exact rates learns from a pair the person never saw, and two exact queries
that round to the same picture ask the same question twice.

`DisplayGrid` makes the grid explicit: `DisplayGrid.snap` moves rates to the nearest displayable rates
inside the query sphere, so a query built from snapped rates is exactly what the chart shows (the web
app's rounding draws grid rates without changing them, ``tests/app/test_displayed.py``), and
`DisplayGrid.counts` gives the people a person reads. `shown` wraps any elicitor so that every query it
yields is the displayed one. A search step whose displayed pair would be identical is refused, and the
search ends with the bracket it has (its tolerance is then what the display can show, not its own
``epsilon``); a pair the person has already answered (in either order) is answered from what they said
instead of being asked again.

Symbols
-------
=================  ==========================================================
paper              code
=================  ==========================================================
``r``, ``r^g``     rates (``(k,)`` or ``(m, k)``)
``o``, ``rho``     ``sphere.center``, ``sphere.radius``
``N_i``            ``DisplayGrid.totals`` (people of class ``i`` out of 100)
=================  ==========================================================
"""

from __future__ import annotations

import array
import functools
import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import InvalidConfigError
from .types import (
    Elicitation,
    Elicitor,
    FloatArray,
    ImperceptibleError,
    Query,
    SearchStep,
    Sphere,
    as_rate_array,
    ask,
)

__all__ = [
    "DISPLAY_DECIMALS",
    "DISPLAY_TOTAL",
    "DisplayGrid",
    "DisplayedElicitor",
    "DisplayedSpace",
    "apportion",
    "apportion_units",
    "displayed",
    "float_sum",
    "shown",
]

#: People per (group's) confusion matrix shown to a participant.
DISPLAY_TOTAL = 100
#: Decimal places a chart may use for counts: whole people first (as in the paper's user study).
DISPLAY_DECIMALS: tuple[int, ...] = (0, 1, 2)
#: Float noise tolerated when flooring values to display units, and digits kept when ranking remainders.
_UNIT_SLACK = 1e-9
_REMAINDER_DIGITS = 9
#: Snapped points stay this much (relative to the radius) inside the sphere, so they are strictly feasible.
_INSIDE = 1.0 - 1e-9
#: Rounds of pulling a point towards the centre before its snapped image is inside the sphere.
_SNAP_ROUNDS = 64
#: numpy's pairwise summation: terms added one by one below this many, into 8 partial sums up to
#: ``_PAIRWISE_BLOCK`` terms, halves beyond (``numpy/_core/src/umath/loops_utils.h.src``).
_PAIRWISE_UNROLL = 8
_PAIRWISE_BLOCK = 128


def apportion(values: npt.ArrayLike, total_units: int) -> FloatArray:
    """Largest-remainder rounding of non-negative ``values`` to whole units summing to ``total_units``.

    Remainders are compared after rounding away float noise and ties go to the earlier entry (a stable
    sort), so equal inputs always round the same way.
    """
    entries: list[float] = np.asarray(values, dtype=np.float64).tolist()
    return np.array(apportion_units(entries, total_units), dtype=np.float64)


def apportion_units(values: Sequence[float], total_units: int) -> list[int]:
    """`apportion` of a few Python floats, as whole numbers: a question's charts apportion a dozen vectors
    of two to four entries, for which array operations cost several times the arithmetic (the same IEEE
    operations on floats)."""
    floors = [math.floor(value + _UNIT_SLACK) for value in values]
    shortfall = round(total_units - sum(floors))
    if shortfall:
        # ``numpy.round(remainder, _REMAINDER_DIGITS)`` is ``rint(remainder * 10**digits) / 10**digits``;
        # the division keeps distinct values distinct and their order, so the integers rank alike.
        scale = 10.0**_REMAINDER_DIGITS
        remainders = [round((value - whole) * scale) for value, whole in zip(values, floors, strict=True)]
        indices = range(len(floors))
        if shortfall > 0:
            for index in sorted(indices, key=lambda index: -remainders[index])[:shortfall]:
                floors[index] += 1
        else:
            positive = [index for index in sorted(indices, key=remainders.__getitem__) if floors[index] > 0]
            for index in positive[:-shortfall]:
                floors[index] -= 1
    return floors


def float_sum(values: Sequence[float]) -> float:
    """The sum of a few Python floats exactly as numpy sums them as one contiguous run (``array.sum()``, or a
    row's ``sum(axis=-1)``): the same additions in the same order from numpy's initial ``0.0``, so the same
    bits, without the array calls that cost more than the arithmetic on a display's handful of counts."""
    count = len(values)
    if count < _PAIRWISE_UNROLL:
        total = 0.0
        for value in values:
            total += value
        return total
    if count <= _PAIRWISE_BLOCK:
        partial = list(values[:_PAIRWISE_UNROLL])
        end = count - count % _PAIRWISE_UNROLL
        for start in range(_PAIRWISE_UNROLL, end, _PAIRWISE_UNROLL):
            for lane in range(_PAIRWISE_UNROLL):
                partial[lane] += values[start + lane]
        total = 0.0 + (
            ((partial[0] + partial[1]) + (partial[2] + partial[3]))
            + ((partial[4] + partial[5]) + (partial[6] + partial[7]))
        )
        for value in values[end:]:
            total += value
        return total
    half = count // 2
    half -= half % _PAIRWISE_UNROLL
    return float_sum(values[:half]) + float_sum(values[half:])


def _row_units(row: list[float], sizes: list[int]) -> list[int]:
    """`DisplayGrid.counts` of rates given as Python floats with their class sizes: ``floor(r * size + 0.5)``
    each, the same integers as the array arithmetic."""
    return [math.floor(value * size + 0.5) for value, size in zip(row, sizes, strict=True)]


@dataclass(frozen=True, eq=False)
class DisplayGrid:
    """The rates a chart can show: ``r_i = n_i / N_i`` with ``N_i`` people of class ``i`` of 100.

    ``n_i`` is a whole number of people, or with ``decimals = 1`` of tenths of a person: the chart then
    writes counts with one decimal, and searches whose steps are finer than a person can still be shown
    exactly.

    Attributes
    ----------
    totals : numpy.ndarray, shape (n_groups, n_classes)
        People of each class out of `DISPLAY_TOTAL` (per group), as the chart shows them.
    decimals : int
        Decimals of the counts shown, one of `DISPLAY_DECIMALS`; `counts`, `key` and `gap` are in these
        steps (people, or tenths of a person).
    steps : numpy.ndarray or None
        Class sizes in those steps, as the chart apportions them at that precision (a class of 88.6
        people is 886 tenths, not 890); default ``totals * 10**decimals``.
    """

    totals: npt.NDArray[np.int64]
    decimals: int = 0
    steps: npt.NDArray[np.int64] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.decimals not in DISPLAY_DECIMALS:
            raise InvalidConfigError(f"decimals must be one of {DISPLAY_DECIMALS}, got {self.decimals!r}")
        totals = np.array(self.totals, dtype=np.int64)
        if totals.ndim != 2 or totals.shape[1] < 2 or np.any(totals < 0):
            raise InvalidConfigError(f"totals must be (n_groups, n_classes) counts, got {totals.tolist()}")
        if np.any(totals.sum(axis=1) != DISPLAY_TOTAL):
            raise InvalidConfigError(f"each group's totals must add up to {DISPLAY_TOTAL}")
        if np.any(totals == 0):
            raise InvalidConfigError(
                f"a class has fewer than one person in {DISPLAY_TOTAL} (priors {totals.tolist()}); "
                "its rates cannot be shown"
            )
        totals.setflags(write=False)
        object.__setattr__(self, "totals", totals)
        unit = 10**self.decimals
        steps = totals * unit if self.steps is None else np.array(self.steps, dtype=np.int64)
        if (
            steps.shape != totals.shape
            or np.any(steps <= 0)
            or np.any(steps.sum(axis=1) != DISPLAY_TOTAL * unit)
        ):
            raise InvalidConfigError(
                f"steps must be positive class sizes adding up to {DISPLAY_TOTAL * unit}"
            )
        steps.setflags(write=False)
        object.__setattr__(self, "steps", steps)

    @classmethod
    def from_priors(cls, priors: npt.ArrayLike, decimals: int = 0) -> DisplayGrid:
        """The grid of class priors ``(n_classes,)`` or ``(n_groups, n_classes)``, counts to ``decimals``."""
        if decimals not in DISPLAY_DECIMALS:
            raise InvalidConfigError(f"decimals must be one of {DISPLAY_DECIMALS}, got {decimals!r}")
        array = np.atleast_2d(as_rate_array(priors, "priors"))
        shares = array / array.sum(axis=1, keepdims=True)
        rows = [apportion(row * DISPLAY_TOTAL, DISPLAY_TOTAL) for row in shares]
        units = DISPLAY_TOTAL * 10**decimals
        steps = [apportion(row * units, units) for row in shares]
        return cls(np.array(rows, dtype=np.int64), decimals, np.array(steps, dtype=np.int64))

    @property
    def class_steps(self) -> npt.NDArray[np.int64]:
        """Class sizes in display steps (``(n_groups, n_classes)``): people, or tenths of a person."""
        assert self.steps is not None  # filled in by __post_init__
        return self.steps

    @functools.cached_property
    def _class_sizes(self) -> list[list[int]]:
        """`class_steps` as Python integers, one row per group (`shown_pair`'s arithmetic)."""
        sizes: list[list[int]] = self.class_steps.tolist()
        return sizes

    @functools.cached_property
    def _flat_class_sizes(self) -> list[int]:
        """`_class_sizes` with every group's in a row (`flat_counts`)."""
        return [size for sizes in self._class_sizes for size in sizes]

    @functools.cached_property
    def _step(self) -> float:
        """Length of one display step in every class at once, at the smallest class sizes (`snap`'s pull)."""
        return float(np.linalg.norm(1.0 / self.class_steps.min(axis=0)))

    @property
    def n_groups(self) -> int:
        return int(self.totals.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.totals.shape[1])

    @functools.cached_property
    def shape(self) -> tuple[int, ...]:
        """Shape of one rate array: ``(n_classes,)`` or ``(n_groups, n_classes)``."""
        return (self.n_classes,) if self.n_groups == 1 else (self.n_groups, self.n_classes)

    def _rows(self, rates: npt.ArrayLike) -> tuple[FloatArray, tuple[int, ...]]:
        array = np.asarray(rates, dtype=np.float64)
        if array.shape[-len(self.shape) :] != self.shape:
            raise InvalidConfigError(f"rates must end with shape {self.shape}, got {array.shape}")
        return array.reshape((-1, self.n_groups, self.n_classes)), array.shape

    def counts(self, rates: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """People of each class a classifier gets right, as shown, in display steps (``rates``' shape)."""
        rows, shape = self._rows(rates)
        counts = np.floor(rows * self.class_steps + 0.5).astype(np.int64)
        result: npt.NDArray[np.int64] = counts.reshape(shape)
        return result

    def flat_counts(self, rates: FloatArray) -> list[int]:
        """`counts` of one classifier's rates (this grid's shape), flattened, on Python floats: the same
        integers without the array calls, which cost far more than the arithmetic on a handful of rates."""
        if rates.shape != self.shape:
            raise InvalidConfigError(f"rates must have shape {self.shape}, got {rates.shape}")
        return _row_units(rates.ravel().tolist(), self._flat_class_sizes)

    def snap(self, rates: npt.ArrayLike, sphere: Sphere | Sequence[Sphere]) -> FloatArray:
        """The displayable rates nearest to ``rates`` inside ``sphere`` (any leading axes; each row inside).

        ``sphere`` is one sphere for every group, or one per group (``r^g`` inside the ``g``-th). A point
        whose nearest grid point leaves its sphere is pulled towards the centre until it does not, so
        snapping never leaves the query region (nor, for a dataset, the feasible set).

        Raises
        ------
        InvalidConfigError
            If a sphere is too small to hold a single displayable point.
        """
        rows, shape = self._rows(rates)
        spheres = self._spheres(sphere)
        flat = rows.reshape((-1, self.n_classes)).copy()
        # One group: its class sizes broadcast over the rows; several: one row of sizes per rate row.
        totals: npt.NDArray[np.int64] = (
            self.class_steps[0]
            if self.n_groups == 1
            else np.broadcast_to(self.class_steps, rows.shape).reshape((-1, self.n_classes))
        )
        if len(spheres) == 1:
            center: FloatArray = spheres[0].center
            limit: FloatArray | float = spheres[0].radius * _INSIDE
        else:
            centers = np.stack([own.center for own in spheres])
            center = np.broadcast_to(centers, rows.shape).reshape(flat.shape)
            radii = np.array([own.radius for own in spheres]) * _INSIDE
            limit = np.broadcast_to(radii, rows.shape[:-1]).reshape(-1)
        snapped = np.floor(flat * totals + 0.5) / totals
        # Only the rows still outside are pulled in and snapped again (by index: the others never change).
        pending = (_lengths(snapped - center) > limit).nonzero()[0]
        for _ in range(_SNAP_ROUNDS):
            if pending.size == 0:
                break
            own_center = center if len(spheres) == 1 else center[pending]
            own_totals = totals if self.n_groups == 1 else totals[pending]
            offset = flat[pending] - own_center
            length = _lengths(offset)[:, np.newaxis]
            shrink = np.clip(1.0 - 0.5 * self._step / np.maximum(length, 1e-300), 0.0, None)
            moved = own_center + offset * shrink
            flat[pending] = moved
            resnapped = np.floor(moved * own_totals + 0.5) / own_totals
            snapped[pending] = resnapped
            own_limit = limit if isinstance(limit, float) else limit[pending]
            pending = pending[_lengths(resnapped - own_center) > own_limit]
        outside = pending.size > 0
        if outside:
            radius = min(own.radius for own in spheres)
            raise InvalidConfigError(
                f"no rate whole people can show lies within radius {radius:g} of the centre; "
                "use a larger sphere"
            )
        result: FloatArray = snapped.reshape(shape)
        return result

    def shown_pair(
        self, first: FloatArray, second: FloatArray, sphere: Sphere
    ) -> tuple[FloatArray, FloatArray, bytes, bytes]:
        """A query's two sides as shown, `snap` of each inside ``sphere`` (read-only), and `keys` of them.

        `shown` asks this of every step of a search: two rate vectors, for which array calls cost several
        times the arithmetic. So each row is snapped, pulled in and counted on Python floats, by the same
        operations in the same order as `snap` and `counts` (`float_sum` for the lengths): the same bits.
        """
        if first.shape != self.shape or second.shape != self.shape:
            return self._shown_by_arrays(first, second, sphere)
        center: list[float] = sphere.center.tolist()
        limit = sphere.radius * _INSIDE
        groups = self._class_sizes
        sides = []
        counts: list[int] = []
        for rates in (first, second):
            rows = rates.tolist() if len(groups) > 1 else [rates.tolist()]
            shown_rows = []
            for row, sizes in zip(rows, groups, strict=True):
                snapped = self._snapped_row(row, sizes, center, limit)
                if snapped is None:
                    return self._shown_by_arrays(first, second, sphere)  # raises snap's error
                # `counts` of a snapped rate ``n / size`` is its ``n`` (a product within an ulp or two of it).
                counts += snapped[0]
                shown_rows.append(snapped[1])
            side = np.array(shown_rows if len(groups) > 1 else shown_rows[0], dtype=np.float64)
            side.setflags(write=False)
            sides.append(side)
        half = len(counts) // 2
        one, two = array.array("q", counts[:half]).tobytes(), array.array("q", counts[half:]).tobytes()
        return sides[0], sides[1], one + b"|" + two, two + b"|" + one

    def _shown_by_arrays(
        self, first: FloatArray, second: FloatArray, sphere: Sphere
    ) -> tuple[FloatArray, FloatArray, bytes, bytes]:
        """`shown_pair` by `snap` and `keys` themselves."""
        snapped_first, snapped_second = self.snap(np.stack((first, second)), sphere)
        return snapped_first, snapped_second, *self.keys(snapped_first, snapped_second)

    def _snapped_row(
        self, row: list[float], sizes: list[int], center: list[float], limit: float
    ) -> tuple[list[int], list[float]] | None:
        """One row of `snap` (one group's rates, that group's class sizes) as display steps and rates, None
        where `snap` gives up."""
        for _ in range(_SNAP_ROUNDS + 1):
            units = _row_units(row, sizes)
            snapped = [whole / size for whole, size in zip(units, sizes, strict=True)]
            if _row_length(snapped, center) <= limit:
                return units, snapped
            shrink = max(1.0 - 0.5 * self._step / max(_row_length(row, center), 1e-300), 0.0)
            row = [middle + (value - middle) * shrink for value, middle in zip(row, center, strict=True)]
        return None

    def _spheres(self, sphere: Sphere | Sequence[Sphere]) -> tuple[Sphere, ...]:
        """One sphere for all groups, or one per group (checked)."""
        if isinstance(sphere, Sphere):
            return (sphere,)
        spheres = tuple(sphere)
        if len(spheres) != self.n_groups or not all(isinstance(own, Sphere) for own in spheres):
            raise InvalidConfigError(f"give one sphere or one per group ({self.n_groups}), got {sphere!r}")
        if any(own.n_classes != self.n_classes for own in spheres):
            raise InvalidConfigError(f"every sphere must have {self.n_classes} classes")
        return spheres

    def check_sphere(self, sphere: Sphere | Sequence[Sphere]) -> None:
        """Raise `InvalidConfigError` unless the sphere(s) hold displayable points (each centre snaps in)."""
        spheres = self._spheres(sphere)
        if len(spheres) == 1:
            self.snap(np.broadcast_to(spheres[0].center, self.shape), spheres[0])
        else:
            self.snap(np.stack([own.center for own in spheres]).reshape(self.shape), spheres)

    def key(self, first: npt.ArrayLike, second: npt.ArrayLike) -> bytes:
        """A hashable picture of the ordered pair as displayed (the people each classifier gets right)."""
        return self.counts(first).tobytes() + b"|" + self.counts(second).tobytes()

    def keys(self, first: npt.ArrayLike, second: npt.ArrayLike) -> tuple[bytes, bytes]:
        """`key` of the pair in both orders, ``(first, second)`` then ``(second, first)``, each side counted
        once."""
        one, two = self.counts(np.stack((np.asarray(first), np.asarray(second))))
        return one.tobytes() + b"|" + two.tobytes(), two.tobytes() + b"|" + one.tobytes()

    def same(self, first: npt.ArrayLike, second: npt.ArrayLike) -> bool:
        """True when the two rate arrays display identically."""
        return bool(np.array_equal(self.counts(first), self.counts(second)))

    def dominated(self, first: npt.ArrayLike, second: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """Per pair: one side shows at least as many people right in every class (and group) and more in
        one, so any sensible person prefers it whatever they weigh."""
        difference = self.counts(first) - self.counts(second)
        axes = tuple(range(difference.ndim - len(self.shape), difference.ndim))
        result: npt.NDArray[np.bool_] = (
            np.all(difference >= 0, axis=axes) & np.any(difference > 0, axis=axes)
        ) | (np.all(difference <= 0, axis=axes) & np.any(difference < 0, axis=axes))
        return result

    def distance(
        self,
        first: npt.ArrayLike,
        second: npt.ArrayLike,
        other_first: npt.ArrayLike,
        other_second: npt.ArrayLike,
    ) -> npt.NDArray[np.float64]:
        """Per pair: how far it looks from the pair ``(other_first, other_second)``, in people: the largest
        difference of any displayed count, in the closer of the two orders of its sides (the leading axes of
        either pair broadcast against the other's)."""
        one, two = self.counts(first), self.counts(second)
        before1, before2 = self.counts(other_first), self.counts(other_second)
        axes = tuple(range(-len(self.shape), 0))
        same = np.maximum(np.max(np.abs(one - before1), axis=axes), np.max(np.abs(two - before2), axis=axes))
        swapped = np.maximum(
            np.max(np.abs(one - before2), axis=axes), np.max(np.abs(two - before1), axis=axes)
        )
        result: npt.NDArray[np.float64] = np.minimum(same, swapped) / float(10**self.decimals)
        return result

    def gap(self, first: npt.ArrayLike, second: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Largest difference in correctly classified people (any class and group) per pair, in steps."""
        difference = np.abs(self.counts(first) - self.counts(second))
        axes = tuple(range(difference.ndim - len(self.shape), difference.ndim))
        result: npt.NDArray[np.int64] = np.max(difference, axis=axes)
        return result


def _lengths(rows: FloatArray) -> FloatArray:
    """The length of each row, as ``numpy.linalg.norm(rows, axis=1)`` computes it (the same square, sum and
    root) without its argument handling, which costs more than the arithmetic on a few rows."""
    result: FloatArray = np.sqrt(np.add.reduce(rows * rows, axis=1))
    return result


def _row_length(row: list[float], center: list[float]) -> float:
    """`_lengths` of one row's offset from ``center``, on Python floats."""
    squares = [(value - middle) * (value - middle) for value, middle in zip(row, center, strict=True)]
    return math.sqrt(float_sum(squares))


class DisplayedElicitor(Elicitor[Elicitation[Any]]):
    """An elicitor whose queries are the displayed ones; other attributes come from the wrapped elicitor."""

    def __init__(self, inner: Elicitor[Elicitation[Any]], grid: DisplayGrid, sphere: Sphere) -> None:
        super().__init__(_shown_steps(inner, grid, sphere), name=inner.name, max_queries=inner.max_queries)
        self.inner = inner
        self.grid = grid

    def __getattr__(self, name: str) -> Any:
        # Live progress (expected_remaining, current_metric, ...) is the wrapped elicitor's.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def _shown_steps(
    inner: Elicitor[Elicitation[Any]], grid: DisplayGrid, sphere: Sphere
) -> Generator[Query, bool, Elicitation[Any]]:
    answered: dict[bytes, bool] = {}
    skipped = {"identical": 0, "repeated": 0, "ended": 0}
    try:
        query = next(inner)
        while True:
            # Both sides snapped and counted, the pair's key read both ways.
            first, second, key, reverse = grid.shown_pair(query.first, query.second, sphere)
            if key == reverse and isinstance(query, SearchStep):
                # The search has reached what the chart can show: it ends here with the bracket it has.
                skipped["ended"] += 1
                query = inner.throw(ImperceptibleError())
                continue
            if key == reverse:
                # Nothing to choose between as displayed, outside a search that can stop: any answer is as
                # good as the person's, and "first" keeps the elicitor deterministic.
                skipped["identical"] += 1
                answer = True
            elif key in answered or reverse in answered:
                skipped["repeated"] += 1
                answer = answered[key] if key in answered else not answered[reverse]
            else:
                shown_query = Query(
                    first,
                    second,
                    search=query.search,
                    kind=query.kind,
                    coordinate=query.coordinate,
                    step=query.step,
                )
                answer = yield from ask(shown_query)
                answered[key] = answer
            query = inner.send(answer)
    except StopIteration as stop:
        result: Elicitation[Any] = stop.value
    details = {**result.details, "display_skipped": dict(skipped), "inner_queries": result.num_queries}
    return replace(result, num_queries=len(answered), details=details)


def shown(elicitor: Elicitor[Elicitation[Any]], grid: DisplayGrid, sphere: Sphere) -> DisplayedElicitor:
    """Wrap ``elicitor`` so that every yielded query is displayable and perceptibly new.

    Parameters
    ----------
    elicitor : Elicitor
        A fresh elicitor (not started) whose queries lie in ``sphere``.
    grid : DisplayGrid
        The study's display grid (`DisplayGrid.from_priors` of the query space's priors).
    sphere : Sphere
        The query sphere; snapped queries stay inside it.

    Returns
    -------
    DisplayedElicitor
        Yields each query snapped to the grid. A search step (`elicitation.types.SearchStep`) whose two
        sides display identically is refused (`elicitation.types.ImperceptibleError`): that search ends with
        the bracket it has. Any other query displaying identically is answered "first" without asking
        (the person could not tell the sides apart); a step displaying a pair already answered, in either
        order, gets that answer. The result counts only the questions shown (``details["display_skipped"]``
        counts the others by reason, ``details["inner_queries"]`` the steps answered).

    Raises
    ------
    InvalidConfigError
        If the sphere holds no displayable point.

    Notes
    -----
    Never asks more questions than the wrapped elicitor; each step costs one snap (``O(k m)``).
    """
    grid.check_sphere(sphere)
    return DisplayedElicitor(elicitor, grid, sphere)


@dataclass(frozen=True, eq=False)
class DisplayedSpace:
    """A query space together with the grid its charts show; everything else is the wrapped space's.

    Elicitors that choose their own queries (the active ones) read ``display`` and snap their candidates
    to it, and ``fresh_screens`` for whether each question must look plainly new; others ignore both and
    are wrapped by `shown`.
    """

    space: Any
    display: DisplayGrid
    fresh_screens: bool = False

    def __getattr__(self, name: str) -> Any:
        if name in ("space", "display", "fresh_screens"):
            raise AttributeError(name)
        return getattr(self.space, name)


def displayed(
    build: Callable[[Any], Elicitor[Elicitation[Any]]],
    space: Any,
    decimals: int = 0,
    *,
    fresh_screens: bool = False,
) -> Elicitor[Elicitation[Any]]:
    """Build an elicitor whose every query is displayed as asked and perceptibly new.

    ``build(space)`` makes the elicitor from a query space (``sphere``, ``priors``, ...); it receives a
    `DisplayedSpace`. An elicitor that adopted the grid (its ``display`` attribute is that grid) already
    asks displayed queries; any other is wrapped by `shown`. ``decimals``: the counts' decimals on the
    charts (whole people by default; 1 for searches that need tenths of a person). ``fresh_screens``: the
    elicitors that choose their own queries also keep each question plainly apart from the one before
    (`elicitation.active.active_elicitor`).
    """
    grid = DisplayGrid.from_priors(space.priors, decimals)
    elicitor = build(DisplayedSpace(space, grid, fresh_screens))
    if getattr(elicitor, "display", None) is grid:
        return elicitor
    return shown(elicitor, grid, space.sphere)
