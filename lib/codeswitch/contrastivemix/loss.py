"""mDPR's in-batch IR loss and ContrastiveMix's alignment term (ContrastiveMix §3.1, §3.4).

Notation (a batch of ``B`` training queries, embeddings of width ``H``; every
embedding is the last layer's first-token vector, not normalised)::

    q        English queries, from the query encoder                 (B, H)
    p⁺, p⁻   each query's positive and hard-negative passage          (B, H) each
    q̃        each query's code-mixed copy, from the query encoder     (B, H)

IR loss (Eq. 1, DPR with in-batch negatives).  Row ``i`` scores query ``i``
against all 2B passages of the batch by dot product, without temperature; its
target is its own positive, column ``i``::

    S_ir   = q · [p⁺; p⁻]ᵀ                                            (B, 2B)
    L_ir   = mean_i  −log  exp(S_ir[i, i]) / Σ_j exp(S_ir[i, j])

Alignment loss (Eq. 2).  The English query must pick out its own code-mixed copy
among the batch's code-mixed queries::

    S_c    = q · q̃ᵀ                                                   (B, B)
    L_c    = mean_i  −log  exp(S_c[i, i]) / Σ_j exp(S_c[i, j])

Total (Eq. 3)::

    L = L_ir + w · L_c            w = 0.1 (the released training command)

The paper writes the losses per example; as in DPR/Tevatron each term here is a
batch mean.  Table 3's ablations move the alignment term to the passage encoder or
use both (the two alignment terms are added).  On the passage side the released code
aligns *every* passage of the batch, positives and hard negatives, with its own
code-mixed copy (``p_mixed``, ``n_mixed``)::

    P      = [p⁺; p⁻],  P̃ = [p̃⁺; p̃⁻]                                  (2B, H) each
    S_p    = P · P̃ᵀ                                                   (2B, 2B)

(``n_mixed=None``: positives only, ``S = p⁺ · p̃⁺ᵀ``, the ``passage_align: positives``
option).  With ``weight = 0`` and no mixed copies the
total is mDPR's loss.

Under data parallelism the inputs are the *global* batch (gathered across devices,
see :func:`codeswitch.core.distributed.gather_with_grad`), so a query is scored
against every passage of the global batch.

References: Karpukhin et al., "Dense Passage Retrieval" (EMNLP 2020); Do, Lee and
Hwang, "ContrastiveMix: Overcoming Code-Mixing Dilemma in Cross-Lingual Transfer
for Information Retrieval" (NAACL 2024).

Example::

    >>> import torch
    >>> q, p_pos, p_neg, q_mixed = torch.randn(4, 8, 16).unbind(0)
    >>> out = contrastivemix_loss(q, p_pos, p_neg, q_mixed, weight=0.1)
    >>> sorted(out)
    ['align', 'ir', 'total']
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["ir_loss", "alignment_loss", "contrastivemix_loss"]


def _check_pair(name_a: str, a: Tensor, name_b: str, b: Tensor) -> None:
    if a.ndim != 2 or b.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"{name_a} {tuple(a.shape)} and {name_b} {tuple(b.shape)} must both be (B, H) with the same shape")


def ir_loss(q: Tensor, p_pos: Tensor, p_neg: Tensor | None = None) -> Tensor:
    """``L_ir``: cross-entropy of ``q · [p_pos; p_neg]ᵀ`` with row ``i``'s target at column ``i``.

    ``p_neg`` may be ``None`` (positives only: a B × B score matrix).
    """
    _check_pair("q", q, "p_pos", p_pos)
    passages = p_pos
    if p_neg is not None:
        _check_pair("p_pos", p_pos, "p_neg", p_neg)
        passages = torch.cat([p_pos, p_neg], dim=0)  # (2B, H)
    scores = q @ passages.T  # (B, 2B)
    targets = torch.arange(q.shape[0], device=q.device)
    return F.cross_entropy(scores.float(), targets)


def alignment_loss(x: Tensor, x_mixed: Tensor) -> Tensor:
    """``L_c``: cross-entropy of ``x · x_mixedᵀ`` with row ``i``'s target at column ``i`` — ``L_ir`` with the
    code-mixed copies as the only "passages" (the paper's two losses share one form)."""
    _check_pair("x", x, "x_mixed", x_mixed)
    return ir_loss(x, x_mixed)


def contrastivemix_loss(
    q: Tensor,
    p_pos: Tensor,
    p_neg: Tensor | None,
    q_mixed: Tensor | None,
    *,
    weight: float,
    p_mixed: Tensor | None = None,
    n_mixed: Tensor | None = None,
) -> dict[str, Tensor]:
    """The ContrastiveMix loss of one (global) batch; see the module docstring.

    Args:
        q: English query embeddings, (B, H).
        p_pos, p_neg: positive and hard-negative passage embeddings, (B, H) each
            (``p_neg`` may be ``None``).
        q_mixed: the code-mixed queries' embeddings from the query encoder, (B, H);
            ``None`` for the passage-only ablation.
        weight: ``w``, the weight of the alignment term.
        p_mixed: the code-mixed positive passages' embeddings from the passage
            encoder, (B, H), for the passage-side ablations of Table 3.
        n_mixed: the code-mixed hard negatives' embeddings, (B, H): with it every passage
            is aligned with its copy (the released code); without it the positives only.

    Returns:
        ``{"ir", "align", "total"}`` (scalar tensors): ``total = ir + weight * align``,
        where ``align`` is the query term, the passage term, or their sum.
    """
    out_ir = ir_loss(q, p_pos, p_neg)
    align = out_ir.new_zeros(())
    if q_mixed is None and p_mixed is None:
        raise ValueError("contrastivemix_loss needs q_mixed, p_mixed or both (use ir_loss for plain mDPR)")
    if q_mixed is not None:
        align = align + alignment_loss(q, q_mixed)
    if n_mixed is not None and (p_mixed is None or p_neg is None):
        raise ValueError("n_mixed needs p_mixed and p_neg (every passage aligned with its code-mixed copy)")
    if p_mixed is not None and n_mixed is not None:
        align = align + alignment_loss(torch.cat([p_pos, p_neg]), torch.cat([p_mixed, n_mixed]))  # (2B, 2B) scores
    elif p_mixed is not None:
        align = align + alignment_loss(p_pos, p_mixed)
    return {"ir": out_ir, "align": align, "total": out_ir + weight * align}
