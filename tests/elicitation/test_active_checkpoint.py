"""Checkpoints of the active elicitor: a restored elicitor continues bit for bit; bad bytes are refused."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from elicitation import CheckpointError, Done, Pending, Sphere, replay
from elicitation.active import ActiveElicitor, SearchEffort, active_fair, active_linear, active_quadratic
from elicitation.active import checkpoint as checkpoints
from elicitation.display import DisplayGrid

PARTICLES = 64
BUDGET = 9
PRIORS = np.array([0.65, 0.35])
TAU = np.array([[0.6, 0.3], [0.4, 0.7]])
#: Every count of the search, the rejuvenation and the burn-in below its default (one move: a restored
#: posterior must keep it).
LEAN_SEARCH = SearchEffort(
    random_pairs=64,
    committee=8,
    rescored=24,
    leaders=3,
    perturbations=4,
    tie_particles=4,
    ties_per_particle=8,
    moves=1,
    burn_in=2,
)


def _displayed_quadratic(seed: int, **options: Any) -> ActiveElicitor[Any]:
    """The quadratic elicitor asking on `PRIORS`' display grid, with this file's budget and particles."""
    return active_quadratic(
        Sphere(np.array([0.5, 0.5]), 0.2),
        priors=PRIORS,
        display=DisplayGrid.from_priors(PRIORS),
        seed=seed,
        max_queries=BUDGET,
        tolerance=1e-6,
        n_particles=PARTICLES,
        **options,
    )


#: One builder per configuration a study can run: families, noise models, exact or displayed queries.
BUILDERS: dict[str, Callable[[int], ActiveElicitor[Any]]] = {
    "linear-noisy": lambda seed: active_linear(
        Sphere.around_uniform(3, 0.2), seed=seed, max_queries=BUDGET, tolerance=1e-6, n_particles=PARTICLES
    ),
    "quadratic-exact-displayed": lambda seed: _displayed_quadratic(seed, beta=None),
    "quadratic-noisy-fresh-screens": lambda seed: _displayed_quadratic(seed, fresh_screens=True),
    "quadratic-noisy-lean-search": lambda seed: _displayed_quadratic(seed, search=LEAN_SEARCH),
    # The current demo elicitor's kind: a sensible metric, fresh screens, the burnt-in prior shared.
    "quadratic-sensible-shared-prior": lambda seed: _displayed_quadratic(
        seed, search=LEAN_SEARCH, sensible=True, fresh_screens=True, shared_prior=True
    ),
    # The same with an answer model that takes some answers to be coin flips.
    "quadratic-sensible-lapse": lambda seed: _displayed_quadratic(
        seed, search=LEAN_SEARCH, sensible=True, fresh_screens=True, shared_prior=True, lapse=0.05
    ),
    "fair-noisy": lambda seed: active_fair(
        Sphere.around_uniform(2, 0.15),
        tau=TAU,
        seed=seed,
        max_queries=BUDGET,
        tolerance=1e-6,
        n_particles=PARTICLES,
    ),
}


def _live(
    build: Callable[[], ActiveElicitor[Any]], answers: list[bool]
) -> tuple[list[Any], list[bytes], Any]:
    """Drive an elicitor with ``answers`` (cycled); the log, a checkpoint before every answer, the result."""
    elicitor = build()
    query = next(elicitor)
    log, saved = [], []
    try:
        while True:
            saved.append(elicitor.checkpoint())
            answer = answers[len(log) % len(answers)]
            log.append((query, answer))
            query = elicitor.send(answer)
    except StopIteration as stop:
        return log, saved, stop.value


def _same_result(mine: Any, theirs: Any) -> None:
    assert mine.num_queries == theirs.num_queries
    assert mine.metric.to_dict() == theirs.metric.to_dict()
    assert mine.details.keys() == theirs.details.keys()
    for key, value in mine.details.items():
        assert repr(value) == repr(theirs.details[key]), key


@settings(max_examples=6, deadline=None)
@given(
    name=st.sampled_from(sorted(BUILDERS)),
    seed=st.integers(0, 2**31 - 1),
    answers=st.lists(st.booleans(), min_size=1, max_size=BUDGET),
    at=st.integers(0, BUDGET - 1),
)
@example(name="quadratic-exact-displayed", seed=7, answers=[True, False, False, True], at=5)
@example(name="quadratic-noisy-fresh-screens", seed=7, answers=[True, False, False, True], at=5)
@example(name="quadratic-sensible-shared-prior", seed=7, answers=[True, False, False, True], at=0)
@example(name="quadratic-sensible-shared-prior", seed=8, answers=[False, True, True], at=4)
@example(name="quadratic-sensible-lapse", seed=8, answers=[False, True, True], at=4)
def test_a_restored_elicitor_continues_exactly_like_the_live_one(
    name: str, seed: int, answers: list[bool], at: int
) -> None:
    build = BUILDERS[name]
    log, saved, result = _live(lambda: build(seed), answers)
    at = min(at, len(log) - 1)
    restored = build(seed).restore(saved[at])
    assert restored.n_answered == at
    later = [answer for _query, answer in log[at:]]
    outcome = replay(restored, later, expected_queries=[query for query, _ in log[at:]], answered=log[:at])
    assert isinstance(outcome, Done)
    assert len(outcome.result.log) == len(log)
    _same_result(outcome.result, result)
    # And the checkpoint of a restored elicitor is the checkpoint it was restored from.
    assert build(seed).restore(saved[at]).checkpoint() == saved[at]


def test_a_restored_elicitor_first_asks_the_pending_query() -> None:
    build = BUILDERS["linear-noisy"]
    log, saved, _result = _live(lambda: build(3), [True, False])
    restored = build(3).restore(saved[4])
    assert next(restored).matches(log[4][0], 0.0)
    pending = replay(build(3).restore(saved[4]), [log[4][1]], answered=log[:4])
    assert isinstance(pending, Pending)
    assert pending.n_answered == 5
    assert pending.query.matches(log[5][0], 0.0)
    assert len(pending.log) == 5
    assert all(mine.matches(theirs, 0.0) for (mine, _), (theirs, _) in zip(pending.log, log, strict=False))


def test_a_restored_pending_log_reads_its_checkpointed_part_only_where_it_is_read() -> None:
    build = BUILDERS["linear-noisy"]
    log, saved, _result = _live(lambda: build(3), [True, False])
    read: list[int] = []

    class Recorded(list[Any]):
        def __getitem__(self, index: Any) -> Any:
            read.append(index)
            return super().__getitem__(index)

    pending = replay(build(3).restore(saved[4]), [log[4][1], log[5][1]], answered=Recorded(log[:4]))
    assert isinstance(pending, Pending)
    assert len(pending.log) == 6
    later = zip(pending.log[4:], log[4:6], strict=True)
    assert all(mine.matches(theirs, 0.0) for (mine, _), (theirs, _) in later)
    assert pending.log[-1][1] == log[5][1]
    assert read == []
    assert pending.log[1] == log[1] and pending.log[-6] == log[0]
    assert read == [1, 0]
    with pytest.raises(IndexError):
        pending.log[6]


def test_restoring_leaves_the_elicitor_it_was_called_on_untouched() -> None:
    build = BUILDERS["linear-noisy"]
    log, saved, _result = _live(lambda: build(5), [True])
    fresh = build(5)
    fresh.restore(saved[3])
    assert fresh.n_answered == 0
    assert next(fresh).matches(log[0][0], 0.0)


def test_only_an_elicitor_waiting_for_an_answer_has_a_checkpoint() -> None:
    elicitor = BUILDERS["linear-noisy"](1)
    with pytest.raises(CheckpointError, match="waiting for an answer"):
        elicitor.checkpoint()
    query = next(elicitor)
    with pytest.raises(StopIteration):
        while True:
            query = elicitor.send(bool(query.first[0] > query.second[0]))
    with pytest.raises(CheckpointError, match="waiting for an answer"):
        elicitor.checkpoint()


@pytest.mark.parametrize(
    ("other", "reason"),
    [
        (lambda: BUILDERS["linear-noisy"](12), "another configuration"),
        (
            lambda: active_linear(
                Sphere.around_uniform(3, 0.2), seed=11, max_queries=BUDGET, tolerance=1e-6, n_particles=96
            ),
            "another configuration",
        ),
        (
            lambda: active_linear(
                Sphere.around_uniform(3, 0.25),
                seed=11,
                max_queries=BUDGET,
                tolerance=1e-6,
                n_particles=PARTICLES,
            ),
            "another configuration",
        ),
        (lambda: BUILDERS["fair-noisy"](11), "another configuration"),
    ],
)
def test_a_checkpoint_of_another_configuration_is_refused(other: Callable[[], Any], reason: str) -> None:
    _log, saved, _result = _live(lambda: BUILDERS["linear-noisy"](11), [True, False])
    with pytest.raises(CheckpointError, match=reason):
        other().restore(saved[2])


def test_a_checkpoint_without_fresh_screens_does_not_continue_with_them() -> None:
    _log, saved, _result = _live(lambda: BUILDERS["quadratic-exact-displayed"](11), [True, False])
    again = BUILDERS["quadratic-exact-displayed"](11).restore(saved[2])
    assert again.n_answered == 2
    fresh = _displayed_quadratic(11, beta=None, fresh_screens=True)
    with pytest.raises(CheckpointError, match="another configuration"):
        fresh.restore(saved[2])


def test_a_checkpoint_of_another_search_effort_is_refused() -> None:
    _log, saved, _result = _live(lambda: BUILDERS["quadratic-noisy-lean-search"](11), [True, False])
    with pytest.raises(CheckpointError, match="another configuration"):
        BUILDERS["quadratic-noisy-fresh-screens"](11).restore(saved[2])


def test_a_checkpoint_of_a_shared_prior_session_does_not_continue_with_its_own_burn_in() -> None:
    _log, saved, _result = _live(lambda: BUILDERS["quadratic-sensible-shared-prior"](11), [True, False])
    own = _displayed_quadratic(11, search=LEAN_SEARCH, sensible=True, fresh_screens=True)
    with pytest.raises(CheckpointError, match="another configuration"):
        own.restore(saved[2])


def test_a_checkpoint_of_a_lapsing_answer_model_does_not_continue_without_the_lapse() -> None:
    _log, saved, _result = _live(lambda: BUILDERS["quadratic-sensible-lapse"](11), [True, False])
    plain = BUILDERS["quadratic-sensible-shared-prior"](11)
    with pytest.raises(CheckpointError, match="another configuration"):
        plain.restore(saved[2])
    # A lapse of zero is the plain model: the same fingerprint, so its checkpoints stay usable.
    zero = _displayed_quadratic(
        11, search=LEAN_SEARCH, sensible=True, fresh_screens=True, shared_prior=True, lapse=0.0
    )
    assert checkpoints.config_fingerprint(zero._state.config) == checkpoints.config_fingerprint(
        plain._state.config
    )


def test_the_default_search_keeps_the_fingerprints_of_earlier_checkpoints() -> None:
    # Recorded before the search became configurable: sessions' stored checkpoints stay usable.
    linear = BUILDERS["linear-noisy"](11)
    quadratic = BUILDERS["quadratic-noisy-fresh-screens"](7)
    assert checkpoints.config_fingerprint(linear._state.config) == (
        "8b5fa9c48ad6b53ca206cef72f03512392b206a39e5d007573201c35e96a97cf"
    )
    assert checkpoints.config_fingerprint(quadratic._state.config) == (
        "b4a206fb64b216f89aacc0a70b2bbf39ae8ba0c5f23101c97b4dbcc6bd727b05"
    )


def _checkpoint(at: int = 3) -> tuple[Callable[[], ActiveElicitor[Any]], bytes]:
    build = BUILDERS["quadratic-exact-displayed"]
    _log, saved, _result = _live(lambda: build(4), [True, False, True])
    return lambda: build(4), saved[at]


def _reopen(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The JSON header and array bytes of a checkpoint (the format's own layout, read independently)."""
    raw = blob[len(checkpoints._MAGIC) + 32 :]
    (length,) = struct.unpack_from("<I", raw)
    return json.loads(raw[4 : 4 + length]), raw[4 + length :]


