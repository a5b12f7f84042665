"""The metric families: the one codec on the value types, random draws, error measures and export cells."""

from __future__ import annotations

import json

import numpy as np
import pytest

from elicitation import FairQuadraticMetric, InvalidConfigError, LinearMetric, Metric, QuadraticMetric, Sphere
from elicitation.families import FAMILIES, Draw, family_of, get_family
from elicitation.variants import CubicMetric

CLASSES = ("cat", "dog", "fox")
GROUPS = ("north", "south", "west")


def _random(name: str, seed: int) -> Metric:
    draw = Draw(n_classes=3, sphere=Sphere.around_uniform(3, 0.2), n_groups=3)
    return get_family(name).random(np.random.default_rng(seed), draw)


def test_families_are_keyed_by_their_value_types_tag() -> None:
    assert list(FAMILIES) == ["linear", "quadratic", "cubic", "fair_quadratic"]
    for name, family in FAMILIES.items():
        assert family.metric_type.kind == name
        assert isinstance(_random(name, 0), family.metric_type)


@pytest.mark.parametrize("name", list(FAMILIES))
@pytest.mark.parametrize("seed", range(5))
def test_to_dict_from_dict_round_trips_bit_for_bit_through_json(name: str, seed: int) -> None:
    metric = _random(name, seed)
    data = json.loads(json.dumps(metric.to_dict()))
    assert data["type"] == name
    decoded = Metric.from_dict(data)
    assert type(decoded) is type(metric)
    assert decoded.to_dict() == metric.to_dict()
    assert family_of(decoded) is FAMILIES[name]
    assert all(value == 0.0 for value in family_of(metric).errors(metric, decoded).values())


def test_from_dict_names_the_missing_field_and_the_bad_type() -> None:
    with pytest.raises(InvalidConfigError, match="a quadratic metric needs the field 'B'"):
        Metric.from_dict({"type": "quadratic", "a": [1.0, 0.0]})
    with pytest.raises(InvalidConfigError, match=r"metric type must be .*'fair_quadratic'.*got 'conic'"):
        Metric.from_dict({"type": "conic"})
    with pytest.raises(InvalidConfigError, match="JSON object"):
        Metric.from_dict([1, 2])
    with pytest.raises(InvalidConfigError, match="bad linear metric: a must not be zero"):
        Metric.from_dict({"type": "linear", "a": [0.0, 0.0]})
    with pytest.raises(InvalidConfigError, match="bad quadratic metric: B must be negative semi-definite"):
        Metric.from_dict({"type": "quadratic", "a": [1.0, 0.0], "B": [[1.0, 0.0], [0.0, 1.0]]})


def test_from_dict_on_a_subclass_accepts_only_that_family() -> None:
    data = LinearMetric(np.array([1.0, 2.0])).to_dict()
    assert isinstance(LinearMetric.from_dict(data), LinearMetric)
    with pytest.raises(InvalidConfigError, match="metric type must be 'quadratic', got 'linear'"):
        QuadraticMetric.from_dict(data)
    assert isinstance(CubicMetric.from_dict(_random("cubic", 1).to_dict()), CubicMetric)


def test_errors_measure_each_coefficient_of_the_family() -> None:
    true = QuadraticMetric(np.array([1.0, 0.0]), np.array([[-1.0, 0.0], [0.0, -1.0]]))
    estimate = QuadraticMetric(np.array([0.0, 1.0]), np.array([[-1.0, 0.0], [0.0, -1.0]]))
    errors = get_family("quadratic").errors(true, estimate)
    assert list(errors) == ["a", "B"]
    assert errors["a"] == pytest.approx(float(np.linalg.norm(true.a - estimate.a)))
    assert errors["B"] == pytest.approx(0.0)
    with pytest.raises(InvalidConfigError, match="expected two QuadraticMetrics, got a LinearMetric"):
        get_family("quadratic").errors(true, LinearMetric(np.array([1.0, 0.0])))


def test_fair_errors_compare_pairs_and_tradeoff() -> None:
    true = _random("fair_quadratic", 3)
    assert isinstance(true, FairQuadraticMetric)
    other = FairQuadraticMetric(true.a, dict(true.B_pairs), 1.0 - true.lam, true.tau)
    errors = family_of(true).errors(true, other)
    assert list(errors) == ["a", "B_pairs", "lam"]
    assert errors["lam"] == pytest.approx(abs(1.0 - 2.0 * true.lam))
    assert errors["a"] == 0.0 and errors["B_pairs"] == 0.0
    assert family_of(true).n_groups(true) == 3
    assert family_of(_random("linear", 0)).n_groups(_random("linear", 0)) is None


@pytest.mark.parametrize("name", list(FAMILIES))
def test_export_cells_fill_exactly_the_export_columns_with_the_stored_numbers(name: str) -> None:
    family = get_family(name)
    metric = _random(name, 7)
    data = metric.to_dict()
    columns = family.export_columns(CLASSES, GROUPS)
    cells = family.export_cells(data, CLASSES, GROUPS)
    assert list(cells) == columns
    assert columns[:3] == ["a_cat", "a_dog", "a_fox"]
    assert [cells[f"a_{name}"] for name in CLASSES] == data["a"]
    if "B" in data:
        assert cells["B_dog_fox"] == data["B"][1][2]
    if name == "fair_quadratic":
        assert cells["lam"] == data["lam"]
        assert cells["B_south_west_fox_cat"] == data["B_pairs"][2]["B"][2][0]


def test_draw_options_shape_the_random_metric() -> None:
    rng = np.random.default_rng(5)
    linear = get_family("linear").random(rng, Draw(n_classes=4, nonnegative=True))
    assert isinstance(linear, LinearMetric) and np.all(linear.a >= 0.0)
    tau = np.array([[0.25, 0.5], [0.75, 0.5]])
    fair = get_family("fair_quadratic").random(rng, Draw(n_classes=2, n_groups=2, tau=tau))
    assert isinstance(fair, FairQuadraticMetric) and np.array_equal(fair.tau, tau)


def test_unknown_family_is_named() -> None:
    with pytest.raises(InvalidConfigError, match="unknown metric family 'conic'"):
        get_family("conic")
