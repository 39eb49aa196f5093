"""Retrieval evaluation: dense search, BM25, the sparse–dense hybrid, MRR@100 / Recall@100, t-tests.

The pieces, in the order a run uses them (ContrastiveMix §4.1, following Mr.TyDi):

* :func:`encode_corpus` — encode a corpus (a memory-mapped collection read in
  slices) into a float16 ``.npy`` file that searches then memory-map; streamed,
  length-sorted, resumable (below).  :func:`encode_texts` does the same for a list
  of texts in memory (queries).
* :func:`dense_rank` — exact top-k inner-product search, batched over queries and
  over corpus chunks, in torch on the GPU when there is one.
* :func:`bm25_rank` — BM25 (Lucene variant, ``k1 = 0.9, b = 0.4`` as Pyserini's
  Mr.TyDi runs) with ``bm25s``.
* :func:`fuse` / :func:`tune_hybrid` / :func:`evaluate_hybrid` — the sparse–dense
  hybrid.  Per query, each run's scores are min–max normalised over its retrieved
  list (a passage missing from one run gets that run's minimum), and

      s_hybrid(d) = s_bm25(d) + w · s_dense(d),      w ∈ {0, 0.05, …, 1}

  (the weight sits on the dense score, as ``--weight-on-dense`` in the released
  script).  ``w`` is chosen by MRR@100 on a *tuning* split and applied to the
  reported one; tuning on the reported split itself (what the released script
  does) happens only when asked for (``tune_on_report_split=True``).  The released
  script centres the normalised scores (``(s − (min+max)/2) / (max − min)``): a
  per-query constant shift, so the same ranking; it also guards the dense
  division with the *BM25* range, a slip not copied here.
* :func:`evaluate_run` — MRR@100 and Recall@100 per query with ``ir_measures``
  (trec_eval's definitions; a query with no retrieved relevant passage scores 0).
* :func:`paired_t_test` — per-query paired t-test of two systems.

Rankings are kept as arrays of corpus row numbers (:class:`Ranking`), and turned
into ``{query id: {doc id: score}}`` runs only to be scored.

Corpus encoding (issue 8 (d): ≥ 20,000 passages/s for mBERT-base on one H200, a
million passages in < 4 GB of host memory).  The corpus is cut into *windows* of
``sort_window`` batches (``W = sort_window · batch_size`` rows, 32 · 512 = 16,384 by
default) and each window goes through::

    background thread                         main thread (device)
    ─────────────────────────────────────     ──────────────────────────────────────────────────
    window w+1: texts(lo, hi) → tokenise      window w: for each batch (longest first):
      (truncate to max_length) → sort rows      copy (pinned → device, non-blocking)
      by token length, longest first,            → encoder (inference mode, autocast, SDPA)
      stable → cut into batches, each            → first-token vectors into a device buffer
      padded to its own longest → pin          one copy of the buffer to the host per window
                                               (the only synchronisation), rows put back in
                                               corpus order, written at their offset in the
                                               .npy, progress recorded

* **sorting** (within a window, never across the corpus) puts passages of similar
  length in a batch, so little compute is spent on padding; with a passage's
  padding masked, its embedding does not depend on its batch-mates (up to float
  rounding: a test checks fp32 embeddings agree with the corpus-order batches
  within 1e-5), and the window's permutation is inverted before writing, so row
  ``i`` of the file is passage ``i``;
* **memory**: the host holds at most two windows of text and token ids (the one
  being encoded, the one being prepared), one window's embeddings, and nothing of
  the corpus otherwise.  The rows are written with ``pwrite`` at their offset in
  the ``.npy`` (not through a writable memory map, whose dirty pages would count
  as this process's memory until the kernel writes them back), and the C heap's
  free pages are handed back after each window (``malloc_trim``).
  ``python -m codeswitch.bench memory`` measures it;
* **one host synchronisation per window**: padding masks are made SDPA-ready on
  the host (:func:`codeswitch.train.retrieval.sdpa_ready`), embeddings stay on the
  device until the window's single device-to-host copy, which is waited for only
  after the next window's first batch is queued (so the device does not idle);
* **resume**: after each window, the file is synced and ``<name>.progress.json``
  records the rows done; a killed encoding continues from there (the windows are
  the same, so the result is the same as an uninterrupted run), and
  ``<name>.done.json`` (written atomically, last) marks a complete file.
"""

