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
default).  Before the first window the corpus is tokenised once per (tokenizer,
``max_length``) into int32 memory-mapped shards (:func:`codeswitch.common.tokens.tokenised_corpus`:
texts read a chunk at a time, tokenised in worker processes when the corpus is large,
written atomically): the first model that encodes a corpus pays for it, every later
one that shares the tokenizer only reads the shards.  Then each window goes through::

    background thread                         main thread (device)
    ─────────────────────────────────────     ──────────────────────────────────────────────────
    window w+1: ids of rows lo:hi sliced      window w: for each batch (longest first):
      from the shards → padded to               copy (pinned → device, non-blocking)
      max_length → sort rows by token            → encoder (inference mode, autocast, SDPA)
      length, longest first, stable →            → first-token vectors into a device buffer
      cut into batches, each trimmed to        one copy of the buffer to the host per window
      its own longest → pin                    (the only synchronisation), rows put back in
                                               corpus order, written at their offset in the
                                               .npy, progress recorded

* **sorting** (within a window, never across the corpus) puts passages of similar
  length in a batch, so little compute is spent on padding; with a passage's
  padding masked, its embedding does not depend on its batch-mates (up to float
  rounding: a test checks fp32 embeddings agree with the corpus-order batches
  within 1e-5), and the window's permutation is inverted before writing, so row
  ``i`` of the file is passage ``i``;
