"""Executors behind :func:`codeswitch.core.runs.run_grid`: where the pending runs of a grid are computed.

* ``inline`` (the default): one after another in this process (what a notebook does).
* ``local``: N fresh worker processes on this machine (``spawn``, never ``fork``, so
  CUDA is safe), one GPU each through ``CUDA_VISIBLE_DEVICES`` when GPUs are visible,
  else N CPU processes (never more than cores, or GPU groups).  A worker that dies fails only
  its own run (naming it and its log) and is replaced; workers die with their parent.
* ``slurm``: a Slurm job array through `submitit <https://github.com/facebookincubator/submitit>`_,
  one run per task, with the profile's resources per experiment (GPUs, CPUs, memory,
  time limit, partition/account).  A job that is preempted or hits its time limit is
  requeued (submitit's checkpointing: the run restarts from scratch, its record being
  atomic); each job's log lies under ``runs/<profile>/jobs/``.
* ``submitit-local``: submitit's own local executor (each run in a subprocess): the
  Slurm code path without Slurm, for tests and single machines (at most one job per core at a time).

Whoever computes a run writes its record (atomically, holding the run's lock, see
:func:`codeswitch.core.runs.run_lock`); the caller reads every result back from the cache,
in spec order.  A failed run does not stop the others; :class:`GridFailed` names each
failed spec and its log, and re-running submits only what is still missing.

``reproduce.sh`` with a non-inline executor plans every stage of the selected notebooks
once (each paper package's ``stages(profile)``, read through the one registry
:data:`codeswitch.core.experiment.EXPERIMENTS`) and submits the whole grid at once
(:class:`Submission`): a run waits only for the stages it reads (``Stage.after``), and with
``local`` one pool of workers (each importing torch once, with its share of the cores)
computes it in the background while the notebooks build, each as soon as its own runs are cached.

The executor is chosen in the profile (a top-level ``executor:`` section, read into
:class:`ExecutorConfig`) or on the command line (``./reproduce.sh --executor local
--workers 8``; ``--executor slurm --partition gpu``).  It decides where runs are
computed, never what they compute, so it is not part of any run's key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import math
import os
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from ..core.profiles import Profile
from ..core.sections import ConfigError, build_dataclass
from ..core.utils import cores, environment
from .mps import mps_daemon

KINDS = ("inline", "local", "slurm", "submitit-local")
SECTION = "executor"


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class Resources:
    """What one run of an experiment asks of the scheduler (Slurm; ``local`` uses ``gpus`` only).

    ``gpus`` below 1 is a share of one GPU, ``1/k`` (``0.125``: eight runs on a GPU at once): the local pool
    places that many runs of the experiment on one GPU (:class:`LocalConfig`); a Slurm job still gets a whole GPU.
    """

    gpus: float = 0  # GPUs per run; > 1 only for runs that use accelerate inside the job; 1/k: k runs share one
    cpus: int = 1  # CPU cores per run
    mem_gb: float = 8.0  # host memory per run
    time_min: int = 60  # wall-clock limit; a run that hits it is requeued

    def __post_init__(self):
        for name in ("gpus", "cpus", "time_min"):
            if getattr(self, name) < (0 if name == "gpus" else 1):
                raise ValueError(f"{name} must be {'>= 0' if name == 'gpus' else '>= 1'}, got {getattr(self, name)}")
        if self.mem_gb <= 0:
            raise ValueError(f"mem_gb must be > 0, got {self.mem_gb}")
        if self.gpus >= 1 and self.gpus != int(self.gpus):
            raise ValueError(f"gpus must be a whole number of GPUs, or a share 1/k of one, got {self.gpus}")
        if 0 < self.gpus < 1 and abs(1 / self.gpus - round(1 / self.gpus)) > 1e-6:
            raise ValueError(f"gpus below 1 must be a share 1/k of one GPU (0.5, 0.25, 0.125, ...), got {self.gpus}")

    def runs_per_gpu(self) -> int:
        """How many runs that ask for this share one GPU (1 for a whole GPU or more)."""
        return round(1 / self.gpus) if 0 < self.gpus < 1 else 1


@dataclass(frozen=True)
class LocalConfig:
    """The ``local`` executor's own settings (``executor.local``)."""

    # runs that ask for one GPU (or none, or do not say) computed side by side on each GPU: small runs (CalBERT at
    # batch 4, alignment, GLUECoS) cannot fill an H100 alone.  A share in executor.resources (gpus: 0.125) is that
    # experiment's own count.  Where runs are computed, never what: results are unchanged.
    runs_per_gpu: int = 1
    # runs sharing a GPU do so under CUDA MPS (kernels side by side, not time-sliced): one control daemon per job,
    # started only where GPUs are visible and nvidia-cuda-mps-control is on PATH (codeswitch.pipeline.mps)
    mps: bool = True

    def __post_init__(self):
        if self.runs_per_gpu < 1:
            raise ValueError(f"runs_per_gpu must be >= 1, got {self.runs_per_gpu}")


