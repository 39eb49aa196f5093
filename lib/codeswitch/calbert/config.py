"""The ``calbert`` section of a profile (:class:`Config`) and the run specs of its two stages.

Defaults are the paper's: Table 3 (Siamese pre-training), Table 5 (SAIL 2017),
Table 11 (IITP product reviews), written here only.  Field names follow Hugging
Face's ``TrainingArguments`` where they mean the same thing (``num_train_epochs``,
``learning_rate``, ``warmup_steps``, ``weight_decay``, ``max_grad_norm``,
``per_device_eval_batch_size``).  ``batch_size`` is the *total* training batch, split
over the devices by :func:`codeswitch.core.training.training_arguments` — not a
per-device size, so it keeps its own name (as in ``glue``).

Backbones are a list of ``{name, model}`` (the one backbone schema of every
section).  The older spellings (``ref``, ``epochs``, ``train_batch_size``,
``eval_batch_size``) are errors naming the new key.

Two stages, three spec types: :class:`PretrainRun` (one Siamese pre-training of a
backbone with an objective; its adapted transformer is a checkpoint folder that the
fine-tuning runs read), :class:`ScratchRun` (one masked-language-model pre-training
from scratch, Tables 8 and 13's baselines) and :class:`FinetuneRun` (one sentiment
fine-tuning; it holds the pre-training it starts from, whose key enters its own).

The paper's protocol (§7.1: "the highest F1-score over 10 runs is recorded", on the
validation split) is the default: ``seeds`` lists the 10 runs (their count is the
number of runs; one list, not a list and a count) and ``selection`` names the
headline statistic, ``best_of_validation`` (the paper) or ``mean`` (mean ± std over
the same runs, always shown beside it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, ClassVar

from ..common.fastpath import TorchCompile, check_torch_compile
from ..core.experiment import RunSpec, not_in_key
from ..core.kept import check_setting
from ..core.profiles import Profile
from ..core.sections import ConfigError, backbones_from, check_fields, section_prepare

SECTION = "calbert"
OBJECTIVES = ("cosine", "mnrl")  # CosineSimilarityLoss (CalBERT), MultipleNegativesRankingLoss (in-batch negatives)
VARIANTS = ("none",) + OBJECTIVES  # "none": the backbone fine-tuned directly
SCRATCH = "scratch"  # the fine-tuning variant of a from-scratch MLM model (Tables 8, 13)
PAIR_FIELDS = ("transliteration", "cleaned-transliteration")
SELECTIONS = ("best_of_validation", "mean")  # the headline statistic over the runs (the paper: best of them on validation)
# 10 fine-tuning runs (§7.1): the paper profile's five seeds and five more
PAPER_SEEDS = (11111, 22222, 33333, 44444, 55555, 66666, 77777, 88888, 99999, 101010)
SCRATCH_ARCHITECTURES = ("BERT", "DistilBERT", "RoBERTa")  # Tables 8 and 13's rows (the released script's model_map)
# "small": a tokenizer trained on the code-mixed side only; "big": on English and code-mixed together (released script)
SCRATCH_TOKENIZERS = ("small", "big")


@dataclass(frozen=True)
class Backbone:
    name: str  # the row label: "BERT", "RoBERTa", ...
    model: str  # hub id or local folder (or a tiny-* name)


# The cased BERT and DistilBERT: the authors' result files that reproduce Tables 7, 8, 12 and 13 are named
# bert-base-cased.json / distilbert-base-cased.json (calbert repository, evaluation/*/results/ at d47d18c); the
# uncased models are the option (backbones.BERT.model: bert-base-uncased), see the ledger row cb-finetune-protocol.
PAPER_BACKBONES = (
    Backbone("BERT", "bert-base-cased"),
    Backbone("RoBERTa", "roberta-base"),
    Backbone("DistilBERT", "distilbert-base-cased"),
    Backbone("XLM-RoBERTa", "xlm-roberta-base"),
    Backbone("IndicBERT", "ai4bharat/indic-bert"),
)


@dataclass(frozen=True)
class PretrainConfig:
    """Siamese pre-training: CalBERT Table 3 (+ the released code's batch size) and where the pairs come from."""

    # A JSON file/folder in the released layout, an english<TAB>hindi file, a hub id of a
    # parallel en-hi corpus (Hindi romanised to ITRANS), or "shipped" (the smoke set).
    pairs: str = "cfilt/iitb-english-hindi"
    pair_field: str = "transliteration"  # released code; "cleaned-transliteration" is the other field
    # The paper's pre-training data are its 147,731 scraped social-media sentences (Table 1);
    # the same number of IITB pairs is drawn at random, then sample_fraction of them is
    # used (22,160 at 15%).  None: every pair of the source.
    max_pairs: int | None = 147_731
    heldout_pairs: int = 1000  # kept out of training, for the alignment diagnostics
    num_train_epochs: float = 10
    batch_size: int = 16  # total; not in Table 3, the released pre-training script uses 16
    learning_rate: float = 2.5e-5
    warmup_steps: int = 100
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    max_seq_length: int = 128  # not stated in the paper
    mnrl_scale: float = 20.0  # the in-batch-negatives variant only: 1 / temperature
    # §7.2: "CalBERT was only Siamese pre-trained on a 15% sample of the entire available data":
    # a seeded random 15% of the training pairs (after max_pairs).  None: every pair.
    sample_fraction: float | None = 0.15
    # The released src/siamese_pretraining.py (calbert repository, 701612e .. a781856), not the paper (ledger
    # rows cb-negatives, cb-added-tokens).  sample_negative: a random half of the pairs kept as label-1 positives, each
    # with negative_sample_size label-0 (translation, other transliteration) pairs and as many English-English pairs
    # built as the released code builds them (the cosine objective only: in-batch negatives need no labels); the
    # released default is on, the paper's text describes positives only.
    sample_negative: bool = False
    negative_sample_size: int = 2  # the released --sample_size
    # Every lower-cased corpus word (both sides) seen at least this many times added to the tokenizer, the embedding
    # matrix resized (the released --min_count: 5 at a781856; 701612e added every word, i.e. 1).  None: the
    # backbone's own vocabulary (the paper says nothing of new tokens).
    added_tokens_min_count: int | None = None

    def __post_init__(self):
        check_fields(self, "pretrain.")  # epochs, batch size, rates ... in their domains (core.sections.RANGES)
        if self.max_seq_length < 8:
            raise ValueError(f"pretrain.max_seq_length must be >= 8, got {self.max_seq_length}")
        if self.sample_fraction is not None and not 0 < self.sample_fraction <= 1:
            raise ValueError(f"pretrain.sample_fraction must be in (0, 1] or null, got {self.sample_fraction}")
        if self.pair_field not in PAIR_FIELDS:
            raise ValueError(f"pretrain.pair_field must be one of {PAIR_FIELDS}, got {self.pair_field!r}")
        if self.negative_sample_size < 1:
            raise ValueError(f"pretrain.negative_sample_size must be >= 1, got {self.negative_sample_size}")
        if self.added_tokens_min_count is not None and self.added_tokens_min_count < 1:
            raise ValueError(f"pretrain.added_tokens_min_count must be >= 1 or null, got {self.added_tokens_min_count}")


@dataclass(frozen=True)
class ScratchConfig:
    """Tables 8 and 13: transformers pre-trained *from scratch* with masked language modelling.

    The paper (§7.1): "pre-training some popular Transformers using Masked Language
    Modelling on a subset of our code-mixed data. The size of the subset taken is the
    same as that was used for CalBERT experiments".  Sizes and settings are the
    released script's (``pretrain_transformer.py``, ``create_tokenizers.py``): 6
    layers, hidden 768, 12 heads, 15% masking, batch 16, AdamW at 1e-4, 15 epochs;
    a WordPiece (BERT, DistilBERT) or byte-level BPE (RoBERTa) tokenizer with
    ``min_frequency`` 2, trained on the code-mixed side ("small") or on both sides
    ("big"); the model always learns from the code-mixed side.  The pairs are the
    Siamese pre-training's training pairs (same source, cap and sample).

    Reproducibility: the ``tokenizers`` library's WordPiece trainer (BERT, DistilBERT)
    breaks ties between equally frequent merges in hash-map order, so two trainings
    on the same text can give slightly different vocabularies; the byte-level BPE
    trainer (RoBERTa) is deterministic.  A finished checkpoint is cached by its key.
    """

    architectures: tuple[str, ...] = SCRATCH_ARCHITECTURES  # empty: no from-scratch baselines
    tokenizers: tuple[str, ...] = SCRATCH_TOKENIZERS
    vocab_size: int = 30_000  # not set by the released script: the tokenizers library's default
    min_frequency: int = 2
    hidden_size: int = 768
    num_hidden_layers: int = 6
    num_attention_heads: int = 12
    intermediate_size: int = 3072  # not set by the released script: transformers' default
    mlm_probability: float = 0.15
    num_train_epochs: float = 15
    batch_size: int = 16
    learning_rate: float = 1e-4  # constant (the released loop has no schedule), no weight decay
    max_seq_length: int = 128
    # The std of the random initial weights; None: transformers' default 0.02 (the released script sets none), whose
    # gain per projection, sqrt(hidden_size) x 0.02, is 0.55 at hidden 768 but 0.11 at a smoke-size hidden 32: there
    # attention adds about 1% to the first token's layer-normed vector, which the classifier reads, so every input
    # looks alike.  A smaller model keeps the paper size's gain with 0.02 x sqrt(768 / hidden_size).
    initializer_range: float | None = None

    def __post_init__(self):
        check_fields(self, "scratch.")  # epochs, sizes, rates in their domains (core.sections.RANGES)
        bad = [a for a in self.architectures if a not in SCRATCH_ARCHITECTURES]
        if bad:
            raise ValueError(f"scratch.architectures: unknown {bad}; known: {list(SCRATCH_ARCHITECTURES)}")
        bad = [t for t in self.tokenizers if t not in SCRATCH_TOKENIZERS]
        if bad or (self.architectures and not self.tokenizers):
            raise ValueError(f"scratch.tokenizers must be a non-empty subset of {list(SCRATCH_TOKENIZERS)}, got {list(self.tokenizers)}")
        if self.initializer_range is not None and not self.initializer_range > 0:
            raise ValueError(f"scratch.initializer_range must be > 0 or null, got {self.initializer_range}")
        if self.hidden_size % self.num_attention_heads or not 0 < self.mlm_probability < 1 or self.num_train_epochs <= 0:
            raise ValueError(f"bad from-scratch pre-training settings: {self}")

    def rows(self) -> list[str]:
        """The table rows, ``<architecture>-<tokenizer>`` (Table 8's "BERT-small", ...)."""
        return [f"{a}-{t}" for a in self.architectures for t in self.tokenizers]


@dataclass(frozen=True)
class TaskConfig:
    """Sentiment fine-tuning of one task; defaults = CalBERT Table 5 (SAIL 2017)."""

    source: str = ""  # a local folder in the task's layout, or "shipped" (the smoke set)
    variants: tuple[str, ...] = VARIANTS
    romanise: bool = False  # Devanagari -> ITRANS before tokenising
    learning_rate: float = 2e-6
    batch_size: int = 4  # total training batch
    per_device_eval_batch_size: int = 4
    num_train_epochs: float = 15
    weight_decay: float = 0.08
    max_seq_length: int = 128  # not stated in the paper
    warmup_steps: int = 0  # not stated in the paper: the Trainer's default
    # cap on the training rows (None: every row, the paper); cut by the profile's train_sample (core.sampling)
    max_train_samples: int | None = None

    def __post_init__(self):
        check_fields(self)  # epochs, batch sizes, rates ... in their domains (core.sections.RANGES)
        bad = [v for v in self.variants if v not in VARIANTS]
        if bad:
            raise ValueError(f"unknown variant(s) {bad}; known: {list(VARIANTS)}")


@dataclass(frozen=True)
class SailConfig(TaskConfig):
    """SAIL 2017 Hindi–English sentiment, Table 5's learning rate and weight decay.

    Epochs and batch are the released runs': the authors' result files that reproduce Tables 7 and 8 to three
    decimals (evaluation/sail-2017/results/*.json, calbert repository at d47d18c) record ``"epoch": 30.0`` and
    train_samples_per_second / train_steps_per_second = 8.0 samples per optimiser step; Table 5 prints 15 epochs
    and batch 4 (the option: ``num_train_epochs: 15``, ``batch_size: 4``)."""

    source: str = "data/sail2017"
    batch_size: int = 8  # total samples per optimiser step (the released runs); Table 5: 4
    num_train_epochs: float = 30  # the released runs; Table 5: 15


@dataclass(frozen=True)
class IitpConfig(TaskConfig):
    """IndicGLUE IITP product reviews, romanised to ITRANS, Table 11's settings."""

    source: str = "data/iitp-product-reviews"
    romanise: bool = True
    batch_size: int = 16
    per_device_eval_batch_size: int = 16
    num_train_epochs: float = 50
    weight_decay: float = 0.02


@dataclass(frozen=True)
class Config:
    """The ``calbert`` section of a profile."""

    backbones: tuple[Backbone, ...] = PAPER_BACKBONES
    pretrain: PretrainConfig = field(default_factory=PretrainConfig)
    sail: SailConfig = field(default_factory=SailConfig)
    iitp: IitpConfig = field(default_factory=IitpConfig)
    scratch: ScratchConfig = field(default_factory=ScratchConfig)
    # fine-tuning seeds, one run each: the paper's 10 runs; None: the profile's seeds
    seeds: tuple[int, ...] | None = PAPER_SEEDS
    selection: str = "best_of_validation"  # the headline: the paper's best run on validation, or "mean" (± std)
    pretrain_seed: int | None = None  # None: the first fine-tuning seed
    itrans_lowercase: bool = True  # CalBERT prints lower-cased ITRANS (Table 2: "shuruata", "rrina")
    # which fine-tuned classifiers are kept, as AutoModelForSequenceClassification with their label maps
    # (codeswitch.core.kept): "none" | "best" (per table row, the paper's best run on validation) | "all"; in no run key
    keep_models: str = "none"
    # fine-tuning: each training batch one packed, fixed-shape forward where the head reads the first token (BERT,
    # RoBERTa, XLM-R; issue 24, as glue.packing); the same batches, float sums fall differently: in the run key when on
    packing: bool = False
    # fine-tuning: the model (and its loss, computed in its forward) under torch.compile in training steps
    # (common.fastpath.compile_for_training; packed: fixed shapes, one whole graph per budget): false | true |
    # reduce-overhead (torch.compile's CUDA-graph mode over the packed budgets; needs packing); in the run key when
    # on.  CPU runs work either way; off in every profile until a GPU row measures it.
    torch_compile: TorchCompile = False
    # fine-tuning (issue 40): null: the HF Trainer, one run at a time (every profile); K >= 1: the stacked loop
    # (codeswitch.calbert.stacked over core.batched: fp32, counter-based dropout, each run's own seed, data order,
    # AdamW and record), the runs of one (task, backbone, variant) that differ only in seed trained K at a time as one
    # model.  Its run keys carry loop: stacked, never K (K = 1 and K = 10 give the same records to 1e-5)
    batched_runs: int | None = None

    def __post_init__(self):
        check_setting(self.keep_models, where=f"{SECTION}.keep_models")
        object.__setattr__(self, "backbones", backbones_from(self.backbones, Backbone))
        check_fields(self)
        check_torch_compile(self.torch_compile, section=SECTION, packing={"packing": self.packing})
        check_batched_runs(self.batched_runs, packing=self.packing, torch_compile=self.torch_compile)
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {list(SELECTIONS)}, got {self.selection!r}")

    def task(self, name: str) -> TaskConfig:
        return {"sail": self.sail, "iitp": self.iitp}[name]


def check_batched_runs(k: Any, *, packing: bool, torch_compile: Any) -> None:
    """``calbert.batched_runs``: null or an integer >= 1; the stacked loop pads its steps and runs eagerly, so it takes
    neither ``packing`` nor ``torch_compile``."""
    where = f"{SECTION}.batched_runs"
    if k is None:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"{where}: must be null (the HF Trainer, one run at a time) or an integer >= 1 "
                          f"(runs trained together as one stacked model), got {k!r}", ("batched_runs",))
    for name, on in (("packing", packing), ("torch_compile", torch_compile)):
        if on:
            raise ConfigError(f"{where}: {k} trains the stacked loop (padded steps, eager), which does not take "
                              f"{SECTION}.{name}: set {name}: false, or batched_runs: null", ("batched_runs",))


