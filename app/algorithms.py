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
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from elicitation import Elicitor, InvalidConfigError

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
    "get_algorithm",
    "group_tau",
    "register",
    "tradeoff_pairs",
]


class UnknownAlgorithmError(KeyError):
    """No algorithm of that name is registered."""


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LpmeParams(_Params):
    """Linear metric elicitation (Algorithm 2): binary search per angle to tolerance ``epsilon``."""

    epsilon: float = Field(default=0.01, gt=0.0, lt=math.pi / 2, description="search tolerance (radians)")
    cycles: int = Field(default=3, ge=1, le=10, description="coordinate-search cycles")
    robust: Literal["none", "repeat"] = Field(
        default="none", description="re-ask each comparison with sides swapped (majority of 3)"
    )


class QpmeParams(_Params):
    """Quadratic metric elicitation (Algorithm 1): k+2 LPME runs on small spheres, then a linear solve."""

    epsilon: float = Field(default=0.01, gt=0.0, lt=math.pi / 2, description="search tolerance (radians)")
    inner_radius: float | None = Field(
        default=None, gt=0.0, description="radius of the small spheres (default: the algorithm's choice)"
    )
    cycles: int = Field(default=3, ge=1, le=10, description="coordinate-search cycles")
    robust: Literal["none", "repeat", "noisy_bisection"] = Field(
        default="none",
        description="robust answering: re-ask comparisons (repeat) or probabilistic bisection",
    )


class FairQpmeParams(_Params):
    """Fair quadratic metric elicitation (Algorithm 4): QPME over group partitions, then the trade-off."""

    epsilon: float = Field(default=0.01, gt=0.0, lt=math.pi / 2, description="search tolerance (radians)")
    inner_radius: float | None = Field(default=None, gt=0.0, description="radius of the small spheres")
    group_shares: list[float] | None = Field(
        default=None, description="P(G = g) per group (default: equal); with the priors this gives tau"
    )
    cycles: int = Field(default=3, ge=1, le=10, description="coordinate-search cycles")


class DiagonalQpmeParams(_Params):
    """Diagonal QPME (Section 5's structured case): a quadratic metric with diagonal ``B``, O~(k) queries."""

    epsilon: float = Field(default=0.01, gt=0.0, lt=math.pi / 2, description="search tolerance (radians)")
    inner_radius: float | None = Field(
        default=None,
        gt=0.0,
        le=0.5,
        description="radius of the small spheres (default: the algorithm's choice)",
    )
    cycles: int = Field(default=3, ge=1, le=10, description="coordinate-search cycles")


#: Eigenvalues of a known ``B^{uv}`` may dip this far below zero (rounding) and still count as PSD.
PSD_TOLERANCE = 1e-9


class TradeoffParams(_Params):
    """Lambda-only elicitation (Appendix D, Algorithm 5): ``a`` and every ``B^{uv}`` are known in advance.

    ``B_pairs`` lists one symmetric PSD ``(k, k)`` matrix per pair of groups ``u < v`` in the order
    ``(0, 1), (0, 2), ..., (0, m-1), (1, 2), ...`` (the order of the export's ``B_<group>_<group>_…``
    columns).
    Both are normalised by the core (Definition 3), so only their directions matter.
    """

    a: list[float] = Field(min_length=2, max_length=10, description="known misclassification costs (>= 0)")
    B_pairs: list[list[list[float]]] = Field(
        min_length=1, description="known PSD violation weights, one (k, k) matrix per group pair u < v"
    )
    epsilon: float = Field(default=0.01, gt=0.0, lt=1.0, description="tolerance on lambda (interval width)")
    group_shares: list[float] | None = Field(
        default=None, description="P(G = g) per group (default: equal); with the priors this gives tau"
    )
    method: str = Field(default="threshold", pattern="^(threshold|shrink)$", description="search variant")

    @field_validator("a")
    @classmethod
    def _costs(cls, a: list[float]) -> list[float]:
        values = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(values)) or np.any(values < 0.0) or not np.any(values > 0.0):
            raise ValueError(f"must be finite, non-negative and not all zero, got {a}")
        return a

    @field_validator("B_pairs")
    @classmethod
    def _psd(cls, B_pairs: list[list[list[float]]]) -> list[list[list[float]]]:
        for index, rows in enumerate(B_pairs):
            if not rows or any(len(row) != len(rows) for row in rows):
                raise ValueError(f"B_pairs[{index}] must be a square matrix (a list of equally long rows)")
            matrix = np.asarray(rows, dtype=np.float64)
            if not np.all(np.isfinite(matrix)):
                raise ValueError(f"B_pairs[{index}] must hold finite numbers")
            if not np.allclose(matrix, matrix.T, rtol=0.0, atol=1e-9):
                raise ValueError(f"B_pairs[{index}] must be symmetric")
            scale = max(1.0, float(np.abs(matrix).max()))
            if float(np.linalg.eigvalsh(matrix).min()) < -PSD_TOLERANCE * scale:
                raise ValueError(
                    f"B_pairs[{index}] must be positive semi-definite (an eigenvalue is negative)"
                )
            if not np.any(matrix != 0.0):
                raise ValueError(f"B_pairs[{index}] must not be all zeros")
        return B_pairs


