"""A panel's metric: consensus, bootstrap intervals, agreement matrix and camps, for every metric family."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from elicitation import (
    FairQuadraticMetric,
    InvalidConfigError,
    LinearMetric,
    Metric,
    NumericalError,
    QuadraticMetric,
    Sphere,
)
from elicitation.evaluation import agreement
from elicitation.families import Draw, family_of, get_family
from elicitation.lab.simulation import simulate
from elicitation.panel import SPLIT_SILHOUETTE, agreement_matrix, camps, consensus, panel

TAU = np.array([[0.4, 0.7], [0.6, 0.3]])
#: Weight of a random metric of the family mixed into each expert's camp metric (expert-to-expert spread).
SPREAD = 0.1
#: Random candidates for the second camp's metric (the one least like the first is taken) ...
CANDIDATES = 20
#: ... and it must answer at most this share of random pairs like the first.
DISTINCT = 0.75
#: (family, algorithm, classes, logistic oracle noise) of the two-camp experiment. The noise is the inverse
#: temperature: 200 as in the expert benchmark; the fair cost's values differ less across the sphere, and
#: at 200 fair QPME's estimates agree with the expert's own metric on only 86-91 % of pairs on average
#: (less than the two camps differ), so its experts answer at 1000 (96-98 %).
SETTINGS = [
    ("linear", "lpme", 3, 200.0),
    ("quadratic", "qpme", 3, 200.0),
    ("fair_quadratic", "fair_qpme", 2, 1000.0),
]


def _sphere(k: int) -> Sphere:
    return Sphere.around_uniform(k, 0.2)


def _draw(family: str, k: int, rng: np.random.Generator) -> Metric:
    return get_family(family).random(rng, Draw(n_classes=k, sphere=_sphere(k), tau=TAU if k == 2 else None))


def _two_camps(
    family: str, algorithm: str, k: int, noise: float, seed: int
) -> tuple[list[Metric], list[int]]:
    """20 experts, alternating between two distinct camp metrics, each elicited from a noisy oracle."""
    rng = np.random.default_rng(seed)
    first = _draw(family, k, rng)
    # The second camp: the candidate that answers least like the first.
    candidates = [_draw(family, k, rng) for _ in range(CANDIDATES)]
    alike = [agreement(first, other, _sphere(k), rng, n_pairs=300) for other in candidates]
    second = candidates[int(np.argmin(alike))]
    assert min(alike) <= DISTINCT
    elicited, truth = [], []
    for index in range(20):
        camp = index % 2
        own = consensus([(first, second)[camp], _draw(family, k, rng)], weights=[1 - SPREAD, SPREAD])
        run = simulate(
            algorithm, n_classes=k, metric=own, noise="logistic", noise_level=noise, seed=seed * 100 + index
        )
        elicited.append(run.result.metric)
        truth.append(camp)
    return elicited, truth


@pytest.mark.parametrize(("family", "algorithm", "k", "noise"), SETTINGS, ids=[item[0] for item in SETTINGS])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_panel_recovers_two_camps_and_its_consensus_sits_between_them(
    family: str, algorithm: str, k: int, noise: float, seed: int
) -> None:
    metrics, truth = _two_camps(family, algorithm, k, noise, seed)
    result = panel(metrics, _sphere(k), seed)
    assert result.split and len(result.camps) == 2
    assert result.silhouette is not None and result.silhouette >= SPLIT_SILHOUETTE
    # The same partition as the truth (camp numbers may be swapped).
    assert {tuple(i for i in range(20) if result.camp_of[i] == c) for c in (0, 1)} == {
        tuple(i for i in range(20) if truth[i] == c) for c in (0, 1)
    }
    both = [list(camp.members) for camp in result.camps]
    for own, other in ((0, 1), (1, 0)):
        members, others = both[own], both[other]
        across = float(result.agreement[np.ix_(members, others)].mean())
        with_other_centre = agreement_matrix(
            [*(metrics[i] for i in members), result.camps[other].centre], _sphere(k), seed
        )[:-1, -1].mean()
        # The consensus answers like each camp's centre more often than that camp's members answer like the
        # other camp (its members, or its centre).
        assert result.camps[own].with_consensus > max(across, with_other_centre), (family, seed)
        assert result.camps[own].within is not None and result.camps[own].within > across


@pytest.mark.parametrize(("family", "algorithm", "k", "noise"), SETTINGS, ids=[item[0] for item in SETTINGS])
def test_panel_of_one_camp_does_not_split(family: str, algorithm: str, k: int, noise: float) -> None:
    rng = np.random.default_rng(11)
    centre = _draw(family, k, rng)
    metrics = []
    for index in range(20):
        own = consensus([centre, _draw(family, k, rng)], weights=[1 - SPREAD, SPREAD])
        metrics.append(
            simulate(
                algorithm, n_classes=k, metric=own, noise="logistic", noise_level=noise, seed=index
            ).result.metric
        )
    result = panel(metrics, _sphere(k), 5)
    assert not result.split and result.camp_of == (0,) * 20 and result.outliers == ()
    assert result.camps[0].members == tuple(range(20))
    assert result.silhouette is not None and result.silhouette < SPLIT_SILHOUETTE


def _members(family: str) -> list[Metric]:
    rng = np.random.default_rng(3)
    k = 2 if family == "fair_quadratic" else 3
    return [_draw(family, k, rng) for _ in range(5)]


def _rates(metric: Metric, rng: np.random.Generator, count: int) -> list[Any]:
    groups = family_of(metric).n_groups(metric)
    shape = (metric.n_classes,) if groups is None else (groups, metric.n_classes)
    return [0.4 + 0.2 * rng.random(shape) for _ in range(count)]


@pytest.mark.parametrize("family", ["linear", "quadratic", "fair_quadratic", "cubic"])
def test_consensus_scores_every_classifier_by_the_members_average_score(family: str) -> None:
    members = _members(family)
    centre = consensus(members)
    assert type(centre) is type(members[0])
    rates = _rates(members[0], np.random.default_rng(4), 50)
    mean = np.array([np.mean([metric(r) for metric in members]) for r in rates])
    own = np.array([centre(r) for r in rates])
    # The same function up to a positive factor (metrics are scale invariant).
    scale = own @ mean / (mean @ mean)
    assert scale > 0
    assert np.allclose(own, scale * mean, rtol=0, atol=1e-12)


@pytest.mark.parametrize("family", ["linear", "quadratic", "fair_quadratic", "cubic"])
def test_panel_features_times_panel_vector_is_the_metric(family: str) -> None:
    """The batch scoring the agreement matrix uses gives each metric's own value on every rate."""
    for metric in _members(family):
        rates = np.array(_rates(metric, np.random.default_rng(6), 30))
        scores = get_family(family).panel_features(rates, metric) @ get_family(family).panel_vector(metric)
        assert np.allclose(scores, [metric(r) for r in rates], rtol=0, atol=1e-12)


