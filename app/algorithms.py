"""Registry of elicitation algorithms a study may use: name -> (params model, elicitor factory, version).

Adding an algorithm is one `register` call with a pydantic params model and a factory that builds a fresh
`elicitation.Elicitor` from the study's query space and validated params. ``version`` is stored with each
session; bump it when a change alters the queries asked, so old logs are recognised as recorded with
another version (replay would report the mismatch anyway).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from elicitation import Elicitor, InvalidConfigError

__all__ = [
    "REGISTRY",
    "AlgorithmSpec",
    "FairQpmeParams",
    "LpmeParams",
    "QpmeParams",
    "UnknownAlgorithmError",
    "get_algorithm",
    "group_tau",
    "register",
]


class UnknownAlgorithmError(KeyError):
    """No algorithm of that name is registered."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LpmeParams(_Params):
    """Linear metric elicitation (Algorithm 2): binary search per angle to tolerance ``epsilon``."""

    epsilon: float = Field(default=0.01, gt=0.0, lt=math.pi / 2, description="search tolerance (radians)")
    cycles: int = Field(default=3, ge=1, le=10, description="coordinate-search cycles")


class QpmeParams(_Params):
    """Quadratic metric elicitation (Algorithm 1): k+2 LPME runs on small spheres, then a linear solve."""

    epsilon: float = Field(default=0.01, gt=0.0, lt=math.pi / 2, description="search tolerance (radians)")
    inner_radius: float | None = Field(
        default=None, gt=0.0, description="radius of the small spheres (default: the algorithm's choice)"
    )
    cycles: int = Field(default=3, ge=1, le=10, description="coordinate-search cycles")


class FairQpmeParams(_Params):
    """Fair quadratic metric elicitation (Algorithm 4): QPME over group partitions, then the trade-off."""

    epsilon: float = Field(default=0.01, gt=0.0, lt=math.pi / 2, description="search tolerance (radians)")
    inner_radius: float | None = Field(default=None, gt=0.0, description="radius of the small spheres")
    group_shares: list[float] | None = Field(
        default=None, description="P(G = g) per group (default: equal); with the priors this gives tau"
    )
    cycles: int = Field(default=3, ge=1, le=10, description="coordinate-search cycles")


Factory = Callable[[Any, Any], Elicitor[Any]]


@dataclass(frozen=True)
class AlgorithmSpec:
    """One registry entry; ``factory(space, params)`` returns a fresh elicitor for the study's space."""

    name: str
    params_model: type[BaseModel]
    factory: Factory
    version: str
    description: str
    #: True for algorithms that take group rates ``(n_groups, n_classes)`` (fairness studies).
    needs_groups: bool = False

    def parse_params(self, raw: dict[str, Any] | None) -> BaseModel:
        """Validate raw params (raises pydantic ``ValidationError`` naming the field)."""
        return self.params_model.model_validate(raw or {})

    def build(self, space: Any, params: BaseModel | dict[str, Any] | None) -> Elicitor[Any]:
        """A fresh elicitor for ``space``; raises `InvalidConfigError` for parameters the core rejects."""
        if not isinstance(params, BaseModel):
            try:
                params = self.parse_params(params)
            except ValidationError as exc:
                raise InvalidConfigError(str(exc)) from exc
        return self.factory(space, params)


REGISTRY: dict[str, AlgorithmSpec] = {}


def register(spec: AlgorithmSpec) -> AlgorithmSpec:
    """Add ``spec`` to the registry (names are unique)."""
    if spec.name in REGISTRY:
        raise ValueError(f"algorithm {spec.name!r} is already registered")
    REGISTRY[spec.name] = spec
    return spec


def get_algorithm(name: str) -> AlgorithmSpec:
    """The registered algorithm ``name``; `UnknownAlgorithmError` lists the known ones."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY)) or "none"
        raise UnknownAlgorithmError(f"unknown algorithm {name!r}; known algorithms: {known}") from None


def _lpme(space: Any, params: LpmeParams) -> Elicitor[Any]:
    from elicitation.lpme import lpme

    return lpme(space.sphere, params.epsilon, cycles=params.cycles)


def _qpme(space: Any, params: QpmeParams) -> Elicitor[Any]:
    from elicitation.qpme import qpme

    return qpme(space.sphere, params.epsilon, inner_radius=params.inner_radius, cycles=params.cycles)


def group_tau(priors: Any, group_shares: list[float] | None) -> np.ndarray:
    """``tau[g, i] = P(G = g | Y = i)`` from ``P(Y = i | G = g)`` (``priors``) and the group shares."""
    within = np.atleast_2d(np.asarray(priors, dtype=np.float64))
    m = within.shape[0]
    shares = np.full(m, 1.0 / m) if group_shares is None else np.asarray(group_shares, dtype=np.float64)
    if shares.shape != (m,) or np.any(shares <= 0.0) or not np.all(np.isfinite(shares)):
        raise InvalidConfigError(
            f"group_shares must be {m} positive numbers (one per group), got {group_shares}"
        )
    joint = shares[:, None] * within / shares.sum()
    tau: np.ndarray = joint / joint.sum(axis=0, keepdims=True)
    return tau


def _fair_qpme(space: Any, params: FairQpmeParams) -> Elicitor[Any]:
    from elicitation.fair import fair_qpme

    return fair_qpme(
        space.sphere,
        groups=space.n_groups,
        tau=group_tau(space.priors, params.group_shares),
        epsilon=params.epsilon,
        inner_radius=params.inner_radius,
        cycles=params.cycles,
    )


register(
    AlgorithmSpec(
        name="lpme",
        params_model=LpmeParams,
        factory=_lpme,
        version="lpme-1",
        description="Linear performance metric elicitation (LPME, Algorithm 2)",
    )
)
register(
    AlgorithmSpec(
        name="qpme",
        params_model=QpmeParams,
        factory=_qpme,
        version="qpme-1",
        description="Quadratic performance metric elicitation (QPME, Algorithm 1)",
    )
)
register(
    AlgorithmSpec(
        name="fair_qpme",
        params_model=FairQpmeParams,
        factory=_fair_qpme,
        version="fair_qpme-1",
        description="Fair quadratic metric elicitation (Fair QPME, Algorithm 4) over group rates",
        needs_groups=True,
    )
)
