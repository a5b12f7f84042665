"""Seeded particle posterior over a metric's parameter direction, for the active elicitor.

Theory of operation
-------------------
For every metric family the elicitor supports, ``phi(r1) - phi(r2) = <w, f(r1, r2)>`` is linear in a
parameter vector ``w`` (``a``; the upper triangle of ``B``; the ``B^{uv}``...) with a feature vector ``f``
of the query. An answer ``y`` (``+1``: first preferred) therefore says ``y <w, f> > 0``: a half-space
through the origin. Metrics are scale invariant, so only the direction of ``w`` matters; the family fixes
a norm ``N(w)`` under which ``phi`` has the paper's normalisation, and the answer model is

    P(y | w, beta) = sigmoid(beta * y * <w, f> / N(w))          (noisy, Bradley-Terry / logistic)
    P(y | w)       = 1[y <w, f> > 0]                             (noise-free, ``beta = None``)

With a lapse rate ``epsilon`` (noisy model only) the person answers by a coin on a share ``epsilon`` of the
screens and by the logistic model otherwise, ``P(y | w, beta) = epsilon / 2 + (1 - epsilon) sigmoid(...)``:
a lapse-tolerant mixture (as in psychometric function fitting, Wichmann and Hill 2001), whose every
answer, however sure the model, keeps probability at least ``epsilon / 2``, so one contradicting answer
cannot drive a region of the posterior to zero while the logistic part keeps ``beta`` large.

The prior on ``w`` is a zero-mean Gaussian with per-block scales, truncated to the family's convex cone
(``B`` negative semi-definite, ``B^{uv}`` positive semi-definite, fair costs ``a >= 0``; optionally a
quadratic metric increasing in every rate throughout a ball, `Family.increasing_on`); the likelihood
depends only on the direction of ``w``, so the implied prior on the direction is a projected Gaussian.
With a grid of ``beta`` values the noise level is a discrete latent variable with a uniform prior and is
marginalised by carrying one ``beta`` index per particle.

The posterior is a weighted particle set (sequential Monte Carlo): each answer multiplies the weights by
its likelihood; when the effective sample size falls below half the particles, they are resampled
(systematic) and rejuvenated by MCMC moves that leave the current posterior invariant:

* a *radial* Gibbs move: given the direction, ``|w|`` is drawn exactly from its conditional (chi law), so
  the scale, which no answer informs, never sticks;
* *line moves* along a direction drawn from the particles' own direction covariance (so an elongated
  posterior, e.g. the weakly identified ``d d^T`` direction of ``B``, is explored along its long axis
  instead of collapsing onto copies of a few particles), plus isotropic prior-scale directions.
  Along a line the Gaussian prior is a 1-D Gaussian and every cone and half-space constraint an interval
  (semi-definite blocks via a generalised eigenvalue problem), so in the noise-free case the move is an
  exact Gibbs draw from a truncated normal (hit-and-run); in the noisy case it is slice sampling with the
  truncated 1-D prior as reference measure and interval shrinkage.

All randomness comes from the ``numpy.random.Generator`` passed in, so the particle set after ``n`` answers
is a function of the configuration, the seed and the answers only. The burn-in of the prior may instead
come from a stream of its own seeded by the configuration alone (`shared_prior`): every session of a
configuration then starts from the same prior sample, computed once per process, and only the moves after
it draw from the session's generator.

Symbols
-------
=================  ================================================================
paper              code
=================  ================================================================
``w``              rows of ``ParticlePosterior.particles`` (``(n_particles, dim)``)
``f(r1, r2)``      a query's feature vector; ``y * f`` is stored as ``signed``
``beta``           ``betas[beta_index]`` (``inf`` encodes the noise-free model)
``N(w)``           `Family.norm`
=================  ================================================================
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import special  # type: ignore[import-untyped]

from .errors import InvalidConfigError, NumericalError
from .geometry import gradient_floor
from .types import FloatArray, RandomState, Sphere, as_generator

__all__ = [
    "BLOCK_KINDS",
    "DEFAULT_BURN_IN",
    "DEFAULT_MOVES",
    "RESAMPLE_THRESHOLD",
    "SHARED_PRIOR_CACHE_SIZE",
    "Block",
    "Family",
    "ParticlePosterior",
    "PosteriorState",
    "check_betas",
    "check_lapse",
    "config_number",
    "shared_prior",
    "sym_from_vec",
    "vec_from_sym",
]

IntArray = npt.NDArray[np.int64]

#: Cone constraints a parameter block can carry.
BLOCK_KINDS = ("free", "nonnegative", "nsd", "psd")
#: MCMC line moves per rejuvenation (each preceded by a radial move).
DEFAULT_MOVES = 4
#: Resample when the effective sample size falls below this share of the particles.
RESAMPLE_THRESHOLD = 0.5
#: Prior-only sweeps that turn the initial cone draws into draws from the truncated Gaussian prior.
DEFAULT_BURN_IN = 12
#: Burnt-in prior clouds kept per process by `shared_prior` (one per configuration a process serves).
SHARED_PRIOR_CACHE_SIZE = 16
#: Every fourth line move uses an isotropic prior-scale direction rather than the particle covariance.
_ISOTROPIC_EVERY = 2
#: Slice-sampling shrink steps before a particle gives up and stays where it is (a valid, lazy move).
_MAX_SHRINKS = 40
#: Initial slice-sampling window, in standard deviations of the answers' curvature along the line.
_SLICE_WIDTH = 6.0
#: Relative ridge added to the direction covariance so its Cholesky factor exists.
_COVARIANCE_RIDGE = 1e-6
#: Smallest eigenvalue kept, relative to the largest, when a precision matrix is cannot be factored
_PRECISION_FLOOR = 1e-12
#: Samples drawn strictly inside a hard-constraint chord, away from its ends by this share of its length.
_CHORD_MARGIN = 1e-9


@functools.lru_cache(maxsize=64)
def _sym_indices(k: int) -> tuple[IntArray, IntArray, FloatArray]:
    rows, cols = np.triu_indices(k)
    weights = np.where(rows == cols, 1.0, np.sqrt(2.0))
    return rows.astype(np.int64), cols.astype(np.int64), weights


def vec_from_sym(matrices: npt.ArrayLike) -> FloatArray:
    """Isometric half-vectorisation: ``(..., k, k)`` symmetric -> ``(..., k(k+1)/2)``, ``|v| = |B|_F``.

    Diagonal entries come first in row-major upper-triangle order, off-diagonal ones scaled by ``sqrt 2``
    so that ``vec(A) . vec(B) = <A, B>_F``.
    """
    array = np.asarray(matrices, dtype=np.float64)
    rows, cols, weights = _sym_indices(array.shape[-1])
    result: FloatArray = array[..., rows, cols] * weights
    return result


def sym_from_vec(vectors: npt.ArrayLike, k: int) -> FloatArray:
    """Inverse of `vec_from_sym`: ``(..., k(k+1)/2)`` -> symmetric ``(..., k, k)``."""
    array = np.asarray(vectors, dtype=np.float64)
    rows, cols, weights = _sym_indices(k)
    # ``+ 0.0`` turns -0.0 into +0.0, as the sum of the triangles this replaces did: the same bits.
    values = array / weights + 0.0
    result: FloatArray = np.empty((*array.shape[:-1], k, k))
    result[..., rows, cols] = values
    result[..., cols, rows] = values
    return result


@dataclass(frozen=True)
class Block:
    """A contiguous slice ``[start, stop)`` of ``w`` with a cone constraint and a prior scale.

    ``kind`` is one of `BLOCK_KINDS`; ``"nsd"``/``"psd"`` blocks hold `vec_from_sym` of a ``(size, size)``
    matrix. ``norm_weight`` is the block's weight in a ``"sum"`` family norm.
    """

    start: int
    stop: int
    kind: str
    scale: float
    size: int = 0
    norm_weight: float = 1.0


@dataclass(frozen=True)
class Family:
    """Parameter layout of a metric family: blocks and the norm that gives ``phi`` its normalisation.

    ``norm_kind`` ``"l2"``: ``N(w) = |w|_2`` (linear and quadratic metrics, ``|a|^2 + |B|_F^2 = 1``);
    ``"sum"``: ``N(w) = sum_b norm_weight_b |w_b|_2`` (fair metrics, ``|a| + 1/2 sum |B^{uv}|_F = 1``).

    ``increasing_on`` (quadratic layout only: ``a`` in the first block, ``vec B`` in the second): the
    metric's gradient ``a + B r`` is non-negative in every class for every ``r`` in this ball, so it never
    prefers a classifier worse in every class there. For centre ``c`` and radius ``rho`` that is
    ``a_i + (B c)_i - rho |B_i| >= 0`` per row ``B_i`` (`elicitation.geometry.gradient_floor`): a convex
    cone, like the others.
    """

    blocks: tuple[Block, ...]
    norm_kind: str
    increasing_on: Sphere | None = None

    @property
    def dim(self) -> int:
        """Length of ``w``."""
        return self.blocks[-1].stop

    @property
    def prior_scale(self) -> FloatArray:
        """Per-coordinate prior standard deviation, shape ``(dim,)``."""
        scale = np.empty(self.dim)
        for block in self.blocks:
            scale[block.start : block.stop] = block.scale
        return scale

    def norm(self, particles: FloatArray) -> FloatArray:
        """``N(w)`` for every row of ``particles`` (``(n, dim)`` -> ``(n,)``)."""
        squares = np.stack([np.sum(particles[:, b.start : b.stop] ** 2, axis=1) for b in self.blocks], axis=0)
        return self._combine(squares)

    def _combine(self, squares: FloatArray) -> FloatArray:
        """Combine per-block squared norms ``(n_blocks, n)`` into ``N``."""
        if self.norm_kind == "l2":
            result: FloatArray = np.sqrt(np.sum(squares, axis=0))
            return result
        weights = np.array([b.norm_weight for b in self.blocks])[:, None]
        combined: FloatArray = np.sum(weights * np.sqrt(np.maximum(squares, 0.0)), axis=0)
        return combined

    def gradient_floor(self, particles: FloatArray) -> FloatArray:
        """Per row and class, the smallest gradient entry ``min_r (a + B r)_i`` over `increasing_on`."""
        assert self.increasing_on is not None, "only a family increasing on a ball has a gradient floor"
        linear, matrix = self.blocks[0], self.blocks[1]
        B = sym_from_vec(particles[:, matrix.start : matrix.stop], matrix.size)
        return gradient_floor(particles[:, linear.start : linear.stop], B, self.increasing_on)

    def in_cone(self, particles: FloatArray) -> npt.NDArray[np.bool_]:
        """True for rows that satisfy every block's cone constraint (up to rounding)."""
        ok = np.ones(particles.shape[0], dtype=bool)
        if self.increasing_on is not None:
            ok &= np.all(self.gradient_floor(particles) >= -1e-12, axis=1)
        for block in self.blocks:
            values = particles[:, block.start : block.stop]
            if block.kind == "nonnegative":
                ok &= np.all(values >= -1e-12, axis=1)
            elif block.kind in ("nsd", "psd"):
                sign = -1.0 if block.kind == "nsd" else 1.0
                eig = np.linalg.eigvalsh(sign * sym_from_vec(values, block.size))
                ok &= eig[:, 0] >= -1e-10 * np.maximum(1.0, np.abs(eig[:, -1]))
        return ok


