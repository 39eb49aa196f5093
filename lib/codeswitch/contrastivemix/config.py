"""The ``contrastivemix`` section of a profile (:class:`Config`) and the run specs of notebook 05.

Field names follow Hugging Face's ``TrainingArguments`` where they mean the same
thing (``num_train_epochs``, ``learning_rate``, ``warmup_ratio``, ``weight_decay``,
``per_device_eval_batch_size`` for corpus and query encoding).  ``batch_size`` is the
*global* training batch (queries per step over every device), not a per-device size,
so it keeps its own name.  The backbone is a list of ``{name, model}`` (the one
backbone schema of every section) with exactly one item — the tables compare methods
on one backbone; the older ``backbone: <ref>`` is read too and converted.

Every default is the paper's setting (§4.3 and the authors' released commands),
written here only: the run specs below have no defaults of their own.

The run specs (:mod:`codeswitch.core.experiment`), one class per kind of run, each
cached under ``runs/<profile>/contrastivemix/<kind>/``:

==============  ==================================================================  =====================
spec            one run                                                             needs
==============  ==================================================================  =====================
:class:`TrainRun`  one dual encoder trained (mDPR, NaiveMix, ContrastiveMix, ablations)  —
:class:`Bm25Run`   BM25 on one (benchmark, language), shared by every model             —
:class:`EvalRun`   one trained model on one target: dense, BM25 and the hybrid          its TrainRun, Bm25Run
:class:`EmbedRun`  the figure language's validation embeddings of one model             its TrainRun
:class:`UmapRun`   the 2-D UMAP of one side of an EmbedRun                               its EmbedRun
:class:`AlignSearchRun`  ``align_weight: search``: one variant's w chosen over its EvalRuns     its EvalRuns
==============  ==================================================================  =====================

A spec that needs another *holds* it as a field; its key holds the other's key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, ClassVar

from ..common.fastpath import TorchCompile, check_torch_compile
from ..core.experiment import RunSpec, not_in_key
from ..core.kept import check_setting
from ..core.sections import backbones_from, check_fields, section_prepare

SECTION = "contrastivemix"
METHODS = ("mdpr", "naivemix", "contrastivemix")
PASSAGE_ALIGN = ("all", "positives")
#: dropout of the code-mixed copies: "independent" (each row its own masks: one forward) | "shared" (the released code:
#: each copy with its original's masks, tevax/training.py's dropout_rng=q_dropout_rng; padded forwards)
MIXED_DROPOUT = ("independent", "shared")
SEARCH = "search"  # align_weight: search — w chosen on the tuning split over align_weight_grid (:mod:`.search`)
#: the paper's range of w (§4.3: "grid search on the validation set in the range of [0.001, 1]"); it names no grid points
ALIGN_WEIGHT_RANGE = (0.001, 1.0)
VALIDATION_SPLIT = "dev"  # the split the figures (and the data examples) are drawn from
ANALYZER_VERSION = 1  # bump when evaluate.analyze changes (BM25 records depend on it)


@dataclass(frozen=True)
class Backbone:
    """The backbone both encoders start from."""

    name: str  # a label (display only)
    model: str  # hub id, local folder, or a tiny-* name (smoke)


@dataclass(frozen=True)
class Config:
    """The ``contrastivemix`` section of a profile.  Defaults are the paper's settings."""

    # --- models and data: a hub id, a local copy, or "synthetic" / "tiny-*" (smoke)
    backbones: tuple[Backbone, ...] = (Backbone("mBERT-base", "bert-base-multilingual-cased"),)
    seeds: tuple[int, ...] | None = None  # None: the profile's seeds
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
    num_train_epochs: int = 40
    batch_size: int = 128  # global: queries per step over all devices
    learning_rate: float = 1e-5
    warmup_ratio: float = 0.1  # linear warm-up over the first 10 % of the steps, then linear decay
    weight_decay: float = 0.0
    query_max_length: int = 32
    passage_max_length: int = 128
    sentence_rate: float = 0.2  # r_s: NaiveMix's probability that a query (or its passages) is mixed
    word_rate: float = 0.5  # r_w: probability that a dictionary word is switched
    # w of L = L_ir + w L_c (ContrastiveMix): the released command's 0.1 (README.md, --cm_loss_weight 0.1), or "search":
    # one model per weight of align_weight_grid, the weight kept whose hybrid MRR@100 on the tuning split is best (§4.3)
    align_weight: float | str = 0.1
    # the grid of align_weight: search, inside the paper's [0.001, 1]: the paper names the range, not the points; the
    # default is its decades (a log grid over the range, holding the released 0.1)
    align_weight_grid: tuple[float, ...] = (0.001, 0.01, 0.1, 1.0)
    case_sensitive: bool = False  # True: the released code's case-sensitive dictionary look-up
    mixed_special_tokens: bool = True  # False: the released code drops [CLS]/[SEP] from mixed inputs
    passage_align: str = "all"  # Table 3's passage-side ContrastiveMix: "all" passages (released code) | "positives"
    # ContrastiveMix's code-mixed copies: "independent" dropout (one forward with their originals) | "shared" (the
    # released code's: each copy encoded with its original's masks, at its original's padded shape).  shared trains
    # those models padded whatever ``packing`` says (packed rows have no per-sentence positions to share)
    mixed_dropout: str = "independent"
    ablations: bool = True  # also train Table 3's query-/passage-side variants
    # Table 3's languages: None, the paper's (the whole low-similarity group), or a subset of low_similarity (a smaller
    # grid: Table 3 then averages every row over these languages alone, and says so)
    ablation_languages: tuple[str, ...] | None = None
    # --- evaluation
    mrtydi_report_split: str = "test"
    mrtydi_tune_split: str = "dev"
    miracl_report_split: str = "dev"
    miracl_tune_split: str = "train"
    tune_max_queries: int | None = None  # cap on tuning queries (MIRACL train is large)
    # Evaluation queries per (benchmark, language, split).  None: every query (the paper).  N: a seeded random sample of
    # N (core.sampling's one seed, kept in file order; a split of N or fewer queries whole), the same for every method,
    # seed and BM25; the tuning split is cut first by it, then by tune_max_queries.  Every table says so.
    eval_max_queries: int | None = None
    # The dense retriever's corpus of each target.  None: every passage (the paper).  N: a reduced corpus -- every
    # passage judged for a reported or tuning query, BM25's top ``depth`` (100) of each of those queries, and a seeded
    # random sample of N other passages (core.sampling's seed); BM25 still ranks the whole corpus.  Every table says so.
    corpus_sample: int | None = None
    depth: int = 100  # MRR@100 / Recall@100
    fusion_depth: int = 1000  # hits per run that enter the hybrid (Pyserini's default)
    hybrid_step: float = 0.05
    bm25_k1: float = 0.9
    bm25_b: float = 0.4
    # "pyserini": Lucene with each language's analyser (Mr.TyDi's baseline, contrastivemix.lucene);
    # "bm25s": bm25s over lower-cased words / CJK bigrams, no stemming or stop words (contrastivemix.evaluate.analyze)
    bm25_implementation: str = "pyserini"
    per_device_eval_batch_size: int = 256  # texts per encoding batch (queries and corpus)
    encode_sort_window: int = 32  # batches sorted by length together when encoding (0: corpus order); results equal up to float rounding
    # corpus encoding: each batch padded to a fixed-width bucket (step, 2·step, …, passage_max_length; issue 40) so that
    # a compiled or CUDA-graph encoder sees few shapes; 0: padded to its longest row.  Results equal up to float
    # rounding; off by default: on this CPU, eager, it is slower (docs/bench/cpu/encode_buckets.json)
    encode_bucket_step: int = 0
    # one packed, fixed-shape forward per encoder a training step (issue 24: no padding, at most four shapes per side);
    # part of the training key (packing reorders float sums)
    packing: bool = False
    # the dual encoder (both encoders; the loss is computed outside it) under torch.compile in training steps
    # (common.fastpath.compile_for_training; packed: fixed shapes, one whole graph per budget): false | true |
    # reduce-overhead (torch.compile's CUDA-graph mode over the packed budgets; needs packing); part of the training
    # key when on.  CPU runs work either way; off in every profile until a GPU row measures it (issue 24)
    torch_compile: TorchCompile = False
    search_chunk_size: int = 131072
    # which models are kept once evaluated, as a query/passage pair of sentence-transformers models (codeswitch.core.kept):
    # "none" | "best" (per table row, the seed best on the tuning split) | "all"; ≈1.4 GB per mBERT model; enters no key.
    # The training checkpoints themselves are deleted once all of a model's evaluations are cached.
    keep_models: str = "none"
    keep_corpus_embeddings: bool = False  # keep each model's float16 corpus embeddings after its evaluation
    # --- figures
    figure_language: str = "ko"
    umap_points: int = 500  # validation queries (and their passages) per language
    umap_neighbors: int = 15
    umap_min_dist: float = 0.1

    def __post_init__(self):
        check_setting(self.keep_models, where=f"{SECTION}.keep_models")
        object.__setattr__(self, "backbones", backbones_from(self.backbones, Backbone, bare_refs=True))
        if len(self.backbones) != 1:
            raise ValueError(f"backbones: ContrastiveMix's tables compare methods on one backbone; give exactly one, got {len(self.backbones)}")
        check_fields(self)  # epochs, batch sizes, rates, ratios ... in their domains (core.sections.RANGES)
        check_torch_compile(self.torch_compile, section=SECTION, packing={"packing": self.packing})
        self._check_align_weight()
        if self.passage_align not in PASSAGE_ALIGN:
            raise ValueError(f"passage_align must be one of {PASSAGE_ALIGN}, got {self.passage_align!r}")
        if self.mixed_dropout not in MIXED_DROPOUT:
            raise ValueError(f"mixed_dropout must be one of {MIXED_DROPOUT}, got {self.mixed_dropout!r}")
        if self.mixed_dropout == "shared" and (self.passage_align != "all" or self.torch_compile):
            raise ValueError("mixed_dropout: shared needs passage_align: all (each mixed passage beside its original) and "
                             "torch_compile: false (compiled kernels draw their own random numbers)")
        if not 0 < self.hybrid_step <= 1:
            raise ValueError(f"hybrid_step must be in (0, 1], got {self.hybrid_step}")
        for bench in ("mrtydi", "miracl"):
            if getattr(self, f"{bench}_tune_split") == getattr(self, f"{bench}_report_split"):
                raise ValueError(
                    f"{bench}_tune_split must differ from {bench}_report_split: the hybrid weight is never tuned on the "
                    "reported split (that setting, the released script's, is reported anyway as extra rows)"
                )
        from .lucene import IMPLEMENTATIONS

        if self.bm25_implementation not in IMPLEMENTATIONS:
            raise ValueError(f"bm25_implementation must be one of {IMPLEMENTATIONS}, got {self.bm25_implementation!r}")
        if self.fusion_depth < self.depth:
            raise ValueError(f"fusion_depth ({self.fusion_depth}) must be at least depth ({self.depth})")
        if not self.low_similarity and not self.high_similarity and not self.miracl_target and not self.miracl_high_similarity:
            raise ValueError("no evaluation language configured")
        if self.ablation_languages is not None:
            outside = [lang for lang in self.ablation_languages if lang not in self.low_similarity]
            if outside or not self.ablation_languages:
                raise ValueError(f"ablation_languages must be a non-empty subset of low_similarity {list(self.low_similarity)}, "
                                 f"got {list(self.ablation_languages)}" + (f" ({outside} not in it)" if outside else ""))
        if self.figure_language not in self.mrtydi_languages + self.miracl_languages:
            raise ValueError(f"figure_language '{self.figure_language}' is not among the evaluated languages "
                             f"{list(self.mrtydi_languages + self.miracl_languages)}")

    def _check_align_weight(self) -> None:
        lo, hi = ALIGN_WEIGHT_RANGE
        w = self.align_weight
        if isinstance(w, str) and w != SEARCH or isinstance(w, bool):
            raise ValueError(f"align_weight must be a number >= 0 or {SEARCH!r}, got {w!r}")
        grid = self.align_weight_grid
        if not grid or any(isinstance(x, bool) or not isinstance(x, (int, float)) or not lo <= x <= hi for x in grid):
            raise ValueError(f"align_weight_grid must be a non-empty list of weights in the paper's range [{lo}, {hi}] "
                             f"(§4.3), got {list(grid)}")
        if list(grid) != sorted(set(grid)):
            raise ValueError(f"align_weight_grid must list each weight once, in increasing order, got {list(grid)}")

    @property
    def align_weights(self) -> tuple[float, ...]:
        """The weights w a ContrastiveMix model is trained with: the grid under ``align_weight: search``, else the one."""
        return tuple(float(x) for x in self.align_weight_grid) if self.align_weight == SEARCH else (self.align_weight,)

    @property
    def backbone(self) -> Backbone:
        """The one backbone (see the module docstring)."""
        return self.backbones[0]

    @property
    def mrtydi_languages(self) -> tuple[str, ...]:
        return self.low_similarity + self.high_similarity

    @property
    def table3_languages(self) -> tuple[str, ...]:
        """The languages Table 3 averages over (and its ablations are trained on): ``ablation_languages``, else the
        low-similarity group (the paper)."""
        return self.low_similarity if self.ablation_languages is None else self.ablation_languages

    @property
    def miracl_languages(self) -> tuple[str, ...]:
        return self.miracl_target + self.miracl_high_similarity

    @property
    def figure_benchmark(self) -> str:
        return "mrtydi" if self.figure_language in self.mrtydi_languages else "miracl"

    def refs(self, benchmark: str) -> tuple[str, str]:
        """(queries and judgements, corpus) of ``benchmark``."""
        return (self.mrtydi, self.mrtydi_corpus) if benchmark == "mrtydi" else (self.miracl, self.miracl_corpus)

    def splits(self, benchmark: str) -> tuple[str, str]:
        """(reported split, tuning split) of ``benchmark``."""
        if benchmark == "mrtydi":
            return self.mrtydi_report_split, self.mrtydi_tune_split
        return self.miracl_report_split, self.miracl_tune_split


