"""The linear family ``phi(r) = <a, r>`` (Section 2.2): LPME's result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..oracles import random_linear_metric
from ..types import FloatArray, LinearMetric, Metric
from .base import Draw, MetricFamily, QuadraticForm, norm_error

__all__ = ["FAMILY", "LinearFamily", "weight_cells", "weight_columns"]


def weight_columns(class_names: Sequence[str]) -> list[str]:
    """``a_<class>`` per class: the columns every family's export starts with."""
    return [f"a_{name}" for name in class_names]


def weight_cells(data: Mapping[str, Any], class_names: Sequence[str]) -> dict[str, float]:
    """The ``a_<class>`` cells of a stored metric."""
    return {f"a_{name}": float(value) for name, value in zip(class_names, data["a"], strict=True)}


class LinearFamily(MetricFamily):
    """Linear metrics: one weight per class rate, ``||a|| = 1``."""

    name = "linear"
    metric_type = LinearMetric
    error_names = ("a",)

    def _random(self, rng: np.random.Generator, draw: Draw) -> Metric:
        return random_linear_metric(rng, draw.n_classes, nonnegative=draw.nonnegative)

    def _coefficient_errors(self, true: LinearMetric, estimate: LinearMetric) -> dict[str, float]:
        return {"a": norm_error(true.a, estimate.a, "a")}

    def quadratic_form(self, metric: Metric) -> QuadraticForm:
        assert isinstance(metric, LinearMetric)
        k = metric.n_classes
        return QuadraticForm(metric.a.copy(), np.zeros((k, k)))

    def export_columns(self, class_names: Sequence[str], group_names: Sequence[str]) -> list[str]:
        return weight_columns(class_names)

    def export_cells(
        self, data: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
    ) -> dict[str, float]:
        return weight_cells(data, class_names)

    def panel_vector(self, metric: Metric) -> FloatArray:
        assert isinstance(metric, LinearMetric)
        return np.array(metric.a, dtype=np.float64)

    def panel_features(self, rates: FloatArray, like: Metric) -> FloatArray:
        return np.asarray(rates, dtype=np.float64)

    def from_panel_vector(self, vector: FloatArray, like: Metric) -> Metric:
        # The normalised mean of unit weight vectors: the direction closest to the members' on average
        # (it maximises the summed cosine similarity), and its value is the members' mean value rescaled.
        return LinearMetric(np.asarray(vector, dtype=np.float64))


FAMILY = LinearFamily()
