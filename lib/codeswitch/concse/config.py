"""The ``concse`` section of a profile: :class:`Config` (defaults = the paper, ConCSE §A.2 and Table 9), and :class:`ConCSERun`.

Field names follow Hugging Face's ``TrainingArguments`` where they mean the same
thing (``num_train_epochs``, ``learning_rate``, ``warmup_ratio``, ``max_grad_norm``,
``weight_decay``, ``per_device_eval_batch_size``).  A backbone's ``simcse_batch_size``
and ``concse_batch_size`` are Table 9's *total* batches, split over the devices by
:func:`codeswitch.core.training.training_arguments` — not per-device sizes, so they
keep their own names.

Backbones are a list of ``{name, model, simcse_batch_size, concse_batch_size,
learning_rate}`` (the one backbone schema of every section); the older mapping form
``{name: {model, ...}}`` is converted, and a paper label alone (``"XLM-R-base"``) is
filled in from Table 9.

The loss hyperparameters' defaults (τ, α, λ) are written here only, and range-checked here only
(:func:`~codeswitch.core.sections.check_fields`): the run spec carries them to the trainer and the
loss, whose parameters have no defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, ClassVar

from ..common.fastpath import DEFAULT_BUCKET_COST, TorchCompile, check_torch_compile
from ..core.experiment import RunSpec, not_in_key
from ..core.kept import check_setting
from ..core.sections import HF_RENAMED, backbone_named, backbones_from, check_fields, section_prepare
from .loss import TERMS, VARIANTS

SECTION = "concse"
METHODS = ("simcse", "concse")
SIMCSE_SETTINGS = ("matched", "released_code")
#: the sentence vector: "dense_tanh" = [CLS] → Linear(H, H) + tanh, randomly initialised, in training and evaluation (the
#: released code: main.py's default --pooler_type cls adds SimCSE's MLPLayer); "cls" = [CLS] itself (§5.1, §5.2)
HEADS = ("dense_tanh", "cls")


@dataclass(frozen=True)
class Backbone:
    """One encoder backbone with its Table 9 settings."""

    name: str  # the label in tables: "mBERT-base", "XLM-R-base", "XLM-R-large"
    model: str  # hub id, local folder, or a tiny-* name
    simcse_batch_size: int  # the total batch (Table 9), split over the devices
    concse_batch_size: int  # the total batch (Table 9), split over the devices
    learning_rate: float
    # SimCSE's batch in the released code (config_simcse_{base,large}.json); None: the section's
    # released_simcse_batch_size (64, the base models'); XLM-R-large: 128
    released_simcse_batch_size: int | None = None


PAPER_BACKBONES = (
    # The released code uses the *uncased* mBERT.
    Backbone("mBERT-base", "bert-base-multilingual-uncased", simcse_batch_size=512, concse_batch_size=128, learning_rate=5e-5),
    Backbone("XLM-R-base", "xlm-roberta-base", simcse_batch_size=512, concse_batch_size=128, learning_rate=5e-5),
    Backbone("XLM-R-large", "xlm-roberta-large", simcse_batch_size=128, concse_batch_size=48, learning_rate=1e-5,
             released_simcse_batch_size=128),
)


@dataclass(frozen=True)
class Config:
    """The ``concse`` section of a profile.  Every default is the paper's setting (§A.2, Table 9), written here only."""

    backbones: tuple[Backbone, ...] = PAPER_BACKBONES
    seeds: tuple[int, ...] | None = None  # None: the profile's seeds
    num_train_epochs: int = 5
    max_length: int = 64
    warmup_ratio: float = 0.1  # linear schedule, 10 % warm-up
    max_grad_norm: float = 1.0
    weight_decay: float = 0.0  # AdamW; the HF default, as in SimCSE
    temperature: float = 0.05  # τ (Table 5)
    margin: float = 1.0  # α (Table 7)
    triplet_weight: float = 1.2  # λ (Table 6)
    variant: str = "official"  # "official" (released code) | "paper" (equations read literally)
    head: str = "dense_tanh"  # the sentence vector (HEADS): "dense_tanh" (released code) | "cls" (the paper's [CLS]); both methods
    # SimCSE's settings in Table 3 (and Table 4's SimCSE row): "released_code" = as the authors'
    # released code trains it (config_simcse_base.json: batch 64, maximum length 32; large: 128, 32),
    # "matched" = Table 9's batch sizes at ConCSE's maximum length (64).  Both in the ablation.
    simcse_settings: str = "released_code"
    released_simcse_batch_size: int = 64  # SimCSE as the released code trained it (base models) ...
    released_simcse_max_length: int = 32  # ... batch 64, maximum length 32
    # Ablations (Tables 4–7, ConCSE-mBERT on Koglish-STS-B)
    ablation_backbone: str = "mBERT-base"
    ablation_seeds: int | None = None  # how many of the seeds the ablations use (None: all)
    temperatures: tuple[float, ...] = (0.001, 0.01, 0.05, 0.1, 1.0)
    triplet_weights: tuple[float | None, ...] = (None, 1.0, 1.2, 1.4, 1.5)  # None = "N/A": no triplet term
    margins: tuple[float, ...] = (0.5, 1.0, 1.2, 1.4, 1.5, 2.0)
    # Data sizes (None: everything; the smoke profile shrinks them)
    max_train_rows: int | None = None
    max_eval_rows: int | None = None
    # the Koglish-STS test sets scored, a subset of the seven in their order (a local copy that lacks some, e.g. a
    # sample with STS-B only); the Avg. is then over these, and the tables say so
    sts_tests: tuple[str, ...] = ("stsb", "sts12", "sts13", "sts14", "sts15", "sts16", "sick")
    per_device_eval_batch_size: int = 128  # sentences per forward when scoring STS
    std_ddof: int = 0  # ± over seeds: 0 = population std, as the paper's ± (see codeswitch.concse.experiment)
    # ConCSE steps are encoded in length buckets where that saves more padded tokens than
    # this per extra forward (None: one forward per step); see codeswitch.concse.train.
    # Speed only, but dropout masks fall differently, so it is part of a run's key.
    bucket_cost: int | None = DEFAULT_BUCKET_COST
    # One packed, fixed-shape forward per step instead of buckets (issue 24; codeswitch.common.fastpath.pack_features):
    # the step's sentences in rows of PACK_WIDTH tokens, block-diagonal attention, per-sentence positions, the row count
    # from at most four budgets (≤ 4 input shapes an epoch).  The same batch and negatives; float sums and dropout
    # masks fall differently, so it is part of a run's key.  ConCSE and SimCSE.
    packing: bool = False
    # The encoder's backbone under torch.compile (fixed shapes with packing: one graph per budget): false | true |
    # reduce-overhead (torch.compile's CUDA-graph mode over the packed budgets; needs packing); part of the key when on
    # (compiled kernels round differently).  CPU runs work either way.
    torch_compile: TorchCompile = False
    # Memory, not results: each encoder layer's activations are recomputed in the backward pass instead of kept
    # (transformers' gradient checkpointing, torch.utils.checkpoint with the RNG state kept, so the dropout masks, the
    # loss and the gradients are the same: tests/test_concse_train.py), about a third more compute a step.  What lets
    # Table 9's SimCSE at batch 512 (1,536 sentences a step) train in fp32 on a 24 GB CPU machine; enters no run key.
    gradient_checkpointing: bool = False
    # which runs keep their trained encoder, as a sentence-transformers model (codeswitch.core.kept):
    # "none" | "best" (per table row, the seed best on Koglish STS-B dev) | "all"; enters no run key
    keep_models: str = "none"

    def __post_init__(self):
        check_setting(self.keep_models, where=f"{SECTION}.keep_models")
        if self.simcse_settings not in SIMCSE_SETTINGS:
            raise ValueError(f"simcse_settings must be one of {list(SIMCSE_SETTINGS)}, got {self.simcse_settings!r}")
        if self.head not in HEADS:
            raise ValueError(f"head must be one of {list(HEADS)}, got {self.head!r}")
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {list(VARIANTS)}, got {self.variant!r}")
        object.__setattr__(self, "backbones", backbones_from(self.backbones, Backbone))
        names = [b.name for b in self.backbones]
        if self.ablation_backbone not in names:
            raise ValueError(f"ablation_backbone {self.ablation_backbone!r} is not one of the backbones {names}")
        check_fields(self)  # epochs, batch sizes, τ, α, λ, ratios ... in their domains (core.sections.RANGES)
        check_torch_compile(self.torch_compile, section=SECTION, packing={"packing": self.packing})
        from ..koglish.data import STS_TASKS

        if not self.sts_tests or list(self.sts_tests) != [t for t in STS_TASKS if t in self.sts_tests]:
            raise ValueError(f"sts_tests must be a non-empty subset of {list(STS_TASKS)} in that order, got {list(self.sts_tests)}")

    def backbone(self, name: str) -> Backbone:
        return backbone_named(self.backbones, name, section=SECTION)

    def loss_settings(self) -> dict:
        """The section's loss, every term: the keyword arguments of :func:`~codeswitch.concse.loss.concse_loss` and
        :class:`~codeswitch.concse.loss.ConCSELoss` (τ, α, λ, terms, variant), for a notebook's or a benchmark's
        demonstration (a run reads its spec's: :func:`codeswitch.concse.plan.spec`)."""
        return dict(temperature=self.temperature, margin=self.margin, triplet_weight=self.triplet_weight, terms=TERMS,
                    variant=self.variant)


