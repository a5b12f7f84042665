"""Query selection of active elicitation: perceptible candidate pairs scored by the posterior."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..display import DisplayGrid
from ..errors import InvalidConfigError
from ..posterior import ParticlePosterior, sym_from_vec
from ..types import (
    FloatArray,
    Query,
)
from .families import Config

__all__ = [
    "FRESH_CELL_GAP",
    "choose_query",
    "fresh",
    "perceptible",
]

#: Perturbation scales (shares of the radius) of the refinement rounds; the counts of every stage are the
#: configuration's `elicitation.active.effort.SearchEffort`. Exact-tie candidates (quadratic family) halve
#: the error in B at k = 2 (docs/benchmarks.md, "Measurements behind the defaults").
_PERTURB_SCALES = (0.3, 0.1)
#: Pairs of classifiers on the data drawn per trade-off question (`_tradeoff_pairs`).
_N_TRADEOFF = 256
#: Pairs ever tried to find perceptible candidates before the configuration is declared impossible.
_MAX_CANDIDATE_ROUNDS = 8
#: With ``fresh_screens``: some displayed cell of a question differs from the question before by at least
#: this many people (in either order of the sides); closer, the two screens look alike.
FRESH_CELL_GAP = 3.0


def _binary_entropy(p: FloatArray) -> FloatArray:
    """``-(q log q + (1 - q) log(1 - q))`` with ``q`` clipped away from 0 and 1, computed in place (the
    candidates-by-particles matrices are a question's largest arrays; the operations are the same)."""
    q = np.clip(p, 1e-12, 1.0 - 1e-12)
    other = 1.0 - q
    result: FloatArray = np.log(q)
    result *= q
    tail = np.log(other)
    tail *= other
    result += tail
    return np.negative(result, out=result)


def _information_gain(probabilities: FloatArray, weights: FloatArray, hard: bool) -> FloatArray:
    """Mutual information between the answer and the parameters for each candidate row."""
    mean = probabilities @ weights
    gain = _binary_entropy(mean)
    if not hard:
        gain = gain - _binary_entropy(probabilities) @ weights
    return gain


def perceptible(config: Config, first: FloatArray, second: FloatArray) -> npt.NDArray[np.bool_]:
    result: npt.NDArray[np.bool_] = config.geometry.cell_gap(first, second) >= config.min_cell_gap
    return result


def _variance_reduction(
    probabilities: FloatArray, weights: FloatArray, theta: FloatArray, mean: FloatArray
) -> FloatArray:
    """Expected drop of the posterior's total variance ``E|theta - E theta|^2`` for each candidate row.

    By the law of total variance the drop is ``Var_y(E[theta | y]) = sum_y P(y) |E[theta | y] - E theta|^2``;
    with two answers this is ``P(+) |m_+ - m|^2 / P(-)`` where ``m_+`` is the mean given "first".
    """
    p_first = probabilities @ weights
    shifted = (probabilities * weights[None, :]) @ theta  # (n_cand, dim): P(+) E[theta | +]
    deviation = shifted - p_first[:, None] * mean[None, :]  # P(+) (m_+ - m)
    other = np.clip(1.0 - p_first, 1e-12, None)
    first = np.clip(p_first, 1e-12, None)
    result: FloatArray = np.sum(deviation**2, axis=1) * (1.0 / first + 1.0 / other)
    return result


def _tradeoff_pairs(config: Config, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """Perceptible pairs of classifiers on the data: each group's rates a random mixture of two of its
    sensible frontier classifiers (``config.tradeoff_rates``), rounded down to the display. Far wider than
    the query region, so the gap between the groups can change enough to weigh against mistakes overall."""
    assert config.tradeoff_rates is not None
    sides = []
    for _side in range(2):
        rows = []
        for pool in config.tradeoff_rates:
            i, j = rng.integers(pool.shape[0], size=(2, _N_TRADEOFF))
            share = rng.random((_N_TRADEOFF, 1))
            rows.append(share * pool[i] + (1.0 - share) * pool[j])
        side = np.stack(rows, axis=1).reshape((_N_TRADEOFF, *config.geometry.shape))
        grid = config.geometry.grid
        if grid is not None:
            # Rounded down to what the chart shows: a point just below the data's frontier stays feasible
            # (rounding to the nearest could step outside it).
            steps = grid.class_steps.reshape(side.shape[1:])
            side = np.floor(side * steps + 1e-9) / steps
        sides.append(side)
    keep = perceptible(config, sides[0], sides[1])
    return sides[0][keep], sides[1][keep]


def _conflicts(k: int, features: FloatArray, params: FloatArray) -> npt.NDArray[np.bool_]:
    """Fair features on which the overall-mistakes part and the group-gap part of ``params`` prefer
    different sides: the pairs whose answer depends on the trade-off ``lam`` (Definition 3)."""
    result: npt.NDArray[np.bool_] = (features[:, :k] @ params[:k]) * (features[:, k:] @ params[k:]) < 0.0
    return result


def _systematic(weights: FloatArray, count: int, rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """``count`` particle indices drawn by systematic resampling of ``weights``."""
    cumulative = np.cumsum(weights)
    cumulative[-1] = 1.0
    index = np.searchsorted(cumulative, (rng.random() + np.arange(count)) / count, side="right")
    result: npt.NDArray[np.int64] = np.minimum(index, weights.shape[0] - 1).astype(np.int64)
    return result


def _tie_pairs(config: Config, params: FloatArray, rng: np.random.Generator) -> tuple[FloatArray, FloatArray]:
    """Perceptible pairs that are exact ties under one of the quadratic parameter vectors ``params``.

    When the gradient dominates, random pairs are decided by the linear part and say little about ``B``;
    two distant points on one level set of a plausible metric split the posterior by its curvature. For
    ``r2 = r1 + t u``, ``phi(r2) = phi(r1)`` has the closed form ``t = -2 <a + B r1, u> / u^T B u``. The
    direction ``u`` is pulled towards the level set's tangent (a random share of its gradient component
    removed) so that ``r2`` often stays in the sphere; pairs leaving it are dropped, not clipped.
    """
    geometry = config.geometry
    k = config.spec.n_classes
    count = params.shape[0]
    ties = config.search.ties_per_particle
    a = params[:, None, :k]
    B = sym_from_vec(params[:, k:], k)
    r1 = geometry.sample(rng, count * ties).reshape((count, ties, k))
    gradient = a + np.einsum("pij,pnj->pni", B, r1)
    unit_gradient = gradient / np.maximum(np.linalg.norm(gradient, axis=2, keepdims=True), 1e-300)
    u = rng.standard_normal(r1.shape)
    along = np.sum(u * unit_gradient, axis=2, keepdims=True)
    u = u - rng.random((count, ties, 1)) * along * unit_gradient
    u /= np.maximum(np.linalg.norm(u, axis=2, keepdims=True), 1e-300)
    curvature = np.einsum("pni,pij,pnj->pn", u, B, u)
    slope = np.sum(gradient * u, axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.where(curvature < 0.0, -2.0 * slope / curvature, np.inf)
    r2 = r1 + np.where(np.isfinite(step), step, 0.0)[:, :, None] * u
    r1, r2, step = r1.reshape((-1, k)), r2.reshape((-1, k)), step.reshape(-1)
    sphere = geometry.sphere
    inside = (
        np.isfinite(step)
        & (np.linalg.norm(r2 - sphere.center, axis=1) <= sphere.radius * (1.0 - 1e-9))
        & np.all((r2 >= 0.0) & (r2 <= 1.0), axis=1)
    )
    r1, r2 = r1[inside], r2[inside]
    if geometry.grid is not None:
        # ``r1`` was sampled on the grid (`Geometry.sample` snaps), and snapping is idempotent.
        r2 = geometry.grid.snap(r2, sphere)
    keep = perceptible(config, r1, r2)
    return r1[keep], r2[keep]


def fresh(
    grid: DisplayGrid, first: FloatArray, second: FloatArray, previous: Query | None
) -> npt.NDArray[np.bool_]:
    """Which candidate pairs (``(n, *shape)`` each) look plainly new after the ``previous`` question: some
    displayed count at least `FRESH_CELL_GAP` people from it, in either order of the sides
    (`DisplayGrid.distance`)."""
    if previous is None:
        return np.ones(first.shape[0], dtype=bool)
    keep: npt.NDArray[np.bool_] = (
        grid.distance(first, second, previous.first, previous.second) >= FRESH_CELL_GAP
    )
    return keep


def choose_query(
    config: Config,
    posterior: ParticlePosterior,
    rng: np.random.Generator,
    asked: set[bytes],
    previous: Query | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray, float] | None:
    """Pick the most informative perceptible pair not asked before: (first, second, feature, gain).

    ``asked`` holds the displayed pictures (`DisplayGrid.key`) of the pairs already asked, in both orders;
    it is only used with a display grid (without one, exact pairs never repeat). With
    ``config.fresh_screens`` the best candidate that is `fresh` against ``previous`` (the question answered
    last) is preferred to any other; for a family increasing in every rate, any pair not decided by
    dominance (`DisplayGrid.dominated`) is preferred to one that is. Returns None when every perceptible
    candidate found was asked before: the display has nothing new to show, and the elicitor stops there.
    """
    geometry, spec, effort = config.geometry, config.spec, config.search
    first = second = np.empty((0, *geometry.shape))
    for _ in range(_MAX_CANDIDATE_ROUNDS):
        r1, r2 = geometry.sample(rng, effort.random_pairs), geometry.sample(rng, effort.random_pairs)
        keep = perceptible(config, r1, r2)
        first, second = np.concatenate([first, r1[keep]]), np.concatenate([second, r2[keep]])
        if first.shape[0] >= effort.rescored:
            break
    if first.shape[0] == 0:
        raise InvalidConfigError(
            f"no pair in this sphere differs by {config.min_cell_gap:g} people in a confusion cell; "
            "lower min_cell_gap or use a larger sphere"
        )
    lam_turn = (
        spec.kind == "fair"
        and config.tradeoff_every > 0
        and posterior.n_answers % config.tradeoff_every == config.tradeoff_every - 1
    )
    if lam_turn and config.tradeoff_rates is not None:
        wide1, wide2 = _tradeoff_pairs(config, rng)
        first, second = np.concatenate([first, wide1]), np.concatenate([second, wide2])
    weights = posterior.weights
    normalised = posterior.normalised()
    if spec.kind == "quadratic":
        seeds = normalised[_systematic(weights, effort.tie_particles, rng)]
        tie1, tie2 = _tie_pairs(config, np.vstack([seeds, weights @ normalised]), rng)
        first, second = np.concatenate([first, tie1]), np.concatenate([second, tie2])
    features = spec.features(first, second)
    theta = normalised
    centre = weights @ theta
    lam = spec.tradeoff(theta)

    def score(candidates: FloatArray) -> FloatArray:
        probabilities = posterior.answer_probabilities(candidates)
        if lam_turn:
            drop = _variance_reduction(probabilities, weights, lam[:, None], np.array([weights @ lam]))
            # Only a pair on which accuracy and the group gap disagree is a trade-off question; the others
            # rank below every such pair (used only when none is left).
            return np.where(_conflicts(spec.n_classes, candidates, centre), drop, drop - 1.0)
        if config.criterion == "variance":
            return _variance_reduction(probabilities, weights, theta, centre)
        return _information_gain(probabilities, weights, posterior.hard)

    if lam_turn:
        screen = score(features)
    else:
        committee = _systematic(weights, effort.committee, rng)
        margins = features @ normalised[committee].T
        if posterior.hard:
            votes = (margins > 0.0).astype(np.float64)
        else:
            logits = np.clip(margins * posterior.betas[posterior.beta_index[committee]], -50, 50)
            votes = posterior.lapsed(1.0 / (1.0 + np.exp(-logits)))
        screen = _information_gain(votes, np.full(effort.committee, 1.0 / effort.committee), posterior.hard)
    # Ties (e.g. all zero once the posterior is narrow) are broken by the feature size: larger
    # differences are easier to judge and more robust to noise.
    screen = screen + 1e-6 * np.linalg.norm(features, axis=1)
    top = np.argsort(-screen, kind="stable")[: effort.rescored]
    first, second, features = first[top], second[top], features[top]
    scores = score(features)
    for scale in _PERTURB_SCALES:
        leaders = np.argsort(-scores, kind="stable")[: effort.leaders]
        base1 = np.repeat(first[leaders], effort.perturbations, axis=0)
        base2 = np.repeat(second[leaders], effort.perturbations, axis=0)
        new1, new2 = geometry.perturb(rng, base1, scale), geometry.perturb(rng, base2, scale)
        keep = perceptible(config, new1, new2)
        if not np.any(keep):
            continue
        new1, new2 = new1[keep], new2[keep]
        new_features = spec.features(new1, new2)
        new_scores = score(new_features)
        first, second = np.concatenate([first, new1]), np.concatenate([second, new2])
        features = np.concatenate([features, new_features])
        scores = np.concatenate([scores, new_scores])
    order = np.argsort(-scores, kind="stable")
    grid = geometry.grid
    if grid is not None and config.fresh_screens:
        # Fresh candidates first, in score order; the others only if no fresh one is left.
        plain = fresh(grid, first[order], second[order], previous)
        order = np.concatenate([order[plain], order[~plain]])
    if grid is not None and spec.increasing_on is not None:
        # Under a metric increasing in every rate a pair decided by dominance teaches nothing: last.
        obvious = grid.dominated(first[order], second[order])
        order = np.concatenate([order[~obvious], order[obvious]])
    for index in order:
        if grid is not None and grid.key(first[index], second[index]) in asked:
            continue
        if geometry.confusion is not None and grid is None:
            # The diagonal-cell filter is sufficient for any space honouring the contract; the space's own
            # confusion matrices have the last word (a pair failing it is skipped, never shown). With a
            # display grid the displayed diagonals already differ by whole people.
            gap = np.max(np.abs(geometry.confusion(first[index]) - geometry.confusion(second[index])))
            if float(gap) < config.min_cell_gap:
                continue
        best = int(index)
        break
    else:
        return None
    r1, r2, feature = first[best], second[best], features[best]
    if rng.random() < 0.5:
        # Which option is shown first carries no information; randomising it avoids a position bias.
        r1, r2, feature = r2, r1, -feature
    return r1, r2, feature, float(scores[best])
