"""Fine-tuning a multilingual backbone on one Koglish-GLUE task (ConCSE §5.1, Appendix A.1).

Three scenarios differ only in which *language* each split is read in::

    scenario   train   select (best epoch)   test
    EN2EN      en      en                    en
    EN2CS      en      en                    cs
    CS2CS      cs      cs                    cs

``en`` is the GLUE text (``sentence`` / ``sentence1``, ``sentence2``); ``cs`` is
its code-switched Koglish copy (``cross`` / ``cross1``, ``cross2``), row for row
the same examples and labels.  EN2EN and EN2CS share the training *and* the
selection, so :func:`training_runs` groups them into one run evaluated on both
test sets: a third less compute than training each scenario.  This is also what
the authors' released loaders amount to (``en2en``/``en2cross`` read the same
English train and valid files).

The model is ``AutoModelForSequenceClassification`` (BERT and XLM-R: a head on
the first token; mBART: its ``MBartForSequenceClassification`` head on the last
``</s>`` of the decoder), two labels with cross-entropy, or one output with MSE
for STS-B.  Sentence pairs are encoded the way each tokenizer builds them
(BERT ``[CLS] a [SEP] b [SEP]``, XLM-R ``<s> a </s></s> b </s>``, mBART-50
``en_XX a b </s>``).  Training is the Hugging Face ``Trainer`` (accelerate
underneath; several GPUs are used as the Trainer uses them): AdamW, linear
schedule with warm-up, dynamic padding (``DataCollatorWithPadding``), one
evaluation per epoch.

The fast path (issue 8; the same rules as the ConCSE trainer, see docs/performance.md):

* **length-grouped batches** (``FineTuneSettings.group_by_length``, on in every
  profile): the Trainer's ``LengthGroupedSampler``
  (``train_sampling_strategy="group_by_length"``, the 5.x name of
  ``group_by_length=True``).  Each epoch the training rows are shuffled, cut into
  mega-batches of ``m`` batches, ``m = min(50, max(1, N // (4 B)))`` for ``N`` rows
  and the per-process batch ``B``, and every mega-batch is sorted by length and
  cut into batches, so a batch holds rows of similar length and is padded to
  little more than its rows' own lengths (the longest row of the epoch is moved
  into the first batch: an out-of-memory error comes at once).  The shuffle is
  drawn from a generator seeded with ``data_seed`` (the Trainer would draw it
  from torch's global stream: we make the order a function of the seed alone,
  identical on every process of a distributed launch, where accelerate then
  deals the batches out round-robin).
  The lengths are read from the ``length`` column that :func:`encode` stores (the
  Trainer does not re-tokenise or re-scan the data).  Grouping leaves the
  objective alone here: a GLUE batch loss is the mean of per-row losses, and a
  row's loss does not depend on the other rows of its batch (unlike ConCSE's
  in-batch negatives, whose batches stay random); only which rows are averaged
  into each update changes.  With grouping on, the Trainer also groups the
  evaluation batches (a fixed order seeded by ``data_seed``); the scores do not
  depend on the order, predictions and labels stay paired.
* **packing** (``glue.packing``, on in the paper profile; issue 24): each training
  batch (the sampler's rows, unchanged) becomes one packed, fixed-shape forward
  (:class:`PackRows`, :func:`packed_forward`): no padding, per-sequence positions,
  block-diagonal attention, at most four shapes an epoch; the head reads each
  sequence's first token.  BERT and XLM-R; mBART (its head reads the decoder's last
  ``</s>``) trains padded, and its result says ``packed: false``.  Evaluation
  batches stay padded.  The splits are tokenised once per (tokenizer, limit, texts)
  (:func:`codeswitch.common.tokens.tokenised`), not once per run.
* **torch.compile** (``glue.torch_compile``, off in every profile until a GPU row
  measures it): the model's training forward, loss included, compiled
  (:func:`~codeswitch.common.fastpath.compile_for_training`; packed: fixed shapes,
  one whole graph per budget; ``reduce-overhead``: CUDA graphs over the budgets, the
  Trainer marking each step); evaluation runs eagerly.
* **SDPA attention**: the model is loaded with ``attn_implementation="sdpa"``
  (BERT, XLM-R and mBART all support it).
* **mixed precision** from the profile (``precision`` → the Trainer's ``bf16`` /
  ``fp16`` flags): bf16 autocast where the GPU has it; fp16 autocast with
  accelerate's ``GradScaler`` (dynamic loss scaling) where it does not; fp32 on
  CPU (the smoke profile).  ``tests/test_glue_fast.py`` checks that a few steps
  in bf16 and fp32 differ by less than a different dropout draw does.
* **no host synchronisation per step**: the Trainer keeps the running loss on the
  device and reads it once per logging interval (here: per epoch); its per-step
  NaN filter, which reads every loss on the host, is off
  (``logging_nan_inf_filter=False``); gradient clipping (``max_grad_norm`` 1.0)
  returns the norm as a device tensor, read only when logging; fused AdamW
  (which also takes fp16's inf check on the device).  The one sync per forward
  left is inside transformers (its SDPA mask check, documented in
  docs/performance.md); ``tests/test_glue_fast.py`` counts the host reads of a
  step outside the forward (none).
* **data loading** on GPU: two persistent DataLoader workers pad the batches
  (prefetching four each), pinned memory and non-blocking copies; on CPU no
  workers (process start-up costs more than a tiny smoke step).

Best epoch: after every epoch the validation split *and* the test split(s) are
scored; the epoch with the best validation score (task metric, first one on a
tie) is kept and its test scores are reported.  This equals
``load_best_model_at_end=True`` followed by a test evaluation — the weights at
that epoch are the same — without writing a checkpoint per epoch (a few GB each
for the large backbones), so nothing is left on disk after a run.
"""

