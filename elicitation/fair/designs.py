"""Fair QPME's entry point and its three query designs (Section 4, Algorithm 4).

**Three query designs.** ``design="qpme"`` is Algorithm 4 as published: one full QPME run
(`shifted_quadratic`: trivial pivot queries, LPME at ``o``, at every ``z_j`` and at ``-z_p``) per partition,
reconstructed partition by partition as above. Its weak spot is a rank-one term: when ``B`` is small next to
``d`` (small ``lam``, or a near-zero entry of ``d``), ``(d, B)`` and ``(d, B + c d d^T)`` give almost the
same slopes, so ``B`` and hence ``lam`` absorb an error along ``d d^T`` (heavy tails in ``lam``). A run on
the *other side* of the same cut sees the gradient ``a * tau^{not sigma} - W~ x``, whose direction differs
from ``a * tau^sigma``, and pins that term down. ``design="anchored"`` (default) adds one such LPME run per
cut, at ``z_p`` with ``p`` the largest entry of the partition's ``d`` (the coordinate coupling most strongly
to the term), takes ``a`` from the QPME gradients as above and then fits every ``B~^{uv}`` (hence ``lam``)
by ordinary least squares to *all* slopes of all partitions with ``a`` fixed (`reconstruct_fair_anchored`).
``design="paired"`` drops QPME's pivot queries and ``-z_p`` run instead of adding a run (same query count as
``"qpme"`` without its trivial queries) and solves ``(a, B~)`` jointly from all slopes
(`reconstruct_fair_joint`); it never needs a gradient at ``o`` (``lam`` near 1 is fine) but has no redundant
run. If QPME finds no gradient at ``o`` for a partition (``lam`` near 1), ``"anchored"`` falls back to the
paired runs for it and to the joint solve (how the designs compare: docs/benchmarks.md, "Measurements
behind the defaults"). With ``resolve_degenerate`` (the
default) every design also solves all slopes jointly with each gradient pointing along its slope, and keeps
whichever of that and the design's own solve fits the slopes closer (``fit="closest"``). All runs use
QPME's LPME probes (antipodal by default: the slope is then the gradient direction at the small sphere's
centre, not at its boundary optimum; `SlopeRun.point` accounts for both).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import DegenerateMetricError, ElicitationError, InvalidConfigError, NumericalError
from ..geometry import inner_sphere, validate_inner_radius
from ..lpme import DEFAULT_CYCLES, DEFAULT_TOLERANCE, Probe, lpme, validate_probe
from ..qpme import (
    DEFAULT_PROBE,
    RECONSTRUCTIONS,
    Reconstruction,
    ShiftedQuadratic,
    default_inner_radius,
    shifted_quadratic,
)
from ..types import (
    Elicitation,
    Elicitor,
    Embedding,
    FairQuadraticMetric,
    FloatArray,
    LinearMetric,
    Query,
    Sphere,
    check_tau,
    plain_rates,
)
from .partitions import (
    ZERO,
    Partition,
    check_groups,
    check_partitions,
    check_sphere,
    group_partitions,
    membership_matrix,
    orient_partitions,
    partition_label,
    profile_embedding,
)
from .reconstruction import (
    FairReconstruction,
    LinePeak,
    SlopeRun,
    costs_from_gradients,
    reconstruct_fair,
    reconstruct_fair_anchored,
    reconstruct_fair_joint,
    reconstruct_fair_signed,
    slope_misfit,
)
from .tradeoff import tradeoff_search

__all__ = [
    "DESIGNS",
    "DISPLAYED_INNER_RATIO",
    "FITS",
    "fair_qpme",
]

#: ``varrho / rho`` when the questions are shown on a display grid (`elicitation.display.DisplayGrid`): as
#: for QPME (`elicitation.qpme.DISPLAYED_INNER_RATIO`) the small spheres grow until their steps can be
#: shown. Chosen among the default, 0.3, 0.5 and 0.6 on Adult's common sphere with noisy people, in tenths
#: of a person (docs/realistic-queries.md).
DISPLAYED_INNER_RATIO = 0.5
#: Tolerance of the trade-off search `fair_qpme` runs near either end of the trade-off.
TRADEOFF_TOLERANCE = 1e-3
#: Slope-solved ``lam`` inside this band stands; outside it the trade-off search asks. The benchmark's
#: random metrics draw ``lam`` from (0.25, 0.75), so they ask no more than before.
TRADEOFF_SEARCH_BAND = (0.15, 0.85)
#: How `fair_qpme` chooses between its solves when it resolves degenerate cases (see its docstring).
FITS: tuple[str, ...] = ("closest", "signed")
#: Builds LPME on a small sphere with a query label and the embedding that lifts its points to profiles.
LpmeFactory = Callable[[Sphere, str, Embedding], Elicitor[Elicitation[LinearMetric]]]
#: Builds the shifted-quadratic QPME run of one partition.
QpmeFactory = Callable[[Partition], Elicitor[Elicitation[ShiftedQuadratic]]]


@dataclass(frozen=True)
class _FairRun:
    """One fair elicitation's validated configuration, shared by its design; ``tally[0]`` counts answers."""

    sphere: Sphere
    tau: FloatArray
    partitions: tuple[Partition, ...]
    varrho: float
    search: str
    at_boundary: bool
    make_lpme: LpmeFactory
    make_qpme: QpmeFactory
    tally: list[int]
    resolve_degenerate: bool = False
    fit: str = "closest"

    @property
    def n_groups(self) -> int:
        return int(self.tau.shape[0])


