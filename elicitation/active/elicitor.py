"""The active elicitor: configuration, state, the generator and the three public entry points."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any, Generic, Required, TypedDict, TypeVar, Unpack

import numpy as np
import numpy.typing as npt

from ..display import DisplayGrid
from ..errors import InvalidConfigError
from ..posterior import (
    ParticlePosterior,
    check_betas,
    check_lapse,
    config_number,
    shared_prior,
    sym_from_vec,
)
from ..types import (
    Elicitation,
    Elicitor,
    FairQuadraticMetric,
    FloatArray,
    LinearMetric,
    QuadraticMetric,
    Query,
    Sphere,
    as_rate_array,
    ask,
    check_tau,
    pair_index,
)
from . import checkpoint
from .effort import DEFAULT_SEARCH, SearchEffort
from .families import Config, FamilySpec, resolve_space
from .intervals import DEFAULT_INTERVAL_LEVEL, class_shares, posterior_intervals, weighted_quantiles
from .selection import choose_query
from .state import Asked, State

__all__ = [
    "CRITERIA",
    "DEFAULT_BETA_GRID",
    "DEFAULT_CREDIBLE_LEVEL",
    "DEFAULT_MIN_CELL_GAP",
    "DEFAULT_N_PARTICLES",
    "DEFAULT_TOLERANCE",
    "ESTIMATES",
    "FAMILIES",
    "MAX_DEFAULT_PARTICLES",
    "PARTICLE_BUDGET",
    "ActiveElicitor",
    "ActiveOptions",
    "active_elicitor",
    "active_fair",
    "active_linear",
    "active_quadratic",
    "ranking_probability",
]

#: Noise levels marginalised by default (a uniform prior over them); covers careless to very consistent.
DEFAULT_BETA_GRID: tuple[float, ...] = (20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 3000.0)
#: Smallest difference, in people out of 100, that some confusion-matrix cell of a shown pair must have.
DEFAULT_MIN_CELL_GAP = 2.0
#: Stop once the posterior's expected parameter error is at most this.
DEFAULT_TOLERANCE = 0.05
#: Default particle count: `DEFAULT_N_PARTICLES` for noisy answer models (what fits a web request's time
#: budget at k = 5); for the noise-free model ``PARTICLE_BUDGET / d`` for ``d`` unknowns, clipped to
#: ``[DEFAULT_N_PARTICLES, MAX_DEFAULT_PARTICLES]``: small problems can afford more particles there, and
#: are more accurate with them. The measurements: docs/benchmarks.md, "Measurements behind the defaults".
PARTICLE_BUDGET = 12_000
DEFAULT_N_PARTICLES = 600
MAX_DEFAULT_PARTICLES = 2000
#: Query-selection criteria: expected drop of the posterior's total variance (targets parameter error,
#: including weakly identified directions), expected information gain (halves posterior mass), or
#: "auto": variance for the noise-free model, information gain for noisy answers (docs/benchmarks.md,
#: "Measurements behind the defaults").
CRITERIA = ("auto", "variance", "information")
#: How the result is read off the posterior: the mean of the normalised parameters (in the family's cone),
#: or the *consensus*: among the posterior's particles and its mean, the metric that orders the most random
#: pairs of the sphere as the posterior majority does (the largest posterior expected agreement). When the
#: posterior is wide and curved (a metric nearly flat across the sphere, its optimum inside), the mean of
#: directions can order pairs unlike any plausible metric; the consensus cannot.
ESTIMATES = ("mean", "consensus")
#: Random pairs, uniform in the sphere, on which the consensus estimate is scored.
_CONSENSUS_PAIRS = 2048
#: Level of the reported per-coefficient credible intervals.
DEFAULT_CREDIBLE_LEVEL = 0.95
#: Size of the posterior sample kept in ``details`` for `ranking_probability`.
_SAMPLE_SIZE = 256

M = TypeVar("M")


class ActiveElicitor(Elicitor[Elicitation[M]], Generic[M]):
    """An `Elicitor` that also reports its live posterior: progress, spread and current estimate."""

    def __init__(self, body: Generator[Query, bool, Elicitation[M]], *, state: State) -> None:
        super().__init__(body, name=state.config.name, max_queries=state.config.max_queries)
        self._state = state

    @property
    def n_answered(self) -> int:
        """Answers absorbed so far."""
        return self._state.n_answered

    @property
    def expected_remaining(self) -> int:
        """Estimated further answers before the stopping rule fires (``<= max_queries - n_answered``)."""
        return self._state.expected_remaining()

    @property
    def display(self) -> DisplayGrid | None:
        """The display grid every query is snapped to (None: exact rates)."""
        return self._state.config.geometry.grid

    @property
    def posterior_spread(self) -> float | None:
        """Current expected parameter error of the estimate under the posterior (None before start)."""
        return self._state.spreads[-1] if self._state.spreads else None

    @property
    def tradeoff_spread(self) -> float | None:
        """Posterior standard deviation of the trade-off ``lam`` (fair only; None before the start)."""
        posterior = self._state.posterior
        if posterior is None or self._state.config.spec.kind != "fair":
            return None
        lam = self._state.config.spec.tradeoff(posterior.normalised())
        weights = posterior.weights
        return float(np.sqrt(weights @ (lam - weights @ lam) ** 2))

    def current_metric(self) -> M:
        """The posterior-mean metric after the answers so far.

        Raises
        ------
        InvalidConfigError
            If the elicitor has not been started (no posterior yet).
        """
        if self._state.posterior is None:
            raise InvalidConfigError("the elicitor has not started yet; call next() first")
        metric: M = _posterior_estimate(self._state.config.spec, self._state.posterior)[0]  # type: ignore[assignment]
        return metric

    def checkpoint(self) -> bytes:
        """The elicitor's whole state while it waits for an answer, as bytes for `restore` (data only).

        Raises
        ------
        CheckpointError
            If the elicitor is not waiting for an answer (not started, or finished).
        """
        return checkpoint.encode(self._state)

    def restore(self, saved: bytes) -> ActiveElicitor[M]:
        """A new elicitor continuing from ``saved``, a `checkpoint` of an elicitor configured like this one.

        The new elicitor first yields the query the checkpointed one was waiting on, then asks exactly
        the queries, and returns exactly the result, the checkpointed one would have. This elicitor is
        left untouched (build it fresh and do not start it).

        Raises
        ------
        CheckpointError
            If ``saved`` is damaged, of another format, or from another configuration (family, space,
            seed, noise model, budget, particles...); the caller then replays the answers instead.
        """
        state = checkpoint.decode(self._state.config, saved)
        return ActiveElicitor(_active_steps(state), state=state)


# --------------------------------------------------------------------------------------------------------
# Posterior summaries
# --------------------------------------------------------------------------------------------------------


def _posterior_estimate(
    spec: FamilySpec, posterior: ParticlePosterior
) -> tuple[LinearMetric | QuadraticMetric | FairQuadraticMetric, FloatArray, float]:
    """(metric, normalised mean parameters, spread) of the current posterior."""
    theta = posterior.normalised()
    weights = posterior.weights
    mean = weights @ theta
    family = posterior.family
    scale = float(family.norm(mean[None, :])[0])
    estimate = mean / scale
    spread = float(weights @ np.linalg.norm(theta - estimate, axis=1))
    return spec.metric(estimate), estimate, spread


def _consensus_estimate(
    config: Config, posterior: ParticlePosterior, mean: FloatArray, rng: np.random.Generator
) -> tuple[FloatArray, float]:
    """(normalised parameters, posterior expected agreement) of the consensus estimate (`ESTIMATES`).

    On random pairs uniform in the sphere, ``q`` is the posterior's mean vote (``+1``: every particle
    prefers the first); a candidate's expected agreement with a posterior draw is
    ``(1 + mean(sign * q)) / 2``. The candidates are the posterior mean (first: it wins ties) and every
    particle.
    """
    first = config.geometry.uniform(rng, _CONSENSUS_PAIRS)
    second = config.geometry.uniform(rng, _CONSENSUS_PAIRS)
    features = config.spec.features(first, second)
    candidates = np.vstack([mean[None, :], posterior.normalised()])
    votes = np.sign(features @ candidates.T)
    majority = votes[:, 1:] @ posterior.weights
    expected = 0.5 * (1.0 + (majority @ votes) / features.shape[0])
    best = int(np.argmax(expected))
    result: FloatArray = candidates[best] / float(posterior.family.norm(candidates[best][None, :])[0])
    return result, float(expected[best])


def _metric_coordinates(spec: FamilySpec, theta: FloatArray) -> dict[str, FloatArray]:
    """Each normalised particle in the metric's own coordinates (``a``, ``B`` / ``B^{uv}``, ``lam``)."""
    k = spec.n_classes
    if spec.kind == "linear":
        return {"a": theta[:, :k]}
    if spec.kind == "quadratic":
        return {"a": theta[:, :k], "B": sym_from_vec(theta[:, k:], k).reshape((-1, k * k))}
    tri = k * (k + 1) // 2
    alpha_norm = np.linalg.norm(theta[:, :k], axis=1)
    lam = 1.0 - alpha_norm
    coords: dict[str, FloatArray] = {
        "a": theta[:, :k] / np.maximum(alpha_norm, 1e-300)[:, None],
        "lam": lam[:, None],
    }
    for index, (u, v) in enumerate(pair_index(spec.n_groups)):
        block = sym_from_vec(theta[:, k + index * tri : k + (index + 1) * tri], k)
        coords[f"B{u},{v}"] = (block / np.maximum(lam, 1e-300)[:, None, None]).reshape((-1, k * k))
    return coords


