"""A revealed metric in plain words: what a mistake on one person of each class costs, per person and rate.

The paper's metrics score a classifier by its rates ``r_i``, the share of class-``i`` people it decides
correctly (0 to 1). Among ``N`` people with class shares ``pi``, deciding one more class-``i`` person
correctly raises ``r_i`` by ``1 / (N pi_i)``, so near a classifier ``r0`` the score moves by
``g_i / (N pi_i)`` with ``g`` the metric's weight per unit rate there (its gradient; ``a`` for a linear
metric, ``a + B r0`` for a quadratic one). Classes therefore compare as ``g_i / g_j`` per rate but as
``(g_i / pi_i) / (g_j / pi_j)`` per person, which is what a reader hears in "matters twice as much"; the
words below give both and name them.

Curvature (quadratic metrics) makes ``g`` depend on where the classifier is. Across the study's query
region (its centre ``r0`` and radius) the per-person ratio of each class to the cheapest one is measured
on `REGION_DIRECTIONS` points of the boundary; when none moves by more than `CURVATURE_NEGLIGIBLE` of
its value at ``r0`` the curvature is left out (and the page says so, with the threshold), else it is
said in words with the range. Active elicitors keep a posterior sample: credible intervals of the
per-person ratios and of the trade-off come from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from elicitation import FairQuadraticMetric, LinearMetric, Metric
from elicitation.posterior import sym_from_vec

from .charts.common import display_name, fmt
from .i18n import ENGLISH, Translator

__all__ = [
    "CURVATURE_NEGLIGIBLE",
    "PEOPLE",
    "SETTLED_LAM_WIDTH",
    "SETTLED_RATIO_FACTOR",
    "ClassCost",
    "MetricWords",
    "Reading",
    "curved_words",
    "fair_words",
    "linear_words",
    "person_word",
    "reading_for",
    "settled_lam",
    "settled_ratio",
    "singular",
]

#: The questions show classifiers applied to this many people (per group in fairness studies).
PEOPLE = 100
#: Curvature is left out when no class's per-person cost ratio moves by more than this share across the
#: study's query region (stated on the page).
CURVATURE_NEGLIGIBLE = 0.10
#: Boundary points of the query region on which the curvature's effect is measured (fixed seed).
REGION_DIRECTIONS = 256
_REGION_SEED = 20221
#: Per-person ratios closer to one than this read as "about the same".
SAME_RATIO = 1.15
#: A weight below this share of the largest one counts as "hardly mattered".
NEGLIGIBLE_WEIGHT = 1e-3
#: Gap between groups, in percentage points, used to give the fairness penalty a size people can picture.
EXAMPLE_GAP_POINTS = 10
#: The trade-off counts as settled when its credible interval is at most this wide (on the 0-1 scale);
#: a wider one is stated as a range, never as "about" one value.
SETTLED_LAM_WIDTH = 0.3
#: A ratio counts as settled when its credible interval's upper end is at most this many times its lower
#: end. A factor of 2 is stricter than the trade-off's width: 0.35-0.65 for lambda (width 0.3) is a factor
#: of 3.4 in lambda / (1 - lambda).
SETTLED_RATIO_FACTOR = 2.0


@dataclass(frozen=True)
class ClassCost:
    """What a mistake on one person of a class costs under the metric, near the reference classifier."""

    name: str
    #: People of this class among `PEOPLE` (the shares the questions showed).
    people: float
    #: Weight per unit of rate (the whole share, 0 to 1): the formula's coefficient.
    per_rate: float
    #: Score change for one more (or one fewer) person of this class decided correctly.
    per_person: float
    #: Relative to the class whose mistakes cost least, per person and per rate.
    times_per_person: float
    times_per_rate: float
    #: `times_per_person` across the query region, when curvature is shown.
    region_range: tuple[float, float] | None = None
    #: Credible interval of `times_per_person` (active elicitors only).
    credible: tuple[float, float] | None = None


@dataclass(frozen=True)
class MetricWords:
    """Everything the result pages say about one metric, as plain text and numbers."""

    #: The population word and one of them ("patients", "patient"; the translation's word for one person
    #: in a language where the population word has no rule for its singular).
    population: str
    person: str
    headline: str
    per_rate: str
    formula: str
    units: str
    costs: tuple[ClassCost, ...]
    #: The sentence about curvature when it matters; None when it is left out.
    curvature: str | None
    #: What the page says about the rule (always shown, so a missing curvature is explained).
    curvature_rule: str
    #: Fairness metrics: the trade-off, a gap priced in mistakes; None otherwise.
    tradeoff: str | None = None
    gap_example: str | None = None
    credible_level: float | None = None
    #: Credible intervals of every number the words state, at `credible_level` (empty without a posterior):
    #: ``lam`` (the trade-off), ``per_rate`` (the per-rate sentence's ratio) and ``per_person`` (each
    #: class's cost per person relative to the cheapest; the headline states the dearest one's).
    intervals: Mapping[str, Any] = field(default_factory=dict)

    @property
    def hardly_counted(self) -> tuple[bool, ...]:
        """Per class: a mistake on one of its people cost at most `NEGLIGIBLE_WEIGHT` of the dearest's."""
        return _hardly_counted(self.costs)

    @property
    def counted_names(self) -> tuple[str, ...]:
        """The classes whose mistakes counted (not `hardly_counted`)."""
        return tuple(
            cost.name for cost, hardly in zip(self.costs, self.hardly_counted, strict=True) if not hardly
        )

    @property
    def ratios_usable(self) -> bool:
        """False when some class's mistakes hardly counted: ratios to that class run to astronomical
        numbers, so the pages say which mistakes counted in words instead of drawing or printing ratios."""
        return not any(self.hardly_counted)

    @property
    def text(self) -> str:
        """The sentences as one paragraph (the stored summary of a session's result)."""
        parts = [self.headline, self.per_rate, self.curvature, self.tradeoff, self.gap_example]
        return " ".join(part for part in parts if part)


