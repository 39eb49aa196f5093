"""Tokenise once (issue 24, item 4): a dataset's texts tokenised once per (tokenizer, max_length), cached by content.

:func:`tokenised` returns what ``tokenizer(texts[, pairs], truncation=True, max_length=…)`` returns (lists of token
ids, no padding), read from the cache when some run already tokenised the same texts with the same tokenizer and
limit; :func:`tokenised_arrays` (a list of texts) and :func:`tokenised_corpus` (a corpus read ``texts(lo, hi)`` window
by window, never whole) return the same ids as a :class:`TokenRows`, memory-mapped from the cache.  The hash covers
the tokenizer's full definition (a fast tokenizer's serialised pipeline: vocabulary, normaliser, pre-tokeniser,
post-processor; its special tokens and truncation side), ``max_length`` and every text, so an entry can never be
stale: change any of them and it is another entry.  The five seeds × three scenarios of a GLUE task, or every model
that encodes a corpus with one tokenizer, tokenise it once.

An entry is a folder ``<cache>/<hash>/`` (the cache folder is ``$CODESWITCH_TOKEN_CACHE``, else ``runs/.tokens``
under the project root):

* ``<name>.<s>.npy``: the int32 ids of shard ``s`` (rows end to end), one file per tokenizer output (``input_ids``,
  ``attention_mask``, …); a shard holds whole rows and at most :data:`SHARD_IDS` ids (a row longer than that is a
  shard of its own), so no shard need fit in memory at once;
* ``shards.npy``: the first row of each shard and the row count (int64, ``shards + 1``);
* ``offsets.npy``: the row offsets (int64, ``rows + 1``), written last.

It is built in a temporary sibling folder and renamed into place when complete
(:func:`codeswitch.core.atomic.atomic_directory`): a reader sees the whole entry or none.  Readers memory-map every
file (``np.load(mmap_mode="r")``) and check the shapes against the offsets: a damaged entry (a truncated shard, a
missing file) is tokenised again and replaced, never read.  Version-1 entries (``<hash>.npz``) have other hashes:
they are never read, and deleted when this version first writes an entry into their cache.

Large inputs (at least :data:`PROCESS_MIN_TEXTS` rows) are tokenised by :func:`tokenise_processes` worker processes,
:data:`CHUNK` rows a task, the results taken in order: the ids are byte-identical to the in-process path's.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import shutil
import weakref
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

__all__ = ["tokenised", "tokenised_arrays", "tokenised_corpus", "tokenised_words", "TokenRows", "tokenizer_identity",
           "token_cache_dir", "tokenise_processes", "pad_rows", "pad_values"]

VERSION = 2  # bump when the stored layout changes (2: a folder of int32 .npy shards and int64 offsets; 1: one .npz)
CHUNK = 1024  # rows per tokenizer call (bounds the tokenizer's per-token Python and Rust objects)
SHARD_IDS = 1 << 26  # ids per shard at most (256 MB of int32)
PROCESS_MIN_TEXTS = 50_000  # below this, tokenised in this process whatever the setting (a worker costs ~2 s to start)


def token_cache_dir() -> Path:
    env = os.environ.get("CODESWITCH_TOKEN_CACHE")
    if env:
        return Path(env)
    from ..core.profiles import project_root

    return project_root() / "runs" / ".tokens"


def tokenise_processes() -> int:
    """Worker processes that tokenise a large input: ``$CODESWITCH_TOKENIZE_PROCESSES``, else the usable cores less
    two (the main process and the device feeder keep theirs), at most 8 — 1 (no worker) on a machine of ≤ 3 cores."""
    from ..core.utils import cores
    from ..core.utils import gpu_host_workers

    env = os.environ.get("CODESWITCH_TOKENIZE_PROCESSES")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ValueError(f"CODESWITCH_TOKENIZE_PROCESSES={env!r}: not a number of processes") from None
    return 1 if cores() <= 3 else gpu_host_workers()


#: tokenizer object -> (its state stamp, its identity): :func:`tokenizer_identity` parses a fast tokenizer's whole pipeline
#: (its vocabulary included) once per object, not once per call; the entry goes with the object (weak keys)
_IDENTITIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _state_stamp(backend, tokenizer) -> tuple:
    """What changes, cheaply read, when a fast tokenizer is changed after its identity was computed: its vocabulary size
    and added tokens (``add_tokens``, ``add_special_tokens``), a pipeline component replaced (normalizer, pre-tokenizer,
    model, post-processor, decoder), its special tokens or truncation side."""
    return (id(backend), backend.get_vocab_size(with_added_tokens=True), repr(sorted(backend.get_added_tokens_decoder().items())),
            repr(backend.normalizer), repr(backend.pre_tokenizer), repr(backend.model), repr(backend.post_processor),
            repr(backend.decoder), repr(sorted(getattr(tokenizer, "special_tokens_map", {}).items())),
            getattr(tokenizer, "truncation_side", "right"))


def tokenizer_identity(tokenizer) -> str | None:
    """A hash of everything that decides ``tokenizer``'s output ids; None for an object that exposes neither a
    tokenizers pipeline nor a vocabulary (a stand-in in a test): its output is then never cached.

    Memoised per fast tokenizer object, and computed again when the object has changed since (:func:`_state_stamp`)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return _identity(tokenizer)
    stamp = _state_stamp(backend, tokenizer)
    try:
        memo = _IDENTITIES.get(tokenizer)
    except TypeError:  # not weakly referable or not hashable: computed every time
        return _identity(tokenizer)
    if memo is None or memo[0] != stamp:
        memo = (stamp, _identity(tokenizer))
        _IDENTITIES[tokenizer] = memo
    return memo[1]


