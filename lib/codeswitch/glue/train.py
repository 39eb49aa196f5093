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
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from transformers import TrainerCallback

from ..common.glue_metrics import REGRESSION_TASKS, TASK_METRIC, compute_metrics_for
from ..core.utils import frozen_gc, quiet_transformers, set_seed, torch_threads

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

    >>> training_runs(["EN2EN", "EN2CS", "CS2CS"])
    {('en', 'en'): ('en', 'cs'), ('cs', 'cs'): ('cs',)}
    """
    runs: dict[tuple[str, str], tuple[str, ...]] = {}
    for name in scenarios:
        if name not in SCENARIOS:
            raise ValueError(f"unknown scenario '{name}' (known: {', '.join(SCENARIOS)})")
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
LENGTH = "length"  # the column of each row's token count (the Trainer's ``length_column_name``)


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
    enc = tokenizer(*texts, truncation=True, max_length=max_length)
    dtype = np.float32 if task.name in REGRESSION_TASKS else np.int64
    data = {k: list(v) for k, v in enc.items()}
    data["labels"] = df["label"].to_numpy().astype(dtype).tolist()
    mask = data.get("attention_mask")
    data[LENGTH] = [int(sum(m)) for m in mask] if mask is not None else [len(ids) for ids in data["input_ids"]]
    return datasets.Dataset.from_dict(data)


# --------------------------------------------------------------------------- training
@dataclass(frozen=True)
class FineTuneSettings:
    """The hyperparameters of one fine-tuning run (Appendix A.1, Table 8)."""

    epochs: int = 5
    batch_size: int = 128  # the total batch; split over the processes of a multi-GPU launch
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    max_length_single: int = 115
    max_length_pair: int = 230
    eval_batch_size: int = 256
    seed: int = 11111
    device: str = "cpu"  # "cpu" or "cuda"
    cpu_threads: int | None = None  # torch intra-op threads on CPU (None: leave torch's default)
    precision: str = "fp32"  # "fp32" | "bf16" | "fp16"
    group_by_length: bool = True  # batches of rows of similar length (see the module docstring)
    log_epochs: bool = True  # print one line per epoch

    def max_length(self, task: GlueTask) -> int:
        return self.max_length_pair if task.pair else self.max_length_single


def fine_tune(
    model_path: str,
    task_name: str,
    train_df: pd.DataFrame,
    valid_df: pd.DataFrame,
    test_dfs: Mapping[str, pd.DataFrame],
    *,
    train_lang: str,
    select_lang: str,
    settings: FineTuneSettings,
    desc: str = "",
) -> dict:
    """Fine-tune ``model_path`` on one task; score the best epoch on each test language.

    ``test_dfs`` maps a test language to its split (the same examples in both
    languages).  Returns a JSON-able dict::

        {"metric": "accuracy", "best_epoch": 3, "valid": 71.2,
         "test": {"en": 70.4, "cs": 55.0},            # Table 2 numbers, best epoch
         "test_all": {"en": {...every metric...}, ...},
         "epochs": [{"epoch": 1, "loss": .., "valid": .., "test_en": .., "test_cs": ..}, ...]}
    """
    metric = TASKS[task_name].metric
    recorder = _EpochRecorder(metric, desc, settings.log_epochs, ["valid", *(f"test_{lang}" for lang in test_dfs)])
    with tempfile.TemporaryDirectory(prefix="glue-trainer-") as tmp, quiet_transformers(), _cpu_threads(settings), frozen_gc():
        trainer = build_trainer(
            model_path, task_name, train_df, valid_df, test_dfs,
            train_lang=train_lang, select_lang=select_lang, settings=settings, output_dir=tmp, callbacks=[recorder],
        )
        trainer.train()
    result = recorder.result(list(test_dfs))
    if not np.isclose(result["valid"], trainer.state.best_metric):
        raise RuntimeError(f"{desc}: best validation {result['valid']} disagrees with the Trainer's {trainer.state.best_metric}")
    return result


def build_trainer(
    model_path: str,
    task_name: str,
    train_df: pd.DataFrame,
    valid_df: pd.DataFrame,
    test_dfs: Mapping[str, pd.DataFrame],
    *,
    train_lang: str,
    select_lang: str,
    settings: FineTuneSettings,
    output_dir: str,
    callbacks: Sequence[TrainerCallback] = (),
):
    """The Hugging Face ``Trainer`` of one run, ready to ``train()`` (what :func:`fine_tune` trains).

    Tokenises the splits (evaluation sets ``valid`` and ``test_<lang>``), seeds,
    loads the model (SDPA attention) and builds the Trainer with the fast-path
    arguments of :func:`_training_arguments`.  Exposed so that tests can look at
    its batches (``trainer.get_train_dataloader()``) without training.
    """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.trainer_callback import PrinterCallback

    task = TASKS[task_name]
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    max_len = settings.max_length(task)
    train_ds = encode(train_df, task, train_lang, tokenizer, max_len)
    eval_sets = {"valid": encode(valid_df, task, select_lang, tokenizer, max_len)}
    for lang, df in test_dfs.items():
        eval_sets[f"test_{lang}"] = encode(df, task, lang, tokenizer, max_len)

    set_seed(settings.seed)  # before the model: the classification head is initialised at random
    with quiet_transformers():
        model = AutoModelForSequenceClassification.from_pretrained(
            model_path,
            num_labels=task.num_labels,
            problem_type="regression" if task.num_labels == 1 else "single_label_classification",
            attn_implementation="sdpa",  # PyTorch's fused attention (BERT, XLM-R, mBART all have it)
        )
        if hasattr(model.config, "use_cache"):
            model.config.use_cache = False  # mBART: no decoder cache in the outputs (only logits are needed)
        trainer = _glue_trainer_class()(
            model=model,
            args=_training_arguments(output_dir, settings, task.metric),
            train_dataset=train_ds,
            eval_dataset=eval_sets,
            data_collator=PadWithoutLength(tokenizer),
            processing_class=tokenizer,
            compute_metrics=compute_metrics_for(task_name),
            preprocess_logits_for_metrics=_logits_only,
            callbacks=list(callbacks),
        )
    trainer.remove_callback(PrinterCallback)  # it prints every log dict; the recorder prints one line per epoch
    return trainer


def _training_arguments(output_dir: str, s: FineTuneSettings, metric: str):
    """The ``TrainingArguments`` of one run; ``s.batch_size`` is the total batch over every device."""
    from transformers import TrainingArguments

    if s.precision not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"precision must be fp32, bf16 or fp16; got {s.precision!r}")
    cuda = s.device == "cuda"
    args = TrainingArguments(
        output_dir=output_dir,
        num_train_epochs=s.epochs,
        per_device_train_batch_size=s.batch_size,  # divided by the device count below
        per_device_eval_batch_size=s.eval_batch_size,
        learning_rate=s.learning_rate,
        lr_scheduler_type="linear",
        warmup_steps=s.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps
        weight_decay=s.weight_decay,
        optim="adamw_torch_fused",  # AdamW (fused kernel: CPU and GPU)
        eval_strategy="epoch",
        logging_strategy="epoch",
        save_strategy="no",  # best epoch picked from the per-epoch scores; see the module docstring
        metric_for_best_model=f"valid_{metric}",  # the Trainer tracks the best too; we check we agree
        greater_is_better=True,
        seed=s.seed,
        data_seed=s.seed,
        use_cpu=s.device == "cpu",
        bf16=s.precision == "bf16",
        fp16=s.precision == "fp16",  # autocast + accelerate's GradScaler (dynamic loss scaling)
        # length-grouped batches (the 5.x spelling of group_by_length=True), lengths read from
        # encode()'s column: the column must reach the sampler, so the Trainer may not drop
        # unused columns (every other column is a model input; PadWithoutLength drops `length`)
        train_sampling_strategy="group_by_length" if s.group_by_length else "random",
        length_column_name=LENGTH,
        remove_unused_columns=False,
        logging_nan_inf_filter=False,  # the filter reads every step's loss on the host (a GPU sync)
        # GPU: two persistent workers pad the batches ahead, pinned memory, non-blocking copies
        # (accelerate prefetches the next batch); CPU: no workers (process start-up would cost
        # more than the tiny smoke steps)
        dataloader_num_workers=2 if cuda else 0,
        dataloader_pin_memory=cuda,
        dataloader_persistent_workers=cuda,
        dataloader_prefetch_factor=4 if cuda else None,
        accelerator_config={"non_blocking": cuda},
        disable_tqdm=True,
        report_to=[],
        log_level="error",
    )
    # Table 8's batch is the total: split it over the processes of a distributed launch
    # and over the GPUs one process drives (the Trainer's DataParallel when n_gpu > 1).
    devices = args.world_size * max(1, args.n_gpu)
    if s.batch_size % devices:
        raise ValueError(f"batch size {s.batch_size} cannot be split evenly over {devices} devices")
    args.per_device_train_batch_size = s.batch_size // devices
    return args


class PadWithoutLength:
    """``DataCollatorWithPadding`` after dropping the ``length`` column (the sampler's, not a model input).

    Pads every batch to its own longest row (dynamic padding).  A module-level
    class, so that DataLoader worker processes can receive it.
    """

    def __init__(self, tokenizer):
        from transformers import DataCollatorWithPadding

        self.pad = DataCollatorWithPadding(tokenizer)

    def __call__(self, features):
        return self.pad([{k: v for k, v in f.items() if k != LENGTH} for f in features])


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

        def _get_eval_sampler(self, eval_dataset):
            sampler = super()._get_eval_sampler(eval_dataset)
            if isinstance(sampler, LengthGroupedSampler):
                sampler.lengths = _int_list(sampler.lengths)  # its generator is seeded by the Trainer
            return sampler

    return GlueTrainer


def _logits_only(logits, labels):
    """Keep only the logits of each eval batch (mBART also returns encoder states: GBs on a large test set)."""
    return logits[0] if isinstance(logits, (tuple, list)) else logits


def _cpu_threads(settings: FineTuneSettings):
    """``settings.cpu_threads`` torch threads for a CPU fine-tuning, restored afterwards (:func:`codeswitch.core.utils.torch_threads`)."""
    return torch_threads(settings.cpu_threads if settings.device == "cpu" else None)


class _EpochRecorder(TrainerCallback):
    """Collects the per-epoch training loss and evaluation scores; prints one line per epoch."""

    def __init__(self, metric: str, desc: str, verbose: bool, eval_names: list[str]):
        self.metric, self.desc, self.verbose, self.eval_names = metric, desc, verbose, eval_names
        self.epochs: dict[int, dict] = {}

    def _row(self, state) -> dict:
        epoch = int(round(state.epoch or 0))
        return self.epochs.setdefault(epoch, {"epoch": epoch})

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self._row(state)["loss"] = float(logs["loss"])

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        row = self._row(state)
        for name in self.eval_names:
            prefix = f"eval_{name}_"
            found = {k[len(prefix):]: float(v) for k, v in (metrics or {}).items() if k.startswith(prefix)}
            if self.metric in found:
                row[name] = found[self.metric]
                row[f"{name}_all"] = {k: v for k, v in found.items() if k not in ("loss", "runtime", "samples_per_second", "steps_per_second")}
        if self.verbose and all(n in row for n in self.eval_names):
            scores = "  ".join(f"{n} {row[n]:.2f}" for n in self.eval_names)
            print(f"[glue] {self.desc} epoch {row['epoch']}/{int(args.num_train_epochs)}  loss {row.get('loss', float('nan')):.4f}  {self.metric}: {scores}", flush=True)

    def result(self, test_langs: list[str]) -> dict:
        rows = [self.epochs[e] for e in sorted(self.epochs) if "valid" in self.epochs[e]]
        if not rows:
            raise RuntimeError(f"{self.desc}: no evaluation was recorded (did training run?)")
        # first epoch with the best validation score: strict '>' as the Trainer's own best-model tracking
        best = rows[0]
        for r in rows[1:]:
            if r["valid"] > best["valid"]:
                best = r
        return {
            "metric": self.metric,
            "best_epoch": best["epoch"],
            "valid": best["valid"],
            "test": {lang: best[f"test_{lang}"] for lang in test_langs},
            "test_all": {lang: best[f"test_{lang}_all"] for lang in test_langs},
            "epochs": [{k: v for k, v in r.items() if not k.endswith("_all")} for r in rows],
        }
