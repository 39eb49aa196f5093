"""ContrastiveMix's evaluation runs (:class:`~.config.EvalRun`): one trained model on one target.

Dense retrieval over the target's corpus (its embeddings written once per encoder and corpus, shared by the
evaluations that read them, deleted once none still needs them), BM25's rankings (cached by the BM25 runs),
the sparse–dense hybrid with its weight tuned on the tuning split and, the released script's setting, on the
reported one (:func:`~.evaluate.evaluate_hybrid`), and the learning check: the dense retriever against the
untrained backbone and a random ranking (issue 23).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.profiles import Profile
from ..core.runs import RunCache
from ..core.atomic import glob_escape
from .config import Bm25Run, EvalRun, TrainRun
from .inputs import backbone, backbone_path, collection, queries_of, require
from .plan import KINDS, plan, root

__all__ = ["evaluate_model", "encoders", "corpus_tokens", "corpus_embeddings_path", "embedding_files", "learning_entries",
           "untrained_config", "untrained_scores", "LEARNING_KEY"]


def _rankings(spec: Bm25Run, record: dict, profile: Profile) -> dict:
    from .evaluate import Ranking

    folder = root(profile) / KINDS[Bm25Run]
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


def reduction(e: EvalRun) -> dict | None:
    """What a reduced corpus (``contrastivemix.corpus_sample``) depends on: the BM25 run whose rankings and queries pick
    it, the depth and the sample's size; None: the whole corpus."""
    if e.corpus_sample is None:
        return None
    return {"corpus_sample": e.corpus_sample, "depth": e.depth, "bm25": e.bm25.key_hash()}


def reduced_rows(spec: EvalRun, coll, sparse: dict, query_sets: dict) -> np.ndarray | None:
    """The corpus rows the dense retriever encodes under ``spec.corpus_sample`` (None: every row): every passage judged
    for a query of ``query_sets``, BM25's top ``spec.depth`` of each of those queries (``sparse``: the BM25 run's
    rankings, full-corpus rows), and a seeded random sample (:data:`codeswitch.core.sampling.SAMPLE_SEED`) of
    ``corpus_sample`` of the other rows; sorted, once each."""
    if spec.corpus_sample is None:
        return None
    from ..core.sampling import SAMPLE_SEED

    judged = {str(d) for qs in query_sets.values() for rel in qs.qrels.values() for d in rel}
    keep: set[int] = set()
    step = 1 << 18
    for lo in range(0, len(coll), step):  # docid -> row, read a slice at a time (a corpus has millions of rows)
        ids = coll.dataset[lo : min(lo + step, len(coll))]["docid"]
        keep.update(lo + i for i, d in enumerate(ids) if str(d) in judged)
    for ranking in sparse.values():
        top = ranking.indices[:, : spec.depth]
        keep.update(int(i) for i in top[top >= 0].ravel())
    fixed = np.fromiter(sorted(keep), dtype=np.int64, count=len(keep))
    rest = np.setdiff1d(np.arange(len(coll), dtype=np.int64), fixed, assume_unique=True)
    extra = np.random.default_rng(SAMPLE_SEED).choice(rest, size=min(spec.corpus_sample, len(rest)), replace=False)
    return np.union1d(fixed, extra.astype(np.int64))


def _subset(coll, rows: np.ndarray):
    """The collection of ``rows`` of ``coll`` (a reduced corpus), in row order."""
    from .data import Collection

    return Collection(f"{coll.name} (reduced: {len(rows)} of {len(coll)} passages)", coll.dataset.select(rows.tolist()))