@pytest.mark.parametrize("family", ["linear", "quadratic", "fair_quadratic", "cubic"])
def test_consensus_of_one_metric_repeated_is_that_metric(family: str) -> None:
    metric = _members(family)[0]
    same = consensus([metric, metric, metric])
    assert np.allclose(
        family_of(metric).panel_vector(same), family_of(metric).panel_vector(metric), atol=1e-12
    )


def _fair(lam: float, B: Any, a: Any = (0.4, 0.9)) -> FairQuadraticMetric:
    return FairQuadraticMetric(a=np.array(a), B_pairs={(0, 1): np.array(B)}, lam=lam, tau=TAU)


def test_fair_consensus_handles_a_panel_that_ignores_one_part_of_the_cost() -> None:
    no_gap = consensus([_fair(0.0, [[1.0, 0.0], [0.0, 0.2]]), _fair(0.0, [[0.2, 0.0], [0.0, 1.0]])])
    assert isinstance(no_gap, FairQuadraticMetric) and no_gap.lam == 0.0
    only_gap = consensus(
        [_fair(1.0, [[1.0, 0.0], [0.0, 0.2]], (1, 0)), _fair(1.0, [[1.0, 0.0], [0.0, 0.2]], (0, 1))]
    )
    assert isinstance(only_gap, FairQuadraticMetric) and only_gap.lam == 1.0
    assert np.allclose(only_gap.a, [2**-0.5, 2**-0.5])
    # Half the panel on errors alone, half on the gap alone: the consensus weighs both.
    mixed = consensus([_fair(0.0, [[1.0, 0.0], [0.0, 1.0]]), _fair(1.0, [[1.0, 0.0], [0.0, 1.0]])])
    assert isinstance(mixed, FairQuadraticMetric) and mixed.lam == pytest.approx(0.5)


def test_consensus_weights_and_refusals() -> None:
    up, right = LinearMetric(np.array([0.0, 1.0])), LinearMetric(np.array([1.0, 0.0]))
    assert np.allclose(consensus([up, right], weights=[3, 1]).a, np.array([1.0, 3.0]) / np.sqrt(10))
    with pytest.raises(NumericalError, match="cancel out"):
        consensus([up, LinearMetric(np.array([0.0, -1.0]))])
    with pytest.raises(InvalidConfigError, match="weights"):
        consensus([up, right], weights=[1, -1])
    with pytest.raises(InvalidConfigError, match="LinearMetric"):
        consensus([up, QuadraticMetric(np.array([1.0, 0.0]), np.zeros((2, 2)))])
    with pytest.raises(InvalidConfigError, match="same classes"):
        consensus([up, LinearMetric(np.array([1.0, 0.0, 0.0]))])
    other_tau = FairQuadraticMetric(
        a=np.array([0.4, 0.9]), B_pairs={(0, 1): np.eye(2)}, lam=0.3, tau=np.array([[0.5, 0.5], [0.5, 0.5]])
    )
    with pytest.raises(InvalidConfigError, match="tau"):
        consensus([_fair(0.3, np.eye(2)), other_tau])
    with pytest.raises(InvalidConfigError, match="at least one"):
        consensus([])


