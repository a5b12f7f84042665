"""The quadratic family ``phi(r) = <a, r> + 1/2 r^T B r`` (Definition 2): QPME's result.

Two random generators: ``"authors"`` (`elicitation.oracles.random_quadratic_metric`, the published
experiments' draw) and ``"wishart"`` (`random_wishart_metric`: generic curvature and a gradient whose
entries span two orders of magnitude, the conditioning the authors' draw rarely reaches).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from ..errors import InvalidConfigError
from ..oracles import (
    DEFAULT_LINEAR_SHARE,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MIN_GRADIENT,
    random_quadratic_metric,
    satisfies_regularity,
)
from ..qpme import default_inner_radius
from ..types import FloatArray, Metric, QuadraticMetric, Sphere
from .base import Draw, MetricFamily, QuadraticForm, norm_error
from .linear import weight_cells, weight_columns

__all__ = [
    "FAMILY",
    "GRADIENT_DECADES",
    "QuadraticFamily",
    "matrix_cells",
    "matrix_columns",
    "random_wishart_metric",
    "spread_magnitudes",
    "wishart_matrix",
]

#: Orders of magnitude spanned by the entries of a ``"wishart"`` draw's gradient (or fair costs).
GRADIENT_DECADES: Final = 2.0


def wishart_matrix(rng: np.random.Generator, k: int) -> FloatArray:
    """A ``(k, k)`` PSD matrix ``G G^T`` for ``G`` standard normal with ``k`` columns, unit Frobenius norm.

    Wishart with ``k`` degrees of freedom: full rank, but its smallest eigenvalue is typically far below
    the others (unlike the authors' eigenvalues in ``[1, 2]``), so the curvature is generic.
    """
    G = rng.standard_normal((k, k))
    W: FloatArray = G @ G.T
    W = (W + W.T) / 2.0
    return W / float(np.linalg.norm(W))


def spread_magnitudes(rng: np.random.Generator, k: int) -> FloatArray:
    """``k`` magnitudes ``10^(-GRADIENT_DECADES u)`` for ``u`` uniform in ``[0, 1]``: log-uniform in a range
    of two orders of magnitude, so some entries are tiny next to others."""
    magnitudes: FloatArray = 10.0 ** (-GRADIENT_DECADES * rng.random(k))
    return magnitudes


def random_wishart_metric(
    rng: np.random.Generator,
    k: int,
    *,
    sphere: Sphere | None = None,
    inner_radius: float | None = None,
    linear_share: tuple[float, float] = DEFAULT_LINEAR_SHARE,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> QuadraticMetric:
    """A generic quadratic metric of Definition 2 within the paper's assumptions on ``sphere``.

    ``B = -W`` for a Wishart ``W`` (`wishart_matrix`); the gradient ``d`` at ``o`` has entries of random
    sign whose magnitudes span two orders of magnitude (`spread_magnitudes`); ``||d||^2`` is a share
    uniform in ``linear_share`` of ``||d||^2 + ||B||_F^2`` as in the authors' draw, and ``a = d - B o``.
    Draws that fail Assumptions 2 and 3 as Appendix G tests them (`satisfies_regularity` on ``sphere``
    with ``inner_radius``, default QPME's) are redrawn.

    Raises
    ------
    InvalidConfigError
        If ``max_attempts`` draws all violate the assumptions.
    """
    space = Sphere.around_uniform(k, 0.2) if sphere is None else sphere
    varrho = default_inner_radius(space) if inner_radius is None else float(inner_radius)
    lo, hi = linear_share
    for _ in range(max_attempts):
        B = -wishart_matrix(rng, k)
        d = rng.choice([-1.0, 1.0], size=k) * spread_magnitudes(rng, k)
        share = float(rng.uniform(lo, hi))
        d = d * np.sqrt(share) / float(np.linalg.norm(d))
        B = B * np.sqrt(1.0 - share)
        metric = QuadraticMetric(d - B @ space.center, B)
        if satisfies_regularity(metric, space, varrho, DEFAULT_MIN_GRADIENT):
            return metric
    raise InvalidConfigError(f"no Wishart metric met the assumptions in {max_attempts} attempts")


def matrix_columns(prefix: str, class_names: Sequence[str]) -> list[str]:
    """``<prefix>_<row class>_<column class>`` for every cell of a ``(k, k)`` coefficient matrix."""
    return [f"{prefix}_{row}_{col}" for row in class_names for col in class_names]


def matrix_cells(
    prefix: str, matrix: Sequence[Sequence[float]], class_names: Sequence[str]
) -> dict[str, float]:
    """The cells named by `matrix_columns` of a stored ``(k, k)`` matrix (nested lists)."""
    return {
        f"{prefix}_{row}_{col}": float(matrix[i][j])
        for i, row in enumerate(class_names)
        for j, col in enumerate(class_names)
    }


class QuadraticFamily(MetricFamily):
    """Quadratic metrics: weights ``a`` and a symmetric curvature ``B`` (NSD unless the variant allows)."""

    name = "quadratic"
    metric_type = QuadraticMetric
    error_names = ("a", "B")
    generators = ("authors", "wishart")

    def _random(self, rng: np.random.Generator, draw: Draw) -> Metric:
        if draw.generator == "wishart":
            return random_wishart_metric(rng, draw.n_classes, sphere=draw.sphere)
        return random_quadratic_metric(rng, draw.n_classes, sphere=draw.sphere)

    def _coefficient_errors(self, true: QuadraticMetric, estimate: QuadraticMetric) -> dict[str, float]:
        return {"a": norm_error(true.a, estimate.a, "a"), "B": norm_error(true.B, estimate.B, "B")}

    def quadratic_form(self, metric: Metric) -> QuadraticForm:
        assert isinstance(metric, QuadraticMetric)
        return QuadraticForm(metric.a.copy(), metric.B.copy())

    def export_columns(self, class_names: Sequence[str], group_names: Sequence[str]) -> list[str]:
        return weight_columns(class_names) + matrix_columns("B", class_names)

    def export_cells(
        self, data: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
    ) -> dict[str, float]:
        return weight_cells(data, class_names) | matrix_cells("B", data["B"], class_names)

    def panel_vector(self, metric: Metric) -> FloatArray:
        assert isinstance(metric, QuadraticMetric)
        return np.concatenate([metric.a, metric.B.ravel()])

    def panel_features(self, rates: FloatArray, like: Metric) -> FloatArray:
        r = np.asarray(rates, dtype=np.float64)
        return np.hstack([r, 0.5 * np.einsum("ni,nj->nij", r, r).reshape(len(r), -1)])

    def from_panel_vector(self, vector: FloatArray, like: Metric) -> Metric:
        # A mean of NSD matrices is NSD, so the mean of QPME results is again a metric of Definition 2.
        assert isinstance(like, QuadraticMetric)
        k = like.n_classes
        B = np.asarray(vector[k:], dtype=np.float64).reshape(k, k)
        return QuadraticMetric(np.asarray(vector[:k]), (B + B.T) / 2.0, require_nsd=like.require_nsd)

    def check_panel(self, metrics: Sequence[Metric]) -> None:
        super().check_panel(metrics)
        if len({metric.require_nsd for metric in metrics if isinstance(metric, QuadraticMetric)}) > 1:
            raise InvalidConfigError("a panel cannot mix concave quadratic metrics with indefinite ones")


FAMILY = QuadraticFamily()