# keys renamed to Hugging Face's names: the old spelling is an error that names the new one
RENAMED = HF_RENAMED


# Refuse the renamed keys; build the backbones here, so an error names the item (``backbones.NAME``).  A backbone is
# a mapping ``{name, model, simcse_batch_size, concse_batch_size, learning_rate}``; one whose ``name`` is a paper label
# may leave out what Table 9 fills in, and a paper label alone (``"XLM-R-base"``) is that backbone.  The older mapping
# form ``{name: {model, ...}}`` is converted.
_prepare = section_prepare(SECTION, Backbone, renamed=RENAMED, paper=PAPER_BACKBONES, by_name=True)


def load(profile) -> Config:
    """The profile's ``concse`` section as a :class:`Config` (errors name the YAML file and key)."""
    return profile.section(SECTION, Config, prepare=_prepare)


def koglish_ref(profile) -> str:
    """The data identity that goes into run keys: the setting, not a machine-specific path.

    For ``"synthetic"`` the folder name (a hash of the generator's settings) is added,
    so changing the generator retrains instead of reusing stale runs.
    """
    ref = str(profile.koglish_source)
    if ref == "synthetic":
        from ..koglish.data import resolve_source

        return f"synthetic/{Path(resolve_source(profile, ref)).name}"
    return ref