from __future__ import annotations

import json
import math
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from ..progress import progress
from ..runs import atomic_write_json

__all__ = [
    "Ranking",
    "SplitRuns",
    "METRICS",
    "evaluate_run",
    "mean_scores",
    "analyze",
    "bm25_rank",
    "encode_corpus",
    "encode_texts",
    "dense_rank",
    "fuse",
    "score_grid",
    "tune_hybrid",
    "evaluate_hybrid",
    "hybrid_grid",
    "paired_t_test",
]

Qrels = Mapping[str, Mapping[str, int]]
Run = dict[str, dict[str, float]]


# --------------------------------------------------------------------------- metrics
def _measures():
    from ir_measures import RR, R

    # Runs are always cut to their top 100 before scoring, so trec_eval's recip_rank
    # is MRR@100 (exactly how the released script scores its 100-deep hybrid runs),
    # and ir_measures hands both measures to pytrec_eval (trec_eval's own code).
    return {"mrr@100": RR, "recall@100": R @ 100}


METRICS = ("mrr@100", "recall@100")


def evaluate_run(run: Mapping[str, Mapping[str, float]], qrels: Qrels, *, depth: int = 100) -> dict[str, dict[str, float]]:
    """Per-query MRR@100 and Recall@100 (fractions in [0, 1]) of ``run`` against ``qrels``.

    ``run`` is cut to its ``depth`` best passages per query first.  Every query of
    ``qrels`` gets a value (0 when the run has nothing for it), as ``trec_eval -c``;
    ties in score are broken as trec_eval does (doc id, descending).
    """
    import ir_measures

    measures = _measures()
    names = {m: name for name, m in measures.items()}
    # trec_eval's order: score descending, then doc id descending.
    cut = {q: dict(sorted(r.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:depth]) if len(r) > depth else dict(r) for q, r in run.items()}
    out: dict[str, dict[str, float]] = {name: {q: 0.0 for q in qrels} for name in measures}
    for m in ir_measures.iter_calc(list(measures.values()), {q: dict(r) for q, r in qrels.items()}, cut):
        out[names[m.measure]][m.query_id] = float(m.value)
    return out


