"""The best classifier for each elicited metric of a dataset-backed study (and for the panel's consensus).

The numbers come from the lab (`elicitation.lab.optimal`) on the study's stored feasible set: the mixture
of the dataset's trained classifiers that each metric likes best, beside the most accurate classifier
and the best single trained classifier. A study with groups also ranks the real candidate classifiers of
its dataset split (`elicitation.lab.candidates`) by each metric, with each candidate's posterior chance
of being the best (`elicitation.active.best_probabilities`). The results page, the JSON API and the
exports (``best-classifiers.json``, ``best-classifiers.csv``, ``candidate-ranking.csv``) all read one
`BestView`.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from sqlalchemy.orm import Session

from elicitation import ElicitationError, Metric
from elicitation.active import best_probabilities
from elicitation.families import family_of
from elicitation.lab.candidates import Candidate, Frontier, shipped_frontier
from elicitation.lab.feasible import DatasetSpace
from elicitation.lab.optimal import (
    BestClassifier,
    accuracy_classifier,
    best_classifier,
    best_trained,
)
from elicitation.optimal import DEFAULT_GAP_TOLERANCE

from ..codec import decode_metric
from ..models import Study
from ..study_config import StudyConfig, build_space
from .export import csv_lines
from .monitor import included_metrics
from .panel import study_panel

__all__ = [
    "CANDIDATE_METHOD",
    "METHOD",
    "NO_FRONTIER",
    "BestRow",
    "BestView",
    "CandidateRanking",
    "best_csv",
    "best_file",
    "best_json",
    "candidate_gaps",
    "candidates_json",
    "ranking_columns",
    "study_best",
]

#: Decimals that write the search's tolerance out in full (0.0000000001, not 1e-10).
_DECIMALS: Final = max(0, -math.floor(math.log10(DEFAULT_GAP_TOLERANCE)))
#: How the best classifier is found, in the words the page and the JSON use.
METHOD: Final = (
    "Each metric's best classifier mixes the dataset's trained classifiers at random (each person is "
    "decided by one of them, drawn with the probabilities shown): among all such mixtures it is the one "
    "the metric scores best on the dataset's held-out people. The search is exact: it stops only once no "
    f"mixture could score more than {DEFAULT_GAP_TOLERANCE:.{_DECIMALS}f} better."
)
#: How the candidate classifiers are made and ranked, in the words the page and the JSON use.
CANDIDATE_METHOD: Final = (
    "Deployable classifiers trained on the dataset's training people and described on its held-out "
    "people: the most accurate one, group thresholds that equalise true-positive rates or positive rates "
    "within several slacks, classifiers retrained under equal-treatment constraints (fairlearn), and "
    "mixtures. Each participant's elicited cost ranks them (lower is better); the chance of being best is "
    "the share of the participant's posterior under which the candidate scores best of all."
)
#: Why a study with groups has no candidate ranking, when none was trained for its dataset split.
NO_FRONTIER: Final = (
    "No candidate classifiers were trained for this dataset split (they are trained for the bundled Adult "
    "data with its default split), so the candidates cannot be ranked here; the best classifier of each "
    "metric above is still exact."
)
#: Label of the accuracy row.
ACCURACY_LABEL: Final = "Most accurate"
#: Label of the consensus row.
CONSENSUS_LABEL: Final = "Panel consensus"


@dataclass(frozen=True)
class BestRow:
    """One metric's best classifier, its value, and what the alternatives score under the same metric."""

    label: str
    kind: str  # "accuracy", "participant" or "consensus"
    session_id: uuid.UUID | None
    participant_code: str | None
    metric: Metric | None
    found: BestClassifier
    value: float | None
    accurate_value: float | None
    trained_value: float | None
    lower_is_better: bool

    @property
    def tradeoff(self) -> float | None:
        """The fair metric's trade-off ``lam`` (accuracy against fairness), else ``None``."""
        lam = getattr(self.metric, "lam", None)
        return None if lam is None else float(lam)


@dataclass(frozen=True)
class CandidateRanking:
    """One metric's ranking of the candidate classifiers: its cost of each, and each one's chance of being
    best (None without a posterior: the paper's searches, the panel consensus)."""

    label: str
    kind: str  # "participant" or "consensus"
    session_id: uuid.UUID | None
    participant_code: str | None
    costs: list[float]
    chances: list[float] | None

    @property
    def order(self) -> list[int]:
        """Candidate indices, best (lowest cost) first."""
        return sorted(range(len(self.costs)), key=lambda index: (self.costs[index], index))

    def rank(self, index: int) -> int:
        """The candidate's place in this metric's ranking (1 = best)."""
        return self.order.index(index) + 1


