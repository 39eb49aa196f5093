"""Provenance (issue 14, item 5): every table, figure and INDEX.md records how it was made; overrides get a folder of their own."""

from __future__ import annotations

import json
import re
import subprocess

import pandas as pd
import pytest

from codeswitch.core import provenance as P

from codeswitch.pipeline import cli as pipeline
from codeswitch.core.experiment import Results, RunSpec
from codeswitch.core.profiles import figures_folder, load_profile, overrides_hash, profile_hash
from codeswitch.core.report import comparison, save_figure, save_table

from .conftest import REPO


def test_the_folder_is_the_profile_or_profile_plus_the_hash_of_the_sorted_overrides():
    assert figures_folder("smoke") == figures_folder("smoke", {}) == "smoke"
    one = figures_folder("smoke", {"seeds": [1], "glue.num_train_epochs": 1})
    assert re.fullmatch(r"smoke\+[0-9a-f]{8}", one)
    assert one == figures_folder("smoke", {"glue.num_train_epochs": 1, "seeds": [1]})  # order does not matter
    assert one != figures_folder("smoke", {"glue.num_train_epochs": 2, "seeds": [1]})  # values do
    assert figures_folder("smoke", {"executor.kind": "local"}) == "smoke"  # where runs are computed changes no result
    assert overrides_hash({"executor.workers": 3, "seeds": [1]}) == overrides_hash({"seeds": [1]})


def test_a_profile_with_overrides_writes_its_tables_elsewhere(tmp_path):
    plain = load_profile("smoke", root=REPO, output_root=tmp_path)
    changed = load_profile("smoke", {"seeds": [1]}, root=REPO, output_root=tmp_path)
    assert plain.figures_dir == tmp_path / "figures" / "smoke"
    assert changed.figures_dir == tmp_path / "figures" / figures_folder("smoke", {"seeds": [1]}) != plain.figures_dir
    assert changed.runs_dir == plain.runs_dir  # runs are keyed by their spec: the cache is shared
    assert dict(changed.overrides) == {"seeds": [1]} and "overrides    seeds=[1]" in changed.summary()


def _table(profile, name="demo_table", **kw):
    m = pd.DataFrame({"row": ["a", "b"], "column": ["x", "x"], "mean": [1.23456, 2.0], "std": [0.1, 0.0], "n": [2, 2]})
    wide, long = comparison(m, paper=None, table=None)
    return save_table(wide, name, profile, caption="demo", long=long, **kw)


def test_tables_record_profile_overrides_commit_and_inputs(tmp_path):
    cfg = load_profile("smoke", {"seeds": [3]}, root=REPO, output_root=tmp_path)
    before = P.git_state(REPO)
    paths = _table(cfg, inputs={"model": ["tiny-bert"], "koglish": ["synthetic"]})
    after = P.git_state(REPO)  # (a commit made while the test runs moves HEAD: the table has one of the two)
    prov = json.loads((cfg.figures_dir / "demo_table.provenance.json").read_text())
    commit, dirty = prov["git_commit"], prov["git_dirty"]
    assert (commit, dirty) in (before, after) and commit
    assert prov == {
        "profile": "smoke", "profile_file": "configs/smoke.yaml", "profile_hash": profile_hash(cfg), "overrides": {"seeds": [3]},
        "overrides_hash": overrides_hash({"seeds": [3]}), "folder": cfg.figures_dir.name,
        "git_commit": commit, "git_dirty": dirty, "inputs": {"koglish": ["synthetic"], "model": ["tiny-bert"]},
    }
    md = paths["md"].read_text()
    assert "profile: smoke (configs/smoke.yaml)" in md and "overrides: seeds=\\[3\\]" in md
    assert f"git commit: {commit}" in md and "inputs: koglish: synthetic; model: tiny-bert" in md
    tex = paths["tex"].read_text()
    assert tex.startswith("% profile: smoke") and f"% git commit: {commit}" in tex
    index = json.loads((cfg.figures_dir / ".index" / "demo_table.json").read_text())
    assert index["provenance"] == prov
    # the CSV holds the measured cells only: byte-identical with and without overrides, whatever the commit
    plain = _table(load_profile("smoke", root=REPO, output_root=tmp_path))
    assert plain["csv"] != paths["csv"] and plain["csv"].read_bytes() == paths["csv"].read_bytes()
    assert json.loads((plain["csv"].parent / "demo_table.provenance.json").read_text())["overrides"] == {}


