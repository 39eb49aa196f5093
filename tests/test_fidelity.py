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


def _setting(opt: fidelity.Option, overrides: dict | None = None):
    """The option's section as built from the paper profile, or its top-level value (section "")."""
    if not opt.section:
        return getattr(load_profile("paper", overrides=overrides), opt.key)
    return _section(opt.section, overrides)


@pytest.mark.parametrize("entry", [d for d in fidelity.LEDGER if d.option], ids=lambda d: d.id)
def test_every_option_exists_and_changes_the_setting(entry):
    """The option builds into its profile section (unknown keys and wrong types are rejected) and is not the default."""
    opt = entry.option
    default = _setting(opt)
    switched = _setting(opt, {opt.dotted: opt.value})
    assert switched != default, f"{entry.id}: {opt} is the paper profile's default already"


def test_a_top_level_option_is_dotted_as_its_key():
    opt = fidelity.Option("", "precision", "fp32")
    assert opt.dotted == "precision" and str(opt) == 'precision: "fp32"'
    assert _setting(opt) == "auto" and _setting(opt, {"precision": "fp32"}) == "fp32"


# --------------------------------------------------------------------------- sources of released-code rows (issue 39 §3)
def _row(**kw):
    base = dict(id="made-up", paper="ConCSE", notebooks=("03",), topic="t", paper_says="p",
                released_code="model.py does X", default="d", option=None, artifacts=("concse_table3",), status="no option")
    return fidelity.Deviation(**{**base, **kw})


def test_every_released_code_row_names_its_file_and_commit():
    """SOURCE_RULE: each row that cites released code names at least one owner/repo@commit:path of its paper's repository."""
    citing = [d for d in fidelity.LEDGER if fidelity.cites_released_code(d.released_code)]
    assert len(citing) >= 45  # most rows cite code; the rest say "—" or "not released ..."
    assert [d.id for d in citing if not d.source] == []
    for d in fidelity.LEDGER:
        assert fidelity.source_problems(d) == [], d.id
        for cite in d.source:
            m = fidelity.SOURCE_RE.match(cite)
            assert m["repo"] in fidelity.RELEASED_REPOS[d.paper] and len(m["commit"]) >= 7 and not m["path"].endswith("/"), cite
    assert "jjy961228/ConCSE@84a0191:algorithms/Koglish_test_Sect5.1/run_mbert.sh" in next(
        d for d in fidelity.LEDGER if d.id == "mbert-casing").source


@pytest.mark.parametrize("kw, message", [
    ({}, "source must name the file"),  # cites code, no source
    ({"source": ("jjy961228/ConCSE:algorithms/model.py",)}, "not 'owner/repo@commit:path'"),  # no commit
    ({"source": ("jjy961228/ConCSE@84a0191",)}, "not 'owner/repo@commit:path'"),  # no file
    ({"source": ("jjy961228/ConCSE@main:model.py",)}, "not 'owner/repo@commit:path'"),  # a branch, not a commit
    ({"source": ("jjy961228/ConCSE@84a0191:algorithms/",)}, "names a folder"),
    ({"source": ("someone/fork@84a0191:model.py",)}, "is not ConCSE's released repository"),
    ({"source": "jjy961228/ConCSE@84a0191:model.py"}, "must be a tuple"),
])
def test_a_made_up_released_code_row_without_file_and_commit_fails(kw, message):
    with pytest.raises(ValueError, match=message) as err:
        _row(**kw)
    assert "made-up" in str(err.value)  # the error names the row


def test_rows_without_released_code_need_no_source():
    assert _row(released_code="—").source == ()
    assert _row(released_code="not released (the construction code); the released rows ...").source == ()
    assert _row(source=("jjy961228/ConCSE@84a0191:algorithms/ConCSE_test_Sect5.2/model.py",)).source
    assert fidelity.cites_released_code("not implemented: both scripts ...")  # a claim about the code: needs a source


def test_issue_39_section_2_items_are_in_the_ledger():
    by_id = {d.id: d for d in fidelity.LEDGER}
    new = ["concse-dense-head", "precision-bf16", "glue-group-by-length", "glue-mbart-50", "cm-align-weight",
           "cm-seeds-ttest", "cm-mixed-dropout", "al-tuning", "cb-pretrain-lr", "koglish-parser", "koglish-np-length",
           "koglish-pronouns", "koglish-extra-exclusions", "koglish-exclusion-sample"]
    assert [i for i in new if i not in by_id or by_id[i].issue != "#39.2"] == []
    assert str(by_id["precision-bf16"].option) == 'precision: "fp32"'
    assert str(by_id["cb-pretrain-lr"].option) == "calbert.pretrain.learning_rate: 2e-05"
    assert _section("calbert").pretrain.learning_rate == 2.5e-5  # what cb-pretrain-lr calls the default


def test_the_koglish_glue_mbert_default_is_the_released_uncased_model():
    """issue 39 §3: the released run_mbert.sh runs mbert_uncased; the cased model is the option."""
    glue = _section("glue")
    assert glue.backbone("mBERT-base").model == "bert-base-multilingual-uncased"
    row = next(d for d in fidelity.LEDGER if d.id == "mbert-casing")
    assert row.option.value == "bert-base-multilingual-cased" and "Appendix A.1 names the cased" not in row.paper_says


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
