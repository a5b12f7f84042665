"""The algorithm catalogue: declared parameters, eager validation naming the parameter, and builders that
ask exactly the queries of the algorithm functions they wrap."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from elicitation import InvalidConfigError, Sphere, fair_qpme, lpme, qpme, run, tradeoff_search
from elicitation.catalogue import (
    ALGORITHMS,
    REQUIRED,
    Param,
    Setting,
    get_algorithm,
    group_tau,
    validate_params,
)
from elicitation.families import FAMILIES, Draw
from elicitation.oracles import ExactOracle, random_fair_metric, random_quadratic_metric
from elicitation.rates import SyntheticSpace
from elicitation.types import FairQuadraticMetric, QuadraticMetric
from elicitation.variants import cubic_qpme, diagonal_qpme, general_qpme, general_sphere

SPHERE = Sphere.around_uniform(3, 0.2)


def _queries(elicitor: Any, metric: Any) -> list[tuple[list[float], list[float]]]:
    result = run(elicitor, ExactOracle(metric))
    return [(query.first.tolist(), query.second.tolist()) for query, _ in result.log]


def test_every_algorithm_is_registered_once_with_its_family_and_version() -> None:
    assert list(ALGORITHMS) == [
        "lpme",
        "qpme",
        "fair_qpme",
        "tradeoff",
        "diagonal_qpme",
        "general_qpme",
        "cubic_qpme",
        "active_linear",
        "active_quadratic",
        "active_fair",
    ]
    for name, algorithm in ALGORITHMS.items():
        assert algorithm.name == name
        assert algorithm.version.startswith(f"{name}-")
        assert algorithm.family in FAMILIES.values()
        assert [param.name for param in algorithm.params] == list(
            dict.fromkeys(param.name for param in algorithm.params)
        )
    assert get_algorithm("qpme").version == "qpme-3"
    assert [name for name, spec in ALGORITHMS.items() if not spec.studies] == ["general_qpme", "cubic_qpme"]
    active = ["active_linear", "active_quadratic", "active_fair"]
    studies = [name for name, spec in ALGORITHMS.items() if spec.studies]
    assert [name for name, spec in ALGORITHMS.items() if spec.displayed] == studies
    tenths = [name for name, spec in ALGORITHMS.items() if spec.display_decimals == 1]
    assert tenths == ["fair_qpme", "tradeoff", "diagonal_qpme"]
    assert [name for name, spec in ALGORITHMS.items() if spec.needs_space] == active


def test_unknown_algorithm_lists_the_known_ones() -> None:
    with pytest.raises(InvalidConfigError, match="unknown algorithm 'pme'; known algorithms: active_fair"):
        get_algorithm("pme")


def test_defaults_come_from_the_declarations() -> None:
    assert get_algorithm("lpme").validate(None) == {"epsilon": 0.01, "cycles": 3, "robust": "none"}
    assert get_algorithm("cubic_qpme").defaults()["epsilon"] == 1e-4
    assert get_algorithm("active_fair").defaults()["min_cell_gap"] == 2.0


@pytest.mark.parametrize(
    ("algorithm", "params", "message"),
    [
        ("lpme", {"epsilon": 0.0}, r"params\.epsilon must be > 0 and < 1\.5708, got 0\.0"),
        ("lpme", {"epsilon": "small"}, r"params\.epsilon must be a finite number, got 'small'"),
        ("lpme", {"cycles": 11}, r"params\.cycles must be >= 1 and <= 10, got 11"),
        ("lpme", {"cycles": True}, r"params\.cycles must be an integer"),
        ("lpme", {"robust": "noisy_bisection"}, r"params\.robust must be one of 'none', 'repeat'"),
        ("lpme", {"inner_radius": 0.1}, r"params\.inner_radius is not a parameter of lpme"),
        ("tradeoff", {}, r"params\.a is required for tradeoff"),
        (
            "tradeoff",
            {"a": [1.0, -1.0], "B_pairs": [[[1.0, 0.0], [0.0, 1.0]]]},
            r"params\.a: must be finite, non",
        ),
        ("tradeoff", {"a": [1.0, 1.0], "B_pairs": [[[1.0, 2.0], [2.0, 1.0]]]}, r"semi-definite"),
        (
            "tradeoff",
            {"a": [1.0, 1.0], "B_pairs": [[[1.0]]], "method": "bisect"},
            r"params\.method must match",
        ),
        ("active_linear", {"max_queries": 0}, r"params\.max_queries must be >= 1 and <= 1000"),
        ("diagonal_qpme", {"inner_radius": 0.6}, r"params\.inner_radius must be > 0 and <= 0\.5"),
    ],
)
def test_validation_names_the_parameter(algorithm: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        get_algorithm(algorithm).validate(params, prefix="params.")


def test_optional_and_list_parameters() -> None:
    declared = (
        Param("shares", list[float] | None, None, min_length=2),
        Param("depth", int, REQUIRED, ge=0),
    )
    assert validate_params(declared, {"depth": 2}, owner="demo") == {"shares": None, "depth": 2}
    assert validate_params(declared, {"depth": 0, "shares": [1, 2]}, owner="demo")["shares"] == [1.0, 2.0]
    with pytest.raises(InvalidConfigError, match=r"shares\[1\] must be a finite number"):
        validate_params(declared, {"depth": 0, "shares": [1.0, "x"]}, owner="demo")
    with pytest.raises(InvalidConfigError, match="shares must have at least 2 entries"):
        validate_params(declared, {"depth": 0, "shares": [1.0]}, owner="demo")


def test_builders_ask_the_queries_of_the_algorithm_functions() -> None:
    rng = np.random.default_rng(11)
    quadratic = random_quadratic_metric(rng, 3, sphere=SPHERE)
    setting = Setting(SPHERE)
    assert _queries(get_algorithm("lpme").build(setting, {"epsilon": 0.05}), quadratic) == _queries(
        lpme(SPHERE, 0.05), quadratic
    )
    built = get_algorithm("qpme").build(setting, {"epsilon": 0.05, "reconstruction": "closed_form"})
    assert _queries(built, quadratic) == _queries(qpme(SPHERE, 0.05, reconstruction="closed_form"), quadratic)
    diagonal = QuadraticMetric(quadratic.a, np.diag(np.diag(quadratic.B)))
    assert _queries(get_algorithm("diagonal_qpme").build(setting, {"epsilon": 0.05}), diagonal) == _queries(
        diagonal_qpme(SPHERE, 0.05), diagonal
    )
    general = general_sphere(2, 0.2)
    general_metric = random_quadratic_metric(rng, 2, sphere=general)
    assert _queries(
        get_algorithm("general_qpme").build(Setting(general), {"epsilon": 0.05}), general_metric
    ) == _queries(general_qpme(general, 0.05), general_metric)
    assert get_algorithm("general_qpme").synthetic_sphere(2, 0.2).n_classes == 2
    general_spec = get_algorithm("general_qpme")
    assert general_spec.classes_from_rates is not None and general_spec.classes_from_rates(2) == 2
    cubic = ALGORITHMS["cubic_qpme"].random_metric(
        rng, Draw(n_classes=2, sphere=Sphere.around_uniform(2, 0.2))
    )
    small = Sphere.around_uniform(2, 0.2)
    assert _queries(get_algorithm("cubic_qpme").build(Setting(small), {"epsilon": 0.01}), cubic) == _queries(
        cubic_qpme(small, 0.01), cubic
    )


def test_fair_builders_take_tau_outright_or_from_priors_and_shares() -> None:
    rng = np.random.default_rng(3)
    metric = random_fair_metric(rng, 2, 2)
    sphere = Sphere.around_uniform(2, 0.2)
    direct = fair_qpme(sphere, groups=2, tau=metric.tau, epsilon=0.05)
    built = get_algorithm("fair_qpme").build(Setting(sphere, 2, tau=metric.tau), {"epsilon": 0.05})
    assert _queries(built, metric) == _queries(direct, metric)
    pairs = [metric.B_pairs[(0, 1)].tolist()]
    known = {"a": metric.a.tolist(), "B_pairs": pairs, "epsilon": 0.05}
    built = get_algorithm("tradeoff").build(Setting(sphere, 2, tau=metric.tau), known)
    direct = tradeoff_search(sphere, a=metric.a, B_pairs=dict(metric.B_pairs), tau=metric.tau, epsilon=0.05)
    assert _queries(built, metric) == _queries(direct, metric)
    with pytest.raises(InvalidConfigError, match="group_shares does not apply when tau is given"):
        get_algorithm("fair_qpme").build(Setting(sphere, 2, tau=metric.tau), {"group_shares": [0.5, 0.5]})


def test_group_tau_weights_priors_by_group_shares() -> None:
    priors = np.array([[0.5, 0.5], [0.2, 0.8]])
    tau = group_tau(priors, [0.25, 0.75])
    assert np.allclose(tau.sum(axis=0), 1.0)
    assert tau[0, 0] == pytest.approx(0.25 * 0.5 / (0.25 * 0.5 + 0.75 * 0.2))
    with pytest.raises(InvalidConfigError, match="group_shares must be 2 positive numbers"):
        group_tau(priors, [1.0, -1.0])


def test_active_algorithms_need_a_query_space() -> None:
    space = SyntheticSpace(3, radius=0.2)
    elicitor = get_algorithm("active_linear").build(Setting.of_space(space), {"max_queries": 5}, seed=4)
    assert elicitor.max_queries == 5
    with pytest.raises(InvalidConfigError, match="active_linear chooses queries from a study's query space"):
        get_algorithm("active_linear").build(Setting(SPHERE), None)


def test_random_metrics_respect_the_algorithms_restrictions() -> None:
    rng = np.random.default_rng(8)
    draw = Draw(n_classes=3, sphere=SPHERE)
    diagonal = get_algorithm("diagonal_qpme").random_metric(rng, draw)
    assert isinstance(diagonal, QuadraticMetric)
    assert np.array_equal(diagonal.B, np.diag(np.diag(diagonal.B)))
    check = get_algorithm("diagonal_qpme").check_metric
    assert check is not None
    check(diagonal)
    with pytest.raises(InvalidConfigError, match=r"metric\.B must be diagonal for diagonal_qpme"):
        check(get_algorithm("qpme").random_metric(rng, draw))
    tau = np.array([[0.5, 0.5, 0.5], [0.5, 0.5, 0.5]])
    known = {"a": [1.0, 2.0, 3.0], "B_pairs": [np.eye(3).tolist()]}
    fair = get_algorithm("tradeoff").random_metric(rng, Draw(n_classes=3, n_groups=2, tau=tau), known)
    assert isinstance(fair, FairQuadraticMetric)
    assert np.allclose(fair.a, np.array([1.0, 2.0, 3.0]) / math.sqrt(14.0))
    assert get_algorithm("tradeoff").errors(fair, fair) == {"lam": 0.0}