def _identity(tokenizer) -> str | None:
    """:func:`tokenizer_identity`, computed."""
    h = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        pipeline = json.loads(backend.to_str())  # the whole pipeline, vocabulary included ...
        pipeline.pop("truncation", None)  # ... less the state the last call left (a call sets its own)
        pipeline.pop("padding", None)
        h.update(json.dumps(pipeline, sort_keys=True).encode())
    elif callable(getattr(tokenizer, "get_vocab", None)):
        h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    else:
        return None
    extra = {"special": {k: str(v) for k, v in sorted(getattr(tokenizer, "special_tokens_map", {}).items())},
             "truncation_side": getattr(tokenizer, "truncation_side", "right"),
             "class": type(tokenizer).__module__}
    h.update(json.dumps(extra, sort_keys=True).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- the rows of an entry
class TokenRows:
    """A tokenised column set kept compact: per output name, the int32 ids of every row end to end, in shards, and the
    int64 row offsets (shared by every name: a tokenizer's outputs have one value per token), memory-mapped when read
    from the cache.  ``rows.row(name, i)``: row ``i``'s ids; ``rows.padded(lo, hi, width, …)``: rows ``lo:hi`` as a
    padded ``(hi − lo, width)`` block; ``len(rows)``."""

    def __init__(self, shards: dict[str, list[np.ndarray]], offsets: np.ndarray, starts: np.ndarray | None = None):
        self.shards, self.offsets = shards, offsets
        self.names = list(shards)
        n = len(offsets) - 1
        self.starts = np.array([0, n], dtype=np.int64) if starts is None else starts  # (shards + 1,) first row of each
        self._starts = np.asarray(self.starts[:-1])  # for searchsorted

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _shard(self, i: int) -> int:
        return int(np.searchsorted(self._starts, i, side="right")) - 1

    def row(self, name: str, i: int) -> np.ndarray:
        if not 0 <= i < len(self):
            raise IndexError(f"TokenRows: row {i} of {len(self)}")
        s = self._shard(i)
        base = int(self.offsets[self.starts[s]])
        return self.shards[name][s][int(self.offsets[i]) - base : int(self.offsets[i + 1]) - base]

    def block(self, name: str, lo: int, hi: int) -> np.ndarray:
        """The ids of rows ``lo:hi`` end to end (a view of one shard, or the shards' pieces joined)."""
        parts = []
        s = self._shard(lo) if hi > lo else 0
        while lo < hi:
            stop = min(hi, int(self.starts[s + 1]))
            base = int(self.offsets[self.starts[s]])
            parts.append(self.shards[name][s][int(self.offsets[lo]) - base : int(self.offsets[stop]) - base])
            lo, s = stop, s + 1
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)

    def lengths(self, name: str = "input_ids", lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Tokens per row (of rows ``lo:hi``), int64."""
        off = np.asarray(self.offsets[lo : (len(self) if hi is None else hi) + 1])
        return np.diff(off)

    def padded(self, lo: int, hi: int, width: int, pad: dict[str, int], *, left: bool = False, desc: str = "tokens"
               ) -> dict[str, np.ndarray]:
        """Rows ``lo:hi`` of every name padded to ``width`` columns (``pad[name]``, 0 by default; on the left with
        ``left``): ``{name: (hi − lo, width) int32}``, what the tokenizer's ``padding="max_length"`` gives."""
        lengths = self.lengths(lo=lo, hi=hi)
        if len(lengths) and lengths.max() > width:
            i = int(np.argmax(lengths > width))
            raise ValueError(f"{desc}: row {lo + i} has {int(lengths[i])} tokens, more than max_length {width} "
                             "(tokenised with another limit)")
        return {name: _pad_flat(self.block(name, lo, hi), lengths, width, pad.get(name, 0), left=left, dtype=np.int32)
                for name in self.names}

    def release(self, lo: int, hi: int) -> None:
        """Hand back the pages of rows ``lo:hi``'s ids that this process mapped (``madvise(MADV_DONTNEED)``; read again
        from the page cache if asked for later): a corpus read window by window never stays resident as a whole."""
        import mmap

        advice = getattr(mmap, "MADV_DONTNEED", None)
        if advice is None or hi <= lo:
            return
        s = self._shard(lo)
        while lo < hi:
            stop = min(hi, int(self.starts[s + 1]))
            base = int(self.offsets[self.starts[s]])
            for name in self.names:
                a = self.shards[name][s]
                m = getattr(a, "_mmap", None)
                if m is None:  # in memory, not mapped
                    continue
                at = a.offset % mmap.ALLOCATIONGRANULARITY  # where the array starts in the mapping
                start = at + (int(self.offsets[lo]) - base) * a.itemsize  # byte offsets in the mapping
                end = at + (int(self.offsets[stop]) - base) * a.itemsize
                first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE  # whole pages only: the neighbours' stay mapped
                last = end // mmap.PAGESIZE * mmap.PAGESIZE
                if last > first:
                    m.madvise(advice, first, last - first)
            lo, s = stop, s + 1

    def lists(self) -> dict[str, list[list[int]]]:
        off = np.asarray(self.offsets)
        return {n: [r.tolist() for r in np.split(np.asarray(self.block(n, 0, len(self))), off[1:-1])] if len(self) else []
                for n in self.names}

    @classmethod
    def from_lists(cls, out: dict[str, Sequence[Sequence[int]]]) -> "TokenRows":
        lengths = {name: [len(r) for r in rows] for name, rows in out.items()}
        ref = next(iter(lengths.values()), [])
        for name, ln in lengths.items():
            if ln != ref:
                raise ValueError(f"TokenRows: output {name!r} has other row lengths than {next(iter(lengths))!r}")
        return cls({name: [np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int32, count=sum(ref))]
                    for name, rows in out.items()}, np.cumsum([0] + ref, dtype=np.int64))


