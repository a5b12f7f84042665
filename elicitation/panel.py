"""A panel's metric: what several experts' elicited metrics agree on, how much they differ, and their camps.

Theory of operation
-------------------
* **Consensus.** Every metric family's value is linear in a vector of its coefficients, taken in the
  paper's normalisation (`MetricFamily.panel_vector`: ``a`` for linear metrics, ``(a, B)`` for quadratic
  ones, ``((1 - lam) a, lam B^{uv})`` for the fair cost). The consensus is the metric of the members' mean
  vector, re-expressed in the family's normalisation (`MetricFamily.from_panel_vector`): it scores every
  classifier by the members' *average score*, each member counting once whatever the scale of their
  answers. For linear metrics this is the normalised mean of unit vectors, the direction with the largest
  summed cosine similarity to the members', and the agreement of two linear metrics on isotropic pairs
  falls with the angle between them, so it is also a smooth stand-in for the metric agreeing best with
  the members on average. Means of concave (NSD) curvatures stay concave, means of PSD fairness penalties
  stay PSD, so the consensus is always a valid metric of the same family.
* **Bootstrap.** Participants are resampled with replacement ``n_bootstrap`` times; each resample's
  consensus gives one value of every coefficient, and the interval is the percentile interval at
  ``level``. The mean pairwise agreement of the panel is bootstrapped the same way (pairs of the same
  participant drawn twice are left out).
* **Agreement matrix.** ``n_pairs`` query pairs are drawn uniformly from the query ball (for fair metrics,
  one rate vector per group on each side), every member answers all of them, and entry ``(i, j)`` is the
  fraction that members ``i`` and ``j`` answer alike (the measure of `elicitation.evaluation.agreement`,
  on pairs shared by the whole panel).
* **Camps.** Average-linkage hierarchical clustering on the disagreement ``1 - agreement``. A cluster of
  at least ``MIN_CAMP_SHARE`` of the panel (two members at least) is a camp; members of smaller clusters
  are outliers (one expert whose elicitation went astray is not a camp). Of the cuts with 2 to
  ``MAX_CAMPS`` camps, the one with the best mean silhouette of all members (Rousseeuw 1987) is kept
  when that reaches ``SPLIT_SILHOUETTE`` ("reasonable structure" in Kaufman and Rousseeuw's reading),
  otherwise the panel is one camp. Each camp's centre is the consensus of its members; an outlier is
  counted with the camp it agrees with most but left out of its centre.
* **Map.** Classical multidimensional scaling of the disagreement places each member, the consensus and
  the camps' centres in the plane so that distances approximate how often two of them answer differently.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from scipy.cluster.hierarchy import fcluster, linkage  # type: ignore[import-untyped]
from scipy.spatial.distance import squareform  # type: ignore[import-untyped]

from .errors import InvalidConfigError, NumericalError
from .evaluation import DEFAULT_AGREEMENT_PAIRS, sample_query_pairs
from .families import MetricFamily, family_of
from .types import FloatArray, Metric, RandomState, Sphere, as_generator

BoolArray = npt.NDArray[np.bool_]

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "DEFAULT_LEVEL",
    "MAX_CAMPS",
    "MAX_CUT",
    "MIN_CAMP_SHARE",
    "SPLIT_SILHOUETTE",
    "Camp",
    "Interval",
    "Panel",
    "Split",
    "agreement_matrix",
    "camps",
    "consensus",
    "panel",
]

#: Bootstrap resamples of the participants unless told otherwise.
DEFAULT_BOOTSTRAP: Final = 1000
#: Coverage of the bootstrap intervals unless told otherwise.
DEFAULT_LEVEL: Final = 0.95
#: Mean silhouette from which the panel is said to split into camps (0.5: "reasonable structure").
SPLIT_SILHOUETTE: Final = 0.5
#: Most camps a panel is split into.
MAX_CAMPS: Final = 4
#: Smallest camp as a share of the panel (and never fewer than two members); smaller clusters are outliers.
MIN_CAMP_SHARE: Final = 0.1
#: Most clusters the tree is cut into while looking for camps (camps plus outliers).
MAX_CUT: Final = 12


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap percentile interval."""

    value: float
    low: float
    high: float

    def to_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True, eq=False)
class Camp:
    """Members who answer alike: their indices (panel order, outliers left out), their consensus and
    their agreement.

    ``within`` is the mean agreement between two members of the camp (``None`` for a camp of one);
    ``with_consensus`` the agreement of the camp's centre with the whole panel's consensus; ``position``
    the centre's place on the panel's map.
    """

    members: tuple[int, ...]
    centre: Metric
    within: float | None
    with_consensus: float
    position: tuple[float, float]


