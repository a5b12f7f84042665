"""The registrations of this package's elicitation algorithms: one `register` call each.

Each entry declares its parameters once (type, default, bounds, description) and a builder that turns a
`Setting` and the validated parameters into a fresh elicitor. Versions are stored with every session;
they change only when the queries an algorithm asks change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import numpy as np

from ..active import DEFAULT_BETA_GRID, LEAN_SEARCH, active_fair, active_linear, active_quadratic
from ..errors import InvalidConfigError, NumericalError
from ..fair import fair_qpme, tradeoff_search
from ..fair.designs import DISPLAYED_INNER_RATIO as FAIR_DISPLAYED_INNER_RATIO
from ..families import Draw, get_family
from ..geometry import gradient_floor
from ..lpme import Probe, lpme
from ..qpme import DISPLAYED_INNER_RATIO, qpme
from ..region import sensible_frontier
from ..types import (
    Elicitation,
    Elicitor,
    FairQuadraticMetric,
    FloatArray,
    Metric,
    QuadraticMetric,
    pair_index,
)
from ..variants import (
    DEFAULT_CUBIC_TOLERANCE,
    cubic_qpme,
    diagonal_qpme,
    general_n_classes,
    general_qpme,
    general_sphere,
)
from .params import Param
from .registry import Algorithm, Setting, register

__all__ = ["PSD_TOLERANCE", "tradeoff_pairs"]

#: Eigenvalues of a known ``B^{uv}`` may dip this far below zero (rounding) and still count as PSD.
PSD_TOLERANCE: Final = 1e-9

_Elicitor = Elicitor[Elicitation[Any]]


def _epsilon(description: str = "search tolerance (radians)", default: float = 0.01) -> Param:
    return Param("epsilon", float, default, description, gt=0.0, lt=math.pi / 2)


def _inner_radius(description: str, le: float | None = None) -> Param:
    return Param("inner_radius", float | None, None, description, gt=0.0, le=le)


_CYCLES: Final = Param("cycles", int, 3, "coordinate-search cycles", ge=1, le=10)
_GROUP_SHARES: Final = Param(
    "group_shares",
    list[float] | None,
    None,
    "P(G = g) per group (default: equal); with the priors this gives tau",
)
_SMALL_SPHERES: Final = "radius of the small spheres (default: the algorithm's choice)"


def _check_costs(a: list[float]) -> None:
    values = np.asarray(a, dtype=np.float64)
    if not np.all(np.isfinite(values)) or np.any(values < 0.0) or not np.any(values > 0.0):
        raise ValueError(f"must be finite, non-negative and not all zero, got {a}")


def _check_psd_pairs(B_pairs: list[list[list[float]]]) -> None:
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
            raise ValueError(f"B_pairs[{index}] must be positive semi-definite (an eigenvalue is negative)")
        if not np.any(matrix != 0.0):
            raise ValueError(f"B_pairs[{index}] must not be all zeros")


def tradeoff_pairs(
    params: Mapping[str, Any], n_groups: int, n_classes: int
) -> dict[tuple[int, int], FloatArray]:
    """The trade-off search's known ``B_pairs`` keyed by group pair ``(u, v)``, checked against the space.

    ``params["B_pairs"]`` lists one matrix per pair ``u < v`` in the order of `pair_index`.
    """
    if len(params["a"]) != n_classes:
        raise InvalidConfigError(f"a: give {n_classes} costs (one per class), got {len(params['a'])}")
    pairs = list(pair_index(n_groups))
    if len(params["B_pairs"]) != len(pairs):
        raise InvalidConfigError(
            f"B_pairs: give {len(pairs)} matrices (one per group pair {pairs}), got {len(params['B_pairs'])}"
        )
    for index, matrix in enumerate(params["B_pairs"]):
        if len(matrix) != n_classes:
            raise InvalidConfigError(
                f"B_pairs[{index}] must be {n_classes}x{n_classes} (one row and column per class), "
                f"got {len(matrix)}x{len(matrix)}"
            )
    return {
        pair: np.asarray(matrix, dtype=np.float64)
        for pair, matrix in zip(pairs, params["B_pairs"], strict=True)
    }


# ----------------------------------------------------------------------------------------------------------
# The paper's algorithms on a sphere of rates
# ----------------------------------------------------------------------------------------------------------


def _lpme(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    # Shown in whole people, the paper's boundary points merge after a few halvings; antipodal probes stay
    # people apart and read the direction off the pair actually shown (docs/realistic-queries.md).
    probe: Probe = "antipodal" if getattr(setting.space, "display", None) is not None else "boundary"
    return lpme(setting.sphere, p["epsilon"], cycles=p["cycles"], robust=p["robust"], probe=probe)


register(
    Algorithm(
        name="lpme",
        version="lpme-1",
        description="Linear (LPME, the paper's searches): one weight per class",
        elicits="linear metric <a, r> (Algorithm 2)",
        family=get_family("linear"),
        params=(
            _epsilon(),
            _CYCLES,
            Param(
                "robust",
                Literal["none", "repeat"],
                "none",
                "re-ask each comparison with sides swapped (majority of 3)",
            ),
        ),
        builder=_lpme,
        displayed=True,
    )
)


def _small_spheres(setting: Setting, chosen: float | None, displayed_ratio: float) -> float | None:
    """The coordinator's small-sphere radius; by default, for displayed questions, ``displayed_ratio`` of
    the sphere's (small spheres wide enough for their searches to show), else the algorithm's own."""
    if chosen is None and getattr(setting.space, "display", None) is not None:
        return displayed_ratio * setting.sphere.radius
    return chosen


def _qpme(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    return qpme(
        setting.sphere,
        p["epsilon"],
        inner_radius=_small_spheres(setting, p["inner_radius"], DISPLAYED_INNER_RATIO),
        reconstruction=p["reconstruction"],
        cycles=p["cycles"],
        robust=p["robust"],
    )


def _qpme_lines_only(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    """QPME as version qpme-2 asked: the slopes' lines only, stopping on metrics it could not place."""
    return qpme(
        setting.sphere,
        p["epsilon"],
        inner_radius=p["inner_radius"],
        # qpme-2 had no signed solve; its default was the lines' least squares.
        reconstruction="lstsq" if p["reconstruction"] == "signed" else p["reconstruction"],
        cycles=p["cycles"],
        robust=p["robust"],
        resolve_degenerate=False,
    )


