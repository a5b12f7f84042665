"""Tests for the best-rates optimiser on a feasible set given by its vertices (elicitation.optimal)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from elicitation.errors import InvalidConfigError
from elicitation.families import Draw, get_family
from elicitation.optimal import best_rates
from elicitation.oracles import random_fair_metric
from elicitation.types import LinearMetric, QuadraticMetric
from elicitation.variants import CubicMetric

#: The optimiser's answer and an independent search agree this closely on the value.
VALUE_ATOL = 1e-9


def _polytope(rng: np.random.Generator, k: int, extra: int) -> np.ndarray:
    """The trivial classifiers plus random rate points (like a dataset's plug-ins)."""
    return np.vstack([np.eye(k), rng.random((extra, k))])


def _multistart_slsqp(
    metric: QuadraticMetric, vertices: np.ndarray, rng: np.random.Generator, starts: int = 2
) -> float:
    """An independent route: SLSQP on the mixture weights from random starts (maximising)."""
    best = -np.inf
    n = vertices.shape[0]
    for _ in range(starts):
        result = minimize(
            lambda lam: -metric(lam @ vertices),
            rng.dirichlet(np.ones(n)),
            jac=lambda lam: -vertices @ (metric.a + metric.B @ (lam @ vertices)),
            method="SLSQP",
            bounds=[(0.0, 1.0)] * n,
            constraints=[{"type": "eq", "fun": lambda lam: lam.sum() - 1.0}],
            options={"ftol": 1e-14, "maxiter": 1000},
        )
        best = max(best, -float(result.fun))
    return best


@pytest.mark.parametrize("generator", ["authors", "wishart"])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_best_rates_matches_an_independent_search_for_quadratic_metrics(k: int, generator: str) -> None:
    rng = np.random.default_rng(k * 7 + len(generator))
    family = get_family("quadratic")
    for _ in range(5):
        vertices = _polytope(rng, k, int(rng.integers(3, 30)))
        metric = family.random(rng, Draw(k, generator=generator))
        found = best_rates(metric, vertices)
        assert found.method == "concave" and found.exact
        assert found.gap <= 1e-10
        assert found.value >= _multistart_slsqp(metric, vertices, rng) - VALUE_ATOL
        np.testing.assert_allclose(found.mixtures[0] @ vertices, found.rates, atol=1e-12)
        assert found.mixtures[0].min() >= 0.0 and found.mixtures[0].sum() == pytest.approx(1.0, abs=1e-12)
        assert found.value == metric(found.rates)


def test_best_rates_finds_an_interior_optimum_exactly() -> None:
    """``phi(r) = <c, r> - 1/2 ||r||^2`` peaks at ``c``; inside the hull the optimiser lands on it."""
    rng = np.random.default_rng(4)
    for k in (2, 3, 4):
        vertices = _polytope(rng, k, 30)
        target = vertices[k:].mean(axis=0)
        found = best_rates(QuadraticMetric(target, -np.eye(k)), vertices)
        np.testing.assert_allclose(found.rates, target, atol=1e-12)
        assert found.gap <= 1e-12


def test_best_rates_of_a_linear_metric_is_its_best_vertex() -> None:
    rng = np.random.default_rng(5)
    vertices = _polytope(rng, 4, 50)
    metric = LinearMetric(rng.normal(size=4))
    found = best_rates(metric, vertices)
    best = int(np.argmax(vertices @ metric.a))
    assert found.method == "vertex" and found.gap == 0.0
    assert found.mixtures[0][best] == 1.0
    np.testing.assert_array_equal(found.rates, vertices[best])


def test_best_rates_minimises_a_fair_cost_over_each_groups_hull() -> None:
    rng = np.random.default_rng(6)
    for k, m in ((2, 2), (3, 2), (2, 3)):
        metric = random_fair_metric(rng, k, m)
        vertices = [_polytope(rng, k, 8) for _ in range(m)]
        found = best_rates(metric, vertices)
        assert found.rates.shape == (m, k) and found.exact and found.gap <= 1e-10
        for g in range(m):
            np.testing.assert_allclose(found.mixtures[g] @ vertices[g], found.rates[g], atol=1e-12)
        # an independent search over all groups' weights at once
        sizes = [v.shape[0] for v in vertices]
        cuts = np.cumsum([0, *sizes])

        def cost(lam: np.ndarray, metric=metric, cuts=cuts, vertices=vertices) -> float:
            return metric(np.stack([lam[cuts[g] : cuts[g + 1]] @ vertices[g] for g in range(len(vertices))]))

        best = np.inf
        for _ in range(2):
            result = minimize(
                cost,
                np.concatenate([rng.dirichlet(np.ones(n)) for n in sizes]),
                method="SLSQP",
                bounds=[(0.0, 1.0)] * cuts[-1],
                constraints=[
                    {
                        "type": "eq",
                        "fun": (lambda lam, g=g, cuts=cuts: lam[cuts[g] : cuts[g + 1]].sum() - 1.0),
                    }
                    for g in range(m)
                ],
                options={"ftol": 1e-14, "maxiter": 1000},
            )
            best = min(best, float(result.fun))
        assert found.value <= best + VALUE_ATOL


def test_best_rates_searches_a_cubic_metric_locally_and_says_so() -> None:
    rng = np.random.default_rng(7)
    k = 3
    vertices = _polytope(rng, k, 20)
    metric = get_family("cubic").random(rng, Draw(k))
    assert isinstance(metric, CubicMetric)
    found = best_rates(metric, vertices)
    assert found.method == "local" and not found.exact
    assert found.value >= max(metric(v) for v in vertices) - 1e-12
    np.testing.assert_allclose(found.mixtures[0] @ vertices, found.rates, atol=1e-12)


@pytest.mark.parametrize(
    ("vertices", "message"),
    [
        (np.eye(3), "shape"),
        (np.array([[0.2, 1.4]]), r"\[0, 1\]"),
        ([np.eye(2), np.eye(2)], "1 group"),
    ],
)
def test_best_rates_refuses_vertices_that_do_not_fit(vertices: object, message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        best_rates(LinearMetric(np.array([1.0, 2.0])), vertices)  # type: ignore[arg-type]


def test_best_rates_refuses_a_bad_tolerance() -> None:
    with pytest.raises(InvalidConfigError, match="tolerance"):
        best_rates(LinearMetric(np.array([1.0, 2.0])), np.eye(2), tolerance=0.0)
