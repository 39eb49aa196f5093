"""Performance guards of CalBERT fine-tuning (issue 24, item 7), on tiny XLM-R and the shipped SAIL 2017 sample.

One optimiser step of ``calbert.train.finetune_classifier`` (the HF Trainer's own
step: forward, backward, clipping, AdamW, schedule) is profiled or instrumented on
the CPU from the Trainer's ``on_step_begin`` to its ``on_step_end`` (:class:`StepProbe`):
with ``calbert.packing`` it runs one forward, no more fill kernels than without
deterministic mode, reads no tensor on the host; an epoch has at most four input
shapes; and the packed fine-tuning trains the same weights as the padded one.
"""

from __future__ import annotations

import traceback
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from transformers import TrainerCallback

from .test_perf_guards import HOST_READS


class StepProbe(TrainerCallback):
    """Profiles (``torch.profiler``, CPU) and records the host reads (``Tensor.item``, ``tolist``, ``__bool__``, …) of
    one optimiser step of a HF Trainer: step ``at`` (0-based; the first allocates the optimiser's state)."""

    def __init__(self, at: int = 1):
        self.at, self.reads, self.ops, self._undo, self._prof = at, [], None, [], None

    def on_step_begin(self, args, state, control, **kw):
        if state.global_step != self.at:
            return
        from torch.profiler import ProfilerActivity, profile

        for name in HOST_READS:
            original = getattr(torch.Tensor, name)

            def wrapped(t, *a, _name=name, _original=original, **k):
                frames = [f for f in traceback.extract_stack()[:-1] if "/torch/" not in f.filename]
                self.reads.append((_name, f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"))
                return _original(t, *a, **k)

            setattr(torch.Tensor, name, wrapped)
            self._undo.append((name, original))
        self._prof = profile(activities=[ProfilerActivity.CPU])
        self._prof.__enter__()

    def on_step_end(self, args, state, control, **kw):
        if self._prof is None:
            return
        self._prof.__exit__(None, None, None)
        for name, original in self._undo:
            setattr(torch.Tensor, name, original)
        self._undo.clear()
        self.ops = {e.key: e.count for e in self._prof.key_averages()}
        self._prof = None

    def count(self, op: str) -> int:
        assert self.ops is not None, "the probed step never ran"
        return self.ops.get(op, 0)


class NoDropout(TrainerCallback):
    """Dropout off at the start of training: a packed and a padded run compute the same function."""

    def on_train_begin(self, args, state, control, model=None, **kw):
        for m in model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0


def _sail(n: int = 32):
    from codeswitch.common.sentiment import load_sentiment_splits
    from codeswitch.core.models import ASSETS

    splits = load_sentiment_splits(ASSETS / "calbert" / "sail", "sail")
    return {"train": splits["train"][:n], "validation": splits["validation"][:16]}


def _spec(**changes):
    base = dict(seed=0, max_seq_length=64, precision="fp32", batch_size=4, num_train_epochs=1, per_device_eval_batch_size=16,
                learning_rate=2.5e-5, weight_decay=0.01, warmup_steps=0, packing=True)
    return SimpleNamespace(**(base | changes))


def _finetune(spec, splits, callbacks, backbone="tiny-xlmr"):
    from codeswitch.calbert.train import finetune_classifier
    from codeswitch.core.models import resolve_model

    kept = {}
    results = finetune_classifier(spec, resolve_model(backbone), splits, callbacks=callbacks, desc="guard",
                                  keep=lambda model, tok, res: kept.update(model=model))
    return results, kept["model"]


@pytest.fixture(scope="module")
def probed(backbones_dir):
    """The probed packed and padded steps, and the packed run's linear layers."""
    out = {}
    for packing in (True, False):
        probe = StepProbe()
        results, model = _finetune(_spec(packing=packing), _sail(), [probe])
        assert results.get("packed", False) is packing
        out[packing] = probe
    out["linears"] = sum(isinstance(m, torch.nn.Linear) for m in model.modules())  # XLM-R: no pooler, the head's two
    return out


def test_packed_calbert_step_is_one_forward(probed):
    assert probed[True].count("aten::linear") == probed["linears"]
    assert probed[False].count("aten::linear") == probed["linears"]  # one padded forward too (batch 4: no buckets)


def test_no_host_reads_in_a_packed_calbert_step(probed):
    """The packed step reads nothing on the host; the padded one reads its mask once (transformers' SDPA check)."""
    assert probed[True].reads == []
    assert len(probed[False].reads) >= 1  # what the guard would catch


def test_calbert_step_adds_no_fill_kernels(backbones_dir, monkeypatch):
    """``set_seed``'s deterministic mode runs no more ``aten::fill_`` in the packed step than no deterministic mode."""
    import codeswitch.calbert.train as ct
    from codeswitch.core.utils import set_seed

    before = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    try:
        counts = []
        for deterministic in (True, False):
            def seed(s, _d=deterministic):
                set_seed(s)
                if not _d:
                    torch.use_deterministic_algorithms(False)
            monkeypatch.setattr(ct, "set_seed", seed)
            probe = StepProbe()
            _finetune(_spec(), _sail(), [probe])
            counts.append(probe.count("aten::fill_"))
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = before[1]
    assert counts[0] <= counts[1], counts


@pytest.mark.parametrize("source", ["shipped", "shared"])
def test_packed_calbert_epoch_has_few_shapes(backbones_dir, source, request):
    """An epoch of packed batches of 4 (CalBERT's SAIL batch) of the SAIL training sentences at the paper's limit (128)
    has at most four input shapes (≤ 16)."""
    from transformers import AutoTokenizer

    from codeswitch.common.sentiment import load_sentiment_splits
    from codeswitch.common.tokens import tokenised
    from codeswitch.core.models import ASSETS, resolve_model
    from codeswitch.common.packed_classifier import PackRows

    folder = request.getfixturevalue("shared_data") / "sail2017" if source == "shared" else ASSETS / "calbert" / "sail"
    train = load_sentiment_splits(folder, "sail")["train"]
    tok = AutoTokenizer.from_pretrained(resolve_model("tiny-xlmr"))
    enc = tokenised(tok, [[e.text for e in train]], max_length=128)
    pack = PackRows.for_lengths(tok, [len(r) for r in enc["input_ids"]], batch_size=4, max_length=128, seed=0)
    order = np.random.default_rng(0).permutation(len(train))
    shapes = set()
    for k in range(0, len(order), 4):
        rows = [{"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i], "labels": train[i].label}
                for i in order[k : k + 4]]
        shapes.add(tuple(pack(rows)["input_ids"].shape))
    assert len(pack.budgets) <= 4 and len(shapes) <= len(pack.budgets) <= 16, (shapes, pack.budgets)


@pytest.mark.parametrize("task", ["sail", "iitp"])
def test_packed_calbert_epoch_has_few_shapes_on_recorded_lengths(backbones_dir, task):
    """An epoch (as many sentences as the recording holds) of packed batches of 4 on the recorded lengths of a CalBERT
    fine-tuning set (``benchmarks/lengths.py``: ``calbert_finetune``) at the paper's limit (128), through
    ``PackRows``: at most four budgets, as many shapes (≤ 16); padded batches have many more widths."""
    from transformers import AutoTokenizer

    from benchmarks import lengths as L
    from codeswitch.common.packed_classifier import PackRows
    from codeswitch.core.models import resolve_model

    recorded = L.load_table()["calbert_finetune"]["tasks"][task]
    n, B, Lmax = sum(recorded.values()), 4, 128
    lengths = L.calbert_task(task).sample(n, np.random.default_rng(0), Lmax)
    tok = AutoTokenizer.from_pretrained(resolve_model("tiny-xlmr"))
    pack = PackRows.for_lengths(tok, lengths.tolist(), batch_size=B, max_length=Lmax, seed=0)
    shapes, padded = set(), set()
    for k in range(0, n, B):
        step = lengths[k : k + B].tolist()
        rows = [{"input_ids": [tok.cls_token_id] + [5] * (m - 2) + [tok.sep_token_id], "attention_mask": [1] * m, "labels": 0}
                for m in step]
        shapes.add(tuple(pack(rows)["input_ids"].shape))
        padded.add(max(step))
    assert len(pack.budgets) <= 4 and len(shapes) <= len(pack.budgets) <= 16, (shapes, pack.budgets)
    assert len(padded) > 16


def test_packed_finetuning_trains_the_padded_weights(backbones_dir):
    """Dropout off, the same batches: after an epoch at a learning rate that moves every weight, the packed run's
    weights equal the padded run's (float summation order apart)."""
    from transformers import AutoModelForSequenceClassification

    from codeswitch.core.models import resolve_model

    splits = _sail(24)
    spec = dict(learning_rate=1e-3, warmup_steps=0, weight_decay=0.0)
    got, packed = _finetune(_spec(packing=True, **spec), splits, [NoDropout()])
    ref, padded = _finetune(_spec(packing=False, **spec), splits, [NoDropout()])
    assert got["packed"] and "packed" not in ref
    start = AutoModelForSequenceClassification.from_pretrained(resolve_model("tiny-xlmr"), num_labels=3).state_dict()
    a, b = packed.state_dict(), padded.state_dict()
    moved = max(float((b[k].float() - start[k].float()).abs().max()) for k in start if "classifier" not in k and k in b)
    assert moved > 1e-3  # the comparison is not of untouched weights
    for k in b:
        torch.testing.assert_close(a[k], b[k], rtol=1e-4, atol=1e-5, msg=k)
    assert got["validation"] == pytest.approx(ref["validation"], abs=1e-9)


@pytest.mark.parametrize("backbone", ["tiny-bert", "tiny-xlmr"])
def test_pretraining_batches_are_tokenised_once(backbones_dir, backbone):
    """Siamese pre-training reads its pairs' tokens from one tokenisation (``Pretokenised``): each batch equals what
    ``model.preprocess`` makes of it, and a call it cannot answer (a prompt, an unknown text) goes to ``preprocess``."""
    import json

    from codeswitch.calbert.train import Pretokenised, _same_features, build_siamese_model
    from codeswitch.core.models import ASSETS, resolve_model

    model = build_siamese_model(resolve_model(backbone), max_seq_length=24)
    records = json.loads((ASSETS / "calbert" / "pairs.json").read_text(encoding="utf-8"))
    texts = [str(v) for r in records[:40] for v in r.values() if isinstance(v, str)]
    pre = Pretokenised(model, texts)
    assert pre.exact
    calls = []
    original = model.preprocess
    model.preprocess = lambda *a, **k: calls.append(a) or original(*a, **k)
    try:
        for batch in (texts[:4], texts[10:26], texts[-3:]):
            assert _same_features(pre(batch), original(batch))
        assert calls == []  # answered from the one tokenisation
        pre(["a text it never saw"])
        pre(texts[:2], prompt="query: ")
        assert len(calls) == 2
    finally:
        model.preprocess = original
