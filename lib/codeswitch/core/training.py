"""One scaffolding for the Hugging Face trainers: arguments, the best epoch, the trainer class.

* :func:`training_arguments` builds ``TrainingArguments`` (or a subclass such as
  sentence-transformers') from a run's hyperparameters and the profile: the
  precision by its resolved name (:func:`codeswitch.core.profiles.resolve_precision`),
  the *total* batch split over the devices of the launch, data-loader workers, pinned
  memory and non-blocking copies on a GPU, and logging, progress bars and reporting off.
* :class:`BestEpoch` records the scores of every epoch and picks the best one by a
  validation metric (first on a tie), printing one line per epoch if asked.
* :func:`quiet_trainer` is the trainer subclass every experiment uses: no model card,
  no ``PrinterCallback`` (it prints every log dict).

Hand-written loops (ContrastiveMix's dual encoder, the alignment objectives) stay where
a paper's method needs one; each says why in its docstring.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

from transformers import TrainerCallback

__all__ = ["training_arguments", "split_total_batch", "BestEpoch", "quiet_trainer"]


def training_arguments(*, output_dir: str, device: str, precision: str, seed: int, total_batch_size: int,
                       args_class=None, **kwargs: Any):
    """``TrainingArguments`` for one run; ``total_batch_size`` is the batch over every device of the launch.

    ``device``: ``"cpu"`` or ``"cuda"`` (the profile's resolved device type);
    ``precision``: the resolved name ``"fp32" | "bf16" | "fp16"`` (never ``"auto"``);
    every other keyword is a ``TrainingArguments`` field of the experiment's own
    (learning rate, schedule, evaluation strategy, ...), and may override the shared
    defaults below (e.g. ``dataloader_num_workers``).
    """
    if precision not in ("fp32", "bf16", "fp16"):
        raise ValueError(f"precision must be the resolved fp32, bf16 or fp16; got {precision!r}")
    if args_class is None:
        from transformers import TrainingArguments as args_class
    from .utils import loader_workers

    cuda = device == "cuda"
    shared = dict(
        output_dir=output_dir,
        per_device_train_batch_size=total_batch_size,  # divided by the device count below
        seed=seed,
        data_seed=seed,
        use_cpu=device == "cpu",
        bf16=precision == "bf16",
        fp16=precision == "fp16",  # autocast + accelerate's GradScaler (dynamic loss scaling)
        logging_nan_inf_filter=False,  # the filter reads every step's loss on the host (a GPU sync)
        # GPU: worker processes prepare the batches ahead, pinned memory, non-blocking copies
        # (accelerate prefetches the next batch); CPU: no workers (process start-up would cost
        # more than the tiny smoke steps)
        dataloader_num_workers=loader_workers(cuda),
        dataloader_pin_memory=cuda,
        dataloader_persistent_workers=cuda,
        accelerator_config={"non_blocking": cuda},
        disable_tqdm=True,
        report_to="none",
    )
    args = args_class(**(shared | kwargs))
    args.per_device_train_batch_size = split_total_batch(total_batch_size, args)
    return args


def split_total_batch(total: int, args) -> int:
    """The per-device share of a total batch: over the processes of a distributed launch and the GPUs one process drives."""
    devices = args.world_size * max(1, args.n_gpu)
    if total % devices:
        raise ValueError(f"batch size {total} cannot be split evenly over {devices} devices")
    return total // devices


class BestEpoch(TrainerCallback):
    """The scores of every epoch of the named evaluation sets; the best epoch by ``metric`` on ``select``.

    With ``eval_dataset={"valid": ..., "test_en": ...}`` the Trainer evaluates each set
    after every epoch; this keeps ``metric`` (and every score) of each, and the training
    loss.  :meth:`best` is the first epoch with the highest ``select`` score (strict
    ``>``, as the Trainer's own best-model tracking) — the same weights
    ``load_best_model_at_end`` would reload, without a checkpoint on disk.
    """

    IGNORED = ("loss", "runtime", "samples_per_second", "steps_per_second")

    def __init__(self, metric: str, eval_names: Sequence[str], *, select: str = "valid", desc: str = "", verbose: bool = False,
                 tag: str = "train", keep_weights: bool = False):
        self.metric, self.eval_names, self.select = metric, list(eval_names), select
        self.desc, self.verbose, self.tag = desc, verbose, tag
        self.epochs: dict[int, dict] = {}
        # keep_weights: a CPU copy of the best epoch's weights (``state``), for a run whose model is kept (issue 28)
        self.keep_weights, self.state = keep_weights, None

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
                row[f"{name}_all"] = {k: v for k, v in found.items() if k not in self.IGNORED}
        if self.keep_weights and self.select in row and self.best() is row and kwargs.get("model") is not None:
            self.state = {k: v.detach().to("cpu", copy=True) for k, v in kwargs["model"].state_dict().items()}
        if self.verbose and all(n in row for n in self.eval_names):
            scores = "  ".join(f"{n} {row[n]:.2f}" for n in self.eval_names)
            print(f"[{self.tag}] {self.desc} epoch {row['epoch']}/{int(args.num_train_epochs)}  "
                  f"loss {row.get('loss', float('nan')):.4f}  {self.metric}: {scores}", flush=True)

    def rows(self) -> list[dict]:
        """The evaluated epochs in order, each ``{"epoch", "loss", <name>: score, <name>_all: {...}}``."""
        return [self.epochs[e] for e in sorted(self.epochs) if self.select in self.epochs[e]]

    def best(self) -> dict:
        rows = self.rows()
        if not rows:
            raise RuntimeError(f"{self.desc}: no evaluation was recorded (did training run?)")
        best = rows[0]
        for r in rows[1:]:
            if r[self.select] > best[self.select]:
                best = r
        return best


@functools.cache
def quiet_trainer(base: type) -> type:
    """``base`` (``transformers.Trainer`` or a subclass) without a model card and without ``PrinterCallback``."""
    from transformers.trainer_callback import PrinterCallback

    class QuietTrainer(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.remove_callback(PrinterCallback)  # it prints every log dict; BestEpoch prints one line per epoch

        def add_model_card_callback(self, *args, **kwargs):  # sentence-transformers' model-card bookkeeping
            pass

    QuietTrainer.__name__ = QuietTrainer.__qualname__ = f"Quiet{base.__name__}"
    return QuietTrainer
