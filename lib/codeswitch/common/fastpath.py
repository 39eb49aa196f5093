"""The fast-path helpers several experiments share: length bucketing, SDPA-ready masks, prefetching, the corpus encoder.

* :func:`length_buckets` / :func:`bucket_features` / :func:`embed_length_buckets`:
  one training step cut into length buckets where that saves padding (ConCSE).
* :func:`token_budgets` / :func:`pack_features` / :func:`embed_packed`: one training
  step packed without padding into ``R × width`` tokens, ``R`` from at most four
  budgets, block-diagonal attention, per-sentence positions (issue 24).
* :func:`uses_sdpa` / :func:`sdpa_ready`: padding masks decided on the host, so
  transformers never synchronises with the device to inspect them.
* :func:`compile_for_training` / :func:`cudagraph_step_begin`: a model's training forward
  under ``torch.compile`` (every trainer's ``torch_compile`` setting: ``true`` or
  ``reduce-overhead``, CUDA graphs over the packed budgets), and the step marks CUDA
  graph trees need.
* :func:`prefetched`: the next items computed in background threads.
* :func:`encode_corpus` / :func:`encode_texts`: the resumable, length-sorted corpus
  encoder (``.npy`` rows written in windows, resumed after an interruption), its batches
  optionally padded to fixed-width buckets (:func:`encode_bucket_widths`); the design
  notes are in :mod:`codeswitch.contrastivemix.evaluate`.
"""

from __future__ import annotations

import functools
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence, TypeVar, Union

import numpy as np
import torch
from torch import Tensor, nn

from ..core.encoders import packed_first_tokens
from ..core.progress import progress
from ..core.runs import atomic_write_json

__all__ = [
    "DEFAULT_BUCKET_COST", "length_buckets", "bucket_features", "embed_length_buckets",
    "PACK_WIDTH", "token_budgets", "sampled_budgets", "grouped_budgets", "least_padding", "first_fit", "pack_features", "embed_packed",
    "REDUCE_OVERHEAD", "TorchCompile", "check_torch_compile", "compile_for_training", "cudagraph_step_begin", "uses_sdpa", "sdpa_ready", "prefetched", "encode_bucket_widths", "encode_corpus", "encode_texts",
]


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


# --------------------------------------------------------------------------- packing: one fixed-shape forward per step
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


#: ``torch_compile: reduce-overhead``: ``torch.compile(mode="reduce-overhead")``, inductor's CUDA graph trees
REDUCE_OVERHEAD = "reduce-overhead"
#: every trainer's ``torch_compile`` setting: ``false`` (eager), ``true`` (torch.compile's default mode) or
#: ``reduce-overhead`` (its CUDA-graph mode, packed steps only: :func:`check_torch_compile`)
TorchCompile = Union[bool, Literal["reduce-overhead"]]


def check_torch_compile(value: Any, *, section: str, packing: Mapping[str, bool]) -> None:
    """Check a section's ``torch_compile`` setting: ``false``, ``true`` or ``reduce-overhead``, the last only where every
    trainer it compiles packs its steps (``packing``: ``{setting name: value}``): CUDA graphs replay fixed shapes, and
    only the packed steps' token budgets give them (at most four a trainer).  A ``ValueError`` naming the settings."""
    if not (isinstance(value, bool) or value == REDUCE_OVERHEAD):
        raise ValueError(f"{section}.torch_compile must be false, true or {REDUCE_OVERHEAD}, got {value!r}")
    off = [name for name, on in packing.items() if not on]
    if value == REDUCE_OVERHEAD and off:
        needs = " and ".join(f"{section}.{name}: true" for name in off)
        raise ValueError(f"{section}.torch_compile: {REDUCE_OVERHEAD} needs {needs} "
                         "(CUDA graphs need the fixed token budgets)")


def compile_for_training(module: nn.Module, *, fixed_shapes: bool = False, mode: bool | str | None = None,
                         trainer=None) -> nn.Module:
    """``torch.compile`` ``module``'s forward for training steps, in place (parameters and state-dict keys unchanged);
    returns ``module``.  The one compile of every trainer's ``torch_compile`` setting (issue 24).

    In training mode the forward runs compiled, in evaluation mode (scoring, with
    shapes of its own) eagerly, so scoring compiles nothing.  ``fixed_shapes``
    (packing): static graphs, one per budget (at most four), and ``fullgraph=True``:
    the packed steps trace as one graph with 0 breaks (``tests/test_compile_guards.py``,
    ``tests/test_perf_guards*.py``), so a break is an error, not a silent slow path.
    Without it the shapes are left to dynamo (padded batches vary in width) and a
    graph break falls back to eager.  Compiling on a CPU works (smoke, CI): it costs
    more than a few tiny steps save, so every profile has it off until a GPU row
    measures it.

    ``mode``: the setting's value — ``None`` or ``True``, torch.compile's default mode;
    ``"reduce-overhead"`` (:data:`REDUCE_OVERHEAD`), inductor's CUDA graph trees: each
    budget's forward and backward are recorded once as CUDA graphs and replayed, one
    launch instead of hundreds (a step that waits on the host's dispatch, not on the
    GPU).  It needs ``fixed_shapes``; a model that cannot pack (mBART in GLUE, a
    CalBERT head that does not read the first token) falls back to the default mode,
    with a warning.  Each training step must then begin with :func:`cudagraph_step_begin`
    (a step's outputs live until the next step begins, then the graphs' replay
    overwrites them): ``trainer`` (an HF ``Trainer``) gets a callback that marks each of
    its steps; a hand-written loop calls :func:`cudagraph_step_begin` itself.  On a CPU
    inductor records no CUDA graph (it counts a ``cudagraph_skips``) and compiles as
    ``True`` does.
    """
    mode = _compile_mode(mode)
    if mode == REDUCE_OVERHEAD and not fixed_shapes:
        import warnings

        warnings.warn(f"torch_compile: {REDUCE_OVERHEAD} needs fixed shapes (packed steps); {type(module).__name__} "
                      "trains padded, so it is compiled in torch.compile's default mode (no CUDA graphs)", stacklevel=2)
        mode = None
    eager = module.forward
    options = {"mode": mode} if mode is not None else {}  # `true`: exactly the call it always was
    compiled = torch.compile(eager, dynamic=False if fixed_shapes else None, fullgraph=fixed_shapes, **options)

    @functools.wraps(eager)  # the signature the HF Trainer reads to drop unused columns
    def forward(*args, **kwargs):
        return compiled(*args, **kwargs) if module.training else eager(*args, **kwargs)

    module.forward = forward
    if trainer is not None and mode == REDUCE_OVERHEAD:
        trainer.add_callback(_cudagraph_steps_callback())
    return module


