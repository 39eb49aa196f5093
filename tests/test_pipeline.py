"""The papermill driver: success, failure naming notebook and cell, index."""

from __future__ import annotations

import shutil
import subprocess

import nbformat
import pytest

from codeswitch.pipeline import cli as pipeline
from codeswitch.core.profiles import figures_folder

from .conftest import REPO


def _fake_root(tmp_path, body: str):
    root = tmp_path / "repo"
    (root / "configs").mkdir(parents=True)
    (root / "notebooks").mkdir()
    (root / "pyproject.toml").write_text("[project]\nname='x'\n")
    shutil.copy(REPO / "configs" / "smoke.yaml", root / "configs" / "smoke.yaml")
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "smoke"\noverrides = {}')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), params, nbformat.v4.new_code_cell(body)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, root / "notebooks" / pipeline.NOTEBOOKS[0].file)
    return root


WRITE_TABLE = """
import pandas as pd
from codeswitch.core.profiles import load_profile
from codeswitch.core.report import save_table, comparison
cfg = load_profile(profile, overrides)
m = pd.DataFrame({"row": ["a"], "column": ["x"], "mean": [1.5], "std": [0.1], "n": [2]})
wide, long = comparison(m, paper=None, table=None)
save_table(wide, "concse_table1", cfg, caption="demo", long=long)
print("seeds", cfg.seeds)
"""


def test_run_notebook_writes_executed_copy_and_index(tmp_path):
    root = _fake_root(tmp_path, WRITE_TABLE)
    out = tmp_path / "out"
    spec = pipeline.NOTEBOOKS[0]
    executed = pipeline.run_notebook(spec, "smoke", output_root=out, root=root, overrides={"seeds": [7]}, log_output=False)
    # the executed copy of a run with overrides lies beside its results, never over the profile's own copy
    assert executed == out / "runs" / figures_folder("smoke", {"seeds": [7]}) / "notebooks" / spec.file
    assert not (out / "runs" / "smoke" / "notebooks").exists()
    nb = nbformat.read(executed, as_version=4)
    assert "seeds (7,)" in "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    # a run with overrides writes into a folder of its own, never the profile's
    folder = out / "figures" / figures_folder("smoke", {"seeds": [7]})
    assert folder.name.startswith("smoke+") and not (out / "figures" / "smoke").exists()
    assert (folder / "concse_table1.csv").read_text().startswith("row,column,mean,std,n")
    index = pipeline.write_index("smoke", output_root=out, root=root, overrides={"seeds": [7]})
    assert index == folder / "INDEX.md"
    text = index.read_text()
    assert "`concse_table1`" in text and f"`{spec.stem}`" in text and "git commit" in text and r"seeds=\[7\]" in text
    assert f"(../../runs/{folder.name}/notebooks/)" in text  # INDEX.md links the executed copies of this run
    assert (index.parent / f"../../runs/{folder.name}/notebooks" / spec.file).resolve() == executed.resolve()
    assert not list(executed.parent.glob("*.running.ipynb"))
    # without overrides: runs/<profile>/notebooks/
    assert pipeline.run_notebook(spec, "smoke", output_root=out, root=root, log_output=False) == out / "runs" / "smoke" / "notebooks" / spec.file


def test_failing_notebook_names_the_cell_and_keeps_the_copy(tmp_path):
    root = _fake_root(tmp_path, "x = 1\nraise ValueError('boom in the third cell')")
    with pytest.raises(pipeline.NotebookFailed) as info:
        pipeline.run_notebook(pipeline.NOTEBOOKS[0], "smoke", output_root=tmp_path / "out", root=root, log_output=False)
    err = info.value
    assert err.cell == 3 and "boom in the third cell" in str(err) and pipeline.NOTEBOOKS[0].file in str(err)
    nb = nbformat.read(err.executed, as_version=4)
    assert any(o.get("ename") == "ValueError" for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_reproduce_help_lists_every_option():
    r = subprocess.run(["./reproduce.sh", "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    parser_opts = set()
    for action in pipeline.parser()._actions:
        parser_opts.update(o for o in action.option_strings if o.startswith("--"))
    assert {"--dry-run", "--account", "--check", "--prepare", "--executor", "--workers", "--partition", "--set", "--only"} <= parser_opts
    for opt in parser_opts:
        assert opt in r.stdout, f"./reproduce.sh --help does not mention {opt}"


def test_cli_list_and_unknown_notebook(capsys):
    assert pipeline.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert all(s.file in out for s in pipeline.NOTEBOOKS)
    with pytest.raises(SystemExit, match="no notebook numbered 99"):
        pipeline.select(pipeline.available(REPO), "99")


def test_reproduce_help_needs_no_environment():
    res = subprocess.run([str(REPO / "reproduce.sh"), "--help"], capture_output=True, text=True, timeout=20)
    assert res.returncode == 0 and "--profile paper" in res.stdout and "--only" in res.stdout


def test_the_warnings_folder_keeps_only_the_current_runs_file(tmp_path):
    """runs/<profile>/.warnings/ held one file per run, forever: a new run removes those of runs that ended."""
    import os
    import subprocess as sp

    from codeswitch.core.atomic import HOST

    folder = tmp_path / ".warnings"
    folder.mkdir()
    dead = sp.Popen(["true"])
    dead.wait()
    ended = [folder / f"20260101-000000-{dead.pid}.jsonl", folder / f"20260101-000001-{HOST}-{dead.pid}.jsonl"]
    running = folder / f"20260101-000002-{HOST}-{os.getppid()}.jsonl"  # a run still going on beside this one
    elsewhere = folder / "20260101-000003-otherhost-1.jsonl"  # another machine's, written just now
    for p in [*ended, running, elsewhere]:
        p.write_text('{"kind": "X", "message": "m"}\n')
    current = pipeline.fresh_warnings_file(tmp_path)
    assert current.parent == folder and current.read_text() == "" and str(os.getpid()) in current.name
    assert sorted(folder.iterdir()) == sorted([current, running, elsewhere])