def mean_scores(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Macro averages over queries, scaled to [0, 100] as in the paper."""
    return {name: 100.0 * float(np.mean(list(v.values()))) if v else float("nan") for name, v in per_query.items()}


def _short(n: int | None, threshold: int) -> bool:
    """No progress bar for loops that finish at once (keeps smoke logs readable); shown otherwise."""
    import os

    return os.environ.get("CODESWITCH_NO_PROGRESS") == "1" or (n is not None and n < threshold)


# --------------------------------------------------------------------------- rankings
@dataclass
class Ranking:
    """Top-k corpus rows per query: ``indices[i]`` (row numbers, ``-1`` = empty slot) by descending ``scores[i]``."""

    qids: list[str]
    indices: np.ndarray  # (Q, k) int64
    scores: np.ndarray  # (Q, k) float32

    def __post_init__(self):
        if self.indices.shape != self.scores.shape or self.indices.shape[0] != len(self.qids):
            raise ValueError(f"Ranking: {len(self.qids)} queries but indices {self.indices.shape}, scores {self.scores.shape}")

    def to_run(self, docid_of: Mapping[int, str], depth: int = 100) -> Run:
        run: Run = {}
        for qid, idx, sc in zip(self.qids, self.indices[:, :depth].tolist(), self.scores[:, :depth].tolist()):
            run[qid] = {docid_of[i]: s for i, s in zip(idx, sc) if i >= 0}
        return run

    def save(self, path: Path) -> None:
        import io

        from ..runs import atomic_write_bytes

        buf = io.BytesIO()
        np.savez(buf, qids=np.array(self.qids, dtype=object).astype(str), indices=self.indices, scores=self.scores)
        atomic_write_bytes(path, buf.getvalue())

    @classmethod
    def load(cls, path: Path) -> "Ranking":
        with np.load(path, allow_pickle=False) as z:
            return cls([str(q) for q in z["qids"]], z["indices"].astype(np.int64), z["scores"].astype(np.float32))


@dataclass
class SplitRuns:
    """Everything the hybrid needs about one query split: qrels, the dense and the BM25 ranking."""

    split: str  # e.g. "test"; tuning and reporting on the same split is refused unless asked for
    qrels: Qrels
    dense: Ranking
    sparse: Ranking
    docid_of: Mapping[int, str] = field(repr=False, default_factory=dict)

    def __post_init__(self):
        if self.dense.qids != self.sparse.qids:
            raise ValueError(f"split '{self.split}': the dense and BM25 rankings cover different queries")


# --------------------------------------------------------------------------- BM25
_WORD = re.compile(r"\w+", re.UNICODE)
# Scripts written without spaces between words: Lucene's CJK analyzer indexes
# overlapping character bigrams; we do the same for Han, kana, Hangul and Thai.
_BIGRAM_CHARS = re.compile(r"[\u0E00-\u0E7F\u3040-\u30FF\u3400-\u4DBF\u4E00-\u9FFF\uAC00-\uD7AF\uF900-\uFAFF]")
BIGRAM_LANGUAGES = frozenset({"zh", "ja", "ko", "th"})


def analyze(text: str, language: str) -> list[str]:
    """BM25 terms of ``text``: lower-cased ``\\w+`` runs; for zh/ja/ko/th, runs in those scripts become character bigrams.

    An approximation of Pyserini's per-language Lucene analyzers (no stemming or
    stop words), so BM25 numbers differ somewhat from Mr.TyDi's published ones.
    """
    words = _WORD.findall(text.lower())
    if language not in BIGRAM_LANGUAGES:
        return words
    out: list[str] = []
    for w in words:
        if len(w) > 1 and _BIGRAM_CHARS.search(w):
            out.extend(w[i : i + 2] for i in range(len(w) - 1))
        else:
            out.append(w)
    return out


def bm25_rank(
    passages: Iterable[str],
    queries: Mapping[str, Mapping[str, str]],
    language: str,
    *,
    depth: int,
    k1: float = 0.9,
    b: float = 0.4,
    n_passages: int | None = None,
) -> dict[str, Ranking]:
    """Index ``passages`` once with BM25 and rank every query set in ``queries`` (``{split: {qid: text}}``).

    Passages are streamed; each is kept only as a compact array of term ids (a
    corpus of millions of passages as Python strings would not fit in memory).
    """
    from array import array

    import bm25s

    vocab: dict[str, int] = {}
    docs = []
    for p in progress(passages, desc=f"BM25 index {language}", total=n_passages, unit="passage", disable=_short(n_passages, 20000)):
        docs.append(array("i", (vocab.setdefault(t, len(vocab)) for t in analyze(p, language))))
    retriever = bm25s.BM25(k1=k1, b=b, method="lucene")
    retriever.index((docs, vocab), show_progress=False)
    del docs
    k = min(depth, retriever.scores["num_docs"])
    out = {}
    for split, qs in queries.items():
        qids = list(qs)
        indices = np.full((len(qids), k), -1, dtype=np.int64)
        scores = np.full((len(qids), k), -np.inf, dtype=np.float32)
        for row, qid in enumerate(progress(qids, desc=f"BM25 {language} {split}", unit="query", disable=_short(len(qids), 500))):
            terms = [t for t in analyze(qs[qid], language) if t in vocab]
            if not terms:
                continue  # no query term occurs in the corpus: nothing retrieved
            s = retriever.get_scores(terms).astype(np.float32)  # (N,)
            top = _top_k(s, k)
            top = top[s[top] > 0]  # passages sharing no term with the query are not retrieved
            indices[row, : len(top)], scores[row, : len(top)] = top, s[top]
        out[split] = Ranking(qids, indices, scores)
    return out


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest scores, by descending score then ascending index (deterministic)."""
    if k < len(scores):
        part = np.argpartition(-scores, k - 1)[:k]
    else:
        part = np.arange(len(scores))
    order = np.lexsort((part, -scores[part]))
    return part[order]


# --------------------------------------------------------------------------- dense
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


@dataclass
class _Window:
    """One window on the host: rows ``lo:hi`` as batches sorted longest first, and where each sorted row came from."""

    lo: int
    hi: int
    order: np.ndarray  # (hi - lo,): window-relative row of each sorted position
    batches: list  # dicts of host tensors (pinned on CUDA), SDPA-ready


_TOKENIZE_CHUNK = 1024  # texts tokenised per tokenizer call (bounds the tokenizer's per-token objects)


