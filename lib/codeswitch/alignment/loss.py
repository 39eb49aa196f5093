"""Sentence- and word-level alignment objectives for code-switching (Fazili & Jyothi, COLING 2022, §2).

Two objectives pull a multilingual encoder ``f`` towards an English–Hindi alignment,
each with a regulariser that keeps ``f`` near its frozen starting point ``f0``.
Everything here is a pure function of embeddings, so it is tested on random
tensors without a transformer; :mod:`codeswitch.alignment.train` embeds the text.

Notation (a batch of ``B`` parallel pairs ``(x_i, y_i)``, embeddings of width ``H``)::

    x, y            f(x_i), f(y_i): the [CLS] vectors of the English / Hindi sides   (B, H) each
    x0, y0          f0(x_i), f0(y_i): the same from the frozen initial model         (B, H) each
    s(a, b)         cos(a, b) / τ

**Sentence level, Lc** (Eq. 1, the "weak" contrastive variant of Wu & Dredze 2020:
each sentence's negatives are the *other language's* non-parallel sentences)::

    ℓ(x→y)_i = −log  e^{s(x_i, y_i)} / ( e^{s(x_i, y_i)} + Σ_{k≠i} e^{s(x_i, y_k)} )
    ℓ(y→x)_i = −log  e^{s(x_i, y_i)} / ( e^{s(x_i, y_i)} + Σ_{k≠i} e^{s(x_k, y_i)} )
    contrastive = 1/(2B) Σ_i [ ℓ(x→y)_i + ℓ(y→x)_i ]

i.e. a cross-entropy over the rows and over the columns of the (B, B) matrix
``s(x, y)`` with the diagonal as target.  This is what the authors' released code
computes (its ``NT_Xent`` masks same-language pairs and keeps the positive among
the logits).  Eq. 1 printed in the paper leaves the positive *out* of the
denominator (``variant="paper"``); that form is unbounded below and is kept only
as a named option.

**Regulariser** (Eq. 2, normalised by the 2B sentences as §2.1 step 4 says)::

    reg = 1/(2B) Σ_i [ (1 − cos(x_i, x0_i)) + (1 − cos(y_i, y0_i)) ]
    total = contrastive + η · reg

**Word level, Lm** (§2.2).  For aligned word pairs ``(m, n)`` of pair ``i`` (from a
Pharaoh ``i-j`` file or extracted by awesome-align), a word's vector is the mean of
its sub-word vectors (:func:`pool_subwords`) and, with ``P`` aligned pairs in the
batch::

    alignment = 1/P Σ_{(i,m,n)} d(f(x_i)_m, f(y_i)_n)
    d = 1 − cos(a, b)       (distance="cosine", the default)
    d = ‖a − b‖₂²           (distance="l2": Wu & Dredze's "L2 Align", after Cao et al. 2020)
    total     = alignment + η · reg

Which distance?  The paper's text supports both readings and settles neither.  Lm
is printed with ``S``, "a cosine similarity function" (§2.1 step 2), summed over
the aligned pairs (as a *similarity*; minimising ``1 − cos`` is the distance the
text describes: "a word-level alignment objective that is based on minimizing
distances between aligned word embeddings", §2); §4 says "the L2 alignment
technique in Wu and Dredze (2020) is the same as our word-level multilingual
alignment objective except for regularizing model parameters rather than the
model output embeddings", and that technique minimises the squared Euclidean
distance.  The default follows the equation's ``S`` (cosine); ``distance="l2"``
(profile ``alignment.word_distance: l2``) follows §4.  The released code never
implemented Lm.  ``reg`` is Eq. 2 again: by
default on the [CLS] vectors of the 2B sentences (``f(x_i)`` in Eq. 2 is the [CLS]
embedding); :func:`word_alignment_loss` takes whatever anchors the caller chooses.

Hyperparameters (released defaults): all layers trained, τ = 0.001, η = 0.1;
linear head on a frozen encoder, τ = 0.01, η = 100.

References: Fazili & Jyothi, "Aligning Multilingual Embeddings for Improved
Code-switched Natural Language Understanding" (COLING 2022); Wu & Dredze, "Do
Explicit Alignments Robustly Improve Multilingual Encoders?" (EMNLP 2020);
Dou & Neubig, "Word Alignment by Fine-tuning Embeddings on Parallel Corpora" (EACL 2021).

Example::

    >>> import torch
    >>> x, y = torch.randn(2, 4, 8).unbind(0)
    >>> out = sentence_alignment_loss(x, y, x.clone(), y.clone(), temperature=0.1, reg_weight=1.0)
    >>> sorted(out), float(out["reg"]) < 1e-6
    (['contrastive', 'reg', 'total'], True)
"""

