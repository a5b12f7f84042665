"""The expert-panel view of a study: what its participants' metrics agree on, how much, and their camps.

(A panel here is the study's participants as a group of experts; recruitment panels are `app.panels`.)

The numbers come from the core (`elicitation.panel.panel`) on every included finished session's stored
metric, with agreement measured on random question pairs from the study's own query region. The seed is
fixed, so the page, the JSON API and the exports show the same numbers every time for the same sessions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final

from sqlalchemy.orm import Session

from elicitation import ElicitationError
from elicitation.families import MetricFamily
from elicitation.panel import DEFAULT_BOOTSTRAP, DEFAULT_LEVEL, SPLIT_SILHOUETTE, Panel, panel

from ..algorithms import get_algorithm
from ..charts import panel as panel_charts
from ..codec import decode_metric
from ..metric_views import stated_intervals
from ..models import Study
from ..sessions import study_runtime
from ..study_config import StudyConfig, build_space, config_hash
from .export import csv_lines
from .monitor import ElicitedMetric, coefficient_labels, included_metrics

__all__ = [
    "AGREEMENT_COLUMNS",
    "MIN_MEMBERS",
    "PANEL_PAIRS",
    "PANEL_SEED",
    "PanelView",
    "agreement_csv",
    "panel_columns",
    "panel_csv",
    "panel_figures",
    "panel_file",
    "panel_json",
    "study_panel",
]

#: Seed of the panel's question pairs and resamples: every view of a study shows the same numbers.
PANEL_SEED: Final = 20261126
#: Random question pairs every participant's metric answers.
PANEL_PAIRS: Final = 1000
#: Fewest included finished sessions a panel needs.
MIN_MEMBERS: Final = 2

#: How the consensus is made, in the words the page and the JSON use.
AGGREGATION: Final = (
    "The consensus scores every classifier by the participants' average score: each participant's metric "
    "is taken in the paper's normalisation (so nobody counts more for answering on a larger scale), and the "
    "average is written again as a metric of the same kind. For linear metrics this is the normalised mean "
    "of the weight vectors, the direction closest to all of them; for quadratic metrics the mean of (a, B), "
    "which stays concave; for fair metrics the mean of the costs, whose trade-off is the participants' "
    "weight on equal treatment relative to their weight on mistakes."
)
AGREEMENT_METHOD: Final = (
    "Agreement of two participants: the share of {pairs} random question pairs from the study's query region "
    "that their metrics answer alike."
)
CAMPS_METHOD: Final = (
    "Camps: participants are grouped by how alike they answer (average-linkage clustering); the panel is "
    "said to split when the grouping's mean silhouette is at least {threshold}. A participant in a group "
    "too small to be a camp is an outlier, counted with the camp they agree with most."
)


@dataclass(frozen=True)
class PanelView:
    """A study's panel: its members (in enrolment order) and the core's `Panel`, or why there is none."""

    study: Study
    members: list[ElicitedMetric]
    family: MetricFamily
    class_names: list[str]
    group_names: list[str]
    result: Panel | None
    reason: str | None

    @cached_property
    def labels(self) -> dict[str, str]:
        """Coefficient column -> the words a coordinator reads."""
        return coefficient_labels(self.study)

    @property
    def method(self) -> dict[str, Any]:
        """How the numbers are made: the page's words and the JSON's ``method``."""
        return {
            "consensus": AGGREGATION,
            "agreement": AGREEMENT_METHOD.format(pairs=PANEL_PAIRS),
            "camps": CAMPS_METHOD.format(threshold=SPLIT_SILHOUETTE),
            "seed": PANEL_SEED,
            "pairs": PANEL_PAIRS,
            "bootstrap_resamples": DEFAULT_BOOTSTRAP,
            "level": DEFAULT_LEVEL,
            "split_silhouette": SPLIT_SILHOUETTE,
        }

    @cached_property
    def centre_cells(self) -> list[dict[str, float]]:
        """Each camp centre's coefficients by export column."""
        if self.result is None:
            return []
        return [
            self.family.export_cells(camp.centre.to_dict(), self.class_names, self.group_names)
            for camp in self.result.camps
        ]

    @cached_property
    def stated(self) -> list[dict[str, Any]]:
        """Each member's ``interval_level`` and ``intervals`` (`stated_intervals`), in member order."""
        if not self.members:
            return []
        runtime = study_runtime(self.study)
        return [stated_intervals(runtime.words(item.metric, item.details)) for item in self.members]

    def camp_name(self, index: int) -> str:
        return f"Camp {index + 1}"

    def order(self) -> list[int]:
        """Members camp by camp (each camp in enrolment order, its outliers last)."""
        if self.result is None:
            return list(range(len(self.members)))
        result = self.result
        return sorted(range(len(self.members)), key=lambda i: (result.camp_of[i], i in result.outliers, i))


