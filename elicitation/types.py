"""Frozen value types shared by every elicitor: queries, spheres, metrics and results.

Rates follow the paper (Section 2): ``r[i] = P(h = i | Y = i)`` for a ``k``-class problem, so a rate
vector has shape ``(n_classes,)``; fairness queries carry one rate vector per group, shape
``(n_groups, n_classes)``. Metrics are scale invariant, so every metric class stores its coefficients in
the paper's normalisation and exposes ``prefers(first, second)``, the noise-free oracle answer.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from .confusion import confusion_from_labels, rates_from_confusion
from .errors import InvalidAnswerError, InvalidConfigError, NumericalError

__all__ = [
    "ASYMMETRY_ATOL",
    "NSD_ATOL",
    "TAU_ATOL",
    "Elicitation",
    "Elicitor",
    "Embedding",
    "FairQuadraticMetric",
    "FloatArray",
    "ImperceptibleError",
    "LinearMetric",
    "Metric",
    "Oracle",
    "QuadraticMetric",
    "Query",
    "RandomState",
    "SearchStep",
    "Sphere",
    "as_generator",
    "as_rate_array",
    "ask",
    "ask_step",
    "check_tau",
    "pair_index",
    "plain_rates",
    "trusted_query",
]

FloatArray = npt.NDArray[np.float64]
#: What the public API accepts wherever randomness is needed: a Generator, or an integer seed for one.
RandomState = np.random.Generator | int
#: Places a point of an elicitor's own rate space (a list of floats) into the space its queries compare,
#: e.g. fair QPME's fairness profiles; the result must be a fresh float64 array nobody else writes to.
Embedding = Callable[[list[float]], FloatArray]

#: Largest |B - B^T| entry accepted as "symmetric" (rounding from user input or reconstruction).
ASYMMETRY_ATOL = 1e-8
#: Largest positive eigenvalue accepted as "negative semi-definite".
NSD_ATOL = 1e-9
#: Coefficient norms below this are treated as zero (no direction to normalise).
_ZERO_NORM = 1e-12
#: Largest change by re-normalisation that `Metric.from_dict` treats as rounding of a stored metric.
_ROUNDING_ATOL = 1e-12
#: Arrays up to this size are checked on plain floats: a ufunc + reduce costs more than the arithmetic.
_SMALL_ARRAY = 64
#: Largest deviation of a ``tau`` column sum from one that is accepted (rounded user input).
TAU_ATOL = 1e-6


def as_rate_array(values: npt.ArrayLike, name: str, *, ndim: int | None = None) -> FloatArray:
    """Return a read-only float copy of ``values``, rejecting non-finite entries and wrong ranks."""
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"{name} must be an array of numbers: {exc}") from exc
    if ndim is not None and array.ndim != ndim:
        raise InvalidConfigError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    # A sum of floats is finite only if every term is (an overflowing sum of finite terms falls back to the
    # exact check); for tiny arrays this is several times cheaper than isfinite().all().
    small_and_finite = array.size <= _SMALL_ARRAY and math.isfinite(sum(array.ravel().tolist()))
    if not small_and_finite and not np.isfinite(array).all():
        raise InvalidConfigError(f"{name} must contain only finite numbers")
    array.setflags(write=False)
    return array


def as_generator(rng: object, name: str = "rng") -> np.random.Generator:
    """``rng`` itself if it is a `numpy.random.Generator`, else a fresh generator seeded with the integer.

    Like scikit-learn's ``random_state``, an integer seed gives reproducible draws; unlike it, ``None`` is
    refused, because the core takes its randomness only from an explicit seed (no global or OS entropy).

    Raises
    ------
    InvalidConfigError
        If ``rng`` is neither a Generator nor a non-negative integer.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool) and rng >= 0:
        return np.random.default_rng(int(rng))
    raise InvalidConfigError(
        f"{name} must be a numpy.random.Generator or a non-negative integer seed, got {rng!r}"
    )


