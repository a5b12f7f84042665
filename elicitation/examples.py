"""The paper's example metrics (Examples 1-3 and Appendix E) as ready-made metric objects.

Theory of operation
-------------------
Each constructor expands the paper's formula into the coefficients of a metric class from
`elicitation.types` and lets that class normalise them. Two things therefore differ from the formula as
printed, and neither changes a single oracle answer:

* **Constants are dropped.** ``1 - 1/k sum (1 - r_i)^2`` and ``-1/k sum (1 - r_i)^2`` order every pair of
  rates identically, so only ``a`` and ``B`` are kept.
* **Coefficients are rescaled.** `QuadraticMetric` scales ``(a, B)`` to ``||a||^2 + ||B||_F^2 = 1`` and
  `FairQuadraticMetric` scales the ``B^{uv}`` to ``1/2 sum ||B^{uv}||_F = 1`` (Definitions 2 and 3); a
  positive factor changes values, not preferences. For the fairness examples the printed formula is the
  violation term; the returned metric's ``violation(r)`` equals it times a positive constant, and ``lam``
  weighs the *normalised* violation against the normalised error ``<a, 1 - r>`` (Definition 3).

The tests check every example against the formula written out literally on random rate pairs.

Rates are 0-based here: the paper's binary ``r_1`` (true-positive rate of class 1) is ``rates[0]`` and
``r_2`` (true-negative rate) is ``rates[1]``.

Paper symbols
-------------
=================  ===================================================================
``pi``             ``target``: the target class distribution of Example 2
``Q``              ``weight_matrix``: the quadratic distance weights of Example 2
``cov_i(r)``       ``r_i + 1 - r_{!=i}`` (binary, Example 2); Appendix E for general rates
``a, lam, tau``    cost vector, trade-off and group prevalences of Definition 3
=================  ===================================================================
"""

from __future__ import annotations

from math import comb

import numpy as np
import numpy.typing as npt

from .errors import InvalidConfigError
from .types import FairQuadraticMetric, FloatArray, QuadraticMetric, as_rate_array, check_tau

__all__ = [
    "balance_for_negative_class",
    "coverage_matching",
    "equal_opportunity",
    "equalized_odds",
    "error_rate_balance",
    "general_coverage_matching",
    "q_mean",
]

#: Tolerance on ``sum(target) == 1``.
_SIMPLEX_ATOL = 1e-9


def _check_classes(n_classes: int) -> int:
    if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
        raise InvalidConfigError(f"n_classes must be an integer >= 2, got {n_classes!r}")
    return int(n_classes)


def _check_target(target: npt.ArrayLike, k: int | None) -> FloatArray:
    pi = as_rate_array(target, "target", ndim=1)
    if k is not None and pi.shape != (k,):
        raise InvalidConfigError(f"target must have {k} entries, got {pi.shape[0]}")
    if pi.shape[0] < 2 or np.any(pi < 0.0) or abs(float(pi.sum()) - 1.0) > _SIMPLEX_ATOL:
        raise InvalidConfigError("target must be a probability distribution (non-negative, summing to one)")
    return pi


def _check_weights(weight_matrix: npt.ArrayLike, k: int, *, nsd: bool) -> FloatArray:
    Q = as_rate_array(weight_matrix, "weight_matrix", ndim=2)
    if Q.shape != (k, k):
        raise InvalidConfigError(f"weight_matrix must be {k}x{k}, got {Q.shape}")
    if not np.allclose(Q, Q.T, rtol=0.0, atol=1e-12):
        raise InvalidConfigError("weight_matrix must be symmetric")
    eigenvalues = np.linalg.eigvalsh(Q)
    if nsd and float(np.max(eigenvalues)) > 1e-12:
        raise InvalidConfigError("weight_matrix must be negative semi-definite (a utility)")
    if not nsd and float(np.min(eigenvalues)) < -1e-12:
        raise InvalidConfigError("weight_matrix must be positive semi-definite (a cost)")
    return Q


def q_mean(n_classes: int) -> QuadraticMetric:
    """Example 1, the Q-mean ``1 - 1/k sum_i (1 - r_i)^2``.

    Expanding, ``-1/k sum (1 - 2 r_i + r_i^2) = 2/k <1, r> - 1/k r^T r + const``, so ``a = 2/k 1`` and
    ``B = -2/k I`` (before normalisation).

    Parameters
    ----------
    n_classes : int
        ``k >= 2``.

    Returns
    -------
    QuadraticMetric
    """
    k = _check_classes(n_classes)
    return QuadraticMetric(np.full(k, 2.0 / k), -2.0 / k * np.eye(k))


