"""Confusion matrices and rates from labels: what scoring a classifier with an elicited metric needs.

Rates follow the paper (Section 2, Equation 1): ``r_i = P(h(X) = i | Y = i)``, the share of each true
class's samples that the classifier gets right; with groups (Definition 3) one rate vector per group,
``r^g_i = P(h(X) = i | Y = i, G = g)``. The metric types use these functions to score predictions, and
`elicitation.rates` re-exports them beside the query spaces.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import InvalidConfigError

__all__ = ["confusion_from_labels", "rates_from_confusion", "rates_from_labels"]

FloatArray = npt.NDArray[np.float64]


def _finite_array(values: npt.ArrayLike, name: str) -> FloatArray:
    try:
        array = np.array(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"{name} must be an array of numbers: {exc}") from exc
    if not np.isfinite(array).all():
        raise InvalidConfigError(f"{name} must contain only finite numbers")
    return array


def rates_from_confusion(confusion: npt.ArrayLike) -> FloatArray:
    """The rates ``r_i = C[i, i] / sum_j C[i, j]`` of a confusion matrix (or a stack, one per group).

    Parameters
    ----------
    confusion : array_like, shape (n_classes, n_classes) or (n_groups, n_classes, n_classes)
        Non-negative counts or proportions, rows = true class.

    Returns
    -------
    numpy.ndarray, shape (n_classes,) or (n_groups, n_classes)

    Raises
    ------
    InvalidConfigError
        If the matrix is not square, has negative entries or a row (class) with no people.
    """
    array = _finite_array(confusion, "confusion")
    if array.ndim not in (2, 3) or array.shape[-1] != array.shape[-2]:
        raise InvalidConfigError(f"confusion must be square (k, k) or (m, k, k), got shape {array.shape}")
    if np.any(array < 0.0):
        raise InvalidConfigError("confusion must not have negative entries")
    rows = array.sum(axis=-1)
    if np.any(rows <= 0.0):
        empty = np.argwhere(rows <= 0.0)[0].tolist()
        where = f"true class {empty[-1]}" + (f" of group {empty[0]}" if len(empty) == 2 else "")
        raise InvalidConfigError(
            f"confusion: {where} (0-based) has no people, so its rate is undefined; "
            "every class needs samples (in every group)"
        )
    result: FloatArray = np.diagonal(array, axis1=-2, axis2=-1) / rows
    return result


def _label_vector(values: npt.ArrayLike, name: str) -> npt.NDArray[Any]:
    array = np.asarray(values)
    if array.ndim != 1:
        raise InvalidConfigError(
            f"{name} must be one-dimensional (one entry per sample), got shape {array.shape}"
        )
    if array.shape[0] == 0:
        raise InvalidConfigError(f"{name} must not be empty")
    return array


def _positions(
    values: npt.NDArray[Any], order: npt.ArrayLike | None, seen: npt.NDArray[Any], name: str, what: str
) -> tuple[npt.NDArray[np.intp], int]:
    """Index of each value in ``order`` (default: the sorted distinct values in ``seen``) and its length."""
    try:
        known = np.unique(seen) if order is None else _label_vector(order, name)
        distinct, inverse = np.unique(values, return_inverse=True)
    except TypeError as exc:
        raise InvalidConfigError(f"{what} values must be mutually comparable (one type): {exc}") from exc
    if order is not None and len(np.unique(known)) != len(known):
        raise InvalidConfigError(f"{name} must be distinct, got {known.tolist()}")
    lookup = {value: index for index, value in enumerate(known.tolist())}
    unknown = [value for value in distinct.tolist() if value not in lookup]
    if unknown:
        raise InvalidConfigError(f"{what} values {unknown} are not in {name} {known.tolist()}")
    mapped = np.array([lookup[value] for value in distinct.tolist()], dtype=np.intp)
    return mapped[inverse.ravel()], len(known)


def confusion_from_labels(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    sensitive_features: npt.ArrayLike | None = None,
    groups: npt.ArrayLike | None = None,
    sample_weight: npt.ArrayLike | None = None,
) -> FloatArray:
    """Count the confusion matrix of predictions, overall or per group (rows true class, columns prediction).

    Parameters
    ----------
    y_true, y_pred : array_like, shape (n_samples,)
        True and predicted labels of any one comparable type (integers, strings, ...).
    labels : array_like, shape (n_classes,), optional
        The class order of rows and columns; by default the sorted distinct values of ``y_true`` and
        ``y_pred`` together.
    sensitive_features : array_like, shape (n_samples,), optional
        The group of every sample (as in fairlearn); gives one matrix per group.
    groups : array_like, shape (n_groups,), optional
        The group order; by default the sorted distinct values of ``sensitive_features``.
    sample_weight : array_like, shape (n_samples,), optional
        Non-negative weight of every sample (default 1).

    Returns
    -------
    numpy.ndarray, shape (n_classes, n_classes) or (n_groups, n_classes, n_classes)
        Counts (sums of weights).

    Raises
    ------
    InvalidConfigError
        If the arrays differ in length, are empty or not 1-D, or hold a label (group) outside ``labels``
        (``groups``).
    """
    truth = _label_vector(y_true, "y_true")
    predicted = _label_vector(y_pred, "y_pred")
    if truth.shape != predicted.shape:
        raise InvalidConfigError(
            f"y_true and y_pred must have the same length, got {truth.shape[0]} and {predicted.shape[0]}"
        )
    n = truth.shape[0]
    both = np.concatenate([truth, predicted]) if truth.dtype == predicted.dtype else None
    if both is None:
        try:
            both = np.concatenate([truth.astype(object), predicted.astype(object)])
        except TypeError as exc:
            raise InvalidConfigError(f"y_true and y_pred must hold labels of one type: {exc}") from exc
    positions, k = _positions(both, labels, both, "labels", "label")
    cells = positions[:n] * k + positions[n:]
    count = k * k
    if sensitive_features is not None:
        features = _label_vector(sensitive_features, "sensitive_features")
        if features.shape != truth.shape:
            raise InvalidConfigError(
                f"sensitive_features must have one entry per sample ({n}), got {features.shape[0]}"
            )
        group_positions, m = _positions(features, groups, features, "groups", "sensitive_features")
        cells = group_positions * count + cells
        count *= m
    elif groups is not None:
        raise InvalidConfigError("groups needs sensitive_features (the group of every sample)")
    weights = None
    if sample_weight is not None:
        weights = _finite_array(sample_weight, "sample_weight")
        if weights.shape != (n,) or np.any(weights < 0.0):
            raise InvalidConfigError(
                f"sample_weight must be {n} non-negative numbers, got shape {weights.shape}"
            )
    counts = np.bincount(cells, weights=weights, minlength=count).astype(np.float64)
    shape = (k, k) if sensitive_features is None else (count // (k * k), k, k)
    result: FloatArray = counts.reshape(shape)
    return result


def rates_from_labels(
    y_true: npt.ArrayLike,
    y_pred: npt.ArrayLike,
    *,
    labels: npt.ArrayLike | None = None,
    sensitive_features: npt.ArrayLike | None = None,
    groups: npt.ArrayLike | None = None,
    sample_weight: npt.ArrayLike | None = None,
) -> FloatArray:
    """The rates ``r_i = P(h = i | Y = i)`` of predictions: `rates_from_confusion` of `confusion_from_labels`.

    Takes the parameters of `confusion_from_labels`; returns shape ``(n_classes,)``, or
    ``(n_groups, n_classes)`` with ``sensitive_features``.

    Raises
    ------
    InvalidConfigError
        As `confusion_from_labels`, or when a class (in some group) has no samples: its rate is undefined.
    """
    confusion = confusion_from_labels(
        y_true,
        y_pred,
        labels=labels,
        sensitive_features=sensitive_features,
        groups=groups,
        sample_weight=sample_weight,
    )
    return rates_from_confusion(confusion)
