"""Checkpoints of the active elicitor: its whole state while it waits for an answer, as bytes.

Replaying ``n`` answers through a fresh active elicitor repeats ``n`` particle updates and ``n`` candidate
searches; a checkpoint saves the state after them (particles, weights, noise indices, the answers' half-
spaces, the rng's position, the spread and gain histories, the displayed pairs asked and the pending query)
so that another process continues from it and asks exactly the queries, and returns exactly the result, that
the uninterrupted elicitor would have.

The bytes are data only: a fixed header, a SHA-256 of the rest, then a JSON header and raw little-endian
arrays (not compressed: the particles do not compress, and zlib cost 20 times the rest of the encoding).
`restore` trusts nothing in them: the size, digest, format, the configuration's fingerprint (family,
space, seed, noise model, budget, particles... must equal the elicitor's own), every array's name, type
and shape, finiteness, index ranges, the pending query's feature vector and the rng's kind are checked,
and any failure is a `CheckpointError`, after which the caller replays the answer log (which stays the
source of truth).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import CheckpointError
from ..posterior import ParticlePosterior, PosteriorState
from ..types import Query
from .families import Config
from .state import Asked, State

__all__ = ["CHECKPOINT_FORMAT", "MAX_CHECKPOINT_BYTES", "config_fingerprint", "decode", "encode"]

#: Version of the byte layout and of what it holds; a checkpoint of another version is refused.
CHECKPOINT_FORMAT = 1
#: Largest checkpoint accepted (2,000 particles of a dozen unknowns take well under 1 MB).
MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024
_MAGIC = b"elicitation/active-checkpoint\n"
_DIGEST_SIZE = 32
_HEADER_LENGTH = struct.Struct("<I")
#: The pending query's stored feature vector must equal the one recomputed from its rates to this.
_FEATURE_ATOL = 1e-12
_DTYPES = {"f8": np.dtype("<f8"), "i8": np.dtype("<i8")}


def config_fingerprint(config: Config) -> str:
    """SHA-256 (hex) of everything in ``config`` that decides the queries, for matching a checkpoint.

    The query space's ``confusion`` function cannot be hashed; the caller binds checkpoints to the study
    configuration it built the space from.
    """
    geometry = config.geometry
    described: dict[str, Any] = {
        "family": config.spec.to_dict(),
        "center": _bits(geometry.sphere.center),
        "radius": float(geometry.sphere.radius).hex(),
        "priors": _bits(geometry.priors),
        "shape": list(geometry.shape),
        "confusion": geometry.confusion is not None,
        "grid": None if geometry.grid is None else np.asarray(geometry.grid.totals).tolist(),
        "seed": config.seed,
        "betas": None if config.betas is None else [float(beta).hex() for beta in config.betas],
        "max_queries": config.max_queries,
        "min_queries": config.min_queries,
        "tolerance": float(config.tolerance).hex(),
        "min_cell_gap": float(config.min_cell_gap).hex(),
        "n_particles": config.n_particles,
        "credible_level": float(config.credible_level).hex(),
        "criterion": config.criterion,
        "name": config.name,
    }
    if config.spec.tau is not None:
        described["tau"] = _bits(config.spec.tau)
    if config.tradeoff_every:
        described["tradeoff_every"] = config.tradeoff_every
    if config.fresh_screens:
        # Only when set, so that checkpoints taken without it keep their fingerprint.
        described["fresh_screens"] = True
    if config.tradeoff_rates is not None:
        described["tradeoff_rates"] = [_bits(pool) for pool in config.tradeoff_rates]
    if config.shared_prior:
        # Only when set, so that checkpoints of sessions that burn in their own prior keep their fingerprint.
        described["shared_prior"] = True
    if config.lapse:
        # Only when non-zero, so that checkpoints of the plain logistic model keep their fingerprint.
        described["lapse"] = float(config.lapse).hex()
    if config.search.changed():
        # Only what differs from the default search, so that earlier checkpoints keep their fingerprint.
        described["search"] = config.search.changed()
    text = json.dumps(described, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _bits(array: Any) -> str:
    """The exact float64 bits of ``array`` (hex), so that fingerprints never depend on decimal printing."""
    return np.ascontiguousarray(array, dtype="<f8").tobytes().hex()


def encode(state: State) -> bytes:
    """The checkpoint of ``state``, which must be waiting for an answer (``pending`` set)."""
    posterior, rng, pending = state.posterior, state.rng, state.pending
    if posterior is None or rng is None or pending is None:
        raise CheckpointError("only an elicitor waiting for an answer can be checkpointed")
    saved = posterior.state()
    arrays: list[tuple[str, np.ndarray[Any, Any]]] = [
        ("particles", saved.particles),
        ("log_weights", saved.log_weights),
        ("beta_index", saved.beta_index),
        ("signed", saved.signed),
        ("spreads", np.asarray(state.spreads, dtype=np.float64)),
        ("gains", np.asarray(state.gains, dtype=np.float64)),
        ("first", pending.query.first),
        ("second", pending.query.second),
        ("feature", pending.feature),
    ]
    layout = []
    chunks = []
    for name, array in arrays:
        code = "i8" if array.dtype.kind in "iu" else "f8"
        layout.append([name, code, list(array.shape)])
        chunks.append(np.ascontiguousarray(array, dtype=_DTYPES[code]).tobytes())
    header = {
        "format": CHECKPOINT_FORMAT,
        "config": config_fingerprint(state.config),
        "n_answers": saved.n_answers,
        "dropped": list(saved.dropped),
        "rng": _jsonable_rng_state(rng.bit_generator.state),
        "asked": sorted(key.hex() for key in state.asked),
        "arrays": layout,
    }
    encoded = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = _HEADER_LENGTH.pack(len(encoded)) + encoded + b"".join(chunks)
    return _MAGIC + hashlib.sha256(body).digest() + body


def _jsonable_rng_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """A bit generator's ``state`` dict with numpy scalars made plain (PCG64 holds 128-bit Python ints)."""
    plain: dict[str, Any] = json.loads(json.dumps(state, default=int))
    return plain


