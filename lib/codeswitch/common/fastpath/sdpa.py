"""Padding masks decided on the host, so transformers never synchronises with the device to inspect them."""

from __future__ import annotations

from typing import Mapping

from torch import Tensor, nn

__all__ = ["uses_sdpa", "sdpa_ready"]


def uses_sdpa(model: nn.Module) -> bool:
    """Whether ``model`` (a transformers model) runs PyTorch's scaled-dot-product attention."""
    return getattr(getattr(model, "config", None), "_attn_implementation", None) == "sdpa"


def sdpa_ready(batch: Mapping[str, Tensor]) -> dict[str, Tensor]:
    """``batch`` (host tensors) with its padding mask in the form SDPA reads, decided on the host.

    Given a (B, L) ``attention_mask`` of ones and zeros, transformers asks the device
    ``mask.all()`` before every forward (to drop a mask without padding and let SDPA
    pick its fastest kernel): a host synchronisation per forward.  Deciding it here,
    on the CPU copy, avoids that: no padding → no mask; padding → the boolean
    (B, 1, 1, L) mask (True = attend), which transformers hands to SDPA as it is and
    SDPA broadcasts over heads and query positions — the same attention as the mask
    transformers would build.  Only for models with ``attn_implementation="sdpa"``
    (eager attention *adds* its mask).
    """
    mask = batch.get("attention_mask")
    if mask is None or mask.ndim != 2:
        return dict(batch)
    if mask.device.type != "cpu":
        raise ValueError("sdpa_ready: the attention mask must still be on the host (call it before copying the batch)")
    out = dict(batch)
    if bool(mask.all()):  # a CPU tensor: no device involved
        del out["attention_mask"]
    else:
        out["attention_mask"] = mask.bool()[:, None, None, :]  # (B, 1, 1, L)
    return out
