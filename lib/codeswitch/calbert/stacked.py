"""CalBERT's fine-tunings K at a time as one stacked model (``calbert.batched_runs``, issue 40 item 1).

The paper grid fine-tunes 10 seeds of each (task, backbone, variant) at 8 sentences a step: steps bound by their fixed
cost, not their arithmetic.  With ``calbert.batched_runs: K`` the fine-tunings of one cell that differ only in seed
train K at a time through :func:`codeswitch.core.batched.train_runs` (``torch.func.stack_module_state`` +
``functional_call`` under ``vmap``); with K = 1 the same loop trains one run at a time (the plain module).  Each run
keeps its own seed (its head's initialisation), data order, dropout masks (counter-based, a hash of seed, step and
call), AdamW state, gradient clipping and record, so K does not change a record (to float rounding,
``tests/test_calbert_stacked.py``); the run keys say ``loop: stacked`` and never K.

It is not the HF Trainer's loop (:func:`codeswitch.calbert.train.finetune_classifier`): another data order and other
dropout masks, so other numbers; hence ``loop`` in the key.  What it shares with it: the Trainer's defaults that
CalBERT uses (AdamW with betas 0.9/0.999, eps 1e-8, weight decay off biases and LayerNorms, max grad norm 1.0, the
linear schedule with ``warmup_steps``), the model at the end of training evaluated (``selection="last"``), and the
record: weighted F1 / precision / recall / accuracy per scored split, the predictions on the paper's example
sentences, the learning entry.  fp32 only, padded steps (no ``packing``, no ``torch_compile``), attention in its
eager implementation (the counter-based dropout reaches it there).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..common.sentiment import LABELS, SentimentExample
from ..common.tokens import pad_rows, tokenised
from ..core.batched import RunSettings, train_runs
from ..core.utils import quiet_transformers, set_seed
from .config import FinetuneRun
from .train import classification_metrics, finetune_learning

__all__ = ["finetune_stack", "run_settings", "stack_key"]

#: the Trainer's default that CalBERT's fine-tunings use (``TrainingArguments.max_grad_norm``)
MAX_GRAD_NORM = 1.0


def stack_key(spec: FinetuneRun) -> str:
    """What the runs of one stack share: the spec's key with the seed left out."""
    import dataclasses

    return dataclasses.replace(spec, seed=0).key_hash()


def run_settings(spec: FinetuneRun) -> RunSettings:
    """``spec``'s training settings as :class:`~codeswitch.core.batched.RunSettings` (fp32, whole epochs only)."""
    if spec.precision != "fp32":
        raise ValueError(f"calbert.batched_runs trains in fp32 only (codeswitch.core.batched), the profile's precision "
                         f"is {spec.precision}: set precision: fp32, or calbert.batched_runs: null")
    epochs = float(spec.num_train_epochs)
    if not epochs.is_integer():
        raise ValueError(f"calbert.batched_runs trains whole epochs, {spec.task}.num_train_epochs is {epochs}")
    return RunSettings(learning_rate=spec.learning_rate, weight_decay=spec.weight_decay, num_train_epochs=int(epochs),
                       batch_size=spec.batch_size, warmup_steps=spec.warmup_steps, max_grad_norm=MAX_GRAD_NORM,
                       selection="last")


def _check_stack(specs: Sequence[FinetuneRun]) -> None:
    if not specs:
        raise ValueError("finetune_stack: no runs")
    keys = {stack_key(s) for s in specs}
    if len(keys) > 1:
        raise ValueError(f"finetune_stack: the runs of a stack must differ only in seed, got {len(keys)} settings")
    seeds = [s.seed for s in specs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"finetune_stack: each seed once, got {seeds}")


def finetune_stack(
    specs: Sequence[FinetuneRun],
    model_path: str,
    splits: dict[str, Sequence[SentimentExample]],
    *,
    batched: bool,
    device: str = "cpu",
    labels: Sequence[str] = LABELS,
    example_texts: Sequence[str] = (),
    keep: Callable[[FinetuneRun, Any, Any, dict], Any] | None = None,
) -> list[dict]:
    """Fine-tune one classifier per spec (the specs differ only in seed) on ``splits["train"]``; one record per spec,
    in order, as :func:`codeswitch.calbert.train.finetune_classifier` records it.

    ``batched``: the K runs as one stacked model (else one after another, the plain module: the reference).
    ``keep(spec, model, tokenizer, record)``: called per run with its trained classifier (the kept model; the module
    is reused for the next run, so ``keep`` writes it out before it returns, as the experiment's ``_keeper`` does)."""
    from transformers import AutoTokenizer

    from .train import _scored_splits

    _check_stack(specs)
    settings = run_settings(specs[0])
    max_length = specs[0].max_seq_length
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(model_path)

    def rows(examples: Sequence[SentimentExample | str]) -> list[list[int]]:
        texts = [e if isinstance(e, str) else e.text for e in examples]
        return tokenised(tokenizer, [texts], max_length=max_length)["input_ids"]

    def make_model(seed: int):
        return _load(model_path, labels, seed)[1]

    train = (rows(splits["train"]), [e.label for e in splits["train"]])
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    # no scoring while training (the Trainer's eval_strategy "no"): the final models are evaluated below, in batches
    trained = train_runs(make_model, [s.seed for s in specs], [train] * len(specs), None, settings, batched=batched,
                         pad_id=pad_id, device=device)
    evaluated = {name: (rows(ex), [e.label for e in ex]) for name, ex in _scored_splits(splits).items()}
    examples = rows(example_texts) if example_texts else None
    out = []
    model = make_model(specs[0].seed).to(device).eval()  # one module evaluates every run: each run's parameters in turn
    for spec, run in zip(specs, trained):
        model.load_state_dict(run.state)  # every parameter (the head too): nothing of the previous run remains
        record = {name: classification_metrics(y, _predict(model, x, pad_id, spec.per_device_eval_batch_size, device))
                  | {"n": len(y)} for name, (x, y) in evaluated.items()}
        record["train_loss"] = sum(run.losses) / len(run.losses)  # the mean over its steps (the Trainer's training_loss)
        if examples is not None:
            record["examples"] = {"texts": list(example_texts),
                                  "predicted": _predict(model, examples, pad_id, spec.per_device_eval_batch_size, device)}
        if "validation" in record:
            record["learning"] = finetune_learning(record["validation"]["f1"], splits["train"], splits["validation"])
        if keep is not None:
            keep(spec, model, tokenizer, record)
        out.append(record)
    return out


def _load(model_path: str, labels: Sequence[str], seed: int):
    """``(tokenizer, classifier)``: the head drawn from ``seed`` (as the Trainer's path seeds it), eager attention
    (its dropout goes through ``F.dropout``, which the stacked loop's counter-based dropout replaces)."""
    from .train import _classifier

    set_seed(seed)
    return _classifier(model_path, labels, attn_implementation="eager")


def _predict(model, rows: Sequence[Sequence[int]], pad_id: int, batch_size: int, device) -> list[int]:
    """The argmax label of each row, in batches of ``batch_size`` padded to their longest row."""
    import torch

    out: list[int] = []
    with torch.no_grad():
        for lo in range(0, len(rows), batch_size):
            chunk = rows[lo:lo + batch_size]
            ids, mask = pad_rows(chunk, pad_id), pad_rows([[1] * len(r) for r in chunk], 0)
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits
            out += logits.argmax(-1).tolist()
    return out
