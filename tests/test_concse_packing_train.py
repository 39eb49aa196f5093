"""The ``packing`` and ``torch_compile`` settings of the ConCSE/SimCSE trainer (issue 24).

* packed training (one fixed-shape forward a step) follows the bucketed trainer's loss, step by step, within the
  tolerance of the packed-step test (``tests/test_concse_packing.py``: 1e-5 relative), dropout off so both see the
  same function; SimCSE likewise against sentence-transformers' merged forward;
* a packed epoch has at most four input shapes;
* the settings are in the run key when on, and out of it when off (old keys, and the smoke caches, unchanged);
* compiling the backbone gives the eager loss for a few steps (CPU, inductor).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from codeswitch.concse import train as T

from .helpers import tiny_concse_spec, tiny_nli


def _spec(tmp_path, method, **settings):
    return tiny_concse_spec(tmp_path, method, num_train_epochs=2, simcse_settings="matched", **settings)


def _train_recording(monkeypatch, spec, profile, nli, dev):
    """Train with dropout off; return the per-step losses and the collated batches' input shapes."""
    from codeswitch.core.models import resolve_model

    build = T.build_encoder

    def no_dropout(*a, **kw):
        model = build(*a, **kw)
        for m in model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
        return model

    losses, shapes = [], []
    monkeypatch.setattr(T, "build_encoder", no_dropout)
    forward = T.ConCSELoss.forward

    def concse_forward(self, features, labels=None):
        features = list(features)
        shapes.append(tuple(tuple(f["input_ids"].shape) for f in features))
        out = forward(self, features, labels)
        losses.append(float(sum(out.values()).detach()))
        return out

    monkeypatch.setattr(T.ConCSELoss, "forward", concse_forward)
    make = T.simcse_loss

    def simcse(*a, **kw):
        loss = make(*a, **kw)
        inner = type(loss).forward

        def fwd(features, labels=None):
            features = list(features)
            shapes.append(tuple(tuple(f["input_ids"].shape) for f in features))
            out = inner(loss, features, labels)
            losses.append(float(out.detach()))
            return out

        loss.forward = fwd
        return loss

    monkeypatch.setattr(T, "simcse_loss", simcse)
    _, info = T.train_encoder(spec, resolve_model("tiny-bert"), nli, dev, profile=profile)
    return np.array(losses), shapes, info


@pytest.mark.parametrize("method", ["concse", "simcse"])
def test_packed_training_follows_the_bucketed_trainer(method, tmp_path, monkeypatch, backbones_dir):
    nli, dev = tiny_nli()
    base, profile = _spec(tmp_path, method)
    packed_spec, _ = _spec(tmp_path, method, packing=True)
    ref, ref_shapes, ref_info = _train_recording(monkeypatch, base, profile, nli, dev)
    got, shapes, info = _train_recording(monkeypatch, packed_spec, profile, nli, dev)
    assert info["steps"] == ref_info["steps"] == 8 and len(got) == len(ref) == 8
    assert all("starts" not in s for s in ref_shapes)
    assert all(len(s) == 1 and s[0][1] == T.PACK_WIDTH for s in shapes)  # one forward a step, rows of PACK_WIDTH tokens
    assert len(set(shapes)) <= 4
    np.testing.assert_allclose(got, ref, rtol=1e-5)  # the loss trajectory of the bucketed (merged) trainer
    np.testing.assert_allclose(info["dev_history"], ref_info["dev_history"], atol=1e-4)


def test_settings_are_in_the_run_key(tmp_path):
    off, _ = _spec(tmp_path, "concse")
    on, _ = _spec(tmp_path, "concse", packing=True)
    compiled, _ = _spec(tmp_path, "concse", torch_compile=True)
    assert "packing" not in off.key() and "torch_compile" not in off.key()  # off: the keys of earlier runs
    assert on.key()["packing"] is True and on.bucket_cost is None  # packing replaces the buckets
    assert compiled.key()["torch_compile"] is True
    assert len({off.key_hash(), on.key_hash(), compiled.key_hash()}) == 3


def test_profiles_packing_setting():
    """Off in smoke (its CSVs unchanged), on in paper, and paper-ci as paper (the drift test)."""
    from codeswitch.concse.config import load
    from codeswitch.core.profiles import load_profile

    assert load(load_profile("smoke")).packing is False
    assert load(load_profile("paper")).packing is True
    assert load(load_profile("paper-ci")).packing is True


@pytest.mark.slow  # compiling takes 30-60 s on a free core (more on a loaded one)
def test_compiled_training_gives_the_eager_loss(tmp_path, monkeypatch, backbones_dir):
    """torch.compile (inductor, CPU) of the packed step: the loss of the eager step for a few steps."""
    pytest.importorskip("torch._inductor")
    nli, dev = tiny_nli(n=16)
    eager, profile = _spec(tmp_path, "concse", packing=True)
    compiled = dataclasses.replace(eager, torch_compile=True, num_train_epochs=1)
    eager = dataclasses.replace(eager, num_train_epochs=1)
    ref, _, _ = _train_recording(monkeypatch, eager, profile, nli, dev)
    got, _, _ = _train_recording(monkeypatch, compiled, profile, nli, dev)
    assert len(got) == len(ref) == 2
    np.testing.assert_allclose(got, ref, rtol=1e-4)
