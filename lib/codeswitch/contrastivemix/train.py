"""Training mDPR, NaiveMix and ContrastiveMix dual encoders (ContrastiveMix §3, §4.3).

The model (DPR with separate encoders, as Tevatron trains it)::

    query   ──► query encoder   (mBERT) ──► last layer, first token ──► q ∈ R^H
    passage ──► passage encoder (mBERT) ──► last layer, first token ──► p ∈ R^H
    relevance(query, passage) = q · p          (no pooler, no normalisation)

One training step on a global batch of ``B`` queries, each with its first positive
passage and one hard negative (passage text = title + " " + text):

=================  ===========================================================================
method             what is encoded, and the loss
=================  ===========================================================================
mDPR               q, p⁺, p⁻;   L = L_ir(q, [p⁺; p⁻])
NaiveMix           as mDPR, but each query (with probability r_s) and, independently, each
                   query's passages (with probability r_s) are code-mixed (rate r_w) first
ContrastiveMix     as mDPR on English, plus every query's code-mixed copy q̃ (rate r_w);
                   L = L_ir + w · L_c(q, q̃)
=================  ===========================================================================

Table 3's ablations put the mixing on the query side, the passage side, or both
(:class:`TrainRun` ``mix_query`` / ``mix_passage``; for ContrastiveMix the passage
side aligns each positive passage with its mixed copy in the passage encoder).
Mixing is redrawn every epoch from a generator seeded by (seed, epoch, query id),
so a run is reproducible and independent of the order of batches; so is the hard
negative (a seeded shuffle of the query's negatives, advanced by one each epoch,
as Tevatron does).  The positive is always the query's first one.

Data parallelism (``accelerate launch``): each device encodes its slice of the
global batch; :func:`gather_with_grad` concatenates the slices of all devices while
keeping the autograd graph of the local one, so every query is scored against all
2B passages of the global batch (the loss is multiplied by the number of devices
because DDP averages gradients).  AdamW, a linear schedule with 10 % warm-up, no
gradient clipping; the last incomplete batch of an epoch is dropped.

The step (the fast path of issue 8, item 3)::

    host (background thread, one step ahead)           device (main thread)
    ─────────────────────────────────────────           ───────────────────────────────────────────
    rows of step t+1 → their ids (tokenised once per    step t: copy (non-blocking, from pinned memory)
      epoch) padded per encoder → padding mask made       → 2 forwards (query side, passage side)
      SDPA-ready → pin                                    → loss → backward → AdamW → schedule
                                                          → loss sums += (total, ir, align)   (on device)

* **tokenised once** (issue 24, item 4; :class:`_RunTokens`): at an epoch's first step every
  row's texts are drawn (mixing seeded per (seed, epoch, query), so the same texts the steps
  would draw); English originals read their ids from the tokenise-once cache
  (:mod:`codeswitch.common.tokens`: the queries, first positives and each epoch's hard
  negatives, tokenised once for every model of the grid that shares the tokenizer), and the
  run's code-mixed copies are tokenised in one call per group and epoch.  A step only pads
  ids (:func:`collate_ids`, the same tensors as tokenising its texts): no tokenizer call;

* **one forward per encoder**: every query-side group (English, code-mixed) is one
  batch, every passage-side group (positives, negatives, mixed positives) another,
  padded to its longest sequence (dynamic padding); with ``packing`` (the paper
  profile) each side's sentences are packed without padding into a fixed-shape batch
  (:func:`~codeswitch.common.fastpath.pack_features`: rows of 256 tokens, at most four
  row counts per side, :func:`pack_budgets`; per-sentence positions, block-diagonal
  attention), the same sentences and in-batch negatives, the same loss up to float
  summation order;
* **SDPA attention** (``attn_implementation="sdpa"``), the unused BERT/XLM-R pooler
  not built; the (B, L) padding mask is turned *on the host* into the (B, 1, 1, L)
  boolean mask SDPA reads (or dropped when a batch has no padding), so transformers
  never asks the GPU whether the mask is all ones (:func:`sdpa_ready`);
* **mixed precision** from the caller (``mixed_precision="bf16"``, or ``"fp16"`` with
  accelerate's loss scaling where bf16 is missing); the losses are computed in fp32;
* **no host synchronisation inside the step**: the per-epoch loss sums
  ``Σ_t (L_t, L_ir,t, L_c,t)`` stay on the device (float64) and are read once per
  epoch, ``history[k][epoch] = Σ_t L_k,t / n_batches`` — the same numbers the
  per-step ``float(loss)`` reads gave;
* **data never starves the GPU**: on CUDA a thread pool prepares step t+1's
  pinned tensors while step t runs.  Mixing is seeded per (seed, epoch, query id)
  and tokenisation is deterministic, so the prefetched run equals the plain one bit
  for bit (``prefetch=True`` on a CPU checks it; a test does).
"""