#: Binary coverage ``cov(r) = M r + 1`` with ``cov_1 = r_1 + 1 - r_2`` and ``cov_2 = r_2 + 1 - r_1``.
_BINARY_COVERAGE = np.array([[1.0, -1.0], [-1.0, 1.0]])


def coverage_matching(target: npt.ArrayLike, weight_matrix: npt.ArrayLike | None = None) -> QuadraticMetric:
    """Example 2, distribution matching for binary classification.

    With ``cov(r) = M r + 1`` (``cov_i = r_i + 1 - r_{!=i}``) and ``c = 1 - pi``, the utility
    ``(cov - pi)^T Q (cov - pi) = r^T M^T Q M r + 2 c^T Q M r + const`` gives ``a = 2 M^T Q c`` and
    ``B = 2 M^T Q M``. The default ``Q = -1/2 I`` is the printed ``1 - 1/2 sum_i (cov_i(r) - pi_i)^2``.

    Parameters
    ----------
    target : array_like
        ``pi``, shape ``(2,)``, a distribution.
    weight_matrix : array_like, optional
        ``Q``, ``(2, 2)`` symmetric negative semi-definite.

    Returns
    -------
    QuadraticMetric
    """
    pi = _check_target(target, 2)
    Q = -0.5 * np.eye(2) if weight_matrix is None else _check_weights(weight_matrix, 2, nsd=True)
    offset = 1.0 - pi
    a = 2.0 * _BINARY_COVERAGE.T @ Q @ offset
    B = 2.0 * _BINARY_COVERAGE.T @ Q @ _BINARY_COVERAGE
    return QuadraticMetric(a, B)


def _general_coverage_map(k: int) -> FloatArray:
    """``M`` with ``cov(r) = 1 + M r`` over off-diagonal rates in row-major order (Appendix E)."""
    q = k * k - k
    M = np.zeros((k, q))
    for i in range(k):  # true class i (row of the rate matrix)
        for j in range(k):
            if i == j:
                continue
            column = i * (k - 1) + (j if j < i else j - 1)  # position of R_ij in off-diagonal order
            M[i, column] -= 1.0  # R_ii = 1 - sum_{j != i} R_ij
            M[j, column] += 1.0  # predictions of class j from class i count towards cov_j
    return M


def general_coverage_matching(
    target: npt.ArrayLike, weight_matrix: npt.ArrayLike | None = None
) -> QuadraticMetric:
    """Appendix E's distribution matching over general (off-diagonal) rates, as a utility.

    Appendix E writes the cost ``sum_i (cov_i(r) - pi_i)^2`` (or ``(cov - pi)^T Q (cov - pi)`` with ``Q``
    PSD) with ``cov_i(r) = R_ii + sum_{j != i} R_ji``; the returned metric is its negation so that, like
    every `QuadraticMetric`, higher is better and ``B`` is NSD. Rates are the ``q = k^2 - k`` off-diagonal
    entries ``R_ij = P(h = j | Y = i)`` in row-major order (see `elicitation.variants.offdiagonal_rates`).

    Parameters
    ----------
    target : array_like
        ``pi``, shape ``(k,)``, a distribution over ``k >= 2`` classes.
    weight_matrix : array_like, optional
        ``Q``, ``(k, k)`` symmetric positive semi-definite; the identity by default.

    Returns
    -------
    QuadraticMetric
        Over ``q = k^2 - k`` rates.
    """
    pi = _check_target(target, None)
    k = pi.shape[0]
    Q = np.eye(k) if weight_matrix is None else _check_weights(weight_matrix, k, nsd=False)
    M = _general_coverage_map(k)
    offset = 1.0 - pi
    # utility -(M r + c)^T Q (M r + c) = -r^T M^T Q M r - 2 c^T Q M r + const
    return QuadraticMetric(-2.0 * M.T @ Q @ offset, -2.0 * M.T @ Q @ M)


