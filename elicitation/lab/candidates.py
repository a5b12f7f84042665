"""Real candidate classifiers that span a fairness dataset's accuracy-equality trade-off.

The decision a fairness study informs is which of a few deployable classifiers to use. `train_frontier`
trains them on the study's own split (the `FeasibleModel` of its recipe: same training rows, same held-out
rows, same fitted model): the most accurate one (the fitted model at the 0.5 threshold), group-specific
thresholds that equalise true-positive rates or positive rates within several slacks (fairlearn's
``ThresholdOptimizer``), reductions trained under demographic-parity, equalised-odds and
true-positive-rate-parity constraints at several bounds (fairlearn's ``ExponentiatedGradient``), and
mixtures of the most accurate classifier with the strictest equal-treatment ones. Each candidate is its
per-group rates on the held-out people (the paper's ``r^g_i = P(Yhat = i | Y = i, G = g)``, Section 2),
exact expectations of the randomised classifiers rather than one random draw.

Training takes about a minute, so the frontier of the bundled fairness data is shipped with the package
(`shipped_frontier`; regenerate with ``python -m elicitation.lab.candidates``) and nothing trains while
someone waits for a page. fairlearn lives here in the lab and is never imported by the core.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import numpy as np
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from ..errors import InvalidConfigError
from ..types import FloatArray
from .datasets import DATA_DIR
from .feasible import DEFAULT_TEST_FRACTION, FeasibleModel

__all__ = [
    "FRONTIER_VERSION",
    "SPECS",
    "Candidate",
    "CandidateSpec",
    "Frontier",
    "frontier_key",
    "frontier_path",
    "shipped_frontier",
    "train_frontier",
]

#: Changes whenever the candidates a key trains change (stored with every frontier).
FRONTIER_VERSION: Final = "frontier-1"
#: What a frontier depends on in a dataset space's recipe: the data, the split and the fitted model.
_KEY_FIELDS: Final = ("dataset", "seed", "test_fraction", "model")
#: Weights of the most accurate classifier in the mixtures (the rest goes to the equal-treatment one).
_MIXTURE_WEIGHTS: Final = (0.5,)
#: Candidates whose rates agree to this are the same classifier; the first one is kept.
_SAME_RATES: Final = 1e-6
#: Iterations of the reductions (fairlearn's default is 50; 30 reach the bound on Adult in a third less time).
_REDUCTION_ITERATIONS: Final = 30

#: fairlearn's constraint names, with what they mean in words.
_THRESHOLD_CONSTRAINTS: Final = {
    "true_positive_rate_parity": "equal true-positive rates",
    "demographic_parity": "equal positive rates",
}
_REDUCTION_CONSTRAINTS: Final = {
    "true_positive_rate_parity": "equal true-positive rates",
    "demographic_parity": "equal positive rates",
    "equalized_odds": "equal true- and false-positive rates",
}


@dataclass(frozen=True)
class CandidateSpec:
    """How one candidate is trained: ``method`` is "most accurate", "thresholds" or "reduction"."""

    method: str
    constraint: str | None = None
    slack: float | None = None

    @property
    def label(self) -> str:
        """The candidate's name in plain words."""
        if self.method == "most accurate":
            return "Most accurate"
        assert self.constraint is not None and self.slack is not None
        words = (_THRESHOLD_CONSTRAINTS if self.method == "thresholds" else _REDUCTION_CONSTRAINTS)[
            self.constraint
        ]
        how = "Group thresholds" if self.method == "thresholds" else "Retrained"
        within = "exactly" if self.slack == 0 else f"within {100 * self.slack:g} points"
        return f"{how}, {words} {within}"


#: The trained candidates of a frontier (mixtures are added from them).
SPECS: Final = (
    CandidateSpec("most accurate"),
    *(
        CandidateSpec("thresholds", constraint, slack)
        for constraint in _THRESHOLD_CONSTRAINTS
        for slack in (0.0, 0.02, 0.05, 0.1)
    ),
    *(
        CandidateSpec("reduction", constraint, slack)
        for constraint in _REDUCTION_CONSTRAINTS
        for slack in (0.02, 0.08)
    ),
)


