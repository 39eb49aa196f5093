"""The alignment losses against direct loop-based computations and hand-computed examples."""

from __future__ import annotations

import math

import pytest
import torch

from codeswitch.alignment.loss import alignment_regulariser, gather_aligned_words, pool_subwords, sentence_alignment_loss, word_alignment_loss


def _cos(a, b) -> float:
    a, b = a.tolist(), b.tolist()
    dot = sum(p * q for p, q in zip(a, b))
    return dot / (math.sqrt(sum(p * p for p in a)) * math.sqrt(sum(q * q for q in b)))


def _loop_sentence_loss(x, y, x0, y0, tau, eta, variant="released"):
    """Eq. 1–2 written out term by term, as the issue states them."""
    B = x.shape[0]
    s = lambda a, b: _cos(a, b) / tau  # noqa: E731
    total = 0.0
    for i in range(B):
        pos = math.exp(s(x[i], y[i]))
        neg_xy = sum(math.exp(s(x[i], y[k])) for k in range(B) if k != i)
        neg_yx = sum(math.exp(s(x[k], y[i])) for k in range(B) if k != i)
        if variant == "released":
            total += -math.log(pos / (pos + neg_xy)) - math.log(pos / (pos + neg_yx))
        else:
            total += -math.log(pos / neg_xy) - math.log(pos / neg_yx)
    contrastive = total / (2 * B)
    reg = sum((1 - _cos(x[i], x0[i])) + (1 - _cos(y[i], y0[i])) for i in range(B)) / (2 * B)
    return contrastive, reg, contrastive + eta * reg


@pytest.mark.parametrize("variant", ["released", "paper"])
@pytest.mark.parametrize("tau,eta", [(0.5, 0.1), (0.05, 100.0), (1.0, 0.0)])
def test_sentence_alignment_loss_matches_loop(variant, tau, eta):
    g = torch.Generator().manual_seed(0)
    x, y, x0, y0 = torch.randn(4, 5, 7, generator=g, dtype=torch.float64).unbind(0)
    out = sentence_alignment_loss(x, y, x0, y0, temperature=tau, reg_weight=eta, variant=variant)
    c, r, t = _loop_sentence_loss(x, y, x0, y0, tau, eta, variant)
    assert sorted(out) == ["contrastive", "reg", "total"]
    assert float(out["contrastive"]) == pytest.approx(c, rel=1e-9)
    assert float(out["reg"]) == pytest.approx(r, rel=1e-9)
    assert float(out["total"]) == pytest.approx(t, rel=1e-9)


def test_sentence_alignment_loss_hand_example():
    # Orthogonal unit vectors, y = x: cos(x_i, y_i) = 1, cos(x_i, y_k) = 0 (k ≠ i).
    x = torch.eye(3, dtype=torch.float64)
    out = sentence_alignment_loss(x, x.clone(), x.clone(), x.clone(), temperature=1.0, reg_weight=5.0)
    # −log e / (e + 2) in both directions; the frozen copy is identical, so reg = 0.
    assert float(out["contrastive"]) == pytest.approx(-math.log(math.e / (math.e + 2)))
    assert float(out["reg"]) == pytest.approx(0.0, abs=1e-12)
    # Frozen copies pointing the opposite way: 1 − cos = 2 for every sentence.
    out = sentence_alignment_loss(x, x.clone(), -x, -x, temperature=1.0, reg_weight=5.0)
    assert float(out["reg"]) == pytest.approx(2.0)
    assert float(out["total"]) == pytest.approx(-math.log(math.e / (math.e + 2)) + 10.0)


def test_sentence_alignment_loss_uses_only_cross_language_negatives():
    # Making two English sentences identical must not change the loss (no same-language negatives).
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(2, 3, 4, generator=g).unbind(0)
    x2 = x.clone()
    x2[1] = x2[0]
    a = sentence_alignment_loss(x2, y, x2, y, temperature=0.1, reg_weight=0.0)["contrastive"]
    c, _, _ = _loop_sentence_loss(x2.double(), y.double(), x2.double(), y.double(), 0.1, 0.0)
    assert float(a) == pytest.approx(c, rel=1e-5)


