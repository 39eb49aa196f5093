"""Training ConCSE and SimCSE encoders: thin glue over ``SentenceTransformerTrainer``.

The encoder (as in the authors' released code, which builds on SimCSE)::

    text ──► backbone ──► first token ([CLS] / <s>), (B, H) ──► Linear(H, H) + tanh ──► embedding, (B, H)

used the same way in training and in evaluation (``concse.head: cls``: the first token itself, no dense layer, the
paper's reading).  It is an ordinary sentence-transformers model (``Transformer`` → ``Pooling("cls")`` → ``Dense(tanh)``),
so a trained model saves, loads and encodes like any other.

One run = one (backbone, method, seed, settings): train for ``epochs`` epochs with
AdamW, a linear schedule with 10 % warm-up and gradient clipping; after each
epoch score Koglish STS-B dev (code-switched pairs) and keep the best epoch's
weights; return them (model selection as in §A.2: the best epoch on dev).

The fast path (issue 8; measured by ``python -m benchmarks``):

* mixed precision from the profile (:meth:`Profile.amp_dtype`): bf16 autocast on
  GPUs that have it, fp16 with loss scaling on those that do not, fp32 on CPU; the
  loss itself is always computed in fp32 (:func:`~codeswitch.concse.loss.concse_loss`);
* PyTorch's scaled-dot-product attention (``attn_implementation="sdpa"``);
* dynamic padding, and all 6B sentences of a step in as few forwards as possible:
  the collator (:class:`LengthBucketCollator`, in the DataLoader workers) sorts the
  step's sentences by length and cuts them into the length buckets with the least
  padding plus ``bucket_cost`` per extra forward — the batch itself is drawn at random as in the released code
  (length-grouped *batches* would change which negatives meet; buckets inside a
  step do not change the loss);
* with the section's ``packing`` setting (on in the paper profile): one packed,
  fixed-shape forward a step instead (:func:`packing_collator`; ConCSE and SimCSE):
  the step's sentences in rows of ``PACK_WIDTH`` tokens, block-diagonal attention,
  per-sentence positions, at most four row counts (budgets) an epoch; the batch and
  its negatives unchanged; ``torch_compile`` compiles the backbone's training forward
  (:func:`compile_backbone`; ``reduce-overhead``: CUDA graphs over the budgets);
* no host synchronisation in the step (no NaN filter on the logged loss, batches
  copied to the GPU from pinned memory without blocking, the next one prefetched);
* fused AdamW on GPU (``core.utils.trainer_optim``, as the GLUE and CalBERT trainers);
* several GPUs (``accelerate launch``): the global batch is split over the
  processes and the in-batch negatives are gathered from all of them
  (:mod:`codeswitch.core.distributed`), so the loss equals the single-GPU loss.
"""

from __future__ import annotations

import tempfile

import pandas as pd
import torch

from ..common.sts import spearman_x100, sts_evaluator
from .config import ConCSERun
from .loss import CONCSE_COLUMNS, NLI_TO_COLUMNS, SIMCSE_COLUMNS, ConCSELoss, simcse_loss
from ..common.fastpath import DEFAULT_BUCKET_COST, PACK_WIDTH, bucket_features, pack_features, sampled_budgets
from ..core.progress import progress
from ..core.training import BestEpoch, quiet_trainer, training_arguments
from ..core.utils import quiet_transformers, trainer_optim

__all__ = [
    "KeepBestEpoch",
    "LengthBucketCollator",
    "build_encoder",
    "compile_backbone",
    "nli_dataset",
    "packing_collator",
    "train_encoder",
    "evaluate_encoder",
    "NLI_TO_COLUMNS",
    "DEFAULT_BUCKET_COST",
]


