"""ConCSE loss against a direct, loop-based reading of the formulas; SimCSE against MultipleNegativesRankingLoss."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from codeswitch.concse.loss import ConCSELoss, concse_loss, simcse_loss

from .helpers import concse_settings

NAMES = ("e0", "e1", "e2", "c0", "c1", "c2")


# --------------------------------------------------------------------------- the reference, one number at a time
def cos(x: list[float], y: list[float]) -> float:
    dot = sum(a * b for a, b in zip(x, y))
    return dot / (math.sqrt(sum(a * a for a in x)) * math.sqrt(sum(b * b for b in y)))


def euclid(x: list[float], y: list[float]) -> float:
    return math.sqrt(sum((a - b) ** 2 for a, b in zip(x, y)))


def info_nce(anchor, positive, negative_anchor, negative, tau) -> float:
    """mean_i −log e^{s(a_i,p_i)} / Σ_j (e^{s(a_i,p_j)} + e^{s(na_i,n_j)}), s = cos/τ."""
    B = len(anchor)
    total = 0.0
    for i in range(B):
        num = math.exp(cos(anchor[i], positive[i]) / tau)
        den = sum(math.exp(cos(anchor[i], positive[j]) / tau) + math.exp(cos(negative_anchor[i], negative[j]) / tau) for j in range(B))
        total += -math.log(num / den)
    return total / B


def reference(emb: dict, *, tau=0.05, margin=1.0, lam=1.2, terms=("contrastive", "triplet", "align"), variant="official") -> dict:
    e0, e1, e2, c0, c1, c2 = (emb[n] for n in NAMES)
    B = len(e0)
    out = {"contrastive": 0.0, "triplet": 0.0, "align": 0.0}
    if "contrastive" in terms:
        h5_neg_anchor = c0 if variant == "official" else e0
        out["contrastive"] = (
            info_nce(e0, e1, e0, e2, tau)  # H1
            + info_nce(c0, c1, c0, c2, tau)  # H2
            + info_nce(e0, e1, e0, c2, tau)  # H3
            + info_nce(c0, c1, c0, e2, tau)  # H4
            + info_nce(e0, c0, h5_neg_anchor, e2, tau)  # H5
            + info_nce(e1, c1, e1, c2, tau)  # H6
        )
    if "triplet" in terms:
        def d(x, y):
            return euclid(x, y) ** 2 if variant == "paper" else euclid(x, y)

        for a, p, n in ((e0, e1, e2), (c0, c1, c2), (e0, e1, c2), (c0, c1, e2), (e0, c0, e2), (e1, c1, c2)):
            out["triplet"] += sum(max(0.0, d(a[i], p[i]) - d(a[i], n[i]) + margin) for i in range(B)) / B
    if "align" in terms:
        total = 0.0
        for i in range(B):
            logits = [cos(e2[i], c2[j]) / tau for j in range(B)]
            total += -(logits[i] - math.log(sum(math.exp(v) for v in logits)))
        out["align"] = total / B
    out["total"] = out["contrastive"] + lam * out["triplet"] + out["align"]
    return out


def random_batch(B=4, H=5, seed=0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {n: torch.randn(B, H, generator=g, dtype=torch.float64) for n in NAMES}


ALL_SUBSETS = [s for r in (1, 2, 3) for s in itertools.combinations(("contrastive", "triplet", "align"), r)]


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("variant", ["official", "paper"])
@pytest.mark.parametrize("terms", ALL_SUBSETS, ids=lambda t: "+".join(t))
def test_matches_loop_reference(terms, variant):
    emb = random_batch()
    kw = dict(temperature=0.1, margin=1.5, triplet_weight=1.4)
    got = concse_loss(*(emb[n] for n in NAMES), terms=terms, variant=variant, **kw)
    want = reference({n: emb[n].tolist() for n in NAMES}, tau=0.1, margin=1.5, lam=1.4, terms=terms, variant=variant)
    for key in ("total", "contrastive", "triplet", "align"):
        assert got[key].item() == pytest.approx(want[key], rel=1e-9, abs=1e-9), key
    for t in ("contrastive", "triplet", "align"):
        if t not in terms:
            assert got[t].item() == 0.0


def test_variants_differ_exactly_where_documented():
    emb = random_batch(seed=3)
    args = [emb[n] for n in NAMES]
    off = concse_loss(*args, **concse_settings(variant="official"))
    pap = concse_loss(*args, **concse_settings(variant="paper"))
    assert off["align"].item() == pytest.approx(pap["align"].item())
    assert off["contrastive"].item() != pytest.approx(pap["contrastive"].item())  # H5 negatives
    assert off["triplet"].item() != pytest.approx(pap["triplet"].item())  # squared distances


def test_hand_computed_two_by_two():
    """B = 2, H = 2, τ = 1: every number below worked out by hand."""
    e = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    # All six blocks equal the same orthonormal pair: every S(x, y) is the identity matrix.
    args = [e] * 6
    out = concse_loss(*args, **concse_settings(temperature=1.0, margin=1.0, triplet_weight=1.2))
    # Each InfoNCE row: logits [1, 0 | 1, 0], target 0 -> −log(e / (2e + 2)).
    h = -math.log(math.e / (2 * math.e + 2))
    assert out["contrastive"].item() == pytest.approx(6 * h)
    # Align: logits [1, 0] -> −log(e / (e + 1)).
    assert out["align"].item() == pytest.approx(-math.log(math.e / (math.e + 1)))
    # Triplet: d(a, p) = d(a, n) = 0 -> hinge = margin = 1 for each of the six triplets.
    assert out["triplet"].item() == pytest.approx(6.0)
    assert out["total"].item() == pytest.approx(6 * h + 1.2 * 6 + out["align"].item())


def test_gradients_finite_at_zero_distance():
    e = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    out = concse_loss(e, e, e, e, e, e, **concse_settings())
    out["total"].backward()
    assert torch.isfinite(e.grad).all()


def test_bad_inputs_are_named():
    e = torch.randn(3, 4)
    with pytest.raises(ValueError, match="c2 has shape"):
        concse_loss(e, e, e, e, e, torch.randn(2, 4), **concse_settings())
    with pytest.raises(ValueError, match="unknown term"):
        concse_loss(e, e, e, e, e, e, **concse_settings(terms=("contrastive", "typo")))
    with pytest.raises(ValueError, match="variant"):
        concse_loss(e, e, e, e, e, e, **concse_settings(variant="nope"))


class _Identity(torch.nn.Module):
    """A stand-in 'model': the feature dict already holds the embedding."""

    def forward(self, features):
        return {"sentence_embedding": features["x"]}


def test_simcse_is_multiple_negatives_ranking_loss():
    """MultipleNegativesRankingLoss(scale=1/τ, cos) == H1 of concse_loss on (a, p, n) == the loop reference."""
    emb = random_batch(B=5, H=6, seed=7)
    a, p, n = emb["c0"], emb["c1"], emb["c2"]
    mnrl = simcse_loss(_Identity(), temperature=0.05)
    assert mnrl.scale == pytest.approx(20.0)
    got = mnrl.compute_loss_from_embeddings([a, p, n], None).item()
    want = info_nce(a.tolist(), p.tolist(), a.tolist(), n.tolist(), 0.05)
    assert got == pytest.approx(want, rel=1e-9)
    # ... and H1 of concse_loss is the same function: with e = c every one of H1..H4 equals it.
    both = concse_loss(a, p, n, a, p, n, **concse_settings(terms=("contrastive",), variant="paper"))["contrastive"].item()
    h5 = info_nce(a.tolist(), a.tolist(), a.tolist(), n.tolist(), 0.05)
    h6 = info_nce(p.tolist(), p.tolist(), p.tolist(), n.tolist(), 0.05)
    assert both == pytest.approx(4 * got + h5 + h6, rel=1e-9)


def test_wrapper_returns_weighted_terms():
    emb = random_batch(B=3, H=4, seed=1)
    loss = ConCSELoss(_Identity(), **concse_settings(temperature=0.05, margin=1.0, triplet_weight=1.2, terms=("contrastive", "triplet")))
    features = [{"x": emb[n]} for n in NAMES]
    out = loss(features, None)  # the stand-in model has no token inputs, so it is called once per column
    assert sorted(out) == ["contrastive", "triplet"]
    ref = concse_loss(*(emb[n] for n in NAMES), **concse_settings(terms=("contrastive", "triplet")))
    assert out["triplet"].item() == pytest.approx(1.2 * ref["triplet"].item())
    assert sum(v for v in out.values()).item() == pytest.approx(ref["total"].item())
