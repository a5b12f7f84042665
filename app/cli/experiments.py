"""The `elicit simulate`, `elicit benchmark` and `elicit replay` subcommands (the algorithm side of the CLI).

`register(subparsers)` adds them to the `elicit` parser of `app.cli`; each sets ``func`` to a handler that
takes the parsed namespace and returns the exit code: 0 success, 1 the run failed (numerical failure or a
replay mismatch), 2 bad input (also argparse's code for unusable flags). The experiments themselves live in
`elicitation.lab`; this module parses, prints tables and writes files.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import inspect
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from elicitation import (
    Done,
    ElicitationError,
    InvalidConfigError,
    Metric,
    NumericalError,
    ReplayMismatchError,
)
from elicitation.catalogue import ALGORITHMS as CATALOGUE
from elicitation.families import GENERATORS, family_of
from elicitation.lab.benchmarks import (
    DEFAULT_TRIALS,
    FAIR_SETTINGS,
    NOISE_INNER_RADII,
    NOISE_LEVELS,
    QPME_CLASSES,
    Progress,
    run_fair_benchmark,
    run_noise_benchmark,
    run_qpme_benchmark,
)
from elicitation.lab.figures import benchmark_figures
from elicitation.lab.log_replay import answer_log, replay_log
from elicitation.lab.simulation import (
    ALGORITHM_DESCRIPTIONS,
    ALGORITHMS,
    DEFAULT_EPSILON,
    DEFAULT_RADIUS,
    NOISE_MODELS,
    Simulation,
    build_elicitor,
    simulate,
)
from elicitation.lab.spaces import space_from_dict
from elicitation.lab.timing import measure_timing

from ..algorithms import UnknownAlgorithmError, get_algorithm
from ..codec import CodecError, decode_metric, encode_metric, to_jsonable
from ..json_input import JSONInputError, decode_json
from ..metric_views import rate_text, text_lines
from ..sessions.displayed import build_session_elicitor
from ..sessions.replay import numeric_platform

__all__ = [
    "BENCHMARKS",
    "ProgressBar",
    "build_parser",
    "format_table",
    "main",
    "register",
    "simulation_to_dict",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

#: Benchmarks `elicit benchmark` knows; "all" runs every available one in this order.
BENCHMARKS = ("qpme", "fair", "noise", "timing", "ranking")
#: The `--quick` subset (CI): few trials, small k.
QUICK: dict[str, Any] = {
    "trials": 3,
    "classes": (2, 3),
    "settings": ((2, 2), (3, 2)),
    "noise_classes": (2,),
    "inner_radii": (0.005, 0.05),
    "noise_levels": (0.0, 1e-3),
    "ranking_trials": 2,
    "ranking_datasets": ("breast-cancer",),
    # Smaller classifier pools for the ranking benchmark (keyword arguments of run_ranking_benchmark).
    "ranking_pool": {"per_family": 3, "train_rows": 500, "test_rows": 1000},
}
_ERROR_NAMES = {"a": "‖a−â‖₂", "B": "‖B−B̂‖_F", "B_pairs": "Σ‖Bᵘᵛ−B̂ᵘᵛ‖_F", "lam": "|λ−λ̂|", "C": "‖C−Ĉ‖_F"}


# ----------------------------------------------------------------------------------------------------------
# argparse types: each names the rule; argparse adds the flag name and exits with code 2
# ----------------------------------------------------------------------------------------------------------


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum or (maximum is not None and value > maximum):
            allowed = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
            raise argparse.ArgumentTypeError(f"must be an integer {allowed}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def _open_interval(low: float, high: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = _number(text)
        if not low < value < high:
            raise argparse.ArgumentTypeError(f"must lie in ({low:g}, {high:g}), got {value:g}")
        return value

    parse.__name__ = "number"
    return parse


def _non_negative(text: str) -> float:
    value = _number(text)
    if value < 0.0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value:g}")
    return value


def _list_of(item: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    def parse(text: str) -> tuple[Any, ...]:
        parts = [part.strip() for part in text.split(",") if part.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("expected a comma-separated list, got nothing")
        return tuple(item(part) for part in parts)

    parse.__name__ = "list"
    return parse


def _group_setting(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not of the form KxM (e.g. 3x2)")
    k = _int_at_least(2, 10)(parts[0])
    m = _int_at_least(2, 10)(parts[1])
    return k, m


_classes = _int_at_least(2, 10)


# ----------------------------------------------------------------------------------------------------------
# Output helpers
# ----------------------------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return "-"
        return f"{value:.{digits}f}" if abs(value) < 1000 else f"{value:.0f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, markdown: bool = False) -> str:
    """A plain-text (right-aligned) or Markdown table; floats get four decimals, None a dash."""
    cells = [[_fmt(cell) for cell in row] for row in rows]
    if markdown:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" for _ in headers) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in cells]
        return "\n".join(lines)
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


class ProgressBar:
    """A dependency-free text progress bar on ``stream`` (stderr); ``__call__(done, total, label)``.

    On a terminal it redraws one line (at most ten times a second); otherwise it prints a line at every
    tenth of the work, so CI logs stay short. ``done == 1`` starts a new run (resets the clock).
    """

    def __init__(self, stream: TextIO, width: int = 30, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.width = width
        self.clock = clock
        self.start = clock()
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self._last_decile = -1
        self._last_draw = -math.inf

    def __call__(self, done: int, total: int, label: str) -> None:
        if done <= 1:
            self.start = self.clock()
            self._last_decile = -1
        fraction = done / total if total else 1.0
        filled = round(self.width * fraction)
        elapsed = self.clock() - self.start
        eta = elapsed / done * (total - done) if done else 0.0
        text = (
            f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {label}  "
            f"{elapsed:.0f}s elapsed, ~{eta:.0f}s left"
        )
        if self.tty:
            now = self.clock()
            if done == total or now - self._last_draw > 0.1:
                self._last_draw = now
                self.stream.write("\r" + text.ljust(100))
                if done == total:
                    self.stream.write("\n")
                self.stream.flush()
            return
        decile = int(10 * fraction)
        if decile != self._last_decile or done == total:
            self._last_decile = decile
            self.stream.write(text + "\n")
            self.stream.flush()


# ----------------------------------------------------------------------------------------------------------
# simulate
# ----------------------------------------------------------------------------------------------------------


def _add_simulate(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "simulate",
        help="run one elicitation against a simulated oracle",
        description=(
            "Run one elicitation against a simulated oracle on the synthetic sphere of the paper's "
            "Section 6 (centre o = (1/k, ..., 1/k)), printing every query or, with --json, the full result."
        ),
        epilog="algorithms:\n"
        + "\n".join(f"  {name:<14} {text}" for name, text in ALGORITHM_DESCRIPTIONS.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--algorithm", choices=ALGORITHMS, default="qpme", help="elicitor (qpme)")
    parser.add_argument(
        "--classes", type=_classes, default=3, metavar="K", help="number of classes k, 2-10 (default 3)"
    )
    parser.add_argument(
        "--groups", type=_int_at_least(2, 10), default=2, metavar="M", help="groups m for fair_qpme/tradeoff"
    )
    parser.add_argument(
        "--epsilon",
        type=_open_interval(0.0, 1.0),
        default=None,
        help="search tolerance in (0, 1) (default 0.01; cubic_qpme 1e-4)",
    )
    parser.add_argument(
        "--radius", type=_open_interval(0.0, 0.5), default=DEFAULT_RADIUS, help="query sphere radius"
    )
    parser.add_argument(
        "--inner-radius",
        type=_open_interval(0.0, 0.5),
        default=None,
        help="QPME's small-sphere radius varrho, below --radius (default: the algorithm's)",
    )
    parser.add_argument("--noise", choices=NOISE_MODELS, default="exact", help="oracle model")
    parser.add_argument(
        "--noise-level",
        type=_non_negative,
        default=None,
        help="eps_Omega >= 0 for --noise threshold (default 1e-3); beta > 0 for logistic (default 1000)",
    )
    parser.add_argument("--seed", type=_int_at_least(0), default=0, help="seed of the metric and oracle")
    parser.add_argument("--metric", type=Path, default=None, metavar="FILE.json", help="known metric")
    parser.add_argument(
        "--family",
        choices=GENERATORS,
        default=None,
        help="random metric generator: authors (the published code's, default) or wishart (generic "
        "curvature, gradient entries over two orders of magnitude; quadratic and fair metrics)",
    )
    parser.add_argument(
        "--reconstruction", choices=("signed", "lstsq", "closed_form"), default="signed", help="QPME"
    )
    parser.add_argument("--json", action="store_true", help="print the full result as JSON")
    parser.add_argument(
        "--export-log", type=Path, default=None, metavar="FILE.json", help="write the answer log for replay"
    )
    parser.set_defaults(func=_run_simulate, parser=parser)


def _noise_level(args: argparse.Namespace, parser: argparse.ArgumentParser) -> float:
    level: float | None = args.noise_level
    if args.noise == "exact":
        if level not in (None, 0.0):
            parser.error("argument --noise-level: only applies to --noise threshold or logistic")
        return 0.0
    if args.noise == "threshold":
        return 1e-3 if level is None else level
    if level is not None and level <= 0.0:
        parser.error(f"argument --noise-level: the logistic beta must be > 0, got {level:g}")
    return 1000.0 if level is None else level


def _load_metric(path: Path, parser: argparse.ArgumentParser) -> Metric:
    try:
        data = decode_json(path.read_bytes())
    except OSError as exc:
        parser.error(f"argument --metric: cannot read {path}: {exc.strerror or exc}")
    except JSONInputError as exc:
        parser.error(f"argument --metric: {path} {exc}")
    try:
        return decode_metric(data)
    except CodecError as exc:
        parser.error(f"argument --metric: {exc}")


def _print_steps(sim: Simulation, out: TextIO) -> None:
    out.write(
        f"{sim.algorithm} with k={sim.params['n_classes']}"
        + (f", m={sim.params['n_groups']}" if "n_groups" in sim.params else "")
        + f", radius {sim.params['radius']:g}, epsilon {sim.params['epsilon']:g}"
        + (f", inner radius {sim.inner_radius:g}" if sim.inner_radius is not None else "")
        + f"; {sim.noise} oracle"
        + (f" (level {sim.noise_level:g})" if sim.noise != "exact" else "")
        + f"; seed {sim.seed}\n"
    )
    out.write("true metric:\n" + "\n".join(text_lines(sim.metric)) + "\n\n")
    width = max((len(rate_text(query.first)) for query, _ in sim.result.log[:1]), default=10)
    label = max((len(query.search) for query, _ in sim.result.log), default=6)
    out.write(
        f"{'#':>5}  {'search':<{label}}  {'kind':<8} {'coord':>5}  {'first':<{width}}  {'second':<{width}}  "
        "answer\n"
    )
    for index, (query, answer) in enumerate(sim.result.log, start=1):
        coordinate = "-" if query.coordinate is None else str(query.coordinate)
        out.write(
            f"{index:>5}  {query.search:<{label}}  {query.kind:<8} {coordinate:>5}  "
            f"{rate_text(query.first):<{width}}  {rate_text(query.second):<{width}}  "
            f"{'first' if answer else 'second'}\n"
        )
    out.write("\nelicited metric:\n" + "\n".join(text_lines(sim.result.metric)) + "\n")
    errors = "  ".join(f"{_ERROR_NAMES.get(name, name)} = {value:.4g}" for name, value in sim.errors.items())
    out.write(f"errors: {errors}\n")
    regular = {None: "n/a", True: "satisfied", False: "VIOLATED"}[sim.regular]
    out.write(
        f"queries: {sim.result.num_queries}; wrong answers: {sim.wrong_answers}; "
        f"regularity (Assumption 3): {regular}\n"
    )


def simulation_to_dict(sim: Simulation) -> dict[str, Any]:
    """The `--json` document of `elicit simulate`."""
    return {
        "algorithm": sim.algorithm,
        "params": to_jsonable(sim.params),
        "seed": sim.seed,
        "noise": sim.noise,
        "noise_level": sim.noise_level,
        "inner_radius": sim.inner_radius,
        "true_metric": encode_metric(sim.metric),
        "elicited_metric": encode_metric(sim.result.metric),
        "errors": to_jsonable(sim.errors),
        "num_queries": sim.result.num_queries,
        "wrong_answers": sim.wrong_answers,
        "regular": sim.regular,
        "details": to_jsonable(sim.result.details),
        "log": answer_log(sim)["answers"],
    }


def _flag_for(message: str, metric_given: bool) -> str:
    """The flag a core validation message is about, so errors name what the user typed."""
    for word, flag in (("inner_radius", "--inner-radius"), ("radius", "--radius"), ("epsilon", "--epsilon")):
        if word in message:
            return f"argument {flag}"
    return "argument --metric" if metric_given else "invalid configuration"


def _check_family(
    args: argparse.Namespace, parser: argparse.ArgumentParser, families: Sequence[Any], what: str
) -> None:
    """Exit with a usage error when ``--family`` names a generator one of ``families`` does not offer."""
    if args.family is None:
        return
    for family in families:
        if args.family not in family.generators:
            parser.error(
                f"argument --family: {what} draws {family.name} metrics, whose generators are "
                f"{', '.join(family.generators)}; {args.family!r} is not one of them"
            )


def _run_simulate(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    level = _noise_level(args, parser)
    if args.inner_radius is not None and args.inner_radius >= args.radius:
        parser.error(f"argument --inner-radius: must be smaller than --radius ({args.radius:g})")
    _check_family(args, parser, [CATALOGUE[args.algorithm].family], args.algorithm)
    if args.family is not None and args.metric is not None:
        parser.error("argument --family: draws a random metric; it cannot be combined with --metric")
    metric = None if args.metric is None else _load_metric(args.metric, parser)
    if metric is not None:
        groups = family_of(metric).n_groups(metric)
        if groups is not None:
            args.groups = groups
        n_rates = int(getattr(metric, "n_classes", args.classes))
        to_classes = CATALOGUE[args.algorithm].classes_from_rates
        try:
            args.classes = n_rates if to_classes is None else to_classes(n_rates)
        except InvalidConfigError as exc:
            parser.error(f"argument --metric: {exc}")
    if args.radius > 1.0 / args.classes:
        parser.error(
            "argument --radius: the sphere around o = 1/k must stay in [0, 1]^k, so --radius must be at "
            f"most 1/{args.classes} = {1.0 / args.classes:.4g} for k = {args.classes}"
        )
    try:
        sim = simulate(
            args.algorithm,
            n_classes=args.classes,
            n_groups=args.groups,
            epsilon=args.epsilon,
            radius=args.radius,
            inner_radius=args.inner_radius,
            noise=args.noise,
            noise_level=level,
            seed=args.seed,
            metric=metric,
            reconstruction=args.reconstruction,
            generator=args.family or "authors",
        )
    except InvalidConfigError as exc:
        parser.error(f"{_flag_for(str(exc), metric is not None)}: {exc}")
    except NumericalError as exc:
        sys.stderr.write(f"elicit simulate: the elicitation failed: {type(exc).__name__}: {exc}\n")
        return EXIT_FAILED
    if args.export_log is not None:
        _write_json(args.export_log, answer_log(sim) | {"true_metric": encode_metric(sim.metric)})
    if args.json:
        sys.stdout.write(json.dumps(simulation_to_dict(sim), indent=2) + "\n")
    else:
        try:
            _print_steps(sim, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:
            # `elicit simulate | head`: the reader left; silence the interpreter's flush at exit too.
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
            return EXIT_OK
        if args.export_log is not None:
            sys.stdout.write(f"answer log written to {args.export_log}\n")
    return EXIT_OK


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_jsonable(data), indent=1) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------------------------------------
# replay
# ----------------------------------------------------------------------------------------------------------


def _add_replay(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay an exported answer log offline",
        description=(
            "Rebuild an elicitation from an exported answer log (docs/benchmarks.md), checking every logged "
            "query against the regenerated one, and print where it stands: the result or the pending query."
        ),
    )
    parser.add_argument(
        "file", type=Path, metavar="FILE", help="answer log (elicit simulate --export-log, or a study export)"
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(func=_run_replay, parser=parser)


def _build_for_replay(algorithm: str, document: Mapping[str, Any]) -> Any:
    """Study exports carry a query space and the app registry's params; simulations only their params."""
    if "space" not in document:
        return build_elicitor(algorithm, document["params"])
    try:
        spec = get_algorithm(algorithm)
    except UnknownAlgorithmError as exc:
        raise InvalidConfigError(str(exc.args[0])) from None
    return build_session_elicitor(
        spec,
        space_from_dict(document["space"]),
        document.get("params"),
        seed=int(document.get("seed") or 0),
        version=document.get("algorithm_version"),
    )


