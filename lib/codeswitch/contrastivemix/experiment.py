"""ContrastiveMix (notebook 05): mDPR, NaiveMix and ContrastiveMix; Tables 1–4 and the UMAP Figures 1–3.

The experiment contract (:mod:`codeswitch.core.experiment`), top to bottom:

1. :class:`~codeswitch.contrastivemix.config.Config` — the ``contrastivemix`` section.
2. :func:`plan` — every run, typed (:mod:`codeswitch.contrastivemix.config`): a grid of
   *models* (one :class:`~.config.TrainRun` per method, variant, target language and
   seed), BM25 per target, then each model's evaluations, the figure models'
   embeddings and their UMAP fits:

   ==========================  ====================  =======================================
   model                       trained for            evaluated on
   ==========================  ====================  =======================================
   mDPR                        (English only)         every configured language
   NaiveMix, ContrastiveMix    each target language   that language, on each benchmark that has it
   Table 3's four ablations    each low-similarity    that language (Mr.TyDi)
                               (ablation_languages)
   ==========================  ====================  =======================================

3. :func:`run_one` — one run of any kind, computed.
4. :func:`run` — every run through :func:`codeswitch.core.runs.run_grid`, kind by kind in
   the order of their dependencies (training, BM25, evaluations, embeddings, UMAP), each
   cached under ``runs/<profile>/contrastivemix/<kind>/``.  A trained encoder is saved
   (safetensors) under ``checkpoints/<key>`` for the evaluations that read it, and
   deleted once they are all cached (the models ``keep_models`` asks for are kept first, as
   sentence-transformers pairs: :func:`keep_models`); an evaluation whose checkpoint is gone retrains it.
5. :func:`tables` (:mod:`.tables`) and :func:`figures` (:mod:`.figures`) read only the results.

Conventions (the authors' released code unless said otherwise; the other reading
is a named option of :class:`~.config.Config`):

* tables report the sparse–dense hybrid with its weight tuned on a split *other*
  than the reported one (Mr.TyDi: dev → test; MIRACL: train → dev).  The released
  script tunes on the reported split; that setting is reported too, labelled
  "tuned on <split> (released code)", and so is the dense retriever alone;
* words are looked up in the dictionary lower-cased (``case_sensitive=True``: as
  written, the released code), and mixed inputs keep [CLS]/[SEP]
  (``mixed_special_tokens=False``: dropped, the released code);
* NaiveMix draws one decision for a query and one for its passages (positive and
  hard negative together).

Training can be spread over GPUs apart from the notebook: ``accelerate launch -m
codeswitch.contrastivemix.experiment --profile paper`` (see :func:`train_all`).
"""

from __future__ import annotations

import functools
import io
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core import kept
from ..core.checkpoints import checkpoint_ok
from ..core.experiment import Results, RunSpec, Stage
from ..core.profiles import Profile, seeds_for
from ..core.runs import RunCache, glob_escape
from .config import (ANALYZER_VERSION, SECTION, VALIDATION_SPLIT, Bm25Run, Config, EmbedRun, EvalRun, TrainRun, UmapRun,
                     load)

__all__ = ["Config", "VARIANTS", "plan", "run_one", "run", "kept_model", "keep_models", "train_all", "examples", "Target"]

EXPERIMENT = SECTION
KINDS = {TrainRun: "train", Bm25Run: "bm25", EvalRun: "eval", EmbedRun: "embed", UmapRun: "umap"}  # in dependency order


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


def train_run(profile: Profile, c: Config, variant: str, language: str | None, seed: int) -> TrainRun:
    """The :class:`TrainRun` of one model; the settings its method cannot read are left ``None``."""
    from ..core.models import backbone_id

    v = VARIANTS[variant]
    mixes, contrastive = v.method != "mdpr", v.method == "contrastivemix"
    return TrainRun(
        experiment="contrastivemix-train", variant=v.key, method=v.method, mix_query=v.mix_query, mix_passage=v.mix_passage,
        language=language, seed=seed, model=c.backbone.model,
        backbone_id=backbone_id(c.backbone.model),  # a tiny backbone's id changes with its recipe (so do the keys)
        train_data=c.train_data, train_max_queries=c.train_max_queries, muse=c.muse if mixes else None,
        precision=profile.precision_name(), num_train_epochs=c.num_train_epochs, batch_size=c.batch_size,
        learning_rate=c.learning_rate, warmup_ratio=c.warmup_ratio, weight_decay=c.weight_decay,
        query_max_length=c.query_max_length, passage_max_length=c.passage_max_length,
        sentence_rate=c.sentence_rate if v.method == "naivemix" else None,  # ContrastiveMix mixes a copy of every query
        word_rate=c.word_rate if mixes else None,
        align_weight=c.align_weight if contrastive else None,
        case_sensitive=c.case_sensitive if mixes else None,
        mixed_special_tokens=c.mixed_special_tokens if mixes else None,
        passage_align=c.passage_align if contrastive and v.mix_passage else None,
        packing=True if c.packing else None, torch_compile=c.torch_compile or None,
    )


