"""A revealed metric in plain words: per person and per rate, curvature shown only when it matters."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from app.explain import (
    CURVATURE_NEGLIGIBLE,
    Reading,
    curved_words,
    fair_words,
    linear_words,
    reading_for,
)
from app.i18n import shipped_catalogues
from app.study_config import build_space, parse_study_config
from elicitation import FairQuadraticMetric, LinearMetric, QuadraticMetric

#: The issue's example: weights 0.454 / 0.891 on 65 benign and 35 malignant patients in 100.
SCREENING = Reading(("benign", "malignant"), "patients", np.array([0.65, 0.35]), np.array([0.6, 0.6]), 0.2)
#: The same classes in two equal groups, women and men, around the uniform rates.
FAIR_SCREENING = Reading(
    ("benign", "malignant"), "patients", np.array([0.65, 0.35]), np.array([0.5, 0.5]), 0.2, ("women", "men")
)


def test_per_person_and_per_rate_are_both_given_and_named() -> None:
    words = linear_words(LinearMetric(np.array([0.4545, 0.8908])), SCREENING)
    benign, malignant = words.costs
    # Per rate: the weights' ratio. Per patient: each weight divided by its class's patients.
    assert malignant.times_per_rate == pytest.approx(0.8908 / 0.4545)
    assert malignant.times_per_person == pytest.approx((0.8908 / 35) / (0.4545 / 65))
    assert round(malignant.times_per_rate, 1) == 2.0 and round(malignant.times_per_person, 1) == 3.6
    assert benign.times_per_person == benign.times_per_rate == 1.0
    assert malignant.per_person == pytest.approx(malignant.per_rate / 35)
    assert words.headline == (
        "A mistake on one malignant patient (calling them benign) costs you about 3.6 times as much as "
        "a mistake on one benign patient (calling them malignant)."
    )
    assert words.per_rate.startswith("Per rate it is 2.0 times")
    assert "35 malignant and 65 benign patients in every 100" in words.per_rate
    assert words.formula == (
        "score = 0.454 × (share of benign patients decided correctly) + 0.891 × (share of malignant "
        "patients decided correctly)"
    )
    assert "0 to 1" in words.units and words.curvature is None


def test_rounding_noise_curvature_is_hidden_and_the_rule_states_its_threshold() -> None:
    noise = QuadraticMetric(np.array([0.4545, 0.8908]), np.array([[-5e-17, 0.0], [0.0, -5e-17]]))
    words = curved_words(noise, SCREENING)
    assert words.curvature is None
    assert "curvature is too small to matter here" in words.formula and "-0.000" not in words.formula
    assert f"more than {round(100 * CURVATURE_NEGLIGIBLE)}%" in words.curvature_rule
    assert all(cost.region_range is None for cost in words.costs)
    assert round(words.costs[1].times_per_person, 1) == 3.6


def test_curvature_that_moves_the_costs_is_said_in_words_with_its_range() -> None:
    curved = QuadraticMetric(np.array([0.3, 0.8]), np.array([[-0.3, 0.0], [0.0, -0.4]]))
    words = curved_words(curved, SCREENING)
    assert words.curvature is not None
    low, high = words.costs[1].region_range or (0.0, 0.0)
    assert low < words.costs[1].times_per_person < high
    assert f"between {low:.1f} and {high:.1f} times" in words.curvature
    # Diminishing returns on malignant: a mistake there costs more while many are still missed.
    assert "more when the classifier still misses many malignant patients" in words.curvature
    gradient = curved.gradient(SCREENING.center)
    assert words.costs[1].times_per_rate == pytest.approx(gradient[1] / gradient[0])


def test_a_small_but_real_curvature_under_the_threshold_is_hidden() -> None:
    slight = QuadraticMetric(np.array([0.45, 0.89]), np.array([[-0.01, 0.0], [0.0, -0.01]]))
    assert curved_words(slight, SCREENING).curvature is None


def test_credible_intervals_come_from_an_active_elicitors_posterior_sample() -> None:
    rng = np.random.default_rng(3)
    sample = np.array([0.4545, 0.8908]) + rng.normal(0.0, 0.02, size=(400, 2))
    details = {
        "family": {"kind": "linear", "n_classes": 2},
        "posterior_sample": sample.tolist(),
        "credible_level": 0.9,
    }
    reading = Reading(
        SCREENING.class_names, "patients", SCREENING.class_shares, SCREENING.center, 0.2, (), details
    )
    words = linear_words(LinearMetric(np.array([0.4545, 0.8908])), reading)
    low, high = words.costs[1].credible or (0.0, 0.0)
    ratios = (sample[:, 1] / 35) / (sample[:, 0] / 65)
    assert (low, high) == pytest.approx(tuple(np.quantile(ratios, [0.05, 0.95])))
    assert low < 3.64 < high and words.credible_level == 0.9
    # Without a sample (the paper's searches) there is no interval.
    assert linear_words(LinearMetric(np.array([0.4545, 0.8908])), SCREENING).costs[1].credible is None


def test_equal_costs_per_person_are_said_plainly() -> None:
    even = Reading(("a", "b"), "people", np.array([0.5, 0.5]), np.array([0.5, 0.5]), 0.2)
    words = linear_words(LinearMetric(np.array([1.0, 1.0])), even)
    assert words.headline == "A mistake costs you about the same for every person, whatever their class."
    assert words.per_rate.startswith("Per rate the classes weigh about the same")


def test_fair_words_price_a_group_gap_in_mistakes_and_give_the_trade_off() -> None:
    tau = np.array([[0.5, 0.5], [0.5, 0.5]])
    metric = FairQuadraticMetric(np.array([0.4, 0.9]), {(0, 1): np.array([[1.0, 0.2], [0.2, 0.5]])}, 0.4, tau)
    reading = FAIR_SCREENING
    words = fair_words(metric, reading)
    assert (
        words.tradeoff is not None
        and "about 40% of the weight on treating the groups equally" in words.tradeoff
    )
    assert words.formula.startswith("cost = 60% × [")
    # The gap: lam/2 * 0.1^2 * B_ii against one more mistake on class i, per patient.
    worst = int(np.argmax(np.diag(metric.B_pairs[(0, 1)])))
    per_person = (1 - metric.lam) * metric.a[worst] / (100 * reading.class_shares[worst])
    mistakes = metric.lam * 0.5 * 0.01 * metric.B_pairs[(0, 1)][worst, worst] / per_person
    expected = f"{mistakes:.0f}" if abs(mistakes - round(mistakes)) < 0.05 else f"{mistakes:.1f}"
    assert words.gap_example is not None
    assert f"costs you about as much as {expected} more mistakes on" in words.gap_example
    assert "between women and men" in words.gap_example


def test_a_gap_is_not_priced_in_mistakes_that_hardly_counted_nor_as_zero_mistakes() -> None:
    tau = np.array([[0.5, 0.5], [0.5, 0.5]])
    reading = FAIR_SCREENING
    # The gap hurts benign patients most, and benign mistakes cost next to nothing: a price in them would
    # run to 1e297 mistakes.
    penalty = {(0, 1): np.array([[1.0, 0.0], [0.0, 0.5]])}
    cheap_benign = fair_words(FairQuadraticMetric(np.array([1e-300, 1.0]), penalty, 0.4, tau), reading)
    assert not cheap_benign.ratios_usable and cheap_benign.hardly_counted == (True, False)
    assert cheap_benign.counted_names == ("malignant",) and cheap_benign.gap_example is None
    # Almost all weight on fewer mistakes: the gap's price rounds to no mistake at all.
    no_weight = fair_words(FairQuadraticMetric(np.array([0.4, 0.9]), penalty, 1e-4, tau), reading)
    assert no_weight.ratios_usable and no_weight.gap_example is None
    assert no_weight.tradeoff is not None and "about 0% of the weight" in no_weight.tradeoff


def test_reading_for_a_fairness_space_weighs_the_groups_priors_by_their_shares() -> None:
    config = parse_study_config(
        {
            "name": "x",
            "task": "t",
            "class_names": ["repays", "defaults"],
            "group_names": ["women", "men"],
            "algorithm": "fair_qpme",
            "query_space": {"kind": "synthetic", "radius": 0.2, "priors": [[0.8, 0.2], [0.6, 0.4]]},
        }
    )
    reading = reading_for(build_space(config), "applicants", group_shares=[0.25, 0.75])
    assert reading.class_shares == pytest.approx([0.25 * 0.8 + 0.75 * 0.6, 0.25 * 0.2 + 0.75 * 0.4])
    assert reading.group_names == ("women", "men") and reading.radius == pytest.approx(0.2)


def _fair_reading(lam_range: tuple[float, float], ratio: tuple[float, float], tr: Any = None) -> Reading:
    """A two-group reading whose elicitor stated ``lam_range`` and the malignant class's ``ratio``."""
    rng = np.random.default_rng(5)
    lams = rng.uniform(*lam_range, size=300)
    direction = np.array([0.4, 0.9]) / np.linalg.norm([0.4, 0.9])
    sample = np.hstack([(1.0 - lams)[:, None] * direction, np.zeros((300, 3))])
    details = {
        "family": {"kind": "fair", "n_classes": 2},
        "posterior_sample": sample.tolist(),
        "credible_level": 0.95,
        "interval_level": 0.9,
        "intervals": {"lam": list(lam_range), "cost_ratio": [[1.0, 1.0], list(ratio)]},
        "cost_ratio_base": 0,
    }
    extra = {} if tr is None else {"tr": tr}
    return Reading(
        ("benign", "malignant"),
        "patients",
        np.array([0.65, 0.35]),
        np.array([0.5, 0.5]),
        0.2,
        ("women", "men"),
        details,
        **extra,
    )