def _hardly_counted(costs: Sequence[ClassCost]) -> tuple[bool, ...]:
    """Per class: a mistake on one of its people costs at most `NEGLIGIBLE_WEIGHT` of the dearest class's
    (every class, when no mistake costs anything)."""
    dearest = max(cost.per_person for cost in costs)
    return tuple(cost.per_person <= NEGLIGIBLE_WEIGHT * dearest for cost in costs)


def _fmt(value: float, tr: Translator) -> str:
    """A coefficient with three decimals, never a negative zero."""
    return fmt(round(value, 3) + 0.0, 3, tr)


def _count(value: float, tr: Translator) -> str:
    """People: whole when they are (the shares of 100 usually are), else one decimal."""
    return fmt(value, 0 if abs(value - round(value)) < 0.05 else 1, tr)


def _times(value: float, tr: Translator) -> str:
    return fmt(value, 1, tr)


def _mistake(tr: Translator, name: str, person: str, others: Sequence[str]) -> str:
    """ "a mistake on one malignant patient (calling them benign)"."""
    if len(others) == 1:
        text = tr.gettext("a mistake on one %(name)s %(person)s (calling them %(other)s)")
        return text % {"name": name, "person": person, "other": others[0]}
    text = tr.gettext("a mistake on one %(name)s %(person)s (calling them anything else)")
    return text % {"name": name, "person": person}


def _capitalized(text: str) -> str:
    """The first letter in upper case, the rest as written (class names keep their own capitals)."""
    return text[:1].upper() + text[1:]


def singular(population: str) -> str:
    """One of ``population``: "patients" -> "patient", "people" -> "person"."""
    word = population.strip() or "people"
    if word == "people":
        return "person"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


def person_word(population: str, tr: Translator = ENGLISH) -> str:
    """The word for one of ``population`` in the page's language.

    English makes it from the population word (`singular`); a translation whose population words have no
    such rule gives a word of its own ("Person"), and its sentences are written around it.
    """
    # Translators: the word for one of the study's population ("patient" from "patients"). English keeps
    # %(singular)s; a language without a rule for the singular of any noun gives its word for "person".
    return tr.pgettext("one of the population", "%(singular)s") % {"singular": singular(population)}


