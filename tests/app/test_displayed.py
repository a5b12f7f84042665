"""Sessions ask displayed questions: no study algorithm shows a pair twice in a row, on many seeds, and the
page shows exactly the pair each elicitor learns from."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import on_this_blas, query_log_digest

from app.algorithms import REGISTRY, group_tau
from app.charts.comparison import displayed_counts, rounded_counts
from app.cli.web import DEMO_STUDY
from app.sessions.displayed import DISPLAY_MARK, build_session_elicitor, session_version
from app.study_config import build_space, parse_study_config
from benchmarks.expert_minutes import FAIR_STUDY
from elicitation import QuadraticMetric, ReplayMismatchError, Sphere, run
from elicitation.active import LEAN_SEARCH
from elicitation.display import DisplayGrid
from elicitation.families import Draw
from elicitation.oracles import (
    ExactOracle,
    LogisticOracle,
    random_fair_metric,
    random_linear_metric,
    random_quadratic_metric,
)
from elicitation.qpme import DEFAULT_INNER_RATIO, DISPLAYED_INNER_RATIO
from elicitation.rates import SyntheticSpace

SPACES = {
    1: SyntheticSpace(2, radius=0.2, priors=[0.65, 0.35]),
    # Adult's group priors: at tenths of a person the classes are 88.6 and 11.4 (not 89 and 11) people.
    2: SyntheticSpace(2, radius=0.2, priors=[[0.8864, 0.1136], [0.6875, 0.3125]], n_groups=2),
}
#: Known costs and group-gap penalty of the trade-off search's studies.
TRADEOFF = {"a": [0.6, 0.8], "B_pairs": [[[1.0, 0.0], [0.0, 1.0]]]}


def _params(name: str) -> dict[str, object]:
    if name == "tradeoff":
        return TRADEOFF
    return {"max_queries": 15} if REGISTRY[name].algorithm.needs_space else {}


def _metric(name: str, space: SyntheticSpace, rng: np.random.Generator) -> object:
    if name == "active_linear":
        return random_linear_metric(rng, 2, nonnegative=True)
    if name == "active_fair":
        return random_fair_metric(rng, 2, 2, tau=group_tau(space.priors, None))
    algorithm = REGISTRY[name].algorithm
    tau = group_tau(space.priors, None) if algorithm.needs_groups else None
    draw = Draw(n_classes=2, sphere=space.sphere, n_groups=space.n_groups, tau=tau)
    return algorithm.random_metric(rng, draw, TRADEOFF if name == "tradeoff" else None)


def _page_rates(space: SyntheticSpace, first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rates a participant reads off the page for this pair (its rounding, its decimals)."""
    left, right, _decimals = displayed_counts(space.confusion(first), space.confusion(second))
    return tuple(np.diagonal(counts, axis1=-2, axis2=-1) / counts.sum(axis=-1) for counts in (left, right))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10_000), st.sampled_from([0, 1]))
def test_the_page_shows_rates_on_the_display_grid_exactly(k: int, seed: int, decimals: int) -> None:
    rng = np.random.default_rng(seed)
    priors = rng.dirichlet(np.full(k, 3.0))
    # Every class has at least 8 people in 100: a class of 2 shows only the rates 0, 1/2 and 1, and a
    # sphere of radius 0.2 around 1/k may then hold no rate the display can show (snap refuses that).
    priors = np.maximum(priors, 0.08) / np.maximum(priors, 0.08).sum()
    space = SyntheticSpace(k, radius=min(0.2, 1.0 / k), priors=priors)
    grid = DisplayGrid.from_priors(space.priors, decimals)
    point = grid.snap(space.sphere.center + rng.normal(scale=0.1, size=k), space.sphere)
    counts = rounded_counts(space.confusion(point), decimals)
    unit = 10**decimals
    assert counts.sum() == pytest.approx(100.0)
    assert np.allclose(counts.sum(axis=1) * unit, grid.class_steps[0])
    assert np.allclose(np.diag(counts) * unit, grid.counts(point))
    assert np.allclose(np.diag(counts) / counts.sum(axis=1), point)


def test_every_study_algorithm_asks_displayed_questions() -> None:
    assert sorted(REGISTRY) == sorted(name for name, spec in REGISTRY.items() if spec.algorithm.displayed)
    assert all(session_version(spec) == spec.version + DISPLAY_MARK for spec in REGISTRY.values())