def bm25_run(c: Config, target: Target) -> Bm25Run:
    report, tune = c.splits(target.benchmark)
    queries, corpus = c.refs(target.benchmark)
    pyserini = None
    if c.bm25_implementation != "bm25s":  # bm25s records keep their keys; Pyserini's depend on its version (its analysers)
        from .lucene import pyserini_version

        pyserini = pyserini_version()
    return Bm25Run(
        experiment="contrastivemix-bm25", benchmark=target.benchmark, language=target.language, queries=queries, corpus=corpus,
        report_split=report, tune_split=tune, tune_max_queries=c.tune_max_queries, k1=c.bm25_k1, b=c.bm25_b,
        depth=c.fusion_depth, metrics_depth=c.depth, analyzer=ANALYZER_VERSION,
        implementation=None if pyserini is None else c.bm25_implementation, pyserini=pyserini,
    )


def embed_run(c: Config, model: TrainRun) -> EmbedRun:
    return EmbedRun(
        experiment="contrastivemix-embed", model=model, benchmark=c.figure_benchmark, data=c.refs(c.figure_benchmark)[0],
        language=c.figure_language, split=VALIDATION_SPLIT, points=c.umap_points,
        per_device_eval_batch_size=c.per_device_eval_batch_size, encode_sort_window=c.encode_sort_window,
    )


def plan(profile: Profile) -> list[RunSpec]:
    """Every run of the experiment, typed, in dependency order: models (mDPR first), BM25, evaluations, embeddings, UMAP fits."""
    c = load(profile)
    mrtydi = [Target("mrtydi", lang) for lang in c.mrtydi_languages]
    targets = mrtydi + [Target("miracl", lang) for lang in c.miracl_languages]
    models: list[tuple[TrainRun, tuple[Target, ...], bool]] = []  # (model, its targets, embed for the figures)
    for i, seed in enumerate(seeds_for(profile, c.seeds)):
        first = i == 0
        models.append((train_run(profile, c, "mdpr", None, seed), tuple(targets), first))
        # one model per language, evaluated on each benchmark that has the language (Mr.TyDi and MIRACL share some)
        for language in dict.fromkeys(t.language for t in targets):
            own = tuple(t for t in targets if t.language == language)
            for key in ("naivemix", "contrastivemix"):
                models.append((train_run(profile, c, key, language, seed), own, first and language == c.figure_language))
        if c.ablations:
            for t in (x for x in mrtydi if x.language in c.table3_languages):
                for key in ABLATION_VARIANTS:
                    models.append((train_run(profile, c, key, t.language, seed), (t,), False))
    bm25 = {t: bm25_run(c, t) for t in sorted({t for _, ts, _ in models for t in ts}, key=lambda t: (t.benchmark, t.language))}
    evals = [EvalRun(experiment="contrastivemix-eval", model=m, bm25=bm25[t], depth=c.depth, hybrid_step=c.hybrid_step,
                     per_device_eval_batch_size=c.per_device_eval_batch_size, encode_sort_window=c.encode_sort_window,
                     search_chunk_size=c.search_chunk_size, keep_corpus_embeddings=c.keep_corpus_embeddings)
             for m, ts, _ in models for t in ts]
    embeds = {m.variant: embed_run(c, m) for m, _, embed in models if embed}
    umaps = [UmapRun(experiment="contrastivemix-umap", embed=embeds[key], side=side, n_neighbors=c.umap_neighbors,
                     min_dist=c.umap_min_dist, random_state=0)
             for key in FIGURE_VARIANTS if key in embeds for side in figure_sides(key)]
    return [m for m, _, _ in models] + list(bm25.values()) + evals + list(embeds.values()) + umaps


def figure_sides(variant: str) -> tuple[str, ...]:
    """The encoders a figure shows: ContrastiveMix mixes queries only, so Figure 1 shows its query encoder."""
    return ("query",) if variant == "contrastivemix" else ("query", "passage")


# --------------------------------------------------------------------------- data (read once per process)
@functools.lru_cache(maxsize=2)
def _train_set(ref: str, max_queries: int | None):
    from .data import load_train_set

    return load_train_set(ref, max_queries=max_queries)


@functools.lru_cache(maxsize=64)
def _queries(benchmark: str, ref: str, language: str, split: str):
    from .data import load_queries

    return load_queries(benchmark, ref, language, split, what=f"contrastivemix.{benchmark}")


@functools.lru_cache(maxsize=2)
def _collection(benchmark: str, ref: str, language: str):
    from .data import load_collection

    return load_collection(benchmark, ref, language, what=f"contrastivemix.{benchmark}_corpus")


@functools.lru_cache(maxsize=16)
def _dictionary(muse: str, language: str, download_dir: Path) -> dict[str, list[str]]:
    from .codemix import load_muse, muse_path
    from .data import SYNTHETIC, synthetic_glossary_path

    if muse == SYNTHETIC:
        return load_muse(synthetic_glossary_path(language))
    return load_muse(muse_path(muse, language, download_dir=download_dir))