from __future__ import annotations

import functools
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from transformers import TrainerCallback

from ..common.fastpath import compile_for_training
from ..common.glue_metrics import REGRESSION_TASKS, TASK_METRIC, compute_metrics_for
from ..common.packed_classifier import LENGTH, PACKABLE, PackRows, PadWithoutLength, packed_forward  # noqa: F401 - PACKABLE: glue.train's API
from ..common.tokens import tokenised
from ..core.training import BestEpoch, quiet_trainer
from ..core.training import training_arguments as core_training_arguments
from ..core.utils import quiet_transformers, set_seed, torch_threads, trainer_optim

LANGS: Mapping[str, str] = {"en": "English (GLUE)", "cs": "code-switched (Koglish)"}


# --------------------------------------------------------------------------- tasks and scenarios
@dataclass(frozen=True)
class GlueTask:
    """One Koglish-GLUE task: its input columns and its head (as ``task_to_keys`` in run_glue.py)."""

    name: str
    pair: bool  # two sentences (MRPC, STS-B, QNLI, RTE) or one (CoLA, SST-2)
    num_labels: int  # 1 = regression with MSE (STS-B)

    def text_columns(self, lang: str) -> tuple[str, ...]:
        """The column(s) holding this task's input in language ``lang``."""
        if lang not in LANGS:
            raise ValueError(f"unknown language '{lang}' (known: {', '.join(LANGS)})")
        base = "sentence" if lang == "en" else "cross"
        return (f"{base}1", f"{base}2") if self.pair else (base,)

    @property
    def metric(self) -> str:
        return TASK_METRIC[self.name]


TASKS: Mapping[str, GlueTask] = {
    "cola": GlueTask("cola", pair=False, num_labels=2),
    "sst2": GlueTask("sst2", pair=False, num_labels=2),
    "mrpc": GlueTask("mrpc", pair=True, num_labels=2),
    "stsb": GlueTask("stsb", pair=True, num_labels=1),
    "qnli": GlueTask("qnli", pair=True, num_labels=2),
    "rte": GlueTask("rte", pair=True, num_labels=2),
}


@dataclass(frozen=True)
class Scenario:
    """Which language the train, selection (validation) and test splits are read in."""

    name: str
    train: str
    select: str
    test: str


SCENARIOS: Mapping[str, Scenario] = {
    "EN2EN": Scenario("EN2EN", train="en", select="en", test="en"),
    "EN2CS": Scenario("EN2CS", train="en", select="en", test="cs"),
    "CS2CS": Scenario("CS2CS", train="cs", select="cs", test="cs"),
}


