"""ConCSE: cross contrastive + cross triplet + align-negative loss (ConCSE §4), and the SimCSE baseline.

The math lives in :func:`concse_loss`, a pure function of six batches of pooled
sentence embeddings; :class:`ConCSELoss` is the thin sentence-transformers wrapper
that embeds the six text columns and calls it.  The SimCSE baseline is
sentence-transformers' own ``MultipleNegativesRankingLoss`` (see :func:`simcse_loss`).

Notation (a batch of ``B`` Koglish-NLI rows, embeddings of width ``H``)::

    e0, e1, e2   English premise, entailment, contradiction          (B, H) each
    c0, c1, c2   their code-switched copies                          (B, H) each
    S(x, y)      B×B matrix, S_ij = cos(x_i, y_j) / τ

Cross contrastive loss (Eq. 4–6).  For a combination with positive block ``P``
and negative block ``N`` the logits of row ``i`` are ``[P_i· | N_i·]`` (2B of
them) and the target is column ``i``::

    L_H(P, N) = mean_i  −log  exp(P_ii) / Σ_j (exp(P_ij) + exp(N_ij))
    L_con     = Σ_{k=1..6} L_H(P_k, N_k)

    k   P          N              (anchor, positive, negative)
    1   S(e0, e1)  S(e0, e2)      (e0, e1, e2)
    2   S(c0, c1)  S(c0, c2)      (c0, c1, c2)
    3   S(e0, e1)  S(e0, c2)      (e0, e1, c2)
    4   S(c0, c1)  S(c0, e2)      (c0, c1, e2)
    5   S(e0, c0)  S(c0, e2) *    (e0, c0, e2)
    6   S(e1, c1)  S(e1, c2)      (e1, c1, c2)

    * the authors' released code anchors H5's negative block on c0; the paper's
      Eq. 5 read literally gives S(e0, e2) (``variant="paper"``).

Cross triplet loss (Eq. 7–8), over the same six (anchor, positive, negative)
triplets, on the raw (unnormalised) embeddings::

    L_tri = Σ_k mean_i max(0, d(a_i, p_i) − d(a_i, n_i) + α)
    d(x, y) = ‖x − y‖₂          (released code)
    d(x, y) = ‖x − y‖₂²         (``variant="paper"``, Eq. 7 literally)

Align-negative loss (Eq. 9): each English contradiction must pick out its own
code-switched copy among the batch's code-switched contradictions::

    L_align = mean_i −log  exp(S(e2, c2)_ii) / Σ_j exp(S(e2, c2)_ij)

Total (Eq. 1)::

    L = L_con + λ · L_tri + L_align

The paper writes sums over the batch; like the released code (and SimCSE) every
term here is a batch *mean*, so the learning rate does not scale with the batch
size.  The paper's τ = 0.05, α = 1.0, λ = 1.2 (Tables 5–7) are the ``concse`` section's defaults
(:class:`codeswitch.concse.config.Config`, which also checks their ranges); the functions here take
them as required arguments, from the run spec.

References: Jeon et al., "ConCSE: Unified Contrastive Learning and Augmentation
for Code-Switched Embeddings" (ICPR 2024); Gao et al., "SimCSE" (EMNLP 2021).

Example::

    >>> import torch
    >>> e0, e1, e2, c0, c1, c2 = torch.randn(6, 4, 8).unbind(0)
    >>> out = concse_loss(e0, e1, e2, c0, c1, c2, temperature=0.05, margin=1.0, triplet_weight=1.2,
    ...                   terms=TERMS, variant="official")
    >>> sorted(out)
    ['align', 'contrastive', 'total', 'triplet']
"""

from __future__ import annotations

from typing import Any, Iterable, Literal, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..common.fastpath import embed_length_buckets, embed_packed

__all__ = [
    "TERMS",
    "VARIANTS",
    "CONTRASTIVE_COMBINATIONS",
    "TRIPLETS",
    "concse_loss",
    "ConCSELoss",
    "simcse_loss",
    "CONCSE_COLUMNS",
    "SIMCSE_COLUMNS",
]

TERMS = ("contrastive", "triplet", "align")
VARIANTS = ("official", "paper")

# Index of each embedding block in the stacked (6B, H) matrix.
E0, E1, E2, C0, C1, C2 = range(6)
_NAMES = ("e0", "e1", "e2", "c0", "c1", "c2")

