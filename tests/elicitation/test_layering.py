"""The package's layering: the core imports only numpy, scipy and the standard library, never the lab, and
no module of `elicitation` (core or lab) is part of an import cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

from import_cycles import cycles

import elicitation

PACKAGE_DIR = Path(elicitation.__file__).resolve().parent
LAB = "elicitation.lab"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}
CORE_MODULES = sorted(name for name in MODULES if name != LAB and not name.startswith(LAB + "."))

# Run in a fresh interpreter: a meta-path finder refuses every top-level module other than numpy, scipy,
# the standard library and elicitation itself while the core's modules are imported one by one.
IMPORT_CORE_ONLY = textwrap.dedent(
    """
    import importlib, sys

    ALLOWED = {"numpy", "scipy", "elicitation"} | set(sys.stdlib_module_names)
    refused = []

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            # _sysconfigdata_* is the standard library's build configuration (sysconfig loads it by name).
            if top not in ALLOWED and not top.startswith("_sysconfigdata_"):
                refused.append(name)
                raise ImportError(f"{name} is outside numpy, scipy and the standard library")
            return None

    sys.meta_path.insert(0, Blocker())
    for module in sys.argv[1:]:
        importlib.import_module(module)
    loaded = sorted(m for m in sys.modules if m == "elicitation.lab" or m.startswith("elicitation.lab."))
    assert not loaded, f"the core imported the lab: {loaded}"
    print("refused:", sorted(set(refused)))
    """
)


def test_core_imports_with_only_numpy_scipy_and_the_standard_library() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", IMPORT_CORE_ONLY, *CORE_MODULES],
        capture_output=True,
        text=True,
        check=False,
        cwd=PACKAGE_DIR.parent,
    )
    assert completed.returncode == 0, completed.stderr
    # numpy and scipy probe optional packages; none of those probes may come from the core itself.
    assert "elicitation" not in completed.stdout.partition("refused:")[2]


def test_the_meta_path_blocker_catches_a_forbidden_import() -> None:
    completed = subprocess.run(
        [sys.executable, "-c", IMPORT_CORE_ONLY, "elicitation.lab.ranking"],
        capture_output=True,
        text=True,
        check=False,
        cwd=PACKAGE_DIR.parent,
    )
    assert completed.returncode != 0
    assert "outside numpy, scipy and the standard library" in completed.stderr


def _imports(name: str, path: Path) -> tuple[set[str], list[str]]:
    """The `elicitation` modules ``name`` imports, and those it imports inside a function or class."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    inside = {
        id(node)
        for scope in ast.walk(tree)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for node in ast.walk(scope)
    }
    targets: set[str] = set()
    nested: list[str] = []
    for node in ast.walk(tree):
        found: list[str] = []
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            found = [base + "." + alias.name for alias in node.names]
            found = [module if module in MODULES else base for module in found]
        local = [module for module in found if module in MODULES]
        targets.update(local)
        if local and id(node) in inside:
            nested += local
    return targets, nested


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_no_module_of_the_package_is_in_an_import_cycle() -> None:
    assert cycles({name: targets for name, (targets, _) in GRAPH.items()}) == []


def test_cycle_detection_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_function_local_import_of_the_package() -> None:
    # A function-local import is how a cycle hides from import time; third-party imports (scikit-learn in
    # the lab, loaded only when a classifier is trained) may stay local.
    assert {name: nested for name, (_, nested) in GRAPH.items() if nested} == {}


def test_the_core_never_imports_the_lab() -> None:
    offenders = {
        name: sorted(t for t in GRAPH[name][0] if t == LAB or t.startswith(LAB + "."))
        for name in CORE_MODULES
    }
    assert {name: targets for name, targets in offenders.items() if targets} == {}
