"""The results page ranks the dataset's own classifiers when the study runs on a real dataset."""

from __future__ import annotations

import numpy as np

from app.admin.monitor import POOL_SIZE, candidate_pool
from elicitation.lab.feasible import build_space as build_dataset_space
from elicitation.rates import SyntheticSpace


def test_dataset_pool_is_the_datasets_plug_in_classifiers() -> None:
    space = build_dataset_space("breast-cancer", seed=0)
    pool = candidate_pool(space)
    trained = space.plug_in_rates()[space.n_classes :]
    assert len(pool) == POOL_SIZE
    for rates in pool:
        # each pool member is one of the trained (non-trivial) classifiers, not a made-up point
        assert np.min(np.abs(trained - rates).max(axis=1)) == 0.0
        assert not np.allclose(rates, np.eye(2)[0]) and not np.allclose(rates, np.eye(2)[1])
        # and none is worse than calling everyone the most common class
        assert rates @ space.priors >= np.max(space.priors)
    assert len({tuple(rates) for rates in pool}) > 1


def test_synthetic_pool_stays_inside_the_query_sphere() -> None:
    space = SyntheticSpace(3, radius=0.2)
    pool = candidate_pool(space)
    assert len(pool) == POOL_SIZE
    assert all(space.sphere.contains(rates) for rates in pool)
    assert all(np.array_equal(a, b) for a, b in zip(pool, candidate_pool(space), strict=True))