def _slope_runs(
    runner: _FairRun, side: Partition, axes: Sequence[int | None]
) -> Generator[Query, bool, list[SlopeRun]]:
    """One LPME run on ``side``'s groups per axis, in order: ``None`` in ``S_o``, ``j`` in ``S_{z_j}``.

    Each run is labelled ``{search}/{side}/{o | z<j+1>}/lpme`` and moves only ``side``'s groups (the others
    stay at ``o``); its slope becomes a `SlopeRun` at the inner sphere's offset from ``o``.
    """
    o = runner.sphere.center
    runs: list[SlopeRun] = []
    for axis in axes:
        small = inner_sphere(runner.sphere, runner.varrho, axis=axis)
        name = "o" if axis is None else f"z{axis + 1}"
        label = f"{runner.search}/{partition_label(side)}/{name}/lpme"
        embed = profile_embedding(o, side, runner.n_groups)
        result = yield from runner.make_lpme(small, label, embed)
        runner.tally[0] += result.num_queries
        runs.append(SlopeRun(side, small.center - o, np.array(result.metric.a), runner.at_boundary))
    return runs


def fair_qpme(
    sphere: Sphere,
    *,
    groups: int,
    tau: npt.ArrayLike,
    epsilon: float = DEFAULT_TOLERANCE,
    inner_radius: float | None = None,
    design: str = "anchored",
    reconstruction: Reconstruction = "signed",
    partitions: Sequence[Sequence[int] | frozenset[int]] | None = None,
    search: str = "fair",
    cycles: int = DEFAULT_CYCLES,
    early_stop: bool = True,
    probe: Probe = DEFAULT_PROBE,
    resolve_degenerate: bool = True,
    fit: str = "closest",
) -> Elicitor[Elicitation[FairQuadraticMetric]]:
    """Elicit a fair quadratic cost ``(a, B^{uv}, lam)`` for ``m >= 2`` groups (Section 4, Algorithm 4).

    Runs QPME (`elicitation.qpme.shifted_quadratic`) once per group partition ``sigma``, asking about
    profiles where the groups in ``sigma`` get a rate ``s`` of the sphere and the others its centre ``o``,
    then solves Appendix D's ``Xi`` system and normalises ``a`` and the ``B^{uv}`` separately, which
    yields ``lam``; by default one more LPME run per partition, on the other side of its cut, removes the
    rank-one ambiguity that dominates the published algorithm's ``lam`` errors. The module docstring gives
    the algebra, the choice of partitions and the three designs.

    Parameters
    ----------
    sphere : Sphere
        Query sphere ``S`` (centre ``o``, radius ``rho``) feasible for every group (Remark 2).
    groups : int
        Number of groups ``m >= 2``.
    tau : array_like, shape (groups, n_classes)
        Group prevalences ``tau[g, i] = P(G = g | Y = i)``: non-negative, every column summing to one.
    epsilon : float
        LPME binary-search tolerance (positive).
    inner_radius : float, optional
        ``varrho`` in ``(0, rho)`` of QPME's and the added LPME runs' small spheres; QPME's default when
        omitted.
    design : {"anchored", "qpme", "paired"}
        ``"anchored"`` (default): a QPME run per partition plus one LPME run on the cut's other side,
        ``B`` and ``lam`` fitted to all slopes. ``"qpme"``: Algorithm 4 as published. ``"paired"``: per
        partition LPME at ``o`` and every ``z_j`` plus the other-side run, solved jointly (fewest queries,
        no trivial queries). See the module docstring for the trade-offs.
    reconstruction : {"signed", "lstsq", "closed_form"}
        QPME's reconstruction solver, used for each partition's ``(d, B)`` (``"qpme"``) or ``d``
        (``"anchored"``) when ``resolve_degenerate`` is off; ignored by ``"paired"``.
    partitions : sequence of sets of int, optional
        ``binom(m, 2)`` sets of (0-based) groups whose membership matrix ``Xi`` is non-singular; default
        `group_partitions` (each cut oriented by `orient_partitions`). Given partitions are used as is.
    search : str
        Prefix of every query's ``search`` label; queries read ``{search}/sigma=1+3/qpme/z2/lpme``
        (1-based groups and coordinates).
    cycles, early_stop, probe : int, bool, {"antipodal", "boundary"}
        Passed to every LPME run (also those inside QPME); ``probe`` defaults to QPME's.

    Yields
    ------
    Query
        Pairs of ``(groups, n_classes)`` rate profiles.

    Receives
    --------
    bool
        ``True`` when the first profile is preferred (costs less).

    Returns
    -------
    Elicitor of Elicitation[FairQuadraticMetric]
        ``metric`` is the estimate; ``details`` holds the ``design``, the partitions, ``Xi``, queries per
        partition, the mass removed by the PSD projection and, per design, every partition's ``(d, B)``
        (``"qpme"``, ``"anchored"``) and every run's slope, offset and moved groups (``"anchored"``,
        ``"paired"``).

    resolve_degenerate : bool
        Default ``True``: every partition's QPME goes on where Algorithm 1 stops (see
        `elicitation.qpme.shifted_quadratic`), every design solves ``(a, B^{uv}, lam)`` jointly from all
        slopes with the gradients pointing along them (`reconstruct_fair_signed`, any ``lam`` in
        ``[0, 1]``), and a solved ``lam`` outside `TRADEOFF_SEARCH_BAND` is refined by the trade-off search
        (up to ``log2(1 / TRADEOFF_TOLERANCE)`` more questions). A class absent from the moved side of every
        cut is then still identified from the runs on the other side. ``False`` (with
        ``reconstruction="lstsq"``) asks and solves as version fair_qpme-1 did.
    fit : {"closest", "signed"}
        With ``resolve_degenerate``: ``"closest"`` (default) also solves the design's lines-only way (as
        without ``resolve_degenerate``) and keeps whichever solution's gradients point closer to the measured
        slopes; ``"signed"`` keeps the signed solve, as version fair_qpme-2 did. ``details["fit"]`` says
        which was kept.

    Raises
    ------
    InvalidConfigError
        (eagerly) ``groups < 2``; ``tau`` of the wrong shape, negative or with a column not summing to one;
        ``epsilon <= 0``; a bad sphere, ``inner_radius``, ``reconstruction`` or ``partitions``.
    DegenerateMetricError
        (while running, ``"qpme"`` without ``resolve_degenerate`` only) QPME's trivial queries find no
        gradient at ``o`` (``lam`` near 1).
        ``"anchored"`` then measures that partition's slopes with LPME directly (as ``"paired"`` does; the
        trivial queries already asked are kept in the count) and solves jointly.
    NumericalError
        (while running) the answers determine no finite fair metric.

    Notes
    -----
    ``binom(m, 2)`` QPME runs (``"anchored"``: plus one LPME run each; ``"paired"``: ``binom(m, 2) (k + 2)``
    LPME runs and no trivial queries), so ``O(m^2 k^2 log(1/epsilon))`` queries as in Table 4 of the paper;
    `Elicitor.max_queries` is the exact worst case. With an exact oracle, ``epsilon = 1e-2`` and radius 0.2
    every design asked on average fewer queries than Table 4 for ``k, m <= 3``, and under half of it with
    LPME's antipodal probes.
    """
    space = check_sphere(sphere)
    m = check_groups(groups)
    tau_values = check_tau(tau, n_groups=m, n_classes=space.n_classes)
    try:
        eps = float(epsilon)
    except (TypeError, ValueError) as exc:
        raise InvalidConfigError(f"epsilon must be a positive number, got {epsilon!r}") from exc
    if not math.isfinite(eps) or eps <= 0.0:
        raise InvalidConfigError(
            f"epsilon must be a positive finite number (search tolerance), got {epsilon!r}"
        )
    if partitions is None:
        chosen = orient_partitions(group_partitions(m), tau_values)
    else:
        chosen = check_partitions(partitions, m)
    for sigma in chosen:
        if np.all(tau_values[sorted(sigma)].sum(axis=0) == 0.0):
            raise InvalidConfigError(
                f"tau gives partition {sorted(sigma)} no members in any class, so its queries move nothing"
            )
    # The joint solve reads a class's cost from either side of a cut the design runs on.
    sides = list(chosen)
    if resolve_degenerate and design != "qpme":
        sides += [frozenset(range(m)) - sigma for sigma in chosen]
    covered = np.max(np.array([tau_values[sorted(sigma)].sum(axis=0) for sigma in sides]), axis=0)
    if np.any(covered <= 0.0):
        missing = [int(i) for i in np.flatnonzero(covered <= 0.0)]
        raise InvalidConfigError(
            f"tau leaves the cost of class(es) {missing} unidentifiable: no partition's groups contain that "
            "class (tau[sigma, i] = 0 for every partition sigma)"
        )

    if design not in DESIGNS:
        raise InvalidConfigError(f"design must be one of {DESIGNS}, got {design!r}")
    if fit not in FITS:
        raise InvalidConfigError(f"fit must be one of {FITS}, got {fit!r}")
    if reconstruction not in RECONSTRUCTIONS:
        raise InvalidConfigError(f"reconstruction must be one of {RECONSTRUCTIONS}, got {reconstruction!r}")
    varrho = (
        default_inner_radius(space) if inner_radius is None else validate_inner_radius(space, inner_radius)
    )
    probe_kind = validate_probe(probe)

    def make_lpme(
        small: Sphere, label: str, embed: Embedding = plain_rates
    ) -> Elicitor[Elicitation[LinearMetric]]:
        return lpme(
            small, eps, cycles=cycles, early_stop=early_stop, search=label, probe=probe_kind, embed=embed
        )

    def make_qpme(partition: Partition) -> Elicitor[Elicitation[ShiftedQuadratic]]:
        return shifted_quadratic(
            space,
            epsilon=eps,
            inner_radius=varrho,
            reconstruction=reconstruction,
            search=f"{search}/{partition_label(partition)}/qpme",
            cycles=cycles,
            early_stop=early_stop,
            probe=probe_kind,
            embed=profile_embedding(space.center, partition, m),
            resolve_degenerate=resolve_degenerate,
        )

    run = _FairRun(
        space,
        tau_values,
        chosen,
        varrho,
        search,
        probe_kind == "boundary",
        make_lpme,
        make_qpme,
        [0],
        bool(resolve_degenerate),
        fit,
    )
    chosen_design = _DESIGNS[design]
    # Also validates the sub-elicitors' arguments.
    budget = chosen_design.budget(run) + _tradeoff_budget(run.resolve_degenerate)
    return Elicitor(chosen_design.steps(run), name=search, max_queries=budget)


