"""Tests for the bundled datasets and the user CSV loader."""

from __future__ import annotations

import ast
import gzip
import hashlib
import io
from pathlib import Path

import numpy as np
import pytest

from elicitation.errors import InvalidConfigError
from elicitation.lab.datasets import DATA_DIR, DATASET_NAMES, Dataset, load_csv, load_dataset

ROOT = Path(__file__).resolve().parents[2]

#: sha256 of each bundled file as stored (gzip files: of the decompressed original), from data/README.md.
ORIGINAL_SHA256 = {
    "breast-cancer-wisconsin.data": "402c585309c399237740f635ef9919dc512cca12cbeb20de5e563a4593f22b64",
    "breast-cancer-wisconsin.names": "4bcd6e4e0e4f8ae54e313ebbf18013cc83b6827a207123707687f8f19d29dd2c",
    "adult.data.gz": "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    "adult.test.gz": "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
    "UCI_Credit_Card.csv.gz": "a0f0ab49d6326671d6cd83be5c88dcf18007025fe9a53ecd699119c871176ca1",
    "statlog-vehicle/xaa.dat": "fc0c8bd7c6df152785d0a6c2d31e41a2e6856aa13d867bfba4adf5f1545149cb",
    "statlog-vehicle/xab.dat": "10b4e1e395ced8b59e8983638b254e8b52c49c8063de12f13c16ec4128cf2e07",
    "statlog-vehicle/xac.dat": "99e32274bcded7e2093d03b6f6ca5a24833315690a426187b25b40756f9b43d1",
    "statlog-vehicle/xad.dat": "7bba11d666a7535bcb1e555c328e65998ef22d839bbdae130d76ef51a71bdd55",
    "statlog-vehicle/xae.dat": "fb9d0622644a535c2e82a203a87b9a82e2dba2c1e86e6c9713ec572b46a1a832",
    "statlog-vehicle/xaf.dat": "5c6801c96a9c0e9947ee141dec7eeaf7b29b8838a936d31ed3502d589c0e1a85",
    "statlog-vehicle/xag.dat": "58c46e0f6e2905519318e47f7632034c79bc2b866219d1f7e99fb4d0850e4ea4",
    "statlog-vehicle/xah.dat": "20ba5a77150dab9096a54c462a5661fa1a60f73f5b3ee0829f5ba151543ddd2c",
    "statlog-vehicle/xai.dat": "8102cf7019524a3a3beb63993fdfbbf7a7f3dd30eea635e2df280387ba8831d3",
}


@pytest.mark.parametrize("filename", sorted(ORIGINAL_SHA256))
def test_bundled_file_matches_its_published_checksum(filename: str) -> None:
    path = DATA_DIR / filename
    content = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    assert hashlib.sha256(content).hexdigest() == ORIGINAL_SHA256[filename]


