"""Active, noise-robust metric elicitation: Bayesian half-space learning with perceptible queries.

Theory of operation
-------------------
For the linear, quadratic and fair quadratic families, ``phi(r1) - phi(r2) = <w, f(r1, r2)>`` is linear in
the metric's parameters ``w``, so every answer is a half-space on the unit sphere of ``w`` (normalised as
in the paper). The elicitor keeps a seeded particle posterior over ``w`` (`elicitation.posterior`) under
a logistic answer model ``P(correct) = sigmoid(beta |phi(r1) - phi(r2)|)`` (``beta`` fixed, marginalised
over a grid, or ``None`` for the noise-free oracle of Definition 1) and, before every question:

1. draws candidate pairs inside the study's sphere from the seeded rng, keeping only *perceptible* pairs:
   some confusion-matrix cell must differ by at least ``min_cell_gap`` people out of 100. The diagonal
   cells ``100 P(Y=i) r_i`` do not depend on how a space spreads the misclassified mass, so the check uses
   them (a sufficient condition for every `elicitation.rates.QuerySpace`). For quadratic metrics
   it adds pairs that are exact ties under single posterior particles (two distant points on one level
   set): when the gradient dominates, random pairs are all decided by the slope, ties split the
   posterior by its curvature;
2. screens them with a committee of posterior particles, rescores the best with every particle by the
   expected information gain ``H(E[p]) - E[H(p)]`` of the answer (for the noise-free model: the entropy
   of the posterior split) and refines the leaders by local perturbation;
3. asks the best pair, then reweights, resamples and rejuvenates the particles.

With ``sensible=True`` (quadratic only) the family's cone also requires the metric to increase in every
rate throughout the sphere (``a + B r >= 0``), a structural assumption of the kind the paper's
discussion (Section 8) recommends; a pair decided by dominance then carries no information and
is asked only when no other perceptible candidate is left.

It stops when the posterior spread (expected distance, in the paper's normalised parameters, between a
posterior draw and the estimate) falls to ``tolerance``, or after ``max_queries`` answers. The estimate is
the posterior mean of the normalised parameters (it stays in the family's convex cone) or, with
``estimate="consensus"``, the posterior's consensus: among the particles and the mean, the metric whose
order of random pairs of the sphere agrees most with the posterior's (for a metric nearly flat across
the sphere the posterior is wide and curved, and the mean of directions can order pairs unlike any
plausible metric). The result's
``details`` report credible intervals, the spread history, the noise-level posterior and a posterior
sample used by `ranking_probability` and `best_probabilities` (each candidate's chance of being the
best of a set). While running, the `ActiveElicitor` wrapper exposes
``expected_remaining`` (for progress bars) and the current estimate.

Replay is deterministic: the state after ``n`` answers depends only on the configuration, the seed and
the answers.

Symbols
-------
=====================  ==========================================================================
paper                  code
=====================  ==========================================================================
``a``, ``B``           linear and quadratic coefficients (``w = (a, vec B)``, ``|w|_2 = 1``)
``B^{uv}``, ``lam``    fair violation costs and trade-off (``w = ((1-lam) a, lam vec B^{uv})``)
``tau``                ``tau[g, i] = P(G = g | Y = i)`` (fair overall rates ``r = sum_g tau^g r^g``)
``o``, ``rho``         ``sphere.center``, ``sphere.radius``
``beta``               inverse temperature of the logistic answer model
``d``                  number of unknowns (``dim``); Theorem 2's count is ``d log2(1/error)``
=====================  ==========================================================================
"""

from .decisions import best_probabilities
from .effort import DEFAULT_SEARCH, LEAN_SEARCH, SearchEffort
from .elicitor import (
    CRITERIA,
    DEFAULT_BETA_GRID,
    DEFAULT_CREDIBLE_LEVEL,
    DEFAULT_MIN_CELL_GAP,
    DEFAULT_N_PARTICLES,
    DEFAULT_TOLERANCE,
    ESTIMATES,
    FAMILIES,
    MAX_DEFAULT_PARTICLES,
    PARTICLE_BUDGET,
    ActiveElicitor,
    ActiveOptions,
    active_elicitor,
    active_fair,
    active_linear,
    active_quadratic,
    ranking_probability,
)

__all__ = [
    "CRITERIA",
    "DEFAULT_BETA_GRID",
    "DEFAULT_CREDIBLE_LEVEL",
    "DEFAULT_MIN_CELL_GAP",
    "DEFAULT_N_PARTICLES",
    "DEFAULT_SEARCH",
    "DEFAULT_TOLERANCE",
    "ESTIMATES",
    "FAMILIES",
    "LEAN_SEARCH",
    "MAX_DEFAULT_PARTICLES",
    "PARTICLE_BUDGET",
    "ActiveElicitor",
    "ActiveOptions",
    "SearchEffort",
    "active_elicitor",
    "active_fair",
    "active_linear",
    "active_quadratic",
    "best_probabilities",
    "ranking_probability",
]