# (positive block, negative block) of H1..H6, each block a (row, column) pair of
# embedding indices: S(x, y) is block (x, y).  "official" = the released code.
CONTRASTIVE_COMBINATIONS: dict[str, tuple[tuple[tuple[int, int], tuple[int, int]], ...]] = {
    "official": (
        ((E0, E1), (E0, E2)),  # H1
        ((C0, C1), (C0, C2)),  # H2
        ((E0, E1), (E0, C2)),  # H3
        ((C0, C1), (C0, E2)),  # H4
        ((E0, C0), (C0, E2)),  # H5: negatives anchored on c0, as the released code does
        ((E1, C1), (E1, C2)),  # H6
    ),
    "paper": (
        ((E0, E1), (E0, E2)),
        ((C0, C1), (C0, C2)),
        ((E0, E1), (E0, C2)),
        ((C0, C1), (C0, E2)),
        ((E0, C0), (E0, E2)),  # H5 as Eq. 5 reads: anchor e0 on both sides
        ((E1, C1), (E1, C2)),
    ),
}

# (anchor, positive, negative) of the six cross triplets (Eq. 4 / 8); both variants.
TRIPLETS: tuple[tuple[int, int, int], ...] = (
    (E0, E1, E2),
    (C0, C1, C2),
    (E0, E1, C2),
    (C0, C1, E2),
    (E0, C0, E2),
    (E1, C1, C2),
)

# What one more forward costs, in padded token positions, when a step's sentences are
# cut into length buckets (bucket_features): a step is split only where that saves
# more padding than this.  A BERT-base forward on a GPU has a few milliseconds of
# launch and framework overhead, about the time of 2-3k tokens.  Steps smaller than
# this (the smoke profile's: 96 sentences × ≤ 16 tokens) are never split.

# The dataset columns the wrapper expects, in this order (e0, e1, e2, c0, c1, c2).
CONCSE_COLUMNS = ("premise", "entailment", "contradiction", "cs_premise", "cs_entailment", "cs_contradiction")
# SimCSE on Koglish trains on the code-switched triplets only (§5.2).
SIMCSE_COLUMNS = ("cs_premise", "cs_entailment", "cs_contradiction")
# Koglish-NLI's released column -> the loss's column (in CONCSE_COLUMNS order).
NLI_TO_COLUMNS = {
    "sentence1": "premise",
    "sentence2": "entailment",
    "hard_neg": "contradiction",
    "cross1": "cs_premise",
    "cross2": "cs_entailment",
    "cross_hard_neg": "cs_contradiction",
}
assert tuple(NLI_TO_COLUMNS.values()) == CONCSE_COLUMNS


def _check(embeddings: Sequence[Tensor], terms: Iterable[str], variant: str | None) -> tuple[str, ...]:
    """The terms (a tuple), after checking the names and the shapes; τ, α, λ are checked once, in the Config."""
    terms = tuple(terms)
    unknown = [t for t in terms if t not in TERMS]
    if unknown:
        raise ValueError(f"concse_loss: unknown term(s) {unknown}; choose from {list(TERMS)}")
    if variant not in VARIANTS and {"contrastive", "triplet"} & set(terms):  # the align term alone reads no variant
        raise ValueError(f"concse_loss: variant must be one of {list(VARIANTS)}, got {variant!r}")
    shape = embeddings[0].shape
    for name, e in zip(_NAMES, embeddings):
        if e.ndim != 2 or e.shape != shape:
            raise ValueError(f"concse_loss: {name} has shape {tuple(e.shape)}; all six inputs must be (B, H) = {tuple(shape)}")
    return terms