def _tokenise_chunk(tokenizer, columns: Sequence[Sequence[str]], max_length: int | None, special: bool
                    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """One tokenizer call: ``{name: (ids end to end int32, tokens per row int64)}``."""
    kw = {} if special else {"add_special_tokens": False}
    enc = tokenizer(*[list(c) for c in columns], truncation=max_length is not None, max_length=max_length, **kw)
    out = {}
    for name, rows in enc.items():
        ln = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        out[name] = (np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int32, count=int(ln.sum())), ln)
    return out


_WORKER: dict = {}


def _worker_init(tokenizer, max_length, special) -> None:
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread a worker: the processes are the parallelism
    _WORKER.update(tokenizer=tokenizer, max_length=max_length, special=special)


def _worker_chunk(columns):
    return _tokenise_chunk(_WORKER["tokenizer"], columns, _WORKER["max_length"], _WORKER["special"])


def _tokenised_chunks(tokenizer, chunks: Iterator[list[list[str]]], n: int, max_length: int | None, special: bool,
                      processes: int | None) -> Iterator[dict[str, tuple[np.ndarray, np.ndarray]]]:
    """:func:`_tokenise_chunk` of each chunk, in order: in this process, or for an input of at least
    :data:`PROCESS_MIN_TEXTS` rows in ``processes`` (default :func:`tokenise_processes`) spawned workers, a bounded
    number of chunks in flight."""
    procs = tokenise_processes() if processes is None else max(1, int(processes))
    if procs <= 1 or n < PROCESS_MIN_TEXTS:
        for cols in chunks:
            yield _tokenise_chunk(tokenizer, cols, max_length, special)
        return
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=procs, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init,
                             initargs=(tokenizer, max_length, special)) as pool:
        pending: deque = deque()
        for cols in chunks:
            pending.append(pool.submit(_worker_chunk, cols))
            if len(pending) >= 2 * procs:  # bounded: at most 2 chunks a worker read ahead
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