# keys renamed to Hugging Face's names (or removed): the old spelling is an error that says what to write
RENAMED = {"epochs": "num_train_epochs", "encode_batch_size": "per_device_eval_batch_size"}
REMOVED = {
    "save_checkpoints": "trained encoders are always saved between the training grid and the evaluations that read them "
                        "(deleted once evaluated; keep_models keeps them as sentence-transformers models)",
    "keep_checkpoints": "replaced by keep_models: none | best | all (keep_checkpoints: true was all; see docs/models.md)",
}


# Refuse renamed and removed keys; turn the older ``backbone: <ref>`` into ``backbones: [{name, model}]``.
_prepare = section_prepare(SECTION, Backbone, renamed=RENAMED, removed=REMOVED, older=True, bare_refs=True)


def load(profile) -> Config:
    """The profile's ``contrastivemix`` section as a :class:`Config` (errors name the YAML file and key)."""
    return profile.section(SECTION, Config, prepare=_prepare)


# --------------------------------------------------------------------------- the run specs
@dataclass(frozen=True)
class ContrastiveMixRun(RunSpec):
    """The runs of notebook 05: their result version is set here, once."""

    # Bump when a change of this experiment's method code (data handling, training, evaluation)
    # changes its results: every run key changes, so no old record is reused.
    # 2: evaluations record their learning entries (issue 23); the synthetic set grew to 1,104 passages; 3: the other
    # worlds' passages end with 0-3 extra sentences (data.EXTRA_SENTENCES); 4: fused AdamW on CPU too (train.py)
    RESULT_VERSION: ClassVar[int] = 4


