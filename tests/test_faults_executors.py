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


# =========================================================================== 2. submitit-local
def _timed(spec, out):
    start = time.time()
    time.sleep(1.0)
    Path(out, f"{spec['n']}.json").write_text(json.dumps([start, time.time()]))
    return {"n": spec["n"]}


def test_submitit_local_runs_at_most_one_job_per_core(tmp_path, capsys):
    """submitit's local executor starts every job it is given at once (16 jobs, 15 together on 2 cores)."""
    (tmp_path / "t").mkdir()
    prof = load_profile("smoke", output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="submitit-local"), poll_seconds=0.2)
    fn = functools.partial(_timed, out=str(tmp_path / "t"))
    n = executors.cores() + 2
    assert execute([Task(str(tmp_path / "toy"), {"n": i}, fn) for i in range(n)], ex, desc="toy") == []
    spans = [json.loads(p.read_text()) for p in (tmp_path / "t").iterdir()]
    assert len(spans) == n
    overlap = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert overlap <= executors.cores(), f"{overlap} jobs ran at once on {executors.cores()} core(s)"
    assert f"at most {executors.cores()} job(s) at once" in capsys.readouterr().out


def _slow(spec, out):
    Path(out).touch()  # the run holds its lock from here on
    time.sleep(4)
    return {"n": spec["n"]}


def test_a_killed_submitit_local_controller_whose_run_goes_on_is_not_a_failure(tmp_path):
    import threading

    prof = load_profile("smoke", output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="submitit-local"), poll_seconds=0.2)
    started = tmp_path / "started"
    task = Task(str(tmp_path / "toy"), {"n": 0}, functools.partial(_slow, out=str(started)))
    out: dict = {}
    th = threading.Thread(target=lambda: out.setdefault("failures", execute([task], ex, desc="toy", raise_on_failure=False)))
    th.start()
    deadline = time.monotonic() + 120
    while not started.exists():
        assert th.is_alive() and time.monotonic() < deadline, "the run never started"
        time.sleep(0.1)
    controllers = [p for p in _descendants(os.getpid())
                   if b"submitit.local._local" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert len(controllers) == 1
    os.kill(controllers[0], signal.SIGKILL)
    th.join(120)
    assert out["failures"] == []  # the run went on and wrote its record: reported as done
    assert RunCache(tmp_path / "toy").get({"n": 0}) == {"n": 0}


# =========================================================================== 3. Slurm without accounting
class _NeverDoneJob:
    """A Slurm job as submitit sees it without accounting after ``scancel``: never done."""

    def __init__(self, i: int, folder: Path):
        self.job_id = f"4242_{i}"
        self.paths = type("Paths", (), {"stderr": folder / f"4242_{i}_0_log.err"})()

    def done(self) -> bool:
        return False


def test_a_cancelled_slurm_job_is_reported_not_waited_on_forever(tmp_path, monkeypatch):
    """No Slurm needed: submitit never sees the cancellation (sacct has nothing); the job's absence from squeue,
    with no record and no lock held, for ``slurm.vanished_s``, makes it a failure naming the job and its log."""
    import contextlib

    import submitit

    class FakeExecutor:
        def __init__(self, folder, cluster):
            self.folder, self.n = Path(str(folder).replace("%j", "")), 0

        def update_parameters(self, **kw):
            pass

        @contextlib.contextmanager
        def batch(self):
            yield

        def submit(self, fn, task):
            self.n += 1
            return _NeverDoneJob(self.n - 1, self.folder)

    monkeypatch.setattr(submitit, "AutoExecutor", FakeExecutor)
    monkeypatch.setattr(executors, "_squeue_ids", lambda: {"9999_0"})  # squeue answers, without our jobs
    prof = load_profile("smoke", output_root=tmp_path)
    ex = executor_config(prof, kind="slurm")
    ex = dataclasses.replace(ex, poll_seconds=0.1, slurm=dataclasses.replace(ex.slurm, vanished_s=0.5))
    t0 = time.monotonic()
    failures = execute([Task(str(tmp_path / "toy"), {"n": i}, _timed) for i in range(2)], ex, desc="toy", raise_on_failure=False)
    assert time.monotonic() - t0 < 30
    assert sorted(f.error.split()[2] for f in failures) == ["4242_0", "4242_1"]
    assert all("left the queue without a result" in f.error and f.log.endswith("_log.err") for f in failures)
    with pytest.raises(ConfigError, match="vanished_s must be > 0"):
        executor_config(load_profile("smoke", {"executor": {"slurm": {"vanished_s": 0}}}, output_root=tmp_path))


def _slurm_up() -> str | None:
    from tests.test_executors import _slurm_up as up

    return up()


def _long(spec, out):
    Path(out).touch()
    time.sleep(600)
    return {"n": spec["n"]}


def test_scancel_on_a_real_slurm_without_accounting_is_reported(tmp_path, monkeypatch):
    """The local cluster of scripts/slurm/start_local_cluster.sh keeps no accounting, as in the issue: a job
    cancelled with scancel is reported failed within slurm.vanished_s (here 3 s), not waited on forever."""
    import threading

    from tests.test_executors import SLURM_STATE

    why = _slurm_up()
    if why and os.environ.get("CODESWITCH_REQUIRE_SLURM") == "1":
        pytest.fail(f"CODESWITCH_REQUIRE_SLURM=1 but {why}")
    if why:
        pytest.skip(why)
    monkeypatch.setenv("SLURM_CONF", str(SLURM_STATE / "slurm.conf"))
    raw = {"kind": "slurm", "slurm": {"partition": "local", "vanished_s": 3},
           "resources": {"default": {"gpus": 0, "cpus": 1, "mem_gb": 1, "time_min": 10}}}
    prof = load_profile("smoke", overrides={"executor": raw}, output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof), poll_seconds=0.5)
    started = tmp_path / "started"
    task = Task(str(prof.runs_dir / "toy"), {"n": 0}, functools.partial(_long, out=str(started)))
    out: dict = {}
    th = threading.Thread(target=lambda: out.setdefault("failures", execute([task], ex, desc="toy", raise_on_failure=False)),
                          daemon=True)
    th.start()
    deadline = time.monotonic() + 180
    while not started.exists():
        assert th.is_alive() and time.monotonic() < deadline, "the Slurm job never started"
        time.sleep(0.2)
    ids = subprocess.run(["squeue", "-h", "-o", "%i", "-n", "codeswitch-toy"], capture_output=True, text=True).stdout.split()
    assert len(ids) == 1
    subprocess.run(["scancel", ids[0]], check=True)
    th.join(120)
    assert not th.is_alive(), "still waiting for a cancelled job"
    [failure] = out["failures"]
    assert f"Slurm job {ids[0]} left the queue without a result" in failure.error