def _fair(a: npt.ArrayLike, lam: float, tau: npt.ArrayLike, pair_matrix: FloatArray) -> FairQuadraticMetric:
    prevalences = check_tau(tau, n_classes=pair_matrix.shape[0])
    m = prevalences.shape[0]
    scale = 1.0 / comb(m, 2)
    pairs = {(u, v): scale * pair_matrix for u in range(m) for v in range(u + 1, m)}
    costs = as_rate_array(a, "a", ndim=1)
    return FairQuadraticMetric(costs, pairs, lam, prevalences)


def _diagonal_pair_matrix(weights: npt.ArrayLike) -> FloatArray:
    # 1/2 d^T B d = sum_i w_i d_i^2  <=>  B = 2 diag(w)
    matrix: FloatArray = 2.0 * np.diag(np.asarray(weights, dtype=np.float64))
    return matrix


def equal_opportunity(a: npt.ArrayLike, lam: float, tau: npt.ArrayLike) -> FairQuadraticMetric:
    """Example 3's equal opportunity ``C(m,2)^{-1} sum_{u<v} (r_1^u - r_1^v)^2``, traded off with the error.

    Parameters
    ----------
    a : array_like
        Misclassification costs ``(2,)``, ``a >= 0``.
    lam : float
        Trade-off in ``[0, 1]`` (weight of the normalised violation).
    tau : array_like
        Group prevalences ``(m, 2)``; columns sum to one.

    Returns
    -------
    FairQuadraticMetric
        Binary, with every ``B^{uv}`` proportional to ``e_1 e_1^T``.
    """
    return _fair(a, lam, tau, _diagonal_pair_matrix([1.0, 0.0]))


def balance_for_negative_class(a: npt.ArrayLike, lam: float, tau: npt.ArrayLike) -> FairQuadraticMetric:
    """Example 3's balance for the negative class, ``C(m,2)^{-1} sum_{u<v} (r_2^u - r_2^v)^2``.

    Parameters are as for `equal_opportunity`; every ``B^{uv}`` is proportional to ``e_2 e_2^T``.
    """
    return _fair(a, lam, tau, _diagonal_pair_matrix([0.0, 1.0]))


def error_rate_balance(
    a: npt.ArrayLike,
    lam: float,
    tau: npt.ArrayLike,
    *,
    class_weights: npt.ArrayLike = (1.0, 1.0),
) -> FairQuadraticMetric:
    """Example 3's error-rate balance ``C(m,2)^{-1} 1/2 sum_{u<v} (r_1^u - r_1^v)^2 + (r_2^u - r_2^v)^2``.

    Parameters
    ----------
    a, lam, tau
        As for `equal_opportunity`.
    class_weights : array_like
        ``(w_1, w_2) >= 0``: the weighted variant ``1/2 (w_1 (r_1^u - r_1^v)^2 + w_2 (r_2^u - r_2^v)^2)``.
    """
    weights = _check_class_weights(class_weights, 2)
    return _fair(a, lam, tau, _diagonal_pair_matrix(0.5 * weights))


def _check_class_weights(class_weights: npt.ArrayLike, k: int) -> FloatArray:
    weights = as_rate_array(class_weights, "class_weights", ndim=1)
    if weights.shape != (k,) or np.any(weights < 0.0) or not np.any(weights > 0.0):
        raise InvalidConfigError(f"class_weights must be {k} non-negative numbers, not all zero")
    return weights


def equalized_odds(
    a: npt.ArrayLike,
    lam: float,
    tau: npt.ArrayLike,
    *,
    class_weights: npt.ArrayLike | None = None,
) -> FairQuadraticMetric:
    """Example 3's equalized odds ``[k C(m,2)]^{-1} sum_{u<v} sum_i (r_i^u - r_i^v)^2`` for any ``k``.

    Parameters
    ----------
    a : array_like
        Misclassification costs ``(k,)``, ``a >= 0``.
    lam : float
        Trade-off in ``[0, 1]``.
    tau : array_like
        Group prevalences ``(m, k)``.
    class_weights : array_like, optional
        ``(k,)`` non-negative weights ``w_i`` on each class's squared gap (the weighted variant).
    """
    k = np.asarray(a).shape[0] if np.ndim(a) == 1 else 0
    if k < 2:
        raise InvalidConfigError("a must be a vector of at least 2 costs")
    weights = np.ones(k) if class_weights is None else _check_class_weights(class_weights, k)
    return _fair(a, lam, tau, _diagonal_pair_matrix(weights / k))