def _truncated_normal(
    rng: np.random.Generator, mean: FloatArray, sd: FloatArray, lo: FloatArray, hi: FloatArray
) -> FloatArray:
    """One draw per entry from ``N(mean, sd^2)`` restricted to ``[lo, hi]`` (bounds may be infinite).

    Inverse-CDF sampling on the side of the bulk that keeps precision: intervals in the upper tail are
    mirrored to the lower tail, where ``ndtr`` is accurate.
    """
    alpha = (lo - mean) / sd
    beta = (hi - mean) / sd
    u = rng.random(mean.shape)
    upper = alpha > 0.0
    a = np.where(upper, -beta, alpha)
    b = np.where(upper, -alpha, beta)
    p_lo = special.ndtr(a)
    p_hi = special.ndtr(b)
    # Intervals deep in a tail have p_hi == p_lo in floating point; there the density is nearly
    # exponential across the interval and a uniform draw between the finite ends is an adequate fallback.
    with np.errstate(divide="ignore", invalid="ignore"):
        z = special.ndtri(p_lo + u * (p_hi - p_lo))
        uniform = a + u * (b - a)
    finite = np.isfinite(a) & np.isfinite(b)
    degenerate = ~np.isfinite(z) | (p_hi - p_lo <= 1e-300)
    z = np.where(degenerate & finite, uniform, z)
    z = np.where(degenerate & ~finite, np.where(np.isfinite(a), a, np.where(np.isfinite(b), b, 0.0)), z)
    # np.clip's bits, without its Python-level argument handling (this runs a dozen times per move).
    z = np.minimum(np.maximum(z, a), b)
    z = np.where(upper, -z, z)
    result: FloatArray = mean + sd * z
    return result


