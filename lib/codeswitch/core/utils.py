"""Small shared helpers: seeding, timing, threads, unpacking an archive safely."""

from __future__ import annotations

import os
import random
import time
from contextlib import contextmanager


def set_seed(seed: int, *, deterministic: bool = True) -> None:
    """Seed Python, NumPy and torch (all devices) before a model is built.

    ``deterministic`` asks torch for deterministic kernels where they exist (with
    ``warn_only`` so an op without one does not crash a GPU run), without the NaN
    fill of new memory that mode adds (:func:`deterministic_mode`).
    """
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        deterministic_mode(True)


def deterministic_mode(on: bool, *, fill_uninitialized_memory: bool = False) -> None:
    """torch's deterministic-algorithm mode (``warn_only``), without its NaN fill of new memory by default.

    ``torch.use_deterministic_algorithms(True)`` also turns on
    ``torch.utils.deterministic.fill_uninitialized_memory``: every ``torch.empty``
    (and every output a kernel allocates) is first filled with NaN, so that a
    kernel reading memory it never wrote shows up.  That is a debugging aid, not
    part of determinism — no op the trainers run reads unwritten memory, so the
    results are the same bit for bit (the smoke determinism test checks it) — and
    it costs thousands of fill kernels per step (3,040 per ConCSE step on an H100,
    ``docs/bench/gpu/profiles``).  ``tests/test_perf_guards.py`` checks that a
    step runs no more ``aten::fill_`` than without the mode.
    """
    import torch

    torch.use_deterministic_algorithms(on, warn_only=True)
    if on:
        torch.utils.deterministic.fill_uninitialized_memory = fill_uninitialized_memory


def adamw_kind(device, *, cpu: str = "foreach") -> dict:
    """The keyword that picks torch AdamW's implementation for ``device``: fused on CUDA, ``cpu`` elsewhere.

    The fused kernel updates every parameter in a few launches (and takes fp16's
    inf check on the device).  On CPU torch 2.13 has it too, but its rounding
    differs from the multi-tensor update by an ulp, so CPU runs (smoke, CI) keep
    the update their results were made with: ``foreach`` (the hand-written loops),
    or ``"fused"`` (the HF-Trainer runs of CalBERT and Koglish-GLUE, fused on CPU
    from the start).
    """
    import torch

    if cpu not in ("foreach", "fused"):
        raise ValueError(f"adamw_kind: cpu must be 'foreach' or 'fused', got {cpu!r}")
    return {"fused": True} if torch.device(device).type == "cuda" else {cpu: True}


def trainer_optim(device, *, cpu: str = "foreach") -> str:
    """:func:`adamw_kind` as the HF ``TrainingArguments.optim`` name: ``"adamw_torch_fused"`` where it picks the
    fused kernel, else ``"adamw_torch"`` (the Trainer has no multi-tensor name: torch's default update)."""
    return "adamw_torch_fused" if adamw_kind(device, cpu=cpu).get("fused") else "adamw_torch"


def to_device(tensor, device):
    """``tensor`` (a fresh host tensor of one step) on ``device``: on CUDA copied from pinned memory without blocking
    (a copy from pageable memory is a host synchronisation); elsewhere ``tensor.to(device)``."""
    import torch

    device = torch.device(device)
    if device.type == "cuda" and tensor.device.type == "cpu":
        return tensor.pin_memory().to(device, non_blocking=True)
    return tensor.to(device)


@contextmanager
def timed(label: str):
    """Print how long a block took: ``[timing] label: 12.3 s``."""
    start = time.perf_counter()
    yield
    print(f"[timing] {label}: {time.perf_counter() - start:.1f} s", flush=True)


@contextmanager
def environment(values: dict[str, str]):
    """Run a block with ``values`` set in ``os.environ`` and restore each variable afterwards (unset if it was)."""
    import os

    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def torch_threads(n: int | None):
    """Run a block with ``n`` torch intra-op threads and restore the count afterwards (``None``: leave it alone).

    Tiny models on a shared CPU are several times faster on one thread than on two
    competing ones; a fixed count also keeps CPU results reproducible.
    """
    if not n:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


_FROZEN_DEPTH = 0


