"""Which of a few candidate classifiers a person would deploy: each one's posterior chance of being best.

An active elicitor's result keeps a sample of its posterior (``details["posterior_sample"]``, normalised
parameter vectors ``w``). Every family scores a classifier linearly in ``w`` up to a constant,
``<w, f(r, r0)>`` with ``f`` the answer features against any fixed ``r0`` (`FamilySpec.features`), so under
each sampled ``w`` one candidate is best; the share of the sample in which a candidate is best is its
posterior probability of being the best of the set. This is the paper's elicited metric put to the use it
is elicited for (choosing a classifier, Section 1), with the uncertainty the answers leave.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import InvalidConfigError
from ..types import FloatArray
from .families import FamilySpec

__all__ = ["best_probabilities"]


def best_probabilities(details: Mapping[str, Any], candidates: npt.ArrayLike) -> FloatArray:
    """Posterior probability that each candidate is the best of ``candidates`` for the person.

    Parameters
    ----------
    details : mapping
        An active elicitor's result details (or their stored JSON): ``family`` and ``posterior_sample``.
    candidates : array_like, shape (n_candidates, *rate_shape)
        The candidates' rates (fair: ``(n_candidates, n_groups, n_classes)``).

    Returns
    -------
    numpy.ndarray, shape (n_candidates,)
        Shares of the posterior sample under which each candidate scores best; they sum to one (a tie
        counts for the first of the tied candidates).

    Raises
    ------
    InvalidConfigError
        Without a posterior sample, or for rates of the wrong shape.
    """
    if "posterior_sample" not in details or "family" not in details:
        raise InvalidConfigError("details must come from an active elicitor (active_linear/_quadratic/_fair)")
    spec = FamilySpec.from_dict(details["family"])
    rates = np.asarray(candidates, dtype=np.float64)
    if rates.ndim != len(spec.rate_shape) + 1 or rates.shape[1:] != spec.rate_shape or rates.shape[0] < 1:
        raise InvalidConfigError(f"candidates must have shape (n, {', '.join(map(str, spec.rate_shape))})")
    sample = np.asarray(details["posterior_sample"], dtype=np.float64)
    reference = np.repeat(rates[:1], rates.shape[0], axis=0)
    utilities = sample @ spec.features(rates, reference).T
    best = np.argmax(utilities, axis=1)
    result: FloatArray = np.bincount(best, minlength=rates.shape[0]) / sample.shape[0]
    return result
