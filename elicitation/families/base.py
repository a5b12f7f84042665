"""What every metric family provides: random draws for simulations, error measures and export cells.

A *family* is the set of metrics of one functional form (linear, quadratic, cubic, fair quadratic); its
value type is a `Metric` subclass whose ``kind`` tags `Metric.to_dict` (the one codec). Everything else a
program needs to know about a family without naming its class lives on its `MetricFamily` object, so
callers look the family up (`family_of`, `get_family`) instead of testing ``isinstance`` one by one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import InvalidConfigError, NumericalError
from ..types import FloatArray, Metric, RandomState, Sphere, as_generator

__all__ = [
    "GENERATORS",
    "Draw",
    "MetricFamily",
    "QuadraticForm",
    "check_generator",
    "check_same_shape",
    "finite",
    "norm_error",
]

#: Random metric generators: ``"authors"`` follows the published experiments (Appendix H), ``"wishart"``
#: draws generic metrics within the same assumptions (Wishart curvature, gradient or cost entries spread
#: over two orders of magnitude); only the quadratic and fair quadratic families offer the second.
GENERATORS: Final = ("authors", "wishart")


@dataclass(frozen=True, eq=False)
class Draw:
    """How a simulation wants its hidden metric drawn (each family reads the fields that concern it).

    ``sphere``: the query sphere, whose centre is the reference point ``o`` of a quadratic draw (``None``:
    the uniform rate ``1/k``); ``n_groups`` and ``tau``: the groups of a fair metric (``tau`` drawn when
    ``None``); ``nonnegative``: linear weights restricted to ``a >= 0`` (weighted-accuracy style).
    """

    n_classes: int
    sphere: Sphere | None = None
    n_groups: int = 2
    tau: FloatArray | None = None
    nonnegative: bool = False
    generator: str = "authors"


def check_generator(generator: object, offered: Sequence[str] = GENERATORS) -> str:
    """``generator`` if it is one of ``offered``, else `InvalidConfigError` listing them."""
    if not isinstance(generator, str) or generator not in offered:
        raise InvalidConfigError(f"metric generator must be one of {', '.join(offered)}; got {generator!r}")
    return generator


def finite(value: float, name: str) -> float:
    """``value`` if it is finite, else `NumericalError` naming it."""
    if not math.isfinite(value):
        raise NumericalError(f"{name} is not finite")
    return value


def check_same_shape(first: npt.NDArray[Any], second: npt.NDArray[Any], name: str) -> None:
    """`InvalidConfigError` unless two coefficient arrays have one shape."""
    if first.shape != second.shape:
        raise InvalidConfigError(f"{name} shapes differ: true {first.shape}, estimate {second.shape}")


def norm_error(true: FloatArray, estimate: FloatArray, name: str) -> float:
    """``||true - estimate||`` (2-norm of a vector, Frobenius of a matrix), finite, shapes checked."""
    check_same_shape(true, estimate, name)
    return finite(float(np.linalg.norm(true - estimate)), f"{name} error")


@dataclass(frozen=True, eq=False)
class QuadraticForm:
    """A metric as a utility ``u(x) = constant + <linear, x> + 1/2 x^T hessian x`` (higher is better).

    ``x`` is the metric's rates flattened row by row: ``(n_classes,)``, or ``(n_groups * n_classes,)`` for
    a metric of group rates. A cost (``higher_is_better = False``) appears negated, so maximising ``u``
    always finds the best classifier; ``u`` is concave exactly when ``hessian`` is negative semi-definite.
    """

    linear: FloatArray
    hessian: FloatArray
    constant: float = 0.0

    def __call__(self, x: npt.ArrayLike) -> float:
        point = np.asarray(x, dtype=np.float64)
        return float(self.constant + self.linear @ point + 0.5 * point @ self.hessian @ point)


class MetricFamily:
    """One metric family: its value type, tag, and the operations programs need without ``isinstance``.

    Subclasses set ``name`` (equal to the value type's ``kind``), ``metric_type`` and ``error_names`` and
    implement the methods below; export cells work on the stored dict (`Metric.to_dict`), so an export
    shows exactly the stored numbers.
    """

    name: str = ""
    metric_type: type[Metric] = Metric
    #: Keys of `errors`, in report order.
    error_names: tuple[str, ...] = ()

    #: The `GENERATORS` whose draws this family offers.
    generators: tuple[str, ...] = ("authors",)

    def random(self, rng: RandomState, draw: Draw) -> Metric:
        """A random metric of this family following the paper's assumptions (Section 6).

        ``rng`` is a `numpy.random.Generator` or an integer seed for one.

        Raises
        ------
        InvalidConfigError
            If the family does not offer ``draw.generator``.
        """
        check_generator(draw.generator, self.generators)
        return self._random(as_generator(rng), draw)

    def _random(self, rng: np.random.Generator, draw: Draw) -> Metric:
        raise NotImplementedError

    def errors(self, true: Metric, estimate: Metric) -> dict[str, float]:
        """Coefficient errors between two metrics of this family, keyed by `error_names`.

        Raises
        ------
        InvalidConfigError
            If either metric is not of this family, or their shapes differ.
        NumericalError
            If an error is not finite.
        """
        for metric in (true, estimate):
            if type(metric) is not self.metric_type:
                raise InvalidConfigError(
                    f"expected two {self.metric_type.__name__}s, got a {type(metric).__name__}"
                )
        return self._coefficient_errors(true, estimate)

    def _coefficient_errors(self, true: Any, estimate: Any) -> dict[str, float]:
        raise NotImplementedError

    def n_groups(self, metric: Metric) -> int | None:
        """Number of groups whose rates the metric scores (``None``: one rate vector, no groups)."""
        return None

    def quadratic_form(self, metric: Metric) -> QuadraticForm | None:
        """``metric`` as a quadratic utility of its flattened rates, or ``None`` when it is not quadratic.

        The optimiser of `elicitation.optimal` solves quadratic metrics exactly (when concave) and
        searches the others locally.
        """
        return None

    def export_columns(self, class_names: Sequence[str], group_names: Sequence[str]) -> list[str]:
        """The study export's coefficient columns for this family, in order."""
        raise NotImplementedError

    def export_cells(
        self, data: Mapping[str, Any], class_names: Sequence[str], group_names: Sequence[str]
    ) -> dict[str, float]:
        """One export row's coefficient cells from a stored metric dict (`Metric.to_dict`)."""
        raise NotImplementedError

    def decode(self, data: Mapping[str, Any]) -> Metric:
        """`Metric.from_dict` restricted to this family."""
        return self.metric_type.from_dict(data)

    def panel_vector(self, metric: Metric) -> FloatArray:
        """The coefficients a panel averages (`elicitation.panel`), flattened into one vector.

        The metric's value is linear in them (in the paper's normalisation), so the mean of the members'
        vectors is a metric that scores every classifier by the members' average score; `from_panel_vector`
        turns such a mean back into a metric of this family.
        """
        raise NotImplementedError

    def panel_features(self, rates: FloatArray, like: Metric) -> FloatArray:
        """Features of a batch of rates whose product with a `panel_vector` is that metric's value.

        ``rates`` has shape ``(n, n_classes)`` (or ``(n, n_groups, n_classes)`` for group metrics); the
        result ``(n, len(panel_vector))`` scores many metrics on many rates in one matrix product, and
        ``panel_features(rates, m) @ panel_vector(m)`` equals ``m`` on each rate. ``like`` supplies what
        the members share (the group prevalences).
        """
        raise NotImplementedError

    def from_panel_vector(self, vector: FloatArray, like: Metric) -> Metric:
        """The metric of a (weighted) mean of `panel_vector` s, in this family's normalisation.

        ``like`` is one of the members: it supplies what the members share and the vector does not carry
        (shape, group prevalences).

        Raises
        ------
        InvalidConfigError
            If the mean has no direction (the members' metrics cancel out).
        """
        raise NotImplementedError

    def check_panel(self, metrics: Sequence[Metric]) -> None:
        """`InvalidConfigError` unless ``metrics`` are of this family and can be averaged (same shapes)."""
        first = metrics[0]
        for metric in metrics:
            if type(metric) is not self.metric_type:
                expected, got = self.metric_type.__name__, type(metric).__name__
                raise InvalidConfigError(f"a panel's metrics must all be {expected}s, got a {got}")
            if metric.n_classes != first.n_classes or self.n_groups(metric) != self.n_groups(first):
                raise InvalidConfigError("a panel's metrics must score the same classes and groups")
