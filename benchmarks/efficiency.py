"""The active elicitor's bars: how many answers it needs, how robust it is to noise, and how fast it is.

Run from the repository root (single-threaded BLAS is set below, as in a web worker):

    .venv/bin/python benchmarks/efficiency.py                 # everything, default trial counts
    .venv/bin/python benchmarks/efficiency.py --quick         # a smoke run (few trials)
    .venv/bin/python benchmarks/efficiency.py exact --trials 20 --classes 2,3
    .venv/bin/python benchmarks/efficiency.py noisy timing --output results/

Sections
--------
exact   Exact oracle (Definition 1), k = 2..5, sphere radius 0.2 at o, random metrics from
        `elicitation.oracles.random_quadratic_metric` (30 per k by default). Targets: the mean errors
        of the authors' published QPME implementation in this setting (||a - a_hat|| = 0.014,
        0.042, 0.042, 0.067 and ||B - B_hat||_F = 0.044, 0.17, 0.18, 0.28 at Table 4's answer counts),
        and QPME (epsilon = 1e-2) run on the same metrics with this repository's defaults and with the
        paper's settings. The active elicitor (noise-free model) answers a little beyond a tenth of the
        paper's Table 4 count (26, 66, 120, 187 for k = 2..5); its errors are recorded after every answer.
        Reported: each target's errors and answers, the first answer count at which the active elicitor's
        mean errors are both at most the target's, that count as a share of the target's answers, the
        ratio to Theorem 2's d log2(1/error) (d = k + k(k+1)/2 unknowns, error = the combined error
        reached), the active elicitor's mean / median / p90 errors at the bar and, for calibration, the
        posterior's own spread next to the actual error at the budget.
noisy   Logistic simulated humans, P(correct) = sigmoid(beta |phi(r1) - phi(r2)|), beta = 50 and 200. After
        50 answers (default beta grid, i.e. the noise level is not told to the elicitor) the elicited
        metric's agreement with the TRUE preference on 1,000 random feasible pairs is compared with
        (i) the person's own single answers (expected accuracy on the same pairs), (ii) QPME after its
        full budget on the same noisy person, (iii) accuracy (sum_i P(Y=i) r_i) and equal weights
        (a = 1, B = -1 1^T, normalised; the paper's Appendix G baseline).
fair    Fair metrics, (k, m) in {(2, 2), (3, 2), (3, 3)}: fair QPME (epsilon = 1e-2) and the active
        elicitor (default budget max(30, 4 d)) on exact and logistic (beta = 200) oracles: answers, errors
        of a, sum_uv B^{uv}, lam and agreement on 1,000 random pairs.
timing  Per-question latency (posterior update + next query) for k = 5, noisy answers, p50/p99, and the
        time to replay a 50-answer log from scratch.

Results print as Markdown tables; ``--output DIR`` also writes ``efficiency.json`` and a Plotly figure
``efficiency_errors.html`` (error versus answers, QPME's mean as dashed lines).
"""

from __future__ import annotations

import os

# One BLAS thread: the elicitor runs inside a web request next to others; oversubscribed BLAS threads
# only slow the small matrix products down on a shared two-core machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from elicitation import ElicitationError, Pending, QuadraticMetric, Sphere, replay, run
from elicitation.active import DEFAULT_BETA_GRID, active_fair, active_quadratic
from elicitation.evaluation import elicitation_errors, sample_query_pairs
from elicitation.fair import fair_qpme
from elicitation.oracles import ExactOracle, LogisticOracle, random_fair_metric, random_quadratic_metric
from elicitation.qpme import qpme
from elicitation.types import LinearMetric, Metric

RADIUS = 0.2
QPME_EPSILON = 1e-2
#: Table 4 of the paper (mean QPME answers), for reference next to our own QPME runs.
PAPER_QPME_ANSWERS = {2: 265.43, 3: 669.29, 4: 1205.91, 5: 1879.74}
NOISY_ANSWERS = 50
AGREEMENT_PAIRS = 1000


def _unknowns(k: int) -> int:
    return k + k * (k + 1) // 2