def decode(config: Config, blob: bytes) -> State:
    """The state saved in ``blob``, checked against ``config``; `CheckpointError` when anything is off."""
    header, payload = _open(blob)
    if header.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(
            f"checkpoint format {header.get('format')!r}, this code reads {CHECKPOINT_FORMAT}"
        )
    if header.get("config") != config_fingerprint(config):
        raise CheckpointError("the checkpoint belongs to another configuration")
    arrays = _arrays(header.get("arrays"), payload)
    family = config.spec.family()
    dim = family.dim
    n_answers = header.get("n_answers")
    if (
        not isinstance(n_answers, int)
        or isinstance(n_answers, bool)
        or not 0 <= n_answers < config.max_queries
    ):
        raise CheckpointError(f"a checkpoint cannot stand at {n_answers!r} answers")
    dropped = _dropped(header.get("dropped"), n_answers, config.betas is None)
    n_betas = 1 if config.betas is None else len(config.betas)
    shapes = {
        "particles": (config.n_particles, dim),
        "log_weights": (config.n_particles,),
        "beta_index": (config.n_particles,),
        "signed": (n_answers - len(dropped), dim),
        "spreads": (n_answers + 1,),
        "gains": (n_answers + 1,),
        "first": config.geometry.shape,
        "second": config.geometry.shape,
        "feature": (dim,),
    }
    for name, shape in shapes.items():
        if arrays[name].shape != shape:
            raise CheckpointError(f"checkpoint array {name} has shape {arrays[name].shape}, expected {shape}")
    for name in ("particles", "signed", "spreads", "gains", "first", "second", "feature"):
        if not np.all(np.isfinite(arrays[name])):
            raise CheckpointError(f"checkpoint array {name} holds non-finite values")
    log_weights = arrays["log_weights"]
    if np.any(np.isnan(log_weights)) or np.any(log_weights == np.inf) or not np.any(np.isfinite(log_weights)):
        raise CheckpointError("checkpoint weights are not valid log-weights")
    beta_index = arrays["beta_index"]
    if np.any(beta_index < 0) or np.any(beta_index >= n_betas):
        raise CheckpointError("checkpoint noise indices lie outside the noise grid")
    rng = np.random.default_rng(config.seed)
    try:
        saved_rng = header["rng"]
        if (
            not isinstance(saved_rng, dict)
            or saved_rng.get("bit_generator") != type(rng.bit_generator).__name__
        ):
            raise CheckpointError("the checkpoint's random generator is of another kind")
        rng.bit_generator.state = saved_rng
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise CheckpointError(f"the checkpoint's random generator state is invalid: {exc}") from None
    first, second, feature = arrays["first"], arrays["second"], arrays["feature"]
    recomputed = config.spec.features(first[None], second[None])[0]
    if not np.allclose(recomputed, feature, rtol=0.0, atol=_FEATURE_ATOL):
        raise CheckpointError("the checkpoint's pending query and its feature vector disagree")
    asked = _asked(header.get("asked"))
    posterior = ParticlePosterior.restored(
        family,
        config.betas,
        rng,
        PosteriorState(
            particles=arrays["particles"],
            log_weights=log_weights,
            beta_index=beta_index,
            signed=arrays["signed"],
            dropped=dropped,
            n_answers=n_answers,
        ),
        moves=config.search.moves,
        lapse=config.lapse,
    )
    query = Query(first.copy(), second.copy(), search=config.name, kind="active", step=n_answers)
    return State(
        config=config,
        posterior=posterior,
        rng=rng,
        spreads=[float(value) for value in arrays["spreads"]],
        gains=[float(value) for value in arrays["gains"]],
        asked=asked,
        pending=Asked(query, feature.copy()),
    )