from __future__ import annotations

from typing import Literal, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = [
    "CONTRASTIVE_VARIANTS",
    "WORD_DISTANCES",
    "sentence_alignment_loss",
    "word_alignment_loss",
    "alignment_regulariser",
    "pool_subwords",
    "gather_aligned_words",
]

CONTRASTIVE_VARIANTS = ("released", "paper")
WORD_DISTANCES = ("cosine", "l2")


def alignment_regulariser(now: Tensor, frozen: Tensor) -> Tensor:
    """Eq. 2 normalised per vector: mean over rows of ``1 − cos(now_r, frozen_r)``.

    ``now`` and ``frozen`` are (N, H); ``frozen`` carries no gradient.
    """
    if now.shape != frozen.shape:
        raise ValueError(f"regulariser: shapes differ, {tuple(now.shape)} vs {tuple(frozen.shape)}")
    return (1.0 - F.cosine_similarity(now, frozen.detach(), dim=-1)).mean()


def sentence_alignment_loss(
    x: Tensor,
    y: Tensor,
    x_frozen: Tensor,
    y_frozen: Tensor,
    *,
    temperature: float,
    reg_weight: float,
    variant: Literal["released", "paper"] = "released",
) -> dict[str, Tensor]:
    """The sentence-level contrastive alignment loss Lc (see the module docstring).

    Args:
        x, y: (B, H) sentence embeddings of the two sides of B parallel pairs (row i of
            ``x`` is parallel to row i of ``y``).
        x_frozen, y_frozen: (B, H) the same sentences embedded by the frozen initial model f0.
        temperature: τ; similarities are ``cos / τ``.
        reg_weight: η, the weight of the regulariser.
        variant: ``"released"`` (the positive is in the denominator, as the authors'
            code and every InfoNCE loss) or ``"paper"`` (Eq. 1 literally, without it).

    Returns:
        ``{"contrastive", "reg", "total"}``, scalar tensors.
    """
    if x.ndim != 2 or x.shape != y.shape:
        raise ValueError(f"x and y must both be (B, H); got {tuple(x.shape)} and {tuple(y.shape)}")
    if variant not in CONTRASTIVE_VARIANTS:
        raise ValueError(f"variant must be one of {CONTRASTIVE_VARIANTS}, got {variant!r}")
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    B = x.shape[0]
    # s[i, k] = cos(x_i, y_k) / τ
    s = F.normalize(x, dim=-1) @ F.normalize(y, dim=-1).T / temperature  # (B, H) @ (H, B) -> (B, B)
    target = torch.arange(B, device=x.device)
    if variant == "released":
        # Rows: x_i against every y_k; columns: y_i against every x_k.  Same-language
        # pairs never enter (the "weak" variant).
        contrastive = 0.5 * (F.cross_entropy(s, target) + F.cross_entropy(s.T, target))
    else:
        eye = torch.eye(B, dtype=torch.bool, device=x.device)
        positives = s.diagonal()  # (B,)
        off = s.masked_fill(eye, float("-inf"))  # (B, B), positives removed from the denominators
        row = torch.logsumexp(off, dim=1) - positives  # −log e^{s_ii} / Σ_{k≠i} e^{s_ik}
        col = torch.logsumexp(off, dim=0) - positives  # −log e^{s_ii} / Σ_{k≠i} e^{s_ki}
        contrastive = 0.5 * (row.mean() + col.mean())
    reg = alignment_regulariser(torch.cat([x, y]), torch.cat([x_frozen, y_frozen]))  # over the 2B sentences
    return {"contrastive": contrastive, "reg": reg, "total": contrastive + reg_weight * reg}


