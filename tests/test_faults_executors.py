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

from codeswitch.core import atomic, identity, runs

from codeswitch.core.utils import cores
from codeswitch.pipeline import executors, local_pool, submitit_jobs
from codeswitch.pipeline.executors import execute, executor_config
from codeswitch.pipeline.tasks import GridFailed, Task
from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError
from codeswitch.core.runs import RunCache, run_grid
from .helpers import fake_submitit_executor, fresh_identity, swapped_checkpoint, touch_r_edit

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _digests(tmp_path, monkeypatch):
    yield from fresh_identity(tmp_path, monkeypatch)


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
    assert local_pool.pool_size(16, [], n_cores=2) == (2, " (16 asked for; bounded by the 2 core(s))")
    assert local_pool.pool_size(None, [], n_cores=2) == (1, "")
    assert local_pool.pool_size(2, [], n_cores=8) == (2, "")
    assert local_pool.pool_size(8, ["0", "1"], n_cores=64)[0] == 2  # never more workers than GPUs (groups)
    assert local_pool.pool_size(None, ["0,1", "2,3"], n_cores=64) == (2, "")


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
    from codeswitch.pipeline.executors import execute, executor_config
    from codeswitch.pipeline.tasks import Task
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
    n = 1  # (one worker proves it; each one imports torch, seconds on a loaded machine)
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
    n = cores() + 2
    assert execute([Task(str(tmp_path / "toy"), {"n": i}, fn) for i in range(n)], ex, desc="toy") == []
    spans = [json.loads(p.read_text()) for p in (tmp_path / "t").iterdir()]
    assert len(spans) == n
    overlap = max(sum(1 for a, b in spans if a <= t < b) for t, _ in spans)
    assert overlap <= cores(), f"{overlap} jobs ran at once on {cores()} core(s)"
    assert f"at most {cores()} job(s) at once" in capsys.readouterr().out


def _slow(spec, out):
    Path(out).touch()  # the run holds its lock from here on
    time.sleep(4)
    return {"n": spec["n"]}


def test_a_killed_submitit_local_controller_whose_run_goes_on_is_not_a_failure(tmp_path, monkeypatch):
    import threading

    import submitit

    # submitit waits this long for a result file to appear after a job ended (slow filesystems): a run that goes on
    # longer than that after its controller died (here: 4 s against 1 s) was reported failed
    monkeypatch.setattr(submitit.core.core.Job, "_results_timeout_s", 1)
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
    import submitit

    FakeExecutor = fake_submitit_executor(lambda i, folder: _NeverDoneJob(i, folder))

    monkeypatch.setattr(submitit, "AutoExecutor", FakeExecutor)
    monkeypatch.setattr(submitit_jobs, "_squeue_ids", lambda: {"9999_0"})  # squeue answers, without our jobs
    prof = load_profile("smoke", output_root=tmp_path)
    ex = executor_config(prof, kind="slurm")
    ex = dataclasses.replace(ex, poll_seconds=0.1, slurm=dataclasses.replace(ex.slurm, vanished_s=0.5))
    import threading

    out: dict = {}
    tasks = [Task(str(tmp_path / "toy"), {"n": i}, _timed) for i in range(2)]
    th = threading.Thread(target=lambda: out.setdefault("failures", execute(tasks, ex, desc="toy", raise_on_failure=False)),
                          daemon=True)
    th.start()
    th.join(30)
    assert not th.is_alive(), "still waiting for jobs that left the queue"
    failures = out["failures"]
    assert sorted(f.error.split()[2] for f in failures) == ["4242_0", "4242_1"]
    assert all("left the queue without a result" in f.error and f.log.endswith("_log.err") for f in failures)
    with pytest.raises(ConfigError, match="vanished_s must be > 0"):
        executor_config(load_profile("smoke", {"executor": {"slurm": {"vanished_s": 0}}}, output_root=tmp_path))


def _long(spec, out):
    Path(out).touch()
    time.sleep(600)
    return {"n": spec["n"]}


def test_scancel_on_a_real_slurm_without_accounting_is_reported(tmp_path, monkeypatch):
    """The local cluster of scripts/slurm/start_local_cluster.sh keeps no accounting, as in the issue: a job
    cancelled with scancel is reported failed within slurm.vanished_s (here 3 s), not waited on forever."""
    import threading

    from tests.test_executors import use_local_slurm

    use_local_slurm(monkeypatch)
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