def _credible_intervals(
    spec: FamilySpec, posterior: ParticlePosterior, level: float
) -> dict[str, dict[str, FloatArray]]:
    coords = _metric_coordinates(spec, posterior.normalised())
    tail = (1.0 - level) / 2.0
    intervals: dict[str, dict[str, FloatArray]] = {}
    k = spec.n_classes
    for name, values in coords.items():
        bounds = weighted_quantiles(values, posterior.weights, (tail, 1.0 - tail))
        shape: tuple[int, ...] = (k, k) if values.shape[1] == k * k else (values.shape[1],)
        if name == "lam":
            shape = ()
        intervals[name] = {"lower": bounds[0].reshape(shape), "upper": bounds[1].reshape(shape)}
    return intervals


def _posterior_sample(posterior: ParticlePosterior, rng: np.random.Generator) -> FloatArray:
    count = min(_SAMPLE_SIZE, posterior.n)
    cumulative = np.cumsum(posterior.weights)
    cumulative[-1] = 1.0
    index = np.searchsorted(cumulative, (rng.random() + np.arange(count)) / count, side="right")
    result: FloatArray = posterior.normalised()[np.minimum(index, posterior.n - 1)]
    return result


def ranking_probability(result: Elicitation[Any], first: npt.ArrayLike, second: npt.ArrayLike) -> float:
    """Posterior probability that the elicited metric orders ``first`` and ``second`` correctly.

    Parameters
    ----------
    result : Elicitation
        The result of `active_linear`, `active_quadratic` or `active_fair`.
    first, second : array_like
        Rates of the two classifiers, shape ``(n_classes,)`` (fair: ``(n_groups, n_classes)``).

    Returns
    -------
    float
        The share of the posterior under which the person prefers the same classifier as the elicited
        metric does (``0.5``-ish means the answers so far cannot tell; ``1.0`` means certain).

    Raises
    ------
    InvalidConfigError
        If ``result`` does not come from an active elicitor or the rates have the wrong shape.
    """
    details = result.details
    if "posterior_sample" not in details or "family" not in details:
        raise InvalidConfigError("result must come from an active elicitor (active_linear/_quadratic/_fair)")
    spec = FamilySpec.from_dict(details["family"])
    r1 = as_rate_array(first, "first")
    r2 = as_rate_array(second, "second")
    if r1.shape != spec.rate_shape or r2.shape != spec.rate_shape:
        raise InvalidConfigError(f"first and second must have shape {spec.rate_shape}")
    feature = spec.features(r1[None], r2[None])[0]
    sample = np.asarray(details["posterior_sample"], dtype=np.float64)
    metric = result.metric
    elicited = bool(metric.prefers(r1, r2))
    posterior_prefers = sample @ feature > 0.0
    return float(np.mean(posterior_prefers == elicited))