def test_agreement_matrix_is_the_evaluation_agreement_on_shared_pairs() -> None:
    members = _members("quadratic")
    matrix = agreement_matrix(members, _sphere(3), 9, n_pairs=400)
    assert np.array_equal(matrix, matrix.T) and np.all(np.diag(matrix) == 1.0)
    for i in range(len(members)):
        for j in range(len(members)):
            assert matrix[i, j] == agreement(members[i], members[j], _sphere(3), 9, n_pairs=400)


def test_fair_agreement_pairs_come_from_each_groups_own_sphere() -> None:
    rng = np.random.default_rng(4)
    members = [_draw("fair_quadratic", 2, rng) for _ in range(4)]
    spheres = [Sphere(np.array([0.9, 0.55]), 0.03), Sphere(np.array([0.8, 0.5]), 0.08)]
    matrix = agreement_matrix(members, spheres, 9, n_pairs=400)
    for i in range(len(members)):
        for j in range(len(members)):
            assert matrix[i, j] == agreement(members[i], members[j], spheres, 9, n_pairs=400)
    with pytest.raises(InvalidConfigError, match="sphere"):
        agreement_matrix(members, [Sphere.around_uniform(3, 0.1)] * 2, 9)


def test_panel_is_reproducible_from_an_integer_seed_and_reports_intervals() -> None:
    members = _members("linear")
    first, again = panel(members, _sphere(3), 21), panel(members, _sphere(3), np.random.default_rng(21))
    assert first.to_dict() == again.to_dict()
    assert set(first.coefficients) == {"a_0", "a_1", "a_2"}
    for item in first.coefficients.values():
        assert item.low <= item.value <= item.high
    assert first.mean_agreement.low <= first.mean_agreement.value <= first.mean_agreement.high
    assert np.allclose(first.consensus.a, [first.coefficients[f"a_{i}"].value for i in range(3)])
    named = panel(members, _sphere(3), 21, class_names=["x", "y", "z"])
    assert set(named.coefficients) == {"a_x", "a_y", "a_z"}
    assert first.positions.shape == (5, 2) and first.with_consensus.shape == (5,)


def test_bootstrap_interval_narrows_as_the_panel_agrees() -> None:
    rng = np.random.default_rng(8)
    centre = np.array([0.8, 0.5, 0.3])

    def width(spread: float) -> float:
        members = [LinearMetric(centre + spread * rng.standard_normal(3)) for _ in range(15)]
        item = panel(members, _sphere(3), 1).coefficients["a_0"]
        return item.high - item.low

    assert width(0.02) < width(0.3) / 3


def test_panel_refuses_bad_arguments() -> None:
    members = _members("linear")
    with pytest.raises(InvalidConfigError, match="at least two"):
        panel(members[:1], _sphere(3), 0)
    with pytest.raises(InvalidConfigError, match="level"):
        panel(members, _sphere(3), 0, level=1.0)
    with pytest.raises(InvalidConfigError, match="n_bootstrap"):
        panel(members, _sphere(3), 0, n_bootstrap=3)
    with pytest.raises(InvalidConfigError, match="sphere"):
        panel(members, _sphere(2), 0)
    with pytest.raises(InvalidConfigError, match="rng"):
        panel(members, _sphere(3), -1)
    with pytest.raises(InvalidConfigError, match="class_names"):
        panel(members, _sphere(3), 0, class_names=["x"])


def _blocks(sizes: list[int], inside: float = 0.98, across: float = 0.6) -> np.ndarray:
    labels = np.repeat(np.arange(len(sizes)), sizes)
    matrix = np.where(labels[:, None] == labels[None, :], inside, across)
    np.fill_diagonal(matrix, 1.0)
    return matrix


def test_camps_of_small_or_uniform_panels() -> None:
    assert camps(np.ones((3, 3))).camp_of == (0, 0, 0)
    uniform = camps(np.ones((5, 5)))
    assert uniform.camp_of == (0,) * 5 and uniform.outliers == ()
    # Two tight groups of three and two, shuffled: split, the larger group first.
    order = [3, 0, 4, 1, 2]
    split = camps(_blocks([3, 2])[np.ix_(order, order)])
    assert split.camp_of == (1, 0, 1, 0, 0) and split.silhouette is not None and split.silhouette > 0.9


def test_a_lone_dissenter_is_an_outlier_not_a_camp() -> None:
    matrix = _blocks([9, 9, 1])
    matrix[18, :9] = matrix[:9, 18] = 0.7  # closer to the first camp than to the second
    split = camps(matrix)
    assert split.n_camps == 2 and split.outliers == (18,)
    assert split.camp_of == (0,) * 9 + (1,) * 9 + (0,)
    # One camp and a dissenter: no split at all.
    single = camps(_blocks([18, 1]))
    assert single.n_camps == 1 and single.outliers == ()
    with pytest.raises(InvalidConfigError, match="symmetric"):
        camps(np.array([[1.0, 0.2], [0.3, 1.0]]))