@dataclass(frozen=True, eq=False)
class Query:
    """One pairwise comparison: is ``first`` preferred to ``second``?

    ``first`` and ``second`` are rate arrays, ``(n_classes,)`` or ``(n_groups, n_classes)`` for fairness.
    ``search`` names the sub-search that asked it (e.g. ``"qpme/z2/lpme"``), ``kind`` the role of the
    comparison (``"orthant"``, ``"shrink"``, ``"pivot"``, ...), ``coordinate`` the angle or coordinate being
    searched and ``step`` its position within that search; they exist for display and audit only.
    """

    first: FloatArray
    second: FloatArray
    search: str = ""
    kind: str = ""
    coordinate: int | None = None
    step: int = 0

    def __post_init__(self) -> None:
        first, second = self.first, self.second
        if (
            type(first) is np.ndarray
            and type(second) is np.ndarray
            and first.dtype == np.float64
            and second.dtype == np.float64
            and first.shape == second.shape
            and first.size <= _SMALL_ARRAY
            and math.isfinite(sum(first.ravel().tolist()) + sum(second.ravel().tolist()))
        ):
            # Fast path for what elicitors pass (small float arrays): the same read-only finite copies as
            # below, at about half the cost. Anything else, including every error, takes the general path.
            # An array that is already read-only and owns its memory cannot change under us: share it.
            if first.flags.writeable or not first.flags.owndata:
                first = first.copy()
                first.setflags(write=False)
            if second.flags.writeable or not second.flags.owndata:
                second = second.copy()
                second.setflags(write=False)
            object.__setattr__(self, "first", first)
            object.__setattr__(self, "second", second)
            return
        first = as_rate_array(first, "first")
        second = as_rate_array(second, "second")
        if first.shape != second.shape:
            raise InvalidConfigError(
                f"first and second must have the same shape, got {first.shape} and {second.shape}"
            )
        object.__setattr__(self, "first", first)
        object.__setattr__(self, "second", second)

    def matches(self, other: Query, atol: float) -> bool:
        """True when both rate arrays agree with ``other``'s within ``atol``."""
        # Plain max-abs differences: np.allclose costs ~10x more and replay calls this once per answer.
        if self.first.shape != other.first.shape or self.second.shape != other.second.shape:
            return False
        if self.first.size <= _SMALL_ARRAY:
            # The same max-abs gap on plain floats, about 4x cheaper for rate-sized arrays.
            mine: list[float] = self.first.ravel().tolist() + self.second.ravel().tolist()
            theirs: list[float] = other.first.ravel().tolist() + other.second.ravel().tolist()
            small_gap: float = max(map(abs, map(operator.sub, mine, theirs)))
            return small_gap <= atol
        gap = max(
            float(np.abs(self.first - other.first).max()), float(np.abs(self.second - other.second).max())
        )
        return gap <= atol


def trusted_query(
    first: FloatArray, second: FloatArray, search: str, kind: str, coordinate: int | None, step: int
) -> Query:
    """A `Query` of arrays an elicitor of this package has just computed, without re-validating them.

    For the hot paths of the built-in elicitors only (replaying a long log builds thousands of queries):
    ``first`` and ``second`` must be finite float64 arrays of one shape that nobody else will write. They
    are frozen in place instead of copied, and the dataclass ``__init__`` is skipped (about 8x cheaper).
    """
    first.setflags(write=False)
    second.setflags(write=False)
    query = object.__new__(Query)
    query.__dict__.update(
        first=first, second=second, search=search, kind=kind, coordinate=coordinate, step=step
    )
    return query


def plain_rates(values: list[float]) -> FloatArray:
    """The identity `Embedding`: the point itself, as a float64 array."""
    return np.array(values, np.float64)


def _largest_radius(center: FloatArray) -> float:
    return float(np.min(np.minimum(center, 1.0 - center)))


@dataclass(frozen=True, eq=False)
class Sphere:
    """A ball of rates ``{r : ||r - center|| <= radius}`` that must lie inside the unit cube."""

    center: FloatArray
    radius: float

    def __post_init__(self) -> None:
        center = as_rate_array(self.center, "center", ndim=1)
        if center.shape[0] < 2:
            raise InvalidConfigError(f"center must have at least 2 entries (classes), got {center.shape[0]}")
        radius = float(self.radius)
        if not math.isfinite(radius) or radius <= 0.0:
            raise InvalidConfigError(f"radius must be a positive finite number, got {self.radius!r}")
        # Rounding is monotone, so the extreme entries decide (plain floats: fair QPME builds ~100 spheres).
        entries = center.tolist()
        if min(entries) - radius < 0.0 or max(entries) + radius > 1.0:
            raise InvalidConfigError(
                f"radius {radius:g} around center {np.round(center, 6).tolist()} leaves the unit cube "
                f"[0, 1]^k; the largest allowed radius here is {_largest_radius(center):g}"
            )
        object.__setattr__(self, "center", center)
        object.__setattr__(self, "radius", radius)

    @property
    def n_classes(self) -> int:
        """Dimension ``k`` of the rate space."""
        return int(self.center.shape[0])

    def contains(self, rates: npt.ArrayLike, atol: float = 1e-9) -> bool:
        """True when ``rates`` lies in the closed ball (up to ``atol``)."""
        return float(np.linalg.norm(np.asarray(rates, dtype=np.float64) - self.center)) <= self.radius + atol

    @classmethod
    def around_uniform(cls, n_classes: int, radius: float) -> Sphere:
        """The sphere at the uniform random classifier's rate ``o = (1/k, ..., 1/k)``."""
        if n_classes < 2:
            raise InvalidConfigError(f"n_classes must be at least 2, got {n_classes}")
        return cls(np.full(n_classes, 1.0 / n_classes), radius)


