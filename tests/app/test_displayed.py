"""Sessions ask displayed questions: no algorithm that does so shows a pair twice in a row, on many seeds."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.algorithms import REGISTRY, group_tau
from app.sessions.displayed import DISPLAY_MARK, build_session_elicitor, session_version
from elicitation import ReplayMismatchError, Sphere, run
from elicitation.display import DisplayGrid
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
    2: SyntheticSpace(2, radius=0.2, priors=[[0.85, 0.15], [0.7, 0.3]], n_groups=2),
}


def _metric(name: str, space: SyntheticSpace, rng: np.random.Generator) -> object:
    if name == "active_linear":
        return random_linear_metric(rng, 2, nonnegative=True)
    if name == "active_fair":
        return random_fair_metric(rng, 2, 2, tau=group_tau(space.priors, None))
    return random_quadratic_metric(rng, 2)


DISPLAYED = sorted(name for name, spec in REGISTRY.items() if spec.algorithm.displayed)


def test_qpme_and_the_active_elicitors_ask_displayed_questions() -> None:
    assert DISPLAYED == ["active_fair", "active_linear", "active_quadratic", "qpme"]


@pytest.mark.parametrize("name", DISPLAYED)
@pytest.mark.parametrize("seed", range(4))
def test_successive_questions_never_display_alike(name: str, seed: int) -> None:
    spec = REGISTRY[name]
    space = SPACES[2 if spec.needs_groups else 1]
    grid = DisplayGrid.from_priors(space.priors)
    params = spec.parse_params({"max_queries": 15} if spec.algorithm.needs_space else {})
    rng = np.random.default_rng(seed)
    oracle = LogisticOracle(_metric(name, space, rng), 200.0, rng=rng)
    result = run(build_session_elicitor(spec, space, params, seed=seed), oracle)
    pictures = []
    for query, _answer in result.log:
        assert np.allclose(query.first, grid.snap(query.first, space.sphere))
        assert not grid.same(query.first, query.second)
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
    assert session_version(REGISTRY["lpme"]) == REGISTRY["lpme"].version


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
    assert session_version(spec) == "active_fair-2" + DISPLAY_MARK
    assert spec.algorithm.query_region(space) == space.group_spheres
    oracle = LogisticOracle(random_fair_metric(np.random.default_rng(1), 2, 2), 200.0, rng=0)
    current = run(build_session_elicitor(spec, space, params, seed=5), oracle)
    for query, _answer in current.log:
        for side in (query.first, query.second):
            for row, own in zip(side, space.group_spheres, strict=True):
                assert own.contains(row)
    # Sessions recorded before (displayed or not) keep asking every group in the common sphere.
    for version in ("active_fair-1" + DISPLAY_MARK, "active_fair-1"):
        earlier = run(build_session_elicitor(spec, space, params, seed=5, version=version), oracle)
        rows = np.concatenate([np.concatenate([q.first, q.second]) for q, _ in earlier.log])
        assert all(space.sphere.contains(row) for row in rows)
        assert not all(space.group_spheres[0].contains(row) for row in rows[0::2])


def test_displayed_sessions_of_an_earlier_version_replay_that_version() -> None:
    # active_quadratic-2 asked the same questions but reported the posterior mean, not its consensus.
    spec = REGISTRY["active_quadratic"]
    space = SPACES[1]
    params = spec.parse_params({"max_queries": 4})
    rng = np.random.default_rng(0)
    metric = random_quadratic_metric(rng, 2)
    earlier = run(
        build_session_elicitor(spec, space, params, seed=2, version="active_quadratic-2" + DISPLAY_MARK),
        LogisticOracle(metric, 200.0, rng=np.random.default_rng(1)),
    )
    current = run(
        build_session_elicitor(spec, space, params, seed=2),
        LogisticOracle(metric, 200.0, rng=np.random.default_rng(1)),
    )
    assert [query.first.tolist() for query, _ in earlier.log] == [
        query.first.tolist() for query, _ in current.log
    ]
    assert earlier.details["estimate"] == "mean" and current.details["estimate"] == "consensus"
    with pytest.raises(ReplayMismatchError, match="active_quadratic-1"):
        build_session_elicitor(spec, space, params, seed=2, version="active_quadratic-1" + DISPLAY_MARK)