def _collect(
    run: _FairRun,
    sigma: Partition,
    result: Elicitation[ShiftedQuadratic],
    runs: list[SlopeRun],
    peaks: list[LinePeak],
) -> None:
    """Add one partition's QPME slopes to ``runs`` and, when it searched a line, its peak to ``peaks``."""
    o = run.sphere.center
    centers = np.asarray(result.details["centers"], dtype=np.float64)
    slopes = np.asarray(result.details["slopes"], dtype=np.float64)
    boundary = result.details.get("probe", "boundary") == "boundary"
    runs += [SlopeRun(sigma, c - o, f, boundary) for c, f in zip(centers, slopes, strict=True)]
    line = result.details.get("line")
    if line is not None and abs(result.details["peak"]) < run.sphere.radius:
        peaks.append(LinePeak(sigma, line, result.details["peak"]))


def _tradeoff_budget(resolve_degenerate: bool) -> int:
    """Questions of the trade-off search `_signed_outcome` may add."""
    return math.ceil(math.log2(1.0 / TRADEOFF_TOLERANCE) - 1e-12) if resolve_degenerate else 0


def _closest_fit(
    run: _FairRun,
    runs: Sequence[SlopeRun],
    peaks: Sequence[LinePeak],
    lines: Callable[[], FairReconstruction],
) -> tuple[FairReconstruction, str]:
    """The signed solve, or the design's lines-only solve (``lines``) when its gradients point closer to
    the measured slopes (`slope_misfit`); with the name of the one kept.

    The lines-only solves fix fewer unknowns at once (``a`` first, then ``B~^{uv}``), which on generic
    metrics reads ``lam`` more precisely than the joint solve's curvature penalty allows; the signed solve
    is the one that handles the ends of the trade-off and rank-deficient ``B``. Both fit the same answers,
    so the better fit is kept (an extension of the paper; measurements in docs/benchmarks.md).
    """
    signed = reconstruct_fair_signed(run.tau, runs, run.varrho, peaks)
    if run.fit == "signed":
        return signed, "signed"
    try:
        alternative = lines()
    except ElicitationError:
        return signed, "signed"
    if slope_misfit(alternative.metric, runs, run.varrho) < slope_misfit(signed.metric, runs, run.varrho):
        return alternative, "lines"
    return signed, "signed"