def _posterior_thetas(details: Mapping[str, Any] | None, kind: str, k: int) -> np.ndarray | None:
    if not details or "posterior_sample" not in details:
        return None
    family = details.get("family") or {}
    if family.get("kind") != kind or int(family.get("n_classes", -1)) != k:
        return None
    sample = np.asarray(details["posterior_sample"], dtype=np.float64)
    return sample if sample.ndim == 2 and sample.shape[0] >= 2 and np.all(np.isfinite(sample)) else None


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def settled_lam(interval: tuple[float, float] | None) -> bool:
    """Whether the answers settled the trade-off: no interval (nothing to doubt) or a narrow one."""
    return interval is None or interval[1] - interval[0] <= SETTLED_LAM_WIDTH


def settled_ratio(interval: tuple[float, float] | None) -> bool:
    """Whether the answers settled a ratio: no interval, or its ends within `SETTLED_RATIO_FACTOR`."""
    return interval is None or interval[1] <= SETTLED_RATIO_FACTOR * max(interval[0], 1e-300)


def _region_points(center: np.ndarray, radius: float) -> np.ndarray:
    """Points on the query region's boundary: the axes both ways and seeded random directions."""
    k = center.shape[0]
    rng = np.random.default_rng(_REGION_SEED)
    directions = rng.standard_normal((REGION_DIRECTIONS, k))
    directions = np.vstack([np.eye(k), -np.eye(k), directions])
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return np.asarray(np.clip(center + radius * directions, 0.0, 1.0))


def _per_person_ratios(gradients: np.ndarray, shares: np.ndarray, cheapest: int) -> np.ndarray:
    """Per-person cost of each class relative to ``cheapest``: ``(..., k)`` gradients -> ``(..., k)``."""
    worth = np.abs(gradients) / shares
    base = np.maximum(worth[..., cheapest : cheapest + 1], 1e-300)
    result: np.ndarray = worth / base
    return result


@dataclass(frozen=True)
class Reading:
    """What the words need besides the metric: the study's classes, people and query region."""

    class_names: tuple[str, ...]
    population: str
    #: The classes' shares of the people the questions showed (overall, in fairness studies), summing to 1.
    class_shares: np.ndarray
    #: The query region: the reference classifier is its centre.
    center: np.ndarray
    radius: float
    group_names: tuple[str, ...] = ()
    #: The elicitor's stored details (an active elicitor's posterior sample gives credible intervals).
    details: Mapping[str, Any] | None = None
    #: The language the words are written in (English: the stored summary, the back office).
    tr: Translator = ENGLISH


def reading_for(
    space: Any,
    population: str,
    *,
    group_shares: Sequence[float] | None = None,
    details: Mapping[str, Any] | None = None,
    tr: Translator = ENGLISH,
) -> Reading:
    """The reading of a study's query ``space`` (its priors, per group weighted by ``group_shares``)."""
    priors = np.atleast_2d(np.asarray(space.priors, dtype=np.float64))
    weights = (
        np.full(priors.shape[0], 1.0 / priors.shape[0])
        if group_shares is None
        else np.asarray(group_shares, dtype=np.float64) / float(np.sum(group_shares))
    )
    shares = weights @ priors
    sphere = space.sphere
    return Reading(
        class_names=tuple(display_name(str(name), tr) for name in space.class_names),
        population=population,
        class_shares=shares / shares.sum(),
        center=np.asarray(sphere.center, dtype=np.float64),
        radius=float(sphere.radius),
        group_names=tuple(display_name(str(name), tr) for name in getattr(space, "group_names", ())),
        details=details,
        tr=tr,
    )


def linear_words(metric: Metric, reading: Reading) -> MetricWords:
    """A linear metric: its weights are the same for every classifier."""
    assert isinstance(metric, LinearMetric)
    k = len(reading.class_names)
    thetas = _posterior_thetas(reading.details, "linear", k)
    sample = thetas[:, :k] if thetas is not None else None
    return _linear_words(np.asarray(metric.a), reading, sample, curved=False)


def curved_words(metric: Metric, reading: Reading) -> MetricWords:
    """A metric with a gradient (quadratic, cubic): weights at the region's centre, curvature across it."""
    gradient_of = getattr(metric, "gradient", None)
    assert callable(gradient_of)
    k = len(reading.class_names)
    sample = None
    thetas = _posterior_thetas(reading.details, "quadratic", k)
    if thetas is not None:
        b_sample = sym_from_vec(thetas[:, k:], k)
        sample = thetas[:, :k] + np.einsum("nij,j->ni", b_sample, reading.center)
    gradient = np.asarray(gradient_of(reading.center), dtype=np.float64)
    words = _linear_words(gradient, reading, sample, curved=True)
    return _with_curvature(words, gradient_of, reading)


