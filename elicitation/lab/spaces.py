"""Rebuild any query space, synthetic or built from data, from its JSON description."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidConfigError
from ..rates import QuerySpace, SyntheticSpace
from .feasible import DatasetSpace

__all__ = ["space_from_dict"]


def space_from_dict(data: Mapping[str, Any]) -> QuerySpace:
    """Rebuild any query space from its ``to_dict()`` description, dispatching on ``data["kind"]``.

    ``"synthetic"`` gives a `SyntheticSpace` of the core, ``"dataset"`` a `DatasetSpace` built from data.

    Raises
    ------
    InvalidConfigError
        For an unknown kind or invalid fields.
    """
    if not isinstance(data, Mapping):
        raise InvalidConfigError(f"a space description must be a mapping, got {type(data).__name__}")
    kind = data.get("kind")
    if kind == SyntheticSpace.kind:
        return SyntheticSpace.from_dict(data)
    if kind == "dataset":
        return DatasetSpace.from_dict(data)
    raise InvalidConfigError(f"unknown query space kind {kind!r}; expected 'synthetic' or 'dataset'")