def word_alignment_loss(
    x_words: Tensor,
    y_words: Tensor,
    anchors: Tensor,
    anchors_frozen: Tensor,
    *,
    reg_weight: float,
    distance: Literal["cosine", "l2"] = "cosine",
) -> dict[str, Tensor]:
    """The word-level alignment loss Lm (see the module docstring).

    Args:
        x_words, y_words: (P, H) the vectors of the P aligned word pairs of a batch
            (row p of ``x_words`` is aligned to row p of ``y_words``); see
            :func:`gather_aligned_words`.
        anchors, anchors_frozen: (N, H) the vectors the regulariser ties to f0 (by
            default the 2B sentences' [CLS] vectors) and their frozen counterparts.
        reg_weight: η.
        distance: ``"cosine"`` (mean ``1 − cos``) or ``"l2"`` (mean squared Euclidean
            distance, Wu & Dredze's L2 alignment); see the module docstring.

    Returns:
        ``{"alignment", "reg", "total"}``, scalar tensors.  With no aligned pair
        (P = 0) ``alignment`` is 0, so a batch without alignments only regularises.
    """
    if x_words.shape != y_words.shape or x_words.ndim != 2:
        raise ValueError(f"x_words and y_words must both be (P, H); got {tuple(x_words.shape)} and {tuple(y_words.shape)}")
    if distance not in WORD_DISTANCES:
        raise ValueError(f"distance must be one of {WORD_DISTANCES}, got {distance!r}")
    if x_words.shape[0] == 0:
        alignment = x_words.sum() * 0.0  # keeps the graph (and dtype/device) without a NaN mean
    elif distance == "cosine":
        alignment = (1.0 - F.cosine_similarity(x_words, y_words, dim=-1)).mean()
    else:
        alignment = (x_words - y_words).pow(2).sum(-1).mean()  # (P, H) -> (P,) squared L2 -> mean
    reg = alignment_regulariser(anchors, anchors_frozen)
    return {"alignment": alignment, "reg": reg, "total": alignment + reg_weight * reg}


def pool_subwords(hidden: Tensor, word_index: Tensor, n_words: int | None = None) -> tuple[Tensor, Tensor]:
    """Mean of each word's sub-word vectors.

    Args:
        hidden: (B, T, H) contextual sub-word vectors.
        word_index: (B, T) long; the word each sub-word belongs to, −1 for tokens of
            no word ([CLS], [SEP], padding).  This is the tokenizer's ``word_ids()``.
        n_words: W, the number of word slots (default: the largest index + 1).

    Returns:
        ``(words, present)``: (B, W, H) word vectors and a (B, W) bool mask of the words
        that have at least one sub-word (a word cut off by truncation has none; its
        vector is 0).
    """
    if hidden.shape[:2] != word_index.shape:
        raise ValueError(f"hidden (B, T, H) and word_index (B, T) disagree: {tuple(hidden.shape)} vs {tuple(word_index.shape)}")
    W = int(word_index.max().item()) + 1 if n_words is None else n_words
    W = max(W, 0)
    slots = torch.arange(W, device=hidden.device)
    # member[b, w, t] = 1 when sub-word t of sentence b belongs to word w
    member = (word_index.unsqueeze(1) == slots.view(1, W, 1)).to(hidden.dtype)  # (B, W, T)
    counts = member.sum(-1, keepdim=True)  # (B, W, 1)
    words = (member @ hidden) / counts.clamp(min=1.0)  # (B, W, T) @ (B, T, H) -> (B, W, H)
    return words, counts.squeeze(-1) > 0


def gather_aligned_words(
    x_words: Tensor,
    x_present: Tensor,
    y_words: Tensor,
    y_present: Tensor,
    alignments: Sequence[Sequence[tuple[int, int]]],
) -> tuple[Tensor, Tensor]:
    """Stack the vectors of every aligned pair ``(m, n)`` of every sentence pair ``i``.

    ``x_words``/``y_words`` are (B, Wx, H)/(B, Wy, H) from :func:`pool_subwords`,
    ``x_present``/``y_present`` their masks, ``alignments[i]`` the 0-based word
    pairs of pair ``i``.  Pairs whose word was truncated away (or lies beyond the
    sentence) are skipped.  Returns two (P, H) tensors.
    """
    if len(alignments) != x_words.shape[0]:
        raise ValueError(f"{len(alignments)} alignment lists for a batch of {x_words.shape[0]} pairs")
    rows, ms, ns = [], [], []
    Wx, Wy = x_words.shape[1], y_words.shape[1]
    xp, yp = x_present.tolist(), y_present.tolist()  # one device sync, not one per pair
    for i, pairs in enumerate(alignments):
        for m, n in pairs:
            if m < Wx and n < Wy and xp[i][m] and yp[i][n]:
                rows.append(i)
                ms.append(m)
                ns.append(n)
    idx = torch.tensor(rows, dtype=torch.long, device=x_words.device)
    m_idx = torch.tensor(ms, dtype=torch.long, device=x_words.device)
    n_idx = torch.tensor(ns, dtype=torch.long, device=x_words.device)
    return x_words[idx, m_idx], y_words[idx, n_idx]  # (P, H) each
