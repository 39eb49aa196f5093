"""The next items computed in background threads while the caller works on the current one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, TypeVar

__all__ = ["prefetched"]


V = TypeVar("V")


def prefetched(fn: Callable[..., V], keys: Iterable[tuple], *, enabled: bool = True, workers: int = 1) -> Iterator[V]:
    """``fn(*key)`` for every key in order, the next ``workers`` computed in background threads meanwhile.

    At most ``workers + 1`` results exist at a time (the one the caller holds and the
    ones being prepared); results come back in the order of ``keys`` whatever thread
    computed them, so ``fn`` must not depend on the order of its calls.  Several
    workers help where ``fn`` spends its time outside the GIL (a fast tokenizer).  An
    exception raised by ``fn`` reaches the caller when it asks for that result.
    ``enabled=False``: computed in the caller's thread, one at a time.
    """
    from collections import deque

    keys = iter(keys)
    if not enabled:
        for key in keys:
            yield fn(*key)
        return
    workers = max(1, workers)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="codeswitch-prefetch")
    try:
        queue: deque = deque()
        for key in keys:
            queue.append(pool.submit(fn, *key))
            if len(queue) >= workers:
                break
        while queue:
            result = queue.popleft().result()
            key = next(keys, None)
            if key is not None:
                queue.append(pool.submit(fn, *key))
            yield result
            del result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
