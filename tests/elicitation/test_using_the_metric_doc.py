"""The examples of docs/using-the-metric.md run as written (doctest)."""

from __future__ import annotations

import doctest
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "using-the-metric.md"


def test_using_the_metric_examples_run_as_written() -> None:
    outcome = doctest.testfile(
        str(DOC),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        raise_on_error=False,
        verbose=False,
    )
    assert outcome.attempted > 20
    assert outcome.failed == 0
