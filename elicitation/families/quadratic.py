"""The quadratic family ``phi(r) = <a, r> + 1/2 r^T B r`` (Definition 2): QPME's result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..oracles import random_quadratic_metric
from ..types import Metric, QuadraticMetric, RandomState
from .base import Draw, MetricFamily, norm_error
from .linear import weight_cells, weight_columns

__all__ = ["FAMILY", "QuadraticFamily", "matrix_cells", "matrix_columns"]


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

    def random(self, rng: RandomState, draw: Draw) -> Metric:
        return random_quadratic_metric(rng, draw.n_classes, sphere=draw.sphere)

    def _coefficient_errors(self, true: QuadraticMetric, estimate: QuadraticMetric) -> dict[str, float]:
        return {"a": norm_error(true.a, estimate.a, "a"), "B": norm_error(true.B, estimate.B, "B")}

    def export_columns(self, class_names: Sequence[str], group_names: Sequence[str]) -> list[str]:
        return weight_columns(class_names) + matrix_columns("B", class_names)

    def export_cells(
        self, data: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
    ) -> dict[str, float]:
        return weight_cells(data, class_names) | matrix_cells("B", data["B"], class_names)


FAMILY = QuadraticFamily()