def _signed_outcome(
    run: _FairRun,
    runs: Sequence[SlopeRun],
    peaks: Sequence[LinePeak],
    lines: Callable[[], FairReconstruction],
) -> Generator[Query, bool, tuple[FairReconstruction, str]]:
    """The closest fit (`_closest_fit`) and, near either end of the trade-off, a search for ``lam`` alone.

    Slopes fix ``lam`` to an absolute error set by how little the violation bends them: near ``lam = 0``
    that floor (about 0.01-0.06 at ``epsilon = 1e-2``) is larger than ``lam`` itself, and near ``lam = 1``
    likewise for ``1 - lam``. There the paper's trade-off search (Algorithm 5, threshold variant) with the
    solved ``a`` and ``B^{uv}`` asks ``lam`` directly; its error is relative (a wrong ``B`` scales it), so
    it wins exactly at the ends. The questions it asks are added to ``run.tally``.
    """
    outcome, fit = _closest_fit(run, runs, peaks, lines)
    estimate = outcome.metric
    if TRADEOFF_SEARCH_BAND[0] <= estimate.lam <= TRADEOFF_SEARCH_BAND[1]:
        return outcome, fit
    try:
        searcher = tradeoff_search(
            run.sphere,
            a=estimate.a,
            B_pairs=estimate.B_pairs,
            tau=run.tau,
            epsilon=TRADEOFF_TOLERANCE,
            search=f"{run.search}/tradeoff",
        )
    except DegenerateMetricError:
        # No group's move trades error against violation with these estimates: the slopes' lam stands.
        return outcome, fit
    searched = yield from searcher
    run.tally[0] += searched.num_queries
    metric = FairQuadraticMetric(estimate.a, dict(estimate.B_pairs), searched.metric.lam, run.tau)
    return (
        FairReconstruction(metric, outcome.scales, outcome.W_tilde, outcome.B_tilde, outcome.negative_mass),
        fit,
    )


