"""Group partitions of fair QPME (Appendix D): the cuts, the membership matrix ``Xi`` and the lifted profiles.

**Partitions (Appendix D, Equation 10).** For a set of groups ``sigma`` (a cut of the groups into
``sigma`` and its complement), give every group in ``sigma`` the rate ``s`` and every other group the
centre ``o``. On those profiles the cost is, up to a constant,
``(1 - lam) <-a * tau^sigma, s - o> + lam/2 (s - o)^T W^sigma (s - o)`` with ``tau^sigma = sum_{g in sigma}
tau^g`` and ``W^sigma = sum_{u, v separated by sigma} B^{uv}``. Its negative (the oracle prefers lower cost)
is the shifted quadratic utility QPME elicits: ``d = c (1 - lam) a * tau^sigma`` and ``B = -c lam W^sigma``
for an unknown scale ``c > 0``. `fair_qpme` therefore runs QPME's `shifted_quadratic` once per partition
and *lifts* each of its ``k``-dimensional points ``s`` to the ``(m, k)`` profile above: QPME and LPME build
their queries through the `profile_embedding` they are given, so each query is made once, as a profile;
answers pass back unchanged. The query carries the sub-search label, e.g. ``"fair/sigma=1+3/qpme/z1/lpme"``
(1-based groups).

**Choice of partitions** (`group_partitions`). ``binom(m, 2)`` cuts with a non-singular ``Xi`` are needed.
Indexing rows and columns by pairs, the cuts ``sigma = {u, v}`` give ``Xi`` = the adjacency matrix of the
line graph of ``K_m`` (two pairs are adjacent when they share exactly one group), whose eigenvalues are
``2m - 4``, ``m - 4`` and ``-2``: non-singular for every ``m >= 3`` except ``m = 4``. So ``m = 2`` uses the
single cut ``{0}``; ``m = 3`` and ``m >= 5`` use all pair cuts (for ``m = 3`` these are the paper's example
``{{1,2},{1,3},{2,3}}``); ``m = 4`` (where ``{0,1}`` and ``{2,3}`` are the same cut) uses the four
singletons plus ``{0,1}`` and ``{0,2}``. Among all cut sets, these minimise ``||Xi^{-1}||_F`` (the error
amplification of the solve) for ``m = 3, 4`` and beat every alternative we searched for ``m = 5, 6``.
Which side of a cut gets ``s`` is then chosen per ``tau``: the side whose smallest prevalence
``min_i tau^sigma_i`` is larger, because ``a_i`` is read off ``d_i / tau^sigma_i``.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..errors import InvalidConfigError
from ..types import (
    Embedding,
    FloatArray,
    Sphere,
    pair_index,
)

__all__ = [
    "ZERO",
    "Partition",
    "check_epsilon",
    "check_groups",
    "check_partitions",
    "check_sphere",
    "group_partitions",
    "lift_rates",
    "membership_matrix",
    "orient_partitions",
    "partition_label",
    "profile_embedding",
]

#: Quantities below this (norms, curvatures) count as zero.
ZERO = 1e-12

Partition = frozenset[int]


def check_groups(groups: object) -> int:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
        raise InvalidConfigError(f"groups must be an integer >= 2, got {groups!r}")
    if int(groups) < 2:
        raise InvalidConfigError(f"groups must be an integer >= 2 (at least two groups), got {groups}")
    return int(groups)


def check_epsilon(epsilon: object) -> float:
    try:
        value = float(epsilon)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"epsilon must be a number in (0, 1), got {epsilon!r}") from exc
    if not math.isfinite(value) or not 0.0 < value < 1.0:
        raise InvalidConfigError(f"epsilon must lie in (0, 1) (the search tolerance), got {epsilon!r}")
    return value


def check_sphere(sphere: object) -> Sphere:
    if not isinstance(sphere, Sphere):
        raise InvalidConfigError(f"sphere must be a Sphere, got {type(sphere).__name__}")
    return sphere


# ---------------------------------------------------------------------------------------------------------
# Partitions and the membership matrix Xi
# ---------------------------------------------------------------------------------------------------------


def group_partitions(n_groups: int) -> tuple[Partition, ...]:
    """The ``binom(m, 2)`` group partitions ``sigma`` used by `fair_qpme` (see the module docstring).

    Parameters
    ----------
    n_groups : int
        Number of groups ``m >= 2``.

    Returns
    -------
    tuple of frozenset of int
        One set of (0-based) groups per partition; each stands for the cut between it and its complement.
        ``membership_matrix(group_partitions(m), m)`` is non-singular for every ``m``.
    """
    m = check_groups(n_groups)
    if m == 2:
        return (frozenset({0}),)
    if m == 4:
        singletons = tuple(frozenset({g}) for g in range(4))
        return (*singletons, frozenset({0, 1}), frozenset({0, 2}))
    return tuple(frozenset(pair) for pair in pair_index(m))


def membership_matrix(partitions: Sequence[Partition], n_groups: int) -> FloatArray:
    """Appendix D's ``Xi``: ``Xi[s, p] = 1`` when partition ``s`` separates the ``p``-th pair of `pair_index`.

    Parameters
    ----------
    partitions : sequence of frozenset of int
        Sets of groups ``sigma``.
    n_groups : int
        Number of groups ``m``.

    Returns
    -------
    ndarray, shape (len(partitions), binom(m, 2))
    """
    m = check_groups(n_groups)
    pairs = pair_index(m)
    xi = np.zeros((len(partitions), len(pairs)), dtype=np.float64)
    for row, sigma in enumerate(partitions):
        if not sigma or not sigma < frozenset(range(m)):
            raise InvalidConfigError(
                f"partition {sorted(sigma)} must be a non-empty proper subset of the groups 0..{m - 1}"
            )
        for col, (u, v) in enumerate(pairs):
            xi[row, col] = float((u in sigma) != (v in sigma))
    xi.setflags(write=False)
    return xi


def orient_partitions(partitions: Sequence[Partition], tau: FloatArray) -> tuple[Partition, ...]:
    """Pick, for each cut, the side that receives the query rate ``s``.

    The side whose smallest class prevalence ``min_i tau^sigma_i`` is larger wins (ties keep the given
    side): ``a_i`` is recovered from ``d_i / tau^sigma_i``, so small prevalences amplify errors. The cut
    itself, hence ``Xi``, is unchanged.
    """
    m = tau.shape[0]
    everyone = frozenset(range(m))
    oriented = []
    for sigma in partitions:
        other = everyone - sigma
        own_min = float(np.min(tau[sorted(sigma)].sum(axis=0)))
        other_min = float(np.min(tau[sorted(other)].sum(axis=0)))
        oriented.append(other if other_min > own_min else sigma)
    return tuple(oriented)


def lift_rates(
    rates: npt.ArrayLike, partition: Partition, center: npt.ArrayLike, n_groups: int
) -> FloatArray:
    """Equation 10's profile: ``rates`` for the groups in ``partition``, ``center`` for the others.

    Returns
    -------
    ndarray, shape (n_groups, n_classes)
    """
    base = np.asarray(center, dtype=np.float64)
    profile = np.empty((n_groups, base.shape[0]))
    profile[:] = base
    if partition:
        profile[sorted(partition)] = np.asarray(rates, dtype=np.float64)
    return profile


def partition_label(partition: Partition) -> str:
    """Display label with 1-based groups, like QPME's ``z1``: ``{0, 2}`` -> ``"sigma=1+3"``."""
    return "sigma=" + "+".join(str(g + 1) for g in sorted(partition))