@functools.lru_cache(maxsize=1)
def _backbone(path: str):
    """The backbone read from disk once (training copies it, never modifies it)."""
    from ..core.encoders import load_dual_encoder

    return load_dual_encoder(path)


def _root(profile: Profile) -> Path:
    return profile.runs_dir / EXPERIMENT


def dictionary(profile: Profile, muse: str, language: str) -> dict[str, list[str]]:
    """The en-``language`` MUSE dictionary named by ``muse`` (downloads land in ``runs/<profile>/contrastivemix/muse``)."""
    return _dictionary(muse, language, _root(profile) / "muse")


def backbone_path(profile: Profile, model: str) -> str:
    from ..core.models import resolve_model

    return resolve_model(model, profile, what="contrastivemix.backbones[0].model")


def checkpoint_dir(profile: Profile, spec: TrainRun) -> Path:
    return _root(profile) / "checkpoints" / spec.key_hash()


def _queries_of(spec: Bm25Run, split: str, *, sample: int | None = None):
    return _queries(spec.benchmark, spec.queries, spec.language, split).sample(sample)


# --------------------------------------------------------------------------- one run
def run_one(spec: RunSpec, profile: Profile) -> dict:
    """One run of the plan, computed (no cache): a training, a BM25 ranking, an evaluation, embeddings or a UMAP fit."""
    for cls, fn in ((TrainRun, _train), (Bm25Run, _bm25), (EvalRun, _evaluate), (EmbedRun, _embed), (UmapRun, _umap)):
        if isinstance(spec, cls):
            return fn(spec, profile)
    raise TypeError(f"contrastivemix.run_one: not a run of this experiment: {spec!r}")


def _train(spec: TrainRun, profile: Profile) -> dict:
    """Train one dual encoder and save it (``checkpoints/<key>``); return its training statistics."""
    return _train_model(spec, profile)[2]


def _train_model(spec: TrainRun, profile: Profile):
    from .train import train_dual_encoder

    model, tokenizer, stats = train_dual_encoder(
        _train_set(spec.train_data, spec.train_max_queries),
        spec,
        backbone=_backbone(backbone_path(profile, spec.model)),
        out_dir=checkpoint_dir(profile, spec),
        dictionary=None if spec.language is None else dictionary(profile, spec.muse, spec.language),
        device=profile.torch_device().type,
        mixed_precision="no" if spec.precision == "fp32" else spec.precision,  # accelerate's name
        desc=f"train {spec.name}",
    )
    return model, tokenizer, stats


def trained_model(spec: TrainRun, profile: Profile):
    """The trained ``(DualEncoder, tokenizer)`` of ``spec``: its checkpoint, or trained again where it was deleted."""
    from ..core.encoders import load_dual_encoder

    ckpt = checkpoint_dir(profile, spec)
    if checkpoint_ok(ckpt, what="retrieval checkpoint"):  # missing, or a file missing or changed: train again
        return load_dual_encoder(ckpt)
    model, tokenizer, _ = _train_model(spec, profile)
    return model, tokenizer


def _bm25(spec: Bm25Run, profile: Profile) -> dict:
    from functools import partial

    from .evaluate import bm25_rank, evaluate_run, mean_scores
    from .lucene import lucene_rank

    folder = _root(profile) / KINDS[Bm25Run]
    report, tune = _queries_of(spec, spec.report_split), _queries_of(spec, spec.tune_split, sample=spec.tune_max_queries)
    coll = _collection(spec.benchmark, spec.corpus, spec.language)
    # One contract, two analysers; Lucene's temporary index sits beside the BM25 records.
    rank = partial(lucene_rank, workdir=folder) if spec.implementation == "pyserini" else bm25_rank
    rankings = rank(coll.iter_texts(), {"report": report.queries, "tune": tune.queries}, spec.language,
                    depth=spec.depth, k1=spec.k1, b=spec.b, n_passages=len(coll))
    files = {}
    for split, ranking in rankings.items():
        files[split] = f"{spec.key_hash()}-{split}.npz"
        ranking.save(folder / files[split])
    docid_of = coll.docids(rankings["report"].indices.ravel())
    per_query = evaluate_run(rankings["report"].to_run(docid_of, spec.metrics_depth), report.qrels, depth=spec.metrics_depth)
    return {"files": files, "mean": mean_scores(per_query), "per_query": per_query, "n_queries": len(report), "n_passages": len(coll)}


def _rankings(spec: Bm25Run, record: dict, profile: Profile) -> dict:
    from .evaluate import Ranking

    folder = _root(profile) / KINDS[Bm25Run]
    return {split: Ranking.load(folder / name) for split, name in record["files"].items()}


def encoders(model, tokenizer, profile: Profile, *, query_max_length: int, passage_max_length: int, batch_size: int,
             sort_window: int):
    """``(encode queries, encode passages)``: functions ``texts -> (n, H) float32 array`` on the profile's device."""
    from .train import encoder_fn

    kw = dict(batch_size=batch_size, device=profile.torch_device(), amp_dtype=profile.amp_dtype(), sort_window=sort_window)
    return (encoder_fn(model, tokenizer, "query", max_length=query_max_length, **kw),
            encoder_fn(model, tokenizer, "passage", max_length=passage_max_length, **kw))


