"""Tests for rate <-> confusion conversion and the synthetic query space."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from elicitation.errors import InvalidConfigError
from elicitation.lab.spaces import space_from_dict
from elicitation.rates import (
    CONFUSION_TOTAL,
    QuerySpace,
    SyntheticSpace,
    check_rates,
    confusion_from_rates,
    rates_from_confusion,
)

ATOL = 1e-12


def test_confusion_binary_is_forced_by_rates_and_priors() -> None:
    conf = confusion_from_rates([0.9, 0.6], [0.7, 0.3])
    expected = np.array([[63.0, 7.0], [12.0, 18.0]])
    assert np.allclose(conf, expected, atol=ATOL)


def test_confusion_multiclass_spreads_misclassified_mass_evenly() -> None:
    conf = confusion_from_rates([0.4, 0.7, 0.1], [0.5, 0.25, 0.25])
    assert np.allclose(np.diag(conf), [20.0, 17.5, 2.5], atol=ATOL)
    # class 0 loses 30 of its 50 people, 15 to each other class
    assert np.allclose(conf[0], [20.0, 15.0, 15.0], atol=ATOL)
    assert np.allclose(conf[2], [11.25, 11.25, 2.5], atol=ATOL)
    assert conf.sum() == pytest.approx(CONFUSION_TOTAL)


def test_rates_from_confusion_inverts_confusion_from_rates() -> None:
    rng = np.random.default_rng(3)
    for k in (2, 3, 5):
        rates = rng.uniform(0.0, 1.0, size=k)
        priors = rng.dirichlet(np.ones(k))
        assert np.allclose(rates_from_confusion(confusion_from_rates(rates, priors)), rates, atol=ATOL)


def test_rates_from_confusion_handles_group_stacks_and_rejects_empty_classes() -> None:
    stack = np.array([[[3.0, 1.0], [1.0, 1.0]], [[1.0, 1.0], [0.0, 2.0]]])
    assert np.allclose(rates_from_confusion(stack), [[0.75, 0.5], [0.5, 1.0]])
    with pytest.raises(InvalidConfigError, match="no people"):
        rates_from_confusion([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(InvalidConfigError, match="square"):
        rates_from_confusion([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])


def test_check_rates_rejects_out_of_range_and_wrong_shape() -> None:
    with pytest.raises(InvalidConfigError, match=r"\[0, 1\]"):
        check_rates([0.5, 1.2], (2,))
    with pytest.raises(InvalidConfigError, match="shape"):
        check_rates([0.5, 0.5, 0.5], (2,))
    with pytest.raises(InvalidConfigError, match="finite"):
        check_rates([0.5, np.nan], (2,))


def test_synthetic_space_defaults_follow_the_contract() -> None:
    space = SyntheticSpace(3)
    assert isinstance(space, QuerySpace)
    assert space.n_classes == 3 and space.n_groups == 1
    assert space.class_names == ("Class 1", "Class 2", "Class 3")
    assert space.group_names == ()
    assert np.allclose(space.sphere.center, 1.0 / 3.0)
    assert space.sphere.radius == pytest.approx(0.2)
    assert space.priors.shape == (3,)
    assert np.allclose(space.priors, 1.0 / 3.0)


def test_synthetic_space_confusion_of_every_sphere_point_sums_to_100() -> None:
    rng = np.random.default_rng(0)
    space = SyntheticSpace(4, radius=0.2, priors=[0.1, 0.2, 0.3, 0.4])
    for _ in range(50):
        direction = rng.normal(size=4)
        rates = space.sphere.center + space.sphere.radius * direction / np.linalg.norm(direction)
        conf = space.confusion(rates)
        assert conf.shape == (4, 4)
        assert np.all(conf >= 0.0)
        assert conf.sum() == pytest.approx(100.0)
        assert np.allclose(conf.sum(axis=1), 100.0 * space.priors)
        assert np.allclose(rates_from_confusion(conf), rates, atol=1e-12)


def test_synthetic_space_with_groups_uses_each_groups_priors() -> None:
    priors = [[0.8, 0.2], [0.5, 0.5]]
    space = SyntheticSpace(2, radius=0.3, priors=priors, n_groups=2, group_names=["Women", "Men"])
    assert space.priors.shape == (2, 2)
    assert space.group_names == ("Women", "Men")
    rates = np.array([[0.6, 0.4], [0.5, 0.7]])
    conf = space.confusion(rates)
    assert conf.shape == (2, 2, 2)
    assert np.allclose(conf.sum(axis=(1, 2)), 100.0)
    assert np.allclose(conf[0], [[48.0, 32.0], [12.0, 8.0]])
    assert np.allclose(conf[1], [[25.0, 25.0], [15.0, 35.0]])
    with pytest.raises(InvalidConfigError, match=r"shape \(2, 2\)"):
        space.confusion([0.5, 0.5])


def test_synthetic_space_shares_one_dimensional_priors_across_groups() -> None:
    space = SyntheticSpace(3, priors=[0.2, 0.3, 0.5], n_groups=3)
    assert space.priors.shape == (3, 3)
    assert np.allclose(space.priors, [[0.2, 0.3, 0.5]] * 3)
    assert space.group_names == ("Group 1", "Group 2", "Group 3")


def test_synthetic_space_round_trips_through_json() -> None:
    space = SyntheticSpace(
        3, radius=0.15, priors=[[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]], class_names=["a", "b", "c"], n_groups=2
    )
    data = json.loads(json.dumps(space.to_dict()))
    rebuilt = space_from_dict(data)
    assert isinstance(rebuilt, SyntheticSpace)
    assert rebuilt.to_dict() == space.to_dict()
    rates = np.array([[0.3, 0.4, 0.35], [0.25, 0.3, 0.4]])
    assert np.allclose(rebuilt.confusion(rates), space.confusion(rates), atol=0.0)


@pytest.mark.parametrize(
    ("kwargs", "parameter"),
    [
        ({"n_classes": 1}, "n_classes"),
        ({"n_classes": 2.5}, "n_classes"),
        ({"n_classes": True}, "n_classes"),
        ({"n_classes": 3, "radius": 0.0}, "radius"),
        ({"n_classes": 3, "radius": 0.4}, "radius"),
        ({"n_classes": 3, "radius": "wide"}, "radius"),
        ({"n_classes": 2, "priors": [0.5, 0.6]}, "priors"),
        ({"n_classes": 2, "priors": [1.0, 0.0]}, "priors"),
        ({"n_classes": 2, "priors": [0.2, 0.3, 0.5]}, "priors"),
        ({"n_classes": 2, "class_names": ["only one"]}, "class_names"),
        ({"n_classes": 2, "class_names": ["same", "same"]}, "class_names"),
        ({"n_classes": 2, "class_names": "ab"}, "class_names"),
        ({"n_classes": 2, "n_groups": 0}, "n_groups"),
        ({"n_classes": 2, "group_names": ["solo"]}, "group_names"),
        ({"n_classes": 2, "n_groups": 2, "group_names": ["a"]}, "group_names"),
    ],
)
def test_synthetic_space_rejects_bad_parameters_by_name(kwargs: dict[str, object], parameter: str) -> None:
    with pytest.raises(InvalidConfigError, match=parameter):
        SyntheticSpace(**kwargs)  # type: ignore[arg-type]


def test_synthetic_space_radius_limit_is_one_over_k() -> None:
    assert SyntheticSpace(4, radius=0.25).sphere.radius == pytest.approx(0.25)
    with pytest.raises(InvalidConfigError, match=r"\(0, 0.25\]"):
        SyntheticSpace(4, radius=0.26)


def test_space_from_dict_rejects_unknown_kinds_and_fields() -> None:
    with pytest.raises(InvalidConfigError, match="kind"):
        space_from_dict({"kind": "hologram"})
    with pytest.raises(InvalidConfigError, match="unknown synthetic space fields"):
        space_from_dict({"kind": "synthetic", "n_classes": 2, "colour": "red"})
    with pytest.raises(InvalidConfigError, match="n_classes"):
        SyntheticSpace.from_dict({"kind": "synthetic"})


def test_synthetic_confusion_rejects_rates_outside_unit_interval() -> None:
    with pytest.raises(InvalidConfigError, match="rates"):
        SyntheticSpace(2).confusion([1.1, 0.5])


@given(
    k=st.integers(min_value=2, max_value=6),
    m=st.integers(min_value=1, max_value=3),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    boundary=st.booleans(),
)
@settings(max_examples=60, deadline=None)
def test_synthetic_space_property_confusion_inverts_and_round_trips(
    k: int, m: int, seed: int, boundary: bool
) -> None:
    rng = np.random.default_rng(seed)
    priors = rng.dirichlet(np.ones(k), size=m) * 0.9 + 0.1 / k
    space = SyntheticSpace(k, radius=0.9 / k, priors=priors if m > 1 else priors[0], n_groups=m)
    directions = rng.normal(size=(m, k))
    scale = space.sphere.radius * (1.0 if boundary else rng.uniform())
    rates = space.sphere.center + scale * directions / np.linalg.norm(directions, axis=1, keepdims=True)
    query = rates if m > 1 else rates[0]
    confusion = space.confusion(query)
    assert np.all(confusion >= 0.0)
    assert np.allclose(confusion.reshape(m, k * k).sum(axis=1), 100.0)
    assert np.allclose(rates_from_confusion(confusion), query, atol=1e-12)
    rebuilt = space_from_dict(json.loads(json.dumps(space.to_dict())))
    assert np.array_equal(rebuilt.confusion(query), confusion)