register(
    Algorithm(
        name="qpme",
        version="qpme-3",
        description="Quadratic (QPME, the paper's searches): weights and curvature",
        elicits="quadratic metric <a, r> + r^T B r / 2 (Algorithm 1)",
        family=get_family("quadratic"),
        params=(
            _epsilon(),
            _inner_radius(_SMALL_SPHERES),
            _CYCLES,
            Param(
                "robust",
                Literal["none", "repeat", "noisy_bisection"],
                "none",
                "robust answering: re-ask comparisons (repeat) or probabilistic bisection",
            ),
            Param(
                "reconstruction",
                Literal["signed", "lstsq", "closed_form"],
                "signed",
                "how (a, B) is solved from the measured slopes",
                studies=False,
            ),
        ),
        builder=_qpme,
        earlier={"qpme-2": _qpme_lines_only},
        displayed=True,
    )
)


def _fair_qpme_asking(**options: Any) -> Callable[[Setting, Mapping[str, Any], int], _Elicitor]:
    """A fair QPME builder with ``options`` on top of the declared parameters (one per version asked)."""

    def build(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
        return fair_qpme(
            setting.sphere,
            groups=setting.n_groups,
            tau=setting.group_weights(p["group_shares"]),
            epsilon=p["epsilon"],
            inner_radius=_small_spheres(setting, p["inner_radius"], FAIR_DISPLAYED_INNER_RATIO),
            cycles=p["cycles"],
            **options,
        )

    return build


register(
    Algorithm(
        name="fair_qpme",
        version="fair_qpme-3",
        description="Fairness (fair QPME, the paper's searches)",
        elicits="fair quadratic metric (a, B^{uv}, lam) (Section 4)",
        family=get_family("fair_quadratic"),
        params=(_epsilon(), _inner_radius("radius of the small spheres"), _GROUP_SHARES, _CYCLES),
        builder=_fair_qpme_asking(),
        earlier={
            # version 1: lines-only solves, no search at the trade-off's ends
            "fair_qpme-1": _fair_qpme_asking(reconstruction="lstsq", resolve_degenerate=False),
            # version 2: the signed solve only, never the lines-only one
            "fair_qpme-2": _fair_qpme_asking(fit="signed"),
        },
        needs_groups=True,
        displayed=True,
        display_decimals=1,
    )
)


def _tradeoff(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    return tradeoff_search(
        setting.sphere,
        a=np.asarray(p["a"], dtype=np.float64),
        B_pairs=tradeoff_pairs(p, setting.n_groups, setting.sphere.n_classes),
        tau=setting.group_weights(p["group_shares"]),
        epsilon=p["epsilon"],
        method=p["method"],
    )


def _draw_tradeoff(rng: np.random.Generator, draw: Draw, params: Mapping[str, Any] | None) -> Metric:
    """Given a study's known ``a`` and ``B^{uv}`` only the trade-off is random, else a whole fair metric."""
    if params is None or draw.tau is None:
        return get_family("fair_quadratic").random(rng, draw)
    return FairQuadraticMetric(
        np.asarray(params["a"], dtype=np.float64),
        tradeoff_pairs(params, draw.n_groups, draw.n_classes),
        float(rng.uniform(0.0, 1.0)),
        draw.tau,
    )


register(
    Algorithm(
        name="tradeoff",
        version="tradeoff-1",
        description="Fairness trade-off only (costs and group-gap penalties known)",
        elicits="trade-off lam alone, a and B^{uv} known (Algorithm 5)",
        family=get_family("fair_quadratic"),
        params=(
            Param(
                "a",
                list[float],
                description="known misclassification costs (>= 0)",
                min_length=2,
                max_length=10,
                check=_check_costs,
            ),
            Param(
                "B_pairs",
                list[list[list[float]]],
                description="known PSD violation weights, one (k, k) matrix per group pair u < v",
                min_length=1,
                check=_check_psd_pairs,
            ),
            Param("epsilon", float, 0.01, "tolerance on lambda (interval width)", gt=0.0, lt=1.0),
            _GROUP_SHARES,
            Param("method", str, "threshold", "search variant", pattern="^(threshold|shrink)$"),
        ),
        builder=_tradeoff,
        needs_groups=True,
        draw_metric=_draw_tradeoff,
        reported_errors=("lam",),
        displayed=True,
        display_decimals=1,
    )
)


def _diagonal_qpme(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    inner_radius = _small_spheres(setting, p["inner_radius"], DISPLAYED_INNER_RATIO)
    return diagonal_qpme(setting.sphere, p["epsilon"], inner_radius=inner_radius, cycles=p["cycles"])


def _draw_diagonal(rng: np.random.Generator, draw: Draw, params: Mapping[str, Any] | None) -> Metric:
    """B keeps the diagonal of a random NSD matrix (itself NSD); the metric renormalises."""
    base = get_family("quadratic").random(rng, draw)
    assert isinstance(base, QuadraticMetric)
    return QuadraticMetric(base.a, np.diag(np.diag(base.B)))


def _check_diagonal(metric: Metric) -> None:
    if not isinstance(metric, QuadraticMetric) or not np.all(np.diag(np.diag(metric.B)) == metric.B):
        raise InvalidConfigError("metric.B must be diagonal for diagonal_qpme")


register(
    Algorithm(
        name="diagonal_qpme",
        version="diagonal_qpme-1",
        description="Quadratic without class interactions (diagonal QPME)",
        elicits="quadratic metric with diagonal B, O~(k) (Section 5)",
        family=get_family("quadratic"),
        params=(_epsilon(), _inner_radius(_SMALL_SPHERES, le=0.5), _CYCLES),
        builder=_diagonal_qpme,
        draw_metric=_draw_diagonal,
        check_metric=_check_diagonal,
        displayed=True,
        display_decimals=1,
    )
)


def _general_qpme(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    return general_qpme(setting.sphere, p["epsilon"], inner_radius=p["inner_radius"], cycles=p["cycles"])


register(
    Algorithm(
        name="general_qpme",
        version="general_qpme-1",
        description="Quadratic over every kind of mistake (general QPME)",
        elicits="quadratic metric in the k^2 - k off-diagonal rates (Appendix E)",
        family=get_family("quadratic"),
        params=(_epsilon(), _inner_radius(_SMALL_SPHERES), _CYCLES),
        builder=_general_qpme,
        studies=False,
        sphere=general_sphere,
        classes_from_rates=general_n_classes,
    )
)


def _cubic_qpme(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    return cubic_qpme(setting.sphere, p["epsilon"], qpme_radius=p["inner_radius"], cycles=p["cycles"])


register(
    Algorithm(
        name="cubic_qpme",
        version="cubic_qpme-1",
        description="Cubic (cubic QPME): weights, curvature and its change",
        elicits="cubic metric by QPME at basis points (Section 7)",
        family=get_family("cubic"),
        params=(
            _epsilon(default=DEFAULT_CUBIC_TOLERANCE),
            _inner_radius("radius of the spheres the inner QPME runs use (default: the algorithm's choice)"),
            _CYCLES,
        ),
        builder=_cubic_qpme,
        studies=False,
    )
)


# ----------------------------------------------------------------------------------------------------------
# Active Bayesian elicitation on a study's query space
# ----------------------------------------------------------------------------------------------------------

_ACTIVE_PARAMS: Final = (
    Param("max_queries", int | None, None, "question budget per participant", ge=1, le=1000),
    Param("min_cell_gap", float, 2.0, "perceptibility: people out of 100 in some cell", gt=0.0, le=50.0),
    Param(
        "beta",
        float | None,
        None,
        "answer noise P(correct) = sigmoid(beta |dphi|) (default: estimated)",
        gt=0.0,
    ),
    Param("tolerance", float, 0.05, "stop at this posterior spread", gt=0.0, lt=1.0),
)


def _active_options(p: Mapping[str, Any], seed: int) -> dict[str, Any]:
    return {
        "seed": seed,
        "beta": DEFAULT_BETA_GRID if p["beta"] is None else p["beta"],
        "max_queries": p["max_queries"],
        "tolerance": p["tolerance"],
        "min_cell_gap": p["min_cell_gap"],
    }


def _active_linear(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    return active_linear(setting.query_space("active_linear"), **_active_options(p, seed))


#: Posterior particles of the lean active quadratic elicitor with two classes (5 unknowns): half the noisy
#: default, which cost the demo no agreement; with more classes half of them did (k = 5), so the default
#: stays there (docs/scaling.md, "Cheaper searches").
_LEAN_PARTICLES: Final = 300
#: The most classes `_LEAN_PARTICLES` is used for.
_LEAN_PARTICLES_UP_TO_CLASSES: Final = 2


def _active_quadratic_lean(
    *, particles_everywhere: bool
) -> Callable[[Setting, Mapping[str, Any], int], _Elicitor]:
    """Sensible metrics (no question decided by dominance) asked with the lean search from the
    configuration's shared burnt-in prior, so that a participant's joining costs the first question's search
    only: on `_LEAN_PARTICLES` for two classes, or (``particles_everywhere``, active_quadratic-5) for any."""

    def build(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
        few = particles_everywhere or setting.sphere.n_classes <= _LEAN_PARTICLES_UP_TO_CLASSES
        return active_quadratic(
            setting.query_space("active_quadratic"),
            **_active_options(p, seed),
            estimate="consensus",
            sensible=True,
            search=LEAN_SEARCH,
            n_particles=_LEAN_PARTICLES if few else None,
            shared_prior=True,
        )

    return build


def _active_quadratic_own_burn_in(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    """active_quadratic-4: sensible metrics, the default search, each session burning in its own prior."""
    return active_quadratic(
        setting.query_space("active_quadratic"),
        **_active_options(p, seed),
        estimate="consensus",
        sensible=True,
    )


#: Draws a simulated person of active_quadratic gets before giving up on a sensible one.
_SENSIBLE_ATTEMPTS: Final = 10_000


def _draw_sensible_quadratic(
    rng: np.random.Generator, draw: Draw, params: Mapping[str, Any] | None
) -> Metric:
    """The quadratic family's draw, redrawn until it increases in every rate across ``draw.sphere`` (the
    people active_quadratic elicits: none prefers a classifier worse in every class); without a sphere,
    the draw as it comes."""
    family = get_family("quadratic")
    for _ in range(_SENSIBLE_ATTEMPTS):
        metric = family.random(rng, draw)
        assert isinstance(metric, QuadraticMetric)
        if draw.sphere is None or np.all(gradient_floor(metric.a, metric.B, draw.sphere) >= 0.0):
            return metric
    raise NumericalError(
        f"no random quadratic metric increasing across {draw.sphere} in {_SENSIBLE_ATTEMPTS}"
    )


def _active_quadratic_any_slope(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    """Active quadratic as version active_quadratic-3 asked: any NSD quadratic, the consensus estimate."""
    return active_quadratic(
        setting.query_space("active_quadratic"), **_active_options(p, seed), estimate="consensus"
    )


def _active_quadratic_mean(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    """Active quadratic as version active_quadratic-2 answered: the same questions, the posterior mean."""
    return active_quadratic(setting.query_space("active_quadratic"), **_active_options(p, seed))


def _active_fair_common_sphere(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    """active_fair-1: every group asked in the space's common sphere (kept for its sessions)."""
    space = setting.query_space("active_fair")
    return active_fair(space, tau=setting.group_weights(p["group_shares"]), **_active_options(p, seed))


def _active_fair_own_spheres(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
    """active_fair-2: each group in its own sphere, every question chosen for the whole metric."""
    space = setting.query_space("active_fair")
    # Every query space has ``group_spheres`` (the common sphere repeated when it has no regions per group).
    return active_fair(
        space,
        tau=setting.group_weights(p["group_shares"]),
        group_spheres=space.group_spheres,
        **_active_options(p, seed),
    )


#: active_fair asks every second question for the trade-off ``lam`` (docs/fairness-tradeoff.md).
_TRADEOFF_EVERY: Final = 2


def _active_fair_asking(**options: Any) -> Callable[[Setting, Mapping[str, Any], int], _Elicitor]:
    """The trade-off-asking fair builder with ``options`` on top (one per version that asks this way)."""

    def build(setting: Setting, p: Mapping[str, Any], seed: int) -> _Elicitor:
        space = setting.query_space("active_fair")
        # A dataset space knows its classifiers: trade-off questions may show sensible ones beyond the
        # region.
        plug_ins = getattr(space, "plug_in_rates", None)
        pools = (
            None
            if plug_ins is None
            else [sensible_frontier(plug_ins(g), space.priors[g]) for g in range(space.n_groups)]
        )
        return active_fair(
            space,
            tau=setting.group_weights(p["group_shares"]),
            group_spheres=space.group_spheres,
            tradeoff_every=_TRADEOFF_EVERY,
            tradeoff_rates=None if pools is None or any(len(pool) == 0 for pool in pools) else pools,
            **_active_options(p, seed),
            **options,
        )

    return build


register(
    Algorithm(
        name="active_linear",
        version="active_linear-1",
        description="Active linear: one weight per class, few questions",
        elicits="linear metric <a, r>, Bayesian queries on a study's space",
        family=get_family("linear"),
        params=_ACTIVE_PARAMS,
        builder=_active_linear,
        seeded=True,
        needs_space=True,
        displayed=True,
    )
)
register(
    Algorithm(
        name="active_quadratic",
        version="active_quadratic-6",
        description="Active quadratic (recommended): few questions, tolerates slips",
        elicits="quadratic metric <a, r> + r^T B r / 2, Bayesian queries on a study's space",
        family=get_family("quadratic"),
        params=_ACTIVE_PARAMS,
        builder=_active_quadratic_lean(particles_everywhere=False),
        draw_metric=_draw_sensible_quadratic,
        earlier={
            "active_quadratic-2": _active_quadratic_mean,
            "active_quadratic-3": _active_quadratic_any_slope,
            "active_quadratic-4": _active_quadratic_own_burn_in,
            # the lean search on 300 particles for any number of classes
            "active_quadratic-5": _active_quadratic_lean(particles_everywhere=True),
        },
        seeded=True,
        needs_space=True,
        displayed=True,
    )
)
register(
    Algorithm(
        name="active_fair",
        version="active_fair-4",
        description="Active fairness (recommended with groups): few questions, tolerates slips",
        elicits="fair quadratic metric (a, B^{uv}, lam), Bayesian queries on a study's space",
        family=get_family("fair_quadratic"),
        params=(*_ACTIVE_PARAMS, _GROUP_SHARES),
        # The lean search from the configuration's shared burnt-in prior, as active_quadratic-6, and on the
        # default particles: with half of them the lowest people's agreement fell (docs/fairness-tradeoff.md).
        builder=_active_fair_asking(search=LEAN_SEARCH, shared_prior=True),
        needs_groups=True,
        seeded=True,
        needs_space=True,
        displayed=True,
        group_spheres=True,
        earlier={
            "active_fair-1": _active_fair_common_sphere,
            "active_fair-2": _active_fair_own_spheres,
            # the default search, each session burning in its own prior
            "active_fair-3": _active_fair_asking(),
        },
    )
)