def _open(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """Check the size, magic and digest, and split the body into the JSON header and the array bytes."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise CheckpointError(f"a checkpoint is bytes, got {type(blob).__name__}")
    data = bytes(blob)
    if len(data) > MAX_CHECKPOINT_BYTES:
        raise CheckpointError("the checkpoint is larger than any elicitor state")
    if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + _DIGEST_SIZE + _HEADER_LENGTH.size:
        raise CheckpointError("not an active-elicitor checkpoint")
    digest = data[len(_MAGIC) : len(_MAGIC) + _DIGEST_SIZE]
    body = data[len(_MAGIC) + _DIGEST_SIZE :]
    if not hmac.compare_digest(hashlib.sha256(body).digest(), digest):
        raise CheckpointError("the checkpoint is damaged (its digest does not match)")
    (length,) = _HEADER_LENGTH.unpack_from(body)
    end = _HEADER_LENGTH.size + length
    if end > len(body):
        raise CheckpointError("the checkpoint header runs past its end")
    try:
        header = json.loads(body[_HEADER_LENGTH.size : end].decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"the checkpoint header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise CheckpointError("the checkpoint header is not an object")
    return header, body[end:]


def _arrays(layout: object, payload: bytes) -> dict[str, npt.NDArray[Any]]:
    """The named arrays of ``layout`` (``[name, dtype code, shape]`` each) read from ``payload``."""
    if not isinstance(layout, list):
        raise CheckpointError("the checkpoint lists no arrays")
    arrays: dict[str, Any] = {}
    offset = 0
    for entry in layout:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)):
            raise CheckpointError("a checkpoint array entry is malformed")
        name, code, shape = entry
        if code not in _DTYPES or name in arrays:
            raise CheckpointError(f"checkpoint array {name!r} is repeated or of an unknown type")
        if not (
            isinstance(shape, list)
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
        ):
            raise CheckpointError(f"checkpoint array {name!r} has an invalid shape")
        size = int(np.prod(shape, dtype=np.int64)) * _DTYPES[code].itemsize
        if offset + size > len(payload):
            raise CheckpointError(f"checkpoint array {name!r} runs past the end of the checkpoint")
        arrays[name] = np.frombuffer(
            payload, dtype=_DTYPES[code], count=size // _DTYPES[code].itemsize, offset=offset
        ).reshape(shape)
        offset += size
    if offset != len(payload):
        raise CheckpointError("the checkpoint holds bytes no array accounts for")
    expected = {
        "particles",
        "log_weights",
        "beta_index",
        "signed",
        "spreads",
        "gains",
        "first",
        "second",
        "feature",
    }
    if set(arrays) != expected:
        raise CheckpointError(f"the checkpoint holds arrays {sorted(arrays)}, expected {sorted(expected)}")
    for name in expected - {"beta_index"}:
        if arrays[name].dtype != _DTYPES["f8"]:
            raise CheckpointError(f"checkpoint array {name} must hold floats")
    if arrays["beta_index"].dtype != _DTYPES["i8"]:
        raise CheckpointError("checkpoint array beta_index must hold integers")
    return arrays


def _dropped(value: object, n_answers: int, hard: bool) -> tuple[int, ...]:
    """The indices of ignored answers: increasing, below ``n_answers``, and only for the noise-free model."""
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise CheckpointError("the checkpoint's dropped answers are not a list of integers")
    if value and not hard:
        raise CheckpointError("a noisy answer model never drops answers")
    if any(i < 0 or i >= n_answers for i in value) or any(b <= a for a, b in itertools.pairwise(value)):
        raise CheckpointError("the checkpoint's dropped answers are out of order or range")
    return tuple(value)


def _asked(value: object) -> set[bytes]:
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        raise CheckpointError("the checkpoint's asked pairs are not a list of strings")
    try:
        return {bytes.fromhex(key) for key in value}
    except ValueError as exc:
        raise CheckpointError(f"the checkpoint's asked pairs are not hexadecimal: {exc}") from None
