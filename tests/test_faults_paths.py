"""Issue 41, item 2: one rule for relative paths.

A relative path on the command line is relative to the directory where the command was typed; the CLI resolves it
once to an absolute path, which the preflight, the kernel (papermill's parameters; its cwd is ``notebooks/``) and the
provenance all receive.  Before: ``--check`` checked the repository root's ``kog/``, the kernel trained on
``notebooks/kog/``, and ``--profile ./my.yaml`` typed elsewhere looked in the repository root.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nbformat

from codeswitch.pipeline import cli as pipeline
from codeswitch.pipeline import command, export

from .conftest import REPO
from .test_pipeline import _fake_root


def test_relative_command_line_paths_are_made_absolute_from_where_the_command_was_typed(tmp_path):
    work = tmp_path / "work"
    (work / "data" / "sail").mkdir(parents=True)
    resolve = lambda v: command.absolute_paths(v, work)  # noqa: E731
    assert resolve("./kog") == str(work / "kog")
    assert resolve("../shared/data/koglish_sample") == str(tmp_path / "shared" / "data" / "koglish_sample")
    assert resolve("data/sail") == str(work / "data" / "sail")  # an existing relative path with a /
    assert resolve("nyu-mll/glue") == "nyu-mll/glue"  # a hub id: no such folder here
    assert resolve("synthetic") == "synthetic" and resolve("cuda:0") == "cuda:0" and resolve(3) == 3
    assert resolve("/abs/x") == "/abs/x"
    assert resolve([{"name": "m", "model": "./models/m"}]) == [{"name": "m", "model": str(work / "models" / "m")}]


NOTEBOOK = """
from pathlib import Path
from codeswitch.core.profiles import load_profile
from codeswitch.core.provenance import provenance
cfg = load_profile(profile, overrides)
print("source", cfg.koglish_source)
print("which", (Path(cfg.koglish_source) / "which.txt").read_text())
print("provenance", provenance(cfg)["overrides"])
"""


def test_two_same_named_folders_the_check_the_kernel_and_the_provenance_take_the_one_of_the_cwd(tmp_path, monkeypatch, capsys):
    root = _fake_root(tmp_path, NOTEBOOK)
    work = tmp_path / "work"
    for folder, label in ((root / "kog", "repository root"), (root / "notebooks" / "kog", "notebooks/"), (work / "kog", "cwd")):
        folder.mkdir(parents=True)
        (folder / "which.txt").write_text(label)
    checked = []
    monkeypatch.setenv("CODESWITCH_HOME", str(root))
    monkeypatch.setenv(command.CWD_VAR, str(work))  # as reproduce.sh exports it before changing into the repository
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path / "out"))
    monkeypatch.setattr(pipeline, "validate_sections", lambda profile: None)
    monkeypatch.setattr(pipeline, "missing_resources", lambda profile, numbers: checked.append(profile.koglish_source) or [])
    monkeypatch.setattr(pipeline, "write_index", lambda *a, **kw: tmp_path / "INDEX.md")
    assert pipeline.main(["--only", "01", "--set", "koglish_source=./kog"]) == 0
    assert checked == [str(work / "kog")]  # the preflight
    executed = tmp_path / "out" / "runs"
    nb = nbformat.read(next(executed.glob("smoke+*/notebooks/01_*.ipynb")), as_version=4)
    out = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert f"source {work / 'kog'}" in out and "which cwd" in out  # the kernel (cwd notebooks/) read the cwd's folder
    assert str(work / "kog") in out.split("provenance", 1)[1]  # and the provenance records that absolute path


def test_profile_yaml_relative_to_where_the_command_was_typed(tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(REPO / "configs" / "smoke.yaml", work / "my.yaml")
    monkeypatch.setenv(command.CWD_VAR, str(work))
    args = pipeline.resolve_cli_paths(pipeline.parser().parse_args(["--profile", "./my.yaml", "--set", "seeds=[1]"]))
    assert args.profile == str(work / "my.yaml") and args.overrides == ["seeds=[1]"]  # other values: as typed
    args = pipeline.resolve_cli_paths(export.export_parser().parse_args(["models_rel", "--profile", "smoke"]))
    assert args.dir == str(work / "models_rel") and args.profile == "smoke"  # export DIR: under the cwd, not the repository


def test_reproduce_sh_passes_the_directory_it_was_typed_in(tmp_path):
    """reproduce.sh changes into the repository: it exports where it was typed first."""
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(REPO / "configs" / "smoke.yaml", work / "my.yaml")
    env = {**{k: v for k, v in os.environ.items() if k != command.CWD_VAR}, "CODESWITCH_OUTPUT_ROOT": str(tmp_path / "out")}
    # --book loads the profile, then stops (nothing was run): it found ./my.yaml of the cwd, not of the repository
    r = subprocess.run([str(REPO / "reproduce.sh"), "--profile", "./my.yaml", "--book"], cwd=work, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "no profile" not in r.stderr, r.stderr[-2000:]
    assert f"no executed notebooks in {tmp_path / 'out' / 'runs' / 'my' / 'notebooks'}" in r.stderr, r.stderr[-2000:]
    text = (REPO / "reproduce.sh").read_text()
    assert 'export CODESWITCH_CWD="${CODESWITCH_CWD:-$PWD}"' in text
    assert text.index("export CODESWITCH_CWD") < text.index('cd "$(dirname')
