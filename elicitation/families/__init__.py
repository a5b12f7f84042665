"""Metric families: one module per functional form, each owning what programs need to know about it.

`FAMILIES` maps a family's name (the ``"type"`` of `Metric.to_dict`) to its `MetricFamily`; `family_of`
finds a metric's family. Adding a family is one module defining its value type's ``kind`` and a
`MetricFamily` subclass, plus its entry in `FAMILIES` below.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from ..errors import InvalidConfigError
from ..types import Metric
from . import cubic, fair_quadratic, linear, quadratic
from .base import GENERATORS, Draw, MetricFamily, check_generator

__all__ = ["FAMILIES", "GENERATORS", "Draw", "MetricFamily", "check_generator", "family_of", "get_family"]

FAMILIES: Final[Mapping[str, MetricFamily]] = MappingProxyType(
    {family.name: family for family in (linear.FAMILY, quadratic.FAMILY, cubic.FAMILY, fair_quadratic.FAMILY)}
)


def get_family(name: str) -> MetricFamily:
    """The family called ``name``; `InvalidConfigError` lists the known ones."""
    try:
        return FAMILIES[name]
    except KeyError:
        raise InvalidConfigError(
            f"unknown metric family {name!r}; known families: {', '.join(FAMILIES)}"
        ) from None


def family_of(metric: Metric) -> MetricFamily:
    """The family of ``metric`` (by its value type's ``kind``)."""
    family = FAMILIES.get(type(metric).kind)
    if family is None:
        raise InvalidConfigError(f"do not know the metric family of a {type(metric).__name__}")
    return family
