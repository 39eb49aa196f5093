"""The fidelity ledger: docs/fidelity.md is generated from the registry, and every option it names exists."""

from __future__ import annotations

import importlib

import pytest

from codeswitch.core import fidelity
from codeswitch.pipeline.cli import NOTEBOOKS
from codeswitch.core.profiles import load_profile

SECTION_CONFIGS = {
    "koglish": "codeswitch.koglish.config:Config",
    "glue": "codeswitch.glue.config:Config",
    "concse": "codeswitch.concse.config:Config",
    "contrastivemix": "codeswitch.contrastivemix.config:Config",
    "alignment": "codeswitch.alignment.config:Config",
    "calbert": "codeswitch.calbert.config:Config",
}


def _section(section: str, overrides: dict | None = None):
    module, cls = SECTION_CONFIGS[section].split(":")
    return load_profile("paper", overrides=overrides).section(section, getattr(importlib.import_module(module), cls))


def test_docs_fidelity_md_is_generated_from_the_registry():
    path = fidelity.default_path()
    assert path.is_file(), "docs/fidelity.md missing: run python -m codeswitch.core.fidelity"
    assert path.read_text(encoding="utf-8") == fidelity.render(), "docs/fidelity.md is stale: run python -m codeswitch.core.fidelity"
    assert fidelity.main(["--check"]) == 0


def test_check_fails_on_a_stale_file(tmp_path):
    out = tmp_path / "fidelity.md"
    assert fidelity.main(["--out", str(out)]) == 0
    assert fidelity.main(["--check", "--out", str(out)]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("named option", "named opt", 1), encoding="utf-8")
    assert fidelity.main(["--check", "--out", str(out)]) == 1


@pytest.mark.parametrize("entry", [d for d in fidelity.LEDGER if d.option], ids=lambda d: d.id)
def test_every_option_exists_and_changes_the_setting(entry):
    """The option builds into its profile section (unknown keys and wrong types are rejected) and is not the default."""
    opt = entry.option
    default = _section(opt.section)
    switched = _section(opt.section, {opt.dotted: opt.value})
    assert switched != default, f"{entry.id}: {opt} is the paper profile's default already"


def test_artifacts_and_notebooks_are_registered():
    known = {a for nb in NOTEBOOKS for a in nb.artifacts}
    for d in fidelity.LEDGER:
        assert set(d.artifacts) <= known, (d.id, set(d.artifacts) - known)
        assert d.notebooks, d.id
    assert len({d.id for d in fidelity.LEDGER}) == len(fidelity.LEDGER)


def test_issue_18_items_are_in_the_ledger():
    by_item = {n: [d for d in fidelity.LEDGER if d.issue == f"#18.{n}"] for n in range(1, 6)}
    assert all(by_item.values()), {n: len(v) for n, v in by_item.items()}
    bm25 = next(d for d in by_item[1])
    assert str(bm25.option) == 'contrastivemix.bm25_implementation: "bm25s"' and bm25.status == "named option"
    assert _section("contrastivemix").bm25_implementation == "pyserini"  # what the entry calls the default


def test_notebook_tables():
    t = fidelity.table("05")
    assert "BM25 (baseline rows and the hybrid)" in t["topic"].tolist()
    assert set(fidelity.table("03")["topic"]) <= set(fidelity.table("ConCSE")["topic"])
    assert sum(len(fidelity.table(p)) for p in fidelity.PAPERS) == len(fidelity.LEDGER)
    with pytest.raises(ValueError, match="unknown paper or notebook"):
        fidelity.table("Foo")


@pytest.mark.parametrize("spec", NOTEBOOKS, ids=lambda s: s.number)
def test_each_notebook_opens_with_its_ledger_rows(spec):
    import nbformat

    nb = nbformat.read(fidelity.default_path().parents[1] / "notebooks" / spec.file, as_version=4)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert nb.cells.index(first_code) == 1  # right under the title cell
    assert f'fidelity.show("{spec.number}")' in first_code.source
    assert len(fidelity.table(spec.number)) > 0