# =========================================================================== 4. read-only runs/: checked before any output
def test_an_unwritable_output_root_stops_before_any_output_is_opened(tmp_path, monkeypatch, capsys):
    """The progress log under runs/ was opened before the "not writable … CODESWITCH_OUTPUT_ROOT" check (a raw OSError)."""
    from codeswitch.pipeline import cli as pipeline

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the output root should be\n")
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(blocker))
    assert pipeline.main(["--only", "01"]) == 2
    err = capsys.readouterr().err
    assert "is not writable" in err and "CODESWITCH_OUTPUT_ROOT" in err and "Traceback" not in err
    assert blocker.read_text() == "a file where the output root should be\n"


# =========================================================================== 5. full disk; a table's files as one unit
def test_a_full_disk_names_the_file_being_written(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(28, "No space left on device")

    target = tmp_path / "figures" / "t.csv"
    with monkeypatch.context() as m, pytest.raises(OSError, match=r"No space left on device \(writing .*t\.csv\)") as err:
        m.setattr(atomic.os, "fsync", full)
        atomic.atomic_write_text(target, "a,b\n")
    assert err.value.errno == 28 and err.value.filename == str(target)
    assert not target.exists() and not list(target.parent.glob(".*"))  # nothing half-written, no temp left
    with pytest.raises(OSError, match=r"No space left on device \(building .*ckpt\)"):  # a model saved into a folder
        with atomic.atomic_directory(tmp_path / "ckpt") as tmp:
            raise OSError(28, "No space left on device")  # as torch / safetensors raise it, naming no file
    assert not list(tmp_path.glob("*ckpt*"))


def _table(profile, value: str):
    import pandas as pd

    from codeswitch.core.report import save_table

    return save_table(pd.DataFrame({"score": [value]}, index=pd.Index(["run"], name="model")), "t", profile, caption="a table")


def test_a_failed_table_write_leaves_every_old_file_not_a_new_md_beside_an_old_csv(tmp_path, monkeypatch):
    prof = load_profile("smoke", output_root=tmp_path)
    _table(prof, "0.1")
    out = prof.figures_dir
    old = {p.name: p.read_bytes() for p in out.glob("t.*")}
    assert set(old) == {"t.md", "t.tex", "t.csv", "t.provenance.json"}
    real = atomic.os.fsync

    def full_on_csv(fd):
        if os.readlink(f"/proc/self/fd/{fd}").split("/")[-1].startswith(".t.csv.tmp-"):
            raise OSError(28, "No space left on device")
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", full_on_csv)
    with pytest.raises(OSError, match=r"t\.csv"):
        _table(prof, "0.9")
    assert {p.name: p.read_bytes() for p in out.glob("t.*")} == old  # the .md and .tex written before it: not moved in
    assert not list(out.glob(".t.*"))


_KILLED_WHILE_MOVING = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from codeswitch.core import atomic

    folder = Path(sys.argv[1])

    def moved_one_then_killed(tmp, dest):
        os.replace(tmp / "t.md", dest / "t.md")
        os.kill(os.getpid(), signal.SIGKILL)

    atomic._roll_forward = moved_one_then_killed
    with atomic.atomic_files(folder, "t") as tmp:
        (tmp / "t.md").write_text("new")
        (tmp / "t.csv").write_text("new")
""")


def test_a_table_write_killed_while_moving_its_files_is_completed_by_the_next_run(tmp_path):
    for ext in ("md", "csv"):
        (tmp_path / f"t.{ext}").write_text("old")
    proc = subprocess.run([sys.executable, "-c", _KILLED_WHILE_MOVING, str(tmp_path)], cwd=REPO)
    assert proc.returncode == -signal.SIGKILL
    assert (tmp_path / "t.md").read_text() == "new" and (tmp_path / "t.csv").read_text() == "old"  # the moment of the kill
    atomic.remove_all_stale_temps(tmp_path)  # what the next run's start (and write_index, and the next write of t) does
    assert [(tmp_path / f"t.{e}").read_text() for e in ("md", "csv")] == ["new", "new"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv", "t.md"]


# =========================================================================== 6. silent wrong results
@pytest.mark.parametrize("override", [{"seeds": [11111, 11111]}, {"glue.seeds": [11111, 22222, 11111]}])
def test_duplicate_seeds_are_rejected_naming_the_key(override):
    key = next(iter(override))
    with pytest.raises(ConfigError, match=rf"--set {key}=.*each seed must appear once; 11111 appear"):
        prof = load_profile("smoke", override)
        from codeswitch.pipeline.cli import validate_sections

        validate_sections(prof)




def test_verify_hashes_sees_an_edit_whose_time_stamp_was_restored(tmp_path, monkeypatch):
    monkeypatch.setenv(identity.HASH_BELOW_VAR, "0")  # every file "large": the stat shortcut applies (issue 41 item 6)
    f = tmp_path / "labels.csv"
    f.write_bytes(b"x,y\n1,2\n")
    before = identity.content_id(f)
    touch_r_edit(f, b"x,y\n1,3\n")
    identity._VERIFIED.clear()  # a later process
    assert identity.content_id(f) == before  # trusting size + mtime: the stale digest (the documented blind spot)
    monkeypatch.setenv(identity.VERIFY_VAR, "always")
    with pytest.warns(identity.StaleDigestWarning, match="labels.csv: its content changed although its size and mtime"):
        after = identity.content_id(f)
    assert after != before and after == identity.content_id(f)
    # an age threshold: entries hashed within it are trusted, older ones re-hashed
    touch_r_edit(f, b"x,y\n1,4\n")
    identity._VERIFIED.clear()
    monkeypatch.setenv(identity.VERIFY_VAR, "3600")
    assert identity.content_id(f) == after  # hashed a moment ago: trusted
    monkeypatch.setenv(identity.VERIFY_VAR, "0.001")
    time.sleep(0.01)
    with pytest.warns(identity.StaleDigestWarning):
        assert identity.content_id(f) not in (before, after)


def test_a_same_size_same_mtime_weight_swap_fails_the_checkpoint_check_under_verify(tmp_path, monkeypatch):
    from codeswitch.core.checkpoints import CheckpointWarning, checkpoint_ok

    monkeypatch.setenv(identity.HASH_BELOW_VAR, "0")  # every file "large": the stat shortcut applies (issue 41 item 6)
    folder = swapped_checkpoint(tmp_path)
    identity._VERIFIED.clear()
    assert checkpoint_ok(folder)  # size and mtime unchanged: trusted (smoke's setting)
    monkeypatch.setenv(identity.VERIFY_VAR, "always")
    with pytest.warns(CheckpointWarning, match=r"model\.safetensors changed"):
        assert not checkpoint_ok(folder)


def test_the_paper_profiles_verify_by_default_and_the_setting_is_checked(tmp_path):
    assert load_profile("paper", output_root=tmp_path).verify_hashes == "always" and identity.verify_age() == 0.0
    assert load_profile("smoke", output_root=tmp_path).verify_hashes is None and identity.verify_age() is None
    assert load_profile("smoke", {"verify_hashes": 86400}, output_root=tmp_path) and identity.verify_age() == 86400
    with pytest.raises(ConfigError, match=r"--set verify_hashes=\"sometimes\".*'always', 'never' or a number of seconds"):
        load_profile("smoke", {"verify_hashes": "sometimes"})


# =========================================================================== 7. messages
@pytest.mark.parametrize("value, message", [("gpu", "'gpu' is not 'auto', 'cpu', 'cuda' or 'cuda:N'"),
                                            ("cuda", "device 'cuda' asked for, but no CUDA GPU is visible")])
def test_device_is_validated_against_what_there_is_before_any_notebook(value, message, tmp_path, monkeypatch, capsys):
    import torch

    from codeswitch.pipeline import cli as pipeline

    if value == "cuda" and torch.cuda.is_available():
        pytest.skip("a CUDA GPU is visible")
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    assert pipeline.main(["--only", "01", "--set", f"device={value}"]) == 2
    err = capsys.readouterr().err
    assert f'--set device="{value}"' in err and message in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("override, message", [
    ({"glue.backbones.tiny-bert.batch_size": 0}, r"^--set glue\.backbones\.tiny-bert\.batch_size=0 \(over configs/smoke\.yaml\).*must be >= 1"),
    ({"koglish_invalid_rows": "ignore"}, r"^--set koglish_invalid_rows=\"ignore\" \(over configs/smoke\.yaml\).*not 'error' or 'drop'"),
])
def test_errors_from_set_values_blame_the_set(override, message):
    from codeswitch.pipeline.cli import validate_sections

    with pytest.raises(ConfigError, match=message):
        validate_sections(load_profile("smoke", override))


def test_a_truncated_safetensors_names_its_path(tmp_path):
    import torch
    from safetensors.torch import save_file

    from codeswitch.core.hub import MissingResourceError
    from codeswitch.core.models import resolve_model

    m = tmp_path / "model"
    m.mkdir()
    (m / "config.json").write_text("{}")
    save_file({"w": torch.zeros(64, 64)}, str(m / "model.safetensors"))
    assert resolve_model(str(m)) == str(m)
    data = (m / "model.safetensors").read_bytes()
    (m / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(MissingResourceError, match=rf"{m / 'model.safetensors'} is truncated \({len(data) // 2} bytes"):
        resolve_model(str(m), what="glue.backbones[0].model")


def test_warnings_reach_the_console_summary_and_index(tmp_path, monkeypatch, capsys):
    """Rows dropped, records moved aside, checkpoints rebuilt: each is printed by reproduce.sh and listed in INDEX.md,
    not only inside the executed notebook."""
    from codeswitch.pipeline import cli as pipeline
    from codeswitch.core.checkpoints import checkpoint_ok
    from tests.test_faults import _load, write_stsb

    log = tmp_path / "warnings.jsonl"
    monkeypatch.setenv(runs.WARNINGS_FILE_VAR, str(log))
    root = write_stsb(tmp_path / "kog", cross_override={1: "broken cross sentence"})
    from codeswitch.koglish.data import KoglishRowsDropped, load_sts

    with pytest.warns(KoglishRowsDropped):
        load_sts(str(root), "stsb", "valid", invalid_rows="drop")
        load_sts(str(root), "stsb", "valid", invalid_rows="drop")  # a warning repeated by every run: once in the summary
    cache = RunCache(tmp_path / "cache")
    cache.put({"n": 1}, {"x": 1})
    cache.path({"n": 1}).write_text("{truncated")
    with pytest.warns(runs.CorruptRecordWarning):
        assert cache.get({"n": 1}) is None
    (tmp_path / "ckpt").mkdir()
    with pytest.warns(UserWarning):
        checkpoint_ok(tmp_path / "ckpt", what="CalBERT checkpoint")
    pipeline._print_warnings(log)
    out = capsys.readouterr().out
    assert "3 warning(s) in this run" in out
    assert "1 Koglish file(s) with rows dropped" in out and "dropped 1 of 3 rows" in out
    assert "1 run record(s) moved aside and recomputed" in out and "1 saved folder(s) failed their manifest" in out
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path / "out"))
    index = pipeline.write_index("smoke", warnings_file=log).read_text()
    assert "Warnings of the run that wrote this index" in index and "dropped 1 of 3 rows" in index


# =========================================================================== 8. overrides on the failure path
def test_a_failed_grid_with_overrides_does_not_rewrite_the_profiles_own_index(tmp_path, monkeypatch, capsys):
    from codeswitch.pipeline import cli as pipeline

    calls = []

    class FailedGrid:
        def __init__(self, numbers, profile, ex):
            pass

        def start(self):
            return self

        def wait(self, number=None):
            return [type("F", (), {"describe": lambda self: "toy run 0 failed: ValueError"})()]

    monkeypatch.setattr(executors, "Submission", FailedGrid)
    monkeypatch.setattr(pipeline, "write_index", lambda profile, **kw: calls.append(kw))
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    assert pipeline.main(["--only", "03", "--executor", "local", "--set", "seeds=[1]"]) == 1
    assert [c["overrides"] for c in calls] == [{"seeds": [1]}]  # figures/smoke+<hash>/INDEX.md, not figures/smoke/


_KILLS_ITS_DRIVER = textwrap.dedent("""
    import shutil, sys
    from pathlib import Path
    import nbformat
    from codeswitch.pipeline import cli as pipeline

    root = Path(sys.argv[1])
    shutil.copytree(sys.argv[2], root / "configs")
    (root / "pyproject.toml").write_text("")
    (root / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_code_cell("import os, signal\\nos.kill(os.getppid(), signal.SIGKILL)")]
    nbformat.write(nb, root / "notebooks" / "01_koglish_dataset.ipynb")
    pipeline.run_notebook(pipeline.NOTEBOOKS[0], "smoke", root=root)
""")


def test_a_killed_run_leaves_its_kernel_connection_file_under_runs_where_the_next_run_removes_it(tmp_path):
    """Killed runs left /tmp/tmp*.json (the kernel's connection file) behind, one per kill, never removed."""
    proc = subprocess.run([sys.executable, "-c", _KILLS_ITS_DRIVER, str(tmp_path), str(REPO / "configs")], cwd=REPO,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "CODESWITCH_HOME": str(tmp_path)})
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    notebooks = tmp_path / "runs" / "smoke" / "notebooks"
    left = [p for p in notebooks.iterdir() if p.name.startswith(".kernel.json.tmp-")]
    assert len(left) == 1 and json.loads(left[0].read_text())["transport"] == "tcp"  # the connection file: here, not in /tmp
    atomic.prepare_output(tmp_path / "runs" / "smoke")  # the next run's start
    assert not left[0].exists()
