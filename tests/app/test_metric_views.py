"""The app's presentation table: one view per core metric family, used by every page and the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from app.explain import Reading
from app.metric_views import VIEWS, coordinator_figures, participant_figures, plain_summary, text_lines
from elicitation import FairQuadraticMetric, LinearMetric, QuadraticMetric, Sphere
from elicitation.families import FAMILIES, Draw

CLASSES = ["healthy", "ill"]
GROUPS = ["young", "old"]


def test_every_core_family_has_an_app_view() -> None:
    assert set(VIEWS) == set(FAMILIES)


@pytest.mark.parametrize(
    ("kind", "participant", "coordinator"),
    [
        ("linear", ["metric-costs"], ["fig-a"]),
        ("quadratic", ["metric-costs"], ["fig-a", "fig-b"]),
        ("fair_quadratic", ["metric-costs", "metric-tradeoff"], ["fig-a", "fig-buv-0", "fig-lam"]),
    ],
)
def test_figures_follow_the_stored_metrics_family(
    kind: str, participant: list[str], coordinator: list[str]
) -> None:
    metric = FAMILIES[kind].random(
        np.random.default_rng(1), Draw(n_classes=2, sphere=Sphere.around_uniform(2, 0.2))
    )
    data = metric.to_dict()
    reading = Reading(
        tuple(CLASSES), "patients", np.array([0.6, 0.4]), np.array([0.5, 0.5]), 0.2, tuple(GROUPS)
    )
    words = VIEWS[kind].words(metric, reading)
    shown = participant_figures(data, words)
    assert [figure["id"] for figure in shown] == participant
    assert [figure["id"] for figure in coordinator_figures(data, CLASSES, GROUPS)] == coordinator
    costs = shown[0]["figure"]["data"][0]
    assert costs["y"] == ["one healthy patient", "one ill patient"]
    assert costs["x"] == pytest.approx([cost.times_per_person for cost in words.costs])


def test_a_failed_session_has_no_metric_figures() -> None:
    failed = {"type": "failed", "reason": "inconsistent answers"}
    assert participant_figures(failed, None) == []
    assert coordinator_figures(failed, CLASSES, GROUPS) == []


def test_plain_summaries_speak_of_each_familys_coefficients() -> None:
    reading = Reading(
        tuple(CLASSES), "patients", np.array([0.5, 0.5]), np.array([0.5, 0.5]), 0.2, tuple(GROUPS)
    )
    linear = LinearMetric(np.array([3.0, 1.0]))
    assert "one healthy patient (calling them ill) costs you about 3.0 times" in plain_summary(
        linear, reading
    )
    curved = QuadraticMetric(np.array([0.1, 0.1]), np.array([[-1.0, 0.0], [0.0, -1.0]]))
    assert "depends on how good the classifier already is" in plain_summary(curved, reading)
    fair = FairQuadraticMetric(np.array([1.0, 1.0]), {(0, 1): np.eye(2)}, 0.25, np.full((2, 2), 0.5))
    text = plain_summary(fair, reading)
    assert "about 25% of the weight on treating the groups equally" in text


def test_text_lines_print_the_coefficients_to_four_decimals() -> None:
    assert text_lines(LinearMetric(np.array([3.0, 4.0]))) == ["  a = [0.6 0.8]"]
    quadratic = QuadraticMetric(np.array([1.0, 0.0]), np.array([[-1.0, 0.0], [0.0, 0.0]]))
    assert text_lines(quadratic) == [
        "  a = [0.7071 0.    ]",
        "  B = [[-0.7071  0.    ]\n       [ 0.      0.    ]]",
    ]
    fair = FairQuadraticMetric(np.array([1.0, 1.0]), {(0, 1): np.eye(2)}, 0.25, np.full((2, 2), 0.5))
    lines = text_lines(fair)
    assert lines[:3] == [
        "  a   = [0.7071 0.7071]",
        "  lam = 0.2500",
        "  tau = [0.5000,0.5000 | 0.5000,0.5000]",
    ]
    assert lines[3].startswith("  B^12 = [[")