@dataclass(frozen=True, eq=False)
class Candidate:
    """One deployable classifier, described by what it does to each group's held-out people.

    Attributes
    ----------
    label : str
        Its name in plain words.
    method : str
        "most accurate", "thresholds", "reduction" or "mixture".
    constraint : str or None
        fairlearn's constraint name (None for the most accurate classifier and the mixtures).
    slack : float or None
        The constraint's allowed difference between groups.
    rates : numpy.ndarray, shape (n_groups, n_classes)
        Per group, the share of each class's people decided correctly.
    priors : numpy.ndarray, shape (n_groups, n_classes)
        Per group, the class shares of the held-out people.
    """

    label: str
    method: str
    constraint: str | None
    slack: float | None
    rates: FloatArray
    priors: FloatArray

    @property
    def confusion(self) -> FloatArray:
        """Per group, the confusion matrix out of 100 people (rows true class, columns prediction)."""
        k = self.rates.shape[1]
        result = np.empty((self.rates.shape[0], k, k))
        for g, (rates, priors) in enumerate(zip(self.rates, self.priors, strict=True)):
            off = (1.0 - rates) / max(k - 1, 1)
            result[g] = 100.0 * priors[:, None] * (np.diag(rates - off) + off[:, None])
        return result

    @property
    def accuracy(self) -> FloatArray:
        """Per group, the share of people decided correctly."""
        result: FloatArray = np.sum(self.rates * self.priors, axis=1)
        return result

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "method": self.method,
            "constraint": self.constraint,
            "slack": self.slack,
            "rates": self.rates.tolist(),
            "priors": self.priors.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Candidate:
        return cls(
            str(data["label"]),
            str(data["method"]),
            None if data["constraint"] is None else str(data["constraint"]),
            None if data["slack"] is None else float(data["slack"]),
            np.asarray(data["rates"], dtype=np.float64),
            np.asarray(data["priors"], dtype=np.float64),
        )


@dataclass(frozen=True, eq=False)
class Frontier:
    """The candidates of one dataset split, and what they were trained from."""

    key: dict[str, Any]
    class_names: tuple[str, ...]
    group_names: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    version: str = FRONTIER_VERSION

    @property
    def rates(self) -> FloatArray:
        """Every candidate's rates, shape ``(n_candidates, n_groups, n_classes)``."""
        return np.stack([candidate.rates for candidate in self.candidates])

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "key": self.key,
            "class_names": list(self.class_names),
            "group_names": list(self.group_names),
            "candidates": [candidate.to_dict() for candidate in self.candidates],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Frontier:
        return cls(
            dict(data["key"]),
            tuple(data["class_names"]),
            tuple(data["group_names"]),
            tuple(Candidate.from_dict(item) for item in data["candidates"]),
            str(data["version"]),
        )


def frontier_key(recipe: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a dataset space's recipe that a frontier depends on (defaults filled in)."""
    defaults = {"seed": 0, "test_fraction": DEFAULT_TEST_FRACTION, "model": "logistic"}
    key = {field: recipe.get(field, defaults.get(field)) for field in _KEY_FIELDS}
    key["test_fraction"] = float(key["test_fraction"])
    return key


def frontier_path(dataset: str) -> Path:
    """Where the shipped frontier of a bundled dataset lives."""
    return DATA_DIR / f"frontier-{dataset}.json"


@cache
def _load(path: Path) -> Frontier | None:
    if not path.is_file():
        return None
    return Frontier.from_dict(json.loads(path.read_text(encoding="utf-8")))


def shipped_frontier(recipe: Mapping[str, Any]) -> Frontier | None:
    """The shipped frontier for a dataset space's recipe, or None when none was trained for its split."""
    if not recipe.get("groups") or not isinstance(recipe.get("dataset"), str):
        return None
    frontier = _load(frontier_path(str(recipe["dataset"])))
    if frontier is None or frontier.version != FRONTIER_VERSION or frontier.key != frontier_key(recipe):
        return None
    return frontier


def _group_rates(probabilities: FloatArray, labels: np.ndarray, groups: np.ndarray, m: int) -> FloatArray:
    """Per group and class, the expected share decided correctly by P(Yhat = 1 | x) = ``probabilities``."""
    rates = np.empty((m, 2))
    for g in range(m):
        rows = groups == g
        positive = probabilities[rows]
        truth = labels[rows]
        rates[g] = (np.mean(1.0 - positive[truth == 0]), np.mean(positive[truth == 1]))
    return rates


def _positive_probabilities(model: FeasibleModel, spec: CandidateSpec) -> FloatArray:
    """P(Yhat = 1 | x) on the held-out rows of the classifier ``spec`` trains on the training rows."""
    dataset = model.dataset
    assert dataset.groups is not None
    test = model.test_rows
    train = np.setdiff1d(np.arange(dataset.n_rows), test)
    features, labels, groups = dataset.features, dataset.labels, dataset.groups
    if spec.method == "most accurate":
        result: FloatArray = (model.eta[:, 1] >= 0.5).astype(np.float64)
        return result
    if spec.method == "thresholds":
        from fairlearn.postprocessing import ThresholdOptimizer  # type: ignore[import-untyped]

        optimizer = ThresholdOptimizer(
            estimator=model.estimator,
            constraints=spec.constraint,
            prefit=True,
            predict_method="predict_proba",
            tol=spec.slack or None,
        )
        optimizer.fit(features[train], labels[train], sensitive_features=groups[train])
        pmf = optimizer._pmf_predict(features[test], sensitive_features=groups[test])
        return np.asarray(pmf[:, 1], dtype=np.float64)
    from fairlearn.reductions import (  # type: ignore[import-untyped]
        DemographicParity,
        EqualizedOdds,
        ExponentiatedGradient,
        TruePositiveRateParity,
    )
    from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped]
    from sklearn.preprocessing import StandardScaler  # type: ignore[import-untyped]

    moments = {
        "demographic_parity": DemographicParity,
        "equalized_odds": EqualizedOdds,
        "true_positive_rate_parity": TruePositiveRateParity,
    }
    assert spec.constraint is not None and spec.slack is not None
    scaler = StandardScaler().fit(features[train])
    reduction = ExponentiatedGradient(
        LogisticRegression(max_iter=1000),
        moments[spec.constraint](difference_bound=spec.slack),
        eps=spec.slack,
        max_iter=_REDUCTION_ITERATIONS,
    )
    reduction.fit(scaler.transform(features[train]), labels[train], sensitive_features=groups[train])
    return np.asarray(reduction._pmf_predict(scaler.transform(features[test]))[:, 1], dtype=np.float64)


