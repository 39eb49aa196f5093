"""Packed Koglish-GLUE training (issue 24): one fixed-shape forward a step through the HF Trainer.

Dropout off (so both runs see the same function), the same sampler and batches: the packed run's per-step losses
and its scores equal the padded run's within the packed-step test's tolerance (1e-5 relative), for a
single-sentence and a pair task (with regression), on tiny BERT and tiny XLM-R; every training batch is one
packed forward of at most four shapes; the setting is in the run key only when on.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
import torch

from codeswitch.glue import train as tg

from .helpers import glue_fine_tune, glue_spec, glue_trainer

WORDS = "the a movie film song was shown really very quite long short story at home today 좋은 영화 나쁜".split()


def _pairs(n, seed):
    rng = random.Random(seed)
    s = lambda: " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 30)))  # noqa: E731
    return pd.DataFrame([{"sentence1": s(), "sentence2": s(), "sentence": s(), "cross1": s(), "cross2": s(), "cross": s(),
                          "label": rng.choice([0, 1]) if seed % 2 else rng.uniform(0, 5)} for _ in range(n)])


def _run(backbone, df, spec, tmp):
    trainer = glue_trainer(backbone, df, spec, tmp)
    for m in trainer.model.modules():
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    losses, shapes = [], []
    step = trainer.compute_loss

    def compute_loss(model, inputs, *a, **kw):
        if model.training:
            shapes.append(tuple(inputs["input_ids"].shape) + (("starts" in inputs),))
        out = step(model, inputs, *a, **kw)
        if model.training:
            losses.append(float((out[0] if isinstance(out, tuple) else out).detach()))
        return out

    trainer.compute_loss = compute_loss
    trainer.train()
    scores = trainer.evaluate()
    return np.array(losses), shapes, scores, trainer


@pytest.mark.parametrize("backbone, task, seed", [("tiny-bert", "sst2", 1), ("tiny-bert", "stsb", 2), ("tiny-xlmr", "mrpc", 3)])
def test_packed_glue_training_equals_the_padded_one(backbone, task, seed, tmp_path, backbones_dir):
    df = _pairs(48, seed)
    spec = glue_spec(task=task, max_length=64)
    ref, ref_shapes, ref_scores, _ = _run(backbone, df, spec, str(tmp_path / "a"))
    got, shapes, scores, trainer = _run(backbone, df, glue_spec(task=task, max_length=64, packing=True), str(tmp_path / "b"))
    assert isinstance(trainer.data_collator, tg.PackRows)
    assert len(got) == len(ref) == 12  # 48 rows / batch 8 × 2 epochs
    assert all(s[-1] for s in shapes) and not any(s[-1] for s in ref_shapes)
    assert len(set(shapes)) <= len(trainer.data_collator.budgets) <= 4 and {s[1] for s in shapes} == {256}
    np.testing.assert_allclose(got, ref, rtol=1e-5)
    losses = [k for k in ref_scores if k.endswith("_loss")]  # the trained weights' evaluation (padded batches) agrees
    assert losses and all(scores[k] == pytest.approx(ref_scores[k], rel=1e-4) for k in losses), (scores, ref_scores)


def test_packing_is_in_the_key_only_when_on():
    off, on = glue_spec(), glue_spec(packing=True)
    assert "packing" not in off.key() and on.key()["packing"] is True and off.key_hash() != on.key_hash()


def test_mbart_trains_padded(tmp_path, backbones_dir):
    """mBART's head reads the decoder's last </s>: with packing on it trains padded, and its result says so."""
    from codeswitch.core.models import resolve_model

    df = _pairs(16, 1)
    spec = glue_spec(task="sst2", max_length=32, packing=True, num_train_epochs=1)
    r = glue_fine_tune(spec, "tiny-mbart", df)
    assert r["packed"] is False
    with pytest.raises(ValueError, match="cannot be packed"):
        from transformers import AutoModelForSequenceClassification

        tg.packed_forward(AutoModelForSequenceClassification.from_pretrained(resolve_model("tiny-mbart")))