@pytest.mark.parametrize("name", sorted(REGISTRY))
@pytest.mark.parametrize("seed", range(12))
def test_successive_questions_never_display_alike_and_show_what_the_elicitor_learns_from(
    name: str, seed: int
) -> None:
    spec = REGISTRY[name]
    space = SPACES[2 if spec.needs_groups else 1]
    grid = DisplayGrid.from_priors(space.priors, spec.algorithm.display_decimals)
    params = spec.parse_params(_params(name))
    rng = np.random.default_rng(seed)
    oracle = LogisticOracle(_metric(name, space, rng), 200.0, rng=rng)
    result = run(build_session_elicitor(spec, space, params, seed=seed), oracle)
    assert result.log
    pictures = []
    for query, _answer in result.log:
        assert np.allclose(query.first, grid.snap(query.first, space.sphere))
        assert not grid.same(query.first, query.second)
        # The page shows exactly these rates, so the answer is about the pair the elicitor updates on.
        shown_first, shown_second = _page_rates(space, query.first, query.second)
        assert np.allclose(shown_first, query.first) and np.allclose(shown_second, query.second)
        pictures.append({grid.key(query.first, query.second), grid.key(query.second, query.first)})
    assert all(not (before & after) for before, after in itertools.pairwise(pictures))


def test_old_sessions_replay_their_exact_queries_and_unknown_versions_are_refused() -> None:
    spec = REGISTRY["active_quadratic"]
    space = SPACES[1]
    params = spec.parse_params({"max_queries": 3})
    assert session_version(spec) == spec.version + DISPLAY_MARK
    legacy = next(build_session_elicitor(spec, space, params, seed=1, version=spec.version))
    shown = next(build_session_elicitor(spec, space, params, seed=1))
    grid = DisplayGrid.from_priors(space.priors)
    assert not np.allclose(legacy.first, grid.snap(legacy.first, space.sphere))
    assert np.allclose(shown.first, grid.snap(shown.first, space.sphere))
    with pytest.raises(ReplayMismatchError, match="active_quadratic-0"):
        build_session_elicitor(spec, space, params, seed=1, version="active_quadratic-0")
    # An LPME session recorded before its questions were displayed replays its exact rates.
    lpme = REGISTRY["lpme"]
    exact = next(build_session_elicitor(lpme, space, lpme.parse_params({}), seed=0, version=lpme.version))
    tenths = DisplayGrid.from_priors(space.priors, 1)
    assert not np.allclose(exact.first, tenths.snap(exact.first, space.sphere))


def test_qpme_sessions_search_wider_small_spheres_and_earlier_sessions_replay_the_exact_searches() -> None:
    spec = REGISTRY["qpme"]
    space = SPACES[1]
    params = spec.parse_params({})
    metric = random_quadratic_metric(np.random.default_rng(4), 2)
    assert session_version(spec) == "qpme-3" + DISPLAY_MARK
    current = run(build_session_elicitor(spec, space, params, seed=0), ExactOracle(metric))
    assert current.details["inner_radius"] == pytest.approx(DISPLAYED_INNER_RATIO * space.sphere.radius)
    earlier = run(build_session_elicitor(spec, space, params, seed=0, version="qpme-3"), ExactOracle(metric))
    assert earlier.details["inner_radius"] == pytest.approx(DEFAULT_INNER_RATIO * space.sphere.radius)
    assert earlier.num_queries > current.num_queries
    grid = DisplayGrid.from_priors(space.priors)
    assert not all(np.allclose(query.first, grid.snap(query.first, space.sphere)) for query, _ in earlier.log)
    # A coordinator's own small-sphere radius is kept.
    chosen = spec.parse_params({"inner_radius": 0.05})
    assert run(build_session_elicitor(spec, space, chosen, seed=0), ExactOracle(metric)).details[
        "inner_radius"
    ] == pytest.approx(0.05)


class _RegionsPerGroup(SyntheticSpace):
    """A two-group synthetic space with a sphere of its own per group (as Adult's realistic regions)."""

    SPHERES = (Sphere(np.array([0.75, 0.55]), 0.08), Sphere(np.array([0.6, 0.45]), 0.12))

    @property
    def group_spheres(self) -> tuple[Sphere, ...]:
        return self.SPHERES