@dataclass(frozen=True)
class SlurmConfig:
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    array_parallelism: int = 256  # at most this many tasks of one array run at once
    setup: tuple[str, ...] = ()  # shell lines run before each job (e.g. "source .venv/bin/activate")
    # a job that submitit still counts as running but that squeue no longer lists, with no record and no lock held,
    # is reported failed after this many seconds (cancelled on a cluster without accounting, where sacct cannot say)
    vanished_s: float = 120.0

    def __post_init__(self):
        if self.vanished_s <= 0:
            raise ValueError(f"vanished_s must be > 0, got {self.vanished_s}")


@dataclass(frozen=True)
class ExecutorConfig:
    """The profile's ``executor:`` section (unknown keys are an error, as in every section)."""

    kind: Literal["inline", "local", "slurm", "submitit-local"] = "inline"
    workers: int | None = None  # local: worker processes (None: one per visible GPU, else 1)
    poll_seconds: float = 5.0  # how often the queue's progress line is refreshed
    slurm: SlurmConfig = field(default_factory=SlurmConfig)
    local: LocalConfig = field(default_factory=LocalConfig)
    # per experiment (the folder under runs/<profile>/: glue, concse, alignment, calbert, contrastivemix);
    # "default" for the rest
    resources: Mapping[str, Resources] = field(default_factory=dict)
    jobs_dir: str | None = None  # set from the profile: runs/<profile>/jobs

    def __post_init__(self):
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.poll_seconds <= 0:
            raise ValueError(f"poll_seconds must be > 0, got {self.poll_seconds}")
        res = {}
        for name, r in dict(self.resources).items():
            res[name] = r if isinstance(r, Resources) else build_dataclass(Resources, r, where=f"executor.resources.{name}")
        object.__setattr__(self, "resources", res)

    def resources_for(self, experiment: str) -> Resources:
        return self.resources.get(experiment) or self.resources.get("default") or Resources()

    def run_pending(self, cache, configs: Sequence[Any], fn: Callable[[Any], Mapping[str, Any]], *, desc: str = "runs") -> None:
        """Compute the pending ``configs`` of a grid into ``cache`` on this executor (what :func:`codeswitch.core.runs.run_grid` calls)."""
        execute([Task(str(cache.root), c, fn, desc) for c in configs], self, desc=desc, raise_on_failure=True)


def executor_config(profile: Profile, **cli: Any) -> ExecutorConfig:
    """The profile's executor, with command-line choices (``kind``, ``workers``, ``partition``, ``account``) on top.

    Errors name the profile file and the key (or the flag).
    """
    raw = dict(profile.sections.get(SECTION) or {})
    where = f"{profile.source_file}: section '{SECTION}'"
    if cli.get("kind") is not None:
        raw["kind"] = cli["kind"]
    if cli.get("workers") is not None:
        raw["workers"] = cli["workers"]
    if cli.get("runs_per_gpu") is not None:
        raw["local"] = {**dict(raw.get("local") or {}), "runs_per_gpu": cli["runs_per_gpu"]}
    slurm = dict(raw.get("slurm") or {})
    for key in ("partition", "account"):
        if cli.get(key) is not None:
            slurm[key] = cli[key]
    if slurm:
        raw["slurm"] = slurm
    if "jobs_dir" in raw:
        raise ConfigError(f"{where}: 'jobs_dir' is not a setting (jobs go to runs/<profile>/jobs/)")
    ex = build_dataclass(ExecutorConfig, raw, where=where)
    return dataclasses.replace(ex, jobs_dir=str(profile.runs_dir / "jobs"))


# --------------------------------------------------------------------------- tasks and failures
@dataclass(frozen=True)
class Task:
    """One pending run: compute ``fn(spec)`` into the cache at ``cache_root``."""

    cache_root: str
    spec: Any
    fn: Callable[[Any], Mapping[str, Any]]
    desc: str = "runs"
    after: tuple[str, ...] = ()  # the records (paths) of the runs this one reads: it starts once they ended

    @property
    def key(self) -> str:
        from ..core.runs import config_hash

        return config_hash(self.spec)

    @property
    def record(self) -> Path:
        from ..core.runs import RunCache

        return RunCache(self.cache_root).path(self.spec)


