"""Packing: one training step packed without padding into ``R × width`` tokens, ``R`` from at most four budgets,
block-diagonal attention, per-sentence positions (issue 24).

The budgets (:func:`token_budgets`, :func:`sampled_budgets` for random batches, :func:`grouped_budgets` for the HF
Trainer's length-grouped ones) fix the shapes a compiled step or a CUDA graph sees; :func:`pack_features` packs a step
on the host (first-fit-decreasing, :func:`first_fit`); :func:`embed_packed` embeds it.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ...core.encoders import packed_first_tokens

__all__ = ["PACK_WIDTH", "token_budgets", "sampled_budgets", "grouped_budgets", "least_padding", "first_fit", "pack_features",
           "embed_packed"]


PACK_WIDTH = 256  # tokens per packed row (≥ every sequence: ConCSE's max_length is 64)


def token_budgets(tokens_per_step: Sequence[int] | np.ndarray, *, sentences: int, max_length: int, width: int = PACK_WIDTH,
                  n: int = 4) -> tuple[int, ...]:
    """At most ``n`` packed-row counts for a trainer whose steps hold ``sentences`` sentences of ≤ ``max_length``
    tokens: each step is packed into rows of ``width`` tokens, its row count rounded up to the smallest budget.

    The first ``n - 1`` budgets are quantiles (``k/n``) of the rows a sample of steps
    needs (``ceil(tokens / width)`` plus one row of slack for what first-fit leaves
    empty), so each covers a share of the steps; the last is the worst case,
    ``ceil(sentences / (width // max_length))`` rows (every row holds at least
    ``width // max_length`` sentences), so every step fits.  The trainer's input shapes
    are then at most ``n`` per epoch, whatever the lengths: what a compiled step or
    a CUDA graph needs (issue 24).
    """
    if width < max_length:
        raise ValueError(f"token_budgets: rows of {width} tokens cannot hold sentences of {max_length}")
    worst = -(-sentences // (width // max_length))
    rows = np.ceil(np.asarray(tokens_per_step, dtype=np.float64) / width).astype(int) + 1
    if rows.size == 0:
        raise ValueError("token_budgets: no steps")
    qs = [min(worst, int(np.ceil(np.quantile(rows, k / n)))) for k in range(1, n)]
    return tuple(sorted(set(qs) | {worst}))


def sampled_budgets(lengths: np.ndarray, batch_size: int, *, max_length: int, width: int = PACK_WIDTH, seed: int = 0,
                    steps: int = 256, n: int = 4) -> tuple[int, ...]:
    """:func:`token_budgets` for a trainer whose steps draw ``batch_size`` random rows of a dataset.

    ``lengths``: (rows, k) tokens of each row's ``k`` sentences (truncated to
    ``max_length``).  ``steps`` random batches (a generator seeded with ``seed``, so
    the budgets, and with them the run, are reproducible) give the token counts the
    budgets are quantiles of; the largest budget holds any batch whatever its lengths.
    """
    lengths = np.minimum(np.asarray(lengths, dtype=np.int64).reshape(len(lengths), -1), max_length)  # (rows, k)
    if len(lengths) == 0:
        raise ValueError("sampled_budgets: no rows")
    rng = np.random.default_rng(seed)
    b = min(batch_size, len(lengths))
    per_row = lengths.sum(axis=1)  # (rows,)
    tokens = [int(per_row[rng.choice(len(per_row), size=b, replace=False)].sum()) for _ in range(steps)]
    return token_budgets(tokens, sentences=batch_size * lengths.shape[1], max_length=max_length, width=width, n=n)


def grouped_budgets(lengths: np.ndarray, batch_size: int, *, max_length: int, width: int = PACK_WIDTH, seed: int = 0,
                    steps: int = 256, n: int = 4) -> tuple[int, ...]:
    """At most ``n`` packed-row counts for a trainer whose batches the length-grouped sampler makes (the HF
    Trainer's ``group_by_length``, ``transformers.trainer_pt_utils.get_length_grouped_indices``): each epoch the
    rows are shuffled, cut into megabatches of ``min(rows // (4 · batch_size), 50)`` batches (at least one), sorted
    longest first inside each and cut into batches.

    A grouped batch holds rows of like length, so the rows it needs spread far wider than a random batch's
    (:func:`sampled_budgets`, whose quantile budgets then pad a short grouped batch up to a long one's rows), and a
    batch of long rows needs more than its token count says (first-fit leaves each row's remainder empty).  So
    seeded epochs until ``steps`` batches give each batch's rows by :func:`first_fit` itself, and the budgets are the
    ``n - 1`` row counts that pad those batches least (:func:`least_padding`), plus the worst case of
    :func:`token_budgets` (every batch fits).  ``lengths``: (rows, k) tokens of each row's ``k`` sentences.
    """
    lengths = np.minimum(np.asarray(lengths, dtype=np.int64).reshape(len(lengths), -1), max_length)  # (rows, k)
    if len(lengths) == 0:
        raise ValueError("grouped_budgets: no rows")
    if width < max_length:
        raise ValueError(f"grouped_budgets: rows of {width} tokens cannot hold sentences of {max_length}")
    per_row, rng = lengths.sum(axis=1), np.random.default_rng(seed)  # (rows,)
    b = min(batch_size, len(lengths))
    mega = max(1, min(len(lengths) // (4 * b), 50)) * b
    needs: list[int] = []
    while len(needs) < steps:
        order = rng.permutation(len(lengths))
        for start in range(0, len(order), mega):
            chunk = order[start:start + mega]
            chunk = chunk[np.argsort(-per_row[chunk], kind="stable")]  # longest first
            needs += [first_fit(lengths[chunk[i:i + b]].ravel().tolist(), width)[1] for i in range(0, len(chunk), b)]
    worst = -(-batch_size * lengths.shape[1] // (width // max_length))
    return least_padding(needs, worst, n)


def least_padding(needs: Sequence[int], worst: int, n: int) -> tuple[int, ...]:
    """The at most ``n`` budgets, ``worst`` among them, that minimise the rows of these steps (each ``needs`` rows,
    rounded up to the smallest budget that holds it): an exact dynamic programme over the distinct needs."""
    values, counts = np.unique(np.minimum(np.asarray(needs, dtype=np.int64), worst), return_counts=True)
    values, counts = values[values < worst], counts[values < worst]
    m, cum = len(values), np.concatenate([[0], np.cumsum(counts)])
    # best[k][j]: least rows of the steps needing values[:j], covered by k budgets whose largest is values[j - 1]
    best = [[0.0] + [np.inf] * m] + [[np.inf] * (m + 1) for _ in range(n - 1)]
    back = [[0] * (m + 1) for _ in range(n)]
    for k in range(1, n):
        for j in range(1, m + 1):
            for i in range(j):  # this budget covers values[i:j]
                cost = best[k - 1][i] + values[j - 1] * (cum[j] - cum[i])
                if cost < best[k][j]:
                    best[k][j], back[k][j] = cost, i
    total = [(best[k][j] + worst * (cum[m] - cum[j]), k, j) for k in range(n) for j in range(m + 1) if best[k][j] < np.inf]
    _, k, j = min(total)
    chosen = []
    while k > 0 and j > 0:
        chosen.append(int(values[j - 1]))
        j, k = back[k][j], k - 1
    return tuple(sorted(set(chosen) | {worst}))


def first_fit(lengths: Sequence[int], width: int) -> tuple[list[tuple[int, int]], int]:
    """First-fit-decreasing of sentences of these ``lengths`` into rows of ``width`` tokens: each sentence's
    ``(row, offset)`` and the number of rows used."""
    free: list[int] = []  # tokens left per row
    place = [(0, 0)] * len(lengths)
    for i in sorted(range(len(lengths)), key=lambda i: -lengths[i]):  # longest first
        n = lengths[i]
        if n > width:
            raise ValueError(f"first_fit: a sentence of {n} tokens does not fit a row of {width}")
        row = next((r for r, f in enumerate(free) if f >= n), None)
        if row is None:
            free.append(width)
            row = len(free) - 1
        place[i] = (row, width - free[row])
        free[row] -= n
    return place, len(free)


def pack_features(features_list: Sequence[dict[str, Any]], budgets: Sequence[int], width: int = PACK_WIDTH) -> dict[str, Any]:
    """Pack a step's tokenised columns into one fixed-shape batch of ``R × width`` tokens, ``R`` from ``budgets``.

    The ``N = k·B`` sentences (column-major, as :func:`bucket_features` orders them)
    are placed by first-fit-decreasing into rows of ``width`` tokens, without their
    padding; the row count is rounded up to the smallest budget that holds it (the
    rest is padding, which attends only to itself).  Returns

    * ``input_ids``, ``token_type_ids`` (if present): (R, width);
    * ``position_ids``: (R, width), each sentence counting from 0, as if alone;
    * ``attention_mask``: (R, 1, width, width) boolean, True where query and key
      are in the same sentence — block-diagonal, so no sentence sees another (the
      form SDPA reads; transformers passes a 4-D mask through as it is);
    * ``starts``: (N,) flat index ``row · width + offset`` of each sentence's first
      token, in the column-major order (its presence marks a packed batch).

    The same sentences, the same attention per sentence: the embeddings equal the
    padded forward's (up to float summation order), and which sentences meet in the
    loss is unchanged.  Host work (the DataLoader workers), no device involved.
    """
    from sentence_transformers.base.losses.merged_forward import merge_feature_batches

    merged = merge_feature_batches(list(features_list)) if len(features_list) > 1 else dict(features_list[0])
    if merged is None:
        raise ValueError("pack_features: the columns cannot be merged (different tokenisers or feature sets)")
    mask = merged["attention_mask"]  # (N, L), right-padded
    N, L = mask.shape
    lengths = mask.sum(dim=1).tolist()  # host tensors: no device involved
    place, used = first_fit(lengths, width)  # (row, offset) per sentence
    R = next((b for b in sorted(budgets) if b >= used), None)
    if R is None:
        raise ValueError(f"pack_features: the step needs {used} rows of {width} tokens, more than the largest budget "
                         f"{max(budgets)}")
    pad_id = 0
    ids = torch.full((R, width), pad_id, dtype=merged["input_ids"].dtype)
    types = torch.zeros((R, width), dtype=torch.long)
    positions = torch.zeros((R, width), dtype=torch.long)
    seq = torch.full((R, width), -1, dtype=torch.long)  # which sentence holds each slot (-1: padding)
    starts = torch.empty(N, dtype=torch.long)
    for i, ((row, off), n) in enumerate(zip(place, lengths)):
        ids[row, off : off + n] = merged["input_ids"][i, :n]
        if "token_type_ids" in merged:
            types[row, off : off + n] = merged["token_type_ids"][i, :n]
        positions[row, off : off + n] = torch.arange(n)
        seq[row, off : off + n] = i
        starts[i] = row * width + off
    pad = seq < 0
    seq[pad] = -2 - torch.arange(int(pad.sum()))  # each padding slot a sentence of its own: attends to itself only
    out = {
        "input_ids": ids,
        "position_ids": positions,
        "attention_mask": (seq[:, :, None] == seq[:, None, :])[:, None],  # (R, 1, width, width)
        "starts": starts,
    }
    if "token_type_ids" in merged:
        out["token_type_ids"] = types
    return out


def embed_packed(model: nn.Module, packed: Mapping[str, Any], n_columns: int) -> list[Tensor]:
    """The column embeddings of a :func:`pack_features` batch: one forward of the backbone over all rows, the first
    token of each sentence, then the encoder's modules after its pooling (ConCSE's dense + tanh).

    ``model``: a sentence-transformers model ``Transformer → Pooling("cls") → …``
    (:func:`codeswitch.concse.train.build_encoder`).  Returns ``n_columns`` × (B, H).
    """
    transformer, pooling, *rest = list(model)
    if getattr(pooling, "pooling_mode", None) not in (None, "cls") and not getattr(pooling, "pooling_mode_cls_token", True):
        raise ValueError("embed_packed: the encoder must pool the first token")
    features = {"sentence_embedding": packed_first_tokens(transformer.auto_model, packed)}
    for module in rest:
        features = module(features)
    emb = features["sentence_embedding"]  # (N, H), column-major
    if emb.shape[0] % n_columns:
        raise ValueError(f"embed_packed: {emb.shape[0]} sentences do not split into {n_columns} columns")
    return list(emb.view(n_columns, -1, emb.shape[-1]).unbind(0))