def _costs(
    weights: np.ndarray,
    names: Sequence[str],
    shares: np.ndarray,
    sample: np.ndarray | None,
    level: float | None,
    stated: Mapping[str, Any] | None = None,
    base: int | None = None,
) -> tuple[tuple[ClassCost, ...], int, int]:
    """Per class costs, and the indices of the cheapest and dearest class per person.

    The per-person intervals are the elicitor's ``stated`` ones when they are relative to the same
    cheapest class (``base``), else read off the posterior ``sample``.
    """
    magnitude = np.abs(weights)
    per_person = magnitude / (PEOPLE * shares)
    cheapest, dearest = int(np.argmin(per_person)), int(np.argmax(per_person))
    floor_person = max(float(per_person[cheapest]), 1e-300)
    floor_rate = max(float(magnitude[cheapest]), 1e-300)
    intervals: list[tuple[float, float] | None] = [None] * len(names)
    if stated is not None and base == cheapest and level is not None:
        intervals = [(float(low), float(high)) for low, high in stated["cost_ratio"]]
    elif sample is not None and level is not None:
        ratios = _per_person_ratios(sample, shares, cheapest)
        intervals = [_interval(ratios[:, i], level) for i in range(len(names))]
    costs = tuple(
        ClassCost(
            name=name,
            people=float(PEOPLE * shares[i]),
            per_rate=float(weights[i]) + 0.0,
            per_person=float(per_person[i]),
            times_per_person=float(per_person[i] / floor_person),
            times_per_rate=float(magnitude[i] / floor_rate),
            credible=intervals[i],
        )
        for i, name in enumerate(names)
    )
    return costs, cheapest, dearest


def _stated(details: Mapping[str, Any] | None, k: int) -> tuple[Mapping[str, Any] | None, int | None]:
    """The elicitor's own intervals of what the words state (``details["intervals"]``) and the class its
    cost ratios are relative to, when it kept them.

    Results stored before the elicitors kept them have only the posterior sample; their intervals are
    read off the sample instead, at the same level.
    """
    if not details or not isinstance(details.get("intervals"), Mapping):
        return None, None
    ratios = details["intervals"].get("cost_ratio")
    base = details.get("cost_ratio_base")
    if not isinstance(ratios, Sequence) or len(ratios) != k or not isinstance(base, int) or not 0 <= base < k:
        return None, None
    return details["intervals"], base


def _level(details: Mapping[str, Any] | None, sample: np.ndarray | None) -> float | None:
    """The level of the stated intervals (the elicitor's ``interval_level``, else its ``credible_level``)."""
    if sample is None or not details:
        return None
    level = details.get("interval_level", details.get("credible_level"))
    return float(level) if isinstance(level, int | float) and 0.0 < float(level) < 1.0 else None


def _headline(
    tr: Translator, costs: Sequence[ClassCost], cheapest: int, dearest: int, population: str
) -> str:
    _ = tr.gettext
    names = [cost.name for cost in costs]
    person = person_word(population, tr)
    top, bottom = costs[dearest], costs[cheapest]
    if dearest != cheapest and not settled_ratio(top.credible):
        assert top.credible is not None
        text = _(
            "Your answers did not settle how much %(mistake)s costs you compared with %(other_mistake)s: "
            "between %(low)s and %(high)s times as much."
        )
        return _capitalized(
            text
            % {
                "mistake": _mistake(tr, top.name, person, [n for n in names if n != top.name]),
                "other_mistake": _mistake(tr, bottom.name, person, [n for n in names if n != bottom.name]),
                "low": _times(top.credible[0], tr),
                "high": _times(top.credible[1], tr),
            }
        )
    if top.per_person <= 1e-300 or _hardly_counted(costs)[cheapest]:
        text = _(
            "Only mistakes on %(top)s %(population)s changed your choices; mistakes on %(bottom)s "
            "%(population)s hardly counted."
        )
        return text % {"top": top.name, "bottom": bottom.name, "population": population}
    others_top = [name for name in names if name != top.name]
    others_bottom = [name for name in names if name != bottom.name]
    if top.times_per_person < SAME_RATIO:
        return _("A mistake costs you about the same for every %(person)s, whatever their class.") % {
            "person": person
        }
    return _capitalized(
        _("%(mistake)s costs you about %(times)s times as much as %(other_mistake)s.")
        % {
            "mistake": _mistake(tr, top.name, person, others_top),
            "times": _times(top.times_per_person, tr),
            "other_mistake": _mistake(tr, bottom.name, person, others_bottom),
        }
    )