@contextmanager
def frozen_gc():
    """Exempt the objects that exist before a block from garbage collection while it runs (re-entrant).

    ``Trainer.train`` starts with accelerate's ``free_memory()``, a full ``gc.collect()`` over every object of the
    process; in a notebook's kernel (imports, data: about 480,000 objects) that cost about a third of a second per
    run: 20 of notebook 07's 54 s under paper-ci (58 runs; measured with py-spy).  The outermost block collects once,
    so that no garbage of earlier work is frozen with the live objects, then ``gc.freeze``s what is left; a collection
    inside the block (the Trainer's) scans only the objects made since, so garbage the block's own runs make is still
    collected.  Nothing is leaked: the objects are unfrozen when the outermost block ends.  :func:`codeswitch.core.runs.run_grid`
    holds it over a grid's inline runs and :func:`codeswitch.pipeline.tasks.compute` over a worker's run.
    """
    import gc

    global _FROZEN_DEPTH
    if _FROZEN_DEPTH == 0:
        gc.collect()
        gc.freeze()
    _FROZEN_DEPTH += 1
    try:
        yield
    finally:
        _FROZEN_DEPTH -= 1
        if _FROZEN_DEPTH == 0:
            gc.unfreeze()


@contextmanager
def quiet_transformers():
    """Silence transformers' load reports, info logs and progress bars (and those of datasets and
    sentence-transformers) inside a block; the trainers report progress themselves, one line per epoch."""
    import logging

    import datasets
    from transformers.utils import logging as hf_logging

    level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    ds_bars = datasets.is_progress_bar_enabled()
    st_logger = logging.getLogger("sentence_transformers")
    st_level = st_logger.level
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()
    st_logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()
        if ds_bars:
            datasets.enable_progress_bars()
        st_logger.setLevel(st_level)


def loader_workers(cuda: bool, *, per_step_host_s: float | None = None) -> int:
    """DataLoader worker processes for a training run: 0 on CPU, enough to keep a GPU fed.

    On CPU the smoke steps are tiny and a worker's start-up costs more than it saves.
    On a GPU the host must prepare a step (tokenise, bucket) faster than the GPU runs
    one: the benchmark's host rows (``python -m benchmarks --paths t_a,t_d``)
    measured one worker at ~80 ms per ConCSE step of 768 sentences on a 2-core CPU,
    against a ~25 ms GPU step at the 40 % MFU target — at least four workers.  The
    count is split over the processes of a distributed launch on this machine
    (``LOCAL_WORLD_SIZE``) and leaves two cores to the training process itself;
    ``CODESWITCH_LOADER_WORKERS`` overrides it.
    """
    if not cuda:
        return 0
    if os.environ.get("CODESWITCH_LOADER_WORKERS"):
        return int(os.environ["CODESWITCH_LOADER_WORKERS"])
    return gpu_host_workers(int(os.environ.get("LOCAL_WORLD_SIZE", "1")))


def gpu_host_workers(local_processes: int = 1) -> int:
    """Host workers (processes or threads) that feed one GPU process: the usable cores, less two for each of the
    ``local_processes`` GPU processes on this machine, shared among them — at least 2, at most 8."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 4)
    return max(2, min(8, (cores - 2 * local_processes) // local_processes))


def cores() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def extract_tar(tar, dest, members=None, *, source: str | None = None) -> None:
    """Unpack ``members`` (default: every member) of the open :class:`tarfile.TarFile` ``tar`` into the folder ``dest``,
    refusing any member that could write outside it.

    Python's own guard, ``filter="data"``, where it exists (3.11.4+ and 3.12; Debian 12's python3.11 is 3.11.2, which
    lacks it).  Without it the rule is checked here, stricter than the data filter: regular files and folders only (no
    link, device or FIFO), no absolute name, no ``..``; each file written from its bytes with the default permissions.
    A refused member raises :class:`ValueError` naming the archive (``source``) and the member; nothing is written
    before every member has been checked.
    """
    import tarfile
    from pathlib import Path

    dest = Path(dest)
    chosen = list(tar.getmembers() if members is None else members)
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=chosen, filter="data")
        return
    where = source or getattr(tar, "name", None) or "the archive"
    root = dest.resolve()
    for m in chosen:
        target = (root / m.name).resolve()
        if not (m.isfile() or m.isdir()):
            raise ValueError(f"{where}: member {m.name!r} is not a regular file or folder (links and devices are refused)")
        if os.path.isabs(m.name) or ".." in Path(m.name).parts or not target.is_relative_to(root):
            raise ValueError(f"{where}: member {m.name!r} would be written outside {dest}")
    for m in chosen:
        target = root / m.name
        if m.isdir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with tar.extractfile(m) as src, open(target, "wb") as out:
            while chunk := src.read(1 << 20):
                out.write(chunk)
