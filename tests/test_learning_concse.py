"""The ConCSE/SimCSE trainer's learning check can fail: a loss that never reaches the encoder leaves it untrained.

Every ConCSE and SimCSE run stores its mean Koglish-STS Spearman beside the same encoder's
before training (:func:`codeswitch.concse.experiment.learning_entry`, read by
``tests/test_learning.py``).  Here the trainer is broken on purpose, through a monkeypatch
(no profile option): the loss is detached from the encoder, so every gradient is zero, the
weights never move, and the entry must say the run did not learn.  The unbroken run, at the
smoke profile's settings (its masked-LM pre-trained backbone ``tiny-bert-mlm``), must pass (slow).
"""

from __future__ import annotations

import pytest
import torch

from codeswitch.concse import experiment as C
from codeswitch.concse import train as T
from codeswitch.core.profiles import load_profile

from .helpers import tiny_concse_profile


class _Detached(torch.nn.Module):
    """The loss as computed, detached from the encoder: it still has a graph (zero gradients), not a path to the weights."""

    def __init__(self, loss: torch.nn.Module, model: torch.nn.Module):
        super().__init__()
        self.loss, self.model = loss, model

    def forward(self, *args, **kwargs):
        out = self.loss(*args, **kwargs)
        zero = sum(p.sum() for p in self.model.parameters() if p.requires_grad) * 0.0  # keeps backward() legal
        if isinstance(out, dict):  # ConCSELoss returns its named terms
            return {k: v.detach() + zero for k, v in out.items()}
        return out.detach() + zero


@pytest.mark.parametrize("method", ["simcse", "concse"])
def test_a_detached_loss_fails_the_check(tmp_path, backbones_dir, monkeypatch, method):
    cfg = tiny_concse_profile(tmp_path)
    spec = next(s for s in C.plan(cfg, ["table3"]) if s.method == method)
    concse_loss, simcse_loss = T.ConCSELoss, T.simcse_loss
    monkeypatch.setattr(T, "ConCSELoss", lambda model, **kw: _Detached(concse_loss(model, **kw), model))
    monkeypatch.setattr(T, "simcse_loss", lambda model, **kw: _Detached(simcse_loss(model, **kw), model))
    result = C.run_one(spec, cfg)
    entry = result["learning"]
    assert entry["baseline_name"] == "untrained encoder"
    # the weights never moved: the trained encoder *is* the untrained one, on every test set
    assert result["test"] == pytest.approx(result["untrained"], abs=1e-9)
    assert entry["score"] == pytest.approx(entry["baseline"]) and not entry["passed"], entry


def test_the_entry_compares_like_with_like():
    trained = {"stsb": 60.0, "sick": 40.0}
    untrained = {"stsb": 30.0, "sick": 30.0, "sts12": 99.0}  # only the tests the run was scored on count
    entry = C.learning_entry(trained, untrained)
    assert (entry["score"], entry["baseline"], entry["margin"]) == (50.0, 30.0, C.LEARNING_MARGIN) and entry["passed"]
    assert not C.learning_entry({"stsb": 32.0}, {"stsb": 30.0})["passed"]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["simcse", "concse"])
def test_an_unbroken_run_learns(tmp_path, backbones_dir, method):
    """The smoke profile's own mBERT-slot run (tiny-bert-mlm, 384 rows, 2 epochs: 12 SimCSE / 48 ConCSE steps) beats its untrained encoder."""
    cfg = load_profile("smoke", {"seeds": [11111]}, output_root=tmp_path)
    spec = next(s for s in C.plan(cfg, ["table3"]) if s.method == method and s.backbone == "mBERT-base")
    assert spec.model == "tiny-bert-mlm"
    entry = C.run_one(spec, cfg)["learning"]
    assert entry["passed"], entry