def _errors(true: QuadraticMetric, estimate: QuadraticMetric) -> tuple[float, float]:
    return float(np.linalg.norm(true.a - estimate.a)), float(np.linalg.norm(true.B - estimate.B))


def _agreement(true: Metric, other: Metric, first: np.ndarray, second: np.ndarray) -> float:
    same = [true.prefers(r1, r2) == other.prefers(r1, r2) for r1, r2 in zip(first, second, strict=True)]
    return float(np.mean(same))


# ------------------------------------------------------------------------------------------------------
# Exact oracle: answers needed to reach QPME's error
# ------------------------------------------------------------------------------------------------------


#: QPME configurations compared: this repository's defaults, and the paper's procedure (every LPME cycle,
#: boundary probes, the closed-form Equation 8 reconstruction), whose answer counts are of Table 4's order.
QPME_CONFIGS: dict[str, dict[str, Any]] = {
    "qpme (repo defaults)": {},
    "qpme (paper settings)": {"early_stop": False, "probe": "boundary", "reconstruction": "closed_form"},
}
#: Mean errors (||a - a_hat||, ||B - B_hat||_F) of the authors' published QPME implementation in this very
#: setting (sphere radius 0.2 at o, epsilon 1e-2, its own random metrics), as quoted when this comparison
#: was set up; they go with Table 4's answer counts.
PUBLISHED_QPME_ERRORS = {2: (0.014, 0.044), 3: (0.042, 0.17), 4: (0.042, 0.18), 5: (0.067, 0.28)}
PUBLISHED_TARGET = "authors' published QPME"
#: Default metrics per k in the exact section: the k = 2 mean is driven by a few large-gradient metrics,
#: so ten were too few to judge it.
EXACT_TRIALS = 30


def _first_reach(mean_a: np.ndarray, mean_b: np.ndarray, target: tuple[float, float]) -> int | None:
    reached = np.flatnonzero((mean_a <= target[0]) & (mean_b <= target[1]))
    return int(reached[0]) if reached.size else None


def bench_exact(classes: list[int], trials: int, seed: int, budget_factor: float) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for k in classes:
        sphere = Sphere.around_uniform(k, RADIUS)
        metrics = [
            random_quadratic_metric(np.random.default_rng(seed + 1000 * k + t), k) for t in range(trials)
        ]
        targets: dict[str, dict[str, Any]] = {
            PUBLISHED_TARGET: {
                "error_a": PUBLISHED_QPME_ERRORS[k][0],
                "error_B": PUBLISHED_QPME_ERRORS[k][1],
                "answers": PAPER_QPME_ANSWERS[k],
            }
        }
        for name, options in QPME_CONFIGS.items():
            errors, answers = [], []
            for metric in metrics:
                result = run(qpme(sphere, QPME_EPSILON, **options), ExactOracle(metric))
                errors.append(_errors(metric, result.metric))
                answers.append(result.num_queries)
            targets[name] = {
                "error_a": float(np.mean([e[0] for e in errors])),
                "error_B": float(np.mean([e[1] for e in errors])),
                "answers": float(np.mean(answers)),
            }
        # The bar is a tenth of the paper's Table 4 count; the active run goes a little beyond it so that
        # the table can also say where the stronger targets are reached.
        bar = math.floor(PAPER_QPME_ANSWERS[k] / 10.0)
        budget = max(bar, math.ceil(bar * budget_factor))
        curves_a = np.zeros((trials, budget + 1))
        curves_b = np.zeros((trials, budget + 1))
        spreads: list[float] = []
        final_errors: list[float] = []
        for t, metric in enumerate(metrics):
            elicitor = active_quadratic(sphere, seed=seed + t, beta=None, max_queries=budget, tolerance=0.0)
            query = next(elicitor)
            curves_a[t, 0], curves_b[t, 0] = _errors(metric, elicitor.current_metric())
            try:
                for n in range(1, budget + 1):
                    query = elicitor.send(bool(metric.prefers(query.first, query.second)))
                    curves_a[t, n], curves_b[t, n] = _errors(metric, elicitor.current_metric())
            except StopIteration as stop:
                curves_a[t, budget], curves_b[t, budget] = _errors(metric, stop.value.metric)
            spreads.append(float(elicitor.posterior_spread or 0.0))
            final_errors.append(math.hypot(curves_a[t, budget], curves_b[t, budget]))
        mean_a, mean_b = curves_a.mean(axis=0), curves_b.mean(axis=0)
        for target in targets.values():
            needed = _first_reach(mean_a, mean_b, (target["error_a"], target["error_B"]))
            target["active_answers"] = needed
            target["share_of_its_answers"] = None if needed is None else needed / target["answers"]
            target["within_a_tenth_of_table4"] = needed is not None and needed <= PAPER_QPME_ANSWERS[k] / 10
            if needed is not None:
                error = math.hypot(mean_a[needed], mean_b[needed])
                bound = _unknowns(k) * math.log2(1.0 / error)
                target["theorem2_count"] = bound
                target["ratio_to_theorem2"] = needed / bound
        results[str(k)] = {
            "trials": trials,
            "bar_answers": bar,
            "active_budget": budget,
            "targets": targets,
            "active_error_a_at_bar": float(mean_a[bar]),
            "active_error_B_at_bar": float(mean_b[bar]),
            "active_median_error_a_at_bar": float(np.median(curves_a[:, bar])),
            "active_median_error_B_at_bar": float(np.median(curves_b[:, bar])),
            "active_p90_error_a_at_bar": float(np.percentile(curves_a[:, bar], 90)),
            "active_p90_error_B_at_bar": float(np.percentile(curves_b[:, bar], 90)),
            # Calibration: the posterior's own expected error versus the actual one, at the budget.
            "final_posterior_spread_mean": float(np.mean(spreads)),
            "final_error_mean": float(np.mean(final_errors)),
            "curve_a": mean_a.tolist(),
            "curve_B": mean_b.tolist(),
        }
        print(f"exact k={k}: done", file=sys.stderr, flush=True)
    return results