@dataclass(frozen=True)
class Failure:
    task: Task
    error: str
    log: str

    def describe(self) -> str:
        from ..core.runs import canonical_json

        spec = canonical_json(self.task.spec)
        spec = spec if len(spec) <= 400 else spec[:400] + "…"
        return f"{self.task.desc} run {self.task.key} failed: {self.error}\n    log:  {self.log}\n    spec: {spec}"


class GridFailed(RuntimeError):
    """Some runs failed (the others finished and are cached); names each spec and its log."""

    def __init__(self, failures: Sequence[Failure]):
        self.failures = list(failures)
        lines = [f"{len(self.failures)} run(s) failed; the others are cached, and re-running submits only what is missing:"]
        lines += ["  " + f.describe() for f in self.failures]
        super().__init__("\n".join(lines))


def compute(task: Task) -> str:
    """Compute one run into its cache (holding its lock); the worker side of every executor. Returns the record path."""
    from ..core.runs import RunCache

    cache = RunCache(task.cache_root)
    cache.run(task.spec, lambda: task.fn(task.spec))
    return str(cache.path(task.spec))


def _experiment_of(task: Task, jobs_dir: Path) -> str:
    """The experiment a run belongs to: its cache folder's first part below runs/<profile>/."""
    root = Path(task.cache_root).resolve()
    try:
        return root.relative_to(jobs_dir.resolve().parent).parts[0]
    except (ValueError, IndexError):
        return root.name


# --------------------------------------------------------------------------- the driver
def execute(
    tasks: Sequence[Task],
    ex: ExecutorConfig,
    *,
    desc: str = "runs",
    raise_on_failure: bool = True,
    threads: int | None = None,
    started: Callable[[], None] | None = None,
    rank: Mapping[str, int] | None = None,
) -> list[Failure]:
    """Compute every task with the executor ``ex``; show the queue's progress; return (or raise) the failures.

    Tasks whose record already exists are skipped; the same run listed twice is computed once.
    A task starts once the tasks named in its ``after`` ended (a failed one too: the
    dependant then fails with its own message).  ``local`` keeps one pool of workers for
    the whole call and starts, whenever a worker is free, the ready task of the lowest
    ``rank`` (record -> rank; default 0: e.g. the notebook that needs it first), of those the
    one with the longest chain of dependants; the other executors submit the ready tasks in waves.
    ``threads``: torch threads of a local worker (default: this machine's cores / workers).
    ``started`` is called once the workers are up (local) or the computing begins: from then
    on this process's environment can change without reaching them.
    """
    from ..core.runs import RunCache

    unique: dict[str, Task] = {}
    for t in tasks:
        if not RunCache(t.cache_root).get(t.spec):
            unique.setdefault(str(t.record), t)
    todo = list(unique.values())
    if not todo:
        if started:
            started()
        return []
    jobs_dir = Path(ex.jobs_dir) if ex.jobs_dir else Path(todo[0].cache_root).parent / "jobs"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    _check_picklable(todo)
    deps = {str(t.record): {a for a in t.after if a in unique} for t in todo}
    if ex.kind == "local":
        failures = _run_local(todo, deps, ex, jobs_dir, desc, threads, started, rank or {})
    else:
        if ex.kind not in KINDS:
            raise ConfigError(f"executor kind {ex.kind!r} is not one of {list(KINDS)}")
        with _worker_environment():
            if started:
                started()
            run = functools.partial(_run_submitit, ex=ex) if ex.kind != "inline" else _run_inline
            failures, finished, left = [], set(), list(todo)
            while left:  # waves: every task whose dependencies ended
                ready = [t for t in left if deps[str(t.record)] <= finished] or left[:1]
                failures += run(ready, jobs_dir=jobs_dir, desc=desc)
                finished |= {str(t.record) for t in ready}
                left = [t for t in left if str(t.record) not in finished]
    if failures and raise_on_failure:
        raise GridFailed(failures)
    return failures


def _priorities(todo: Sequence[Task], deps: Mapping[str, set[str]]) -> dict[str, int]:
    """Each task's longest chain of dependants (itself included): the critical path starts first."""
    dependants: dict[str, list[str]] = {}
    for rec, ds in deps.items():
        for d in ds:
            dependants.setdefault(d, []).append(rec)
    height: dict[str, int] = {}

    def h(rec: str, seen: frozenset = frozenset()) -> int:
        if rec not in height:
            if rec in seen:
                raise ValueError(f"the runs' dependencies form a cycle through {rec}")
            height[rec] = 1 + max((h(d, seen | {rec}) for d in dependants.get(rec, ())), default=0)
        return height[rec]

    return {str(t.record): h(str(t.record)) for t in todo}