# --------------------------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------------------------


def _active_steps(state: State) -> Generator[Query, bool, Elicitation[Any]]:
    """The elicitor's body; it starts from ``state`` as it is (fresh, or restored from a checkpoint)."""
    config = state.config
    if state.posterior is None:
        state.rng = np.random.default_rng(config.seed)
        family = config.spec.family()
        if config.shared_prior:
            prior = shared_prior(family, config.betas, config.n_particles, burn_in=config.search.burn_in)
            state.posterior = ParticlePosterior.restored(
                family, config.betas, state.rng, prior, moves=config.search.moves, lapse=config.lapse
            )
        else:
            state.posterior = ParticlePosterior(
                family,
                config.betas,
                config.n_particles,
                state.rng,
                moves=config.search.moves,
                burn_in=config.search.burn_in,
                lapse=config.lapse,
            )
        state.spreads.append(_posterior_estimate(config.spec, state.posterior)[2])
    posterior, rng = state.posterior, state.rng
    assert rng is not None, "a started elicitor state has its rng"
    stopped_by = "budget"
    # The question answered last (a restored elicitor's is its pending one, set before it is answered).
    previous: Query | None = None
    while posterior.n_answers < config.max_queries:
        if state.pending is None:
            if posterior.n_answers >= config.min_queries and state.spreads[-1] <= config.tolerance:
                stopped_by = "tolerance"
                break
            chosen = choose_query(config, posterior, rng, state.asked, previous)
            if chosen is None:
                stopped_by = "exhausted"
                break
            first, second, feature, gain = chosen
            state.gains.append(gain)
            if config.geometry.grid is not None:
                grid = config.geometry.grid
                state.asked.update((grid.key(first, second), grid.key(second, first)))
            query = Query(first, second, search=config.name, kind="active", step=posterior.n_answers)
            state.pending = Asked(query, feature)
        answer = yield from ask(state.pending.query)
        previous, feature = state.pending.query, state.pending.feature
        state.pending = None
        posterior.update(feature if answer else -feature)
        state.spreads.append(_posterior_estimate(config.spec, posterior)[2])
    metric, estimate, spread = _posterior_estimate(config.spec, posterior)
    extra: dict[str, Any] = {}
    if config.estimate == "consensus":
        estimate, expected = _consensus_estimate(config, posterior, estimate, rng)
        metric = config.spec.metric(estimate)
        extra = {"expected_agreement": expected}
    intervals, ratio_base = posterior_intervals(
        config.spec,
        posterior.normalised(),
        posterior.weights,
        estimate,
        level=DEFAULT_INTERVAL_LEVEL,
        shares=class_shares(config.geometry.priors, config.spec.tau),
        center=config.geometry.sphere.center,
    )
    details: dict[str, Any] = {
        "family": config.spec.to_dict(),
        "estimate": config.estimate,
        **extra,
        "parameters": estimate,
        "posterior_spread": spread,
        "spread_history": list(state.spreads),
        "information_gain": list(state.gains),
        "stopped_by": stopped_by,
        "criterion": config.criterion,
        "credible_level": config.credible_level,
        "credible_intervals": _credible_intervals(config.spec, posterior, config.credible_level),
        "interval_level": DEFAULT_INTERVAL_LEVEL,
        "intervals": intervals,
        "cost_ratio_base": ratio_base,
        "posterior_sample": _posterior_sample(posterior, rng),
        "beta_grid": None if config.betas is None else list(config.betas),
        "beta_posterior": None if config.betas is None else posterior.beta_probabilities(),
        "inconsistent_answers": list(posterior.dropped),
        "seed": config.seed,
        "n_particles": config.n_particles,
        "min_cell_gap": config.min_cell_gap,
        "tradeoff_every": config.tradeoff_every,
    }
    return Elicitation(metric=metric, num_queries=posterior.n_answers, details=details)