def _reseal(header: dict[str, Any], payload: bytes) -> bytes:
    """A well-formed checkpoint (valid digest) around ``header`` and ``payload``, as a forger could write."""
    encoded = json.dumps(header).encode()
    body = struct.pack("<I", len(encoded)) + encoded + payload
    return checkpoints._MAGIC + hashlib.sha256(body).digest() + body


def _reseal_raw(body: bytes) -> bytes:
    return checkpoints._MAGIC + hashlib.sha256(body).digest() + body


def _array_offset(header: dict[str, Any], name: str) -> int:
    offset = 0
    for entry_name, _code, shape in header["arrays"]:
        if entry_name == name:
            return offset
        offset += int(np.prod(shape)) * 8
    raise KeyError(name)


def _tampered(blob: bytes, change: str) -> bytes:
    header, payload = _reopen(blob)
    if change == "format":
        header["format"] += 1
    elif change == "n_answers":
        header["n_answers"] += 1
    elif change == "dropped":
        header["dropped"] = [5, 1]
    elif change == "rng":
        header["rng"]["bit_generator"] = "MT19937"
    elif change == "asked":
        header["asked"] = ["not hex"]
    elif change == "shape":
        header["arrays"][0][2] = [header["arrays"][0][2][0] - 1, header["arrays"][0][2][1]]
    elif change == "dtype":
        header["arrays"][0][1] = "u1"
    elif change == "nan":
        start = _array_offset(header, "particles")
        payload = payload[:start] + np.array([np.nan]).tobytes() + payload[start + 8 :]
    elif change == "beta_index":
        start = _array_offset(header, "beta_index")
        payload = payload[:start] + np.array([7], dtype="<i8").tobytes() + payload[start + 8 :]
    elif change == "feature":
        start = _array_offset(header, "feature")
        payload = payload[:start] + np.array([0.123]).tobytes() + payload[start + 8 :]
    elif change == "extra":
        payload += b"\0" * 8
    return _reseal(header, payload)


