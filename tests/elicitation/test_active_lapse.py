"""The active elicitor's lapse-tolerant answer model: a share of answers taken to be coin flips."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elicitation import InvalidConfigError, QuadraticMetric, Sphere, run
from elicitation import posterior as posterior_module
from elicitation.active import DEFAULT_BETA_GRID, LEAN_SEARCH, active_quadratic
from elicitation.active.families import FamilySpec
from elicitation.oracles import LapseOracle
from elicitation.posterior import ParticlePosterior

#: The demo's query sphere on the breast-cancer data and its class priors (benign, malignant).
DEMO_SPHERE = Sphere(np.array([0.77, 0.78]), 0.155)
DEMO_PRIORS = np.array([0.65, 0.35])


def _contradicted(lapse: float, seed: int, kind: str, agreeing: int) -> ParticlePosterior:
    """A posterior after ``agreeing`` answers its particles' mean agrees with, then the mean's clearest
    contradiction, never resampled (so that the weights show every answer's likelihood)."""
    family = FamilySpec(kind, 2).family()
    rng = np.random.default_rng(seed)
    posterior = ParticlePosterior(family, DEFAULT_BETA_GRID, 200, rng, burn_in=2, lapse=lapse)
    mean = posterior.weights @ posterior.normalised()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(posterior_module, "RESAMPLE_THRESHOLD", 0.0)
        for _ in range(agreeing):
            feature = rng.standard_normal(family.dim)
            posterior.update(feature if feature @ mean > 0.0 else -feature)
        posterior.update(-mean / np.linalg.norm(mean))
    return posterior


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    lapse=st.floats(0.001, 0.5),
    kind=st.sampled_from(["linear", "quadratic"]),
    agreeing=st.integers(0, 6),
)
def test_with_a_lapse_one_contradicting_answer_leaves_every_particle_some_weight(
    seed: int, lapse: float, kind: str, agreeing: int
) -> None:
    posterior = _contradicted(lapse, seed, kind, agreeing)
    weights = posterior.weights
    assert np.all(np.isfinite(posterior.log_weights))
    assert np.all(weights > 0.0)
    # Every answer's likelihood lies in [lapse / 2, 1], so no particle falls further behind another than
    # a factor 2 / lapse per answer.
    assert np.min(weights) / np.max(weights) >= (lapse / 2.0) ** posterior.n_answers * (1.0 - 1e-9)


def test_without_a_lapse_the_same_contradiction_leaves_particles_no_weight() -> None:
    # The contrast the lapse is for: under the plain logistic model (its beta grid reaches 3000), one
    # answer against a sure belief drives the particles that held it to (numerically) zero weight.
    assert np.any(_contradicted(0.0, 0, "linear", 6).weights == 0.0)
    assert np.all(_contradicted(0.05, 0, "linear", 6).weights > 0.0)


def _ratio_covered(seed: int, lapse: float, oracle_lapse: float) -> bool:
    """Whether a lapsing cost-ratio clinician's true ratio lies in the elicitor's stated 90 % interval."""
    rng = np.random.default_rng(seed)
    ratio = float(np.exp(rng.uniform(np.log(2.0), np.log(30.0))))
    clinician = QuadraticMetric(DEMO_PRIORS * np.array([1.0, ratio]), np.zeros((2, 2)))
    elicitor = active_quadratic(
        DEMO_SPHERE,
        priors=DEMO_PRIORS,
        seed=seed,
        max_queries=24,
        sensible=True,
        estimate="consensus",
        search=LEAN_SEARCH,
        n_particles=300,
        shared_prior=True,
        lapse=lapse,
    )
    result = run(elicitor, LapseOracle(clinician, oracle_lapse, rng=np.random.default_rng([seed, 1])))
    base = result.details["cost_ratio_base"]
    low, high = result.details["intervals"]["cost_ratio"][1 - base]
    truth = ratio if base == 0 else 1.0 / ratio
    return bool(low <= truth <= high)


def test_a_lapsing_clinicians_ratio_interval_holds_the_truth_more_often_with_a_lapse_model() -> None:
    # Clinicians (a missed cancer costs c false alarms: not the elicitor's prior) who answer by a coin on a
    # fifth of the screens; the same people, seeds and answers' coins with and without the lapse model.
    seeds = range(20)
    plain = sum(_ratio_covered(seed, 0.0, 0.2) for seed in seeds)
    lapsing = sum(_ratio_covered(seed, 0.2, 0.2) for seed in seeds)
    assert lapsing >= 18  # about the stated 90 %
    assert lapsing >= plain + 3


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lapse": -0.01}, r"lapse must be a number in \[0, 1\)"),
        ({"lapse": 1.0}, r"lapse must be a number in \[0, 1\)"),
        ({"lapse": float("nan")}, r"lapse must be a number in \[0, 1\)"),
        ({"lapse": "a little"}, r"lapse must be a number in \[0, 1\)"),
        ({"lapse": True}, r"lapse must be a number in \[0, 1\)"),
        ({"lapse": 0.05, "beta": None}, "lapse needs a noisy answer model"),
    ],
)
def test_the_lapse_is_validated(options: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        active_quadratic(Sphere.around_uniform(2, 0.2), seed=0, **options)  # type: ignore[arg-type]


def test_a_zero_lapse_asks_and_answers_exactly_as_the_plain_model() -> None:
    clinician = QuadraticMetric(DEMO_PRIORS * np.array([1.0, 5.0]), np.zeros((2, 2)))

    def elicit(**lapse: float) -> Any:
        elicitor = active_quadratic(
            DEMO_SPHERE, priors=DEMO_PRIORS, seed=3, max_queries=8, n_particles=160, **lapse
        )
        return run(elicitor, LapseOracle(clinician, 0.2, rng=np.random.default_rng(4)))

    plain, zero, lapsing = elicit(), elicit(lapse=0.0), elicit(lapse=0.1)
    assert plain.metric.to_dict() == zero.metric.to_dict()
    assert [query.first.tolist() for query, _ in plain.log] == [query.first.tolist() for query, _ in zero.log]
    assert plain.metric.to_dict() != lapsing.metric.to_dict()