# --------------------------------------------------------------------------------------------------------
# Public entry points
# --------------------------------------------------------------------------------------------------------


def _check_int(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        raise InvalidConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_float(value: object, name: str, low: float, high: float, *, open_low: bool = False) -> float:
    number = config_number(value, f"{name} must be a number, got {value!r}")
    bad_low = number <= low if open_low else number < low
    if not np.isfinite(number) or bad_low or number > high:
        bracket = "(" if open_low else "["
        raise InvalidConfigError(f"{name} must lie in {bracket}{low:g}, {high:g}], got {value!r}")
    return number


def _check_pools(pools: Sequence[npt.ArrayLike], shape: tuple[int, ...]) -> tuple[FloatArray, ...]:
    groups, k = shape
    if isinstance(pools, np.ndarray) or len(pools) != groups:
        raise InvalidConfigError(f"tradeoff_rates must hold one (n, {k}) array of rates per group ({groups})")
    result = []
    for index, pool in enumerate(pools):
        array = np.array(pool, dtype=np.float64)
        if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] != k:
            raise InvalidConfigError(f"tradeoff_rates[{index}] must have shape (n, {k}), got {array.shape}")
        if not np.all(np.isfinite(array)) or np.any(array < 0.0) or np.any(array > 1.0):
            raise InvalidConfigError(f"tradeoff_rates[{index}] must hold rates in [0, 1]")
        array.setflags(write=False)
        result.append(array)
    return tuple(result)