def concse_loss(
    e0: Tensor,
    e1: Tensor,
    e2: Tensor,
    c0: Tensor,
    c1: Tensor,
    c2: Tensor,
    *,
    temperature: float | None,
    margin: float | None,
    triplet_weight: float | None,
    terms: Iterable[str],
    variant: Literal["official", "paper"] | None,
) -> dict[str, Tensor]:
    """The ConCSE loss of one batch (see the module docstring for the equations).

    Args:
        e0, e1, e2: English premise / entailment / contradiction embeddings, (B, H) each.
        c0, c1, c2: their code-switched copies, (B, H) each.
        temperature: τ of the cosine similarities (Table 5).
        margin: α of the triplet hinge (Table 7).
        triplet_weight: λ, the weight of the triplet term in the total (Table 6).
        terms: which of ``"contrastive"``, ``"triplet"``, ``"align"`` enter the total
            (Table 4's variants); a term left out is returned as 0.
        variant: ``"official"`` (the released code) or ``"paper"`` (H5 negatives
            S(e0, e2) and squared distances in the triplet, as the equations read).

        A setting no term of ``terms`` reads may be ``None`` (as in a run spec: τ without the
        contrastive and align terms, α and λ without the triplet term).

    Returns:
        ``{"total", "contrastive", "triplet", "align"}``, scalar tensors.  ``triplet``
        is unweighted; ``total = contrastive + triplet_weight * triplet + align``.
    """
    embeddings = (e0, e1, e2, c0, c1, c2)
    terms = _check(embeddings, terms, variant)
    # Mixed precision: the encoder may run in bf16/fp16, the loss never does.  Logits
    # up to 1/τ = 20 in bf16 (8 bits of mantissa) would be off by ~0.1; so half inputs
    # are upcast and autocast is switched off for the similarity matmul below.
    embeddings = tuple(e.float() if e.dtype in (torch.float16, torch.bfloat16) else e for e in embeddings)
    B = embeddings[0].shape[0]
    zero = embeddings[0].new_zeros(())
    out = {"contrastive": zero, "triplet": zero, "align": zero}
    with torch.autocast(device_type=e0.device.type, enabled=False):
        if "contrastive" in terms or "align" in terms:
            # One similarity matrix over all 6B embeddings; every S(x, y) is a B×B block of it.
            x = F.normalize(torch.cat(embeddings, dim=0), dim=-1)  # (6B, H)
            sim = (x @ x.T) / temperature  # (6B, 6B)
            blocks = sim.view(6, B, 6, B)  # blocks[x, :, y, :] = S(x, y), (B, B)
            out |= _similarity_terms(blocks, terms, variant, zero)
        if "triplet" in terms:
            out["triplet"] = _triplet_term(torch.stack(embeddings, dim=0), margin, variant, zero)  # (6, B, H), raw embeddings
        weighted = triplet_weight * out["triplet"] if "triplet" in terms else out["triplet"]  # λ: None where unused
        total = out["contrastive"] + weighted + out["align"]
    return {"total": total, "contrastive": out["contrastive"], "triplet": out["triplet"], "align": out["align"]}


def _similarity_terms(blocks: Tensor, terms: tuple[str, ...], variant: str | None, zero: Tensor) -> dict[str, Tensor]:
    """L_con (Eq. 4–6) and L_align (Eq. 9) of ``terms`` from the blocks ``S(x, y) = blocks[x, :, y, :]``, (B, B) each."""
    B = blocks.shape[1]
    targets = torch.arange(B, device=blocks.device)
    out = {}

    def S(a: int, b: int) -> Tensor:
        return blocks[a, :, b, :]  # (B, B)

    if "contrastive" in terms:
        total = zero
        for (pa, pb), (na, nb) in CONTRASTIVE_COMBINATIONS[variant]:
            logits = torch.cat([S(pa, pb), S(na, nb)], dim=1)  # (B, 2B); row i's positive is column i
            total = total + F.cross_entropy(logits, targets)
        out["contrastive"] = total
    if "align" in terms:
        out["align"] = F.cross_entropy(S(E2, C2), targets)  # (B, B)
    return out


def _triplet_term(stacked: Tensor, margin: float, variant: str, zero: Tensor) -> Tensor:
    """L_tri (Eq. 7–8) over the six cross triplets of ``stacked``, (6, B, H)."""

    def dist(a: int, b: int) -> Tensor:
        diff = stacked[a] - stacked[b]  # (B, H)
        if variant == "paper":
            return diff.square().sum(dim=-1)  # (B,) squared distance, Eq. 7
        return torch.linalg.vector_norm(diff, dim=-1)  # (B,)

    total = zero
    for a, p, n in TRIPLETS:
        total = total + F.relu(dist(a, p) - dist(a, n) + margin).mean()
    return total


# --------------------------------------------------------------------------- one step, few forwards


