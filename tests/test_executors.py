"""Executors behind run_grid (issue 16) with the real engines: `reproduce.sh --executor local --workers 2`
on notebook 03 (tables byte-identical to the inline run's), submitit's local executor and a real
single-node Slurm on a slice of the smoke grid (records equal to the inline run's byte for byte,
timings aside).  Plus the per-run lock (issue 14 item 7)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from codeswitch.pipeline.executors import _call_run_one, execute, executor_config
from codeswitch.pipeline.tasks import GridFailed, Task
from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError
from codeswitch.core.runs import RunCache, lock_held, run_grid, run_lock

REPO = Path(__file__).resolve().parents[1]
SLURM_STATE = Path(os.environ.get("CODESWITCH_SLURM_STATE", "/var/tmp/codeswitch-slurm"))
SLICE = 2  # runs of the smoke GLUE grid each engine computes


def _records(root: Path) -> dict[str, bytes]:
    """Each record of a cache folder, without its wall-clock time, as canonical bytes."""
    out = {}
    for p in sorted(root.glob("*.json")):
        rec = json.loads(p.read_text(encoding="utf-8"))
        rec.pop("seconds")
        out[p.name] = json.dumps(rec, sort_keys=True).encode()
    return out


@pytest.fixture(scope="module")
def glue_slice(tmp_path_factory, backbones_dir):
    """The first SLICE runs of the smoke GLUE grid, computed inline: (profile, specs, records).

    Every engine below computes the same runs under the same output root (the mini Koglish
    is built once) into a cache folder of its own, ``runs/smoke/glue-<engine>/``.
    """
    from codeswitch import glue

    prof = load_profile("smoke", output_root=tmp_path_factory.mktemp("engines"))
    specs = glue.plan(prof)[:SLICE]
    cache = RunCache(prof.runs_dir / "glue-inline")
    run_grid(cache, specs, functools.partial(_call_run_one, glue.run_one, prof), desc="inline")
    return prof, specs, _records(cache.root)


def _run_with(glue_slice, kind: str, prof=None, **cli) -> Path:
    from codeswitch import glue

    base, specs, inline = glue_slice
    prof = prof or base
    ex = dataclasses.replace(executor_config(prof, kind=kind, **cli), poll_seconds=0.5)
    cache = RunCache(prof.runs_dir / f"glue-{kind}")
    results = run_grid(cache, specs, functools.partial(_call_run_one, glue.run_one, prof), desc=kind, executor=ex)
    assert all(r is not None and "scenarios" in r for r in results)
    got = _records(cache.root)
    assert got == inline and len(got) == SLICE  # byte-identical records (timings aside)
    return prof.runs_dir / "jobs" / f"glue-{kind}"


def test_submitit_local_executor_matches_inline(glue_slice):
    jobs = _run_with(glue_slice, "submitit-local")
    assert len(list(jobs.glob("*/*_log.out"))) == SLICE  # submitit's job logs


def _slurm_up() -> str | None:
    """None when the single-node cluster answers, else why not."""
    conf = SLURM_STATE / "slurm.conf"
    if not shutil.which("sinfo"):
        return "Slurm is not installed (scripts/slurm/start_local_cluster.sh installs it as root with apt)"
    if not conf.is_file():
        return f"no local cluster: {conf} is absent (start it with scripts/slurm/start_local_cluster.sh)"
    env = {**os.environ, "SLURM_CONF": str(conf)}
    try:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return f"sinfo failed: {exc}"
    if not any(s in out for s in ("idle", "mixed", "allocated")):
        return f"the local cluster's node is not up (sinfo: {out.strip() or 'nothing'})"
    return None


def use_local_slurm(monkeypatch) -> None:
    """Point Slurm's commands at the local cluster (scripts/slurm/start_local_cluster.sh); skip when it is not up, or
    fail when CODESWITCH_REQUIRE_SLURM=1 (.ci/run started it)."""
    why = _slurm_up()
    if why and os.environ.get("CODESWITCH_REQUIRE_SLURM") == "1":
        pytest.fail(f"CODESWITCH_REQUIRE_SLURM=1 but {why}")
    if why:
        pytest.skip(why)
    monkeypatch.setenv("SLURM_CONF", str(SLURM_STATE / "slurm.conf"))


def test_slurm_executor_matches_inline(glue_slice, monkeypatch):
    use_local_slurm(monkeypatch)
    raw = {"kind": "slurm", "resources": {"default": {"gpus": 0, "cpus": 1, "mem_gb": 2, "time_min": 10}}}
    prof = load_profile("smoke", overrides={"executor": raw}, output_root=glue_slice[0].output_root)
    jobs = _run_with(glue_slice, "slurm", prof=prof, partition="local")
    assert len(list(jobs.glob("*/*_log.err"))) == SLICE  # one array task (and log) per run


# --------------------------------------------------------------------------- failures and re-submission
def _maybe_fail(spec, marker: str):
    if spec["n"] == 1 and not Path(marker).exists():
        raise ValueError(f"run {spec['n']} cannot go on")
    return {"double": 2 * spec["n"]}


def test_failed_run_names_log_and_spec_others_go_on_rerun_submits_only_missing(tmp_path, capsys):
    cache = RunCache(tmp_path / "runs" / "toy" / "exp")
    specs = [{"n": i} for i in range(3)]
    marker = tmp_path / "fixed"
    fn = functools.partial(_maybe_fail, marker=str(marker))
    ex = executor_config(load_profile("smoke", output_root=tmp_path), kind="local", workers=2)
    with pytest.raises(GridFailed) as err:
        run_grid(cache, specs, fn, desc="toy", executor=ex)
    msg = str(err.value)
    assert "ValueError: run 1 cannot go on" in msg and '"n":1' in msg
    log = Path(msg.split("log:")[1].split()[0])
    assert log.is_file() and "run 1 cannot go on" in log.read_text()
    assert {"n": 0} in cache and {"n": 2} in cache and {"n": 1} not in cache  # the others went on
    marker.touch()
    capsys.readouterr()
    assert run_grid(cache, specs, fn, desc="toy", executor=ex) == [{"double": 0}, {"double": 2}, {"double": 4}]
    assert "3 runs, 2 cached, 1 to run" in capsys.readouterr().out


def test_unpicklable_function_is_a_clear_error(tmp_path):
    import threading

    lock = threading.Lock()
    ex = executor_config(load_profile("smoke", output_root=tmp_path), kind="local", workers=1)
    with pytest.raises(TypeError, match="module-level function or a functools.partial"):
        run_grid(RunCache(tmp_path / "c"), [{"n": 1}], lambda c: {"held": lock.locked()}, desc="toy", executor=ex)


def test_executor_section_is_validated_and_cli_wins(tmp_path):
    prof = load_profile("smoke", overrides={"executor.kind": "local", "executor.workers": 3}, output_root=tmp_path)
    assert executor_config(prof).workers == 3
    assert executor_config(prof, workers=5, kind="slurm", partition="gpu").slurm.partition == "gpu"
    assert executor_config(prof).jobs_dir == str(tmp_path / "runs" / "smoke" / "jobs")
    for bad, match in [
        ({"executor.kind": "threads"}, "is not one of"),
        ({"executor.wrkers": 2}, r"unknown key\(s\) \['wrkers'\]"),
        ({"executor.workers": 0}, "workers must be >= 1"),
        ({"executor.resources": {"glue": {"gpu": 1}}}, r"executor.resources.glue: unknown key\(s\) \['gpu'\]"),
    ]:
        with pytest.raises(ConfigError, match=match):
            executor_config(load_profile("smoke", overrides=bad, output_root=tmp_path))


def test_profile_pickles_and_executor_flags_are_not_overrides(tmp_path):
    import pickle

    from codeswitch.pipeline import cli as pipeline

    prof = load_profile("smoke", output_root=tmp_path)
    assert pickle.loads(pickle.dumps(prof)) == prof
    seen = {}
    orig = pipeline.run_notebook

    def fake_run_notebook(spec, profile, **kw):
        seen["overrides"] = kw.get("overrides")
        raise pipeline.NotebookFailed(spec, tmp_path / "x.ipynb", None, "stop here")

    pipeline.run_notebook = fake_run_notebook
    try:
        os.environ["CODESWITCH_OUTPUT_ROOT"] = str(tmp_path)
        rc = pipeline.main(["--only", "01", "--executor", "local", "--workers", "2"])
    finally:
        pipeline.run_notebook = orig
        os.environ.pop("CODESWITCH_OUTPUT_ROOT")
    assert rc == 1 and seen["overrides"] == {}
    with pytest.raises(SystemExit, match="--executor/--workers"):
        pipeline.main(["--only", "01", "--set", "executor.workers=2"])


# --------------------------------------------------------------------------- the per-run lock
_HOLDER = textwrap.dedent(
    """
    import sys, time
    from codeswitch.core.runs import RunCache
    cache = RunCache(sys.argv[1])
    def slow():
        print("computing", flush=True)
        time.sleep(float(sys.argv[2]))
        return {"by": "holder"}
    cache.run({"n": 1}, slow)
    """
)


def _holder(cache_root: Path, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "lib")}
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(cache_root), str(seconds)], stdout=subprocess.PIPE, text=True, env=env)
    assert p.stdout.readline().strip() == "computing"  # it holds the lock now
    return p


def test_second_process_waits_for_the_run_and_reads_its_record(tmp_path, capsys):
    cache = RunCache(tmp_path)
    holder = _holder(tmp_path, 1.5)
    assert cache.locked({"n": 1}) and {"n": 1} not in cache
    calls = []
    assert cache.run({"n": 1}, lambda: calls.append(1) or {"by": "me"}) == {"by": "holder"}
    assert calls == []  # never computed twice
    assert "waiting for" in capsys.readouterr().out
    assert holder.wait(10) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache.path({"n": 1}).name]  # no lock file, no partial record


def test_killed_holders_lock_is_taken_over_and_the_run_redone(tmp_path):
    cache = RunCache(tmp_path)
    holder = _holder(tmp_path, 60)
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    assert not cache.locked({"n": 1}) and {"n": 1} not in cache  # dead: nothing half-written, lock free
    assert cache.run({"n": 1}, lambda: {"by": "me"}) == {"by": "me"}
    assert not lock_held(cache.path({"n": 1}))


def test_run_lock_without_waiting_skips(tmp_path):
    rec = tmp_path / "a.json"
    holder = _holder(tmp_path, 3)  # locks tmp_path/<hash of {"n": 1}>.json
    with run_lock(RunCache(tmp_path).path({"n": 1}), wait=False) as got:
        assert got is False
    with run_lock(rec, wait=False) as got:
        assert got is True
    holder.kill()
    holder.wait(10)


# --------------------------------------------------------------------------- submit everything, then build
def test_reproduce_with_local_executor_gives_the_inline_csvs(smoke_run, tmp_path, monkeypatch, capsys):
    """`./reproduce.sh --only 03 --executor local --workers 2`: runs submitted first, the notebook finds them all
    cached, and its tables are byte-identical to the inline run's (the notebook suite's)."""
    from codeswitch.pipeline import cli as pipeline

    spec = next(s for s in pipeline.available(REPO) if s.number == "03")
    smoke_run.ensure(spec)
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    assert pipeline.main(["--only", "03", "--executor", "local", "--workers", "2"]) == 0
    out = capsys.readouterr().out
    assert "plan: concse.table3 (03): 8 runs" in out and "concse.ablations" not in out  # notebook 04's runs: not selected
    assert "queue: 8 done, 0 running, 0 pending, 0 failed of 8" in out
    executed = (tmp_path / "runs" / "smoke" / "notebooks" / spec.file).read_text(encoding="utf-8")
    assert "8 runs, 8 cached, 0 to run" in executed  # the notebook only built tables and figures
    inline = sorted((smoke_run.root / "figures" / "smoke").glob("concse_table3*.csv"))
    assert inline
    for csv in inline:
        assert (tmp_path / "figures" / "smoke" / csv.name).read_bytes() == csv.read_bytes(), csv.name
    runs = tmp_path / "runs" / "smoke"
    assert len(list(runs.glob("jobs/local-*/concse-*.log"))) == 8  # one log per run under runs/<profile>/jobs/
    assert not list((runs / "concse").glob(".*"))  # no lock or temp file left


def test_runs_only_computes_every_run_and_builds_no_notebook_which_then_builds_from_the_cache(tmp_path, monkeypatch, capsys):
    """`./reproduce.sh --only 01 --runs-only` (inline: in this process): every run of 01 cached, no executed notebook,
    no figure; a second --runs-only computes nothing; then `--only 01` builds the notebook, every run read from the cache."""
    import re

    from codeswitch.pipeline import cli as pipeline

    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    runs = tmp_path / "runs" / "smoke"
    assert pipeline.main(["--only", "01", "--runs-only"]) == 0
    out = capsys.readouterr().out
    assert "--runs-only: no notebook is built" in out and "every run of notebook(s) 01 is cached" in out
    planned = int(re.search(r"plan: koglish\.\w+ \(01\): (\d+) runs", out).group(1))
    records = sorted((runs / "koglish").glob("*.json"))
    assert planned > 0 and len(records) == planned
    assert not list(runs.glob("notebooks/*.ipynb")) and not list((tmp_path / "figures" / "smoke").glob("concse_*"))
    assert pipeline.main(["--only", "01", "--runs-only"]) == 0
    assert "queue:" not in capsys.readouterr().out  # nothing left to compute
    assert pipeline.main(["--only", "01"]) == 0
    executed = next(runs.glob("notebooks/01_*.ipynb")).read_text(encoding="utf-8")
    assert f"{planned} runs, {planned} cached, 0 to run" in executed
    assert sorted((runs / "koglish").glob("*.json")) == records and list((tmp_path / "figures" / "smoke").glob("concse_table1*"))


def _visible_devices(spec):
    return {"devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


@pytest.mark.parametrize("gpus_per_run, expected", [(0, ["0", "1", "2", "3"]), (2, ["0,1", "2,3"])])
def test_local_workers_get_one_gpu_each_or_the_group_a_run_asks_for(tmp_path, monkeypatch, capsys, gpus_per_run, expected):
    """No GPU needed: a worker's CUDA_VISIBLE_DEVICES is what the pool hands out from the visible devices."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    prof = load_profile("smoke", overrides={"executor.resources": {"default": {"gpus": gpus_per_run}}}, output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="local"), poll_seconds=0.2)
    results = run_grid(RunCache(prof.runs_dir / "toy"), [{"n": i} for i in range(6)], _visible_devices, desc="gpus", executor=ex)
    assert {r["devices"] for r in results} <= set(expected)
    assert f"on {len(expected)} local worker process(es), GPUs {' | '.join(expected)}" in capsys.readouterr().out
    with pytest.raises(ConfigError, match="asks for 8 GPUs"):
        big = load_profile("smoke", overrides={"executor.resources": {"default": {"gpus": 8}}}, output_root=tmp_path)
        run_grid(RunCache(prof.runs_dir / "toy8"), [{"n": 0}], _visible_devices, desc="gpus", executor=executor_config(big, kind="local"))


