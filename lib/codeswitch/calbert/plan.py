"""CalBERT's plan: the runs of its two stages, typed (:class:`~codeswitch.calbert.config.PretrainRun`,
:class:`~codeswitch.calbert.config.ScratchRun`, :class:`~codeswitch.calbert.config.FinetuneRun`), built once from
the section's :class:`~codeswitch.calbert.config.Config`, and the table rows they fill.

* **Siamese pre-training**: one ``PretrainRun`` per (backbone, objective) some task's variants need.  Each backbone
  is adapted on (English, romanised Hindi–English) pairs with CalBERT's cosine objective and, as a comparison the
  paper did not make, with in-batch negatives (``MultipleNegativesRankingLoss``).
* **From scratch** (Tables 8 and 13's baselines): one ``ScratchRun`` per (architecture, tokenizer) of
  ``calbert.scratch``: a tokenizer and a small transformer trained with masked language modelling on the same pairs.
* **Fine-tuning**: one ``FinetuneRun`` per (task, backbone, variant, seed): every backbone, with and without Siamese
  pre-training (``variants``), fine-tuned on SAIL 2017 (Table 5's settings) and on IITP product reviews romanised to
  ITRANS (Table 11's), and every from-scratch model on both.  A fine-tuning spec holds the pre-training spec it
  starts from; its key is part of its own.

Variants (rows): ``none`` = the backbone fine-tuned directly (``RoBERTa``); ``cosine`` = CalBERT
(``CalBERT-RoBERTa``); ``mnrl`` = Siamese pre-training with in-batch negatives (``CalBERT-MNRL-RoBERTa``).
"""

from __future__ import annotations

from pathlib import Path

from ..core.experiment import Stage
from ..core.models import backbone_id, is_tiny
from ..core.profiles import Profile, seeds_for
from .config import OBJECTIVES, SCRATCH, SECTION, Backbone, Config, FinetuneRun, PretrainRun, ScratchRun, load
from .data import TASKS, fingerprint_files, local_source, pairs_files

ROW_PREFIX = {"none": "", "cosine": "CalBERT-", "mnrl": "CalBERT-MNRL-", SCRATCH: ""}


def row_label(backbone: str, variant: str) -> str:
    """A table row: the backbone's name with its variant's prefix (``CalBERT-RoBERTa``)."""
    return f"{ROW_PREFIX[variant]}{backbone}"


def row_order(c: Config, variants: tuple[str, ...]) -> list[str]:
    """The rows of a table of ``variants``, in the tables' order: per backbone, CalBERT first, then the backbone itself."""
    return [row_label(b.name, v) for b in c.backbones for v in ("cosine", "none", "mnrl") if v in variants]


def _tiny_id(model: str) -> str | None:
    return backbone_id(model) if is_tiny(model) else None  # a tiny backbone changes with its recipe


def train_sample(profile: Profile, cap: int | None) -> str | None:
    """The profile's ``train_sample`` where it cuts the pairs (a cap, drawn at random); ``None`` (out of the key) else."""
    return profile.train_sample if cap is not None and profile.train_sample != "head" else None


def pretrain_spec(profile: Profile, c: Config, backbone: Backbone, objective: str) -> PretrainRun:
    """The Siamese pre-training of ``backbone`` with ``objective``, typed."""
    p = c.pretrain
    return PretrainRun(
        experiment="calbert/pretrain", model=backbone.model, objective=objective, pairs=p.pairs,
        pairs_files=pairs_files(p.pairs, profile), pair_field=p.pair_field, max_pairs=p.max_pairs, heldout_pairs=p.heldout_pairs,
        itrans_lowercase=c.itrans_lowercase, num_train_epochs=p.num_train_epochs, batch_size=p.batch_size,
        learning_rate=p.learning_rate, warmup_steps=p.warmup_steps, weight_decay=p.weight_decay, max_grad_norm=p.max_grad_norm,
        max_seq_length=p.max_seq_length,
        seed=pretrain_seed(profile, c),
        precision=profile.precision_name(),
        mnrl_scale=p.mnrl_scale if objective == "mnrl" else None,  # unused by the cosine objective: changing it must not re-run it
        backbone_id=_tiny_id(backbone.model), backbone=backbone.name, sample_fraction=p.sample_fraction,
        # the released negatives carry labels: the cosine objective's only (in-batch negatives need none)
        negatives=p.negative_sample_size if p.sample_negative and objective == "cosine" else None,
        added_tokens_min_count=p.added_tokens_min_count, train_sample=train_sample(profile, p.max_pairs),
    )


def pretrain_seed(profile: Profile, c: Config) -> int:
    """The seed of every pre-training: ``calbert.pretrain_seed``, or the first fine-tuning seed."""
    return c.pretrain_seed if c.pretrain_seed is not None else seeds_for(profile, c.seeds)[0]


