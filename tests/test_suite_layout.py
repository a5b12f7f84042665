"""The suite's own layout: every test module has a basename of its own.

pytest imports test modules by basename (the default "prepend" import mode, which the support modules such
as ``admin_support`` rely on), so two ``test_x.py`` in different folders cannot both be collected: the
second fails with "import file mismatch", and only in runs that collect both (CI's whole suite).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_test_modules_have_unique_basenames() -> None:
    places: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name != "conftest.py" and "__pycache__" not in path.parts:
            places[path.name].append(str(path.relative_to(TESTS)))
    assert {name: found for name, found in places.items() if len(found) > 1} == {}
