"""ContrastiveMix's plan (notebook 05): every run of the experiment, typed, in dependency order.

:func:`plan` builds, from the ``contrastivemix`` section (:class:`~.config.Config`), a grid of
*models* (one :class:`~.config.TrainRun` per method, variant, target language and seed),
BM25 per target, then each model's evaluations, the figure models' embeddings and their
UMAP fits:

==========================  ====================  =======================================
model                       trained for            evaluated on
==========================  ====================  =======================================
mDPR                        (English only)         every configured language
NaiveMix, ContrastiveMix    each target language   that language, on each benchmark that has it
Table 3's four ablations    each low-similarity    that language (Mr.TyDi)
                            (ablation_languages)
==========================  ====================  =======================================

:func:`stages` groups them by kind (:data:`KINDS`), each kind cached under
``runs/<profile>/contrastivemix/<kind>/`` and waiting for the kinds it reads (:data:`AFTER`).
The row labels of the tables are the :data:`VARIANTS`' labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.experiment import RunSpec, Stage
from ..core.profiles import Profile, seeds_for
from .config import ANALYZER_VERSION, SECTION, VALIDATION_SPLIT, AlignSearchRun, Bm25Run, Config, EmbedRun, EvalRun, TrainRun, UmapRun, load
from .search import search_runs

__all__ = ["VARIANTS", "Variant", "Target", "plan", "stages", "KINDS", "AFTER", "root"]

KINDS = {TrainRun: "train", Bm25Run: "bm25", EvalRun: "eval", AlignSearchRun: "search", EmbedRun: "embed", UmapRun: "umap"}  # in dependency order
# what a kind's runs read: the trained encoders (evaluations, embeddings), the BM25 rankings
# (evaluations), the evaluations (the align_weight search: none without one), the embeddings (UMAP fits); the
# trainings and BM25 need nothing
AFTER = {"train": (), "bm25": (), "eval": ("train", "bm25"), "search": ("eval",), "embed": ("train",), "umap": ("embed",)}


def root(profile: Profile) -> Path:
    """``runs/<profile>/contrastivemix``: every run cache, checkpoint and file of the experiment lives below it."""
    return profile.runs_dir / SECTION


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


def train_run(profile: Profile, c: Config, variant: str, language: str | None, seed: int,
              align_weight: float | None = None) -> TrainRun:
    """The :class:`TrainRun` of one model; the settings its method cannot read are left ``None``.  ``align_weight``:
    one weight of the search's grid (None: the section's fixed weight)."""
    from ..core.models import backbone_id

    v = VARIANTS[variant]
    mixes, contrastive = v.method != "mdpr", v.method == "contrastivemix"
    shared = contrastive and c.mixed_dropout == "shared"  # trains padded: a packed row has no copy beside its original
    return TrainRun(
        experiment="contrastivemix-train", variant=v.key, method=v.method, mix_query=v.mix_query, mix_passage=v.mix_passage,
        language=language, seed=seed, model=c.backbone.model,
        backbone_id=backbone_id(c.backbone.model),  # a tiny backbone's id changes with its recipe (so do the keys)
        train_data=c.train_data, train_max_queries=c.train_max_queries, muse=c.muse if mixes else None,
        train_sample=profile.train_sample if c.train_max_queries and profile.train_sample != "head" else None,
        precision=profile.precision_name(), num_train_epochs=c.num_train_epochs, batch_size=c.batch_size,
        learning_rate=c.learning_rate, warmup_ratio=c.warmup_ratio, weight_decay=c.weight_decay,
        query_max_length=c.query_max_length, passage_max_length=c.passage_max_length,
        sentence_rate=c.sentence_rate if v.method == "naivemix" else None,  # ContrastiveMix mixes a copy of every query
        word_rate=c.word_rate if mixes else None,
        align_weight=(c.align_weight if align_weight is None else align_weight) if contrastive else None,
        case_sensitive=c.case_sensitive if mixes else None,
        mixed_special_tokens=c.mixed_special_tokens if mixes else None,
        passage_align=c.passage_align if contrastive and v.mix_passage else None,
        packing=True if c.packing and not shared else None, torch_compile=c.torch_compile or None,
        mixed_dropout="shared" if shared else None,  # the default (independent) keeps every key as it was
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
        eval_max_queries=c.eval_max_queries, tune_sample=None if c.tune_max_queries is None else "random",
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
    models = _models(profile, c, mrtydi, targets)
    bm25 = {t: bm25_run(c, t) for t in sorted({t for _, ts, _ in models for t in ts}, key=lambda t: (t.benchmark, t.language))}
    evals = [eval_run(c, m, bm25[t]) for m, ts, _ in models for t in ts]
    searches = search_runs(c, evals)  # align_weight: search only
    embeds = [embed_run(c, m) for m, _, embed in models if embed]  # under the search: each weight's figure model
    umaps = [UmapRun(experiment="contrastivemix-umap", embed=e, side=side, n_neighbors=c.umap_neighbors,
                     min_dist=c.umap_min_dist, random_state=0)
             for key in FIGURE_VARIANTS for e in embeds if e.model.variant == key for side in figure_sides(key)]
    return [m for m, _, _ in models] + list(bm25.values()) + evals + searches + embeds + umaps


def _models(profile: Profile, c: Config, mrtydi: list[Target], targets: list[Target]) -> list[tuple[TrainRun, tuple[Target, ...], bool]]:
    """``(model, its targets, embedded for the figures)`` of every training, mDPR first in each seed."""
    models: list[tuple[TrainRun, tuple[Target, ...], bool]] = []
    for i, seed in enumerate(seeds_for(profile, c.seeds)):
        first = i == 0
        models.append((train_run(profile, c, "mdpr", None, seed), tuple(targets), first))
        # one model per language, evaluated on each benchmark that has the language (Mr.TyDi and MIRACL share some)
        for language in dict.fromkeys(t.language for t in targets):
            own = tuple(t for t in targets if t.language == language)
            for key in ("naivemix", "contrastivemix"):
                models += [(m, own, first and language == c.figure_language) for m in _weighted(profile, c, key, language, seed)]
        if c.ablations:
            for t in (x for x in mrtydi if x.language in c.table3_languages):
                for key in ABLATION_VARIANTS:
                    models += [(m, (t,), False) for m in _weighted(profile, c, key, t.language, seed)]
    return models


def _weighted(profile: Profile, c: Config, variant: str, language: str, seed: int) -> list[TrainRun]:
    """The models of one (variant, language, seed): a ContrastiveMix one per weight of ``c.align_weights`` (one weight
    unless ``align_weight: search``), any other one model."""
    if VARIANTS[variant].method != "contrastivemix":
        return [train_run(profile, c, variant, language, seed)]
    return [train_run(profile, c, variant, language, seed, align_weight=w) for w in c.align_weights]


def eval_run(c: Config, model: TrainRun, bm25: Bm25Run) -> EvalRun:
    """One trained model scored on one target; ``hybrid_step`` (the hybrid weight's grid) goes in as configured."""
    return EvalRun(experiment="contrastivemix-eval", model=model, bm25=bm25, depth=c.depth, hybrid_step=c.hybrid_step,
                   per_device_eval_batch_size=c.per_device_eval_batch_size, encode_sort_window=c.encode_sort_window,
                   encode_bucket_step=c.encode_bucket_step, search_chunk_size=c.search_chunk_size, keep_corpus_embeddings=c.keep_corpus_embeddings,
                   corpus_sample=c.corpus_sample)


def figure_sides(variant: str) -> tuple[str, ...]:
    """The encoders a figure shows: ContrastiveMix mixes queries only, so Figure 1 shows its query encoder."""
    return ("query",) if variant == "contrastivemix" else ("query", "passage")


#: Mr.TyDi's languages as Tables 1 and 4 name their columns
MRTYDI_LANGUAGE_COLUMNS = {"ar": "Ar", "th": "Th", "ja": "Ja", "ko": "Ko", "id": "Id", "fi": "Fi", "ru": "Ru", "bn": "Bn",
                           "en": "En", "sw": "Sw", "te": "Te"}


def stages(profile: Profile) -> list[Stage]:
    """One stage per kind of run (:data:`KINDS`, in dependency order), each cached in ``runs/<profile>/contrastivemix/<kind>/``:
    what :func:`~.experiment.run` computes kind by kind and ``reproduce.sh --executor ...`` submits (a kind waits for :data:`AFTER`)."""
    specs, folder = plan(profile), root(profile)
    return [Stage(kind, [s for s in specs if type(s) is cls], folder / kind, after=AFTER[kind], desc=f"contrastivemix {kind}")
            for cls, kind in KINDS.items()]
