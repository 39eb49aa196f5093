"""Shared fixtures.

* ``shared_data``: the folder ``../shared/data`` of real samples (tests that use it
  skip when it is absent, as in a user's clone).
* ``smoke_outputs``: every notebook executed once under the smoke profile, through
  :func:`codeswitch.pipeline.run_notebook` (the path ``reproduce.sh`` takes), into a
  temporary output root shared by the whole session.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("CODESWITCH_NO_PROGRESS", "1")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent (the real data samples are not part of a user's clone)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def backbones_dir(tmp_path_factory) -> Path:
    """One build of the tiny backbones for the whole session."""
    d = tmp_path_factory.mktemp("backbones")
    os.environ["CODESWITCH_BACKBONES"] = str(d)
    return d


def execute_all_notebooks(output_root: Path) -> dict[str, Path]:
    from codeswitch import pipeline

    executed = {}
    for spec in pipeline.available(REPO):
        executed[spec.number] = pipeline.run_notebook(spec, "smoke", output_root=output_root, root=REPO, log_output=False)
    pipeline.write_index("smoke", output_root=output_root, root=REPO)
    return executed


@pytest.fixture(scope="session")
def smoke_outputs(tmp_path_factory, backbones_dir) -> Path:
    root = tmp_path_factory.mktemp("smoke_run_a")
    execute_all_notebooks(root)
    return root


def pytest_configure(config):
    # Tiny models on a small CPU: one torch thread avoids contention between threads.
    import torch

    torch.set_num_threads(1)
