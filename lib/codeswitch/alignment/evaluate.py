"""Reading an encoder without training it (Fazili & Jyothi 2022, §2.2 and Figure 3.1): awesome-align's word
alignments (:func:`extract_alignments`, where a parallel corpus has no alignment file), the contextual word vectors
of Figure 3.1 (:func:`embed_words`), and the held-out retrieval an alignment run is scored by before and after
training (:func:`heldout_retrieval`).  All run under ``torch.no_grad``.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .data import ParallelData, words
from .loss import gather_aligned_words, pool_subwords
from .train import Aligner, encode_words

__all__ = ["extract_alignments", "embed_words", "heldout_retrieval"]


# --------------------------------------------------------------------------- awesome-align extraction
@torch.no_grad()
def extract_alignments(
    encoder: nn.Module,
    tokenizer,
    pairs: Sequence[tuple[str, str]],
    *,
    layer: int,
    softmax_threshold: float,
    prob_threshold: float | None,
    max_length: int,
    batch_size: int = 32,
    device: torch.device | str = "cpu",
) -> list[list[tuple[int, int]]]:
    """Word alignments from an encoder's own sub-word similarities (awesome-align, Dou & Neubig 2021).

    For each pair, with ``X`` (n, H) and ``Y`` (m, H) the sub-word vectors of layer
    ``layer`` (``hidden_states[layer]``; mBERT: 8) without [CLS]/[SEP]::

        S     = X Yᵀ                                   (n, m)
        P_xy  = softmax(S, over j),  P_yx = softmax(S, over i)
        A     = (P_xy > t) ∧ (P_yx > t)                 t = 1e-3 (awesome-align's default)

    A sub-word pair in ``A`` aligns the two words it belongs to.  With
    ``prob_threshold`` (the paper filters at 0.9) a word pair is kept only when its
    probability passes it; the probability is awesome-align's heuristic, the
    harmonic mean of ``softmax(S/√m, over j)`` and ``softmax(S/√n, over i)``, maximised
    over the word pair's sub-word pairs.

    Returns one sorted ``[(i, j), ...]`` list per pair (0-based word indices).
    """
    device = torch.device(device)
    encoder.to(device).eval()
    out: list[list[tuple[int, int]]] = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        sides = []
        for k in (0, 1):
            b = encode_words(tokenizer, [words(p[k]) for p in chunk], max_length).to(device)
            hs = encoder(input_ids=b.input_ids, attention_mask=b.attention_mask, output_hidden_states=True).hidden_states
            if not 0 <= layer < len(hs):
                raise ValueError(f"align layer {layer} does not exist (the encoder has hidden states 0..{len(hs) - 1})")
            sides.append((hs[layer], b.word_index))
        (hx, wx), (hy, wy) = sides
        for i in range(len(chunk)):
            mx, my = wx[i] >= 0, wy[i] >= 0  # sub-words that belong to a word (no [CLS]/[SEP]/padding)
            X, Y = hx[i][mx].float(), hy[i][my].float()  # (n, H), (m, H)
            bx, by = wx[i][mx], wy[i][my]  # (n,), (m,) word of each sub-word
            if X.shape[0] == 0 or Y.shape[0] == 0:
                out.append([])
                continue
            S = X @ Y.T  # (n, H) @ (H, m) -> (n, m)
            A = (S.softmax(-1) > softmax_threshold) & (S.softmax(0) > softmax_threshold)  # (n, m)
            if prob_threshold is not None:
                n, m = S.shape
                a, b = (S / math.sqrt(m)).softmax(-1), (S / math.sqrt(n)).softmax(0)
                prob = 2 * a * b / (a + b + 1e-9)  # (n, m)
            best: dict[tuple[int, int], float] = {}
            word_x, word_y = bx.tolist(), by.tolist()  # one host read per sentence, not one per aligned pair
            probs = prob[A].tolist() if prob_threshold is not None else None  # row-major, the order of A.nonzero()
            for k, (si, sj) in enumerate(A.nonzero().tolist()):
                key = (word_x[si], word_y[sj])
                p = probs[k] if probs is not None else 1.0
                best[key] = max(best.get(key, 0.0), p)
            keep = [k for k, p in best.items() if prob_threshold is None or p >= prob_threshold]
            out.append(sorted(keep))
    return out


# --------------------------------------------------------------------------- word vectors (Figure 3.1)
@torch.no_grad()
def embed_words(
    aligner: Aligner,
    tokenizer,
    sentences: Sequence[str],
    targets: Sequence[int],
    *,
    batch_size: int = 32,
    max_length: int = 128,
    device: torch.device | str = "cpu",
) -> Tensor:
    """The contextual vector (mean of sub-words, final output) of word ``targets[k]`` of ``sentences[k]``: (N, H)."""
    device = torch.device(device)
    aligner.to(device).eval()
    rows = []
    for start in range(0, len(sentences), batch_size):
        sents = [words(s) for s in sentences[start : start + batch_size]]
        b = encode_words(tokenizer, sents, max_length).to(device)
        tokens, _ = aligner(b.input_ids, b.attention_mask)  # (B, T, H)
        vecs, present = pool_subwords(tokens, b.word_index, b.n_words)  # (B, W, H)
        for i, t in enumerate(targets[start : start + batch_size]):
            if not bool(present[i, t]):
                raise ValueError(f"word {t} of {sentences[start + i]!r} was truncated away (max_length {max_length})")
            rows.append(vecs[i, t])
    return torch.stack(rows).float().cpu()


@torch.no_grad()
def heldout_retrieval(aligner: Aligner, tokenizer, data: ParallelData, *, max_length: int, batch_size: int = 64,
                      device: torch.device | str = "cpu") -> dict[str, float | int]:
    """How well ``aligner`` aligns held-out parallel pairs: the alignment's own evaluation (higher is better).

    * ``sentence_p1``: share of English sentences whose nearest Hindi sentence (cosine of
      the sentence vectors, Lc's ``f(x)``) is their translation (a duplicate sentence counts
      as its own translation);
    * ``word_p1``: share of aligned word pairs ``(m, n)`` whose English word's nearest
      Hindi word (cosine of the mean-pooled sub-word vectors, Lm's ``f(x)_m``), among every
      aligned Hindi word of ``data``, is the same word type as ``n`` (needs alignments;
      ``nan`` without them);
    * ``word_pairs``: how many aligned word pairs ``word_p1`` scored.  ``0`` makes ``word_p1`` undefined (``nan``): the
      data has no alignments, or none of its links survived (paper-ci: 8 held-out pairs whose links, extracted from a
      random stand-in encoder, all fall below the paper's 0.9 probability threshold).
    """
    device = torch.device(device)
    aligner.to(device).eval()
    en_s, hi_s, en_w, hi_w, en_labels, hi_labels = [], [], [], [], [], []
    for start in range(0, len(data), batch_size):
        chunk = data.pairs[start : start + batch_size]
        sides = []
        for k in (0, 1):
            sents = [words(p[k]) for p in chunk]
            b = encode_words(tokenizer, sents, max_length).to(device)
            tokens, sentence = aligner(b.input_ids, b.attention_mask)  # (B, T, H), (B, H)
            vecs, present = pool_subwords(tokens, b.word_index, b.n_words)  # (B, W, H)
            sides.append((sents, sentence, vecs, present))
        (sx, ex, vx, px), (sy, ey, vy, py) = sides
        en_s.append(ex.float().cpu())
        hi_s.append(ey.float().cpu())
        if data.alignments is not None:
            al = data.alignments[start : start + batch_size]
            xs, ys = gather_aligned_words(vx, px, vy, py, al)  # (P, H) each
            en_w.append(xs.float().cpu())
            hi_w.append(ys.float().cpu())
            xp, yp = px.tolist(), py.tolist()
            for i, links in enumerate(al):  # the same filter as gather_aligned_words, to label its rows
                for m, n in links:
                    if m < vx.shape[1] and n < vy.shape[1] and xp[i][m] and yp[i][n]:
                        en_labels.append(sx[i][m])
                        hi_labels.append(sy[i][n])

    def p_at_1(a: Tensor, b: Tensor, gold: list[str], candidates: list[str]) -> float:
        sim = F.normalize(a, dim=-1) @ F.normalize(b, dim=-1).T  # (N, M)
        best = sim.argmax(dim=1).tolist()
        return float(np.mean([candidates[j] == g for j, g in zip(best, gold)]))

    hindi = [p[1] for p in data.pairs]
    out = {"sentence_p1": p_at_1(torch.cat(en_s), torch.cat(hi_s), hindi, hindi)}
    out["word_p1"] = p_at_1(torch.cat(en_w), torch.cat(hi_w), hi_labels, hi_labels) if en_labels else float("nan")
    out["word_pairs"] = len(en_labels)
    return out
