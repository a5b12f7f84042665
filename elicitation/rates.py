"""Rate vectors and confusion matrices: the query-space interface and its synthetic implementation.

Theory of operation
-------------------
The elicitors work on *rates* (paper, Section 2, Equation 1): ``r_i = P(h(X) = i | Y = i)``. A person,
however, is shown a classifier as a confusion matrix: how many of 100 people of each true class end up
in each predicted class. A *query space* connects the two. It knows the class priors ``pi_i = P(Y = i)``
(per group for fairness studies, ``pi^g_i = P(Y = i | G = g)``), the sphere the queries live in, and
turns any queried rate vector into the confusion matrix of a classifier that achieves it:

``C[i, i] = 100 * pi_i * r_i`` (the diagonal is fixed by the rates), and the remaining mass
``100 * pi_i * (1 - r_i)`` of true class ``i`` is spread over the wrong predictions.

Where the misclassified mass goes is *not* determined by the rates when ``k > 2``. Real-data spaces
(``elicitation.lab.feasible``) take it from the classifier that realises the rates on held-out data.
`SyntheticSpace` uses a stated convention instead (``OFF_DIAGONAL_CONVENTION``): **the misclassified
mass of class i is spread evenly over the other k - 1 classes**,
``C[i, j] = 100 * pi_i * (1 - r_i) / (k - 1)`` for ``j != i``. This is exactly the confusion matrix of
the classifier that, on a person of class ``i``, predicts ``i`` with probability ``r_i`` and otherwise
picks one of the other classes uniformly at random; on a perfectly separable problem such a classifier
exists for every ``r`` in ``[0, 1]^k``, so every synthetic query is feasible.
For ``k = 2`` there is nothing to choose: the off-diagonal cell is forced.

Symbols
-------
=================  ==========================================
paper              code
=================  ==========================================
``k``              ``n_classes``
``m``              ``n_groups``
``r``, ``r^g``     ``rates`` (``(k,)`` or ``(m, k)``)
``o``              ``sphere.center`` (``(1/k, ..., 1/k)``)
``rho``            ``sphere.radius``
``P(Y = i)``       ``priors[i]`` (``priors[g, i]`` per group)
=================  ==========================================
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .confusion import confusion_from_labels, rates_from_confusion, rates_from_labels
from .errors import InvalidConfigError
from .types import FloatArray, Sphere, as_rate_array

__all__ = [
    "CONFUSION_TOTAL",
    "DEFAULT_SYNTHETIC_RADIUS",
    "OFF_DIAGONAL_CONVENTION",
    "PRIOR_SUM_ATOL",
    "RATE_ATOL",
    "QuerySpace",
    "SpaceBase",
    "SyntheticSpace",
    "check_rates",
    "confusion_from_labels",
    "confusion_from_rates",
    "rates_from_confusion",
    "rates_from_labels",
]

#: Every confusion matrix shown to a person describes this many people (per group).
CONFUSION_TOTAL = 100.0
#: The paper's default query-sphere radius (Section 6: rho = 0.2).
DEFAULT_SYNTHETIC_RADIUS = 0.2
#: Rates may leave [0, 1] by this much (rounding of sphere points) before they are rejected.
RATE_ATOL = 1e-9
#: Class priors must sum to one within this tolerance (they are then renormalised exactly).
PRIOR_SUM_ATOL = 1e-6
#: Prior rows summing to one within this are kept bit for bit (see `_check_priors`).
_EXACT_SUM_ATOL = 1e-12
#: The documented synthetic convention for the off-diagonal cells when k > 2.
OFF_DIAGONAL_CONVENTION = (
    "the misclassified mass of true class i, 100 * P(Y=i) * (1 - r_i), is spread evenly over the other "
    "k - 1 predicted classes"
)
_SYNTHETIC_FIELDS = frozenset(
    {"kind", "n_classes", "radius", "priors", "class_names", "n_groups", "group_names"}
)


@runtime_checkable
class QuerySpace(Protocol):
    """What a study needs to show queries to people (the contract every query space honours).

    ``priors`` has shape ``(n_classes,)`` or, with groups, ``(n_groups, n_classes)``; ``confusion`` maps
    rates of shape ``(n_classes,)`` / ``(n_groups, n_classes)`` to confusion matrices out of 100 of shape
    ``(n_classes, n_classes)`` / ``(n_groups, n_classes, n_classes)`` (rows true class, columns prediction).
    ``group_spheres`` holds one sphere per group, each inside that group's feasible set, for elicitors that
    ask each group in its own region (``(sphere,) * n_groups`` when the space has no such regions).
    """

    @property
    def n_classes(self) -> int: ...

    @property
    def n_groups(self) -> int: ...

    @property
    def class_names(self) -> tuple[str, ...]: ...

    @property
    def group_names(self) -> tuple[str, ...]: ...

    @property
    def sphere(self) -> Sphere: ...

    @property
    def group_spheres(self) -> tuple[Sphere, ...]: ...

    @property
    def priors(self) -> FloatArray: ...

    def confusion(self, rates: npt.ArrayLike) -> FloatArray: ...

    def to_dict(self) -> dict[str, Any]: ...


def check_rates(rates: npt.ArrayLike, shape: tuple[int, ...], name: str = "rates") -> FloatArray:
    """Validate a rate array: finite, of the given shape and inside ``[0, 1]`` (up to ``RATE_ATOL``).

    Parameters
    ----------
    rates : array_like
        Rates, ``(n_classes,)`` or ``(n_groups, n_classes)``.
    shape : tuple of int
        The shape the caller's space expects.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    numpy.ndarray
        A read-only float copy, clipped into ``[0, 1]``.

    Raises
    ------
    InvalidConfigError
        If the shape differs, an entry is not finite or lies outside ``[0, 1]``.
    """
    array = as_rate_array(rates, name)
    if array.shape != shape:
        raise InvalidConfigError(f"{name} must have shape {shape}, got {array.shape}")
    if np.any(array < -RATE_ATOL) or np.any(array > 1.0 + RATE_ATOL):
        raise InvalidConfigError(f"{name} must lie in [0, 1] (they are probabilities), got {array.tolist()}")
    clipped = np.clip(array, 0.0, 1.0)
    clipped.setflags(write=False)
    return clipped


def _check_priors(priors: npt.ArrayLike, n_classes: int, n_groups: int) -> FloatArray:
    """Validate priors and return them with shape ``(n_groups, n_classes)`` (1-D input is shared)."""
    array = as_rate_array(priors, "priors")
    if array.shape == (n_classes,):
        array = np.tile(array, (n_groups, 1))
    if array.shape != (n_groups, n_classes):
        expected = f"({n_classes},)" if n_groups == 1 else f"({n_classes},) or ({n_groups}, {n_classes})"
        raise InvalidConfigError(f"priors must have shape {expected}, got {np.shape(priors)}")
    if np.any(array <= 0.0):
        raise InvalidConfigError("priors must be positive: every class needs people in it (in every group)")
    sums = array.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0.0, atol=PRIOR_SUM_ATOL):
        raise InvalidConfigError(f"priors must sum to 1 (per group), got sums {np.round(sums, 8).tolist()}")
    # Renormalise only rows that are visibly off: dividing an already normalised row by its rounded
    # sum would change its last bits, and a to_dict/from_dict round trip must reproduce queries exactly.
    off = np.abs(sums - 1.0) > _EXACT_SUM_ATOL
    result: FloatArray = np.where(off[:, None], array / sums[:, None], array)
    return result


def _check_names(names: Sequence[str] | None, count: int, default: str, name: str) -> tuple[str, ...]:
    if names is None:
        return tuple(f"{default} {i + 1}" for i in range(count))
    if isinstance(names, str):
        raise InvalidConfigError(f"{name} must be a list of strings, not a single string")
    result = tuple(names)
    if len(result) != count:
        raise InvalidConfigError(f"{name} must have {count} entries, got {len(result)}")
    if not all(isinstance(item, str) and item.strip() for item in result):
        raise InvalidConfigError(f"{name} must be non-empty strings")
    if len(set(result)) != len(result):
        raise InvalidConfigError(f"{name} must be distinct, got {list(result)}")
    return result


def confusion_from_rates(rates: npt.ArrayLike, priors: npt.ArrayLike) -> FloatArray:
    """The synthetic confusion matrix (out of 100) of rates under the even off-diagonal convention.

    Parameters
    ----------
    rates : array_like, shape (n_classes,)
        ``r_i = P(h = i | Y = i)``, each in ``[0, 1]``.
    priors : array_like, shape (n_classes,)
        ``P(Y = i)``, positive, summing to one.

    Returns
    -------
    numpy.ndarray, shape (n_classes, n_classes)
        Rows are true classes, columns predictions; entries sum to ``CONFUSION_TOTAL``. See
        ``OFF_DIAGONAL_CONVENTION``.

    Raises
    ------
    InvalidConfigError
        If the shapes disagree, a rate lies outside ``[0, 1]`` or the priors are invalid.
    """
    if np.ndim(priors) != 1:
        raise InvalidConfigError(f"priors must be one-dimensional (n_classes,), got shape {np.shape(priors)}")
    k = int(np.shape(priors)[0])
    if k < 2:
        raise InvalidConfigError(f"priors must describe at least 2 classes, got {k}")
    p = _check_priors(priors, k, 1)[0]
    return _confusion(check_rates(rates, (k,)), p)


def _confusion(rates: FloatArray, priors: FloatArray) -> FloatArray:
    """`confusion_from_rates` of checked rates and priors (`check_rates`, `_check_priors`): a space checked
    its priors once, and checking them again on every question cost more than the matrix."""
    k = rates.shape[0]
    off = (1.0 - rates) / (k - 1)
    matrix = np.repeat(off[:, None], k, axis=1)
    np.fill_diagonal(matrix, rates)
    result: FloatArray = CONFUSION_TOTAL * priors[:, None] * matrix
    return result


class SpaceBase:
    """What every query space derives from its names, sphere and priors (the `QuerySpace` accessors).

    A subclass sets ``_class_names``, ``_group_names``, ``_sphere`` and ``_priors`` (shape
    ``(n_groups, n_classes)``, one row without groups) in its constructor.
    """

    _class_names: tuple[str, ...]
    _group_names: tuple[str, ...]
    _sphere: Sphere
    _priors: FloatArray

    @property
    def n_classes(self) -> int:
        """Number of classes ``k``."""
        return len(self._class_names)

    @property
    def n_groups(self) -> int:
        """Number of groups ``m`` (1 without groups)."""
        return int(self._priors.shape[0])

    @property
    def class_names(self) -> tuple[str, ...]:
        """Display names of the classes."""
        return self._class_names

    @property
    def group_names(self) -> tuple[str, ...]:
        """Display names of the groups; empty without groups."""
        return self._group_names

    @property
    def sphere(self) -> Sphere:
        """The query sphere."""
        return self._sphere

    @property
    def group_spheres(self) -> tuple[Sphere, ...]:
        """One query sphere per group for elicitors that ask each group in its own (here: the common one)."""
        return (self._sphere,) * self.n_groups

    @property
    def priors(self) -> FloatArray:
        """``P(Y = i)``, shape ``(n_classes,)``; per group ``P(Y = i | G = g)``, ``(n_groups, n_classes)``."""
        result: FloatArray = self._priors[0] if self.n_groups == 1 else self._priors
        return result

    @property
    def rate_shape(self) -> tuple[int, ...]:
        """Shape of a query's rate array: ``(n_classes,)`` or ``(n_groups, n_classes)``."""
        return (self.n_classes,) if self.n_groups == 1 else (self.n_groups, self.n_classes)