def _qpme_budget(run: _FairRun) -> int:
    return sum(run.make_qpme(sigma).max_queries for sigma in run.partitions)


def _qpme_steps(run: _FairRun) -> Generator[Query, bool, Elicitation[FairQuadraticMetric]]:
    """Algorithm 4 as published: one QPME run per partition, reconstructed partition by partition."""
    gradients: list[FloatArray] = []
    hessians: list[FloatArray] = []
    counts: list[int] = []
    runs: list[SlopeRun] = []
    peaks: list[LinePeak] = []
    for sigma in run.partitions:
        result = yield from run.make_qpme(sigma)
        run.tally[0] += result.num_queries
        gradients.append(result.metric.d)
        hessians.append(result.metric.B)
        counts.append(result.num_queries)
        _collect(run, sigma, result, runs, peaks)

    def lines() -> FairReconstruction:
        return reconstruct_fair(run.tau, run.partitions, gradients, hessians)

    fit = "lines"
    if run.resolve_degenerate:
        outcome, fit = yield from _signed_outcome(run, runs, peaks, lines)
    else:
        outcome = lines()
    details: dict[str, Any] = {
        "design": "qpme",
        "fit": fit,
        "partitions": [sorted(sigma) for sigma in run.partitions],
        "xi": membership_matrix(run.partitions, run.n_groups).tolist(),
        "queries_per_partition": counts,
        "gradients": [g.tolist() for g in gradients],
        "hessians": [h.tolist() for h in hessians],
        "scales": outcome.scales.tolist(),
        "psd_clipped_mass": outcome.negative_mass,
    }
    return Elicitation(metric=outcome.metric, num_queries=run.tally[0], details=details)


