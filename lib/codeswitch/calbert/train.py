"""CalBERT: Siamese pre-training with sentence-transformers, then classification fine-tuning with the HF Trainer
(pre-training from scratch, Tables 8 and 13's baselines: :mod:`codeswitch.calbert.scratch`).

Siamese pre-training (CalBERT §5.2, §6.5, Figure 1)
---------------------------------------------------
One transformer ``f`` is shared by both branches; a mean-pooling layer turns its
token vectors into a sentence vector ``u = mean_t f(x)_t`` (padding masked out).
For a pair (English translation ``a``, romanised code-mixed sentence ``b``) the
paper minimises the cosine *distance*; sentence-transformers'
``CosineSimilarityLoss`` with label 1, which the released code uses, is

    L_cos = mean_i ( 1 − cos(u_a_i, u_b_i) )²

(the squared distance: same minimiser, gradients that vanish as pairs align).
Nothing stops every sentence from collapsing onto one vector, which also gives
L_cos = 0; the in-batch-negatives objective, not in the paper, rules that out::

    L_mnrl = mean_i −log softmax_j( s · cos(u_a_i, u_b_j) )_i      (s = 20 = 1/temperature)

(``MultipleNegativesRankingLoss``: each English sentence must pick its own
code-mixed sentence among the batch's).

The released script's reading (``src/siamese_pretraining.py``, calbert repository,
701612e .. a781856), an option (``calbert.pretrain.sample_negative``,
``added_tokens_min_count``): its default ``sample_negative=True`` keeps a random half of
the pairs as label-1 positives and gives each ``k`` (``--sample_size`` 2) label-0 pairs
(the translation against other transliterations) and ``k`` more built from ``k`` other
translations ``t_1 … t_k`` as ``(t_j, t_1)`` (the released code pairs each with the
*list* of sampled translations, of which the first is read: English–English pairs, the
first of them a sentence against itself), so the same loss becomes

    L_cos = mean_i ( y_i − cos(u_a_i, u_b_i) )²,   y_i ∈ {1, 0}

and it adds every lower-cased corpus word seen at least ``--min_count`` (5) times to the
tokenizer (as special tokens, the released call), the embedding matrix resized.  Table 3's settings: 10 epochs, 100
warm-up steps, learning rate 2.5e-5, weight decay 0.01, AdamW, max grad norm 1.0;
batch size 16 as in the released code.  AdamW is torch's fused implementation on every device
(``core.utils.trainer_optim``; the same update, several times faster on CPU than the per-tensor loop).  The adapted transformer is then saved as
an ordinary Hugging Face folder (safetensors) and fine-tuned like any backbone.

Fine-tuning
-----------
``AutoModelForSequenceClassification`` on top of the (adapted or original)
transformer, trained with the HF ``Trainer`` (Table 5 for SAIL 2017, Table 11 for
IITP product reviews); the model at the end of training is evaluated (the paper
does not say it selects an epoch).  Metrics: weighted F1, precision and recall
(scikit-learn, as SAIL 2017 reports them) and accuracy.
"""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from .config import OBJECTIVES, FinetuneRun, PretrainRun
from .data import Pair, corpus_tokens, released_negatives
from ..common.sentiment import LABELS, SentimentExample
from ..common.tokens import tokenised
from ..core.checkpoints import checkpoint_directory
from ..core.learning import chance_weighted_f1, learning
from ..core.training import quiet_trainer, training_arguments
from ..core.utils import quiet_transformers, set_seed, trainer_optim

__all__ = [
    "build_siamese_model",
    "siamese_pretrain",
    "alignment_diagnostics",
    "finetune_classifier",
    "classification_metrics",
]