def build_encoder(model_path: str, *, max_length: int, seed: int, attn_implementation: str = "sdpa", head: str = "dense_tanh"):
    """The first-token + dense-tanh encoder over ``model_path`` (a folder or hub id); ``head="cls"``: the first token
    itself, no dense layer (the paper's [CLS]; ``concse.head``).

    The dense layer is initialised like a fresh BERT layer (normal(0, initializer_range),
    zero bias), as SimCSE's MLP head is; seeding happens before it is built.  Attention
    is PyTorch's fused scaled-dot-product attention (``"eager"`` is the reference
    implementation, for comparisons).  The backbone's own pooler (BERT/XLM-R's dense
    layer on [CLS]) is not built: the encoder never uses it, and under DDP a layer
    without gradients would need the slower unused-parameter search.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dense, Pooling, Transformer

    from ..core.utils import set_seed

    set_seed(seed)
    kwargs = {"attn_implementation": attn_implementation}
    with quiet_transformers():  # the load report lists the pooler's weights as unexpected: they are, on purpose
        try:
            transformer = Transformer(model_path, max_seq_length=max_length, model_kwargs={**kwargs, "add_pooling_layer": False})
        except TypeError:  # a family without a pooler argument
            transformer = Transformer(model_path, max_seq_length=max_length, model_kwargs=kwargs)
    hidden = transformer.get_embedding_dimension()
    pooling = Pooling(hidden, pooling_mode="cls")  # the first token: [CLS] for BERT, <s> for XLM-R
    if head == "cls":
        return SentenceTransformer(modules=[transformer, pooling], device="cpu")
    if head != "dense_tanh":
        raise ValueError(f"build_encoder: head must be 'dense_tanh' or 'cls', got {head!r}")
    dense = Dense(hidden, hidden, activation_function=torch.nn.Tanh())
    std = getattr(transformer.auto_model.config, "initializer_range", 0.02)
    torch.nn.init.normal_(dense.linear.weight, mean=0.0, std=std)
    torch.nn.init.zeros_(dense.linear.bias)
    return SentenceTransformer(modules=[transformer, pooling, dense], device="cpu")


def nli_dataset(nli: pd.DataFrame, method: str, *, where: str = "Koglish-NLI"):
    """A ``datasets.Dataset`` with the loss's columns, in the loss's order.

    ConCSE reads all six columns; SimCSE reads the three code-switched ones (§5.2:
    "we leverage SimCSE to train M using CS-augmented sentence triplets").
    """
    from datasets import Dataset

    missing = [c for c in NLI_TO_COLUMNS if c not in nli.columns]
    if missing:
        raise ValueError(f"{where}: missing column(s) {missing} (columns: {list(nli.columns)})")
    for col in NLI_TO_COLUMNS:
        bad = nli.index[nli[col].isna() | (nli[col].astype(str).str.strip() == "")]
        if len(bad):
            raise ValueError(f"{where}: row {bad[0]} has an empty field '{col}'")
    df = nli[list(NLI_TO_COLUMNS)].rename(columns=NLI_TO_COLUMNS).astype(str)
    columns = CONCSE_COLUMNS if method == "concse" else SIMCSE_COLUMNS
    return Dataset.from_pandas(df[list(columns)].reset_index(drop=True), preserve_index=False)


def _collator_base():
    from sentence_transformers.sentence_transformer.data_collator import SentenceTransformerDataCollator

    return SentenceTransformerDataCollator


class LengthBucketCollator(_collator_base()):
    """sentence-transformers' collator, then the step's columns regrouped into length buckets.

    Runs where the collator runs (the DataLoader workers), so sorting and slicing cost
    the GPU nothing and the loss needs no host synchronisation to plan its forwards.
    The output holds ``bucket<k>_input_ids``, ``bucket<k>_attention_mask``, … and
    ``bucket<k>_rows`` (see :func:`~codeswitch.common.fastpath.bucket_features`), which
    the trainer hands to :class:`~codeswitch.concse.loss.ConCSELoss` as one feature
    dict per bucket.  With ``budgets`` (row counts, :func:`~codeswitch.common.fastpath.token_budgets`)
    the step is instead one packed, fixed-shape batch ``packed_*``
    (:func:`~codeswitch.common.fastpath.pack_features`): one forward, at most
    ``len(budgets)`` input shapes per epoch: what the section's ``packing`` setting
    turns on (:func:`packing_collator`).
    """

    def __init__(self, preprocess_fn, bucket_cost: int | None = DEFAULT_BUCKET_COST, *, budgets: tuple[int, ...] | None = None,
                 pack_width: int = PACK_WIDTH, **kwargs):
        super().__init__(preprocess_fn=preprocess_fn, **kwargs)
        self.bucket_cost = bucket_cost
        self.budgets, self.pack_width = budgets, pack_width  # budgets: one packed forward instead of buckets (issue 24)

    def __call__(self, features: list[dict]) -> dict:
        batch = super().__call__(features)
        columns = [c for c in features[0] if f"{c}_input_ids" in batch]
        per_column = [{k[len(c) + 1 :]: v for k, v in batch.items() if k.startswith(f"{c}_")} for c in columns]
        out = {k: v for k, v in batch.items() if not any(k.startswith(f"{c}_") for c in columns)}  # labels, if any
        if self.budgets:  # one fixed-shape forward: R × pack_width tokens, R from the budgets
            out.update({f"packed_{k}": v for k, v in pack_features(per_column, self.budgets, self.pack_width).items()})
            return out
        for i, bucket in enumerate(bucket_features(per_column, self.bucket_cost)):
            out.update({f"bucket{i}_{k}": v for k, v in bucket.items()})
        return out


def packing_collator(model, dataset, *, batch_size: int, max_length: int, seed: int) -> LengthBucketCollator:
    """The collator of a packed run: every step one ``R × width`` forward, ``R`` from ≤ 4 budgets.

    The budgets come from the dataset's token lengths (every column tokenised once,
    truncated as the encoder truncates) and ``batch_size`` random rows a step
    (:func:`~codeswitch.common.fastpath.sampled_budgets`, seeded with the run's seed);
    ``width`` is :data:`~codeswitch.common.fastpath.PACK_WIDTH` or ``max_length`` if
    longer.
    """
    import numpy as np

    from ..common.tokens import tokenised

    lengths = np.stack([[len(ids) for ids in tokenised(model.tokenizer, [list(dataset[c])], max_length=max_length)["input_ids"]]
                        for c in dataset.column_names], axis=1)  # (rows, columns), each column tokenised once (cached)
    width = max(PACK_WIDTH, max_length)
    budgets = sampled_budgets(lengths, batch_size, max_length=max_length, width=width, seed=seed)
    return LengthBucketCollator(model.preprocess, bucket_cost=None, budgets=budgets, pack_width=width)


def compile_backbone(model, *, fixed_shapes: bool = False, mode: bool | str | None = None, trainer=None) -> None:
    """``torch.compile`` the encoder's backbone for training steps, in place (parameters and state-dict keys unchanged).

    In training mode the backbone's forward runs compiled, in evaluation mode (the
    dev/test scoring, with shapes of its own) eagerly, so scoring compiles nothing.
    ``fixed_shapes`` (packing): one static graph per budget, at most four, whole
    (``fullgraph``); else the shapes are left to dynamo (a bucketed step's widths
    vary).  ``mode``: the ``torch_compile`` setting (``True`` or ``"reduce-overhead"``,
    CUDA graphs over the budgets; ``trainer`` then marks each step for them).
    :func:`~codeswitch.common.fastpath.compile_for_training`.
    """
    from ..common.fastpath import compile_for_training

    compile_for_training(model[0].auto_model, fixed_shapes=fixed_shapes, mode=mode, trainer=trainer)


class KeepBestEpoch(BestEpoch):
    """:class:`~codeswitch.core.training.BestEpoch` on Koglish STS-B dev, plus a CPU copy of the weights whenever it improves.

    (The Trainer's own ``load_best_model_at_end`` needs a checkpoint on disk per
    epoch — gigabytes for XLM-R-large — for the same effect.)  The best epoch is
    BestEpoch's: the first with the highest dev Spearman.
    """

    DEV = "stsb-dev"  # the evaluator's name: the Trainer logs eval_stsb-dev_spearman_cosine

    def __init__(self, bar=None):
        super().__init__("spearman_cosine", [self.DEV], select=self.DEV, keep_weights=True)  # BestEpoch keeps ``state``
        self.bar = bar

    def on_epoch_end(self, args, state, control, **kwargs):
        if self.bar is not None:
            self.bar.update(1)


def train_encoder(spec: ConCSERun, model_path: str, train: pd.DataFrame, dev: pd.DataFrame, *, profile, desc: str = "train"):
    """Train one encoder as ``spec`` says (the plan's spec, as it is); return ``(model with the best dev epoch's weights, info dict)``.

    ``profile`` gives the device only; every setting of the run is a field of ``spec``, read here
    (τ, α, λ, the terms and the loss variant go to the loss as they are: ``None`` where no term reads them).
    """
    from sentence_transformers import SentenceTransformerTrainer

    with quiet_transformers():
        model = build_encoder(model_path, max_length=spec.max_length, seed=spec.seed, head=spec.encoder_head)
        if spec.gradient_checkpointing:  # memory only: layers recomputed in the backward, RNG state kept (same dropout)
            backbone = model[0].auto_model
            if hasattr(backbone, "activation_checkpointing_enable"):  # transformers >= 5.2x's name for it
                backbone.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
            else:
                backbone.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        device = profile.torch_device()
        dataset = nli_dataset(train, spec.method)
        dev_eval = sts_evaluator(dev, name=KeepBestEpoch.DEV, batch_size=spec.per_device_eval_batch_size, where="Koglish STS-B dev")
        bar = progress(total=spec.num_train_epochs, desc=desc, unit="epoch")
        keep = KeepBestEpoch(bar=bar)
        with tempfile.TemporaryDirectory(prefix="concse-") as out_dir:
            args = _training_arguments(spec, out_dir, device)
            collator = _collator(spec, model, dataset, args, desc)
            gather = args.world_size > 1  # DDP: the loss gathers the in-batch negatives of every process
            if spec.method == "concse":
                loss = ConCSELoss(model, temperature=spec.temperature, margin=spec.margin, triplet_weight=spec.triplet_weight,
                                  terms=spec.terms, variant=spec.variant, gather_across_devices=gather)
            else:
                loss = simcse_loss(model, temperature=spec.temperature, gather_across_devices=gather)
            trainer = quiet_trainer(SentenceTransformerTrainer)(
                model=model, args=args, train_dataset=dataset, loss=loss, evaluator=dev_eval, callbacks=[keep], data_collator=collator
            )
            if spec.torch_compile:  # reduce-overhead: the Trainer marks each step for the CUDA graphs
                compile_backbone(model, fixed_shapes=bool(spec.packing), mode=spec.torch_compile, trainer=trainer)
            try:
                out = trainer.train()
            finally:
                bar.close()
        if keep.state is not None:
            model.load_state_dict(keep.state)
        info = {
            "train_rows": len(dataset),
            "steps": int(out.global_step),
            "train_loss": float(out.training_loss),
            "dev_history": [row[keep.DEV] for row in keep.rows()],
            "best_epoch": int(keep.best()["epoch"]),
            "dev": keep.best()[keep.DEV],
        }
    return model, info


def _training_arguments(spec: ConCSERun, out_dir: str, device):
    """The Trainer's arguments of ``spec``.

    Table 9's batch is the global one: training_arguments splits it over the processes of a
    distributed launch (DDP: the loss gathers the negatives) and over the GPUs one
    process drives (the Trainer's DataParallel, which gathers the embeddings itself).
    """
    from sentence_transformers import SentenceTransformerTrainingArguments

    return training_arguments(
        args_class=SentenceTransformerTrainingArguments,
        output_dir=out_dir,
        device=device.type,
        precision=spec.precision,
        seed=spec.seed,
        total_batch_size=spec.batch_size,
        num_train_epochs=spec.num_train_epochs,
        learning_rate=spec.learning_rate,
        lr_scheduler_type="linear",
        warmup_steps=spec.warmup_ratio,  # a float < 1 is a ratio of the total steps
        max_grad_norm=spec.max_grad_norm,
        weight_decay=spec.weight_decay,
        optim=trainer_optim(device),  # fused AdamW on GPU (one launch per step); CPU: torch's default update, as before
        eval_strategy="epoch",
        save_strategy="no",  # the best epoch's weights are kept in memory by KeepBestEpoch
        logging_strategy="no",
        ddp_find_unused_parameters=False,  # every parameter gets a gradient (see build_encoder)
    )


def _collator(spec: ConCSERun, model, dataset, args, desc: str) -> LengthBucketCollator | None:
    """The step's collator: one packed forward (``packing``), else ConCSE's length buckets; ``None``: SimCSE's default."""
    if spec.packing:
        if args.n_gpu > 1:  # DataParallel would cut the packed rows apart
            raise ValueError(f"{desc}: packing needs one GPU per process (launch with `accelerate launch`), "
                             f"this process drives {args.n_gpu}")
        return packing_collator(model, dataset, batch_size=args.per_device_train_batch_size, max_length=spec.max_length, seed=spec.seed)
    if spec.method == "concse":
        return LengthBucketCollator(model.preprocess, bucket_cost=spec.bucket_cost)
    return None


def evaluate_encoder(model, tests: dict[str, pd.DataFrame], *, batch_size: int) -> dict[str, float]:
    """Spearman × 100 of ``model`` on each test table (code-switched pairs), in the order given."""
    return {
        task: spearman_x100(model, sts_evaluator(df, name=task, batch_size=batch_size, where=f"Koglish-STS {task} test"))
        for task, df in tests.items()
    }