def training_runs(scenarios: Sequence[str]) -> dict[tuple[str, str], tuple[str, ...]]:
    """One training per distinct (train, select) language pair, with every test language it serves.

    ``scenarios``: names of :data:`SCENARIOS` (the ``glue`` Config checks a profile's).

    >>> training_runs(["EN2EN", "EN2CS", "CS2CS"])
    {('en', 'en'): ('en', 'cs'), ('cs', 'cs'): ('cs',)}
    """
    runs: dict[tuple[str, str], tuple[str, ...]] = {}
    for name in scenarios:
        s = SCENARIOS[name]
        tests = runs.setdefault((s.train, s.select), ())
        if s.test not in tests:
            runs[(s.train, s.select)] = (*tests, s.test)
    return runs


def scenario_of(train: str, select: str, test: str) -> str | None:
    """The scenario name for a (train, select, test) triple, or ``None`` if it is none of the three."""
    for s in SCENARIOS.values():
        if (s.train, s.select, s.test) == (train, select, test):
            return s.name
    return None


# --------------------------------------------------------------------------- data


def encode(df: pd.DataFrame, task: GlueTask, lang: str, tokenizer, max_length: int):
    """Tokenise one split in language ``lang`` into a ``datasets.Dataset`` (no padding: the collator pads per batch).

    Columns: the tokenizer's outputs, ``labels``, and ``length`` = the row's
    number of real (non-padding) tokens, the sum of its attention mask, which the
    length-grouped sampler sorts by (the collator drops it before the model).
    """
    import datasets

    cols = task.text_columns(lang)
    missing = [c for c in (*cols, "label") if c not in df.columns]
    if missing:
        raise KeyError(f"{task.name} ({lang}): the split has no column(s) {missing}; it has {list(df.columns)}")
    texts = [df[c].astype(str).tolist() for c in cols]
    enc = tokenised(tokenizer, texts, max_length=max_length)  # once per (tokenizer, max_length, texts), cached
    dtype = np.float32 if task.name in REGRESSION_TASKS else np.int64
    data = {k: list(v) for k, v in enc.items()}
    data["labels"] = df["label"].to_numpy().astype(dtype).tolist()
    mask = data.get("attention_mask")
    data[LENGTH] = [int(sum(m)) for m in mask] if mask is not None else [len(ids) for ids in data["input_ids"]]
    return datasets.Dataset.from_dict(data)


# --------------------------------------------------------------------------- training
def fine_tune(
    spec,
    model_path: str,
    train_df: pd.DataFrame,
    valid_df: pd.DataFrame,
    test_dfs: Mapping[str, pd.DataFrame],
    *,
    device: str,
    cpu_threads: int | None,
    desc: str = "",
    keep: Callable[[Any, Any, dict], Any] | None = None,
) -> dict:
    """Fine-tune ``model_path`` as ``spec`` says (a :class:`codeswitch.glue.config.GlueRun`); score the best epoch.

    ``spec.task`` names the task, ``spec.train`` / ``spec.select`` the languages of the
    training and validation splits; ``test_dfs`` maps a test language to its split
    (the same examples in both languages).  ``device``: ``"cpu"`` or ``"cuda"``;
    ``cpu_threads``: torch intra-op threads on CPU (restored afterwards).  Returns a
    JSON-able dict::

        {"metric": "accuracy", "best_epoch": 3, "valid": 71.2,
         "test": {"en": 70.4, "cs": 55.0},            # Table 2 numbers, best epoch
         "test_all": {"en": {...every metric...}, ...},
         "epochs": [{"epoch": 1, "loss": .., "valid": .., "test_en": .., "test_cs": ..}, ...]}
    """
    metric = TASKS[spec.task].metric
    recorder = BestEpoch(metric, ["valid", *(f"test_{lang}" for lang in test_dfs)], desc=desc, verbose=spec.log_epochs, tag="glue",
                         keep_weights=keep is not None)
    with tempfile.TemporaryDirectory(prefix="glue-trainer-") as tmp, quiet_transformers(), \
            torch_threads(cpu_threads if device == "cpu" else None):
        trainer = build_trainer(spec, model_path, train_df, valid_df, test_dfs, device=device, output_dir=tmp, callbacks=[recorder])
        trainer.train()
    best = recorder.best()
    result = {
        "metric": metric,
        "best_epoch": best["epoch"],
        "valid": best["valid"],
        "test": {lang: best[f"test_{lang}"] for lang in test_dfs},
        "test_all": {lang: best[f"test_{lang}_all"] for lang in test_dfs},
        "epochs": [{k: v for k, v in r.items() if not k.endswith("_all")} for r in recorder.rows()],
    }
    if getattr(spec, "packing", None):
        result["packed"] = isinstance(trainer.data_collator, PackRows)  # False: a family that trains padded (mBART)
    if not np.isclose(result["valid"], trainer.state.best_metric):
        raise RuntimeError(f"{desc}: best validation {result['valid']} disagrees with the Trainer's {trainer.state.best_metric}")
    if keep is not None:  # the kept model is the best epoch's, the one the scores are of (issue 28)
        trainer.model.load_state_dict(recorder.state)
        keep(trainer.model, trainer.processing_class, result)
    return result