# --------------------------------------------------------------------------- helpers
def epoch_printer(desc: str, epochs: float):
    """A Trainer callback printing one line per epoch (the Trainer's own tqdm and log printer are removed)."""
    from transformers import TrainerCallback

    class EpochLine(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs and state.epoch is not None:
                print(f"[{desc}] epoch {state.epoch:.0f}/{math.ceil(epochs)}  loss {logs['loss']:.4f}", flush=True)

    return EpochLine()


# --------------------------------------------------------------------------- Siamese pre-training
def build_siamese_model(model_path: str, *, max_seq_length: int, device: str = "cpu", added_tokens: Sequence[str] = ()):
    """The Siamese network: one shared ``Transformer`` module + mean ``Pooling`` (Figure 1).

    ``added_tokens`` (the released script's corpus words, :func:`corpus_tokens`) are added to the tokenizer as the
    released code adds them (``add_tokens(..., special_tokens=True)``, 1,000 at a time) and the embedding matrix is
    resized to the new vocabulary; the new rows are initialised as the model initialises its weights
    (``mean_resizing=False``: the transformers of the released era had no mean resizing).  The random rows draw from
    torch's generator: seed before the call.
    """
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import modules

    with quiet_transformers():
        encoder = modules.Transformer(model_path, max_seq_length=max_seq_length)
        if added_tokens:
            tokens = list(added_tokens)
            for start in range(0, len(tokens), 1000):
                encoder.tokenizer.add_tokens(tokens[start:start + 1000], special_tokens=True)
            encoder.auto_model.resize_token_embeddings(len(encoder.tokenizer), mean_resizing=False)
        pooling = modules.Pooling(encoder.get_embedding_dimension(), pooling_mode="mean")
        return SentenceTransformer(modules=[encoder, pooling], device=device)


def siamese_pretrain(
    spec: PretrainRun,
    model_path: str,
    pairs: Sequence[Pair],
    *,
    output_dir: str | Path,
    device: str = "cpu",
    heldout: Sequence[Pair] = (),
    desc: str = "siamese",
    keep: Callable[[Any, dict], Any] | None = None,
) -> dict:
    """Siamese-pre-train ``model_path`` on ``pairs`` as ``spec`` says; save the adapted transformer to ``output_dir``.

    ``output_dir`` receives an ordinary Hugging Face folder (``config.json``,
    ``model.safetensors``, tokenizer files) that ``AutoModel*.from_pretrained``
    opens.  It is written to a temporary sibling and renamed into place, so a
    killed run never leaves a half-written checkpoint.  Returns the training loss
    and, when ``heldout`` pairs are given, :func:`alignment_diagnostics` before and
    after pre-training.  ``keep``: called as ``keep(model, result)`` at the end with the Siamese network (the
    ``SentenceTransformer``: transformer and mean pooling; the kept model, issue 28).
    """
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    if len(pairs) < 2:
        raise ValueError(f"Siamese pre-training needs at least 2 pairs, got {len(pairs)}")
    set_seed(spec.seed)  # before the model is built: the embedding rows of added tokens are random
    added = corpus_tokens(pairs, spec.added_tokens_min_count) if spec.added_tokens_min_count is not None else []
    model = build_siamese_model(model_path, max_seq_length=spec.max_seq_length, device=device, added_tokens=added)
    before = alignment_diagnostics(model, heldout) if heldout else {}
    train, loss = siamese_objective(spec, model, pairs)

    output_dir = Path(output_dir)
    output_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".trainer.", dir=output_dir.parent) as scratch:
        targs = training_arguments(
            output_dir=scratch, device=device, precision=spec.precision, seed=spec.seed, total_batch_size=spec.batch_size,
            args_class=SentenceTransformerTrainingArguments,
            num_train_epochs=spec.num_train_epochs,
            learning_rate=spec.learning_rate,
            warmup_steps=spec.warmup_steps,
            weight_decay=spec.weight_decay,
            max_grad_norm=spec.max_grad_norm,
            optim=trainer_optim(device, cpu="fused"),  # fused AdamW (CPU too: smoke results)
            lr_scheduler_type="linear",  # sentence-transformers' WarmupLinear, as model.fit used
            logging_strategy="epoch",
            save_strategy="no",
            dataloader_num_workers=0,  # the pairs are raw text, tokenised in the collator: no worker process pays off
            dataloader_persistent_workers=False,
        )
        with quiet_transformers():
            # the quiet trainer: no model card (what is kept is the bare transformer, an HF folder)
            trainer = quiet_trainer(SentenceTransformerTrainer)(
                model=model, args=targs, train_dataset=train, loss=loss, callbacks=[epoch_printer(desc, spec.num_train_epochs)]
            )
            texts = [t for c in train.column_names if c != "label" for t in train[c]]
            trainer.data_collator.preprocess_fn = Pretokenised(model, texts)  # tokenised once, not in every batch
            out = trainer.train()
        with checkpoint_directory(output_dir) as tmp, quiet_transformers():
            model[0].save(str(tmp))  # the shared transformer alone: HF folder, safetensors
    after = alignment_diagnostics(model, heldout) if heldout else {}
    result = {"train_loss": float(out.training_loss), "steps": int(out.global_step), "pairs": len(pairs)}
    if spec.negatives is not None:
        result["examples"] = len(train)  # positives and released negatives
    if spec.added_tokens_min_count is not None:
        result["vocab_size"] = len(model[0].tokenizer)  # after the corpus words were added
        result["added_tokens"] = len(added)  # candidates; those already in the vocabulary add no row
    result.update({f"{k}_before": v for k, v in before.items()})
    result.update({f"{k}_after": v for k, v in after.items()})
    if heldout:
        result["learning"] = siamese_learning(before, after)
    if keep is not None:
        keep(model, result)
    return result