class ActiveParams(_Params):
    """Active Bayesian elicitation (issue 7): perceptible, noise-robust queries chosen one at a time.

    ``max_queries`` is the coordinator's question budget per participant (default: the elicitor's own,
    ``max(30, 4 d)`` for ``d`` unknowns); ``min_cell_gap`` the perceptibility threshold (every pair shown
    differs by at least this many people out of 100 in some confusion cell); ``beta`` the answer noise
    (``None``: marginalise over the elicitor's default grid). The seed is the session's.
    """

    max_queries: int | None = Field(
        default=None, ge=1, le=1000, description="question budget per participant"
    )
    min_cell_gap: float = Field(
        default=2.0, gt=0.0, le=50.0, description="perceptibility: people out of 100 in some cell"
    )
    beta: float | None = Field(
        default=None,
        gt=0.0,
        description="answer noise P(correct) = sigmoid(beta |dphi|) (default: estimated)",
    )
    tolerance: float = Field(default=0.05, gt=0.0, lt=1.0, description="stop at this posterior spread")


class ActiveFairParams(ActiveParams):
    """Active elicitation of a fair quadratic cost; ``tau`` from the groups' priors and shares."""

    group_shares: list[float] | None = Field(
        default=None, description="P(G = g) per group (default: equal); with the priors this gives tau"
    )


Factory = Callable[..., Elicitor[Any]]


@dataclass(frozen=True)
class AlgorithmSpec:
    """One registry entry; ``factory(space, params)`` returns a fresh elicitor for the study's space."""

    name: str
    params_model: type[BaseModel]
    factory: Factory
    version: str
    #: The coordinator's label in the new-study form: plain words, no symbols or paper numbering.
    description: str
    #: True for algorithms that take group rates ``(n_groups, n_classes)`` (fairness studies).
    needs_groups: bool = False
    #: True when the factory takes the session seed (``factory(space, params, seed)``): its queries depend
    #: on seeded randomness, so every rebuild of a session's elicitor must pass that session's seed.
    seeded: bool = False

    def parse_params(self, raw: dict[str, Any] | None) -> BaseModel:
        """Validate raw params (raises pydantic ``ValidationError`` naming the field)."""
        return self.params_model.model_validate(raw or {})

    def build(self, space: Any, params: BaseModel | dict[str, Any] | None, *, seed: int = 0) -> Elicitor[Any]:
        """A fresh elicitor for ``space``; raises `InvalidConfigError` for parameters the core rejects.

        ``seed`` (the session's) only matters for `seeded` algorithms; replaying a session of one needs the
        seed it was recorded with.
        """
        if not isinstance(params, BaseModel):
            try:
                params = self.parse_params(params)
            except ValidationError as exc:
                raise InvalidConfigError(str(exc)) from exc
        if self.seeded:
            return self.factory(space, params, int(seed))
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

    return lpme(space.sphere, params.epsilon, cycles=params.cycles, robust=params.robust)


def _qpme(space: Any, params: QpmeParams) -> Elicitor[Any]:
    from elicitation.qpme import qpme

    return qpme(
        space.sphere,
        params.epsilon,
        inner_radius=params.inner_radius,
        cycles=params.cycles,
        robust=params.robust,
    )


def _diagonal_qpme(space: Any, params: DiagonalQpmeParams) -> Elicitor[Any]:
    from elicitation.variants import diagonal_qpme

    return diagonal_qpme(space.sphere, params.epsilon, inner_radius=params.inner_radius, cycles=params.cycles)


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