def _run_replay(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    try:
        document = decode_json(args.file.read_bytes())
    except OSError as exc:
        parser.error(f"argument FILE: cannot read {args.file}: {exc.strerror or exc}")
    except JSONInputError as exc:
        parser.error(f"argument FILE: {args.file} {exc}")
    if not isinstance(document, Mapping):
        parser.error("argument FILE: an answer log must be a JSON object")
    started = time.perf_counter()
    try:
        outcome = replay_log(document, build=_build_for_replay)
    except ReplayMismatchError as exc:
        sys.stderr.write(
            f"elicit replay: REPLAY MISMATCH in {args.file}: {exc}\n"
            "The log does not match what this version of the code asks: it was recorded with another "
            "configuration or algorithm version, on a computer whose numerical library rounds differently "
            f"(the active elicitors' questions depend on it; this one computes with {numeric_platform()}), "
            "or edited.\n"
        )
        return EXIT_FAILED
    except ValueError as exc:  # InvalidConfigError, InvalidAnswerError, pydantic's ValidationError
        parser.error(f"argument FILE: {args.file} is not a usable answer log: {exc}")
    except ElicitationError as exc:
        sys.stderr.write(f"elicit replay: the elicitation failed: {type(exc).__name__}: {exc}\n")
        return EXIT_FAILED
    elapsed_ms = 1e3 * (time.perf_counter() - started)
    payload: dict[str, Any] = {"algorithm": document["algorithm"], "replay_ms": elapsed_ms}
    if isinstance(outcome, Done):
        result = outcome.result
        payload.update(
            status="done",
            answers=len(result.log),
            num_queries=result.num_queries,
            metric=encode_metric(result.metric),
        )
        true_metric = document.get("true_metric")
        if true_metric is not None:
            from elicitation.evaluation import elicitation_errors

            errors = elicitation_errors(decode_metric(true_metric), result.metric)
            payload["errors"] = {k: v for k, v in to_jsonable(errors).items() if v is not None}
    else:
        payload.update(
            status="pending",
            answers=outcome.n_answered,
            next_query={
                "first": outcome.query.first.tolist(),
                "second": outcome.query.second.tolist(),
                "search": outcome.query.search,
                "kind": outcome.query.kind,
            },
            max_queries=outcome.elicitor.max_queries,
        )
    if args.json:
        sys.stdout.write(json.dumps(to_jsonable(payload), indent=2) + "\n")
        return EXIT_OK
    out = sys.stdout
    out.write(f"replayed {payload['answers']} answers of {payload['algorithm']} in {elapsed_ms:.1f} ms; ")
    if isinstance(outcome, Done):
        out.write(f"finished after {outcome.result.num_queries} queries; every logged query matched.\n")
        out.write("elicited metric:\n" + "\n".join(text_lines(outcome.result.metric)) + "\n")
        if "errors" in payload:
            out.write("errors against the log's true metric: ")
            out.write("  ".join(f"{_ERROR_NAMES.get(k, k)} = {v:.4g}" for k, v in payload["errors"].items()))
            out.write("\n")
    else:
        out.write("the elicitation is still running; every logged query matched.\n")
        query = outcome.query
        out.write(
            f"next query ({query.search}, {query.kind}): first {rate_text(query.first)} "
            f"vs second {rate_text(query.second)}\n"
        )
    return EXIT_OK


# ----------------------------------------------------------------------------------------------------------
# benchmark
# ----------------------------------------------------------------------------------------------------------


def _add_benchmark(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "benchmark",
        help="reproduce the paper's Section 6 experiments",
        description=(
            "Reproduce the paper's Section 6 experiments on simulated oracles: qpme (Figure 3a-b, "
            "Table 4), fair (Figure 3c-e, Table 4), noise (inner radius x Definition 4 noise), timing (cost "
            "of the next query and of replaying a 2,000-answer log), ranking (Appendix H) or all of them."
        ),
    )
    parser.add_argument(
        "which",
        choices=(*BENCHMARKS, "all", "efficiency"),
        help="which experiment (efficiency: the active elicitor versus QPME; not part of all)",
    )
    parser.add_argument("--trials", type=_int_at_least(1), default=None, help="metrics per setting (100)")
    parser.add_argument("--quick", action="store_true", help="a small subset for CI: 3 trials, small k")
    parser.add_argument("--seed", type=_int_at_least(0), default=0, help="master seed (default 0)")
    parser.add_argument("--classes", type=_list_of(_classes), default=None, help="k values, e.g. 2,3,4,5")
    parser.add_argument(
        "--settings", type=_list_of(_group_setting), default=None, help="fair (k, m) settings, e.g. 2x2,3x2"
    )
    parser.add_argument(
        "--epsilon", type=_open_interval(0.0, 1.0), default=DEFAULT_EPSILON, help="tolerance (0.01)"
    )
    parser.add_argument(
        "--radius", type=_open_interval(0.0, 0.5), default=DEFAULT_RADIUS, help="sphere radius (0.2)"
    )
    parser.add_argument(
        "--inner-radius",
        type=_open_interval(0.0, 0.5),
        default=None,
        help="varrho (default: the algorithm's)",
    )
    parser.add_argument(
        "--reconstruction", choices=("signed", "lstsq", "closed_form"), default="signed", help="QPME"
    )
    parser.add_argument(
        "--family",
        choices=GENERATORS,
        default=None,
        help="random metric generator for qpme, fair and noise: authors (the published code's, default) "
        "or wishart (generic metrics: Wishart curvature, gradient entries over two orders of magnitude)",
    )
    parser.add_argument(
        "--inner-radii", type=_list_of(_open_interval(0.0, 0.5)), default=None, help="noise grid varrho"
    )
    parser.add_argument(
        "--noise-levels", type=_list_of(_non_negative), default=None, help="noise grid eps_Omega values"
    )
    parser.add_argument("--datasets", type=_list_of(str), default=None, help="ranking datasets (default all)")
    parser.add_argument(
        "--output", type=Path, default=None, metavar="DIR", help="write JSON, tables, figures"
    )
    parser.add_argument(
        "--sections",
        type=_list_of(str),
        default=None,
        help="efficiency sections, e.g. exact,noisy (default: exact,noisy,fair,timing)",
    )
    parser.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(func=_run_benchmark, parser=parser)


def _error_cells(summary: Mapping[str, Any], name: str) -> list[Any]:
    stats = summary["errors"].get(name)
    if stats is None:
        return [None, None, None]
    return [stats["mean"], stats["median"], stats["p90"]]


def _behaviour_cells(summary: Mapping[str, Any]) -> list[Any]:
    """Mean and minimum agreement on random pairs and Kendall tau on the classifier pool."""
    cells: list[Any] = []
    for measure in ("agreement", "kendall_tau"):
        stats = summary.get(measure)
        cells += [None, None] if stats is None else [stats["mean"], stats["min"]]
    return cells


#: Columns of `_behaviour_cells`.
_BEHAVIOUR_HEADERS = ("agree mean", "agree min", "tau mean", "tau min")


def qpme_table(report: Mapping[str, Any], *, markdown: bool = False) -> str:
    """Table 4 / Figure 3a-b: queries, errors, agreement, Kendall tau and regularity per k."""
    headers = [
        "k", "trials", "queries", "Table 4", "ratio", "q/LB", "a mean", "a median", "a p90", "a paper",
        "B mean", "B median", "B p90", "B paper", *_BEHAVIOUR_HEADERS, "irregular", "tiny d_i", "failed",
    ]  # fmt: skip
    rows = []
    for setting in report["settings"]:
        s = setting["summary"]
        paper = s.get("paper_queries")
        published = s.get("published_errors") or {}
        rows.append(
            [
                setting["n_classes"], s["trials"], s["queries"]["mean"], paper,
                s["queries"]["mean"] / paper if paper else None, s["queries_over_lower_bound"],
                *_error_cells(s, "a"), published.get("a"), *_error_cells(s, "B"), published.get("B"),
                *_behaviour_cells(s), s["regularity_violations"], s["near_zero_gradient"], s["failures"],
            ]
        )  # fmt: skip
    return format_table(headers, rows, markdown=markdown)


def fair_table(report: Mapping[str, Any], *, markdown: bool = False) -> str:
    """Table 4 / Figure 3c-e: queries, the three errors, agreement and Kendall tau per (k, m)."""
    headers = [
        "k", "m", "trials", "queries", "Table 4", "ratio", "q/LB", "a mean", "a median", "a p90",
        "Buv mean", "Buv median", "Buv p90", "lam mean", "lam median", "lam p90", *_BEHAVIOUR_HEADERS,
        "failed",
    ]  # fmt: skip
    rows = []
    for setting in report["settings"]:
        s = setting["summary"]
        paper = s.get("paper_queries")
        rows.append(
            [
                setting["n_classes"], setting["n_groups"], s["trials"], s["queries"]["mean"], paper,
                s["queries"]["mean"] / paper if paper else None, s["queries_over_lower_bound"],
                *_error_cells(s, "a"), *_error_cells(s, "B_pairs"), *_error_cells(s, "lam"),
                *_behaviour_cells(s), s["failures"],
            ]
        )  # fmt: skip
    return format_table(headers, rows, markdown=markdown)


def noise_table(report: Mapping[str, Any], *, markdown: bool = False) -> str:
    """Theorem 1's trade-off: errors over inner radius x eps_Omega."""
    headers = [
        "k", "varrho", "eps_Omega", "queries", "wrong answers", "a mean", "a median", "a p90",
        "B mean", "B median", "B p90", "failed",
    ]  # fmt: skip
    rows = []
    for setting in report["settings"]:
        s = setting["summary"]
        rows.append(
            [
                setting["n_classes"], f"{setting['inner_radius']:g}", f"{setting['noise_level']:g}",
                s["queries"]["mean"], s["wrong_answers"]["mean"], *_error_cells(s, "a"),
                *_error_cells(s, "B"), s["failures"],
            ]
        )  # fmt: skip
    return format_table(headers, rows, markdown=markdown)


#: The clocks `elicit benchmark timing` measures with: wall time is what a participant waits for; the
#: thread's CPU time is what the core itself costs, undisturbed by other processes on a busy machine.
TIMING_CLOCKS: Mapping[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}


def timing_table(report: Mapping[str, Any], *, markdown: bool = False) -> str:
    """Cost of the next query (µs) and of replaying a long log (ms), per clock."""
    headers = ["clock", "measurement", "mean", "median", "p90", "max", "unit"]
    rows: list[list[Any]] = []
    for clock in TIMING_CLOCKS:
        measured = report.get(clock)
        if not measured:
            continue
        for label, stats in measured["next_query"].items():
            name = f"next query, {label} ({stats['queries']:.0f} queries)"
            rows.append([clock, name, stats["mean"], stats["median"], stats["p90"], stats["max"], "µs"])
            if "finish" in stats:  # reports written before the final step was timed apart lack it
                rows.append([clock, f"final metric, {label}", None, stats["finish"], None, None, "µs"])
        replay_case = measured.get("replay") or {}
        if replay_case:
            runs = replay_case["runs_ms"]
            name = (
                f"replay {replay_case['answers']} answers, fair_qpme k={replay_case['n_classes']} "
                f"m={replay_case['n_groups']}"
            )
            rows.append(
                [
                    clock,
                    name,
                    float(np.mean(runs)),
                    replay_case["ms"],
                    float(np.percentile(runs, 90)),
                    max(runs),
                    "ms",
                ]
            )
    return format_table(headers, rows, markdown=markdown)


def ranking_table(report: Mapping[str, Any], *, markdown: bool = False) -> str:
    """The ranking module's own table when it has one, else its numeric summary, one row per leaf."""
    formatter = getattr(_ranking_module(), "format_ranking_table", None)
    if formatter is not None:
        table: str = formatter(report, markdown=markdown)
        return table
    rows: list[list[Any]] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), item)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            rows.append([prefix, float(value)])
        elif isinstance(value, str) and len(value) < 80:
            rows.append([prefix, value])

    walk("", report)
    return format_table(["quantity", "value"], rows, markdown=markdown)


