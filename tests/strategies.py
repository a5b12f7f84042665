"""Shared hypothesis strategies and seeded generators of metrics that follow the paper's assumptions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

import numpy as np
from hypothesis import strategies as st
from threadpoolctl import threadpool_info

from elicitation.types import FloatArray, LinearMetric, QuadraticMetric, Query

__all__ = [
    "MIN_GRADIENT",
    "WELL_FORMED_ENTRY",
    "answer_sequences",
    "blas_kernel",
    "on_this_blas",
    "query_log_digest",
    "random_quadratic_metric",
    "random_unit_vector",
    "unit_vectors",
]

#: Regularity used by the paper's experiments (Appendix G): some gradient coordinate at o exceeds this.
MIN_GRADIENT = 1e-2
#: The authors' "well-formed" margin on every entry of the unit gradient (their MIN_GRAD).
WELL_FORMED_ENTRY = 0.1

T = TypeVar("T")


def blas_kernel() -> str:
    """The OpenBLAS kernel family numpy's matrix products run on in this process ("" if not OpenBLAS)."""
    openblas = [lib for lib in threadpool_info() if lib["internal_api"] == "openblas"]
    return str(openblas[0].get("architecture") or "") if openblas else ""


def on_this_blas(recorded: T, **by_kernel: T) -> T:
    """``recorded``, or the recording made where OpenBLAS runs the kernel family named (e.g. ``Haswell``).

    An active elicitor's particle computations round differently on other kernels (and perhaps on other
    SIMD loops of numpy), and a near-tie between candidate questions or a move's acceptance can then go the
    other way: from that step its session asks other questions. A pinned query stream therefore holds per
    kernel family; on a family with no recording of its own the test fails against ``recorded``, which
    says to record one there.
    """
    return by_kernel.get(blas_kernel(), recorded)


def query_log_digest(log: Sequence[tuple[Query, bool]]) -> str:
    """A short sha256 of a query log (rates rounded to 1e-9, answers): pins down an elicitor's queries."""
    h = hashlib.sha256()
    for query, answer in log:
        h.update(np.round(np.concatenate([query.first.ravel(), query.second.ravel()]), 9).tobytes())
        h.update(bytes([answer]))
    return h.hexdigest()[:16]


def random_unit_vector(rng: np.random.Generator, k: int) -> FloatArray:
    """A direction drawn uniformly from the unit sphere in ``R^k``."""
    while True:
        v = rng.normal(size=k)
        norm = float(np.linalg.norm(v))
        if norm > 1e-6:
            return v / norm


def random_quadratic_metric(
    rng: np.random.Generator,
    k: int,
    *,
    center: FloatArray | None = None,
    min_gradient: float = MIN_GRADIENT,
    min_entry: float = 0.0,
) -> QuadraticMetric:
    """A random ``(a, B)`` of Definition 2 (``B`` NSD, unit norm) with a non-zero gradient at ``o``.

    As in the paper's experiments, ``a`` has non-negative entries and carries a share ``U(0.3, 0.7)`` of the
    squared norm (so neither part dominates for any ``k``); ``B = -Q diag(lambda) Q^T`` with a uniformly
    random rotation ``Q`` and ``lambda ~ U(0, 1)``. Redrawn until the normalised gradient at ``o`` has an
    entry above ``min_gradient`` (Assumption 2 with the paper's margin) and, if ``min_entry > 0``, every
    entry at least ``min_entry`` in absolute value (the authors' "well-formed" metrics use 0.1: slopes with
    a near-zero entry make the curvature along the gradient nearly unobservable).
    """
    o = np.full(k, 1.0 / k) if center is None else np.asarray(center, dtype=np.float64)
    while True:
        q, _ = np.linalg.qr(rng.normal(size=(k, k)))
        B = -(q * rng.uniform(0.0, 1.0, size=k)) @ q.T
        B = (B + B.T) / 2.0
        a = np.abs(rng.normal(size=k))
        share = rng.uniform(0.3, 0.7)
        a = a * np.sqrt(share) / np.linalg.norm(a)
        B = B * np.sqrt(1.0 - share) / np.linalg.norm(B)
        metric = QuadraticMetric(a, B)
        gradient = metric.gradient(o)
        unit = np.abs(gradient) / float(np.linalg.norm(gradient))
        if float(np.max(unit)) > min_gradient and float(np.min(unit)) >= min_entry:
            return metric


@st.composite
def unit_vectors(draw: st.DrawFn, k: int) -> FloatArray:
    """Unit vectors in ``R^k`` with no coordinate exactly at the orthant boundary ambiguity."""
    values = draw(
        st.lists(st.floats(-1.0, 1.0, allow_nan=False), min_size=k, max_size=k).filter(
            lambda xs: float(np.linalg.norm(xs)) > 1e-3
        )
    )
    v = np.array(values)
    return v / np.linalg.norm(v)


def linear_metrics(k: int) -> st.SearchStrategy[LinearMetric]:
    """Random unit linear metrics in ``R^k``."""
    return unit_vectors(k).map(LinearMetric)


def answer_sequences(max_size: int = 400) -> st.SearchStrategy[list[bool]]:
    """Arbitrary (possibly inconsistent) answer sequences, as a careless or adversarial human gives."""
    return st.lists(st.booleans(), max_size=max_size)
