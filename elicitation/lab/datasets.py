"""Bundled real-world datasets (offline, with provenance) and loading a user's own CSV file.

Every loader returns a `Dataset`: a numeric feature matrix (categorical columns one-hot encoded, rows
with missing values handled as documented per loader), integer labels ``0..k-1`` with display names and,
for the fairness datasets, integer group ids with names (the protected attribute, sex, as in the paper's
Appendix H). The UCI files ship inside the package (``elicitation/lab/data/``, CC BY 4.0; provenance, licence
and checksums in ``elicitation/lab/data/README.md``); iris, wine and digits come from scikit-learn's bundled
copies. Nothing here touches the network.

=====================  ======  =====  ==========================================================
name                   k       m      source
=====================  ======  =====  ==========================================================
``breast-cancer``      2       1      Breast Cancer Wisconsin (Original), the paper's user study
``adult``              2       2      UCI Adult (train + test files), groups = sex
``default``            2       2      Default of credit card clients (Taiwan), groups = sex
``iris``               3       1      scikit-learn
``wine``               3       1      scikit-learn
``vehicle``            4       1      Statlog (Vehicle Silhouettes)
``digits``             10      1      scikit-learn (8x8 handwritten digits)
=====================  ======  =====  ==========================================================
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import numpy as np
import numpy.typing as npt

from ..errors import InvalidConfigError
from ..types import FloatArray

__all__ = [
    "DATASET_NAMES",
    "DATA_DIR",
    "MAX_CLASSES",
    "MIN_ROWS_PER_CELL",
    "Dataset",
    "IntArray",
    "load_csv",
    "load_dataset",
]

IntArray = npt.NDArray[np.int64]

#: Where the bundled data files live (inside the installed package).
DATA_DIR = Path(__file__).resolve().parent / "data"
#: Fewest rows a class (within each group, when there are groups) must have in a user's CSV. Below it
#: the held-out split cannot estimate the class's rates, and the feasible sphere degenerates.
MIN_ROWS_PER_CELL = 20
#: Most classes a study can have: QPME asks O(k^2) questions, which is already ~500 at k = 10.
MAX_CLASSES = 10
#: Cell values read as missing in CSV files.
_MISSING = frozenset({"", "?", "na", "nan", "null", "none"})


@dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled table ready for modelling.

    Attributes
    ----------
    name : str
        Short name (``load_dataset`` key, or the CSV's name).
    features : numpy.ndarray, shape (n_rows, n_features)
        Numeric features; categorical columns are one-hot encoded.
    labels : numpy.ndarray, shape (n_rows,)
        Class ids ``0..n_classes-1``.
    class_names : tuple of str
        Display name of each class id.
    groups : numpy.ndarray, shape (n_rows,), or None
        Group ids ``0..n_groups-1``; ``None`` without a protected attribute.
    group_names : tuple of str
        Display name of each group id; empty without groups.
    feature_names : tuple of str
        One name per feature column (``column=value`` for one-hot columns).
    source : str
        Where the data comes from (citation-style, for the study page).
    """

    name: str
    features: FloatArray
    labels: IntArray
    class_names: tuple[str, ...]
    groups: IntArray | None = None
    group_names: tuple[str, ...] = ()
    feature_names: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        features = np.array(self.features, dtype=np.float64)
        labels = np.array(self.labels, dtype=np.int64)
        if features.ndim != 2 or labels.shape != (features.shape[0],):
            raise InvalidConfigError(
                f"features must be (n_rows, n_features) and labels (n_rows,), got {features.shape} "
                f"and {labels.shape}"
            )
        if not np.all(np.isfinite(features)):
            raise InvalidConfigError(f"dataset {self.name!r}: features must be finite numbers")
        k = len(self.class_names)
        if labels.size and (labels.min() < 0 or labels.max() >= k):
            raise InvalidConfigError(f"dataset {self.name!r}: labels must lie in 0..{k - 1}")
        features.setflags(write=False)
        labels.setflags(write=False)
        object.__setattr__(self, "features", features)
        object.__setattr__(self, "labels", labels)
        if self.groups is not None:
            groups = np.array(self.groups, dtype=np.int64)
            m = len(self.group_names)
            if groups.shape != labels.shape or (groups.size and (groups.min() < 0 or groups.max() >= m)):
                raise InvalidConfigError(f"dataset {self.name!r}: groups must be (n_rows,) ids in 0..{m - 1}")
            groups.setflags(write=False)
            object.__setattr__(self, "groups", groups)
        elif self.group_names:
            raise InvalidConfigError(f"dataset {self.name!r}: group_names given without groups")

    @property
    def n_rows(self) -> int:
        """Number of rows (people)."""
        return int(self.labels.shape[0])

    @property
    def n_classes(self) -> int:
        """Number of classes ``k``."""
        return len(self.class_names)

    @property
    def n_groups(self) -> int:
        """Number of groups ``m`` (1 without groups)."""
        return max(len(self.group_names), 1)

    def without_groups(self) -> Dataset:
        """The same table with the protected attribute dropped (a study that ignores groups)."""
        return Dataset(
            self.name, self.features, self.labels, self.class_names, None, (), self.feature_names, self.source
        )

    def class_counts(self) -> IntArray:
        """Rows per class, shape ``(n_classes,)``."""
        counts: IntArray = np.bincount(self.labels, minlength=self.n_classes).astype(np.int64)
        return counts


