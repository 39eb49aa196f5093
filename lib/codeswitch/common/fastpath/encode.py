"""The resumable, length-sorted corpus encoder: ``.npy`` rows written in windows, resumed after an interruption, its
batches optionally padded to fixed-width buckets (:func:`encode_bucket_widths`); the design notes are in
:mod:`codeswitch.contrastivemix.evaluate`.  :func:`encode_corpus` writes a corpus's file, :func:`encode_texts` returns
a list of texts' embeddings (queries), both through :func:`_encode_windows`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ...core.progress import progress
from ...core.atomic import atomic_write_json
from .prefetch import prefetched
from .sdpa import sdpa_ready, uses_sdpa

__all__ = ["encode_bucket_widths", "encode_corpus", "encode_texts"]


class _RowFile:
    """A ``(n, dim)`` ``.npy`` file filled in row ranges, with the resume protocol of the corpus encoders.

    ``<stem>.progress.json`` = ``{"n", "dim", "dtype", "rows_done"}`` after each synced
    range; ``<stem>.done.json`` (atomic, last) marks a complete file.  Rows are written
    with ``os.pwrite`` at ``header + row · dim · itemsize``.
    """

    def __init__(self, path: Path, n: int, dim: int, dtype, *, desc: str):
        self.path, self.n, self.dim, self.dtype, self.desc = Path(path), n, dim, np.dtype(dtype), desc
        self.done_marker = self.path.with_suffix(".done.json")
        self.state = self.path.with_suffix(".progress.json")

    def complete(self) -> np.ndarray | None:
        """The finished array (memory-mapped, read-only), or None when the file must be (re)encoded."""
        if not (self.done_marker.is_file() and self.path.is_file()):
            return None
        arr = np.load(self.path, mmap_mode="r")
        return arr if arr.shape == (self.n, self.dim) and arr.dtype == self.dtype else None

    def open(self) -> int:
        """Open the file for writing (creating it unless a matching partial one exists); return the first row to encode."""
        start = 0
        if self.path.is_file() and self.state.is_file():
            try:
                info = json.loads(self.state.read_text())
            except json.JSONDecodeError:
                info = {}
            same = info.get("n") == self.n and info.get("dim") == self.dim and info.get("dtype", "float16") == self.dtype.name
            if same and 0 <= int(info.get("rows_done", 0)) <= self.n:
                start = int(info["rows_done"])
        self.done_marker.unlink(missing_ok=True)
        if start == 0:
            self.state.unlink(missing_ok=True)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            np.lib.format.open_memmap(self.path, mode="w+", dtype=self.dtype, shape=(self.n, self.dim))  # header + sparse zeros
        self.offset = self._data_offset()
        self.fd = os.open(self.path, os.O_RDWR)
        return start

    def _data_offset(self) -> int:
        arr = np.load(self.path, mmap_mode="r")  # reads the header only
        if arr.shape != (self.n, self.dim) or arr.dtype != self.dtype or not arr.flags.c_contiguous:
            raise ValueError(f"{self.desc}: {self.path} holds a {arr.shape} {arr.dtype} array, expected {(self.n, self.dim)} {self.dtype}")
        return int(arr.offset)

    def write(self, lo: int, rows: np.ndarray) -> None:
        if rows.shape[1:] != (self.dim,) or lo + len(rows) > self.n:
            raise ValueError(f"{self.desc}: rows {lo}:{lo + len(rows)} have shape {rows.shape}, expected (·, {self.dim}) within {self.n} rows")
        data = memoryview(np.ascontiguousarray(rows, dtype=self.dtype)).cast("B")
        pos = self.offset + lo * self.dim * self.dtype.itemsize
        while len(data):
            written = os.pwrite(self.fd, data, pos)
            data, pos = data[written:], pos + written

    def checkpoint(self, rows_done: int) -> None:
        os.fsync(self.fd)
        atomic_write_json(self.state, {"n": self.n, "dim": self.dim, "dtype": self.dtype.name, "rows_done": rows_done})

    def finish(self) -> np.ndarray:
        os.fsync(self.fd)
        self.close()
        atomic_write_json(self.done_marker, {"n": self.n, "dim": self.dim, "dtype": self.dtype.name})
        self.state.unlink(missing_ok=True)
        return np.load(self.path, mmap_mode="r")

    def close(self) -> None:
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None


def encode_bucket_widths(step: int, max_length: int, *, what: str = "encode_bucket_step") -> tuple[int, ...]:
    """The fixed padded widths of the corpus encoder's batches: ``step, 2·step, …`` below ``max_length``, then
    ``max_length`` itself; ``()`` for ``step = 0`` (each batch padded to its own longest row).

    With buckets a batch is padded to the narrowest width that holds its longest row, so an encoder sees at most
    ``len(widths)`` widths (× the full and the last batch size): few enough shapes for a compiled or CUDA-graph
    encoder, at the price of some padding.

    >>> encode_bucket_widths(32, 128), encode_bucket_widths(48, 128), encode_bucket_widths(0, 128)
    ((32, 64, 96, 128), (48, 96, 128), ())
    """
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise ValueError(f"{what} must be a whole number of tokens >= 0 (0: off), got {step!r}")
    if step == 0:
        return ()
    return tuple(range(step, max_length, step)) + (max_length,)


@dataclass
class _Window:
    """One window on the host: rows ``lo:hi`` as batches sorted longest first, and where each sorted row came from."""

    lo: int
    hi: int
    order: np.ndarray  # (hi - lo,): window-relative row of each sorted position
    batches: list  # dicts of host tensors (pinned on CUDA), SDPA-ready


def _prepare_window(tokens, lo: int, hi: int, *, max_length: int, pad: dict[str, int], left: bool, batch_size: int,
                    sort: bool, sdpa: bool, pin: bool, desc: str, widths: Sequence[int] = ()) -> _Window:
    """Rows ``lo:hi`` read from their token shards, sorted by length (longest first, stable) and cut into padded batches.

    ``tokens``: a :class:`codeswitch.common.tokens.TokenRows` of every row, tokenised once with this tokenizer and
    ``max_length`` (memory-mapped int32 shards): the window's ids are sliced from it into compact
    ``(rows, max_length)`` int32 arrays (:meth:`~codeswitch.common.tokens.TokenRows.padded`), each batch then trimmed
    to its longest row — the tensors the tokenizer's own padding gives — or, with ``widths``
    (:func:`encode_bucket_widths`, ascending, the last ``max_length``), to the narrowest width that holds that row.
    No text is read or tokenised here.
    """
    import torch

    arrays = tokens.padded(lo, hi, max_length, pad, left=left, desc=desc)
    tokens.release(lo, hi)  # the window's ids are copied: their mapped pages go back
    m = hi - lo
    lengths = arrays["attention_mask"].sum(axis=1) if "attention_mask" in arrays else tokens.lengths(lo=lo, hi=hi)
    order = np.argsort(-lengths, kind="stable") if sort else np.arange(m)
    batches = []
    for s in range(0, m, batch_size):
        rows = order[s : s + batch_size]
        w = int(lengths[rows].max())  # padded to this batch's longest ...
        w = next((b for b in widths if b >= w), w)  # ... or to its bucket's width
        cols = slice(max_length - w, max_length) if left else slice(0, w)
        batch = {k: torch.from_numpy(a[rows, cols].astype(np.int64)) for k, a in arrays.items()}
        batch = sdpa_ready(batch) if sdpa else batch
        batches.append({k: v.pin_memory() for k, v in batch.items()} if pin else batch)
    return _Window(lo, hi, order, batches)


def _encode_windows(encoder, tokenizer, tokens, start: int, n: int, sink: Callable[[int, int, np.ndarray], None], *,
                    max_length: int, batch_size: int, sort_window: int, device, amp_dtype, out_dtype, prefetch: bool | None,
                    embed, desc: str, bucket_step: int = 0) -> None:
    """Encode rows ``start:n`` of ``tokens`` (their token shards) window by window; ``sink(lo, hi, rows)`` receives
    each window in corpus order."""
    import torch

    from ...core.encoders import DualEncoder

    if batch_size < 1 or sort_window < 0:
        raise ValueError(f"{desc}: batch_size must be >= 1 and sort_window >= 0, got {batch_size} and {sort_window}")
    if len(tokens) != n:
        raise ValueError(f"{desc}: {len(tokens)} tokenised rows for {n} texts")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    encoder.eval().to(device)
    embed = embed or DualEncoder._first_token
    dim = encoder.config.hidden_size
    buf_dtype = torch.float16 if np.dtype(out_dtype) == np.float16 else torch.float32
    rows_per_window = batch_size * max(sort_window, 1)
    spans = [(lo, min(lo + rows_per_window, n)) for lo in range(start, n, rows_per_window)]
    from ..tokens import pad_values

    pad, widths = pad_values(tokenizer), encode_bucket_widths(bucket_step, max_length, what=f"{desc}: bucket_step")
    prep = lambda lo, hi: _prepare_window(  # noqa: E731
        tokens, lo, hi, max_length=max_length, pad=pad, left=getattr(tokenizer, "padding_side", "right") == "left",
        batch_size=batch_size, sort=sort_window > 0, sdpa=uses_sdpa(encoder), pin=cuda, desc=desc, widths=widths,
    )

    def finish(pending) -> None:
        w, host, event = pending
        if event is not None:
            event.synchronize()  # the window's one wait for the device
        got = host.numpy()
        rows = np.empty_like(got)
        rows[w.order] = got  # sorted position -> corpus row
        sink(w.lo, w.hi, rows)

    pending = None
    windows = prefetched(prep, spans, enabled=True if prefetch is None else prefetch)
    try:
        for w in windows:
            with torch.inference_mode(), torch.autocast(device_type=device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                buf = torch.empty((w.hi - w.lo, dim), dtype=buf_dtype, device=device)  # the window's embeddings, sorted order
                pos = 0
                for j, batch in enumerate(w.batches):
                    batch = {k: v.to(device, non_blocking=cuda) for k, v in batch.items()}
                    emb = embed(encoder, batch)  # (b, H)
                    b = batch["input_ids"].shape[0]
                    if tuple(emb.shape) != (b, dim):
                        raise ValueError(f"{desc}: the encoder returned {tuple(emb.shape)} for a batch of {b} rows of window "
                                         f"{w.lo}:{w.hi}, expected {(b, dim)}")
                    buf[pos : pos + b] = emb
                    pos += b
                    if j == 0 and pending is not None:  # the device has work queued: now wait for the previous window
                        finish(pending)
                        pending = None
                w.batches = []  # the token ids are no longer needed (a pinned block is reused only after its copy is done)
                if cuda:
                    host = torch.empty(buf.shape, dtype=buf.dtype, pin_memory=True)
                    host.copy_(buf, non_blocking=True)
                    event = torch.cuda.Event()
                    event.record()
                else:
                    host, event = buf, None
            if pending is not None:  # only if a window had no batch; keeps the order anyway
                finish(pending)
            pending = (w, host, event)
            del w, buf, host, event
        if pending is not None:
            finish(pending)
    finally:
        windows.close()  # stops the background thread, also when encoding fails


_LIBC: list = []


def _trim_heap() -> None:
    """Give the C heap's free pages back to the system (glibc ``malloc_trim``; nothing elsewhere).

    Each window allocates and frees arrays and tensors of new shapes; glibc keeps the
    freed pages (its mmap threshold grows with every large block freed), so without
    this the resident memory of a long encoding creeps up by ~100 MB of *free* heap.
    Calling it once per window costs about a millisecond.
    """
    if not _LIBC:
        import ctypes
        import ctypes.util

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _LIBC.append(libc.malloc_trim)
        except (OSError, AttributeError):  # not glibc
            _LIBC.append(None)
    if _LIBC[0] is not None:
        _LIBC[0](0)


def encode_corpus(
    encoder,
    tokenizer,
    texts: Callable[[int, int], Sequence[str]],
    n: int,
    path: Path,
    *,
    max_length: int,
    batch_size: int,
    sort_window: int = 32,
    device=None,
    amp_dtype=None,
    dtype=np.float16,
    prefetch: bool | None = None,
    embed: Callable | None = None,
    desc: str = "encode corpus",
    tokens=None,
    bucket_step: int = 0,
) -> np.ndarray:
    """Encode ``n`` passages with ``encoder`` into an ``(n, H)`` ``.npy`` file at ``path``; return it memory-mapped.

    ``texts(start, stop)`` returns the texts of rows ``start:stop`` (e.g.
    :meth:`codeswitch.contrastivemix.data.Collection.texts`, read from a memory-mapped
    dataset).  An embedding is ``embed(encoder, batch)``, by default the last layer's
    first-token vector (DPR).  Windows of ``sort_window`` batches are sorted by token
    length (``0``: batches in corpus order), their ids sliced from the corpus's token
    shards and padded one window ahead in a background thread (``prefetch``, default
    on; pinned on CUDA), encoded under ``torch.inference_mode()`` and ``amp_dtype``
    autocast, and copied to the host once per window; see the module docstring.
    ``dtype``: of the file (float16; float32 for exact comparisons).  ``bucket_step`` > 0: each batch padded to a
    fixed-width bucket (:func:`encode_bucket_widths`), so the encoder sees few shapes; the embeddings are the same up
    to float rounding (padding is masked).

    The corpus is tokenised once per (tokenizer, ``max_length``, texts) into int32
    memory-mapped shards (:func:`codeswitch.common.tokens.tokenised_corpus`, in worker
    processes for a large corpus): the first model to encode it pays for that, every
    later model that shares the tokenizer reads the shards.  ``tokens``: those shards
    already at hand (a :class:`~codeswitch.common.tokens.TokenRows` with this tokenizer and
    ``max_length``).  An interrupted call resumes at the last completed window; a
    finished file is returned without encoding.
    """
    out = _RowFile(path, n, encoder.config.hidden_size, dtype, desc=desc)
    done = out.complete()
    if done is not None:
        return done
    if tokens is None:
        from ..tokens import tokenised_corpus

        tokens = tokenised_corpus(tokenizer, texts, n, max_length=max_length, desc=desc)
    start = out.open()
    bar = progress(total=n, initial=start, desc=desc, unit="passage", min_total=20000)

    def sink(lo: int, hi: int, rows: np.ndarray) -> None:
        out.write(lo, rows)
        out.checkpoint(hi)
        bar.update(hi - lo)
        _trim_heap()

    try:
        _encode_windows(encoder, tokenizer, tokens, start, n, sink, max_length=max_length, batch_size=batch_size,
                        sort_window=sort_window, device=device, amp_dtype=amp_dtype, out_dtype=dtype, prefetch=prefetch,
                        embed=embed, desc=desc, bucket_step=bucket_step)
        return out.finish()
    finally:
        out.close()
        bar.close()


def encode_texts(
    encoder,
    tokenizer,
    texts: Sequence[str],
    *,
    max_length: int,
    batch_size: int,
    sort_window: int = 32,
    device=None,
    amp_dtype=None,
    prefetch: bool | None = False,
    embed: Callable | None = None,
    desc: str = "encode",
    tokens=None,
    bucket_step: int = 0,
) -> np.ndarray:
    """``(len(texts), H)`` float32 embeddings of a list of texts (queries), by the pipeline of :func:`encode_corpus`.

    Rows come back in the order of ``texts``; windows of ``sort_window`` batches are
    sorted by token length first (``0``: not sorted).  Meant for lists that fit in
    memory; a corpus goes through :func:`encode_corpus`.  The texts are tokenised once
    (:func:`codeswitch.common.tokens.tokenised_arrays`), unless ``tokens`` (as there) are given; ``bucket_step`` as
    there.
    """
    if tokens is None:
        from ..tokens import tokenised_arrays

        tokens = tokenised_arrays(tokenizer, [texts], max_length=max_length)
    out = np.empty((len(texts), encoder.config.hidden_size), dtype=np.float32)

    def sink(lo: int, hi: int, rows: np.ndarray) -> None:
        out[lo:hi] = rows

    _encode_windows(encoder, tokenizer, tokens, 0, len(texts), sink, max_length=max_length, batch_size=batch_size,
                    sort_window=sort_window, device=device, amp_dtype=amp_dtype, out_dtype=np.float32, prefetch=prefetch,
                    embed=embed, desc=desc, bucket_step=bucket_step)
    return out
