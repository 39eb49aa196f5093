"""The runs an executor computes (:class:`Task`), how one fails (:class:`Failure`, :class:`GridFailed`), and what
every executor shares: computing one task into its cache, the workers' environment, the queue's progress line, and
the inline executor (one task after another in this process).  :mod:`.executors` drives them; :mod:`.local_pool` and
:mod:`.submitit_jobs` are the other two ways to compute them."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.sections import ConfigError
from ..core.utils import environment


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

    def cached(self) -> bool:
        """Whether the run's record is in its cache (verified, as the run cache reads every record)."""
        from ..core.runs import RunCache

        return RunCache(self.cache_root).get(self.spec) is not None


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
    from ..core.utils import frozen_gc

    cache = RunCache(task.cache_root)
    with frozen_gc():
        cache.run(task.spec, lambda: task.fn(task.spec))
    return str(cache.path(task.spec))


def _experiment_of(task: Task, jobs_dir: Path) -> str:
    """The experiment a run belongs to: its cache folder's first part below runs/<profile>/."""
    root = Path(task.cache_root).resolve()
    try:
        return root.relative_to(jobs_dir.resolve().parent).parts[0]
    except (ValueError, IndexError):
        return root.name




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
    """The environment the notebooks run with (:func:`codeswitch.pipeline.execute.run_notebook`), for spawned workers and jobs.

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
        from ..core.progress import hms

        done, running, pending, failed = c = self.counts()
        now = time.monotonic()
        if not final and (c == self._last and self.quiet or
                          now - self._last_time < (max(60.0, 10 * self.poll) if c == self._last else self.poll)):
            return  # a line when the counts changed (at most one per poll interval), else a heartbeat a minute
        self._last, self._last_time = c, now
        elapsed = now - self.start
        left = "0:00:00" if final or not (running or pending) else (hms(elapsed / done * (running + pending)) if done else "?")
        print(
            f"[{self.desc}] queue: {done} done, {running} running, {pending} pending, {failed} failed"
            f" of {len(self.tasks)} | {hms(elapsed)} elapsed, {left} left",
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


