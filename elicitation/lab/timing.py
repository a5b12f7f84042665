"""The live cost of the core: time per next query and of replaying a long answer log."""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from ..driver import replay
from ..errors import InvalidConfigError
from ..oracles import (
    ExactOracle,
)
from ..types import (
    Elicitation,
    Elicitor,
)
from .benchmarks import summarize
from .simulation import MAX_SEED, build_elicitor, check_int, simulate

__all__ = [
    "TIMING_CASES",
    "Clock",
    "measure_timing",
]

#: A monotonic clock in seconds (``time.perf_counter``), injected by the caller of `measure_timing`.
Clock = Callable[[], float]


def _send_times(elicitor: Elicitor[Elicitation[Any]], oracle: ExactOracle, clock: Clock) -> list[float]:
    """Seconds per step: the first query, the next query after each answer, and last the final result."""
    times: list[float] = []
    start = clock()
    query = next(elicitor)
    times.append(clock() - start)
    try:
        while True:
            answer = oracle(query.first, query.second)
            start = clock()
            query = elicitor.send(answer)
            times.append(clock() - start)
    except StopIteration:
        times.append(clock() - start)
    return times


#: `measure_timing`'s default next-query cases: (label, algorithm, k, m).
TIMING_CASES: Final = (("qpme k=5", "qpme", 5, 2), ("fair_qpme k=3 m=3", "fair_qpme", 3, 3))


def measure_timing(
    clock: Clock,
    *,
    seed: int = 0,
    cases: Sequence[tuple[str, str, int, int]] = TIMING_CASES,
    replay_answers: int = 2000,
    repeats: int = 5,
) -> dict[str, Any]:
    """Measure the live cost of the core with ``clock`` (e.g. ``time.perf_counter``).

    * Next query: every ``send`` of each case's elicitation (by default QPME with k = 5 and fair QPME with
      k = 3, m = 3) against an exact oracle that returns a query, in microseconds (mean, median, p90, max);
      ``finish`` is the last ``send``, which computes the final metric instead.
    * Replay: `elicitation.replay` of the first ``replay_answers`` answers of a fair QPME log (k = 3, the
      fewest groups whose log is long enough) with every query checked, as the app does on resume; the
      median of ``repeats`` runs (elicitor construction excluded, the simulations' heap frozen as the app
      freezes its own), in milliseconds.

    Returns
    -------
    dict
        ``{"next_query": {label: stats_us}, "replay": {"algorithm", "n_classes", "n_groups", "answers",
        "log_length", "ms", "runs_ms"}}``.

    Raises
    ------
    InvalidConfigError
        On bad arguments, or if no fair QPME log with up to 8 groups is ``replay_answers`` long.
    """
    rng_seed = check_int(seed, "seed", 0, MAX_SEED)
    count = check_int(replay_answers, "replay_answers", 1)
    runs = check_int(repeats, "repeats", 1)
    next_query: dict[str, dict[str, float]] = {}
    for label, algorithm, k, m in cases:
        sim = simulate(algorithm, n_classes=k, n_groups=m, seed=rng_seed)
        elicitor = build_elicitor(algorithm, sim.params)
        *query_times, finish = _send_times(elicitor, ExactOracle(sim.metric), clock)
        stats = summarize([1e6 * t for t in query_times])
        stats["finish"] = 1e6 * finish
        stats["queries"] = float(sim.result.num_queries)
        next_query[label] = stats
    for m in range(2, 9):
        sim = simulate("fair_qpme", n_classes=3, n_groups=m, seed=rng_seed)
        if sim.result.num_queries < count:
            continue
        answers = [answer for _, answer in sim.result.log[:count]]
        queries = [query for query, _ in sim.result.log[:count]]
        samples = []
        # The web app freezes its long-lived start-up heap (app.main); freeze this benchmark's simulations
        # likewise, so full GC passes do not bill the replay for walking data it never touches.
        gc.collect()
        gc.freeze()
        try:
            for _ in range(runs):
                elicitor = build_elicitor("fair_qpme", sim.params)
                start = clock()
                replay(elicitor, answers, expected_queries=queries)
                samples.append(1e3 * (clock() - start))
        finally:
            gc.unfreeze()
        replay_case = {
            "algorithm": "fair_qpme",
            "n_classes": 3,
            "n_groups": m,
            "log_length": sim.result.num_queries,
            "answers": count,
            "ms": float(np.median(samples)),
            "runs_ms": samples,
        }
        return {"next_query": next_query, "replay": replay_case}
    raise InvalidConfigError(f"replay_answers={count} is longer than any fair QPME log with k=3, m<=8")
