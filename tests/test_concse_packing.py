"""The packed, fixed-shape ConCSE step (issue 24, item 2): one forward over ``R × width`` tokens, ``R`` from ≤ 4 budgets.

Checked: the layout (positions per sentence, block-diagonal attention, where each
sentence starts); that the loss and gradients equal the padded reference step's on
the real Koglish sample; and that an epoch on the recorded length distribution
has at most 16 distinct input shapes (the length buckets have far more).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from codeswitch.common.fastpath import first_fit, pack_features, token_budgets

from .helpers import concse_settings, token_columns


def _cols(lengths_per_column, vocab=400, seed=0):
    return token_columns(lengths_per_column, np.random.default_rng(seed), vocab)


def test_pack_layout_by_hand():
    cols = _cols([[3, 5], [2, 4]])  # column-major order: sentences 0, 1 (column 0), 2, 3 (column 1)
    p = pack_features(cols, budgets=(2, 4), width=8)
    # first fit, longest first: 5 → row 0 [0, 5); 4 → row 1 [0, 4); 3 → row 0 [5, 8); 2 → row 1 [4, 6)
    assert p["input_ids"].shape == (2, 8)
    assert p["starts"].tolist() == [5, 0, 12, 8]  # row · 8 + offset, column-major
    assert p["position_ids"].tolist() == [[0, 1, 2, 3, 4, 0, 1, 2], [0, 1, 2, 3, 0, 1, 0, 0]]
    for i, (start, n) in enumerate(zip([5, 0, 12, 8], [3, 5, 2, 4])):
        row, off = divmod(start, 8)
        col, r = divmod(i, 2)
        assert p["input_ids"][row, off : off + n].tolist() == cols[col]["input_ids"][r, :n].tolist()
    m = p["attention_mask"]  # (2, 1, 8, 8)
    assert m.shape == (2, 1, 8, 8) and m.dtype == torch.bool
    assert m[0, 0, 0, :5].all() and not m[0, 0, 0, 5:].any()  # sentence 1 sees itself only
    assert m[1, 0, 7].tolist() == [False] * 7 + [True]  # a padding slot attends to itself only (no empty softmax row)
    assert pack_features(cols, budgets=(3, 4), width=8)["input_ids"].shape == (3, 8)  # rounded up to a budget
    with pytest.raises(ValueError, match="largest budget"):
        pack_features(cols, budgets=(1,), width=8)
    with pytest.raises(ValueError, match="does not fit"):
        pack_features(cols, budgets=(4,), width=4)


def test_budgets_cover_every_step():
    budgets = token_budgets([100, 300, 500, 900], sentences=24, max_length=64, width=256)
    assert len(budgets) <= 4 and budgets[-1] == 6  # 24 sentences, 4 per row at worst
    assert list(budgets) == sorted(budgets)
    with pytest.raises(ValueError, match="cannot hold"):
        token_budgets([10], sentences=2, max_length=64, width=32)


def test_shapes_per_epoch_on_the_recorded_lengths():
    """≤ 16 distinct input shapes in an epoch of ConCSE steps (the paper's batch, the recorded Koglish-NLI lengths);
    the length buckets of today's step make many more (why a compiled step recompiles, and CUDA graphs cannot be used)."""
    from benchmarks import lengths as L
    from codeswitch.common.fastpath import DEFAULT_BUCKET_COST, length_buckets
    from codeswitch.concse.loss import CONCSE_COLUMNS

    dists = L.nli_columns()
    B, Lmax, width, steps = 128, 64, 256, 400  # 400 steps: the ConCSE count the profile saw 676 shapes in
    rng = np.random.default_rng(0)
    columns = [c for c in L.NLI_COLUMNS.values()]
    assert len(columns) == len(CONCSE_COLUMNS)
    epoch = [np.concatenate([dists[c].sample(B, rng, Lmax) for c in columns]) for _ in range(steps)]
    sample = [int(x.sum()) for x in epoch[:50]]  # the budgets come from a sample of steps, then hold for all
    budgets = token_budgets(sample, sentences=6 * B, max_length=Lmax, width=width)
    packed_shapes, bucket_shapes = set(), set()
    for lengths in epoch:
        _, used = first_fit(lengths.tolist(), width)
        packed_shapes.add((next(b for b in budgets if b >= used), width))
        ordered = np.sort(lengths)[::-1]
        for start, stop in length_buckets(ordered.tolist(), DEFAULT_BUCKET_COST):
            bucket_shapes.add((stop - start, int(ordered[start])))
    assert len(packed_shapes) <= len(budgets) <= 4 <= 16
    assert len(bucket_shapes) > 16  # what the guard is for


# --------------------------------------------------------------------------- equal to the padded step, real data
def _loss_and_grads(model, features):
    from codeswitch.concse.loss import ConCSELoss

    model.zero_grad()
    total = sum(ConCSELoss(model, **concse_settings())(features, None).values())
    total.backward()
    return total.detach(), torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


@pytest.mark.parametrize("backbone", ["tiny-bert", "tiny-xlmr"])
def test_packed_step_equals_the_padded_step_on_koglish(backbone, shared_data, backbones_dir):
    """The real Koglish-NLI sample, the real encoder (dropout off, so both steps see the same function):

    * in float64 the packed step's loss and every gradient equal the padded reference's (relative 1e-9: the same
      arithmetic, reordered);
    * in float32 the loss agrees to 1e-5 relative, and the gradients differ by no more than the length buckets (the
      trainer's step today) differ from the same reference — the rounding of a reordered sum, amplified by the
      loss's temperature (about 1e-4 of the gradient's norm on this sample, for either).
    """
    from codeswitch.common.fastpath import bucket_features
    from codeswitch.concse.loss import CONCSE_COLUMNS
    from codeswitch.concse.train import build_encoder, nli_dataset
    from codeswitch.core.models import resolve_model
    from codeswitch.koglish.data import load_nli

    model = build_encoder(resolve_model(backbone), max_length=64, seed=0).eval()
    data = nli_dataset(load_nli(str(shared_data / "koglish_sample")).iloc[:16], "concse")
    rows = [data[i] for i in range(len(data))]
    cols = [dict(model.preprocess([r[c] for r in rows])) for c in CONCSE_COLUMNS]
    packed = pack_features(cols, budgets=(16, 32, 48), width=128)
    assert packed["input_ids"].shape[1] == 128 and packed["input_ids"].shape[0] in (16, 32, 48)

    ref_loss, ref = _loss_and_grads(model, [dict(c) for c in cols])
    loss, got = _loss_and_grads(model, [packed])
    _, buckets = _loss_and_grads(model, bucket_features(cols, cost=8))
    assert abs(loss - ref_loss) <= 1e-5 * abs(ref_loss)
    assert (got - ref).norm() <= max(1e-5 * ref.norm(), (buckets - ref).norm())

    model.double()
    ref_loss, ref = _loss_and_grads(model, [dict(c) for c in cols])
    loss, got = _loss_and_grads(model, [packed])
    assert abs(loss - ref_loss) <= 1e-9 * abs(ref_loss)
    torch.testing.assert_close(got, ref, rtol=1e-9, atol=1e-9 * float(ref.abs().max()))


def test_collator_packs_a_step_the_loss_reads(backbones_dir):
    """The trainer's collator with ``budgets`` hands the loss one packed batch (as sentence-transformers splits the
    collated keys); its loss is the bucketed step's (dropout off; a float32 reordering apart)."""
    from sentence_transformers.base.trainer import BaseTrainer

    from codeswitch.concse.loss import CONCSE_COLUMNS, ConCSELoss
    from codeswitch.concse.train import LengthBucketCollator, build_encoder
    from codeswitch.core.models import resolve_model

    model = build_encoder(resolve_model("tiny-bert"), max_length=32, seed=0).eval()
    words = "the girl drinks milk in the village while her sister eats bread at the market".split()
    rng = np.random.default_rng(1)
    rows = [{c: " ".join(rng.choice(words, size=int(rng.integers(2, 12)))) for c in CONCSE_COLUMNS} for _ in range(8)]
    packed = LengthBucketCollator(model.preprocess, budgets=(4, 8, 12), pack_width=64)(rows)
    buckets = LengthBucketCollator(model.preprocess, bucket_cost=8)(rows)
    assert packed["packed_input_ids"].shape[0] in (4, 8, 12) and packed["packed_input_ids"].shape[1] == 64
    split = lambda batch: BaseTrainer.collect_features(None, dict(batch))[0]  # noqa: E731
    (feats,) = split(packed)
    assert "starts" in feats and feats["attention_mask"].ndim == 4
    loss = ConCSELoss(model, **concse_settings())
    with torch.no_grad():
        got = sum(loss(split(packed), None).values())
        want = sum(loss(split(buckets), None).values())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
