"""Registry parameters that select variants of the paper's algorithms (issue 7's robust answering)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from app.algorithms import REGISTRY
from app.sessions.displayed import build_session_elicitor
from elicitation import NumericalError, Pending, QuadraticMetric, ReplayMismatchError, Sphere, replay, run
from elicitation.oracles import ExactOracle, random_quadratic_metric
from elicitation.rates import SyntheticSpace


@pytest.mark.parametrize("name", ["lpme", "qpme"])
def test_robust_defaults_to_the_paper_search(name: str) -> None:
    assert REGISTRY[name].parse_params({}).robust == "none"


def test_robust_repeat_asks_each_comparison_at_least_twice() -> None:
    space = SyntheticSpace(2, radius=0.2)
    spec = REGISTRY["qpme"]
    metric = random_quadratic_metric(np.random.default_rng(3), 2)
    plain = run(spec.build(space, {"epsilon": 0.05}), ExactOracle(metric))
    robust = run(spec.build(space, {"epsilon": 0.05, "robust": "repeat"}), ExactOracle(metric))
    assert robust.num_queries >= 2 * plain.num_queries
    assert np.linalg.norm(robust.metric.a - plain.metric.a) < 1e-6


def test_noisy_bisection_is_refused_where_the_search_cannot_use_it() -> None:
    with pytest.raises(ValidationError, match="robust"):
        REGISTRY["lpme"].parse_params({"robust": "noisy_bisection"})
    with pytest.raises(ValidationError, match="robust"):
        REGISTRY["qpme"].parse_params({"robust": "sometimes"})


def test_noisy_bisection_builds_for_qpme() -> None:
    elicitor = REGISTRY["qpme"].build(SyntheticSpace(2, radius=0.2), {"robust": "noisy_bisection"})
    assert Sphere.around_uniform(2, 0.2).contains(next(elicitor).first)


def test_qpme_sessions_recorded_with_the_earlier_version_replay_its_questions() -> None:
    space = SyntheticSpace(3, radius=0.2)
    spec = REGISTRY["qpme"]
    accuracy = QuadraticMetric(np.ones(3), np.zeros((3, 3)))
    answers: list[bool] = []

    def person(first: np.ndarray, second: np.ndarray) -> bool:
        answers.append(accuracy.prefers(first, second))
        return answers[-1]

    # qpme-2 read only the slopes' lines and gave up on linear metrics once every question was answered.
    with pytest.raises(NumericalError):
        run(build_session_elicitor(spec, space, {}, seed=0, version="qpme-2"), person)
    with pytest.raises(NumericalError):
        replay(build_session_elicitor(spec, space, {}, seed=0, version="qpme-2"), answers)
    # The current version asks more (a search along the common slope) and then elicits accuracy.
    assert isinstance(
        replay(build_session_elicitor(spec, space, {}, seed=0, version=spec.version), answers), Pending
    )
    assert spec.algorithm.knows("qpme-2") and spec.version != "qpme-2"
    with pytest.raises(ReplayMismatchError, match="qpme-1"):
        build_session_elicitor(spec, space, {}, seed=0, version="qpme-1")