@dataclass(frozen=True, eq=False)
class PosteriorState:
    """Everything a `ParticlePosterior` holds beyond its configuration and rng (arrays are copies).

    ``signed`` has one row per answer that was not dropped; ``dropped`` lists the ignored answers' indices.
    """

    particles: FloatArray
    log_weights: FloatArray
    beta_index: IntArray
    signed: FloatArray
    dropped: tuple[int, ...]
    n_answers: int


def _logsigmoid(x: FloatArray) -> FloatArray:
    result: FloatArray = -np.logaddexp(0.0, -x)
    return result


def _answer_loglik(x: FloatArray, lapse: float) -> FloatArray:
    """``log P(y)`` of an answer with logistic argument ``x = beta y <w, f> / N(w)`` and lapse rate ``lapse``.

    ``lapse = 0`` is the plain logistic model, computed exactly as before (no mixture term at all).
    """
    if lapse == 0.0:
        return _logsigmoid(x)
    result: FloatArray = np.logaddexp(np.log(lapse / 2.0), np.log1p(-lapse) + _logsigmoid(x))
    return result


def config_number(value: object, message: str) -> float:
    """``value`` as a float, or `InvalidConfigError` with ``message`` (a bool is not a number here)."""
    if isinstance(value, bool):
        raise InvalidConfigError(message)
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(message) from exc


def check_lapse(lapse: object, betas: Sequence[float] | None) -> float:
    """Validate a lapse rate: a number in ``[0, 1)``, non-zero only with a noisy answer model."""
    number = config_number(lapse, f"lapse must be a number in [0, 1), got {lapse!r}")
    if not np.isfinite(number) or number < 0.0 or number >= 1.0:
        raise InvalidConfigError(f"lapse must be a number in [0, 1), got {lapse!r}")
    if number > 0.0 and betas is None:
        raise InvalidConfigError(
            "lapse needs a noisy answer model (a beta or a beta grid); the noise-free model (beta=None) "
            "treats every answer as a hard constraint and ignores contradicting ones instead"
        )
    return number