from __future__ import annotations

import copy
import math
import threading
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor

from .config import TrainRun
from ..core.distributed import gather_with_grad
from .data import passage_text
from .loss import contrastivemix_loss, ir_loss
from .mixing import _Batcher, negative_index
from ..core.progress import progress
from ..core.checkpoints import checkpoint_directory
from ..core.atomic import atomic_write_json
from ..core.utils import adamw_kind, loader_workers, quiet_transformers
from ..core.encoders import DualEncoder, load_dual_encoder
from ..common.fastpath import compile_for_training, cudagraph_step_begin, pack_features, prefetched, sampled_budgets, sdpa_ready, uses_sdpa
from ..common.tokens import tokenised_arrays

__all__ = [
    "batch_texts", "gather_with_grad", "train_dual_encoder", "encoder_fn", "quiet_transformers",
]


def batch_texts(spec: TrainRun, rows: Mapping[str, list], dictionary: Mapping[str, Sequence[str]] | None, epoch: int = 0) -> dict[str, list[str]]:
    """The texts one training step encodes for ``rows`` (a slice of the training set), by group.

    ``query`` / ``pos`` / ``neg`` (English, or NaiveMix-mixed), and for ContrastiveMix the
    mixed copies its alignment term reads (``query_mixed``; ``pos_mixed`` / ``neg_mixed``
    on the passage side) — exactly what :func:`train_dual_encoder` tokenises.
    """
    return {name: texts for name, (texts, _) in _Batcher(spec, dictionary).texts(rows, epoch).items()}


