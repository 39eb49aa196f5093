"""The ``glue`` section of a profile: :class:`Config` (defaults = the paper, ConCSE §5.1 and Table 8).

Field names follow Hugging Face's ``TrainingArguments`` where they mean the same
thing (``num_train_epochs``, ``learning_rate``, ``warmup_ratio``, ``weight_decay``,
``per_device_eval_batch_size``).  A backbone's ``batch_size`` is Table 8's *total*
batch, split over the devices by :func:`codeswitch.core.training.training_arguments`
— not a per-device size, so it keeps its own name.

Backbones are a list of ``{name, model, batch_size, learning_rate}`` (the one backbone
schema of every section); the older mapping form ``{name: {model, ...}}`` is read
too and converted, with the names as keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, ClassVar

from ..common.fastpath import TorchCompile, check_torch_compile
from ..core.experiment import RunSpec, not_in_key
from ..core.kept import check_setting
from ..core.profiles import Profile
from ..core.sections import HF_RENAMED, backbone_named, backbones_from, check_fields, section_prepare
from .train import SCENARIOS, TASKS

SECTION = "glue"


@dataclass(frozen=True)
class Backbone:
    """One backbone of Table 2 with its Table 8 hyperparameters."""

    name: str  # the row label in Table 2
    model: str  # hub id, local folder, or a tiny-* name (smoke)
    batch_size: int  # the total batch (Table 8), split over the devices
    learning_rate: float  # peak learning rate (Table 8)


# Table 8 (Appendix A.1).  The paper says "mBERT" (no casing); the released Koglish-GLUE script (run_mbert.sh:
# mbert_uncased, jjy961228/ConCSE@84a0191) loads bert-base-multilingual-uncased, the default here; the cased model is
# the option (ledger row mbert-casing).  mBART: the released code's facebook/mbart-large-50 (ledger row glue-mbart-50).
PAPER_BACKBONES: tuple[Backbone, ...] = (
    Backbone("mBERT-base", "bert-base-multilingual-uncased", 128, 5e-5),
    Backbone("XLM-R-base", "xlm-roberta-base", 128, 5e-5),
    Backbone("XLM-R-large", "xlm-roberta-large", 64, 1e-5),
    Backbone("mBART-large", "facebook/mbart-large-50", 64, 1e-5),
)


@dataclass(frozen=True)
class Config:
    """The ``glue`` section of a profile; every default is the paper's setting (§5.1, A.1), written here only."""

    tasks: tuple[str, ...] = ("cola", "sst2", "mrpc", "stsb", "qnli", "rte")
    scenarios: tuple[str, ...] = ("EN2EN", "EN2CS", "CS2CS")
    backbones: tuple[Backbone, ...] = PAPER_BACKBONES
    seeds: tuple[int, ...] | None = None  # None: the profile's seeds
    num_train_epochs: int = 5
    warmup_ratio: float = 0.1  # linear warm-up over the first 10 % of the steps, then linear decay
    weight_decay: float = 0.0  # the paper does not say; the Trainer's default
    max_length_single: int = 115  # CoLA, SST-2
    max_length_pair: int = 230  # MRPC, STS-B, QNLI, RTE
    per_device_eval_batch_size: int = 256
    max_train_samples: int | None = None  # first N training rows (None: all), as run_glue.py
    max_eval_samples: int | None = None  # first N validation and test rows (None: all)
    group_by_length: bool = True  # length-grouped training batches (glue.train's fast path; changes the batch order)
    # One packed, fixed-shape forward per training step (issue 24; common.packed_classifier.PackRows): the batch's rows without their
    # padding in rows of PACK_WIDTH tokens, block-diagonal attention, per-sequence positions, ≤ 4 shapes an epoch.
    # Encoder backbones (BERT, XLM-R); mBART, whose head reads the decoder, trains padded (its result says so).
    packing: bool = False
    # The model under torch.compile in training steps (common.fastpath.compile_for_training; with packing fixed shapes,
    # one whole graph per budget): false | true | reduce-overhead (torch.compile's CUDA-graph mode over the packed
    # budgets; needs packing); in the run key when on (compiled kernels round differently).  CPU runs work either
    # way; off in every profile until a GPU row measures it.
    torch_compile: TorchCompile = False
    log_epochs: bool = True  # one line per epoch of every run
    # which fine-tuned classifiers are kept (best epoch's weights), as AutoModelForSequenceClassification with their
    # label maps (codeswitch.core.kept): "none" | "best" (per Table 2 cell, the seed best on validation) | "all"; in no key
    keep_models: str = "none"

    def __post_init__(self):
        check_setting(self.keep_models, where=f"{SECTION}.keep_models")
        unknown = [t for t in self.tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"tasks: unknown {unknown} (known: {', '.join(TASKS)})")
        bad = [s for s in self.scenarios if s not in SCENARIOS]
        if bad:
            raise ValueError(f"scenarios: unknown {bad} (known: {', '.join(SCENARIOS)})")
        object.__setattr__(self, "backbones", backbones_from(self.backbones, Backbone))
        check_fields(self)  # epochs, batch sizes, ratios ... in their domains (core.sections.RANGES)
        check_torch_compile(self.torch_compile, section=SECTION, packing={"packing": self.packing})

    def backbone(self, name: str) -> Backbone:
        return backbone_named(self.backbones, name, section=SECTION)