def _prepare_window(tokenizer, texts: Callable[[int, int], Sequence[str]], lo: int, hi: int, *, max_length: int,
                    batch_size: int, sort: bool, sdpa: bool, pin: bool, desc: str, pool=None, pool_width: int = 1) -> _Window:
    """Rows ``lo:hi`` read, tokenised, sorted by length (longest first, stable) and cut into padded batches.

    The window's token ids are kept in compact ``(rows, max_length)`` int32 arrays,
    filled ``_TOKENIZE_CHUNK`` texts at a time: a fast tokenizer's result holds
    tens of bytes of Python and Rust objects per token, so tokenising a whole window
    (16,384 passages) in one call would hold ~10× the ids' size at once.
    ``pool`` (a thread pool) tokenises the chunks in parallel: a fast tokenizer
    releases the GIL, and one thread tokenises only ~3,000–4,000 Mr.TyDi-length
    passages a second (benchmark row ``t_d``) — 20,000 passages/s needs several.
    The ids are the same whatever the number of threads.
    """
    import torch

    from ..train.retrieval import sdpa_ready

    chunk = texts(lo, hi)
    m = hi - lo
    if len(chunk) != m:
        raise ValueError(f"{desc}: asked for rows {lo}:{hi}, got {len(chunk)} texts")
    for i, t in enumerate(chunk):
        if not isinstance(t, str):
            raise ValueError(f"{desc}: row {lo + i} is {type(t).__name__} {t!r:.60}, not text")
    left = getattr(tokenizer, "padding_side", "right") == "left"
    pad_value = {"input_ids": tokenizer.pad_token_id, "token_type_ids": getattr(tokenizer, "pad_token_type_id", 0),
                 "attention_mask": 0, "special_tokens_mask": 1}
    arrays: dict[str, np.ndarray] = {}

    def tokenise(s: int):
        return s, tokenizer(list(chunk[s : s + _TOKENIZE_CHUNK]), max_length=max_length, truncation=True, padding=True,
                            return_tensors="np")

    starts = list(range(0, m, _TOKENIZE_CHUNK))
    width = pool_width if pool is not None else 1  # chunks in flight at once (bounds the tokenizer's objects)
    results = (r for g in range(0, len(starts), width)
               for r in (pool.map(tokenise, starts[g : g + width]) if pool is not None else map(tokenise, starts[g : g + width])))
    for s, enc in results:
        for k, v in enc.items():
            if k not in arrays:
                arrays[k] = np.full((m, max_length), pad_value.get(k, 0), dtype=np.int32)
            w = v.shape[1]
            arrays[k][s : s + len(v), (max_length - w if left else 0) : (max_length if left else w)] = v
        del enc
    chunk = None  # the window's texts are no longer needed
    lengths = arrays["attention_mask"].sum(axis=1)  # tokens per row, [CLS]/[SEP] included
    order = np.argsort(-lengths, kind="stable") if sort else np.arange(m)
    batches = []
    for s in range(0, m, batch_size):
        rows = order[s : s + batch_size]
        w = int(lengths[rows].max())  # padded to this batch's longest
        cols = slice(max_length - w, max_length) if left else slice(0, w)
        batch = {k: torch.from_numpy(a[rows, cols].astype(np.int64)) for k, a in arrays.items()}
        batch = sdpa_ready(batch) if sdpa else batch
        batches.append({k: v.pin_memory() for k, v in batch.items()} if pin else batch)
    return _Window(lo, hi, order, batches)