class Pretokenised:
    """``model.preprocess`` (a sentence-transformers model's tokenisation) of a fixed set of texts, tokenised once
    (:func:`codeswitch.common.tokens.tokenised`: once per tokenizer, limit and texts, across runs): a call pads its
    texts' rows to their longest, as ``preprocess`` pads them.

    Exact where the model's tokenisation is the plain tokenizer call (right padding, ``max_seq_length``): checked
    once, on the first texts, against ``preprocess`` itself.  Any other call (a prompt, a task, another limit, a
    text not in the set), or a model whose ``preprocess`` differs, goes to ``model.preprocess``.
    """

    def __init__(self, model, texts: Sequence[str], *, probe: int = 32):
        self.model = model
        unique = list(dict.fromkeys(texts))
        self.index = {t: i for i, t in enumerate(unique)}
        self.rows = tokenised(model.tokenizer, [unique], max_length=model.max_seq_length)
        self.pad_id = model.tokenizer.pad_token_id if model.tokenizer.pad_token_id is not None else 0
        sample = unique[:probe]
        self.exact = getattr(model.tokenizer, "padding_side", "right") == "right" and bool(sample) and \
            _same_features(model.preprocess(sample), self._pad(sample))

    def _pad(self, texts: Sequence[str]) -> dict:
        import torch

        idx = [self.index[t] for t in texts]
        width = max(len(self.rows["input_ids"][i]) for i in idx)
        out = {}
        for key, rows in self.rows.items():
            fill = self.pad_id if key == "input_ids" else 0
            out[key] = torch.tensor([rows[i] + [fill] * (width - len(rows[i])) for i in idx], dtype=torch.long)  # (B, width)
        out["modality"] = "text"
        return out

    def __call__(self, inputs, prompt=None, task=None, **kwargs):
        if (not self.exact or prompt is not None or task is not None
                or kwargs.get("max_length", self.model.max_seq_length) != self.model.max_seq_length
                or any(not isinstance(t, str) or t not in self.index for t in inputs)):
            return self.model.preprocess(inputs, prompt=prompt, task=task, **kwargs)
        return self._pad(inputs)


def _same_features(a: Mapping, b: Mapping) -> bool:
    import torch

    if a.keys() != b.keys():
        return False
    return all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)


#: how much the held-out alignment gap cos(parallel) − cos(other) must grow over the untrained encoder's
SIAMESE_MARGIN = 0.05


def siamese_learning(before: Mapping[str, float], after: Mapping[str, float]) -> dict:
    """The learning entry of a Siamese pre-training: the held-out gap ``cos_parallel − cos_other`` after vs before.

    The gap, not ``cos_parallel`` alone: a collapse of every sentence onto one vector
    also drives ``cos_parallel`` to 1 (and ``cos_other`` with it), but not the gap.
    """
    gap = lambda d: d["cos_parallel"] - d["cos_other"]  # noqa: E731
    return learning("cos(parallel) − cos(other), held-out pairs", gap(after), gap(before),
                    baseline_name="untrained encoder", margin=SIAMESE_MARGIN)