def _normalised(vector: FloatArray, name: str) -> FloatArray:
    norm = float(np.linalg.norm(vector))
    if norm < _ZERO_NORM:
        raise InvalidConfigError(f"{name} must not be zero: a metric needs a direction")
    result = vector / norm
    result.setflags(write=False)
    return result


def _check_symmetric(matrix: FloatArray, name: str) -> FloatArray:
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise InvalidConfigError(f"{name} must be a square matrix, got shape {matrix.shape}")
    if not np.allclose(matrix, matrix.T, rtol=0.0, atol=ASYMMETRY_ATOL):
        raise InvalidConfigError(f"{name} must be symmetric (|{name} - {name}^T| <= {ASYMMETRY_ATOL:g})")
    symmetric = (matrix + matrix.T) / 2.0
    return symmetric


class Metric:
    """Common interface of the metric classes: evaluate rates, answer a query as an exact oracle, and
    round-trip through a JSON-safe dict (`to_dict` / `from_dict`, the one metric codec).

    A subclass names its wire tag with ``kind`` (the dict's ``"type"``); defining the class registers the
    tag, so `Metric.from_dict` decodes every metric family of this package.
    """

    #: Fair metrics are costs (lower is better); the others are utilities.
    higher_is_better: bool = True
    #: The ``"type"`` tag of `to_dict`; empty on the abstract base.
    kind: ClassVar[str] = ""
    _by_kind: ClassVar[dict[str, type[Metric]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.kind and cls.kind not in Metric._by_kind:
            Metric._by_kind[cls.kind] = cls

    def __call__(self, rates: npt.ArrayLike) -> float:
        raise NotImplementedError

    def prefers(self, first: npt.ArrayLike, second: npt.ArrayLike) -> bool:
        """The noise-free oracle answer (Definition 1): is ``first`` strictly better than ``second``?"""
        a, b = self(first), self(second)
        return a > b if self.higher_is_better else a < b

    def value_gap(self, first: npt.ArrayLike, second: npt.ArrayLike) -> float:
        """``|phi(first) - phi(second)|``, the quantity Definition 4's noise threshold acts on."""
        return abs(self(first) - self(second))

    @property
    def n_classes(self) -> int:
        """Number of classes ``k`` whose rates the metric scores."""
        raise NotImplementedError

    def _n_groups(self) -> int | None:
        """Number of groups whose rates the metric scores (``None``: one rate vector, no groups)."""
        return None

    def from_confusion(self, confusion: npt.ArrayLike) -> float:
        """The metric's value on the rates of a confusion matrix (rows true class, columns prediction).

        Parameters
        ----------
        confusion : array_like, shape (n_classes, n_classes), or (n_groups, n_classes, n_classes) for fair
            metrics
            Counts or proportions; only each row's share on the diagonal matters (Section 2).

        Raises
        ------
        InvalidConfigError
            If the shape does not fit the metric, an entry is negative or a class has no samples.
        """
        groups = self._n_groups()
        k = self.n_classes
        expected = (k, k) if groups is None else (groups, k, k)
        if np.shape(confusion) != expected:
            raise InvalidConfigError(
                f"confusion must have shape {expected} for this metric, got {np.shape(confusion)}"
            )
        return self(rates_from_confusion(confusion))

    def score(
        self,
        y_true: npt.ArrayLike,
        y_pred: npt.ArrayLike,
        *,
        sensitive_features: npt.ArrayLike | None = None,
        labels: npt.ArrayLike | None = None,
        groups: npt.ArrayLike | None = None,
        sample_weight: npt.ArrayLike | None = None,
    ) -> float:
        """The metric's value for predictions: rates ``r_i = P(h = i | Y = i)`` counted from labels.

        Parameters
        ----------
        y_true, y_pred : array_like, shape (n_samples,)
            True and predicted labels.
        sensitive_features : array_like, shape (n_samples,), optional
            The group of every sample, as in fairlearn; required by fair metrics (rates per group,
            Definition 3) and refused by the others.
        labels : array_like, shape (n_classes,), optional
            The class order of the metric's coefficients; by default the sorted distinct values of
            ``y_true`` and ``y_pred``, which must then number exactly ``n_classes``.
        groups : array_like, shape (n_groups,), optional
            The group order of a fair metric (rows of its ``tau``); by default the sorted distinct values
            of ``sensitive_features``.
        sample_weight : array_like, shape (n_samples,), optional
            Non-negative weight of every sample.

        Returns
        -------
        float
            Higher is better unless ``higher_is_better`` is false (fair metrics are costs).

        Raises
        ------
        InvalidConfigError
            On length or shape mismatches, labels or groups that do not match the metric's classes and
            groups, or a class (in some group) without samples.
        """
        k, m = self.n_classes, self._n_groups()
        if m is None and (sensitive_features is not None or groups is not None):
            raise InvalidConfigError(
                f"sensitive_features are for fair metrics; a {type(self).__name__} scores one rate vector"
            )
        if m is not None and sensitive_features is None:
            raise InvalidConfigError(
                f"a fair metric scores rates per group: pass sensitive_features (the group of every "
                f"sample, {m} distinct groups)"
            )
        if labels is not None and np.shape(labels) != (k,):
            raise InvalidConfigError(
                f"labels must list the metric's {k} classes in coefficient order, got {np.shape(labels)}"
            )
        if groups is not None and np.shape(groups) != (m,):
            raise InvalidConfigError(
                f"groups must list the metric's {m} groups in order, got shape {np.shape(groups)}"
            )
        confusion = confusion_from_labels(
            y_true,
            y_pred,
            labels=labels,
            sensitive_features=sensitive_features,
            groups=groups,
            sample_weight=sample_weight,
        )
        if confusion.shape[-1] != k:
            found = "sorted distinct values of y_true and y_pred"
            raise InvalidConfigError(
                f"the metric scores {k} classes but the {found} are {confusion.shape[-1]}; pass labels= "
                "(the classes in coefficient order)"
            )
        if m is not None and confusion.shape[0] != m:
            raise InvalidConfigError(
                f"the metric scores {m} groups but sensitive_features has {confusion.shape[0]} distinct "
                "values; pass groups= (the groups in the order of the metric's tau)"
            )
        return self.from_confusion(confusion)

    def as_scorer(self, *, labels: npt.ArrayLike | None = None) -> Any:
        """A scikit-learn scorer (`sklearn.metrics.make_scorer`) scoring predictions with `score`.

        Use it as ``scoring=`` of ``cross_val_score``, ``GridSearchCV`` and the like. scikit-learn is
        imported only when this is called (the core itself needs only numpy and scipy). Pass ``labels``
        (the classes in coefficient order) whenever a fold might lack a class.

        A fair metric's scorer needs the group of every sample: it is requested through scikit-learn's
        metadata routing, which must be on (``sklearn.set_config(enable_metadata_routing=True)``); then
        pass ``params={"sensitive_features": groups}`` to ``cross_val_score`` (or
        ``sensitive_features=groups`` to ``GridSearchCV.fit``) and scikit-learn hands each split its
        share. Fair metrics are costs, so the scorer reports ``-cost`` (greater is better), as
        scikit-learn's loss scorers do.

        Raises
        ------
        InvalidConfigError
            If scikit-learn is not installed, or for a fair metric when metadata routing is off.
        """
        try:
            import sklearn  # type: ignore[import-untyped]
            from sklearn.metrics import make_scorer  # type: ignore[import-untyped]
        except ImportError as exc:
            raise InvalidConfigError("as_scorer needs scikit-learn: pip install scikit-learn") from exc
        score = _ScoreWithLabels(self, None if labels is None else np.asarray(labels))
        scorer = make_scorer(score, greater_is_better=self.higher_is_better)
        if self._n_groups() is not None:
            if not sklearn.get_config().get("enable_metadata_routing", False):
                raise InvalidConfigError(
                    "a fair metric's scorer needs each sample's group: turn on scikit-learn's metadata "
                    "routing with sklearn.set_config(enable_metadata_routing=True), then pass "
                    'params={"sensitive_features": groups} to cross_val_score'
                )
            scorer = scorer.set_score_request(sensitive_features=True)
        return scorer

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickle through the codec (exact floats): scorers cross process boundaries in parallel
        # cross-validation, and the fair metric's read-only mapping cannot be pickled as it is.
        return (Metric.from_dict, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        """The metric as a JSON-safe dict tagged with ``"type"`` (coefficients as nested float lists).

        Floats survive a JSON round trip exactly, so ``from_dict(to_dict())`` gives the same coefficients.
        """
        raise NotImplementedError

    @classmethod
    def from_dict(cls, data: object) -> Metric:
        """Inverse of `to_dict` for every metric family; called on a subclass, only that family is accepted.

        Raises
        ------
        InvalidConfigError
            Naming the missing or bad field, or the unknown ``"type"``.
        """
        if not isinstance(data, Mapping):
            raise InvalidConfigError("a metric must be a JSON object with a 'type' field")
        kind = data.get("type")
        family = Metric._by_kind.get(kind) if isinstance(kind, str) else None
        if family is None or not issubclass(family, cls):
            tags = [repr(tag) for tag, known in Metric._by_kind.items() if issubclass(known, cls)]
            listed = " or ".join([", ".join(tags[:-1]), tags[-1]] if len(tags) > 1 else tags)
            raise InvalidConfigError(f"metric type must be {listed}, got {kind!r}")
        try:
            return family._from_fields(data)
        except KeyError as exc:
            raise InvalidConfigError(f"a {kind} metric needs the field {exc.args[0]!r}") from None
        except (TypeError, ValueError) as exc:
            raise InvalidConfigError(f"bad {kind} metric: {exc}") from None

    @classmethod
    def _from_fields(cls, data: Mapping[str, Any]) -> Metric:
        """Build the metric from `to_dict`'s fields; `KeyError` for a missing one."""
        raise NotImplementedError

    def _keep_stored(self, **stored: FloatArray) -> None:
        """Adopt stored coefficients that this metric's normalisation changed only by rounding.

        Normalising an already normalised vector may move its last bits; keeping the stored values makes
        ``from_dict(to_dict(m))`` return exactly ``m``'s coefficients.
        """
        for name, value in stored.items():
            current = getattr(self, name)
            if value.shape == current.shape and np.allclose(value, current, rtol=0.0, atol=_ROUNDING_ATOL):
                kept = np.array(value, dtype=np.float64)
                kept.setflags(write=False)
                object.__setattr__(self, name, kept)


@dataclass(frozen=True)
class _ScoreWithLabels:
    """`Metric.score` with the class order fixed: the score function of `Metric.as_scorer` (picklable)."""

    metric: Metric
    labels: npt.NDArray[Any] | None

    @property
    def __name__(self) -> str:
        # scikit-learn names a scorer after its score function.
        return f"{self.metric.kind or type(self.metric).__name__}_metric_score"

    def __call__(self, y_true: Any, y_pred: Any, **metadata: Any) -> float:
        return self.metric.score(y_true, y_pred, labels=self.labels, **metadata)


@dataclass(frozen=True, eq=False)
class LinearMetric(Metric):
    """``phi(r) = <a, r>`` with ``||a||_2 = 1`` (Section 2.2)."""

    a: FloatArray
    kind: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        object.__setattr__(self, "a", _normalised(as_rate_array(self.a, "a", ndim=1), "a"))

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.kind, "a": self.a.tolist()}

    @classmethod
    def _from_fields(cls, data: Mapping[str, Any]) -> LinearMetric:
        a = np.asarray(data["a"], dtype=np.float64)
        metric = cls(a)
        metric._keep_stored(a=a)
        return metric

    @property
    def n_classes(self) -> int:
        return int(self.a.shape[0])

    def __call__(self, rates: npt.ArrayLike) -> float:
        r = np.asarray(rates, dtype=np.float64)
        return float(self.a @ r)


@dataclass(frozen=True, eq=False)
class QuadraticMetric(Metric):
    """``phi(r) = <a, r> + 1/2 r^T B r`` with ``B`` NSD and ``||a||^2 + ||B||_F^2 = 1`` (Definition 2).

    ``require_nsd=False`` admits indefinite ``B`` (the general-rates and cubic variants need it).
    """

    a: FloatArray
    B: FloatArray
    require_nsd: bool = True
    kind: ClassVar[str] = "quadratic"

    def __post_init__(self) -> None:
        a = as_rate_array(self.a, "a", ndim=1)
        B = _check_symmetric(as_rate_array(self.B, "B", ndim=2), "B")
        if B.shape[0] != a.shape[0]:
            raise InvalidConfigError(f"B must be {a.shape[0]}x{a.shape[0]} to match a, got {B.shape}")
        if self.require_nsd and float(np.max(np.linalg.eigvalsh(B))) > NSD_ATOL:
            raise InvalidConfigError("B must be negative semi-definite (largest eigenvalue <= 0)")
        scale = float(np.sqrt(a @ a + np.sum(B * B)))
        if scale < _ZERO_NORM:
            raise InvalidConfigError("a and B must not both be zero")
        a, B = a / scale, B / scale
        a.setflags(write=False)
        B.setflags(write=False)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "B", B)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "a": self.a.tolist(),
            "B": self.B.tolist(),
            "require_nsd": self.require_nsd,
        }

    @classmethod
    def _from_fields(cls, data: Mapping[str, Any]) -> QuadraticMetric:
        a = np.asarray(data["a"], dtype=np.float64)
        B = np.asarray(data["B"], dtype=np.float64)
        metric = cls(a, B, require_nsd=bool(data.get("require_nsd", True)))
        if np.array_equal(B, B.T):
            metric._keep_stored(a=a, B=B)
        return metric

    @property
    def n_classes(self) -> int:
        return int(self.a.shape[0])

    def gradient(self, rates: npt.ArrayLike) -> FloatArray:
        """``a + B r``; at ``o`` this is the paper's ``d`` (Equation 4)."""
        result: FloatArray = self.a + self.B @ np.asarray(rates, dtype=np.float64)
        return result

    def __call__(self, rates: npt.ArrayLike) -> float:
        r = np.asarray(rates, dtype=np.float64)
        return float(self.a @ r + 0.5 * r @ self.B @ r)