FAIR = FairQuadraticMetric(
    np.array([0.4, 0.9]), {(0, 1): np.array([[1.0, 0.2], [0.2, 0.5]])}, 0.4, np.full((2, 2), 0.5)
)


def test_a_wide_trade_off_interval_is_said_as_a_range_never_as_one_share() -> None:
    words = fair_words(FAIR, _fair_reading((0.2, 0.7), (3.5, 4.5)))
    assert words.intervals["lam"] == [0.2, 0.7] and words.credible_level == 0.9
    assert words.tradeoff is not None and "about 40%" not in words.tradeoff
    assert "did not settle how you weigh" in words.tradeoff and "anywhere from 20% to 70%" in words.tradeoff
    assert "40%" not in words.formula and "with w between 20% and 70%" in words.formula
    assert words.gap_example is None, "a gap priced at an unsettled trade-off states an unsupported number"
    # The ratio is settled (4.5 / 3.5 < 2): the headline states it, with the elicitor's own interval.
    assert words.headline.startswith("A mistake on one malignant patient") and "about" in words.headline
    assert words.costs[1].credible == (3.5, 4.5)
    # Narrow enough: one share, with its interval.
    narrow = fair_words(FAIR, _fair_reading((0.3, 0.5), (3.5, 4.5)))
    assert narrow.tradeoff is not None and "about 40% of the weight" in narrow.tradeoff
    assert "Likely range of the weight on equal treatment, 90% sure: 30% to 50%" in narrow.tradeoff
    assert narrow.gap_example is not None