def corpus_tokens(coll, tokenizer, max_length: int):
    """Every passage of ``coll`` tokenised (:func:`codeswitch.common.tokens.tokenised_corpus`: int32 memory-mapped
    shards): once per (tokenizer, max_length, corpus), shared by every model that encodes the corpus."""
    from ..common.tokens import tokenised_corpus

    return tokenised_corpus(tokenizer, coll.texts, len(coll), max_length=max_length, desc=f"tokenise {coll.name}")


def corpus_embeddings_path(profile: Profile, encoder: str, b: Bm25Run, passage_max_length: int) -> Path:
    """Where ``encoder``'s float16 embeddings of ``b``'s corpus are written: named by the encoder (a trained model's
    key hash, or the untrained backbone's id), the passages (:func:`~.data.collection_identity`) and their length, so
    the evaluations of one model on two benchmarks that share a corpus (the synthetic Mr.TyDi and MIRACL of a
    language) encode it once.  Deleted once no evaluation still to be computed needs it, unless
    ``keep_corpus_embeddings`` (:func:`_release_corpus_embeddings`)."""
    from ..core.runs import config_hash
    from .data import collection_identity

    ident = {"encoder": encoder, "corpus": list(collection_identity(b.benchmark, b.corpus, b.language)),
             "passage_max_length": passage_max_length}
    return _root(profile) / "embeddings" / f"corpus-{config_hash(ident)}.npy"


def _embedding_files(folder: Path, stem: str) -> list[Path]:
    """The embeddings files of ``folder`` whose stem matches the glob ``stem``, with their resume-protocol companions
    (``.progress.json``, ``.done.json``)."""
    return [p for p in folder.glob(f"{stem}.*") if p.suffix in (".npy", ".json")]


def _trained_embeddings(profile: Profile, e: EvalRun) -> Path:
    return corpus_embeddings_path(profile, e.model.key_hash(), e.bm25, e.model.passage_max_length)


def _untrained_embeddings(profile: Profile, e: EvalRun) -> Path:
    m = e.model
    return corpus_embeddings_path(profile, f"untrained {m.backbone_id} {m.precision}", e.bm25, m.passage_max_length)


def _release_corpus_embeddings(spec: EvalRun, profile: Profile, *, untrained: bool = False) -> None:
    """Delete the corpus embeddings ``spec``'s evaluation (``untrained``: its untrained baseline) used, unless kept,
    or a computation of the plan still to come reads the same file (then the last of them deletes it; :func:`run`
    sweeps what concurrent jobs left behind)."""
    if spec.keep_corpus_embeddings:
        return
    where, done = (_untrained_embeddings, RunCache(_root(profile) / "untrained")) if untrained else (
        _trained_embeddings, RunCache(_root(profile) / KINDS[EvalRun]))
    ident = untrained_config if untrained else (lambda e: e.key())
    path, mine = where(profile, spec), ident(spec)
    waiting = [e for e in plan(profile) if isinstance(e, EvalRun) and where(profile, e) == path
               and ident(e) != mine and ident(e) not in done]
    if not waiting:
        for f in _embedding_files(path.parent, glob_escape(path.stem)):
            f.unlink(missing_ok=True)


def _dense_rankings(model, tokenizer, m: TrainRun, spec: EvalRun, coll, query_sets: dict, profile: Profile, path: Path) -> dict:
    """``{name: Ranking}``: each query set of ``query_sets`` ranked over the corpus by ``model``'s dense retriever;
    the corpus embeddings at ``path`` are computed (under a lock: another evaluation may share them) or read."""
    from ..common.fastpath import encode_corpus
    from ..core.runs import run_lock
    from .evaluate import dense_rank

    enc_q, _ = encoders(model, tokenizer, profile, query_max_length=m.query_max_length, passage_max_length=m.passage_max_length,
                        batch_size=spec.per_device_eval_batch_size, sort_window=spec.encode_sort_window)
    # The corpus streams from its memory-mapped dataset window by window (length-sorted,
    # tokenised one window ahead, one device-to-host copy per window) into a float16
    # .npy that dense_rank memory-maps; an interrupted encoding resumes (see encode_corpus).
    # The corpus is tokenised once per tokenizer (the tokenise-once cache): every model of the grid and the untrained
    # baseline read its ids from there.
    with run_lock(path):
        corpus = encode_corpus(
            model.passage_model, tokenizer, coll.texts, len(coll), path,
            max_length=m.passage_max_length, batch_size=spec.per_device_eval_batch_size, sort_window=spec.encode_sort_window,
            device=profile.torch_device(), amp_dtype=profile.amp_dtype(), desc=f"encode {coll.name}",
            tokens=corpus_tokens(coll, tokenizer, m.passage_max_length),
        )
    dense = {
        name: dense_rank(enc_q(list(qs.queries.values())), corpus, list(qs.queries), depth=spec.bm25.depth,
                         device=profile.torch_device(), chunk_size=spec.search_chunk_size)
        for name, qs in query_sets.items()
    }
    del corpus
    return dense