class ParticlePosterior:
    """Weighted particles ``(w_j, beta_j)`` approximating the posterior after the answers seen so far.

    Parameters
    ----------
    family : Family
        Parameter layout, cone constraints, prior scales and norm.
    betas : sequence of float or None
        Noise levels of the logistic answer model (a grid is marginalised with a uniform prior);
        ``None`` selects the noise-free model (answers are hard half-space constraints).
    n_particles : int
        Number of particles.
    rng : numpy.random.Generator or int
        The only source of randomness.
    moves : int
        Line moves per rejuvenation.
    burn_in : int
        Prior-only sweeps (a radial and a line move each) from the initial cone draws.
    lapse : float
        Share of answers given by a coin rather than the logistic model (`check_lapse`: in ``[0, 1)``,
        non-zero only with ``betas``). The burn-in sees no answer, so it does not depend on it.
    """

    def __init__(
        self,
        family: Family,
        betas: Sequence[float] | None,
        n_particles: int,
        rng: RandomState,
        *,
        moves: int = DEFAULT_MOVES,
        burn_in: int = DEFAULT_BURN_IN,
        lapse: float = 0.0,
    ) -> None:
        self.family = family
        self.hard = betas is None
        self.lapse = check_lapse(lapse, betas)
        self.betas: FloatArray = np.array([np.inf] if betas is None else list(betas), dtype=np.float64)
        self.n = int(n_particles)
        self.rng = as_generator(rng)
        self.moves = int(moves)
        self.signed: FloatArray = np.zeros((0, family.dim))
        self.dropped: list[int] = []
        self.n_answers = 0
        self.particles = self._initial_particles()
        self.log_weights = np.zeros(self.n)
        self.beta_index: IntArray = self.rng.integers(0, self.betas.shape[0], self.n).astype(np.int64)
        for sweep in range(burn_in):
            self._radial_move()
            self._line_move(isotropic=sweep % 2 == 0)

    @classmethod
    def restored(
        cls,
        family: Family,
        betas: Sequence[float] | None,
        rng: np.random.Generator,
        state: PosteriorState,
        *,
        moves: int = DEFAULT_MOVES,
        lapse: float = 0.0,
    ) -> ParticlePosterior:
        """The posterior whose `state` was ``state``, drawing from ``rng`` from now on (no burn-in).

        The caller vouches for ``state`` (shapes and values are checked by `elicitation.active.checkpoint`);
        with ``rng`` in the state it had then, the posterior continues exactly as the original did.
        """
        posterior = cls.__new__(cls)
        posterior.family = family
        posterior.hard = betas is None
        posterior.lapse = check_lapse(lapse, betas)
        posterior.betas = np.array([np.inf] if betas is None else list(betas), dtype=np.float64)
        posterior.n = int(state.particles.shape[0])
        posterior.rng = rng
        posterior.moves = int(moves)
        posterior.signed = np.array(state.signed, dtype=np.float64)
        posterior.dropped = list(state.dropped)
        posterior.n_answers = int(state.n_answers)
        posterior.particles = np.array(state.particles, dtype=np.float64)
        posterior.log_weights = np.array(state.log_weights, dtype=np.float64)
        posterior.beta_index = np.array(state.beta_index, dtype=np.int64)
        return posterior

    # ------------------------------------------------------------------------------------------------
    # Public interface
    # ------------------------------------------------------------------------------------------------

    # A question's search and a rejuvenation read the weights and the normalised particles a dozen times
    # between two changes; they are computed once per change (read-only, so no caller alters the cache).
    _particles: FloatArray
    _log_weights: FloatArray
    _normalised: FloatArray | None
    _weights: FloatArray | None

    @property
    def particles(self) -> FloatArray:
        """The particles ``w_j``, shape ``(n_particles, dim)`` (replaced, never changed in place)."""
        return self._particles

    @particles.setter
    def particles(self, value: FloatArray) -> None:
        self._particles = value
        self._normalised = None

    @property
    def log_weights(self) -> FloatArray:
        """Unnormalised log weights, shape ``(n_particles,)`` (replaced, never changed in place)."""
        return self._log_weights

    @log_weights.setter
    def log_weights(self, value: FloatArray) -> None:
        self._log_weights = value
        self._weights = None

    def state(self) -> PosteriorState:
        """A copy of the particles, weights, noise indices and answers (see `restored`)."""
        return PosteriorState(
            particles=self.particles.copy(),
            log_weights=self.log_weights.copy(),
            beta_index=self.beta_index.copy(),
            signed=self.signed.copy(),
            dropped=tuple(self.dropped),
            n_answers=self.n_answers,
        )

    @property
    def weights(self) -> FloatArray:
        """Normalised particle weights, shape ``(n_particles,)`` (read-only)."""
        if self._weights is None:
            shifted = self.log_weights - np.max(self.log_weights)
            w = np.exp(shifted)
            result: FloatArray = w / np.sum(w)
            result.setflags(write=False)
            self._weights = result
        return self._weights

    @property
    def effective_size(self) -> float:
        """Effective sample size ``1 / sum w_j^2`` of the weights."""
        w = self.weights
        return float(1.0 / np.sum(w * w))

    def normalised(self) -> FloatArray:
        """Particles scaled to ``N(w) = 1`` (the paper's normalisation), ``(n_particles, dim)``, read-only."""
        if self._normalised is None:
            result: FloatArray = self.particles / self.family.norm(self.particles)[:, None]
            result.setflags(write=False)
            self._normalised = result
        return self._normalised

    def beta_probabilities(self) -> FloatArray:
        """Posterior probability of each ``beta`` grid value, shape ``(n_betas,)``."""
        result: FloatArray = np.bincount(
            self.beta_index, weights=self.weights, minlength=self.betas.shape[0]
        ).astype(np.float64)
        return result

    def answer_probabilities(self, features: FloatArray) -> FloatArray:
        """``P(first preferred | w_j, beta_j)`` for each candidate and particle: ``(n_cand, n_particles)``."""
        margins = features @ self.normalised().T
        if self.hard:
            result: FloatArray = (margins > 0.0).astype(np.float64)
            return result
        # In place: the candidates-by-particles matrix is the largest array of a question's search.
        margins *= self.betas[self.beta_index][None, :]
        return self.lapsed(special.expit(margins, out=margins))

    def lapsed(self, probabilities: FloatArray) -> FloatArray:
        """The answer model's probabilities from its logistic part's, in place: with a lapse rate
        ``lapse / 2 + (1 - lapse) p``, without one ``p`` itself."""
        if self.lapse:
            probabilities *= 1.0 - self.lapse
            probabilities += self.lapse / 2.0
        return probabilities

    def update(self, signed_feature: FloatArray) -> None:
        """Condition on one answer, given as ``y * f`` (so that the answer says ``<w, y f> > 0``)."""
        index = self.n_answers
        self.n_answers += 1
        margins = self.particles @ signed_feature / self.family.norm(self.particles)
        if self.hard:
            consistent = margins > 0.0
            if not np.any(consistent[self.log_weights > -np.inf]):
                # No particle of positive weight agrees: the answers contradict each other (or the
                # family). Inconsistent answers are valid input, so this one is recorded and ignored.
                self.dropped.append(index)
                return
            self.log_weights = np.where(consistent, self.log_weights, -np.inf)
        else:
            loglik = _answer_loglik(self.betas[self.beta_index] * margins, self.lapse)
            self.log_weights = self.log_weights + loglik
        self.signed = np.vstack([self.signed, signed_feature[None, :]])
        if not np.all(np.isfinite(self.particles)):
            raise NumericalError("the particle posterior produced non-finite parameters")
        if self.effective_size < RESAMPLE_THRESHOLD * self.n:
            self._resample()
            for move in range(self.moves):
                self._radial_move()
                self._line_move(isotropic=(move + 1) % _ISOTROPIC_EVERY == 0)
            if not self.hard and self.betas.shape[0] > 1:
                self._beta_move()

    # ------------------------------------------------------------------------------------------------
    # Initialisation and moves
    # ------------------------------------------------------------------------------------------------

    def _initial_particles(self) -> FloatArray:
        """Points strictly inside the cone (burn-in then targets the truncated Gaussian prior)."""
        particles = self.rng.standard_normal((self.n, self.family.dim)) * self.family.prior_scale
        for block in self.family.blocks:
            values = particles[:, block.start : block.stop]
            if block.kind == "nonnegative":
                particles[:, block.start : block.stop] = np.abs(values)
            elif block.kind in ("nsd", "psd"):
                k = block.size
                g = self.rng.standard_normal((self.n, k, k + 1)) * block.scale / np.sqrt(k + 1)
                gram = g @ np.swapaxes(g, 1, 2)
                sign = -1.0 if block.kind == "nsd" else 1.0
                particles[:, block.start : block.stop] = vec_from_sym(sign * gram)
        if self.family.increasing_on is not None:
            # Raise each gradient entry's floor above zero by the size of the Gaussian draw for ``a``.
            linear = self.family.blocks[0]
            values = particles[:, linear.start : linear.stop]
            floor = self.family.gradient_floor(particles) - values
            particles[:, linear.start : linear.stop] = np.abs(values) + np.maximum(-floor, 0.0)
        return particles

    def _resample(self) -> None:
        """Systematic resampling to equal weights."""
        w = self.weights
        positions = (self.rng.random() + np.arange(self.n)) / self.n
        cumulative = np.cumsum(w)
        cumulative[-1] = 1.0
        index = np.searchsorted(cumulative, positions, side="right")
        index = np.minimum(index, self.n - 1)
        self.particles = self.particles[index].copy()
        self.beta_index = self.beta_index[index].copy()
        self.log_weights = np.zeros(self.n)

    def _radial_move(self) -> None:
        """Exact Gibbs draw of ``|w|`` given the direction (the likelihood does not see the scale)."""
        precision = 1.0 / self.family.prior_scale**2
        radius = np.linalg.norm(self.particles, axis=1)
        direction = self.particles / radius[:, None]
        quadratic = np.sum(direction * direction * precision, axis=1)
        new_radius = np.sqrt(self.rng.chisquare(self.family.dim, self.n) / quadratic)
        self.particles = direction * new_radius[:, None]

    def _constraint_precision(self) -> FloatArray:
        """Curvature of the answers' log-likelihood at the posterior mean, shape ``(dim, dim)``.

        Noise-free: the Hessian of the log-barrier ``-sum log <w, y f>`` (its Dikin ellipsoid is inscribed
        in the feasible cone, long where few answers bind); noisy: the Fisher information. Unlike the
        particles' covariance it is computed from the answers, so it cannot inherit a collapse of the cloud.
        """
        mean = self.weights @ self.normalised()
        margins = self.signed @ mean
        if self.hard:
            curvature = 1.0 / np.maximum(margins, 1e-12) ** 2
        else:
            beta = float(self.weights @ self.betas[self.beta_index])
            p = 1.0 / (1.0 + np.exp(-np.clip(beta * margins, -50.0, 50.0)))
            if self.lapse:
                # Fisher information of the mixture: (dP/dm)^2 / (P (1 - P)), P = lapse/2 + (1-lapse) p.
                mixed = self.lapsed(p.copy())
                curvature = ((1.0 - self.lapse) * beta * p * (1.0 - p)) ** 2 / (mixed * (1.0 - mixed))
            else:
                curvature = beta**2 * p * (1.0 - p)
        result: FloatArray = (self.signed * curvature[:, None]).T @ self.signed
        return result

    def _directions(self, isotropic: bool) -> FloatArray:
        z = self.rng.standard_normal((self.n, self.family.dim))
        if isotropic:
            if self.signed.shape[0] == 0:
                result: FloatArray = z * self.family.prior_scale
                return result
            # Directions distributed as the inverse of the answers' curvature (plus the prior's).
            radius = float(self.weights @ np.linalg.norm(self.particles, axis=1))
            precision = self._constraint_precision() / radius**2 + np.diag(1.0 / self.family.prior_scale**2)
            try:
                factor = np.linalg.cholesky(precision)
            except np.linalg.LinAlgError:
                # Exact answers pin some margins to ~0, so their curvature swamps the rest and rounding
                # leaves the matrix indefinite: draw from its eigen-decomposition, small modes clipped.
                return _inverse_root_draws(precision, z)
            dikin: FloatArray = np.linalg.solve(factor.T, z.T).T
            return dikin
        # The covariance of the particles' unit directions, scaled by each particle's length: steps
        # follow the posterior's shape (long along weakly identified directions, short elsewhere).
        w = self.weights
        unit = self.particles / np.linalg.norm(self.particles, axis=1)[:, None]
        mean = w @ unit
        centred = unit - mean
        covariance = (centred * w[:, None]).T @ centred
        ridge = _COVARIANCE_RIDGE * max(float(np.trace(covariance)), 1e-12) / self.family.dim
        covariance += ridge * np.eye(self.family.dim)
        factor = np.linalg.cholesky(covariance)
        scaled: FloatArray = (z @ factor.T) * np.linalg.norm(self.particles, axis=1)[:, None]
        return scaled

    def _linear_interval(self, directions: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``[lo, hi]`` of steps ``s`` keeping ``w + s u`` in the linear constraints (``lo <= 0 <= hi``).

        Those are the non-negativity blocks and, for the noise-free model, every answer's half-space.
        """
        lo = np.full(self.n, -np.inf)
        hi = np.full(self.n, np.inf)
        pieces = [
            (self.particles[:, b.start : b.stop].T, directions[:, b.start : b.stop].T)
            for b in self.family.blocks
            if b.kind == "nonnegative"
        ]
        if self.hard and self.signed.shape[0] > 0:
            pieces.append((self.signed @ self.particles.T, self.signed @ directions.T))
        for value, along in pieces:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = -value / along
            lo = np.maximum(lo, np.max(np.where(along > 0.0, ratio, -np.inf), axis=0))
            hi = np.minimum(hi, np.min(np.where(along < 0.0, ratio, np.inf), axis=0))
        lo, hi = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
        width = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
        # Stay a hair inside the chord so rounding never puts a particle on a constraint's boundary.
        return lo + _CHORD_MARGIN * width, hi - _CHORD_MARGIN * width

    def _in_curved_cones(self, points: FloatArray) -> npt.NDArray[np.bool_]:
        """The cones a line crosses where no closed form gives the chord: semi-definite, increasing."""
        ok = np.ones(points.shape[0], dtype=bool)
        if self.family.increasing_on is not None:
            ok &= np.all(self.family.gradient_floor(points) >= 0.0, axis=1)
        for block in self.family.blocks:
            if block.kind in ("nsd", "psd"):
                sign = -1.0 if block.kind == "nsd" else 1.0
                # Only the points every earlier cone admits (LAPACK decides each matrix on its own).
                rows = np.flatnonzero(ok)
                matrices = sign * sym_from_vec(points[rows, block.start : block.stop], block.size)
                ok[rows] = np.linalg.eigvalsh(matrices)[:, 0] >= 0.0
        return ok

    def _line_move(self, *, isotropic: bool) -> None:
        """One hit-and-run / slice move of every particle along a random line.

        The step is drawn from the Gaussian prior restricted to the chord of the linear constraints; a
        proposal outside a semi-definite or increasing cone or (noisy model) below the slice level shrinks
        the bracket towards the current point. Feasible sets along a line are intervals containing 0
        (convex cones), and the likelihood slice is handled exactly by the shrinkage, so the move leaves
        the posterior invariant.
        """
        u = self._directions(isotropic)
        left, right = self._linear_interval(u)
        precision = 1.0 / self.family.prior_scale**2
        curvature = np.sum(u * u * precision, axis=1)
        slope = np.sum(self.particles * u * precision, axis=1)
        mean = -slope / curvature
        sd = 1.0 / np.sqrt(curvature)
        soft = not self.hard and self.signed.shape[0] > 0
        curved = self.family.increasing_on is not None or any(
            b.kind in ("nsd", "psd") for b in self.family.blocks
        )
        if soft:
            beta = self.betas[self.beta_index]
            margins = self.signed @ self.particles.T
            along = self.signed @ u.T
            norms = self._line_norms(u)
            zero = np.zeros(self.n)
            threshold = self._line_loglik(zero, margins, along, norms, beta) - self.rng.exponential(
                1.0, self.n
            )
            # Initial bracket: a window of about _SLICE_WIDTH posterior standard deviations, placed at a
            # uniformly random offset around the current point (Neal 2003, section 4.1). Its length
            # depends only on the line (population curvature computed before the move), not on where on
            # the line the particle sits, so the move stays reversible; shrinking then needs a few steps
            # instead of the dozen the whole prior chord would.
            length = np.linalg.norm(u, axis=1)
            unit = u / length[:, None]
            radius = float(self.weights @ np.linalg.norm(self.particles, axis=1))
            along_curvature = np.einsum("nd,de,ne->n", unit, self._constraint_precision(), unit) / radius**2
            along_curvature += np.sum(unit * unit * precision, axis=1)
            window = _SLICE_WIDTH / np.sqrt(along_curvature) / length
            offset = self.rng.random(self.n) * window
            left = np.maximum(left, -offset)
            right = np.minimum(right, window - offset)
        step = np.zeros(self.n)
        pending = np.arange(self.n)
        for _ in range(_MAX_SHRINKS):
            if pending.size == 0:
                break
            proposal = _truncated_normal(self.rng, mean[pending], sd[pending], left[pending], right[pending])
            accepted = np.ones(pending.size, dtype=bool)
            if curved:
                accepted &= self._in_curved_cones(self.particles[pending] + proposal[:, None] * u[pending])
            if soft:
                check = np.flatnonzero(accepted)
                sub = pending[check]
                sub_norms = (norms[0][:, sub], norms[1][:, sub], norms[2][:, sub])
                loglik = self._line_loglik(
                    proposal[check], margins[:, sub], along[:, sub], sub_norms, beta[sub]
                )
                accepted[check] = loglik > threshold[sub]
            step[pending[accepted]] = proposal[accepted]
            rejected = pending[~accepted]
            below = proposal[~accepted] < 0.0
            left[rejected[below]] = proposal[~accepted][below]
            right[rejected[~below]] = proposal[~accepted][~below]
            pending = rejected
        self.particles = self.particles + step[:, None] * u

    def _line_norms(self, u: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Per-block coefficients of ``|w_b + s u_b|^2 = c0 + 2 s c1 + s^2 c2``, each ``(n_blocks, n)``."""
        blocks = self.family.blocks
        c0 = np.stack([np.sum(self.particles[:, b.start : b.stop] ** 2, axis=1) for b in blocks])
        c1 = np.stack(
            [np.sum(self.particles[:, b.start : b.stop] * u[:, b.start : b.stop], axis=1) for b in blocks]
        )
        c2 = np.stack([np.sum(u[:, b.start : b.stop] ** 2, axis=1) for b in blocks])
        return c0, c1, c2

    def _line_loglik(
        self,
        step: FloatArray,
        margins: FloatArray,
        along: FloatArray,
        norms: tuple[FloatArray, FloatArray, FloatArray],
        beta: FloatArray,
    ) -> FloatArray:
        c0, c1, c2 = norms
        squares = c0 + 2.0 * step[None, :] * c1 + step[None, :] ** 2 * c2
        scale = self.family._combine(squares)
        z = (margins + step[None, :] * along) * (beta / scale)[None, :]
        result: FloatArray = np.sum(_answer_loglik(z, self.lapse), axis=0)
        return result

    def _beta_move(self) -> None:
        """Exact Gibbs draw of each particle's noise level from the grid."""
        margins = (self.signed @ self.particles.T) / self.family.norm(self.particles)[None, :]
        loglik = np.stack([np.sum(_answer_loglik(b * margins, self.lapse), axis=0) for b in self.betas])
        gumbel = -np.log(self.rng.exponential(1.0, loglik.shape))
        self.beta_index = np.argmax(loglik + gumbel, axis=0).astype(np.int64)


#: `shared_prior`'s clouds by description (least recently used first); values are read-only arrays.
_SHARED_PRIORS: OrderedDict[str, tuple[FloatArray, IntArray]] = OrderedDict()
_SHARED_PRIORS_LOCK = threading.Lock()


def _prior_description(
    family: Family, betas: tuple[float, ...] | None, n_particles: int, burn_in: int
) -> str:
    """Everything a burnt-in prior cloud depends on, with exact float bits (JSON): its cache key and seed."""

    def bits(value: float) -> str:
        return float(value).hex()

    sphere = family.increasing_on
    described = {
        "purpose": "prior burn-in",
        "blocks": [
            [block.start, block.stop, block.kind, bits(block.scale), block.size, bits(block.norm_weight)]
            for block in family.blocks
        ],
        "norm": family.norm_kind,
        "increasing_on": None
        if sphere is None
        else {"center": [bits(value) for value in np.asarray(sphere.center)], "radius": bits(sphere.radius)},
        "betas": None if betas is None else [bits(beta) for beta in betas],
        "n_particles": int(n_particles),
        "burn_in": int(burn_in),
    }
    return json.dumps(described, sort_keys=True, separators=(",", ":"))


def shared_prior(
    family: Family, betas: Sequence[float] | None, n_particles: int, *, burn_in: int = DEFAULT_BURN_IN
) -> PosteriorState:
    """The burnt-in prior particle cloud of a configuration, drawn from a random stream of its own.

    The stream is seeded by a SHA-256 of everything the cloud depends on (family and cone, noise grid,
    particle count, sweeps), never by a session, so the cloud is the same in every process and every
    session of the configuration; a caller then continues with `ParticlePosterior.restored` and its
    session's own generator, which decides every later random choice. The burn-in is what a new session
    mostly costs before its first question; here it runs once per configuration and process (the last
    `SHARED_PRIOR_CACHE_SIZE` are kept). The returned state holds fresh copies: callers may change them.
    """
    grid = None if betas is None else tuple(float(beta) for beta in betas)
    key = _prior_description(family, grid, n_particles, burn_in)
    with _SHARED_PRIORS_LOCK:
        cached = _SHARED_PRIORS.get(key)
        if cached is not None:
            _SHARED_PRIORS.move_to_end(key)
    if cached is None:
        # Outside the lock: two threads meeting a new configuration at once compute the same cloud.
        seed = int.from_bytes(hashlib.sha256(key.encode()).digest(), "big")
        prior = ParticlePosterior(family, grid, n_particles, np.random.default_rng(seed), burn_in=burn_in)
        particles, beta_index = prior.particles.copy(), prior.beta_index.copy()
        particles.setflags(write=False)
        beta_index.setflags(write=False)
        cached = (particles, beta_index)
        with _SHARED_PRIORS_LOCK:
            _SHARED_PRIORS[key] = cached
            _SHARED_PRIORS.move_to_end(key)
            while len(_SHARED_PRIORS) > SHARED_PRIOR_CACHE_SIZE:
                _SHARED_PRIORS.popitem(last=False)
    particles, beta_index = cached
    return PosteriorState(
        particles=particles.copy(),
        log_weights=np.zeros(particles.shape[0]),
        beta_index=beta_index.copy(),
        signed=np.zeros((0, family.dim)),
        dropped=(),
        n_answers=0,
    )


def check_betas(beta: float | Sequence[float] | None) -> tuple[float, ...] | None:
    """Validate a noise level or grid; ``None`` (noise-free) passes through."""
    if beta is None:
        return None
    values = [beta] if isinstance(beta, (int, float, np.floating, np.integer)) else list(beta)
    if isinstance(beta, bool) or not values:
        raise InvalidConfigError(
            f"beta must be a positive number, a non-empty list of them or None, got {beta!r}"
        )
    result = []
    for value in values:
        number = config_number(value, f"beta values must be numbers, got {value!r}")
        if not np.isfinite(number) or number <= 0.0:
            raise InvalidConfigError(f"beta values must be positive finite numbers, got {value!r}")
        result.append(number)
    if len(set(result)) != len(result):
        raise InvalidConfigError(f"beta grid values must be distinct, got {result}")
    return tuple(result)


def _inverse_root_draws(precision: FloatArray, z: FloatArray) -> FloatArray:
    """Rows ``z`` mapped to draws with covariance ``precision^-1``, eigenvalues clipped to stay positive."""
    values, vectors = np.linalg.eigh((precision + precision.T) / 2.0)
    floor = _PRECISION_FLOOR * max(float(values[-1]), 1e-300)
    draws: FloatArray = (z @ vectors) / np.sqrt(np.maximum(values, floor)) @ vectors.T
    return draws