def _per_rate_pair(costs: Sequence[ClassCost]) -> tuple[int, int]:
    """The classes the per-rate sentence compares: the largest weight and the smallest."""
    per_rate = [abs(cost.per_rate) for cost in costs]
    return int(np.argmax(per_rate)), int(np.argmin(per_rate))


def _per_rate_interval(
    costs: Sequence[ClassCost], cheapest: int, sample: np.ndarray, level: float
) -> tuple[float, float]:
    """The interval of the per-rate sentence's ratio.

    Per rate, class ``t`` weighs ``per_person_t / per_person_b * people_t / people_b`` times class ``b``:
    when one of the two is the cheapest class, the per-person interval (the one the table shows) gives it
    exactly; otherwise it is read off the posterior sample.
    """
    top, bottom = _per_rate_pair(costs)
    scale = costs[top].people / max(costs[bottom].people, 1e-300)
    if bottom == cheapest and costs[top].credible is not None:
        low, high = costs[top].credible
        return scale * low, scale * high
    if top == cheapest and costs[bottom].credible is not None:
        low, high = costs[bottom].credible
        return scale / max(high, 1e-300), scale / max(low, 1e-300)
    ratios = np.abs(sample[:, top]) / np.maximum(np.abs(sample[:, bottom]), 1e-300)
    return _interval(ratios, level)


def _per_rate_sentence(
    tr: Translator, costs: Sequence[ClassCost], population: str, interval: tuple[float, float] | None
) -> str:
    _ = tr.gettext
    per_rate = [abs(cost.per_rate) for cost in costs]
    top_index, bottom_index = _per_rate_pair(costs)
    top, bottom = costs[top_index], costs[bottom_index]
    unsettled = top_index != bottom_index and not settled_ratio(interval)
    if not unsettled and (max(per_rate) <= 0.0 or bottom.times_per_rate * SAME_RATIO > top.times_per_rate):
        text = _(
            "Per rate the classes weigh about the same: one percentage point more of any class's "
            "%(population)s decided correctly counts about equally."
        )
        return text % {"population": population}
    if not unsettled and abs(bottom.per_rate) <= NEGLIGIBLE_WEIGHT * abs(top.per_rate):
        text = _(
            "Per rate the same holds: only the share of %(name)s %(population)s decided correctly counts."
        )
        return text % {"name": top.name, "population": population}
    ratio = abs(top.per_rate) / abs(bottom.per_rate)
    values = {
        "times": _times(ratio, tr),
        "low": _times(interval[0], tr) if interval is not None else "",
        "high": _times(interval[1], tr) if interval is not None else "",
        "top": top.name,
        "bottom": bottom.name,
        "population": population,
        "person": person_word(population, tr),
        "top_people": _count(top.people, tr),
        "bottom_people": _count(bottom.people, tr),
        "total": PEOPLE,
    }
    if unsettled:
        sentence = _(
            "Per rate your answers did not settle it either: one percentage point more of the %(top)s "
            "%(population)s decided correctly is worth between %(low)s and %(high)s times as much as one "
            "point more of the %(bottom)s %(population)s."
        )
    else:
        sentence = _(
            "Per rate it is %(times)s times: one percentage point more of the %(top)s %(population)s "
            "decided correctly is worth %(times)s times as much as one point more of the %(bottom)s "
            "%(population)s."
        )
    if abs(top.people - bottom.people) < 0.5:
        return sentence % values
    if top.people < bottom.people:
        because = _(
            "Per person and per rate differ because there are %(top_people)s %(top)s and %(bottom_people)s "
            "%(bottom)s %(population)s in every %(total)s: each rarer %(person)s is a bigger part of their "
            "share."
        )
    else:
        because = _(
            "Per person and per rate differ because there are %(top_people)s %(top)s and %(bottom_people)s "
            "%(bottom)s %(population)s in every %(total)s: each commoner %(person)s is a smaller part of "
            "their share."
        )
    return f"{sentence % values} {because % values}"


