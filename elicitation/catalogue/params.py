"""Parameter declarations: the one place an algorithm's tuning knobs, their defaults and bounds are written.

A `Param` carries a type annotation (``float``, ``int``, ``str``, ``Literal[...]``, ``list[...]``, optionally
``| None``), its default, pydantic-style bounds (``gt``/``ge``/``lt``/``le``, ``min_length``/``max_length``,
``pattern``) and an optional ``check`` that raises `ValueError` with a message. `validate_params` enforces
them eagerly, raising `InvalidConfigError` that names the parameter; the web app derives its request models
from the same declarations, so both layers accept exactly the same values.
"""

from __future__ import annotations

import math
import operator
import re
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Union, get_args, get_origin

from ..errors import InvalidConfigError

__all__ = ["REQUIRED", "Param", "validate_params"]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Default of a parameter the caller must give.
REQUIRED: Final = _Required()


@dataclass(frozen=True)
class Param:
    """One declared parameter of an algorithm.

    ``studies=False`` marks a research knob that simulations and replays accept but study configurations
    do not offer (it keeps its default there).
    """

    name: str
    annotation: Any
    default: Any = REQUIRED
    description: str = ""
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    check: Callable[[Any], Any] | None = None
    studies: bool = True

    @property
    def required(self) -> bool:
        """True when the parameter has no default."""
        return self.default is REQUIRED

    def validate(self, value: Any, label: str) -> Any:
        """``value`` converted to the declared type; `InvalidConfigError` naming ``label`` otherwise."""
        converted = _convert(self.annotation, value, label)
        if converted is None:
            return None
        self._check_bounds(converted, label)
        if self.check is not None:
            try:
                self.check(converted)
            except ValueError as exc:
                raise InvalidConfigError(f"{label}: {exc}") from None
        return converted

    def _check_bounds(self, value: Any, label: str) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            limits = [
                (f"{text} {bound:g}", broken(value, bound))
                for text, bound, broken in (
                    (">", self.gt, operator.le),
                    (">=", self.ge, operator.lt),
                    ("<", self.lt, operator.ge),
                    ("<=", self.le, operator.gt),
                )
                if bound is not None
            ]
            if any(broken for _, broken in limits):
                wanted = " and ".join(text for text, _ in limits)
                raise InvalidConfigError(f"{label} must be {wanted}, got {value!r}")
        if isinstance(value, (list, str)):
            if self.min_length is not None and len(value) < self.min_length:
                raise InvalidConfigError(
                    f"{label} must have at least {self.min_length} entries, got {len(value)}"
                )
            if self.max_length is not None and len(value) > self.max_length:
                raise InvalidConfigError(
                    f"{label} must have at most {self.max_length} entries, got {len(value)}"
                )
        if self.pattern is not None and isinstance(value, str) and re.search(self.pattern, value) is None:
            raise InvalidConfigError(f"{label} must match {self.pattern}, got {value!r}")


def _convert(annotation: Any, value: Any, label: str) -> Any:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        if value is None and len(options) < len(get_args(annotation)):
            return None
        (annotation,) = options
        origin = get_origin(annotation)
    if origin is Literal:
        choices = get_args(annotation)
        if value not in choices or not isinstance(value, str):
            listed = ", ".join(repr(choice) for choice in choices)
            raise InvalidConfigError(f"{label} must be one of {listed}, got {value!r}")
        return value
    if origin is list:
        (item,) = get_args(annotation)
        if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
            raise InvalidConfigError(f"{label} must be a list, got {value!r}")
        return [_convert(item, entry, f"{label}[{index}]") for index, entry in enumerate(value)]
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise InvalidConfigError(f"{label} must be a finite number, got {value!r}")
        return float(value)
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidConfigError(f"{label} must be an integer, got {value!r}")
        return int(value)
    if annotation is str:
        if not isinstance(value, str):
            raise InvalidConfigError(f"{label} must be a string, got {value!r}")
        return value
    raise TypeError(f"unsupported parameter annotation {annotation!r}")


def validate_params(
    declared: Sequence[Param], raw: Mapping[str, Any] | None, *, owner: str, prefix: str = ""
) -> dict[str, Any]:
    """Every declared parameter of ``owner``, validated, with defaults filled in (declaration order).

    ``prefix`` is put before each name in messages (e.g. ``"params."``). Unknown names are rejected.
    """
    given = dict(raw or {})
    names = [param.name for param in declared]
    unknown = sorted(set(given) - set(names))
    if unknown:
        listed = ", ".join(names) or "none"
        raise InvalidConfigError(
            f"{prefix}{unknown[0]} is not a parameter of {owner} (its parameters: {listed})"
        )
    values: dict[str, Any] = {}
    for param in declared:
        label = f"{prefix}{param.name}"
        if param.name not in given:
            if param.required:
                raise InvalidConfigError(f"{label} is required for {owner}")
            values[param.name] = param.default
            continue
        values[param.name] = param.validate(given[param.name], label)
    return values
