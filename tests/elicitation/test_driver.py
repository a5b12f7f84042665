"""Tests of the run/replay drivers on a tiny deterministic elicitor (a threshold bisection)."""

from __future__ import annotations

from collections.abc import Generator

import numpy as np
import pytest

from elicitation import (
    Done,
    Elicitation,
    Elicitor,
    InvalidAnswerError,
    Pending,
    Query,
    ReplayMismatchError,
    replay,
    run,
)
from elicitation.types import ask


def _bisection_body(steps: int, offset: float) -> Generator[Query, bool, Elicitation[float]]:
    low, high = 0.0, 1.0
    for step in range(steps):
        mid = (low + high) / 2.0
        prefers_first = yield from ask(
            Query(
                np.array([mid + offset, 0.5]), np.array([0.5, 0.5]), search="bisect", kind="half", step=step
            )
        )
        low, high = (mid, high) if prefers_first else (low, mid)
    return Elicitation(metric=(low + high) / 2.0, num_queries=steps)


def bisection(steps: int = 6, offset: float = 0.0) -> Elicitor[Elicitation[float]]:
    return Elicitor(_bisection_body(steps, offset), name="bisect", max_queries=steps)


def threshold_oracle(threshold: float):
    return lambda first, second: bool(first[0] < threshold)


def test_run_returns_result_with_log_and_count() -> None:
    result = run(bisection(8), threshold_oracle(0.3))
    assert result.num_queries == 8 == len(result.log)
    assert abs(result.metric - 0.3) < 2**-8
    assert [query.step for query, _ in result.log] == list(range(8))


def test_run_rejects_non_boolean_oracle_answers() -> None:
    with pytest.raises(InvalidAnswerError, match="boolean"):
        run(bisection(), lambda first, second: 1)


def test_send_of_non_boolean_is_refused_by_the_elicitor() -> None:
    elicitor = bisection()
    next(elicitor)
    with pytest.raises(InvalidAnswerError):
        elicitor.send("yes")  # type: ignore[arg-type]


def test_replay_of_every_prefix_gives_the_live_next_query() -> None:
    live = run(bisection(7), threshold_oracle(0.62))
    answers = [answer for _, answer in live.log]
    queries = [query for query, _ in live.log]
    for n in range(len(answers)):
        state = replay(bisection(7), answers[:n], expected_queries=queries[:n])
        assert isinstance(state, Pending)
        assert state.n_answered == n
        assert state.query.matches(queries[n], atol=0.0)
    done = replay(bisection(7), answers, expected_queries=queries)
    assert isinstance(done, Done)
    assert done.result.metric == live.metric


def test_replay_continues_live_after_rebuild() -> None:
    answers = [True, False, True]
    state = replay(bisection(5), answers)
    assert isinstance(state, Pending)
    next_query = state.elicitor.send(False)
    assert next_query.step == 4


def test_replay_detects_a_changed_configuration() -> None:
    live = run(bisection(5), threshold_oracle(0.4))
    answers = [answer for _, answer in live.log]
    queries = [query for query, _ in live.log]
    with pytest.raises(ReplayMismatchError, match="differs"):
        replay(bisection(5, offset=1e-3), answers, expected_queries=queries)


def test_replay_names_the_first_diverging_query() -> None:
    live = run(bisection(6), threshold_oracle(0.4))
    answers = [answer for _, answer in live.log]
    queries = [query for query, _ in live.log]
    tampered = [
        *queries[:3],
        *(Query(q.first + 1e-3, q.second, search=f"tampered{i}") for i, q in enumerate(queries[3:])),
    ]
    with pytest.raises(ReplayMismatchError, match="replayed query 3 "):
        replay(bisection(6), answers, expected_queries=tampered)


def test_replay_reports_divergence_rather_than_the_failure_it_caused() -> None:
    def fragile_body() -> Generator[Query, bool, Elicitation[float]]:
        first = yield from ask(Query(np.array([0.4, 0.6]), np.array([0.5, 0.5])))
        if first:
            raise ZeroDivisionError("the recorded session never took this branch")
        yield from ask(Query(np.array([0.3, 0.7]), np.array([0.5, 0.5])))
        return Elicitation(metric=0.0, num_queries=2)

    logged = [
        Query(np.array([0.45, 0.55]), np.array([0.5, 0.5])),
        Query(np.array([0.3, 0.7]), np.array([0.5, 0.5])),
    ]
    with pytest.raises(ReplayMismatchError, match="replayed query 0 "):
        replay(
            Elicitor(fragile_body(), name="fragile", max_queries=2), [True, False], expected_queries=logged
        )


def test_replay_compares_queries_of_another_shape_one_by_one() -> None:
    live = run(bisection(4), threshold_oracle(0.4))
    answers = [answer for _, answer in live.log]
    queries = [query for query, _ in live.log]
    reshaped = [*queries[:2], Query(np.array([0.5, 0.5, 0.0]), np.array([0.5, 0.5, 0.0])), queries[3]]
    with pytest.raises(ReplayMismatchError, match="replayed query 2 "):
        replay(bisection(4), answers, expected_queries=reshaped)


def test_replay_detects_more_answers_than_the_elicitor_asks() -> None:
    with pytest.raises(ReplayMismatchError, match="finished after 3"):
        replay(bisection(3), [True] * 4)


def test_replay_rejects_non_boolean_logged_answers() -> None:
    with pytest.raises(InvalidAnswerError, match="logged answer 1"):
        replay(bisection(3), [True, "no"])  # type: ignore[list-item]


def test_elicitors_compose_with_yield_from() -> None:
    def body() -> Generator[Query, bool, Elicitation[float]]:
        first = yield from bisection(4)
        second = yield from bisection(4)
        return Elicitation(metric=first.metric + second.metric, num_queries=8)

    result = run(Elicitor(body(), name="twice", max_queries=8), threshold_oracle(0.25))
    assert result.num_queries == 8
    assert abs(result.metric - 0.5) < 2**-3