def corpus_embeddings_path(profile: Profile, encoder: str, b: Bm25Run, passage_max_length: int,
                           reduced: dict | None = None) -> Path:
    """Where ``encoder``'s float16 embeddings of ``b``'s corpus are written: named by the encoder (a trained model's
    key hash, or the untrained backbone's id), the passages (:func:`~.data.collection_identity`) and their length, so
    the evaluations of one model on two benchmarks that share a corpus (the synthetic Mr.TyDi and MIRACL of a
    language) encode it once.  Deleted once no evaluation still to be computed needs it, unless
    ``keep_corpus_embeddings`` (:func:`_release_corpus_embeddings`)."""
    from ..core.runs import config_hash
    from .data import collection_identity

    ident = {"encoder": encoder, "corpus": list(collection_identity(b.benchmark, b.corpus, b.language)),
             "passage_max_length": passage_max_length}
    if reduced is not None:  # a reduced corpus (reduction()): other passages, another file
        ident["reduced"] = reduced
    return root(profile) / "embeddings" / f"corpus-{config_hash(ident)}.npy"


def embedding_files(folder: Path, stem: str) -> list[Path]:
    """The embeddings files of ``folder`` whose stem matches the glob ``stem``, with their resume-protocol companions
    (``.progress.json``, ``.done.json``)."""
    return [p for p in folder.glob(f"{stem}.*") if p.suffix in (".npy", ".json")]


def _trained_embeddings(profile: Profile, e: EvalRun) -> Path:
    return corpus_embeddings_path(profile, e.model.key_hash(), e.bm25, e.model.passage_max_length, reduction(e))


def _untrained_embeddings(profile: Profile, e: EvalRun) -> Path:
    m = e.model
    return corpus_embeddings_path(profile, f"untrained {m.backbone_id} {m.precision}", e.bm25, m.passage_max_length, reduction(e))


def _release_corpus_embeddings(spec: EvalRun, profile: Profile, *, untrained: bool = False) -> None:
    """Delete the corpus embeddings ``spec``'s evaluation (``untrained``: its untrained baseline) used, unless kept,
    or a computation of the plan still to come reads the same file (then the last of them deletes it; :func:`run`
    sweeps what concurrent jobs left behind)."""
    if spec.keep_corpus_embeddings:
        return
    where, done = (_untrained_embeddings, RunCache(root(profile) / "untrained")) if untrained else (
        _trained_embeddings, RunCache(root(profile) / KINDS[EvalRun]))
    ident = untrained_config if untrained else (lambda e: e.key())
    path, mine = where(profile, spec), ident(spec)
    waiting = [e for e in plan(profile) if isinstance(e, EvalRun) and where(profile, e) == path
               and ident(e) != mine and ident(e) not in done]
    if not waiting:
        for f in embedding_files(path.parent, glob_escape(path.stem)):
            f.unlink(missing_ok=True)


def _dense_rankings(model, tokenizer, m: TrainRun, spec: EvalRun, coll, query_sets: dict, profile: Profile, path: Path,
                    rows: np.ndarray | None = None) -> dict:
    """``{name: Ranking}``: each query set of ``query_sets`` ranked over the corpus by ``model``'s dense retriever;
    the corpus embeddings at ``path`` are computed (under a lock: another evaluation may share them) or read.
    ``rows``: only these corpus rows are encoded and searched (:func:`reduced_rows`); the rankings hold full-corpus rows."""
    if rows is not None:
        dense = _dense_rankings(model, tokenizer, m, spec, _subset(coll, rows), query_sets, profile, path)
        for r in dense.values():
            r.indices = np.where(r.indices >= 0, rows[np.maximum(r.indices, 0)], -1)
        return dense
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
            bucket_step=spec.encode_bucket_step, device=profile.torch_device(), amp_dtype=profile.amp_dtype(), desc=f"encode {coll.name}",
            tokens=corpus_tokens(coll, tokenizer, m.passage_max_length),
        )
    dense = {
        name: dense_rank(enc_q(list(qs.queries.values())), corpus, list(qs.queries), depth=spec.bm25.depth,
                         device=profile.torch_device(), chunk_size=spec.search_chunk_size)
        for name, qs in query_sets.items()
    }
    del corpus
    return dense