def siamese_objective(spec: PretrainRun, model, pairs: Sequence[Pair]):
    """``(dataset, loss)`` of ``spec.objective`` on ``pairs``: ``CosineSimilarityLoss`` with label 1 on every pair (or,
    with ``spec.negatives``, the released script's positives and label-0 negatives, :func:`released_negatives`), or
    in-batch negatives."""
    from datasets import Dataset
    from sentence_transformers.sentence_transformer import losses

    if spec.objective not in OBJECTIVES:
        raise ValueError(f"unknown Siamese objective {spec.objective!r}; known: {OBJECTIVES}")
    if spec.negatives is not None and spec.objective != "cosine":
        raise ValueError(f"the released negatives carry labels: objective 'cosine' only, got {spec.objective!r}")
    columns = {"english": [p.english for p in pairs], "codemixed": [p.codemixed for p in pairs]}
    if spec.negatives is not None:
        # columns keep their names; the English-English negatives hold English in both
        first, second, labels = released_negatives(pairs, spec.negatives, seed=spec.seed)
        columns = {"english": first, "codemixed": second, "label": labels}
        loss = losses.CosineSimilarityLoss(model)
    elif spec.objective == "cosine":
        columns["label"] = [1.0] * len(pairs)  # every pair is a translation: maximal similarity
        loss = losses.CosineSimilarityLoss(model)
    else:
        loss = losses.MultipleNegativesRankingLoss(model, scale=spec.mnrl_scale)
    return Dataset.from_dict(columns), loss