@dataclass(frozen=True)
class BestView:
    """Every metric's best classifier on a study's dataset, or why there is none; for a study with groups,
    the candidate classifiers ranked by each metric (or why there are none)."""

    study: Study
    class_names: list[str]
    group_names: list[str]
    rows: list[BestRow]
    reason: str | None
    frontier: Frontier | None = None
    rankings: tuple[CandidateRanking, ...] = ()
    frontier_reason: str | None = None

    @property
    def candidate_method(self) -> str:
        return CANDIDATE_METHOD

    def candidate_rows(self) -> list[dict[str, Any]]:
        """Each candidate with what a coordinator compares: people decided correctly per group and class,
        the gaps between the groups, and how the participants rank it; in the consensus's order (else
        by how many participants it suits best)."""
        if self.frontier is None:
            return []
        participants = [r for r in self.rankings if r.kind == "participant"]
        consensus = next((r for r in self.rankings if r.kind == "consensus"), None)
        rows = []
        for index, candidate in enumerate(self.frontier.candidates):
            chances = [r.chances[index] for r in participants if r.chances is not None]
            rows.append(
                {
                    "index": index,
                    "candidate": candidate,
                    "cells": self._candidate_cells(candidate),
                    "gaps": candidate_gaps(candidate),
                    "best_for": sum(1 for r in participants if r.order[0] == index),
                    "mean_chance": float(np.mean(chances)) if chances else None,
                    "consensus_rank": None if consensus is None else consensus.rank(index),
                }
            )
        if consensus is not None:
            return sorted(rows, key=lambda row: row["consensus_rank"])
        return sorted(rows, key=lambda row: (-row["best_for"], -(row["mean_chance"] or 0.0), row["index"]))

    def _candidate_cells(self, candidate: Candidate) -> list[dict[str, Any]]:
        confusion = candidate.confusion
        return [
            {
                "label": f"{group}, {name}",
                "right": round(float(confusion[g, i, i]), 1),
                "of": round(float(confusion[g, i].sum()), 1),
            }
            for g, group in enumerate(self.group_names)
            for i, name in enumerate(self.class_names)
        ]

    @property
    def method(self) -> str:
        return METHOD

    def cells(self, row: BestRow) -> list[dict[str, Any]]:
        """Per group and class: how many of that class's people the classifier decides correctly (of 100)."""
        confusion = np.asarray(row.found.confusion, dtype=np.float64)
        stacks = confusion if confusion.ndim == 3 else confusion[None]
        cells = []
        for g, matrix in enumerate(stacks):
            prefix = f"{self.group_names[g]}, " if len(stacks) > 1 else ""
            for i, name in enumerate(self.class_names):
                cells.append(
                    {
                        "label": f"{prefix}{name}",
                        "right": round(float(matrix[i, i]), 1),
                        "of": round(float(matrix[i].sum()), 1),
                    }
                )
        return cells

    def mixes(self, row: BestRow) -> str:
        """How many trained classifiers each group's best one mixes, with the share of people each decides."""
        parts = []
        for g, classifier in enumerate(row.found.classifiers):
            prefix = f"{self.group_names[g]}: " if len(row.found.classifiers) > 1 else ""
            shares = [float(p) for p in classifier.probabilities]
            if len(shares) == 1:
                parts.append(f"{prefix}1 classifier")
            else:
                parts.append(
                    f"{prefix}{len(shares)} classifiers, " + " / ".join(f"{100 * p:.0f}%" for p in shares)
                )
        return "; ".join(parts)

    def overall(self, row: BestRow) -> list[float]:
        """People of 100 decided correctly, per group."""
        confusion = np.asarray(row.found.confusion, dtype=np.float64)
        stacks = confusion if confusion.ndim == 3 else confusion[None]
        return [round(float(np.trace(matrix)), 1) for matrix in stacks]


def candidate_gaps(candidate: Candidate) -> dict[str, float]:
    """Between the first two groups, in percentage points: the true-positive-rate gap (the last class's
    share decided correctly) and the positive-rate gap (the share of people put in the last class)."""
    rates, priors = candidate.rates, candidate.priors
    positive = priors[:, -1] * rates[:, -1] + priors[:, 0] * (1.0 - rates[:, 0])
    return {
        "true_positive_rate": round(100.0 * float(abs(rates[0, -1] - rates[1, -1])), 1),
        "positive_rate": round(100.0 * float(abs(positive[0] - positive[1])), 1),
    }


def _space(study: Study) -> DatasetSpace | None:
    space = build_space(StudyConfig.model_validate(study.config))
    return space if isinstance(space, DatasetSpace) else None


