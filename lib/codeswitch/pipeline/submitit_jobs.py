"""The ``slurm`` and ``submitit-local`` executors, through `submitit <https://github.com/facebookincubator/submitit>`_:
a job array per experiment with the profile's resources, requeued when preempted; jobs whose scheduler forgot them
are failed with the cause read from their logs.  Driven by :func:`codeswitch.pipeline.executors.execute`."""

from __future__ import annotations

import logging
import math
import os
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.utils import cores
from .local_pool import _init_worker, _local_task, visible_gpus
from .mps import mps_daemon
from .tasks import Failure, Task, _Queue, _experiment_of, _worker_environment, compute


# ---- slurm / submitit-local
def _submitit_task():
    import submitit

    class RequeueableRun(submitit.helpers.Checkpointable):
        """One run as a submitit job; on preemption or time-out submitit requeues it (the run restarts; its record is atomic)."""

        def __call__(self, task: Task) -> str:
            print(f"run {task.key} ({task.desc}) on {os.uname().nodename}, CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}", flush=True)
            return compute(task)

    return RequeueableRun()


def compute_side_by_side(tasks: Sequence[Task], threads: int, logs: Sequence[str], mps: bool = True) -> list[str]:
    """Compute ``tasks`` at once, one spawned process each, all on the GPU(s) this process may use: the k runs of a
    GPU share (``executor.resources``: ``gpus: 1/k``) in one Slurm or submitit-local job.  Each run's output goes to
    its own log; one that fails leaves the others running, and the error names every failed run and its log.
    With ``mps`` (``executor.local.mps``) the job runs them under its own CUDA MPS daemon where it can
    (:func:`codeswitch.pipeline.mps.mps_daemon`)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    import cloudpickle

    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    print(f"{len(tasks)} run(s) side by side on {os.uname().nodename}, CUDA_VISIBLE_DEVICES={gpu}, {threads} thread(s) each",
          flush=True)
    gpus = [g for g in (gpu or "").split(",") if g]
    folder = Path(logs[0]).parent / f"mps-{os.getpid()}" if logs else Path(f"mps-{os.getpid()}")
    with mps_daemon(gpus, len(tasks), folder, enabled=mps), _worker_environment(threads), \
            ProcessPoolExecutor(len(tasks), mp_context=multiprocessing.get_context("spawn"),
                                initializer=_init_worker, initargs=(gpu, threads)) as pool:
        futures = [pool.submit(_local_task, cloudpickle.dumps(t), log) for t, log in zip(tasks, logs)]
        done, failed = [], []
        for t, log, f in zip(tasks, logs, futures):
            try:
                done.append(f.result())
            except Exception as exc:  # noqa: BLE001 - each failure named with its run and log, below
                failed.append(f"run {t.key} ({t.desc}): {type(exc).__name__}: {exc} (log: {log})")
    for line in done:
        print(f"done: {line}", flush=True)
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(tasks)} side-by-side run(s) failed:\n" + "\n".join(failed))
    return done


def _submitit_bundle():
    import submitit

    class RequeueableBundle(submitit.helpers.Checkpointable):
        """The k runs of a GPU share as one job on one GPU (:func:`compute_side_by_side`); requeued like a single run
        (a run whose record was written is not computed again)."""

        def __call__(self, tasks: list[Task], threads: int, logs: list[str], mps: bool = True) -> list[str]:
            return compute_side_by_side(tasks, threads, logs, mps)

    return RequeueableBundle()


def _job_units(group: Sequence[Task], r: Any) -> list[list[Task]]:
    """The jobs an experiment's runs become: one run each, or for a GPU share ``1/k`` up to k runs side by side."""
    k = r.runs_per_gpu() if 0 < r.gpus < 1 else 1
    return [list(group[i:i + k]) for i in range(0, len(group), k)]


def _job_cpus(r: Any) -> int:
    """The CPUs one job asks for: a run's, times the runs a GPU share puts side by side in it."""
    return r.cpus * (r.runs_per_gpu() if 0 < r.gpus < 1 else 1)


#: why squeue last failed to answer (its first line of error), for the "controller down" line
_SQUEUE_ERROR = {"text": ""}


