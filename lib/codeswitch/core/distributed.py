"""In-batch negatives across devices: gather embeddings from every process, keep the local gradient.

Contrastive losses with in-batch negatives (ConCSE, SimCSE/MNRL, mDPR) score each
anchor against every candidate of the batch.  Under data parallelism each of the
``W`` processes embeds only its slice (``b = B / W`` rows) of the global batch ``B``;
to see the *global* batch's negatives, each process gathers the others' embeddings.

The recipe used here (``approach A``: every process evaluates the global loss)::

    E      = [E_0; E_1; …; E_{W-1}]          (B, H)   gathered; only E_rank carries a graph
    L      = loss(E)                                  the single-device loss of the global batch
    dL/dθ  = Σ_r  (∂L/∂E_r) · (∂E_r/∂θ)               chain rule over the slices

Process ``r`` back-propagates only the term of its own slice (the other slices are
constants on it, they get their gradient on their own process).  DDP then *averages*
the gradients over the ``W`` processes, so each process scales its gradient by ``W``
(:func:`sum_local_gradients`) and the averaged result is exactly ``dL/dθ``: the loss
and the gradients on ``W`` devices equal those of one device at the same global
batch (``tests/test_distributed.py`` checks this with two CPU processes).

(sentence-transformers' ``MultipleNegativesRankingLoss(gather_across_devices=True)``
takes the other road — each process scores only its own anchors, and the gather
itself back-propagates across processes — which is exact as well; the SimCSE
baseline uses it.)

All functions are the identity on a single process, so the same code runs with and
without ``accelerate launch`` / ``torchrun``.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["is_distributed", "world_size", "rank", "gather_with_grad", "sum_local_gradients"]


def is_distributed() -> bool:
    """True inside an initialised process group with more than one process."""
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def world_size() -> int:
    import torch.distributed as dist

    return dist.get_world_size() if is_distributed() else 1


def rank() -> int:
    import torch.distributed as dist

    return dist.get_rank() if is_distributed() else 0


def gather_with_grad(x: Tensor) -> Tensor:
    """Every process's ``x`` stacked along dim 0, ``(W·b, …)``; the local slice keeps its autograd graph.

    ``torch.distributed.all_gather`` returns plain tensors (no gradient); putting the
    local tensor back into its slot keeps the graph of this process's encoder.  Every
    process must pass a tensor of the same shape (equal local batches).
    """
    if not is_distributed():
        return x
    import torch.distributed as dist

    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    parts[dist.get_rank()] = x  # the local slice with its graph
    return torch.cat(parts, dim=0)  # (W * b, ...)


def sum_local_gradients(loss: Tensor) -> Tensor:
    """``loss`` with its value unchanged and its gradient multiplied by the world size ``W``.

    For a loss computed on gathered embeddings (:func:`gather_with_grad`): each process
    holds only its own slice's share of the gradient, the full gradient is their *sum*,
    and DDP *averages*; scaling by ``W`` turns the average into the sum.  The value is
    left alone so the logged loss is the global batch's loss on every process.
    """
    w = world_size()
    if w == 1:
        return loss
    return loss * w - loss.detach() * (w - 1)  # value: loss; d/dθ: W · dloss/dθ
