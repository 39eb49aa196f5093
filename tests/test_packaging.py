"""`pip install .` gives a library that runs the notebooks: pyproject.toml declares every distribution
that the library and the notebooks import, plus those they need without importing them.

Installing into a fresh venv takes minutes (torch alone is ~200 MB even from a local wheel cache), too
slow for CI's budget; instead every import is mapped to its distribution with importlib.metadata and
checked against pyproject's list, and every pin of requirements.txt must be declared or be a dev tool.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import tomllib
from importlib.metadata import packages_distributions

from .conftest import REPO

# needed at run time without an import statement in lib/ or notebooks/
RUNTIME = {
    "pytrec-eval-terrier": "ir_measures' trec_eval backend",
    "sentencepiece": "IndicBERT's tokenizer, loaded by transformers",
    "protobuf": "read by transformers to convert that tokenizer",
    "koreanize-matplotlib": "its font file, found with importlib.util.find_spec",
    "papermill": "reproduce.sh", "nbformat": "reproduce.sh", "nbclient": "reproduce.sh", "ipykernel": "the notebooks' kernel",
}
DEV_ONLY = {"pytest", "pytest-xdist", "execnet", "markdown-it-py", "jupyterlab", "ipywidgets", "nbstripout", "benepar", "torch-struct"}  # tests, ./lab.sh, an extra


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> tuple[set[str], set[str]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    base = {norm(re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0]) for d in project["dependencies"]}
    extras = {norm(re.split(r"[<>=!~;\[ ]", d, maxsplit=1)[0]) for ds in project.get("optional-dependencies", {}).values() for d in ds}
    return base, extras


def top_level_imports(source: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return {m for m in out if m not in sys.stdlib_module_names and m != "codeswitch"}


def used_imports() -> dict[str, str]:
    found = {}
    for p in sorted((REPO / "lib" / "codeswitch").rglob("*.py")):
        for m in top_level_imports(p.read_text(encoding="utf-8")):
            found.setdefault(m, str(p.relative_to(REPO)))
    for p in sorted((REPO / "notebooks").glob("*.ipynb")):
        for cell in json.loads(p.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code":
                src = "\n".join(l for l in "".join(cell["source"]).splitlines() if not l.lstrip().startswith(("%", "!")))
                for m in top_level_imports(src):
                    found.setdefault(m, str(p.relative_to(REPO)))
    return found


def test_pyproject_declares_every_distribution_the_library_and_notebooks_import():
    base, extras = declared()
    dists = packages_distributions()
    missing = []
    for module, where in used_imports().items():
        names = {norm(d) for d in dists.get(module, [])}
        assert names, f"{module} (imported in {where}) is not installed: cannot map it to a distribution"
        if module == "benepar":
            assert names & extras, "benepar must stay an optional extra"
            continue
        if not names & base:
            missing.append(f"{module} ({where}) -> {sorted(names)}")
    assert not missing, "pyproject.toml [project.dependencies] lacks: " + "; ".join(missing)
    lacking = [d for d in RUNTIME if norm(d) not in base]
    assert not lacking, f"pyproject.toml lacks run-time dependencies: {lacking}"


def _pins(name: str = "requirements.txt") -> list[str]:
    return [norm(l.split("==")[0]) for l in (REPO / name).read_text().splitlines() if "==" in l.split("#")[0]]


def test_installing_the_pins_asks_for_no_extra_that_does_not_exist():
    """pip warned "transformers 5.23.0 does not provide the extra 'tokenizers'" on every first install: benepar asks for
    it. Every distribution installed from requirements.txt (with --no-deps: requirements-nodeps.txt, not resolved)
    asks only for extras its dependencies provide."""
    from importlib import metadata

    from packaging.requirements import Requirement

    resolved = set(_pins())
    assert "benepar" not in resolved and "benepar" in _pins("requirements-nodeps.txt")
    seen, todo, bad = set(), list(resolved), []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            try:
                dep = metadata.distribution(req.name)
            except metadata.PackageNotFoundError:
                continue
            provided = {norm(e) for e in dep.metadata.get_all("Provides-Extra") or []}
            bad += [f"{name} asks for {req.name}[{e}]" for e in req.extras if norm(e) not in provided]
            todo.append(norm(req.name))
    assert not bad, bad


def test_every_pin_is_declared_or_a_dev_tool():
    base, extras = declared()
    pins = _pins() + _pins("requirements-nodeps.txt")
    stray = [p for p in pins if p not in base and p not in extras and p not in {norm(d) for d in DEV_ONLY}]
    assert not stray, f"pinned in requirements.txt but neither a dependency nor a dev tool in pyproject: {stray}"
