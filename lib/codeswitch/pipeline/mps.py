"""CUDA MPS for several runs on one GPU (issue 40 item 2): one control daemon per job.

Without MPS, the processes that share a GPU (``executor.local.runs_per_gpu``, a share ``gpus: 1/k`` in
``executor.resources``) are time-sliced: each has its own CUDA context and the GPU switches between them, so
kernels of two small runs never overlap.  Under the Multi-Process Service their kernels run side by side in one
shared context.  :func:`mps_daemon` starts ``nvidia-cuda-mps-control -d`` for one job, with the job's own pipe and
log folders (``CUDA_MPS_PIPE_DIRECTORY``, ``CUDA_MPS_LOG_DIRECTORY``: two jobs on one node never meet), hands those
variables to the worker processes it starts, and sends ``quit`` when the job ends (after its workers stopped).

It starts only where it can apply: several runs share a GPU, GPUs are visible (``CUDA_VISIBLE_DEVICES``), the
binary is on ``PATH`` and ``executor.local.mps`` is on (its default); elsewhere it says why not and the runs share
the GPU by time-slicing, as before.  Where runs are computed, never what: no run key changes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterator, Sequence

from ..core.utils import environment

BINARY = "nvidia-cuda-mps-control"
#: the variables a client process (each worker) reads to find the job's daemon
CLIENT_ENV = ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY")


def why_not(gpus: Sequence[str], runs_per_gpu: int, enabled: bool) -> str | None:
    """Why the daemon does not start for this job, or None when it does."""
    if not enabled:
        return "executor.local.mps is off"
    if runs_per_gpu < 2:
        return "one run per GPU"
    if not gpus:
        return "no GPU visible (CUDA_VISIBLE_DEVICES)"
    if shutil.which(BINARY) is None:
        return f"{BINARY} is not on PATH"
    return None


@contextlib.contextmanager
def mps_daemon(gpus: Sequence[str], runs_per_gpu: int, folder: Path, *, enabled: bool = True,
               say=print) -> Iterator[dict[str, str] | None]:
    """Run the job's MPS control daemon for the ``with`` block (see the module); yield the client environment set in
    ``os.environ`` for the block (what spawned workers inherit), or None where it does not start."""
    reason = why_not(gpus, runs_per_gpu, enabled)
    if reason:
        if runs_per_gpu > 1 and gpus:
            say(f"CUDA MPS: not started ({reason}): the {runs_per_gpu} runs on each GPU share it by time-slicing")
        yield None
        return
    folder = Path(folder)
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(folder / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(folder / "log")}
    for path in env.values():
        Path(path).mkdir(parents=True, exist_ok=True)
    # the daemon serves the job's GPUs only (it reads CUDA_VISIBLE_DEVICES when it starts)
    daemon_env = {**os.environ, **env, "CUDA_VISIBLE_DEVICES": ",".join(gpus)}
    started = subprocess.run([BINARY, "-d"], env=daemon_env, capture_output=True, text=True)
    if started.returncode != 0:
        raise RuntimeError(f"CUDA MPS: `{BINARY} -d` failed (exit {started.returncode}): "
                           f"{(started.stderr or started.stdout).strip()} (logs: {env['CUDA_MPS_LOG_DIRECTORY']})")
    say(f"CUDA MPS: control daemon started for GPUs {','.join(gpus)} (pipe {env['CUDA_MPS_PIPE_DIRECTORY']}, "
        f"log {env['CUDA_MPS_LOG_DIRECTORY']})")
    try:
        with environment(env):
            yield env
    finally:
        stopped = subprocess.run([BINARY], input="quit\n", env=daemon_env, capture_output=True, text=True)
        say("CUDA MPS: control daemon stopped" + ("" if stopped.returncode == 0 else
            f" with exit {stopped.returncode}: {(stopped.stderr or stopped.stdout).strip()}"))