# keys renamed to Hugging Face's names (or the one backbone schema): the old spelling is an error naming the new one
RENAMED_TASK = {"epochs": "num_train_epochs", "train_batch_size": "batch_size", "eval_batch_size": "per_device_eval_batch_size"}
RENAMED = {"pretrain": {"epochs": "num_train_epochs"}, "sail": RENAMED_TASK, "iitp": RENAMED_TASK}


# Refuse the renamed keys, naming the new one (``calbert.sail.epochs`` → ``num_train_epochs``, ``ref`` → ``model``).
_prepare = section_prepare(SECTION, Backbone, renamed=RENAMED, item_renamed={"ref": "model"})


def load(profile: Profile) -> Config:
    """The profile's ``calbert`` section as a :class:`Config` (errors name the YAML file and key)."""
    return profile.section(SECTION, Config, prepare=_prepare)


# --------------------------------------------------------------------------- the run specs
@dataclass(frozen=True)
class CalbertRun(RunSpec):
    """A run of CalBERT's either stage: the one place its result version is set."""

    # Bump when a change of this experiment's method code (data handling, training, evaluation)
    # changes its results: every run key changes, so no old record is reused.
    RESULT_VERSION: ClassVar[int] = 2  # 2: every run records its learning entry (codeswitch.core.learning)