def build_trainer(
    spec,
    model_path: str,
    train_df: pd.DataFrame,
    valid_df: pd.DataFrame,
    test_dfs: Mapping[str, pd.DataFrame],
    *,
    device: str,
    output_dir: str,
    callbacks: Sequence[TrainerCallback] = (),
):
    """The Hugging Face ``Trainer`` of one run, ready to ``train()`` (what :func:`fine_tune` trains).

    Tokenises the splits (evaluation sets ``valid`` and ``test_<lang>``), seeds,
    loads the model (SDPA attention) and builds the Trainer with the fast-path
    arguments of :func:`training_arguments`.  Exposed so that tests can look at
    its batches (``trainer.get_train_dataloader()``) without training.
    """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    task = TASKS[spec.task]
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    train_ds = encode(train_df, task, spec.train, tokenizer, spec.max_length)
    eval_sets = {"valid": encode(valid_df, task, spec.select, tokenizer, spec.max_length)}
    for lang, df in test_dfs.items():
        eval_sets[f"test_{lang}"] = encode(df, task, lang, tokenizer, spec.max_length)

    set_seed(spec.seed)  # before the model: the classification head is initialised at random
    with quiet_transformers():
        model = AutoModelForSequenceClassification.from_pretrained(
            model_path,
            num_labels=task.num_labels,
            problem_type="regression" if task.num_labels == 1 else "single_label_classification",
            attn_implementation="sdpa",  # PyTorch's fused attention (BERT, XLM-R, mBART all have it)
        )
        if hasattr(model.config, "use_cache"):
            model.config.use_cache = False  # mBART: no decoder cache in the outputs (only logits are needed)
        trainer = quiet_trainer(_glue_trainer_class())(
            model=model,
            args=training_arguments(output_dir, spec, task.metric, device=device),
            train_dataset=train_ds,
            eval_dataset=eval_sets,
            data_collator=PadWithoutLength(tokenizer),
            processing_class=tokenizer,
            compute_metrics=compute_metrics_for(spec.task),
            preprocess_logits_for_metrics=_logits_only,
            callbacks=list(callbacks),
        )
    if getattr(spec, "packing", None) and model.config.model_type in PACKABLE:
        if trainer.args.n_gpu > 1:  # DataParallel would cut the packed rows apart
            raise ValueError("glue packing needs one GPU per process (launch with `accelerate launch`), "
                             f"this process drives {trainer.args.n_gpu}")
        trainer.data_collator = PackRows.for_lengths(tokenizer, _int_list(train_ds[LENGTH]), batch_size=trainer.args.per_device_train_batch_size,
                                                     max_length=spec.max_length, seed=spec.seed,
                                                     grouped=bool(spec.group_by_length))  # budgets of the batches it trains on
        packed_forward(model)  # after the Trainer read the forward's signature
    if getattr(spec, "torch_compile", None):  # the model and its loss (computed in its forward), training steps only
        compile_for_training(model, fixed_shapes=isinstance(trainer.data_collator, PackRows), mode=spec.torch_compile,
                             trainer=trainer)  # reduce-overhead: the Trainer marks each step for the CUDA graphs
    return trainer