# --------------------------------------------------------------------------- entries
def _entry_path(key: str | None, cache_dir) -> Path | None:
    return None if key is None else Path(cache_dir or token_cache_dir()) / key


def _read_entry(path: Path | None) -> TokenRows | None:
    """A stored entry, memory-mapped; None where there is none, or it is incomplete or damaged (it is then rebuilt)."""
    if path is None or not (path / "offsets.npy").is_file():
        return None
    try:
        meta = json.loads((path / "entry.json").read_text())
        offsets = np.load(path / "offsets.npy", mmap_mode="r")
        starts = np.load(path / "shards.npy")
        n = meta["rows"]
        if (offsets.dtype != np.int64 or offsets.shape != (n + 1,) or starts.dtype != np.int64 or starts.ndim != 1
                or len(starts) < 2 or starts[0] != 0 or starts[-1] != n or (np.diff(starts) < 0).any() or offsets[0] != 0):
            return None
        shards = {}
        for name in meta["names"]:
            shards[name] = []
            for s in range(len(starts) - 1):
                ids = np.load(path / f"{name}.{s}.npy", mmap_mode="r")
                if ids.dtype != np.int32 or ids.shape != (int(offsets[starts[s + 1]] - offsets[starts[s]]),):
                    return None
                shards[name].append(ids)
        return TokenRows(shards, offsets, starts)
    except (OSError, ValueError, KeyError, TypeError):  # a damaged entry: tokenise again and replace it
        return None


class _EntryWriter:
    """Writes an entry's folder (see the module docstring) from tokenised chunks, a shard at a time: ids stream to
    the disk as they come (bounded memory), each shard becoming an ``.npy`` when it is full; ``offsets.npy`` last."""

    def __init__(self, folder: Path, shard_ids: int):
        self.folder, self.shard_ids = folder, shard_ids
        self.names: list[str] | None = None
        self.lengths: list[np.ndarray] = []
        self.starts = [0]
        self.rows = 0
        self.shard = 0
        self.in_shard = 0  # ids in the open shard
        self.files: dict = {}

    def _raw(self, name: str) -> Path:
        return self.folder / f"{name}.{self.shard}.raw"

    def add(self, chunk: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        if self.names is None:
            self.names = list(chunk)
        elif list(chunk) != self.names:
            raise ValueError(f"tokenised: the tokenizer returned {list(chunk)}, earlier {self.names}")
        ln = chunk[self.names[0]][1]
        for name in self.names[1:]:
            if not np.array_equal(chunk[name][1], ln):
                raise ValueError(f"tokenised: output {name!r} has other row lengths than {self.names[0]!r}")
        ends = np.cumsum(ln)
        lo = 0  # first row of the chunk not yet written
        while lo < len(ln):
            room = self.shard_ids - self.in_shard
            base = ends[lo - 1] if lo else 0
            hi = lo + int(np.searchsorted(ends[lo:] - base, room, side="right"))  # rows that fit the open shard
            if hi == lo and self.in_shard == 0:
                hi = lo + 1  # a row longer than a shard: a shard of its own
            if hi == lo:
                self._close_shard()
                continue
            a, b = int(base), int(ends[hi - 1])
            for name in self.names:
                if name not in self.files:
                    self.files[name] = open(self._raw(name), "wb")
                self.files[name].write(chunk[name][0][a:b].tobytes())
            self.in_shard += b - a
            self.rows += hi - lo
            lo = hi
        self.lengths.append(ln)

    def _close_shard(self) -> None:
        for name in self.names or []:
            fh = self.files.pop(name, None) or open(self._raw(name), "wb")
            fh.close()
            raw = self._raw(name)
            with open(self.folder / f"{name}.{self.shard}.npy", "wb") as out:
                np.lib.format.write_array_header_1_0(out, {"descr": np.dtype(np.int32).str, "fortran_order": False,
                                                          "shape": (self.in_shard,)})
                with open(raw, "rb") as src:
                    shutil.copyfileobj(src, out, 16 << 20)
                out.flush()
                os.fsync(out.fileno())
            raw.unlink()
        self.starts.append(self.rows)
        self.shard += 1
        self.in_shard = 0

    def finish(self, names_if_empty: Sequence[str]) -> None:
        from ..core.atomic import atomic_write_bytes, atomic_write_json

        if self.names is None:
            self.names = list(names_if_empty)
        if self.in_shard or self.shard == 0:
            self._close_shard()
        buf = lambda a: _npy_bytes(np.asarray(a, dtype=np.int64))  # noqa: E731
        atomic_write_json(self.folder / "entry.json", {"version": VERSION, "rows": self.rows, "names": self.names})
        atomic_write_bytes(self.folder / "shards.npy", buf(self.starts))
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, dtype=np.int64)
        atomic_write_bytes(self.folder / "offsets.npy", buf(np.concatenate([[0], np.cumsum(lengths)])))  # last

    def close(self) -> None:
        for fh in self.files.values():
            fh.close()
        self.files = {}


