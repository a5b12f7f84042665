"""The paper's example metrics order rate pairs exactly like their formulas written out literally."""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations

import numpy as np
import pytest

from elicitation import FairQuadraticMetric, InvalidConfigError, Metric, QuadraticMetric
from elicitation.examples import (
    balance_for_negative_class,
    coverage_matching,
    equal_opportunity,
    equalized_odds,
    error_rate_balance,
    general_coverage_matching,
    q_mean,
)

N_PAIRS = 300
#: Pairs whose literal values differ by less than this are skipped (rounding could flip the order).
TIE = 1e-12

Formula = Callable[[np.ndarray], float]


def assert_same_order(
    metric: Metric, formula: Formula, pairs: list[tuple[np.ndarray, np.ndarray]], *, cost: bool
) -> None:
    checked = 0
    for first, second in pairs:
        literal_first, literal_second = formula(first), formula(second)
        if abs(literal_first - literal_second) < TIE:
            continue
        expected = literal_first < literal_second if cost else literal_first > literal_second
        assert metric.prefers(first, second) == expected
        checked += 1
    assert checked > 0.9 * len(pairs)


def random_pairs(seed: int, shape: tuple[int, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(rng.random(shape), rng.random(shape)) for _ in range(N_PAIRS)]


@pytest.mark.parametrize("k", [2, 3, 5])
def test_q_mean_matches_example_1(k: int) -> None:
    def literal(r: np.ndarray) -> float:
        return 1.0 - 1.0 / k * sum((1.0 - r[i]) ** 2 for i in range(k))

    metric = q_mean(k)
    assert_same_order(metric, literal, random_pairs(k, (k,)), cost=False)
    assert metric.a @ metric.a + np.sum(metric.B**2) == pytest.approx(1.0)


@pytest.mark.parametrize("target", [(0.5, 0.5), (0.3, 0.7), (0.9, 0.1)])
def test_coverage_matching_matches_example_2(target: tuple[float, float]) -> None:
    pi = np.array(target)

    def literal(r: np.ndarray) -> float:
        cov = [r[0] + 1.0 - r[1], r[1] + 1.0 - r[0]]
        return 1.0 - 0.5 * sum((cov[i] - pi[i]) ** 2 for i in range(2))

    assert_same_order(coverage_matching(target), literal, random_pairs(1, (2,)), cost=False)


def test_coverage_matching_with_a_general_nsd_weight_matrix() -> None:
    pi = np.array([0.25, 0.75])
    Q = -np.array([[2.0, 0.5], [0.5, 1.0]])

    def literal(r: np.ndarray) -> float:
        cov = np.array([r[0] + 1.0 - r[1], r[1] + 1.0 - r[0]])
        return float((cov - pi) @ Q @ (cov - pi))

    assert_same_order(coverage_matching(pi, Q), literal, random_pairs(2, (2,)), cost=False)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_general_coverage_matching_matches_appendix_e(k: int) -> None:
    rng = np.random.default_rng(k)
    pi = rng.dirichlet(np.ones(k))

    def literal_cost(r: np.ndarray) -> float:
        # Appendix E, 1-based: cov_i = 1 - sum_{j<k} r_{(i-1)(k-1)+j} + sum_{j>i} r_{(j-1)(k-1)+i}
        #                              + sum_{j<i} r_{(j-1)(k-1)+i-1}
        def at(index: int) -> float:
            return float(r[index - 1])

        total = 0.0
        for i in range(1, k + 1):
            cov = 1.0 - sum(at((i - 1) * (k - 1) + j) for j in range(1, k))
            cov += sum(at((j - 1) * (k - 1) + i) for j in range(i + 1, k + 1))
            cov += sum(at((j - 1) * (k - 1) + i - 1) for j in range(1, i))
            total += (cov - pi[i - 1]) ** 2
        return total

    def offdiagonal(matrix: np.ndarray) -> np.ndarray:
        return np.array([matrix[i, j] for i in range(k) for j in range(k) if i != j])

    pairs = [
        (offdiagonal(rng.dirichlet(np.ones(k), size=k)), offdiagonal(rng.dirichlet(np.ones(k), size=k)))
        for _ in range(N_PAIRS)
    ]
    metric = general_coverage_matching(pi)
    assert metric.n_classes == k * k - k
    assert_same_order(metric, literal_cost, pairs, cost=True)


def test_general_coverage_matching_with_weights_and_bad_input() -> None:
    pi = np.array([0.2, 0.3, 0.5])
    Q = np.diag([1.0, 2.0, 0.5])
    metric = general_coverage_matching(pi, Q)
    assert isinstance(metric, QuadraticMetric)
    with pytest.raises(InvalidConfigError, match="positive semi-definite"):
        general_coverage_matching(pi, -Q)
    with pytest.raises(InvalidConfigError, match="distribution"):
        general_coverage_matching([0.5, 0.6, 0.1])


def _literal_fair(a: np.ndarray, tau: np.ndarray, lam: float, scale: float, violation: Formula) -> Formula:
    unit = a / np.linalg.norm(a)

    def value(r: np.ndarray) -> float:
        overall = np.sum(tau * r, axis=0)
        return float((1.0 - lam) * unit @ (1.0 - overall) + lam * scale * violation(r))

    return value


FAIR_CASES: list[tuple[str, Callable[..., FairQuadraticMetric], Callable[[int, int], Formula], int]] = [
    (
        "equal opportunity",
        equal_opportunity,
        lambda m, k: (
            lambda r: sum((r[u][0] - r[v][0]) ** 2 for u, v in combinations(range(m), 2)) / (m * (m - 1) / 2)
        ),
        2,
    ),
    (
        "balance for the negative class",
        balance_for_negative_class,
        lambda m, k: (
            lambda r: sum((r[u][1] - r[v][1]) ** 2 for u, v in combinations(range(m), 2)) / (m * (m - 1) / 2)
        ),
        2,
    ),
    (
        "error-rate balance",
        error_rate_balance,
        lambda m, k: (
            lambda r: (
                sum(
                    0.5 * ((r[u][0] - r[v][0]) ** 2 + (r[u][1] - r[v][1]) ** 2)
                    for u, v in combinations(range(m), 2)
                )
                / (m * (m - 1) / 2)
            )
        ),
        2,
    ),
    (
        "equalized odds",
        equalized_odds,
        lambda m, k: (
            lambda r: (
                sum((r[u][i] - r[v][i]) ** 2 for u, v in combinations(range(m), 2) for i in range(k))
                / (k * m * (m - 1) / 2)
            )
        ),
        3,
    ),
]


@pytest.mark.parametrize(("name", "build", "formula", "k"), FAIR_CASES, ids=[case[0] for case in FAIR_CASES])
@pytest.mark.parametrize("m", [2, 3])
def test_fairness_violations_match_example_3(
    name: str,
    build: Callable[..., FairQuadraticMetric],
    formula: Callable[[int, int], Formula],
    k: int,
    m: int,
) -> None:
    rng = np.random.default_rng(m * 7 + k)
    tau = rng.dirichlet(np.ones(m), size=k).T
    a = rng.random(k) + 0.1
    violation = formula(m, k)
    pairs = random_pairs(m, (m, k))

    # lam = 1: the metric is the (rescaled) violation alone.
    pure = build(a, 1.0, tau)
    assert isinstance(pure, FairQuadraticMetric)
    assert_same_order(pure, violation, pairs, cost=True)

    # The violation term is the literal formula times one positive constant...
    ratios = [pure.violation(r) / violation(r) for r, _ in pairs if violation(r) > 1e-9]
    assert np.allclose(ratios, ratios[0]) and ratios[0] > 0.0
    # ...so for any lam the metric is Definition 3 with that rescaled violation.
    lam = 0.4
    mixed = build(a, lam, tau)
    assert_same_order(mixed, _literal_fair(a, tau, lam, ratios[0], violation), pairs, cost=True)


def test_weighted_equalized_odds_and_error_rate_balance() -> None:
    tau = np.array([[0.5, 0.5], [0.5, 0.5]])
    weights = np.array([3.0, 1.0])

    def weighted(r: np.ndarray) -> float:
        return float(weights @ (r[0] - r[1]) ** 2)

    pairs = random_pairs(5, (2, 2))
    assert_same_order(equalized_odds([1.0, 1.0], 1.0, tau, class_weights=weights), weighted, pairs, cost=True)
    assert_same_order(
        error_rate_balance([1.0, 1.0], 1.0, tau, class_weights=weights), weighted, pairs, cost=True
    )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: q_mean(1), "n_classes"),
        (lambda: coverage_matching([0.5, 0.6]), "distribution"),
        (lambda: coverage_matching([0.2, 0.3, 0.5]), "2 entries"),
        (lambda: coverage_matching([0.5, 0.5], np.eye(2)), "negative semi-definite"),
        (lambda: coverage_matching([0.5, 0.5], [[-1.0, 0.3], [0.0, -1.0]]), "symmetric"),
        (lambda: equal_opportunity([1.0, 1.0, 1.0], 0.5, np.full((2, 3), 0.5)), "2 columns"),
        (lambda: equal_opportunity([1.0, 1.0], 0.5, np.ones((1, 2))), "at least 2 groups"),
        (lambda: equal_opportunity([1.0, 1.0], 1.5, np.full((2, 2), 0.5)), "lam"),
        (
            lambda: equalized_odds([1.0, 1.0], 0.5, np.full((2, 2), 0.5), class_weights=[-1.0, 1.0]),
            "class_weights",
        ),
        (lambda: equalized_odds(1.0, 0.5, np.full((2, 2), 0.5)), "costs"),
    ],
)
def test_examples_reject_bad_input(call: Callable[[], object], match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        call()