def _evaluate(spec: EvalRun, profile: Profile) -> dict:
    from .evaluate import SplitRuns, evaluate_hybrid, evaluate_run, hybrid_grid, mean_scores

    b, m = spec.bm25, spec.model
    sparse = _rankings(b, RunCache(_root(profile) / KINDS[Bm25Run]).get(b.key()) or _require(b), profile)
    report_q, tune_q = _queries_of(b, b.report_split), _queries_of(b, b.tune_split, sample=b.tune_max_queries)
    coll = _collection(b.benchmark, b.corpus, b.language)
    model, tokenizer = trained_model(m, profile)
    dense = _dense_rankings(model, tokenizer, m, spec, coll, {"report": report_q, "tune": tune_q}, profile,
                            _trained_embeddings(profile, spec))
    _release_corpus_embeddings(spec, profile)
    rows = np.concatenate([r.indices.ravel() for r in (*dense.values(), *sparse.values())])
    docid_of = coll.docids(rows)
    report = SplitRuns(b.report_split, report_q.qrels, dense["report"], sparse["report"], docid_of)
    tune = SplitRuns(b.tune_split, tune_q.qrels, dense["tune"], sparse["tune"], docid_of)
    grid = hybrid_grid(spec.hybrid_step)
    dense_pq = evaluate_run(dense["report"].to_run(docid_of, spec.depth), report_q.qrels, depth=spec.depth)
    shared: dict = {}  # each split's hybrid scores over the grid, computed once for both settings
    result = {
        "n_queries": len(report_q),
        "n_passages": len(coll),
        "dense": {"mean": mean_scores(dense_pq), "per_query": dense_pq},
        "hybrid": evaluate_hybrid(report, tune, grid=grid, depth=spec.depth, cache=shared),
        "hybrid_report_split": evaluate_hybrid(report, None, grid=grid, depth=spec.depth, tune_on_report_split=True, cache=shared),
    }
    result[LEARNING_KEY] = learning_entries(spec, result["dense"]["mean"], untrained_scores(spec, profile), len(coll))
    return result


# --------------------------------------------------------------------------- did it learn? (issue 23)
# The trained dense retriever (no BM25) on its own evaluation, beside two baselines the paper does
# not report: the same backbone before training (its untrained encoders), and a random ranking.
# Margins in the metrics' units (x100), stated before any run: a retriever that ignores its queries,
# or an encoder that never moved, misses them.
LEARNING_KEY = "learning"
MRR_MARGIN = 3.0  # dense MRR@100 must beat the untrained encoder's by 3 points
RECALL_MARGIN = 20.0  # dense Recall@100 must beat a random ranking's (100 · depth / passages) by 20 points


def random_recall(depth: int, n_passages: int) -> float:
    """Expected Recall@depth (x100) of a ranking drawn uniformly at random: each relevant passage is in the top
    ``depth`` of ``n_passages`` with probability ``depth / n_passages``, whatever the number of relevant passages."""
    return 100.0 * min(1.0, depth / n_passages)


def learning_entries(spec: EvalRun, dense_mean: dict, untrained: dict, n_passages: int) -> dict:
    """The evaluation's learning entries (:mod:`codeswitch.core.learning`): dense MRR vs the untrained encoder,
    dense Recall vs a random ranking, on the reported split."""
    from ..core.learning import learning

    d, split = spec.depth, spec.bm25.report_split
    mrr, recall = f"mrr@{d}", f"recall@{d}"
    return {
        "MRR vs untrained encoder": learning(f"dense MRR@{d} x100 ({spec.bm25.benchmark}-{spec.bm25.language} {split})",
                                             dense_mean[mrr], untrained["mean"][mrr], baseline_name="untrained encoder",
                                             margin=MRR_MARGIN),
        "Recall vs random ranking": learning(f"dense Recall@{d} x100 ({spec.bm25.benchmark}-{spec.bm25.language} {split})",
                                             dense_mean[recall], random_recall(d, n_passages), baseline_name="random ranking",
                                             margin=RECALL_MARGIN),
    }


def untrained_config(spec: EvalRun) -> dict:
    """What the untrained baseline of ``spec`` depends on: the backbone, the target and the encoders' lengths."""
    from .config import RESULT_VERSION

    b, m = spec.bm25, spec.model
    return {"kind": "contrastivemix-untrained", "result_version": RESULT_VERSION, "model": m.model, "backbone_id": m.backbone_id,
            "precision": m.precision,
            "benchmark": b.benchmark, "language": b.language, "queries": b.queries, "corpus": b.corpus,
            "report_split": b.report_split, "query_max_length": m.query_max_length, "passage_max_length": m.passage_max_length,
            "depth": spec.depth}