def _score_terms(tr: Translator, weights: Sequence[float], names: Sequence[str], population: str) -> str:
    """The formula's sum: "0.400 × (share of benign patients decided correctly) + ..."."""
    term = tr.gettext("%(weight)s × (share of %(name)s %(population)s decided correctly)")
    return " + ".join(
        term % {"weight": _fmt(float(w), tr), "name": name, "population": population}
        for w, name in zip(weights, names, strict=True)
    )


def _linear_words(
    weights: np.ndarray, reading: Reading, sample: np.ndarray | None, *, curved: bool
) -> MetricWords:
    names, population, shares, tr = reading.class_names, reading.population, reading.class_shares, reading.tr
    _ = tr.gettext
    level = _level(reading.details, sample)
    stated, base = _stated(reading.details, len(names))
    costs, cheapest, dearest = _costs(weights, names, shares, sample if level else None, level, stated, base)
    terms = _score_terms(tr, [float(w) for w in weights], names, population)
    if curved:
        formula = _(
            "score ≈ %(terms)s, with the weights of a typical classifier shown (curvature shifts them, "
            "see below)"
        )
    else:
        formula = _("score = %(terms)s")
    units = _(
        "Each share runs from 0 to 1 (0%% to 100%% of that class's %(population)s); higher scores are "
        "better, and only differences between classifiers mean anything."
    ) % {"population": population}
    if curved:
        units += " " + _(
            "For a curved metric these weights are measured at the middle of the classifiers shown."
        )
    rule = _curvature_rule(tr, curved)
    formula_text = formula % {"terms": terms}
    used = sample if level else None
    return _words(tr, costs, cheapest, dearest, population, formula_text, units, rule, level, used)


def _words(
    tr: Translator,
    costs: tuple[ClassCost, ...],
    cheapest: int,
    dearest: int,
    population: str,
    formula: str,
    units: str,
    curvature_rule: str,
    level: float | None,
    sample: np.ndarray | None,
    lam_interval: tuple[float, float] | None = None,
    **extra: Any,
) -> MetricWords:
    """The words every family shares: headline per person, the per-rate sentence, formula and units.

    ``sample`` holds the posterior's weights per rate (one row per draw) when there is a credible
    ``level``; every ratio the words state then comes with its interval, and an unsettled one is said
    as a range.
    """
    intervals: dict[str, Any] = {}
    per_rate_interval = None
    if sample is not None and level is not None:
        per_rate_interval = _per_rate_interval(costs, cheapest, sample, level)
        intervals["per_rate"] = list(per_rate_interval)
        intervals["per_person"] = {cost.name: list(cost.credible or (1.0, 1.0)) for cost in costs}
    if lam_interval is not None:
        intervals = {"lam": list(lam_interval), **intervals}
    return MetricWords(
        population=population,
        person=person_word(population, tr),
        headline=_headline(tr, costs, cheapest, dearest, population),
        per_rate=_per_rate_sentence(tr, costs, population, per_rate_interval),
        formula=formula,
        units=units,
        costs=costs,
        curvature=None,
        curvature_rule=curvature_rule,
        credible_level=level,
        intervals=intervals,
        **extra,
    )


def _curvature_rule(tr: Translator, curved: bool) -> str:
    if not curved:
        return tr.gettext(
            "This kind of metric has no curvature: a mistake costs the same however good the classifier is."
        )
    text = tr.gettext(
        "A curved metric lets a mistake's cost depend on how good the classifier already is. It is shown "
        "only when it changes any of the relative costs above by more than %(percent)s%% somewhere among "
        "the classifiers the questions showed."
    )
    return text % {"percent": round(100 * CURVATURE_NEGLIGIBLE)}


