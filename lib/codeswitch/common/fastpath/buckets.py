"""Length bucketing: one training step cut into length buckets where that saves padding (ConCSE).

:func:`length_buckets` chooses the cuts (an exact dynamic programme), :func:`bucket_features` regroups a step's
tokenised columns into them on the host, :func:`embed_length_buckets` embeds them and restores the column order.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ["DEFAULT_BUCKET_COST", "length_buckets", "bucket_features", "embed_length_buckets"]


DEFAULT_BUCKET_COST = 2048


def length_buckets(lengths: Sequence[int], cost: float) -> list[tuple[int, int]]:
    """Cut rows sorted by decreasing length into buckets with the fewest padded tokens.

    A bucket ``[start, stop)`` is padded to its first (longest) row, so it computes
    ``(stop − start) · lengths[start]`` token positions; every bucket is one more
    forward, charged ``cost`` positions (the launch and framework overhead a GPU
    cannot hide, in units of tokens).  Minimises ``Σ positions + cost · buckets``
    exactly, by dynamic programming over the runs of equal length (a bucket never
    gains by starting inside a run).  Returns ``[(start, stop), …]`` covering every row.

    >>> length_buckets([9, 9, 9, 2, 2, 2, 2, 2], cost=10)   # 27 + 10 + 10 + 10 < 72 + 10
    [(0, 3), (3, 8)]
    >>> length_buckets([9, 9, 9, 2, 2, 2, 2, 2], cost=100)
    [(0, 8)]
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    if n == 0:
        return []
    if (np.diff(lengths) > 0).any():
        raise ValueError("length_buckets: lengths must be sorted in decreasing order")
    starts = np.flatnonzero(np.r_[True, lengths[1:] != lengths[:-1]])  # (m,) the first row of each run
    bounds = np.r_[starts, n]  # (m + 1,)
    best = np.zeros(len(starts) + 1)  # best[j]: cheapest cover of runs 0..j-1
    back = np.zeros(len(starts) + 1, dtype=np.int64)
    for j in range(1, len(starts) + 1):
        i = np.arange(j)  # the bucket covering runs i..j-1
        total = best[:j] + (bounds[j] - starts[i]) * lengths[starts[i]] + cost  # (j,)
        back[j] = int(np.argmin(total))
        best[j] = total[back[j]]
    cuts, j = [], len(starts)
    while j > 0:
        cuts.append((int(starts[back[j]]), int(bounds[j])))
        j = back[j]
    return cuts[::-1]


def bucket_features(features_list: Sequence[dict[str, Any]], cost: float | None) -> list[dict[str, Any]]:
    """Regroup a step's tokenised columns into length buckets (on the CPU, in the data collator).

    All ``N = k·B`` sentences of the ``k`` columns are concatenated column-major
    (row ``j·B + i`` is row ``i`` of column ``j``) and padded to the longest: one
    forward, exactly the merged forward of sentence-transformers' ``embed_columns``.
    When cutting the rows, sorted by length, into buckets — each trimmed to its own
    longest row — saves more padded positions than the ``cost`` of the extra forwards
    (:func:`length_buckets`), the step becomes those buckets instead: the same
    sentences, less padding, the same loss (the rows of a transformer forward are
    independent; only the dropout masks fall differently).  ``cost=None``: always one
    forward.  A single bucket keeps the original row order.

    Each bucket is a feature dict for the model plus ``"rows"``, the (n_k,) positions
    of its sentences in the column-major order; :func:`embed_length_buckets` undoes
    the permutation.
    """
    from sentence_transformers.base.losses.merged_forward import merge_feature_batches

    merged = merge_feature_batches(list(features_list)) if len(features_list) > 1 else dict(features_list[0])
    if merged is None:
        raise ValueError("bucket_features: the columns cannot be merged (different tokenisers or feature sets)")
    mask = merged["attention_mask"]  # (N, L)
    N, L = mask.shape
    lengths = mask.sum(dim=1)  # (N,)
    right_padded = bool((mask.cumprod(dim=1).sum(dim=1) == lengths).all())  # ones, then zeros
    cuts = []
    if cost is not None and right_padded and N * L > cost:  # below that no split can pay for itself
        order = torch.argsort(lengths, descending=True, stable=True)  # (N,), longest first
        sorted_lengths = lengths[order]
        cuts = length_buckets(sorted_lengths.tolist(), cost)
    if len(cuts) <= 1:
        return [{**merged, "rows": torch.arange(N)}]
    buckets = []
    for start, stop in cuts:
        idx = order[start:stop]  # (n_k,)
        width = int(sorted_lengths[start])
        bucket = {}
        for key, value in merged.items():
            if isinstance(value, Tensor) and value.ndim >= 2 and value.shape[0] == N:
                bucket[key] = value[idx, :width].contiguous()  # (n_k, width)
            elif isinstance(value, Tensor) and value.ndim == 1 and value.shape[0] == N and key != "prompt_length":
                bucket[key] = value[idx]
            else:
                bucket[key] = value  # batch-level metadata
        bucket["rows"] = idx
        buckets.append(bucket)
    return buckets


def embed_length_buckets(model: nn.Module, buckets: Sequence[dict[str, Any]], n_columns: int) -> list[Tensor]:
    """Embed the buckets of :func:`bucket_features` (one forward each); return the ``n_columns`` (B, H) blocks."""
    outputs, rows = [], []
    for bucket in buckets:
        features = dict(bucket)  # the model writes its outputs into the dict: keep the caller's clean
        rows.append(features.pop("rows"))
        outputs.append(model(features)["sentence_embedding"])  # (n_k, H)
    emb = torch.cat(outputs, dim=0) if len(outputs) > 1 else outputs[0]  # (N, H), bucket order
    index = torch.cat(rows).to(emb.device) if len(rows) > 1 else rows[0].to(emb.device)  # (N,)
    ordered = emb.new_empty(emb.shape).index_copy(0, index, emb)  # (N, H), column-major order again
    if ordered.shape[0] % n_columns:
        raise ValueError(f"embed_length_buckets: {ordered.shape[0]} rows do not split into {n_columns} columns")
    return list(ordered.view(n_columns, -1, ordered.shape[-1]).unbind(0))  # n_columns × (B, H)
