"""Storing a new study: validate its configuration and measure how many questions a typical session asks."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from pydantic import BaseModel
from sqlalchemy.orm import Session

from elicitation import ElicitationError, run

from .. import repository as repo
from ..algorithms import AlgorithmSpec, get_algorithm
from ..models import Study
from ..study_config import StudyConfig, build_space, parse_study_config
from .displayed import build_session_elicitor

__all__ = ["create_study", "new_study", "typical_queries"]


def typical_queries(spec: AlgorithmSpec, space: Any, params: BaseModel) -> int:
    """Queries a simulated participant who weighs every rate equally needs (places the checks)."""
    if spec.seeded:
        # Seeded (active) elicitors cost seconds to simulate and report their own expected_remaining live.
        return int(spec.build(space, params).max_queries)
    elicitor = build_session_elicitor(spec, space, params, seed=0)
    try:
        result = run(elicitor, lambda first, second: bool(np.sum(first) >= np.sum(second)))
    except ElicitationError:
        return int(spec.build(space, params).max_queries)
    return int(result.num_queries)


def new_study(config: StudyConfig | dict[str, Any]) -> Study:
    """The study row for a validated ``config``, not stored (`create_study` stores it; a benchmark serves
    one in process); `StudyConfigError` names any invalid field."""
    if not isinstance(config, StudyConfig):
        config = parse_study_config(config)
    spec = get_algorithm(config.algorithm)
    space = build_space(config)
    params = spec.parse_params(config.algorithm_params)
    return Study(
        id=uuid.uuid4(),
        name=config.name,
        config=config.model_dump(mode="json"),
        algorithm=config.algorithm,
        expected_queries=typical_queries(spec, space, params),
        open_enrolment=config.open_enrolment,
        config_version=0,  # the column's default, so that an unstored row has it too
    )


def create_study(db: Session, config: StudyConfig | dict[str, Any]) -> Study:
    """Validate ``config`` and store the study; `StudyConfigError` names any invalid field."""
    study = new_study(config)
    repo.add(db, study)
    db.commit()
    return study