def _encode_windows(encoder, tokenizer, texts: Callable[[int, int], Sequence[str]], start: int, n: int,
                    sink: Callable[[int, int, np.ndarray], None], *, max_length: int, batch_size: int, sort_window: int,
                    device, amp_dtype, out_dtype, prefetch: bool | None, embed, desc: str,
                    tokenizer_threads: int | None = None) -> None:
    """Encode rows ``start:n`` window by window; ``sink(lo, hi, rows)`` receives each window in corpus order."""
    import torch

    from ..train.retrieval import DualEncoder, prefetched, uses_sdpa

    if batch_size < 1 or sort_window < 0:
        raise ValueError(f"{desc}: batch_size must be >= 1 and sort_window >= 0, got {batch_size} and {sort_window}")
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = device.type == "cuda"
    encoder.eval().to(device)
    embed = embed or DualEncoder._first_token
    dim = encoder.config.hidden_size
    buf_dtype = torch.float16 if np.dtype(out_dtype) == np.float16 else torch.float32
    rows_per_window = batch_size * max(sort_window, 1)
    spans = [(lo, min(lo + rows_per_window, n)) for lo in range(start, n, rows_per_window)]
    threads = tokenizer_threads if tokenizer_threads is not None else default_tokenizer_threads(cuda)
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="codeswitch-tokenise") if threads > 1 else None
    prep = lambda lo, hi: _prepare_window(  # noqa: E731
        tokenizer, texts, lo, hi, max_length=max_length, batch_size=batch_size, sort=sort_window > 0,
        sdpa=uses_sdpa(encoder), pin=cuda, desc=desc, pool=pool, pool_width=threads,
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
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def default_tokenizer_threads(cuda: bool) -> int:
    """Threads that tokenise a corpus window: 1 on CPU (the encoder needs the cores), on a GPU enough to feed it.

    One thread tokenises ~3,000–4,000 passages of ≤ 128 tokens a second (benchmark
    row ``t_d``); the 20,000 passages/s target needs 6–8.  Leaves two cores to the
    main thread; ``CODESWITCH_TOKENIZER_THREADS`` overrides it.
    """
    import os

    if os.environ.get("CODESWITCH_TOKENIZER_THREADS"):
        return max(1, int(os.environ["CODESWITCH_TOKENIZER_THREADS"]))
    if not cuda:
        return 1
    from ..utils import gpu_host_workers

    return gpu_host_workers()


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
    tokenizer_threads: int | None = None,
) -> np.ndarray:
    """Encode ``n`` passages with ``encoder`` into an ``(n, H)`` ``.npy`` file at ``path``; return it memory-mapped.

    ``texts(start, stop)`` returns the texts of rows ``start:stop`` (e.g.
    :meth:`codeswitch.data.retrieval.Collection.texts`, read from a memory-mapped
    dataset).  An embedding is ``embed(encoder, batch)``, by default the last layer's
    first-token vector (DPR).  Windows of ``sort_window`` batches are sorted by token
    length (``0``: batches in corpus order), tokenised one window ahead in a
    background thread (``prefetch``, default on), encoded under
    ``torch.inference_mode()`` and ``amp_dtype`` autocast, and copied to the host
    once per window; see the module docstring.  ``dtype``: of the file (float16;
    float32 for exact comparisons).  ``tokenizer_threads``: threads tokenising a window
    (default :func:`default_tokenizer_threads`).  An interrupted call resumes at the last
    completed window; a finished file is returned without encoding.
    """
    out = _RowFile(path, n, encoder.config.hidden_size, dtype, desc=desc)
    done = out.complete()
    if done is not None:
        return done
    start = out.open()
    bar = progress(total=n, initial=start, desc=desc, unit="passage", disable=_short(n, 20000))

    def sink(lo: int, hi: int, rows: np.ndarray) -> None:
        out.write(lo, rows)
        out.checkpoint(hi)
        bar.update(hi - lo)
        _trim_heap()

    try:
        _encode_windows(encoder, tokenizer, texts, start, n, sink, max_length=max_length, batch_size=batch_size,
                        sort_window=sort_window, device=device, amp_dtype=amp_dtype, out_dtype=dtype, prefetch=prefetch,
                        embed=embed, desc=desc, tokenizer_threads=tokenizer_threads)
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
    tokenizer_threads: int | None = None,
) -> np.ndarray:
    """``(len(texts), H)`` float32 embeddings of a list of texts (queries), by the pipeline of :func:`encode_corpus`.

    Rows come back in the order of ``texts``; windows of ``sort_window`` batches are
    sorted by token length first (``0``: not sorted).  Meant for lists that fit in
    memory; a corpus goes through :func:`encode_corpus`.
    """
    out = np.empty((len(texts), encoder.config.hidden_size), dtype=np.float32)

    def sink(lo: int, hi: int, rows: np.ndarray) -> None:
        out[lo:hi] = rows

    _encode_windows(encoder, tokenizer, lambda lo, hi: texts[lo:hi], 0, len(texts), sink, max_length=max_length,
                    batch_size=batch_size, sort_window=sort_window, device=device, amp_dtype=amp_dtype, out_dtype=np.float32,
                    prefetch=prefetch, embed=embed, desc=desc, tokenizer_threads=tokenizer_threads)
    return out


