"""Many small fine-tunes at once: K runs of one architecture trained as one batched model (issue 40 item 1).

A CalBERT grid fine-tunes 10 seeds x 3 variants x 5 backbones x 2 tasks at 8 samples a step: each step is a few
milliseconds of arithmetic behind a fixed per-step cost (kernel launches, Python, the optimiser's per-tensor loop).
:func:`train_runs` with ``batched=True`` stacks the K runs' parameters (``torch.func.stack_module_state``) and calls
the model once per step through ``torch.func.functional_call`` under ``torch.vmap``: one launch sequence does K
runs' forward, backward and AdamW update.  ``batched=False`` trains the same runs one after another with the plain
module (``model(**batch)``, ``loss.backward()``): the reference the batched path must equal.

What each run keeps of its own, in both paths
---------------------------------------------
* **its initial weights**: ``make_model(seed)`` builds each run (the caller seeds the head's initialisation);
* **its data order**: a ``torch.Generator`` seeded with the run's seed draws each epoch's permutation
  (:func:`epoch_order`); every run of a stack has the same number of examples, so steps line up;
* **its dropout masks**: :func:`run_dropout` replaces ``torch.nn.functional.dropout`` (which ``nn.Dropout`` and the
  Hugging Face eager attention call) by a *counter-based* dropout: the mask of the ``c``-th dropout call of step
  ``s`` of run ``seed`` is a hash of ``(seed, s, c)`` and of each element's coordinates (:func:`dropout_keep`).
  torch's own dropout under ``vmap(randomness="different")`` draws every run's mask from one global generator, so a
  run's masks would depend on which other runs share its stack; the hashed masks do not, and they are the same
  whether the run is trained alone or in a stack, and the same for a row whatever the batch is padded to (the
  coordinates, not the flat index, are hashed).  Hence the two paths are compared **with dropout on** (the
  backbone's own probabilities), exactly, not only in distribution;
* **its optimiser state**: AdamW's update is elementwise, so one AdamW over the stacked parameters is K independent
  AdamWs when the runs share learning rate, schedule, betas, eps and weight decay (a stack groups only such runs);
  bias and LayerNorm weights are not decayed (as the Hugging Face Trainer groups them);
* **its gradient clipping**: the global norm is each run's own (the squared norms summed over parameters per run);
* **its selection and record**: each epoch every run is scored on the validation split (where one is given; with
  none, the selection is the last epoch and the caller scores the final parameters); a run's selected epoch,
  per-step losses, scores and logits are its own (:class:`RunRecord`).

Shapes: a batched step pads the K runs' batches to the longest row among them; attention reads a 4-D additive mask
(:func:`additive_mask`) in both paths (the Hugging Face mask builder inspects the mask's values, which ``vmap``
cannot do), so the padding never enters a real position.  Results of the two paths agree to float rounding
(``tests/test_batched_runs.py``: 1e-5 in fp32); the choice is an execution strategy, not part of a run's identity.

The models must route attention dropout through ``F.dropout`` (``attn_implementation="eager"``):
:func:`check_routable` refuses SDPA attention with attention dropout on.
"""

from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import dataclass, field
from typing import Callable, Iterator, Mapping, Sequence

import torch
import torch.nn.functional as F

__all__ = ["dropout_keep", "run_dropout", "additive_mask", "epoch_order", "check_routable", "RunSettings",
           "RunRecord", "train_runs", "stack_groups"]

_M32 = 0xFFFFFFFF