def study_best(db: Session, study: Study, *, consensus: bool = True) -> BestView:
    """The best classifier of every included finished session's metric (and the panel's consensus)."""
    config = study.config
    classes = [str(name) for name in config["class_names"]]
    groups = [str(name) for name in config.get("group_names") or []]
    space = _space(study)
    if space is None:
        return BestView(
            study,
            classes,
            groups,
            [],
            "The best classifier needs a study built on a dataset: this study's questions are synthetic, "
            "so there are no trained classifiers to choose from.",
        )
    accurate = accuracy_classifier(space)
    rows = [
        BestRow(ACCURACY_LABEL, "accuracy", None, None, None, accurate, None, None, None, False),
    ]
    members = included_metrics(db, study)
    metrics: list[tuple[str, str, uuid.UUID | None, str | None, Metric]] = [
        (item.label, "participant", item.session_id, item.participant_code, decode_metric(item.metric))
        for item in members
    ]
    if consensus:
        view = study_panel(db, study)
        if view.result is not None:
            metrics.append((CONSENSUS_LABEL, "consensus", None, None, view.result.consensus))
    frontier = shipped_frontier(space.recipe) if len(groups) > 1 else None
    rankings = []
    if frontier is not None:
        details = [item.details for item in members] + [None] * (len(metrics) - len(members))
        rankings = [
            _ranking(frontier, label, kind, session_id, code, metric, found)
            for (label, kind, session_id, code, metric), found in zip(metrics, details, strict=True)
        ]
    for label, kind, session_id, code, metric in metrics:
        try:
            found = best_classifier(space, metric)
        except ElicitationError:
            continue  # a metric this dataset cannot score (shape) is left out, never a 500
        _, trained_value = best_trained(space, metric)
        rows.append(
            BestRow(
                label,
                kind,
                session_id,
                code,
                metric,
                found,
                found.optimum.value,
                _value(metric, accurate.rates),
                trained_value,
                not metric.higher_is_better,
            )
        )
    missing = NO_FRONTIER if len(groups) > 1 and frontier is None else None
    return BestView(study, classes, groups, rows, None, frontier, tuple(rankings), missing)


def _ranking(
    frontier: Frontier,
    label: str,
    kind: str,
    session_id: uuid.UUID | None,
    code: str | None,
    metric: Metric,
    details: dict[str, Any] | None,
) -> CandidateRanking:
    """``metric``'s cost of each candidate (a higher-is-better metric negated) and, from its posterior
    sample, each candidate's chance of being best."""
    sign = -1.0 if metric.higher_is_better else 1.0
    costs = [sign * _value(metric, candidate.rates) for candidate in frontier.candidates]
    chances = None
    if details and "posterior_sample" in details:
        try:
            chances = best_probabilities(details, frontier.rates).tolist()
        except ElicitationError:
            chances = None  # a posterior of another shape (a metric without groups) gives no chances
    return CandidateRanking(label, kind, session_id, code, costs, chances)


def _value(metric: Metric, rates: np.ndarray) -> float:
    """``metric`` at a classifier's group rates (each group's own for a metric without groups)."""
    if rates.ndim == 2 and family_of(metric).n_groups(metric) is None:
        return float(np.mean([metric(r) for r in rates]))
    return float(metric(rates))


def _group_parts(view: BestView, row: BestRow) -> list[dict[str, Any]]:
    confusion = np.asarray(row.found.confusion, dtype=np.float64)
    stacks = confusion if confusion.ndim == 3 else confusion[None]
    parts = []
    for g, classifier in enumerate(row.found.classifiers):
        parts.append(
            {
                "group": view.group_names[g] if len(stacks) > 1 else None,
                "rates": dict(zip(view.class_names, classifier.rates.tolist(), strict=True)),
                "confusion": stacks[g].tolist(),
                "mixture": [
                    {"probability": float(p), "plug_in_weights": w.tolist()}
                    for p, w in zip(classifier.probabilities, classifier.weights, strict=True)
                ],
            }
        )
    return parts


def best_json(view: BestView) -> dict[str, Any]:
    """The view as a JSON document (what the API returns and the JSON export holds)."""
    return {
        "study": {"id": str(view.study.id), "name": view.study.name},
        "class_names": view.class_names,
        "group_names": view.group_names,
        "method": view.method,
        "reason": view.reason,
        "classifiers": [
            {
                "label": row.label,
                "kind": row.kind,
                "session_id": None if row.session_id is None else str(row.session_id),
                "participant_code": row.participant_code,
                "metric_type": None if row.metric is None else row.metric.kind,
                "lam": row.tradeoff,
                "lower_is_better": row.lower_is_better,
                "value": row.value,
                "value_of_most_accurate": row.accurate_value,
                "value_of_best_trained": row.trained_value,
                "gap": row.found.optimum.gap,
                "exact": row.found.optimum.exact,
                "correct_of_100": view.overall(row),
                "groups": _group_parts(view, row),
            }
            for row in view.rows
        ],
        **candidates_json(view),
    }