def _compile_mode(mode: bool | str | None) -> str | None:
    """torch.compile's ``mode`` for a ``torch_compile`` setting that is on: ``True`` (or ``None``) → the default mode."""
    if mode is None or mode is True:
        return None
    if mode == REDUCE_OVERHEAD:
        return mode
    raise ValueError(f"compile_for_training: mode must be True or {REDUCE_OVERHEAD!r}, got {mode!r}")


def cudagraph_step_begin(mode: bool | str | None) -> None:
    """Mark the start of a training step for CUDA graph trees, when ``mode`` (a ``torch_compile`` setting) is
    ``reduce-overhead``; nothing otherwise.

    Called once per optimiser step, before its first compiled forward: a step may run
    the compiled module more than once before its backward, and only the mark tells
    the trees that the previous step's outputs (losses, embeddings) are done with and
    their memory may be replayed into.  Anything kept across steps must therefore be a
    copy (an eager op's result), never a compiled forward's output tensor.
    """
    if mode == REDUCE_OVERHEAD:
        torch.compiler.cudagraph_mark_step_begin()


@functools.cache
def _cudagraph_steps_class():
    from transformers import TrainerCallback

    class CudagraphSteps(TrainerCallback):
        """Marks each HF ``Trainer`` step's start for CUDA graph trees (:func:`cudagraph_step_begin`)."""

        def on_step_begin(self, args, state, control, **kwargs):
            cudagraph_step_begin(REDUCE_OVERHEAD)

    return CudagraphSteps


def _cudagraph_steps_callback():
    """A ``TrainerCallback`` whose ``on_step_begin`` marks the step for CUDA graph trees (built lazily: transformers)."""
    return _cudagraph_steps_class()()


def uses_sdpa(model: nn.Module) -> bool:
    """Whether ``model`` (a transformers model) runs PyTorch's scaled-dot-product attention."""
    return getattr(getattr(model, "config", None), "_attn_implementation", None) == "sdpa"


def sdpa_ready(batch: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """``batch`` (host tensors) with its padding mask in the form SDPA reads, decided on the host.

    Given a (B, L) ``attention_mask`` of ones and zeros, transformers asks the device
    ``mask.all()`` before every forward (to drop a mask without padding and let SDPA
    pick its fastest kernel): a host synchronisation per forward.  Deciding it here,
    on the CPU copy, avoids that: no padding → no mask; padding → the boolean
    (B, 1, 1, L) mask (True = attend), which transformers hands to SDPA as it is and
    SDPA broadcasts over heads and query positions — the same attention as the mask
    transformers would build.  Only for models with ``attn_implementation="sdpa"``
    (eager attention *adds* its mask).
    """
    mask = batch.get("attention_mask")
    if mask is None or mask.ndim != 2:
        return dict(batch)
    if mask.device.type != "cpu":
        raise ValueError("sdpa_ready: the attention mask must still be on the host (call it before copying the batch)")
    out = dict(batch)
    if bool(mask.all()):  # a CPU tensor: no device involved
        del out["attention_mask"]
    else:
        out["attention_mask"] = mask.bool()[:, None, None, :]  # (B, 1, 1, L)
    return out


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


def _short(n: int | None, threshold: int) -> bool:
    """No progress bar for loops that finish at once (keeps smoke logs readable); shown otherwise."""
    import os

    return os.environ.get("CODESWITCH_NO_PROGRESS") == "1" or (n is not None and n < threshold)


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

    from ..core.encoders import DualEncoder

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
    from .tokens import pad_values

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
        from .tokens import tokenised_corpus

        tokens = tokenised_corpus(tokenizer, texts, n, max_length=max_length, desc=desc)
    start = out.open()
    bar = progress(total=n, initial=start, desc=desc, unit="passage", disable=_short(n, 20000))

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
        from .tokens import tokenised_arrays

        tokens = tokenised_arrays(tokenizer, [texts], max_length=max_length)
    out = np.empty((len(texts), encoder.config.hidden_size), dtype=np.float32)

    def sink(lo: int, hi: int, rows: np.ndarray) -> None:
        out[lo:hi] = rows

    _encode_windows(encoder, tokenizer, tokens, 0, len(texts), sink, max_length=max_length, batch_size=batch_size,
                    sort_window=sort_window, device=device, amp_dtype=amp_dtype, out_dtype=np.float32, prefetch=prefetch,
                    embed=embed, desc=desc, bucket_step=bucket_step)
    return out
