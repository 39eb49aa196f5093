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

This module holds that setting and the driver (:func:`execute`, :class:`Submission`); a run and its failure, and
the inline executor, are :mod:`.tasks`'; the local pool is :mod:`.local_pool`, Slurm and submitit-local
:mod:`.submitit_jobs`.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from ..core.profiles import Profile
from ..core.sections import ConfigError, build_dataclass
from .local_pool import _run_local
from .submitit_jobs import _run_submitit
from .tasks import Failure, GridFailed, Task, _check_picklable, _run_inline, _worker_environment

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
    unique: dict[str, Task] = {}
    for t in tasks:
        if not t.cached():
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
