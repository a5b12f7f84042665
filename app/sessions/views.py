"""What a page or the API shows about a session: the session view and the comparison view model."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from elicitation import Sphere

from ..explain import MetricWords
from ..metric_views import stated_intervals
from ..models import ElicitationSession, Result, SessionStatus, Study
from ..panels import fill_redirect
from ..plan import Section, Step
from ..repository import SessionRecord
from ..study_config import StudyConfig
from .runtime import StudyRuntime

__all__ = ["SessionView", "comparison_model", "shown_side", "worked_example"]


@dataclass
class SessionView:
    """Everything a page or the API shows about a session at one moment (after its last commit)."""

    #: The session as the request read it (a record), or loaded to be changed (consent, finishing).
    session: SessionRecord | ElicitationSession
    config: StudyConfig
    status: SessionStatus
    phase: str
    answered: int
    estimated_total: int
    next_seq: int
    step: Step | None
    comparison: dict[str, Any] | None
    result: Result | None
    can_undo: bool
    #: The session's parts (practice, questions, last comparisons) with how far each has got.
    sections: list[Section] = field(default_factory=list)
    #: A finished session's metric in plain words (English), with the intervals of what they state.
    words: MetricWords | None = None

    @property
    def study(self) -> Study:
        """The session's study (read from the database on first use; the hot path never needs it)."""
        return self.session.study

    @property
    def redirect_url(self) -> str | None:
        """The study's redirect address for this finished session, its placeholders filled in."""
        if self.status is not SessionStatus.DONE or self.config.redirect_url is None:
            return None
        values = {
            **(self.session.panel or {}),
            "completion_code": self.session.completion_code,
            "participant_code": self.session.participant_code,
        }
        return fill_redirect(self.config.redirect_url, values)

    @property
    def ended_early(self) -> bool:
        """Whether the session ended before its plan did because its elicitor could not go on (the
        answers stand; the stored result names the reason instead of a metric)."""
        return self.result is not None and self.result.metric.get("type") == "failed"

    def to_api(self) -> dict[str, Any]:
        """The JSON API shape: ``{status, phase, progress, query, result}``."""
        query = None
        if self.comparison is not None:
            left, right = self.comparison["left"], self.comparison["right"]
            # The counts exactly as the page shows them (its own rounding), so that any front end shows
            # the pair the elicitor learns from.
            shown_left, shown_right, decimals = self.comparison["shown"]
            query = {
                "seq": self.comparison["seq"],
                "practice": self.comparison["practice"],
                "decimals": decimals,
                "first": {**left, "shown": shown_left},
                "second": {**right, "shown": shown_right},
            }
        result = None
        if self.result is not None:
            result = {
                "completion_code": self.session.completion_code,
                "redirect_url": self.redirect_url,
                "metric": self.result.metric,
                "num_queries": self.result.num_queries,
                "summary": self.result.summary,
                **stated_intervals(self.words),
                "evaluation": self.result.evaluation,
                "checks": self.result.checks,
                "ended_early": self.ended_early,
            }
        return {
            "status": self.status.value,
            "phase": self.phase,
            "progress": {
                "answered": self.answered,
                "estimated_total": self.estimated_total,
                "sections": [section.to_api() for section in self.sections],
            },
            "query": query,
            "result": result,
        }


def shown_side(runtime: StudyRuntime, rates: np.ndarray) -> dict[str, Any]:
    """A classifier as shown: its rates and its confusion matrix out of 100 (nested lists)."""
    return {"rates": rates.tolist(), "confusion": runtime.confusion(np.asarray(rates, dtype=np.float64))}


def comparison_model(
    runtime: StudyRuntime, *, seq: int, left: np.ndarray, right: np.ndarray, practice: bool
) -> dict[str, Any]:
    """One question as shown: both classifiers' rates and confusion matrices, the names to label them, and
    ``shown``, their counts as the question shows them and the decimals (`StudyRuntime.displayed`)."""
    return {
        "seq": seq,
        "left": shown_side(runtime, left),
        "right": shown_side(runtime, right),
        "shown": runtime.displayed(np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)),
        "class_names": list(runtime.space.class_names),
        "group_names": list(runtime.space.group_names),
        "population": runtime.config.population,
        "practice": practice,
    }


def worked_example(runtime: StudyRuntime) -> dict[str, Any]:
    """The instructions' example pair: classifier B finds more of the last class, A more of the first."""
    space = runtime.space
    tilt = np.zeros(space.n_classes)
    tilt[0], tilt[-1] = 1.0, -1.0
    tilt /= np.linalg.norm(tilt)
    region = runtime.region
    if isinstance(region, Sphere):
        center, radius = region.center, region.radius * 0.7
        left, right = center + radius * tilt, center - radius * tilt
        if space.n_groups > 1:
            left, right = np.tile(left, (space.n_groups, 1)), np.tile(right, (space.n_groups, 1))
    else:
        # Each group's example sits in that group's own sphere, like its questions.
        left = np.stack([own.center + 0.7 * own.radius * tilt for own in region])
        right = np.stack([own.center - 0.7 * own.radius * tilt for own in region])
    return comparison_model(runtime, seq=0, left=left, right=right, practice=False)
