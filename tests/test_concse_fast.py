"""The ConCSE fast path: length buckets change nothing but the padding, mixed precision nothing beyond noise."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
import torch

from codeswitch.concse.loss import ConCSELoss, concse_loss
from codeswitch.common.fastpath import bucket_features, embed_length_buckets, length_buckets

from .helpers import BagEncoder, concse_settings, tiny_concse_spec, tiny_nli, token_columns


# --------------------------------------------------------------------------- the bucket plan
def brute_force(lengths, cost):
    """Every way to cut the sorted rows into contiguous buckets; the cheapest cost."""
    n, best = len(lengths), float("inf")
    for k in range(n):
        for cuts in itertools.combinations(range(1, n), k):
            bounds = (0, *cuts, n)
            total = sum((b - a) * lengths[a] + cost for a, b in zip(bounds, bounds[1:]))
            best = min(best, total)
    return best


def plan_cost(lengths, cuts, cost):
    return sum((b - a) * lengths[a] + cost for a, b in cuts)


def test_length_buckets_hand_examples():
    # 3 rows of 9 and 5 of 2: one bucket = 8·9 = 72 positions; two = 27 + 10 = 37 (+ one more forward)
    assert length_buckets([9, 9, 9, 2, 2, 2, 2, 2], cost=10) == [(0, 3), (3, 8)]
    assert length_buckets([9, 9, 9, 2, 2, 2, 2, 2], cost=35) == [(0, 8)]  # saving 35 does not beat a cost of 35
    assert length_buckets([5, 5, 5], cost=0) == [(0, 3)]  # equal lengths: nothing to save
    assert length_buckets([], cost=1) == []
    with pytest.raises(ValueError, match="decreasing"):
        length_buckets([1, 2], cost=1)


@pytest.mark.parametrize("seed", range(12))
def test_length_buckets_is_optimal(seed):
    rng = np.random.default_rng(seed)
    lengths = sorted(rng.integers(1, 30, size=int(rng.integers(1, 9))).tolist(), reverse=True)
    cost = float(rng.choice([0, 3, 20, 60]))
    cuts = length_buckets(lengths, cost)
    assert cuts[0][0] == 0 and cuts[-1][1] == len(lengths) and all(a[1] == b[0] for a, b in zip(cuts, cuts[1:]))
    assert plan_cost(lengths, cuts, cost) == pytest.approx(brute_force(lengths, cost))


def _columns(rng, B=6, vocab=50, max_len=12):
    """Six right-padded token columns of random lengths, as the sentence-transformers collator makes them."""
    return token_columns((rng.integers(2, max_len + 1, size=B) for _ in range(6)), rng, vocab)


def test_bucket_features_cover_every_sentence_once():
    cols = _columns(np.random.default_rng(0))
    buckets = bucket_features(cols, cost=4)
    assert len(buckets) > 1
    rows = torch.cat([b["rows"] for b in buckets])
    assert sorted(rows.tolist()) == list(range(36))
    width = max(c["input_ids"].shape[1] for c in cols)
    merged = torch.cat([torch.nn.functional.pad(c["input_ids"], (0, width - c["input_ids"].shape[1])) for c in cols])  # (36, width)
    for b in buckets:
        n = b["attention_mask"].sum(dim=1)
        assert int(n.max()) == b["input_ids"].shape[1]  # trimmed to its own longest row
        for r, ids, k in zip(b["rows"].tolist(), b["input_ids"], n.tolist()):
            assert torch.equal(ids[:k], merged[r, :k])  # the same sentence


def test_small_steps_stay_one_forward_in_order():
    """The smoke profile's steps: one bucket, original order — bit-identical to the merged forward."""
    cols = _columns(np.random.default_rng(1), B=4, max_len=8)
    (only,) = bucket_features(cols, cost=2048)
    assert torch.equal(only["rows"], torch.arange(24))
    assert only["input_ids"].shape == (24, max(c["input_ids"].shape[1] for c in cols))
    assert len(bucket_features(cols, cost=None)) == 1


# --------------------------------------------------------------------------- the loss is unchanged
def _loss_and_grads(model, features):
    model.zero_grad()
    loss = ConCSELoss(model, **concse_settings())
    total = sum(loss(features, None).values())
    total.backward()
    return total.detach(), {k: p.grad.clone() for k, p in model.named_parameters()}


def test_buckets_give_the_same_loss_and_gradients_as_columns():
    torch.manual_seed(0)
    model = BagEncoder(vocab=50)
    cols = _columns(np.random.default_rng(2))
    ref_loss, ref_grads = _loss_and_grads(model, [dict(c) for c in cols])  # six feature dicts: the merged forward
    buckets = bucket_features(cols, cost=4)
    assert len(buckets) >= 3
    loss, grads = _loss_and_grads(model, buckets)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-6, atol=1e-6)
    for k in ref_grads:
        torch.testing.assert_close(grads[k], ref_grads[k], rtol=1e-5, atol=1e-6)


def test_tiny_bert_buckets_match_the_merged_forward(backbones_dir):
    """The real encoder (tiny BERT, SDPA, dropout off): buckets reproduce the merged forward's embeddings."""
    from codeswitch.core.models import resolve_model
    from codeswitch.concse.train import build_encoder

    model = build_encoder(resolve_model("tiny-bert"), max_length=32, seed=0).eval()
    assert model[0].auto_model.config._attn_implementation == "sdpa"
    cols = _columns(np.random.default_rng(3), vocab=400)
    from sentence_transformers.base.losses.merged_forward import embed_columns

    with torch.no_grad():
        want = embed_columns(model, [dict(c) for c in cols], separate_first=False)
        got = embed_length_buckets(model, bucket_features(cols, cost=4), n_columns=6)
    for w, g in zip(want, got):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def test_no_host_sync_in_the_loss(monkeypatch):
    """Neither the bucketed embedding nor the loss reads a tensor back to the host (no .item(), bool(), …)."""
    torch.manual_seed(0)
    model = BagEncoder(vocab=50)
    buckets = bucket_features(_columns(np.random.default_rng(4)), cost=4)

    def refuse(*a, **k):
        raise AssertionError("host synchronisation inside the step")

    for name in ("item", "tolist", "__bool__", "__float__", "__int__"):
        monkeypatch.setattr(torch.Tensor, name, refuse)
    total = sum(ConCSELoss(model, **concse_settings())(buckets, None).values())
    total.backward()