def _npy_bytes(a: np.ndarray) -> bytes:
    import io

    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


@functools.lru_cache(maxsize=None)
def _drop_version_1(cache: Path) -> None:
    """Delete the version-1 entries (``<hash>.npz``) of ``cache``, once per process and cache, when an entry is written:
    no version reads them (their hashes are not version 2's)."""
    for old in cache.glob("*.npz"):
        old.unlink(missing_ok=True)


def _write_entry(path: Path, chunks: Iterator[dict[str, tuple[np.ndarray, np.ndarray]]], names_if_empty: Sequence[str]
                 ) -> TokenRows:
    """Build the entry at ``path`` from ``chunks`` (atomically: a temporary folder renamed into place) and read it."""
    from ..core.atomic import atomic_directory

    damaged = path.exists()  # (an entry _read_entry refused: replaced)
    _drop_version_1(path.parent)
    with atomic_directory(path, replace=damaged) as tmp:
        w = _EntryWriter(tmp, SHARD_IDS)
        try:
            for chunk in chunks:
                w.add(chunk)
            w.finish(names_if_empty)
        finally:
            w.close()
    rows = _read_entry(path)
    if rows is None:
        raise OSError(f"tokenised: the entry just written at {path} cannot be read back")
    return rows


def _in_memory(chunks: Iterator[dict[str, tuple[np.ndarray, np.ndarray]]], names_if_empty: Sequence[str]) -> TokenRows:
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for chunk in chunks:
        for name, p in chunk.items():
            parts.setdefault(name, []).append(p)
    if not parts:
        return TokenRows({name: [np.zeros(0, dtype=np.int32)] for name in names_if_empty}, np.zeros(1, dtype=np.int64))
    names = list(parts)
    ln = np.concatenate([l for _, l in parts[names[0]]])
    for name in names[1:]:
        if not np.array_equal(np.concatenate([l for _, l in parts[name]]), ln):
            raise ValueError(f"tokenised: output {name!r} has other row lengths than {names[0]!r}")
    return TokenRows({name: [np.concatenate([ids for ids, _ in parts[name]])] for name in names},
                     np.concatenate([[0], np.cumsum(ln)]).astype(np.int64))


# --------------------------------------------------------------------------- tokenising
def _checked(columns: Sequence[Sequence[str]], lo: int, what: str) -> list[list[str]]:
    cols = [list(c) for c in columns]
    for j, col in enumerate(cols):
        for i, t in enumerate(col):
            if not isinstance(t, str):
                where = f"column {j}, row {lo + i}" if len(cols) > 1 or what == "tokenised" else f"row {lo + i}"
                raise ValueError(f"{what}: {where} is {type(t).__name__} {t!r:.60}, not text")
    return cols