def test_contrastivemix_is_submitted_stage_by_stage_into_the_caches_run_reads(tmp_path):
    """Notebook 05's runs depend on each other (trainings, then BM25, evaluations, embeddings, UMAP fits): each kind is
    a stage, cached in the folder :func:`contrastivemix.experiment.run` reads, waiting only for the kinds it reads."""
    from codeswitch.contrastivemix import experiment as X
    from codeswitch.pipeline import executors

    prof = load_profile("smoke", output_root=tmp_path)
    stages = {st.name: st for _, st in executors.plan_stages(["05"], prof)}
    assert list(stages) == list(X.KINDS.values())
    assert all(st.cache_dir == prof.runs_dir / "contrastivemix" / kind for kind, st in stages.items())
    assert stages["train"].after == stages["bm25"].after == () and stages["eval"].after == ("train", "bm25")
    assert sum(len(st) for st in stages.values()) == len({spec.key_hash() for spec in X.plan(prof)})
    grid = executors.Submission(["05"], prof, executor_config(prof, kind="local", workers=2))
    by_stage = {}
    for t in grid.tasks:
        by_stage.setdefault(t.desc, []).append(t)
    trained = {str(t.record) for t in by_stage["contrastivemix.train"]}
    assert all(set(t.after) == trained | {str(b.record) for b in by_stage["contrastivemix.bm25"]} for t in by_stage["contrastivemix.eval"])
    assert all(set(t.after) == trained for t in by_stage["contrastivemix.embed"])
    assert grid.of_notebook["05"] == grid.tasks