def _check_criterion(criterion: object, betas: tuple[float, ...] | None) -> str:
    if criterion not in CRITERIA:
        raise InvalidConfigError(f"criterion must be one of {list(CRITERIA)}, got {criterion!r}")
    if criterion == "auto":
        return "variance" if betas is None else "information"
    return str(criterion)


def _check_search(search: object) -> SearchEffort:
    if not isinstance(search, SearchEffort):
        raise InvalidConfigError(f"search must be a SearchEffort, got {search!r}")
    return search


def _check_flag(value: object, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidConfigError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_estimate(estimate: object) -> str:
    if estimate not in ESTIMATES:
        raise InvalidConfigError(f"estimate must be one of {list(ESTIMATES)}, got {estimate!r}")
    return str(estimate)


#: The metric families an active elicitor can elicit.
FAMILIES = ("linear", "quadratic", "fair")


class ActiveOptions(TypedDict, total=False):
    """The keyword arguments every active entry point takes; `active_elicitor` documents each."""

    seed: Required[int]
    priors: npt.ArrayLike | None
    beta: float | Sequence[float] | None
    max_queries: int | None
    min_queries: int
    tolerance: float
    min_cell_gap: float
    n_particles: int | None
    credible_level: float
    criterion: str
    display: DisplayGrid | None
    group_spheres: Sequence[Sphere] | None
    estimate: str
    tradeoff_every: int
    fresh_screens: bool | None
    tradeoff_rates: Sequence[npt.ArrayLike] | None
    sensible: bool
    search: SearchEffort
    shared_prior: bool
    lapse: float


def active_elicitor(
    family: str,
    space: object,
    *,
    seed: int,
    tau: npt.ArrayLike | None = None,
    priors: npt.ArrayLike | None = None,
    beta: float | Sequence[float] | None = DEFAULT_BETA_GRID,
    max_queries: int | None = None,
    min_queries: int = 0,
    tolerance: float = DEFAULT_TOLERANCE,
    min_cell_gap: float = DEFAULT_MIN_CELL_GAP,
    n_particles: int | None = None,
    credible_level: float = DEFAULT_CREDIBLE_LEVEL,
    criterion: str = "auto",
    display: DisplayGrid | None = None,
    group_spheres: Sequence[Sphere] | None = None,
    estimate: str = "mean",
    tradeoff_every: int = 0,
    fresh_screens: bool | None = None,
    tradeoff_rates: Sequence[npt.ArrayLike] | None = None,
    sensible: bool = False,
    search: SearchEffort = DEFAULT_SEARCH,
    shared_prior: bool = False,
    lapse: float = 0.0,
) -> ActiveElicitor[Any]:
    """Elicit a metric of ``family`` with active, noise-robust Bayesian queries (the one implementation).

    `active_linear`, `active_quadratic` and `active_fair` are this function for one family each.

    Parameters
    ----------
    family : {"linear", "quadratic", "fair"}
        ``phi(r) = <a, r>``; ``<a, r> + 1/2 r^T B r`` with ``B`` NSD (Definition 2); or the fair quadratic
        cost of Definition 3 (``a``, ``B^{uv}``, ``lam``), asked with ``(n_groups, n_classes)`` rate arrays
        whose every group row lies in the common sphere.
    space : Sphere or query space
        Where queries live: a `Sphere` (then ``priors`` gives the class priors, uniform by default) or a
        query space with ``sphere``, ``priors`` and ``confusion`` (`elicitation.rates.QuerySpace`; for
        ``"fair"`` one with ``n_groups >= 2``).
    seed : int
        Seed of the ``numpy.random.Generator`` behind every random choice (store it with the session).
    tau : array_like, shape (n_groups, n_classes)
        ``"fair"`` only (and required there): ``P(G = g | Y = i)``, checked by `elicitation.types.check_tau`.
    priors : array_like, optional
        Only with a plain `Sphere`: ``P(Y = i)``, ``(n_classes,)``; for ``"fair"`` ``P(Y = i | G = g)``,
        ``(n_classes,)`` or ``(n_groups, n_classes)``.
    beta : float, sequence of float or None
        Noise level(s) of the answer model ``P(correct) = sigmoid(beta |phi(r1) - phi(r2)|)``: a number
        fixes it, a sequence is a grid marginalised with a uniform prior (default `DEFAULT_BETA_GRID`),
        ``None`` assumes a noise-free oracle (inconsistent answers are then ignored and listed in
        ``details["inconsistent_answers"]``).
    max_queries : int, optional
        Question budget; default ``max(30, 4 d)`` for ``d`` unknowns.
    min_queries : int
        Never stop on the spread before this many answers.
    tolerance : float
        Stop once the posterior's expected parameter error (paper normalisation) is at most this.
    min_cell_gap : float
        Every shown pair differs by at least this many people out of 100 in some confusion cell.
    n_particles : int, optional
        Posterior particles (>= 64); cost per question is roughly linear in it. Default
        `DEFAULT_N_PARTICLES` with noise; for ``beta=None`` ``PARTICLE_BUDGET // d`` clipped to
        ``[DEFAULT_N_PARTICLES, MAX_DEFAULT_PARTICLES]``.
    credible_level : float
        Level of the reported credible intervals.
    criterion : {"auto", "variance", "information"}
        How candidate pairs are scored: expected reduction of the posterior's total variance or expected
        information gain; ``"auto"`` uses variance for ``beta=None`` and information gain otherwise.
    display : DisplayGrid, optional
        What the participant's charts can show (`elicitation.display`): every candidate is snapped to it,
        so the posterior updates on exactly the displayed pair, perceptibility counts displayed people,
        and no displayed pair is asked twice (in either order). Without it, queries are exact rates.
    group_spheres : sequence of Sphere, optional
        ``"fair"`` only: one query sphere per group (`elicitation.region.group_regions`), group ``g``'s rates
        asked inside the ``g``-th; default every group in the space's common sphere. The fair cost is a
        function of the group rates, so any sphere per group inside its feasible set identifies it.
    estimate : {"mean", "consensus"}
        How the result is read off the final posterior (`ESTIMATES`): the posterior mean, or the metric
        among the particles and the mean with the largest posterior expected agreement on random pairs
        of the sphere (reported as ``details["expected_agreement"]``). It changes the result only, never
        the questions.
    tradeoff_every : int
        ``"fair"`` only: every ``tradeoff_every``-th question (0: none) is the perceptible pair whose answer
        most reduces the posterior variance of ``lam``, among pairs where fewer mistakes overall and a
        smaller gap between the groups pull in different directions under the current estimate. Questions
        chosen for the whole metric leave ``lam`` near its prior on small per-group regions
        (docs/fairness-tradeoff.md).
    fresh_screens : bool, optional
        With a display grid only: every question differs from the one before by at least
        `elicitation.active.selection.FRESH_CELL_GAP` people in some displayed cell (in either order of
        its sides), unless no other candidate is left. Pairs decided by dominance stay allowed unless
        ``sensible``: under the unrestricted quadratic model a person whose best classifier lies inside
        the sphere does not prefer the dominating one, and those questions tell such people apart
        (docs/realistic-queries.md). Default: the query space's ``fresh_screens``
        (`elicitation.display.DisplayedSpace`, as the web app's sessions build it), else off.
    tradeoff_rates : sequence of array_like, optional
        ``"fair"`` only, with ``tradeoff_every``: per group, the ``(n_g, n_classes)`` rates of sensible
        classifiers on the data (`elicitation.region.sensible_frontier`). Trade-off questions may then
        also show, in each group, a mixture of two of them (a randomised classifier, so feasible), shown
        as the display rounds it: pairs far wider than the query region, which can carry what the region
        cannot about ``lam``.
    sensible : bool
        ``"quadratic"`` only: elicit a metric that increases in every rate throughout the query sphere
        (``a + B r >= 0`` there, `elicitation.posterior.Family.increasing_on`), so that it never prefers a
        classifier worse in every class: a structural assumption on the metric of the kind the paper's
        discussion (Section 8) recommends, and the app already treats the opposite preference as
        inattention. A pair decided by dominance then carries no information, and with a display grid
        the elicitor asks one (`DisplayGrid.dominated`) only when no other perceptible candidate is left.
    search : SearchEffort
        How many candidate pairs each question's search scores, how many MCMC moves rejuvenate the
        posterior and how many sweeps burn in its prior (`elicitation.active.effort.SearchEffort`); the
        time per question grows with them. The default is what the versions before the lean search
        (`elicitation.active.LEAN_SEARCH`) ask with.
    shared_prior : bool
        Burn in the prior's particle cloud from a random stream seeded by the configuration alone
        (`elicitation.posterior.shared_prior`, computed once per process and configuration) instead of
        from ``seed``: every session of a configuration then starts from the same prior sample, and
        ``seed`` decides every later random choice (searches, rejuvenations), so sessions still differ.
        A new session's start then costs its first question's search only, not the burn-in.
    lapse : float
        Share of screens, in ``[0, 1)``, on which the answer model takes the person to answer by a coin:
        ``P(y) = lapse / 2 + (1 - lapse) sigmoid(beta y (phi(r1) - phi(r2)))`` in the posterior update, the
        search's criterion and its committee screen, and the MCMC moves (``beta`` grid included). A person
        who answers carefully but now and then clicks without looking then no longer looks noise-free to
        the model, and one such answer cannot drive a region of the posterior to zero weight
        (docs/active-elicitation.md measures what it does to the demo's stated ranges). Needs a noisy
        model (``beta`` not None); 0, the default, is the plain logistic model.

    Returns
    -------
    ActiveElicitor
        Yields `Query` objects (receives ``True`` when ``first`` is preferred) and returns an
        `Elicitation` whose ``details`` hold ``credible_intervals`` (per coefficient, at
        ``credible_level``), ``intervals`` with ``interval_level`` and ``cost_ratio_base``
        (`elicitation.active.intervals.posterior_intervals`: ``lam`` and the per-person cost ratios the
        result's words state), ``posterior_spread``,
        ``spread_history``, ``beta_posterior``, ``posterior_sample`` (for `ranking_probability`),
        ``stopped_by`` and ``inconsistent_answers``.

    Raises
    ------
    InvalidConfigError
        On a bad argument (naming it and its allowed range), or when no perceptible pair fits the sphere.

    Notes
    -----
    Asks at most ``max_queries`` questions; each costs one particle update and one candidate search,
    roughly ``O(n_particles * (answers + candidates) * d)``.
    """
    if family not in FAMILIES:
        raise InvalidConfigError(f"family must be one of {list(FAMILIES)}, got {family!r}")
    if sensible and family != "quadratic":
        raise InvalidConfigError(f"sensible applies to quadratic metrics only, not to a {family} metric")
    if family == "fair":
        if tau is None:
            raise InvalidConfigError("tau (group prevalences) is required to elicit a fair metric")
        sphere = space if isinstance(space, Sphere) else getattr(space, "sphere", None)
        tau_array = check_tau(tau, n_classes=sphere.n_classes if isinstance(sphere, Sphere) else None)
        n_groups, n_classes = tau_array.shape
        geometry = resolve_space(space, priors, n_groups, display, group_spheres)
        spec = FamilySpec(family, n_classes, tau_array)
    else:
        if tau is not None:
            raise InvalidConfigError(f"tau applies to fair metrics only, not to a {family} metric")
        if group_spheres is not None:
            raise InvalidConfigError(f"group_spheres applies to fair metrics only, not to a {family} metric")
        if tradeoff_every or tradeoff_rates is not None:
            raise InvalidConfigError(
                f"tradeoff_every and tradeoff_rates apply to fair metrics only, not to a {family} metric"
            )
        geometry = resolve_space(space, priors, 1, display)
        spec = FamilySpec(
            family, geometry.sphere.n_classes, increasing_on=geometry.sphere if sensible else None
        )
    dim = spec.family().dim
    if n_particles is None:
        # Noisy steps cost ~ particles x answers whatever d is (the slice sampler re-evaluates every
        # answer's likelihood), so they keep the count that meets the web-request budget; noise-free steps
        # are cheap enough to scale the count with the problem.
        n_particles = (
            DEFAULT_N_PARTICLES
            if beta is not None
            else int(np.clip(PARTICLE_BUDGET // dim, DEFAULT_N_PARTICLES, MAX_DEFAULT_PARTICLES))
        )
    budget = max(30, 4 * dim) if max_queries is None else _check_int(max_queries, "max_queries", 1)
    minimum = _check_int(min_queries, "min_queries", 0)
    if minimum > budget:
        raise InvalidConfigError(f"min_queries ({minimum}) must not exceed max_queries ({budget})")
    config = Config(
        spec=spec,
        geometry=geometry,
        seed=_check_int(seed, "seed", 0),
        betas=check_betas(beta),
        max_queries=budget,
        min_queries=minimum,
        tolerance=_check_float(tolerance, "tolerance", 0.0, 2.0),
        min_cell_gap=_check_float(min_cell_gap, "min_cell_gap", 0.0, 100.0),
        n_particles=_check_int(n_particles, "n_particles", 64),
        credible_level=_check_float(credible_level, "credible_level", 0.0, 1.0, open_low=True),
        criterion=_check_criterion(criterion, check_betas(beta)),
        name=f"active-{family}",
        estimate=_check_estimate(estimate),
        tradeoff_every=_check_int(tradeoff_every, "tradeoff_every", 0),
        fresh_screens=geometry.grid is not None
        and bool(getattr(space, "fresh_screens", False) if fresh_screens is None else fresh_screens),
        tradeoff_rates=None if tradeoff_rates is None else _check_pools(tradeoff_rates, geometry.shape),
        search=_check_search(search),
        shared_prior=_check_flag(shared_prior, "shared_prior"),
        lapse=check_lapse(lapse, check_betas(beta)),
    )
    radii = (
        np.full(geometry.priors.shape[0], geometry.sphere.radius)
        if geometry.group_spheres is None
        else np.array([own.radius for own in geometry.group_spheres])
    )
    largest = float(np.max(np.max(geometry.priors, axis=1) * 100.0 * 2.0 * radii))
    if config.min_cell_gap > largest:
        raise InvalidConfigError(
            f"min_cell_gap {config.min_cell_gap:g} exceeds the largest cell difference this sphere can show "
            f"({largest:.3g} people out of 100); lower it or use a larger sphere"
        )
    state = State(config)
    return ActiveElicitor(_active_steps(state), state=state)


def active_linear(space: object, **options: Unpack[ActiveOptions]) -> ActiveElicitor[LinearMetric]:
    """Elicit a linear metric ``phi(r) = <a, r>`` with active queries (`active_elicitor` ``"linear"``)."""
    return active_elicitor("linear", space, **options)


def active_quadratic(space: object, **options: Unpack[ActiveOptions]) -> ActiveElicitor[QuadraticMetric]:
    """Elicit a quadratic metric (Definition 2) with active queries (`active_elicitor` ``"quadratic"``)."""
    return active_elicitor("quadratic", space, **options)


def active_fair(
    space: object, *, tau: npt.ArrayLike, **options: Unpack[ActiveOptions]
) -> ActiveElicitor[FairQuadraticMetric]:
    """Elicit a fair quadratic cost (Definition 3) with active queries (`active_elicitor` ``"fair"``)."""
    return active_elicitor("fair", space, tau=tau, **options)