def _key(identity: str, read: Callable[[int, int], list[list[str]]], n: int, ncols: int, max_length: int | None,
         special: bool, tag: str = "") -> str:
    """The content hash of an entry: the layout version, the tokenizer, the limit, and every text (row by row)."""
    h = hashlib.sha256(f"v{VERSION}|{identity}|{max_length}|{ncols}|{n}{'' if special else '|nospecial'}{tag}".encode())
    for lo in range(0, n, CHUNK):
        for row in zip(*read(lo, min(n, lo + CHUNK))):
            for t in row:
                b = t.encode()
                h.update(len(b).to_bytes(8, "little"))
                h.update(b)
    return h.hexdigest()[:32]


def _tokenised(tokenizer, read: Callable[[int, int], list[list[str]]], n: int, ncols: int, *, max_length: int | None,
               cache_dir, special: bool, cache: bool, processes: int | None) -> TokenRows:
    names = getattr(tokenizer, "model_input_names", None) or ["input_ids", "attention_mask"]
    if n == 0:  # nothing to tokenise (a tokenizer refuses an empty batch)
        return TokenRows({name: [np.zeros(0, dtype=np.int32)] for name in names}, np.zeros(1, dtype=np.int64))
    identity = tokenizer_identity(tokenizer) if cache else None
    path = _entry_path(None if identity is None else _key(identity, read, n, ncols, max_length, special), cache_dir)
    cached = _read_entry(path)
    if cached is not None:
        return cached
    chunks = _tokenised_chunks(tokenizer, (read(lo, min(n, lo + CHUNK)) for lo in range(0, n, CHUNK)), n, max_length,
                               special, processes)
    try:
        return _in_memory(chunks, names) if path is None else _write_entry(path, chunks, names)
    finally:
        chunks.close()  # (stops the workers if the writer failed)


def tokenised_arrays(tokenizer, columns: Sequence[Sequence[str]], *, max_length: int | None, cache_dir: str | Path | None = None,
                     add_special_tokens: bool = True, cache: bool = True, processes: int | None = None) -> TokenRows:
    """:func:`tokenised` in its compact form (:class:`TokenRows`), computed once per (tokenizer, max_length, texts).

    ``add_special_tokens=False``: without [CLS]/[SEP] (another cache entry).  ``cache=False``: tokenised in memory,
    nothing written (texts no other run will read, e.g. one run's code-mixed copies).  ``processes``: worker
    processes for a large input (default :func:`tokenise_processes`); the ids do not depend on it.
    """
    columns = [list(c) for c in columns]
    if not 1 <= len(columns) <= 2 or len({len(c) for c in columns}) > 1:
        raise ValueError(f"tokenised: one or two columns of equal length, got {[len(c) for c in columns]}")
    _checked(columns, 0, "tokenised")
    return _tokenised(tokenizer, lambda lo, hi: [c[lo:hi] for c in columns], len(columns[0]), len(columns),
                      max_length=max_length, cache_dir=cache_dir, special=add_special_tokens, cache=cache,
                      processes=processes)


def tokenised_corpus(tokenizer, texts: Callable[[int, int], Sequence[str]], n: int, *, max_length: int | None,
                     cache_dir: str | Path | None = None, processes: int | None = None, desc: str = "corpus") -> TokenRows:
    """The ``n`` texts of a corpus tokenised once per (tokenizer, max_length, texts) into the cache, read with
    ``texts(lo, hi)`` (rows ``lo:hi``, e.g. :meth:`codeswitch.contrastivemix.data.Collection.texts`) :data:`CHUNK` rows at
    a time: neither the texts nor the ids are ever all in memory.  Returns the entry memory-mapped.  A text that is not
    a string is an error naming ``desc`` and its row."""
    def read(lo: int, hi: int) -> list[list[str]]:
        chunk = list(texts(lo, hi))
        if len(chunk) != hi - lo:
            raise ValueError(f"{desc}: asked for rows {lo}:{hi}, got {len(chunk)} texts")
        return _checked([chunk], lo, desc)

    return _tokenised(tokenizer, read, n, 1, max_length=max_length, cache_dir=cache_dir, special=True, cache=True,
                      processes=processes)