def _with_curvature(words: MetricWords, gradient_of: Any, reading: Reading) -> MetricWords:
    names, population, shares, tr = reading.class_names, reading.population, reading.class_shares, reading.tr
    _ = tr.gettext
    reference, radius = reading.center, reading.radius
    costs = words.costs
    cheapest = int(np.argmin([cost.per_person for cost in costs]))
    dearest = int(np.argmax([cost.per_person for cost in costs]))
    points = _region_points(reference, radius) if radius > 0 else reference[None, :]
    gradients = np.asarray([gradient_of(point) for point in points])
    ratios = _per_person_ratios(gradients, shares, cheapest)
    at_center = np.array([cost.times_per_person for cost in costs])
    change = np.max(np.abs(ratios / np.maximum(at_center, 1e-300) - 1.0))
    if not np.isfinite(change) or change <= CURVATURE_NEGLIGIBLE:
        terms = _score_terms(tr, [cost.per_rate for cost in costs], names, population)
        formula = _("score = %(terms)s; its curvature is too small to matter here") % {"terms": terms}
        return replace(words, formula=formula)
    if dearest == cheapest:
        # Equal costs at the centre: describe the class whose relative cost moves most across the region.
        spread = ratios.max(axis=0) - ratios.min(axis=0)
        spread[cheapest] = -1.0
        dearest = int(np.argmax(spread))
    low, high = float(ratios[:, dearest].min()), float(ratios[:, dearest].max())
    ranged = tuple(
        replace(cost, region_range=(float(ratios[:, i].min()), float(ratios[:, i].max())))
        for i, cost in enumerate(costs)
    )
    top, bottom = costs[dearest], costs[cheapest]
    # Which end of the range goes with a classifier that is weak on the dearer class: move along its axis.
    step = np.zeros_like(reference)
    step[dearest] = radius
    weak = _per_person_ratios(np.asarray(gradient_of(np.clip(reference - step, 0, 1))), shares, cheapest)
    strong = _per_person_ratios(np.asarray(gradient_of(np.clip(reference + step, 0, 1))), shares, cheapest)
    person = person_word(population, tr)
    values = {
        "mistake": _mistake(tr, top.name, person, [n for n in names if n != top.name]),
        "low": _times(low, tr),
        "high": _times(high, tr),
        "top": top.name,
        "bottom": bottom.name,
        "person": person,
        "population": population,
    }
    if weak[dearest] >= strong[dearest]:
        sentence = _(
            "How much a mistake costs depends on how good the classifier already is: among the classifiers "
            "you compared, %(mistake)s cost between %(low)s and %(high)s times as much as one on a "
            "%(bottom)s %(person)s, more when the classifier still misses many %(top)s %(population)s."
        )
    else:
        sentence = _(
            "How much a mistake costs depends on how good the classifier already is: among the classifiers "
            "you compared, %(mistake)s cost between %(low)s and %(high)s times as much as one on a "
            "%(bottom)s %(person)s, more when the classifier already gets most %(top)s %(population)s right."
        )
    return replace(words, costs=ranged, curvature=sentence % values)