class _RunTokens:
    """Every text a run's steps read, tokenised before its steps (issue 24, item 4): no tokenizer call inside a step.

    Per epoch, once (at its first step), the batcher draws every step's texts, one
    global batch at a time in the epoch's order (:meth:`_Batcher.texts`: mixing is
    seeded per (seed, epoch, query), so these are the texts each step would draw).  A text that is the
    row's English original (query, first positive, the epoch's hard negative) reads
    its ids from the English columns, tokenised once through the tokenise-once cache
    (:func:`codeswitch.common.tokens.tokenised_arrays`) and so shared by every model of
    the grid that uses this tokenizer and seed; the rest (code-mixed copies, drawn for
    this run only) are tokenised in one call per (group, special tokens) and epoch,
    in memory.  A step then only pads its rows (:func:`collate_ids`): the same tensors
    :func:`~codeswitch.core.encoders.tokenize` gives for its texts.
    """

    CHUNK = 4096  # training rows read at a time while drawing an epoch's texts

    def __init__(self, spec: TrainRun, tokenizer, train_set, batcher: _Batcher):
        self.spec, self.tokenizer, self.train_set, self.batcher = spec, tokenizer, train_set, batcher
        self.n = len(train_set)
        self.qids = list(train_set["query_id"])
        self.english: dict[str, list[str]] | None = None  # every query and first positive (read after the batcher checked them)
        self.epochs: dict[int, dict] = {}
        self.lock = threading.Lock()

    def _rows(self, texts: list[str], max_length: int, special: bool, *, cache: bool = True) -> list[dict[str, np.ndarray]]:
        rows = tokenised_arrays(self.tokenizer, [texts], max_length=max_length, add_special_tokens=special, cache=cache)
        return [{name: rows.row(name, i) for name in rows.names} for i in range(len(rows))]

    def _negatives(self, epoch: int) -> list[str]:
        out = []
        for lo in range(0, self.n, self.CHUNK):
            for qid, negs in zip(self.qids[lo : lo + self.CHUNK], self.train_set[lo : lo + self.CHUNK]["negative_passages"]):
                n = negs[negative_index(self.spec.seed, qid, len(negs), epoch)]
                out.append(passage_text(n.get("title"), n["text"]))
        return out

    def epoch(self, epoch: int) -> dict[str, tuple[list[dict[str, np.ndarray]], list[bool]]]:
        """``{group: (ids of each training row, special tokens of each)}`` of ``epoch``, each row's ids
        ``{name: (tokens,) int32}``, in the batcher's group order (computed once per epoch)."""
        with self.lock:
            if epoch not in self.epochs:
                for old in [e for e in self.epochs if e < epoch - 1]:  # at most two epochs are in flight at once
                    del self.epochs[old]
                self.epochs[epoch] = self._draw(epoch)
            return self.epochs[epoch]

    def order(self, epoch: int) -> list[int]:
        """The epoch's order of the training rows (a seeded permutation; a CPU tensor: no device read)."""
        g = torch.Generator().manual_seed(self.spec.seed * 1000 + epoch)
        return torch.randperm(self.n, generator=g).tolist()

    def _draw(self, epoch: int) -> dict[str, tuple[list[dict[str, np.ndarray]], list[bool]]]:
        # the batcher sees each step's rows as the step would (one global batch at a time, in the epoch's order); rows of
        # the dropped incomplete batch are not drawn
        groups: dict[str, tuple[list, list[bool]]] = {}
        order, bs = self.order(epoch), self.spec.batch_size
        for b in range(self.n // bs):
            idx = order[b * bs : (b + 1) * bs]
            for name, (texts, special) in self.batcher.texts(self.train_set[idx], epoch).items():
                g = groups.setdefault(name, ([None] * self.n, [True] * self.n))
                for i, t, sp in zip(idx, texts, special):
                    g[0][i], g[1][i] = t, sp
        if self.english is None:
            self.english = {"query": list(self.train_set["query"]),
                            "pos": [passage_text(ps[0].get("title"), ps[0]["text"]) for ps in self.train_set["positive_passages"]]}
        english = {**self.english, "neg": self._negatives(epoch)}
        out = {}
        for name, (texts, special) in groups.items():
            max_length = self.spec.query_max_length if name.startswith("query") else self.spec.passage_max_length
            base = english.get(name)  # the group's English originals, row for row (None: a code-mixed copy)
            base_ids = None if base is None else self._rows(base, max_length, True)  # cached: once across the grid
            rows: list = [None] * len(texts)
            rest: dict[bool, list[int]] = {True: [], False: []}
            for i, (t, sp) in enumerate(zip(texts, special)):
                if t is None:
                    continue  # not drawn this epoch
                if sp and base is not None and t == base[i]:
                    rows[i] = base_ids[i]  # the English original: its cached ids
                else:
                    rest[sp].append(i)
            for sp, idx in rest.items():
                if idx:  # this run's own texts (code-mixed copies): one call per epoch, not cached
                    for i, r in zip(idx, self._rows([texts[i] for i in idx], max_length, sp, cache=False)):
                        rows[i] = r
            out[name] = (rows, special)
        return out


def pack_budgets(spec: TrainRun, tokens: _RunTokens, batch_size: int) -> dict[str, tuple[int, ...]]:
    """Packed-row budgets per encoder side (:func:`~codeswitch.common.fastpath.sampled_budgets`, at most four each):
    from the first epoch's token lengths of the side's groups; the largest budget holds any step whatever its lengths,
    so every epoch fits."""
    groups = tokens.epoch(0)
    out = {}
    for side, query in (("query", True), ("passage", False)):
        names = [n for n in groups if n.startswith("query") == query]
        drawn = [i for i in range(tokens.n) if groups[names[0]][0][i] is not None]
        lengths = np.array([[len(groups[n][0][i]["input_ids"]) for n in names] for i in drawn], dtype=np.int64)
        max_length = spec.query_max_length if query else spec.passage_max_length
        out[side] = sampled_budgets(lengths, batch_size, max_length=max_length, seed=spec.seed)
    return out


def collate_ids(tokenizer, rows: Sequence[Mapping[str, np.ndarray]], special: Sequence[bool]) -> dict[str, Tensor]:
    """Token id rows padded into one batch: what :func:`~codeswitch.core.encoders.tokenize` returns for their texts
    (padded to the longest on the tokenizer's padding side; ``token_type_ids`` only when every row has its special
    tokens, as there)."""
    names = [n for n in rows[0] if n in ("input_ids", "token_type_ids", "attention_mask")]
    if not all(special):
        names = [n for n in names if n != "token_type_ids"]
    from ..common.tokens import pad_rows, pad_values

    pad = pad_values(tokenizer)
    left = getattr(tokenizer, "padding_side", "right") == "left"
    return {name: pad_rows([r[name] for r in rows], pad[name], left=left) for name in names}


# --------------------------------------------------------------------------- training
def train_dual_encoder(
    train_set,
    spec: TrainRun,
    *,
    backbone: "str | Path | tuple[DualEncoder, object]",
    out_dir: Path | None = None,
    dictionary: Mapping[str, Sequence[str]] | None = None,
    device: str = "auto",
    mixed_precision: str = "no",
    desc: str = "train",
    prefetch: bool | None = None,
    prefetch_workers: int | None = None,
) -> tuple[DualEncoder, object, dict]:
    """Train a dual encoder on ``train_set`` (Tevatron format); save it to ``out_dir`` (safetensors) if given.

    ``spec`` is the plan's :class:`~codeswitch.contrastivemix.config.TrainRun`, as it is.
    A hand-written loop, not the HF Trainer (:mod:`codeswitch.core.training`): the method
    needs two encoders in one step, the passages of every device gathered *with* the
    local graph (:func:`gather_with_grad`, each query scored against the whole global
    batch), and the code-mixing redrawn per (seed, epoch, query) inside the batching —
    none of which the Trainer's single-model, per-device-loss step can express.

    ``backbone`` is a folder or hub id both encoders start from, or an already
    loaded ``(DualEncoder, tokenizer)`` pair, which is copied (not modified): a grid of
    runs then reads the backbone from disk once.  ``prefetch``: prepare the next
    step's tensors in a background thread (default: on CUDA only; the result is the
    same either way).

    Returns ``(model, tokenizer, stats)``: the trained :class:`DualEncoder` (unwrapped),
    its tokenizer, and ``{"steps", "epochs", "loss": [mean total loss per epoch],
    "ir": [...], "align": [...]}``.  ``out_dir`` is written atomically (a temporary
    sibling renamed into place).
    """
    accelerator = _accelerator(device, mixed_precision)
    world, rank = accelerator.num_processes, accelerator.process_index
    local_bs, n_batches = _batch_sizes(spec, len(train_set), world)
    model, tokenizer = _start_model(spec, backbone, seed_cuda=accelerator.device.type == "cuda")
    sdpa = uses_sdpa(model.query_model) and uses_sdpa(model.passage_model)
    cuda = accelerator.device.type == "cuda"
    total = n_batches * spec.num_train_epochs
    optimizer, scheduler = _optimiser(spec, model, accelerator, total)
    model, optimizer = accelerator.prepare(model, optimizer)
    tokens = _RunTokens(spec, tokenizer, train_set, _Batcher(spec, dictionary))
    budgets = pack_budgets(spec, tokens, local_bs) if spec.packing else None  # {side: packed-row counts}
    if getattr(spec, "torch_compile", None):  # both encoders' training forwards (packed: fixed shapes, whole graphs)
        compile_for_training(accelerator.unwrap_model(model), fixed_shapes=budgets is not None, mode=spec.torch_compile)
    host_step = _host_steps(spec, tokens, tokenizer, budgets, rank=rank, local_bs=local_bs, sdpa=sdpa, cuda=cuda)
    model.train()
    # Short runs (the smoke profile) print no bar of their own: the caller's bar over models covers them.
    bar = progress(total=total, desc=desc, unit="step", disable=total < 200 or not accelerator.is_main_process)
    steps = ((epoch, b) for epoch in range(spec.num_train_epochs) for b in range(n_batches))
    # GPU: threads pad the next steps' ids (and draw and tokenise an epoch's texts at its first
    # step); CPU: in line.
    batches = prefetched(host_step, steps, enabled=cuda if prefetch is None else prefetch,
                         workers=loader_workers(cuda) if prefetch_workers is None else prefetch_workers)
    try:
        history = _epochs(spec, model, accelerator, optimizer, scheduler, batches, bar, n_batches=n_batches, local_bs=local_bs)
    finally:
        batches.close()  # stops the background thread (also when a step fails)
    bar.close()
    unwrapped = _save(spec, model, tokenizer, accelerator, out_dir, history)
    return unwrapped, tokenizer, {"steps": total, "epochs": spec.num_train_epochs, **history}


def _accelerator(device: str, mixed_precision: str):
    """A fresh :class:`accelerate.Accelerator` (``device="cpu"``: on the CPU) in ``mixed_precision``."""
    from accelerate import Accelerator

    # accelerate keeps one AcceleratorState per process: a run before this one (another
    # model of the grid, or a bf16 HF Trainer in the same kernel) would otherwise pin its
    # precision and refuse ours.  Reset it as TrainingArguments does; the process group
    # of a distributed launch (PartialState) is kept.
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state(reset_partial_state=False)
    return Accelerator(cpu=(device == "cpu"), mixed_precision=mixed_precision)


def _batch_sizes(spec: TrainRun, n_rows: int, world: int) -> tuple[int, int]:
    """``(queries per device and step, steps per epoch)``: the global batch split over ``world`` devices."""
    if spec.batch_size % world:
        raise ValueError(f"the global batch ({spec.batch_size}) must be divisible by the number of devices ({world})")
    local_bs = spec.batch_size // world
    n_batches = n_rows // spec.batch_size  # the last incomplete batch is dropped, as DPR does
    if n_batches == 0:
        raise ValueError(f"{n_rows} training queries do not fill one batch of {spec.batch_size}")
    return local_bs, n_batches


def _start_model(spec: TrainRun, backbone, *, seed_cuda: bool) -> tuple[DualEncoder, object]:
    """The seeded start: ``backbone`` copied (a loaded pair) or read from disk, in training mode."""
    from ..core.utils import set_seed

    set_seed(spec.seed, deterministic=seed_cuda)
    if isinstance(backbone, tuple):
        model, tokenizer = copy.deepcopy(backbone[0]), backbone[1]
    else:
        model, tokenizer = load_dual_encoder(backbone)
    model.train()
    return model, tokenizer


def _optimiser(spec: TrainRun, model, accelerator, total: int):
    """AdamW and the linear schedule with warm-up over ``total`` optimisation steps."""
    from transformers import get_linear_schedule_with_warmup

    # Fused AdamW on every device (one kernel for all parameters; on 2 CPU cores 4 ms a step against the multi-tensor
    # update's 26 ms, with ~7.6 M parameters: measured; since RESULT_VERSION 4)
    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=spec.weight_decay,
                                  **adamw_kind(accelerator.device, cpu="fused"))
    # Stepped by hand once per optimisation step (accelerate's scheduler wrapper
    # would step it once per device).
    scheduler = get_linear_schedule_with_warmup(optimizer, math.ceil(spec.warmup_ratio * total), total)
    return optimizer, scheduler