@dataclass(frozen=True, eq=False)
class Panel:
    """Everything `panel` found out about a panel of elicited metrics (members in the order given).

    Attributes
    ----------
    consensus : Metric
        The metric of the members' average score (see the module notes).
    coefficients : dict of str to Interval
        The consensus's coefficients by export column name (the family's ``export_cells``), each with its
        bootstrap interval.
    agreement : ndarray, shape (n_members, n_members)
        Fraction of the shared query pairs that two members answer alike (ones on the diagonal).
    mean_agreement : Interval
        Mean agreement over pairs of distinct members, with its bootstrap interval.
    with_consensus : ndarray, shape (n_members,)
        Agreement of each member with the consensus.
    with_centres : ndarray, shape (n_members, n_camps)
        Agreement of each member with each camp's centre.
    camps : tuple of Camp
        One camp unless the panel splits; largest first.
    camp_of : tuple of int
        Each member's camp (index into ``camps``); an outlier's is the camp it agrees with most.
    outliers : tuple of int
        Members who fit no camp (a cluster too small to be one); not part of any camp's centre.
    silhouette : float or None
        Mean silhouette of the best split tried (``None`` with fewer than three members).
    positions : ndarray, shape (n_members, 2)
        A map of the panel: classical MDS of the disagreement among the members, the consensus and the
        camps' centres (so all of them can be drawn together).
    consensus_position : tuple of float
        The consensus on that map.
    n_pairs, n_bootstrap, level : int, int, float
        What was asked for.
    """

    consensus: Metric
    coefficients: Mapping[str, Interval]
    agreement: FloatArray
    mean_agreement: Interval
    with_consensus: FloatArray
    with_centres: FloatArray
    camps: tuple[Camp, ...]
    camp_of: tuple[int, ...]
    outliers: tuple[int, ...]
    silhouette: float | None
    positions: FloatArray
    consensus_position: tuple[float, float]
    n_pairs: int
    n_bootstrap: int
    level: float

    @property
    def split(self) -> bool:
        """Whether the panel falls into more than one camp."""
        return len(self.camps) > 1

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe summary (metrics through `Metric.to_dict`)."""
        return {
            "consensus": self.consensus.to_dict(),
            "coefficients": {name: item.to_dict() for name, item in self.coefficients.items()},
            "agreement": self.agreement.tolist(),
            "mean_agreement": self.mean_agreement.to_dict(),
            "with_consensus": self.with_consensus.tolist(),
            "with_centres": self.with_centres.tolist(),
            "camps": [
                {
                    "members": list(camp.members),
                    "centre": camp.centre.to_dict(),
                    "within": camp.within,
                    "with_consensus": camp.with_consensus,
                    "position": list(camp.position),
                }
                for camp in self.camps
            ],
            "camp_of": list(self.camp_of),
            "outliers": list(self.outliers),
            "silhouette": self.silhouette,
            "positions": self.positions.tolist(),
            "consensus_position": list(self.consensus_position),
            "n_pairs": self.n_pairs,
            "n_bootstrap": self.n_bootstrap,
            "level": self.level,
        }


def _family(metrics: Sequence[Metric]) -> MetricFamily:
    if not metrics:
        raise InvalidConfigError("a panel needs at least one metric")
    family = family_of(metrics[0])
    family.check_panel(metrics)
    return family


def _from_mean(family: MetricFamily, mean: FloatArray, like: Metric) -> Metric:
    try:
        return family.from_panel_vector(mean, like)
    except InvalidConfigError as exc:
        raise NumericalError(f"the panel's metrics cancel out and leave no consensus ({exc})") from None


def consensus(metrics: Sequence[Metric], weights: Sequence[float] | None = None) -> Metric:
    """The metric that scores every classifier by the members' (weighted) average score.

    Parameters
    ----------
    metrics : sequence of Metric
        One family, same classes (and groups and ``tau`` for fair metrics).
    weights : sequence of float, optional
        Non-negative weight per member (default: equal).

    Returns
    -------
    Metric
        Of the members' family, in its normalisation.

    Raises
    ------
    InvalidConfigError
        If the metrics are of different families or shapes, or the weights are not usable.
    NumericalError
        If the members cancel out (e.g. two exactly opposed linear metrics).
    """
    family = _family(metrics)
    vectors = np.stack([family.panel_vector(metric) for metric in metrics])
    if weights is None:
        share = np.full(len(metrics), 1.0 / len(metrics))
    else:
        share = np.asarray(weights, dtype=np.float64)
        if share.shape != (len(metrics),) or not np.all(np.isfinite(share)) or np.any(share < 0):
            raise InvalidConfigError(f"weights must be {len(metrics)} finite non-negative numbers")
        if share.sum() <= 0:
            raise InvalidConfigError("weights must not all be zero")
        share = share / share.sum()
    return _from_mean(family, share @ vectors, metrics[0])


def _preferences(metrics: Sequence[Metric], first: FloatArray, second: FloatArray) -> BoolArray:
    """``(len(metrics), n_pairs)``: does each metric prefer the first of each pair?

    All metrics score all rates in one matrix product of the family's features and panel vectors.
    """
    family = family_of(metrics[0])
    vectors = np.stack([family.panel_vector(metric) for metric in metrics])
    left = vectors @ family.panel_features(first, metrics[0]).T
    right = vectors @ family.panel_features(second, metrics[0]).T
    if not (np.all(np.isfinite(left)) and np.all(np.isfinite(right))):
        raise NumericalError("a metric gave a non-finite value on the query pairs")
    answers: BoolArray = left > right if metrics[0].higher_is_better else left < right
    return answers


def _agreement_of(answers: BoolArray) -> FloatArray:
    as_float = answers.astype(np.float64)
    same = as_float @ as_float.T + (1.0 - as_float) @ (1.0 - as_float).T
    result: FloatArray = same / answers.shape[1]
    return result


def _check_count(value: object, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise InvalidConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _pairs(
    metrics: Sequence[Metric], sphere: Sphere | Sequence[Sphere], rng: RandomState, n_pairs: int
) -> tuple[FloatArray, FloatArray]:
    """``n_pairs`` query pairs from ``sphere`` (or one sphere per group) shaped for the metrics."""
    family = _family(metrics)
    spheres = (sphere,) if isinstance(sphere, Sphere) else tuple(sphere)
    if not spheres or any(
        not isinstance(own, Sphere) or own.n_classes != metrics[0].n_classes for own in spheres
    ):
        raise InvalidConfigError("sphere must be a Sphere (or one per group) in the metrics' rate space")
    return sample_query_pairs(sphere, n_pairs, rng, n_groups=family.n_groups(metrics[0]))


def agreement_matrix(
    metrics: Sequence[Metric],
    sphere: Sphere | Sequence[Sphere],
    rng: RandomState,
    *,
    n_pairs: int = DEFAULT_AGREEMENT_PAIRS,
) -> FloatArray:
    """How often each two metrics answer a random query pair alike (the same pairs for every two).

    Parameters
    ----------
    metrics : sequence of Metric
        One family, same shapes.
    sphere : Sphere or sequence of Sphere
        The query ball the pairs come from (a study's query region; fair metrics: also one per group).
    rng : numpy.random.Generator or int
        Source of the pairs.
    n_pairs : int
        Number of pairs.

    Returns
    -------
    ndarray, shape (n_metrics, n_metrics)
        Symmetric, ones on the diagonal, entries in ``[0, 1]``.
    """
    count = _check_count(n_pairs, "n_pairs", 1)
    return _agreement_of(_preferences(metrics, *_pairs(metrics, sphere, rng, count)))


def _silhouette(distance: FloatArray, labels: FloatArray) -> float:
    """Mean silhouette (Rousseeuw 1987) of a labelling under a distance matrix; 0 for members alone."""
    scores = []
    for index, label in enumerate(labels):
        own = labels == label
        if own.sum() == 1:
            scores.append(0.0)
            continue
        inside = distance[index, own].sum() / (own.sum() - 1)
        outside = min(distance[index, labels == other].mean() for other in set(labels.tolist()) - {label})
        spread = max(inside, outside)
        scores.append(0.0 if spread == 0 else (outside - inside) / spread)
    return float(np.mean(scores))


@dataclass(frozen=True)
class Split:
    """How a panel falls apart: each member's camp, the members who fit no camp, and the split's quality.

    ``camp_of[i]`` is member ``i``'s camp (0 = the largest); an outlier (a member of a cluster smaller than
    a camp may be) gets the camp it agrees with most and is listed in ``outliers``. ``silhouette`` is the
    mean silhouette of the best cut tried (``None`` when none could be tried).
    """

    camp_of: tuple[int, ...]
    outliers: tuple[int, ...]
    silhouette: float | None

    @property
    def n_camps(self) -> int:
        return max(self.camp_of, default=-1) + 1


def camps(agreement: FloatArray) -> Split:
    """The camps of a panel from its agreement matrix.

    Average linkage on ``1 - agreement``, cut into ever more clusters (up to `MAX_CUT`); clusters with at
    least ``max(2, MIN_CAMP_SHARE * n)`` members are camps, members of smaller ones outliers. Among the
    cuts with 2 to `MAX_CAMPS` camps the one with the best mean silhouette (over all members) is kept
    if it reaches `SPLIT_SILHOUETTE`; otherwise the panel is one camp without outliers.
    """
    values = np.asarray(agreement, dtype=np.float64)
    n = values.shape[0]
    if values.shape != (n, n) or not np.allclose(values, values.T) or np.any((values < 0) | (values > 1)):
        raise InvalidConfigError("agreement must be a symmetric square matrix with entries in [0, 1]")
    together = Split((0,) * n, (), None)
    if n < 4:
        return together
    distance = 1.0 - values
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="average")
    smallest = max(2, math.ceil(MIN_CAMP_SHARE * n))
    best: tuple[float, FloatArray, list[int]] | None = None
    for count in range(2, min(MAX_CUT, n - 1) + 1):
        labels = fcluster(tree, count, criterion="maxclust")
        big = [label for label in sorted(set(labels.tolist())) if np.sum(labels == label) >= smallest]
        if not 2 <= len(big) <= MAX_CAMPS:
            continue
        # Over every member (a lone member scores 0), so dropping doubtful members into small clusters
        # does not pay.
        score = _silhouette(distance, labels)
        if best is None or score > best[0] + 1e-12:
            best = (score, labels, big)
    if best is None:
        return together
    score, labels, big = best
    if score < SPLIT_SILHOUETTE:
        return Split((0,) * n, (), score)
    # Camps numbered by size (largest first), ties by their first member.
    order = sorted(big, key=lambda label: (-int(np.sum(labels == label)), int(np.argmax(labels == label))))
    camp_of = [order.index(label) if label in big else -1 for label in labels.tolist()]
    outliers = tuple(i for i in range(n) if camp_of[i] < 0)
    for i in outliers:
        closeness = [values[i, labels == label].mean() for label in order]
        camp_of[i] = int(np.argmax(closeness))
    return Split(tuple(camp_of), outliers, score)


def _positions(agreement: FloatArray) -> FloatArray:
    """Classical MDS of ``1 - agreement`` into the plane (signs fixed: the largest entry positive)."""
    n = agreement.shape[0]
    squared = (1.0 - agreement) ** 2
    centring = np.eye(n) - 1.0 / n
    gram = -0.5 * centring @ squared @ centring
    values, vectors = np.linalg.eigh(gram)
    top = np.argsort(values)[::-1][:2]
    coordinates = vectors[:, top] * np.sqrt(np.clip(values[top], 0.0, None))
    if coordinates.shape[1] < 2:
        coordinates = np.hstack([coordinates, np.zeros((n, 2 - coordinates.shape[1]))])
    for column in range(2):
        if coordinates[np.argmax(np.abs(coordinates[:, column])), column] < 0:
            coordinates[:, column] *= -1.0
    result: FloatArray = coordinates
    return result


def _percentiles(samples: FloatArray, level: float) -> tuple[float, float]:
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def panel(
    metrics: Sequence[Metric],
    sphere: Sphere | Sequence[Sphere],
    rng: RandomState,
    *,
    n_pairs: int = DEFAULT_AGREEMENT_PAIRS,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    level: float = DEFAULT_LEVEL,
    class_names: Sequence[str] | None = None,
    group_names: Sequence[str] | None = None,
) -> Panel:
    """Consensus, bootstrap intervals, agreement matrix and camps of a panel of elicited metrics.

    Parameters
    ----------
    metrics : sequence of Metric
        At least two, of one family and shape (a study's finished sessions).
    sphere : Sphere or sequence of Sphere
        The query region the agreement pairs come from (fair metrics: also one sphere per group).
    rng : numpy.random.Generator or int
        Source of the pairs and the resamples (an integer seed gives the same panel every time).
    n_pairs : int
        Query pairs every member answers.
    n_bootstrap : int
        Resamples of the participants (at least 10).
    level : float
        Coverage of the intervals, in ``(0, 1)``.
    class_names, group_names : sequence of str, optional
        Names in the coefficients' keys (the family's export columns); default ``"0"``, ``"1"``, ...

    Returns
    -------
    Panel

    Raises
    ------
    InvalidConfigError
        On a bad argument, metrics of different families or shapes, or fewer than two metrics.
    NumericalError
        If the members cancel out or a metric is not finite on the pairs.
    """
    family = _family(metrics)
    if len(metrics) < 2:
        raise InvalidConfigError(f"a panel needs at least two metrics, got {len(metrics)}")
    count = _check_count(n_pairs, "n_pairs", 1)
    resamples = _check_count(n_bootstrap, "n_bootstrap", 10)
    if not isinstance(level, float | int) or isinstance(level, bool) or not 0.0 < float(level) < 1.0:
        raise InvalidConfigError(f"level must lie strictly between 0 and 1, got {level!r}")
    first = metrics[0]
    classes = [str(i) for i in range(first.n_classes)] if class_names is None else list(class_names)
    groups = (
        [str(g) for g in range(family.n_groups(first) or 0)] if group_names is None else list(group_names)
    )
    if len(classes) != first.n_classes:
        raise InvalidConfigError(f"class_names must name {first.n_classes} classes, got {len(classes)}")
    pair_rng, resample_rng = as_generator(rng).spawn(2)

    vectors = np.stack([family.panel_vector(metric) for metric in metrics])
    n = len(metrics)
    centre = _from_mean(family, vectors.mean(axis=0), first)
    pairs = _pairs(metrics, sphere, pair_rng, count)
    answers = _preferences(metrics, *pairs)
    agreement = _agreement_of(answers)
    split = camps(agreement)
    groups_of = [
        tuple(i for i in range(n) if split.camp_of[i] == camp and i not in split.outliers)
        for camp in range(split.n_camps)
    ]
    centres = [_from_mean(family, vectors[list(members)].mean(axis=0), first) for members in groups_of]
    # The consensus and the camps' centres answer the members' pairs: rows n and n + 1 + c below.
    everyone = _agreement_of(np.vstack([answers, _preferences([centre, *centres], *pairs)]))
    places = _positions(everyone)

    # Bootstrap: resampled participants' consensus coefficients and mean pairwise agreement.
    cells = family.export_cells(centre.to_dict(), classes, groups)
    names = list(cells)
    draws = resample_rng.integers(0, n, size=(resamples, n))
    samples = np.empty((resamples, len(names)))
    spreads = np.empty(resamples)
    off_diagonal = ~np.eye(n, dtype=bool)
    for row, picked in enumerate(draws):
        weights = np.bincount(picked, minlength=n) / n
        metric = _from_mean(family, weights @ vectors, first)
        resampled = family.export_cells(metric.to_dict(), classes, groups)
        samples[row] = [resampled[name] for name in names]
        distinct = picked[:, None] != picked[None, :]
        block = agreement[np.ix_(picked, picked)][distinct]
        spreads[row] = float(block.mean()) if block.size else 1.0
    coefficients = {
        name: Interval(float(cells[name]), *_percentiles(samples[:, column], float(level)))
        for column, name in enumerate(names)
    }
    mean_agreement = Interval(float(agreement[off_diagonal].mean()), *_percentiles(spreads, float(level)))

    camp_list = tuple(
        Camp(
            members=members,
            centre=centres[index],
            within=(
                float(agreement[np.ix_(members, members)][~np.eye(len(members), dtype=bool)].mean())
                if len(members) > 1
                else None
            ),
            with_consensus=float(everyone[n, n + 1 + index]),
            position=(float(places[n + 1 + index, 0]), float(places[n + 1 + index, 1])),
        )
        for index, members in enumerate(groups_of)
    )
    result = Panel(
        consensus=centre,
        coefficients=coefficients,
        agreement=agreement,
        mean_agreement=mean_agreement,
        with_consensus=everyone[:n, n].copy(),
        with_centres=everyone[:n, n + 1 :].copy(),
        camps=camp_list,
        camp_of=split.camp_of,
        outliers=split.outliers,
        silhouette=split.silhouette,
        positions=places[:n].copy(),
        consensus_position=(float(places[n, 0]), float(places[n, 1])),
        n_pairs=count,
        n_bootstrap=resamples,
        level=float(level),
    )
    for array in (result.agreement, result.with_consensus, result.with_centres, result.positions):
        array.setflags(write=False)
    if not all(math.isfinite(item.value) for item in coefficients.values()):
        raise NumericalError("the consensus has a coefficient that is not finite")
    return result