_TABLES: Mapping[str, Callable[..., str]] = {
    "qpme": qpme_table,
    "fair": fair_table,
    "noise": noise_table,
    "timing": timing_table,
    "ranking": ranking_table,
}
_TITLES = {
    "qpme": "QPME on random quadratic metrics (Section 6, Figure 3a-b, Table 4), exact oracle",
    "fair": "Fair QPME on random fair metrics (Section 6, Figure 3c-e, Table 4), exact oracle",
    "noise": "QPME under Definition 4 noise: inner radius varrho x eps_Omega (Theorem 1)",
    "timing": "Live cost of the core",
    "ranking": "Ranking real-world classifiers (Appendix H)",
}


def _title(name: str, report: Mapping[str, Any]) -> str:
    """The benchmark's title, naming the metric generator when it is not the published code's."""
    family = report.get("config", {}).get("family", "authors")
    title = _TITLES.get(name, name)
    return title if family == "authors" else f"{title}, {family} metric generator"


def _ranking_module() -> Any:
    if importlib.util.find_spec("elicitation.lab.ranking") is None:
        return None
    module = importlib.import_module("elicitation.lab.ranking")
    return module if hasattr(module, "run_ranking_benchmark") else None


def _run_one(which: str, args: argparse.Namespace, progress: Progress | None) -> dict[str, Any]:
    quick = args.quick
    trials = args.trials or (QUICK["trials"] if quick else DEFAULT_TRIALS)
    common: dict[str, Any] = {
        "trials": trials,
        "seed": args.seed,
        "epsilon": args.epsilon,
        "radius": args.radius,
        "progress": progress,
    }
    family = args.family or "authors"
    if which == "qpme":
        classes = args.classes or (QUICK["classes"] if quick else QPME_CLASSES)
        return run_qpme_benchmark(
            classes=classes,
            inner_radius=args.inner_radius,
            reconstruction=args.reconstruction,
            family=family,
            **common,
        )
    if which == "fair":
        settings = args.settings or (QUICK["settings"] if quick else FAIR_SETTINGS)
        return run_fair_benchmark(settings=settings, inner_radius=args.inner_radius, family=family, **common)
    if which == "noise":
        return run_noise_benchmark(
            classes=args.classes or (QUICK["noise_classes"] if quick else (3,)),
            inner_radii=args.inner_radii or (QUICK["inner_radii"] if quick else NOISE_INNER_RADII),
            noise_levels=args.noise_levels or (QUICK["noise_levels"] if quick else NOISE_LEVELS),
            family=family,
            **common,
        )
    if which == "timing":
        return {
            "benchmark": "timing",
            **{
                name: measure_timing(clock, seed=args.seed, repeats=2 if quick else 5)
                for name, clock in TIMING_CLOCKS.items()
            },
        }
    module = _ranking_module()
    if module is None:
        raise InvalidConfigError("the ranking benchmark is not available (no elicitation.lab.ranking)")
    datasets = args.datasets or (QUICK["ranking_datasets"] if quick else None)
    ranking_trials = args.trials or (QUICK["ranking_trials"] if quick else DEFAULT_TRIALS)
    accepted = inspect.signature(module.run_ranking_benchmark).parameters
    extra = {key: value for key, value in QUICK["ranking_pool"].items() if quick and key in accepted}
    report: dict[str, Any] = module.run_ranking_benchmark(
        datasets, ranking_trials, args.seed, progress=progress, **extra
    )
    return report if "benchmark" in report else {"benchmark": "ranking", **report}


