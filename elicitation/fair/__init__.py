"""Fair QPME (Section 4, Appendix D): elicit a fair quadratic cost ``(a, B^{uv}, lam)`` from pairwise queries.

The oracle's metric is the cost of Definition 3 (Equation 9)::

    phi(r^{1:m}) = (1 - lam) <a, 1 - r> + lam/2 sum_{u<v} (r^u - r^v)^T B^{uv} (r^u - r^v),
    r = sum_g tau^g * r^g,   a >= 0, ||a|| = 1,   B^{uv} PSD, 1/2 sum ||B^{uv}||_F = 1.

`fair_qpme` runs QPME once per group partition and solves for the coefficients; `tradeoff_search` finds
``lam`` alone when ``a`` and the ``B^{uv}`` are known. Modules: `partitions` (the cuts, ``Xi`` and the
lifted profiles), `reconstruction` (``(a, B^{uv}, lam)`` from the per-partition estimates), `designs`
(`fair_qpme` and its query designs) and `tradeoff` (Algorithm 5).

Paper symbols
-------------
==================  =====================  =====================================================
paper               code                   meaning
==================  =====================  =====================================================
``m``               ``groups``             number of groups
``tau^g``           ``tau[g]``             ``P(G = g | Y = i)`` per class ``i``
``sigma``           ``partition``          groups assigned the query rate ``s``
``tau^sigma``       ``tau_sigma``          ``sum_{g in sigma} tau^g``
``W^sigma``         ``W``                  ``sum`` of the ``B^{uv}`` a partition separates
``Xi``              `membership_matrix`    partitions x pairs, 1 where the pair is separated
``B~^{uv}``         ``B_tilde``            ``lam / (1 - lam) B^{uv}``
``beta^sigma``      ``W_tilde``            the scaled per-partition estimate of ``W~^sigma``
``lam``             ``lam``                trade-off between error and fairness violation
``varrho``          ``inner_radius``       radius of the small sphere of Algorithm 5
``z_1``             ``z``                  ``o + (rho - varrho) alpha_1``
==================  =====================  =====================================================
"""

from ..types import TAU_ATOL
from .designs import DESIGNS, FITS, fair_qpme
from .partitions import (
    group_partitions,
    lift_rates,
    membership_matrix,
    orient_partitions,
    profile_embedding,
)
from .reconstruction import (
    FairReconstruction,
    SlopeRun,
    reconstruct_fair,
    reconstruct_fair_anchored,
    reconstruct_fair_joint,
)
from .tradeoff import DEFAULT_TRADEOFF_INNER_RADIUS, tradeoff_search

__all__ = [
    "DEFAULT_TRADEOFF_INNER_RADIUS",
    "DESIGNS",
    "FITS",
    "TAU_ATOL",
    "FairReconstruction",
    "SlopeRun",
    "fair_qpme",
    "group_partitions",
    "lift_rates",
    "membership_matrix",
    "orient_partitions",
    "profile_embedding",
    "reconstruct_fair",
    "reconstruct_fair_anchored",
    "reconstruct_fair_joint",
    "tradeoff_search",
]
