"""The study algorithms: the core catalogue's entries offered to studies, with pydantic params models.

Every algorithm, its version, parameters (defaults, bounds, descriptions) and builder are declared once
in `elicitation.catalogue`; this module derives the request models the JSON API, the study forms and
`StudyConfig` validate with, so both layers accept exactly the same values. Adding an algorithm is one
registration in the core (and, if it elicits a new metric family, that family's app presentation).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic_core import PydanticUndefined

from elicitation import Elicitor, InvalidConfigError
from elicitation.catalogue import (
    ALGORITHMS,
    PSD_TOLERANCE,
    Algorithm,
    Param,
    Setting,
    group_tau,
    tradeoff_pairs,
)

__all__ = [
    "PSD_TOLERANCE",
    "REGISTRY",
    "ActiveFairParams",
    "ActiveParams",
    "AlgorithmSpec",
    "DiagonalQpmeParams",
    "FairQpmeParams",
    "LpmeParams",
    "QpmeParams",
    "TradeoffParams",
    "UnknownAlgorithmError",
    "algorithm_label",
    "get_algorithm",
    "group_tau",
    "params_model",
    "tradeoff_pairs",
]


class UnknownAlgorithmError(KeyError):
    """No algorithm of that name is offered to studies."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _passing(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A pydantic after-validator running the declaration's ``check`` (its `ValueError` names the problem)."""

    def validate(value: Any) -> Any:
        check(value)
        return value

    return validate


def _field(param: Param) -> tuple[Any, Any]:
    annotation = param.annotation
    if param.check is not None:
        annotation = Annotated[annotation, AfterValidator(_passing(param.check))]
    bounds = {
        key: value
        for key, value in (
            ("gt", param.gt),
            ("ge", param.ge),
            ("lt", param.lt),
            ("le", param.le),
            ("min_length", param.min_length),
            ("max_length", param.max_length),
            ("pattern", param.pattern),
        )
        if value is not None
    }
    default = PydanticUndefined if param.required else param.default
    return annotation, Field(default=default, description=param.description, **bounds)


def params_model(algorithm: Algorithm) -> type[BaseModel]:
    """The pydantic model of ``algorithm``'s study parameters (its declarations with ``studies=True``).

    Named after the algorithm (``fair_qpme`` -> ``FairQpmeParams``), as pydantic's messages show.
    """
    name = "".join(part.capitalize() for part in algorithm.name.split("_")) + "Params"
    fields = {param.name: _field(param) for param in algorithm.params if param.studies}
    model: type[BaseModel] = create_model(name, __base__=_Params, __doc__=algorithm.description, **fields)
    return model


@dataclass(frozen=True)
class AlgorithmSpec:
    """A catalogue algorithm as studies use it: its params model and ``build(space, params, seed=...)``."""

    algorithm: Algorithm
    params_model: type[BaseModel]

    @property
    def name(self) -> str:
        return self.algorithm.name

    @property
    def version(self) -> str:
        """Stored with each session; a replay of a session recorded with another version is refused."""
        return self.algorithm.version

    @property
    def description(self) -> str:
        """The coordinator's label in the new-study form: plain words, no symbols or paper numbering."""
        return self.algorithm.description

    @property
    def label(self) -> str:
        """The short name back-office pages show for a study's algorithm: the form's label up to its colon,
        without the form's recommendation (``"Active quadratic"`` rather than ``active_quadratic``)."""
        head = self.algorithm.description.split(":", 1)[0]
        return re.sub(r"\s*\(recommended[^)]*\)", "", head).strip()

    @property
    def needs_groups(self) -> bool:
        """True for algorithms that take group rates ``(n_groups, n_classes)`` (fairness studies)."""
        return self.algorithm.needs_groups

    @property
    def seeded(self) -> bool:
        """True when the queries depend on the session seed: every rebuild must pass that seed."""
        return self.algorithm.seeded

    def parse_params(self, raw: dict[str, Any] | None) -> BaseModel:
        """Validate raw params (raises pydantic ``ValidationError`` naming the field)."""
        return self.params_model.model_validate(raw or {})

    def build(
        self,
        space: Any,
        params: BaseModel | dict[str, Any] | None,
        *,
        seed: int = 0,
        version: str | None = None,
    ) -> Elicitor[Any]:
        """A fresh elicitor for ``space``; raises `InvalidConfigError` for parameters the core rejects.

        ``seed`` (the session's) only matters for `seeded` algorithms; replaying a session of one needs the
        seed it was recorded with. ``version``: an earlier version the catalogue still replays (see
        `elicitation.catalogue.Algorithm.build`); default the current one.
        """
        if not isinstance(params, BaseModel):
            try:
                params = self.parse_params(params)
            except ValidationError as exc:
                raise InvalidConfigError(str(exc)) from None
        return self.algorithm.build(Setting.of_space(space), params.model_dump(), seed=seed, version=version)


#: The algorithms offered to studies, by name (the catalogue's entries with ``studies=True``).
REGISTRY: dict[str, AlgorithmSpec] = {
    name: AlgorithmSpec(algorithm, params_model(algorithm))
    for name, algorithm in ALGORITHMS.items()
    if algorithm.studies
}

LpmeParams = REGISTRY["lpme"].params_model
QpmeParams = REGISTRY["qpme"].params_model
FairQpmeParams = REGISTRY["fair_qpme"].params_model
DiagonalQpmeParams = REGISTRY["diagonal_qpme"].params_model
TradeoffParams = REGISTRY["tradeoff"].params_model
#: The active elicitors' parameters (active_linear's model; active_quadratic declares the same fields).
ActiveParams = REGISTRY["active_linear"].params_model
ActiveFairParams = REGISTRY["active_fair"].params_model


def algorithm_label(name: str) -> str:
    """The back-office name of algorithm ``name`` (`AlgorithmSpec.label`); an unknown name as stored."""
    spec = REGISTRY.get(name)
    return spec.label if spec is not None else name


def get_algorithm(name: str) -> AlgorithmSpec:
    """The study algorithm ``name``; `UnknownAlgorithmError` lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise UnknownAlgorithmError(f"unknown algorithm {name!r}; known algorithms: {known}") from None
