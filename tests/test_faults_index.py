"""Issue 41, item 4: INDEX.md never lies.

* Each artifact records the hash of the resolved profile that made it (its provenance: ``profile_hash``).
* INDEX.md marks every artifact whose hash is not the current profile's as **STALE** (a profile edited to 1 epoch,
  a table written, the edit reverted: the table was listed as current), and every notebook whose last run failed,
  with the reason and the log (a failed run gave INDEX.md a fresh date and listed the old tables as current).
* The book never publishes a failed notebook's copy: it shows the last complete run under a banner.
* ``--book --set`` builds the override's book from the override's notebooks, in the override's folder (it built the
  profile's own and wrote over the profile's book).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import yaml

from codeswitch.core.profiles import figures_folder, load_profile, profile_hash
from codeswitch.core.report import save_table
from codeswitch.pipeline import book, cli as pipeline
from codeswitch.pipeline.notebooks import executed_dir, partial_copy

from .conftest import REPO


def _table(profile, name: str):
    return save_table(pd.DataFrame({"score": ["0.1"]}, index=pd.Index(["run"], name="model")), name, profile, caption="a table")


def test_the_profile_hash_follows_the_result_changing_settings_only():
    smoke = load_profile("smoke", root=REPO)
    assert profile_hash(smoke) == profile_hash(load_profile("smoke", root=REPO))
    assert profile_hash(load_profile("smoke", {"glue.num_train_epochs": 1}, root=REPO)) != profile_hash(smoke)
    assert profile_hash(load_profile("smoke", {"seeds": [1]}, root=REPO)) != profile_hash(smoke)
    assert profile_hash(load_profile("smoke", {"glue.keep_models": "best"}, root=REPO)) == profile_hash(smoke)  # saves, changes nothing


def test_index_marks_artifacts_made_with_other_settings_as_stale(tmp_path):
    mine = tmp_path / "mine.yaml"
    original = (REPO / "configs" / "smoke.yaml").read_text()
    data = yaml.safe_load(original)
    data["concse"]["num_train_epochs"] = 1  # a 1-epoch edit
    mine.write_text(yaml.safe_dump(data))
    edited = load_profile(mine, root=REPO, output_root=tmp_path)
    _table(edited, "concse_table3")  # written under the edited profile
    mine.write_text(original)  # ... the edit reverted
    current = load_profile(mine, root=REPO, output_root=tmp_path)
    assert profile_hash(current) != profile_hash(edited)
    _table(current, "concse_table1")
    prov = json.loads((current.figures_dir / "concse_table3.provenance.json").read_text())
    assert prov["profile_hash"] == profile_hash(edited)  # each artifact records the settings that made it
    text = pipeline.write_index(str(mine), output_root=tmp_path, root=REPO).read_text()
    assert "| `concse_table3` **STALE** |" in text and "| `concse_table1` |" in text
    assert f"**STALE**: made with other profile settings than this profile's now (settings hash {profile_hash(current)}): " \
           f"`concse_table3` ({profile_hash(edited)})" in text
    assert f"profile settings hash: {profile_hash(current)}" in text


def _failed_copy(folder: Path, spec) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("raise ValueError('boom')", execution_count=3)
    cell.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="boom in cell three", traceback=["..."])]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), cell]
    path = partial_copy(folder / spec.file, "failed")
    nbformat.write(nb, path)
    return path


def test_index_lists_the_notebooks_whose_last_run_failed_with_reason_and_log(tmp_path):
    prof = load_profile("smoke", root=REPO, output_root=tmp_path)
    _table(prof, "concse_table1")
    spec = pipeline.NOTEBOOKS[0]
    log = _failed_copy(executed_dir(prof), spec)
    text = pipeline.write_index("smoke", output_root=tmp_path, root=REPO).read_text()
    assert "**The last run of these notebooks did not complete**" in text
    assert f"- `{spec.stem}`: failed in cell 3: ValueError: boom in cell three (log: [{log.name}](../../runs/smoke/notebooks/{log.name}))" in text
    log.unlink()  # a later complete run removes the failed copy: the index says nothing more
    assert "did not complete" not in pipeline.write_index("smoke", output_root=tmp_path, root=REPO).read_text()


@pytest.fixture
def no_sphinx(monkeypatch, tmp_path):
    """book.build without Sphinx and KaTeX: what it would render (its source folder) is kept for the test to read."""
    seen = {}
    dist = tmp_path / "katex-dist"
    dist.mkdir()
    (dist / "katex.min.css").write_text("")
    monkeypatch.setattr(book, "vendor_katex", lambda cache: dist)

    class Done:
        returncode = 0

    def sphinx(cmd, **kw):
        src, out = Path(cmd[-2]), Path(cmd[-1])
        seen["src"] = tmp_path / "rendered"
        shutil.rmtree(seen["src"], ignore_errors=True)
        shutil.copytree(src, seen["src"])
        out.mkdir(parents=True)
        (out / "index.html").write_text("<html></html>")
        return Done()

    monkeypatch.setattr(book.subprocess, "run", sphinx)
    return seen


def _complete_copy(folder: Path, spec, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text)]
    nbformat.write(nb, folder / spec.file)
    return folder / spec.file


def test_the_book_of_a_set_run_is_built_from_its_own_notebooks_into_its_own_folder(tmp_path, no_sphinx):
    spec = pipeline.NOTEBOOKS[0]
    plain = load_profile("smoke", root=REPO, output_root=tmp_path)
    over = load_profile("smoke", {"seeds": [7]}, root=REPO, output_root=tmp_path)
    for prof, text in ((plain, "the profile's run"), (over, "the override's run")):
        _complete_copy(executed_dir(prof), spec, text)
        _table(prof, "concse_table1")
        pipeline.write_index("smoke", output_root=tmp_path, root=REPO, overrides=dict(prof.overrides))
    (tmp_path / "runs" / "smoke" / "book").mkdir(parents=True)
    (tmp_path / "runs" / "smoke" / "book" / "index.html").write_text("the profile's book")
    index = book.build("smoke", overrides={"seeds": [7]}, root=REPO, output_root=tmp_path)
    assert index == tmp_path / "runs" / figures_folder("smoke", {"seeds": [7]}) / "book" / "index.html"
    assert (tmp_path / "runs" / "smoke" / "book" / "index.html").read_text() == "the profile's book"  # untouched
    rendered = (no_sphinx["src"] / "notebooks" / spec.file).read_text()
    assert "the override's run" in rendered and "the profile's run" not in rendered


def test_the_book_never_publishes_a_failed_copy_and_bans_the_page_of_a_notebook_whose_last_run_failed(tmp_path, no_sphinx):
    spec = pipeline.NOTEBOOKS[0]
    prof = load_profile("smoke", root=REPO, output_root=tmp_path)
    _complete_copy(executed_dir(prof), spec, "the last complete run")
    _failed_copy(executed_dir(prof), spec)
    _table(prof, "concse_table1")
    pipeline.write_index("smoke", output_root=tmp_path, root=REPO)
    book.build("smoke", root=REPO, output_root=tmp_path)
    pages = sorted(p.name for p in (no_sphinx["src"] / "notebooks").iterdir())
    assert pages == [spec.file]  # the failed copy (its traceback) is not published
    nb = nbformat.read(no_sphinx["src"] / "notebooks" / spec.file, as_version=4)
    assert nb.cells[0].source.startswith("```{warning}\nThe last run of this notebook did not complete: failed in cell 3: "
                                         "ValueError: boom in cell three.")
    assert nb.cells[1].source == "the last complete run"