def _record_order(spec, log: str):
    with open(log, "a") as f:
        f.write(f"{spec['n']}\n")
    time.sleep(0.2)
    return {"n": spec["n"]}


def test_local_pool_runs_a_task_after_the_ones_it_reads_and_the_longest_chain_first(tmp_path):
    """One pool for the whole grid: a dependant starts once its dependencies ended, and a free worker takes the ready
    run with the longest chain of dependants (here run 2, which run 3, and through it run 4, waits for), not the first listed."""
    prof = load_profile("smoke", output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="local", workers=1), poll_seconds=0.1)
    cache, log = RunCache(tmp_path / "toy"), tmp_path / "order.log"
    fn = functools.partial(_record_order, log=str(log))
    rec = {n: str(cache.path({"n": n})) for n in range(5)}
    tasks = [Task(str(cache.root), {"n": 0}, fn), Task(str(cache.root), {"n": 1}, fn),
             Task(str(cache.root), {"n": 2}, fn), Task(str(cache.root), {"n": 3}, fn, after=(rec[2],)),
             Task(str(cache.root), {"n": 4}, fn, after=(rec[3],))]
    assert execute(tasks, ex, desc="toy") == []
    assert log.read_text().split() == ["2", "3", "0", "1", "4"]
    assert all({"n": n} in cache for n in range(5))