* **memory**: the host holds at most two windows of token ids (the one being
  encoded, the one being prepared), one window's embeddings, and nothing of the
  corpus otherwise (the shards are memory-mapped; tokenising holds one chunk of
  texts and ids per worker).  The rows are written with ``pwrite`` at their offset in
  the ``.npy`` (not through a writable memory map, whose dirty pages would count
  as this process's memory until the kernel writes them back), and the C heap's
  free pages are handed back after each window (``malloc_trim``).
  ``python -m benchmarks memory`` measures it;
* **one host synchronisation per window**: padding masks are made SDPA-ready on
  the host (:func:`codeswitch.common.fastpath.sdpa_ready`), embeddings stay on the
  device until the window's single device-to-host copy, which is waited for only
  after the next window's first batch is queued (so the device does not idle);
* **fixed-width buckets** (``encode_bucket_step``, issue 40; off by default): each batch padded
  to the narrowest of ``step, 2·step, …, max_length`` that holds its longest row, not to that
  row, so the encoder sees at most (number of widths) × (full, last batch) shapes: what a
  compiled or CUDA-graph encoder needs; the embeddings equal the unbucketed ones up to float
  rounding (padding is masked; a test checks 1e-5).  Eager on a CPU it only adds padding
  (``python -m benchmarks memory --compare-buckets 32``, ``docs/bench/cpu/encode_buckets.json``);
* **resume**: after each window, the file is synced and ``<name>.progress.json``
  records the rows done; a killed encoding continues from there (the windows are
  the same, so the result is the same as an uninterrupted run), and
  ``<name>.done.json`` (written atomically, last) marks a complete file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from ..core.progress import progress

__all__ = [
    "Ranking",
    "SplitRuns",
    "METRICS",
    "evaluate_run",
    "mean_scores",
    "analyze",
    "bm25_rank",
    "dense_rank",
    "fuse",
    "fuse_grid",
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


def evaluate_run(run: Mapping[str, Mapping[str, float]], qrels: Qrels, *, depth: int) -> dict[str, dict[str, float]]:
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

    def to_run(self, docid_of: Mapping[int, str], depth: int) -> Run:
        run: Run = {}
        for qid, idx, sc in zip(self.qids, self.indices[:, :depth].tolist(), self.scores[:, :depth].tolist()):
            run[qid] = {docid_of[i]: s for i, s in zip(idx, sc) if i >= 0}
        return run

    def save(self, path: Path) -> None:
        import io

        from ..core.atomic import atomic_write_bytes

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
        _same_queries(self.dense, self.sparse, f"split '{self.split}'")


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
    k1: float,
    b: float,
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
    for p in progress(passages, desc=f"BM25 index {language}", total=n_passages, unit="passage", min_total=20000):
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
        for row, qid in enumerate(progress(qids, desc=f"BM25 {language} {split}", unit="query", min_total=500)):
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


def dense_rank(
    query_emb: np.ndarray,
    corpus_emb: np.ndarray,
    qids: Sequence[str],
    *,
    depth: int,
    device=None,
    chunk_size: int,
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
def hybrid_grid(step: float) -> list[float]:
    """The weights on the dense score tried when tuning: 0, step, …, 1."""
    n = round(1 / step)
    return [round(i * step, 6) for i in range(n + 1)]


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return np.zeros_like(x) if hi == lo else (x - lo) / (hi - lo)


def _same_queries(dense: Ranking, sparse: Ranking, where: str = "fuse") -> None:
    """Refuse a dense and a BM25 ranking that do not hold the same queries in the same order (the hybrid pairs them row
    by row), naming the queries one of them lacks."""
    if dense.qids == sparse.qids:
        return
    d, s = set(dense.qids), set(sparse.qids)

    def some(qids: set[str]) -> str:
        shown = sorted(qids)[:5]
        return ", ".join(map(repr, shown)) + (f" and {len(qids) - 5} more" if len(qids) > 5 else "")

    if d == s:
        raise ValueError(f"{where}: the dense and BM25 rankings hold the same {len(d)} queries in a different order "
                         "(the hybrid pairs them row by row): rank both from the same query list")
    missing = [f"{len(d - s)} dense quer{'y' if len(d - s) == 1 else 'ies'} missing from the BM25 ranking ({some(d - s)})" if d - s else "",
               f"{len(s - d)} BM25 quer{'y' if len(s - d) == 1 else 'ies'} missing from the dense ranking ({some(s - d)})" if s - d else ""]
    raise ValueError(f"{where}: the dense and BM25 rankings do not hold the same queries: {'; '.join(m for m in missing if m)}")


def _fusion_table(dense: Ranking, sparse: Ranking) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per query: (union of rows, normalised BM25 score, normalised dense score)."""
    _same_queries(dense, sparse)
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


def fuse(dense: Ranking, sparse: Ranking, weight: float, *, depth: int) -> Ranking:
    """The hybrid ranking ``s_bm25 + weight · s_dense`` (both min–max normalised per query), top ``depth``.

    ``dense`` and ``sparse`` must hold the same queries in the same order (a :class:`ValueError` names the ones
    either lacks).  A passage one run did not retrieve gets that run's lowest retrieved score (the released code's
    rule), so at ``weight = 0`` BM25's last passages tie with every passage it missed.  Equal scores are ordered by
    corpus row.
    """
    return fuse_grid(dense, sparse, (weight,), depth=depth)[0]


def fuse_grid(dense: Ranking, sparse: Ranking, weights: Sequence[float], *, depth: int) -> list[Ranking]:
    """:func:`fuse` at each of ``weights``: one ranking per weight, each query's scores for every weight computed and
    sorted at once (a stable sort of the descending scores over the row-ordered union: ties by corpus row)."""
    _same_queries(dense, sparse)
    table = _fusion_table(dense, sparse)
    w = np.asarray(weights, dtype=np.float64)[:, None]
    indices = np.full((len(w), len(table), depth), -1, dtype=np.int64)
    scores = np.full((len(w), len(table), depth), -np.inf, dtype=np.float32)
    for i, (union, s_norm, d_norm) in enumerate(table):
        score = s_norm[None, :] + w * d_norm[None, :]  # (weights, union)
        order = np.argsort(-score, axis=1, kind="stable")[:, :depth]  # union is sorted: ties keep corpus-row order
        k = order.shape[1]
        indices[:, i, :k] = union[order]
        scores[:, i, :k] = np.take_along_axis(score, order, axis=1)
    return [Ranking(list(dense.qids), indices[j], scores[j]) for j in range(len(w))]


def score_grid(runs: SplitRuns, grid: Sequence[float], *, depth: int) -> dict[float, dict[str, dict[str, float]]]:
    """Per weight of ``grid``: per-query MRR@100 and Recall@100 of the hybrid on ``runs``.

    All weights are fused at once (:func:`fuse_grid`) and scored in one :func:`evaluate_run` call (query ids
    prefixed by the weight's index), which saves the evaluator's per-call overhead.
    """
    run: Run = {}
    qrels: dict[str, Mapping[str, int]] = {}
    for i, ranking in enumerate(fuse_grid(runs.dense, runs.sparse, grid, depth=depth)):
        for qid, docs in ranking.to_run(runs.docid_of, depth).items():
            run[f"{i}|{qid}"] = docs
        qrels.update({f"{i}|{q}": r for q, r in runs.qrels.items()})
    scores = evaluate_run(run, qrels, depth=depth)
    return {w: {m: {q: v[f"{i}|{q}"] for q in runs.qrels} for m, v in scores.items()} for i, w in enumerate(grid)}


def tune_hybrid(runs: SplitRuns, grid: Sequence[float], *, depth: int, _scores=None) -> tuple[float, dict[float, float]]:
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
    depth: int,
    tune_on_report_split: bool = False,
    cache: dict | None = None,
) -> dict:
    """Tune the hybrid weight on ``tune`` and score the hybrid on ``report``.

    The weight is chosen on the reported split itself only with
    ``tune_on_report_split=True`` (the released script's practice, an optimistic
    estimate); otherwise ``tune`` must be a different split.  ``cache`` (a dict
    shared by calls on the same two :class:`SplitRuns`) keeps each split's
    :func:`score_grid`, so scoring both settings costs two evaluations, not four.

    Returns ``{"weight", "tuned_on", "curve", "per_query": {metric: {qid: value}}, "mean": {metric: value}}``:
    ``weight`` is the tuned weight, a float of ``grid``, and ``curve`` the tuning split's MRR@100 per weight as two
    columns, ``{"weight": [w, ...], "mrr@100": [score, ...]}`` (floats both: a JSON record keeps the weights as
    numbers, never as the strings a dict key would turn them into).
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
    return {"weight": weight, "tuned_on": tune.split, "curve": {"weight": list(curve), "mrr@100": list(curve.values())},
            "per_query": per_query, "mean": mean_scores(per_query)}


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