def _host_steps(spec: TrainRun, tokens: "_RunTokens", tokenizer, budgets: dict | None, *, rank: int, local_bs: int, sdpa: bool,
                cuda: bool):
    """``host_step(epoch, b)``: what the host prepares for a step (the prefetching threads call it)."""
    orders: dict[int, list[int]] = {}
    orders_lock = threading.Lock()

    def host_step(epoch: int, b: int) -> tuple[dict[str, list[str]], dict[str, dict[str, Tensor]]]:
        """Step ``b`` of ``epoch`` on the host: its rows' token ids (drawn and tokenised once per epoch) padded per
        encoder, SDPA-ready (or packed), pinned on CUDA."""
        with orders_lock:  # several threads prepare steps; at most two epochs are in flight at once
            if epoch not in orders:
                for old in [e for e in orders if e < epoch - 1]:
                    del orders[old]
                orders[epoch] = tokens.order(epoch)
        global_idx = orders[epoch][b * spec.batch_size : (b + 1) * spec.batch_size]
        local_idx = global_idx[rank * local_bs : (rank + 1) * local_bs]
        sides, inputs = step_batches(spec, tokenizer, tokens.epoch(epoch), local_idx, budgets, sdpa=sdpa)
        return sides, {side: {k: v.pin_memory() for k, v in batch.items()} for side, batch in inputs.items()} if cuda else inputs

    return host_step