def _threads_of_worker(spec):
    import torch

    return {"omp": os.environ.get("OMP_NUM_THREADS"), "torch": torch.get_num_threads()}


def test_local_workers_get_their_share_of_the_cores_and_leave_this_process_alone(tmp_path, monkeypatch):
    """N workers x every core would oversubscribe the CPU: each worker gets ``threads`` torch and native threads."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    prof = load_profile("smoke", output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="local", workers=2), poll_seconds=0.2)
    tasks = [Task(str(tmp_path / "toy"), {"n": i}, _threads_of_worker) for i in range(2)]
    assert execute(tasks, ex, desc="threads", threads=3) == []
    assert [RunCache(tmp_path / "toy").get({"n": i}) for i in range(2)] == [{"omp": "3", "torch": 3}] * 2
    assert "OMP_NUM_THREADS" not in os.environ  # set for the workers' start only


def _timed_devices(spec):
    import time

    start = time.time()
    time.sleep(0.3)
    return {"devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "start": start, "end": time.time()}


@pytest.mark.parametrize("runs_per_gpu, share, slots", [(3, None, 3), (1, 0.25, 4)])
def test_local_pool_puts_several_runs_on_one_gpu(tmp_path, monkeypatch, capsys, runs_per_gpu, share, slots):
    """Fractional GPUs (issue 24, item 5), no GPU needed: with ``executor.local.runs_per_gpu`` (or a share ``gpus: 1/k``
    in executor.resources) the pool starts that many workers per visible GPU, each told its GPU through
    CUDA_VISIBLE_DEVICES, and at most that many runs are computed on a GPU at once."""
    from codeswitch.pipeline import executors, local_pool

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    over = {"executor.resources": {"default": {"gpus": share}}} if share else {}
    prof = load_profile("smoke", overrides=over, output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="local", runs_per_gpu=runs_per_gpu), poll_seconds=0.2)
    assert ex.local.runs_per_gpu == runs_per_gpu
    results = run_grid(RunCache(prof.runs_dir / "toy"), [{"n": i} for i in range(4 * slots)], _timed_devices, desc="share",
                       executor=ex)
    assert {r["devices"] for r in results} == {"0", "1"}
    for gpu in ("0", "1"):  # never more than `slots` runs at once on one GPU
        spans = [(r["start"], r["end"]) for r in results if r["devices"] == gpu]
        assert max(sum(s <= t < e for s, e in spans) for t, _ in spans) <= slots
    out = capsys.readouterr().out
    assert f"on {2 * slots} local worker process(es), GPUs 0 | 1, up to {slots} run(s) at once on each" in out
    assert local_pool.pool_size(16, ["0", "1"], n_cores=64, slots=slots)[0] == 2 * slots  # bounded by GPUs × slots
    # the slots a run takes: a whole GPU of a 1/k pool takes all of it, a share 1/k one slot of k
    tasks = [Task(str(prof.runs_dir / "calbert"), {"n": 0}, _visible_devices),
             Task(str(prof.runs_dir / "glue"), {"n": 1}, _visible_devices)]
    mixed = dataclasses.replace(ex, resources={"calbert": executors.Resources(gpus=0.125), "default": executors.Resources(gpus=1)},
                                local=executors.LocalConfig(runs_per_gpu=1))
    got_slots, need = local_pool.gpu_slots(tasks, mixed, prof.runs_dir / "jobs")
    assert got_slots == 8 and sorted(need.values()) == [1, 8]


def test_gpu_share_must_be_one_over_k():
    from codeswitch.pipeline.executors import LocalConfig, Resources

    assert Resources(gpus=0.125).runs_per_gpu() == 8 and Resources(gpus=1).runs_per_gpu() == 1
    with pytest.raises(ValueError, match="1/k"):
        Resources(gpus=0.3)
    with pytest.raises(ValueError, match="whole number"):
        Resources(gpus=1.5)
    with pytest.raises(ValueError, match="runs_per_gpu"):
        LocalConfig(runs_per_gpu=0)


def _meet_partner(spec, out: str, fail: int = -1):
    """A run that waits (up to 120 s) for the other run of its pair to start: it returns only if the two ran at once."""
    me, partner = Path(out, f"{spec['n']}.started"), Path(out, f"{spec['n'] ^ 1}.started")
    me.touch()
    deadline = time.time() + 120
    while not partner.exists():
        if time.time() > deadline:
            raise TimeoutError(f"run {spec['n']} never met run {spec['n'] ^ 1}: the pair did not run side by side")
        time.sleep(0.05)
    if spec["n"] == fail:
        raise ValueError(f"run {spec['n']} cannot go on")
    return {"n": spec["n"], "pid": os.getpid(), "devices": os.environ.get("CUDA_VISIBLE_DEVICES")}


def test_submitit_puts_the_runs_of_a_gpu_share_side_by_side_in_one_job(tmp_path, capsys):
    """Issue 24, item 5, for submitit (Slurm and submitit-local): an experiment asking ``gpus: 1/k`` gets one GPU per
    job and k of its runs side by side in it (each run meets its partner, so they ran at once), k x its CPUs; a run
    that fails in such a job fails alone, named with its own log, and the run beside it keeps its record."""
    out = tmp_path / "t"
    out.mkdir()
    prof = load_profile("smoke", overrides={"executor.resources": {"default": {"gpus": 0.5, "cpus": 1, "mem_gb": 1}}},
                        output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="submitit-local"), poll_seconds=0.2)
    cache = RunCache(prof.runs_dir / "toy")
    specs = [{"n": i} for i in range(4)]
    with pytest.raises(GridFailed) as err:
        run_grid(cache, specs, functools.partial(_meet_partner, out=str(out), fail=3), desc="share", executor=ex)
    msg = str(err.value)
    assert "ValueError: run 3 cannot go on" in msg and '"n":3' in msg and "side-by-side" in msg  # its own log
    assert [s in cache for s in specs] == [True, True, True, False]  # run 2, beside it, kept its record
    results = [json.loads(cache.path(s).read_text(encoding="utf-8"))["result"] for s in specs[:3]]
    assert len({r["pid"] for r in results}) == 3 and {r["devices"] for r in results} == {"0"}  # a process each, one GPU a job
    jobs = prof.runs_dir / "jobs" / "toy"
    assert len(list(jobs.glob("*/*_log.out"))) == 2  # two jobs of two runs
    assert len(list((jobs / "side-by-side").glob("*.log"))) == 4  # a log per run
    text = capsys.readouterr().out
    assert "2 run(s) side by side on one GPU per job" in text and "at most 1 job(s) at once" in text  # 2 CPUs a job, 2 cores
    from codeswitch.pipeline.executors import Resources
    from codeswitch.pipeline.submitit_jobs import _job_cpus, _job_units

    tasks = [Task(str(tmp_path / "toy"), {"n": i}, _visible_devices) for i in range(10)]
    assert [len(u) for u in _job_units(tasks, Resources(gpus=0.25))] == [4, 4, 2]  # Slurm: the same units, one job each
    assert [len(u) for u in _job_units(tasks, Resources(gpus=1))] == [1] * 10
    assert _job_cpus(Resources(gpus=0.125, cpus=2)) == 16 and _job_cpus(Resources(gpus=2, cpus=3)) == 3