def test_fair_sessions_ask_each_group_in_its_own_sphere_and_earlier_ones_replay_the_common_one() -> None:
    spec = REGISTRY["active_fair"]
    space = _RegionsPerGroup(2, radius=0.2, priors=[[0.85, 0.15], [0.7, 0.3]], n_groups=2)
    params = spec.parse_params({"max_queries": 6})
    assert session_version(spec) == "active_fair-4" + DISPLAY_MARK
    assert spec.algorithm.query_region(space) == space.group_spheres
    oracle = LogisticOracle(random_fair_metric(np.random.default_rng(1), 2, 2), 200.0, rng=0)
    current = run(build_session_elicitor(spec, space, params, seed=5), oracle)
    for query, _answer in current.log:
        for side in (query.first, query.second):
            for row, own in zip(side, space.group_spheres, strict=True):
                assert own.contains(row)
    # active_fair-2 sessions (questions for the whole metric only) replay their own questions.
    before = run(
        build_session_elicitor(spec, space, params, seed=5, version="active_fair-2" + DISPLAY_MARK), oracle
    )
    third = run(
        build_session_elicitor(spec, space, params, seed=5, version="active_fair-3" + DISPLAY_MARK), oracle
    )
    assert [q.first.tolist() for q, _ in before.log] != [q.first.tolist() for q, _ in third.log]
    assert before.details["n_particles"] == third.details["n_particles"] == current.details["n_particles"]
    # Sessions recorded before (displayed or not) keep asking every group in the common sphere.
    for version in ("active_fair-1" + DISPLAY_MARK, "active_fair-1"):
        earlier = run(build_session_elicitor(spec, space, params, seed=5, version=version), oracle)
        rows = np.concatenate([np.concatenate([q.first, q.second]) for q, _ in earlier.log])
        assert all(space.sphere.contains(row) for row in rows)
        assert not all(space.group_spheres[0].contains(row) for row in rows[0::2])


#: The query stream (`query_log_digest`) of a displayed active_quadratic-3 session below, recorded on the
#: code before active_quadratic-4 (an Intel Xeon's OpenBLAS kernels; where OpenBLAS runs its Haswell
#: kernels, the AMD EPYC of 28 Nov 2026, recorded there on the same code): its sessions must keep
#: replaying exactly these questions.
ACTIVE_QUADRATIC_3_STREAM = on_this_blas("c5cc763a3b3b7a14", Haswell="17c4827ad6e0466d")


def test_displayed_sessions_of_an_earlier_version_replay_that_version() -> None:
    spec = REGISTRY["active_quadratic"]
    space = SPACES[1]
    params = spec.parse_params({"max_queries": 8})
    metric = random_quadratic_metric(np.random.default_rng(0), 2)

    def session(version: str | None):
        elicitor = build_session_elicitor(spec, space, params, seed=2, version=version)
        return run(elicitor, LogisticOracle(metric, 200.0, rng=np.random.default_rng(1)))

    assert session_version(spec) == "active_quadratic-6" + DISPLAY_MARK
    third = session("active_quadratic-3" + DISPLAY_MARK)
    assert query_log_digest(third.log) == ACTIVE_QUADRATIC_3_STREAM
    # active_quadratic-2 asked the same questions but reported the posterior mean, not its consensus.
    second = session("active_quadratic-2" + DISPLAY_MARK)
    assert query_log_digest(second.log) == ACTIVE_QUADRATIC_3_STREAM
    assert second.details["estimate"] == "mean" and third.details["estimate"] == "consensus"
    # Since active_quadratic-4 the elicitor elicits a metric increasing across the sphere: other
    # questions, another prior.
    current = session(None)
    assert query_log_digest(current.log) != ACTIVE_QUADRATIC_3_STREAM
    assert current.details["family"]["increasing_on"]["radius"] == space.sphere.radius
    assert "increasing_on" not in third.details["family"]
    with pytest.raises(ReplayMismatchError, match="active_quadratic-1"):
        build_session_elicitor(spec, space, params, seed=2, version="active_quadratic-1" + DISPLAY_MARK)