@dataclass(frozen=True)
class TrainRun(ContrastiveMixRun):
    """One dual encoder trained: built by :func:`codeswitch.contrastivemix.experiment.plan`, passed as it is to
    :func:`codeswitch.contrastivemix.train.train_dual_encoder`.

    The settings a method cannot read are ``None`` (and so out of the key): mDPR has no
    mixing, NaiveMix no alignment weight, ContrastiveMix no sentence rate (it mixes a
    copy of every query), and only the passage-side ContrastiveMix reads ``passage_align``.
    """

    experiment: str
    variant: str  # a key of experiment.VARIANTS
    method: str  # "mdpr" | "naivemix" | "contrastivemix"
    mix_query: bool  # code-mix on the query side
    mix_passage: bool  # code-mix on the passage side
    language: str | None  # the code-mixing target language; None for mDPR
    seed: int
    model: str  # the backbone reference
    backbone_id: str  # its identity (a tiny backbone's recipe)
    train_data: str
    train_max_queries: int | None
    muse: str | None  # the dictionary reference (None for mDPR)
    precision: str  # resolved: fp32 | bf16 | fp16
    num_train_epochs: int
    batch_size: int  # global
    learning_rate: float
    warmup_ratio: float
    weight_decay: float
    query_max_length: int
    passage_max_length: int
    sentence_rate: float | None
    word_rate: float | None
    align_weight: float | None
    case_sensitive: bool | None
    mixed_special_tokens: bool | None
    passage_align: str | None
    packing: bool | None = None  # True: each encoder's groups packed into one fixed-shape forward (None: padded, out of the key)
    torch_compile: TorchCompile | None = None  # True / "reduce-overhead": the dual encoder's training forward compiled (None: off, out of the key)
    # how train_max_queries cut the training set (core.sampling): "random" (a seeded sample); None: the first rows
    train_sample: str | None = None
    mixed_dropout: str | None = None  # "shared": each code-mixed copy with its original's dropout masks (None: independent)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.method == "mdpr" and (self.mix_query or self.mix_passage):
            raise ValueError("mDPR trains on English only: mix_query and mix_passage must be false")
        if self.method != "mdpr" and not (self.mix_query or self.mix_passage):
            raise ValueError(f"{self.method} needs mix_query, mix_passage or both")

    @property
    def mixes(self) -> bool:
        return self.method != "mdpr"

    @property
    def name(self) -> str:
        return f"{self.variant}{'-' + self.language if self.language else ''}-seed{self.seed}"

    def label(self) -> str:
        return self.name

    def inputs(self) -> Mapping[str, str]:
        out = {"train_data": self.train_data, "model": self.model}
        if self.muse is not None:
            from .data import muse_input

            out["muse"] = muse_input(self.muse, self.language)  # the one file it reads: keyed by its content
        return out


