"""The package's shape (docs/architecture.md): no import cycle, no import of a layer above.

Every module's imports are read with :mod:`ast` (function-level imports included), so
a lazy import cannot hide a cycle.  Layers, lowest first::

    core            imports core only
    common          imports core
    koglish         imports core, common          (the data source of glue and concse)
    glue, concse, contrastivemix, alignment, calbert
                    import core, common, koglish and their own package, not each other

and nothing in the library imports ``core.pipeline`` (the CLI behind ``reproduce.sh``)
nor the ``benchmarks`` harness, which sits outside the package and imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "lib" / "codeswitch"

LAYERS = {"core": 0, "common": 1, "koglish": 2, "glue": 3, "concse": 3, "contrastivemix": 3, "alignment": 3, "calbert": 3}
PIPELINE = "codeswitch.core.pipeline"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The codeswitch modules (and ``benchmarks``) that ``name`` imports, anywhere in its body."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in ("codeswitch", "benchmarks"):
                    out.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] not in ("codeswitch", "benchmarks"):
                continue
            for alias in node.names:  # `from pkg import submodule` depends on the submodule
                out.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module)
    out.discard(name)
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    mods = _modules()
    return {name: _imports(name, path, set(mods)) for name, path in mods.items()}


def _layer(module: str) -> tuple[str, int] | None:
    parts = module.split(".")
    if len(parts) < 2 or parts[1] not in LAYERS:
        return None
    return parts[1], LAYERS[parts[1]]


def test_the_layer_map_covers_every_package():
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").is_file()}
    assert packages == set(LAYERS), f"a package without a layer (add it to LAYERS and docs/architecture.md): {packages ^ set(LAYERS)}"
    top_modules = sorted(p.name for p in PKG.glob("*.py") if p.name != "__init__.py")
    assert top_modules == [], f"modules belong in a layer package, not at the top: {top_modules}"


def test_graph_sees_imports(graph):
    """The parser finds real edges (the checks below would pass vacuously otherwise)."""
    assert "codeswitch.core.profiles" in graph["codeswitch.core.runs"]
    assert "codeswitch.koglish.data" in graph["codeswitch.glue.experiment"]
    assert "codeswitch.core.encoders" in graph["codeswitch.common.fastpath"]  # a function-level import
    assert len(graph) > 40


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (the standard library's topological sorter finds it), or None."""
    from graphlib import CycleError, TopologicalSorter

    try:
        TopologicalSorter({a: {b for b in deps if b in graph} for a, deps in graph.items()}).prepare()
    except CycleError as exc:
        return exc.args[1]
    return None


def test_no_import_cycle(graph):
    assert _cycle(graph) is None, f"import cycle: {' -> '.join(_cycle(graph))}"


def test_no_upward_import(graph):
    bad = []
    for module, deps in graph.items():
        here = _layer(module)
        for dep in deps:
            if dep.split(".")[0] == "benchmarks":
                bad.append((module, dep, "the library never imports the benchmark harness"))
                continue
            there = _layer(dep)
            if here is None or there is None:
                continue
            (pkg, level), (dep_pkg, dep_level) = here, there
            if dep_level > level:
                bad.append((module, dep, f"layer {pkg} ({level}) imports layer {dep_pkg} ({dep_level})"))
            elif dep_level == level and dep_pkg != pkg:
                bad.append((module, dep, f"sibling packages {pkg} and {dep_pkg} import each other"))
    assert bad == []


def test_only_the_cli_imports_the_pipeline(graph):
    users = sorted(m for m, deps in graph.items() if PIPELINE in deps)
    assert users == []


def test_the_checker_catches_violations():
    """The rules above fail on a cycle and on an upward import (the test can fail)."""
    assert _cycle({"codeswitch.core.a": {"codeswitch.core.b"}, "codeswitch.core.b": {"codeswitch.core.a"}})
    assert _cycle({"codeswitch.core.a": {"codeswitch.core.b"}, "codeswitch.core.b": set()}) is None
    assert _layer("codeswitch.core.runs")[1] < _layer("codeswitch.glue.train")[1]
    assert _layer("codeswitch.concse.loss")[1] == _layer("codeswitch.calbert.train")[1]
