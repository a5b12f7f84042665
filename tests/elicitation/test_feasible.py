"""Tests for feasible rate spaces of real datasets: sphere, rate -> randomised classifier, confusion."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from elicitation.driver import run
from elicitation.errors import InvalidConfigError
from elicitation.fair import fair_qpme
from elicitation.lab.datasets import Dataset, load_csv, load_dataset
from elicitation.lab.feasible import (
    MATCH_ATOL,
    DatasetSpace,
    FeasibleModel,
    build_space,
    fit_feasible_model,
)
from elicitation.lab.spaces import space_from_dict
from elicitation.oracles import ExactOracle, random_fair_metric, random_quadratic_metric
from elicitation.qpme import qpme
from elicitation.rates import QuerySpace, rates_from_confusion
from elicitation.region import BASELINE_MARGIN
from elicitation.types import Query


@pytest.fixture(scope="module")
def cancer() -> FeasibleModel:
    return fit_feasible_model(load_dataset("breast-cancer"), seed=3)


@pytest.fixture(scope="module")
def cancer_at_o() -> FeasibleModel:
    return fit_feasible_model(load_dataset("breast-cancer"), seed=3, region="uniform")


@pytest.fixture(scope="module")
def adult_fair() -> FeasibleModel:
    return fit_feasible_model(load_dataset("adult", groups=True), seed=0)


@pytest.fixture(scope="module")
def vehicle() -> FeasibleModel:
    return fit_feasible_model(load_dataset("vehicle"), seed=1)


def _sphere_points(space: QuerySpace, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """Random points: half on the boundary, half inside, plus the centre and the axis extremes."""
    k = space.n_classes
    center, radius = space.sphere.center, space.sphere.radius
    points = [center.copy()]
    for j in range(k):
        for sign in (1.0, -1.0):
            points.append(center + sign * radius * np.eye(k)[j])
    for i in range(count):
        direction = rng.normal(size=k)
        scale = radius if i % 2 == 0 else radius * rng.uniform() ** (1.0 / k)
        points.append(center + scale * direction / np.linalg.norm(direction))
    return points


def test_dataset_space_follows_the_query_space_contract(cancer: FeasibleModel) -> None:
    space = cancer.space
    assert isinstance(space, QuerySpace)
    assert space.n_classes == 2 and space.n_groups == 1
    assert space.class_names == ("benign", "malignant")
    assert space.group_names == ()
    assert space.priors.shape == (2,)
    assert space.priors.sum() == pytest.approx(1.0)
    # the realistic region: every classifier in it beats "everyone is benign" by a person in 100
    worst = space.priors @ space.sphere.center - space.sphere.radius * np.linalg.norm(space.priors)
    assert worst >= space.priors.max() + BASELINE_MARGIN - 1e-6
    assert space.sphere.radius >= 0.1 and space.recipe["region"] == "realistic"
    rates = space.sphere.center + np.array([0.1, -0.05])
    confusion = space.confusion(rates)
    assert confusion.shape == (2, 2)
    assert confusion.sum() == pytest.approx(100.0)
    assert np.allclose(confusion.sum(axis=1), 100.0 * space.priors)
    assert np.allclose(rates_from_confusion(confusion), rates, atol=1e-12)


def test_sphere_radius_is_algorithm_3s_inscribed_ball(cancer_at_o: FeasibleModel) -> None:
    space = cancer_at_o.space
    assert np.allclose(space.sphere.center, 0.5)
    c = space.extents.min(axis=(0, 2))
    assert space.sphere.radius == pytest.approx(1.0 / np.sqrt(np.sum(1.0 / c**2)), rel=1e-5)
    assert space.sphere.radius == pytest.approx(space.max_radius, rel=1e-5)
    # every vertex o +- c_j alpha_j of the cross-polytope is realisable
    for j in range(2):
        for s, sign in enumerate((1.0, -1.0)):
            vertex = space.sphere.center + sign * space.extents[0, j, s] * np.eye(2)[j] * (1 - 1e-9)
            assert np.allclose(space.classifier(vertex).rates, vertex, atol=MATCH_ATOL)


@pytest.mark.parametrize("fixture", ["cancer", "vehicle"])
def test_points_in_and_on_the_sphere_map_to_classifiers_with_those_rates(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    model: FeasibleModel = request.getfixturevalue(fixture)
    space = model.space
    k = space.n_classes
    for rates in _sphere_points(space, np.random.default_rng(11), 60):
        classifier = space.classifier(rates)
        assert np.max(np.abs(classifier.rates - rates)) <= MATCH_ATOL
        assert classifier.probabilities.min() > 0.0
        assert classifier.probabilities.sum() == pytest.approx(1.0)
        assert classifier.weights.shape[0] <= k + 1  # a basic solution mixes at most k + 1 plug-ins
        counts = classifier.counts
        assert np.allclose(counts.sum(axis=1), counts.sum(axis=1)[0] * 0 + model_class_totals(model))
        assert np.allclose(np.diag(counts) / counts.sum(axis=1), rates, atol=MATCH_ATOL)
        assert classifier.confusion.sum() == pytest.approx(100.0)


def model_class_totals(model: FeasibleModel) -> np.ndarray:
    return np.bincount(model.test_labels, minlength=model.space.n_classes).astype(float)


def test_sampled_predictions_reproduce_the_query_rates(cancer: FeasibleModel) -> None:
    space = cancer.space
    rates = space.sphere.center + space.sphere.radius * np.array([0.6, -0.8])
    classifier = space.classifier(rates)
    rng = np.random.default_rng(0)
    draws = np.array([cancer.sample_rates(classifier, rng) for _ in range(200)])
    class_sizes = model_class_totals(cancer)
    # one draw: within sampling error; the mean of 200 draws: close to the expectation
    assert np.all(np.abs(draws[0] - rates) <= 4.0 / np.sqrt(class_sizes))
    assert np.all(np.abs(draws.mean(axis=0) - rates) <= 4.0 / np.sqrt(200 * class_sizes))


def _queries(log: tuple[tuple[Query, bool], ...]) -> list[np.ndarray]:
    return [rates for query, _ in log for rates in (query.first, query.second)]


@pytest.mark.parametrize("fixture", ["cancer", "adult_plain"])
def test_every_query_of_a_full_qpme_run_maps_to_a_classifier(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    found = request.getfixturevalue(fixture)
    space: DatasetSpace = found.space if isinstance(found, FeasibleModel) else found
    rng = np.random.default_rng(5)
    metric = random_quadratic_metric(rng, 2)
    result = run(qpme(space.sphere), ExactOracle(metric))
    queries = _queries(result.log)
    assert len(queries) == 2 * result.num_queries > 20
    worst = 0.0
    for rates in queries:
        assert space.sphere.contains(rates)
        classifier = space.classifier(rates)
        worst = max(worst, float(np.max(np.abs(classifier.rates - rates))))
        assert space.confusion(rates).sum() == pytest.approx(100.0)
    assert worst <= MATCH_ATOL


def test_every_query_of_a_fair_qpme_run_maps_to_group_classifiers(adult_fair: FeasibleModel) -> None:
    space = adult_fair.space
    assert space.n_groups == 2 and space.group_names == ("Female", "Male")
    assert space.priors.shape == (2, 2)
    metric = random_fair_metric(np.random.default_rng(1), 2, 2, tau=space.tau)
    result = run(fair_qpme(space.sphere, groups=2, tau=space.tau), ExactOracle(metric))
    for rates in _queries(result.log):
        assert rates.shape == (2, 2)
        classifiers = space.classifiers(rates)
        assert [c.group for c in classifiers] == [0, 1]
        for g, classifier in enumerate(classifiers):
            assert np.max(np.abs(classifier.rates - rates[g])) <= MATCH_ATOL
        confusion = space.confusion(rates)
        assert confusion.shape == (2, 2, 2)
        assert np.allclose(confusion.sum(axis=(1, 2)), 100.0)


def test_fair_sphere_lies_in_every_groups_feasible_set(adult_fair: FeasibleModel) -> None:
    space = adult_fair.space
    common = space.extents.min(axis=(0, 2))
    assert space.sphere.radius <= 1.0 / np.sqrt(np.sum(1.0 / common**2)) + 1e-12
    for g in range(2):
        group_only = space.extents[g].min(axis=1)
        assert 1.0 / np.sqrt(np.sum(1.0 / group_only**2)) >= space.sphere.radius
    assert np.allclose(space.tau.sum(axis=0), 1.0)
    assert space.group_sizes.sum() == adult_fair.test_rows.shape[0]


@pytest.fixture(scope="module")
def adult_plain() -> DatasetSpace:
    return build_space("adult", seed=2)


def test_space_round_trips_through_json_without_retraining(vehicle: FeasibleModel) -> None:
    space = vehicle.space
    data = json.loads(json.dumps(space.to_dict()))
    rebuilt = space_from_dict(data)
    assert isinstance(rebuilt, DatasetSpace)
    assert rebuilt.sphere.radius == space.sphere.radius
    assert rebuilt.class_names == space.class_names
    for rates in _sphere_points(space, np.random.default_rng(2), 10):
        assert np.array_equal(rebuilt.confusion(rates), space.confusion(rates))


def test_recipe_rebuilds_the_same_space(cancer: FeasibleModel) -> None:
    again = FeasibleModel.from_recipe(cancer.space.recipe)
    assert again.space.to_dict() == cancer.space.to_dict()


def test_requested_radius_is_used_and_checked() -> None:
    dataset = load_dataset("iris")
    space = fit_feasible_model(dataset, seed=0, radius=0.1).space
    assert space.sphere.radius == pytest.approx(0.1)
    assert space.max_radius > 0.1
    with pytest.raises(InvalidConfigError, match=r"radius 0\.3"):
        fit_feasible_model(dataset, seed=0, radius=0.3)
    with pytest.raises(InvalidConfigError, match=r"radius 0.19\d+ .*min_radius = 0.3000"):
        fit_feasible_model(dataset, seed=0, min_radius=0.3)


def test_indistinguishable_classes_give_a_clear_tiny_sphere_error() -> None:
    rng = np.random.default_rng(0)
    lines = ["x1,x2,y"] + [f"{rng.normal():.4f},{rng.normal():.4f},{i % 2}" for i in range(400)]
    dataset = load_csv(io.StringIO("\n".join(lines)), "y")
    with pytest.raises(InvalidConfigError, match=r"only fits a sphere of radius 0\.0\d+"):
        fit_feasible_model(dataset, seed=0)


def test_rates_outside_the_feasible_set_are_rejected(cancer: FeasibleModel) -> None:
    with pytest.raises(InvalidConfigError, match="not achievable"):
        cancer.space.classifier([1.0, 1.0])
    with pytest.raises(InvalidConfigError, match="shape"):
        cancer.space.classifier([0.5, 0.5, 0.5])
    with pytest.raises(InvalidConfigError, match="group"):
        cancer.space.classifier([0.5, 0.5], group=1)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"seed": -1}, "seed"),
        ({"test_fraction": 0.99}, "test_fraction"),
        ({"model": "forest"}, "model"),
        ({"n_directions": -5}, "n_directions"),
        ({"min_radius": 0.0}, "min_radius"),
        ({"radius": 0.9}, "radius"),
    ],
)
def test_fit_feasible_model_rejects_bad_options_by_name(kwargs: dict[str, object], parameter: str) -> None:
    with pytest.raises(InvalidConfigError, match=parameter):
        fit_feasible_model(load_dataset("iris"), **kwargs)  # type: ignore[arg-type]


def test_build_space_refuses_groups_for_datasets_without_them() -> None:
    with pytest.raises(InvalidConfigError, match="no protected groups"):
        build_space("iris", groups=True)


def test_gradient_boosting_model_also_builds_a_space() -> None:
    space = fit_feasible_model(load_dataset("iris"), seed=0, model="gradient_boosting").space
    assert space.sphere.radius > 0.1
    rates = space.sphere.center + space.sphere.radius * np.array([1.0, 0.0, 0.0])
    assert np.allclose(space.classifier(rates).rates, rates, atol=MATCH_ATOL)


def test_from_dict_rejects_malformed_descriptions(cancer: FeasibleModel) -> None:
    data = cancer.space.to_dict()
    with pytest.raises(InvalidConfigError, match="kind"):
        DatasetSpace.from_dict({**data, "kind": "synthetic-ish"})
    with pytest.raises(InvalidConfigError, match="lacks"):
        DatasetSpace.from_dict({"kind": "dataset"})
    broken = json.loads(json.dumps(data))
    broken["groups"][0]["anchors"] = []
    with pytest.raises(InvalidConfigError, match="anchors"):
        DatasetSpace.from_dict(broken)


def test_csv_dataset_with_groups_builds_a_fair_space() -> None:
    rng = np.random.default_rng(4)
    lines = ["score,group,label"]
    for i in range(600):
        label = i % 2
        lines.append(f"{rng.normal(loc=2.0 * label):.4f},{'ab'[i % 3 == 0]},{label}")
    dataset: Dataset = load_csv(io.StringIO("\n".join(lines)), "label", group_column="group")
    space = fit_feasible_model(dataset, seed=0).space
    assert space.n_groups == 2
    rates = np.tile(space.sphere.center, (2, 1)) + np.array([[0.05, 0.0], [0.0, -0.05]])
    assert space.confusion(rates).shape == (2, 2, 2)


def test_a_recipe_only_description_trains_the_space(cancer: FeasibleModel) -> None:
    recipe = {"kind": "dataset", "recipe": {"dataset": "breast-cancer", "seed": 3}}
    space = space_from_dict(recipe)
    assert isinstance(space, DatasetSpace)
    assert space.to_dict() == cancer.space.to_dict()
    with pytest.raises(InvalidConfigError, match="unknown recipe option"):
        space_from_dict({"kind": "dataset", "recipe": {"dataset": "iris", "colour": "red"}})
    with pytest.raises(InvalidConfigError, match="not a bundled dataset"):
        space_from_dict({"kind": "dataset", "recipe": {"dataset": "csv:mine"}})
    with pytest.raises(InvalidConfigError, match="no protected groups"):
        space_from_dict({"kind": "dataset", "recipe": {"dataset": "iris", "groups": True}})


def test_ten_class_queries_mix_at_most_eleven_plug_ins() -> None:
    space = build_space("digits", seed=0)
    assert space.sphere.radius == pytest.approx(0.1 / np.sqrt(10), rel=1e-5)  # the cube bound
    for rates in _sphere_points(space, np.random.default_rng(8), 10):
        classifier = space.classifier(rates)
        assert classifier.weights.shape[0] <= 11
        assert np.max(np.abs(classifier.rates - rates)) <= MATCH_ATOL
        assert space.confusion(rates).shape == (10, 10)


def test_feasible_rates_outside_the_sphere_use_the_linear_program(cancer: FeasibleModel) -> None:
    space = cancer.space
    plug_ins = space.plug_in_rates()
    best = plug_ins[np.argmax(plug_ins.sum(axis=1))]  # a good classifier, far outside the sphere
    assert np.sum(np.abs(best - 0.5) / space.extents[0].min(axis=1)) > 1.0  # outside the cross-polytope
    for target in (best, 0.5 * best + 0.25, 0.9 * best + 0.05):
        classifier = space.classifier(target)
        assert np.max(np.abs(classifier.rates - target)) <= MATCH_ATOL
        assert classifier.weights.shape[0] <= 3


def test_descriptions_without_a_centre_rebuild_at_the_uniform_classifier(cancer: FeasibleModel) -> None:
    stored = cancer.space.to_dict()
    assert np.allclose(stored["center"], cancer.space.sphere.center)
    legacy = {key: value for key, value in stored.items() if key != "center"}
    legacy["radius"] = 0.2
    rebuilt = DatasetSpace.from_dict(legacy)
    assert np.allclose(rebuilt.sphere.center, 0.5) and rebuilt.sphere.radius == 0.2
    assert np.allclose(rates_from_confusion(rebuilt.confusion([0.6, 0.45])), [0.6, 0.45], atol=1e-9)


def test_realistic_region_of_a_fairness_space_lies_in_every_group(adult_fair: FeasibleModel) -> None:
    space = adult_fair.space
    assert space.recipe["region"] == "realistic"
    rng = np.random.default_rng(5)
    for rates in _sphere_points(space, rng, 12):
        for group in range(space.n_groups):
            assert np.allclose(space.classifier(rates, group).rates, rates, atol=MATCH_ATOL)


def test_a_fairness_space_has_one_realistic_sphere_per_group(adult_fair: FeasibleModel) -> None:
    space = adult_fair.space
    spheres = space.group_spheres
    assert len(spheres) == space.n_groups == 2
    rng = np.random.default_rng(9)
    for group, own in enumerate(spheres):
        prior = space.priors[group]
        # Every classifier of the group's sphere is achievable and at least as accurate as the baseline.
        assert float(prior @ own.center - own.radius * np.linalg.norm(prior)) >= prior.max()
        for _ in range(8):
            direction = rng.normal(size=space.n_classes)
            point = own.center + own.radius * direction / np.linalg.norm(direction)
            assert np.allclose(space.classifier(point, group).rates, point, atol=MATCH_ATOL)
    # Women (89 % one class) get a small sphere among their own good classifiers; the common sphere is
    # mostly below their baseline.
    women = space.priors[0]
    assert float(women @ space.sphere.center) < women.max() < float(women @ spheres[0].center)
    stored = space.to_dict()
    rebuilt = DatasetSpace.from_dict(json.loads(json.dumps(stored)))
    assert all(
        np.array_equal(a.center, b.center) and a.radius == b.radius
        for a, b in zip(rebuilt.group_spheres, spheres, strict=True)
    )
    tampered = json.loads(json.dumps(stored))
    tampered["group_spheres"][0] = {"center": [0.95, 0.9], "radius": 0.04}  # beyond any classifier
    with pytest.raises(InvalidConfigError, match=r"group_spheres\[0\] leaves"):
        DatasetSpace.from_dict(tampered)
    tampered["group_spheres"] = tampered["group_spheres"][:1]
    with pytest.raises(InvalidConfigError, match="one sphere per group"):
        DatasetSpace.from_dict(tampered)
    # Descriptions stored before the spheres per group existed get the same ones recomputed.
    legacy = DatasetSpace.from_dict({key: value for key, value in stored.items() if key != "group_spheres"})
    assert all(
        np.array_equal(a.center, b.center) and a.radius == b.radius
        for a, b in zip(legacy.group_spheres, spheres, strict=True)
    )


def test_spaces_without_groups_or_at_the_uniform_classifier_repeat_the_common_sphere(
    cancer: FeasibleModel,
) -> None:
    assert cancer.space.group_spheres == (cancer.space.sphere,)
    assert cancer.space.to_dict()["group_spheres"] is None