def untrained_scores(spec: EvalRun, profile: Profile) -> dict:
    """The untrained backbone's dense scores on ``spec``'s target (reported split): ``{"mean", "per_query"}``.

    Computed once per backbone and target (cached in ``runs/<profile>/contrastivemix/untrained/``) and shared by
    every model evaluated there: the baseline of the learning check.
    """
    from .evaluate import evaluate_run, mean_scores

    b, m = spec.bm25, spec.model
    config = untrained_config(spec)
    cache = RunCache(_root(profile) / "untrained")

    def compute() -> dict:
        report_q = _queries_of(b, b.report_split)
        coll = _collection(b.benchmark, b.corpus, b.language)
        model, tokenizer = _backbone(backbone_path(profile, m.model))
        ranking = _dense_rankings(model, tokenizer, m, spec, coll, {"report": report_q}, profile,
                                  _untrained_embeddings(profile, spec))["report"]
        _release_corpus_embeddings(spec, profile, untrained=True)
        per_query = evaluate_run(ranking.to_run(coll.docids(ranking.indices.ravel()), spec.depth), report_q.qrels, depth=spec.depth)
        return {"mean": mean_scores(per_query), "per_query": per_query, "n_passages": len(coll)}

    return cache.run(config, compute)


def _require(spec: RunSpec):
    raise RuntimeError(f"contrastivemix: {spec.label()} is not in the run cache; run contrastivemix.run (it runs the grids in order)")


def _embed(spec: EmbedRun, profile: Profile) -> dict:
    """English and target-language validation queries (query encoder) and their first positive passages (passage encoder)."""
    from ..core.runs import atomic_write_bytes

    m = spec.model
    model, tokenizer = trained_model(m, profile)
    enc_q, enc_p = encoders(model, tokenizer, profile, query_max_length=m.query_max_length, passage_max_length=m.passage_max_length,
                            batch_size=spec.per_device_eval_batch_size, sort_window=spec.encode_sort_window)
    arrays, counts = {}, {}
    for lang in ("en", spec.language):
        qs = _queries(spec.benchmark, spec.data, lang, spec.split).sample(spec.points)
        qids = [q for q in qs.queries if qs.positives.get(q)]
        arrays[f"query_{lang}"] = enc_q([qs.queries[q] for q in qids]).astype(np.float16)
        arrays[f"passage_{lang}"] = enc_p([qs.positives[q][0] for q in qids]).astype(np.float16)
        counts[lang] = len(qids)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    name = f"{spec.key_hash()}.npz"
    atomic_write_bytes(_root(profile) / KINDS[EmbedRun] / name, buf.getvalue())
    return {"file": name, "counts": counts}


def _umap(spec: UmapRun, profile: Profile) -> dict:
    from .figures import umap_fit

    e = spec.embed
    record = RunCache(_root(profile) / KINDS[EmbedRun]).get(e.key()) or _require(e)
    with np.load(_root(profile) / KINDS[EmbedRun] / record["file"]) as z:
        parts = [(lang, z[f"{spec.side}_{lang}"].astype(np.float32)) for lang in ("en", e.language)]
    xy = umap_fit(np.concatenate([p for _, p in parts]), spec.n_neighbors, spec.min_dist, spec.random_state)
    return {"x": xy[:, 0], "y": xy[:, 1], "language": [lang for lang, p in parts for _ in range(len(p))]}


# --------------------------------------------------------------------------- every run
def run(profile: Profile) -> Results:
    """Run (or read from the cache) every run of :func:`plan`, kind by kind in dependency order; records in plan order.

    Each kind is one :func:`~codeswitch.core.experiment.run_specs` grid: the trainings
    first (each saves its encoder), then BM25, the evaluations and embeddings (which read
    the saved encoders), then the UMAP fits (which read the embeddings).  A checkpoint is
    deleted once every evaluation and embedding of its model is cached, after the models
    that ``keep_models`` asks for are kept (:func:`keep_models`).
    """
    c = load(profile)
    todo = {st.name: st for st in stages(profile)}
    specs = [s for st in todo.values() for s in st]  # plan order: the kinds in dependency order
    if any(s.key() not in RunCache(todo["eval"].cache_dir) for s in todo["eval"]) or any(
            s.key() not in RunCache(todo["embed"].cache_dir) for s in todo["embed"]):
        backbone_path(profile, c.backbone.model)  # a missing backbone stops the grid before any run, not after BM25
    by_key: dict[str, dict] = {}
    for cls, kind in KINDS.items():
        by_key |= {s.key_hash(): r for s, r in todo[kind].run(run_one, profile)}
        if cls is EmbedRun:
            keep_models(profile, todo["train"], todo["eval"], by_key)  # (keep_models: none keeps nothing)
            for m in todo["train"]:
                ckpt = checkpoint_dir(profile, m)
                if ckpt.exists():
                    shutil.rmtree(ckpt)  # everything this model is needed for is cached (and kept, where it is)
            if not c.keep_corpus_embeddings:  # what evaluations that ran side by side left (_release_corpus_embeddings)
                for f in _embedding_files(_root(profile) / "embeddings", "corpus-*"):
                    f.unlink(missing_ok=True)
    return Results(tuple(specs), tuple(by_key[s.key_hash()] for s in specs))