def scratch_spec(profile: Profile, c: Config, architecture: str, tokenizer: str) -> ScratchRun:
    """The from-scratch MLM pre-training of one Table 8/13 row, typed: the Siamese pre-training's pairs, the released sizes."""
    p, s = c.pretrain, c.scratch
    return ScratchRun(
        experiment="calbert/scratch", architecture=architecture, tokenizer=tokenizer, pairs=p.pairs,
        pairs_files=pairs_files(p.pairs, profile), pair_field=p.pair_field, max_pairs=p.max_pairs, heldout_pairs=p.heldout_pairs,
        sample_fraction=p.sample_fraction, itrans_lowercase=c.itrans_lowercase, vocab_size=s.vocab_size,
        min_frequency=s.min_frequency, hidden_size=s.hidden_size, num_hidden_layers=s.num_hidden_layers,
        num_attention_heads=s.num_attention_heads, intermediate_size=s.intermediate_size, mlm_probability=s.mlm_probability,
        num_train_epochs=s.num_train_epochs, batch_size=s.batch_size, learning_rate=s.learning_rate,
        max_seq_length=s.max_seq_length, seed=pretrain_seed(profile, c), precision=profile.precision_name(),
        backbone=f"{architecture}-{tokenizer}", initializer_range=s.initializer_range,
        train_sample=train_sample(profile, p.max_pairs),
    )


def finetune_spec(profile: Profile, c: Config, task: str, backbone: Backbone | ScratchRun, variant: str, seed: int) -> FinetuneRun:
    """One fine-tuning run, typed: task data and settings, backbone (or from-scratch model), the pre-training it starts from, seed."""
    t = c.task(task)
    if isinstance(backbone, ScratchRun):  # Tables 8, 13: a model pre-trained from scratch
        pretrain, backbone = backbone, Backbone(backbone.backbone, f"{SCRATCH}:{backbone.backbone}")
    else:
        pretrain = None if variant == "none" else pretrain_spec(profile, c, backbone, variant)
    return FinetuneRun(
        experiment="calbert/finetune", task=task, model=backbone.model, variant=variant,
        pretrain=pretrain,
        source=t.source, data=fingerprint_files(local_source(t.source, profile, task)), romanise=t.romanise,
        learning_rate=t.learning_rate, batch_size=t.batch_size, per_device_eval_batch_size=t.per_device_eval_batch_size,
        num_train_epochs=t.num_train_epochs, weight_decay=t.weight_decay, max_seq_length=t.max_seq_length,
        warmup_steps=t.warmup_steps, seed=seed, precision=profile.precision_name(),
        itrans_lowercase=c.itrans_lowercase if t.romanise else None,
        backbone_id=_tiny_id(backbone.model), backbone=backbone.name, packing=True if c.packing else None,
        torch_compile=c.torch_compile or None,
        max_train_samples=t.max_train_samples, train_sample=train_sample(profile, t.max_train_samples),
        loop=None if c.batched_runs is None else "stacked",
    )


def objectives_needed(c: Config) -> list[str]:
    """The Siamese objectives some task's variants start from (each backbone is pre-trained once with each)."""
    return [o for o in OBJECTIVES if o in c.sail.variants or o in c.iitp.variants]


def stages(profile: Profile) -> list[Stage]:
    """The two stages, run in this order: every pre-training some task's variants need — Siamese, then from scratch
    for Tables 8 and 13 (``runs/<profile>/calbert/pretrain/``) — then every fine-tuning (``.../finetune/``), which
    starts from the pre-trained checkpoints."""
    return build_stages(profile, load(profile))


def build_stages(profile: Profile, c: Config) -> list[Stage]:
    """:func:`stages` of the section ``c`` (already built from ``profile``)."""
    siamese = [pretrain_spec(profile, c, b, o) for b in c.backbones for o in objectives_needed(c)]
    scratch = [scratch_spec(profile, c, a, t) for a in c.scratch.architectures for t in c.scratch.tokenizers]
    seeds = seeds_for(profile, c.seeds)
    fine = [finetune_spec(profile, c, task, b, v, s) for task in TASKS for b in c.backbones for v in c.task(task).variants
            for s in seeds]
    fine += [finetune_spec(profile, c, task, m, SCRATCH, s) for task in TASKS for m in scratch for s in seeds]
    return [Stage("pretrain", siamese + scratch, stage_dir(profile, "pretrain"), desc="calbert pre-training"),
            Stage("finetune", fine, stage_dir(profile, "finetune"), after=("pretrain",), desc="calbert fine-tuning")]


def plan(profile: Profile) -> list[PretrainRun | FinetuneRun]:
    """Every run, typed, in the order they must run: the pre-training stage, then fine-tuning (:func:`stages`)."""
    pre, fine = stages(profile)
    return [*pre, *fine]


def stage_dir(profile: Profile, stage: str) -> Path:
    """The run cache of a stage: ``runs/<profile>/calbert/<stage>/``."""
    return profile.runs_dir / SECTION / stage