# --------------------------------------------------------------------------- mixed precision
def test_loss_math_stays_fp32_under_autocast():
    g = torch.Generator().manual_seed(0)
    emb = [torch.randn(5, 16, generator=g).bfloat16() for _ in range(6)]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = concse_loss(*emb, **concse_settings())
    want = concse_loss(*(e.float() for e in emb), **concse_settings())
    for k in want:
        assert got[k].dtype == torch.float32
        torch.testing.assert_close(got[k], want[k])


def _train_steps(amp, seed, steps=4):
    """A few ConCSE steps on a tiny BERT (dropout on), fp32 or bf16 autocast; the per-step losses."""
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    bert = BertModel(BertConfig(vocab_size=400, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                intermediate_size=64, attn_implementation="sdpa"))

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert, self.dense = bert, torch.nn.Linear(32, 32)

        def forward(self, f):
            f = {k: v for k, v in f.items() if k != "rows"}
            return {"sentence_embedding": torch.tanh(self.dense(self.bert(**f).last_hidden_state[:, 0]))}

    model = Encoder().train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = ConCSELoss(model, **concse_settings())
    rng = np.random.default_rng(5)
    batches = [bucket_features(_columns(rng, B=8, vocab=400, max_len=16), cost=8) for _ in range(steps)]
    torch.manual_seed(seed)  # dropout
    out = []
    for b in batches:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            total = sum(loss_fn(b, None).values())
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        out.append(float(total.detach()))
    return np.array(out)


def test_bf16_matches_fp32_within_dropout_noise():
    fp32, fp32_other_dropout, bf16 = _train_steps(False, 1), _train_steps(False, 2), _train_steps(True, 1)
    noise = np.abs(fp32 - fp32_other_dropout).max()  # how much the loss moves with the dropout draw alone
    assert noise > 0
    assert np.abs(bf16 - fp32).max() <= max(noise, 0.02 * np.abs(fp32).max()), (fp32, bf16, noise)


def test_trainer_runs_in_bf16(tmp_path, backbones_dir):
    """The real trainer with the profile's bf16 (CPU autocast): same steps, a training loss close to fp32's."""
    from codeswitch.core.models import resolve_model
    from codeswitch.core.profiles import load_profile
    import dataclasses

    from codeswitch.concse.train import train_encoder

    nli, dev = tiny_nli(words_per_sentence=(3, 9))
    spec, _ = tiny_concse_spec(tmp_path, num_train_epochs=1)
    path = resolve_model("tiny-bert")
    infos = {}
    for precision in ("fp32", "bf16"):
        profile = load_profile("smoke", {"precision": precision}, output_root=tmp_path)
        _, infos[precision] = train_encoder(dataclasses.replace(spec, precision=precision), path, nli, dev, profile=profile)
    assert infos["fp32"]["steps"] == infos["bf16"]["steps"] == 4
    assert infos["bf16"]["train_loss"] != infos["fp32"]["train_loss"]  # autocast did run in bf16 ...
    assert infos["bf16"]["train_loss"] == pytest.approx(infos["fp32"]["train_loss"], rel=0.01)  # ... and changed nothing that matters


def test_gradient_checkpointing_trains_the_same_run_and_stays_out_of_the_key(tmp_path, backbones_dir, monkeypatch):
    """concse.gradient_checkpointing (memory only): the real trainer with dropout on gives the same training loss, dev
    history and weights with the layers recomputed in the backward as without (the RNG state is kept, so the dropout
    masks are the same); the encoder was checkpointed; the run key is the same."""
    import dataclasses

    from transformers import PreTrainedModel

    from codeswitch.concse.train import train_encoder
    from codeswitch.core.models import resolve_model
    from codeswitch.core.profiles import load_profile

    nli, dev = tiny_nli(words_per_sentence=(3, 9))
    spec, _ = tiny_concse_spec(tmp_path, num_train_epochs=1)
    profile = load_profile("smoke", output_root=tmp_path)
    enabled = []
    name = "activation_checkpointing_enable" if hasattr(PreTrainedModel, "activation_checkpointing_enable") else "gradient_checkpointing_enable"
    real = getattr(PreTrainedModel, name)
    monkeypatch.setattr(PreTrainedModel, name, lambda self, *a, **k: enabled.append(type(self).__name__) or real(self, *a, **k))
    runs = {}
    for on in (False, True):
        one = dataclasses.replace(spec, gradient_checkpointing=on)
        runs[on] = train_encoder(one, resolve_model("tiny-bert"), nli, dev, profile=profile)
        assert one.key() == spec.key()
    assert enabled == ["BertModel"]
    (plain, a), (checkpointed, b) = runs[False], runs[True]
    assert a["steps"] == b["steps"] == 4
    assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-5) and b["dev_history"] == pytest.approx(a["dev_history"], rel=1e-5)
    for (name, p), q in zip(plain.state_dict().items(), checkpointed.state_dict().values()):
        torch.testing.assert_close(q, p, rtol=1e-5, atol=1e-6, msg=name)