def training_arguments(output_dir: str, spec, metric: str, *, device: str):
    """The ``TrainingArguments`` of one run (:func:`codeswitch.core.training.training_arguments` + GLUE's own)."""
    cuda = device == "cuda"
    return core_training_arguments(
        output_dir=output_dir,
        device=device,
        precision=spec.precision,
        seed=spec.seed,
        total_batch_size=spec.batch_size,  # Table 8's batch is the total over every device
        num_train_epochs=spec.num_train_epochs,
        per_device_eval_batch_size=spec.per_device_eval_batch_size,
        learning_rate=spec.learning_rate,
        lr_scheduler_type="linear",
        warmup_steps=spec.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        weight_decay=spec.weight_decay,
        optim=trainer_optim(device, cpu="fused"),  # AdamW (fused kernel: CPU and GPU)
        eval_strategy="epoch",
        logging_strategy="epoch",
        save_strategy="no",  # best epoch picked from the per-epoch scores; see the module docstring
        metric_for_best_model=f"valid_{metric}",  # the Trainer tracks the best too; we check we agree
        greater_is_better=True,
        # length-grouped batches (the 5.x spelling of group_by_length=True), lengths read from
        # encode()'s column: the column must reach the sampler, so the Trainer may not drop
        # unused columns (every other column is a model input; PadWithoutLength drops `length`)
        train_sampling_strategy="group_by_length" if spec.group_by_length else "random",
        length_column_name=LENGTH,
        remove_unused_columns=False,
        # GPU: two persistent workers pad the batches ahead (padding is light), prefetching four each
        dataloader_num_workers=2 if cuda else 0,
        dataloader_prefetch_factor=4 if cuda else None,
        log_level="error",
    )


def _int_list(lengths) -> list[int]:
    """Lengths as a plain list: a ``datasets`` ``Column`` reads one row per index (~30 µs each)."""
    if isinstance(lengths, list):
        return lengths
    if hasattr(lengths, "tolist"):
        return lengths.tolist()
    return list(lengths[:])  # a datasets Column: one Arrow read of the whole column


@functools.cache
def _glue_trainer_class():
    """``Trainer`` with two repairs to its length-grouped sampler (transformers 5.23).

    * the training order is drawn from a generator seeded with ``data_seed``
      (the Trainer leaves it ``None``: torch's global stream, which ``data_seed``
      never reaches) — so the batches depend on the seed alone and are the same
      on every process of a distributed launch, as the batch sharding assumes;
    * the lengths are handed over as a list (the Trainer passes the dataset's
      ``Column``, and sorting a mega-batch would read it one row at a time).
    """
    import torch
    from transformers import Trainer
    from transformers.trainer_pt_utils import LengthGroupedSampler

    class GlueTrainer(Trainer):
        def _get_train_sampler(self, train_dataset=None):
            sampler = super()._get_train_sampler(train_dataset)
            if isinstance(sampler, LengthGroupedSampler):
                sampler.lengths = _int_list(sampler.lengths)
                seed = self.args.data_seed if self.args.data_seed is not None else self.args.seed
                sampler.generator = torch.Generator().manual_seed(seed)
            return sampler

        def _get_dataloader(self, dataset, description, batch_size, sampler_fn=None, is_training=False, dataloader_key=None):
            collator = self.data_collator
            if not is_training and isinstance(collator, PackRows):  # evaluation batches are padded
                self.data_collator = collator.padded
            try:
                return super()._get_dataloader(dataset, description, batch_size, sampler_fn=sampler_fn, is_training=is_training,
                                               dataloader_key=dataloader_key)
            finally:
                self.data_collator = collator

        def _get_eval_sampler(self, eval_dataset):
            sampler = super()._get_eval_sampler(eval_dataset)
            if isinstance(sampler, LengthGroupedSampler):
                sampler.lengths = _int_list(sampler.lengths)  # its generator is seeded by the Trainer
            return sampler

    return GlueTrainer


def _logits_only(logits, labels):
    """Keep only the logits of each eval batch (mBART also returns encoder states: GBs on a large test set)."""
    return logits[0] if isinstance(logits, (tuple, list)) else logits
