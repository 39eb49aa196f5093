"""What a run used, beside its result: device, peak GPU memory and (on request) the work it did.

:meth:`codeswitch.core.runs.RunCache.run` computes each run inside :func:`measure` and stores
:meth:`RunStats.as_dict` in the run's record as ``"stats"``, next to ``"seconds"``: outside the result,
so it enters neither the checksum nor any key, and a cached record stays valid with or without it.

* Always, where the run used CUDA: the device's name and the peak of ``torch.cuda.max_memory_allocated``
  (and reserved) over the run (``peak_memory_bytes``).  Nested runs (a run that computes another
  inside it) each get their own peak, and the outer one's is the maximum of both.
* With ``CODESWITCH_RUN_STATS=1`` (``scripts/gpu_notebooks.sh`` sets it), the work: optimiser steps (a global
  optimiser step hook), and for every outermost ``transformers`` model forward the sequences and the
  non-padding tokens (the 2-D ``attention_mask``'s sum, kept on the device: no host read per step), split into
  forwards with gradients (training) and without (evaluation, encoding), where the inputs were (device placement),
  the autocast dtype of the training forwards and the largest batch of each, the parameters of that model
  (those of its embedding tables apart: they cost no matrix products) and the time between the first and the
  last training forward.  From them ``benchmarks.gpu_notebooks`` derives steps/s, sequences/s and MFU on
  non-padding tokens (6·N per training token, 2·N per inference token).  The hooks cost one Python call per
  module call while a run is measured: off by default.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

__all__ = ["RunStats", "measure", "ENV_VAR"]

#: set to 1 to count steps, sequences and tokens per run (see the module docstring)
ENV_VAR = "CODESWITCH_RUN_STATS"


@dataclass
class RunStats:
    device: str | None = None
    peak_memory_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    counting: bool = False
    optimizer_steps: int = 0
    train_forwards: int = 0
    train_sequences: int = 0
    eval_forwards: int = 0
    eval_sequences: int = 0
    params: dict = field(default_factory=dict)  # model class -> parameters outside embedding tables
    input_devices: set = field(default_factory=set)  # where the models' inputs were (device placement, as run)
    autocast: set = field(default_factory=set)  # the autocast dtype of the training forwards ("off": none), as run
    max_train_batch: int = 0  # the most sequences in one training forward (the batch as run)
    max_eval_batch: int = 0
    _train_tokens: dict = field(default_factory=dict)  # model class -> device scalars (summed at the end: no host read per step)
    _eval_tokens: dict = field(default_factory=dict)
    _first_train: float | None = None
    _last_train: float | None = None

    def as_dict(self) -> dict:
        out = {"device": self.device, "peak_memory_bytes": self.peak_memory_bytes, "peak_reserved_bytes": self.peak_reserved_bytes}
        if self.counting:
            out.update(
                optimizer_steps=self.optimizer_steps, train_forwards=self.train_forwards, train_sequences=self.train_sequences,
                train_tokens=sum(_total(v) for v in self._train_tokens.values()), eval_forwards=self.eval_forwards,
                eval_sequences=self.eval_sequences, eval_tokens=sum(_total(v) for v in self._eval_tokens.values()),
                params=dict(self.params), input_devices=sorted(self.input_devices), autocast=sorted(self.autocast),
                max_train_batch=self.max_train_batch, max_eval_batch=self.max_eval_batch,
                models={name: {"params": n, "train_tokens": _total(self._train_tokens.get(name, [])),
                               "eval_tokens": _total(self._eval_tokens.get(name, []))} for name, n in self.params.items()},
                train_span_s=None if self._first_train is None else round(self._last_train - self._first_train, 4),
            )
        return out


def _total(parts: list) -> int:
    total = 0
    for p in parts:
        total += int(p.item()) if hasattr(p, "item") else int(p)
    return total


_ACTIVE: list[RunStats] = []
_HOOKS: list = []
_DEPTH = [0]


def _torch():
    return sys.modules.get("torch")  # only a run that imported torch can have used it


def _cuda_in_use(torch) -> bool:
    return torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized()


def _params(model) -> int:
    import torch

    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    return sum(p.numel() for p in model.parameters() if id(p) not in embeddings)


_PRETRAINED: list = []  # transformers.PreTrainedModel, once the hooks are installed
_AMP_PENDING: list = [None]  # the device type of a counted training forward whose autocast state is not read yet
_MARK = "_codeswitch_runstats_hook"


def _pre_hook(module, args):
    """Global: depth of nested models; the first time a model is seen, its own hook that reads its keyword arguments
    (global hooks see positional ones only; that first forward itself is not counted).  A sentence-transformers
    ``Transformer`` module counts as a model: it calls its ``transformers`` model's ``forward`` directly, past every
    hook (seen on the GPU: ConCSE records without forwards), and gets the features dict as its one positional argument.

    The autocast state of a counted training forward is read here, at the first module called inside it: accelerate
    (the HF Trainer's mixed precision) enters autocast inside the model's wrapped ``forward``, after every hook of the
    model itself, so read there it said "off" for runs that trained in bf16 (seen on the GPU: Koglish-GLUE, ConCSE and
    CalBERT's fine-tuning recorded ``autocast: off`` with ``precision: bf16``)."""
    if _AMP_PENDING[0] is not None:
        _read_autocast(_AMP_PENDING[0])
    if len(_PRETRAINED) > 1 and isinstance(module, _PRETRAINED[1]):
        _DEPTH[0] += 1
        features = args[0] if args and isinstance(args[0], dict) else None
        if features is not None:
            _count(module.auto_model, (), features)
        return
    if not isinstance(module, _PRETRAINED[0]):
        return
    _DEPTH[0] += 1
    if not getattr(module, _MARK, False):
        module.register_forward_pre_hook(_count, with_kwargs=True)
        setattr(module, _MARK, True)


def _count(module, args, kwargs):
    if not _ACTIVE or _DEPTH[0] != 1:
        return  # nothing measured, or a model inside a model (a bi-encoder's towers): the outermost counts
    import torch

    mask = kwargs.get("attention_mask")
    ids = kwargs.get("input_ids", args[0] if args and isinstance(args[0], torch.Tensor) else None)
    if isinstance(mask, torch.Tensor) and mask.dim() == 2:
        seqs, tokens = mask.shape[0], mask.sum()
    elif isinstance(ids, torch.Tensor) and ids.dim() == 2:
        seqs, tokens = ids.shape[0], ids.numel()
    else:
        return
    training = torch.is_grad_enabled()
    name = type(module).__name__
    now = time.perf_counter()
    where = (mask if isinstance(mask, torch.Tensor) else ids).device
    if training:
        _AMP_PENDING[0] = where.type  # read by the first module the forward calls (_pre_hook), inside its autocast
    for s in _ACTIVE:
        if name not in s.params:
            s.params[name] = _params(module)
        s.input_devices.add(str(where))
        if training:
            s.max_train_batch = max(s.max_train_batch, int(seqs))
        else:
            s.max_eval_batch = max(s.max_eval_batch, int(seqs))
        if training:
            s.train_forwards += 1
            s.train_sequences += int(seqs)
            s._train_tokens.setdefault(name, []).append(tokens)
            s._first_train = now if s._first_train is None else s._first_train
            s._last_train = now
        else:
            s.eval_forwards += 1
            s.eval_sequences += int(seqs)
            s._eval_tokens.setdefault(name, []).append(tokens)


def _read_autocast(device_type: str) -> None:
    import torch

    _AMP_PENDING[0] = None
    on = torch.is_autocast_enabled(device_type)
    amp = str(torch.get_autocast_dtype(device_type)).replace("torch.", "") if on else "off"
    for s in _ACTIVE:
        s.autocast.add(amp)


def _post_hook(module, args, output):
    if isinstance(module, tuple(_PRETRAINED)):
        _DEPTH[0] = max(0, _DEPTH[0] - 1)
        if _AMP_PENDING[0] is not None:  # a forward that called no module: its state as seen from outside
            _read_autocast(_AMP_PENDING[0])


def _step_hook(optimizer, args, kwargs):
    for s in _ACTIVE:
        s.optimizer_steps += 1


def _install(torch) -> None:
    if _HOOKS:
        return
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
    from torch.optim.optimizer import register_optimizer_step_post_hook
    from transformers import PreTrainedModel

    _PRETRAINED[:] = [PreTrainedModel]
    try:  # [1]: sentence-transformers' Transformer module, where it is installed
        from sentence_transformers.models import Transformer

        _PRETRAINED.append(Transformer)
    except ImportError:
        pass
    _HOOKS.extend([
        register_module_forward_pre_hook(_pre_hook),
        register_module_forward_hook(_post_hook),
        register_optimizer_step_post_hook(_step_hook),
    ])


def _uninstall() -> None:
    while _HOOKS:
        _HOOKS.pop().remove()
    _DEPTH[0] = 0
    _AMP_PENDING[0] = None


@contextmanager
def measure() -> Iterator[RunStats]:
    """Measure the run computed in the block (see the module docstring); the stats are complete once it ends."""
    stats = RunStats(counting=os.environ.get(ENV_VAR) == "1")
    torch = _torch()
    if stats.counting:
        import torch  # noqa: F811  (counting needs the hooks in place before the run builds its model)

        _install(torch)
    if _cuda_in_use(torch):
        for outer in _ACTIVE:  # what the outer runs reached so far, before this run's reset
            outer.peak_memory_bytes = max(outer.peak_memory_bytes or 0, torch.cuda.max_memory_allocated())
            outer.peak_reserved_bytes = max(outer.peak_reserved_bytes or 0, torch.cuda.max_memory_reserved())
        torch.cuda.reset_peak_memory_stats()
    _ACTIVE.append(stats)
    try:
        yield stats
    finally:
        del _ACTIVE[next(i for i, s in enumerate(_ACTIVE) if s is stats)]  # by identity: two fresh stats compare equal
        torch = _torch()
        if _cuda_in_use(torch):
            stats.device = torch.cuda.get_device_name()
            stats.peak_memory_bytes = max(stats.peak_memory_bytes or 0, torch.cuda.max_memory_allocated())
            stats.peak_reserved_bytes = max(stats.peak_reserved_bytes or 0, torch.cuda.max_memory_reserved())
            for outer in _ACTIVE:
                outer.peak_memory_bytes = max(outer.peak_memory_bytes or 0, stats.peak_memory_bytes)
                outer.peak_reserved_bytes = max(outer.peak_reserved_bytes or 0, stats.peak_reserved_bytes)
        elif torch is not None:
            stats.device = "cpu"
        if not _ACTIVE:
            _uninstall()