def train_frontier(model: FeasibleModel, specs: Sequence[CandidateSpec] = SPECS) -> Frontier:
    """Train the candidates of ``specs`` on ``model``'s split, plus mixtures, and describe them held out.

    Parameters
    ----------
    model : FeasibleModel
        A two-class dataset with groups, fitted by `fit_feasible_model` (its recipe is the frontier's key).
    specs : sequence of CandidateSpec
        Which classifiers to train; mixtures pair the most accurate one (when trained) with each
        exact-parity group-threshold classifier.

    Raises
    ------
    InvalidConfigError
        Without groups or with more than two classes (fairlearn's mitigators are binary).
    """
    dataset = model.dataset
    if dataset.groups is None or model.space.n_groups < 2:
        raise InvalidConfigError("a candidate frontier needs a dataset with groups")
    if dataset.n_classes != 2:
        raise InvalidConfigError("a candidate frontier needs two classes (fairlearn's mitigators are binary)")
    m = model.space.n_groups
    labels, groups = model.test_labels, model.test_groups
    priors = np.stack([np.bincount(labels[groups == g], minlength=2) / np.sum(groups == g) for g in range(m)])
    candidates: list[Candidate] = []
    with threadpool_limits(limits=1):
        for spec in specs:
            rates = _group_rates(_positive_probabilities(model, spec), labels, groups, m)
            candidates.append(Candidate(spec.label, spec.method, spec.constraint, spec.slack, rates, priors))
    accurate = next((c for c in candidates if c.method == "most accurate"), None)
    if accurate is not None:
        for other in [c for c in candidates if c.method == "thresholds" and c.slack == 0]:
            for weight in _MIXTURE_WEIGHTS:
                label = (
                    f"Mix: {100 * weight:g} % most accurate, {100 * (1 - weight):g} % "
                    f"{other.label[0].lower()}{other.label[1:]}"
                )
                rates = weight * accurate.rates + (1.0 - weight) * other.rates
                candidates.append(Candidate(label, "mixture", None, None, rates, priors))
    distinct: list[Candidate] = []
    for candidate in candidates:
        if all(np.max(np.abs(candidate.rates - kept.rates)) > _SAME_RATES for kept in distinct):
            distinct.append(candidate)
    return Frontier(
        frontier_key(model.space.recipe), dataset.class_names, dataset.group_names, tuple(distinct)
    )


def _main(argv: Sequence[str]) -> int:
    """Retrain and write the shipped frontier of each named bundled dataset (default: adult)."""
    for name in argv or ["adult"]:
        model = FeasibleModel.from_recipe({"dataset": name, "groups": True, "seed": 0})
        frontier = train_frontier(model)
        path = frontier_path(name)
        path.write_text(json.dumps(frontier.to_dict(), indent=1) + "\n", encoding="utf-8")
        print(f"{path}: {len(frontier.candidates)} candidates")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