def step_batches(spec: TrainRun, tokenizer, groups: Mapping, idx: Sequence[int], budgets: dict | None, *, sdpa: bool):
    """A step's encoder inputs from the epoch's ``groups`` (rows ``idx``): ``(sides, inputs)``, ``sides[name]`` the
    groups ``inputs[name]`` holds, in order.

    One forward per encoder: every query-side group (English, mixed) in one batch, every passage-side group
    (positives, negatives, mixed) in another (packed with ``budgets``).  ``mixed_dropout: shared`` (padded only): the
    code-mixed copies apart, ``query_mixed`` / ``passage_mixed``, padded to their originals' length, so that they can
    be encoded with their originals' dropout masks (:func:`_encode`)."""
    shared = spec.mixed_dropout == "shared"
    sides, inputs = {}, {}
    for side in ("query", "passage"):
        names = [n for n in groups if n.startswith("query") == (side == "query")]
        parts = [[n for n in names if not n.endswith("_mixed")], [n for n in names if n.endswith("_mixed")]] if shared else [names]
        parts = [p for p in parts if p]
        batch = collate_ids(tokenizer, [groups[n][0][i] for p in parts for n in p for i in idx],
                            [groups[n][1][i] for p in parts for n in p for i in idx])  # one length for originals and copies
        if budgets is not None:  # one fixed-shape forward: the side's sentences packed, block-diagonal attention
            sides[side], inputs[side] = names, pack_features([batch], budgets[side])
            continue
        start = 0
        for key, part in zip((side, f"{side}_mixed"), parts):
            n = len(part) * len(idx)
            piece = {k: v[start : start + n] for k, v in batch.items()}  # (n, L): the originals, then the copies
            sides[key], inputs[key], start = part, sdpa_ready(piece) if sdpa else piece, start + n
    return sides, inputs