def _mix(h: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (``lowbias32``) of an int64 tensor holding values in [0, 2**32)."""
    h = h ^ (h >> 16)
    h = (h * 0x7FEB352D) & _M32  # the product can pass 2**63 and wrap: its low 32 bits are still right
    h = h ^ (h >> 15)
    h = (h * 0x846CA68B) & _M32
    return h ^ (h >> 16)


_COORDINATES: dict[tuple, torch.Tensor] = {}  # shape and device -> coordinate hash (a few shapes per stack)


def _coordinate_hash(shape: Sequence[int], device) -> torch.Tensor:
    """A hash of each element's coordinates (dimension by dimension: a row keeps its values whatever the width);
    the same for every run and step, so kept per shape (at most 512 shapes)."""
    key = (tuple(shape), str(device))
    h = _COORDINATES.get(key)
    if h is None:
        h = torch.zeros((), dtype=torch.int64, device=device)
        for d, size in enumerate(shape):
            c = torch.arange(size, dtype=torch.int64, device=device).view([size] + [1] * (len(shape) - d - 1))
            h = _mix((h + c * 0x9E3779B1 + (d + 1) * 0x85EBCA77) & _M32)
        if len(_COORDINATES) >= 512:
            _COORDINATES.clear()
        _COORDINATES[key] = h
    return h


def dropout_keep(shape: Sequence[int], p: float, seed, step: int, call: int, device=None) -> torch.Tensor:
    """The keep mask (bool, ``shape``) of dropout call ``call`` of step ``step`` of the run ``seed``.

    ``seed``: an int or a 0-d int64 tensor (under ``vmap``: each run's own).  An element is kept when its hash,
    uniform on [0, 2**32), is at least ``p * 2**32``: it is kept with probability ``1 - p`` (up to 2**-32)."""
    seed = torch.as_tensor(seed, dtype=torch.int64, device=device)
    key = _mix(_mix((seed & _M32) ^ 0x5BD1E995) ^ ((step * 0x27D4EB2F + call * 0x165667B1) & _M32))
    # one multiply-xorshift round over the elements (both inputs are already mixed): the per-element cost
    h = ((_coordinate_hash(shape, device) ^ key) * 0x2C1B3C6D) & _M32
    return (h ^ (h >> 15)) >= int(round(p * 2**32))


class _DropoutState:
    def __init__(self, seed, step: int):
        self.seed, self.step, self.calls = seed, step, 0


_STATE: list[_DropoutState] = []


def _hashed_dropout(input, p=0.5, training=True, inplace=False):
    if not training or p == 0:
        return input
    if p >= 1:
        return input * 0
    state = _STATE[-1]
    keep = dropout_keep(input.shape, p, state.seed, state.step, state.calls, device=input.device)
    state.calls += 1
    return input * keep.to(input.dtype) / (1 - p)


@contextlib.contextmanager
def run_dropout(seed, step: int) -> Iterator[None]:
    """Inside: every ``F.dropout`` call (``nn.Dropout`` and the eager attention's) draws :func:`dropout_keep` masks
    of run ``seed`` at step ``step``, the calls counted in order.  ``seed`` may be a tensor batched by ``vmap``."""
    original = F.dropout
    _STATE.append(_DropoutState(seed, step))
    F.dropout = _hashed_dropout
    try:
        yield
    finally:
        _STATE.pop()
        F.dropout = original if not _STATE else _hashed_dropout


def additive_mask(attention_mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """``(B, 1, 1, T)``: 0 on real tokens, the dtype's minimum on padding (added to the attention scores)."""
    return (1.0 - attention_mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


def epoch_order(n: int, seed: int, epochs: int) -> list[torch.Tensor]:
    """Each epoch's permutation of ``range(n)``, from a generator seeded with ``seed`` (the run's data order)."""
    g = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=g) for _ in range(epochs)]


def check_routable(model: torch.nn.Module) -> None:
    """Refuse a model whose attention dropout would bypass :func:`run_dropout` (SDPA with attention dropout)."""
    config = getattr(model, "config", None)
    p = getattr(config, "attention_probs_dropout_prob", getattr(config, "attention_dropout", 0.0)) or 0.0
    impl = getattr(config, "_attn_implementation", "eager")
    if p > 0 and impl != "eager":
        raise ValueError(f"batched runs need attn_implementation='eager' when attention dropout is on "
                         f"({type(model).__name__}: {impl!r}, p={p}): SDPA draws its own dropout masks")


@dataclass(frozen=True)
class RunSettings:
    """What the runs of one stack share (a stack groups runs equal in all of it; the seed is each run's own)."""

    learning_rate: float
    weight_decay: float
    num_train_epochs: int
    batch_size: int
    warmup_steps: int = 0
    max_grad_norm: float | None = 1.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    selection: str = "last"  # "last": the model at the end; "best": the epoch of the highest validation accuracy

    def __post_init__(self):
        if self.selection not in ("last", "best"):
            raise ValueError(f"selection must be 'last' or 'best', got {self.selection!r}")


@dataclass
class RunRecord:
    """One run's own outcome: per-step training losses, per-epoch validation accuracy, the selected epoch (0-based),
    the validation logits at that epoch and the final parameters."""

    seed: int
    losses: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    selected_epoch: int = -1
    logits: torch.Tensor | None = None
    state: dict[str, torch.Tensor] | None = None


def _schedule(settings: RunSettings, total: int) -> Callable[[int], float]:
    w = settings.warmup_steps

    def factor(step: int) -> float:  # transformers' get_linear_schedule_with_warmup
        if step < w:
            return step / max(1, w)
        return max(0.0, (total - step) / max(1, total - w))

    return factor


def _decayed(name: str, model: torch.nn.Module) -> bool:
    """Weight decay on every weight but biases and normalisation layers' (the Trainer's grouping)."""
    module = model.get_submodule(name.rsplit(".", 1)[0]) if "." in name else model
    norm = isinstance(module, (torch.nn.LayerNorm, torch.nn.GroupNorm)) or "norm" in type(module).__name__.lower()
    return not (name.endswith("bias") or norm)


def _optimizer(named: Mapping[str, torch.Tensor], model: torch.nn.Module, settings: RunSettings):
    decay = [t for n, t in named.items() if _decayed(n, model)]
    rest = [t for n, t in named.items() if not _decayed(n, model)]
    groups = [{"params": decay, "weight_decay": settings.weight_decay}, {"params": rest, "weight_decay": 0.0}]
    return torch.optim.AdamW([g for g in groups if g["params"]], lr=settings.learning_rate, betas=settings.betas,
                             eps=settings.eps, foreach=False)


def _pad(rows: Sequence[Sequence[int]], width: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(input_ids, attention_mask)``, ``(len(rows), width)``: the rows right-padded with ``pad_id`` to a fixed
    ``width`` (every run's batch of a step the same shape; padding to the longest row is
    :func:`codeswitch.common.tokens.pad_rows`)."""
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.as_tensor(r, dtype=torch.long)
        mask[i, :len(r)] = 1
    return ids, mask


def _steps(n: int, batch_size: int) -> int:
    return math.ceil(n / batch_size)


def _check_data(train: Sequence[tuple[Sequence[Sequence[int]], Sequence[int]]], seeds: Sequence[int]):
    if len(train) != len(seeds):
        raise ValueError(f"train_runs: {len(seeds)} seeds but {len(train)} training sets")
    sizes = {len(rows) for rows, _ in train}
    if len(sizes) != 1:
        raise ValueError(f"train_runs: the runs of a stack need training sets of one size, got {sorted(sizes)}")
    for k, (rows, labels) in enumerate(train):
        if len(rows) != len(labels):
            raise ValueError(f"train_runs: run {k}: {len(rows)} rows but {len(labels)} labels")


def train_runs(
    make_model: Callable[[int], torch.nn.Module],
    seeds: Sequence[int],
    train: Sequence[tuple[Sequence[Sequence[int]], Sequence[int]]],
    validation: tuple[Sequence[Sequence[int]], Sequence[int]] | None,
    settings: RunSettings,
    *,
    batched: bool,
    pad_id: int = 0,
    on_step: Callable[[int], None] | None = None,
    device: str | torch.device = "cpu",
) -> list[RunRecord]:
    """Fine-tune one sequence classifier per seed; ``batched``: all K as one stacked model (else one after another).

    ``make_model(seed)``: a fresh classifier (its forward takes ``input_ids``, ``attention_mask`` and returns
    ``.logits``), built the same for both paths; ``train[k]``: run k's ``(token-id rows, labels)``, all of one size;
    ``validation``: ``(rows, labels)`` shared by the runs, scored each epoch (``None`` with ``selection="last"``: no
    scoring, the records hold no scores or logits; the caller evaluates the final parameters itself).  Returns one :class:`RunRecord` per seed, in order.
    ``on_step(step)``: called after each optimiser step (a benchmark's clock); ``device``: where the runs train
    (fp32; the records' tensors come back on the CPU).
    """
    _check_data(train, seeds)
    if validation is None and settings.selection != "last":
        raise ValueError(f"train_runs: selection {settings.selection!r} needs a validation split")
    if batched:
        return _train_stacked(make_model, list(seeds), train, validation, settings, pad_id, on_step, torch.device(device))
    return [_train_stacked(make_model, [s], [t], validation, settings, pad_id, on_step, torch.device(device), plain=True)[0]
            for s, t in zip(seeds, train)]


def _train_stacked(make_model, seeds, train, validation, settings, pad_id, on_step, device, plain: bool = False):
    """K = len(seeds) runs; ``plain`` (K = 1): the module itself, no ``vmap`` (the reference path)."""
    from torch.func import functional_call, stack_module_state

    models = [make_model(s).to(device) for s in seeds]
    for m in models:
        check_routable(m)
    base = models[0]
    K, n = len(seeds), len(train[0][0])
    if plain:
        params = dict(base.named_parameters())
        buffers = {}
    else:
        params, buffers = stack_module_state(models)  # (K, ...) leaves, requires_grad
        base = copy.deepcopy(base).to("meta")  # the architecture only: its parameters are the stacked ones
        models = None  # the K modules' own copies are not needed any more
    optimizer = _optimizer(params, base, settings)
    per_epoch = _steps(n, settings.batch_size)
    total = per_epoch * settings.num_train_epochs
    factor = _schedule(settings, total)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    orders = [epoch_order(n, s, settings.num_train_epochs) for s in seeds]
    seed_t = torch.tensor(seeds, dtype=torch.int64, device=device)
    records = [RunRecord(seed=s) for s in seeds]
    val = None if validation is None else _validation_tensors(validation, pad_id, device)
    best = [(-1.0, None) for _ in seeds]

    def forward(p, b, ids, mask, seed, step):
        with run_dropout(seed, step):
            return functional_call(base, (p, b), (), {"input_ids": ids, "attention_mask": additive_mask(mask)}).logits

    step = 0
    for epoch in range(settings.num_train_epochs):
        base.train()
        for i in range(per_epoch):
            idx = [o[epoch][i * settings.batch_size:(i + 1) * settings.batch_size] for o in orders]
            rows = [[train[k][0][j] for j in idx[k].tolist()] for k in range(K)]
            labels = torch.stack([torch.as_tensor(train[k][1])[idx[k]] for k in range(K)])  # (K, B)
            width = max(len(r) for rs in rows for r in rs)
            ids, mask = zip(*(_pad(rs, width, pad_id) for rs in rows))
            ids, mask = torch.stack(ids).to(device), torch.stack(mask).to(device)  # (K, B, width)
            labels = labels.to(device)
            if plain:
                with run_dropout(seeds[0], step):
                    logits = base(input_ids=ids[0], attention_mask=additive_mask(mask[0])).logits
                losses = F.cross_entropy(logits, labels[0])[None]
            else:
                logits = torch.vmap(forward, in_dims=(0, 0, 0, 0, 0, None), randomness="error")(
                    params, buffers, ids, mask, seed_t, step)  # (K, B, C)
                losses = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none").view(K, -1).mean(1)
            losses.sum().backward()  # run k's parameters get run k's gradient only
            if settings.max_grad_norm is not None:
                _clip(params.values(), settings.max_grad_norm, stacked=not plain)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            step += 1
            for k, v in enumerate(losses.detach().tolist()):  # one host sync a step (the records)
                records[k].losses.append(v)
            if on_step is not None:
                on_step(step)
        if val is None:  # nothing scored: the model at the end
            for r in records:
                r.selected_epoch = epoch
            continue
        logits = _evaluate(base, params, buffers, val[0], val[1], plain)  # (K, N, C)
        for k in range(K):
            acc = float((logits[k].argmax(-1) == val[2]).float().mean())
            records[k].scores.append(acc)
            if settings.selection == "last" or acc > best[k][0]:  # first of equal scores
                best[k] = (acc, epoch)
                records[k].selected_epoch, records[k].logits = epoch, logits[k].cpu().clone()
    for k in range(K):
        records[k].state = {name: (t if plain else t[k]).detach().cpu().clone() for name, t in params.items()}
    return records


def _validation_tensors(validation, pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ids, mask, labels)`` of the validation split on ``device``, padded to its longest row."""
    ids, mask = _pad(validation[0], max(map(len, validation[0])), pad_id)
    return ids.to(device), mask.to(device), torch.as_tensor(validation[1]).to(device)


@torch.no_grad()
def _evaluate(model, params, buffers, ids, mask, plain: bool) -> torch.Tensor:
    from torch.func import functional_call

    model.eval()
    if plain:
        return model(input_ids=ids, attention_mask=additive_mask(mask)).logits[None]
    f = lambda p, b: functional_call(model, (p, b), (), {"input_ids": ids, "attention_mask": additive_mask(mask)}).logits  # noqa: E731
    return torch.vmap(f)(params, buffers)


def _clip(tensors, max_norm: float, *, stacked: bool) -> None:
    """Clip each run's gradient to ``max_norm`` by its own global norm (``clip_grad_norm_``'s arithmetic)."""
    tensors = [t for t in tensors if t.grad is not None]
    if not stacked:
        torch.nn.utils.clip_grad_norm_(tensors, max_norm, foreach=False)
        return
    grads = [t.grad for t in tensors]
    norms = torch.stack([g.flatten(1).norm(2, dim=1) for g in grads], dim=1).norm(2, dim=1)  # (K,)
    coef = torch.clamp(max_norm / (norms + 1e-6), max=1.0)
    for g in grads:
        g.mul_(coef.view([-1] + [1] * (g.dim() - 1)))


def stack_groups(specs: Sequence, k: int, *, key: Callable[[object], object]) -> list[list]:
    """``specs`` cut into stacks of at most ``k`` runs that share ``key(spec)`` (everything but the seed), in order
    of first appearance: the runs a batched fine-tune trains together.  ``k = 1``: one run a stack."""
    if k < 1:
        raise ValueError(f"batch_runs must be >= 1, got {k}")
    groups: dict[object, list] = {}
    for s in specs:
        groups.setdefault(key(s), []).append(s)
    return [g[i:i + k] for g in groups.values() for i in range(0, len(g), k)]