def evaluate_model(spec: EvalRun, profile: Profile, model, tokenizer) -> dict:
    """The evaluation of ``spec`` with its trained ``model`` (and ``tokenizer``): dense, hybrid (tuned on the tuning split,
    and on the reported one), the learning entries; the record :func:`~.experiment.run_one` returns."""
    from .evaluate import SplitRuns, evaluate_hybrid, evaluate_run, hybrid_grid, mean_scores

    b, m = spec.bm25, spec.model
    sparse = _rankings(b, RunCache(root(profile) / KINDS[Bm25Run]).get(b.key()) or require(b), profile)
    report_q, tune_q = queries_of(b, b.report_split), queries_of(b, b.tune_split, sample=b.tune_max_queries)
    coll = collection(b.benchmark, b.corpus, b.language)
    reduced = reduced_rows(spec, coll, sparse, {"report": report_q, "tune": tune_q})  # None: the whole corpus
    dense = _dense_rankings(model, tokenizer, m, spec, coll, {"report": report_q, "tune": tune_q}, profile,
                            _trained_embeddings(profile, spec), reduced)
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
        **({} if reduced is None else {"n_passages_dense": len(reduced)}),  # the reduced corpus the dense retriever searched
        "dense": {"mean": mean_scores(dense_pq), "per_query": dense_pq},
        "hybrid": evaluate_hybrid(report, tune, grid=grid, depth=spec.depth, cache=shared),
        "hybrid_report_split": evaluate_hybrid(report, None, grid=grid, depth=spec.depth, tune_on_report_split=True, cache=shared),
    }
    result[LEARNING_KEY] = learning_entries(spec, result["dense"]["mean"], untrained_scores(spec, profile),
                                            len(coll) if reduced is None else len(reduced))
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
    from .config import ContrastiveMixRun

    b, m = spec.bm25, spec.model
    return {"kind": "contrastivemix-untrained", "result_version": ContrastiveMixRun.RESULT_VERSION, "model": m.model, "backbone_id": m.backbone_id,
            "precision": m.precision,
            "benchmark": b.benchmark, "language": b.language, "queries": b.queries, "corpus": b.corpus,
            "report_split": b.report_split, "query_max_length": m.query_max_length, "passage_max_length": m.passage_max_length,
            "depth": spec.depth, **({} if spec.corpus_sample is None else {"reduced": reduction(spec)}),
            **({} if b.eval_max_queries is None else {"eval_max_queries": b.eval_max_queries})}  # the sampled queries


def untrained_scores(spec: EvalRun, profile: Profile) -> dict:
    """The untrained backbone's dense scores on ``spec``'s target (reported split): ``{"mean", "per_query"}``.

    Computed once per backbone and target (cached in ``runs/<profile>/contrastivemix/untrained/``) and shared by
    every model evaluated there: the baseline of the learning check.
    """
    from .evaluate import evaluate_run, mean_scores

    b, m = spec.bm25, spec.model
    config = untrained_config(spec)
    cache = RunCache(root(profile) / "untrained")

    def compute() -> dict:
        report_q = queries_of(b, b.report_split)
        coll = collection(b.benchmark, b.corpus, b.language)
        rows = None
        if spec.corpus_sample is not None:  # the trained model's reduced corpus: the same rows
            sparse = _rankings(b, RunCache(root(profile) / KINDS[Bm25Run]).get(b.key()) or require(b), profile)
            tune_q = queries_of(b, b.tune_split, sample=b.tune_max_queries)
            rows = reduced_rows(spec, coll, sparse, {"report": report_q, "tune": tune_q})
        model, tokenizer = backbone(backbone_path(profile, m.model))
        ranking = _dense_rankings(model, tokenizer, m, spec, coll, {"report": report_q}, profile,
                                  _untrained_embeddings(profile, spec), rows)["report"]
        _release_corpus_embeddings(spec, profile, untrained=True)
        per_query = evaluate_run(ranking.to_run(coll.docids(ranking.indices.ravel()), spec.depth), report_q.qrels, depth=spec.depth)
        return {"mean": mean_scores(per_query), "per_query": per_query, "n_passages": len(coll)}

    return cache.run(config, compute)