@dataclass(frozen=True)
class PretrainRun(CalbertRun):
    """One Siamese pre-training of a backbone with an objective (stage 1).

    Built by :func:`codeswitch.calbert.plan.plan`; passed as it is to
    :func:`codeswitch.calbert.train.siamese_pretrain`.  Its key names the checkpoint
    folder the fine-tuning runs read.
    """

    experiment: str
    model: str
    objective: str  # "cosine" | "mnrl"
    pairs: str  # the pairs' source
    pairs_files: str | None  # content hash of the local pairs file(s); None for a hub id
    pair_field: str
    max_pairs: int | None  # None (every pair) leaves it out of the key
    heldout_pairs: int
    itrans_lowercase: bool
    num_train_epochs: float
    batch_size: int  # the total batch over every device
    learning_rate: float
    warmup_steps: int
    weight_decay: float
    max_grad_norm: float
    max_seq_length: int
    seed: int
    precision: str  # resolved: fp32 | bf16 | fp16
    mnrl_scale: float | None = None  # mnrl only (the cosine objective does not read it: changing it must not re-run it)
    backbone_id: str | None = None  # tiny-* backbones: their recipe's identity
    backbone: str = not_in_key("")  # the row label (display)
    sample_fraction: float | None = None  # None (every pair) leaves it out of the key
    # the released negative sampling (cosine only): label-0 pairs per kept positive and side; None: positives only
    negatives: int | None = None
    added_tokens_min_count: int | None = None  # corpus words added to the tokenizer; None: its own vocabulary
    # how max_pairs cut the training pairs (core.sampling): "random"; None: the first of the seeded shuffle
    train_sample: str | None = None

    def inputs(self) -> Mapping[str, str]:
        return {"pairs": self.pairs, "model": self.model}