#: Query streams (answers, `query_log_digest`) of displayed sessions of the demo and of the fairness study
#: on Adult (seeds 3 and 4, the people below): active_quadratic-4's and active_fair-3's recorded on the code
#: before the lean versions, which their sessions must keep replaying; active_quadratic-5's and
#: active_fair-4's (the lean search from the shared prior) recorded when they were added, and
#: active_quadratic-6's (-5's questions with two classes) the same as -5's. Recorded on an Intel Xeon's
#: OpenBLAS kernels; those where OpenBLAS runs its Haswell kernels (`on_this_blas`) on the AMD EPYC of
#: 28 Nov 2026, on code whose other recorded streams and screens matched.
RECORDED_STREAMS = on_this_blas(
    {
        ("active_quadratic-4", 3): (24, "a3b8c285e132077b"),
        ("active_quadratic-4", 4): (24, "cdd3a034dc6f4d2c"),
        ("active_quadratic-5", 3): (24, "1b13e01a29cd0f57"),
        ("active_quadratic-5", 4): (24, "9d9e259ca61ec849"),
        ("active_quadratic-6", 3): (24, "1b13e01a29cd0f57"),
        ("active_quadratic-6", 4): (24, "9d9e259ca61ec849"),
        ("active_fair-3", 3): (24, "14c3f1f0e534a09f"),
        ("active_fair-3", 4): (24, "9ed5dea1b253d110"),
        ("active_fair-4", 3): (24, "6b8443fdc895dcbb"),
        ("active_fair-4", 4): (24, "8c3d66aa5c7f7c13"),
    },
    Haswell={
        ("active_quadratic-4", 3): (24, "8a40d4e86b7a0fbe"),
        ("active_quadratic-4", 4): (24, "5ba53e3cded04f5c"),
        ("active_quadratic-5", 3): (24, "fb2fad5f798bf80a"),
        ("active_quadratic-5", 4): (24, "9fee330c0683068c"),
        ("active_quadratic-6", 3): (24, "fb2fad5f798bf80a"),
        ("active_quadratic-6", 4): (24, "9fee330c0683068c"),
        ("active_fair-3", 3): (24, "14c3f1f0e534a09f"),
        ("active_fair-3", 4): (24, "9ed5dea1b253d110"),
        ("active_fair-4", 3): (24, "a57a9430fa20e90f"),
        ("active_fair-4", 4): (24, "8c3d66aa5c7f7c13"),
    },
)


@pytest.mark.parametrize(("version", "seed"), sorted(RECORDED_STREAMS))
def test_sessions_of_each_recorded_version_ask_their_recorded_questions(version: str, seed: int) -> None:
    config = parse_study_config(FAIR_STUDY if version.startswith("active_fair") else DEMO_STUDY)
    space = build_space(config)
    spec = REGISTRY[config.algorithm]
    params = spec.parse_params(config.algorithm_params)
    if config.algorithm == "active_fair":
        metric = random_fair_metric(np.random.default_rng(1), 2, 2, tau=group_tau(space.priors, None))
    else:
        metric = QuadraticMetric(np.array([0.35, 0.8]), np.array([[-0.35, 0.05], [0.05, -0.3]]))
    elicitor = build_session_elicitor(spec, space, params, seed=seed, version=version + DISPLAY_MARK)
    result = run(elicitor, LogisticOracle(metric, 200.0, rng=np.random.default_rng(1)))
    assert (result.num_queries, query_log_digest(result.log)) == RECORDED_STREAMS[(version, seed)]


@pytest.mark.parametrize(("n_classes", "particles"), [(2, {5: 300, 6: 300}), (5, {5: 300, 6: 600})])
def test_active_quadratic_6_keeps_the_default_particles_beyond_two_classes(
    n_classes: int, particles: dict[int, int]
) -> None:
    spec = REGISTRY["active_quadratic"]
    space = SyntheticSpace(n_classes, radius=0.15)
    params = spec.parse_params({"max_queries": 24})
    for version, expected in particles.items():
        elicitor = spec.build(space, params, seed=1, version=f"active_quadratic-{version}")
        assert elicitor._state.config.n_particles == expected
        assert elicitor._state.config.shared_prior and elicitor._state.config.search == LEAN_SEARCH