def _check_picklable(tasks: Sequence[Task]) -> None:
    import cloudpickle

    seen = set()
    for t in tasks:
        if id(t.fn) in seen:
            continue
        seen.add(id(t.fn))
        try:
            cloudpickle.dumps(t.fn)
        except Exception as exc:  # noqa: BLE001 - any pickling error means the same thing here
            raise TypeError(
                f"{t.desc}: the run function {t.fn!r} cannot be sent to a worker ({type(exc).__name__}: {exc}); "
                "non-inline executors need a module-level function or a functools.partial of one"
            ) from None


@contextlib.contextmanager
def _worker_environment(threads: int | None = None):
    """The environment the notebooks run with (``pipeline.run_notebook``), for spawned workers and jobs.

    ``threads``: the size of every native thread pool of a worker (OpenMP, OpenBLAS, MKL), where the
    environment does not set it already: N workers each spinning up one thread per core would
    oversubscribe the CPU (torch's own count is set in the worker, :func:`_init_worker`).
    """
    from ..core.profiles import project_root

    pools = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    want = {k: str(threads) for k in pools if threads and k not in os.environ}
    want |= {"PYTHONHASHSEED": "0", "TOKENIZERS_PARALLELISM": "false", "MPLBACKEND": "Agg", "CODESWITCH_LOG_PROGRESS": "1"}
    try:
        want["CODESWITCH_HOME"] = str(project_root())
    except ConfigError:
        pass
    lib = str(Path(__file__).resolve().parents[1])
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if lib not in paths:
        want["PYTHONPATH"] = os.pathsep.join([lib, *paths])
    with environment(want):
        yield


class _Queue:
    """Counts done / running / pending / failed from the cache and the locks, and prints one line per update."""

    def __init__(self, tasks: Sequence[Task], desc: str, poll: float):
        self.tasks, self.desc, self.poll = list(tasks), desc, poll
        self.start = time.monotonic()
        self.failed: dict[str, Failure] = {}
        self._last: tuple | None = None
        self._last_time = 0.0
        self.quiet = False  # no heartbeat of unchanged counts (the Slurm controller is down: said once instead)

    def counts(self) -> tuple[int, int, int, int]:
        from ..core.runs import lock_held

        done = running = 0
        for t in self.tasks:
            rec = t.record
            if str(rec) in self.failed:
                continue
            if rec.is_file():
                done += 1
            elif lock_held(rec):
                running += 1
        failed = len(self.failed)
        return done, running, len(self.tasks) - done - running - failed, failed

    def line(self, final: bool = False) -> None:
        from ..core.progress import _hms

        done, running, pending, failed = c = self.counts()
        now = time.monotonic()
        if not final and (c == self._last and self.quiet or
                          now - self._last_time < (max(60.0, 10 * self.poll) if c == self._last else self.poll)):
            return  # a line when the counts changed (at most one per poll interval), else a heartbeat a minute
        self._last, self._last_time = c, now
        elapsed = now - self.start
        left = "0:00:00" if final or not (running or pending) else (_hms(elapsed / done * (running + pending)) if done else "?")
        print(
            f"[{self.desc}] queue: {done} done, {running} running, {pending} pending, {failed} failed"
            f" of {len(self.tasks)} | {_hms(elapsed)} elapsed, {left} left",
            flush=True,
        )


def _run_inline(tasks: Sequence[Task], *, jobs_dir: Path, desc: str) -> list[Failure]:
    queue, failures = _Queue(tasks, desc, 1.0), []
    for t in tasks:
        try:
            compute(t)
        except Exception as exc:  # noqa: BLE001 - reported with its spec; the others go on
            failures.append(Failure(t, f"{type(exc).__name__}: {exc}", "(this process's output)"))
            queue.failed[str(t.record)] = failures[-1]
        queue.line()
    queue.line(final=True)
    return failures


# ---- local: a pool of spawned worker processes
_GPU_OF_WORKER: str | None = None


def _init_worker(gpu: str | None, threads: int) -> None:
    """A worker's start: its GPU(s), its share of the cores, and the imports every run needs, once per worker."""
    global _GPU_OF_WORKER
    if gpu is not None:
        _GPU_OF_WORKER = gpu
        os.environ["CUDA_VISIBLE_DEVICES"] = _GPU_OF_WORKER  # before anything imports torch's CUDA
    import torch
    import transformers  # noqa: F401 - imported once here, not by the worker's first run

    # as load_profile does in a notebook: N workers x the default (every core) would oversubscribe the CPU
    torch.set_num_threads(threads)


