"""Scoring predictions with an elicited metric: `Metric.score`, `Metric.from_confusion`, `Metric.as_scorer`,
the label-to-rates helpers and integer seeds."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.tree import DecisionTreeClassifier

from elicitation import (
    ExactOracle,
    InvalidConfigError,
    LinearMetric,
    Metric,
    QuadraticMetric,
    Sphere,
    ThresholdNoiseOracle,
    agreement,
    confusion_from_labels,
    lpme,
    random_fair_metric,
    random_linear_metric,
    random_quadratic_metric,
    rates_from_confusion,
    rates_from_labels,
    run,
)
from elicitation.catalogue import get_algorithm
from elicitation.families import Draw, get_family
from elicitation.variants import CubicMetric

ATOL = 1e-12


def _hand_rates(y_true: np.ndarray, y_pred: np.ndarray, k: int) -> np.ndarray:
    """``r_i = #(pred = i and true = i) / #(true = i)``, counted with a loop (the independent route)."""
    rates = np.zeros(k)
    for i in range(k):
        in_class = [p for t, p in zip(y_true.tolist(), y_pred.tolist(), strict=True) if t == i]
        rates[i] = sum(1 for p in in_class if p == i) / len(in_class)
    return rates


def _cubic(rng: np.random.Generator, k: int) -> CubicMetric:
    metric = get_family("cubic").random(rng, Draw(n_classes=k))
    assert isinstance(metric, CubicMetric)
    return metric