@dataclass(frozen=True)
class ScratchRun(CalbertRun):
    """One masked-language-model pre-training from scratch (Tables 8, 13): tokenizer and model, on the Siamese pairs.

    Built by :func:`codeswitch.calbert.plan.plan`; passed as it is to
    :func:`codeswitch.calbert.train.mlm_from_scratch`.  Its key names the checkpoint
    folder the fine-tuning runs read.
    """

    experiment: str
    architecture: str  # "BERT" | "DistilBERT" | "RoBERTa"
    tokenizer: str  # "small" (code-mixed side) | "big" (both sides)
    pairs: str
    pairs_files: str | None
    pair_field: str
    max_pairs: int | None
    heldout_pairs: int
    sample_fraction: float | None
    itrans_lowercase: bool
    vocab_size: int
    min_frequency: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    mlm_probability: float
    num_train_epochs: float
    batch_size: int
    learning_rate: float
    max_seq_length: int
    seed: int
    precision: str
    backbone: str = not_in_key("")  # the row label: "BERT-small"
    initializer_range: float | None = None  # None: transformers' default (0.02), left out of the key
    train_sample: str | None = None  # as PretrainRun's

    def inputs(self) -> Mapping[str, str]:
        return {"pairs": self.pairs}


@dataclass(frozen=True)
class FinetuneRun(CalbertRun):
    """One sentiment fine-tuning (stage 2): a (task, backbone, variant, seed) cell of Tables 6, 7, 8, 12, 13.

    ``pretrain`` is the Siamese pre-training it starts from (``None``: the backbone
    itself); its key is part of this one.  Passed as it is to
    :func:`codeswitch.calbert.train.finetune_classifier`.
    """

    # Its own version, ahead of the pre-training runs': its records changed where theirs did not.  3 = the learning
    # entry (2) and the predictions on the paper's example sentences (Tables 9, 14) recorded with the run; 4: the
    # learning entry is held to chance (guessing at the training label frequencies), not the majority class (issue 23)
    RESULT_VERSION: ClassVar[int] = 4

    experiment: str
    task: str  # "sail" | "iitp"
    model: str
    variant: str  # "none" | "cosine" | "mnrl" | "scratch"
    pretrain: PretrainRun | ScratchRun | None
    source: str  # the task's data folder (or "shipped")
    data: str  # content hash of its files
    romanise: bool
    learning_rate: float
    batch_size: int  # the total batch over every device
    per_device_eval_batch_size: int
    num_train_epochs: float
    weight_decay: float
    max_seq_length: int
    warmup_steps: int
    seed: int
    precision: str  # resolved: fp32 | bf16 | fp16
    itrans_lowercase: bool | None = None  # romanised tasks only
    backbone_id: str | None = None  # tiny-* backbones: their recipe's identity
    backbone: str = not_in_key("")  # the row label (display)
    packing: bool | None = None  # True: packed, fixed-shape training steps where the head allows (None: off, out of the key)
    torch_compile: TorchCompile | None = None  # True / "reduce-overhead": the model's training forward compiled (None: off, out of the key)
    max_train_samples: int | None = None  # the training rows kept (None: every row, out of the key)
    train_sample: str | None = None  # how they were cut (core.sampling): "random"; None: the first rows
    # the training loop: None: the HF Trainer (out of the key); "stacked": codeswitch.calbert.stacked (calbert.batched_runs
    # set: another dropout and data order, so another record; how many runs share a stack is not in the key)
    loop: str | None = None

    def inputs(self) -> Mapping[str, str]:
        return {"data": self.source, "model": self.model}

    def key(self) -> dict[str, Any]:
        k = super().key()
        k["pretrain"] = None if self.pretrain is None else self.pretrain.key()
        return k
