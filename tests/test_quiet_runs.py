"""./reproduce.sh reads well in a log: one start and one end line per notebook, progress lines only
from the library, no papermill cell log, no display reprs, no kernel warnings; messages a newcomer
meets point at commands that exist."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from codeswitch.core import hub, pipeline

from .conftest import REPO


@pytest.mark.slow
def test_reproduce_log_is_one_start_and_one_end_line_per_notebook(tmp_path):
    env = dict(os.environ, CODESWITCH_OUTPUT_ROOT=str(tmp_path), PYTHONPATH=str(REPO / "lib"))
    r = subprocess.run([sys.executable, "-m", "codeswitch.core.pipeline", "--only", "01"], cwd=REPO, env=env,
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


def test_missing_resource_message_gives_commands_that_exist():
    msg = hub.missing_message("bert-base-multilingual-cased", kind="model", reason="offline", what="glue.backbones.mBERT-base.model")
    assert "hf download bert-base-multilingual-cased --local-dir /some/folder/bert-base-multilingual-cased" in msg
    assert "./reproduce.sh --profile <profile> --set 'glue.backbones.mBERT-base.model=/some/folder/bert-base-multilingual-cased'" in msg
    assert "huggingface-cli" not in msg and "-p overrides" not in msg
    kog = hub.missing_message("Jangyeong/Koglish_NLI", kind="dataset", reason="offline", what="koglish_source",
                              local_dir="/some/folder/Koglish/Koglish_NLI", set_to="/some/folder/Koglish")
    assert "hf download --repo-type dataset Jangyeong/Koglish_NLI --local-dir /some/folder/Koglish/Koglish_NLI" in kog
    assert "--set 'koglish_source=/some/folder/Koglish'" in kog  # the loaders want the parent folder