@pytest.mark.parametrize(
    "change",
    [
        "format",
        "n_answers",
        "dropped",
        "rng",
        "asked",
        "shape",
        "dtype",
        "nan",
        "beta_index",
        "feature",
        "extra",
    ],
)
def test_a_well_sealed_checkpoint_with_inconsistent_content_is_refused(change: str) -> None:
    build, blob = _checkpoint()
    assert build().restore(_reseal(*_reopen(blob))).checkpoint() == blob  # the test's resealing is faithful
    with pytest.raises(CheckpointError):
        build().restore(_tampered(blob, change))


@pytest.mark.parametrize(
    "damage",
    [
        lambda blob: blob[:-1],
        lambda blob: blob[:40],
        lambda blob: b"",
        lambda blob: b"PK\x03\x04" + blob,
        lambda blob: blob[:-5] + bytes([blob[-5] ^ 1]) + blob[-4:],
        lambda blob: checkpoints._MAGIC + hashlib.sha256(b"x").digest() + b"x",
        lambda blob: _reseal_raw(struct.pack("<I", 10**6) + b"{}"),
        lambda blob: _reseal_raw(struct.pack("<I", 2) + b"[]"),
        lambda blob: _reseal_raw(struct.pack("<I", 2) + b"\xff\xfe"),
    ],
)
def test_damaged_bytes_are_refused(damage: Callable[[bytes], bytes]) -> None:
    build, blob = _checkpoint()
    with pytest.raises(CheckpointError):
        build().restore(damage(blob))


def test_an_oversized_checkpoint_is_refused_before_it_is_hashed() -> None:
    build, blob = _checkpoint()
    with pytest.raises(CheckpointError, match="larger than any"):
        build().restore(blob + b"\0" * checkpoints.MAX_CHECKPOINT_BYTES)
