"""ContrastiveMix (notebook 05): mDPR, NaiveMix and ContrastiveMix; Tables 1–4 and the UMAP Figures 1–3.

The experiment contract (:mod:`codeswitch.core.experiment`), top to bottom:

1. :class:`~codeswitch.contrastivemix.config.Config` — the ``contrastivemix`` section.
2. :func:`~.plan.plan` — every run, typed (:mod:`codeswitch.contrastivemix.config`): the models, BM25 per target,
   each model's evaluations, the figure models' embeddings and their UMAP fits (:mod:`.plan`).
3. :func:`run_one` — one run of any kind, computed (an evaluation: :mod:`.retrieval`).
4. :func:`run` — every run through :func:`codeswitch.core.runs.run_grid`, kind by kind in
   the order of their dependencies (training, BM25, evaluations, the align_weight search
   when on (:mod:`.search`), embeddings, UMAP), each
   cached under ``runs/<profile>/contrastivemix/<kind>/``.  A trained encoder is saved
   (safetensors) under ``checkpoints/<key>`` for the evaluations that read it, and
   deleted once they are all cached (the models ``keep_models`` asks for are kept first, as
   sentence-transformers pairs: :func:`keep_models`); an evaluation whose checkpoint is gone retrains it.
5. :func:`~.tables.tables` and :func:`~.figures.figures` read only the results.

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
codeswitch.contrastivemix --profile paper`` (see :func:`codeswitch.contrastivemix.__main__.train_all`).
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core import kept
from ..core.checkpoints import checkpoint_ok
from ..core.experiment import Results, RunSpec
from ..core.profiles import Profile
from ..core.runs import RunCache
from .config import VALIDATION_SPLIT, AlignSearchRun, Bm25Run, EmbedRun, EvalRun, TrainRun, UmapRun, load
from .inputs import backbone, backbone_path, checkpoint_dir, collection, dictionary, query_sample, query_set, queries_of, require, train_set
from .plan import KINDS, MRTYDI_LANGUAGE_COLUMNS, SECTION, VARIANTS, plan, root, stages
from .retrieval import embedding_files, encoders, evaluate_model
from .search import select, tune_score

__all__ = ["run_one", "run", "trained_model", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model", "keep_models",
           "examples"]


# --------------------------------------------------------------------------- one run
def run_one(spec: RunSpec, profile: Profile) -> dict:
    """One run of the plan, computed (no cache): a training, a BM25 ranking, an evaluation, an align_weight search,
    embeddings or a UMAP fit."""
    for cls, fn in ((TrainRun, _train), (Bm25Run, _bm25), (EvalRun, _evaluate), (AlignSearchRun, _search), (EmbedRun, _embed), (UmapRun, _umap)):
        if isinstance(spec, cls):
            return fn(spec, profile)
    raise TypeError(f"contrastivemix.run_one: not a run of this experiment: {spec!r}")


def _train(spec: TrainRun, profile: Profile) -> dict:
    """Train one dual encoder and save it (``checkpoints/<key>``); return its training statistics."""
    return _train_model(spec, profile)[2]


def _train_model(spec: TrainRun, profile: Profile):
    from .train import train_dual_encoder

    model, tokenizer, stats = train_dual_encoder(
        train_set(spec.train_data, spec.train_max_queries, spec.train_sample or "head"),
        spec,
        backbone=backbone(backbone_path(profile, spec.model)),
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

    folder = root(profile) / KINDS[Bm25Run]
    report, tune = queries_of(spec, spec.report_split), queries_of(spec, spec.tune_split, sample=spec.tune_max_queries)
    coll = collection(spec.benchmark, spec.corpus, spec.language)
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
    return {"files": files, "mean": mean_scores(per_query), "per_query": per_query, "n_queries": len(report), "n_passages": len(coll),
            # eval_max_queries: each split's sampled and whole query counts, for the tables' note (None: the record as before)
            **({} if spec.eval_max_queries is None else {"query_sample": query_sample(spec)})}

def _evaluate(spec: EvalRun, profile: Profile) -> dict:
    """One trained model on one target (:func:`.retrieval.evaluate_model`), its checkpoint read (or trained again)."""
    return evaluate_model(spec, profile, *trained_model(spec.model, profile))


def _search(spec: AlignSearchRun, profile: Profile) -> dict:
    """``align_weight: search``: the weight kept over the grid (:func:`.search.select`), its evaluations read from their cache."""
    return select(spec, RunCache(root(profile) / KINDS[EvalRun]))


def _embed(spec: EmbedRun, profile: Profile) -> dict:
    """English and target-language validation queries (query encoder) and their first positive passages (passage encoder)."""
    from ..core.atomic import atomic_write_bytes

    m = spec.model
    model, tokenizer = trained_model(m, profile)
    enc_q, enc_p = encoders(model, tokenizer, profile, query_max_length=m.query_max_length, passage_max_length=m.passage_max_length,
                            batch_size=spec.per_device_eval_batch_size, sort_window=spec.encode_sort_window)
    arrays, counts = {}, {}
    for lang in ("en", spec.language):
        qs = query_set(spec.benchmark, spec.data, lang, spec.split).take(spec.points)
        qids = [q for q in qs.queries if qs.positives.get(q)]
        arrays[f"query_{lang}"] = enc_q([qs.queries[q] for q in qids]).astype(np.float16)
        arrays[f"passage_{lang}"] = enc_p([qs.positives[q][0] for q in qids]).astype(np.float16)
        counts[lang] = len(qids)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    name = f"{spec.key_hash()}.npz"
    atomic_write_bytes(root(profile) / KINDS[EmbedRun] / name, buf.getvalue())
    return {"file": name, "counts": counts}


def _umap(spec: UmapRun, profile: Profile) -> dict:
    from .figures import umap_fit

    e = spec.embed
    record = RunCache(root(profile) / KINDS[EmbedRun]).get(e.key()) or require(e)
    with np.load(root(profile) / KINDS[EmbedRun] / record["file"]) as z:
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
            keep_models(profile, c.keep_models, todo["train"], todo["eval"], by_key)  # (keep_models: none keeps nothing)
            for m in todo["train"]:
                ckpt = checkpoint_dir(profile, m)
                if ckpt.exists():
                    shutil.rmtree(ckpt)  # everything this model is needed for is cached (and kept, where it is)
            if not c.keep_corpus_embeddings:  # what evaluations that ran side by side left (_release_corpus_embeddings)
                for f in embedding_files(root(profile) / "embeddings", "corpus-*"):
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
        return kept.Row(SECTION, "table1", v.label, spec.seed, SELECTION_RULE)  # mDPR: every language's column
    table = "table1" if spec.language in MRTYDI_LANGUAGE_COLUMNS else "table2"
    column = MRTYDI_LANGUAGE_COLUMNS.get(spec.language, spec.language)
    if v.label is None:
        return kept.Row(SECTION, "table3", v.ablation_label, spec.seed, SELECTION_RULE, column=column)
    return kept.Row(SECTION, table, v.label, spec.seed, SELECTION_RULE, column=column)


def kept_dir(profile: Profile, spec: TrainRun) -> Path:
    """Where the model of ``spec`` is kept: ``runs/<profile>/contrastivemix/models/<key>/{query,passage}/``."""
    return kept.kept_dir(root(profile), spec)


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
        tune.append(tune_score(r))
    known = [t for t in tune if t is not None]
    return scores, (float(np.mean(known)) if known else None)


def keep_models(profile: Profile, setting: str, trains: Sequence[TrainRun], evals: Sequence[EvalRun], by_key: dict) -> list[Path]:
    """Keep the models ``setting`` (the section's ``keep_models``) asks for (``best``: per row, :data:`SELECTION_RULE`),
    each as a pair of sentence-transformers models, once every evaluation is cached; returns the folders kept."""
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
    by_key = {e.key_hash(): RunCache(root(profile) / KINDS[EvalRun]).get(e.key()) for e in evals}
    return keep_model(spec, profile, scores=_eval_scores(spec, evals, by_key)[0])

# --------------------------------------------------------------------------- data examples
def examples(profile: Profile, n: int = 4) -> pd.DataFrame:
    """A few English validation queries and their code-mixed versions (the figure language's dictionary)."""
    import random

    from .codemix import code_mix

    c = load(profile)
    qs = query_set(c.figure_benchmark, c.refs(c.figure_benchmark)[0], "en", VALIDATION_SPLIT)
    d = dictionary(profile, c.muse, c.figure_language)
    rows = []
    for i, text in enumerate(list(qs.queries.values())[:n]):
        rows.append({
            "English query": text,
            f"code-mixed, r_w = {c.word_rate} (en-{c.figure_language})": code_mix(text, d, c.word_rate, random.Random(i), case_sensitive=c.case_sensitive),
            "code-mixed, r_w = 1": code_mix(text, d, 1.0, random.Random(i), case_sensitive=c.case_sensitive),
        })
    return pd.DataFrame(rows)
