"""Performance guards of the alignment trainer (issue 24, item 7), on tiny-bert and the project's own parallel data.

One training step of ``alignment.train`` (Lc, all layers: f and its frozen copy f0)
is profiled or instrumented on the CPU: the packed step (``alignment.packing``) runs
one forward per encoder, no more fill kernels than without deterministic mode, reads
no tensor on the host, and an epoch has at most four input shapes.  The packed
step's loss and gradients equal the padded one's (``tests/test_alignment_packing.py``).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from .helpers import alignment_smoke, tiny_bert
from .test_perf_guards import _count_ops, _host_reads


@pytest.fixture(scope="module")
def tiny(backbones_dir):
    return tiny_bert()


@pytest.fixture(scope="module")
def spec():
    """The smoke profile's first alignment run (Lc, all layers), at a test's size."""
    _, aligns, _, _ = alignment_smoke()
    base = next(s for s in aligns if s.mode == "all_layers" and s.objective == "sentence")
    return dataclasses.replace(base, batch_size=8, max_length=32, seed=0)


def _step(tiny, spec, *, packed: bool, fused: bool = False):
    """One alignment training step (f and frozen f0, Lc, backward, clipping, AdamW) of the shipped parallel pairs, the
    batch prepared beforehand (host work: a collator's); the optimiser's state exists before anything is counted."""
    from transformers import AutoModel

    from codeswitch.alignment.data import load_parallel
    from codeswitch.alignment.train import Aligner, PairTokens, _step_loss

    path, tok = tiny
    data = load_parallel("synthetic", "train", limit=16)
    torch.manual_seed(0)
    aligner = Aligner(AutoModel.from_pretrained(path, attn_implementation="sdpa"), "all_layers")
    aligner.freeze_reference()
    aligner.train()
    tokens = (PairTokens.packed(tok, data, spec.max_length, batch_size=8, seed=0) if packed
              else PairTokens(tok, data, spec.max_length))
    prepared = tokens.batch(list(range(8)))
    params = [p for p in aligner.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5, **({"fused": True} if fused else {"foreach": True}))

    def step():
        loss = _step_loss(aligner, prepared, None, spec, "cpu")["total"]
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()
    step.linears = sum(isinstance(m, torch.nn.Linear) for m in aligner.encoder.modules())  # matmuls of one forward
    return step


def test_packed_alignment_step_is_one_forward_per_encoder(tiny, spec):
    """f and f0 each run once over both sides (2 forwards); the padded step runs each side through each (4)."""
    packed, padded = _step(tiny, spec, packed=True), _step(tiny, spec, packed=False)
    assert _count_ops(packed, "aten::linear") == 2 * packed.linears
    assert _count_ops(padded, "aten::linear") == 4 * padded.linears  # what the guard would catch


def fill_counts(make_step) -> tuple[int, int]:
    """``aten::fill_`` in one step (``make_step()``) under the trainers' deterministic mode (``set_seed``), and without
    deterministic mode; the mode is restored afterwards."""
    from codeswitch.core.utils import set_seed

    before = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    try:
        step = make_step()
        set_seed(0)
        trainers = _count_ops(step, "aten::fill_")
        torch.use_deterministic_algorithms(False)
        no_fill = _count_ops(step, "aten::fill_")
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = before[1]
    return trainers, no_fill


def test_alignment_step_adds_no_fill_kernels(tiny, spec):
    """``set_seed``'s deterministic mode runs no more ``aten::fill_`` in a packed step than no deterministic mode."""
    trainers, no_fill = fill_counts(lambda: _step(tiny, spec, packed=True))
    assert trainers <= no_fill, (trainers, no_fill)


def test_no_host_reads_in_a_packed_alignment_step(tiny, spec, monkeypatch):
    """A packed step as a GPU runs it (fused AdamW) reads no tensor on the host; the padded step reads one mask per
    forward (transformers' SDPA mask check): the guard can fail."""
    from codeswitch.core.utils import set_seed

    set_seed(0)
    assert _host_reads(_step(tiny, spec, packed=True, fused=True), monkeypatch) == []
    assert len(_host_reads(_step(tiny, spec, packed=False, fused=True), monkeypatch)) > 0


@pytest.mark.parametrize("source", ["synthetic", "shared"])
def test_packed_alignment_epoch_has_few_shapes(tiny, spec, source, request):
    """An epoch of packed steps on the project's parallel pairs (the shipped set; the real IITB sample in ../shared)
    at the paper's batch (8) and limit (128) has at most four input shapes (≤ 16)."""
    from codeswitch.alignment.data import load_parallel
    from codeswitch.alignment.train import PairTokens, _batches

    if source == "shared":
        folder = request.getfixturevalue("shared_data") / "cfilt_en_hi"
        data = load_parallel(str(folder), "validation")  # 850 real pairs
    else:
        data = load_parallel("synthetic", "train")
    _, tok = tiny
    tokens = PairTokens.packed(tok, data, 128, batch_size=8, seed=0)
    shapes = {tuple(tokens.batch(idx)[2]["input_ids"].shape) for idx in _batches(len(data), 8, torch.Generator().manual_seed(0))}
    assert len(tokens.budgets) <= 4 and len(shapes) <= len(tokens.budgets) <= 16, (shapes, tokens.budgets)


@pytest.mark.parametrize("script", ["devanagari", "roman"])
def test_packed_alignment_epoch_has_few_shapes_on_recorded_lengths(script):
    """400 packed steps on the recorded IITB pair lengths (``benchmarks/lengths.py``: ``alignment_pairs``, each side's
    histogram) at the paper's batch (8) and limit (128), packed as ``PairTokens.packed`` and ``PairTokens.batch`` pack
    them (``sampled_budgets``, ``pack_features`` of the English then the Hindi rows): at most four budgets, as many
    shapes (≤ 16); padded steps have many more (English, Hindi) widths (what the guard is for)."""
    import numpy as np

    from benchmarks import lengths as L
    from codeswitch.common.fastpath import PACK_WIDTH, pack_features, sampled_budgets

    dists = L.alignment_sides(script)
    B, Lmax, steps = 8, 128, 400
    width = max(PACK_WIDTH, Lmax)
    rng = np.random.default_rng(0)
    pairs = np.stack([dists[side].sample(B * steps, rng, Lmax) for side in L.ALIGNMENT_SIDES], axis=1)  # (pairs, 2)
    budgets = sampled_budgets(pairs, B, max_length=Lmax, width=width, seed=0)
    packed, padded = set(), set()
    for k in range(0, len(pairs), B):
        step = pairs[k : k + B]
        sides = [L.token_batch(step[:, j], 1000, rng, cls_id=1, sep_id=2, pad_id=0) for j in range(2)]
        out = pack_features([{n: b[n] for n in ("input_ids", "attention_mask")} for b in sides], budgets, width)
        packed.add(tuple(out["input_ids"].shape))
        padded.add((int(step[:, 0].max()), int(step[:, 1].max())))
    assert len(budgets) <= 4 and len(packed) <= len(budgets) <= 16, (packed, budgets)
    assert len(padded) > 16
