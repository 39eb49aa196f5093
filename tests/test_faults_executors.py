"""Fault injection, round two (issue 29): the executors, the pipeline's order of checks, full and read-only disks,
duplicate seeds, digests that trust size and mtime, and the messages of bad input.

Each test fails on the code before issue 29 (7af7dfb) and asserts the message, the recomputation or the absence
of a leftover.  The executor tests use stand-in run functions (no training); the real-Slurm test skips where a
single-node Slurm cannot start (scripts/slurm/start_local_cluster.sh), unless CODESWITCH_REQUIRE_SLURM=1.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from codeswitch.core import executors, identity, runs
from codeswitch.core.executors import GridFailed, Task, execute, executor_config
from codeswitch.core.profiles import ConfigError, load_profile
from codeswitch.core.runs import RunCache, run_grid

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _digests(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESWITCH_DIGESTS", str(tmp_path / "_digests" / "sha256.json"))
    for var in (identity.VERIFY_VAR, identity.PROFILE_VERIFY_VAR, runs.WARNINGS_FILE_VAR):
        monkeypatch.delenv(var, raising=False)
    identity._MEMO.clear()
    identity._VERIFIED.clear()
    yield
    identity._MEMO.clear()
    identity._VERIFIED.clear()


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


# =========================================================================== 1. the local executor
def test_local_workers_are_bounded_by_cores_or_gpus():
    assert executors.pool_size(16, [], n_cores=2) == (2, " (16 asked for; bounded by the 2 core(s))")
    assert executors.pool_size(None, [], n_cores=2) == (1, "")
    assert executors.pool_size(2, [], n_cores=8) == (2, "")
    assert executors.pool_size(8, ["0", "1"], n_cores=64)[0] == 2  # never more workers than GPUs (groups)
    assert executors.pool_size(None, ["0,1", "2,3"], n_cores=64) == (2, "")


def _die_on_one(spec):
    if spec["n"] == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer, or `kill -9` of one worker
    return {"n": spec["n"]}


def test_a_killed_worker_fails_only_its_own_run_naming_it_and_its_log(tmp_path, capsys):
    prof = load_profile("smoke", output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="local", workers=2), poll_seconds=0.2)
    cache = RunCache(prof.runs_dir / "toy")
    specs = [{"n": i} for i in range(4)]
    with pytest.raises(GridFailed) as err:
        run_grid(cache, specs, _die_on_one, desc="toy", executor=ex)
    msg = str(err.value)
    assert msg.startswith("1 run(s) failed") and "BrokenProcessPool" not in msg
    assert f"toy run {runs.config_hash({'n': 1})} failed: its worker process" in msg and "SIGKILL" in msg and '"n":1' in msg
    log = Path(msg.split("log:")[1].split()[0])
    assert log.is_file() and "run " + runs.config_hash({"n": 1}) in log.read_text()
    assert [cache.get(s) for s in specs] == [{"n": 0}, None, {"n": 2}, {"n": 3}]  # the others computed
    assert not list(cache.root.glob(".*"))  # no stray .lock file (nor temp)


_PARENT = textwrap.dedent("""
    import functools, os, sys, time
    from pathlib import Path
    from codeswitch.core.executors import Task, execute, executor_config
    from codeswitch.core.profiles import load_profile

    def sleeper(spec, out):
        Path(out, str(os.getpid())).touch()
        time.sleep(120)
        return {"n": spec["n"]}

    root = Path(sys.argv[1])
    prof = load_profile("smoke", output_root=root)
    ex = executor_config(prof, kind="local", workers=int(sys.argv[2]))
    fn = functools.partial(sleeper, out=str(root / "pids"))
    execute([Task(str(root / "toy"), {"n": i}, fn) for i in range(4)], ex)
""")


def test_workers_die_with_their_parent(tmp_path):
    """SIGKILL of reproduce.sh must not orphan its workers (each holding its memory, or a GPU) nor the resource tracker."""
    (tmp_path / "pids").mkdir()
    n = min(2, executors.cores())
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(tmp_path), str(n)], cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(list((tmp_path / "pids").iterdir())) < n:
            assert parent.poll() is None and time.monotonic() < deadline, "the workers never started their runs"
            time.sleep(0.2)
        below = _descendants(parent.pid)
        workers = {int(p.name) for p in (tmp_path / "pids").iterdir()}
        assert workers <= below
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 20
    while any(_alive(p) for p in below) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [p for p in below if _alive(p)] == []  # workers and the resource tracker are gone