def _anchored_budget(run: _FairRun) -> int:
    return (
        _qpme_budget(run)
        + len(run.partitions) * run.make_lpme(run.sphere, run.search, plain_rates).max_queries
    )


def _anchored_steps(run: _FairRun) -> Generator[Query, bool, Elicitation[FairQuadraticMetric]]:
    """A QPME run per partition and an LPME run on the cut's other side; ``B``, ``lam`` from all slopes."""
    tau, partitions = run.tau, run.partitions
    m, k = tau.shape
    everyone = frozenset(range(m))
    gradients: list[FloatArray] = []
    hessians: list[FloatArray] = []
    counts: list[int] = []
    runs: list[SlopeRun] = []
    peaks: list[LinePeak] = []
    fallbacks: list[list[int]] = []
    for sigma in partitions:
        before = run.tally[0]
        result: Elicitation[ShiftedQuadratic] | None
        try:
            result = yield from run.make_qpme(sigma)
            run.tally[0] += result.num_queries
        except DegenerateMetricError as degenerate:
            run.tally[0] += degenerate.queries_asked
            result = None
        if result is not None:
            gradients.append(result.metric.d)
            hessians.append(result.metric.B)
            _collect(run, sigma, result, runs, peaks)
            p = int(np.argmax(result.metric.d))
        else:
            # QPME's trivial queries saw no gradient at o (lam near 1, the violation dominates). The fair
            # structure needs none: measure this side's slopes at o and every z_j directly, as "paired" does.
            fallbacks.append(sorted(sigma))
            runs += yield from _slope_runs(run, sigma, [None, *range(k)])
            p = int(np.argmax(runs[-(k + 1)].slope))
        # One run on the cut's other side at z_p (see the module docstring).
        runs += yield from _slope_runs(run, everyone - sigma, [p])
        counts.append(run.tally[0] - before)
    details: dict[str, Any] = {
        "design": "anchored",
        "partitions": [sorted(sigma) for sigma in partitions],
        "xi": membership_matrix(partitions, m).tolist(),
        "queries_per_partition": counts,
    }

    def lines() -> FairReconstruction:
        if fallbacks:
            # Some partition has no QPME gradient: solve (a, B~) jointly from every slope instead.
            return reconstruct_fair_joint(tau, runs, run.varrho)
        # a from the QPME gradients (every run of a partition informs d); B and lam from all slopes.
        d = np.array(gradients)
        d_norms = np.linalg.norm(d, axis=1)
        if np.any(d_norms < ZERO):
            raise NumericalError("a partition's elicited gradient is zero: a cannot be identified")
        tau_sigma = np.array([tau[sorted(sigma)].sum(axis=0) for sigma in partitions])
        a_hat, scales = costs_from_gradients(tau_sigma, d, d_norms)
        details["gradients"] = d.tolist()
        details["hessians"] = [h.tolist() for h in hessians]
        details["scales"] = scales.tolist()
        return reconstruct_fair_anchored(tau, a_hat, runs, run.varrho)

    if run.resolve_degenerate:
        outcome, details["fit"] = yield from _signed_outcome(run, runs, peaks, lines)
        details["line_peaks"] = len(peaks)
    else:
        outcome, details["fit"] = lines(), "lines"
    details["residual"] = float(outcome.scales[0])
    details["psd_clipped_mass"] = outcome.negative_mass
    details["fallback_partitions"] = fallbacks
    details["slopes"] = [slope_run.slope.tolist() for slope_run in runs]
    details["offsets"] = [slope_run.offset.tolist() for slope_run in runs]
    details["moved_groups"] = [sorted(slope_run.partition) for slope_run in runs]
    return Elicitation(metric=outcome.metric, num_queries=run.tally[0], details=details)