def _copy_plotly_js(directory: Path) -> None:
    spec = importlib.util.find_spec("plotly")
    if spec is None or spec.origin is None:
        raise InvalidConfigError("plotly is not installed; cannot write figures")
    source = Path(spec.origin).parent / "package_data" / "plotly.min.js"
    target = directory / "plotly.min.js"
    if not target.exists() or target.stat().st_size != source.stat().st_size:
        shutil.copyfile(source, target)


def write_outputs(directory: Path, name: str, report: Mapping[str, Any], table_md: str) -> list[Path]:
    """Write ``{name}.json``, ``{name}.md`` and one HTML file per figure (plotly.min.js copied alongside)."""
    import plotly.io as pio  # type: ignore[import-untyped]

    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / f"{name}.json", directory / f"{name}.md"]
    _write_json(written[0], report)
    written[1].write_text(f"# {_title(name, report)}\n\n{table_md}\n", encoding="utf-8")
    figures = benchmark_figures(report)
    if figures:
        _copy_plotly_js(directory)
        written.append(directory / "plotly.min.js")
    for stem, figure in figures.items():
        # "directory" makes the page load plotly.min.js from its own folder: no CDN, works offline.
        html = pio.to_html(figure, include_plotlyjs="directory", full_html=True, validate=True)
        path = directory / f"{stem}.html"
        path.write_text(html, encoding="utf-8")
        written.append(path)
    return written