def _labels(rng: np.random.Generator, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    y_true = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    # Mostly right, so that every rate is informative, and every class predicted somewhere.
    y_pred = np.where(rng.random(n) < 0.6, y_true, rng.integers(0, k, n))
    return y_true, y_pred


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_score_equals_the_metric_on_rates_counted_by_hand(k: int) -> None:
    rng = np.random.default_rng(100 + k)
    metrics: list[Metric] = [
        random_linear_metric(rng, k),
        random_quadratic_metric(rng, k),
        _cubic(rng, k),
    ]
    for trial in range(5):
        y_true, y_pred = _labels(rng, k, 200 + 37 * trial)
        rates = _hand_rates(y_true, y_pred, k)
        for metric in metrics:
            assert metric.score(y_true, y_pred) == pytest.approx(metric(rates), abs=ATOL)
            assert metric.from_confusion(confusion_from_labels(y_true, y_pred)) == pytest.approx(
                metric(rates), abs=ATOL
            )


@pytest.mark.parametrize(("k", "m"), [(2, 2), (3, 2), (4, 3), (5, 2)])
def test_fair_score_takes_sensitive_features_and_counts_rates_per_group(k: int, m: int) -> None:
    rng = np.random.default_rng(7 * k + m)
    metric = random_fair_metric(rng, k, m)
    for trial in range(5):
        y_true, y_pred = _labels(rng, k, 600 + 11 * trial)
        groups = np.array(
            [f"g{g}" for g in np.concatenate([np.arange(m), rng.integers(0, m, 600 + 11 * trial - m)])]
        )
        # Every class must occur in every group: put one sample of each (class, group) first.
        for g in range(m):
            y_true[g * k : (g + 1) * k] = np.arange(k)
            groups[g * k : (g + 1) * k] = f"g{g}"
        by_hand = np.stack(
            [_hand_rates(y_true[groups == f"g{g}"], y_pred[groups == f"g{g}"], k) for g in range(m)]
        )
        assert metric.score(y_true, y_pred, sensitive_features=groups) == pytest.approx(
            metric(by_hand), abs=ATOL
        )
        assert np.allclose(rates_from_labels(y_true, y_pred, sensitive_features=groups), by_hand, atol=ATOL)


def test_labels_fix_the_class_order_and_accept_strings() -> None:
    metric = LinearMetric(np.array([3.0, 1.0, 0.0]))
    y_true = np.array(["cat", "dog", "eel", "cat", "dog", "eel"])
    y_pred = np.array(["cat", "cat", "eel", "cat", "dog", "dog"])
    # sorted: cat, dog, eel -> rates (1, 1/2, 1/2)
    assert metric.score(y_true, y_pred) == pytest.approx(metric([1.0, 0.5, 0.5]))
    reordered = metric.score(y_true, y_pred, labels=["eel", "dog", "cat"])
    assert reordered == pytest.approx(metric([0.5, 0.5, 1.0]))
    assert reordered != pytest.approx(metric.score(y_true, y_pred))


def test_groups_fix_the_group_order() -> None:
    rng = np.random.default_rng(3)
    metric = random_fair_metric(rng, 2, 2)
    y_true = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    y_pred = np.array([0, 1, 0, 1, 1, 0, 0, 1])
    groups = np.array(["b", "b", "b", "b", "a", "a", "a", "a"])
    rates_a, rates_b = [0.5, 0.5], [1.0, 1.0]
    assert metric.score(y_true, y_pred, sensitive_features=groups) == pytest.approx(
        metric([rates_a, rates_b])
    )
    assert metric.score(y_true, y_pred, sensitive_features=groups, groups=["b", "a"]) == pytest.approx(
        metric([rates_b, rates_a])
    )


def test_sample_weight_weighs_each_sample() -> None:
    metric = LinearMetric(np.array([1.0, 1.0]))
    y_true = np.array([0, 0, 1, 1])
    y_pred = np.array([0, 1, 1, 1])
    assert metric.score(y_true, y_pred, sample_weight=[3.0, 1.0, 1.0, 1.0]) == pytest.approx(
        metric([0.75, 1.0])
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda m: m.score([0, 1, 2], [0, 1, 1]), "scores 2 classes but"),
        (lambda m: m.score([0, 1], [0, 1, 1]), "same length"),
        (lambda m: m.score([[0, 1]], [[0, 1]]), "one-dimensional"),
        (lambda m: m.score([], []), "must not be empty"),
        (lambda m: m.score([0, 1, 2], [0, 1, 2], labels=[0, 1]), "not in labels"),
        (lambda m: m.score([0, 1], [0, 1], labels=[0, 1, 2]), "labels must list the metric's 2 classes"),
        (lambda m: m.score([0, 1], [0, 1], labels=[1, 1]), "distinct"),
        (lambda m: m.score([0, 0], [0, 1], labels=[0, 1]), "true class 1 (0-based) has no people"),
        (lambda m: m.score([0, 1], [0, 1], sensitive_features=[0, 1]), "sensitive_features are for fair"),
        (lambda m: m.score([0, 1], ["a", "b"]), "one type"),
        (lambda m: m.from_confusion(np.eye(3)), "shape (2, 2)"),
        (lambda m: m.from_confusion([[1.0, -1.0], [0.0, 1.0]]), "negative"),
    ],
)
def test_score_rejects_mismatches_clearly(call: object, message: str) -> None:
    metric = LinearMetric(np.array([1.0, 2.0]))
    with pytest.raises(InvalidConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call(metric)  # type: ignore[operator]


def test_fair_score_requires_matching_groups() -> None:
    metric = random_fair_metric(np.random.default_rng(1), 2, 3)
    y = np.array([0, 1, 0, 1])
    with pytest.raises(InvalidConfigError, match="pass sensitive_features"):
        metric.score(y, y)
    with pytest.raises(InvalidConfigError, match="scores 3 groups but sensitive_features has 2"):
        metric.score(y, y, sensitive_features=[0, 0, 1, 1])
    with pytest.raises(InvalidConfigError, match="true class 1 of group 1"):
        metric.score(
            np.array([0, 1, 0, 0, 0, 1]), np.array([0, 1, 0, 0, 0, 1]), sensitive_features=[0, 0, 1, 1, 2, 2]
        )
    with pytest.raises(InvalidConfigError, match="one entry per sample"):
        metric.score(y, y, sensitive_features=[0, 1, 2])


def test_rates_from_confusion_is_public_and_counts_stacks() -> None:
    confusion = np.array([[[3.0, 1.0], [2.0, 2.0]], [[1.0, 0.0], [1.0, 3.0]]])
    assert np.allclose(rates_from_confusion(confusion), [[0.75, 0.5], [1.0, 0.75]])


def _dataset(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    return make_classification(
        n_samples=300, n_features=8, n_informative=5, n_classes=k, n_clusters_per_class=1, random_state=seed
    )


def test_as_scorer_ranks_models_in_cross_val_score_like_score_does() -> None:
    X, y = _dataset(3, 0)
    metric = random_quadratic_metric(np.random.default_rng(5), 3)
    scorer = metric.as_scorer(labels=[0, 1, 2])
    folds = KFold(4, shuffle=True, random_state=0)
    model = LogisticRegression(max_iter=500)
    values = cross_val_score(model, X, y, cv=folds, scoring=scorer)
    assert values.shape == (4,)
    by_hand = []
    for train, test in folds.split(X):
        fitted = LogisticRegression(max_iter=500).fit(X[train], y[train])
        by_hand.append(metric.score(y[test], fitted.predict(X[test])))
    assert np.allclose(values, by_hand, atol=ATOL)


def test_metrics_and_their_scorers_pickle_exactly_for_parallel_cross_validation() -> None:
    rng = np.random.default_rng(12)
    for metric in (random_quadratic_metric(rng, 3), random_fair_metric(rng, 3, 3), _cubic(rng, 3)):
        again = pickle.loads(pickle.dumps(metric))
        assert type(again) is type(metric)
        assert again.to_dict() == metric.to_dict()
    X, y = _dataset(3, 3)
    scorer = random_linear_metric(rng, 3).as_scorer(labels=[0, 1, 2])
    serial = cross_val_score(GaussianNB(), X, y, cv=3, scoring=scorer)
    parallel = cross_val_score(GaussianNB(), X, y, cv=3, scoring=scorer, n_jobs=2)
    assert np.array_equal(serial, parallel)


def test_as_scorer_drives_grid_search() -> None:
    X, y = _dataset(2, 1)
    metric = LinearMetric(np.array([0.2, 1.0]))  # recall of class 1 matters most
    search = GridSearchCV(
        DecisionTreeClassifier(random_state=0), {"max_depth": [1, 2, 4, 8]}, scoring=metric.as_scorer(), cv=3
    )
    search.fit(X, y)
    means = search.cv_results_["mean_test_score"]
    assert search.best_params_["max_depth"] == [1, 2, 4, 8][int(np.argmax(means))]
    assert np.all(np.isfinite(means))
    assert search.score(X, y) == pytest.approx(metric.score(y, search.predict(X)), abs=ATOL)


def test_fair_scorer_receives_each_splits_sensitive_features_through_metadata_routing() -> None:
    X, y = _dataset(2, 2)
    groups = np.where(X[:, 0] > 0, "a", "b")
    metric = random_fair_metric(np.random.default_rng(8), 2, 2)
    with pytest.raises(InvalidConfigError, match="enable_metadata_routing"):
        metric.as_scorer()
    folds = KFold(3, shuffle=True, random_state=1)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = metric.as_scorer(labels=[0, 1])
        values = cross_val_score(
            LogisticRegression(), X, y, cv=folds, scoring=scorer, params={"sensitive_features": groups}
        )
        search = GridSearchCV(LogisticRegression(), {"C": [0.01, 1.0]}, scoring=scorer, cv=folds)
        search.fit(X, y, sensitive_features=groups)
    by_hand = []
    for train, test in folds.split(X):
        fitted = LogisticRegression().fit(X[train], y[train])
        by_hand.append(-metric.score(y[test], fitted.predict(X[test]), sensitive_features=groups[test]))
    # A cost: the scorer reports its negative, so that greater is better as scikit-learn expects.
    assert np.allclose(values, by_hand, atol=ATOL)
    assert np.all(search.cv_results_["mean_test_score"] <= 0.0)


def test_integer_seeds_are_accepted_wherever_a_generator_is() -> None:
    assert np.array_equal(random_linear_metric(7, 3).a, random_linear_metric(np.random.default_rng(7), 3).a)
    first = random_quadratic_metric(11, 3)
    assert np.array_equal(first.B, random_quadratic_metric(np.random.default_rng(11), 3).B)
    assert random_fair_metric(4, 2, 2).lam == random_fair_metric(np.random.default_rng(4), 2, 2).lam
    metric = random_linear_metric(1, 3)
    sphere = Sphere.around_uniform(3, 0.2)
    assert agreement(metric, metric, sphere, 5, n_pairs=50) == 1.0
    noisy = run(lpme(sphere), ThresholdNoiseOracle(metric, 0.05, rng=9))
    again = run(lpme(sphere), ThresholdNoiseOracle(metric, 0.05, rng=np.random.default_rng(9)))
    assert np.array_equal(noisy.metric.a, again.metric.a)
    drawn = get_algorithm("qpme").random_metric(3, Draw(n_classes=3))
    assert isinstance(drawn, QuadraticMetric)
    for name in ("linear", "quadratic", "cubic", "fair_quadratic"):
        seeded = get_family(name).random(5, Draw(n_classes=3)).to_dict()
        assert seeded == get_family(name).random(np.random.default_rng(5), Draw(n_classes=3)).to_dict()
    assert run(lpme(sphere), ExactOracle(metric)).num_queries > 0
    for bad in (None, -1, 1.5, True, "7"):
        with pytest.raises(InvalidConfigError, match="non-negative integer seed"):
            random_linear_metric(bad, 3)  # type: ignore[arg-type]