def table_exact(results: dict[str, Any]) -> str:
    lines = [
        "| k | trials | target | its answers | its err a / B | active answers to reach it | share | "
        "<= Table 4 / 10 | d log2(1/err) | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, row in results.items():
        for name, target in row["targets"].items():
            needed = target["active_answers"]
            reached = str(needed) if needed is not None else f"> {row['active_budget']}"
            share = "n/a" if needed is None else f"{100 * target['share_of_its_answers']:.1f}%"
            bound = f"{target['theorem2_count']:.1f}" if needed is not None else "n/a"
            ratio = f"{target['ratio_to_theorem2']:.2f}" if needed is not None else "n/a"
            lines.append(
                f"| {k} | {row['trials']} | {name} | {target['answers']:.0f} | "
                f"{target['error_a']:.3f} / {target['error_B']:.3f} | {reached} | {share} | "
                f"{'yes' if target['within_a_tenth_of_table4'] else 'no'} | {bound} | {ratio} |"
            )
    lines += [
        "",
        "| k | answers (Table 4 / 10) | active err a there: mean / median / p90 | "
        "err B: mean / median / p90 | posterior spread vs actual error at the end of the run |",
        "|---|---|---|---|---|",
    ]
    for k, row in results.items():
        lines.append(
            f"| {k} | {row['bar_answers']} | {row['active_error_a_at_bar']:.3f} / "
            f"{row['active_median_error_a_at_bar']:.3f} / {row['active_p90_error_a_at_bar']:.3f} | "
            f"{row['active_error_B_at_bar']:.3f} / {row['active_median_error_B_at_bar']:.3f} / "
            f"{row['active_p90_error_B_at_bar']:.3f} | "
            f"{row['final_posterior_spread_mean']:.3f} vs {row['final_error_mean']:.3f} "
            f"({row['active_budget']} answers) |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------
# Noisy simulated humans: agreement with the true preference
# ------------------------------------------------------------------------------------------------------


def _equal_weights(k: int) -> QuadraticMetric:
    return QuadraticMetric(np.ones(k), -np.ones((k, k)))


def bench_noisy(classes: list[int], betas: list[float], trials: int, seed: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for beta in betas:
        for k in classes:
            sphere = Sphere.around_uniform(k, RADIUS)
            accuracy = LinearMetric(np.full(k, 1.0 / k))
            equal = _equal_weights(k)
            rows: dict[str, list[float]] = {
                key: []
                for key in (
                    "active",
                    "person",
                    "qpme",
                    "accuracy",
                    "equal_weights",
                    "active_error_a",
                    "active_error_B",
                    "wrong_answers",
                    "qpme_answers",
                    "qpme_failures",
                )
            }
            curve = np.zeros(NOISY_ANSWERS + 1)
            for t in range(trials):
                trial_seed = seed + 7919 * t + 31 * k + int(beta)
                metric = random_quadratic_metric(np.random.default_rng(trial_seed), k)
                first, second = sample_query_pairs(
                    sphere, AGREEMENT_PAIRS, np.random.default_rng(trial_seed + 1)
                )
                oracle = LogisticOracle(metric, beta, rng=np.random.default_rng(trial_seed + 2))
                elicitor = active_quadratic(sphere, seed=trial_seed, max_queries=NOISY_ANSWERS, tolerance=0.0)
                query = next(elicitor)
                curve[0] += _agreement(metric, elicitor.current_metric(), first[:200], second[:200])
                n = 0
                try:
                    while True:
                        query = elicitor.send(oracle(query.first, query.second))
                        n += 1
                        if n % 10 == 0:
                            curve[n] += _agreement(
                                metric, elicitor.current_metric(), first[:200], second[:200]
                            )
                except StopIteration as stop:
                    elicited = stop.value.metric
                rows["wrong_answers"].append(oracle.wrong_answers)
                rows["active"].append(_agreement(metric, elicited, first, second))
                curve[NOISY_ANSWERS] += _agreement(metric, elicited, first[:200], second[:200])
                ea, eb = _errors(metric, elicited)
                rows["active_error_a"].append(ea)
                rows["active_error_B"].append(eb)
                gaps = np.array([metric.value_gap(r1, r2) for r1, r2 in zip(first, second, strict=True)])
                rows["person"].append(float(np.mean(1.0 / (1.0 + np.exp(-beta * gaps)))))
                qpme_oracle = LogisticOracle(metric, beta, rng=np.random.default_rng(trial_seed + 3))
                try:
                    qpme_result = run(qpme(sphere, QPME_EPSILON), qpme_oracle)
                    rows["qpme"].append(_agreement(metric, qpme_result.metric, first, second))
                    rows["qpme_answers"].append(qpme_result.num_queries)
                except ElicitationError as exc:
                    # A run the noise derailed into an error counts as coin flipping (and is counted).
                    print(f"qpme failed (k={k}, beta={beta}): {exc!r}", file=sys.stderr)
                    rows["qpme"].append(0.5)
                    rows["qpme_failures"].append(1.0)
                rows["accuracy"].append(_agreement(metric, accuracy, first, second))
                rows["equal_weights"].append(_agreement(metric, equal, first, second))
            summary = {key: float(np.mean(values)) if values else None for key, values in rows.items()}
            summary["trials"] = trials
            summary["qpme_failures"] = len(rows["qpme_failures"])
            summary["active_min"] = float(np.min(rows["active"]))
            summary["agreement_curve_every_10"] = [
                float(curve[i] / trials) for i in range(0, NOISY_ANSWERS + 1, 10)
            ]
            results[f"beta={beta:g},k={k}"] = summary
            print(f"noisy beta={beta:g} k={k}: done", file=sys.stderr, flush=True)
    return results


def table_noisy(results: dict[str, Any]) -> str:
    lines = [
        "| setting | trials | active (50 answers) | min | person's own answers | QPME (full budget, answers) "
        "| accuracy | equal weights | wrong answers / 50 | active err a / B |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in results.items():
        lines.append(
            f"| {name} | {row['trials']} | {row['active']:.3f} | {row['active_min']:.3f} | "
            f"{row['person']:.3f} | "
            f"{row['qpme']:.3f} ({row['qpme_answers'] or 0:.0f}) | {row['accuracy']:.3f} | "
            f"{row['equal_weights']:.3f} | {row['wrong_answers']:.1f} | "
            f"{row['active_error_a']:.3f} / {row['active_error_B']:.3f} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------
# Fair metrics: fair QPME versus the active elicitor
# ------------------------------------------------------------------------------------------------------


def bench_fair(settings: list[tuple[int, int]], trials: int, seed: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for k, m in settings:
        sphere = Sphere.around_uniform(k, RADIUS)
        for oracle_name in ("exact", "logistic beta=200"):
            rows: dict[str, list[float]] = {
                key: []
                for key in (
                    "qpme_answers",
                    "qpme_a",
                    "qpme_B_pairs",
                    "qpme_lam",
                    "qpme_agreement",
                    "active_answers",
                    "active_a",
                    "active_B_pairs",
                    "active_lam",
                    "active_agreement",
                )
            }
            failures = 0
            for t in range(trials):
                trial_seed = seed + 104729 * t + 101 * k + m
                metric = random_fair_metric(np.random.default_rng(trial_seed), k, m)
                first, second = sample_query_pairs(
                    sphere, AGREEMENT_PAIRS, np.random.default_rng(trial_seed + 1), n_groups=m
                )

                def oracle(
                    offset: int, metric: Any = metric, trial_seed: int = trial_seed, name: str = oracle_name
                ) -> Any:
                    if name == "exact":
                        return ExactOracle(metric)
                    return LogisticOracle(metric, 200.0, rng=np.random.default_rng(trial_seed + offset))

                try:
                    result = run(fair_qpme(sphere, groups=m, tau=metric.tau, epsilon=QPME_EPSILON), oracle(2))
                    errors = elicitation_errors(metric, result.metric)
                    rows["qpme_answers"].append(result.num_queries)
                    rows["qpme_a"].append(errors.a)
                    rows["qpme_B_pairs"].append(float(errors.B_pairs or 0.0))
                    rows["qpme_lam"].append(float(errors.lam or 0.0))
                    rows["qpme_agreement"].append(_agreement(metric, result.metric, first, second))
                except ElicitationError as exc:
                    print(f"fair_qpme failed ({k}, {m}, {oracle_name}): {exc!r}", file=sys.stderr)
                    failures += 1
                beta = None if oracle_name == "exact" else DEFAULT_BETA_GRID
                active = run(
                    active_fair(sphere, tau=metric.tau, seed=trial_seed, beta=beta, tolerance=0.0), oracle(3)
                )
                errors = elicitation_errors(metric, active.metric)
                rows["active_answers"].append(active.num_queries)
                rows["active_a"].append(errors.a)
                rows["active_B_pairs"].append(float(errors.B_pairs or 0.0))
                rows["active_lam"].append(float(errors.lam or 0.0))
                rows["active_agreement"].append(_agreement(metric, active.metric, first, second))
            summary: dict[str, Any] = {key: float(np.mean(v)) if v else None for key, v in rows.items()}
            summary["trials"] = trials
            summary["qpme_failures"] = failures
            results[f"k={k},m={m},{oracle_name}"] = summary
            print(f"fair k={k} m={m} {oracle_name}: done", file=sys.stderr, flush=True)
    return results


def table_fair(results: dict[str, Any]) -> str:
    def cell(row: dict[str, Any], prefix: str) -> str:
        if row[f"{prefix}_answers"] is None:
            return "failed"
        return (
            f"{row[f'{prefix}_answers']:.0f} / {row[f'{prefix}_a']:.3f} / {row[f'{prefix}_B_pairs']:.3f} / "
            f"{row[f'{prefix}_lam']:.3f} / {row[f'{prefix}_agreement']:.3f}"
        )

    lines = [
        "| setting | trials | fair QPME: answers / err a / err B^{uv} / err lam / agreement | "
        "active (default budget): same | QPME failures |",
        "|---|---|---|---|---|",
    ]
    for name, row in results.items():
        lines.append(
            f"| {name} | {row['trials']} | {cell(row, 'qpme')} | {cell(row, 'active')} | "
            f"{row['qpme_failures']} |"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------
# Latency
# ------------------------------------------------------------------------------------------------------


def bench_timing(k: int, runs: int, seed: int) -> dict[str, Any]:
    sphere = Sphere.around_uniform(k, RADIUS)
    steps: list[float] = []
    cpu_steps: list[float] = []
    firsts: list[float] = []
    replays: list[float] = []
    replay_cpu: list[float] = []
    for t in range(runs):
        metric = random_quadratic_metric(np.random.default_rng(seed + t), k)
        oracle = LogisticOracle(metric, 200.0, rng=np.random.default_rng(seed + 100 + t))
        elicitor = active_quadratic(sphere, seed=seed + t, max_queries=NOISY_ANSWERS, tolerance=0.0)
        start = time.perf_counter()
        query = next(elicitor)
        firsts.append(time.perf_counter() - start)
        answers = []
        try:
            while True:
                answer = oracle(query.first, query.second)
                answers.append(answer)
                start, cpu = time.perf_counter(), time.process_time()
                query = elicitor.send(answer)
                steps.append(time.perf_counter() - start)
                cpu_steps.append(time.process_time() - cpu)
        except StopIteration:
            steps.append(time.perf_counter() - start)
            cpu_steps.append(time.process_time() - cpu)
        start, cpu = time.perf_counter(), time.process_time()
        state = replay(
            active_quadratic(sphere, seed=seed + t, max_queries=NOISY_ANSWERS + 1, tolerance=0.0), answers
        )
        replays.append(time.perf_counter() - start)
        replay_cpu.append(time.process_time() - cpu)
        assert isinstance(state, Pending)
    ms = np.array(steps) * 1000.0
    cpu_ms = np.array(cpu_steps) * 1000.0
    return {
        "k": k,
        "runs": runs,
        "answers_per_run": NOISY_ANSWERS,
        "first_query_ms_mean": float(np.mean(firsts) * 1000.0),
        "step_ms_p50": float(np.percentile(ms, 50)),
        "step_ms_p90": float(np.percentile(ms, 90)),
        "step_ms_p99": float(np.percentile(ms, 99)),
        "step_ms_max": float(np.max(ms)),
        # CPU time of this (single-threaded) process: what a step costs on an idle core.
        "step_cpu_ms_p50": float(np.percentile(cpu_ms, 50)),
        "step_cpu_ms_p99": float(np.percentile(cpu_ms, 99)),
        "step_cpu_ms_max": float(np.max(cpu_ms)),
        "replay_50_answers_s_mean": float(np.mean(replays)),
        "replay_50_answers_s_max": float(np.max(replays)),
        "replay_50_answers_cpu_s_mean": float(np.mean(replay_cpu)),
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "load_average_1min": os.getloadavg()[0],
    }


def table_timing(result: dict[str, Any]) -> str:
    return (
        "| k | runs x answers | first query (ms) | step wall p50 / p90 / p99 / max (ms) "
        "| step CPU p50 / p99 / max (ms) "
        "| replay 50 answers (wall s, mean / max; CPU s) | load avg |\n|---|---|---|---|---|---|---|\n"
        f"| {result['k']} | {result['runs']} x {result['answers_per_run']} | "
        f"{result['first_query_ms_mean']:.0f} | "
        f"{result['step_ms_p50']:.0f} / {result['step_ms_p90']:.0f} / {result['step_ms_p99']:.0f} / "
        f"{result['step_ms_max']:.0f} | {result['step_cpu_ms_p50']:.0f} / {result['step_cpu_ms_p99']:.0f} / "
        f"{result['step_cpu_ms_max']:.0f} | {result['replay_50_answers_s_mean']:.2f} / "
        f"{result['replay_50_answers_s_max']:.2f}; {result['replay_50_answers_cpu_s_mean']:.2f} | "
        f"{result['load_average_1min']:.1f} |"
    )


def _figure(exact: dict[str, Any], path: Path) -> None:
    import plotly.graph_objects as go

    figure = go.Figure()
    for k, row in exact.items():
        answers = list(range(len(row["curve_a"])))
        figure.add_trace(go.Scatter(x=answers, y=row["curve_a"], name=f"active ||a - a_hat||, k={k}"))
        figure.add_trace(go.Scatter(x=answers, y=row["curve_B"], name=f"active ||B - B_hat||_F, k={k}"))
        qpme_b = row["targets"]["qpme (paper settings)"]["error_B"]
        figure.add_hline(y=qpme_b, line_dash="dash", annotation_text=f"QPME (paper settings) B, k={k}")
    figure.update_layout(
        title="Active elicitor, exact oracle: mean error versus answers (dashed: QPME's mean B error)",
        xaxis_title="answers",
        yaxis_title="error",
        yaxis_type="log",
    )
    figure.write_html(str(path), include_plotlyjs=True)


#: The sections `run_efficiency` knows, in the order they run.
SECTIONS = ("exact", "noisy", "fair", "timing")


def run_efficiency(
    sections: list[str] | tuple[str, ...] = SECTIONS,
    *,
    classes: list[int] | tuple[int, ...] = (2, 3, 4, 5),
    betas: list[float] | tuple[float, ...] = (50.0, 200.0),
    trials: int | None = None,
    seed: int = 0,
    quick: bool = False,
    budget_factor: float = 1.25,
    output: Path | None = None,
    out: Any = None,
) -> dict[str, Any]:
    """Run the chosen sections, print their Markdown tables to ``out`` and optionally write ``output``.

    Returns the report (one entry per section, plus ``trials`` and ``seed``); with ``output`` it is also
    written as ``efficiency.json`` next to ``efficiency_errors.html`` (when ``exact`` ran). Default trials:
    `EXACT_TRIALS` metrics per k in ``exact``, 10 elsewhere (5 people / fair metrics per setting); ``quick``:
    two trials and the small fair settings. Raises `ValueError` for an unknown section or bad counts.
    """
    stream = sys.stdout if out is None else out
    unknown = [name for name in sections if name not in SECTIONS]
    if unknown or not sections:
        raise ValueError(f"sections must be some of {', '.join(SECTIONS)}, got {list(sections)}")
    if trials is not None and trials < 1:
        raise ValueError(f"trials must be at least 1, got {trials}")
    bad = [k for k in classes if k not in PAPER_QPME_ANSWERS]
    if bad or not classes:
        raise ValueError(f"classes must be among {sorted(PAPER_QPME_ANSWERS)}, got {list(classes)}")
    count = trials or (2 if quick else 10)
    report: dict[str, Any] = {"trials": count, "seed": seed}
    if "exact" in sections:
        exact_trials = trials or (2 if quick else EXACT_TRIALS)
        report["exact"] = bench_exact(list(classes), exact_trials, seed, budget_factor)
        stream.write("\n## Exact oracle\n\n" + table_exact(report["exact"]) + "\n")
    if "noisy" in sections:
        report["noisy"] = bench_noisy(list(classes), list(betas), max(1, count // 2), seed)
        stream.write("\n## Logistic simulated humans, 50 answers\n\n" + table_noisy(report["noisy"]) + "\n")
    if "fair" in sections:
        settings = [(2, 2), (3, 2)] if quick else [(2, 2), (3, 2), (3, 3)]
        report["fair"] = bench_fair(settings, max(1, count // 2), seed)
        stream.write("\n## Fair metrics\n\n" + table_fair(report["fair"]) + "\n")
    if "timing" in sections:
        report["timing"] = bench_timing(5, 2 if quick else 6, seed)
        stream.write("\n## Latency\n\n" + table_timing(report["timing"]) + "\n")
    stream.flush()
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
        (output / "efficiency.json").write_text(json.dumps(report, indent=2))
        if "exact" in report:
            _figure(report["exact"], output / "efficiency_errors.html")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("sections", nargs="*", default=list(SECTIONS))
    parser.add_argument("--classes", default="2,3,4,5")
    parser.add_argument("--betas", default="50,200")
    parser.add_argument("--trials", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--budget-factor", type=float, default=1.25, help="exact: active budget / bar")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        run_efficiency(
            args.sections,
            classes=[int(value) for value in args.classes.split(",")],
            betas=[float(value) for value in args.betas.split(",")],
            trials=args.trials,
            seed=args.seed,
            quick=args.quick,
            budget_factor=args.budget_factor,
            output=args.output,
        )
    except ValueError as exc:
        parser.error(str(exc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