def profile_embedding(center: FloatArray, partition: Partition, n_groups: int) -> Embedding:
    """Equation 10 as an `Embedding`: rates for the groups in ``partition``, ``center`` for the others.

    The k-dimensional QPME and LPME runs yield their queries through it, so every query is built once, as
    a profile. The profile is assembled as bytes (the partition's row joining the runs of centre rows
    between them): bit-identical to `lift_rates`, at a third of the cost of lifting an array with
    ``np.where``, which counts because replaying a log builds every query again.
    """
    k = int(center.shape[0])
    pack = struct.Struct(f"={k}d").pack
    row = center.astype(np.float64).tobytes()
    members = sorted(partition)
    # Centre rows before the first member, between consecutive members and after the last.
    gaps = [b - a - 1 for a, b in zip([-1, *members], [*members, n_groups], strict=True)]
    runs = [row * gap for gap in gaps]
    shape = (n_groups, k)

    def lift(rates: list[float]) -> FloatArray:
        # Positional ndarray(shape, dtype, buffer): about half the cost of frombuffer(...).reshape(...).
        return np.ndarray(shape, np.float64, pack(*rates).join(runs))

    return lift


def check_partitions(partitions: object, n_groups: int) -> tuple[Partition, ...]:
    if isinstance(partitions, (str, bytes)) or not isinstance(partitions, Sequence):
        raise InvalidConfigError("partitions must be a sequence of sets of group indices")
    everyone = frozenset(range(n_groups))
    result = []
    for item in partitions:
        try:
            sigma = frozenset(int(g) for g in item)
        except (TypeError, ValueError) as exc:
            raise InvalidConfigError(f"partitions must hold sets of group indices, got {item!r}") from exc
        if not sigma or not sigma < everyone:
            raise InvalidConfigError(
                f"each partition must be a non-empty proper subset of the groups 0..{n_groups - 1}, "
                f"got {sorted(sigma)}"
            )
        result.append(sigma)
    needed = len(pair_index(n_groups))
    if len(result) != needed:
        raise InvalidConfigError(
            f"partitions must hold exactly binom(m, 2) = {needed} sets, got {len(result)}"
        )
    if abs(float(np.linalg.det(membership_matrix(result, n_groups)))) < 0.5:
        raise InvalidConfigError(
            "partitions must give a non-singular membership matrix Xi (no cut repeated, none implied by "
            "the others); group_partitions(m) gives one"
        )
    return tuple(result)
