"""Spheres in rate space: boundary parametrisation by angles, Lemma 1 and QPME's small-sphere placement.

Theory of operation
-------------------
LPME (Appendix A) searches the boundary of a sphere ``S`` (centre ``o``, radius ``rho``) for the rate that a
linear metric prefers most. Lemma 1 says that rate is ``o + rho * a`` for the unit coefficient vector ``a``,
so searching the boundary is searching unit vectors. Unit vectors in ``R^k`` are parametrised by ``k - 1``
hyperspherical angles::

    a_i(theta) = sin(theta_1) ... sin(theta_{i-1}) cos(theta_i)      for i < k
    a_k(theta) = sin(theta_1) ... sin(theta_{k-1})

and ``mu(theta) = o + rho * a(theta)`` traces ``dS``. With ``theta_1..theta_{k-2}`` in ``[0, pi]`` and
``theta_{k-1}`` in ``[0, 2 pi)`` every unit vector has angles; `vector_angles` is the inverse.

QPME (Algorithm 1) runs LPME on small spheres of radius ``varrho`` (``inner_radius``) inside ``S``: one at
``o`` and one at each ``z_j = o + (rho - varrho) alpha_j`` (``alpha_j`` the j-th standard basis vector), plus
one at ``o - (rho - varrho) alpha_p`` for a pivot coordinate ``p`` (the paper's ``-z_1`` for ``p = 1``).
Each small sphere touches ``S`` from inside, so every query stays feasible.

Paper symbols
-------------
============  =========================  ==========================================
paper         code                       meaning
============  =========================  ==========================================
``o``         ``sphere.center``          centre of the query sphere
``rho``       ``sphere.radius``          its radius
``varrho``    ``inner_radius``           radius of QPME's small spheres
``theta``     ``angles``                 ``(k - 1,)`` hyperspherical angles
``a(theta)``  `unit_vector`              unit vector with those angles
``mu(theta)`` `boundary_point`           ``o + rho * a(theta)`` on ``dS``
``alpha_j``   ``axis``                   standard basis direction ``j`` (0-based)
``z_j``       `inner_sphere` centres     ``o + (rho - varrho) alpha_j``
============  =========================  ==========================================
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .errors import InvalidConfigError
from .types import FloatArray, Sphere, as_rate_array

__all__ = [
    "angles_to_unit",
    "boundary_angles",
    "boundary_point",
    "gradient_floor",
    "inner_sphere",
    "optimal_rate",
    "qpme_spheres",
    "unit_vector",
    "validate_inner_radius",
    "vector_angles",
]

#: Vectors shorter than this have no direction.
_ZERO_NORM = 1e-12


def _readonly(array: FloatArray) -> FloatArray:
    array.setflags(write=False)
    return array


def unit_vector(angles: npt.ArrayLike) -> FloatArray:
    """The unit vector ``a(theta)`` with hyperspherical angles ``theta`` (Appendix A).

    Parameters
    ----------
    angles : array_like, shape (n_classes - 1,)
        ``theta_1 .. theta_{k-1}`` in radians; any finite values are accepted.

    Returns
    -------
    ndarray, shape (n_classes,)
        ``a_i = prod_{j<i} sin(theta_j) cos(theta_i)`` for ``i < k`` and ``a_k = prod_j sin(theta_j)``.
    """
    theta = as_rate_array(angles, "angles", ndim=1)
    if theta.shape[0] < 1:
        raise InvalidConfigError("angles must have at least one entry (n_classes >= 2)")
    return _readonly(angles_to_unit(theta))


def angles_to_unit(theta: FloatArray) -> FloatArray:
    """`unit_vector` without input validation, for search loops that build angles themselves."""
    # Plain floats: for k <= ~10 numpy's per-call overhead would dominate the search loops.
    values: list[float] = []
    product = 1.0
    for angle in theta.tolist():
        values.append(product * math.cos(angle))
        product *= math.sin(angle)
    values.append(product)
    return np.array(values)


def vector_angles(vector: npt.ArrayLike) -> FloatArray:
    """The hyperspherical angles of a non-zero vector; the inverse of `unit_vector` up to scale.

    Parameters
    ----------
    vector : array_like, shape (n_classes,)
        Any non-zero vector; only its direction matters.

    Returns
    -------
    ndarray, shape (n_classes - 1,)
        ``theta_1 .. theta_{k-2}`` in ``[0, pi]`` and ``theta_{k-1}`` in ``[0, 2 pi)``.

    Raises
    ------
    InvalidConfigError
        If ``vector`` is zero or has fewer than two entries.
    """
    v = as_rate_array(vector, "vector", ndim=1)
    k = v.shape[0]
    if k < 2:
        raise InvalidConfigError(f"vector must have at least 2 entries, got {k}")
    if float(np.linalg.norm(v)) < _ZERO_NORM:
        raise InvalidConfigError("vector must not be zero: it has no direction")
    # ||v_{i:}|| for every suffix, computed stably from the back.
    tails = np.sqrt(np.cumsum((v * v)[::-1])[::-1])
    theta = np.arctan2(tails[1:], v[:-1])
    last = float(np.mod(np.arctan2(v[-1], v[-2]), 2.0 * np.pi))
    # mod() of a tiny negative angle rounds to exactly 2 pi, which lies outside [0, 2 pi).
    theta[-1] = 0.0 if last >= 2.0 * np.pi else last
    return _readonly(theta)


def boundary_point(sphere: Sphere, angles: npt.ArrayLike) -> FloatArray:
    """``mu(theta) = o + rho * a(theta)``, the boundary point of ``sphere`` with angles ``theta``."""
    direction = unit_vector(angles)
    if direction.shape[0] != sphere.n_classes:
        raise InvalidConfigError(
            f"angles must have {sphere.n_classes - 1} entries for a {sphere.n_classes}-class sphere, "
            f"got {direction.shape[0] - 1}"
        )
    return _readonly(sphere.center + sphere.radius * direction)


def boundary_angles(sphere: Sphere, rates: npt.ArrayLike) -> FloatArray:
    """The angles ``theta`` with ``mu(theta)`` in the direction of ``rates`` from the centre (mu^-1)."""
    r = as_rate_array(rates, "rates", ndim=1)
    if r.shape[0] != sphere.n_classes:
        raise InvalidConfigError(f"rates must have shape ({sphere.n_classes},), got {r.shape}")
    return vector_angles(r - sphere.center)


def optimal_rate(sphere: Sphere, coefficients: npt.ArrayLike) -> FloatArray:
    """Lemma 1: the rate in ``sphere`` maximising ``<a, r>`` is ``o + rho * a / ||a||``.

    Parameters
    ----------
    sphere : Sphere
        The query sphere.
    coefficients : array_like, shape (n_classes,)
        The linear metric's coefficients ``a`` (any non-zero scale).

    Raises
    ------
    InvalidConfigError
        If the shape does not match or ``a`` is zero (every rate is then optimal).
    """
    a = as_rate_array(coefficients, "coefficients", ndim=1)
    if a.shape[0] != sphere.n_classes:
        raise InvalidConfigError(f"coefficients must have shape ({sphere.n_classes},), got {a.shape}")
    norm = float(np.linalg.norm(a))
    if norm < _ZERO_NORM:
        raise InvalidConfigError("coefficients must not be zero: every rate is optimal for a zero metric")
    return _readonly(sphere.center + sphere.radius * a / norm)


def gradient_floor(a: npt.ArrayLike, B: npt.ArrayLike, sphere: Sphere) -> FloatArray:
    """The smallest entry ``min_r (a + B r)_i`` of a quadratic metric's gradient over the ball ``sphere``.

    ``a + B c - rho |B_i|`` for centre ``c``, radius ``rho`` and rows ``B_i``; leading axes of ``a``
    ``(..., k)`` and ``B`` ``(..., k, k)`` broadcast. Non-negative in every class: the metric never
    prefers a classifier worse in every class inside the ball. Concave and homogeneous in ``(a, B)``, so
    the metrics meeting it form a convex cone.
    """
    matrix = np.asarray(B, dtype=np.float64)
    result: FloatArray = (
        np.asarray(a, dtype=np.float64)
        + matrix @ sphere.center
        - sphere.radius * np.linalg.norm(matrix, axis=-1)
    )
    return result


def validate_inner_radius(sphere: Sphere, inner_radius: float) -> float:
    """Return ``inner_radius`` as a float if ``0 < inner_radius < sphere.radius``, else raise."""
    try:
        value = float(inner_radius)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"inner_radius must be a number, got {inner_radius!r}") from exc
    if not np.isfinite(value) or not 0.0 < value < sphere.radius:
        raise InvalidConfigError(
            f"inner_radius must lie in (0, {sphere.radius:g}) (strictly inside the sphere radius), "
            f"got {inner_radius!r}"
        )
    return value


def inner_sphere(sphere: Sphere, inner_radius: float, axis: int | None = None, sign: int = 1) -> Sphere:
    """A small sphere of radius ``varrho`` inside ``sphere`` (Algorithm 1).

    Parameters
    ----------
    sphere : Sphere
        The query sphere ``S`` (centre ``o``, radius ``rho``).
    inner_radius : float
        ``varrho``, in ``(0, rho)``.
    axis : int, optional
        ``None`` for ``S_o`` (centred at ``o``); else the 0-based coordinate ``j`` of ``z_j``.
    sign : {1, -1}
        ``1`` for ``z_j = o + (rho - varrho) alpha_j``; ``-1`` for ``o - (rho - varrho) alpha_j``.

    Returns
    -------
    Sphere
        Touching ``S`` from inside when ``axis`` is given, so all its points are feasible rates.
    """
    varrho = validate_inner_radius(sphere, inner_radius)
    center = np.array(sphere.center, dtype=np.float64)
    if axis is not None:
        if not 0 <= axis < sphere.n_classes:
            raise InvalidConfigError(f"axis must lie in [0, {sphere.n_classes - 1}], got {axis}")
        if sign not in (1, -1):
            raise InvalidConfigError(f"sign must be 1 or -1, got {sign}")
        center[axis] += sign * (sphere.radius - varrho)
        # Rounding may push centre +- varrho a hair outside [0, 1] when S touches the cube's face.
        center[axis] = min(max(center[axis], varrho), 1.0 - varrho)
    return Sphere(center, varrho)


def qpme_spheres(sphere: Sphere, inner_radius: float, pivot: int = 0) -> tuple[Sphere, ...]:
    """All ``k + 2`` small spheres of Algorithm 1: ``S_o``, ``S_{z_1} .. S_{z_k}``, ``S_{-z_pivot}``."""
    spheres = [inner_sphere(sphere, inner_radius)]
    spheres += [inner_sphere(sphere, inner_radius, axis=j) for j in range(sphere.n_classes)]
    spheres.append(inner_sphere(sphere, inner_radius, axis=pivot, sign=-1))
    return tuple(spheres)