def alignment_diagnostics(model, pairs: Sequence[Pair], batch_size: int = 64) -> dict:
    """How well a sentence encoder aligns English and code-mixed sentences, on held-out pairs.

    * ``cos_parallel``: mean cos(u_a_i, u_b_i) over pairs (Siamese pre-training pushes it to 1);
    * ``cos_other``: mean cos(u_a_i, u_b_j), i ≠ j (collapse pushes it to 1 as well);
    * ``retrieval_at1``: fraction of code-mixed sentences whose nearest English sentence is their translation.
    """
    import torch

    if len(pairs) < 2:
        raise ValueError("alignment diagnostics need at least 2 pairs")
    a = model.encode([p.english for p in pairs], batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    b = model.encode([p.codemixed for p in pairs], batch_size=batch_size, convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False)
    sim = (b @ a.T).float().cpu()  # (N, N): row i = code-mixed i against every English sentence
    n = sim.shape[0]
    diag = torch.diagonal(sim)
    off = (sim.sum() - diag.sum()) / (n * n - n)
    hits = (sim.argmax(dim=1) == torch.arange(n)).float().mean()
    return {"cos_parallel": float(diag.mean()), "cos_other": float(off), "retrieval_at1": float(hits)}


# --------------------------------------------------------------------------- fine-tuning
def classification_metrics(y_true: Sequence[int], y_pred: Sequence[int]) -> dict:
    """Weighted F1 / precision / recall (support-weighted over classes) and accuracy."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    p, r, f, _ = precision_recall_fscore_support(y_true, y_pred, average="weighted", zero_division=0)
    return {"f1": float(f), "precision": float(p), "recall": float(r), "accuracy": float(accuracy_score(y_true, y_pred))}


#: the splits a fine-tune is scored on, in order: the keys of its record that hold metrics.  Every other key of the record
#: ("examples", "packed", "learning", and any flag added later) is not a split: readers take these (``experiment.frame``)
SCORED_SPLITS = ("validation", "test")


def finetune_classifier(
    spec: FinetuneRun,
    model_path: str,
    splits: Mapping[str, Sequence[SentimentExample]],
    *,
    device: str = "cpu",
    labels: Sequence[str] = LABELS,
    desc: str = "finetune",
    callbacks: Sequence = (),
    example_texts: Sequence[str] = (),
    keep: Callable[[Any, Any, dict], Any] | None = None,
) -> dict:
    """Fine-tune a sequence classifier on ``splits["train"]`` as ``spec`` says; evaluate on the labelled :data:`SCORED_SPLITS`.

    Returns ``{split: {"f1", "precision", "recall", "accuracy", "n"}}`` for
    ``validation`` and, when its labels are known, ``test``; with ``example_texts`` (e.g. the paper's Tables 9
    and 14), also ``"examples": {"texts": [...], "predicted": [label id, ...]}``, the fine-tuned model's predictions;
    with the section's ``packing``, ``"packed"``: whether the training steps were packed (a bool).
    ``callbacks``: more ``TrainerCallback``s (the benchmark's step clock, row (e)).  ``keep``: called as
    ``keep(model, tokenizer, results)`` once training and evaluation are done (the kept model, issue 28).
    """
    from datasets import Dataset
    from transformers import DataCollatorWithPadding, Trainer

    set_seed(spec.seed)  # the classifier head is initialised from this seed
    tokenizer, model = _classifier(model_path, labels)

    def encode(examples: Sequence[SentimentExample]):
        # Tokenised once per (tokenizer, limit, texts), shared by every seed and learning rate of the grid, not with
        # Dataset.map (it would hash the tokenizer: seconds per call).
        enc = tokenised(tokenizer, [[e.text for e in examples]], max_length=spec.max_seq_length)
        return Dataset.from_dict(enc | {"labels": [e.label for e in examples]})

    evaluated = _scored_splits(splits)
    with tempfile.TemporaryDirectory(prefix="calbert-ft.") as scratch:
        targs = _finetune_arguments(spec, device, scratch)
        with quiet_transformers():
            train_ds = encode(splits["train"])
            trainer = quiet_trainer(Trainer)(
                model=model,
                args=targs,
                train_dataset=train_ds,
                data_collator=DataCollatorWithPadding(tokenizer),
                processing_class=tokenizer,
                callbacks=[epoch_printer(desc, spec.num_train_epochs), *callbacks],
            )
            packed = _packed_training(trainer, spec, train_ds)
            if getattr(spec, "torch_compile", None):  # the model and its loss, training steps only (packed: fixed shapes)
                from ..common.fastpath import compile_for_training

                compile_for_training(trainer.model, fixed_shapes=packed, mode=spec.torch_compile, trainer=trainer)
            trainer.train()
            if packed:
                trainer.data_collator = trainer.data_collator.padded  # evaluation batches are padded
            results = _evaluate(trainer, encode, evaluated)
            if example_texts:  # the qualitative tables: predictions recorded with the run, the model is not kept
                results["examples"] = _predict_texts(trainer, tokenizer, example_texts, spec.max_seq_length)
    if getattr(spec, "packing", None):
        results["packed"] = packed  # False: a family whose head does not read the first token trains padded
    if "validation" in results:
        results["learning"] = finetune_learning(results["validation"]["f1"], splits["train"], splits["validation"])
    if keep is not None:
        keep(model, tokenizer, results)
    return results


def _classifier(model_path: str, labels: Sequence[str], **model_kw):
    """``(tokenizer, model)``: the transformer of ``model_path`` with a new classification head over ``labels``
    (its weights drawn from torch's generator: seed before the call); ``model_kw``: more ``from_pretrained`` arguments."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        model = AutoModelForSequenceClassification.from_pretrained(
            model_path,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={name: i for i, name in enumerate(labels)},
            **model_kw,
        )
    return tokenizer, model


def _scored_splits(splits: Mapping[str, Sequence[SentimentExample]]) -> dict[str, Sequence[SentimentExample]]:
    """The :data:`SCORED_SPLITS` of ``splits`` whose labels are known (an unknown split name is an error)."""
    unknown = sorted(set(splits) - {"train", *SCORED_SPLITS})
    if unknown:
        raise ValueError(f"finetune_classifier: unknown split(s) {unknown}: expected train and {', '.join(SCORED_SPLITS)}")
    return {name: splits[name] for name in SCORED_SPLITS
            if splits.get(name) and all(e.label is not None for e in splits[name])}


def _finetune_arguments(spec: FinetuneRun, device: str, output_dir: str):
    """The Trainer's arguments of a fine-tuning: ``spec``'s settings (Table 5 / Table 11), no evaluation or saving
    while training."""
    return training_arguments(
        output_dir=output_dir, device=device, precision=spec.precision, seed=spec.seed, total_batch_size=spec.batch_size,
        num_train_epochs=spec.num_train_epochs,
        per_device_eval_batch_size=spec.per_device_eval_batch_size,
        learning_rate=spec.learning_rate,
        weight_decay=spec.weight_decay,
        warmup_steps=spec.warmup_steps,
        optim=trainer_optim(device, cpu="fused"),  # fused AdamW (CPU too: smoke results)
        logging_strategy="epoch",
        eval_strategy="no",
        save_strategy="no",
        dataloader_num_workers=0,  # short sentences tokenised up front: no worker process pays off
        dataloader_persistent_workers=False,
    )


def _evaluate(trainer, encode: Callable, evaluated: Mapping[str, Sequence[SentimentExample]]) -> dict:
    """``{split: metrics | {"n": size}}``: the trained model's argmax predictions on each split (``encode``: its dataset)."""
    results = {}
    for name, examples in evaluated.items():
        logits = trainer.predict(encode(examples)).predictions  # (N, num_labels)
        y_pred = np.asarray(logits).argmax(axis=-1)
        results[name] = classification_metrics([e.label for e in examples], y_pred.tolist()) | {"n": len(examples)}
    return results


def _predict_texts(trainer, tokenizer, texts: Sequence[str], max_length: int) -> dict:
    """``{"texts", "predicted"}``: the trained model's label ids for unlabelled ``texts`` (the paper's examples)."""
    from datasets import Dataset

    enc = tokenised(tokenizer, [list(texts)], max_length=max_length)
    logits = trainer.predict(Dataset.from_dict(enc)).predictions  # (len(texts), num_labels)
    return {"texts": list(texts), "predicted": np.asarray(logits).argmax(axis=-1).tolist()}


def _packed_training(trainer, spec: FinetuneRun, train_ds) -> bool:
    """With the section's ``packing`` (issue 24): each training batch (the sampler's rows, unchanged) one packed,
    fixed-shape forward, as Koglish-GLUE trains (:class:`codeswitch.common.packed_classifier.PackRows`,
    :func:`~codeswitch.common.packed_classifier.packed_forward`: block-diagonal attention, per-sequence positions, ≤ 4 shapes an
    epoch, the head on each sequence's first token).  BERT, RoBERTa and XLM-R; other heads train padded (False)."""
    from ..common.packed_classifier import PACKABLE, PackRows, packed_forward

    if not getattr(spec, "packing", None) or trainer.model.config.model_type not in PACKABLE:
        return False
    if trainer.args.n_gpu > 1:  # DataParallel would cut the packed rows apart
        raise ValueError("calbert packing needs one GPU per process (launch with `accelerate launch`), "
                         f"this process drives {trainer.args.n_gpu}")
    trainer.data_collator = PackRows.for_lengths(trainer.processing_class, [len(r) for r in train_ds["input_ids"]],
                                                 batch_size=trainer.args.per_device_train_batch_size,
                                                 max_length=spec.max_seq_length, seed=spec.seed)
    packed_forward(trainer.model)  # after the Trainer read the forward's signature
    return True


#: how much the validation weighted F1 must exceed random guessing at the training label frequencies
FINETUNE_MARGIN = 0.15


def finetune_learning(f1: float, train: Sequence[SentimentExample], validation: Sequence[SentimentExample]) -> dict:
    """The learning entry of a fine-tuning: validation weighted F1 against guessing at the training label frequencies
    (issue 23: the majority class, 1/6 on balanced classes, let a model near chance pass)."""
    return learning("weighted F1, validation", f1, chance_weighted_f1([e.label for e in train], [e.label for e in validation]),
                    baseline_name="chance", margin=FINETUNE_MARGIN)
