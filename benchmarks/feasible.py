"""Feasible-space bars: how long building a dataset's feasible space and mapping a query to a classifier take.

Run from the repository root:

    .venv/bin/python benchmarks/feasible.py                  # every bundled dataset, 300 queries each
    .venv/bin/python benchmarks/feasible.py --datasets adult,breast-cancer --queries 1000

For each dataset (``adult`` and ``default`` also with their sex groups) it reports

* ``build s``: loading the data (first load, then cached) and `fit_feasible_model` (model fit, plug-ins,
  Algorithm 3's linear programs with column generation) - the bar is "seconds, not minutes" for Adult;
* the sphere radius and the number of plug-in classifiers spanning the feasible set (per group);
* ``map ms``: `DatasetSpace.classifier` + its confusion matrix for random queries in the sphere and on
  its boundary (median, 99th percentile, max) - the bar is under 20 ms;
* ``max |r - q|``: the largest difference between a query and its classifier's held-out rates (bar 1e-6);
* ``sampled |r - q|``: one random draw of the classifier's predictions on held-out data, compared with
  the query (sampling error, ~1/sqrt(class size));
* ``json KB``: size of the stored space description (`DatasetSpace.to_dict`).
"""

from __future__ import annotations

import os

# One BLAS/OpenMP thread, as in a web worker on a shared machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from elicitation.lab.datasets import load_dataset
from elicitation.lab.feasible import fit_feasible_model

CASES = (
    ("breast-cancer", False),
    ("adult", False),
    ("adult", True),
    ("default", True),
    ("iris", False),
    ("wine", False),
    ("vehicle", False),
    ("digits", False),
)


def measure(name: str, groups: bool, queries: int, seed: int) -> list[str]:
    start = time.perf_counter()
    dataset = load_dataset(name, groups=groups)
    model = fit_feasible_model(dataset, seed=seed)
    build = time.perf_counter() - start
    space = model.space
    rng = np.random.default_rng(seed)
    times: list[float] = []
    worst = 0.0
    sampled = 0.0
    k = space.n_classes
    for i in range(queries):
        direction = rng.normal(size=k)
        scale = space.sphere.radius * (1.0 if i % 2 == 0 else rng.uniform())
        rates = space.sphere.center + scale * direction / np.linalg.norm(direction)
        group = i % space.n_groups
        tick = time.perf_counter()
        classifier = space.classifier(rates, group)
        classifier.confusion  # noqa: B018 - part of what a participant page needs
        times.append(1000.0 * (time.perf_counter() - tick))
        worst = max(worst, float(np.max(np.abs(classifier.rates - rates))))
        if i < 20:
            sampled = max(sampled, float(np.max(np.abs(model.sample_rates(classifier, rng) - rates))))
    size = len(json.dumps(space.to_dict())) / 1024.0
    label = f"{name} (groups)" if groups else name
    plug_ins = "/".join(str(space.n_plug_ins(g)) for g in range(space.n_groups))
    return [
        label,
        str(k),
        str(model.test_rows.shape[0]),
        f"{build:.2f}",
        f"{space.sphere.radius:.4f}",
        plug_ins,
        f"{np.median(times):.3f}",
        f"{np.percentile(times, 99):.3f}",
        f"{max(times):.3f}",
        f"{worst:.1e}",
        f"{sampled:.3f}",
        f"{size:.0f}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="", help="comma-separated names (default: all cases)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    wanted = set(filter(None, args.datasets.split(",")))
    header = [
        "dataset",
        "k",
        "held-out rows",
        "build s",
        "radius",
        "plug-ins",
        "map ms p50",
        "p99",
        "max",
        "max |r - q|",
        "sampled |r - q|",
        "json KB",
    ]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name, groups in CASES:
        if wanted and name not in wanted:
            continue
        print("| " + " | ".join(measure(name, groups, args.queries, args.seed)) + " |", flush=True)


if __name__ == "__main__":
    main()
