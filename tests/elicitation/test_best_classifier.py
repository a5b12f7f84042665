"""Tests for the best classifier of a metric on real datasets (elicitation.lab.optimal).

The bars: for two classes the optimiser's value is within 1e-6 of a brute-force grid search over the
feasible set (breast cancer, and Adult with groups for the fair cost); for more classes it is at least every
trained classifier's value; its randomised classifier reproduces the optimal rates on the held-out data.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.spatial import ConvexHull

from elicitation.errors import InvalidConfigError
from elicitation.families import Draw, get_family
from elicitation.lab.datasets import load_dataset
from elicitation.lab.feasible import FeasibleModel, fit_feasible_model, plug_in_predictions
from elicitation.lab.optimal import (
    accuracy_classifier,
    best_classifier,
    refined_best_classifier,
    trained_classifiers,
)
from elicitation.types import FairQuadraticMetric, LinearMetric, Metric, QuadraticMetric

#: The bar: optimiser and brute force agree this closely (k = 2); rates reproduced this closely.
BAR = 1e-6
#: Grid points per axis of the first, global pass and of each refinement around the best point.
GLOBAL_GRID, LOCAL_GRID = 161, 25
#: Points per hull edge (the optimum of a metric that rises towards better classifiers is on an edge), in
#: the global pass (one group; two groups) and in each refinement.
EDGE_POINTS, PAIR_EDGE_POINTS, LOCAL_EDGE_POINTS = 400, 60, 40
#: Each refinement shrinks the searched box by this factor; this many refinements.
SHRINK, REFINEMENTS = 0.25, 14


@pytest.fixture(scope="module")
def cancer() -> FeasibleModel:
    return fit_feasible_model(load_dataset("breast-cancer"), seed=0)


@pytest.fixture(scope="module")
def adult_fair() -> FeasibleModel:
    return fit_feasible_model(load_dataset("adult", groups=True), seed=0)


@pytest.fixture(scope="module")
def vehicle() -> FeasibleModel:
    return fit_feasible_model(load_dataset("vehicle"), seed=0)


@pytest.fixture(scope="module", params=["wine", "vehicle"])
def multiclass(request: pytest.FixtureRequest) -> FeasibleModel:
    return fit_feasible_model(load_dataset(request.param), seed=0)


# -- brute force over a polygon (k = 2) ------------------------------------------------------------


class _Polygon:
    """A group's feasible set for two classes: the hull of its classifiers' rates."""

    def __init__(self, points: np.ndarray) -> None:
        hull = ConvexHull(points)
        self.corners = points[hull.vertices]  # counter-clockwise
        self.equations = hull.equations  # normal . x + offset <= 0 inside

    def inside(self, points: np.ndarray) -> np.ndarray:
        return np.all(points @ self.equations[:, :2].T + self.equations[:, 2] <= 1e-12, axis=1)

    def sample(self, center: np.ndarray, half: float, grid: int, edge_points: int) -> np.ndarray:
        """Grid points of the box ``center +- half`` inside the polygon, plus its edges and corners there."""
        axis = np.linspace(-half, half, grid)
        box = center + np.array(list(itertools.product(axis, axis)))
        points = [box[self.inside(box)], self.corners]
        t = np.linspace(0.0, 1.0, edge_points)[:, None]
        for p, q in zip(self.corners, np.roll(self.corners, -1, axis=0), strict=True):
            edge = p + t * (q - p)
            # a long edge gets its points where the box is: clip the edge to the box first
            near = edge[np.all(np.abs(edge - center) <= half, axis=1)]
            if near.shape[0] >= 2:
                edge = near[0] + t * (near[-1] - near[0])
            points.append(edge)
        found = np.vstack(points)
        return found[np.all(np.abs(found - center) <= half + 1e-15, axis=1)]


def _values(metric: Metric, points: list[np.ndarray]) -> np.ndarray:
    """The metric (as a utility: higher is better) on every combination of one point per group.

    Written from the metrics' definitions, independently of the optimiser's quadratic forms.
    """
    if isinstance(metric, QuadraticMetric | LinearMetric):
        (r,) = points
        value = r @ metric.a
        if isinstance(metric, QuadraticMetric):
            value = value + 0.5 * np.einsum("ni,ij,nj->n", r, metric.B, r)
        return value
    assert isinstance(metric, FairQuadraticMetric) and len(points) == 2
    r0, r1 = points[0][:, None, :], points[1][None, :, :]
    overall = metric.tau[0] * r0 + metric.tau[1] * r1
    error = (1.0 - overall) @ metric.a
    gap = r0 - r1
    B = metric.B_pairs[(0, 1)]
    violation = 0.5 * (
        B[0, 0] * gap[..., 0] ** 2 + 2.0 * B[0, 1] * gap[..., 0] * gap[..., 1] + B[1, 1] * gap[..., 1] ** 2
    )
    return -((1.0 - metric.lam) * error + metric.lam * violation)


def _brute_force(metric: Metric, polygons: list[_Polygon]) -> float:
    """Grid search over the product of the groups' polygons, refined around its best point."""
    lows = [p.corners.min(axis=0) for p in polygons]
    highs = [p.corners.max(axis=0) for p in polygons]
    centers = [(lo + hi) / 2 for lo, hi in zip(lows, highs, strict=True)]
    half = max(float(np.max(hi - lo)) / 2 for lo, hi in zip(lows, highs, strict=True))
    grid = GLOBAL_GRID if len(polygons) == 1 else 41
    edges = EDGE_POINTS if len(polygons) == 1 else PAIR_EDGE_POINTS
    best = -np.inf
    for _ in range(REFINEMENTS + 1):
        samples = [p.sample(c, half, grid, edges) for p, c in zip(polygons, centers, strict=True)]
        values = _values(metric, samples)
        index = np.unravel_index(int(np.argmax(values)), values.shape)
        if values[index] > best:
            best = float(values[index])
            centers = [samples[g][index[g]] for g in range(len(polygons))]
        half *= SHRINK if grid == LOCAL_GRID else 4.0 / grid
        grid, edges = LOCAL_GRID, LOCAL_EDGE_POINTS
    return best