def pair_index(n_groups: int) -> tuple[tuple[int, int], ...]:
    """The group pairs ``(u, v)`` with ``u < v`` in the fixed order used for ``B_pairs``."""
    return tuple((u, v) for u in range(n_groups) for v in range(u + 1, n_groups))


def check_tau(tau: npt.ArrayLike, *, n_groups: int | None = None, n_classes: int | None = None) -> FloatArray:
    """The one validator of group prevalences ``tau[g, i] = P(G = g | Y = i)`` (Definition 3).

    Every fair elicitor, the fair metric and the web app's study settings check ``tau`` here.

    Parameters
    ----------
    tau : array_like, shape (n_groups, n_classes)
        Non-negative, every column (class) summing to one within ``TAU_ATOL``.
    n_groups, n_classes : int, optional
        The shape the caller expects; without ``n_groups`` any number of groups ``>= 2`` is accepted.

    Returns
    -------
    numpy.ndarray
        A read-only float copy.

    Raises
    ------
    InvalidConfigError
        Naming what is wrong: shape, number of groups, a negative entry or a column not summing to one.
    """
    values = as_rate_array(tau, "tau", ndim=2)
    m, k = values.shape
    if n_groups is not None and values.shape != (n_groups, n_classes):
        raise InvalidConfigError(
            f"tau must have shape ({n_groups}, {n_classes}) (groups x classes), got {values.shape}"
        )
    if m < 2:
        raise InvalidConfigError(f"tau must describe at least 2 groups, got {m}")
    if n_classes is not None and k != n_classes:
        raise InvalidConfigError(f"tau must have {n_classes} columns (classes), got {k}")
    if np.any(values < 0.0):
        raise InvalidConfigError("tau must be non-negative: tau[g, i] = P(G = g | Y = i) lies in [0, 1]")
    sums = values.sum(axis=0)
    if np.any(np.abs(sums - 1.0) > TAU_ATOL):
        raise InvalidConfigError(
            f"every column of tau must sum to one (within {TAU_ATOL:g}): tau[:, i] is the distribution of "
            f"groups within class i, a column summing to one; got column sums {np.round(sums, 6).tolist()}"
        )
    return values