def test_an_unsettled_cost_ratio_is_said_as_a_range_per_person_and_per_rate() -> None:
    words = fair_words(FAIR, _fair_reading((0.3, 0.5), (1.5, 6.0)))
    assert words.headline.startswith(
        "Your answers did not settle how much a mistake on one malignant patient"
    )
    assert "between 1.5 and 6.0 times as much" in words.headline
    # Per rate malignant weighs 35/65 of its per-person ratio against benign: the same interval, scaled.
    low, high = words.intervals["per_rate"]
    assert (low, high) == pytest.approx((1.5 * 35 / 65, 6.0 * 35 / 65))
    assert "Per rate your answers did not settle it either" in words.per_rate
    assert f"between {low:.1f} and {high:.1f} times" in words.per_rate
    assert words.intervals["per_person"] == {"benign": [1.0, 1.0], "malignant": [1.5, 6.0]}


def test_unsettled_words_are_translated() -> None:
    german = shipped_catalogues().translations("de")
    words = fair_words(FAIR, _fair_reading((0.2, 0.7), (1.5, 6.0), german))
    assert (
        words.tradeoff is not None and "nicht geklärt" in words.tradeoff and "20 % und 70 %" in words.tradeoff
    )
    assert "nicht geklärt" in words.headline
    assert "ebenso wenig geklärt" in words.per_rate
