"""Write the README's Measured section from the HTTP benchmarks' JSON output (run by hand, commit the result).

Run: ``.venv/bin/python benchmarks/readme_measured.py`` after ``benchmarks/http_roundtrip.py`` and
``benchmarks/panel_launch.py``. It copies their results (``benchmarks/results/http_roundtrip.json`` and
``panel_launch.json``, or ``--roundtrip`` / ``--panel``) to ``docs/measured/``, where they are committed,
and replaces the README's text between the ``measured`` markers with sentences made from those files
alone: the date, the machine and its load, and every number. ``--check`` only compares the README with
what ``docs/measured/`` gives (the test suite runs that), so no number reaches the README by hand.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MEASURED = ROOT / "docs" / "measured"
START = "<!-- measured:start (written by benchmarks/readme_measured.py from docs/measured/; do not edit) -->"
END = "<!-- measured:end -->"
#: Above this load average per CPU the machine was shared with other work while the benchmark ran.
BUSY_LOAD_PER_CPU = 1.0
#: Line width of the written Markdown, as the rest of the README.
WIDTH = 105


def _ms(value: float) -> str:
    """A duration in milliseconds as a reader takes it in: ``4.2 ms``, ``376 ms``, ``149.4 s``."""
    if value >= 10_000:
        return f"{value / 1000:.1f} s"
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def _where(machine: dict[str, Any], load_after: list[float], *, side_by_side: bool) -> str:
    cpus = machine["cpu_count"]
    loads = (machine["load_average"][0], load_after[0])
    if max(loads) > BUSY_LOAD_PER_CPU * cpus:
        state = (
            f"shared with other work (load average {loads[0]:g} to {loads[1]:g} on {cpus} CPUs), so absolute "
            "times are several times a quiet machine's"
        )
        if side_by_side:
            state += "; the ratios compare measurements taken side by side in the same run"
    else:
        state = f"nothing else running (load average {loads[0]:g} to {loads[1]:g} on {cpus} CPUs)"
    commit = f", commit `{machine['commit']}`" if machine.get("commit") else ""
    return f"{machine['date']} on {machine['cpu']}{commit}; {state}"


def _round_trip(rt: dict[str, Any]) -> str:
    app, bare = rt["app"], rt["bare"]
    return (
        f"median {_ms(app['median'])}, p99 {_ms(app['p99'])} over {app['n']} answers, "
        f"**{rt['ratio_median']:.2f}× a bare FastAPI JSON endpoint** ({_ms(bare['median'])}, same run)"
    )


def _significant(value: float) -> str:
    """Two significant digits: what a CPU time measured on a shared machine supports."""
    return f"{float(f'{value:.2g}'):g}"


def _wrap(text: str, bullet: bool = False) -> str:
    return textwrap.fill(
        text,
        width=WIDTH,
        subsequent_indent="  " if bullet else "",
        break_long_words=False,
        break_on_hyphens=False,
    )


def section(roundtrip: dict[str, Any], panel: dict[str, Any] | None) -> str:
    """The Markdown between the markers, from the two benchmarks' reports."""
    acc = roundtrip["accuracy"]
    rts = roundtrip["round_trip_ms"]
    where = _where(roundtrip["machine"], roundtrip["load_average_after"], side_by_side=True)
    intro = (
        "`benchmarks/http_roundtrip.py` and `benchmarks/panel_launch.py` drive real server processes on a "
        f"SQLite file (`synchronous={roundtrip['sqlite_synchronous']}`); how, and the caveats, in "
        f"[docs/app.md](docs/app.md#benchmark). One run each. The round-trip benchmark ran {where}."
    )
    items = [
        "A QPME k = 2 session over HTTP by an automated participant gives exactly the metric of the "
        f"session's own elicitor (`{acc['algorithm_version']}`) run in-process "
        f"({acc['http']['elicitor_queries']} elicitor questions, ‖a − â‖₂ = {acc['http']['a']:.4f}, "
        f"‖B − B̂‖_F = {acc['http']['B']:.3f}).",
        "Answer round trip (POST → the next question with both confusion matrices), answers sent at once: "
        f"QPME k = 2: {_round_trip(rts['qpme'])} (the bar: at most 2×); the default elicitor (active "
        f"quadratic, k = 2): {_round_trip(rts['active'])}.",
        f"The same with a pause of {rts['active_paused']['think_ms']:g} ms before every answer and every "
        "bare request, as a person looks at a question (an idle machine answers its next request slower, "
        "the bare endpoint too; the app computes the active elicitor's possible next questions during the "
        f"pause): QPME k = 2: {_round_trip(rts['qpme_paused'])}; the default elicitor: "
        f"{_round_trip(rts['active_paused'])}.",
    ]
    resume = roundtrip["resume"]
    parts = [
        f"{int(n):,} logged answers: {_ms(res['first_request_after_health_check_ms']['median'])} after "
        f"one health check, {_ms(res['cold_first_request_ms']['median'])} as a fresh process's very "
        f"first request, {_ms(res['cached_request_ms']['median'])} cached"
        for n, res in sorted(resume.items(), key=lambda item: int(item[0]))
    ]
    restarts = len(next(iter(resume.values()))["cached_request_ms"]["all"])
    items.append(
        "The first request for an active-elicitor session after a restart (SIGKILL, new process; median of "
        f"{restarts}; the bar: at most 25 ms after the health check): " + "; ".join(parts) + "."
    )
    if panel is not None:
        answers = panel["answers"]
        count = panel["workers"]
        workers = "its default workers" if count is None else f"{count} worker{'s' if count > 1 else ''}"
        panel_where = _where(panel["machine"], panel["load_average_after"], side_by_side=False)
        cpu_ms = panel.get("server_cpu_ms_per_answer") or (
            1000.0 * panel["server_cpu_cores"] * panel["wall_s"] / answers["n"]
        )
        per_core = _significant(panel["think_s"] * 1000.0 / cpu_ms)
        cpu = (
            f"the server used {panel['server_cpu_cores']} cores, about {_significant(cpu_ms)} ms of CPU per "
            f"answer (joins included) on that machine, so one core would serve about {per_core} "
            "participants at this pace; "
            f"the simulated participants themselves used {panel['client_cpu_cores']} cores"
        )
        limit = panel.get("answers_per_participant")
        first = "" if limit is None else f", each their first {limit} questions"
        latency = (
            f"answer p50 {_ms(answers['p50'])}, p90 {_ms(answers['p90'])}, "
            f"**p99 {_ms(answers['p99'])}**, max {_ms(answers['max'])}"
        )
        pace = f"answering every ~{panel['think_s']:g} s{first}"
        volume = f"{answers['n']} answers, {panel['answers_per_s']} a second"
        items.append(
            f"A panel's launch on `elicit serve` ({workers}), measured {panel_where}: "
            f"{panel['participants']} participants joining the demo study within {panel['launch_s']:g} s and "
            f"{pace} ({volume}): {latency} (the bar: p99 at most {_ms(panel['p99_target_ms'])}), "
            f"{panel['errors']} errors; {cpu}."
        )
    reproduce = (
        "Reproduce: `.venv/bin/python benchmarks/http_roundtrip.py`, `.venv/bin/python "
        "benchmarks/panel_launch.py`, then `.venv/bin/python benchmarks/readme_measured.py` (this text)."
    )
    body = [_wrap(intro), "", *(_wrap(f"- {item}", bullet=True) for item in items), "", _wrap(reproduce)]
    return "\n".join([START, "", *body, "", END])