def _paired_budget(run: _FairRun) -> int:
    per_run = run.make_lpme(run.sphere, run.search, plain_rates).max_queries
    return len(run.partitions) * (run.sphere.n_classes + 2) * per_run


def _paired_steps(run: _FairRun) -> Generator[Query, bool, Elicitation[FairQuadraticMetric]]:
    """Per partition LPME at ``o`` and every ``z_j`` plus the other-side run, solved jointly."""
    tau, partitions = run.tau, run.partitions
    m, k = tau.shape
    everyone = frozenset(range(m))
    runs: list[SlopeRun] = []
    counts: list[int] = []
    for sigma in partitions:
        before = run.tally[0]
        # Side sigma: the runs of Algorithm 1 lines 1-3 (at o and at every z_j).
        runs += yield from _slope_runs(run, sigma, [None, *range(k)])
        # The complement side at z_p replaces Algorithm 1's -z_p run. Its gradient direction
        # a * tau^{not sigma} differs from sigma's, which pins down the rank-one term (d d^T) that the
        # runs of one side can barely tell apart from the metric; p is where sigma's gradient at o is
        # largest, the coordinate that couples most strongly to that term.
        p = int(np.argmax(runs[-(k + 1)].slope))
        runs += yield from _slope_runs(run, everyone - sigma, [p])
        counts.append(run.tally[0] - before)

    def lines() -> FairReconstruction:
        return reconstruct_fair_joint(tau, runs, run.varrho)

    fit = "lines"
    if run.resolve_degenerate:
        outcome, fit = yield from _signed_outcome(run, runs, [], lines)
    else:
        outcome = lines()
    details: dict[str, Any] = {
        "design": "paired",
        "fit": fit,
        "partitions": [sorted(sigma) for sigma in partitions],
        "xi": membership_matrix(partitions, m).tolist(),
        "slopes": [slope_run.slope.tolist() for slope_run in runs],
        "offsets": [slope_run.offset.tolist() for slope_run in runs],
        "moved_groups": [sorted(slope_run.partition) for slope_run in runs],
        "inner_radius": run.varrho,
        "queries_per_partition": counts,
        "residual": float(outcome.scales[0]),
        "singular_gap": float(outcome.scales[1]) if outcome.scales.shape[0] > 1 else None,
        "psd_clipped_mass": outcome.negative_mass,
    }
    return Elicitation(metric=outcome.metric, num_queries=run.tally[0], details=details)


@dataclass(frozen=True)
class _Design:
    """A query design of `fair_qpme`: its queries and its worst-case query count."""

    steps: Callable[[_FairRun], Generator[Query, bool, Elicitation[FairQuadraticMetric]]]
    budget: Callable[[_FairRun], int]


_DESIGNS: Mapping[str, _Design] = {
    "qpme": _Design(_qpme_steps, _qpme_budget),
    "anchored": _Design(_anchored_steps, _anchored_budget),
    "paired": _Design(_paired_steps, _paired_budget),
}
#: The query designs `fair_qpme` offers (see its docstring).
DESIGNS: tuple[str, ...] = tuple(_DESIGNS)
