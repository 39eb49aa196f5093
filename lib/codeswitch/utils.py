"""Small shared helpers: seeding, timing."""

from __future__ import annotations

import os
import random
import time
from contextlib import contextmanager


def set_seed(seed: int, *, deterministic: bool = True) -> None:
    """Seed Python, NumPy and torch (all devices) before a model is built.

    ``deterministic`` asks torch for deterministic kernels where they exist (with
    ``warn_only`` so an op without one does not crash a GPU run).
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
        torch.use_deterministic_algorithms(True, warn_only=True)


@contextmanager
def timed(label: str):
    """Print how long a block took: ``[timing] label: 12.3 s``."""
    start = time.perf_counter()
    yield
    print(f"[timing] {label}: {time.perf_counter() - start:.1f} s", flush=True)