# --------------------------------------------------------------------------- kept models (issue 28)
#: ContrastiveMix's selection rule for keep_models: best.  The paper reports one number per cell and states no seed
#: selection; this project keeps, per row and language, the seed whose hybrid scores best on the split the hybrid
#: weight is tuned on (Mr.TyDi dev, MIRACL train), never the reported split.  mDPR (one model for every language):
#: the mean of that score over its languages.
SELECTION_RULE = ("the seed whose sparse-dense hybrid scores best (MRR@100) on the tuning split (Mr.TyDi dev, MIRACL train; "
                  "mDPR: averaged over its languages; ties: the earlier seed)")


def kept_row(spec: TrainRun) -> kept.Row:
    """The table row (and language column) a trained model stands for: Tables 1/2's method rows, Table 3's ablations."""
    v = VARIANTS[spec.variant]
    if spec.language is None:
        return kept.Row(EXPERIMENT, "table1", v.label, spec.seed, SELECTION_RULE)  # mDPR: every language's column
    table = "table1" if spec.language in MRTYDI_LANGUAGE_COLUMNS else "table2"
    column = MRTYDI_LANGUAGE_COLUMNS.get(spec.language, spec.language)
    if v.label is None:
        return kept.Row(EXPERIMENT, "table3", v.ablation_label, spec.seed, SELECTION_RULE, column=column)
    return kept.Row(EXPERIMENT, table, v.label, spec.seed, SELECTION_RULE, column=column)


#: Mr.TyDi's languages as Tables 1 and 4 name their columns
MRTYDI_LANGUAGE_COLUMNS = {"ar": "Ar", "th": "Th", "ja": "Ja", "ko": "Ko", "id": "Id", "fi": "Fi", "ru": "Ru", "bn": "Bn",
                           "en": "En", "sw": "Sw", "te": "Te"}


def kept_dir(profile: Profile, spec: TrainRun) -> Path:
    """Where the model of ``spec`` is kept: ``runs/<profile>/contrastivemix/models/<key>/{query,passage}/``."""
    return kept.kept_dir(_root(profile), spec)


def _tune_score(record: dict) -> float | None:
    h = record.get("hybrid") or {}
    v = (h.get("curve") or {}).get(str(h.get("weight")))
    return float(v) if isinstance(v, (int, float)) else None


def _eval_scores(m: TrainRun, evals: Sequence[EvalRun], by_key: dict) -> tuple[dict, float | None]:
    """The card's scores of model ``m`` (its evaluations' hybrid and dense scores, per target) and its selection score."""
    scores, tune = {}, []
    for e in evals:
        r = by_key.get(e.key_hash())
        if e.model.key_hash() != m.key_hash() or r is None:
            continue
        col = MRTYDI_LANGUAGE_COLUMNS.get(e.bm25.language, e.bm25.language) if e.bm25.benchmark == "mrtydi" else e.bm25.language
        scores[col] = r["hybrid"]["mean"].get(f"mrr@{e.depth}")  # Tables 1/2's cell: the hybrid's MRR@100, beside the paper's
        for name, value in r["hybrid"]["mean"].items():
            scores[f"{col} hybrid {name} x100 ({e.bm25.benchmark} {e.bm25.report_split})"] = value
        for name, value in r["dense"]["mean"].items():
            scores[f"{col} dense {name} x100 ({e.bm25.benchmark} {e.bm25.report_split})"] = value
        tune.append(_tune_score(r))
    known = [t for t in tune if t is not None]
    return scores, (float(np.mean(known)) if known else None)


def keep_models(profile: Profile, trains: Sequence[TrainRun], evals: Sequence[EvalRun], by_key: dict) -> list[Path]:
    """Keep the models ``keep_models`` asks for (``best``: per row, :data:`SELECTION_RULE`), each as a pair of
    sentence-transformers models, once every evaluation is cached; returns the folders kept."""
    setting = load(profile).keep_models
    candidates = [(m, kept_row(m), _eval_scores(m, evals, by_key)) for m in trains if kept.wanted(setting, m)]
    chosen = {s.key_hash() for s in kept.select_best((m, row, sc[1]) for m, row, sc in candidates).values()}
    out = []
    for m, row, (scores, _) in candidates:
        if setting == "best" and m.key_hash() not in chosen and not kept.asked(m):
            continue
        out.append(keep_model(m, profile, row=row, scores=scores))
    return out


def keep_model(spec: TrainRun, profile: Profile, *, row: kept.Row | None = None, scores: dict | None = None) -> Path:
    """Keep the trained model of ``spec`` (its checkpoint; trained again where it was deleted) as a query and a passage
    sentence-transformers model (``Transformer → Pooling("cls")``: the first-token vector DPR scores with)."""
    folder = kept_dir(profile, spec)
    if kept.kept_ok(folder, spec):
        return folder
    model, tokenizer = trained_model(spec, profile)

    def save(tmp: Path) -> None:
        save_sentence_transformers_pair(model, tokenizer, tmp, query_max_length=spec.query_max_length,
                                        passage_max_length=spec.passage_max_length)

    return kept.keep(folder, spec, row or kept_row(spec), fmt="sentence-transformers-pair", save=save, profile=profile,
                     notebook="05", scores=scores or {})