@dataclass(frozen=True)
class Bm25Run(ContrastiveMixRun):
    """BM25 on one (benchmark, language): the report and tuning queries ranked over the corpus."""

    experiment: str
    benchmark: str  # "mrtydi" | "miracl"
    language: str
    queries: str  # the reference of the queries and judgements
    corpus: str  # the reference of the corpus
    report_split: str
    tune_split: str
    tune_max_queries: int | None
    k1: float
    b: float
    depth: int  # hits kept per query (the fusion depth)
    metrics_depth: int
    analyzer: int
    implementation: str | None  # None: bm25s (its records keep their keys); else "pyserini"
    pyserini: str | None  # Pyserini's version (its analysers)
    # Config.eval_max_queries: each split's queries a seeded sample of this many (None: every query, out of the key); every
    # evaluation reads its queries through this run (inputs.queries_of), so its key follows
    eval_max_queries: int | None = None
    # how tune_max_queries cuts the tuning split: "random" (QuerySet.take, codeswitch.core.sampling's seed) since
    # 2026-11-29, when a cut was random.Random(0)'s draw; None where nothing is cut (out of the key: those keys stay)
    tune_sample: str | None = None

    def label(self) -> str:
        return f"BM25 {self.benchmark}-{self.language}"

    def inputs(self) -> Mapping[str, str]:
        return {"queries": self.queries, "corpus": self.corpus}