def tokenised(tokenizer, columns: Sequence[Sequence[str]], *, max_length: int | None, cache_dir: str | Path | None = None
              ) -> dict[str, list[list[int]]]:
    """``tokenizer(*columns, truncation=True, max_length=max_length)`` as ``{name: [ids per row]}``, computed once.

    ``columns``: one list of texts, or two (sentence pairs), row for row.
    """
    return tokenised_arrays(tokenizer, columns, max_length=max_length, cache_dir=cache_dir).lists()


def tokenised_words(tokenizer, sentences: Sequence[Sequence[str]], *, max_length: int | None,
                    cache_dir: str | Path | None = None) -> dict[str, list[list[int]]]:
    """``tokenizer(sentences, is_split_into_words=True, truncation=True, max_length=max_length)`` of pre-split
    sentences as ``{name: [ids per row]}``, plus ``"word_ids"`` (each token's word, −1 for none: the fast tokenizer's
    ``word_ids()``), computed once per (tokenizer, limit, sentences) like :func:`tokenised` (its own entries)."""
    sentences = [list(s) for s in sentences]
    for i, s in enumerate(sentences):
        for j, w in enumerate(s):
            if not isinstance(w, str):
                raise ValueError(f"tokenised_words: sentence {i}, word {j} is {type(w).__name__} {w!r:.60}, not text")
    identity = tokenizer_identity(tokenizer)
    joined = ["\x1f".join(s) for s in sentences]  # words joined by a unit separator
    key = None if identity is None else _key(identity, lambda lo, hi: [joined[lo:hi]], len(joined), 1, max_length, True,
                                             "|words")
    path = _entry_path(key, cache_dir)
    cached = _read_entry(path)
    if cached is not None:
        return cached.lists()
    enc = tokenizer(sentences, is_split_into_words=True, truncation=max_length is not None, max_length=max_length)
    out = {k: [list(map(int, r)) for r in v] for k, v in enc.items()}
    out["word_ids"] = [[-1 if w is None else int(w) for w in enc.word_ids(i)] for i in range(len(sentences))]
    if path is not None:
        rows = TokenRows.from_lists(out)
        _write_entry(path, iter([{name: (rows.shards[name][0], rows.lengths()) for name in rows.names}]), rows.names)
    return out


def pad_rows(rows: Sequence[Sequence[int]], fill: int, *, left: bool = False) -> "torch.Tensor":
    """Rows of token ids (or masks, word indices, labels) of different lengths padded with ``fill`` to the longest:
    a (len(rows), longest) int64 tensor, the rows right-aligned when ``left`` (a tokenizer's ``padding_side``).

    The one padding of stored token rows (ContrastiveMix's :func:`~codeswitch.contrastivemix.train.collate_ids`, the
    alignment trainer's :class:`~codeswitch.alignment.train.SideTokens`, GLUECoS's ``gluecos_train._collate``): what
    ``tokenizer.pad`` gives for ids and mask, also for the columns it does not know (word indices, token labels).
    """
    import torch

    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    flat = np.concatenate([np.asarray(r, dtype=np.int64).reshape(-1) for r in rows]) if len(rows) else np.zeros(0, np.int64)
    return torch.from_numpy(_pad_flat(flat, lengths, int(lengths.max(initial=0)), fill, left=left, dtype=np.int64))


def pad_values(tokenizer) -> dict[str, int]:
    """The fill of each tokenizer output when ``tokenizer`` pads a batch (what ``tokenizer.pad`` writes there)."""
    return {"input_ids": tokenizer.pad_token_id, "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0),
            "attention_mask": 0, "special_tokens_mask": 1}


def _pad_flat(flat: np.ndarray, lengths: np.ndarray, width: int, fill: int, *, left: bool, dtype) -> np.ndarray:
    """Rows laid end to end in ``flat`` (row ``i`` has ``lengths[i]`` values) as a ``(rows, width)`` array padded with
    ``fill``, right-aligned when ``left``: the one padding of :func:`pad_rows` and :meth:`TokenRows.padded`."""
    cols = np.arange(width)
    keep = cols >= width - lengths[:, None] if left else cols < lengths[:, None]  # (rows, width), row-major = flat order
    out = np.full((len(lengths), width), fill, dtype=dtype)
    out[keep] = flat
    return out