def study_panel(db: Session, study: Study) -> PanelView:
    """The panel of the study's included finished sessions (none with fewer than `MIN_MEMBERS`)."""
    config = study.config
    members = included_metrics(db, study)
    family = get_algorithm(study.algorithm).algorithm.family
    classes = [str(name) for name in config["class_names"]]
    groups = [str(name) for name in config.get("group_names") or []]
    view = PanelView(study, members, family, classes, groups, None, None)
    if len(members) < MIN_MEMBERS:
        found = "one finished participant" if len(members) == 1 else "no finished participants"
        return _without(
            view, f"A panel needs at least {MIN_MEMBERS} finished participants; the study has {found}."
        )
    # The pairs come from where the questions sat (each group's own sphere for the active fair elicitor).
    region = get_algorithm(study.algorithm).algorithm.query_region(
        build_space(StudyConfig.model_validate(config))
    )
    try:
        result = panel(
            [decode_metric(item.metric) for item in members],
            region,
            PANEL_SEED,
            n_pairs=PANEL_PAIRS,
            class_names=classes,
            group_names=groups,
        )
    except ElicitationError as exc:
        return _without(view, f"The participants' metrics have no consensus: {exc}.")
    return PanelView(study, members, family, classes, groups, result, None)


def _without(view: PanelView, reason: str) -> PanelView:
    return PanelView(view.study, view.members, view.family, view.class_names, view.group_names, None, reason)


def _coefficient_rows(view: PanelView) -> list[str]:
    """The consensus's coefficient columns worth drawing: a symmetric matrix's lower triangle repeats the
    upper one, so only the first of each mirrored pair is kept."""
    seen: set[tuple[str, frozenset[str]]] = set()
    kept = []
    for column in view.family.export_columns(view.class_names, view.group_names):
        label = view.labels.get(column, column)
        head, _, pair = label.rpartition(": ")
        key = (head, frozenset(pair.split(" × "))) if " × " in pair else (label, frozenset())
        if key not in seen:
            seen.add(key)
            kept.append(column)
    return kept


def panel_figures(view: PanelView) -> list[dict[str, Any]]:
    """The panel page's charts: the consensus with intervals, the agreement heat map, camp membership and
    the map of the panel."""
    result = view.result
    if result is None:
        return []
    order = view.order()
    names = [view.members[i].label for i in order]
    columns = _coefficient_rows(view)
    centres = []
    if result.split:
        for index, cells in enumerate(view.centre_cells):
            centres.append((view.camp_name(index), [cells[column] for column in columns]))
    sizes = [
        sum(1 for i in range(len(view.members)) if result.camp_of[i] == c) for c in range(len(result.camps))
    ]
    return [
        panel_charts.consensus_figure(
            [view.labels.get(column, column) for column in columns],
            [result.coefficients[column].value for column in columns],
            [result.coefficients[column].low for column in columns],
            [result.coefficients[column].high for column in columns],
            result.level,
            centres,
        ),
        panel_charts.agreement_heatmap(
            names, [[100.0 * result.agreement[i, j] for j in order] for i in order], sizes
        ),
        panel_charts.membership_figure(
            names,
            [[100.0 * value for value in result.with_centres[i]] for i in order],
            [result.camp_of[i] for i in order],
            [view.camp_name(index) for index in range(len(result.camps))],
        ),
        panel_charts.map_figure(
            [item.label for item in view.members],
            result.positions.tolist(),
            result.camp_of,
            result.outliers,
            [view.camp_name(index) for index in range(len(result.camps))],
            [camp.position for camp in result.camps],
            result.consensus_position,
        ),
    ]