def test_figures_carry_the_provenance_in_their_metadata(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    cfg = load_profile("smoke", {"concse.num_train_epochs": 1}, root=REPO, output_root=tmp_path)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    paths = save_figure(fig, "demo_fig", cfg, caption="line", inputs={"model": ["tiny-bert"]})
    plt.close(fig)
    png = json.loads(Image.open(paths["png"]).text["Provenance"])
    assert png["overrides"] == {"concse.num_train_epochs": 1} and png["inputs"] == {"model": ["tiny-bert"]}
    assert png == json.loads((cfg.figures_dir / "demo_fig.provenance.json").read_text())
    pdf = paths["pdf"].read_bytes()
    assert b"/Keywords" in pdf and b"git_commit" in pdf and b"concse.num_train_epochs" in pdf


class _Spec(RunSpec):
    pass


def _spec(model, data):
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class S(RunSpec):
        model: str
        data: str

        def inputs(self):
            return {"model": self.model, "data": self.data}

    return S(model, data)


def test_inputs_come_from_the_runs_and_a_record_s_own_identities_win():
    results = Results((_spec("m1", "d"), _spec("m2", "d"), _spec("m1", "d2")), ({}, {}, {"inputs": {"data": {"ref": "d2", "sha256": "ab"}}}))
    assert P.inputs_of(results) == {"data": ["d", '{"ref":"d2","sha256":"ab"}'], "model": ["m1", "m2"]}

    @P.records_inputs
    def tables(results, profile):
        """doc"""
        return P.current_inputs()

    assert tables(results, None) == P.inputs_of(results) and P.current_inputs() is None  # set only within the call
    assert tables.__doc__ == "doc"


def test_a_local_input_is_recorded_with_the_content_hash_its_key_holds(tmp_path):
    data = tmp_path / "train.tsv"
    data.write_text("a\t1\n", encoding="utf-8")
    spec = _spec("tiny-bert", str(data))
    first = P.inputs_of(Results((spec,), ({},)))["data"]
    assert first == [f"{data} @ {spec.input_identities()['data']}"] and " @ sha256:" in first[0]
    data.write_text("a\t0\n", encoding="utf-8")  # one label changed: another identity, in the key and in the tables
    assert P.inputs_of(Results((spec,), ({},)))["data"] != first


def test_every_experiment_records_the_inputs_of_its_results():
    import importlib

    for mod, fns in {"koglish.tables": ("tables",), "koglish.figures": ("figures",), "glue.tables": ("tables",), "glue.figures": ("figures",),
                     "concse.tables": ("tables",), "concse.figures": ("figures",), "contrastivemix.tables": ("tables",),
                     "contrastivemix.figures": ("figures",), "alignment.tables": ("tables",), "alignment.figures": ("figures",),
                     "calbert.tables": ("tables",), "calbert.figures": ("figures",)}.items():
        m = importlib.import_module(f"codeswitch.{mod}")
        for fn in fns:
            assert getattr(getattr(m, fn), "__wrapped__", None) is not None, f"{mod}.{fn} is not @records_inputs"


def test_git_state_sees_a_dirty_tree(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f").write_text("a")
    subprocess.run(git + ["add", "f"], check=True)
    subprocess.run(git + ["commit", "-qm", "x"], check=True)
    commit, dirty = P.git_state(tmp_path)
    assert re.fullmatch(r"[0-9a-f]{12}", commit) and dirty is False
    (tmp_path / "f").write_text("b")
    assert P.git_state(tmp_path) == (commit, True)
    assert P.git_state(tmp_path / "nope") == ("unknown", False)


def test_a_copy_without_its_history_names_its_commit_through_the_environment(tmp_path, monkeypatch):
    """The GPU machine's copy of the tree holds a .git of another commit: $CODESWITCH_COMMIT (set by the device scripts
    from the carried file) wins, in figures' provenance and in every benchmark record (benchmarks.measure.code_commit)."""
    from benchmarks.measure import code_commit

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    monkeypatch.setenv("CODESWITCH_COMMIT", "7e6585d6eb97417a93a9a18eb7c30c6da6ed15e4")
    assert P.git_state(tmp_path) == ("7e6585d6eb97", False)
    assert code_commit() == "7e6585d6eb97417a93a9a18eb7c30c6da6ed15e4"
    monkeypatch.setenv("CODESWITCH_COMMIT", "65380ce60e7ff18673e2a54514a7104df702fd3d-dirty")
    assert P.git_state(tmp_path) == ("65380ce60e7f", True) and code_commit() == "65380ce60e7ff18673e2a54514a7104df702fd3d-dirty"
    monkeypatch.delenv("CODESWITCH_COMMIT")
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", code_commit())  # this checkout's own
    assert P.git_state(tmp_path, full=True) == ("unknown", False)  # a repository with no commit yet


def test_index_lists_the_overrides_and_each_artifact_s_inputs(tmp_path):
    overrides = {"seeds": [5], "glue.num_train_epochs": 1}
    cfg = load_profile("smoke", overrides, root=REPO, output_root=tmp_path)
    _table(cfg, name="concse_table2", inputs={"model": ["tiny-bert"]})
    index = pipeline.write_index("smoke", output_root=tmp_path, root=REPO, overrides=overrides)
    assert index == cfg.figures_dir / "INDEX.md"
    text = index.read_text()
    assert f"with overrides (`{cfg.figures_dir.name}`)" in text
    assert r"overrides: glue.num\_train\_epochs=1, seeds=\[5\]" in text and "git commit:" in text
    assert "| model: tiny-bert |" in text
    assert not (tmp_path / "figures" / "smoke").exists()  # the profile's own folder is untouched


def test_reproduce_names_the_folder_and_stops_on_a_missing_local_path_before_any_notebook(capsys, monkeypatch):
    assert pipeline.main(["--only", "01", "--set", "seeds=[1]", "--dry-run"]) == 0
    assert f"into {figures_folder('smoke', {'seeds': [1]})}/" in capsys.readouterr().out
    monkeypatch.setattr(pipeline, "run_notebook", lambda *a, **k: pytest.fail("a notebook started"))
    rc = pipeline.main(["--only", "01", "--set", "koglish.dictionary=/no/such/muse.txt"])
    err = capsys.readouterr().err
    assert rc == 2 and "koglish.dictionary = '/no/such/muse.txt' (--set koglish.dictionary)" in err and "does not exist" in err


def test_input_paths_are_written_relative_to_the_repository(tmp_path):
    """Issue 27: INDEX.md's inputs column repeated the absolute paths of the machine that ran it."""
    cfg = load_profile("smoke", root=REPO, output_root=tmp_path)
    asset = REPO / "lib" / "codeswitch" / "assets" / "retrieval" / "en-ar.txt"
    prov = P.provenance(cfg, inputs={"muse": [f"{asset} @ sha256:0123"], "out": str(tmp_path / "runs" / "x"), "model": ["tiny-bert"]})
    assert prov["inputs"] == {"muse": ["lib/codeswitch/assets/retrieval/en-ar.txt @ sha256:0123"], "out": "runs/x", "model": ["tiny-bert"]}
