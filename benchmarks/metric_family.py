"""QPME and fair QPME on the paper's whole metric family: degenerate metrics, noisy people, every trade-off.

Run from the repository root:

    .venv/bin/python benchmarks/metric_family.py              # every section
    .venv/bin/python benchmarks/metric_family.py degenerate   # one section (degenerate, probit, fair)

Sections
--------
degenerate  Exact oracle, default settings, k = 2..5, sphere radius 0.2 at o: accuracy, three weighted
            accuracies, metrics whose B is rank one along the gradient (optimum inside the sphere, near o
            and outside it), target metrics -||r - t||^2 (t on an axis, near o, inside the inner sphere,
            anywhere), the paper's Example 2 (k = 2, two targets) and a k = 3 analogue (a coverage-like
            statistic matched to a target), Q-mean and a metric flat along an axis. Reported: answers and
            agreement with the truth on 1,000 random pairs in the sphere (bar: every one finishes, >= 0.99).
probit      A probit person (value noise sigma = 0.02) with the Q-mean metric, k = 3, 20 runs: Kendall tau
            between the true and the elicited metric on a pool of 100 random classifiers' rates in the
            sphere (bar: no run below 0).
fair        Fair QPME, exact oracle, lam in {0, 1e-4, 0.02, 0.5, 1}, (k, m) in {(2,2), (3,2), (2,3), (3,3)},
            five random (a, B, tau) per setting from `random_fair_metric` with lam replaced, for the default
            design and the published one (bar: no failure, |lam - lam_hat| <= 0.02).

The query-count and generator-error bars come from `elicit benchmark qpme` and `elicit benchmark fair`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np

from elicitation import ElicitationError, FairQuadraticMetric, QuadraticMetric, Sphere, run
from elicitation.evaluation import agreement, kendall_tau, sample_query_pairs
from elicitation.examples import coverage_matching, q_mean
from elicitation.fair import fair_qpme
from elicitation.oracles import ExactOracle, ProbitOracle, random_fair_metric
from elicitation.qpme import qpme

RADIUS = 0.2
CLASSES = (2, 3, 4, 5)
AGREEMENT_PAIRS = 1_000
TRADEOFFS = (0.0, 1e-4, 0.02, 0.5, 1.0)
FAIR_SETTINGS = ((2, 2), (3, 2), (2, 3), (3, 3))


def _target(center: np.ndarray) -> QuadraticMetric:
    return QuadraticMetric(2.0 * center, -2.0 * np.eye(center.shape[0]))


def _peaked_along(direction: np.ndarray, o: np.ndarray, peak: float) -> QuadraticMetric:
    u = direction / np.linalg.norm(direction)
    return QuadraticMetric(2.0 * (peak + u @ o) * u, -2.0 * np.outer(u, u))


def degenerate_family(k: int, rng: np.random.Generator) -> dict[str, QuadraticMetric]:
    """The section's metrics for ``k`` classes (random parts drawn from ``rng``)."""
    o = np.full(k, 1.0 / k)
    u = rng.normal(size=k)
    flat = np.eye(k) - np.outer(np.eye(k)[0], np.eye(k)[0])
    family = {"accuracy": QuadraticMetric(np.ones(k), np.zeros((k, k)))}
    for index in range(3):
        family[f"weighted accuracy {index + 1}"] = QuadraticMetric(
            rng.uniform(0.05, 1.0, k), np.zeros((k, k))
        )
    family["rank one, optimum inside"] = _peaked_along(u, o, -0.12)
    family["rank one, optimum near o"] = _peaked_along(u, o, 0.03)
    family["rank one, optimum outside"] = _peaked_along(u, o, 0.5)
    family["target anywhere"] = _target(o + 0.15 * rng.normal(size=k) / np.sqrt(k))
    family["target on an axis"] = _target(o + 0.1 * np.eye(k)[1])
    family["target near o"] = _target(o + 1e-3 * np.concatenate(([1.0], -np.ones(k - 1) / (k - 1))))
    family["target inside the inner sphere"] = _target(o + 0.01 * np.eye(k)[0] - 0.015 * np.eye(k)[-1])
    if k == 2:
        family["Example 2, target (0.3, 0.7)"] = coverage_matching([0.3, 0.7])
        family["Example 2, target (0.55, 0.45)"] = coverage_matching([0.55, 0.45])
    if k == 3:
        family["Example 2 analogue"] = _peaked_along(np.array([1.0, -0.5, -0.5]), o, 0.05)
    family["Q-mean"] = q_mean(k)
    family["flat along an axis"] = QuadraticMetric(flat @ rng.normal(size=k) + 0.3 * np.eye(k)[0], -flat)
    return family