# keys renamed to Hugging Face's names: the old spelling is an error that names the new one
RENAMED = HF_RENAMED


# Refuse the renamed keys; build the backbones here, so an error names the item (``backbones[1]`` or ``backbones.NAME``).
# Besides the list of ``{name, model, batch_size, learning_rate}`` and the older mapping ``{name: {model, ...}}``, a
# list item may be a paper label or its hub id alone (``"XLM-R-base"``), and a mapping whose ``name`` is a paper label
# may leave out what Table 8 fills in: ``--set 'glue.backbones=[{"name": "mBERT-base", "model": "/data/mbert"}]'``.
_prepare = section_prepare(SECTION, Backbone, renamed=RENAMED, paper=PAPER_BACKBONES, hub_ids=True)


def load(profile: Profile) -> Config:
    """The profile's ``glue`` section as a :class:`Config` (errors name the YAML file and key)."""
    return profile.section(SECTION, Config, prepare=_prepare)


# --------------------------------------------------------------------------- the run spec
@dataclass(frozen=True)
class GlueRun(RunSpec):
    """One fine-tuning run: a (task, backbone, seed, training language) cell of Table 2, scored on its test languages.

    The package's one spec class.  Built by :func:`codeswitch.glue.plan.plan`; passed as it is to
    :func:`codeswitch.glue.experiment.run_one` and :func:`codeswitch.glue.train.fine_tune`.  The cache key
    is every field but the four marked ``not_in_key`` (the sample limits are in ``data``, the rows' hash).
    """

    # Bump when a change of this experiment's method code (data handling, training, evaluation)
    # changes its results: every run key changes, so no old record is reused.
    RESULT_VERSION: ClassVar[int] = 2  # 2: every result holds its learning entry (core.learning)

    experiment: str
    task: str
    backbone: str  # the Table 2 row label
    model: str
    train: str  # language of the training split ("en" | "cs")
    select: str  # language of the validation split that picks the best epoch
    test: tuple[str, ...]  # languages of the test splits scored
    seed: int
    koglish_source: str
    data: str  # hash of the task's rows as this run reads them (glue.data.fingerprint)
    num_train_epochs: int
    batch_size: int  # the total batch over every device
    learning_rate: float
    warmup_ratio: float
    weight_decay: float
    max_length: int
    per_device_eval_batch_size: int
    precision: str  # resolved: fp32 | bf16 | fp16
    group_by_length: bool
    backbone_id: str | None = None  # tiny-* backbones: their recipe's identity
    packing: bool | None = None  # True: packed training steps where the family allows (None: off, out of the key)
    torch_compile: TorchCompile | None = None  # True / "reduce-overhead": the model's training forward compiled (None: off, out of the key)
    max_train_samples: int | None = not_in_key(None)
    max_eval_samples: int | None = not_in_key(None)
    # how max_train_samples cut the training split (core.sampling): "random" (a seeded sample); None: the first rows
    train_sample: str | None = None
    log_epochs: bool = not_in_key(True)
    keep_models: str = not_in_key(kw_only=True)  # the section's keep_models: whether run_one keeps the classifier (core.kept)

    def inputs(self) -> Mapping[str, str]:
        from ..koglish.data import input_refs

        return {**input_refs(self.koglish_source, ("glue",)), "model": self.model}
