"""The cubic family ``phi(r) = <a, r> + 1/2 r^T B r + 1/6 C[r, r, r]`` (Section 7): cubic QPME's result."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from ..oracles import random_quadratic_metric
from ..types import FloatArray, Metric
from ..variants import CubicMetric
from .base import Draw, MetricFamily, check_same_shape, finite, norm_error
from .linear import weight_cells, weight_columns
from .quadratic import matrix_cells, matrix_columns

__all__ = ["CUBIC_SHARE", "FAMILY", "CubicFamily"]

#: Share of ``||C||_F^2`` in the unit total of a random cubic metric (the rest as for quadratic metrics).
CUBIC_SHARE: Final = 0.2


class CubicFamily(MetricFamily):
    """Cubic metrics: a quadratic metric plus a symmetric third-order tensor ``C``."""

    name = "cubic"
    metric_type = CubicMetric
    error_names = ("a", "B", "C")

    def _random(self, rng: np.random.Generator, draw: Draw) -> Metric:
        k = draw.n_classes
        base = random_quadratic_metric(rng, k, sphere=draw.sphere)
        tensor = rng.standard_normal((k, k, k))
        C = np.mean([np.transpose(tensor, axes) for axes in itertools.permutations(range(3))], axis=0)
        C = C * math.sqrt(CUBIC_SHARE / (1.0 - CUBIC_SHARE)) / float(np.linalg.norm(C))
        return CubicMetric(base.a, base.B, C)

    def _coefficient_errors(self, true: CubicMetric, estimate: CubicMetric) -> dict[str, float]:
        check_same_shape(true.C, estimate.C, "C")
        return {
            "a": norm_error(true.a, estimate.a, "a"),
            "B": norm_error(true.B, estimate.B, "B"),
            "C": finite(float(np.sqrt(np.sum((true.C - estimate.C) ** 2))), "C error"),
        }

    def export_columns(self, class_names: Sequence[str], group_names: Sequence[str]) -> list[str]:
        tensor = [f"C_{i}_{j}_{c}" for i in class_names for j in class_names for c in class_names]
        return weight_columns(class_names) + matrix_columns("B", class_names) + tensor

    def export_cells(
        self, data: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
    ) -> dict[str, float]:
        tensor = {
            f"C_{i}_{j}_{c}": float(data["C"][x][y][z])
            for x, i in enumerate(class_names)
            for y, j in enumerate(class_names)
            for z, c in enumerate(class_names)
        }
        return weight_cells(data, class_names) | matrix_cells("B", data["B"], class_names) | tensor

    def panel_vector(self, metric: Metric) -> FloatArray:
        assert isinstance(metric, CubicMetric)
        return np.concatenate([metric.a, metric.B.ravel(), metric.C.ravel()])

    def panel_features(self, rates: FloatArray, like: Metric) -> FloatArray:
        r = np.asarray(rates, dtype=np.float64)
        n = len(r)
        second = np.einsum("ni,nj->nij", r, r)
        third = np.einsum("nij,nl->nijl", second, r)
        return np.hstack([r, 0.5 * second.reshape(n, -1), third.reshape(n, -1) / 6.0])

    def from_panel_vector(self, vector: FloatArray, like: Metric) -> Metric:
        k = like.n_classes
        values = np.asarray(vector, dtype=np.float64)
        B = values[k : k + k * k].reshape(k, k)
        return CubicMetric(values[:k], (B + B.T) / 2.0, values[k + k * k :].reshape(k, k, k))


FAMILY = CubicFamily()