def _epochs(spec: TrainRun, model, accelerator, optimizer, scheduler, batches, bar, *, n_batches: int, local_bs: int) -> dict:
    """Every epoch's steps; ``{"loss", "ir", "align"}``: each epoch's mean losses (the device read once per epoch)."""
    history = {"loss": [], "ir": [], "align": []}
    keys = ("loss", "ir", "align")
    sums = torch.zeros(len(keys), dtype=torch.float64, device=accelerator.device)  # Σ_t (L, L_ir, L_c) of the epoch
    cuda = accelerator.device.type == "cuda"
    for epoch in range(spec.num_train_epochs):
        sums.zero_()
        for b in range(n_batches):
            sides, host = next(batches)
            cudagraph_step_begin(getattr(spec, "torch_compile", None))  # reduce-overhead: a new step for the CUDA graphs
            inputs = {side: {k: v.to(accelerator.device, non_blocking=cuda) for k, v in batch.items()} for side, batch in host.items()}
            losses = _step_losses(spec, model, inputs, sides, local_bs)
            accelerator.backward(losses["total"] * accelerator.num_processes)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            sums += torch.stack([losses[name].detach().double() for name in ("total", "ir", "align")])  # stays on the device
            bar.update(1)
        means = (sums / n_batches).tolist()  # the epoch's one read of the device
        for k, v in zip(keys, means):
            history[k].append(v)
        bar.set_postfix_str(f"epoch {epoch + 1}: loss {history['loss'][-1]:.4f}")
    return history