@dataclass(frozen=True, eq=False)
class FairQuadraticMetric(Metric):
    """The fair cost of Definition 3 (lower is better).

    ``phi(r^{1:m}) = (1 - lam) <a, 1 - r> + lam/2 sum_{u<v} (r^u - r^v)^T B^{uv} (r^u - r^v)``
    with overall rates ``r = sum_g tau[g] * r^g``, ``a >= 0``, ``||a||_2 = 1``, ``B^{uv}`` PSD and
    ``1/2 sum ||B^{uv}||_F = 1``. ``B_pairs`` maps ``(u, v)`` (``u < v``, 0-based) to ``(k, k)`` matrices;
    ``tau`` has shape ``(n_groups, n_classes)``, ``tau[g, i] = P(G = g | Y = i)``, columns summing to one.
    """

    a: FloatArray
    B_pairs: Mapping[tuple[int, int], FloatArray]
    lam: float
    tau: FloatArray
    higher_is_better = False
    kind: ClassVar[str] = "fair_quadratic"

    def __post_init__(self) -> None:
        a = as_rate_array(self.a, "a", ndim=1)
        if np.any(a < -NSD_ATOL):
            raise InvalidConfigError("a (misclassification costs) must be non-negative")
        a = _normalised(np.clip(a, 0.0, None), "a")
        tau = check_tau(self.tau, n_classes=a.shape[0])
        m, k = tau.shape
        expected = pair_index(m)
        if set(self.B_pairs) != set(expected):
            raise InvalidConfigError(f"B_pairs must have exactly the keys {list(expected)}")
        pairs: dict[tuple[int, int], FloatArray] = {}
        for key in expected:
            B = _check_symmetric(as_rate_array(self.B_pairs[key], f"B_pairs[{key}]", ndim=2), f"B{key}")
            if B.shape != (k, k):
                raise InvalidConfigError(f"B_pairs[{key}] must be {k}x{k}, got {B.shape}")
            if float(np.min(np.linalg.eigvalsh(B))) < -NSD_ATOL:
                raise InvalidConfigError(f"B_pairs[{key}] must be positive semi-definite")
            pairs[key] = B
        total = 0.5 * sum(float(np.linalg.norm(B)) for B in pairs.values())
        if total < _ZERO_NORM:
            raise InvalidConfigError("B_pairs must not all be zero")
        for key, B in pairs.items():
            scaled = B / total
            scaled.setflags(write=False)
            pairs[key] = scaled
        lam = float(self.lam)
        if not 0.0 <= lam <= 1.0:
            raise InvalidConfigError(f"lam must lie in [0, 1], got {self.lam!r}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "tau", tau)
        object.__setattr__(self, "B_pairs", MappingProxyType(pairs))
        object.__setattr__(self, "lam", lam)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "a": self.a.tolist(),
            "B_pairs": [{"u": u, "v": v, "B": B.tolist()} for (u, v), B in self.B_pairs.items()],
            "lam": self.lam,
            "tau": self.tau.tolist(),
        }

    @classmethod
    def _from_fields(cls, data: Mapping[str, Any]) -> FairQuadraticMetric:
        pairs = {
            (int(item["u"]), int(item["v"])): np.asarray(item["B"], dtype=np.float64)
            for item in data["B_pairs"]
        }
        a = np.asarray(data["a"], dtype=np.float64)
        metric = cls(
            a=a, B_pairs=pairs, lam=float(data["lam"]), tau=np.asarray(data["tau"], dtype=np.float64)
        )
        metric._keep_stored(a=a)
        if all(np.array_equal(B, B.T) for B in pairs.values()):
            scaled = dict(metric.B_pairs)
            for key, B in pairs.items():
                if B.shape == scaled[key].shape and np.allclose(
                    B, scaled[key], rtol=0.0, atol=_ROUNDING_ATOL
                ):
                    kept = np.array(B, dtype=np.float64)
                    kept.setflags(write=False)
                    scaled[key] = kept
            object.__setattr__(metric, "B_pairs", MappingProxyType(scaled))
        return metric

    @property
    def n_classes(self) -> int:
        return int(self.a.shape[0])

    @property
    def n_groups(self) -> int:
        return int(self.tau.shape[0])

    def _n_groups(self) -> int:
        return self.n_groups

    def overall_rates(self, group_rates: npt.ArrayLike) -> FloatArray:
        """``r = sum_g tau^g * r^g``, shape ``(n_classes,)``."""
        result: FloatArray = np.sum(self.tau * np.asarray(group_rates, dtype=np.float64), axis=0)
        return result

    def violation(self, group_rates: npt.ArrayLike) -> float:
        """The fairness-violation term ``1/2 sum (r^u - r^v)^T B^{uv} (r^u - r^v)``."""
        r = np.asarray(group_rates, dtype=np.float64)
        return float(sum(0.5 * (r[u] - r[v]) @ B @ (r[u] - r[v]) for (u, v), B in self.B_pairs.items()))

    def __call__(self, rates: npt.ArrayLike) -> float:
        r = np.asarray(rates, dtype=np.float64)
        if r.shape != self.tau.shape:
            raise InvalidConfigError(
                f"rates must have shape {self.tau.shape} (groups x classes), got {r.shape}"
            )
        error = float(self.a @ (1.0 - self.overall_rates(r)))
        return (1.0 - self.lam) * error + self.lam * self.violation(r)