def _utility(metric: Metric, value: float) -> float:
    return value if metric.higher_is_better else -value


def _cancer_metrics(model: FeasibleModel) -> list[Metric]:
    space = model.space
    rng = np.random.default_rng(1)
    family = get_family("quadratic")
    metrics: list[Metric] = [
        family.random(rng, Draw(2, sphere=space.sphere, generator=generator))
        for generator in ("authors", "wishart", "authors", "wishart")
    ]
    inside = space.plug_in_rates()[2:].mean(axis=0)
    metrics.append(QuadraticMetric(inside, -np.eye(2)))  # peaks inside the feasible set
    metrics.append(LinearMetric(np.array([3.0, 1.0])))
    return metrics


def _held_out_rates(model: FeasibleModel, found: object, group: int) -> np.ndarray:
    """Rates of a randomised classifier recomputed from its plug-ins' predictions on the held-out rows."""
    space = model.space
    labels = model.dataset.labels[model.test_rows]
    groups = (
        model.dataset.groups[model.test_rows]
        if model.dataset.groups is not None
        else np.zeros(labels.shape[0], dtype=np.int64)
    )
    rows = groups == group
    classifier = found.classifiers[group]  # type: ignore[attr-defined]
    k = space.n_classes
    rates = np.zeros(k)
    for weights, probability in zip(classifier.weights, classifier.probabilities, strict=True):
        predictions = plug_in_predictions(model.eta[rows], weights)
        truth = labels[rows]
        per_class = np.array([np.mean(predictions[truth == i] == i) for i in range(k)])
        rates += probability * per_class
    return rates


def test_breast_cancer_optimum_matches_brute_force(cancer: FeasibleModel) -> None:
    space = cancer.space
    polygon = _Polygon(space.plug_in_rates())
    for metric in _cancer_metrics(cancer):
        found = best_classifier(space, metric)
        brute = _brute_force(metric, [polygon])
        value = _utility(metric, found.optimum.value)
        assert abs(value - brute) <= BAR, (metric, value, brute)
        assert value >= brute - 1e-12  # the grid never beats the optimiser
        np.testing.assert_allclose(_held_out_rates(cancer, found, 0), found.optimum.rates, atol=BAR)
        np.testing.assert_allclose(found.rates, found.optimum.rates, atol=BAR)


def test_adult_fair_optimum_matches_brute_force_per_group(adult_fair: FeasibleModel) -> None:
    space = adult_fair.space
    rng = np.random.default_rng(2)
    polygons = [_Polygon(space.plug_in_rates(g)) for g in range(space.n_groups)]
    family = get_family("fair_quadratic")
    for generator, lam in (("authors", None), ("wishart", None), ("authors", 0.0), ("authors", 0.9)):
        metric = family.random(rng, Draw(2, n_groups=2, tau=space.tau, generator=generator))
        assert isinstance(metric, FairQuadraticMetric)
        if lam is not None:
            metric = FairQuadraticMetric(metric.a, dict(metric.B_pairs), lam, metric.tau)
        found = best_classifier(space, metric)
        assert found.optimum.rates.shape == (2, 2) and found.optimum.exact
        brute = _brute_force(metric, polygons)
        value = _utility(metric, found.optimum.value)
        assert abs(value - brute) <= BAR, (metric.lam, value, brute)
        assert value >= brute - 1e-12
        for g in range(2):
            np.testing.assert_allclose(
                _held_out_rates(adult_fair, found, g), found.optimum.rates[g], atol=BAR
            )