def _lab_package_data() -> list[str]:
    """The package-data patterns setup.py declares for ``elicitation.lab``."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "package_data" and isinstance(node.value, ast.Dict):
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "elicitation.lab":
                    patterns: list[str] = ast.literal_eval(value)
                    return patterns
    raise AssertionError("setup.py declares no package data for elicitation.lab")


def test_package_data_patterns_ship_every_bundled_file() -> None:
    patterns = _lab_package_data()
    files = {p for p in DATA_DIR.rglob("*") if p.is_file()}
    shipped = {p for pattern in patterns for p in DATA_DIR.parent.glob(pattern) if p.is_file()}
    assert files
    assert files <= shipped, sorted(str(p) for p in files - shipped)


EXPECTED = {
    # name: (rows, classes, class counts, group counts or None)
    "breast-cancer": (683, 2, [444, 239], None),
    "adult": (45222, 2, [34014, 11208], [14695, 30527]),
    "default": (30000, 2, [23364, 6636], [11888, 18112]),
    "iris": (150, 3, [50, 50, 50], None),
    "wine": (178, 3, [59, 71, 48], None),
    "vehicle": (846, 4, [218, 212, 217, 199], None),
    "digits": (1797, 10, None, None),
}


@pytest.mark.parametrize("name", DATASET_NAMES)
def test_load_dataset_matches_published_counts(name: str) -> None:
    rows, k, class_counts, group_counts = EXPECTED[name]
    dataset = load_dataset(name)
    assert dataset.name == name
    assert dataset.n_rows == rows
    assert dataset.n_classes == k
    assert dataset.features.shape[0] == rows
    assert np.all(np.isfinite(dataset.features))
    assert dataset.source
    if class_counts is not None:
        assert dataset.class_counts().tolist() == class_counts
    if group_counts is None:
        assert dataset.groups is None and dataset.n_groups == 1
    else:
        assert dataset.groups is not None
        assert np.bincount(dataset.groups).tolist() == group_counts
        assert dataset.n_groups == 2


def test_adult_groups_are_sex_and_can_be_dropped() -> None:
    adult = load_dataset("adult")
    assert adult.group_names == ("Female", "Male")
    assert adult.class_names == ("income <=50K", "income >50K")
    assert "fnlwgt" not in adult.feature_names
    assert "sex=Female" in adult.feature_names
    plain = load_dataset("adult", groups=False)
    assert plain.groups is None and plain.group_names == () and plain.n_groups == 1


def test_dataset_arrays_are_read_only() -> None:
    dataset = load_dataset("iris")
    with pytest.raises(ValueError, match="read-only"):
        dataset.features[0, 0] = 1.0


def test_load_dataset_rejects_unknown_name_listing_known_ones() -> None:
    with pytest.raises(InvalidConfigError, match="breast-cancer"):
        load_dataset("mnist")


def _csv(rows: list[str]) -> io.StringIO:
    return io.StringIO("\n".join(rows) + "\n")


def _table(n_per_class: int = 25) -> list[str]:
    lines = ["age,colour,group,outcome"]
    for i in range(n_per_class):
        for label, group in (("yes", "a"), ("no", "b"), ("yes", "b"), ("no", "a")):
            lines.append(f"{20 + i},{'red' if i % 2 else 'blue'},{group},{label}")
    return lines


def test_load_csv_encodes_numeric_and_categorical_columns() -> None:
    dataset = load_csv(_csv(_table()), "outcome", group_column="group", name="toy")
    assert isinstance(dataset, Dataset)
    assert dataset.name == "toy"
    assert dataset.class_names == ("no", "yes")
    assert dataset.group_names == ("a", "b")
    assert dataset.feature_names == ("age", "colour=blue", "colour=red")
    assert dataset.features.shape == (100, 3)
    assert dataset.class_counts().tolist() == [50, 50]


def test_load_csv_fills_missing_numbers_with_the_median_and_keeps_missing_categories() -> None:
    lines = _table()
    lines[1] = ",,a,yes"
    dataset = load_csv(_csv(lines), "outcome")
    ages = dataset.features[:, dataset.feature_names.index("age")]
    assert ages[0] == pytest.approx(float(np.median(ages[1:])))
    assert "colour=(missing)" in dataset.feature_names
    assert "group=a" in dataset.feature_names  # without group_column the group is an ordinary feature


def test_load_csv_reads_files_and_semicolon_dialects(tmp_path: Path) -> None:
    path = tmp_path / "patients.csv"
    path.write_text("\n".join(line.replace(",", ";") for line in _table()) + "\n")
    dataset = load_csv(path, "outcome")
    assert dataset.name == "patients"
    assert dataset.n_rows == 100


@pytest.mark.parametrize(
    ("mutate", "kwargs", "message"),
    [
        (lambda rows: rows[:1] + [r.rsplit(",", 1)[0] + "," for r in rows[1:3]] + rows[3:], {}, "no label"),
        (lambda rows: [r.replace(",no", ",yes") for r in rows], {}, "single class"),
        (lambda rows: rows, {"group_column": "sex"}, "group column 'sex' is not in the CSV"),
        (lambda rows: rows, {"group_column": "outcome"}, "must differ"),
        (lambda rows: [r.replace(",b,", ",a,") for r in rows], {"group_column": "group"}, "single group"),
        (lambda rows: rows[:12], {}, "too few rows per class"),
        (
            lambda rows: rows[:60],
            {"group_column": "group", "min_rows": 20},
            "too few rows per group and class",
        ),
        (lambda rows: rows[:1], {}, "no data rows"),
        (lambda rows: ["age,age,outcome", *rows[1:]], {}, "name every column once"),
        (lambda rows: [*rows, "1,2"], {}, "has 2 fields"),
    ],
)
def test_load_csv_rejects_bad_tables_clearly(mutate, kwargs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidConfigError, match=message):
        load_csv(_csv(mutate(_table())), "outcome", **kwargs)


def test_load_csv_rejects_unknown_label_column_listing_columns() -> None:
    with pytest.raises(InvalidConfigError, match="columns are: age, colour, group, outcome"):
        load_csv(_csv(_table()), "label")


def test_load_csv_rejects_missing_file_and_empty_input(tmp_path: Path) -> None:
    with pytest.raises(InvalidConfigError, match="does not exist"):
        load_csv(tmp_path / "nope.csv", "outcome")
    with pytest.raises(InvalidConfigError, match="empty"):
        load_csv(io.StringIO(""), "outcome")


def test_load_csv_rejects_too_many_classes() -> None:
    lines = ["x,y"] + [f"{i},{i % 12}" for i in range(12 * 20)]
    with pytest.raises(InvalidConfigError, match="12 classes"):
        load_csv(_csv(lines), "y")


def test_load_csv_needs_a_feature_column() -> None:
    lines = ["y"] + [str(i % 2) for i in range(60)]
    with pytest.raises(InvalidConfigError, match="no usable feature columns"):
        load_csv(_csv(lines), "y")