def render(readme: str, text: str) -> str:
    """``readme`` with the text between the markers replaced by ``text`` (markers included)."""
    if START not in readme or END not in readme:
        raise SystemExit(f"README.md has no measured markers ({START!r} ... {END!r})")
    before, rest = readme.split(START, 1)
    _, after = rest.split(END, 1)
    return before + text + after


def load(path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    results = ROOT / "benchmarks" / "results"
    parser.add_argument("--roundtrip", type=Path, default=results / "http_roundtrip.json")
    parser.add_argument("--panel", type=Path, default=results / "panel_launch.json")
    parser.add_argument("--check", action="store_true", help="only check the README against docs/measured/")
    args = parser.parse_args(argv)
    for path in (args.roundtrip, args.panel):
        if not args.check and path.exists() and load(path).get("quick"):
            raise SystemExit(f"{path} is a --quick smoke run; the README takes full runs only")
    if not args.check:
        MEASURED.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.roundtrip, MEASURED / "http_roundtrip.json")
        if args.panel.exists():
            shutil.copyfile(args.panel, MEASURED / "panel_launch.json")
    panel_file = MEASURED / "panel_launch.json"
    text = section(load(MEASURED / "http_roundtrip.json"), load(panel_file) if panel_file.exists() else None)
    readme = README.read_text()
    updated = render(readme, text)
    if args.check:
        if updated != readme:
            print(
                "README.md's Measured section differs from docs/measured/; run benchmarks/readme_measured.py"
            )
            return 1
        return 0
    README.write_text(updated)
    print(f"README.md's Measured section written from {MEASURED.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
