"""Tests of `elicit simulate`, `elicit benchmark` and `elicit replay` (app/cli/experiments.py)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from app.cli.experiments import build_parser, format_table, main, register
from app.codec import CodecError, decode_metric, encode_metric
from elicitation import QuadraticMetric


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["simulate", "--classes", "1"], "--classes"),
        (["simulate", "--classes", "three"], "--classes"),
        (["simulate", "--epsilon", "0"], "--epsilon"),
        (["simulate", "--epsilon", "nan"], "--epsilon"),
        (["simulate", "--radius", "-0.1"], "--radius"),
        (["simulate", "--classes", "4", "--radius", "0.3"], "--radius"),
        (["simulate", "--inner-radius", "0.2"], "--inner-radius"),
        (["simulate", "--noise", "loud"], "--noise"),
        (["simulate", "--noise-level", "0.1"], "--noise-level"),
        (["simulate", "--noise", "threshold", "--noise-level", "-1"], "--noise-level"),
        (["simulate", "--noise", "logistic", "--noise-level", "0"], "--noise-level"),
        (["simulate", "--seed", "-3"], "--seed"),
        (["simulate", "--groups", "1", "--algorithm", "fair_qpme"], "--groups"),
        (["simulate", "--algorithm", "magic"], "--algorithm"),
        (["simulate", "--metric", "/nonexistent/metric.json"], "--metric"),
        (["benchmark", "qpme", "--trials", "0"], "--trials"),
        (["benchmark", "qpme", "--classes", "2,x"], "--classes"),
        (["benchmark", "fair", "--settings", "2by2"], "--settings"),
        (["benchmark", "qpme", "--settings", "2x2"], "--settings"),
        (["benchmark", "noise", "--inner-radii", "0.1,0.3"], "--inner-radii"),
        (["benchmark", "speed"], "which"),
        (["benchmark", "qpme", "--family", "gaussian"], "--family"),
        (["benchmark", "fair", "--family", ""], "--family"),
        (["benchmark", "timing", "--family", "wishart"], "--family"),
        (["simulate", "--family", "uniform"], "--family"),
        (["simulate", "--algorithm", "lpme", "--family", "wishart"], "--family"),
        (["replay", "/nonexistent/log.json"], "FILE"),
    ],
)
def test_cli_rejects_bad_flags_with_exit_code_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert flag in err
    assert "Traceback" not in err


def test_simulate_json_has_small_errors_for_an_exact_oracle(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "simulate", "--algorithm", "qpme", "--classes", "2", "--seed", "4", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["errors"]["a"] < 0.05 and data["errors"]["B"] < 0.12
    assert data["num_queries"] == len(data["log"]) > 0
    assert data["true_metric"]["type"] == data["elicited_metric"]["type"] == "quadratic"
    assert data["log"][0]["seq"] == 0 and isinstance(data["log"][0]["answer"], bool)
    assert len(data["log"][0]["query"]["first"]) == 2


def test_simulate_prints_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "simulate", "--algorithm", "lpme", "--classes", "2", "--seed", "1")
    assert code == 0
    assert "true metric:" in out and "elicited metric:" in out and "‖a−â‖₂" in out
    step_lines = [
        line for line in out.splitlines() if "lpme" in line and ("first" in line or "second" in line)
    ]
    queries = int(out.split("queries: ")[1].split(";")[0])
    assert len(step_lines) == queries


def test_simulate_uses_a_metric_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    metric = QuadraticMetric(np.array([0.6, 0.3]), -np.array([[0.5, 0.1], [0.1, 0.4]]))
    path = tmp_path / "metric.json"
    path.write_text(json.dumps(encode_metric(metric)))
    code, out, err = run(capsys, "simulate", "--metric", str(path), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert np.allclose(data["true_metric"]["a"], metric.a)
    assert data["params"]["n_classes"] == 2  # taken from the metric, not the --classes default of 3
    path.write_text(json.dumps({"type": "quadratic", "a": [1, 0]}))
    code, _, err = run(capsys, "simulate", "--metric", str(path))
    assert code == 2 and "--metric" in err and "'B'" in err


def test_metric_dict_round_trip_and_errors() -> None:
    metric = QuadraticMetric(np.array([0.6, 0.3]), -np.eye(2) * 0.4)
    again = decode_metric(json.loads(json.dumps(encode_metric(metric))))
    assert isinstance(again, QuadraticMetric)
    # The constructor renormalises, which may move the last bit.
    assert np.allclose(again.a, metric.a, rtol=1e-15, atol=0) and np.allclose(
        again.B, metric.B, rtol=1e-15, atol=0
    )
    with pytest.raises(CodecError, match="type"):
        decode_metric({"type": "sextic"})
    with pytest.raises(CodecError, match="'C'"):
        decode_metric({"type": "cubic", "a": [1, 0], "B": [[0, 0], [0, 0]]})


def test_simulate_cubic_json_round_trips_its_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "simulate", "--algorithm", "cubic_qpme", "--classes", "2", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["params"]["epsilon"] == pytest.approx(1e-4)  # cubic's own default tolerance
    assert set(data["errors"]) == {"a", "B", "C"}
    metric = decode_metric(data["true_metric"])
    assert np.allclose(encode_metric(metric)["C"], data["true_metric"]["C"], rtol=1e-15, atol=0)


def test_benchmark_quick_writes_json_tables_and_offline_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "results"
    code, out, err = run(
        capsys, "benchmark", "qpme", "--quick", "--trials", "1", "--classes", "2", "--output", str(out_dir)
    )
    assert code == 0, err
    assert "Table 4" in out and "265" in out
    assert "1/1 qpme k=2" in err  # the progress bar
    report = json.loads((out_dir / "qpme.json").read_text())
    assert report["settings"][0]["summary"]["trials"] == 1
    assert (out_dir / "qpme.md").read_text().count("|") > 10
    html = (out_dir / "qpme_error_a.html").read_text()
    assert 'src="plotly.min.js"' in html and "cdn" not in html.lower()
    assert (out_dir / "plotly.min.js").stat().st_size > 1_000_000


def test_benchmark_noise_quick_prints_the_grid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "benchmark", "noise", "--trials", "1", "--classes", "2", "--inner-radii", "0.05",
        "--noise-levels", "0,0.001", "--no-progress", "--markdown",
    )  # fmt: skip
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 2


def test_replay_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.json"
    code, out, _ = run(
        capsys, "simulate", "--classes", "2", "--seed", "9", "--json", "--export-log", str(log)
    )
    assert code == 0
    simulated = json.loads(out)
    code, out, err = run(capsys, "replay", str(log), "--json")
    assert code == 0, err
    replayed = json.loads(out)
    assert replayed["status"] == "done"
    assert replayed["num_queries"] == simulated["num_queries"]
    assert replayed["metric"]["a"] == simulated["elicited_metric"]["a"]
    code, out, _ = run(capsys, "replay", str(log))
    assert code == 0 and "every logged query matched" in out


def test_replay_reports_a_mismatch_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.json"
    run(capsys, "simulate", "--classes", "2", "--seed", "9", "--export-log", str(log))
    document = json.loads(log.read_text())
    document["params"]["radius"] = 0.15
    log.write_text(json.dumps(document))
    code, _, err = run(capsys, "replay", str(log))
    assert code == 1
    assert "REPLAY MISMATCH" in err and "Traceback" not in err


def test_replay_prefix_shows_the_pending_query(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.json"
    run(capsys, "simulate", "--classes", "2", "--seed", "9", "--export-log", str(log))
    document = json.loads(log.read_text())
    document["answers"] = document["answers"][:5]
    log.write_text(json.dumps(document))
    code, out, _ = run(capsys, "replay", str(log), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["status"] == "pending" and data["answers"] == 5 and len(data["next_query"]["first"]) == 2


def test_replay_rejects_a_malformed_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "log.json"
    log.write_text(json.dumps({"algorithm": "qpme", "params": {"n_classes": 2}, "answers": [{"answer": 1}]}))
    code, _, err = run(capsys, "replay", str(log))
    assert code == 2 and "answers[0].answer" in err
    log.write_text("{not json")
    code, _, err = run(capsys, "replay", str(log))
    assert code == 2 and "not valid JSON" in err


def test_register_adds_the_subcommands_to_another_parser() -> None:
    parser = argparse.ArgumentParser(prog="elicit")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["benchmark", "all", "--quick"])
    assert args.which == "all" and args.quick and callable(args.func)
    assert build_parser().parse_args(["replay", "x.json"]).file == Path("x.json")


def test_format_table_plain_and_markdown() -> None:
    plain = format_table(["k", "err"], [[2, 0.12345], [3, None]])
    assert plain.splitlines()[2].split() == ["2", "0.1235"] and plain.splitlines()[3].split() == ["3", "-"]
    assert format_table(["k"], [[2]], markdown=True).splitlines()[0] == "| k |"


def test_replay_of_a_study_export_uses_the_app_registry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from app.algorithms import get_algorithm
    from elicitation import run as drive
    from elicitation.oracles import ExactOracle
    from elicitation.rates import SyntheticSpace

    space = SyntheticSpace(2, 0.2)
    spec = get_algorithm("lpme")
    result = drive(
        spec.build(space, {"epsilon": 0.05}), ExactOracle(decode_metric({"type": "linear", "a": [1, 2]}))
    )
    document = {
        "algorithm": "lpme",
        "algorithm_version": spec.version,
        "params": {"epsilon": 0.05},
        "space": space.to_dict(),
        "answers": [
            {"seq": i, "answer": a, "query": {"first": q.first.tolist(), "second": q.second.tolist()}}
            for i, (q, a) in enumerate(result.log)
        ],
    }
    log = tmp_path / "export.json"
    log.write_text(json.dumps(document))
    code, out, err = run(capsys, "replay", str(log), "--json")
    assert code == 0, err
    assert json.loads(out)["metric"]["a"] == result.metric.a.tolist()
    log.write_text(json.dumps(document | {"algorithm_version": "lpme-0"}))
    code, _, err = run(capsys, "replay", str(log))
    assert code == 1 and "REPLAY MISMATCH" in err and "lpme-0" in err


@pytest.mark.slow
def test_benchmark_all_quick_is_the_ci_subset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "benchmark", "all", "--quick", "--no-progress", "--output", str(tmp_path))
    assert code == 0, err
    for name in ("qpme", "fair", "noise", "timing"):
        assert json.loads((tmp_path / f"{name}.json").read_text())
    timing = json.loads((tmp_path / "timing.json").read_text())
    assert timing["wall"]["replay"]["answers"] == timing["cpu"]["replay"]["answers"] == 2000
    assert "goal: < 50 ms" in out and "Table 4" in out
    assert "final metric, fair_qpme k=3 m=3" in out  # the last step, timed apart from the queries
    assert all(stats["finish"] > 0.0 for stats in timing["wall"]["next_query"].values())
    assert len(list(tmp_path.glob("*.html"))) >= 10


@pytest.mark.parametrize(("which", "label"), [("qpme", "| 2 |"), ("fair", "| 2 | 2 |")])
def test_benchmark_family_runs_both_generators_with_agreement_and_tau(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], which: str, label: str
) -> None:
    tables = {}
    setting = ["--settings", "2x2"] if which == "fair" else ["--classes", "2"]
    for family in ("authors", "wishart"):
        out_dir = tmp_path / family
        code, out, err = run(
            capsys, "benchmark", which, "--quick", "--trials", "2", *setting, "--family", family,
            "--no-progress", "--markdown", "--output", str(out_dir),
        )  # fmt: skip
        assert code == 0, err
        assert "agree mean" in out and "tau min" in out
        assert ("wishart metric generator" in out) == (family == "wishart")
        report = json.loads((out_dir / f"{which}.json").read_text())
        assert report["config"]["family"] == family
        summary = report["settings"][0]["summary"]
        assert summary["failures"] == 0
        assert 0.9 < summary["agreement"]["min"] <= summary["agreement"]["mean"] <= 1.0
        assert 0.8 < summary["kendall_tau"]["min"] <= 1.0
        (row,) = [line for line in out.splitlines() if line.startswith(label)]
        tables[family] = (row, [r["seed"] for r in report["settings"][0]["records"]])
    # The same trial seeds draw different metrics under the two generators.
    assert tables["authors"][1] == tables["wishart"][1]
    assert tables["authors"][0] != tables["wishart"][0]


def test_simulate_family_draws_a_wishart_metric(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "simulate", "--classes", "2", "--family", "wishart", "--seed", "3", "--json")
    assert code == 0, err
    wishart = json.loads(out)
    code, out, _ = run(capsys, "simulate", "--classes", "2", "--seed", "3", "--json")
    assert code == 0
    assert wishart["true_metric"] != json.loads(out)["true_metric"]
    code, _, err = run(capsys, "simulate", "--family", "wishart", "--metric", "/nonexistent/metric.json")
    assert code == 2 and "--family" in err
