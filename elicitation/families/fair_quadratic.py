"""The fair quadratic family of Definition 3 (a cost over group rates): fair QPME's result.

Two random generators: ``"authors"`` (`elicitation.oracles.random_fair_metric`, the published experiments'
draw) and ``"wishart"`` (`random_wishart_fair_metric`: generic PSD violation weights and costs whose
entries span two orders of magnitude).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from ..errors import InvalidConfigError
from ..oracles import DEFAULT_TRADEOFF_RANGE, random_fair_metric
from ..types import FairQuadraticMetric, FloatArray, Metric, check_tau, pair_index
from .base import Draw, MetricFamily, QuadraticForm, finite, norm_error
from .linear import weight_cells, weight_columns
from .quadratic import matrix_cells, matrix_columns, spread_magnitudes, wishart_matrix

__all__ = ["FAMILY", "FairQuadraticFamily", "random_wishart_fair_metric"]

#: A part of a panel's mean cost below this norm is absent (every member put lam at 0, or at 1).
_ZERO_PART: Final = 1e-12


def random_wishart_fair_metric(
    rng: np.random.Generator,
    k: int,
    m: int,
    *,
    tau: FloatArray | None = None,
    tradeoff_range: tuple[float, float] = DEFAULT_TRADEOFF_RANGE,
) -> FairQuadraticMetric:
    """A generic fair quadratic metric of Definition 3.

    Costs ``a >= 0`` of unit norm whose entries span two orders of magnitude (`spread_magnitudes`), one
    Wishart ``B^{uv}`` per group pair (`wishart_matrix`) with a random share of ``sum ||B^{uv}||_F = 2``,
    ``lam`` and (unless given) ``tau`` drawn as the authors' generator draws them.
    """
    a = spread_magnitudes(rng, k)
    a = a / float(np.linalg.norm(a))
    pairs = pair_index(m)
    shares = np.maximum(rng.random(len(pairs)), 1e-12)
    shares = 2.0 * shares / shares.sum()
    B_pairs = {key: wishart_matrix(rng, k) * float(share) for key, share in zip(pairs, shares, strict=True)}
    lam = float(rng.uniform(*tradeoff_range))
    if tau is None:
        weights = np.maximum(rng.random((m, k)), 1e-12)
        tau = weights / weights.sum(axis=0, keepdims=True)
    return FairQuadraticMetric(a, B_pairs, lam, check_tau(tau, n_groups=m, n_classes=k))


class FairQuadraticFamily(MetricFamily):
    """Fair quadratic costs: misclassification costs ``a``, one PSD ``B^{uv}`` per group pair, ``lam``."""

    name = "fair_quadratic"
    metric_type = FairQuadraticMetric
    error_names = ("a", "B_pairs", "lam")
    generators = ("authors", "wishart")

    def _random(self, rng: np.random.Generator, draw: Draw) -> Metric:
        if draw.generator == "wishart":
            return random_wishart_fair_metric(rng, draw.n_classes, draw.n_groups, tau=draw.tau)
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

    def quadratic_form(self, metric: Metric) -> QuadraticForm:
        """Minus the cost: ``-(1 - lam) <a, 1 - sum_g tau^g r^g> - lam/2 sum (r^u - r^v)^T B^{uv} (...)``."""
        assert isinstance(metric, FairQuadraticMetric)
        m, k = metric.n_groups, metric.n_classes
        lam = metric.lam
        linear = ((1.0 - lam) * metric.tau * metric.a).reshape(m * k)
        cost_hessian = np.zeros((m * k, m * k))
        for (u, v), B in metric.B_pairs.items():
            block_u, block_v = slice(u * k, (u + 1) * k), slice(v * k, (v + 1) * k)
            cost_hessian[block_u, block_u] += lam * B
            cost_hessian[block_v, block_v] += lam * B
            cost_hessian[block_u, block_v] -= lam * B
            cost_hessian[block_v, block_u] -= lam * B
        return QuadraticForm(linear, -cost_hessian, -(1.0 - lam) * float(metric.a.sum()))

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

    def panel_vector(self, metric: Metric) -> FloatArray:
        # The cost is linear in ((1 - lam) a, lam B^{uv}); a and B^{uv} follow for the two edge cases of
        # from_panel_vector (a panel whose every lam is 0 or every lam is 1).
        assert isinstance(metric, FairQuadraticMetric)
        pairs = [metric.B_pairs[key].ravel() for key in pair_index(metric.n_groups)]
        return np.concatenate(
            [(1.0 - metric.lam) * metric.a, *(metric.lam * B for B in pairs), metric.a, *pairs]
        )

    def panel_features(self, rates: FloatArray, like: Metric) -> FloatArray:
        assert isinstance(like, FairQuadraticMetric)
        r = np.asarray(rates, dtype=np.float64)
        n, k = len(r), like.n_classes
        errors = 1.0 - np.einsum("gk,ngk->nk", like.tau, r)
        gaps = [r[:, u] - r[:, v] for u, v in pair_index(like.n_groups)]
        penalties = [0.5 * np.einsum("ni,nj->nij", d, d).reshape(n, k * k) for d in gaps]
        # The unweighted a and B^{uv} at the end of the panel vector do not score.
        unweighted = np.zeros((n, k + len(gaps) * k * k))
        return np.hstack([errors, *penalties, unweighted])

    def from_panel_vector(self, vector: FloatArray, like: Metric) -> Metric:
        """The fair cost whose value is the mean cost: ``a``, ``B^{uv}`` and ``lam`` from the weighted means.

        With ``s_a = ||mean (1 - lam) a||`` and ``s_B = 1/2 sum ||mean lam B^{uv}||_F``, the mean cost is
        ``(s_a + s_B)`` times Definition 3's cost with ``lam = s_B / (s_a + s_B)``.
        """
        assert isinstance(like, FairQuadraticMetric)
        k, keys = like.n_classes, pair_index(like.n_groups)
        size = k + len(keys) * k * k
        weighted, plain = np.asarray(vector[:size]), np.asarray(vector[size:])

        def parts(values: FloatArray) -> tuple[FloatArray, dict[tuple[int, int], FloatArray]]:
            blocks = values[k:].reshape(len(keys), k, k)
            return values[:k], {key: (B + B.T) / 2.0 for key, B in zip(keys, blocks, strict=True)}

        a, B_pairs = parts(weighted)
        s_a = float(np.linalg.norm(a))
        s_B = 0.5 * sum(float(np.linalg.norm(B)) for B in B_pairs.values())
        plain_a, plain_B = parts(plain)
        # lam = 0 (or 1) for every member leaves that part of the weighted mean zero: its direction, which
        # the cost then ignores, is the members' unweighted mean.
        lam = finite(s_B / (s_a + s_B), "the panel's trade-off")
        return FairQuadraticMetric(
            a=np.clip(a if s_a > _ZERO_PART else plain_a, 0.0, None),
            B_pairs=B_pairs if s_B > _ZERO_PART else plain_B,
            lam=float(np.clip(lam, 0.0, 1.0)),
            tau=like.tau,
        )

    def check_panel(self, metrics: Sequence[Metric]) -> None:
        super().check_panel(metrics)
        first = metrics[0]
        assert isinstance(first, FairQuadraticMetric)
        for metric in metrics:
            assert isinstance(metric, FairQuadraticMetric)
            if not np.array_equal(metric.tau, first.tau):
                raise InvalidConfigError("a panel's fair metrics must share the group prevalences tau")


FAMILY = FairQuadraticFamily()
