"""The ``alignment`` section of a profile (:class:`Config`) and the run specs of its stages.

Defaults are the paper's / the authors' released scripts', written here only.  Field
names follow Hugging Face's ``TrainingArguments`` where they mean the same thing
(``learning_rate``, ``num_train_epochs`` — with early stopping, the most epochs run —,
``warmup_ratio``, ``weight_decay``, ``max_grad_norm``, ``per_device_eval_batch_size``);
``batch_size`` is the batch of one optimizer step (the loops here run on one device).
The older spellings (``lr``, ``max_epochs``, ``epochs``, ``eval_batch_size``) are
errors naming the new key.  The backbone is a list of ``{name, model}`` (the one
backbone schema of every section) holding exactly one backbone: the tables compare
alignment objectives on one encoder.  The older ``backbone: <ref>`` is converted.

Stages (each a spec type, run in this order; later stages read what earlier ones wrote):

1. :class:`AlignRun` — one alignment training (Lc or Lm, data, script, mode); its
   aligned weights are a folder the later stages read.
2. :class:`FinetuneRun` — one GLUECoS fine-tuning of a table cell; it holds the
   :class:`AlignRun` it starts from (or ``None``), whose key is part of its own.
3. :class:`FigureRun` — the t-SNE of Figure 3.1, before and after one alignment.

:class:`ExtractionRun` is the awesome-align extraction check the notebook shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, ClassVar

from ..common.fastpath import TorchCompile, check_torch_compile
from ..core.experiment import RunSpec, not_in_key
from ..core.kept import check_setting
from ..core.sections import check_fields, section_prepare

SECTION = "alignment"
MODES = ("all_layers", "linear_head")
OBJECTIVES = ("sentence", "word")


def same_depth_layer(depth: int) -> int:
    """awesome-align's extraction layer (8 of mBERT's 12) at the same relative depth of an encoder of ``depth`` layers."""
    return round(8 * depth / 12)


@dataclass(frozen=True)
class Backbone:
    name: str  # a label
    model: str  # hub id, local folder, or tiny-*


@dataclass(frozen=True)
class AlignModeConfig:
    """Alignment-training settings of one mode (released defaults per mode, in :class:`Config`)."""

    learning_rate: float
    temperature: float  # τ of Lc
    reg_weight: float  # η of Lc (and of Lm unless word_reg_weight is set)
    batch_size: int
    num_train_epochs: int  # the most epochs: early stopping may end sooner
    patience: int  # early stopping on the validation loss
    word_reg_weight: float | None = None  # η of Lm; None: the same as reg_weight (the paper tuned it, values unpublished)
    weight_decay: float = 0.0  # released: 0.0 (AdamW, betas (0.9, 0.98), eps 1e-8)
    max_grad_norm: float | None = None  # released: no clipping


@dataclass(frozen=True)
class TaskConfig:
    """GLUECoS fine-tuning settings of one task (the authors' scripts; per task in :class:`Config`)."""

    num_train_epochs: int
    batch_size: int
    learning_rate: float
    max_length: int  # sub-words, special tokens included
    # The tokenizer lower-cases (and strips accents, Unicode Mn: for mBERT also the Devanagari
    # virama, anusvara and vowel signs u/uu/e/ai), as the GLUECoS scripts BertSequence.py / BertToken.py load it
    # (do_lower_case=True); run_squad.py only with --do_lower_case, which train_qa.sh omits.
    # False: the checkpoint's tokenizer as it ships (cased for mBERT-cased).  No default: restate it.
    do_lower_case: bool
    warmup_ratio: float = 0.1  # GLUECoS: t_total // 10 (run_squad: 0)
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    per_device_eval_batch_size: int = 64
    doc_stride: int = 128  # QA: overlap of context windows
    max_answer_length: int = 30  # QA: longest answer span, in tokens
    selection: Literal["best_dev_epoch", "last_epoch"] = "best_dev_epoch"
    # training examples kept (a sentence, a CoNLL sentence, a QA question), cut as the profile's train_sample says
    # (core.sampling: the first N, or a seeded sample in file order); None: every one (the paper's)
    max_train_samples: int | None = None


@dataclass(frozen=True)
class Config:
    """The ``alignment`` section of a profile.  Defaults are the paper's / released code's settings."""

    backbones: tuple[Backbone, ...] = (Backbone("mBERT", "bert-base-multilingual-cased"),)
    # Parallel text: "synthetic" (shipped smoke set), a local folder (<split>.tsv [+ <split>_alignments]), or a hub id.
    parallel_source: str = "cfilt/iitb-english-hindi"
    # first N pairs of the train split: the authors' released alignment files hold 62,977 training pairs
    # (alignment/data/*/cfilt_en-hi_parallel/train_alignments, AlignmentForCS at b8a879f); the paper gives no size
    parallel_train_size: int | None = 62977
    parallel_valid_size: int | None = None  # first N pairs of the validation split (IITB dev: 520)
    # A local copy without a train split (a sample of the IITB corpus that holds only its validation pairs): N pairs of the
    # validation split, drawn with core.sampling's fixed seed, are the validation part and the rest train (then capped
    # by parallel_train_size).  None: the source's train split trains and its validation split validates (the paper).
    parallel_holdout: int | None = None
    # Lexicon: "synthetic", a local MUSE file, or its URL (downloaded once into runs/).
    lexicon_source: str = "https://dl.fbaipublicfiles.com/arrival/dictionaries/en-hi.txt"
    # entries held out (seeded permutation) for early stopping: the size of the released MUSE validation file
    # (alignment/data/*/muse_en-hi/valid.tsv: 3,822 of 30,577 / 3,822 / 3,822, AlignmentForCS at b8a879f)
    lexicon_valid_size: int = 3822
    lexicon_train_size: int | None = None
    alignments: Literal["auto", "extract"] = "auto"  # auto: the alignment file where there is one, else extract
    align_layer: int = 8  # awesome-align's layer for mBERT
    softmax_threshold: float = 1e-3  # awesome-align's default
    align_prob_threshold: float | None = 0.9  # §2.2: "filter ... alignment prediction probability (set to 0.9)"
    all_layers: AlignModeConfig = AlignModeConfig(learning_rate=5e-5, temperature=0.001, reg_weight=0.1, batch_size=8,
                                                  num_train_epochs=10, patience=10)
    linear_head: AlignModeConfig = AlignModeConfig(learning_rate=1e-3, temperature=0.01, reg_weight=100.0, batch_size=512,
                                                   num_train_epochs=100, patience=10)
    max_length: int = 128  # sub-words per sentence during alignment (released: 128)
    # One packed, fixed-shape forward per encoder a step, both sides together (issue 24; common.fastpath.pack_features):
    # the same pairs and in-batch negatives; float sums fall differently, so it is part of a run's key.
    packing: bool = False
    # GLUECoS fine-tuning's packed steps (gluecos_train.PackedSteps): each training batch one packed, fixed-shape
    # forward, for the three heads.  A setting of its own, not ``packing``: that one is documented for the alignment
    # steps (both sides of a pair together) and keys the alignment runs, which every fine-tune's key holds, so one
    # could not be measured or turned on without the other.  Part of a fine-tune's key when on (QA's loss changes:
    # each window's softmax over its own tokens, not the batch's padding).
    gluecos_packing: bool = False
    # The trained encoder (alignment) and the task model (GLUECoS fine-tuning) under torch.compile in training steps
    # (common.fastpath.compile_for_training; packed: fixed shapes, one whole graph per budget): false | true |
    # reduce-overhead (torch.compile's CUDA-graph mode over the packed budgets; needs packing and gluecos_packing); in
    # both stages' keys when on (compiled kernels round differently).  CPU runs work either way; off in every profile
    # until a GPU row measures it.
    torch_compile: TorchCompile = False
    sentence_vector: Literal["cls", "pooler"] = "cls"
    contrastive_variant: Literal["released", "paper"] = "released"
    word_reg_on: Literal["cls", "words"] = "cls"
    # Lm's distance: "cosine" (1 − cos, Lm's S as printed) | "l2" (squared L2, Wu & Dredze's L2 alignment, §4)
    word_distance: Literal["cosine", "l2"] = "cosine"
    # Roman rows: "authors" = the authors' own romanised text wherever the source provides it (their
    # Romanized/ folder), ITRANS generated only where it does not (hub corpus, MUSE URL, synthetic);
    # "itrans" = always ITRANS from the Devanagari side.  See codeswitch.alignment.data.
    romanisation: Literal["authors", "itrans"] = "authors"
    align_seed: int | None = None  # None: the profile's first seed
    # GLUECoS: "synthetic" (shipped look-alikes) or Data/Processed_Data (relative paths: from the project root).
    gluecos_dir: str = "data/GLUECoS/Data/Processed_Data"
    task_subdirs: dict[str, str] = field(default_factory=dict)  # e.g. {"sentiment": "Sentiment_EN_HI/Romanized"}
    # the GLUECoS tasks fine-tuned, a subset of sentiment, ner, qa (None: all three, the paper's); a table none of
    # whose tasks is run is neither run nor written (a local copy with SAIL 2017 only: [sentiment], Table 3.1 alone)
    gluecos_tasks: tuple[str, ...] | None = None
    # GLUECoS fine-tuning, the authors' scripts: train_sentence.sh, train_token.sh, train_qa.sh.
    # (A YAML section for one of these replaces all of it: restate every field.)
    sentiment: TaskConfig = TaskConfig(num_train_epochs=10, batch_size=16, learning_rate=1.5e-5, max_length=256, do_lower_case=True)
    ner: TaskConfig = TaskConfig(num_train_epochs=30, batch_size=16, learning_rate=5e-5, max_length=256, do_lower_case=True)
    qa: TaskConfig = TaskConfig(num_train_epochs=30, batch_size=4, learning_rate=1.5e-5, max_length=512, do_lower_case=False, warmup_ratio=0.0,
                                doc_stride=128)
    seeds: tuple[int, ...] | None = None  # fine-tuning seeds; None: the profile's seeds
    # which aligned backbones are kept, as plain AutoModels (codeswitch.core.kept): "none" | "best" | "all" (one alignment
    # run per setting, so best = all); in no run key.  The GLUECoS task models are not kept (see docs/models.md)
    keep_models: str = "none"
    figure_system: str = "Lm (|| Devanagari)"  # the Table 3.1 row whose aligned model Figure 3.1 shows
    # τ and η tuned on validation (§3.1: "we used a validation set to tune ... η and the temperature"; Lm: η only):
    # false = the released values (the default); true = every alignment trained once per (τ, η) of the mode's released
    # values times tune_factors (Lm: η only, τ unused), the one with the best held-out retrieval P@1 on the validation
    # pairs kept for fine-tuning and the figure (codeswitch.alignment.tuning).  The paper gives no grid: a decade either side
    tune: bool = False
    tune_factors: tuple[float, ...] = (1.0, 0.1, 10.0)  # the released value first: ties keep it
    tsne_perplexity: float = 30.0

    def __post_init__(self):
        check_setting(self.keep_models, where=f"{SECTION}.keep_models")
        check_fields(self)  # both modes and the three tasks too: epochs, batch sizes, τ ... in their domains (core.sections.RANGES)
        # both stages it compiles must pack: the alignment steps and GLUECoS's
        check_torch_compile(self.torch_compile, section=SECTION, packing={"packing": self.packing, "gluecos_packing": self.gluecos_packing})
        from .data import ROMANISATIONS
        from .loss import WORD_DISTANCES

        if self.word_distance not in WORD_DISTANCES:
            raise ValueError(f"word_distance must be one of {list(WORD_DISTANCES)}, got {self.word_distance!r}")
        if self.romanisation not in ROMANISATIONS:
            raise ValueError(f"romanisation must be one of {list(ROMANISATIONS)}, got {self.romanisation!r}")
        from .rows import TABLE3_1

        if not any(s.row == self.figure_system and s.objective is not None for s in TABLE3_1.rows):
            raise ValueError(f"figure_system: {self.figure_system!r} is not an aligned row of Table 3.1")
        if not self.tune_factors or any(isinstance(f, bool) or not isinstance(f, (int, float)) or f <= 0 for f in self.tune_factors):
            raise ValueError(f"tune_factors must be a non-empty list of positive factors, got {list(self.tune_factors)}")
        self._check_local_copy_keys()
        if len(self.backbones) != 1:
            raise ValueError(f"backbones: exactly one is needed (the tables compare alignment objectives on one encoder); "
                             f"got {[b.name for b in self.backbones]}")

    def _check_local_copy_keys(self) -> None:
        """parallel_holdout and gluecos_tasks: the keys a local copy without a train split or with some tasks needs."""
        if self.parallel_holdout is not None:
            if isinstance(self.parallel_holdout, bool) or not isinstance(self.parallel_holdout, int) or self.parallel_holdout < 1:
                raise ValueError(f"parallel_holdout must be an integer >= 1 (validation pairs held out) or null, "
                                 f"got {self.parallel_holdout!r}")
            if self.parallel_valid_size is not None:
                raise ValueError("parallel_holdout and parallel_valid_size cannot both be set: with parallel_holdout the "
                                 "validation part is the held-out pairs (leave parallel_valid_size null)")
        if self.gluecos_tasks is not None:
            from .gluecos_data import TASKS

            tasks = list(self.gluecos_tasks)
            unknown = [t for t in tasks if t not in TASKS]
            if not tasks or unknown or len(set(tasks)) != len(tasks):
                raise ValueError(f"gluecos_tasks must list some of {list(TASKS)}, each once (or be null: all), got {tasks}")

    def runs_task(self, task: str) -> bool:
        """Whether the GLUECoS task ``task`` is fine-tuned (``gluecos_tasks``)."""
        return self.gluecos_tasks is None or task in self.gluecos_tasks

    @property
    def backbone(self) -> Backbone:
        return self.backbones[0]

    def mode(self, name: str) -> AlignModeConfig:
        return {"all_layers": self.all_layers, "linear_head": self.linear_head}[name]


# keys renamed to Hugging Face's names: the old spelling is an error that names the new one
RENAMED_MODE = {"lr": "learning_rate", "max_epochs": "num_train_epochs"}
RENAMED_TASK = {"epochs": "num_train_epochs", "lr": "learning_rate", "eval_batch_size": "per_device_eval_batch_size"}
RENAMED = {"all_layers": RENAMED_MODE, "linear_head": RENAMED_MODE, "sentiment": RENAMED_TASK, "ner": RENAMED_TASK, "qa": RENAMED_TASK}


# Refuse the renamed keys (naming the new one); convert the older ``backbone: <ref>`` to the list form.
_prepare = section_prepare(SECTION, Backbone, renamed=RENAMED, older=True)


def load(profile) -> Config:
    """The profile's ``alignment`` section as a :class:`Config` (errors name the YAML file and key)."""
    return profile.section(SECTION, Config, prepare=_prepare)


# --------------------------------------------------------------------------- the run specs
@dataclass(frozen=True)
class AlignmentRun(RunSpec):
    """The base of every spec of the package: it sets the result version they all share."""

    # Bump when a change of this experiment's method code (data handling, training, evaluation)
    # changes its results: every run key changes, so no old record is reused.
    # 2: alignment runs record held-out retrieval, every run its learning entry (codeswitch.core.learning)
    # 3: a fine-tune seeds the pooler that a checkpoint without one (tiny-bert-mlm) gets at load
    # 4: a fine-tune's learning entry reads a labelled test at the chosen epoch; sentiment against chance (issue 23)
    # 5: the shipped sentiment look-alike is generated (alignment.standins.sentiment_standin), 120/96/96 sentences (issue 23)
    RESULT_VERSION: ClassVar[int] = 5


@dataclass(frozen=True)
class AlignRun(AlignmentRun):
    """One alignment training (stage 1), passed as it is to :func:`codeswitch.alignment.train.train_alignment`.

    Its key names the folder of its aligned weights (``aligned/<key hash>/``).
    ``reg_weight`` is the η this objective uses (Lm's own where one is set).
    """

    experiment: str
    stage: str
    model: str
    data: str  # "parallel" | "lexicon"
    source: str
    script: str  # "devanagari" | "roman"
    mode: str  # "all_layers" | "linear_head"
    objective: str  # "sentence" (Lc) | "word" (Lm)
    learning_rate: float
    temperature: float
    reg_weight: float
    batch_size: int
    num_train_epochs: int
    patience: int
    weight_decay: float
    max_length: int
    sentence_vector: str
    contrastive_variant: str
    word_reg_on: str
    seed: int
    precision: str  # resolved: fp32 | bf16 | fp16 (the profile's; a bf16 run is not an fp32 one)
    files: str | None = None  # content hash of the shipped synthetic set; None: a hub id, URL or path (keyed by name)
    train_size: int | None = None
    valid_size: int | None = None
    # parallel data only: validation pairs held out as the validation part, the rest trains (alignment.parallel_holdout)
    holdout: int | None = None
    max_grad_norm: float | None = None
    # word objective only: where its word alignments come from
    alignments: str | None = None  # "auto" | "extract"
    align_layer: int | None = None
    softmax_threshold: float | None = None
    align_prob_threshold: float | None = None
    word_distance: str | None = None  # word objective only: "cosine" | "l2"
    romanisation: str | None = None  # roman script only: "authors" | "itrans"
    backbone_id: str | None = None  # tiny-* backbones: their recipe's identity
    packing: bool | None = None  # True: one packed, fixed-shape forward per encoder a step (None: off, out of the key)
    torch_compile: TorchCompile | None = None  # True / "reduce-overhead": the trained encoder's training forward compiled (None: off, out of the key)
    # how train_size cut the parallel training split (core.sampling): "random" (a seeded sample); None: the first pairs
    train_sample: str | None = None

    def inputs(self) -> Mapping[str, str]:
        return {"data": self.source, "model": self.model}


@dataclass(frozen=True)
class FinetuneRun(AlignmentRun):
    """One GLUECoS fine-tuning (stage 2), passed as it is to :func:`codeswitch.alignment.gluecos_train.finetune`."""

    experiment: str
    stage: str
    task: str
    gluecos_dir: str
    subdir: str
    model: str
    alignment: AlignRun | AlignTuneRun | None  # the alignment it starts from (None: the encoder as it is)
    random_head: bool  # "Baseline (rand)": an untrained linear head
    seed: int
    precision: str  # resolved: fp32 | bf16 | fp16
    num_train_epochs: int
    batch_size: int
    learning_rate: float
    max_length: int
    do_lower_case: bool  # the tokenizer lower-cases (GLUECoS's scripts) or is used as it ships
    warmup_ratio: float
    weight_decay: float
    max_grad_norm: float
    per_device_eval_batch_size: int
    doc_stride: int
    max_answer_length: int
    selection: str
    files: str | None = None  # content hash of the shipped synthetic GLUECoS; None: keyed by its folder name
    backbone_id: str | None = None
    packing: bool | None = None  # True: packed training steps (alignment.gluecos_packing; None: off, out of the key)
    torch_compile: TorchCompile | None = None  # True / "reduce-overhead": the task model's training forward compiled (None: off, out of the key)
    # the training examples kept (alignment.<task>.max_train_samples) and how they were cut (core.sampling: "random";
    # None: the first ones); both None: every example, out of the key
    max_train_samples: int | None = None
    train_sample: str | None = None
    table: str = not_in_key("")  # display: the table and row this cell belongs to
    row: str = not_in_key("")

    def inputs(self) -> Mapping[str, str]:
        return {"data": self.gluecos_dir, "model": self.model}

    def key(self) -> dict[str, Any]:
        k = super().key()
        k["alignment"] = None if self.alignment is None else self.alignment.key()
        return k


@dataclass(frozen=True)
class AlignTuneRun(AlignmentRun):
    """``alignment.tune``: one alignment's τ and η chosen on validation among ``runs`` (each its own :class:`AlignRun`,
    cached in the align stage); a fine-tune or the figure holding it starts from the chosen run's weights, and the
    choice is a record of its own (:func:`codeswitch.alignment.tuning.choose`)."""

    experiment: str
    stage: str
    candidates: tuple[str, ...]  # the key hashes of ``runs``
    metric: str
    runs: tuple[AlignRun, ...] = not_in_key(())

    def label(self) -> str:
        r = self.runs[0]
        return f"tune τ/η {r.objective} {r.data} {r.script} {r.mode}"


@dataclass(frozen=True)
class FigureRun(AlignmentRun):
    """Figure 3.1 (stage 3): t-SNE of the word vectors before and after ``alignment``."""

    experiment: str
    stage: str
    model: str
    alignment: AlignRun | AlignTuneRun
    sentences: str  # hash of the figure's sentence file
    perplexity: float
    seed: int
    backbone_id: str | None = None
    system: str = not_in_key("")  # display: the Table 3.1 row shown

    def inputs(self) -> Mapping[str, str]:
        return {"model": self.model}

    def key(self) -> dict[str, Any]:
        return super().key() | {"alignment": self.alignment.key()}


@dataclass(frozen=True)
class ExtractionRun(AlignmentRun):
    """awesome-align extraction from the initial encoder vs the alignment file (a diagnostic)."""

    experiment: str
    stage: str
    model: str
    source: str
    n: int
    thresholds: tuple[float | None, ...]
    align_layer: int
    softmax_threshold: float
    max_length: int
    backbone_id: str | None = None

    def inputs(self) -> Mapping[str, str]:
        return {"data": self.source, "model": self.model}
