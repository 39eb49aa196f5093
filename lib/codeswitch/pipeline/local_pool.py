"""The ``local`` executor: a pool of fresh worker processes on this machine (``spawn``, never ``fork``, so CUDA is
safe), one GPU each through ``CUDA_VISIBLE_DEVICES`` when GPUs are visible (or ``runs_per_gpu`` side by side on each),
else N CPU processes.  A worker that dies fails only its own run and is replaced; workers die with their parent.
Driven by :func:`codeswitch.pipeline.executors.execute`."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.sections import ConfigError
from ..core.utils import cores
from .mps import mps_daemon
from .tasks import Failure, Task, _Queue, _experiment_of, _priorities, _worker_environment, compute


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


def gpu_slots(tasks: Sequence[Task], ex: Any, jobs_dir: Path, per_run: int = 1) -> tuple[int, dict[str, int]]:
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


def _local_shape(tasks: Sequence[Task], ex: Any, jobs_dir: Path) -> tuple[list[str], int, dict[str, int], int, str]:
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


def _run_local(tasks: Sequence[Task], deps: Mapping[str, set[str]], ex: Any, jobs_dir: Path, desc: str,
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