M = TypeVar("M")
R = TypeVar("R")


@dataclass(frozen=True, eq=False)
class Elicitation(Generic[M]):
    """What an elicitor returns: the elicited ``metric``, how many queries it asked, and diagnostics.

    ``log`` holds ``(query, answer)`` pairs; elicitors leave it empty and the drivers (`run`, `replay`)
    fill it. ``details`` carries algorithm-specific intermediate results (slopes, pivots, intervals).
    """

    metric: M
    num_queries: int
    details: Mapping[str, Any] = field(default_factory=dict)
    log: tuple[tuple[Query, bool], ...] = ()


class Elicitor(Generator[Query, bool, R]):
    """A generator of queries with a known query budget; composes with ``yield from``.

    Public entry points validate their arguments eagerly, then wrap their private generator body in this
    class so that callers can read ``max_queries`` (for progress bars and budget checks) and ``name``.
    """

    def __init__(self, body: Generator[Query, bool, R], *, name: str, max_queries: int) -> None:
        self._body = body
        self.name = name
        self.max_queries = max_queries

    def send(self, value: bool) -> Query:
        try:
            return self._body.send(value)
        except (np.linalg.LinAlgError, FloatingPointError, ZeroDivisionError) as exc:
            # The maths of some step failed: report it as the core's numerical failure, never as numpy's.
            raise NumericalError(f"{self.name}: the estimate could not be computed ({exc})") from exc

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Query:
        if val is None and tb is None:
            return self._body.throw(typ)
        return self._body.throw(typ, val, tb)

    def close(self) -> None:
        self._body.close()

    def __iter__(self) -> Elicitor[R]:
        return self

    def __next__(self) -> Query:
        return self.send(None)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"Elicitor({self.name!r}, max_queries={self.max_queries})"