# --------------------------------------------------------------------------- the run spec
@dataclass(frozen=True)
class ConCSERun(RunSpec):
    """One training run: (backbone, method, seed, settings), best epoch on Koglish STS-B dev, scored on seven tests.

    Built by :func:`codeswitch.concse.plan.spec`; passed as it is to
    :func:`codeswitch.concse.train.train_encoder`.  Settings a run does not use are
    ``None`` and stay out of the key (the margin when the triplet term is off, ...),
    so e.g. λ = "N/A" and v3 are one run.  ``study`` and ``label`` place a run in a
    table; they are not in the key, so a run two tables need is trained once.
    """

    # Bump when a change of this experiment's method code (data handling, training, evaluation)
    # changes its results: every run key changes, so no old record is reused.
    RESULT_VERSION: ClassVar[int] = 2  # 2: every result holds its learning entry and the untrained encoder's scores

    experiment: str
    backbone: str  # the row label
    model: str
    koglish: str  # data identity (config.koglish_ref)
    method: str  # "simcse" | "concse"
    seed: int
    learning_rate: float
    num_train_epochs: int
    warmup_ratio: float
    max_grad_norm: float
    weight_decay: float
    batch_size: int  # the total batch over every device
    max_length: int
    precision: str  # resolved: fp32 | bf16 | fp16
    koglish_source: str = not_in_key()  # the reference the data is read from (its identity is `koglish`)
    per_device_eval_batch_size: int = not_in_key()  # speed only
    study: str = not_in_key()  # "table3" | "table4" | ... (where the run is shown)
    label: str = not_in_key()  # its row or column label there
    keep_models: str = not_in_key()  # the section's keep_models: whether run_one keeps the trained encoder (core.kept.wanted)
    gradient_checkpointing: bool = not_in_key(False)  # memory only: the same loss and gradients (the section's setting)
    temperature: float | None = None  # τ; None where no term uses it
    margin: float | None = None  # α; None without the triplet term
    triplet_weight: float | None = None  # λ; None without the triplet term
    terms: tuple[str, ...] | None = None  # ConCSE's loss terms, in TERMS order
    variant: str | None = None  # ConCSE: "official" | "paper" (None where no term depends on it)
    simcse_settings: str | None = None  # SimCSE: "matched" | "released_code"
    bucket_cost: int | None = None  # ConCSE: padded tokens an extra forward must save (None: one forward a step)
    packing: bool | None = None  # True: one packed, fixed-shape forward a step (None: off, out of the key)
    torch_compile: TorchCompile | None = None  # True / "reduce-overhead": the backbone under torch.compile (None: eager, out of the key)
    max_train_rows: int | None = None
    max_eval_rows: int | None = None
    backbone_id: str | None = None  # tiny-* backbones: their recipe's identity
    koglish_invalid_rows: str | None = None  # "drop": rows breaking the switch rule left out (None: the default, "error")
    # how max_train_rows cut Koglish-NLI (core.sampling): "random" (a seeded sample); None: the first rows
    train_sample: str | None = None
    sts_tests: tuple[str, ...] | None = None  # the Koglish-STS tests scored; None: all seven (out of the key)
    head: str | None = None  # "cls": no dense head on [CLS]; None: the default dense_tanh (out of the key)

    @property
    def encoder_head(self) -> str:
        """The encoder's head (:data:`HEADS`), what :func:`~codeswitch.concse.train.build_encoder` builds."""
        return self.head or HEADS[0]

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        if self.simcse_settings is not None and self.simcse_settings not in SIMCSE_SETTINGS:
            raise ValueError(f"simcse_settings must be one of {list(SIMCSE_SETTINGS)}, got {self.simcse_settings!r}")
        if self.head is not None and self.head not in HEADS[1:]:
            raise ValueError(f"head must be None (the default {HEADS[0]}) or one of {list(HEADS[1:])}, got {self.head!r}")
        if self.terms is not None and (not self.terms or set(self.terms) - set(TERMS)):
            raise ValueError(f"terms must be a non-empty subset of {list(TERMS)}, got {self.terms!r}")

    def inputs(self) -> Mapping[str, str]:
        from ..koglish.data import input_refs

        return {**input_refs(self.koglish_source, ("nli", "sts", "sick")), "model": self.model}