def _efficiency_module() -> Any:
    """``benchmarks/efficiency.py`` of this checkout (the benchmarks are scripts, not a package)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "efficiency.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("elicitation_efficiency_benchmark", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_efficiency(args: argparse.Namespace) -> int:
    """`elicit benchmark efficiency`: run ``benchmarks/efficiency.py``'s sections (Markdown tables)."""
    parser: argparse.ArgumentParser = args.parser
    module = _efficiency_module()
    if module is None:
        sys.stderr.write("elicit benchmark: benchmarks/efficiency.py is not in this installation\n")
        return EXIT_FAILED
    try:
        module.run_efficiency(
            args.sections or module.SECTIONS,
            classes=args.classes or ((2, 3) if args.quick else (2, 3, 4, 5)),
            trials=args.trials,
            seed=args.seed,
            quick=args.quick,
            output=args.output,
            out=sys.stdout,
        )
    except ValueError as exc:
        parser.error(str(exc))
    if args.output is not None:
        sys.stderr.write(f"wrote {args.output / 'efficiency.json'}\n")
    return EXIT_OK


def _run_benchmark(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    if args.which == "efficiency":
        if args.family is not None:
            parser.error("argument --family: only applies to the qpme, fair and noise benchmarks")
        return _run_efficiency(args)
    if args.sections is not None:
        parser.error("argument --sections: only applies to the efficiency benchmark")
    if args.inner_radius is not None and args.inner_radius >= args.radius:
        parser.error(f"argument --inner-radius: must be smaller than --radius ({args.radius:g})")
    for value in args.inner_radii or ():
        if value >= args.radius:
            parser.error(f"argument --inner-radii: {value:g} is not smaller than --radius ({args.radius:g})")
    largest_k = max([*(args.classes or ()), *(k for k, _ in args.settings or ())], default=2)
    if args.radius > 1.0 / largest_k:
        parser.error(
            f"argument --radius: {args.radius:g} exceeds 1/k = {1.0 / largest_k:.4g} for k = {largest_k}"
        )
    if args.settings and args.which not in ("fair", "all"):
        parser.error("argument --settings: only applies to the fair benchmark")
    if args.family is not None and args.which not in ("qpme", "fair", "noise", "all"):
        parser.error(
            "argument --family: only applies to the qpme, fair and noise benchmarks (random metrics)"
        )
    ranking = _ranking_module() is not None
    if args.which == "ranking" and not ranking:
        sys.stderr.write(
            "elicit benchmark: the ranking benchmark is not available (no elicitation.lab.ranking)\n"
        )
        return EXIT_FAILED
    which = [b for b in BENCHMARKS if b != "ranking" or ranking] if args.which == "all" else [args.which]
    progress = None if args.no_progress else ProgressBar(sys.stderr)
    for name in which:
        try:
            report = _run_one(name, args, progress)
        except InvalidConfigError as exc:
            parser.error(str(exc))
        markdown = _TABLES[name](report, markdown=True)
        title = _title(name, report)
        sys.stdout.write(f"\n{title}\n\n{_TABLES[name](report, markdown=args.markdown)}\n")
        if name == "timing":
            _timing_verdict(report, sys.stdout)
        if args.output is not None:
            for path in write_outputs(args.output, name, report, markdown):
                if path.suffix != ".js":
                    sys.stderr.write(f"wrote {path}\n")
    return EXIT_OK


def _timing_verdict(report: Mapping[str, Any], out: TextIO) -> None:
    out.write("\n")
    for clock in TIMING_CLOCKS:
        measured = report.get(clock) or {}
        worst = max((stats["median"] for stats in measured.get("next_query", {}).values()), default=math.nan)
        out.write(f"{clock}: next query median {worst:.1f} µs in the slowest case (goal: well under 1000 µs)")
        replay_case = measured.get("replay") or {}
        if replay_case:
            out.write(
                f"; replay of {replay_case['answers']} answers {replay_case['ms']:.1f} ms (goal: < 50 ms)"
            )
        out.write("\n")


# ----------------------------------------------------------------------------------------------------------
# Registration
# ----------------------------------------------------------------------------------------------------------


def register(subparsers: Any) -> None:
    """Add ``simulate``, ``benchmark`` and ``replay`` to the `elicit` command's subparsers."""
    _add_simulate(subparsers)
    _add_benchmark(subparsers)
    _add_replay(subparsers)


def build_parser() -> argparse.ArgumentParser:
    """A parser with only this module's subcommands (tests, ``python -m app.cli.experiments``)."""
    parser = argparse.ArgumentParser(prog="elicit", description="Elicitation Studio's algorithm commands")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen subcommand; returns the exit code."""
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
