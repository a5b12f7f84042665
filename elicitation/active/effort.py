"""How much work the active elicitor spends on each question: its candidate search and its rejuvenation.

Choosing a question scores candidate pairs against the particle posterior (`elicitation.active.selection`):
random perceptible pairs screened by a small committee of particles, the best of them rescored by the whole
posterior and refined by perturbing the leaders, plus exact-tie pairs from a few particles' level sets (the
quadratic family). After an answer that leaves too few effective particles, the posterior is resampled and
rejuvenated by MCMC moves (`elicitation.posterior.ParticlePosterior`), and before the first question the
prior's particle cloud is burnt in by sweeps of the same moves. Every count below multiplies the time a
question takes; the defaults are what every algorithm version asked with until `LEAN_SEARCH` (below), and
changing one changes the questions, so it belongs in a new version. What cheaper settings cost in agreement
and questions is measured in docs/scaling.md ("Cheaper searches"); `LEAN_SEARCH` is the cheaper search the
current versions ask with.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from ..errors import InvalidConfigError
from ..posterior import DEFAULT_BURN_IN, DEFAULT_MOVES

__all__ = ["DEFAULT_SEARCH", "LEAN_SEARCH", "SearchEffort"]


@dataclass(frozen=True)
class SearchEffort:
    """Counts of the question search and the posterior's rejuvenation (see the module docstring)."""

    #: Random candidate pairs drawn per round (rounds repeat until `rescored` perceptible pairs are found).
    random_pairs: int = 768
    #: Particles (drawn by weight) whose votes screen every candidate.
    committee: int = 32
    #: Candidates kept after the screen and scored against the whole posterior.
    rescored: int = 96
    #: Best candidates perturbed in each refinement round, and perturbations of each.
    leaders: int = 6
    perturbations: int = 16
    #: Quadratic family: particles seeding exact-tie pairs (plus the posterior mean), and pairs per particle.
    tie_particles: int = 32
    ties_per_particle: int = 48
    #: MCMC line moves per rejuvenation (each after a radial move).
    moves: int = DEFAULT_MOVES
    #: Prior-only sweeps of the particle cloud before the first question (what a participant's joining
    #: mostly costs).
    burn_in: int = DEFAULT_BURN_IN

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidConfigError(f"search effort {item.name} must be an integer >= 1, got {value!r}")

    def changed(self) -> dict[str, Any]:
        """The counts that differ from `DEFAULT_SEARCH` (what a checkpoint's fingerprint records)."""
        default = asdict(DEFAULT_SEARCH)
        return {name: value for name, value in asdict(self).items() if value != default[name]}


#: The search of every recorded algorithm version before active_quadratic-5 and active_fair-4.
DEFAULT_SEARCH = SearchEffort()


#: Half the random and tie candidates, half the perturbations and half the moves of `DEFAULT_SEARCH` (the
#: burn-in unchanged): the search of active_quadratic-5 and -6 (with half the particles for two classes)
#: and active_fair-4
#: (docs/scaling.md, "Cheaper searches", and docs/fairness-tradeoff.md measure what it costs).
LEAN_SEARCH = SearchEffort(random_pairs=384, perturbations=8, tie_particles=16, ties_per_particle=24, moves=2)