class SyntheticSpace(SpaceBase):
    """Query space without data: any rate in ``[0, 1]^k`` is shown via the even off-diagonal convention.

    Parameters
    ----------
    n_classes : int
        ``k >= 2``.
    radius : float
        Query-sphere radius around ``o = (1/k, ..., 1/k)``; ``0 < radius <= 1/k`` (the sphere must stay in
        the unit cube). Default 0.2, the paper's choice (use a smaller one for ``k >= 5``).
    priors : array_like, optional
        ``P(Y = i)``, shape ``(n_classes,)``, or per group ``(n_groups, n_classes)``; uniform by default.
        A 1-D array with ``n_groups > 1`` is used for every group.
    class_names : sequence of str, optional
        Defaults to ``("Class 1", ..., "Class k")``.
    n_groups : int
        1 for a study without groups, otherwise ``m >= 2``.
    group_names : sequence of str, optional
        Defaults to ``("Group 1", ...)`` when ``n_groups >= 2``; must be omitted or empty when
        ``n_groups == 1``.

    Raises
    ------
    InvalidConfigError
        Naming the offending parameter and its allowed range.
    """

    kind = "synthetic"

    def __init__(
        self,
        n_classes: int,
        radius: float = DEFAULT_SYNTHETIC_RADIUS,
        priors: npt.ArrayLike | None = None,
        class_names: Sequence[str] | None = None,
        n_groups: int = 1,
        group_names: Sequence[str] | None = None,
    ) -> None:
        if isinstance(n_classes, bool) or not isinstance(n_classes, int | np.integer) or n_classes < 2:
            raise InvalidConfigError(f"n_classes must be an integer >= 2, got {n_classes!r}")
        if isinstance(n_groups, bool) or not isinstance(n_groups, int | np.integer) or n_groups < 1:
            raise InvalidConfigError(f"n_groups must be an integer >= 1 (1 = no groups), got {n_groups!r}")
        k, m = int(n_classes), int(n_groups)
        try:
            rho = float(radius)
        except (TypeError, ValueError) as exc:
            raise InvalidConfigError(f"radius must be a number, got {radius!r}") from exc
        if not np.isfinite(rho) or rho <= 0.0 or rho > 1.0 / k:
            raise InvalidConfigError(
                f"radius must lie in (0, 1/k] = (0, {1.0 / k:g}] for k = {k} classes "
                f"(the sphere around o must stay inside [0, 1]^k), got {radius!r}"
            )
        prior_array = np.full((m, k), 1.0 / k) if priors is None else _check_priors(priors, k, m)
        prior_array.setflags(write=False)
        self._n_classes = k
        self._n_groups = m
        self._priors = prior_array
        self._sphere = Sphere.around_uniform(k, rho)
        self._class_names = _check_names(class_names, k, "Class", "class_names")
        if m == 1:
            if group_names:
                raise InvalidConfigError(
                    "group_names must be empty when n_groups is 1 (a study without groups)"
                )
            self._group_names: tuple[str, ...] = ()
        else:
            self._group_names = _check_names(group_names, m, "Group", "group_names")

    def confusion(self, rates: npt.ArrayLike) -> FloatArray:
        """Confusion matrix (out of 100) of the classifier achieving ``rates``.

        Parameters
        ----------
        rates : array_like, shape (n_classes,) or (n_groups, n_classes)

        Returns
        -------
        numpy.ndarray, shape (n_classes, n_classes) or (n_groups, n_classes, n_classes)
            Each (group's) matrix sums to 100; off-diagonal cells follow ``OFF_DIAGONAL_CONVENTION``.

        Raises
        ------
        InvalidConfigError
            If the shape is wrong or a rate lies outside ``[0, 1]``.
        """
        shape = np.shape(rates)
        if self._n_groups > 1 and shape == (self._n_groups, self._n_classes):
            r = check_rates(rates, shape)
            stacked: FloatArray = np.stack([_confusion(r[g], self._priors[g]) for g in range(self._n_groups)])
            return stacked
        if self._n_groups == 1 and shape == (self._n_classes,):
            return _confusion(check_rates(rates, shape), self._priors[0])
        raise InvalidConfigError(f"rates must have shape {self.rate_shape}, got {shape}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description; ``SyntheticSpace.from_dict`` rebuilds it."""
        return {
            "kind": self.kind,
            "n_classes": self._n_classes,
            "radius": self._sphere.radius,
            "priors": self.priors.tolist(),
            "class_names": list(self._class_names),
            "n_groups": self._n_groups,
            "group_names": list(self._group_names),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SyntheticSpace:
        """Rebuild a space from `to_dict` output.

        Raises
        ------
        InvalidConfigError
            If ``data`` is not a synthetic-space description or its values are invalid.
        """
        if not isinstance(data, Mapping):
            raise InvalidConfigError(f"a space description must be a mapping, got {type(data).__name__}")
        if data.get("kind", cls.kind) != cls.kind:
            raise InvalidConfigError(f"kind must be {cls.kind!r}, got {data.get('kind')!r}")
        if "n_classes" not in data:
            raise InvalidConfigError("n_classes is missing from the synthetic space description")
        unknown = set(data) - {
            "kind",
            "n_classes",
            "radius",
            "priors",
            "class_names",
            "n_groups",
            "group_names",
        }
        if unknown:
            raise InvalidConfigError(f"unknown synthetic space fields: {sorted(unknown)}")
        return cls(
            n_classes=data["n_classes"],
            radius=data.get("radius", DEFAULT_SYNTHETIC_RADIUS),
            priors=data.get("priors"),
            class_names=data.get("class_names"),
            n_groups=data.get("n_groups", 1),
            group_names=data.get("group_names") or None,
        )

    def __repr__(self) -> str:
        groups = f", n_groups={self._n_groups}" if self._n_groups > 1 else ""
        return f"SyntheticSpace(n_classes={self._n_classes}, radius={self._sphere.radius:g}{groups})"