def panel_json(view: PanelView) -> dict[str, Any]:
    """The panel as a JSON document (what the API returns and the JSON export holds)."""
    study = view.study
    result = view.result
    members = []
    for index, item in enumerate(view.members):
        members.append(
            {
                "session_id": str(item.session_id),
                "participant_code": item.participant_code,
                "camp": None if result is None else result.camp_of[index],
                "outlier": None if result is None else index in result.outliers,
                "agreement_with_consensus": None if result is None else float(result.with_consensus[index]),
                "position": None if result is None else result.positions[index].tolist(),
                "metric": item.metric,
                **view.stated[index],
            }
        )
    document: dict[str, Any] = {
        "study": {
            "id": str(study.id),
            "name": study.name,
            "algorithm": study.algorithm,
            "config_hash": config_hash(study.config),
            "class_names": view.class_names,
            "group_names": view.group_names,
        },
        "method": view.method,
        "available": result is not None,
        "reason": view.reason,
        "members": members,
        "consensus": None,
        "mean_agreement": None,
        "agreement": None,
        "split": None,
        "silhouette": None,
        "camps": [],
    }
    if result is None:
        return document
    document.update(
        consensus={
            "metric": result.consensus.to_dict(),
            "coefficients": {name: value.to_dict() for name, value in result.coefficients.items()},
            "position": list(result.consensus_position),
        },
        mean_agreement=result.mean_agreement.to_dict(),
        agreement=result.agreement.tolist(),
        split=result.split,
        silhouette=result.silhouette,
        camps=[
            {
                "name": view.camp_name(index),
                "members": [str(view.members[i].session_id) for i in camp.members],
                "outliers": [
                    str(view.members[i].session_id) for i in result.outliers if result.camp_of[i] == index
                ],
                "within": camp.within,
                "with_consensus": camp.with_consensus,
                "centre": camp.centre.to_dict(),
                "coefficients": view.centre_cells[index],
                "position": list(camp.position),
            }
            for index, camp in enumerate(result.camps)
        ],
    )
    return document


def panel_columns(view: PanelView) -> list[str]:
    """The panel CSV's columns: who, camp, agreement, then every coefficient with its interval."""
    coefficients = view.family.export_columns(view.class_names, view.group_names)
    return [
        "row",
        "camp",
        "session_id",
        "participant_code",
        "outlier",
        "agreement_with_consensus_pct",
        *coefficients,
        *(f"{column}_low" for column in coefficients),
        *(f"{column}_high" for column in coefficients),
    ]


def _panel_rows(view: PanelView) -> Iterator[dict[str, Any]]:
    result = view.result
    if result is None:
        return
    consensus: dict[str, Any] = {"row": "consensus", "agreement_with_consensus_pct": 100.0}
    for name, interval in result.coefficients.items():
        consensus |= {name: interval.value, f"{name}_low": interval.low, f"{name}_high": interval.high}
    yield consensus
    for index, (camp, cells) in enumerate(zip(result.camps, view.centre_cells, strict=True)):
        yield {
            "row": "camp centre",
            "camp": view.camp_name(index),
            "agreement_with_consensus_pct": round(100.0 * camp.with_consensus, 1),
            **cells,
        }
    for index, item in enumerate(view.members):
        # A participant's trade-off interval is their posterior's, as their result states it.
        lam = view.stated[index]["intervals"].get("lam")
        yield {
            "row": "participant",
            "camp": view.camp_name(result.camp_of[index]),
            "session_id": str(item.session_id),
            "participant_code": item.participant_code,
            "outlier": index in result.outliers,
            "agreement_with_consensus_pct": round(100.0 * float(result.with_consensus[index]), 1),
            **view.family.export_cells(item.metric, view.class_names, view.group_names),
            **({} if lam is None else {"lam_low": lam[0], "lam_high": lam[1]}),
        }


def panel_csv(view: PanelView) -> Iterator[str]:
    """The consensus (with intervals), each camp's centre and every participant, one row each."""
    return csv_lines(panel_columns(view), _panel_rows(view))


#: Columns of the agreement CSV: one row per two participants.
AGREEMENT_COLUMNS: Final = [
    "session_id_a",
    "participant_code_a",
    "session_id_b",
    "participant_code_b",
    "agreement_pct",
    "same_camp",
]


def _agreement_rows(view: PanelView) -> Iterator[dict[str, Any]]:
    result = view.result
    if result is None:
        return
    for i, first in enumerate(view.members):
        for j in range(i + 1, len(view.members)):
            second = view.members[j]
            yield {
                "session_id_a": str(first.session_id),
                "participant_code_a": first.participant_code,
                "session_id_b": str(second.session_id),
                "participant_code_b": second.participant_code,
                "agreement_pct": round(100.0 * float(result.agreement[i, j]), 1),
                "same_camp": result.camp_of[i] == result.camp_of[j],
            }


def agreement_csv(view: PanelView) -> Iterator[str]:
    """The agreement matrix in long form: every two participants once."""
    return csv_lines(AGREEMENT_COLUMNS, _agreement_rows(view))


def panel_file(view: PanelView, kind: str) -> str:
    """The text of ``panel.json`` (the document), ``panel.csv`` (the table) or ``panel-agreement.csv``."""
    if kind == "panel.json":
        return json.dumps(panel_json(view), indent=1)
    lines = panel_csv(view) if kind == "panel.csv" else agreement_csv(view)
    return "".join(lines)