@dataclass(frozen=True)
class EvalRun(ContrastiveMixRun):
    """One trained model scored on one target: dense, BM25 + dense hybrid (tuned on the tuning split and on the reported one)."""

    # 5: the record's hybrid curve holds its weights as float values, {"weight": [w, ...], "mrr@100": [...]}, not as the
    # string keys {str(w): score} of a JSON object (issue 37: the tuned weight stays a float from tuning to table); the
    # scores are unchanged, but an older record has the other layout, so it is not read
    RESULT_VERSION: ClassVar[int] = 5

    experiment: str
    model: TrainRun
    bm25: Bm25Run
    depth: int
    hybrid_step: float
    per_device_eval_batch_size: int = not_in_key()  # speed only: the scores do not depend on it
    encode_sort_window: int = not_in_key()
    encode_bucket_step: int = not_in_key()  # speed only: the same embeddings up to float rounding
    search_chunk_size: int = not_in_key()
    keep_corpus_embeddings: bool = not_in_key()
    # the reduced corpus (Config.corpus_sample): judged + BM25's top depth + this many random passages; None: the whole
    corpus_sample: int | None = None

    def label(self) -> str:
        return f"{self.model.name} on {self.bm25.benchmark}-{self.bm25.language}"

    def inputs(self) -> Mapping[str, str]:
        return {**self.model.inputs(), **self.bm25.inputs()}