def ask(query: Query) -> Generator[Query, bool, bool]:
    """Yield ``query`` and return the validated answer (``True``: first preferred).

    Every elicitor obtains answers through this helper so that a non-boolean ``send`` fails loudly.
    """
    answer = yield query
    if not isinstance(answer, (bool, np.bool_)):
        raise InvalidAnswerError(f"answers must be booleans (True: first preferred), got {answer!r}")
    return bool(answer)


class ImperceptibleError(Exception):
    """Thrown into an elicitor at a `SearchStep` a chart cannot show as a question of its own.

    `elicitation.display.shown` throws it when the step's two classifiers would look identical to the
    participant: the search has reached the display's resolution and ends there, keeping what it has.
    """


class SearchStep(Query):
    """A query refining a search (a bisection step) that may be refused with `ImperceptibleError`.

    Only `ask_step` makes them, inside searches that stop cleanly when refused; every other query (orthant
    signs, trivial probes) must be answered.
    """


def ask_step(query: Query) -> Generator[Query, bool, bool | None]:
    """Ask one step of a search: the answer, or ``None`` when the display refused it (`ImperceptibleError`).

    A search that gets ``None`` stops refining and keeps its current bracket: its tolerance is then what
    the charts can show rather than its own ``epsilon``.
    """
    step = object.__new__(SearchStep)
    step.__dict__.update(query.__dict__)
    try:
        return (yield from ask(step))
    except ImperceptibleError:
        return None


Oracle = Callable[[FloatArray, FloatArray], bool]