def candidates_json(view: BestView) -> dict[str, Any]:
    """The candidate classifiers and each metric's ranking of them (empty lists without candidates)."""
    frontier = view.frontier
    candidates = []
    for candidate in frontier.candidates if frontier is not None else ():
        candidates.append(
            {
                "label": candidate.label,
                "method": candidate.method,
                "constraint": candidate.constraint,
                "slack": candidate.slack,
                "gaps_points": candidate_gaps(candidate),
                "groups": [
                    {
                        "group": group,
                        "rates": dict(zip(view.class_names, candidate.rates[g].tolist(), strict=True)),
                        "confusion": candidate.confusion[g].tolist(),
                    }
                    for g, group in enumerate(view.group_names)
                ],
            }
        )
    return {
        "candidate_method": view.candidate_method,
        "candidate_reason": view.frontier_reason,
        "candidates": candidates,
        "candidate_rankings": [
            {
                "label": ranking.label,
                "kind": ranking.kind,
                "session_id": None if ranking.session_id is None else str(ranking.session_id),
                "participant_code": ranking.participant_code,
                "order": ranking.order,
                "costs": ranking.costs,
                "chance_best": ranking.chances,
            }
            for ranking in view.rankings
        ],
    }


def ranking_columns(view: BestView) -> list[str]:
    """The candidate-ranking CSV's columns: whose ranking, the candidate, its place, cost and chance."""
    columns = ["label", "kind", "session_id", "participant_code", "candidate", "rank", "cost", "chance_best"]
    columns += ["gap_true_positive_rate_points", "gap_positive_rate_points"]
    for group in view.group_names:
        columns += [f"rate_{group}_{name}" for name in view.class_names]
    return columns


def _ranking_rows(view: BestView) -> Iterator[dict[str, Any]]:
    document = candidates_json(view)
    for ranking in document["candidate_rankings"]:
        for rank, index in enumerate(ranking["order"], start=1):
            candidate = document["candidates"][index]
            row = {key: ranking[key] for key in ("label", "kind", "session_id", "participant_code")}
            row.update(
                candidate=candidate["label"],
                rank=rank,
                cost=ranking["costs"][index],
                chance_best=None if ranking["chance_best"] is None else ranking["chance_best"][index],
                gap_true_positive_rate_points=candidate["gaps_points"]["true_positive_rate"],
                gap_positive_rate_points=candidate["gaps_points"]["positive_rate"],
            )
            for part in candidate["groups"]:
                for name, rate in part["rates"].items():
                    row[f"rate_{part['group']}_{name}"] = rate
            yield row


def best_columns(view: BestView) -> list[str]:
    """The CSV's columns: who, the trade-off, values, then rates and confusion cells per group and class."""
    prefixes = [f"{g}_" for g in view.group_names] or [""]
    columns = [
        "label",
        "kind",
        "session_id",
        "participant_code",
        "metric_type",
        "lam",
        "value",
        "value_of_most_accurate",
        "value_of_best_trained",
        "gap",
        "exact",
    ]
    for prefix in prefixes:
        columns += [f"rate_{prefix}{name}" for name in view.class_names]
        columns += [
            f"confusion_{prefix}{true}_{predicted}"
            for true in view.class_names
            for predicted in view.class_names
        ]
        columns.append(f"mixture_{prefix}".rstrip("_"))
    return columns


def _rows(view: BestView) -> Iterator[dict[str, Any]]:
    for item in best_json(view)["classifiers"]:
        row = {key: item[key] for key in best_columns(view) if key in item}
        for part in item["groups"]:
            prefix = f"{part['group']}_" if part["group"] is not None else ""
            for name, rate in part["rates"].items():
                row[f"rate_{prefix}{name}"] = rate
            for i, true in enumerate(view.class_names):
                for j, predicted in enumerate(view.class_names):
                    row[f"confusion_{prefix}{true}_{predicted}"] = part["confusion"][i][j]
            row[f"mixture_{prefix}".rstrip("_")] = json.dumps(part["mixture"])
        yield row


def best_csv(view: BestView) -> Iterator[str]:
    """The view as CSV text: one row per metric."""
    return csv_lines(best_columns(view), _rows(view))


def best_file(view: BestView, kind: str) -> str:
    """The text of ``best-classifiers.json`` (the JSON document), ``best-classifiers.csv`` (the table) or
    ``candidate-ranking.csv`` (the candidates' ranking, one row per metric and candidate)."""
    if kind == "best-classifiers.json":
        return json.dumps(best_json(view), indent=1)
    if kind == "candidate-ranking.csv":
        return "".join(csv_lines(ranking_columns(view), _ranking_rows(view)))
    return "".join(best_csv(view))
