"""ContrastiveMix (notebook 05): mDPR, NaiveMix and ContrastiveMix; Tables 1–4 and the UMAP Figures 1–3.

The experiment is a grid of *models* (one per method, variant, target language and
seed), each trained once and evaluated on the languages it is meant for:

==========================  ====================  =======================================
model                       trained for            evaluated on
==========================  ====================  =======================================
mDPR                        (English only)         every configured language
NaiveMix, ContrastiveMix    each target language   that language
Table 3's four ablations    each low-similarity    that language
==========================  ====================  =======================================

Every training, BM25 run, evaluation, embedding and UMAP fit is a record of the run
cache (``runs/<profile>/contrastivemix/{train,bm25,eval,embed,umap}/``) keyed by its
complete config; tables and figures are built from these records alone.  With
``save_checkpoints`` the trained encoders are saved (safetensors) so that an
interrupted evaluation resumes without retraining; they are deleted once the
model's evaluations are all cached unless ``keep_checkpoints``.  Training can be
spread over GPUs apart from the notebook: ``accelerate launch -m
codeswitch.contrastivemix.experiment --profile paper`` (see :func:`train_all`).

Conventions (the authors' released code unless said otherwise; the other reading
is a named option of :class:`ContrastiveMixConfig`):

* tables report the sparse–dense hybrid with its weight tuned on a split *other*
  than the reported one (Mr.TyDi: dev → test; MIRACL: train → dev).  The released
  script tunes on the reported split; that setting is reported too, labelled
  "tuned on <split> (released code)", and so is the dense retriever alone;
* words are looked up in the dictionary lower-cased (``case_sensitive=True``: as
  written, the released code), and mixed inputs keep [CLS]/[SEP]
  (``mixed_special_tokens=False``: dropped, the released code);
* NaiveMix draws one decision for a query and one for its passages (positive and
  hard negative together).
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core.profiles import ConfigError, Profile
from ..core.progress import progress
from ..core.checkpoints import checkpoint_ok
from ..core.identity import precision_name
from ..core.runs import RunCache, config_hash

__all__ = [
    "ContrastiveMixConfig",
    "config",
    "VARIANTS",
    "plan",
    "run",
    "train_all",
    "load_results",
    "Results",
    "examples",
    "table1",
    "table2",
    "table3",
    "table4",
    "umap_coordinates",
    "figure1",
    "figure2",
    "figure3",
]

RESULT_VERSION = 1  # bump when a change of method code (mixing, loss, training, evaluation) changes results
ANALYZER_VERSION = 1  # bump when evaluate.retrieval.analyze changes (BM25 records depend on it)
VALIDATION_SPLIT = "dev"  # the split the figures (and the data examples) are drawn from


@dataclass(frozen=True)
class ContrastiveMixConfig:
    """The ``contrastivemix`` section of a profile.  Defaults are the paper's settings."""

    # --- models and data: a hub id, a local copy, or "synthetic" / "tiny-*" (smoke)
    backbone: str = "bert-base-multilingual-cased"
    train_data: str = "Tevatron/wikipedia-nq"
    train_max_queries: int | None = None  # None: every NQ training query
    mrtydi: str = "castorini/mr-tydi"
    mrtydi_corpus: str = "castorini/mr-tydi-corpus"
    miracl: str = "miracl/miracl"
    miracl_corpus: str = "miracl/miracl-corpus"
    muse: str = "https://dl.fbaipublicfiles.com/arrival/dictionaries/en-{lang}.txt"  # URL template, folder, or "synthetic"
    # --- languages (ISO codes)
    low_similarity: tuple[str, ...] = ("ar", "th", "ja", "ko", "id", "fi")  # Mr.TyDi, target group
    high_similarity: tuple[str, ...] = ("ru", "bn")  # Mr.TyDi, Indo-European (ablation group)
    miracl_target: tuple[str, ...] = ("zh",)
    miracl_high_similarity: tuple[str, ...] = ("fa", "es", "fr", "hi")
    # --- training (§4.3 and the released training commands)
    epochs: int = 40
    batch_size: int = 128  # global, over all devices
    learning_rate: float = 1e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    query_max_length: int = 32
    passage_max_length: int = 128
    sentence_rate: float = 0.2  # r_s (NaiveMix)
    word_rate: float = 0.5  # r_w
    align_weight: float = 0.1  # w (ContrastiveMix)
    case_sensitive: bool = False  # True: the released code's case-sensitive dictionary look-up
    mixed_special_tokens: bool = True  # False: the released code drops [CLS]/[SEP] from mixed inputs
    ablations: bool = True  # also train Table 3's query-/passage-side variants
    # --- evaluation
    mrtydi_report_split: str = "test"
    mrtydi_tune_split: str = "dev"
    miracl_report_split: str = "dev"
    miracl_tune_split: str = "train"
    tune_max_queries: int | None = None  # cap on tuning queries (MIRACL train is large)
    depth: int = 100  # MRR@100 / Recall@100
    fusion_depth: int = 1000  # hits per run that enter the hybrid (Pyserini's default)
    hybrid_step: float = 0.05
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    encode_batch_size: int = 256
    encode_sort_window: int = 32  # batches sorted by length together when encoding (0: corpus order); results equal up to float rounding
    search_chunk_size: int = 131072
    save_checkpoints: bool = True  # save trained encoders (safetensors) so an interrupted evaluation resumes without retraining
    keep_checkpoints: bool = False  # keep them once all of the model's evaluations are cached (≈1.4 GB per mBERT model)
    keep_corpus_embeddings: bool = False  # keep each model's float16 corpus embeddings after its evaluation
    # --- figures
    figure_language: str = "ko"
    umap_points: int = 500  # validation queries (and their passages) per language
    umap_neighbors: int = 15
    umap_min_dist: float = 0.1

    def __post_init__(self):
        for name in ("sentence_rate", "word_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not 0 < self.hybrid_step <= 1:
            raise ValueError(f"hybrid_step must be in (0, 1], got {self.hybrid_step}")
        for bench in ("mrtydi", "miracl"):
            if getattr(self, f"{bench}_tune_split") == getattr(self, f"{bench}_report_split"):
                raise ValueError(
                    f"{bench}_tune_split must differ from {bench}_report_split: the hybrid weight is never tuned on the "
                    "reported split (that setting, the released script's, is reported anyway as extra rows)"
                )
        if self.fusion_depth < self.depth:
            raise ValueError(f"fusion_depth ({self.fusion_depth}) must be at least depth ({self.depth})")
        if not self.low_similarity and not self.high_similarity and not self.miracl_target and not self.miracl_high_similarity:
            raise ValueError("no evaluation language configured")

    @property
    def mrtydi_languages(self) -> tuple[str, ...]:
        return self.low_similarity + self.high_similarity

    @property
    def miracl_languages(self) -> tuple[str, ...]:
        return self.miracl_target + self.miracl_high_similarity


def config(cfg: Profile) -> ContrastiveMixConfig:
    """This experiment's section of the profile."""
    return cfg.section("contrastivemix", ContrastiveMixConfig)


# --------------------------------------------------------------------------- the grid
@dataclass(frozen=True)
class Variant:
    key: str
    method: str  # "mdpr" | "naivemix" | "contrastivemix"
    mix_query: bool
    mix_passage: bool
    label: str | None  # row label in Tables 1, 2, 4 (None: Table 3 only)
    ablation_label: str  # row label in Table 3


VARIANTS: dict[str, Variant] = {
    v.key: v
    for v in (
        Variant("mdpr", "mdpr", False, False, "mDPR", "mDPR"),
        Variant("naivemix", "naivemix", True, True, "NaiveMix", "NaiveMix (query+passage)"),
        Variant("naivemix-passage", "naivemix", False, True, None, "NaiveMix (passage)"),
        Variant("naivemix-query", "naivemix", True, False, None, "NaiveMix (query)"),
        Variant("contrastivemix-both", "contrastivemix", True, True, None, "ContrastiveMix (query+passage)"),
        Variant("contrastivemix-passage", "contrastivemix", False, True, None, "ContrastiveMix (passage)"),
        Variant("contrastivemix", "contrastivemix", True, False, "ContrastiveMix (ours)", "ContrastiveMix (query)"),
    )
}
MAIN_VARIANTS = ("mdpr", "naivemix", "contrastivemix")
ABLATION_VARIANTS = ("naivemix-passage", "naivemix-query", "contrastivemix-both", "contrastivemix-passage")
FIGURE_VARIANTS = ("contrastivemix", "mdpr", "naivemix")  # Figures 1, 2, 3


@dataclass(frozen=True)
class Target:
    benchmark: str  # "mrtydi" | "miracl"
    language: str


@dataclass(frozen=True)
class ModelRun:
    """One model of the grid and what it is evaluated on."""

    variant: Variant
    language: str | None  # the code-mixing target language; None for mDPR
    seed: int
    targets: tuple[Target, ...]
    embed: bool = False  # compute the validation embeddings of the UMAP figures

    @property
    def name(self) -> str:
        return f"{self.variant.key}{'-' + self.language if self.language else ''}-seed{self.seed}"


def plan(cfg: Profile) -> list[ModelRun]:
    """The models of the experiment, in training order (mDPR first)."""
    c = config(cfg)
    mrtydi = [Target("mrtydi", lang) for lang in c.mrtydi_languages]
    miracl = [Target("miracl", lang) for lang in c.miracl_languages]
    targets = mrtydi + miracl
    trained_languages = [t.language for t in targets]
    if c.figure_language not in trained_languages:
        raise ConfigError(f"{cfg.source_file}: contrastivemix.figure_language '{c.figure_language}' is not among the evaluated languages {trained_languages}")
    runs: list[ModelRun] = []
    for i, seed in enumerate(cfg.seeds):
        first = i == 0
        runs.append(ModelRun(VARIANTS["mdpr"], None, seed, tuple(targets), embed=first))
        for t in targets:
            for key in ("naivemix", "contrastivemix"):
                runs.append(ModelRun(VARIANTS[key], t.language, seed, (t,), embed=first and t.language == c.figure_language))
        if c.ablations:
            for t in (x for x in mrtydi if x.language in c.low_similarity):
                for key in ABLATION_VARIANTS:
                    runs.append(ModelRun(VARIANTS[key], t.language, seed, (t,)))
    return runs


# --------------------------------------------------------------------------- running
class _Context:
    """The profile, the caches and the (lazily loaded, memoised) data of one experiment."""

    def __init__(self, cfg: Profile):
        self.cfg = cfg
        self.c = config(cfg)
        self.root = cfg.runs_dir / "contrastivemix"
        self.caches = {k: RunCache(self.root / k) for k in ("train", "bm25", "eval", "embed", "umap")}
        self._memo: dict = {}

    def memo(self, key, fn):
        if key not in self._memo:
            self._memo[key] = fn()
        return self._memo[key]

    # ---- references
    @cached_property
    def backbone_id(self) -> str:
        from ..core.models import backbone_id

        return backbone_id(self.c.backbone)  # a tiny backbone's id changes with its recipe (so do the cache keys)

    @cached_property
    def backbone_path(self) -> str:
        from ..core.models import resolve_model

        return resolve_model(self.c.backbone, self.cfg, what="contrastivemix.backbone")

    def refs(self, benchmark: str) -> tuple[str, str]:
        return (self.c.mrtydi, self.c.mrtydi_corpus) if benchmark == "mrtydi" else (self.c.miracl, self.c.miracl_corpus)

    def splits(self, benchmark: str) -> tuple[str, str]:
        """(reported split, tuning split)."""
        if benchmark == "mrtydi":
            return self.c.mrtydi_report_split, self.c.mrtydi_tune_split
        return self.c.miracl_report_split, self.c.miracl_tune_split

    # ---- data
    def train_set(self):
        from .data import load_train_set

        return self.memo("train", lambda: load_train_set(self.c.train_data, max_queries=self.c.train_max_queries))

    def queries(self, benchmark: str, language: str, split: str, *, sample: int | None = None):
        from .data import load_queries

        ref = self.refs(benchmark)[0]
        qs = self.memo(("q", benchmark, language, split), lambda: load_queries(benchmark, ref, language, split, what=f"contrastivemix.{benchmark}"))
        return qs.sample(sample)

    def tune_queries(self, target: Target):
        return self.queries(target.benchmark, target.language, self.splits(target.benchmark)[1], sample=self.c.tune_max_queries)

    def report_queries(self, target: Target):
        return self.queries(target.benchmark, target.language, self.splits(target.benchmark)[0])

    def collection(self, target: Target):
        from .data import load_collection

        ref = self.refs(target.benchmark)[1]
        return self.memo(("c", target), lambda: load_collection(target.benchmark, ref, target.language, what=f"contrastivemix.{target.benchmark}_corpus"))

    def dictionary(self, language: str) -> dict[str, list[str]]:
        from .codemix import load_muse, muse_path
        from .data import SYNTHETIC, synthetic_glossary_path

        def load():
            if self.c.muse == SYNTHETIC:
                return load_muse(synthetic_glossary_path(language))
            return load_muse(muse_path(self.c.muse, language, download_dir=self.root / "muse"))

        return self.memo(("muse", language), load)

    # ---- input identities (core.identity): local data by content, hub data by commit
    def data_identity(self, ref: str) -> dict:
        """``{"ref"}`` for the synthetic set (generated by code: RESULT_VERSION covers it); else content or commit."""
        from ..core.identity import source_identity
        from .data import SYNTHETIC

        return self.memo(("id", ref), lambda: {"ref": ref} if ref == SYNTHETIC else source_identity(ref))

    def muse_identity(self, language: str) -> dict:
        """The ``en-<language>`` dictionary: the SHA-256 of the file read, or the (immutable) release URL."""
        from ..core.identity import source_identity
        from .codemix import muse_path
        from .data import SYNTHETIC, synthetic_glossary_path

        def ident():
            if self.c.muse == SYNTHETIC:
                return source_identity(SYNTHETIC, synthetic_glossary_path(language))
            if self.c.muse.startswith(("http://", "https://")):
                return {"ref": self.c.muse}
            return source_identity(self.c.muse, muse_path(self.c.muse, language, download_dir=self.root / "muse"))

        return self.memo(("muse-id", language), ident)

    # ---- configs (the cache keys)
    def spec(self, run: ModelRun):
        from .train import TrainSpec

        c, v = self.c, run.variant
        return TrainSpec(
            method=v.method, mix_query=v.mix_query, mix_passage=v.mix_passage,
            sentence_rate=c.sentence_rate, word_rate=c.word_rate, align_weight=c.align_weight,
            epochs=c.epochs, batch_size=c.batch_size, learning_rate=c.learning_rate, warmup_ratio=c.warmup_ratio,
            weight_decay=c.weight_decay, query_max_length=c.query_max_length, passage_max_length=c.passage_max_length,
            case_sensitive=c.case_sensitive, mixed_special_tokens=c.mixed_special_tokens, seed=run.seed,
        )

    def train_config(self, run: ModelRun) -> dict:
        spec = dataclasses.asdict(self.spec(run))
        if run.variant.method == "mdpr":  # settings that cannot matter for mDPR stay out of its key
            for k in ("sentence_rate", "word_rate", "align_weight", "case_sensitive", "mixed_special_tokens"):
                spec.pop(k)
        elif run.variant.method == "naivemix":
            spec.pop("align_weight")
        else:  # ContrastiveMix mixes a copy of every query: r_s plays no part
            spec.pop("sentence_rate")
        return {
            "kind": "contrastivemix-train",
            "result_version": RESULT_VERSION,
            "backbone": self.backbone_id,
            "train_data": self.data_identity(self.c.train_data),
            "train_max_queries": self.c.train_max_queries,
            "muse": None if run.language is None else self.muse_identity(run.language),
            "language": run.language,
            "precision": precision_name(self.cfg),  # resolved, never "auto"
            "spec": spec,
        }

    def bm25_config(self, target: Target) -> dict:
        report, tune = self.splits(target.benchmark)
        return {
            "kind": "contrastivemix-bm25",
            "benchmark": target.benchmark,
            "language": target.language,
            "refs": [self.data_identity(r) for r in self.refs(target.benchmark)],
            "report_split": report,
            "tune_split": tune,
            "tune_max_queries": self.c.tune_max_queries,
            "k1": self.c.bm25_k1,
            "b": self.c.bm25_b,
            "depth": self.c.fusion_depth,
            "metrics_depth": self.c.depth,
            "analyzer": ANALYZER_VERSION,
        }

    def eval_config(self, run: ModelRun, target: Target) -> dict:
        return {
            "kind": "contrastivemix-eval",
            "model": self.train_config(run),
            "bm25": self.bm25_config(target),
            "depth": self.c.depth,
            "hybrid_step": self.c.hybrid_step,
        }

    def figure_benchmark(self) -> str:
        return "mrtydi" if self.c.figure_language in self.c.mrtydi_languages else "miracl"

    def embed_config(self, run: ModelRun) -> dict:
        benchmark = self.figure_benchmark()
        return {
            "kind": "contrastivemix-embed",
            "model": self.train_config(run),
            "benchmark": benchmark,
            "data": self.data_identity(self.refs(benchmark)[0]),
            "language": self.c.figure_language,
            "split": VALIDATION_SPLIT,
            "points": self.c.umap_points,
        }

    def umap_config(self, run: ModelRun, side: str) -> dict:
        return {
            "kind": "contrastivemix-umap",
            "embed": self.embed_config(run),
            "side": side,
            "n_neighbors": self.c.umap_neighbors,
            "min_dist": self.c.umap_min_dist,
            "random_state": 0,
        }

    def complete(self, run: ModelRun) -> bool:
        return (
            self.train_config(run) in self.caches["train"]
            and all(self.eval_config(run, t) in self.caches["eval"] for t in run.targets)
            and (not run.embed or self.embed_config(run) in self.caches["embed"])
        )

    # ---- BM25 (one per language, shared by every model)
    def bm25(self, target: Target) -> dict:
        cfg = self.bm25_config(target)
        rec = self.caches["bm25"].run(cfg, lambda: self._run_bm25(target, cfg))
        folder = self.caches["bm25"].root
        return {"record": rec, "rankings": {s: _load_ranking(folder / f) for s, f in rec["files"].items()}}

    def _run_bm25(self, target: Target, cfg: dict) -> dict:
        from .evaluate import bm25_rank, evaluate_run, mean_scores

        report, tune = self.report_queries(target), self.tune_queries(target)
        coll = self.collection(target)
        rankings = bm25_rank(
            coll.iter_texts(), {"report": report.queries, "tune": tune.queries}, target.language,
            depth=self.c.fusion_depth, k1=self.c.bm25_k1, b=self.c.bm25_b, n_passages=len(coll),
        )
        key = config_hash(cfg)
        files = {}
        for split, ranking in rankings.items():
            files[split] = f"{key}-{split}.npz"
            ranking.save(self.caches["bm25"].root / files[split])
        docid_of = coll.docids(rankings["report"].indices.ravel())
        per_query = evaluate_run(rankings["report"].to_run(docid_of, self.c.depth), report.qrels)
        return {"files": files, "mean": mean_scores(per_query), "per_query": per_query, "n_queries": len(report), "n_passages": len(coll)}

    # ---- one model
    def run_model(self, run: ModelRun) -> None:
        from ..core.encoders import load_dual_encoder
        from .train import train_dual_encoder

        train_cfg = self.train_config(run)
        ckpt = self.root / "checkpoints" / config_hash(train_cfg)
        if checkpoint_ok(ckpt, what="retrieval checkpoint"):
            import json

            model, tokenizer = load_dual_encoder(ckpt)
            stats = json.loads((ckpt / "train.json").read_text())
            stats.pop("spec", None)
        else:
            model, tokenizer, stats = train_dual_encoder(
                self.train_set(),
                self.spec(run),
                backbone=self.memo("backbone", lambda: load_dual_encoder(self.backbone_path)),  # read from disk once
                out_dir=ckpt if self.c.save_checkpoints else None,
                dictionary=None if run.language is None else self.dictionary(run.language),
                device=self.cfg.torch_device().type,
                mixed_precision=_mixed_precision(self.cfg),
                desc=f"train {run.name}",
            )
        self.caches["train"].put(train_cfg, stats)
        for target in run.targets:
            cfg = self.eval_config(run, target)
            self.caches["eval"].run(cfg, lambda t=target, c=cfg: self._evaluate(model, tokenizer, t, c))
        if run.embed:
            cfg = self.embed_config(run)
            self.caches["embed"].run(cfg, lambda: self._embed(model, tokenizer, cfg))
        if ckpt.exists() and not self.c.keep_checkpoints and self.complete(run):
            shutil.rmtree(ckpt)  # everything this model is needed for is cached

    def _encoders(self, model, tokenizer):
        from .train import encoder_fn

        kw = dict(batch_size=self.c.encode_batch_size, device=self.cfg.torch_device(), amp_dtype=self.cfg.amp_dtype(),
                  sort_window=self.c.encode_sort_window)
        return (
            encoder_fn(model, tokenizer, "query", max_length=self.c.query_max_length, **kw),
            encoder_fn(model, tokenizer, "passage", max_length=self.c.passage_max_length, **kw),
        )

    def _evaluate(self, model, tokenizer, target: Target, cfg: dict) -> dict:
        from .evaluate import SplitRuns, dense_rank, evaluate_hybrid, evaluate_run, hybrid_grid, mean_scores
        from ..common.fastpath import encode_corpus

        report_split, tune_split = self.splits(target.benchmark)
        report_q, tune_q = self.report_queries(target), self.tune_queries(target)
        coll = self.collection(target)
        sparse = self.bm25(target)["rankings"]
        enc_q, _ = self._encoders(model, tokenizer)
        path = self.root / "embeddings" / f"{config_hash(cfg)}.npy"
        # The corpus streams from its memory-mapped dataset window by window (length-sorted,
        # tokenised one window ahead, one device-to-host copy per window) into a float16
        # .npy that dense_rank memory-maps; an interrupted encoding resumes (see encode_corpus).
        corpus = encode_corpus(
            model.passage_model, tokenizer, coll.texts, len(coll), path,
            max_length=self.c.passage_max_length, batch_size=self.c.encode_batch_size, sort_window=self.c.encode_sort_window,
            device=self.cfg.torch_device(), amp_dtype=self.cfg.amp_dtype(), desc=f"encode {coll.name}",
        )
        dense = {
            name: dense_rank(enc_q(list(qs.queries.values())), corpus, list(qs.queries), depth=self.c.fusion_depth,
                             device=self.cfg.torch_device(), chunk_size=self.c.search_chunk_size)
            for name, qs in (("report", report_q), ("tune", tune_q))
        }
        del corpus
        rows = np.concatenate([r.indices.ravel() for r in (*dense.values(), *sparse.values())])
        docid_of = coll.docids(rows)
        report = SplitRuns(report_split, report_q.qrels, dense["report"], sparse["report"], docid_of)
        tune = SplitRuns(tune_split, tune_q.qrels, dense["tune"], sparse["tune"], docid_of)
        grid = hybrid_grid(self.c.hybrid_step)
        dense_pq = evaluate_run(dense["report"].to_run(docid_of, self.c.depth), report_q.qrels)
        shared: dict = {}  # each split's hybrid scores over the grid, computed once for both settings
        result = {
            "n_queries": len(report_q),
            "n_passages": len(coll),
            "dense": {"mean": mean_scores(dense_pq), "per_query": dense_pq},
            "hybrid": evaluate_hybrid(report, tune, grid=grid, depth=self.c.depth, cache=shared),
            "hybrid_report_split": evaluate_hybrid(report, None, grid=grid, depth=self.c.depth, tune_on_report_split=True, cache=shared),
        }
        if not self.c.keep_corpus_embeddings:
            for p in path.parent.glob(f"{path.stem}.*"):
                p.unlink()
        return result

    def _embed(self, model, tokenizer, cfg: dict) -> dict:
        """English and target-language validation queries (query encoder) and their first positive passages (passage encoder)."""
        from ..core.runs import atomic_write_bytes

        enc_q, enc_p = self._encoders(model, tokenizer)
        arrays, labels = {}, {}
        for lang in ("en", cfg["language"]):
            qs = self.queries(cfg["benchmark"], lang, cfg["split"], sample=cfg["points"])
            qids = [q for q in qs.queries if qs.positives.get(q)]
            arrays[f"query_{lang}"] = enc_q([qs.queries[q] for q in qids]).astype(np.float16)
            arrays[f"passage_{lang}"] = enc_p([qs.positives[q][0] for q in qids]).astype(np.float16)
            labels[lang] = len(qids)
        import io

        buf = io.BytesIO()
        np.savez(buf, **arrays)
        name = f"{config_hash(cfg)}.npz"
        atomic_write_bytes(self.caches["embed"].root / name, buf.getvalue())
        return {"file": name, "counts": labels}


def _mixed_precision(cfg: Profile) -> str:
    import torch

    dtype = cfg.amp_dtype()
    return "no" if dtype is None else ("bf16" if dtype == torch.bfloat16 else "fp16")


def _load_ranking(path: Path):
    from .evaluate import Ranking

    return Ranking.load(path)


def run(cfg: Profile) -> "Results":
    """Train and evaluate every model of :func:`plan` (cached runs are skipped); return :func:`load_results`."""
    ctx = _Context(cfg)
    runs = plan(cfg)
    targets = sorted({t for r in runs for t in r.targets}, key=lambda t: (t.benchmark, t.language))
    for t in progress(targets, desc="BM25", unit="language"):
        ctx.bm25(t)
    todo = [r for r in runs if not ctx.complete(r)]
    print(f"contrastivemix: {len(runs)} models, {len(runs) - len(todo)} cached, {len(todo)} to run", flush=True)
    for r in progress(todo, desc="contrastivemix models", unit="model"):
        ctx.run_model(r)
    return load_results(cfg)


def train_all(cfg: Profile) -> None:
    """Train and save every model of the grid, without evaluating: the part worth spreading over GPUs.

    ``accelerate launch -m codeswitch.contrastivemix.experiment --profile paper``
    starts one process per GPU; every process encodes its slice of each global
    batch and the passages are gathered across devices (see
    :mod:`codeswitch.contrastivemix.train`).  Checkpoints are always saved here; the
    notebook (``./reproduce.sh --profile paper --only 05``) then finds them and only
    evaluates.  Models already trained or fully evaluated are skipped.
    """
    from accelerate import PartialState

    from ..core.encoders import load_dual_encoder
    from .train import train_dual_encoder

    ctx = _Context(cfg)
    main = PartialState().is_main_process
    for r in progress(plan(cfg), desc="contrastivemix training", unit="model", disable=not main):
        train_cfg = ctx.train_config(r)
        ckpt = ctx.root / "checkpoints" / config_hash(train_cfg)
        if ctx.complete(r) or checkpoint_ok(ckpt, what="retrieval checkpoint"):
            continue
        _, _, stats = train_dual_encoder(
            ctx.train_set(), ctx.spec(r),
            backbone=ctx.memo("backbone", lambda: load_dual_encoder(ctx.backbone_path)),
            out_dir=ckpt,
            dictionary=None if r.language is None else ctx.dictionary(r.language),
            device=cfg.torch_device().type,
            mixed_precision=_mixed_precision(cfg),
            desc=f"train {r.name}",
        )
        if main:
            ctx.caches["train"].put(train_cfg, stats)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from ..core.profiles import parse_overrides
    from ..core.profiles import load_profile

    parser = argparse.ArgumentParser(
        prog="python -m codeswitch.contrastivemix.experiment",
        description="Train every ContrastiveMix model of a profile (run under `accelerate launch` for several GPUs); "
        "notebook 05 then evaluates them.",
    )
    parser.add_argument("--profile", default="paper")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    train_all(load_profile(args.profile, parse_overrides(args.overrides)))
    return 0


# --------------------------------------------------------------------------- results
SETTINGS = {
    "hybrid": "",  # the tables' main rows
    "hybrid_report_split": " · tuned on {split} (released code)",
    "dense": " · dense only",
}
METRIC_KEYS = {"MRR@100": "mrr@100", "Recall@100": "recall@100"}
BM25_SEED = -1  # BM25 has no seed: its rows carry this placeholder


@dataclass
class Results:
    """The cached results of the grid: ``frame`` (one row per model, target, setting and metric) and per-query scores."""

    frame: pd.DataFrame
    per_query: dict = field(repr=False)  # (variant, benchmark, language, setting) -> {seed: {metric: {qid: value}}}

    def _repr_html_(self):  # pragma: no cover - notebook display
        return self.summary()._repr_html_()

    def summary(self) -> pd.DataFrame:
        """Mean over seeds of every (method, benchmark, language) under the main setting."""
        f = self.frame[self.frame["setting"].isin(["hybrid", "bm25"])]
        return f.pivot_table(index=["benchmark", "language"], columns=["row", "metric"], values="value", aggfunc="mean", sort=False).round(2)


def load_results(cfg: Profile) -> Results:
    """Read every result of the grid from the run cache (nothing is computed; missing runs raise)."""
    ctx = _Context(cfg)
    rows, per_query = [], {}
    missing = []
    for r in plan(cfg):
        for t in r.targets:
            rec = ctx.caches["eval"].get(ctx.eval_config(r, t))
            if rec is None:
                missing.append(f"{r.name} on {t.benchmark}-{t.language}")
                continue
            report_split = ctx.splits(t.benchmark)[0]
            for setting in SETTINGS:
                res = rec[setting]
                for metric, value in res["mean"].items():
                    rows.append(dict(variant=r.variant.key, row=r.variant.label or r.variant.ablation_label, benchmark=t.benchmark,
                                     language=t.language, seed=r.seed, setting=setting, metric=metric, value=value,
                                     weight=res.get("weight"), report_split=report_split))
                per_query.setdefault((r.variant.key, t.benchmark, t.language, setting), {})[r.seed] = res["per_query"]
    if missing:
        raise RuntimeError(f"contrastivemix: {len(missing)} evaluations are not in the run cache (run contrastivemix.run first): {missing[:5]} …")
    for t in sorted({(x["benchmark"], x["language"]) for x in rows}):
        rec = ctx.caches["bm25"].get(ctx.bm25_config(Target(*t)))
        for metric, value in rec["mean"].items():
            rows.append(dict(variant="bm25", row="BM25", benchmark=t[0], language=t[1], seed=BM25_SEED, setting="bm25",
                             metric=metric, value=value, weight=None, report_split=ctx.splits(t[0])[0]))
    return Results(pd.DataFrame(rows), per_query)


# --------------------------------------------------------------------------- tables
def _col(language: str, benchmark: str) -> str:
    return language.capitalize() if benchmark == "mrtydi" else language


def _p_value(results: Results, variant: str, benchmark: str, language: str, metric: str) -> float:
    """Paired t-test against mDPR on per-query scores averaged over seeds (main setting)."""
    from .evaluate import paired_t_test

    def averaged(key):
        seeds = results.per_query.get((key, benchmark, language, "hybrid"), {})
        qids = sorted(set.intersection(*(set(s[metric]) for s in seeds.values()))) if seeds else []
        return {q: float(np.mean([s[metric][q] for s in seeds.values()])) for q in qids}

    return paired_t_test(averaged(variant), averaged("mdpr"))


def _language_table(results: Results, cfg: Profile, benchmark: str, groups: Sequence[tuple[Sequence[str], str | None]], metric: str, table_id: str):
    """Rows: methods × settings (+ BM25); columns: languages and group averages; mean ± std over seeds."""
    from ..core.report import comparison

    c = config(cfg)
    f = results.frame
    f = f[(f["benchmark"] == benchmark) & (f["metric"] == METRIC_KEYS[metric])]
    report_split = c.mrtydi_report_split if benchmark == "mrtydi" else c.miracl_report_split
    cells, order_rows, order_cols, pvals = [], [], [], {}
    for setting, suffix in [*SETTINGS.items(), ("bm25", None)]:
        variants = MAIN_VARIANTS if setting != "bm25" else ("bm25",)
        for key in variants:
            label = "BM25" if key == "bm25" else VARIANTS[key].label + suffix.format(split=report_split)
            sub = f[(f["variant"] == key) & (f["setting"] == setting)]
            if sub.empty:
                continue
            order_rows.append(label)
            for languages, avg_label in groups:
                per_seed = {}
                for lang in languages:
                    vals = sub[sub["language"] == lang]
                    if vals.empty:
                        continue
                    col = _col(lang, benchmark)
                    cells.append(dict(row=label, column=col, mean=vals["value"].mean(), std=vals["value"].std(ddof=1) if len(vals) > 1 else 0.0, n=len(vals)))
                    order_cols.append(col)
                    for seed, v in zip(vals["seed"], vals["value"]):
                        per_seed.setdefault(seed, []).append(v)
                    if setting == "hybrid" and key not in ("mdpr", "bm25"):
                        pvals[(label, col)] = _p_value(results, key, benchmark, lang, METRIC_KEYS[metric])
                if avg_label and per_seed:
                    avgs = [float(np.mean(v)) for v in per_seed.values()]
                    cells.append(dict(row=label, column=avg_label, mean=float(np.mean(avgs)), std=float(np.std(avgs, ddof=1)) if len(avgs) > 1 else 0.0, n=len(avgs)))
                    order_cols.append(avg_label)
    measured = pd.DataFrame(cells)
    wide, long = comparison(measured, paper="contrastivemix", table=table_id, row_order=order_rows, column_order=list(dict.fromkeys(order_cols)))
    long["p_value"] = [pvals.get((r, col), np.nan) for r, col in zip(long["row"], long["column"])]
    long["significant"] = [int(p < 0.05) if not math.isnan(p) else 0 for p in long["p_value"]]
    return _mark_stars(wide, long), long


def _mark_stars(wide: pd.DataFrame, long: pd.DataFrame) -> pd.DataFrame:
    """``*`` after our mean where p < 0.05 against mDPR, and after the paper's value where the paper stars it."""
    from ..core.reported.contrastivemix import STAR

    wide = wide.copy()
    for rec in long.itertuples():
        if rec.row not in wide.index or rec.column not in wide.columns:
            continue
        text = wide.loc[rec.row, rec.column]
        if rec.significant:
            text = re.sub(r"^(-?\d+\.\d+)", r"\1*", text)
        if STAR in (rec.paper_note or ""):
            text = re.sub(r"(paper -?\d+\.\d+)", r"\1*", text)
        wide.loc[rec.row, rec.column] = text
    return wide


def _mrtydi_groups(c: ContrastiveMixConfig):
    return [(c.low_similarity, "Avg (low)" if c.low_similarity else None), (c.high_similarity, "Avg (high)" if c.high_similarity else None)]


def _notes(cfg: Profile, benchmark: str) -> list[str]:
    c = config(cfg)
    report, tune = (c.mrtydi_report_split, c.mrtydi_tune_split) if benchmark == "mrtydi" else (c.miracl_report_split, c.miracl_tune_split)
    notes = [
        f"Main rows: BM25 + dense hybrid, weight on dense tuned on {tune} (MRR@100), scored on {report}; "
        f"'tuned on {report} (released code)': the weight tuned on the reported split itself; 'dense only': no BM25.",
        "mean ± std over seeds; * after our mean: paired t-test against mDPR on per-query scores (averaged over seeds), p < 0.05; "
        "* after the paper's value: starred in the paper.",
        "Averages: over the configured languages of the group, per seed, then over seeds.",
    ]
    if c.train_data == "synthetic":
        notes.append("smoke profile: tiny random-init encoders on the synthetic retrieval set; numbers test the pipeline, not the paper.")
    return notes


def _save(cfg, wide, long, name, caption, notes):
    from ..core.report import save_table

    return save_table(wide, name, cfg, caption=caption, long=long, notes=notes)


def table1(cfg: Profile, results: Results) -> dict[str, Path]:
    """Table 1: MRR@100 on Mr.TyDi, low- and high-similarity groups."""
    wide, long = _language_table(results, cfg, "mrtydi", _mrtydi_groups(config(cfg)), "MRR@100", "table1")
    return _save(cfg, wide, long, "contrastivemix_table1", "MRR@100 on Mr.TyDi (ContrastiveMix Table 1)", _notes(cfg, "mrtydi"))


def table2(cfg: Profile, results: Results) -> dict[str, Path]:
    """Table 2: MRR@100 on MIRACL (dev)."""
    c = config(cfg)
    groups = [(c.miracl_target, None), (c.miracl_high_similarity, "Avg (high)" if c.miracl_high_similarity else None)]
    wide, long = _language_table(results, cfg, "miracl", groups, "MRR@100", "table2")
    return _save(cfg, wide, long, "contrastivemix_table2", "MRR@100 on MIRACL dev (ContrastiveMix Table 2)", _notes(cfg, "miracl"))


def table4(cfg: Profile, results: Results) -> dict[str, Path]:
    """Table 4: Recall@100 on Mr.TyDi."""
    wide, long = _language_table(results, cfg, "mrtydi", _mrtydi_groups(config(cfg)), "Recall@100", "table4")
    return _save(cfg, wide, long, "contrastivemix_table4", "Recall@100 on Mr.TyDi (ContrastiveMix Table 4)", _notes(cfg, "mrtydi"))


def table3(cfg: Profile, results: Results) -> dict[str, Path]:
    """Table 3: query-/passage-side mixing, averages over the low-similarity languages (main setting)."""
    from ..core.report import comparison

    c = config(cfg)
    f = results.frame
    f = f[(f["benchmark"] == "mrtydi") & (f["setting"] == "hybrid") & (f["language"].isin(c.low_similarity))]
    order = ["mdpr", "naivemix", "naivemix-passage", "naivemix-query", "contrastivemix-both", "contrastivemix-passage", "contrastivemix"]
    cells = []
    for key in order:
        for col, metric in METRIC_KEYS.items():
            sub = f[(f["variant"] == key) & (f["metric"] == metric)]
            if sub.empty:
                continue
            avgs = sub.groupby("seed", sort=True)["value"].mean().to_numpy()
            cells.append(dict(row=VARIANTS[key].ablation_label, column=col, mean=float(avgs.mean()),
                              std=float(avgs.std(ddof=1)) if len(avgs) > 1 else 0.0, n=len(avgs)))
    wide, long = comparison(pd.DataFrame(cells), paper="contrastivemix", table="table3",
                            row_order=[VARIANTS[k].ablation_label for k in order], column_order=list(METRIC_KEYS))
    notes = [
        f"Averages over the low-similarity languages {list(c.low_similarity)} (per seed, then mean ± std over seeds); "
        "hybrid with the weight tuned on Mr.TyDi dev.",
        "(query) / (passage) / (query+passage): the side(s) that are code-mixed.",
    ]
    return _save(cfg, wide, long, "contrastivemix_table3", "Code-mixing queries and/or passages, low-similarity average (ContrastiveMix Table 3)", notes)


# --------------------------------------------------------------------------- data examples
def examples(cfg: Profile, n: int = 4) -> pd.DataFrame:
    """A few English validation queries and their code-mixed versions (the figure language's dictionary)."""
    import random

    from .codemix import code_mix

    ctx = _Context(cfg)
    c = ctx.c
    qs = ctx.queries(ctx.figure_benchmark(), "en", VALIDATION_SPLIT)
    d = ctx.dictionary(c.figure_language)
    rows = []
    for i, text in enumerate(list(qs.queries.values())[:n]):
        rows.append({
            "English query": text,
            f"code-mixed, r_w = {c.word_rate} (en-{c.figure_language})": code_mix(text, d, c.word_rate, random.Random(i), case_sensitive=c.case_sensitive),
            "code-mixed, r_w = 1": code_mix(text, d, 1.0, random.Random(i), case_sensitive=c.case_sensitive),
        })
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- UMAP figures
def _umap_fit(x: np.ndarray, n_neighbors: int, min_dist: float, random_state: int) -> np.ndarray:
    """2-D UMAP of ``x`` (n, H); the k-nearest-neighbour graph is computed exactly (scikit-learn) and handed to UMAP."""
    import warnings

    import umap
    from sklearn.neighbors import NearestNeighbors

    k = max(2, min(n_neighbors, len(x) - 1))
    dist, idx = NearestNeighbors(n_neighbors=k).fit(x).kneighbors(x)  # (n, k), self first
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "n_jobs overridden by random_state": intended, for reproducibility
        reducer = umap.UMAP(n_neighbors=k, min_dist=min_dist, random_state=random_state, precomputed_knn=(idx.astype(np.int32), dist.astype(np.float32)))
        return reducer.fit_transform(x)


def umap_coordinates(cfg: Profile) -> pd.DataFrame:
    """2-D UMAP coordinates of the figure models' validation embeddings (cached: a redraw never refits).

    Columns ``model`` (variant key), ``side`` ("query" | "passage"), ``language``, ``x``, ``y``.
    """
    ctx = _Context(cfg)
    c = ctx.c
    first = cfg.seeds[0]
    frames = []
    for key in FIGURE_VARIANTS:
        run_ = ModelRun(VARIANTS[key], None if key == "mdpr" else c.figure_language, first, (), embed=True)
        ecfg = ctx.embed_config(run_)
        rec = ctx.caches["embed"].get(ecfg)
        if rec is None:
            raise RuntimeError(f"contrastivemix: the embeddings of {run_.name} are not in the run cache (run contrastivemix.run first)")
        sides = ("query",) if key == "contrastivemix" else ("query", "passage")
        for side in sides:
            def fit(side=side, rec=rec):
                with np.load(ctx.caches["embed"].root / rec["file"]) as z:
                    parts = [(lang, z[f"{side}_{lang}"].astype(np.float32)) for lang in ("en", c.figure_language)]
                xy = _umap_fit(np.concatenate([p for _, p in parts]), c.umap_neighbors, c.umap_min_dist, 0)
                langs = [lang for lang, p in parts for _ in range(len(p))]
                return {"x": xy[:, 0], "y": xy[:, 1], "language": langs}
            coords = ctx.caches["umap"].run(ctx.umap_config(run_, side), fit)
            frames.append(pd.DataFrame({"model": key, "side": side, **coords}))
    return pd.concat(frames, ignore_index=True)


_LANG_NAMES = {"en": "English", "ko": "Korean", "ar": "Arabic", "ja": "Japanese", "th": "Thai", "id": "Indonesian", "fi": "Finnish",
               "ru": "Russian", "bn": "Bengali", "zh": "Chinese", "fa": "Persian", "es": "Spanish", "fr": "French", "hi": "Hindi"}


def _umap_figure(coords: pd.DataFrame, key: str, sides: Sequence[str], title: str):
    import matplotlib.pyplot as plt

    from ..core.report import seaborn_style

    seaborn_style()
    fig, axes = plt.subplots(1, len(sides), figsize=(4.2 * len(sides), 4.0), squeeze=False)
    palette = {"en": "tab:green"}
    for ax, side in zip(axes[0], sides):
        sub = coords[(coords["model"] == key) & (coords["side"] == side)]
        for lang in dict.fromkeys(sub["language"]):
            pts = sub[sub["language"] == lang]
            ax.scatter(pts["x"], pts["y"], s=8, alpha=0.6, color=palette.get(lang, "tab:red"), label=_LANG_NAMES.get(lang, lang), edgecolors="none")
        ax.set_title(f"{side} encoder")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.legend(loc="best", fontsize=8, markerscale=2)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _figure(cfg, coords, key, sides, name, title, caption):
    import matplotlib.pyplot as plt

    from ..core.report import save_figure

    fig = _umap_figure(coords, key, sides, title)
    paths = save_figure(fig, name, cfg, caption=caption)
    plt.close(fig)
    return paths


def figure1(cfg: Profile, coords: pd.DataFrame) -> dict[str, Path]:
    """Figure 1: ContrastiveMix's query encoder, English vs the target language."""
    lang = _LANG_NAMES.get(config(cfg).figure_language, config(cfg).figure_language)
    return _figure(cfg, coords, "contrastivemix", ("query",), "contrastivemix_figure1", f"ContrastiveMix (target: {lang})",
                   f"UMAP of English and {lang} validation queries from ContrastiveMix's query encoder (ContrastiveMix Figure 1)")


def figure2(cfg: Profile, coords: pd.DataFrame) -> dict[str, Path]:
    """Figure 2: mDPR's query and passage encoders."""
    lang = _LANG_NAMES.get(config(cfg).figure_language, config(cfg).figure_language)
    return _figure(cfg, coords, "mdpr", ("query", "passage"), "contrastivemix_figure2", "mDPR",
                   f"UMAP of English and {lang} validation queries / passages from mDPR's encoders (ContrastiveMix Figure 2)")


def figure3(cfg: Profile, coords: pd.DataFrame) -> dict[str, Path]:
    """Figure 3: NaiveMix's query and passage encoders."""
    lang = _LANG_NAMES.get(config(cfg).figure_language, config(cfg).figure_language)
    return _figure(cfg, coords, "naivemix", ("query", "passage"), "contrastivemix_figure3", f"NaiveMix (target: {lang})",
                   f"UMAP of English and {lang} validation queries / passages from NaiveMix's encoders (ContrastiveMix Figure 3)")


if __name__ == "__main__":
    import sys

    sys.exit(main())
