"""The packages' structure: no import circle anywhere, every module importable alone.

An import circle hides the order in which a package is built (kernelproxy once was one
circle of 30 of its 35 modules, held together by imports inside functions); each module
importable alone in a fresh interpreter shows that none depends on another having been
imported first. Imports inside functions count as much as those at the top: an arrow is
an arrow, wherever it is written. ``if TYPE_CHECKING:`` imports do not (they never run).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT
PACKAGES = ("gpu_backend", "kernelproxy", "catalog", "workbench")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Lines inside ``if TYPE_CHECKING:`` blocks."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for child in node.body:
                for inner in ast.walk(child):
                    if hasattr(inner, "lineno"):
                        lines.add(inner.lineno)
    return lines


def _imports(name: str, path: Path) -> set[str]:
    """The project modules that module *name* imports (anywhere in it)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets.add(stem)
            targets.update(f"{stem}.{alias.name}" for alias in node.names)
    return {t for t in targets if t in MODULES and t != name}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_in_the_project():
    graph = {name: _imports(name, path) for name, path in MODULES.items()}
    # a package's __init__ importing its own modules is its face, not a circle through it
    for name in graph:
        graph[name] = {t for t in graph[name] if not (name.startswith(t + ".") and
                                                      MODULES[t].name == "__init__.py")}
    assert _circles(graph) == []


def test_the_design_s_package_boundaries_hold():
    """gpu_backend and catalog import none of the others; kernelproxy only gpu_backend's
    protocol (and its config); nothing imports workbench."""
    for name, path in MODULES.items():
        top = name.split(".")[0]
        for target in _imports(name, path):
            other = target.split(".")[0]
            if other == top:
                continue
            assert other != "workbench", f"{name} imports {target}"
            if top in ("gpu_backend", "catalog"):
                pytest.fail(f"{name} imports {target}")
            if top == "kernelproxy":
                assert target.startswith(("gpu_backend.protocol", "gpu_backend.config")), \
                    f"{name} imports {target}"


@pytest.mark.timeout(600)   # (its work grows with the modules and the host's load: the
def test_every_module_is_importable_alone():   # suite's 120 s ran out under three busy loops)
    """Each module alone, in a process of its own that has none of ours loaded: forked from
    one that loaded only the third-party libraries (tests/import_alone.py). (One such
    process for all: four, each loading the libraries again, took 30 s of a loaded 2-core
    machine against 8 s; with the suite's 120 s it timed out twice on a loaded 2-core VM,
    2026-11-28.)"""
    names = [n for n in sorted(MODULES) if not n.endswith("__main__")]
    done = subprocess.run([sys.executable, "-m", "tests.import_alone", *names], cwd=ROOT,
                          capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


#: gpu_backend's top level holds its entry points alone; the rest is grouped by role in
#: subpackages (issue 53), each opening with a docstring that says what it holds and what
#: it may import
ENTRY_POINTS = {"__init__", "cli", "cli_keys", "cli_moves", "cli_usage", "cli_users", "config", "pool",
                "served", "security"}


def test_the_pool_package_keeps_only_its_entry_points_at_the_top():
    top = {p.stem for p in (ROOT / "gpu_backend").glob("*.py")}
    assert top == ENTRY_POINTS, f"grouped into a subpackage instead: {sorted(top - ENTRY_POINTS)}"
    for package in (ROOT / "gpu_backend").iterdir():
        init = package / "__init__.py"
        if package.is_dir() and any(package.glob("*.py")):
            assert init.exists(), f"{package.name}/ has no __init__.py"
            doc = ast.get_docstring(ast.parse(init.read_text()))
            assert doc and "May import" in doc, f"{package.name}/__init__.py: say what it holds and may import"