def _step_losses(spec: TrainRun, model, inputs: dict, sides: dict[str, list[str]], local_bs: int) -> dict[str, Tensor]:
    """One forward per encoder, every device's embeddings gathered, the method's loss: ``{"total", "ir", "align"}``."""
    out = _encode(spec, model, inputs)  # {"query": (n_q·b, H), "passage": (n_p·b, H)} (and the copies apart, if shared)
    emb = {}
    for side, names in sides.items():
        for name, chunk in zip(names, out[side].split(local_bs)):  # (b, H) each, in group order
            emb[name] = gather_with_grad(chunk)  # (B, H)
    if spec.method == "contrastivemix":
        return contrastivemix_loss(
            emb["query"], emb["pos"], emb["neg"], emb.get("query_mixed"),
            weight=spec.align_weight, p_mixed=emb.get("pos_mixed"), n_mixed=emb.get("neg_mixed"),
        )
    ir = ir_loss(emb["query"], emb["pos"], emb["neg"])
    return {"ir": ir, "align": ir.new_zeros(()), "total": ir}


def _encode(spec: TrainRun, model, inputs: dict) -> dict[str, Tensor]:
    """The step's forwards: one call for every batch of ``inputs`` (independent dropout: each row its own masks), or,
    with ``mixed_dropout: shared``, each encoder's code-mixed copies encoded after its originals from the same random
    state, at the same shape: the same dropout masks, as the released code's shared dropout key (tevax/training.py)."""
    if spec.mixed_dropout != "shared":
        return model(**inputs)
    out = {}
    for side in ("query", "passage"):
        device = inputs[side]["input_ids"].device
        state = torch.cuda.get_rng_state(device) if device.type == "cuda" else torch.get_rng_state()
        out |= model(**{side: inputs[side]})
        if f"{side}_mixed" in inputs:
            torch.cuda.set_rng_state(state, device) if device.type == "cuda" else torch.set_rng_state(state)
            out |= model(**{f"{side}_mixed": inputs[f"{side}_mixed"]})
    return out


def _save(spec: TrainRun, model, tokenizer, accelerator, out_dir: Path | None, history: dict) -> DualEncoder:
    """The trained model unwrapped (in eval mode), saved to ``out_dir`` (safetensors, atomically) by the main process."""
    accelerator.wait_for_everyone()
    unwrapped = accelerator.unwrap_model(model)
    if out_dir is not None and accelerator.is_main_process:
        with checkpoint_directory(out_dir) as tmp, quiet_transformers():
            unwrapped.save(tmp, tokenizer)
            atomic_write_json(tmp / "train.json", {"spec": spec.key(), **history})
    accelerator.wait_for_everyone()
    unwrapped.eval()
    return unwrapped


def encoder_fn(model: DualEncoder, tokenizer, side: str, *, max_length: int, batch_size: int, device, amp_dtype=None,
               sort_window: int):
    """A function ``texts -> (len, H) float32 array`` that embeds with the ``side`` ("query" | "passage") encoder.

    Texts are encoded by :func:`codeswitch.common.fastpath.encode_texts`: sorted by
    token length within windows of ``sort_window`` batches (less padding), rows
    returned in the order given (``sort_window=0``: batches in the given order).  Each
    list is tokenised once per (tokenizer, ``max_length``) (:func:`codeswitch.common.tokens.tokenised_arrays`):
    every model of a grid that encodes the same queries reads their ids from the cache.
    """
    from ..common.fastpath import encode_texts

    encoder = model.query_model if side == "query" else model.passage_model
    encoder.eval().to(device)

    def encode(texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        return encode_texts(encoder, tokenizer, texts, max_length=max_length, batch_size=batch_size, device=device,
                            amp_dtype=amp_dtype, sort_window=sort_window,
                            tokens=tokenised_arrays(tokenizer, [texts], max_length=max_length))

    return encode
