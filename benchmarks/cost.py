"""Estimated GPU-hours of each notebook in the paper profile, from the benchmark's measured rates.

``python -m benchmarks cost runs/bench/bench.json [--profile paper]`` prints one
Markdown table.  The method (every input is printed beside the result):

* **runs**: the notebook's own grid, read from its experiment module under the
  profile (ConCSE ``plan(profile, studies)``, Koglish-GLUE's tasks ×
  backbones × seeds × trainings, ContrastiveMix ``plan``) — so the estimate follows
  the configuration, not a hand count;
* **data sizes**: ConCSE Table 1 (Koglish-NLI 218,255 triplets; the GLUE tasks'
  train/dev/test; the STS sets) and, for ContrastiveMix, the NQ training questions
  and the Mr.TyDi / MIRACL corpus sizes in :data:`RETRIEVAL_SIZES` (rounded to
  0.1 M passages; sources beside it);
* **rates**: the measured step time of (a), (b), (c) and the passages/s of (d); a
  backbone other than the measured one is scaled by its matmul weights per token
  (:data:`LINEAR_PARAMS`, i.e. the same MFU is assumed); a run's evaluation is
  counted as forward passes at a third of the training cost per token;
* 01, 06, 07 (not measured by the harness): (b)'s training rate per token, scaled per
  backbone, with the papers' data sizes (:data:`SIZES_0607`) and every row at the
  run's maximum length (an upper bound), see :func:`construction_hours`,
  :func:`alignment_hours`, :func:`calbert_hours`;
* **steps**: each run's optimiser steps (epochs × batches of its training rows at
  its batch size; a fractional epoch count stops early, as the HF Trainer does), and
  a **fixed cost per step** (launches, the training loop) measured by (e) — a
  CalBERT step at batch 4, nearly nothing else — per transformer layer, so a run of
  many small steps is priced as what it is; (b)'s per-token rate is then net of
  that floor.  A report without (e) prices per token only (said under the table);
* ContrastiveMix: each model's step is (c)'s scaled by the tokens of the groups its
  method encodes (:func:`ir_groups`: 3 for mDPR and NaiveMix, 4 query-side, up to 6
  for passage-side ContrastiveMix), not (c)'s four;
* not counted: data loading, BM25, parsing, t-SNE, start-up.

Example::

    python -m benchmarks --full --out runs/bench
    python -m benchmarks cost runs/bench/bench.json
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import lengths as L

# The paper backbones' shapes (their model cards' configs), from which every per-model number is derived: the matmul
# weights per token (the FLOPs model's N: encoder layers 4h² + 2hf, decoder layers 8h² + 2hf), the transformer layers
# (a step's fixed cost, its launches, grows with them) and the trainable parameters (AdamW's memory traffic).
@dataclass(frozen=True)
class Arch:
    layers: int  # encoder layers
    hidden: int
    ffn: int
    vocab: int
    decoder_layers: int = 0
    embedding: int | None = None  # a factorised embedding's width (ALBERT), else the hidden size
    shared: bool = False  # ALBERT: one layer's weights shared by every layer (compute counts every layer)

    @property
    def linear(self) -> int:
        h, f = self.hidden, self.ffn
        return self.layers * (4 * h * h + 2 * h * f) + self.decoder_layers * (8 * h * h + 2 * h * f)

    @property
    def all_layers(self) -> int:
        return self.layers + self.decoder_layers

    @property
    def params(self) -> int:
        """Trainable parameters, approximately (matmul weights + embedding tables; biases and norms left out)."""
        h, f, e = self.hidden, self.ffn, self.embedding or self.hidden
        emb = self.vocab * e + (e * h if e != h else 0)
        layers = (4 * h * h + 2 * h * f) if self.shared else self.linear
        return emb + layers


def _enc(layers: int, h: int, f: int) -> int:
    return layers * (4 * h * h + 2 * h * f)


ARCH: Mapping[str, Arch] = {
    "bert-base-multilingual-cased": Arch(12, 768, 3072, 119547),
    "bert-base-multilingual-uncased": Arch(12, 768, 3072, 105879),
    "xlm-roberta-base": Arch(12, 768, 3072, 250002),
    "xlm-roberta-large": Arch(24, 1024, 4096, 250002),
    "facebook/mbart-large-50": Arch(12, 1024, 4096, 250054, decoder_layers=12),
    # 01: the translator (NLLB-200 distilled 600M: 12 + 12 layers, d 1024, ffn 4096, the mBART shape)
    "facebook/nllb-200-distilled-600M": Arch(12, 1024, 4096, 256206, decoder_layers=12),
    # 06, 07 backbones
    "bert-base-cased": Arch(12, 768, 3072, 28996),
    "bert-base-uncased": Arch(12, 768, 3072, 30522),
    "roberta-base": Arch(12, 768, 3072, 50265),
    "distilbert-base-uncased": Arch(6, 768, 3072, 30522),
    "distilbert-base-cased": Arch(6, 768, 3072, 28996),
    # ALBERT base: one layer's weights shared by 12 layers; compute counts every layer; 128-wide factorised embedding
    "ai4bharat/indic-bert": Arch(12, 768, 3072, 200000, embedding=128, shared=True),
}
#: matmul weights per token of each backbone (derived from :data:`ARCH`)
LINEAR_PARAMS: Mapping[str, int] = {m: a.linear for m, a in ARCH.items()}
#: transformer layers of each backbone (derived from :data:`ARCH`: one table, so no backbone can miss its layers)
LAYERS: Mapping[str, int] = {m: a.all_layers for m, a in ARCH.items()}
#: trainable parameters of each backbone (derived from :data:`ARCH`)
PARAMS: Mapping[str, int] = {m: a.params for m, a in ARCH.items()}

# The physical limit: the H100 SXM's dense bf16 peak and HBM3 bandwidth (NVIDIA's H100 datasheet), and AdamW's memory
# traffic per parameter and step: fp32 master weights, gradients and both moments read (16 bytes), weights and both
# moments written (12 bytes) -- the fused update's minimum; it cannot overlap the step's matmuls (it runs after them).
H100_PEAK_TFLOPS = 989.0
H100_BYTES_PER_S = 3.35e12
ADAMW_BYTES_PER_PARAM = 16 + 12


# ContrastiveMix data sizes.  NQ: DPR's filtered training questions (Karpukhin et al.
# 2020, Table 1), which Tevatron/wikipedia-nq holds.  Corpora: passages, in millions,
# rounded to 0.1 M.  MIRACL: the MIRACL paper's Table 1 (zh 4,934,368; fa 2,207,172;
# es 10,373,953; fr 14,636,953; hi 506,264), checked 2026-11.  Mr.TyDi v1.1: the row
# counts the Hub shows for castorini/mr-tydi-corpus (ar 2.11 M, bn 304 k, fi 1.91 M,
# id 1.47 M, ja 7.0 M, ko 1.5 M, th 569 k), checked 2026-11; ru is the Mr.TyDi paper's
# 9.6 M — the Hub viewer shows 8.01 M rows there, but its row counts are cut short for
# the largest sets (English: 10.7 M shown against 32.9 M), and MIRACL's Russian corpus
# of the same Wikipedia has 9.54 M.  Override any of them with --sizes FILE.
RETRIEVAL_SIZES: dict = {
    "nq_train_queries": 58880,
    "mrtydi_corpus_millions": {"ar": 2.1, "bn": 0.3, "fi": 1.9, "id": 1.5, "ja": 7.0, "ko": 1.5, "ru": 9.6, "th": 0.6},
    "miracl_corpus_millions": {"zh": 4.9, "fa": 2.2, "es": 10.4, "fr": 14.6, "hi": 0.5},
    # Queries per split, only for a reduced corpus (contrastivemix.corpus_sample): from memory of the Mr.TyDi v1.1
    # paper's Table 1 and the MIRACL paper's Table 1; --sizes overrides them.  Checked on 2026-11-29 against stored copies
    # of ir-datasets' cards (irds/mr-tydi_*): id dev 1,224 (its own card), and ko and bn through their totals (ko 2,019
    # queries = train 1,295 + dev 303 + test 421; bn 2,264 = 1,713 + 440 + 111).  The others and MIRACL's: not checked.
    "mrtydi_queries": {"ar": {"dev": 3115, "test": 1081}, "bn": {"dev": 440, "test": 111}, "fi": {"dev": 1738, "test": 1254},
                       "id": {"dev": 1224, "test": 829}, "ja": {"dev": 928, "test": 720}, "ko": {"dev": 303, "test": 421},
                       "ru": {"dev": 1375, "test": 995}, "th": {"dev": 807, "test": 1190}},
    "miracl_queries": {"zh": {"train": 1312, "dev": 393}, "fa": {"train": 2107, "dev": 632}, "es": {"train": 2162, "dev": 648},
                       "fr": {"train": 1143, "dev": 343}, "hi": {"train": 1169, "dev": 350}},
}
#: judged passages per query assumed for a reduced corpus's size (an upper bound: Mr.TyDi judges about one passage a
#: query, MIRACL about ten; an assumption, not measured)
JUDGED_PER_QUERY = 10


def eval_queries(e, sizes: Mapping) -> tuple[float, float]:
    """(reported, tuning) queries evaluation ``e`` reads: each split's count in ``sizes``, cut to ``eval_max_queries``
    (the seeded sample of each split), the tuning split then to ``tune_max_queries``."""
    b = e.bm25
    counts = sizes.get(f"{b.benchmark}_queries", {}).get(b.language, {})
    report, tune = counts.get(b.report_split, math.nan), counts.get(b.tune_split, math.nan)
    cap = getattr(b, "eval_max_queries", None)
    if cap is not None:
        report, tune = min(report, cap), min(tune, cap)
    if b.tune_max_queries is not None:
        tune = min(tune, b.tune_max_queries)
    return report, tune


def reduced_passages(e, sizes: Mapping, corpus: float) -> float:
    """Passages the dense retriever of evaluation ``e`` encodes: the whole ``corpus``, or under ``corpus_sample`` at most
    (reported + tuning queries, :func:`eval_queries`) x (BM25's top ``depth`` + :data:`JUDGED_PER_QUERY`) + the random
    sample (an upper bound: BM25's lists of two queries overlap), never more than the corpus."""
    sample = getattr(e, "corpus_sample", None)
    if sample is None:
        return corpus
    return min(corpus, sum(eval_queries(e, sizes)) * (e.depth + JUDGED_PER_QUERY) + sample)


def query_passages(e, sizes: Mapping, *, reported_only: bool = False) -> float:
    """The query encoding of evaluation ``e`` in passage encodings: its reported and tuning queries (:func:`eval_queries`;
    ``reported_only``: the reported split's alone, as the untrained baseline of ``contrastivemix.retrieval.untrained_scores``
    encodes them) at the encoding rate per token, a query ``query_max_length`` tokens against a passage's
    ``passage_max_length`` (an upper bound: both padded to their maximum)."""
    m = e.model
    report, tune = eval_queries(e, sizes)
    return (report if reported_only else report + tune) * m.query_max_length / m.passage_max_length


#: the rows of the step each trainer runs under the paper profile, which turns packing on (``<section>.packing``) and
#: leaves ``torch_compile`` off: the packed row where the run measured it, else the padded one (older runs)
PAPER_STEPS: Mapping[str, str] = {"a": "a_pk", "b": "b_pk", "c": "c_pk", "e": "e_pk", "f": "f_pk", "b_hf": "b_hf_pk"}


def paper_step(rows: Mapping[str, Mapping], key: str) -> Mapping | None:
    """The measured row of hot path ``key`` as the paper profile runs it (:data:`PAPER_STEPS`), or None."""
    packed = PAPER_STEPS.get(key)
    row = rows.get(packed) if packed else None
    if row is not None and row.get("step_time_s"):
        return row
    return rows.get(key)


def fastest_step(rows: Mapping[str, Mapping], key: str) -> Mapping | None:
    """The fastest measured variant of hot path ``key`` a trainer can run (padded or packed, eager or compiled:
    ``key``, ``key_compiled``, ``key_pk``, ``key_pk_c``, ``key_pk_cg`` with CUDA graphs), for the targets; None if none was measured."""
    found = [rows[k] for k in (key, f"{key}_compiled", f"{key}_pk", f"{key}_pk_c", f"{key}_pk_cg") if k in rows and rows[k].get("step_time_s")]
    return min(found, key=lambda r: r["step_time_s"]) if found else rows.get(key)


def _sq_mean(dist, max_length: int) -> float:
    """E[min(L, max_length)²] of a length distribution (attention's QKᵀ and AV grow with each row's length squared)."""
    import numpy as np

    return float(np.sum(np.minimum(dist.values, max_length) ** 2 * dist.probs))


@dataclass(frozen=True)
class Rates:
    """What the benchmark measured, per unit of work.

    Every training step is priced as ``max(fixed cost, compute) + AdamW`` (:func:`step_s`): the host dispatches a step's
    kernels asynchronously, so a step takes the longer of its host time (the fixed cost, from (e)) and its device time
    (its model FLOPs at a measured rate); AdamW's update is added only where it is priced apart (the physical limit:
    memory traffic at the H100's bandwidth; a measured step already holds its own update).
    """

    concse_s_per_sentence: float  # (a): training seconds per sentence, measured backbone
    concse_linear: int
    glue_s_per_token: float  # (b): training seconds per non-padding token (the whole measured step's, attention included)
    glue_linear: int
    ir_s_per_step: float  # (c): one step at the measured batch
    ir_batch: int
    encode_passages_per_s: float  # (d)
    device: str
    full: bool
    # The fixed cost of a training step per transformer layer (launches, the loop), from (e): a CalBERT step at
    # batch 4 is almost nothing but it.  None: the report has no (e) row; steps are then priced by their compute only.
    floor_s_per_layer: float | None = None
    paths: tuple[str, ...] = ()  # the measured rows the rates come from (the packed ones where measured: PAPER_STEPS)
    # ContrastiveMix: mean tokens of a query and of a passage (the length table, at the measured maximum lengths)
    ir_query_tokens: float = 1.0
    ir_passage_tokens: float = 1.0
    # (b)'s model FLOPs per token (6·N + attention at its own lengths): the per-token rate of another model is scaled by
    # its FLOPs per token at its own row length (:func:`_train_s`)
    glue_flops_per_token: float = 0.0
    # (f): the measured alignment step (all layers, mBERT-base, ``align_batch`` pairs) and its non-padding tokens per
    # sentence; None: no (f) row, alignment steps are priced from (b) like any step
    align_s_per_step: float | None = None
    align_batch: int = 8
    # tokens per row of the short-sentence sets, as the harness measured them ((f): IITB pairs; (e): SAIL sentences);
    # None: every row at the run's maximum length (an upper bound)
    align_tokens_per_row: float | None = None
    finetune_tokens_per_row: float | None = None
    # the share of padding in (b)'s padded, length-grouped step: mBART trains padded (its head reads the decoder)
    glue_padding: float = 0.0
    # seconds per trainable parameter and step of the AdamW update, when priced apart (the physical limit); 0: inside
    # the measured step
    adamw_s_per_param: float = 0.0
    # seconds per run outside its steps and its priced forward passes (data loading, set-up): measured_run_overhead's
    # remainder; with load_save_s_per_param, a run's overhead is run_s(model): loading + saving its backbone + this
    run_overhead_s: float = 0.0
    # notebook -> seconds per training run outside its training span, loading and its own evaluations included, measured
    # whole on a GPU at paper size (measured_notebook_overheads): replaces run_overhead_s and the loading for that
    # notebook's runs (saving, when a run saves, is still added at save_s_per_param)
    run_overhead_by_notebook: Mapping[str, float] = field(default_factory=dict)
    # seconds per parameter to load a backbone (from_pretrained) and save it once (save_pretrained): host work, measured
    # on a CPU (docs/bench/cpu/run_overhead.json), taken unscaled on a GPU machine's host (an assumption)
    load_save_s_per_param: float = 0.0
    # the saving part of load_save_s_per_param: a run whose section keeps no model (keep_models: none) and whose
    # model no later stage reads does not pay it (:func:`run_s`'s ``saves``)
    save_s_per_param: float = 0.0
    # a measured whole HF-Trainer step ((b_hf), packed where measured) and its model's layers: no fixed cost of a model
    # with at most that many layers exceeds it (:func:`_floor_s`)
    floor_cap_s: float | None = None
    floor_cap_layers: int = 0
    # per-backbone measured rates (:func:`cpu_steps_report`): an :class:`Arch` -> (training, forward) multipliers of the
    # time its FLOPs take at the report's own rate; a backbone not in it runs at that rate (1, 1)
    arch_scale: Mapping = field(default_factory=dict)

    @classmethod
    def from_report(cls, report: Mapping) -> "Rates":
        rows = {m["key"]: m for m in report["measurements"] if m.get("status") == "ok"}
        missing = [k for k in ("a", "b", "c", "d") if k not in rows]
        if missing:
            raise ValueError(f"the benchmark report lacks measured hot path(s) {missing}")
        sizes, models = report["sizes"], report["models"]
        concse_arch, glue_arch = models["concse"], models["glue"]
        layers_cap = models.get("layers_cap")
        lyr = lambda a: min(a["num_hidden_layers"], layers_cap or a["num_hidden_layers"])  # noqa: E731
        lin = lambda a: _enc(lyr(a), a["hidden_size"], a["intermediate_size"])  # noqa: E731
        padded_b = rows["b"]
        chosen = {k: paper_step(rows, k) for k in ("a", "b", "c", "e", "f") if paper_step(rows, k) is not None}
        rows = {**rows, **chosen}
        paths = tuple(r["key"] for r in chosen.values())
        floor = None
        e = rows.get("e")
        if e is not None and e.get("step_time_s") is not None and (e.get("extra") or {}).get("layers"):
            floor = e["step_time_s"] / e["extra"]["layers"]
        b = rows["b"]
        glue_len = sizes.get("glue_max_length", 230)
        pairs = L.glue_pairs()
        glue_flops = 6 * lin(glue_arch) + 12 * lyr(glue_arch) * glue_arch["hidden_size"] * _sq_mean(pairs, glue_len) / pairs.mean(glue_len)
        q = L.mrtydi("queries").mean(sizes.get("query_max_length", 32))
        p = L.mrtydi("passages").mean(sizes.get("passage_max_length", 128))
        f = rows.get("f")
        hf = paper_step(rows, "b_hf")

        def per_row(r):
            return r["tokens_per_s"] / r["sequences_per_s"] if r and r.get("tokens_per_s") and r.get("sequences_per_s") else None

        return cls(
            concse_s_per_sentence=rows["a"]["step_time_s"] / (6 * sizes["concse_batch"]),
            concse_linear=lin(concse_arch),
            glue_s_per_token=1.0 / b["tokens_per_s"],
            glue_linear=lin(glue_arch),
            ir_s_per_step=rows["c"]["step_time_s"],
            ir_batch=sizes["ir_batch"],
            encode_passages_per_s=rows["d"]["sequences_per_s"],
            device=report["environment"]["device"],
            full=concse_arch["hidden_size"] >= 768 and not layers_cap,
            floor_s_per_layer=floor,
            paths=paths,
            ir_query_tokens=q,
            ir_passage_tokens=p,
            glue_flops_per_token=glue_flops,
            align_s_per_step=f["step_time_s"] if f and f.get("step_time_s") else None,
            align_tokens_per_row=per_row(f) or per_row(rows.get("f_tokens")),
            finetune_tokens_per_row=per_row(e),
            glue_padding=float(padded_b.get("padding") or 0.0),
            adamw_s_per_param=float(report.get("adamw_s_per_param", 0.0)),
            run_overhead_s=float(report.get("run_overhead_s", 0.0)),
            run_overhead_by_notebook={str(k): float(v) for k, v in (report.get("run_overhead_by_notebook") or {}).items()},
            load_save_s_per_param=float(report.get("load_save_s_per_param", 0.0)),
            save_s_per_param=float(report.get("save_s_per_param", 0.0)),
            floor_cap_s=hf["step_time_s"] if floor is not None and hf and hf.get("step_time_s") else None,
            floor_cap_layers=lyr(glue_arch),
            arch_scale={ARCH[m]: (float(t), float(f)) for m, t, f in report.get("arch_scale", ())},
        )


def parse_mfu(text: str) -> float | dict[str, float]:
    """``--assume-mfu``: one MFU for every step (``0.4``) or one per hot path (``a=0.33,b=0.27,c=0.35``)."""
    if "=" not in text:
        return float(text)
    out = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key = key.strip()
        if key not in ("a", "b", "c"):
            raise ValueError(f"--assume-mfu: unknown hot path {key!r} in {text!r} (per path: a, b, c; the rest follow b)")
        out[key] = float(value)
    missing = {"a", "b", "c"} - set(out)
    if missing:
        raise ValueError(f"--assume-mfu {text!r}: give every one of a, b, c (missing: {', '.join(sorted(missing))})")
    return out


def assumed_report(mfu: float | Mapping[str, float], peak_tflops: float, passages_per_s: float | None,
                   length_table: str | None = None, floor_s_per_step: float = 0.0, *, measured: Mapping | None = None,
                   bytes_per_s: float | None = None, run_overhead_s: float = 0.0, load_save_s_per_param: float = 0.0,
                   save_s_per_param: float = 0.0, run_overhead_by_notebook: Mapping[str, float] | None = None) -> dict:
    """A stand-in benchmark report whose rates are what ``mfu`` of ``peak_tflops`` would give (for planning).

    ``mfu``: one fraction for every step, or one per hot path (``{"a": …, "b": …, "c": …}``: issue 24's
    per-step targets; the notebooks priced from (b)'s rate per token — 01, 02, 06, 07 — follow ``b``).
    Token counts are the means of the length table at the paper's maximum lengths; model FLOPs are
    ``6·N·T + 12·ℓ·H·Σ L²`` (attention included, as ``benchmarks.measure`` counts them).  ``passages_per_s``
    ``None``: corpus encoding at (b)'s MFU (``2·N·T + 4·ℓ·H·Σ L²``).
    ``floor_s_per_step``: the fixed cost of an XLM-R-base step ((e), 12 layers); 0 = none (the physical limit).
    ``measured``: a GPU report whose measured tokens per row of the short-sentence sets ((e): SAIL, (f): IITB) and
    (b)'s padding share are used instead of the length table's (the harness tokenised them; the table's English
    tokenizer over-counts Hindi).  ``bytes_per_s``: price AdamW's update apart, as :data:`ADAMW_BYTES_PER_PARAM`
    at this memory bandwidth (the physical limit).  ``run_overhead_s``: seconds per run outside its steps.
    """
    from .hotpaths import FULL, MBERT_BASE, XLMR_LARGE

    per_path = dict(mfu) if isinstance(mfu, Mapping) else {k: float(mfu) for k in "abc"}
    if set(per_path) != {"a", "b", "c"}:
        raise ValueError(f"assumed_report: an MFU per hot path needs exactly a, b and c, got {sorted(per_path)}")
    flops = {k: v * peak_tflops * 1e12 for k, v in per_path.items()}
    base, large = _enc(12, 768, 3072), _enc(24, 1024, 4096)
    attn_base, attn_large = 12 * 12 * 768, 12 * 24 * 1024  # training attention FLOPs per squared token (12·ℓ·H)
    nli = L.nli_columns(length_table)
    n_a = FULL.concse_batch
    a_flops = n_a * sum(6 * base * d.mean(FULL.concse_max_length) + attn_base * _sq_mean(d, FULL.concse_max_length)
                        for d in nli.values())
    q, pas = L.mrtydi("queries", length_table), L.mrtydi("passages", length_table)
    c_flops = FULL.ir_batch * 2 * (6 * base * (q.mean(FULL.query_max_length) + pas.mean(FULL.passage_max_length))
                                   + attn_base * (_sq_mean(q, FULL.query_max_length) + _sq_mean(pas, FULL.passage_max_length)))
    pairs = L.glue_pairs(length_table)
    b_per_token = 6 * large + attn_large * _sq_mean(pairs, 230) / pairs.mean(230)
    if passages_per_s is None:
        enc_len = FULL.encode_max_length
        passages_per_s = flops["b"] / (2 * base * pas.mean(enc_len) + attn_base / 3 * _sq_mean(pas, enc_len))
    arch = lambda a: {"num_hidden_layers": a.num_hidden_layers, "hidden_size": a.hidden_size, "intermediate_size": a.intermediate_size}  # noqa: E731
    floor = f", {floor_s_per_step * 1e3:g} ms fixed cost per step" if floor_s_per_step else ", no fixed cost per step"
    same = len(set(per_path.values())) == 1
    mfus = f"{per_path['a']:.0%} MFU" if same else "MFU " + ", ".join(f"({k}) {v:.0%}" for k, v in per_path.items())
    rows = {m["key"]: m for m in (measured or {}).get("measurements", []) if m.get("status") == "ok"}
    e_meas, f_meas = paper_step(rows, "e"), paper_step(rows, "f")
    e_row = {"key": "e", "status": "ok", "step_time_s": floor_s_per_step, "extra": {"layers": 12}}
    if e_meas and e_meas.get("tokens_per_s"):  # its tokens per row (the step time stays the assumed floor)
        e_row |= {"tokens_per_s": e_meas["tokens_per_s"], "sequences_per_s": e_meas["sequences_per_s"]}
    measurements = [
        {"key": "a", "status": "ok", "step_time_s": a_flops / flops["a"]},
        {"key": "b", "status": "ok", "tokens_per_s": flops["b"] / b_per_token,
         "padding": (rows.get("b") or {}).get("padding", 0.0)},
        {"key": "c", "status": "ok", "step_time_s": c_flops / flops["c"]},
        {"key": "d", "status": "ok", "sequences_per_s": passages_per_s},
        e_row,
    ]
    if f_meas and f_meas.get("tokens_per_s"):  # tokens per row only: no assumed (f) step (alignment priced from (b))
        measurements.append({"key": "f_tokens", "status": "ok", "tokens_per_s": f_meas["tokens_per_s"],
                             "sequences_per_s": f_meas["sequences_per_s"]})
    adamw = "" if not bytes_per_s else f", AdamW {ADAMW_BYTES_PER_PARAM} bytes/param at {bytes_per_s / 1e12:g} TB/s"
    return {
        "environment": {"device": f"assumed: {mfus} of {peak_tflops:g} TFLOP/s, {passages_per_s:,.0f} passages/s{floor}{adamw}"},
        "sizes": {"concse_batch": FULL.concse_batch, "ir_batch": FULL.ir_batch, "query_max_length": FULL.query_max_length,
                  "passage_max_length": FULL.passage_max_length, "glue_max_length": 230},
        "models": {"concse": arch(MBERT_BASE), "glue": arch(XLMR_LARGE), "layers_cap": None},
        "measurements": measurements,
        "adamw_s_per_param": ADAMW_BYTES_PER_PARAM / bytes_per_s if bytes_per_s else 0.0,
        "run_overhead_s": run_overhead_s,
        "run_overhead_by_notebook": dict(run_overhead_by_notebook or {}),
        "load_save_s_per_param": load_save_s_per_param,
        "save_s_per_param": save_s_per_param,
    }


def _ratio(model: str, measured: int) -> float | None:
    n = LINEAR_PARAMS.get(model)
    return None if n is None else n / measured


def _table1(row: str, column: str) -> float:
    from codeswitch.core.reported import lookup

    rep = lookup("concse", "table1", row, column)
    if rep is None or rep.value is None:
        raise KeyError(f"ConCSE Table 1 has no value for {row} / {column}")
    return rep.value


def _cap(rows: float, cap: int | None) -> float:
    """``rows``, at most ``cap`` (a profile's row cap: ``glue.max_train_samples``, ``concse.max_train_rows``, …)."""
    return rows if not cap else min(rows, cap)


GLUE_LABEL = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qnli": "QNLI", "rte": "RTE"}
STS_ROWS = ("STS/STS-B", "STS/STS12", "STS/STS13", "STS/STS14", "STS/STS15", "STS/STS16", "STS/SICK-R")


# --------------------------------------------------------------------------- one step, one run
def _arch(model) -> Arch | None:
    return model if isinstance(model, Arch) else ARCH.get(model)


def flops_per_token(a: "Arch", row_len: float) -> float:
    """Training FLOPs per token of the architecture ``a`` in rows of ``row_len`` tokens: ``6·N + 12·ℓ·H·L`` (matmul
    weights, attention); a forward is a third of it."""
    return 6 * a.linear + 12 * a.all_layers * a.hidden * row_len


def _train_s(model, rates: Rates, row_len: float) -> float:
    """Training seconds per token of ``model`` (an :data:`ARCH` name or an :class:`Arch`) in rows of ``row_len``
    tokens: (b)'s measured rate, scaled by the model's FLOPs per token (``6·N + 12·ℓ·H·L``: the same MFU as (b))."""
    a = _arch(model)
    if a is None:
        return math.nan
    if not rates.glue_flops_per_token:  # rates built by hand without (b)'s FLOPs per token: matmul weights only
        return rates.glue_s_per_token * a.linear / rates.glue_linear
    return rates.glue_s_per_token * flops_per_token(a, row_len) / rates.glue_flops_per_token


def _floor_s(layers: int, rates: Rates) -> float:
    """The fixed cost of one training step of a ``layers``-layer model: (e)'s per layer (0 where the report has no (e)
    row), at most a measured whole HF-Trainer step of a model with at least as many layers ((b_hf): XLM-R-large's 24
    layers took 124 ms on the H200, less than (e)'s 6.8 ms a layer × 24)."""
    floor = (rates.floor_s_per_layer or 0.0) * layers
    if rates.floor_cap_s is not None and layers <= rates.floor_cap_layers:
        floor = min(floor, rates.floor_cap_s)
    return floor


def _scale(model, rates: Rates, train: bool = True) -> float:
    """The multiplier of ``model``'s compute time for its own measured rate (:attr:`Rates.arch_scale`; 1 without)."""
    pair = rates.arch_scale.get(_arch(model)) if rates.arch_scale else None
    return 1.0 if pair is None else pair[0 if train else 1]


def _layers(model) -> int | None:
    a = _arch(model)
    return None if a is None else a.all_layers


def step_s(model, rates: Rates, tokens: float, row_len: float, *, train: bool = True, forwards: float = 1.0) -> float:
    """One step of ``model`` over ``tokens`` tokens in rows of ``row_len``: ``max(fixed cost, compute)`` (+ AdamW).

    ``forwards``: the step's work in training passes of the model (4/3: a trained encoder and a frozen copy's
    forward; 2: two sides encoded separately); ``train=False``: a forward pass only (a third of both)."""
    a = _arch(model)
    if a is None:
        return math.nan
    share = forwards if train else forwards / 3
    compute = tokens * _train_s(a, rates, row_len) * share * _scale(a, rates, train)
    return max(_floor_s(a.all_layers, rates) * share, compute) + (rates.adamw_s_per_param * a.params if train else 0.0)


def run_s(model, rates: Rates, encoders: int = 1, saves: bool = True, notebook: str | None = None,
          read_later: bool = False) -> float:
    """Seconds of one run outside its steps and its priced forward passes: loading and saving ``encoders`` copies of
    ``model`` (an :data:`ARCH` name or an :class:`Arch`) at :attr:`Rates.load_save_s_per_param`, plus the fixed
    remainder :attr:`Rates.run_overhead_s` (measured_run_overhead).  ``saves`` False: the run saves nothing (its
    section's ``keep_models: none`` and no later stage reads its model), so the saving part
    (:attr:`Rates.save_s_per_param`) is left out.  A ``notebook`` whose runs were measured whole on a GPU
    (:attr:`Rates.run_overhead_by_notebook`) pays that instead of the remainder and the loading, plus saving unless
    ``read_later`` (a model a later stage reads is saved whatever ``keep_models`` says: the measured runs saved it)."""
    a = _arch(model)
    params = a.params if a is not None else 0
    if notebook in rates.run_overhead_by_notebook:
        return rates.run_overhead_by_notebook[notebook] + (encoders * params * rates.save_s_per_param
                                                            if saves and not read_later else 0.0)
    per_param = rates.load_save_s_per_param - (0.0 if saves else rates.save_s_per_param)
    return rates.run_overhead_s + encoders * params * per_param


def saves_model(section) -> bool:
    """Whether a run of ``section`` (a package config with ``keep_models``) saves its trained model: ``best`` and
    ``all`` save every run (``best`` removes the others after the grid, :mod:`codeswitch.core.kept`), ``none`` none."""
    return getattr(section, "keep_models", "best") != "none"


def optimiser_steps(rows: float, batch: int, epochs: float) -> int:
    """Optimiser steps of ``epochs`` over ``rows`` in batches of ``batch`` (the last batch of an epoch may be short; a
    fractional epoch count, as CalBERT's, stops after that share of the steps, as the HF Trainer does)."""
    return int(math.ceil(epochs * math.ceil(rows / batch)))


def eval_s(model, rates: Rates, rows: float, batch: int, row_len: float) -> float:
    """Forward passes over ``rows`` rows in batches of ``batch`` (each batch at least its fixed cost's third)."""
    if not rows:
        return 0.0
    n = math.ceil(rows / batch)
    return n * step_s(model, rates, rows * row_len / n, row_len, train=False)


# --------------------------------------------------------------------------- per notebook
def concse_hours(profile, rates: Rates, jobs: list | None = None) -> tuple[dict, dict]:
    """Notebooks 03 (Table 3) and 04 (ablations; runs shared with 03 are not counted twice).

    A step is ``max(fixed cost, its sentences at (a)'s measured rate per sentence)``: (a) is a 768-sentence step, so
    SimCSE's batch-64 steps (3 × 64 sentences, released max length 32) and XLM-R-large's batch-48 ConCSE steps reach
    the fixed cost; sentences are scaled by their mean tokens at the run's max length (against (a)'s 64)."""
    from codeswitch import concse as C

    c = C.load(profile)
    nli_cols = L.nli_columns()
    a_tokens = sum(d.mean(64) for d in nli_cols.values())

    def length_factor(max_length: int) -> float:
        return sum(d.mean(max_length) for d in nli_cols.values()) / a_tokens

    def hours(spec, notebook: str = "03") -> float:
        ratio = _ratio(spec.model, rates.concse_linear) or math.nan
        columns = 6 if spec.method == "concse" else 3
        nli = _cap(_table1("NLI/NLI", "Train"), spec.max_train_rows)
        dev, tests = _cap(_table1("STS/STS-B", "Dev"), spec.max_eval_rows), sum(_cap(_table1(r, "Test"), spec.max_eval_rows) for r in STS_ROWS)
        per_sentence = rates.concse_s_per_sentence * ratio * length_factor(spec.max_length)
        a = _arch(spec.model)
        n_steps = optimiser_steps(nli, spec.batch_size, spec.num_train_epochs)
        step = max(_floor_s(a.all_layers, rates) if a else math.nan, columns * spec.batch_size * per_sentence * _scale(a, rates))
        step += rates.adamw_s_per_param * (a.params if a else math.nan)
        evals = 2 * (dev * spec.num_train_epochs + tests) * per_sentence / 3 * _scale(a, rates, train=False)
        return (n_steps * step + evals + run_s(spec.model, rates, saves=saves_model(c), notebook=notebook)) / 3600

    def steps(spec) -> int:
        return optimiser_steps(_cap(_table1("NLI/NLI", "Train"), spec.max_train_rows), spec.batch_size, spec.num_train_epochs)

    t3 = {s.key_hash(): s for s in C.plan(profile, ["table3"])}
    abl = {s.key_hash(): s for s in C.plan(profile, C.ABLATIONS)}
    only_abl = {h: k for h, k in abl.items() if h not in t3}
    if jobs is not None:  # one job per run (for the wall-clock estimate on N GPUs)
        # named by what they are, not by key hash (a key holds the hub commits of the data, which vary by machine and day)
        jobs += [Job(f"03/{k.backbone}-{k.method}-seed{k.seed}", hours(k)) for k in t3.values()]
        jobs += [Job(f"04/{k.study}-{k.label}-{k.backbone}-seed{k.seed}", hours(k, "04")) for k in only_abl.values()]
    return (
        {"runs": len(t3), "hours": sum(hours(k) for k in t3.values()), "steps": sum(steps(k) for k in t3.values())},
        {"runs": len(only_abl), "hours": sum(hours(k, "04") for k in only_abl.values()), "steps": sum(steps(k) for k in only_abl.values())},
    )


def glue_hours(profile, rates: Rates, length_table: str | None = None, jobs: list | None = None) -> dict:
    """Notebook 02: every (task, backbone, seed, training language) fine-tuning, with its per-epoch evaluations.

    Rows are capped by ``glue.max_train_samples`` / ``max_eval_samples``; a step is ``max(fixed cost, its tokens at
    (b)'s rate)``; mBART trains padded (its head reads the decoder), so its training tokens are divided by (1 − the
    padding share of (b)'s padded, length-grouped step)."""
    from codeswitch import glue as G
    from codeswitch.core.profiles import seeds_for
    from codeswitch.glue.train import TASKS, training_runs

    g = G.load(profile)
    runs, total, n_steps = 0, 0.0, 0
    for task in g.tasks:
        row = f"GLUE/{GLUE_LABEL[task]}"
        limit = g.max_length_pair if TASKS[task].pair else g.max_length_single
        tokens_per_row = L.glue_task(task, length_table).mean(limit)
        train_rows = _cap(_table1(row, "Train"), g.max_train_samples)
        dev_rows, test_rows = (_cap(_table1(row, col), g.max_eval_samples) for col in ("Dev", "Test"))
        for bb in g.backbones:
            a = _arch(bb.model)
            padded = a is not None and a.decoder_layers > 0 and getattr(g, "packing", True)
            train_tokens = tokens_per_row / (1 - rates.glue_padding) if padded else tokens_per_row
            for _seed in seeds_for(profile, g.seeds):
                for _langs, tests in training_runs(g.scenarios).items():
                    runs += 1
                    steps = optimiser_steps(train_rows, bb.batch_size, g.num_train_epochs)
                    per_step = g.num_train_epochs * train_rows * train_tokens / steps
                    train = steps * step_s(bb.model, rates, per_step, tokens_per_row)
                    eb = g.per_device_eval_batch_size
                    evals = g.num_train_epochs * (eval_s(bb.model, rates, dev_rows, eb, tokens_per_row)
                                                  + len(tests) * eval_s(bb.model, rates, test_rows, eb, tokens_per_row))
                    h = (train + evals + run_s(bb.model, rates, saves=saves_model(g), notebook="02")) / 3600
                    total += h
                    n_steps += steps
                    if jobs is not None:
                        jobs.append(Job(f"02/{task}/{bb.name}/{_seed}/{'+'.join(_langs)}", h))
    return {"runs": runs, "hours": total, "steps": n_steps}


def retrieval_hours(profile, rates: Rates, sizes: Mapping = RETRIEVAL_SIZES, jobs: list | None = None) -> dict:
    """Notebook 05: every model of ContrastiveMix's plan (training, then encoding its target corpora and evaluation queries)."""
    from codeswitch import contrastivemix as X

    c = X.load(profile)
    ratio = _ratio(c.backbone.model, LINEAR_PARAMS["bert-base-multilingual-cased"]) or math.nan
    a = _arch(c.backbone.model)
    queries = c.train_max_queries or sizes["nq_train_queries"]
    steps = c.num_train_epochs * (queries // c.batch_size)
    measured_tokens = 2 * rates.ir_query_tokens + 2 * rates.ir_passage_tokens  # (c): query + its mixed copy, pos + neg

    def step_time(m) -> float:
        """One step of model ``m``: (c)'s, scaled by the tokens of the groups its method encodes (:func:`ir_groups`),
        at least the fixed cost of its two encoders; plus both encoders' AdamW update where priced apart."""
        nq, np_ = ir_groups(m)
        tokens = nq * rates.ir_query_tokens + np_ * rates.ir_passage_tokens
        compute = rates.ir_s_per_step * (c.batch_size / rates.ir_batch) * ratio * tokens / measured_tokens * _scale(a, rates)
        layers = a.all_layers if a else math.nan
        return max(_floor_s(layers, rates), compute) + 2 * rates.adamw_s_per_param * (a.params if a else math.nan)

    corpora = {("mrtydi", k): v for k, v in sizes["mrtydi_corpus_millions"].items()}
    corpora |= {("miracl", k): v for k, v in sizes["miracl_corpus_millions"].items()}
    by_stage = {st.name: st.specs for st in X.stages(profile)}  # the package's stages: "train" (models), "eval" (their corpora)
    models, evals = list(by_stage.get("train", ())), list(by_stage.get("eval", ()))
    overhead = run_s(c.backbone.model, rates, encoders=2, notebook="05", read_later=True)  # a query and a passage encoder
    train_h = sum(steps * step_time(m) + overhead for m in models) / 3600
    encode_h = 0.0
    per_model = {m.key_hash(): 0.0 for m in models}  # encoding hours of each model's evaluations
    untrained: dict = {}  # the untrained backbone's encoding of each target (the learning check's baseline): once each
    per_passage = ratio * _scale(a, rates, train=False) / rates.encode_passages_per_s / 3600  # hours a passage encoding
    for e in evals:
        passages = reduced_passages(e, sizes, corpora.get((e.bm25.benchmark, e.bm25.language), math.nan) * 1e6)
        hours = (passages + query_passages(e, sizes)) * per_passage
        encode_h += hours
        per_model[e.model.key_hash()] = per_model.get(e.model.key_hash(), 0.0) + hours
        # the untrained baseline encodes the same (reduced) corpus but its reported queries alone (no weight is tuned)
        untrained[(e.bm25.benchmark, e.bm25.language)] = (passages + query_passages(e, sizes, reported_only=True)) * per_passage
    encode_h += sum(untrained.values())
    if jobs is not None:  # a model's job trains it, then encodes its target corpora (as the experiment runs it)
        jobs += [Job(f"05/{m.name}", (steps * step_time(m) + overhead) / 3600 + per_model[m.key_hash()]) for m in models]
        jobs += [Job(f"05/untrained-{bench}-{lang}", h) for (bench, lang), h in untrained.items()]
    groups = {}
    for m in models:
        groups[sum(ir_groups(m))] = groups.get(sum(ir_groups(m)), 0) + 1
    return {"runs": len(models), "hours": train_h + encode_h, "train_hours": train_h, "encode_hours": encode_h,
            "steps": steps * len(models), "groups": dict(sorted(groups.items()))}


def ir_groups(spec) -> tuple[int, int]:
    """(query groups, passage groups) a ContrastiveMix model encodes per step, as ``contrastivemix.train`` batches them:
    the query, its positive and its negative; ContrastiveMix adds the code-mixed query (query side), the code-mixed
    positive (passage side) and, with ``passage_align: all``, the code-mixed negative — six groups for a model
    mixing both sides, four for query-side mixing, three for mDPR and NaiveMix (which mix in place)."""
    queries, passages = 1, 2
    if spec.method == "contrastivemix":
        queries += int(bool(spec.mix_query))
        if spec.mix_passage:
            passages += 1 + int(spec.passage_align == "all")
    return queries, passages


# 06 and 07 data sizes (rows), from the papers in /work/shared/papers.  GLUECoS: Fazili &
# Jyothi (2022) §4 — sentiment (SAIL via GLUECoS) 10080/1260/1260, NER 2467/308/307, QA
# 259/54 train/dev (no test).  The IITB dev split the alignments validate on: 520 pairs (the
# profile's comment on alignment.parallel_valid_size).  The MUSE en-hi lexicon: the authors'
# released train/valid/test files, 30,577 / 3,822 / 3,822 entries (the profile's comment on
# alignment.lexicon_valid_size); an entry is one word a side, MUSE_TOKENS_PER_ROW tokens with
# [CLS] and [SEP] (an assumption: a Hindi word in mBERT's WordPiece is 1-3 pieces).
# CalBERT: Table 4 (SAIL 2017 9945/1240/1238 train/validation/test) and Table 10 (IITP
# 4182/523/523), read from codeswitch.core.reported (_calbert_split_sizes).
# Token counts per row: the harness's measured rows where they exist ((f): IITB pairs,
# (e): SAIL sentences; IITP scaled from SAIL by the length table), else the run's max_length
# (an upper bound: GLUECoS NER and QA, whose contexts longer than 512 tokens take more than one
# window, not counted).
SIZES_0607: dict = {
    "gluecos": {"sentiment": (10080, 1260, 1260), "ner": (2467, 308, 307), "qa": (259, 54, 0)},
    "iitb_dev_pairs": 520,
    "muse_train_entries": 30577,
}
MUSE_TOKENS_PER_ROW = 4


def _calbert_split_sizes(task: str) -> tuple[float, float, float]:
    """CalBERT's train / validation / test rows of ``task`` as the paper reports them (Table 4: SAIL, Table 10: IITP),
    read from :mod:`codeswitch.core.reported` like ConCSE's Table 1."""
    from codeswitch.calbert.tables import PAPER_SPLIT_TABLE, SPLIT_ROWS
    from codeswitch.core.reported import lookup

    out = []
    for label in SPLIT_ROWS.values():
        rep = lookup("calbert", PAPER_SPLIT_TABLE[task], label, "Number of examples")
        if rep is None or rep.value is None:
            raise KeyError(f"CalBERT {PAPER_SPLIT_TABLE[task]} has no value for {label}")
        out.append(rep.value)
    return tuple(out)


def construction_hours(profile, rates: Rates) -> dict:
    """Notebook 01: the NLLB translation of ``construct_n`` items per GLUE task (benepar parsing runs on CPU: not counted).

    Forward passes only (a third of the training rate per token), the source and the
    generated sentence each at the translator's 128-token cap (an upper bound on tokens);
    greedy generation runs one token at a time, below the compute-bound rate, so the
    time is the hours at (b)'s utilisation, not a bound.
    """
    from codeswitch import koglish as K
    from codeswitch.glue.train import TASKS

    k = K.load(profile)
    if k.translator != "hf":
        return {"runs": 0, "hours": 0.0, "steps": 0}
    if not k.construct_n:  # every training item: sizes not modelled
        return {"runs": 1, "hours": math.nan, "steps": 0}
    sentences = sum(k.construct_n * (2 if TASKS[t].pair else 1) for t in TASKS)
    forward = _train_s(k.hf_model, rates, 128) / 3 * _scale(k.hf_model, rates, train=False)
    hours = (sentences * 2 * 128 * forward + run_s(k.hf_model, rates, saves=False, notebook="01")) / 3600  # a translator: nothing saved
    return {"runs": 1, "hours": hours, "steps": 0}  # no training


def alignment_hours(profile, rates: Rates, sizes: Mapping = SIZES_0607, jobs: list | None = None) -> dict:
    """Notebook 06: the alignments on the parallel corpus and the MUSE lexicon, then the GLUECoS fine-tunings.

    An alignment step (``all_layers``: the trained encoder f and its frozen copy f0 over both sides) is (f)'s
    measured step where the report has one (mBERT-base, 8 pairs: 74.7 ms on the H200), scaled by layers and, past
    (f)'s tokens, by compute; else ``max(fixed cost, compute)`` × 4/3.  ``linear_head``: the frozen encoder's forward
    (a third).  Each epoch also encodes the validation pairs; all ``num_train_epochs`` are counted (early stopping can
    only shorten it).  A fine-tuning: its epochs over the training rows, the dev rows encoded each epoch (best-epoch
    selection), the test rows once.  The t-SNE figure (CPU) and awesome-align extraction are not counted.
    """
    from codeswitch import alignment as A

    aligns, fine, _figure = (st.specs for st in A.stages(profile))
    saves = saves_model(A.load(profile))  # the GLUECoS fine-tunings; an alignment's model is read by them: always saved
    align_tok = rates.align_tokens_per_row

    def rows_of(s) -> tuple[float, float, float]:
        """(training rows, validation rows, tokens per row of one side)."""
        if s.data == "parallel":
            return s.train_size, s.valid_size or sizes["iitb_dev_pairs"], align_tok or s.max_length
        return (getattr(s, "train_size", None) or sizes["muse_train_entries"], s.valid_size or 0, MUSE_TOKENS_PER_ROW)

    def align_steps(s) -> int:
        return optimiser_steps(rows_of(s)[0], s.batch_size, s.num_train_epochs)

    def align_step(s, tokens: float, tok: float, train: bool = True) -> float:
        if s.mode != "all_layers":  # frozen encoder: its forward over both sides, the head's update negligible
            return step_s(s.model, rates, tokens, tok, train=False)
        if train and rates.align_s_per_step is not None:
            a = _arch(s.model)
            measured_tokens = rates.align_batch * 2 * (align_tok or s.max_length)
            scale = (a.all_layers / 12) if a else math.nan
            return rates.align_s_per_step * max(scale, scale * tokens / measured_tokens)
        return step_s(s.model, rates, tokens, tok, forwards=4 / 3, train=train)

    def align_h(s) -> float:
        train, valid, tok = rows_of(s)
        n = align_steps(s)
        t = n * align_step(s, 2 * train * tok * s.num_train_epochs / n, tok)
        v = s.num_train_epochs * math.ceil(valid / s.batch_size) * align_step(s, 2 * min(valid, s.batch_size) * tok, tok, train=False) if valid else 0.0
        return (t + v + run_s(s.model, rates, notebook="06", read_later=True)) / 3600

    def fine_rows_tok(f) -> float:
        return (rates.finetune_tokens_per_row or f.max_length) if f.task == "sentiment" else f.max_length

    def fine_rows(f) -> tuple[float, float, float]:
        """(train, dev, test) rows of a GLUECoS fine-tuning: the paper's, the training rows capped by the run's
        ``max_train_samples`` (alignment.<task>.max_train_samples)."""
        train, dev, test = sizes["gluecos"][f.task]
        return _cap(train, getattr(f, "max_train_samples", None)), dev, test

    def fine_steps(f) -> int:
        return optimiser_steps(fine_rows(f)[0], f.batch_size, f.num_train_epochs)

    def fine_h(f) -> float:
        train, dev, test = fine_rows(f)
        tok = fine_rows_tok(f)
        n = fine_steps(f)
        t = n * step_s(f.model, rates, f.num_train_epochs * train * tok / n, tok)
        eb = f.per_device_eval_batch_size
        e = f.num_train_epochs * eval_s(f.model, rates, dev, eb, tok) + eval_s(f.model, rates, test, eb, tok)
        return (t + e + run_s(f.model, rates, saves=saves, notebook="06")) / 3600

    names = {a.key_hash(): f"06/align-{a.data}-{a.script}-{a.mode}-{a.objective}" for a in aligns}
    known = {a.key_hash(): align_h(a) for a in aligns}
    if jobs is not None:
        jobs += [Job(names[k], h) for k, h in known.items()]
        for f in fine:
            deps = [] if f.alignment is None else [r.key_hash() for r in getattr(f.alignment, "runs", (f.alignment,))]
            after = tuple(names[d] for d in deps if d in names)  # alignment.tune: every grid point it chooses among
            jobs.append(Job(f"06/{f.table}/{f.row}/{f.task}/seed{f.seed}", fine_h(f), after=after))
    align_total = sum(known.values())
    fine_total = sum(fine_h(f) for f in fine)
    return {"runs": len(aligns) + len(fine), "hours": align_total + fine_total, "align_hours": align_total,
            "finetune_hours": fine_total, "not_counted": 0,
            "steps": sum(align_steps(a) for a in aligns) + sum(fine_steps(f) for f in fine)}


def calbert_hours(profile, rates: Rates, jobs: list | None = None) -> dict:
    """Notebook 07: Siamese pre-training of every backbone per objective, the from-scratch MLM models (Tables 8/13),
    then every (task, model, variant, seed) fine-tuning.

    Pre-training pairs: ``max_pairs`` x ``sample_fraction`` (CalBERT Table 1's 147,731 and §7.2's 15%), IIT Bombay
    pairs at (f)'s measured tokens per sentence; Siamese trains both sides of a pair (two forwards a step), the
    from-scratch MLM the code-mixed side.  Fine-tuning rows at (e)'s measured tokens per SAIL sentence (IITP scaled by
    the length table).  A fine-tuning evaluates validation and test once, at the end (``eval_strategy="no"``).
    """
    from codeswitch import calbert as C

    pre, fine = (st.specs for st in C.stages(profile))
    saves = saves_model(C.load(profile))  # the fine-tunings; a pre-trained model is read by them: always saved
    split_sizes = {task: _calbert_split_sizes(task) for task in {f.task for f in fine}}
    sail = L.calbert_task("sail").mean(128)
    task_scale = {t: L.calbert_task(t).mean(128) / sail for t in split_sizes}

    def scratch_arch(s) -> Arch:
        return Arch(s.num_hidden_layers, s.hidden_size, s.intermediate_size, s.vocab_size)

    def is_scratch(s) -> bool:
        return hasattr(s, "num_hidden_layers") and hasattr(s, "vocab_size")

    def pairs_of(s) -> float:
        n = (s.max_pairs or math.nan) * (s.sample_fraction or 1.0)
        if getattr(s, "negatives", None) is not None and not math.isnan(n):  # the released negatives: half the pairs, 1 + 2k rows each
            return int(0.5 * round(n)) * (1 + 2 * s.negatives)
        return n

    def pre_steps(s) -> int:
        pairs = pairs_of(s)
        return 0 if math.isnan(pairs) else optimiser_steps(round(pairs), s.batch_size, s.num_train_epochs)

    def pre_h(s) -> float:
        pairs, n = pairs_of(s), pre_steps(s)
        if not n:
            return math.nan
        tok = min(rates.align_tokens_per_row or s.max_seq_length, s.max_seq_length)
        if is_scratch(s):
            t = n * step_s(scratch_arch(s), rates, s.num_train_epochs * pairs * tok / n, tok)
        else:
            t = n * step_s(s.model, rates, s.num_train_epochs * pairs * tok / n, tok, forwards=2)  # both sides, one forward each
        return (t + run_s(scratch_arch(s) if is_scratch(s) else s.model, rates, notebook="07", read_later=True)) / 3600

    def fine_rows(f) -> tuple[float, float, float]:
        """(train, validation, test) rows: the paper's (Tables 4, 10), the training rows capped by the run's
        ``max_train_samples`` (calbert.sail/iitp.max_train_samples)."""
        train, dev, test = split_sizes[f.task]
        return _cap(train, getattr(f, "max_train_samples", None)), dev, test

    def fine_steps(f) -> int:
        return optimiser_steps(fine_rows(f)[0], f.batch_size, f.num_train_epochs)

    def fine_h(f) -> float:
        train, dev, test = fine_rows(f)
        p = f.pretrain
        model = scratch_arch(p) if p is not None and is_scratch(p) else f.model
        tok = min((rates.finetune_tokens_per_row or f.max_seq_length) * task_scale[f.task], f.max_seq_length)
        n = fine_steps(f)
        t = n * step_s(model, rates, f.num_train_epochs * train * tok / n, tok)
        e = eval_s(model, rates, dev, f.per_device_eval_batch_size, tok) + eval_s(model, rates, test, f.per_device_eval_batch_size, tok)
        return (t + e + run_s(model, rates, saves=saves, notebook="07")) / 3600

    def pre_name(s) -> str:
        return f"07/pretrain-{s.backbone}" + ("" if is_scratch(s) else f"-{s.objective}")

    if jobs is not None:
        jobs += [Job(pre_name(s), pre_h(s)) for s in pre]
        jobs += [Job(f"07/{f.task}/{f.backbone}/{f.variant}/seed{f.seed}", fine_h(f),
                     after=(pre_name(f.pretrain),) if f.pretrain is not None else ()) for f in fine]
    pre_total, fine_total = sum(pre_h(s) for s in pre), sum(fine_h(f) for f in fine)
    fine_steps_all = [fine_steps(f) for f in fine]
    out = {"runs": len(pre) + len(fine), "hours": pre_total + fine_total, "pretrain_hours": pre_total,
           "finetune_hours": fine_total, "steps": sum(pre_steps(s) for s in pre) + sum(fine_steps_all),
           "finetune_steps_small_batch": sum(n for n, f in zip(fine_steps_all, fine) if f.batch_size <= 8)}
    k = C.load(profile).batched_runs
    if k is not None:  # no GPU row of the stacked loop is measured yet (e_bt1, e_bt4, e_bt: issue 43)
        out["unpriced"] = (f"calbert.batched_runs: {k}: not priced (no GPU measurement; issue 43): "
                           "its fine-tunings priced as separate runs")
    return out


def _calbert_profile(profile_name: str, overrides: Mapping | None):
    """The profile for 07's plan.  Its task folders are only hashed into the fine-tunings' keys, so where one is
    missing (no data on this machine) the shipped sample stands in: the grid's shape does not depend on the data."""
    from codeswitch import calbert as C
    from codeswitch.core.hub import MissingResourceError
    from codeswitch.core.profiles import load_profile

    o = dict(overrides or {})
    try:
        profile = load_profile(profile_name, o)
        C.stages(profile)
        return profile
    except MissingResourceError:
        return load_profile(profile_name, o | {"calbert.sail.source": "shipped", "calbert.iitp.source": "shipped"})


# --------------------------------------------------------------------------- per-run overhead
NOTEBOOK_RUNS = Path(__file__).resolve().parent.parent / "docs" / "bench" / "gpu" / "notebooks"
CPU_RECORDS = Path(__file__).resolve().parent.parent / "docs" / "bench" / "cpu"
#: 03's run names (its log) -> the backbone each loaded
RUN_BACKBONES = {"mBERT-base": "bert-base-multilingual-uncased", "XLM-R-base": "xlm-roberta-base", "XLM-R-large": "xlm-roberta-large"}


def _log_03(folder: Path) -> tuple[dict, list[str]]:
    """03's GPU run: its runs' summed seconds (``report.json``), the epochs' elapsed seconds and the backbone of each
    run (``logs/03.log``)."""
    import re

    report, log = folder / "report.json", folder / "logs" / "03.log"
    kinds = [k for k in json.loads(report.read_text(encoding="utf-8")).get("kinds", []) if k.get("notebook") == "03"]
    if not kinds:
        raise ValueError(f"{report}: no 'kinds' entry for notebook 03")
    found = re.findall(r"\[\w+-(.+?) seed \d+\] \d+/\d+ epoch .*?(\d+):(\d\d):(\d\d) elapsed", log.read_text(encoding="utf-8"))
    runs, seconds = sum(k["runs"] for k in kinds), sum(k["seconds"] for k in kinds)
    if not found or not runs:
        raise ValueError(f"{log}: no epoch lines ('[SimCSE-<backbone> seed N] 1/1 epoch ... H:MM:SS elapsed') to subtract")
    unknown = sorted({b for b, *_ in found} - set(RUN_BACKBONES))
    if unknown:
        raise ValueError(f"{log}: runs of backbone(s) {unknown} not in benchmarks.cost.RUN_BACKBONES")
    epochs = sum(int(h) * 3600 + int(m) * 60 + int(sec) for _, h, m, sec in found)
    return {"runs": runs, "run_seconds": seconds, "epoch_seconds": epochs}, [RUN_BACKBONES[b] for b, *_ in found]


def _cpu_split(cpu: Path, d_gpu: Path) -> dict | None:
    """The CPU record of a run's parts (``python -m benchmarks overhead``) and the GPU/CPU forward ratio ((d) on the
    GPU against (d) on this CPU, same model and passages); None where either record is absent."""
    over, d_cpu = cpu / "run_overhead.json", cpu / "bench_d.json"
    if not (over.is_file() and d_cpu.is_file() and d_gpu.is_file()):
        return None

    def d_rate(path: Path) -> float:
        rows = [m for m in json.loads(path.read_text(encoding="utf-8"))["measurements"] if m["key"] == "d" and m.get("sequences_per_s")]
        if not rows:
            raise ValueError(f"{path}: no measured (d) row")
        return float(rows[0]["sequences_per_s"])

    rec = json.loads(over.read_text(encoding="utf-8"))
    rows = rec["rows"]
    params = sum(r["params"] for r in rows)
    load_save = sum(float(_median(r["load_s"])) + float(_median(r["save_s"])) for r in rows) / params
    save = sum(float(_median(r["save_s"])) for r in rows) / params
    ev = next((r["eval"] for r in rows if r.get("eval")), None)
    if ev is None:
        raise ValueError(f"{over}: no row with an 'eval' measurement")
    return {"load_save_s_per_param": load_save, "save_s_per_param": save, "cpu_eval_s_per_sentence": ev["seconds"] / ev["sentences"],
            "eval_params": next(r["params"] for r in rows if r.get("eval")), "gpu_over_cpu_forward": d_rate(d_gpu) / d_rate(d_cpu),
            "sources": [_rel(p) for p in (over, d_cpu, d_gpu)]}


def _rel(p: Path) -> str:
    """``p`` from the project root where it lies inside it (the records' own paths), else as given."""
    try:
        return str(p.resolve().relative_to(NOTEBOOK_RUNS.parents[3]))
    except ValueError:
        return str(p)


def _median(xs) -> float:
    """The median of ``xs`` (a list of seconds)."""
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def measured_run_overhead(folder: Path = NOTEBOOK_RUNS, cpu: Path = CPU_RECORDS, *, eval_sentences: int | None = None,
                          gpu_bench: Path = NOTEBOOK_RUNS.parent / "bench.json") -> dict:
    """A run's cost outside its training epochs, split into its parts.

    Measured whole on the GPU: notebook 03 at paper-gpu size on an H100 (``docs/bench/gpu/notebooks``:
    ``report.json``'s summed run seconds of its ConCSE/SimCSE runs less the epochs' elapsed times of ``logs/03.log``).
    Split with the CPU record (``docs/bench/cpu/run_overhead.json``, ``python -m benchmarks overhead``):

    * loading and saving the backbone: seconds per parameter as measured on the CPU (host work: taken unscaled on the
      GPU machine's host, an assumption), for each of 03's runs' backbones;
    * the evaluation's forward passes (paper-gpu's STS dev + seven tests, ``max_eval_rows`` 256 pairs each, two
      sentences a pair: ``eval_sentences`` per run): the CPU's measured seconds per sentence, scaled by the measured
      GPU/CPU forward ratio ((d) on the H200 against (d) on this CPU) and by each backbone's matmul weights;
    * the remainder (data loading, tokenisation, sentence-transformers' set-up): ``seconds``, per run, an
      assumption for every other notebook's runs (only 03 was measured whole).

    The cost model prices a run's forward passes per notebook and its loading and saving per parameter
    (:func:`run_s`), so only the remainder is a fixed cost.  Without the CPU record, ``seconds`` is the whole
    per-run overhead and ``load_save_s_per_param`` 0 (as before); ``{"seconds": 0.0}`` where the GPU files are absent.
    """
    if not (folder / "report.json").is_file() or not (folder / "logs" / "03.log").is_file():
        return {"seconds": 0.0, "load_save_s_per_param": 0.0, "runs": 0, "source": None}
    whole, backbones = _log_03(folder)
    per_run = (whole["run_seconds"] - whole["epoch_seconds"]) / whole["runs"]
    out = {**whole, "whole_s_per_run": per_run, "seconds": per_run, "load_save_s_per_param": 0.0,
           "source": f"{_rel(folder / 'report.json')}, {_rel(folder / 'logs' / '03.log')}"}
    split = _cpu_split(cpu, gpu_bench)
    if split is None:
        return out
    if eval_sentences is None:  # paper-gpu's 03 runs: STS-B dev once an epoch and each test, max_eval_rows pairs each
        from codeswitch import concse as C
        from codeswitch.core.profiles import load_profile

        c = C.load(load_profile("paper-gpu"))
        eval_sentences = 2 * c.max_eval_rows * (c.num_train_epochs + len(c.sts_tests))
    load_save = sum(PARAMS[b] for b in backbones) / len(backbones) * split["load_save_s_per_param"]
    scale = sum(LINEAR_PARAMS[b] for b in backbones) / len(backbones) / LINEAR_PARAMS["bert-base-multilingual-cased"]
    evals = eval_sentences * split["cpu_eval_s_per_sentence"] / split["gpu_over_cpu_forward"] * scale
    out |= {"load_save_s_per_run": load_save, "eval_s_per_run": evals, "seconds": per_run - load_save - evals,
            "load_save_s_per_param": split["load_save_s_per_param"], "save_s_per_param": split["save_s_per_param"],
            "gpu_over_cpu_forward": split["gpu_over_cpu_forward"],
            "source": out["source"] + ", " + ", ".join(split["sources"])}
    return out


def latest_ok_notebook_runs(root: Path = NOTEBOOK_RUNS.parent, date_of: Callable[[Path, Mapping], str] | None = None
                            ) -> dict[str, tuple[Path, dict, str]]:
    """Per notebook, the latest notebooks record under ``root`` (``notebooks*/report.json``, ``python -m benchmarks
    gpu-notebooks record``) in which it ran to its end (ok): ``(report path, report, date)``.  ``date_of(path,
    report)``: the record's date (default: its ``environment.date``, else ""); of equal dates the later path wins."""
    def own_date(path: Path, rep: Mapping) -> str:
        return str(rep.get("environment", {}).get("date") or "")

    latest: dict[str, tuple[Path, dict, str]] = {}
    for path in sorted(root.glob("notebooks*/report.json")):
        rep = json.loads(path.read_text(encoding="utf-8"))
        date = str((date_of or own_date)(path, rep) or "")
        for nb in rep.get("notebooks", []):
            if nb.get("ok") and (nb["notebook"] not in latest or date >= latest[nb["notebook"]][2]):
                latest[nb["notebook"]] = (path, rep, date)
    return latest


def measured_notebook_overheads(root: Path = NOTEBOOK_RUNS.parent) -> dict[str, dict]:
    """Per notebook, a training run's seconds outside its training span, measured whole on a GPU at paper size.

    From the latest notebooks record in which the notebook ran to its end (:func:`latest_ok_notebook_runs`): over
    that notebook's training kinds (kinds with optimiser steps), (summed run seconds - summed training spans) / runs.
    That holds loading the backbone, data set-up, the evaluations after training (paper-gpu's small sets: counted again
    by the model's own evaluation pricing, an upper bound) and no saving (those runs kept no model).  Runs measured
    with other notebooks on the same GPU (``concurrent``) took longer than alone: an upper bound again.  Notebook 03
    keeps its finer split (:func:`measured_run_overhead`, measured alone)."""
    out = {}
    for nb, (path, rep, date) in sorted(latest_ok_notebook_runs(root).items()):
        kinds = [k for k in rep.get("kinds", []) if k.get("notebook") == nb and k.get("steps")]
        runs = sum(k["runs"] for k in kinds)
        if nb == "03" or not runs:
            continue
        outside = sum(k["seconds"] - (k.get("train_span_s") or 0.0) for k in kinds)
        out[nb] = {"seconds": max(0.0, outside / runs), "runs": runs, "date": date,
                   "concurrent": nb in (rep.get("concurrent") or []), "source": _rel(path)}
    return out


def overhead_fields(over: Mapping | None = None, notebooks: Mapping | None = None) -> dict:
    """The report keys of the per-run overhead (:func:`measured_run_overhead`; per notebook where measured whole on a
    GPU, :func:`measured_notebook_overheads`) that :class:`Rates` reads."""
    o = measured_run_overhead() if over is None else over
    per_nb = measured_notebook_overheads() if notebooks is None else notebooks
    return {"run_overhead_s": o["seconds"], "load_save_s_per_param": o.get("load_save_s_per_param", 0.0),
            "save_s_per_param": o.get("save_s_per_param", 0.0),
            "run_overhead_by_notebook": {nb: v["seconds"] for nb, v in per_nb.items()}}


def step_flops(model, batch: int, length: int, train: bool = True) -> float:
    """The cost model's FLOPs of one step of ``model`` over ``batch`` rows of ``length`` tokens: ``6·N·T + 12·ℓ·H·B·L²``
    for training (matmuls and attention), a third of it for a forward."""
    a = _arch(model)
    flops = batch * length * flops_per_token(a, length)
    return flops if train else flops / 3


def cpu_rates(record: Mapping) -> list[dict]:
    """Per backbone of a ``python -m benchmarks overhead --steps`` record: its measured training rate (the cost model's
    FLOPs of the step over its median forward + backward), forward rate (the evaluation forward's) and AdamW seconds
    per parameter (the median update after the first, which allocates the optimiser's state)."""
    out = []
    for r in record["rows"]:
        if r["model"] not in ARCH:
            raise ValueError(f"{r['model']!r} (stand-in {r.get('standin')}): no architecture in benchmarks.cost.ARCH")
        row = {"model": r["model"], "notebook": r["notebook"], "length": r["length"], "params": r["params"]}
        t = r.get("train")
        if t:
            fb = t["forward_backward_s"]["median"]
            row |= {"batch": t["batch"], "train_s": fb, "train_flop_s": step_flops(r["model"], t["batch"], r["length"]) / fb,
                    "adamw_s": t["adamw_s"]["median"], "adamw_s_per_param": t["adamw_s"]["median"] / r["params"]}
        e = r["eval"]
        row |= {"eval_batch": e["batch"], "forward_s": e["forward_s"]["median"],
                "forward_flop_s": step_flops(r["model"], e["batch"], r["length"], train=False) / e["forward_s"]["median"]}
        out.append(row)
    return out


def cpu_steps_report(record: Mapping, overhead: Mapping | None = None, *, source: str = "the record",
                     measured: Mapping | None = None) -> dict:
    """A report whose rates are a CPU's, measured per backbone (:func:`cpu_rates`), for :func:`notebook_costs`.

    Every step is priced at its backbone's own measured rates: its training FLOPs at the training rate, its forward
    FLOPs (evaluation, corpus encoding, 01's translation) at the forward rate, plus AdamW's update at the median
    measured seconds per parameter.  Built as :func:`assumed_report` at the median training rate (the reference: a
    backbone the record lacks, such as CalBERT's from-scratch models, runs at it, training and forwards alike), each
    measured backbone's time scaled by reference / its own rate (:attr:`Rates.arch_scale`).  No fixed cost per step;
    ``overhead``: the per-run keys (:func:`overhead_fields`); ``measured``: as :func:`assumed_report`'s (tokens per row
    of the short-sentence sets from a GPU report)."""
    rows = cpu_rates(record)
    trained = [r for r in rows if "train_flop_s" in r]
    if not trained:
        raise ValueError(f"{source}: no training step measured")
    ref = _median([r["train_flop_s"] for r in trained])
    report = assumed_report(1.0, ref / 1e12, None, measured=measured, **dict(overhead or {}))
    report["adamw_s_per_param"] = _median([r["adamw_s_per_param"] for r in trained])
    report["arch_scale"] = [(r["model"], ref / r["train_flop_s"] if "train_flop_s" in r else 1.0, ref / r["forward_flop_s"])
                            for r in rows]
    report["hours_unit"] = "CPU-hours"
    report["environment"] = {"device": f"this CPU, per-backbone rates measured by {source} (median training rate "
                                       f"{ref / 1e9:.1f} GFLOP/s; AdamW {report['adamw_s_per_param'] * 1e9:.1f} ns/parameter)"}
    return report


def cpu_rates_table(record: Mapping) -> str:
    """The measured per-backbone CPU rates of a ``--steps`` record, as a Markdown table."""
    lines = ["| backbone | notebook shape | forward + backward | training rate | AdamW update | eval forward | forward rate |",
             "|---|---|---|---|---|---|---|"]
    for r in cpu_rates(record):
        train = (f"{r['batch']} x {r['length']} | {r['train_s']:.2f} s | {r['train_flop_s'] / 1e9:.1f} GFLOP/s | "
                 f"{r['adamw_s']:.2f} s ({r['params'] / 1e6:.0f} M parameters)") if "batch" in r else f"– x {r['length']} | – | – | –"
        lines.append(f"| {r['model']} | {r['notebook']}: {train} | {r['eval_batch']} x {r['length']}: {r['forward_s']:.2f} s | "
                     f"{r['forward_flop_s'] / 1e9:.1f} GFLOP/s |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the table
#: each profile's GPU-hour target on one GPU (the README's): quick's is issue 38's; the paper grid's, reduced, 12
TARGET_HOURS: Mapping[str, float] = {"quick": 1.0}

# The smaller grid that brings the paper profile near the 12 GPU-hour target: one seed (CalBERT's own list too),
# and no ContrastiveMix Table 3 ablations (the README's cost table has a column for it).
REDUCED: Mapping[str, object] = {"seeds": [11111], "calbert.seeds": [11111], "contrastivemix.ablations": False}


def _rates_and_profile(report: Mapping, profile_name: str, overrides: Mapping | None,
                       encode_passages_per_s: float | None) -> tuple[Rates, object]:
    """The rates read from ``report`` (``encode_passages_per_s`` replacing (d)'s) and the profile with ``overrides``."""
    from codeswitch.core.profiles import load_profile

    rates = Rates.from_report(report)
    if encode_passages_per_s:
        rates = replace(rates, encode_passages_per_s=float(encode_passages_per_s))
    return rates, load_profile(profile_name, dict(overrides or {}))


def notebook_costs(
    report: Mapping,
    profile_name: str = "paper",
    sizes: Mapping = RETRIEVAL_SIZES,
    length_table: str | None = None,
    overrides: Mapping | None = None,
    encode_passages_per_s: float | None = None,
) -> tuple[Rates, list[dict]]:
    """The rates read from ``report`` and one row per notebook: ``notebook``, ``what``, ``runs``, ``hours``, ``source``.

    ``overrides`` are the profile's dotted ``--set`` keys; ``encode_passages_per_s``
    replaces (d)'s device-side rate (e.g. by the end-to-end rate ``bench memory`` measured).
    """
    rates, profile = _rates_and_profile(report, profile_name, overrides, encode_passages_per_s)
    t3, t4 = concse_hours(profile, rates)
    rows = [
        {"notebook": "02", "what": "Koglish-GLUE (Table 2)", **glue_hours(profile, rates, length_table), "source": "(b), scaled per backbone"},
        {"notebook": "03", "what": "ConCSE vs SimCSE (Table 3)", **t3, "source": "(a), scaled per backbone and batch"},
        {"notebook": "04", "what": "ConCSE ablations (Tables 4-7), runs not in 03", **t4, "source": "(a)"},
        {"notebook": "05", "what": "ContrastiveMix (Tables 1-4)", **retrieval_hours(profile, rates, sizes), "source": "(c) + (d)"},
        {"notebook": "06", "what": "alignment (Tables 3.1-3.2): alignments + GLUECoS fine-tunings", **alignment_hours(profile, rates),
         "source": "(f) per alignment step; (b), scaled, for GLUECoS; tokens per row measured by (e), (f)"},
        {"notebook": "07", "what": "CalBERT (Tables 5-13): pre-training + fine-tunings",
         **calbert_hours(_calbert_profile(profile_name, overrides), rates), "source": "(b), scaled; (e)'s fixed cost; tokens per row measured by (e), (f)"},
    ]
    rows.insert(0, {"notebook": "01", "what": "Koglish construction: NLLB translation", **construction_hours(profile, rates),
                    "source": "(b)/3 per token, scaled; 128 tokens in + out"})
    return rates, rows


def cost_table(
    report: Mapping,
    profile_name: str = "paper",
    sizes: Mapping = RETRIEVAL_SIZES,
    length_table: str | None = None,
    overrides: Mapping | None = None,
    encode_passages_per_s: float | None = None,
) -> str:
    """The Markdown table of GPU-hours per notebook; ``overrides`` are the profile's dotted ``--set`` keys."""
    rates, rows = notebook_costs(report, profile_name, sizes, length_table, overrides, encode_passages_per_s)
    total = sum(r["hours"] for r in rows if not math.isnan(r["hours"]))
    changed = "".join(f" --set {k}={json.dumps(v)}" for k, v in (overrides or {}).items())
    lines = [
        f"Estimated {report.get('hours_unit', 'GPU-hours')}, profile '{profile_name}'{changed}, rates from {rates.device}"
        + ("" if rates.full else " — NOT the full sizes: not representative"),
        "",
        f"| notebook | what | training runs | optimiser steps | {report.get('hours_unit', 'GPU-hours')} | from |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        extra = f" (train {r['train_hours']:.1f} + encode {r['encode_hours']:.1f})" if "train_hours" in r else ""
        extra += f" (pre-train {r['pretrain_hours']:.1f} + fine-tune {r['finetune_hours']:.1f})" if "pretrain_hours" in r else ""
        extra += f" (align {r['align_hours']:.1f} + fine-tune {r['finetune_hours']:.1f})" if "align_hours" in r else ""
        extra += f"; {r['not_counted']} lexicon alignment(s) not counted: MUSE en-hi size unknown" if r.get("not_counted") else ""
        hours = "–" if math.isnan(r["hours"]) else f"{r['hours']:.1f}"
        extra += f"; models by groups per step {r['groups']}" if r.get("groups") else ""
        extra += f"; {r['finetune_steps_small_batch']:,} fine-tuning steps at batch ≤ 8" if r.get("finetune_steps_small_batch") else ""
        extra += f"; {r['unpriced']}" if r.get("unpriced") else ""
        lines.append(f"| {r['notebook']} | {r['what']} | {r['runs']} | {r['steps']:,} | {hours}{extra} | {r['source']} |")
    # the profile's GPU-hour target; a CPU's hours have none
    target = f"target ≤ {TARGET_HOURS.get(profile_name, 12):g}" if "hours_unit" not in report else ""
    lines.append(f"| **all** | | {sum(r['runs'] for r in rows)} | {sum(r['steps'] for r in rows):,} | **{total:.1f}** | {target} |")
    floor = ("not measured (no (e) row): steps priced by their compute only, an under-estimate for small batches"
             if rates.floor_s_per_layer is None else f"{rates.floor_s_per_layer * 12e3:.2f} ms per step of a 12-layer model (from (e))")
    align = (f"alignment {rates.align_s_per_step * 1e3:.1f} ms/step (f, {rates.align_batch} pairs)" if rates.align_s_per_step
             else "alignment from (b)")
    tok = lambda x: "max_length" if x is None else f"{x:.1f}"  # noqa: E731
    lines += [
        "",
        f"rates: ConCSE {rates.concse_s_per_sentence * 1e3:.3f} ms/sentence; Koglish-GLUE {rates.glue_s_per_token * 1e6:.3f} µs/token "
        f"(the whole measured step; a step costs max(fixed cost, compute)); ContrastiveMix {rates.ir_s_per_step * 1e3:.1f} ms/step "
        f"(batch {rates.ir_batch}, 4 groups, scaled per model by the tokens of its groups); {align}; rows as the paper profile runs "
        f"them: {', '.join(rates.paths) if rates.paths else '(a), (b), (c), (e)'}; encoding {_sig(rates.encode_passages_per_s)} "
        f"passages/s; fixed cost per step: {floor}; tokens per row: IITB {tok(rates.align_tokens_per_row)}, SAIL "
        f"{tok(rates.finetune_tokens_per_row)}; AdamW "
        + (f"{rates.adamw_s_per_param * 1e12:.2f} ps/parameter a step" if rates.adamw_s_per_param else "inside the measured steps")
        + f"; per run outside its steps and priced forwards {rates.run_overhead_s:.1f} s + loading and saving its backbone "
        f"at {rates.load_save_s_per_param * 1e9:.1f} s per billion parameters"
        + (f" (saving {rates.save_s_per_param * 1e9:.1f} of it, paid only by a run whose model is kept or read later)"
           if rates.save_s_per_param else "")
        + ("; measured whole on a GPU instead (a training run outside its training span, loading included, saving added "
           "where kept): " + ", ".join(f"{nb} {v:.1f} s" for nb, v in sorted(rates.run_overhead_by_notebook.items()))
           if rates.run_overhead_by_notebook else ""),
    ]
    return "\n".join(lines)


def _sig(x: float) -> str:
    """A rate for the reader: whole numbers with separators from 100 up, else three significant digits (a CPU encodes
    well under one passage a second: ``,.0f`` printed it as 0)."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


# --------------------------------------------------------------------------- wall-clock on N GPUs (issue 16)
# The grid is embarrassingly parallel up to its dependencies: a job starts when the jobs it
# needs have ended (``after``), and takes ``gpus`` GPUs (runs that use accelerate inside one
# job: the profile's ``executor.resources.<experiment>.gpus``, assumed to scale linearly).
# Modelled as the experiments run today: a Koglish-GLUE job is one (task, backbone, seed,
# training language) fine-tuning, the English one serving EN2EN and EN2CS; a ConCSE job is
# one run; a ContrastiveMix job trains one model, then encodes and scores its target corpora.
# 06: an alignment job, then the fine-tunings that start from it; 07: a pre-training job, then the
# fine-tunings of its checkpoint (01's translation is left out: one short job).
@dataclass(frozen=True)
class Job:
    name: str
    hours: float  # GPU-hours of the run on one GPU
    gpus: int = 1
    after: tuple[str, ...] = ()

    @property
    def wall(self) -> float:
        return self.hours / self.gpus


def critical_path(jobs: Sequence[Job]) -> dict[str, float]:
    """Each job's longest path to the end of the grid (itself included), in hours: the list scheduler's priority."""
    by_name = {j.name: j for j in jobs}
    children: dict[str, list[str]] = {j.name: [] for j in jobs}
    for j in jobs:
        for a in j.after:
            if a not in by_name:
                raise ValueError(f"job {j.name} waits for {a}, which is not in the grid")
            children[a].append(j.name)
    level: dict[str, float] = {}

    def visit(name: str, stack: tuple = ()) -> float:
        if name in stack:
            raise ValueError(f"dependency cycle through {name}")
        if name not in level:
            level[name] = by_name[name].wall + max((visit(c, stack + (name,)) for c in children[name]), default=0.0)
        return level[name]

    for j in jobs:
        visit(j.name)
    return level


def schedule(jobs: Sequence[Job], n_gpus: int) -> float:
    """Wall-clock hours of the grid on ``n_gpus`` identical GPUs: list scheduling, longest remaining path first.

    Whenever GPUs are free, the ready job (its dependencies ended) with the longest path to
    the end that fits is started.  Within a factor (2 - 1/N) of the optimum (Graham 1969):
    between ``max(GPU-hours / N, critical path)`` and ``GPU-hours / N + critical path``.
    """
    import heapq

    if n_gpus < 1:
        raise ValueError(f"n_gpus must be >= 1, got {n_gpus}")
    too_big = [j.name for j in jobs if j.gpus > n_gpus]
    if too_big:
        raise ValueError(f"{len(too_big)} job(s) need more than {n_gpus} GPU(s), e.g. {too_big[0]}")
    level = critical_path(jobs)
    waiting = {j.name: set(j.after) for j in jobs}
    by_name = {j.name: j for j in jobs}
    ready = sorted((n for n, w in waiting.items() if not w), key=lambda n: (-level[n], n))
    running: list[tuple[float, str]] = []
    free, now, done = n_gpus, 0.0, 0
    while done < len(jobs):
        started = True
        while started:
            started = False
            for name in ready:
                if by_name[name].gpus <= free:
                    ready.remove(name)
                    free -= by_name[name].gpus
                    heapq.heappush(running, (now + by_name[name].wall, name))
                    started = True
                    break
        end, name = heapq.heappop(running)
        now, free, done = end, free + by_name[name].gpus, done + 1
        for other, w in waiting.items():
            if name in w:
                w.discard(name)
                if not w:
                    ready.append(other)
        ready.sort(key=lambda n: (-level[n], n))
    return now


def grid_jobs(
    report: Mapping,
    profile_name: str = "paper",
    sizes: Mapping = RETRIEVAL_SIZES,
    length_table: str | None = None,
    overrides: Mapping | None = None,
    encode_passages_per_s: float | None = None,
) -> list[Job]:
    """Every run of notebooks 02-07 as a :class:`Job` (01's translation is one short job: left out), with the same rates and sizes as :func:`notebook_costs`."""
    from codeswitch.pipeline.executors import executor_config
    from codeswitch.pipeline.registry import experiments

    rates, profile = _rates_and_profile(report, profile_name, overrides, encode_passages_per_s)
    jobs: list[Job] = []
    glue_hours(profile, rates, length_table, jobs=jobs)
    concse_hours(profile, rates, jobs=jobs)
    retrieval_hours(profile, rates, sizes, jobs=jobs)
    alignment_hours(profile, rates, jobs=jobs)
    calbert_hours(_calbert_profile(profile_name, overrides), rates, jobs=jobs)
    ex = executor_config(profile)
    section = {nb: sec for sec, notebooks in experiments().items() for nb in notebooks}  # a job is named "<notebook>/..."
    return [replace(j, gpus=max(1, ex.resources_for(section[j.name[:2]]).gpus)) for j in jobs]


def wall_clock(jobs: Sequence[Job], gpus: Sequence[int] = (1, 8, 32)) -> dict:
    """GPU-hours, the longest single run, the critical path and the wall-clock hours on each of ``gpus``."""
    level = critical_path(jobs)
    longest = max(jobs, key=lambda j: (j.wall, j.name))
    return {
        "runs": len(jobs),
        "gpu_hours": sum(j.hours for j in jobs),
        "longest": (longest.name, longest.wall),
        "critical_path": max(level.values(), default=0.0),
        "hours": {n: schedule(jobs, n) for n in gpus},
    }


def cluster_table(report: Mapping, profile_name: str = "paper", gpus: Sequence[int] = (1, 8, 32), **kw) -> str:
    """The Markdown table of wall-clock hours on N devices (one job per device, list scheduling).

    A job is a training run or an evaluation-only job (05's untrained baseline per target), so the count can exceed the
    cost table's training runs; a CPU report (``--cpu-steps``) is labelled in CPU-hours on N such CPUs."""
    w = wall_clock(grid_jobs(report, profile_name, **kw), gpus)
    unit = report.get("hours_unit", "GPU-hours")
    device = unit.removesuffix("-hours") + "s"  # GPUs, CPUs
    lines = [
        f"Estimated wall-clock time of notebooks 02-07, profile '{profile_name}', on N {device} ({w['runs']} jobs: training runs "
        f"and evaluation-only jobs, {w['gpu_hours']:.1f} {unit})",
        "",
        f"| {device} | wall-clock hours | {unit} / N | utilisation |",
        "|---|---|---|---|",
    ]
    for n, h in w["hours"].items():
        lines.append(f"| {n} | {h:.1f} | {w['gpu_hours'] / n:.1f} | {w['gpu_hours'] / n / h:.0%} |")
    lines += ["", f"longest single job {w['longest'][1]:.2f} h ({w['longest'][0]}); critical path {w['critical_path']:.2f} h"]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks cost", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", nargs="?", help="bench.json written by `python -m benchmarks --full --out DIR`")
    p.add_argument("--assume-mfu", type=parse_mfu, default=None,
                   help="instead of a report: the rates this MFU would give (with --peak-tflops, --passages-per-s), for "
                        "planning; one fraction (0.4) or one per hot path (a=0.33,b=0.27,c=0.35: 01, 02, 06, 07 follow b)")
    p.add_argument("--peak-tflops", type=float, default=989.0)
    p.add_argument("--passages-per-s", type=float, default=20000.0, help="with --assume-mfu; 0: encoding at the same MFU")
    p.add_argument("--floor-ms", type=float, default=0.0,
                   help="with --assume-mfu: the fixed cost of an XLM-R-base training step in ms ((e)), scaled per layer")
    p.add_argument("--profile", default="paper")
    p.add_argument("--sizes", default=None, help="JSON overriding RETRIEVAL_SIZES (nq_train_queries, *_corpus_millions)")
    p.add_argument("--lengths", default=None, help="length table (default: the shipped one)")
    p.add_argument("--encode-rate", type=float, default=None,
                   help="passages/s for corpus encoding instead of (d)'s, e.g. the end-to-end rate of `bench memory`")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="change the profile as reproduce.sh --set does (JSON values), e.g. --set contrastivemix.ablations=false")
    p.add_argument("--gpus", default="1,8,32", help="GPU counts for the wall-clock estimate (comma-separated)")
    p.add_argument("--run-overhead-s", type=float, default=None,
                   help="seconds per run outside its steps, loading and saving included; default: measured_run_overhead "
                        "(notebook 03's runs on the GPU less their epochs, split with docs/bench/cpu/run_overhead.json), 0 if absent")
    p.add_argument("--bandwidth", type=float, default=None,
                   help="with --assume-mfu: price AdamW's update apart, 28 bytes per parameter a step at this many TB/s "
                        "(the physical limit: 3.35, the H100 SXM's)")
    p.add_argument("--cpu-steps", default=None, metavar="FILE",
                   help="instead of a report: price on the CPU that `python -m benchmarks overhead --steps --out FILE` "
                        "measured, each backbone at its own training and forward rates (cpu_steps_report)")
    p.add_argument("--tokens-from", default=None,
                   help="with --assume-mfu: a GPU bench.json whose measured tokens per row ((e) SAIL, (f) IITB) and (b) "
                        "padding share to use instead of the length table's")
    a = p.parse_args(list(argv) if argv is not None else None)
    overhead = overhead_fields() if a.run_overhead_s is None else {"run_overhead_s": a.run_overhead_s, "load_save_s_per_param": 0.0}
    if a.cpu_steps:
        record = json.loads(Path(a.cpu_steps).read_text(encoding="utf-8"))
        measured = json.loads(Path(a.tokens_from).read_text(encoding="utf-8")) if a.tokens_from else None
        report = cpu_steps_report(record, overhead, source=a.cpu_steps, measured=measured)
        print(cpu_rates_table(record) + "\n")
    elif a.assume_mfu is not None:
        measured = json.loads(Path(a.tokens_from).read_text(encoding="utf-8")) if a.tokens_from else None
        report = assumed_report(a.assume_mfu, a.peak_tflops, a.passages_per_s or None, a.lengths, floor_s_per_step=a.floor_ms / 1e3,
                                measured=measured, bytes_per_s=a.bandwidth * 1e12 if a.bandwidth else None, **overhead)
    elif a.report:
        report = json.loads(Path(a.report).read_text(encoding="utf-8")) | overhead
    else:
        p.error("give a bench.json or --assume-mfu")
    sizes = dict(RETRIEVAL_SIZES)
    if a.sizes:
        sizes.update(json.loads(Path(a.sizes).read_text(encoding="utf-8")))
    from codeswitch.core.deltas import parse_overrides

    print(cost_table(report, a.profile, sizes, a.lengths, parse_overrides(a.overrides), a.encode_rate))
    gpus = [int(x) for x in a.gpus.split(",") if x.strip()]
    print()
    print(cluster_table(report, a.profile, gpus, sizes=sizes, length_table=a.lengths, overrides=parse_overrides(a.overrides),
                        encode_passages_per_s=a.encode_rate))
    return 0
