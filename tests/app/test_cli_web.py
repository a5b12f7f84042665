"""The `elicit` command's web-app subcommands: db upgrade, study create/list, demo."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from app.cli import main

TOML_STUDY = """
name = "Loan screening"
task = "A classifier decides whether a loan applicant is likely to repay."
class_names = ["repays", "defaults"]
population = "applicants"
algorithm = "lpme"
evaluation_queries = 5

[algorithm_params]
epsilon = 0.05

[query_space]
kind = "synthetic"
radius = 0.15
"""


@pytest.fixture
def database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "cli.db"
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{path}")
    monkeypatch.setenv("PUBLIC_BASE_URL", "https://studies.example.org")
    assert main(["db", "upgrade"]) == 0
    return path


def test_study_create_from_toml_and_list(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "study.toml"
    config.write_text(TOML_STUDY)
    assert main(["study", "create", str(config)]) == 0
    out = capsys.readouterr().out
    study_id = out.split()[2]
    # New studies are drafts (docs/admin.md), so no participant link: it would answer 409.
    assert "is a draft" in out and "participant link" not in out and "/join" not in out
    assert main(["study", "list"]) == 0
    listing = capsys.readouterr().out
    assert "Loan screening" in listing and "[lpme]  draft, enrolment: open link" in listing
    assert main(["study", "open", study_id]) == 0
    opened = capsys.readouterr().out.splitlines()
    assert opened == [
        f"study {study_id} is open",
        f"participant link: https://studies.example.org/studies/{study_id}/join",
    ]
    assert main(["study", "list"]) == 0
    assert "[lpme]  open, enrolment: open link" in capsys.readouterr().out
    assert main(["study", "pause", study_id]) == 0
    assert capsys.readouterr().out.strip() == f"study {study_id} is paused"  # no link: it would refuse


def test_close_without_a_terminal_or_yes_is_a_one_line_error(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "study.toml"
    config.write_text(TOML_STUDY)
    assert main(["study", "create", str(config)]) == 0
    study_id = capsys.readouterr().out.split()[2]
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no terminal: input() would end in EOFError
    assert main(["study", "close", study_id]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        "error: closing is final and needs a confirmation: pass --yes (no terminal to ask at)"
    )
    assert main(["study", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["status"] == "draft"
    assert main(["study", "close", study_id, "--yes"]) == 0
    assert capsys.readouterr().out.strip() == f"study {study_id} is closed"


def test_study_create_from_json(database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "study.json"
    config.write_text(
        json.dumps({"name": "J", "task": "t", "class_names": ["a", "b"], "open_enrolment": False})
    )
    assert main(["study", "create", str(config)]) == 0
    out = capsys.readouterr().out
    assert "created study" in out and "participant link" not in out


@pytest.mark.parametrize(
    ("suffix", "content", "message"),
    [
        (".toml", 'name = "x"\n', "task: Field required"),
        (".toml", "name = ", "not valid TOML"),
        (".json", '{"name": "x", "task": "t", "class_names": ["a", "a"]}', "class_names"),
        (".json", '{"name": "x", "task": "t", "class_names": ["a", "b"], "algorithm": "magic"}', "magic"),
        (".json", '{"name": "x", "task": "t", "class_names": ["a", "b"], "colour": 1}', "colour"),
        (
            ".json",
            '{"name": "x", "task": "t", "class_names": ["a", "b"], "algorithm_params": {"epsilon": 3}}',
            "algorithm_params: epsilon",
        ),
        (
            ".json",
            '{"name": "x", "task": "t", "class_names": ["a", "b"], "query_space": {"radius": 2}}',
            "radius",
        ),
        (
            ".json",
            '{"name": "x", "task": "t", "class_names": ["a", "b"], "redirect_url": "javascript:x"}',
            "redirect_url",
        ),
        (".yaml", "name: x", ".json or .toml"),
        (".json", "[1, 2]", "table/object"),
    ],
)
def test_study_create_reports_invalid_configs(
    database: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    suffix: str,
    content: str,
    message: str,
) -> None:
    config = tmp_path / f"study{suffix}"
    config.write_text(content)
    assert main(["study", "create", str(config)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_study_create_missing_file(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["study", "create", "/nonexistent/study.toml"]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_demo_is_created_once(database: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    first = capsys.readouterr().out
    assert "created the demo study" in first
    assert main(["demo"]) == 0
    second = capsys.readouterr().out
    assert "exists" in second
    link = next(line for line in first.splitlines() if "participant link" in line)
    assert link in second and "/join" in link
    assert main(["study", "list"]) == 0
    assert capsys.readouterr().out.count("Demo: breast cancer screening") == 1


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2


def test_list_commands_print_json_for_scripts(
    database: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["study", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    config = tmp_path / "study.toml"
    config.write_text(TOML_STUDY)
    assert main(["study", "create", str(config)]) == 0
    capsys.readouterr()
    assert main(["study", "list", "--json"]) == 0
    (study,) = json.loads(capsys.readouterr().out)
    assert study["name"] == "Loan screening"
    assert study["algorithm"] == "lpme"
    assert study["open_enrolment"] is True
    assert study["status"] == "draft"
    assert study["sessions"] == {"invited": 0, "active": 0, "done": 0}
    monkeypatch.setenv("ELICIT_ADMIN_PASSWORD", "a long enough password 123")
    assert main(["admin", "create", "--email", "lead@example.org", "--role", "admin"]) == 0
    capsys.readouterr()
    assert main(["admin", "list", "--json"]) == 0
    (account,) = json.loads(capsys.readouterr().out)
    assert account["email"] == "lead@example.org"
    assert account["role"] == "admin"