# ---------------------------------------------------------------------------------------------------
# Table encoding shared by the bundled CSV loaders and user files
# ---------------------------------------------------------------------------------------------------


def _is_missing(value: str) -> bool:
    return value.strip().lower() in _MISSING


def _as_float(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _encode_columns(
    columns: Sequence[Sequence[str]], names: Sequence[str], *, categorical: Iterable[str] = ()
) -> tuple[FloatArray, tuple[str, ...]]:
    """Numeric columns as floats (missing -> column median), the others one-hot (missing -> own category).

    A column is numeric when every non-missing cell parses as a finite float and it is not listed in
    ``categorical``. Category order is sorted, so the encoding is deterministic.
    """
    forced = set(categorical)
    blocks: list[FloatArray] = []
    feature_names: list[str] = []
    for name, cells in zip(names, columns, strict=True):
        values = np.char.strip(np.asarray(cells, dtype=str))
        missing = np.isin(np.char.lower(values), list(_MISSING))
        numbers = None if name in forced or missing.all() else _parse_numbers(values[~missing])
        if numbers is not None:
            column = np.empty(values.shape[0], dtype=np.float64)
            column[~missing] = numbers
            column[missing] = float(np.median(numbers))
            if np.ptp(column) > 0.0:  # a constant column carries no information
                blocks.append(column[:, None])
                feature_names.append(name)
            continue
        cleaned = np.where(missing, "(missing)", values)
        categories, codes = np.unique(cleaned, return_inverse=True)
        if categories.shape[0] < 2:
            continue
        one_hot = np.zeros((cleaned.shape[0], categories.shape[0]), dtype=np.float64)
        one_hot[np.arange(cleaned.shape[0]), codes] = 1.0
        blocks.append(one_hot)
        feature_names.extend(f"{name}={category}" for category in categories.tolist())
    if not blocks:
        raise InvalidConfigError("the table has no usable feature columns besides the label (and group)")
    return np.hstack(blocks), tuple(feature_names)


def _parse_numbers(values: npt.NDArray[np.str_]) -> FloatArray | None:
    """All cells as finite floats, or ``None`` when any cell is not a number (a categorical column)."""
    try:
        numbers = values.astype(np.float64)
    except ValueError:
        return None
    return numbers if bool(np.all(np.isfinite(numbers))) else None


def _label_ids(values: Sequence[str], order: Sequence[str] | None = None) -> tuple[IntArray, tuple[str, ...]]:
    names = tuple(order) if order is not None else tuple(sorted(set(values), key=_natural_key))
    index = {name: i for i, name in enumerate(names)}
    return np.array([index[v] for v in values], dtype=np.int64), names


def _natural_key(value: str) -> tuple[int, float, str]:
    number = _as_float(value)
    return (0, number, "") if number is not None else (1, 0.0, value)


def _open_text(path: Path) -> TextIO:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


# ---------------------------------------------------------------------------------------------------
# Bundled datasets
# ---------------------------------------------------------------------------------------------------

_ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
_ADULT_CATEGORICAL = ("workclass", "education", "marital-status", "occupation", "relationship", "race", "sex")


def _load_breast_cancer() -> Dataset:
    """Breast Cancer Wisconsin (Original): 699 rows; the 16 with a missing *bare nuclei* are dropped."""
    rows: list[list[str]] = []
    with _open_text(DATA_DIR / "breast-cancer-wisconsin.data") as handle:
        for row in csv.reader(handle):
            if row and "?" not in row:
                rows.append(row)
    features = np.array([[float(v) for v in row[1:10]] for row in rows])
    labels = np.array([0 if row[10] == "2" else 1 for row in rows], dtype=np.int64)
    names = (
        "clump thickness",
        "uniformity of cell size",
        "uniformity of cell shape",
        "marginal adhesion",
        "single epithelial cell size",
        "bare nuclei",
        "bland chromatin",
        "normal nucleoli",
        "mitoses",
    )
    return Dataset(
        "breast-cancer",
        features,
        labels,
        ("benign", "malignant"),
        feature_names=names,
        source="Wolberg (1990), Breast Cancer Wisconsin (Original), UCI ML Repository, "
        "doi:10.24432/C5HP4Z (CC BY 4.0)",
    )


def _load_adult() -> Dataset:
    """UCI Adult, train and test files together; rows with a missing value (``?``) are dropped (45,222 left).

    Groups are ``sex`` (Female, Male); ``fnlwgt`` (a census sampling weight, not a personal attribute) is
    not used as a feature.
    """
    rows: list[list[str]] = []
    for filename in ("adult.data.gz", "adult.test.gz"):
        with _open_text(DATA_DIR / filename) as handle:
            for row in csv.reader(handle, skipinitialspace=True):
                if len(row) != len(_ADULT_COLUMNS) or any(cell.strip() == "?" for cell in row):
                    continue  # the blank last line, the test file's "|1x3 Cross validator" banner, missing
                rows.append([cell.strip() for cell in row])
    columns = list(zip(*rows, strict=True))
    by_name = dict(zip(_ADULT_COLUMNS, columns, strict=True))
    labels = np.array([0 if v.rstrip(".") == "<=50K" else 1 for v in by_name["income"]], dtype=np.int64)
    groups, group_names = _label_ids(list(by_name["sex"]), order=("Female", "Male"))
    feature_columns = [c for c in _ADULT_COLUMNS if c not in ("income", "fnlwgt")]
    features, feature_names = _encode_columns(
        [by_name[c] for c in feature_columns], feature_columns, categorical=_ADULT_CATEGORICAL
    )
    return Dataset(
        "adult",
        features,
        labels,
        ("income <=50K", "income >50K"),
        groups,
        group_names,
        feature_names,
        "Becker & Kohavi (1996), Adult, UCI ML Repository, doi:10.24432/C5XW20 (CC BY 4.0)",
    )


def _load_default() -> Dataset:
    """Default of credit card clients (Taiwan, 30,000 rows); groups are ``SEX`` (1 = male, 2 = female)."""
    with _open_text(DATA_DIR / "UCI_Credit_Card.csv.gz") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        rows = [row for row in reader if row]
    table = np.array([[float(v) for v in row] for row in rows])
    label_at = header.index("default.payment.next.month")
    sex_at = header.index("SEX")
    keep = [i for i, name in enumerate(header) if name not in ("ID", "default.payment.next.month")]
    groups = np.where(table[:, sex_at] == 1.0, 0, 1).astype(np.int64)
    return Dataset(
        "default",
        table[:, keep],
        table[:, label_at].astype(np.int64),
        ("no default", "default"),
        groups,
        ("Male", "Female"),
        tuple(header[i] for i in keep),
        "Yeh (2009), Default of Credit Card Clients, UCI ML Repository, doi:10.24432/C55S3H (CC BY 4.0)",
    )


def _load_vehicle() -> Dataset:
    """Statlog (Vehicle Silhouettes): the nine original files concatenated, 846 rows, 4 classes."""
    rows: list[list[str]] = []
    for path in sorted((DATA_DIR / "statlog-vehicle").glob("xa?.dat")):
        with _open_text(path) as handle:
            rows.extend(line.split() for line in handle if line.strip())
    labels, names = _label_ids([row[18] for row in rows], order=("bus", "opel", "saab", "van"))
    return Dataset(
        "vehicle",
        np.array([[float(v) for v in row[:18]] for row in rows]),
        labels,
        names,
        source="Mowforth & Shepherd, Statlog (Vehicle Silhouettes), UCI ML Repository, "
        "doi:10.24432/C5HG6N (CC BY 4.0)",
    )


def _load_sklearn(name: str) -> Dataset:
    # scikit-learn is imported only when one of its bundled sets is asked for
    from sklearn import datasets as sk  # type: ignore[import-untyped]

    loader = {"iris": sk.load_iris, "wine": sk.load_wine, "digits": sk.load_digits}[name]
    bunch = loader()
    target_names = tuple(str(t) for t in bunch.target_names)
    return Dataset(
        name,
        np.asarray(bunch.data, dtype=np.float64),
        np.asarray(bunch.target, dtype=np.int64),
        target_names,
        feature_names=tuple(str(f) for f in getattr(bunch, "feature_names", ())),
        source=f"scikit-learn's bundled copy of the UCI {name} dataset",
    )


_LOADERS: dict[str, Callable[[], Dataset]] = {
    "breast-cancer": _load_breast_cancer,
    "adult": _load_adult,
    "default": _load_default,
    "iris": lambda: _load_sklearn("iris"),
    "wine": lambda: _load_sklearn("wine"),
    "vehicle": _load_vehicle,
    "digits": lambda: _load_sklearn("digits"),
}

#: Names accepted by `load_dataset`.
DATASET_NAMES: tuple[str, ...] = tuple(_LOADERS)


@functools.lru_cache(maxsize=len(_LOADERS))
def _load_cached(name: str) -> Dataset:
    # Datasets are immutable (frozen, read-only arrays), so sharing one parsed copy is safe; it saves
    # re-parsing Adult (~1 s) every time a study or benchmark builds a space.
    return _LOADERS[name]()


def load_dataset(name: str, *, groups: bool = True) -> Dataset:
    """Load a bundled dataset by name (offline).

    Parameters
    ----------
    name : str
        One of `DATASET_NAMES`.
    groups : bool
        Keep the protected attribute (sex, for ``adult`` and ``default``). With ``False`` the dataset has
        no groups. Ignored for datasets without a protected attribute.

    Returns
    -------
    Dataset

    Raises
    ------
    InvalidConfigError
        For an unknown name (the message lists the known ones).
    """
    if name not in _LOADERS:
        raise InvalidConfigError(f"unknown dataset {name!r}; known datasets: {', '.join(DATASET_NAMES)}")
    dataset = _load_cached(name)
    return dataset if groups else dataset.without_groups()


# ---------------------------------------------------------------------------------------------------
# User CSV files
# ---------------------------------------------------------------------------------------------------


def load_csv(
    source: str | Path | TextIO,
    label_column: str,
    *,
    group_column: str | None = None,
    name: str | None = None,
    min_rows: int = MIN_ROWS_PER_CELL,
) -> Dataset:
    """Load a user's CSV file (header row required) as a `Dataset`.

    Parameters
    ----------
    source : str, pathlib.Path or text stream
        A path (``.csv`` or ``.csv.gz``) or an open text stream (e.g. ``io.StringIO`` of an upload).
    label_column : str
        The column holding the true class of each row. Its distinct values become the classes (sorted,
        numbers numerically).
    group_column : str, optional
        A protected attribute; its distinct values become the groups. It is not used as a feature.
    name : str, optional
        Dataset name; defaults to the file's stem or ``"csv"``.
    min_rows : int
        Every class must have at least this many rows, within every group when there are groups.

    Returns
    -------
    Dataset
        Other columns become features: numeric columns as numbers (a missing cell takes the column's
        median), the others one-hot encoded (a missing cell is its own category); constant columns
        are dropped.

    Raises
    ------
    InvalidConfigError
        For an unreadable or empty file, an unknown label or group column (the message lists the
        columns), missing labels (with row numbers), a single class, more than `MAX_CLASSES` classes, a
        single group, or a class (per group) with fewer than ``min_rows`` rows.
    """
    if isinstance(min_rows, bool) or not isinstance(min_rows, int) or min_rows < 2:
        raise InvalidConfigError(f"min_rows must be an integer >= 2, got {min_rows!r}")
    if isinstance(source, str | Path):
        path = Path(source)
        if not path.is_file():
            raise InvalidConfigError(f"CSV file {str(path)!r} does not exist")
        default_name = path.name.removesuffix(".gz").removesuffix(".csv") or "csv"
        try:
            with _open_text(path) as handle:
                header, rows = _read_rows(handle)
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidConfigError(f"cannot read CSV file {str(path)!r}: {exc}") from exc
    else:
        default_name = "csv"
        header, rows = _read_rows(source)
    dataset_name = name or default_name
    if label_column not in header:
        raise InvalidConfigError(
            f"label column {label_column!r} is not in the CSV; its columns are: {', '.join(header)}"
        )
    if group_column is not None and group_column not in header:
        raise InvalidConfigError(
            f"group column {group_column!r} is not in the CSV; its columns are: {', '.join(header)}"
        )
    if group_column == label_column:
        raise InvalidConfigError("group column and label column must differ")
    label_at = header.index(label_column)
    raw_labels = [row[label_at].strip() for row in rows]
    missing = [i + 2 for i, v in enumerate(raw_labels) if _is_missing(v)]  # +2: header line, 1-based
    if missing:
        shown = ", ".join(str(i) for i in missing[:10]) + (", ..." if len(missing) > 10 else "")
        raise InvalidConfigError(
            f"{len(missing)} row(s) have no label in column {label_column!r} (lines {shown}); "
            "remove them or fill them in"
        )
    labels, class_names = _label_ids(raw_labels)
    if len(class_names) < 2:
        raise InvalidConfigError(
            f"label column {label_column!r} has a single class ({class_names[0]!r}); "
            "elicitation needs at least two classes"
        )
    if len(class_names) > MAX_CLASSES:
        raise InvalidConfigError(
            f"label column {label_column!r} has {len(class_names)} classes; at most {MAX_CLASSES} are "
            "supported (is it a numeric column rather than a label?)"
        )
    groups: IntArray | None = None
    group_names: tuple[str, ...] = ()
    if group_column is not None:
        group_at = header.index(group_column)
        raw_groups = [row[group_at].strip() for row in rows]
        missing = [i + 2 for i, v in enumerate(raw_groups) if _is_missing(v)]
        if missing:
            shown = ", ".join(str(i) for i in missing[:10]) + (", ..." if len(missing) > 10 else "")
            raise InvalidConfigError(
                f"{len(missing)} row(s) have no group in column {group_column!r} (lines {shown})"
            )
        groups, group_names = _label_ids(raw_groups)
        if len(group_names) < 2:
            raise InvalidConfigError(
                f"group column {group_column!r} has a single group ({group_names[0]!r}); "
                "a fairness study needs at least two"
            )
    _check_cell_sizes(labels, class_names, groups, group_names, min_rows)
    skip = {label_at} | ({header.index(group_column)} if group_column is not None else set())
    feature_at = [i for i in range(len(header)) if i not in skip]
    features, feature_names = _encode_columns(
        [[row[i] for row in rows] for i in feature_at], [header[i] for i in feature_at]
    )
    return Dataset(
        dataset_name,
        features,
        labels,
        class_names,
        groups,
        group_names,
        feature_names,
        f"user CSV file {dataset_name!r}",
    )


def _read_rows(handle: TextIO) -> tuple[list[str], list[list[str]]]:
    try:
        text = handle.read()
    except UnicodeDecodeError as exc:
        raise InvalidConfigError(f"the CSV file is not UTF-8 text: {exc}") from exc
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    try:
        header = [cell.strip() for cell in next(reader)]
    except StopIteration:
        raise InvalidConfigError("the CSV file is empty") from None
    except csv.Error as exc:
        raise InvalidConfigError(f"the CSV file cannot be parsed: {exc}") from exc
    if len(set(header)) != len(header) or any(not h for h in header):
        duplicates = sorted(h for h, n in Counter(header).items() if n > 1)
        raise InvalidConfigError(
            "the CSV header must name every column once "
            f"(empty or duplicate names: {duplicates or ['(empty)']})"
        )
    rows: list[list[str]] = []
    try:
        for line_number, row in enumerate(reader, start=2):
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InvalidConfigError(
                    f"line {line_number} of the CSV has {len(row)} fields, the header has {len(header)}"
                )
            rows.append(row)
    except csv.Error as exc:
        raise InvalidConfigError(f"the CSV file cannot be parsed: {exc}") from exc
    if not rows:
        raise InvalidConfigError("the CSV file has a header but no data rows")
    return header, rows


def _check_cell_sizes(
    labels: IntArray,
    class_names: tuple[str, ...],
    groups: IntArray | None,
    group_names: tuple[str, ...],
    min_rows: int,
) -> None:
    k = len(class_names)
    if groups is None:
        counts = np.bincount(labels, minlength=k)
        small = [f"{class_names[i]!r} ({counts[i]})" for i in range(k) if counts[i] < min_rows]
        if small:
            raise InvalidConfigError(
                f"too few rows per class: every class needs at least {min_rows} rows to estimate its rates; "
                f"short: {', '.join(small)}"
            )
        return
    m = len(group_names)
    counts = np.zeros((m, k), dtype=np.int64)
    np.add.at(counts, (groups, labels), 1)
    small = [
        f"group {group_names[g]!r} / class {class_names[i]!r} ({counts[g, i]})"
        for g in range(m)
        for i in range(k)
        if counts[g, i] < min_rows
    ]
    if small:
        raise InvalidConfigError(
            f"too few rows per group and class: each needs at least {min_rows} rows; "
            f"short: {', '.join(small)}"
        )
