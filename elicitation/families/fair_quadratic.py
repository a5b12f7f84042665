"""The fair quadratic family of Definition 3 (a cost over group rates): fair QPME's result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import InvalidConfigError
from ..oracles import random_fair_metric
from ..types import FairQuadraticMetric, Metric, RandomState
from .base import Draw, MetricFamily, finite, norm_error
from .linear import weight_cells, weight_columns
from .quadratic import matrix_cells, matrix_columns

__all__ = ["FAMILY", "FairQuadraticFamily"]


class FairQuadraticFamily(MetricFamily):
    """Fair quadratic costs: misclassification costs ``a``, one PSD ``B^{uv}`` per group pair, ``lam``."""

    name = "fair_quadratic"
    metric_type = FairQuadraticMetric
    error_names = ("a", "B_pairs", "lam")

    def random(self, rng: RandomState, draw: Draw) -> Metric:
        return random_fair_metric(rng, draw.n_classes, draw.n_groups, tau=draw.tau)

    def _coefficient_errors(
        self, true: FairQuadraticMetric, estimate: FairQuadraticMetric
    ) -> dict[str, float]:
        a = norm_error(true.a, estimate.a, "a")
        if set(true.B_pairs) != set(estimate.B_pairs):
            raise InvalidConfigError("the two fair metrics have different group pairs")
        pairs = sum(float(np.linalg.norm(true.B_pairs[key] - estimate.B_pairs[key])) for key in true.B_pairs)
        return {
            "a": a,
            "B_pairs": finite(pairs, "B_pairs error"),
            "lam": finite(abs(true.lam - estimate.lam), "lam error"),
        }

    def n_groups(self, metric: Metric) -> int | None:
        assert isinstance(metric, FairQuadraticMetric)
        return metric.n_groups

    def export_columns(self, class_names: Sequence[str], group_names: Sequence[str]) -> list[str]:
        columns = weight_columns(class_names)
        for u in range(len(group_names)):
            for v in range(u + 1, len(group_names)):
                columns += matrix_columns(f"B_{group_names[u]}_{group_names[v]}", class_names)
        return [*columns, "lam"]

    def export_cells(
        self, data: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
    ) -> dict[str, float]:
        cells = weight_cells(data, class_names)
        for item in data["B_pairs"]:
            u, v = int(item["u"]), int(item["v"])
            cells |= matrix_cells(f"B_{group_names[u]}_{group_names[v]}", item["B"], class_names)
        cells["lam"] = float(data["lam"])
        return cells


FAMILY = FairQuadraticFamily()
