"""Ranking real-world classifiers with elicited metrics (paper, Appendix H, Table 2 and the ranking figure).

Theory of operation
-------------------
A metric is only as good as the decisions it leads to; the most common decision is *which classifier to
use*. For each dataset we

1. train a pool of 80 classifiers on a seeded 60 % split (20 each of logistic regression, small
   multi-layer perceptrons, histogram gradient boosting - scikit-learn's LightGBM-style booster, the
   paper used LightGBM - and RBF support vector machines), varying hyper-parameters *and class weights*
   so that the pool spans different error trade-offs, and measure each one's rates on the held-out
   40 % (per group for the fairness datasets). Training uses at most `POOL_TRAIN_ROWS` rows and rates
   at most `POOL_TEST_ROWS` held-out rows (stratified subsamples), so the pool is cheap even for Adult;
2. per trial, draw a random oracle metric the way Appendix H does (`random_quadratic_metric`, or
   `random_fair_metric` with the dataset's group prevalences ``tau``), elicit it with QPME (Fair QPME)
   against the exact oracle on the dataset's feasible query sphere (`elicitation.lab.feasible`, radius capped
   at the paper's 0.2), and rank the pool by the true metric (the ground truth), the elicited metric and
   the baselines;
3. compare each ranking with the truth by NDCG (exponential gain, relevance = true utility rescaled to
   [0, 1]) and Kendall's tau-b (`elicitation.evaluation.ranking_quality`), averaged over trials.

Baselines. Quadratic: ``accuracy`` ``<1, r> / sqrt(k)`` and ``linear``, the oracle's own linear part
``<a, r>``. Fair (Table 2): ``linear (no fairness)``, the oracle's ``<a, 1 - r>`` without the violation
term (``lam = 0``), and ``accuracy + equalized odds``, equal misclassification costs and equal identity
``B^{uv}`` weighted half and half. The paper's FPME row (the linear fair elicitation of Hiranandani et
al. 2020) is not reproduced; its numbers are shown for reference.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from ..driver import run
from ..errors import InvalidConfigError, NumericalError
from ..evaluation import kendall_tau, ndcg, ranking_quality
from ..fair import fair_qpme
from ..lpme import lpme
from ..oracles import ExactOracle, random_fair_metric, random_quadratic_metric
from ..qpme import default_inner_radius, qpme
from ..rates import DEFAULT_SYNTHETIC_RADIUS
from ..types import FairQuadraticMetric, FloatArray, LinearMetric, Metric, Sphere, pair_index
from ..variants import general_lpme, general_qpme, general_sphere
from .datasets import Dataset, IntArray, load_dataset
from .feasible import fit_feasible_model

__all__ = [
    "DEFAULT_DATASETS",
    "DEFAULT_TRIALS",
    "FAMILIES",
    "PAPER_TABLE2",
    "PAPER_TABLE3",
    "POOL_TEST_ROWS",
    "POOL_TRAIN_ROWS",
    "RANKING_DATASETS",
    "ClassifierPool",
    "format_ranking_table",
    "general_ranking_trial",
    "ranking_trial",
    "run_ranking_benchmark",
    "train_pool",
]

#: Trials per dataset in the paper.
DEFAULT_TRIALS = 100
#: Classifier families of the pool (20 each in the paper).
FAMILIES = ("logistic", "mlp", "boosting", "svm")
#: Most training rows a pool classifier sees (a stratified subsample); keeps SVMs and MLPs cheap on Adult.
POOL_TRAIN_ROWS = 2000
#: Most held-out rows used to measure pool rates (a stratified subsample of the 40 % split).
POOL_TEST_ROWS = 5000
#: Most training rows of the kernel SVMs (their prediction cost grows with the support-vector count).
SVM_TRAIN_ROWS = 800
#: Share of rows used to train the pool (the paper: 60 %).
POOL_TRAIN_FRACTION = 0.6

#: Benchmark dataset keys: (bundled dataset, experiment). ``"quadratic"``: the ranking figure;
#: ``"fair"``: Table 2 (fair metric over sex); ``"general"``: Table 3 (oracle quadratic in general rates).
RANKING_DATASETS: Mapping[str, tuple[str, str]] = {
    "breast-cancer": ("breast-cancer", "quadratic"),
    "adult": ("adult", "quadratic"),
    "default": ("default", "quadratic"),
    "vehicle": ("vehicle", "quadratic"),
    "wine": ("wine", "quadratic"),
    "iris": ("iris", "quadratic"),
    "adult-fair": ("adult", "fair"),
    "default-fair": ("default", "fair"),
    "adult-general": ("adult", "general"),
    "default-general": ("default", "general"),
}
#: What `run_ranking_benchmark` runs when no datasets are given.
DEFAULT_DATASETS = (
    "breast-cancer",
    "adult",
    "default",
    "vehicle",
    "adult-fair",
    "default-fair",
    "adult-general",
    "default-general",
)

#: The paper's Table 2 (fair ranking): method -> (NDCG, Kendall's tau).
PAPER_TABLE2: Mapping[str, Mapping[str, tuple[float, float]]] = {
    "adult-fair": {
        "linear (no fairness)": (0.9875, 0.5918),
        "accuracy + equalized odds": (0.9857, 0.3763),
        "FPME (Hiranandani et al. 2020)": (0.9989, 0.9611),
        "elicited (fair QPME)": (1.0000, 0.9972),
    },
    "default-fair": {
        "linear (no fairness)": (0.9994, 0.9057),
        "accuracy + equalized odds": (0.9889, 0.4953),
        "FPME (Hiranandani et al. 2020)": (0.9974, 0.9650),
        "elicited (fair QPME)": (1.0000, 0.9981),
    },
}
#: The paper's Table 3 (oracle quadratic in general rates): elicited metric -> (NDCG, Kendall's tau).
PAPER_TABLE3: Mapping[str, Mapping[str, tuple[float, float]]] = {
    "adult-general": {
        "linear-diagonal": (0.9783, 0.6053),
        "linear-general": (0.9908, 0.7713),
        "quadratic-diagonal": (0.9968, 0.9611),
        "quadratic-general": (1.0000, 0.9986),
    },
    "default-general": {
        "linear-diagonal": (0.9790, 0.4536),
        "linear-general": (0.9863, 0.6216),
        "quadratic-diagonal": (1.0000, 0.9979),
        "quadratic-general": (1.0000, 0.9979),
    },
}
#: The quadratic ranking figure has no numbers in the paper's source; its text reports that the elicited
#: metric reaches "the highest possible NDCG and Kendall-tau coefficient of 1" on every dataset.
PAPER_QUADRATIC_ELICITED = (1.0, 1.0)

Progress = Callable[[int, int, str], None]
#: Means closer than this count as a tie when checking "elicited >= every baseline".
_TIE = 1e-9


@dataclass(frozen=True, eq=False)
class ClassifierPool:
    """Trained candidate classifiers and their held-out rates.

    Attributes
    ----------
    dataset : str
    names : tuple of str
        ``family/index`` with hyper-parameters, one per classifier.
    families : tuple of str
        Family of each classifier (one of `FAMILIES`).
    rates : numpy.ndarray, shape (n_classifiers, n_classes)
        Held-out rates ``P(h = i | Y = i)``.
    group_rates : numpy.ndarray, shape (n_classifiers, n_groups, n_classes), or None
        Held-out rates within each group (fairness datasets).
    general_rates : numpy.ndarray, shape (n_classifiers, n_classes**2 - n_classes), or None
        Held-out off-diagonal rates ``P(h = j | Y = i)``, ``i != j``, row by row (Appendix E order).
    """

    dataset: str
    names: tuple[str, ...]
    families: tuple[str, ...]
    rates: FloatArray
    group_rates: FloatArray | None
    general_rates: FloatArray | None = None


def _stratified_subsample(rows: IntArray, strata: IntArray, limit: int, rng: np.random.Generator) -> IntArray:
    if rows.shape[0] <= limit:
        return rows
    keep: list[IntArray] = []
    for stratum in np.unique(strata[rows]):
        members = rows[strata[rows] == stratum]
        count = max(2, round(limit * members.shape[0] / rows.shape[0]))
        keep.append(rng.choice(members, size=min(count, members.shape[0]), replace=False))
    result: IntArray = np.sort(np.concatenate(keep))
    return result


def _class_weights(rng: np.random.Generator, k: int) -> dict[int, float]:
    # Log-uniform weights in [1/3.3, 3.3]: enough to move a classifier along the error trade-off.
    weights = np.exp(rng.uniform(-1.2, 1.2, size=k))
    weights = weights / weights.mean()
    return {i: float(w) for i, w in enumerate(weights)}


def _pool_specs(k: int, per_family: int, rng: np.random.Generator) -> list[tuple[str, str, Any]]:
    """``(family, description, estimator factory)`` for every pool member."""
    from sklearn.ensemble import HistGradientBoostingClassifier  # type: ignore[import-untyped]
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]
    from sklearn.neural_network import MLPClassifier  # type: ignore[import-untyped]
    from sklearn.svm import SVC  # type: ignore[import-untyped]

    specs: list[tuple[str, str, Any]] = []
    hidden = [(4,), (8,), (16,), (32,), (16, 8)]
    for i in range(per_family):
        weights = _class_weights(rng, k)
        c = float(np.logspace(-3, 1, per_family)[i])
        specs.append(("logistic", f"C={c:.3g}", LogisticRegression(C=c, class_weight=weights, max_iter=500)))
    for i in range(per_family):
        alpha = float(np.logspace(-4, 1, per_family)[i])
        layers = hidden[i % len(hidden)]
        specs.append(
            (
                "mlp",
                f"hidden={layers},alpha={alpha:.3g}",
                (
                    MLPClassifier(
                        hidden_layer_sizes=layers,
                        alpha=alpha,
                        solver="lbfgs",
                        max_iter=100,
                        random_state=i,
                    ),
                    _class_weights(rng, k),
                ),
            )
        )
    for i in range(per_family):
        rate = float((0.03, 0.1, 0.3)[i % 3])
        depth = (2, 3, None, 5)[i % 4]
        iterations = int(10 + 10 * (i % 4))
        specs.append(
            (
                "boosting",
                f"lr={rate},depth={depth},iter={iterations}",
                HistGradientBoostingClassifier(
                    learning_rate=rate,
                    max_depth=depth,
                    max_iter=iterations,
                    class_weight=_class_weights(rng, k),
                    random_state=i,
                ),
            )
        )
    for i in range(per_family):
        c = float(np.logspace(-2, 2, per_family)[i])
        gamma = ("scale", 0.01, 0.1)[i % 3]
        specs.append(
            ("svm", f"C={c:.3g},gamma={gamma}", SVC(C=c, gamma=gamma, class_weight=_class_weights(rng, k)))
        )
    return specs


def train_pool(
    dataset: Dataset,
    seed: int,
    *,
    per_family: int = 20,
    train_rows: int = POOL_TRAIN_ROWS,
    test_rows: int = POOL_TEST_ROWS,
) -> ClassifierPool:
    """Train ``4 * per_family`` classifiers on a seeded split and measure their held-out rates.

    Parameters
    ----------
    dataset : Dataset
        With groups, per-group rates are measured too.
    seed : int
        Seeds the split, subsamples, class weights and every model.
    per_family : int
        Classifiers per family (the paper: 20).
    train_rows, test_rows : int
        Caps on the (stratified) training and evaluation subsamples.

    Returns
    -------
    ClassifierPool

    Raises
    ------
    InvalidConfigError
        For bad counts, or a held-out subsample missing a class (in some group).
    """
    for value, name, low in (
        (per_family, "per_family", 1),
        (train_rows, "train_rows", 50),
        (test_rows, "test_rows", 50),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise InvalidConfigError(f"{name} must be an integer >= {low}, got {value!r}")
    from sklearn.exceptions import ConvergenceWarning  # type: ignore[import-untyped]
    from sklearn.preprocessing import StandardScaler  # type: ignore[import-untyped]

    rng = np.random.default_rng(seed)
    k = dataset.n_classes
    groups = dataset.groups if dataset.groups is not None else np.zeros(dataset.n_rows, dtype=np.int64)
    strata = groups * k + dataset.labels
    order = rng.permutation(dataset.n_rows)
    cut = round(POOL_TRAIN_FRACTION * dataset.n_rows)
    train = _stratified_subsample(np.sort(order[:cut]), strata, train_rows, rng)
    test = _stratified_subsample(np.sort(order[cut:]), strata, test_rows, rng)
    if np.unique(dataset.labels[train]).shape[0] < k:
        raise InvalidConfigError(f"the pool's training subsample of {dataset.name!r} misses a class")
    scaler = StandardScaler().fit(dataset.features[train])
    x_train = scaler.transform(dataset.features[train])
    x_test = scaler.transform(dataset.features[test])
    y_train, y_test, g_test = dataset.labels[train], dataset.labels[test], groups[test]
    m = dataset.n_groups
    cells = np.bincount(g_test * k + y_test, minlength=m * k)
    if np.any(cells == 0):
        raise InvalidConfigError(
            f"the pool's held-out subsample of {dataset.name!r} misses a class in a group"
        )

    svm_rows = _stratified_subsample(np.arange(y_train.shape[0]), y_train, SVM_TRAIN_ROWS, rng)
    names: list[str] = []
    families: list[str] = []
    rates: list[FloatArray] = []
    group_rates: list[FloatArray] = []
    general_rates: list[FloatArray] = []
    off_diagonal = ~np.eye(k, dtype=bool)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for index, (family, description, spec) in enumerate(_pool_specs(k, per_family, rng)):
            if family == "mlp":
                estimator, weights = spec
                estimator.fit(x_train, y_train, sample_weight=np.array([weights[int(y)] for y in y_train]))
            elif family == "svm":
                # Kernel SVM prediction costs (support vectors x rows); a smaller training set keeps
                # the support small enough for Adult-sized evaluation sets.
                estimator = spec
                estimator.fit(x_train[svm_rows], y_train[svm_rows])
            else:
                estimator = spec
                estimator.fit(x_train, y_train)
            predictions = np.asarray(estimator.predict(x_test), dtype=np.int64)
            names.append(f"{family}/{index % per_family + 1}: {description}")
            families.append(family)
            rates.append(_rates(y_test, predictions, k))
            matrix = np.bincount(y_test * k + predictions, minlength=k * k).reshape(k, k).astype(np.float64)
            general_rates.append((matrix / matrix.sum(axis=1, keepdims=True))[off_diagonal])
            group_rates.append(
                np.array([_rates(y_test[g_test == g], predictions[g_test == g], k) for g in range(m)])
            )
    return ClassifierPool(
        dataset.name,
        tuple(names),
        tuple(families),
        np.array(rates),
        np.array(group_rates) if dataset.groups is not None else None,
        np.array(general_rates),
    )


def _rates(labels: IntArray, predictions: IntArray, k: int) -> FloatArray:
    hits = np.bincount(labels[labels == predictions], minlength=k).astype(np.float64)
    totals = np.bincount(labels, minlength=k).astype(np.float64)
    result: FloatArray = hits / totals
    return result


def _quadratic_baselines(true: Metric, k: int) -> dict[str, Metric]:
    a = getattr(true, "a")  # noqa: B009 - QuadraticMetric's linear part
    return {"accuracy": LinearMetric(np.ones(k)), "linear": LinearMetric(a)}


def _fair_baselines(true: FairQuadraticMetric) -> dict[str, Metric]:
    k, m = true.n_classes, true.n_groups
    identity = {pair: np.eye(k) for pair in pair_index(m)}
    return {
        "linear (no fairness)": FairQuadraticMetric(true.a, true.B_pairs, 0.0, true.tau),
        "accuracy + equalized odds": FairQuadraticMetric(np.ones(k), identity, 0.5, true.tau),
    }


def ranking_trial(
    pool: ClassifierPool, sphere: Sphere, rng: np.random.Generator, *, tau: FloatArray | None = None
) -> dict[str, tuple[float, float]]:
    """One trial: draw an oracle metric, elicit it, and score every method's ranking of the pool.

    Parameters
    ----------
    pool : ClassifierPool
    sphere : Sphere
        Query sphere for QPME (a dataset's feasible sphere).
    rng : numpy.random.Generator
        Draws the oracle's metric.
    tau : numpy.ndarray, shape (n_groups, n_classes), optional
        Group prevalences; given, the trial is a fairness trial over ``pool.group_rates``.

    Returns
    -------
    dict
        Method name -> ``(NDCG, Kendall's tau)``; the elicited metric is ``"elicited"``.

    Raises
    ------
    NumericalError
        If the elicitation or a ranking measure fails (e.g. a metric ties every classifier).
    """
    k = pool.rates.shape[1]
    if tau is None:
        true: Metric = random_quadratic_metric(
            rng, k, sphere=sphere, inner_radius=default_inner_radius(sphere)
        )
        elicited: Metric = run(qpme(sphere), ExactOracle(true)).metric
        candidates = pool.rates
        baselines = _quadratic_baselines(true, k)
    else:
        if pool.group_rates is None:
            raise InvalidConfigError(f"pool {pool.dataset!r} has no group rates for a fairness trial")
        fair_true = random_fair_metric(rng, k, tau.shape[0], tau=tau)
        true = fair_true
        elicited = run(fair_qpme(sphere, groups=tau.shape[0], tau=tau), ExactOracle(fair_true)).metric
        candidates = pool.group_rates
        baselines = _fair_baselines(fair_true)
    scores: dict[str, tuple[float, float]] = {}
    for name, metric in {"elicited": elicited, **baselines}.items():
        quality = ranking_quality(true, metric, candidates)
        scores[name] = (quality.ndcg, quality.kendall_tau)
    return scores


class _DiagonalView(Metric):
    """A general-rates metric answering diagonal queries: rates ``r`` become the rate matrix with
    ``R_ii = r_i`` and the rest of row ``i`` spread evenly (`elicitation.rates.OFF_DIAGONAL_CONVENTION`;
    exact for ``k = 2``)."""

    def __init__(self, general: Metric, n_classes: int) -> None:
        self.general = general
        self.higher_is_better = general.higher_is_better
        self._off = ~np.eye(n_classes, dtype=bool)
        self._k = n_classes

    def __call__(self, rates: Any) -> float:
        r = np.asarray(rates, dtype=np.float64)
        matrix = np.repeat(((1.0 - r) / (self._k - 1))[:, None], self._k, axis=1)
        return self.general(matrix[self._off])


def _scores(
    true: Metric, truth_rates: FloatArray, guess: Metric, guess_rates: FloatArray
) -> tuple[float, float]:
    """NDCG and Kendall's tau of ``guess`` (on its own view of the candidates) against ``true``."""
    truth = np.array([true(r) for r in truth_rates])
    predicted = np.array([guess(r) for r in guess_rates])
    truth = truth if true.higher_is_better else -truth
    predicted = predicted if guess.higher_is_better else -predicted
    spread = float(np.max(truth) - np.min(truth))
    if spread == 0.0 or not np.all(np.isfinite(predicted)):
        raise NumericalError("the true metric ties every candidate or the estimate is not finite")
    return ndcg((truth - np.min(truth)) / spread, predicted), kendall_tau(truth, predicted)


def general_ranking_trial(
    pool: ClassifierPool, sphere: Sphere, rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    """One Table 3 trial: the oracle's metric is quadratic in the general (off-diagonal) rates.

    Four elicited metrics rank the pool: LPME and QPME on diagonal rates (queried through
    `_DiagonalView`), and LPME and QPME on general rates (`elicitation.variants`).

    Parameters
    ----------
    pool : ClassifierPool
        Must carry ``general_rates``.
    sphere : Sphere
        Diagonal query sphere; the general sphere has the same radius, capped so that every point of it
        is a valid rate matrix.
    rng : numpy.random.Generator
        Draws the oracle's metric.

    Returns
    -------
    dict
        ``"linear-diagonal"``, ``"linear-general"``, ``"quadratic-diagonal"``, ``"quadratic-general"`` ->
        ``(NDCG, Kendall's tau)``.
    """
    if pool.general_rates is None:
        raise InvalidConfigError(f"pool {pool.dataset!r} has no general rates")
    k = pool.rates.shape[1]
    cap = 1.0 / (k * np.sqrt(k - 1)) * (1.0 - 1e-9)
    general = general_sphere(k, min(sphere.radius, cap))
    true = random_quadratic_metric(rng, k * k - k, sphere=general, inner_radius=default_inner_radius(general))
    view = _DiagonalView(true, k)
    elicited: dict[str, tuple[Metric, FloatArray]] = {
        "linear-diagonal": (run(lpme(sphere), ExactOracle(view)).metric, pool.rates),
        "linear-general": (run(general_lpme(general), ExactOracle(true)).metric, pool.general_rates),
        "quadratic-diagonal": (run(qpme(sphere), ExactOracle(view)).metric, pool.rates),
        "quadratic-general": (run(general_qpme(general), ExactOracle(true)).metric, pool.general_rates),
    }
    return {
        name: _scores(true, pool.general_rates, metric, rates) for name, (metric, rates) in elicited.items()
    }


def run_ranking_benchmark(
    datasets: Sequence[str] | None = None,
    trials: int = DEFAULT_TRIALS,
    seed: int = 0,
    progress: Progress | None = None,
    *,
    per_family: int = 20,
    train_rows: int = POOL_TRAIN_ROWS,
    test_rows: int = POOL_TEST_ROWS,
) -> dict[str, Any]:
    """Appendix H's ranking experiment on several datasets; a JSON-safe report with the paper alongside.

    Parameters
    ----------
    datasets : sequence of str, optional
        Keys of `RANKING_DATASETS`; `DEFAULT_DATASETS` when omitted.
    trials : int
        Random oracle metrics per dataset (the paper: 100).
    seed : int
        Seeds pools, spaces and trials (trial ``t`` of a dataset uses ``default_rng([seed, t])``).
    progress : callable, optional
        ``progress(done, total, label)`` after every trial.
    per_family, train_rows, test_rows : int
        Pool size and training/evaluation caps (see `train_pool`).

    Returns
    -------
    dict
        ``{"benchmark": "ranking", "trials", "seed", "datasets": {key: {...}}}``; each dataset holds its
        pool size, sphere radius, per-method mean/std NDCG and Kendall's tau, the number of failed trials,
        ``elicited_best`` (elicited >= every baseline on both means) and the paper's numbers when known.

    Raises
    ------
    InvalidConfigError
        For an unknown dataset key or bad counts.
    """
    chosen = tuple(DEFAULT_DATASETS if datasets is None else datasets)
    unknown = [name for name in chosen if name not in RANKING_DATASETS]
    if unknown or not chosen:
        raise InvalidConfigError(
            f"unknown ranking dataset(s) {unknown}; choose from {', '.join(RANKING_DATASETS)}"
        )
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise InvalidConfigError(f"trials must be a positive integer, got {trials!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InvalidConfigError(f"seed must be a non-negative integer, got {seed!r}")
    total = trials * len(chosen)
    done = 0
    pools: dict[str, ClassifierPool] = {}
    report: dict[str, Any] = {"benchmark": "ranking", "trials": trials, "seed": seed, "datasets": {}}
    for key in chosen:
        source, kind = RANKING_DATASETS[key]
        fair = kind == "fair"
        dataset = load_dataset(source, groups=fair)
        if source not in pools or (fair and pools[source].group_rates is None):
            pools[source] = train_pool(
                load_dataset(source, groups=True),
                seed,
                per_family=per_family,
                train_rows=train_rows,
                test_rows=test_rows,
            )
        pool = pools[source]
        space = fit_feasible_model(dataset, seed=seed).space
        sphere = Sphere(space.sphere.center, min(space.sphere.radius, DEFAULT_SYNTHETIC_RADIUS))
        tau = space.tau if fair else None
        results: dict[str, list[tuple[float, float]]] = {}
        failures: list[str] = []
        for t in range(trials):
            trial_rng = np.random.default_rng([seed, t])
            try:
                if kind == "general":
                    scores = general_ranking_trial(pool, sphere, trial_rng)
                else:
                    scores = ranking_trial(pool, sphere, trial_rng, tau=tau)
            except NumericalError as exc:
                failures.append(f"trial {t}: {exc}")
            else:
                for method, pair in scores.items():
                    results.setdefault(method, []).append(pair)
            done += 1
            if progress is not None:
                progress(done, total, f"ranking {key}")
        methods = {
            method: {
                "ndcg_mean": float(np.mean([p[0] for p in pairs])),
                "ndcg_std": float(np.std([p[0] for p in pairs])),
                "kendall_tau_mean": float(np.mean([p[1] for p in pairs])),
                "kendall_tau_std": float(np.std([p[1] for p in pairs])),
            }
            for method, pairs in results.items()
        }
        leader = "quadratic-general" if kind == "general" else "elicited"
        elicited = methods.get(leader)
        best = elicited is not None and all(
            elicited["ndcg_mean"] >= other["ndcg_mean"] - _TIE
            and elicited["kendall_tau_mean"] >= other["kendall_tau_mean"] - _TIE
            for name, other in methods.items()
            if name != leader
        )
        paper = PAPER_TABLE2.get(key) or PAPER_TABLE3.get(key)
        report["datasets"][key] = {
            "dataset": source,
            "kind": kind,
            "fair": fair,
            "n_classes": dataset.n_classes,
            "n_groups": dataset.n_groups,
            "pool_size": len(pool.names),
            "sphere_radius": sphere.radius,
            "feasible_radius": space.sphere.radius,
            "methods": methods,
            "failed_trials": len(failures),
            "failures": failures[:5],
            "elicited_best": bool(best),
            "paper": (
                {name: {"ndcg": v[0], "kendall_tau": v[1]} for name, v in paper.items()}
                if paper is not None
                else {
                    "elicited (QPME), text of Appendix H": {
                        "ndcg": PAPER_QUADRATIC_ELICITED[0],
                        "kendall_tau": PAPER_QUADRATIC_ELICITED[1],
                    }
                }
            ),
        }
    return report


def format_ranking_table(report: Mapping[str, Any], *, markdown: bool = True) -> str:
    """One row per dataset and method: our mean NDCG / Kendall's tau next to the paper's (Table 2)."""
    header = ["dataset", "method", "NDCG", "Kendall tau", "paper NDCG", "paper tau"]
    paper_names = {
        "linear-diagonal": ("linear-diagonal",),
        "linear-general": ("linear-general",),
        "quadratic-diagonal": ("quadratic-diagonal",),
        "quadratic-general": ("quadratic-general",),
        "elicited": ("elicited (fair QPME)", "elicited (QPME), text of Appendix H"),
        "linear (no fairness)": ("linear (no fairness)",),
        "accuracy + equalized odds": ("accuracy + equalized odds",),
    }
    rows: list[list[str]] = []
    for key, entry in report["datasets"].items():
        paper = entry.get("paper") or {}
        for method, values in entry["methods"].items():
            reference = next((paper[n] for n in paper_names.get(method, ()) if n in paper), None)
            rows.append(
                [
                    key,
                    method,
                    f"{values['ndcg_mean']:.4f}",
                    f"{values['kendall_tau_mean']:.4f}",
                    "" if reference is None else f"{reference['ndcg']:.4f}",
                    "" if reference is None else f"{reference['kendall_tau']:.4f}",
                ]
            )
        for name, values in paper.items():
            if name.startswith("FPME"):
                rows.append(
                    [
                        key,
                        f"{name} (not run)",
                        "",
                        "",
                        f"{values['ndcg']:.4f}",
                        f"{values['kendall_tau']:.4f}",
                    ]
                )
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]
    )
