"""Shared fixtures.

* ``shared_data``: the folder ``../shared/data`` of real samples (tests that use it
  skip when it is absent, as in a user's clone).
* ``smoke_run``: notebooks executed under the smoke profile, through
  :func:`codeswitch.pipeline.cli.run_notebook` (the path ``reproduce.sh`` takes), into a
  temporary output root shared by the whole session (each notebook at most once).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One thread per native pool, in this process and in every process it starts (the notebooks' kernels, the executors'
# workers): the suite runs two pytest-xdist workers on two cores, each running tiny models.  The smoke profile sets
# torch's count itself (cpu_threads: 1), but the paper-ci profile leaves it to torch (cpu_threads: null, as paper), so a
# paper-ci kernel ran two threads beside the other worker's: notebook 06 under paper-ci took 235 CPU-s in its kernel,
# against 10 CPU-s for the same runs on one thread (measured on a busy 2-core machine).  Only the thread count changes.
for _pool in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("CODESWITCH_NO_PROGRESS", "1")


@pytest.fixture(autouse=True)
def _restore_process_settings():
    """Each test leaves the process as it found it: the environment and torch's thread count.  Loading a profile sets
    process-wide settings (codeswitch.core.profiles.apply_process_settings: HF_*_OFFLINE, the profile's name and
    hash-check variables, torch's threads), so one test's profile leaked into every later test on its worker, and a
    test could pass or fail by the tests before it.  Session- and module-scoped fixtures are set up before this
    snapshot, so what they set stays for the tests that share them."""
    import torch

    env, threads = dict(os.environ), torch.get_num_threads()
    yield
    if dict(os.environ) != env:
        os.environ.clear()
        os.environ.update(env)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


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


class SmokeRun:
    """Notebooks executed under the smoke profile into one output root, each at most once, on demand.

    Lazy, so ``./test.sh -k 03_`` executes only notebook 03 (it builds what it
    needs itself, e.g. the mini Koglish); the determinism test asks for all.
    """

    def __init__(self, root: Path):
        self.root = root
        self.executed: dict[str, Path] = {}

    def ensure(self, spec) -> Path:
        from codeswitch.pipeline import cli as pipeline

        if spec.number not in self.executed:
            self.executed[spec.number] = pipeline.run_notebook(spec, "smoke", output_root=self.root, root=REPO, log_output=False)
            pipeline.write_index("smoke", output_root=self.root, root=REPO)
        return self.executed[spec.number]

    def ensure_all(self) -> "SmokeRun":
        from codeswitch.pipeline import cli as pipeline

        for spec in pipeline.available(REPO):
            self.ensure(spec)
        return self


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, backbones_dir) -> SmokeRun:
    return SmokeRun(tmp_path_factory.mktemp("smoke_run_a"))

#: xdist groups that start first (the longest chains: the smoke run's notebooks and the tests that read them; paper-ci)
FIRST_GROUPS = ("smoke_run", "second_smoke_run", "tests.test_paper_ci")
#: the smoke run's tests that execute one notebook each (tests/test_notebooks.py)
EXECUTES_ONE_NOTEBOOK = ("test_notebook_writes_its_artifacts",)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (``./test.sh -n 2 --dist loadgroup --no-loadscope-reorder``, as ``.ci/run`` runs it): every
    test that uses the smoke run is in one group, so one worker executes its notebooks once, and the tests of any other
    module are in one group (its module-scoped fixtures, e.g. paper-ci's stand-ins and runs, are set up once).  The
    determinism test's second smoke run has a group of its own.  The longest groups are collected first, so they start
    first, one per worker (the smoke run on one, its second run then paper-ci on the other), and the rest fill in."""
    if not getattr(config.option, "loadgroup", False):  # set in xdist's workers under --dist loadgroup
        return

    def group(item) -> str:
        fixtures = getattr(item, "fixturenames", ())
        if "smoke_run" in fixtures:
            return "smoke_run"
        if "second_smoke_run" in fixtures:  # the determinism test's second run, beside the first (tests/test_notebooks.py)
            return "second_smoke_run"
        return getattr(getattr(item, "module", None), "__name__", None) or item.nodeid.split("::")[0]

    groups = {id(item): group(item) for item in items}
    rank = {g: i for i, g in enumerate(FIRST_GROUPS)}
    # Within the smoke run's group the tests that execute one notebook each come first, so that each notebook's time is
    # its own test's in the log's slowest tests (the book's test, collected first, asked for every notebook and was
    # listed at the whole smoke run's time); the order changes nothing else.
    first = {id(item) for item in items if getattr(item, "originalname", None) in EXECUTES_ONE_NOTEBOOK}
    items.sort(key=lambda item: (rank.get(groups[id(item)], len(rank)), id(item) not in first))  # stable within a key
    for item in items:
        # What xdist does for an ``xdist_group`` mark: its scheduler groups by the text after "@" in the test's id.
        # xdist 3.8 sets ``item._nodeid``, which pytest 9 no longer reads (its id is ``item._id``), so its marks group
        # nothing (measured: a group's tests went to both workers); the id is set here, in the form xdist reads.
        _set_nodeid(item, f"{item.nodeid}@{groups[id(item)]}")


def _set_nodeid(item, nodeid: str) -> None:
    if hasattr(item, "_id"):  # pytest >= 9
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(nodeid)
    else:
        item._nodeid = nodeid


def pytest_configure(config):
    # The token cache (common.tokens) of this test process: never the project's runs/.tokens, which a user's own
    # runs read (a test that wants a cache of its own still sets CODESWITCH_TOKEN_CACHE itself).
    if not os.environ.get("CODESWITCH_TOKEN_CACHE"):
        import tempfile

        os.environ["CODESWITCH_TOKEN_CACHE"] = config._codeswitch_token_cache = tempfile.mkdtemp(prefix="codeswitch-tokens-")
    # Tiny models on a small CPU: one torch thread avoids contention between threads.
    import torch

    torch.set_num_threads(1)


def pytest_unconfigure(config):
    made = getattr(config, "_codeswitch_token_cache", None)
    if made:
        import shutil

        shutil.rmtree(made, ignore_errors=True)
        os.environ.pop("CODESWITCH_TOKEN_CACHE", None)