class ConCSELoss(nn.Module):
    """sentence-transformers loss over the six Koglish-NLI text columns (see :func:`concse_loss`).

    Inputs:
        +------------------------------------------------------------------------------+--------+
        | Texts (in this column order)                                                 | Labels |
        +==============================================================================+========+
        | (premise, entailment, contradiction, cs_premise, cs_entailment,              | none   |
        | cs_contradiction)                                                            |        |
        +------------------------------------------------------------------------------+--------+

    ``forward`` returns the weighted terms as a dict (``contrastive``,
    ``triplet`` = λ·L_tri, ``align``); the trainer sums them into the total and logs
    each.  Terms not in ``terms`` are left out of the dict.

    All 6B sentences of a step go through the encoder together: either the six
    column feature dicts of the sentence-transformers collator (merged into one
    forward), or the length buckets of :func:`bucket_features` (one forward per
    bucket, built by the trainer's collator; recognised by their ``"rows"`` key).
    With ``gather_across_devices`` the six blocks are gathered from every process
    (see :mod:`codeswitch.core.distributed`), so the loss of W devices is the loss of
    one device at the same global batch.

    Example::

        model = build_encoder("tiny-bert")
        loss = ConCSELoss(model, temperature=0.05, margin=1.0, triplet_weight=1.2, terms=TERMS, variant="official")
        trainer = SentenceTransformerTrainer(model=model, train_dataset=ds, loss=loss)
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        temperature: float | None,
        margin: float | None,
        triplet_weight: float | None,
        terms: Iterable[str],
        variant: Literal["official", "paper"] | None,
        gather_across_devices: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        self.gather_across_devices = bool(gather_across_devices)
        # the run spec's settings as they are; None: no term of ``terms`` reads it
        self.temperature, self.margin, self.triplet_weight = (None if v is None else float(v) for v in (temperature, margin, triplet_weight))
        self.terms = tuple(terms)
        self.variant = variant
        if not self.terms:
            raise ValueError("ConCSELoss: at least one term is needed")
        _check([torch.zeros(1, 1)] * 6, self.terms, variant)

    def forward(self, sentence_features: Iterable[dict[str, Tensor]], labels: Tensor | None = None) -> dict[str, Tensor]:
        features = list(sentence_features)
        if features and "starts" in features[0]:  # one packed, fixed-shape forward (fastpath.pack_features)
            embeddings = embed_packed(self.model, features[0], n_columns=len(CONCSE_COLUMNS))  # 6 × (B, H)
        elif features and "rows" in features[0]:  # length buckets from the trainer's collator
            embeddings = embed_length_buckets(self.model, features, n_columns=len(CONCSE_COLUMNS))  # 6 × (B, H)
        else:
            from sentence_transformers.base.losses.merged_forward import embed_columns

            # All six columns are sentences of one kind: one merged forward over 6B rows.
            embeddings = embed_columns(self.model, features, separate_first=False)  # 6 × (B, H)
        if len(embeddings) != 6:
            raise ValueError(f"ConCSELoss expects the six columns {CONCSE_COLUMNS}, got {len(embeddings)} column(s)")
        if self.gather_across_devices:
            from ..core.distributed import gather_with_grad

            embeddings = [gather_with_grad(e) for e in embeddings]  # 6 × (W·B, H)
        out = concse_loss(
            *embeddings,
            temperature=self.temperature,
            margin=self.margin,
            triplet_weight=self.triplet_weight,
            terms=self.terms,
            variant=self.variant,
        )
        weights = {"contrastive": 1.0, "triplet": self.triplet_weight, "align": 1.0}
        terms = {t: weights[t] * out[t] for t in TERMS if t in self.terms}
        if self.gather_across_devices:
            from ..core.distributed import sum_local_gradients

            terms = {t: sum_local_gradients(v) for t, v in terms.items()}  # DDP averages; see codeswitch.core.distributed
        return terms

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "margin": self.margin,
            "triplet_weight": self.triplet_weight,
            "terms": list(self.terms),
            "variant": self.variant,
            "gather_across_devices": self.gather_across_devices,
        }

    @property
    def citation(self) -> str:
        return (
            "@inproceedings{jeon2024concse, title={ConCSE: Unified Contrastive Learning and Augmentation "
            "for Code-Switched Embeddings}, author={Jeon, Jangyeong and others}, booktitle={ICPR}, year={2024}}"
        )


def simcse_loss(model: nn.Module, *, temperature: float, gather_across_devices: bool = False) -> nn.Module:
    """Supervised SimCSE: (anchor, positive, hard negative) with in-batch negatives.

    ``L = mean_i −log exp(S(a, p)_ii) / Σ_j (exp(S(a, p)_ij) + exp(S(a, n)_ij))`` —
    exactly ConCSE's H1 term on one triplet; this *is* sentence-transformers'
    ``MultipleNegativesRankingLoss`` with cosine similarity and ``scale = 1/τ``
    (``tests/test_concse_loss.py`` checks the equality).  ``gather_across_devices``:
    in-batch negatives from every process (multi-GPU), as sentence-transformers implements it.
    """
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.util import cos_sim

    class SimCSELoss(MultipleNegativesRankingLoss):
        """MultipleNegativesRankingLoss that also reads a packed step (``fastpath.pack_features``: one forward)."""

        def forward(self, sentence_features, labels=None):
            features = list(sentence_features)
            if features and "starts" in features[0]:
                embeddings = embed_packed(self.model, features[0], n_columns=len(SIMCSE_COLUMNS))  # 3 × (B, H)
                return self.compute_loss_from_embeddings(embeddings, labels)
            return super().forward(features, labels)

    return SimCSELoss(
        model, scale=1.0 / temperature, similarity_fct=cos_sim, gather_across_devices=gather_across_devices
    )
