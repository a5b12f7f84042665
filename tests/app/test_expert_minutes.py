"""The expert-minutes benchmark's own checks: its screen measures on hand-made screens, and a quick run of
the demo through the JSON API meeting the bars that do not depend on time or on one person's noise."""

from __future__ import annotations

import numpy as np

from app.algorithms import get_algorithm
from app.cli.web import DEMO_STUDY
from app.sessions.displayed import DISPLAY_MARK, session_version
from app.study_config import build_space, parse_study_config
from benchmarks.expert_minutes import (
    MAX_DOMINANCE,
    NOISE,
    SENSIBLE_PEOPLE,
    current_version,
    dominates,
    looks_alike,
    random_quadratic_person,
    run_study,
    screen_measures,
    sensible,
    switches_sides,
)
from elicitation import Sphere


def _side(benign_right: float, malignant_right: float) -> np.ndarray:
    """One classifier's confusion matrix (one group) as displayed: 65 benign, 35 malignant people."""
    return np.array([[[benign_right, 65 - benign_right], [35 - malignant_right, malignant_right]]])


A, B, C = _side(50, 30), _side(60, 20), _side(40, 33)


def test_screen_measures_count_look_alike_switches_dominance_and_distinct_classifiers() -> None:
    assert looks_alike((_side(52, 29), _side(58, 21)), (A, B))
    assert looks_alike((_side(58, 21), _side(52, 29)), (A, B))  # either order
    assert not looks_alike((_side(53, 30), B), (A, B))  # one cell 3 people apart
    assert switches_sides((B, C), (A, B)) and switches_sides((C, A), (A, B))
    assert not switches_sides((A, C), (A, B))
    assert dominates(A, _side(49, 30)) and dominates(_side(49, 30), A)
    assert not dominates(A, B) and not dominates(A, A)
    screens = [(A, B), (A, C), (C, A), (_side(41, 33), A), (A, _side(49, 29))]
    phases = ["practice", "elicitation", "elicitation", "check", "evaluation"]
    assert screen_measures(screens, phases) == {
        "look_alike": 2,  # (C, A) is (A, C) swapped; (41, 33) beside A is one person from (C, A)
        "side_switches": 2,  # C moves to the left, then A does
        "scored": 3,
        "dominance": 1,  # the final comparison
        "distinct_classifiers": 5,
        "most_shown": 5,
    }


def test_a_quick_demo_run_shows_plainly_new_screens() -> None:
    summary = run_study(DEMO_STUDY, 3, SENSIBLE_PEOPLE, seed=0, noises=tuple(NOISE))
    assert summary["algorithm_version"] == "active_quadratic-6" + DISPLAY_MARK
    assert summary["screens_max"] <= 40
    assert summary["consecutive_repeats"] == 0 and summary["identical_pairs"] == 0
    assert summary["side_switches"] == 0 and summary["look_alike"] == 0
    # Sensible people: a pair decided by dominance teaches the elicitor nothing, so it asks none (the
    # declared checks apart).
    assert summary["dominance_share"] <= MAX_DOMINANCE
    assert summary["sensible_people"] == 3
    assert {person["generator"] for person in summary["people_detail"]} == {
        draw.__name__ for draw in SENSIBLE_PEOPLE
    }
    # Classifiers recur (the elicitor pairs a good one with several others, checks repeat a pair), but
    # most of what a session shows is new.
    assert 0.5 * summary["shown_per_session_mean"] < summary["distinct_classifiers_mean"]


def test_the_demo_people_are_sensible_on_the_sphere_and_appendix_h_draws_often_are_not() -> None:
    space = build_space(parse_study_config(DEMO_STUDY))
    rng = np.random.default_rng(0)
    for draw in SENSIBLE_PEOPLE:
        assert all(sensible(draw(rng, space), space.sphere) for _ in range(20))
    # The squared-miss people are sensible on the whole unit cube, not only on the demo's sphere.
    wide = Sphere(np.full(2, 0.5), 0.5)
    assert all(sensible(SENSIBLE_PEOPLE[2](rng, space), wide) for _ in range(20))
    assert sum(sensible(random_quadratic_person(rng, space), space.sphere) for _ in range(200)) < 100


def test_an_earlier_version_asks_while_the_benchmark_compares_and_the_current_one_returns() -> None:
    spec = get_algorithm("active_quadratic")
    with current_version("active_quadratic", "active_quadratic-3"):
        assert session_version(get_algorithm("active_quadratic")) == "active_quadratic-3" + DISPLAY_MARK
    assert get_algorithm("active_quadratic") is spec