def dense_rank(
    query_emb: np.ndarray,
    corpus_emb: np.ndarray,
    qids: Sequence[str],
    *,
    depth: int,
    device=None,
    chunk_size: int = 131072,
    query_batch: int = 1024,
) -> Ranking:
    """Exact top-``depth`` inner-product search of ``query_emb`` (Q, H) over ``corpus_emb`` (N, H).

    The corpus is streamed in chunks of ``chunk_size`` rows (float16 on disk, float32
    for the product), queries in batches of ``query_batch``; the running top-k is
    merged chunk by chunk, so memory stays at (query_batch × chunk_size) scores.
    """
    import torch

    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    n, k = corpus_emb.shape[0], min(depth, corpus_emb.shape[0])
    q_all = torch.as_tensor(np.asarray(query_emb, dtype=np.float32))
    best_s = torch.full((len(qids), k), -math.inf)
    best_i = torch.full((len(qids), k), -1, dtype=torch.long)
    with torch.no_grad():
        for c0 in progress(range(0, n, chunk_size), desc="dense search", total=math.ceil(n / chunk_size), unit="chunk", disable=n <= chunk_size):
            chunk = torch.as_tensor(np.asarray(corpus_emb[c0 : c0 + chunk_size], dtype=np.float32)).to(device)  # (C, H)
            for q0 in range(0, len(qids), query_batch):
                q = q_all[q0 : q0 + query_batch].to(device)  # (b, H)
                s = q @ chunk.T  # (b, C)
                top_s, top_i = s.topk(min(k, s.shape[1]), dim=1)  # (b, k')
                cand_s = torch.cat([best_s[q0 : q0 + query_batch], top_s.cpu()], dim=1)  # (b, k + k')
                cand_i = torch.cat([best_i[q0 : q0 + query_batch], top_i.cpu() + c0], dim=1)
                # Descending score, ties by ascending row number: a stable sort on rows
                # already in ascending order within each block keeps runs deterministic.
                order = _stable_desc(cand_s, cand_i)[:, :k]
                best_s[q0 : q0 + query_batch] = cand_s.gather(1, order)
                best_i[q0 : q0 + query_batch] = cand_i.gather(1, order)
    return Ranking(list(qids), best_i.numpy().astype(np.int64), best_s.numpy().astype(np.float32))


def _stable_desc(scores, rows):
    import torch

    by_row = torch.argsort(rows, dim=1, stable=True)
    s = scores.gather(1, by_row)
    by_score = torch.argsort(-s, dim=1, stable=True)
    return by_row.gather(1, by_score)


# --------------------------------------------------------------------------- hybrid
def hybrid_grid(step: float = 0.05) -> list[float]:
    """The weights on the dense score tried when tuning: 0, step, …, 1."""
    n = round(1 / step)
    return [round(i * step, 6) for i in range(n + 1)]


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return np.zeros_like(x) if hi == lo else (x - lo) / (hi - lo)