def _die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this worker when the process that started it dies (Linux: ``PR_SET_PDEATHSIG``).

    A SIGKILLed ``reproduce.sh`` then leaves no idle worker holding memory or a GPU (nor, once the
    workers are gone, multiprocessing's resource tracker, which exits when its last client does).
    The signal follows the *thread* that started the worker: the pool's thread, which outlives every worker.
    """
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)


def _worker_main(conn, gpu: str | None, threads: int, parent: int) -> None:
    """One local worker: set up once, then compute the tasks the pool sends over ``conn`` until it sends ``None``."""
    _die_with_parent(parent)
    _init_worker(gpu, threads)
    conn.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return  # the pool is gone
        if msg is None:
            return
        payload, log = msg
        try:
            conn.send(("ok", _local_task(payload, log)))
        except Exception as exc:  # noqa: BLE001 - reported with its run and log; the worker goes on
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def _local_task(payload: bytes, log: str) -> str:
    """Run one task in a worker, its output (Python and C level) going to ``log``."""
    import cloudpickle

    task: Task = cloudpickle.loads(payload)
    Path(log).parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "ab") as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            print(f"run {task.key} ({task.desc}) in pid {os.getpid()}, CUDA_VISIBLE_DEVICES={_GPU_OF_WORKER}", flush=True)
            return compute(task)
        except BaseException:
            traceback.print_exc()
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as ``CUDA_VISIBLE_DEVICES`` entries (none on a CPU machine)."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g for g in (x.strip() for x in env.split(",")) if g and g != "-1"]
    try:
        import torch

        return [str(i) for i in range(torch.cuda.device_count())]
    except Exception:  # noqa: BLE001 - no usable CUDA: CPU workers
        return []


def pool_size(requested: int | None, gpu_groups: Sequence[str], n_cores: int | None = None, *,
              slots: int = 1) -> tuple[int, str]:
    """How many local workers to start, and why, bounded by what the machine has: ``slots`` per GPU group when GPUs
    are visible (never more workers than that), else the ``requested`` count (default 1) but at most one per core."""
    n_cores = n_cores or cores()
    if gpu_groups:
        most = len(gpu_groups) * slots
        n = min(requested or most, most)
        per = f" × {slots} run(s) each" if slots > 1 else ""
        why = f" ({requested} asked for; bounded by the {len(gpu_groups)} GPU group(s){per})" if requested and requested > n else ""
        return n, why
    n = min(requested or 1, n_cores)
    why = f" ({requested} asked for; bounded by the {n_cores} core(s))" if requested and requested > n else ""
    return n, why


def gpu_slots(tasks: Sequence[Task], ex: ExecutorConfig, jobs_dir: Path, per_run: int = 1) -> tuple[int, dict[str, int]]:
    """Fractional GPUs for the local pool: ``(slots per GPU group, {run's record: slots it takes})``.

    A GPU group has ``S`` slots, the most runs that may share it: ``executor.local.runs_per_gpu`` (for runs asking
    one GPU or not saying), or ``k`` for an experiment whose resources ask ``gpus: 1/k``.  Such a run takes
    ``S / k`` slots (rounded up), one asking a whole group of several GPUs takes all ``S``.  With neither setting
    ``S = 1``: one run per group, as before.
    """
    n = ex.local.runs_per_gpu
    shares = {str(t.record): ex.resources_for(_experiment_of(t, jobs_dir)) for t in tasks}
    slots = max([n] + [r.runs_per_gpu() for r in shares.values()])
    need = {}
    for record, r in shares.items():
        k = r.runs_per_gpu() if 0 < r.gpus < 1 else (1 if r.gpus > 1 else n)
        need[record] = -(-slots // k)
    return slots, need


def _signal_name(exitcode: int | None) -> str:
    import signal

    if exitcode is None or exitcode >= 0:
        return f"exit code {exitcode}"
    try:
        return f"killed by {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"killed by signal {-exitcode}"


class _LocalWorker:
    """One spawned worker process and its pipe; ``task``: what it computes now (``None``: idle or starting)."""

    def __init__(self, ctx, gpu: str | None, threads: int):
        self.gpu = gpu
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(child, gpu, threads, os.getpid()), name="codeswitch-worker")
        self.proc.start()
        child.close()
        self.ready = False
        self.task: tuple[Task, Path] | None = None

    def receive(self):
        """The worker's next message; ``None`` when it has none yet; ``EOFError`` when it died."""
        if not self.conn.poll():
            if not self.proc.is_alive() and not self.conn.poll():
                raise EOFError
            return None
        return self.conn.recv()

    def stop(self, timeout: float = 10.0) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.conn.send(None)
        self.proc.join(timeout if self.ready else 0)  # one still starting (a replacement) has nothing to finish
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(5)
        self.conn.close()


def _local_shape(tasks: Sequence[Task], ex: ExecutorConfig, jobs_dir: Path) -> tuple[list[str], int, dict[str, int], int, str]:
    """The pool's shape: the GPU group of each worker, the runs a GPU holds at once (``slots``) and what each run
    takes of them (``need``), the number of workers and why it is bounded."""
    gpus = visible_gpus()
    # a run of an experiment whose profile resources ask for g GPUs (accelerate inside the run) gets a
    # worker with g GPUs: every worker gets the largest such group, so any run fits any worker
    per_run = int(max([1] + [ex.resources_for(_experiment_of(t, jobs_dir)).gpus for t in tasks]))
    groups = [",".join(gpus[i:i + per_run]) for i in range(0, len(gpus) - per_run + 1, per_run)] if gpus else []
    if gpus and not groups:
        raise ConfigError(f"executor local: a run asks for {per_run} GPUs (executor.resources), but only {len(gpus)} are visible")
    slots, need = gpu_slots(tasks, ex, jobs_dir, per_run) if groups else (1, {})
    workers, bounded = pool_size(ex.workers, groups, slots=slots)
    return groups, slots, need, workers, bounded


def _start_pool(ctx, groups: Sequence[str], workers: int, threads: int) -> list[_LocalWorker]:
    """Every worker, started with the notebooks' environment and waited for until it is up (torch imported)."""
    with _worker_environment(threads):
        pool = [_LocalWorker(ctx, groups[i % len(groups)] if groups else None, threads) for i in range(workers)]
        try:
            for w in pool:  # up and warm (torch imported) before the notebooks change this process's environment
                try:
                    msg = w.conn.recv()
                except EOFError:
                    w.proc.join(5)
                    raise RuntimeError(f"a local worker process died while starting ({_signal_name(w.proc.exitcode)})") from None
                w.ready = msg[0] == "ready"
        except BaseException:
            for w in pool:
                w.stop()
            raise
    return pool


def _hand_out(pool: Sequence[_LocalWorker], waiting: list[Task], deps: Mapping[str, set[str]], ended: set[str], slots: int,
              need: Mapping[str, int], logs: Path, jobs_dir: Path) -> None:
    """A free worker takes the first ready run: lowest rank, then longest chain of dependants (not a FIFO of everything)."""
    import cloudpickle

    for w in pool:
        if not w.ready or w.task is not None:
            continue
        ready = [t for t in waiting if deps[str(t.record)] <= ended]
        if not ready:
            break
        free = slots - sum(need.get(str(o.task[0].record), 1) for o in pool if o.task is not None and o.gpu == w.gpu)
        t = next((t for t in ready if need.get(str(t.record), 1) <= free), None)  # what fits this worker's GPU now
        if t is None:
            continue
        waiting.remove(t)
        log = logs / f"{_experiment_of(t, jobs_dir)}-{t.key}.log"
        w.conn.send((cloudpickle.dumps(t), str(log)))
        w.task = (t, log)


def _take_messages(pool: list[_LocalWorker], ctx, threads: int, desc: str, failures: list[Failure], queue: _Queue,
                   ended: set[str]) -> None:
    """Read what each worker said: ready, a run done or failed, or the worker died (a fresh one takes its place)."""
    from ..core.runs import run_lock

    for i, w in enumerate(pool):
        try:
            msg = w.receive()
        except (EOFError, OSError):
            msg = ("died", None)
        if msg is None:
            continue
        if msg[0] == "ready":
            w.ready = True
            continue
        if msg[0] == "died":
            w.proc.join(5)
            why = _signal_name(w.proc.exitcode)
            pool[i] = _LocalWorker(ctx, w.gpu, threads)  # a fresh worker takes its place (started with the
            # environment of now: the notebooks' variables included, which a run does not read)
            w.conn.close()
            if w.task is None:
                print(f"[{desc}] an idle local worker process ({w.proc.pid}) died ({why}); started another", flush=True)
                continue
            t, log = w.task
            with contextlib.suppress(OSError), run_lock(t.record, wait=False):
                pass  # its lock file (the kernel released the lock itself): removed, unless someone else holds it
            failures.append(Failure(t, f"its worker process {w.proc.pid} died ({why}) while computing it; "
                                       "the other runs went on", str(log)))
        else:
            t, log = w.task
            w.task = None
            if msg[0] == "error":
                failures.append(Failure(t, msg[1], str(log)))
        if msg[0] != "ok":
            queue.failed[str(t.record)] = failures[-1]
        ended.add(str(t.record))


def _run_local(tasks: Sequence[Task], deps: Mapping[str, set[str]], ex: ExecutorConfig, jobs_dir: Path, desc: str,
               threads: int | None = None, started: Callable[[], None] | None = None,
               rank: Mapping[str, int] = {}) -> list[Failure]:
    """The local pool: one process per worker, each told its task over a pipe.  A worker that dies (SIGKILL, OOM
    killer) fails only the run it was computing, naming it and its log; a new worker takes its place, and the
    others go on.  Workers die with this process (:func:`_die_with_parent`)."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    groups, slots, need, workers, bounded = _local_shape(tasks, ex, jobs_dir)
    threads = threads or max(1, cores() // workers)
    ctx = mp.get_context("spawn")
    logs = jobs_dir / f"local-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    print(
        f"[{desc}] {len(tasks)} run(s) on {workers} local worker process(es){bounded}"
        + (f", GPUs {' | '.join(groups)}" if groups else " (CPU)")
        + (f", up to {slots} run(s) at once on each" if slots > 1 else "")
        + f", {threads} torch thread(s) each; logs: {logs}/",
        flush=True,
    )
    queue = _Queue(tasks, desc, ex.poll_seconds)
    failures: list[Failure] = []
    priority = _priorities(tasks, deps)
    waiting = sorted(tasks, key=lambda t: (rank.get(str(t.record), 0), -priority[str(t.record)]))  # stable: plan order among equals
    ended: set[str] = set()
    pool: list[_LocalWorker] = []
    gpus = list(dict.fromkeys(g for group in groups for g in group.split(",")))  # every GPU of the pool, once
    with mps_daemon(gpus, slots, logs / "mps", enabled=ex.local.mps, say=lambda m: print(f"[{desc}] {m}", flush=True)):
        try:
            pool = _start_pool(ctx, groups, workers, threads)  # workers inherit the daemon's client variables
            if started:
                started()
            while waiting or any(w.task for w in pool):
                _hand_out(pool, waiting, deps, ended, slots, need, logs, jobs_dir)
                busy = [w for w in pool if w.task is not None or not w.ready]
                if not any(w.task for w in pool) and not any(not w.ready for w in pool):  # what is left waits on itself
                    raise ValueError(f"{len(waiting)} run(s) wait on runs that never start (a dependency cycle)")
                wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=ex.poll_seconds)
                _take_messages(pool, ctx, threads, desc, failures, queue, ended)
                queue.line()
        finally:
            for w in pool:  # before the daemon quits
                w.stop()
    queue.line(final=True)
    return failures


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


def _job_units(group: Sequence[Task], r: Resources) -> list[list[Task]]:
    """The jobs an experiment's runs become: one run each, or for a GPU share ``1/k`` up to k runs side by side."""
    k = r.runs_per_gpu() if 0 < r.gpus < 1 else 1
    return [list(group[i:i + k]) for i in range(0, len(group), k)]


def _job_cpus(r: Resources) -> int:
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


def _submitit_executors(by_experiment: Mapping[str, list[Task]], ex: ExecutorConfig, jobs_dir: Path, cluster: str,
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


def _local_job_limit(by_experiment: Mapping[str, list[Task]], ex: ExecutorConfig) -> int:
    """submitit's local executor starts whatever it is given at once: the jobs one may hand it at a time (a core's or
    a GPU's worth each)."""
    asked = [ex.resources_for(e) for e in by_experiment]
    job_gpus, job_cpus = max(math.ceil(r.gpus) for r in asked), max(_job_cpus(r) for r in asked)
    gpus = visible_gpus()
    return max(1, min(ex.workers or cores(), cores() // job_cpus, len(gpus) // job_gpus if job_gpus and gpus else cores()))


def _still_open(job: Any, t: Task, listed: set[str] | None, gone_since: dict[str, float], ex: ExecutorConfig,
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


def _run_submitit(tasks: Sequence[Task], *, ex: ExecutorConfig, jobs_dir: Path, desc: str) -> list[Failure]:
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
               gone_since: dict[str, float], ex: ExecutorConfig, cluster: str, desc: str,
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


# --------------------------------------------------------------------------- submit everything, then build
def plan_stages(numbers: Sequence[str], profile: Profile) -> list[tuple[str, Any]]:
    """``(section, stage)`` of every stage the selected notebooks read, from the one registry
    (:func:`codeswitch.pipeline.registry.packages`); each package's ``stages(profile)`` is called once."""
    from .registry import packages

    out = []
    for pkg in packages():
        section = pkg.SECTION
        if not set(pkg.NOTEBOOKS) & set(numbers):
            continue
        stages = pkg.stages(profile)
        names = [st.name for st in stages]
        for st in stages:
            unknown = [a for a in st.after if a not in names[:names.index(st.name)]]
            if unknown:
                raise ValueError(f"{section}.stages: stage {st.name!r} runs after {unknown}, which are not earlier stages ({names})")
            if st.notebook is None or st.notebook in numbers:
                out.append((section, st))
    return out


def stage_tasks(section: str, stage, profile: Profile, after: Sequence[str] = ()) -> list[Task]:
    """One stage's runs as tasks (``after``: the records they wait for); a run listed twice is one task."""
    from .registry import package

    run_one = package(section).run_one
    tasks: dict[str, Task] = {}
    for spec in stage:
        t = Task(str(stage.cache_dir), spec.key(), functools.partial(_call_spec, run_one, profile, spec), f"{section}.{stage.name}",
                 tuple(after))
        tasks.setdefault(t.key, t)
    return list(tasks.values())


def _call_run_one(run_one: Callable, profile: Profile, spec: Any) -> Mapping[str, Any]:
    return run_one(spec, profile)


def _call_spec(run_one: Callable, profile: Profile, spec: Any, _key: Any) -> Mapping[str, Any]:
    return run_one(spec, profile)


class Submission:
    """The runs of the selected notebooks: planned once, submitted at once, with each stage waiting only for the
    stages it reads (``Stage.after``).

    With ``local`` the grid is computed in a background thread, so notebook N can build its
    tables (:meth:`wait` for N) while the runs of later notebooks are still computing; the
    other executors compute it all in :meth:`start`.
    """

    def __init__(self, numbers: Sequence[str], profile: Profile, ex: ExecutorConfig):
        import threading

        self.ex, self.profile = ex, profile
        self.tasks: list[Task] = []
        self.of_notebook: dict[str, list[Task]] = {n: [] for n in numbers}
        records: dict[tuple[str, str], list[str]] = {}
        from .registry import experiments

        EXPERIMENTS = experiments()
        for section, stage in plan_stages(numbers, profile):
            after = [r for a in stage.after for r in records.get((section, a), ())]
            got = stage_tasks(section, stage, profile, after)
            records[(section, stage.name)] = [str(t.record) for t in got]
            print(f"plan: {section}.{stage.name} ({', '.join(n for n in EXPERIMENTS[section] if n in numbers and stage.notebook in (None, n))}): "
                  f"{len(got)} runs" + (f", after {' and '.join(stage.after)}" if stage.after else ""), flush=True)
            self.tasks += got
            for n in EXPERIMENTS[section]:
                if n in self.of_notebook and stage.notebook in (None, n):
                    self.of_notebook[n] += got
        self.failures: list[Failure] = []
        self.error: BaseException | None = None
        self._done, self._started = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name="codeswitch-submission", daemon=True)

    def _run(self) -> None:
        t0 = time.monotonic()
        try:
            threads = self.profile.cpu_threads if self.profile.cpu_threads and self.profile.torch_device().type == "cpu" else None
            # the runs of the notebook that builds first, first: it builds while the workers go on
            rank = {}
            for i, tasks in enumerate(self.of_notebook.values()):
                for t in tasks:
                    rank.setdefault(str(t.record), i)
            self.failures = execute(self.tasks, self.ex, desc="grid", raise_on_failure=False, threads=threads,
                                    started=self._started.set, rank=rank)
            print(f"plan: every planned run submitted and finished in {time.monotonic() - t0:.0f} s"
                  + (f"; {len(self.failures)} failed" if self.failures else ""), flush=True)
        except BaseException as exc:  # noqa: BLE001 - re-raised by wait() in the caller's thread
            self.error = exc
        finally:
            self._started.set()
            self._done.set()

    def start(self) -> "Submission":
        """``local``: start computing in the background, returning once the workers are up (they were spawned with
        this process's environment as it is now); the other executors: compute every run, then return."""
        if self.ex.kind == "local":
            self._thread.start()
            self._started.wait()
        else:
            self._run()
        return self

    def wait(self, number: str | None = None, poll: float = 0.5) -> list[Failure]:
        """Block until the runs of notebook ``number`` (``None``: every run) are cached, or the grid ended; its failures.

        A failed run never gets a record, so a notebook with a failed run waits for the whole grid (the others go on).
        """
        tasks = self.tasks if number is None else self.of_notebook.get(number, [])
        while not self._done.is_set() and not all(t.record.is_file() for t in tasks):
            self._done.wait(poll)
        if self.error is not None:
            raise self.error
        mine = {str(t.record) for t in tasks}
        return [f for f in self.failures if str(f.task.record) in mine]
