"""The web shell's import graph: no cycle among `app` modules, and no function-local import of one.

A cycle makes the import order matter and hides which room depends on which; a function-local import is
how a cycle usually gets hidden. The finder is checked on a small package with a known cycle first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from import_cycles import cycles

ROOT = Path(__file__).resolve().parents[2]


def _modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` (a package is named by its __init__)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _targets(
    node: ast.Import | ast.ImportFrom, importer: str, is_package: bool, known: set[str]
) -> list[str]:
    """The modules of ``known`` that an import statement in ``importer`` loads (its own, not ancestors)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = importer.split(".") if is_package else importer.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        names = [
            f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module for alias in node.names
        ]
    found = []
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            found.append(name)
    return found


def _ancestors(name: str) -> Iterator[str]:
    parts = name.split(".")
    for end in range(1, len(parts)):
        yield ".".join(parts[:end])


def _module_level_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module loads (also under ``if TYPE_CHECKING:``), not inside functions."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _module_level_imports(node)


def import_graph(package: Path) -> tuple[dict[str, set[str]], list[str]]:
    """Module-level import edges between the package's modules, and every function-local import of one.

    Importing ``a.b.c`` also runs the ``a.b`` package's ``__init__``: an edge to each such package is added
    unless the importer lives inside it (a package importing its own modules is the normal case).
    """
    modules = _modules(package)
    known = set(modules)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    local: list[str] = []
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        inside = set(_ancestors(importer)) | ({importer} if is_package else set())
        for function in ast.walk(tree):
            if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(function):
                    if isinstance(node, ast.Import | ast.ImportFrom):
                        for target in _targets(node, importer, is_package, known):
                            local.append(f"{importer}:{node.lineno} imports {target}")
        for node in _module_level_imports(tree):
            for target in _targets(node, importer, is_package, known):
                graph[importer].add(target)
                graph[importer].update(set(_ancestors(target)) - inside - {package.name})
    for importer in graph:
        graph[importer].discard(importer)
    return graph, sorted(set(local))


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "pkg"


def test_the_finder_sees_a_cycle_through_a_package_and_a_hidden_local_import(tmp_path: Path) -> None:
    package = _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .sub import b\n",
            "pkg/sub/__init__.py": "from .b import thing\n",
            "pkg/sub/b.py": "from ..c import other\nthing = 1\n",
            "pkg/c.py": "def other():\n    from . import a\n    from .sub.b import thing\n",
            "pkg/d.py": "from . import c\nfrom pkg.sub import b\nimport pkg.c\n",
        },
    )
    graph, local = import_graph(package)
    assert graph["pkg.a"] == {"pkg.sub.b", "pkg.sub"}
    assert graph["pkg.sub"] == {"pkg.sub.b"}
    assert graph["pkg.d"] == {"pkg.c", "pkg.sub.b", "pkg.sub"}
    assert cycles(graph) == []
    assert local == ["pkg.c:2 imports pkg.a", "pkg.c:3 imports pkg.sub.b"]
    (package / "c.py").write_text("from .a import x\n", encoding="utf-8")
    graph, local = import_graph(package)
    assert cycles(graph) == [["pkg.a", "pkg.c", "pkg.sub", "pkg.sub.b"]]
    assert local == []


def test_app_has_no_import_cycle() -> None:
    graph, _local = import_graph(ROOT / "app")
    assert cycles(graph) == []


def test_app_imports_its_own_modules_only_at_module_level() -> None:
    _graph, local = import_graph(ROOT / "app")
    assert local == []


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


#: What a participant's requests run: the session room, its pages and API, and the study's time estimate.
_PARTICIPANT_SIDE = ("app.sessions", "app.planning", "app.routes")


def test_the_participant_side_never_loads_the_back_office() -> None:
    graph, _local = import_graph(ROOT / "app")
    participant = [name for name in graph if name.startswith(_PARTICIPANT_SIDE)]
    assert {"app.sessions.displayed", "app.planning.estimate", "app.routes.pages"} <= set(participant)
    loaded = set().union(*(_reachable(graph, name) for name in participant))
    assert sorted(name for name in loaded if name.startswith("app.admin")) == []


def test_charts_import_nothing_of_the_app_but_charts() -> None:
    graph, _local = import_graph(ROOT / "app")
    charts = [name for name in graph if name.startswith("app.charts")]
    loaded = set().union(*(_reachable(graph, name) for name in charts))
    assert sorted(name for name in loaded if not name.startswith("app.charts")) == []