def test_sentence_alignment_loss_gradient_flows_and_frozen_is_detached():
    x = torch.randn(3, 4, requires_grad=True)
    y = torch.randn(3, 4, requires_grad=True)
    x0 = torch.randn(3, 4, requires_grad=True)
    sentence_alignment_loss(x, y, x0, torch.randn(3, 4), temperature=0.1, reg_weight=1.0)["total"].backward()
    assert x.grad is not None and y.grad is not None and x0.grad is None


def test_sentence_alignment_loss_rejects_bad_input():
    with pytest.raises(ValueError, match="temperature"):
        sentence_alignment_loss(torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3), temperature=0, reg_weight=1)
    with pytest.raises(ValueError, match="both be"):
        sentence_alignment_loss(torch.randn(2, 3), torch.randn(3, 3), torch.randn(2, 3), torch.randn(3, 3), temperature=1, reg_weight=1)


def test_regulariser_loop():
    g = torch.Generator().manual_seed(2)
    a, b = torch.randn(2, 6, 3, generator=g, dtype=torch.float64).unbind(0)
    expected = sum(1 - _cos(a[i], b[i]) for i in range(6)) / 6
    assert float(alignment_regulariser(a, b)) == pytest.approx(expected)


def test_word_alignment_loss_matches_loop():
    g = torch.Generator().manual_seed(3)
    xw, yw = torch.randn(2, 7, 5, generator=g, dtype=torch.float64).unbind(0)
    anc, anc0 = torch.randn(2, 4, 5, generator=g, dtype=torch.float64).unbind(0)
    out = word_alignment_loss(xw, yw, anc, anc0, reg_weight=0.5)
    align = sum(1 - _cos(xw[p], yw[p]) for p in range(7)) / 7
    reg = sum(1 - _cos(anc[i], anc0[i]) for i in range(4)) / 4
    assert float(out["alignment"]) == pytest.approx(align)
    assert float(out["reg"]) == pytest.approx(reg)
    assert float(out["total"]) == pytest.approx(align + 0.5 * reg)


def test_word_alignment_loss_without_pairs_only_regularises():
    anc = torch.randn(4, 3)
    out = word_alignment_loss(torch.zeros(0, 3), torch.zeros(0, 3), anc, anc.clone(), reg_weight=1.0)
    assert float(out["alignment"]) == 0.0 and not math.isnan(float(out["total"]))


def test_pool_subwords_hand_example():
    # Sentence 0: [CLS] w0 w0 w1 [SEP]   sentence 1: [CLS] w0 [SEP] pad pad
    hidden = torch.tensor(
        [
            [[9.0, 9.0], [1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [9.0, 9.0]],
            [[9.0, 9.0], [7.0, 8.0], [9.0, 9.0], [0.0, 0.0], [0.0, 0.0]],
        ]
    )  # (B=2, T=5, H=2)
    word_index = torch.tensor([[-1, 0, 0, 1, -1], [-1, 0, -1, -1, -1]])
    words, present = pool_subwords(hidden, word_index, n_words=2)
    assert words.shape == (2, 2, 2)
    assert words[0, 0].tolist() == [2.0, 3.0]  # mean of (1, 2) and (3, 4)
    assert words[0, 1].tolist() == [5.0, 6.0]
    assert words[1, 0].tolist() == [7.0, 8.0]
    assert words[1, 1].tolist() == [0.0, 0.0]  # no sub-word: absent, zero vector
    assert present.tolist() == [[True, True], [True, False]]


def test_gather_aligned_words_skips_truncated_words():
    xw = torch.arange(2 * 3 * 1, dtype=torch.float32).view(2, 3, 1)  # (B=2, Wx=3, H=1)
    yw = 100 + torch.arange(2 * 2 * 1, dtype=torch.float32).view(2, 2, 1)  # (B=2, Wy=2, H=1)
    xp = torch.tensor([[True, True, False], [True, True, True]])
    yp = torch.ones(2, 2, dtype=torch.bool)
    xs, ys = gather_aligned_words(xw, xp, yw, yp, [[(0, 1), (2, 0)], [(1, 1), (5, 0)]])
    # (0, 2, 0) is dropped (word 2 truncated), (1, 5, 0) is beyond the sentence.
    assert xs.view(-1).tolist() == [0.0, 4.0]
    assert ys.view(-1).tolist() == [101.0, 103.0]