def _fusion_table(dense: Ranking, sparse: Ranking) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per query: (union of rows, normalised BM25 score, normalised dense score)."""
    table = []
    for i in range(len(dense.qids)):
        d_ok, s_ok = dense.indices[i] >= 0, sparse.indices[i] >= 0
        d_idx, d_s = dense.indices[i][d_ok], dense.scores[i][d_ok]
        s_idx, s_s = sparse.indices[i][s_ok], sparse.scores[i][s_ok]
        union = np.union1d(d_idx, s_idx)
        # A passage one run did not retrieve gets that run's lowest retrieved score.
        d_full = np.full(len(union), d_s.min() if len(d_s) else 0.0, dtype=np.float64)
        s_full = np.full(len(union), s_s.min() if len(s_s) else 0.0, dtype=np.float64)
        d_full[np.searchsorted(union, d_idx)] = d_s
        s_full[np.searchsorted(union, s_idx)] = s_s
        table.append((union, _minmax(s_full), _minmax(d_full)))
    return table


def fuse(dense: Ranking, sparse: Ranking, weight: float, *, depth: int = 100, _table=None) -> Ranking:
    """The hybrid ranking ``s_bm25 + weight · s_dense`` (both min–max normalised per query), top ``depth``."""
    table = _table if _table is not None else _fusion_table(dense, sparse)
    indices = np.full((len(table), depth), -1, dtype=np.int64)
    scores = np.full((len(table), depth), -np.inf, dtype=np.float32)
    for i, (union, s_norm, d_norm) in enumerate(table):
        score = s_norm + weight * d_norm
        order = np.lexsort((union, -score))[:depth]
        indices[i, : len(order)] = union[order]
        scores[i, : len(order)] = score[order]
    return Ranking(list(dense.qids), indices, scores)


def score_grid(runs: SplitRuns, grid: Sequence[float], *, depth: int = 100) -> dict[float, dict[str, dict[str, float]]]:
    """Per weight of ``grid``: per-query MRR@100 and Recall@100 of the hybrid on ``runs``.

    All weights are scored in one :func:`evaluate_run` call (query ids prefixed by the
    weight's index), which saves the evaluator's per-call overhead.
    """
    table = _fusion_table(runs.dense, runs.sparse)
    run: Run = {}
    qrels: dict[str, Mapping[str, int]] = {}
    for i, w in enumerate(grid):
        for qid, docs in fuse(runs.dense, runs.sparse, w, depth=depth, _table=table).to_run(runs.docid_of, depth).items():
            run[f"{i}|{qid}"] = docs
        qrels.update({f"{i}|{q}": r for q, r in runs.qrels.items()})
    scores = evaluate_run(run, qrels, depth=depth)
    return {w: {m: {q: v[f"{i}|{q}"] for q in runs.qrels} for m, v in scores.items()} for i, w in enumerate(grid)}


def tune_hybrid(runs: SplitRuns, grid: Sequence[float], *, depth: int = 100, _scores=None) -> tuple[float, dict[float, float]]:
    """The weight of ``grid`` with the best MRR@100 on ``runs`` (the first of equals), and MRR@100 per weight."""
    scores = _scores if _scores is not None else score_grid(runs, grid, depth=depth)
    curve = {w: mean_scores(scores[w])["mrr@100"] for w in grid}
    best = max(range(len(grid)), key=lambda i: (curve[grid[i]], -i))
    return grid[best], curve


def evaluate_hybrid(
    report: SplitRuns,
    tune: SplitRuns | None,
    *,
    grid: Sequence[float],
    depth: int = 100,
    tune_on_report_split: bool = False,
    cache: dict | None = None,
) -> dict:
    """Tune the hybrid weight on ``tune`` and score the hybrid on ``report``.

    The weight is chosen on the reported split itself only with
    ``tune_on_report_split=True`` (the released script's practice, an optimistic
    estimate); otherwise ``tune`` must be a different split.  ``cache`` (a dict
    shared by calls on the same two :class:`SplitRuns`) keeps each split's
    :func:`score_grid`, so scoring both settings costs two evaluations, not four.

    Returns ``{"weight", "tuned_on", "curve", "per_query": {metric: {qid: value}}, "mean": {metric: value}}``.
    """
    if tune_on_report_split:
        tune = report
    elif tune is None:
        raise ValueError("evaluate_hybrid: a tuning split is needed (or tune_on_report_split=True)")
    elif tune.split == report.split:
        raise ValueError(
            f"evaluate_hybrid: refusing to tune the hybrid weight on the reported split '{report.split}'; "
            "pass another split, or tune_on_report_split=True to do it knowingly"
        )
    cache = {} if cache is None else cache

    def scores(runs: SplitRuns):
        key = (id(runs), depth, tuple(grid))
        if key not in cache:
            cache[key] = score_grid(runs, grid, depth=depth)
        return cache[key]

    weight, curve = tune_hybrid(tune, grid, depth=depth, _scores=scores(tune))
    per_query = scores(report)[weight]
    return {"weight": weight, "tuned_on": tune.split, "curve": {str(w): v for w, v in curve.items()}, "per_query": per_query, "mean": mean_scores(per_query)}


# --------------------------------------------------------------------------- significance
def paired_t_test(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """Two-sided p-value of a paired t-test between per-query scores ``a`` and ``b`` (common queries).

    Identical score lists give p = 1 (no evidence of a difference) rather than NaN.
    """
    from scipy import stats

    common = sorted(set(a) & set(b))
    if len(common) < 2:
        return float("nan")
    x = np.array([a[q] for q in common], dtype=np.float64)
    y = np.array([b[q] for q in common], dtype=np.float64)
    if np.allclose(x - y, 0.0):
        return 1.0
    return float(stats.ttest_rel(x, y).pvalue)
