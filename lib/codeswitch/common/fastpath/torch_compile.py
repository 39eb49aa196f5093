"""Every trainer's ``torch_compile`` setting: ``false`` (eager), ``true`` (torch.compile's default mode) or
``reduce-overhead`` (inductor's CUDA graph trees over the packed budgets), and the step marks CUDA graph trees need."""

from __future__ import annotations

import functools
from typing import Any, Literal, Mapping, Union

import torch
from torch import nn

__all__ = ["REDUCE_OVERHEAD", "TorchCompile", "check_torch_compile", "compile_for_training", "cudagraph_step_begin"]


#: ``torch_compile: reduce-overhead``: ``torch.compile(mode="reduce-overhead")``, inductor's CUDA graph trees
REDUCE_OVERHEAD = "reduce-overhead"
#: every trainer's ``torch_compile`` setting: ``false`` (eager), ``true`` (torch.compile's default mode) or
#: ``reduce-overhead`` (its CUDA-graph mode, packed steps only: :func:`check_torch_compile`)
TorchCompile = Union[bool, Literal["reduce-overhead"]]


def check_torch_compile(value: Any, *, section: str, packing: Mapping[str, bool]) -> None:
    """Check a section's ``torch_compile`` setting: ``false``, ``true`` or ``reduce-overhead``, the last only where every
    trainer it compiles packs its steps (``packing``: ``{setting name: value}``): CUDA graphs replay fixed shapes, and
    only the packed steps' token budgets give them (at most four a trainer).  A ``ValueError`` naming the settings."""
    if not (isinstance(value, bool) or value == REDUCE_OVERHEAD):
        raise ValueError(f"{section}.torch_compile must be false, true or {REDUCE_OVERHEAD}, got {value!r}")
    off = [name for name, on in packing.items() if not on]
    if value == REDUCE_OVERHEAD and off:
        needs = " and ".join(f"{section}.{name}: true" for name in off)
        raise ValueError(f"{section}.torch_compile: {REDUCE_OVERHEAD} needs {needs} "
                         "(CUDA graphs need the fixed token budgets)")


def compile_for_training(module: nn.Module, *, fixed_shapes: bool = False, mode: bool | str | None = None,
                         trainer=None) -> nn.Module:
    """``torch.compile`` ``module``'s forward for training steps, in place (parameters and state-dict keys unchanged);
    returns ``module``.  The one compile of every trainer's ``torch_compile`` setting (issue 24).

    In training mode the forward runs compiled, in evaluation mode (scoring, with
    shapes of its own) eagerly, so scoring compiles nothing.  ``fixed_shapes``
    (packing): static graphs, one per budget (at most four), and ``fullgraph=True``:
    the packed steps trace as one graph with 0 breaks (``tests/test_compile_guards.py``,
    ``tests/test_perf_guards*.py``), so a break is an error, not a silent slow path.
    Without it the shapes are left to dynamo (padded batches vary in width) and a
    graph break falls back to eager.  Compiling on a CPU works (smoke, CI): it costs
    more than a few tiny steps save, so every profile has it off until a GPU row
    measures it.

    ``mode``: the setting's value — ``None`` or ``True``, torch.compile's default mode;
    ``"reduce-overhead"`` (:data:`REDUCE_OVERHEAD`), inductor's CUDA graph trees: each
    budget's forward and backward are recorded once as CUDA graphs and replayed, one
    launch instead of hundreds (a step that waits on the host's dispatch, not on the
    GPU).  It needs ``fixed_shapes``; a model that cannot pack (mBART in GLUE, a
    CalBERT head that does not read the first token) falls back to the default mode,
    with a warning.  Each training step must then begin with :func:`cudagraph_step_begin`
    (a step's outputs live until the next step begins, then the graphs' replay
    overwrites them): ``trainer`` (an HF ``Trainer``) gets a callback that marks each of
    its steps; a hand-written loop calls :func:`cudagraph_step_begin` itself.  On a CPU
    inductor records no CUDA graph (it counts a ``cudagraph_skips``) and compiles as
    ``True`` does.
    """
    mode = _compile_mode(mode)
    if mode == REDUCE_OVERHEAD and not fixed_shapes:
        import warnings

        warnings.warn(f"torch_compile: {REDUCE_OVERHEAD} needs fixed shapes (packed steps); {type(module).__name__} "
                      "trains padded, so it is compiled in torch.compile's default mode (no CUDA graphs)", stacklevel=2)
        mode = None
    eager = module.forward
    options = {"mode": mode} if mode is not None else {}  # `true`: exactly the call it always was
    compiled = torch.compile(eager, dynamic=False if fixed_shapes else None, fullgraph=fixed_shapes, **options)

    @functools.wraps(eager)  # the signature the HF Trainer reads to drop unused columns
    def forward(*args, **kwargs):
        return compiled(*args, **kwargs) if module.training else eager(*args, **kwargs)

    module.forward = forward
    if trainer is not None and mode == REDUCE_OVERHEAD:
        trainer.add_callback(_cudagraph_steps_callback())
    return module


def _compile_mode(mode: bool | str | None) -> str | None:
    """torch.compile's ``mode`` for a ``torch_compile`` setting that is on: ``True`` (or ``None``) → the default mode."""
    if mode is None or mode is True:
        return None
    if mode == REDUCE_OVERHEAD:
        return mode
    raise ValueError(f"compile_for_training: mode must be True or {REDUCE_OVERHEAD!r}, got {mode!r}")


def cudagraph_step_begin(mode: bool | str | None) -> None:
    """Mark the start of a training step for CUDA graph trees, when ``mode`` (a ``torch_compile`` setting) is
    ``reduce-overhead``; nothing otherwise.

    Called once per optimiser step, before its first compiled forward: a step may run
    the compiled module more than once before its backward, and only the mark tells
    the trees that the previous step's outputs (losses, embeddings) are done with and
    their memory may be replayed into.  Anything kept across steps must therefore be a
    copy (an eager op's result), never a compiled forward's output tensor.
    """
    if mode == REDUCE_OVERHEAD:
        torch.compiler.cudagraph_mark_step_begin()


@functools.cache
def _cudagraph_steps_class():
    from transformers import TrainerCallback

    class CudagraphSteps(TrainerCallback):
        """Marks each HF ``Trainer`` step's start for CUDA graph trees (:func:`cudagraph_step_begin`)."""

        def on_step_begin(self, args, state, control, **kwargs):
            cudagraph_step_begin(REDUCE_OVERHEAD)

    return CudagraphSteps


def _cudagraph_steps_callback():
    """A ``TrainerCallback`` whose ``on_step_begin`` marks the step for CUDA graph trees (built lazily: transformers)."""
    return _cudagraph_steps_class()()