def degenerate() -> bool:
    print("| k | metric | answers | agreement |\n|---|---|---|---|")
    passed = True
    for k in CLASSES:
        sphere = Sphere.around_uniform(k, RADIUS)
        for name, metric in degenerate_family(k, np.random.default_rng(k)).items():
            try:
                result = run(qpme(sphere), ExactOracle(metric))
            except ElicitationError as exc:
                print(f"| {k} | {name} | failed | {exc} |")
                passed = False
                continue
            score = agreement(
                metric, result.metric, sphere, np.random.default_rng(0), n_pairs=AGREEMENT_PAIRS
            )
            passed &= score >= 0.99
            print(f"| {k} | {name} | {result.num_queries} | {score:.3f} |")
    return passed


def probit() -> bool:
    k = 3
    sphere = Sphere.around_uniform(k, RADIUS)
    metric = q_mean(k)
    pool, _ = sample_query_pairs(sphere, 100, np.random.default_rng(99))
    truth = [metric(rates) for rates in pool]
    taus = []
    for seed in range(20):
        result = run(qpme(sphere), ProbitOracle(metric, 0.02, rng=np.random.default_rng(seed)))
        taus.append(kendall_tau(truth, [result.metric(rates) for rates in pool]))
    print(f"Kendall tau over 20 runs: min {min(taus):.3f}, mean {np.mean(taus):.3f}, max {max(taus):.3f}")
    return min(taus) >= 0.0


def fair() -> bool:
    passed = True
    for design in ("anchored", "qpme"):
        print(f"\ndesign {design!r}\n\n| k | m | lam | max abs(lam - lam_hat) | mean answers | failures |")
        print("|---|---|---|---|---|---|")
        for k, m in FAIR_SETTINGS:
            sphere = Sphere.around_uniform(k, RADIUS)
            for lam in TRADEOFFS:
                gaps, answers, failures = [], [], 0
                for trial in range(5):
                    base = random_fair_metric(np.random.default_rng(1000 * k + 100 * m + trial), k, m)
                    metric = FairQuadraticMetric(base.a, base.B_pairs, lam, base.tau)
                    try:
                        result = run(
                            fair_qpme(sphere, groups=m, tau=base.tau, design=design), ExactOracle(metric)
                        )
                    except ElicitationError:
                        failures += 1
                        continue
                    gaps.append(abs(result.metric.lam - lam))
                    answers.append(result.num_queries)
                worst = max(gaps) if gaps else float("nan")
                if design == "anchored":
                    passed &= failures == 0 and worst <= 0.02
                print(f"| {k} | {m} | {lam:g} | {worst:.4f} | {np.mean(answers):.0f} | {failures} |")
    return passed


SECTIONS: dict[str, Callable[[], bool]] = {"degenerate": degenerate, "probit": probit, "fair": fair}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="*", help=f"any of {', '.join(SECTIONS)} (default: all)")
    chosen = parser.parse_args().sections or list(SECTIONS)
    unknown = [name for name in chosen if name not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    verdicts = {}
    for name in chosen:
        print(f"\n## {name}\n")
        verdicts[name] = SECTIONS[name]()
    print("\n" + ", ".join(f"{name}: {'bar met' if ok else 'BAR MISSED'}" for name, ok in verdicts.items()))
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