def _squeue_ids() -> set[str] | None:
    """The ids of this user's jobs that Slurm still lists (array tasks one by one); ``None`` when squeue cannot answer
    (slurmctld down: why, in ``_SQUEUE_ERROR``)."""
    import getpass

    try:
        out = subprocess.run(["squeue", "-h", "-r", "-o", "%i", "-u", getpass.getuser()], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        _SQUEUE_ERROR["text"] = f"{type(exc).__name__}: {exc}"
        return None
    if out.returncode != 0:
        _SQUEUE_ERROR["text"] = next((line.strip() for line in out.stderr.splitlines() if line.strip()),
                                     f"squeue exited {out.returncode}")
        return None
    return {line.strip() for line in out.stdout.splitlines() if line.strip()}


#: lines of a job's log that say why it ended, in the order they are looked for (the log's own line is reported)
LOG_CAUSES = ("Unable to contact slurm controller", "DUE TO TIME LIMIT", "DUE TO PREEMPTION", "DUE TO NODE FAILURE",
              "CANCELLED AT", "oom-kill", "Out Of Memory", "Killed")


def log_cause(*logs: str | Path | None, tail: int = 1 << 16) -> str | None:
    """The line of a job's logs (the last ``tail`` bytes of each) that says why it ended (:data:`LOG_CAUSES`), or
    ``None``: what a job that left the queue without a result is reported with, instead of a guess."""
    texts = []
    for log in logs:
        if not log:
            continue
        try:
            with open(log, "rb") as f:
                f.seek(max(0, os.path.getsize(log) - tail))
                texts.append(f.read().decode("utf-8", "replace"))
        except OSError:
            continue
    for pattern in LOG_CAUSES:
        for text in texts:
            for line in reversed(text.splitlines()):
                if pattern.lower() in line.lower():
                    return line.strip()
    return None


def _job_logs(job: Any) -> tuple[str | None, str | None]:
    paths = getattr(job, "paths", None)
    return tuple(str(getattr(paths, name)) if getattr(paths, name, None) else None for name in ("stderr", "stdout"))


class _OncePerPoll(logging.Filter):
    """submitit's "Bypassing sacct error" (logged by every job's status check while sacct fails): once a poll."""

    PATTERN = "Bypassing sacct error"

    def __init__(self):
        super().__init__()
        self.said = False

    def new_poll(self) -> None:
        self.said = False

    def filter(self, record: logging.LogRecord) -> bool:
        if self.PATTERN not in record.getMessage():
            return True
        if self.said:
            return False
        self.said = True
        return True


def _local_job_alive(job_id: str) -> bool:
    """Whether a process of the submitit-local job ``job_id`` (its task, started by its controller) still lives (Linux: /proc)."""
    want = f"SUBMITIT_LOCAL_JOB_ID={job_id}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if want in environ.read_bytes().split(b"\0"):
                return True
        except OSError:
            continue
    return False


def _submitit_executors(by_experiment: Mapping[str, list[Task]], ex: Any, jobs_dir: Path, cluster: str,
                        desc: str) -> tuple[dict[str, Any], dict[str, list[list[Task]]]]:
    """One submitit executor per experiment, with its resources, and the runs of each of its jobs."""
    import submitit

    executors_of: dict[str, Any] = {}
    units_of: dict[str, list[list[Task]]] = {}
    for experiment, group in by_experiment.items():
        r = ex.resources_for(experiment)
        units_of[experiment] = _job_units(group, r)
        side = len(units_of[experiment][0])  # runs per job: k for a share 1/k of a GPU, else 1
        executor = submitit.AutoExecutor(folder=jobs_dir / experiment / "%j", cluster=cluster)
        params: dict[str, Any] = dict(
            name=f"codeswitch-{experiment}", timeout_min=r.time_min, cpus_per_task=_job_cpus(r),
            gpus_per_node=math.ceil(r.gpus),  # a share 1/k of a GPU: one GPU for k runs side by side
            mem_gb=r.mem_gb * side, tasks_per_node=1, nodes=1,
        )
        if cluster == "slurm":
            params["slurm_array_parallelism"] = ex.slurm.array_parallelism
            for key in ("partition", "account", "qos"):
                if getattr(ex.slurm, key):
                    params[f"slurm_{key}"] = getattr(ex.slurm, key)
            if ex.slurm.setup:
                params["slurm_setup"] = list(ex.slurm.setup)
        executor.update_parameters(**params)
        executors_of[experiment] = executor
        how = f"{side} run(s) side by side on one GPU per job" if side > 1 else "each"
        print(f"[{desc}] {experiment}: {len(group)} run(s) submitted to {cluster} ({r.gpus} GPU, {r.cpus} CPU, {r.mem_gb:g} GB, "
              f"{r.time_min} min {how}); logs: {jobs_dir / experiment}/", flush=True)
    return executors_of, units_of


def _local_job_limit(by_experiment: Mapping[str, list[Task]], ex: Any) -> int:
    """submitit's local executor starts whatever it is given at once: the jobs one may hand it at a time (a core's or
    a GPU's worth each)."""
    asked = [ex.resources_for(e) for e in by_experiment]
    job_gpus, job_cpus = max(math.ceil(r.gpus) for r in asked), max(_job_cpus(r) for r in asked)
    gpus = visible_gpus()
    return max(1, min(ex.workers or cores(), cores() // job_cpus, len(gpus) // job_gpus if job_gpus and gpus else cores()))


def _still_open(job: Any, t: Task, listed: set[str] | None, gone_since: dict[str, float], ex: Any,
                fail: Callable[[Task, str, str], None]) -> bool:
    """A job that is not done: whether to keep waiting for it.  A Slurm job that left the queue without a record
    (and whose run holds no lock) fails after ``slurm.vanished_s``."""
    from ..core.runs import lock_held

    if listed is not None and str(job.job_id) not in listed and not lock_held(t.record):
        since = gone_since.setdefault(str(job.job_id), time.monotonic())
        if t.record.is_file():
            return False  # finished; submitit has not seen its result yet
        if time.monotonic() - since >= ex.slurm.vanished_s:
            cause = log_cause(*_job_logs(job))
            fail(t, f"Slurm job {job.job_id} left the queue without a result: " + (
                f"its log says {cause!r}" if cause else "cancelled, or its node lost (its log names no cause; without "
                "accounting submitit cannot tell which)"), str(job.paths.stderr))
            return False
    elif listed is not None:
        gone_since.pop(str(job.job_id), None)
    return True


def _job_ended(job: Any, t: Task, cluster: str, desc: str, orphans: list[tuple[Any, Task]],
               fail: Callable[[Task, str, str], None]) -> None:
    """A done job: its result, or why it failed; a job whose controller died while its run goes on becomes an orphan."""
    from ..core.runs import lock_held

    try:
        job.result()
    except Exception as exc:  # noqa: BLE001 - submitit raises the job's exception (or why it died)
        if lock_held(t.record) or (cluster == "local" and _local_job_alive(str(job.job_id))):
            # its controller died, but the run goes on: wait for it, and count it by its record
            print(f"[{desc}] job {job.job_id} ended ({type(exc).__name__}) while its run still computes; waiting for the run", flush=True)
            orphans.append((job, t))
            return
        if t.record.is_file():
            return  # the run finished and wrote its record; only the job's wrapper failed
        msg = str(exc).strip().splitlines()
        msg = [line for line in msg if t.key in line] or msg  # side by side: the line of this run
        cause = log_cause(*_job_logs(job)) if type(exc).__name__ == "UncompletedJobError" else None  # died: why, from its log
        fail(t, f"{type(exc).__name__}: {msg[-1] if msg else ''}" + (f" (its log says {cause!r})" if cause else ""),
             str(job.paths.stderr))


def _run_submitit(tasks: Sequence[Task], *, ex: Any, jobs_dir: Path, desc: str) -> list[Failure]:
    """Submit ``tasks`` and wait for them.  ``slurm``: one job array per experiment.  ``submitit-local``: one job per
    run, at most one per core (or GPU) at a time.  An experiment whose resources ask a share ``1/k`` of a GPU gets
    one GPU per job and k of its runs side by side in it (:func:`compute_side_by_side`), with k times a run's CPUs
    and memory.  A job whose controller died while its run goes on (its lock
    held) is waited for and counted by its record; a Slurm job that left the queue without a record (``scancel``
    on a cluster without accounting, which submitit cannot see) is reported failed after ``slurm.vanished_s``."""
    cluster = "slurm" if ex.kind == "slurm" else "local"
    by_experiment: dict[str, list[Task]] = {}
    for t in tasks:
        by_experiment.setdefault(_experiment_of(t, jobs_dir), []).append(t)
    fn, bundle = _submitit_task(), _submitit_bundle()
    executors_of, units_of = _submitit_executors(by_experiment, ex, jobs_dir, cluster, desc)

    def submit(experiment: str, unit: list[Task]) -> list[tuple[Any, Task]]:
        """One job for ``unit``; a pair (job, run) per run of it, so that each run is counted by its own record."""
        if len(unit) == 1 and len(units_of[experiment][0]) == 1:
            job = executors_of[experiment].submit(fn, unit[0])
        else:
            logs = [str(jobs_dir / experiment / "side-by-side" / f"{t.key}.log") for t in unit]
            job = executors_of[experiment].submit(bundle, unit, ex.resources_for(experiment).cpus, logs, ex.local.mps)
        return [(job, t) for t in unit]

    jobs: list[tuple[Any, Task]] = []
    unsubmitted: list[tuple[str, list[Task]]] = []
    if cluster == "slurm":
        for experiment in by_experiment:
            with executors_of[experiment].batch():  # one job array per experiment
                for unit in units_of[experiment]:
                    jobs += submit(experiment, unit)
        limit = len(jobs)
    else:  # submitit's local executor starts whatever it is given at once: we hand it one core's (or GPU's) worth at a time
        unsubmitted = [(e, unit) for e, units in units_of.items() for unit in units]
        limit = _local_job_limit(by_experiment, ex)
        print(f"[{desc}] submitit-local: at most {limit} job(s) at once", flush=True)
    queue = _Queue(tasks, desc, ex.poll_seconds)
    failures: list[Failure] = []

    def fail(t: Task, why: str, log: str) -> None:
        failures.append(Failure(t, why, log))
        queue.failed[str(t.record)] = failures[-1]

    open_jobs = list(jobs)
    orphans: list[tuple[Any, Task]] = []  # the job ended (its controller killed) but its run goes on, holding its lock
    gone_since: dict[str, float] = {}
    last_squeue = 0.0
    down_since: float | None = None  # when squeue stopped answering (slurmctld down), said once
    sacct_once = _OncePerPoll()
    submitit_log = logging.getLogger("submitit")
    submitit_log.addFilter(sacct_once)
    try:
        while open_jobs or orphans or unsubmitted:
            sacct_once.new_poll()
            while unsubmitted and len({id(j) for j, _ in open_jobs + orphans}) < limit:
                open_jobs += submit(*unsubmitted.pop(0))
            listed = None
            if cluster == "slurm" and time.monotonic() - last_squeue >= max(ex.poll_seconds, min(30.0, ex.slurm.vanished_s / 4)):
                listed, last_squeue = _squeue_ids(), time.monotonic()
                if listed is None and down_since is None:
                    down_since, queue.quiet = time.monotonic(), True
                    print(f"[{desc}] the Slurm controller does not answer (squeue: {_SQUEUE_ERROR['text'] or 'no answer'}); "
                          "waiting for it: the jobs keep running, their state is unknown until it answers", flush=True)
                elif listed is not None and down_since is not None:
                    print(f"[{desc}] the Slurm controller answers again (after {time.monotonic() - down_since:.0f} s)", flush=True)
                    down_since, queue.quiet = None, False
            open_jobs = _poll_jobs(open_jobs, orphans, listed, gone_since, ex, cluster, desc, fail)
            queue.line()
            if open_jobs or orphans or unsubmitted:
                time.sleep(ex.poll_seconds)
    finally:
        submitit_log.removeFilter(sacct_once)
    queue.line(final=True)
    return failures


def _poll_jobs(open_jobs: list[tuple[Any, Task]], orphans: list[tuple[Any, Task]], listed: set[str] | None,
               gone_since: dict[str, float], ex: Any, cluster: str, desc: str,
               fail: Callable[[Task, str, str], None]) -> list[tuple[Any, Task]]:
    """One poll of the jobs: the ones still open (a done job's result or failure, orphans whose run ended)."""
    from ..core.runs import lock_held

    still = []
    for job, t in open_jobs:
        if not job.done():
            if _still_open(job, t, listed, gone_since, ex, fail):
                still.append((job, t))
            continue
        _job_ended(job, t, cluster, desc, orphans, fail)
    for job, t in list(orphans):
        if not lock_held(t.record) and not (cluster == "local" and _local_job_alive(str(job.job_id))):
            orphans.remove((job, t))
            if not t.record.is_file():
                fail(t, f"job {job.job_id} ended and its run stopped without a record", str(job.paths.stderr))
    return still