def save_sentence_transformers_pair(model, tokenizer, folder: Path, *, query_max_length: int, passage_max_length: int) -> None:
    """``folder/query`` and ``folder/passage``: each encoder as a sentence-transformers model pooling the first token."""
    import tempfile

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    from ..core.utils import quiet_transformers

    for side, encoder, length in (("query", model.query_model, query_max_length), ("passage", model.passage_model, passage_max_length)):
        with tempfile.TemporaryDirectory(prefix=f"cm-{side}-", dir=folder) as hf:
            encoder.save_pretrained(hf, safe_serialization=True)
            tokenizer.save_pretrained(hf)
            # the backbone's pooler (unused: DPR pools the first token) is saved as built, so that loading the pair
            # reports no missing weights; built under a forked RNG, so keeping a model never moves a later run's draws
            with quiet_transformers(), torch.random.fork_rng(devices=[]):
                transformer = Transformer(hf, max_seq_length=length)
            st = SentenceTransformer(modules=[transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode="cls")],
                                     device="cpu")
            st.save(str(folder / side))


def kept_plan(profile: Profile) -> list[kept.Planned]:
    """The runs that keep a model (``--check``'s estimate): every training, a query and a passage encoder each."""
    return [kept.Planned(s, kept_row(s), s.model, encoders=2) for s in plan(profile) if isinstance(s, TrainRun)]


def kept_model(spec: TrainRun, profile: Profile) -> Path:
    """The kept query/passage pair of ``spec`` (``SentenceTransformer(path / "query")``); kept now from its checkpoint, or
    trained again where that was deleted, when ``keep_models`` did not keep it."""
    evals = [s for s in plan(profile) if isinstance(s, EvalRun) and s.model.key_hash() == spec.key_hash()]
    by_key = {e.key_hash(): RunCache(_root(profile) / KINDS[EvalRun]).get(e.key()) for e in evals}
    return keep_model(spec, profile, scores=_eval_scores(spec, evals, by_key)[0])


def train_all(profile: Profile) -> None:
    """Train and save every model of the plan, without evaluating: the part worth spreading over GPUs.

    ``accelerate launch -m codeswitch.contrastivemix.experiment --profile paper``
    starts one process per GPU; every process encodes its slice of each global
    batch and the passages are gathered across devices (see
    :mod:`codeswitch.contrastivemix.train`).  Checkpoints are always saved; the
    notebook (``./reproduce.sh --profile paper --only 05``) then finds them and only
    evaluates.  Models already trained or fully evaluated are skipped.
    """
    from accelerate import PartialState

    from ..core.progress import progress

    main = PartialState().is_main_process
    cache = RunCache(_root(profile) / KINDS[TrainRun])
    for spec in progress([s for s in plan(profile) if isinstance(s, TrainRun)], desc="contrastivemix training", unit="model",
                         disable=not main):
        if spec.key() in cache or checkpoint_ok(checkpoint_dir(profile, spec), what="retrieval checkpoint"):
            continue
        stats = _train(spec, profile)
        if main:
            cache.put(spec.key(), stats)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from ..core.profiles import load_profile, parse_overrides

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


# --------------------------------------------------------------------------- data examples
def examples(profile: Profile, n: int = 4) -> pd.DataFrame:
    """A few English validation queries and their code-mixed versions (the figure language's dictionary)."""
    import random

    from .codemix import code_mix

    c = load(profile)
    qs = _queries(c.figure_benchmark, c.refs(c.figure_benchmark)[0], "en", VALIDATION_SPLIT)
    d = dictionary(profile, c.muse, c.figure_language)
    rows = []
    for i, text in enumerate(list(qs.queries.values())[:n]):
        rows.append({
            "English query": text,
            f"code-mixed, r_w = {c.word_rate} (en-{c.figure_language})": code_mix(text, d, c.word_rate, random.Random(i), case_sensitive=c.case_sensitive),
            "code-mixed, r_w = 1": code_mix(text, d, 1.0, random.Random(i), case_sensitive=c.case_sensitive),
        })
    return pd.DataFrame(rows)


if __name__ == "__main__":
    import sys

    sys.exit(main())


# --------------------------------------------------------------------------- the stages
# what a kind's runs read: the trained encoders (evaluations, embeddings), the BM25 rankings
# (evaluations), the embeddings (UMAP fits); the trainings and BM25 need nothing
AFTER = {"train": (), "bm25": (), "eval": ("train", "bm25"), "embed": ("train",), "umap": ("embed",)}


def stages(profile: Profile) -> list[Stage]:
    """One stage per kind of run (:data:`KINDS`, in dependency order), each cached in ``runs/<profile>/contrastivemix/<kind>/``:
    what :func:`run` computes kind by kind and ``reproduce.sh --executor ...`` submits (a kind waits for :data:`AFTER`)."""
    specs, root = plan(profile), _root(profile)
    return [Stage(kind, [s for s in specs if type(s) is cls], root / kind, after=AFTER[kind], desc=f"contrastivemix {kind}")
            for cls, kind in KINDS.items()]