def test_multiclass_optimum_beats_every_trained_classifier(multiclass: FeasibleModel) -> None:
    space = multiclass.space
    k = space.n_classes
    rng = np.random.default_rng(3)
    family = get_family("quadratic")
    trained = trained_classifiers(space)
    assert trained.shape[0] >= 10
    for generator in ("authors", "wishart", "authors"):
        metric = family.random(rng, Draw(k, sphere=space.sphere, generator=generator))
        found = best_classifier(space, metric)
        assert found.optimum.exact and found.optimum.gap <= 1e-9
        assert found.optimum.value >= max(metric(r) for r in trained)
        # and every mixture of them: random points of the hull
        mixtures = rng.dirichlet(np.full(space.n_plug_ins(), 0.3), size=2000) @ space.plug_in_rates()
        assert found.optimum.value >= max(metric(r) for r in mixtures)
        assert all(len(c.probabilities) <= k + 1 for c in found.classifiers)
        np.testing.assert_allclose(_held_out_rates(multiclass, found, 0), found.optimum.rates, atol=BAR)


def test_accuracy_classifier_is_the_most_accurate_plug_in(cancer: FeasibleModel) -> None:
    space = cancer.space
    found = accuracy_classifier(space)
    priors = np.asarray(space.priors).reshape(-1)
    accuracy = space.plug_in_rates() @ priors
    assert float(found.rates @ priors) == pytest.approx(float(accuracy.max()), abs=1e-12)
    assert float(np.trace(found.confusion)) == pytest.approx(100.0 * float(accuracy.max()), abs=1e-9)


def test_a_metric_without_groups_gets_each_groups_best_classifier(adult_fair: FeasibleModel) -> None:
    space = adult_fair.space
    metric = QuadraticMetric(np.array([0.6, 0.8]), -0.1 * np.eye(2))
    found = best_classifier(space, metric)
    assert found.rates.shape == (2, 2)
    for g in range(2):
        assert metric(found.rates[g]) >= max(metric(r) for r in space.plug_in_rates(g)) - 1e-12


def test_best_classifier_refuses_a_metric_of_another_shape(cancer: FeasibleModel) -> None:
    with pytest.raises(InvalidConfigError, match="3 classes"):
        best_classifier(cancer.space, LinearMetric(np.ones(3)))


@pytest.mark.parametrize("fixture", ["vehicle", "adult_fair"])
def test_refined_best_classifier_grows_the_feasible_set_towards_the_optimum(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    model: FeasibleModel = request.getfixturevalue(fixture)
    space = model.space
    k, m = space.n_classes, space.n_groups
    family = get_family("fair_quadratic" if m > 1 else "quadratic")
    rng = np.random.default_rng(5)
    for generator in ("authors", "wishart"):
        metric = family.random(
            rng, Draw(k, sphere=space.sphere, n_groups=m, tau=space.tau, generator=generator)
        )
        plain = best_classifier(space, metric)
        found, grown = refined_best_classifier(model, metric)
        sign = 1.0 if metric.higher_is_better else -1.0
        assert sign * (found.optimum.value - plain.optimum.value) >= -1e-12
        assert all(grown.n_plug_ins(g) >= space.n_plug_ins(g) for g in range(m))
        # stopped because no plug-in for the optimum's slope does better: optimal among eta_hat's plug-ins
        form = family.quadratic_form(metric)
        assert form is not None
        rates = np.atleast_2d(found.optimum.rates)
        slopes = (form.linear + form.hessian @ rates.reshape(-1)).reshape(-1, k)
        for g in range(m):
            rows = model.test_groups == g
            labels = model.test_labels[rows]
            priors = np.bincount(labels, minlength=k) / labels.shape[0]
            predictions = plug_in_predictions(model.eta[rows], slopes[g] / priors)
            best_rates = np.array([np.mean(predictions[labels == i] == i) for i in range(k)])
            assert slopes[g] @ best_rates <= slopes[g] @ rates[g] + 1e-9
            np.testing.assert_allclose(_held_out_rates(model, found, g), rates[g], atol=BAR)
