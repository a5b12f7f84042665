"""The state a running active elicitor shares with its wrapper, and that a checkpoint saves."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..posterior import ParticlePosterior
from ..types import FloatArray, Query
from .families import Config

__all__ = ["Asked", "State"]

#: Answers used to estimate the empirical rate at which the spread shrinks.
_RATE_WINDOW = 8


@dataclass(frozen=True)
class Asked:
    """The query the elicitor waits on and its feature vector ``f`` (first preferred: ``<w, f> > 0``)."""

    query: Query
    feature: FloatArray


@dataclass
class State:
    """The whole state of a running active elicitor, shared by its generator and its `ActiveElicitor`.

    After ``n`` answers it is a function of the configuration, the seed and the answers only; waiting for
    an answer (``pending`` set) it is what `elicitation.active.checkpoint` saves and restores.
    """

    config: Config
    posterior: ParticlePosterior | None = None
    rng: np.random.Generator | None = None
    spreads: list[float] = field(default_factory=list)
    #: Expected information gain (or variance drop) of each query asked, the pending one included.
    gains: list[float] = field(default_factory=list)
    #: Displayed pictures (`DisplayGrid.key`) of the pairs asked so far, in both orders.
    asked: set[bytes] = field(default_factory=set)
    pending: Asked | None = None

    @property
    def n_answered(self) -> int:
        return 0 if self.posterior is None else self.posterior.n_answers

    def expected_remaining(self) -> int:
        """Answers still expected before the stopping rule fires (never beyond the budget)."""
        budget = self.config.max_queries - self.n_answered
        if self.posterior is None or not self.spreads:
            return self.config.max_queries
        spread = self.spreads[-1]
        tolerance = self.config.tolerance
        if spread <= tolerance and self.n_answered >= self.config.min_queries:
            return 0
        # Theorem 2's rate: at best one bit per answer, so the spread halves every ``dim`` answers.
        dim = self.config.spec.family().dim
        rate = np.log(2.0) / dim
        if len(self.spreads) > _RATE_WINDOW:
            recent = np.log(np.array(self.spreads[-_RATE_WINDOW - 1 :]))
            observed = float(recent[0] - recent[-1]) / _RATE_WINDOW
            # The observed shrinkage is noisy; never trust it to be faster than the information bound.
            rate = min(rate, observed) if observed > 0.0 else rate / 4.0
        every = self.config.tradeoff_every
        if every:
            # Trade-off questions are chosen for lam alone: the others narrow the whole metric.
            rate *= (every - 1) / every
        needed = np.log(spread / tolerance) / rate if tolerance > 0.0 and rate > 0.0 else float(budget)
        remaining = max(int(np.ceil(needed)), self.config.min_queries - self.n_answered, 0)
        return int(min(remaining, budget))