def fair_words(metric: Metric, reading: Reading) -> MetricWords:
    """A fair cost: mistakes overall (per person and rate), the trade-off, a group gap priced in mistakes."""
    assert isinstance(metric, FairQuadraticMetric)
    names, population, shares, tr = reading.class_names, reading.population, reading.class_shares, reading.tr
    _ = tr.gettext
    group_names, details = reading.group_names, reading.details
    k = len(names)
    error_weights = (1.0 - metric.lam) * np.asarray(metric.a)
    thetas = _posterior_thetas(details, "fair", k)
    sample = None
    lam_interval: tuple[float, float] | None = None
    level = None
    stated, base = _stated(details, k)
    if thetas is not None:
        norms = np.linalg.norm(thetas[:, :k], axis=1)
        sample = thetas[:, :k] / np.maximum(norms, 1e-300)[:, None]
        level = _level(details, sample)
        if level is not None and stated is not None and len(stated.get("lam") or ()) == 2:
            lam_interval = (float(stated["lam"][0]), float(stated["lam"][1]))
        elif level is not None:
            lam_interval = _interval(1.0 - norms, level)
    used = sample if level else None
    costs, cheapest, dearest = _costs(error_weights, names, shares, used, level, stated, base)
    share = round(100 * metric.lam)
    settled = settled_lam(lam_interval)
    if settled:
        tradeoff = _(
            "When fewer mistakes overall and equal treatment of the groups pull in different directions, "
            "you put about %(fair)s%% of the weight on treating the groups equally and %(accurate)s%% on "
            "making fewer mistakes overall."
        ) % {"fair": share, "accurate": 100 - share}
    if lam_interval is not None and level is not None:
        values = {
            "level": round(100 * level),
            "low": round(100 * lam_interval[0]),
            "high": round(100 * lam_interval[1]),
        }
        if settled:
            interval = _(
                "(Likely range of the weight on equal treatment, %(level)s%% sure: %(low)s%% to %(high)s%%.)"
            )
            tradeoff += " " + interval % values
        else:
            tradeoff = (
                _(
                    "Your answers did not settle how you weigh fewer mistakes overall against equal "
                    "treatment of the groups: the weight you put on treating the groups equally could be "
                    "anywhere from %(low)s%% to %(high)s%% (likely range, %(level)s%% sure)."
                )
                % values
            )
    term = _("%(weight)s × (share of %(name)s %(population)s decided wrongly)")
    terms = " + ".join(
        term % {"weight": _fmt(float(w), tr), "name": name, "population": population}
        for w, name in zip(metric.a, names, strict=True)
    )
    if settled:
        formula = _(
            "cost = %(accurate)s%% × [%(terms)s] + %(fair)s%% × (penalty for gaps between groups in those "
            "shares)"
        ) % {"accurate": 100 - share, "terms": terms, "fair": share}
    else:
        assert lam_interval is not None
        formula = _(
            "cost = (100%% − w) × [%(terms)s] + w × (penalty for gaps between groups in those shares), "
            "with w between %(low)s%% and %(high)s%%"
        ) % {"terms": terms, "low": round(100 * lam_interval[0]), "high": round(100 * lam_interval[1])}
    units = _(
        "Shares run from 0 to 1 over all %(population)s of a class; the penalty grows with the square of a "
        "gap. Lower costs are better; only differences between classifiers mean anything."
    ) % {"population": population}
    rule = _(
        "Within a group a mistake costs the same however good the classifier is; unequal treatment "
        "of the groups costs more the wider the gap."
    )
    return _words(
        tr,
        costs,
        cheapest,
        dearest,
        population,
        formula,
        units,
        rule,
        level,
        sample if level else None,
        lam_interval,
        tradeoff=tradeoff,
        # A gap priced at an unsettled trade-off would state a number the answers did not support.
        gap_example=_gap_example(tr, metric, names, population, group_names, costs) if settled else None,
    )


def _gap_example(
    tr: Translator,
    metric: FairQuadraticMetric,
    names: Sequence[str],
    population: str,
    group_names: Sequence[str],
    costs: Sequence[ClassCost],
) -> str | None:
    """A gap of `EXAMPLE_GAP_POINTS` between the first two groups on the class it hurts most, in mistakes."""
    if metric.lam <= 0.0 or len(group_names) < 2:
        return None
    (u, v), penalty = next(iter(metric.B_pairs.items()))
    diagonal = np.diag(penalty)
    worst = int(np.argmax(diagonal))
    gap = EXAMPLE_GAP_POINTS / 100.0
    gap_cost = metric.lam * 0.5 * gap * gap * float(diagonal[worst])
    per_person = costs[worst].per_person
    if gap_cost <= 0.0 or per_person <= 0.0 or _hardly_counted(costs)[worst]:
        return None  # no gap to price, or a price in mistakes that hardly counted (astronomical)
    mistakes = gap_cost / per_person
    if round(mistakes, 1) == 0.0:
        return None  # "as much as 0 more mistakes": the trade-off sentence already says the gap hardly counts
    text = tr.gettext(
        "A gap of %(points)s percentage points between %(first)s and %(second)s in the share of %(name)s "
        "%(population)s decided correctly costs you about as much as %(mistakes)s more mistakes on %(name)s "
        "%(population)s (in every %(total)s)."
    )
    return text % {
        "points": EXAMPLE_GAP_POINTS,
        "first": group_names[u],
        "second": group_names[v],
        "name": names[worst],
        "population": population,
        "mistakes": _count(mistakes, tr),
        "total": PEOPLE,
    }
