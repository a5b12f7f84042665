"""The metric families of active elicitation as linear models, and the query space they ask in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ..display import DisplayGrid
from ..errors import InvalidConfigError
from ..posterior import Block, Family, sym_from_vec, vec_from_sym
from ..types import (
    FairQuadraticMetric,
    FloatArray,
    LinearMetric,
    QuadraticMetric,
    Sphere,
    as_rate_array,
    pair_index,
)
from .effort import DEFAULT_SEARCH, SearchEffort

__all__ = [
    "Config",
    "FamilySpec",
    "Geometry",
    "resolve_space",
]


@dataclass(frozen=True)
class FamilySpec:
    kind: str
    n_classes: int
    tau: FloatArray | None = None
    #: Quadratic only: the metric increases in every rate throughout this ball (`Family.increasing_on`).
    increasing_on: Sphere | None = None

    @property
    def n_groups(self) -> int:
        return 1 if self.tau is None else int(self.tau.shape[0])

    @property
    def rate_shape(self) -> tuple[int, ...]:
        return (self.n_classes,) if self.tau is None else (self.n_groups, self.n_classes)

    def family(self) -> Family:
        k = self.n_classes
        tri = k * (k + 1) // 2
        if self.kind == "linear":
            return Family((Block(0, k, "free", 1.0 / np.sqrt(k)),), "l2")
        if self.kind == "quadratic":
            # Scales chosen so that prior draws have |a| and |B|_F of the same order, like random metrics.
            return Family(
                (Block(0, k, "free", 1.0 / np.sqrt(k)), Block(k, k + tri, "nsd", 1.0 / np.sqrt(tri), size=k)),
                "l2",
                self.increasing_on,
            )
        pairs = pair_index(self.n_groups)
        blocks = [Block(0, k, "nonnegative", 1.0 / np.sqrt(k))]
        for index in range(len(pairs)):
            start = k + index * tri
            blocks.append(
                Block(start, start + tri, "psd", 1.2 / (len(pairs) * np.sqrt(tri)), size=k, norm_weight=0.5)
            )
        return Family(tuple(blocks), "sum")

    def tradeoff(self, theta: FloatArray) -> FloatArray:
        """``lam`` of each normalised fair parameter vector ``(n, d)``: ``1 - |(1 - lam) a|`` (Def. 3)."""
        result: FloatArray = 1.0 - np.linalg.norm(theta[:, : self.n_classes], axis=1)
        return result

    def features(self, first: FloatArray, second: FloatArray) -> FloatArray:
        """``f`` with ``<w, f> > 0`` iff ``first`` is preferred; inputs ``(n, *rate_shape)``."""
        if self.kind == "linear":
            result: FloatArray = first - second
            return result
        if self.kind == "quadratic":
            outer1 = vec_from_sym(first[:, :, None] * first[:, None, :])
            outer2 = vec_from_sym(second[:, :, None] * second[:, None, :])
            quadratic: FloatArray = np.concatenate([first - second, 0.5 * (outer1 - outer2)], axis=1)
            return quadratic
        return self._fair_psi(second) - self._fair_psi(first)

    def _fair_psi(self, rates: FloatArray) -> FloatArray:
        """Fair cost ``= <w, psi(R)> + const``, ``R`` of shape ``(n, m, k)``."""
        assert self.tau is not None
        parts = [-np.sum(self.tau[None, :, :] * rates, axis=1)]
        for u, v in pair_index(self.n_groups):
            delta = rates[:, u, :] - rates[:, v, :]
            parts.append(0.5 * vec_from_sym(delta[:, :, None] * delta[:, None, :]))
        result: FloatArray = np.concatenate(parts, axis=1)
        return result

    def metric(self, w: FloatArray) -> LinearMetric | QuadraticMetric | FairQuadraticMetric:
        """The metric of a parameter vector (any positive scale)."""
        k = self.n_classes
        if self.kind == "linear":
            return LinearMetric(w[:k])
        if self.kind == "quadratic":
            B = sym_from_vec(w[k:], k)
            eigenvalues, vec = np.linalg.eigh(B)
            # A mean of NSD particles is NSD; the projection only removes rounding.
            B = (vec * np.minimum(eigenvalues, 0.0)) @ vec.T
            return QuadraticMetric(w[:k], (B + B.T) / 2.0)
        assert self.tau is not None
        tri = k * (k + 1) // 2
        alpha = np.clip(w[:k], 0.0, None)
        alpha_norm = float(np.linalg.norm(alpha))
        mats: dict[tuple[int, int], FloatArray] = {}
        total = 0.0
        for index, key in enumerate(pair_index(self.n_groups)):
            B = sym_from_vec(w[k + index * tri : k + (index + 1) * tri], k)
            lam_b, vec_b = np.linalg.eigh(B)
            B = (vec_b * np.maximum(lam_b, 0.0)) @ vec_b.T
            mats[key] = (B + B.T) / 2.0
            total += 0.5 * float(np.linalg.norm(B))
        lam = total / (alpha_norm + total)
        a = alpha if alpha_norm > 0.0 else np.ones(k)
        if total == 0.0:
            # No violation cost left at all (lam = 0): any PSD matrices represent it.
            mats = {key: np.eye(k) for key in mats}
        return FairQuadraticMetric(a, mats, lam, self.tau)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"kind": self.kind, "n_classes": self.n_classes}
        if self.tau is not None:
            result["tau"] = self.tau.tolist()
        if self.increasing_on is not None:
            ball = self.increasing_on
            result["increasing_on"] = {"center": ball.center.tolist(), "radius": ball.radius}
        return result

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FamilySpec:
        """The spec of `to_dict` (a result's ``details["family"]``)."""
        tau = data.get("tau")
        ball = data.get("increasing_on")
        return cls(
            str(data["kind"]),
            int(data["n_classes"]),
            None if tau is None else np.asarray(tau, dtype=np.float64),
            None if ball is None else Sphere(np.asarray(ball["center"], dtype=np.float64), ball["radius"]),
        )


#: Points of a random candidate set placed on the sphere's surface rather than inside it.
_SURFACE_SHARE = 0.5


# --------------------------------------------------------------------------------------------------------
# Query space handling
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Geometry:
    sphere: Sphere
    priors: FloatArray  # (n_groups, n_classes)
    shape: tuple[int, ...]
    #: The query space's own ``confusion`` (None for a plain sphere), used to confirm the pair shown.
    confusion: Callable[[FloatArray], FloatArray] | None = None
    #: When set, every candidate is snapped to what whole people out of 100 can show, and perceptibility
    #: is measured in displayed people: the posterior then updates on exactly the pair a person saw.
    grid: DisplayGrid | None = None
    #: One sphere per group (fair rates only): group ``g``'s rates are asked in the ``g``-th; None: every
    #: group in ``sphere``.
    group_spheres: tuple[Sphere, ...] | None = None

    @property
    def region(self) -> Sphere | tuple[Sphere, ...]:
        """Where each group row is asked: the common sphere, or one sphere per group."""
        return self.sphere if self.group_spheres is None else self.group_spheres

    def _centers_radii(self, rows: int) -> tuple[FloatArray, FloatArray | float]:
        """Centre ``(rows, k)`` or ``(k,)`` and radius ``(rows, 1)`` or scalar of each group row."""
        if self.group_spheres is None:
            return self.sphere.center, self.sphere.radius
        centers = np.stack([own.center for own in self.group_spheres])
        radii = np.array([[own.radius] for own in self.group_spheres])
        assert centers.shape[0] == rows
        return centers, radii

    def _directions(self, rng: np.random.Generator, count: int) -> FloatArray:
        """``count`` random unit directions per group row, ``(count, rows, k)``."""
        k = self.sphere.n_classes
        direction = rng.standard_normal((count, int(np.prod(self.shape)) // k, k))
        result: FloatArray = direction / np.linalg.norm(direction, axis=2, keepdims=True)
        return result

    def sample(self, rng: np.random.Generator, count: int) -> FloatArray:
        """``count`` rate arrays inside the sphere (each group row inside its own), ``(count, *shape)``."""
        direction = self._directions(rng, count)
        rows = direction.shape[1]
        shape = (count, rows, 1)
        radius = np.where(
            rng.random(shape) < _SURFACE_SHARE, 1.0, rng.random(shape) ** (1.0 / self.sphere.n_classes)
        )
        center, sphere_radius = self._centers_radii(rows)
        points = center + sphere_radius * radius * direction
        return self._clean(points.reshape((count, *self.shape)))

    def uniform(self, rng: np.random.Generator, count: int) -> FloatArray:
        """``count`` exact rate arrays uniform in the sphere (each group row independently in its own), as
        the agreement of two metrics is measured (`elicitation.evaluation.agreement`)."""
        direction = self._directions(rng, count)
        radius = rng.random((*direction.shape[:2], 1)) ** (1.0 / self.sphere.n_classes)
        center, sphere_radius = self._centers_radii(direction.shape[1])
        points: FloatArray = center + sphere_radius * radius * direction
        return points.reshape((count, *self.shape))

    def perturb(self, rng: np.random.Generator, points: FloatArray, scale: float) -> FloatArray:
        """Gaussian perturbations of ``points`` (``(n, *shape)``) pulled back into the sphere."""
        if self.group_spheres is None:
            moved = points + scale * self.sphere.radius * rng.standard_normal(points.shape)
        else:
            k = self.sphere.n_classes
            _center, radii = self._centers_radii(len(self.group_spheres))
            noise = rng.standard_normal(points.shape).reshape((points.shape[0], -1, k))
            moved = points + (scale * radii * noise).reshape(points.shape)
        return self._clean(moved)

    def _clean(self, points: FloatArray) -> FloatArray:
        k = self.sphere.n_classes
        if self.group_spheres is None:
            flat = points.reshape((-1, k)) - self.sphere.center
            length = np.linalg.norm(flat, axis=1, keepdims=True)
            # Points just inside the boundary, so rounding never leaves the sphere or the unit cube.
            limit = self.sphere.radius * (1.0 - 1e-9)
            flat = np.where(length > limit, flat * (limit / np.maximum(length, 1e-300)), flat)
            result: FloatArray = np.clip(flat + self.sphere.center, 0.0, 1.0).reshape(points.shape)
        else:
            center, radii = self._centers_radii(len(self.group_spheres))
            grouped = points.reshape((points.shape[0], -1, k)) - center
            length = np.linalg.norm(grouped, axis=2, keepdims=True)
            bound = radii * (1.0 - 1e-9)
            grouped = np.where(length > bound, grouped * (bound / np.maximum(length, 1e-300)), grouped)
            result = np.clip(grouped + center, 0.0, 1.0).reshape(points.shape)
        if self.grid is not None:
            result = self.grid.snap(result, self.region)
        return result

    def cell_gap(self, first: FloatArray, second: FloatArray) -> FloatArray:
        """Largest diagonal confusion-cell difference (people out of 100, as displayed) per pair, ``(n,)``."""
        if self.grid is not None:
            gap: FloatArray = self.grid.gap(first, second).astype(np.float64)
            return gap
        # Every axis named: with no pairs left (an empty candidate set) ``-1`` could not be inferred.
        diff = np.abs(first - second).reshape((first.shape[0], *self.priors.shape))
        result: FloatArray = np.max(100.0 * self.priors[None, :, :] * diff, axis=(1, 2))
        return result


def resolve_space(
    space: object,
    priors: npt.ArrayLike | None,
    n_groups: int,
    display: DisplayGrid | None = None,
    group_spheres: Sequence[Sphere] | None = None,
) -> Geometry:
    if isinstance(space, Sphere):
        sphere = space
        space_priors: npt.ArrayLike | None = priors
    else:
        sphere_attr = getattr(space, "sphere", None)
        if not isinstance(sphere_attr, Sphere) or not callable(getattr(space, "confusion", None)):
            raise InvalidConfigError(
                "space must be a Sphere or a query space (with .sphere, .priors and .confusion), "
                f"got {type(space).__name__}"
            )
        if priors is not None:
            raise InvalidConfigError("priors must not be given with a query space (it has its own)")
        sphere = sphere_attr
        space_priors = getattr(space, "priors", None)
        space_groups = int(getattr(space, "n_groups", 1))
        if space_groups != n_groups:
            raise InvalidConfigError(
                f"the query space has {space_groups} group(s) but this elicitor needs {n_groups}"
            )
    k = sphere.n_classes
    if space_priors is None:
        array = np.full((n_groups, k), 1.0 / k)
    else:
        array = np.array(as_rate_array(space_priors, "priors"))
        if array.ndim == 1:
            array = np.tile(array, (n_groups, 1))
        if array.shape != (n_groups, k):
            raise InvalidConfigError(f"priors must have shape ({k},) or ({n_groups}, {k}), got {array.shape}")
        if np.any(array <= 0.0) or not np.allclose(array.sum(axis=1), 1.0, atol=1e-6):
            raise InvalidConfigError("priors must be positive and sum to one (per group)")
    shape = (k,) if n_groups == 1 else (n_groups, k)
    confusion = None if isinstance(space, Sphere) else space.confusion  # type: ignore[attr-defined]
    if display is None and not isinstance(space, Sphere):
        # A query space may come with the grid its charts show (`elicitation.display.DisplayedSpace`).
        display = getattr(space, "display", None)
    if display is not None and display.shape != shape:
        raise InvalidConfigError(f"display must be a grid for rates of shape {shape}, got {display.shape}")
    spheres = None if group_spheres is None else _check_group_spheres(group_spheres, sphere, n_groups)
    if display is not None:
        display.check_sphere(sphere if spheres is None else spheres)
    return Geometry(sphere, array, shape, confusion, display, spheres)


def _check_group_spheres(
    group_spheres: Sequence[Sphere], sphere: Sphere, n_groups: int
) -> tuple[Sphere, ...]:
    spheres = tuple(group_spheres)
    if n_groups < 2:
        raise InvalidConfigError("group_spheres applies to fair metrics (rates per group) only")
    if len(spheres) != n_groups or not all(isinstance(own, Sphere) for own in spheres):
        raise InvalidConfigError(f"group_spheres must hold one Sphere per group ({n_groups})")
    if any(own.n_classes != sphere.n_classes for own in spheres):
        raise InvalidConfigError(f"every group sphere must have {sphere.n_classes} classes")
    return spheres


@dataclass(frozen=True)
class Config:
    spec: FamilySpec
    geometry: Geometry
    seed: int
    betas: tuple[float, ...] | None
    max_queries: int
    min_queries: int
    tolerance: float
    min_cell_gap: float
    n_particles: int
    credible_level: float
    criterion: str
    name: str
    #: How the result is read off the posterior: its mean, or the consensus of `ESTIMATES`.
    estimate: str = "mean"
    #: Fair family: every ``tradeoff_every``-th question is chosen for what it says about ``lam`` (0: never).
    tradeoff_every: int = 0
    #: With a display grid: each question plainly new against the one before (`selection.fresh`).
    fresh_screens: bool = False
    #: Fair family: per group, rates of sensible classifiers on the data whose mixtures the trade-off
    #: questions may also show (None: trade-off questions stay in the query region).
    tradeoff_rates: tuple[FloatArray, ...] | None = None
    #: How much work each question's search and the posterior's rejuvenation take (`effort.SearchEffort`).
    search: SearchEffort = DEFAULT_SEARCH
    #: The burnt-in prior cloud comes from a stream seeded by the configuration, shared by every session
    #: (`elicitation.posterior.shared_prior`), rather than from the session's seed.
    shared_prior: bool = False
    #: Share of answers the answer model takes to be a coin flip (`elicitation.posterior.check_lapse`).
    lapse: float = 0.0