def tradeoff_pairs(params: TradeoffParams, n_groups: int, n_classes: int) -> dict[tuple[int, int], Any]:
    """``params.B_pairs`` keyed by group pair ``(u, v)``; `InvalidConfigError` names the mismatched field."""
    if len(params.a) != n_classes:
        raise InvalidConfigError(f"a: give {n_classes} costs (one per class), got {len(params.a)}")
    pairs = [(u, v) for u in range(n_groups) for v in range(u + 1, n_groups)]
    if len(params.B_pairs) != len(pairs):
        raise InvalidConfigError(
            f"B_pairs: give {len(pairs)} matrices (one per group pair {pairs}), got {len(params.B_pairs)}"
        )
    for index, matrix in enumerate(params.B_pairs):
        if len(matrix) != n_classes:
            raise InvalidConfigError(
                f"B_pairs[{index}] must be {n_classes}x{n_classes} (one row and column per class), "
                f"got {len(matrix)}x{len(matrix)}"
            )
    return {
        pair: np.asarray(matrix, dtype=np.float64) for pair, matrix in zip(pairs, params.B_pairs, strict=True)
    }


def _tradeoff(space: Any, params: TradeoffParams) -> Elicitor[Any]:
    from elicitation.fair import tradeoff_search

    return tradeoff_search(
        space.sphere,
        a=np.asarray(params.a, dtype=np.float64),
        B_pairs=tradeoff_pairs(params, space.n_groups, space.n_classes),
        tau=group_tau(space.priors, params.group_shares),
        epsilon=params.epsilon,
        method=params.method,
    )


def _active_options(params: ActiveParams, seed: int) -> dict[str, Any]:
    from elicitation.active import DEFAULT_BETA_GRID

    return {
        "seed": seed,
        "beta": DEFAULT_BETA_GRID if params.beta is None else params.beta,
        "max_queries": params.max_queries,
        "tolerance": params.tolerance,
        "min_cell_gap": params.min_cell_gap,
    }


def _active_linear(space: Any, params: ActiveParams, seed: int) -> Elicitor[Any]:
    from elicitation.active import active_linear

    return active_linear(space, **_active_options(params, seed))


def _active_quadratic(space: Any, params: ActiveParams, seed: int) -> Elicitor[Any]:
    from elicitation.active import active_quadratic

    return active_quadratic(space, **_active_options(params, seed))


def _active_fair(space: Any, params: ActiveFairParams, seed: int) -> Elicitor[Any]:
    from elicitation.active import active_fair

    tau = group_tau(space.priors, params.group_shares)
    return active_fair(space, tau=tau, **_active_options(params, seed))


register(
    AlgorithmSpec(
        name="lpme",
        params_model=LpmeParams,
        factory=_lpme,
        version="lpme-1",
        description="Linear (LPME, the paper's searches): one weight per class",
    )
)
register(
    AlgorithmSpec(
        name="qpme",
        params_model=QpmeParams,
        factory=_qpme,
        version="qpme-2",
        description="Quadratic (QPME, the paper's searches): weights and curvature",
    )
)
register(
    AlgorithmSpec(
        name="diagonal_qpme",
        params_model=DiagonalQpmeParams,
        factory=_diagonal_qpme,
        version="diagonal_qpme-1",
        description="Quadratic without class interactions (diagonal QPME)",
    )
)
register(
    AlgorithmSpec(
        name="fair_qpme",
        params_model=FairQpmeParams,
        factory=_fair_qpme,
        version="fair_qpme-1",
        description="Fairness (fair QPME, the paper's searches)",
        needs_groups=True,
    )
)
register(
    AlgorithmSpec(
        name="tradeoff",
        params_model=TradeoffParams,
        factory=_tradeoff,
        version="tradeoff-1",
        description="Fairness trade-off only (costs and group-gap penalties known)",
        needs_groups=True,
    )
)
register(
    AlgorithmSpec(
        name="active_linear",
        params_model=ActiveParams,
        factory=_active_linear,
        version="active_linear-1",
        description="Active linear: one weight per class, few questions",
        seeded=True,
    )
)
register(
    AlgorithmSpec(
        name="active_quadratic",
        params_model=ActiveParams,
        factory=_active_quadratic,
        version="active_quadratic-2",
        description="Active quadratic (recommended): few questions, tolerates slips",
        seeded=True,
    )
)
register(
    AlgorithmSpec(
        name="active_fair",
        params_model=ActiveFairParams,
        factory=_active_fair,
        version="active_fair-1",
        description="Active fairness (recommended with groups): few questions, tolerates slips",
        needs_groups=True,
        seeded=True,
    )
)