@dataclass(frozen=True)
class AlignSearchRun(ContrastiveMixRun):
    """``align_weight: search``: the weight w of one ContrastiveMix variant chosen over ``grid``, each weight's models
    (every seed and language) trained as their own runs and evaluated (:func:`codeswitch.contrastivemix.search.select`).

    Keyed by its evaluations' keys; the specs themselves ride along out of the key (to read their records)."""

    experiment: str
    variant: str
    grid: tuple[float, ...]
    candidates: tuple[str, ...]  # the key hashes of ``evals``
    metric: str  # the selection score, in words (search.METRIC)
    evals: tuple[EvalRun, ...] = not_in_key(())

    def label(self) -> str:
        return f"align_weight search {self.variant}"

    def inputs(self) -> Mapping[str, str]:
        return {}  # the data enter through the candidates' keys


@dataclass(frozen=True)
class EmbedRun(ContrastiveMixRun):
    """English and target-language validation queries (query encoder) and their first positives (passage encoder)."""

    # 5: the ``points`` queries are drawn by QuerySet.take (codeswitch.core.sampling's seed), not random.Random(0)
    RESULT_VERSION: ClassVar[int] = 5

    experiment: str
    model: TrainRun
    benchmark: str
    data: str  # the reference of the validation queries
    language: str
    split: str
    points: int
    per_device_eval_batch_size: int = not_in_key()
    encode_sort_window: int = not_in_key()

    def label(self) -> str:
        return f"embed {self.model.name}"

    def inputs(self) -> Mapping[str, str]:
        return {**self.model.inputs(), "data": self.data}


@dataclass(frozen=True)
class UmapRun(ContrastiveMixRun):
    """The 2-D UMAP of one side ("query" | "passage") of an :class:`EmbedRun`, English and the figure language together."""

    experiment: str
    embed: EmbedRun
    side: str
    n_neighbors: int
    min_dist: float
    random_state: int

    def label(self) -> str:
        return f"UMAP {self.embed.model.name} {self.side}"

    def inputs(self) -> Mapping[str, str]:
        return self.embed.inputs()
