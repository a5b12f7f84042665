"""The algorithm catalogue: each elicitation algorithm registered once with everything callers need.

An `Algorithm` holds its name, the version stored with every session (bump it when the queries asked
change, so old logs are recognised), its parameter declarations (`Param`, the one source of defaults), a
builder ``(setting, validated params, seed) -> Elicitor`` and the metric family it elicits. Simulations,
replays, the web app, the planner and the exports all build through `Algorithm.build`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from ..errors import InvalidConfigError, ReplayMismatchError
from ..families import Draw, MetricFamily
from ..types import Elicitation, Elicitor, FloatArray, Metric, RandomState, Sphere, as_generator
from .params import Param, validate_params

__all__ = ["ALGORITHMS", "Algorithm", "Setting", "get_algorithm", "group_tau", "register"]


def group_tau(priors: npt.ArrayLike, group_shares: list[float] | None) -> FloatArray:
    """``tau[g, i] = P(G = g | Y = i)`` from ``P(Y = i | G = g)`` (``priors``) and the group shares."""
    within = np.atleast_2d(np.asarray(priors, dtype=np.float64))
    m = within.shape[0]
    shares = np.full(m, 1.0 / m) if group_shares is None else np.asarray(group_shares, dtype=np.float64)
    if shares.shape != (m,) or np.any(shares <= 0.0) or not np.all(np.isfinite(shares)):
        raise InvalidConfigError(
            f"group_shares must be {m} positive numbers (one per group), got {group_shares}"
        )
    joint = shares[:, None] * within / shares.sum()
    tau: FloatArray = joint / joint.sum(axis=0, keepdims=True)
    return tau


@dataclass(frozen=True, eq=False)
class Setting:
    """Where an elicitor asks its queries: the sphere, and what it needs to know about groups.

    ``priors`` (``P(Y = i | G = g)``, a study's query space) with the ``group_shares`` parameter give the
    group prevalences ``tau``; a simulation may give ``tau`` outright instead. ``space`` is the whole query
    space (feasible rates, confusion matrices) for elicitors that choose queries from it.
    """

    sphere: Sphere
    n_groups: int = 1
    priors: FloatArray | None = None
    tau: FloatArray | None = None
    space: Any = None

    @classmethod
    def of_space(cls, space: Any) -> Setting:
        """The setting of a query space (`elicitation.rates.QuerySpace`)."""
        return cls(space.sphere, int(space.n_groups), priors=space.priors, space=space)

    def group_weights(self, group_shares: list[float] | None) -> FloatArray:
        """``tau``: given outright, or from the priors and ``group_shares`` (default: equal shares)."""
        if self.tau is not None:
            if group_shares is not None:
                raise InvalidConfigError("group_shares does not apply when tau is given")
            return self.tau
        if self.priors is None:
            raise InvalidConfigError("tau (group prevalences) or the groups' class priors are required")
        return group_tau(self.priors, group_shares)

    def query_space(self, algorithm: str) -> Any:
        """The whole query space; `InvalidConfigError` when only a sphere was given."""
        if self.space is None:
            raise InvalidConfigError(
                f"{algorithm} chooses queries from a study's query space, not a bare sphere"
            )
        return self.space


#: ``builder(setting, params, seed)``: a fresh elicitor from validated parameters.
Builder = Callable[[Setting, Mapping[str, Any], int], Elicitor[Elicitation[Any]]]
#: ``draw(rng, draw, params)``: a hidden metric for a simulation (``params`` may be ``None``).
MetricDraw = Callable[[np.random.Generator, Draw, Mapping[str, Any] | None], Metric]


@dataclass(frozen=True, eq=False)
class Algorithm:
    """One catalogue entry.

    ``description`` names the algorithm (study forms, listings); ``elicits`` says which metric it elicits
    and where the paper describes it (simulation help). ``needs_groups``: queries compare group rates
    ``(n_groups, n_classes)``; ``seeded``: the queries depend on the session seed, so every rebuild must
    pass it; ``needs_space``: the builder needs a study's query space, not just a sphere; ``studies``:
    offered to study coordinators. ``sphere(n_classes, radius)`` gives the query sphere of algorithms whose
    rates are not the ``n_classes`` per-class rates (``None``: any sphere, by default around the uniform
    rate), and ``classes_from_rates`` maps such a sphere's dimension back to ``n_classes``.
    ``displayed``: the web app's sessions ask its questions as the charts show them
    (`elicitation.display.displayed`: the elicitor adopts the display grid, or its searches are wrapped by
    `elicitation.display.shown` and end at the display's resolution), and record a marked version;
    ``display_decimals``: the decimals of the counts those questions show (whole people, or tenths of a
    person for searches too fine for whole people on the regions they are used with).
    ``group_spheres``: it asks each group's rates in that group's own sphere of a query space
    (``space.group_spheres``) rather than all of them in the common ``space.sphere``; `query_region` says
    which. ``draw_metric`` replaces the family's random draw and ``check_metric`` rejects given metrics for
    algorithms that elicit a restricted form; ``reported_errors`` limits the simulation errors to what the
    algorithm elicits.
    """

    name: str
    version: str
    description: str
    elicits: str
    family: MetricFamily
    params: tuple[Param, ...]
    builder: Builder = field(repr=False)
    needs_groups: bool = False
    seeded: bool = False
    needs_space: bool = False
    studies: bool = True
    displayed: bool = False
    display_decimals: int = 0
    group_spheres: bool = False
    sphere: Callable[[int, float], Sphere] | None = None
    classes_from_rates: Callable[[int], int] | None = None
    draw_metric: MetricDraw | None = None
    check_metric: Callable[[Metric], None] | None = None
    reported_errors: tuple[str, ...] | None = None
    #: Builders of earlier versions, by version: sessions recorded before a change of questions replay
    #: with the builder they were recorded with.
    earlier: Mapping[str, Builder] = field(default_factory=dict, repr=False)

    def param(self, name: str) -> Param | None:
        """The declaration of parameter ``name``, or ``None``."""
        return next((param for param in self.params if param.name == name), None)

    def synthetic_sphere(self, n_classes: int, radius: float) -> Sphere:
        """The simulation sphere of radius ``radius`` around the uniform classifier's rates."""
        if self.sphere is not None:
            return self.sphere(n_classes, radius)
        return Sphere.around_uniform(n_classes, radius)

    def defaults(self) -> dict[str, Any]:
        """Every parameter that has a default, at its default."""
        return {param.name: param.default for param in self.params if not param.required}

    def validate(self, raw: Mapping[str, Any] | None, *, prefix: str = "") -> dict[str, Any]:
        """Validated parameters with defaults filled in; `InvalidConfigError` names the parameter."""
        return validate_params(self.params, raw, owner=self.name, prefix=prefix)

    def query_region(self, space: Any) -> Sphere | tuple[Sphere, ...]:
        """Where this algorithm's questions about ``space`` sit: one sphere per group, or the common one.

        Practice, checks and final comparisons of a study come from the same region as its questions.
        """
        if self.group_spheres:
            spheres = getattr(space, "group_spheres", None)
            if spheres is not None:
                return tuple(spheres)
        sphere: Sphere = space.sphere
        return sphere

    def knows(self, version: str) -> bool:
        """True for the current version and every earlier one this code still replays."""
        return version == self.version or version in self.earlier

    def build(
        self,
        setting: Setting,
        params: Mapping[str, Any] | None = None,
        *,
        seed: int = 0,
        prefix: str = "",
        version: str | None = None,
    ) -> Elicitor[Elicitation[Any]]:
        """A fresh elicitor; raises `InvalidConfigError` for parameters the declarations or the core reject.

        ``seed`` (a session's or a simulation's) only matters for `seeded` algorithms. ``version`` (a
        recorded session's; default the current one) picks the builder that asks that version's questions;
        one this code no longer has raises `ReplayMismatchError`.
        """
        builder = self.builder
        if version is not None and version != self.version:
            if version not in self.earlier:
                known = ", ".join([self.version, *self.earlier])
                raise ReplayMismatchError(
                    f"{self.name} version {version!r} is not one this code replays (it has {known})"
                )
            builder = self.earlier[version]
        return builder(setting, self.validate(params, prefix=prefix), int(seed))

    def random_metric(self, rng: RandomState, draw: Draw, params: Mapping[str, Any] | None = None) -> Metric:
        """A hidden metric this algorithm can elicit, for simulations (``params``: a study's, if known).

        ``rng`` is a `numpy.random.Generator` or an integer seed for one.
        """
        generator = as_generator(rng)
        if self.draw_metric is not None:
            return self.draw_metric(generator, draw, params)
        return self.family.random(generator, draw)

    def errors(self, true: Metric, estimate: Metric) -> dict[str, float]:
        """The family's coefficient errors, limited to `reported_errors`."""
        values = self.family.errors(true, estimate)
        if self.reported_errors is None:
            return values
        return {name: values[name] for name in self.reported_errors}


_CATALOGUE: dict[str, Algorithm] = {}
#: Every registered algorithm by name, in registration order (read-only view).
ALGORITHMS: Final[Mapping[str, Algorithm]] = MappingProxyType(_CATALOGUE)


def register(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm`` to the catalogue (names are unique); returns it."""
    if algorithm.name in _CATALOGUE:
        raise ValueError(f"algorithm {algorithm.name!r} is already registered")
    _CATALOGUE[algorithm.name] = algorithm
    return algorithm


def get_algorithm(name: object) -> Algorithm:
    """The algorithm called ``name``; `InvalidConfigError` lists the known ones."""
    if isinstance(name, str) and name in _CATALOGUE:
        return _CATALOGUE[name]
    known = ", ".join(sorted(_CATALOGUE)) or "none"
    raise InvalidConfigError(f"unknown algorithm {name!r}; known algorithms: {known}")
