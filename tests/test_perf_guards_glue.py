"""Performance guards of Koglish-GLUE fine-tuning (issue 24, item 7), on tiny BERT and the project's Koglish data.

One optimiser step of the HF Trainer that ``glue.train.build_trainer`` builds is
profiled and instrumented on the CPU (``StepProbe``, from ``on_step_begin`` to
``on_step_end``): with ``glue.packing`` it runs one forward, no more fill kernels
than without deterministic mode and reads no tensor on the host; an epoch on the
recorded Koglish-GLUE pair lengths (``benchmarks/lengths.py``) has at most four input
shapes.  The packed run's losses equal the padded one's: ``tests/test_glue_packing.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch


from .helpers import glue_spec, glue_trainer
from .test_glue_packing import _pairs
from .test_perf_guards_calbert import StepProbe


def _data(source: str, request):
    """Training rows: the real Koglish-GLUE sample (MRPC, ../shared) or sentences of the project's test vocabulary."""
    if source == "shared":
        from codeswitch.koglish.data import load_glue

        folder = request.getfixturevalue("shared_data") / "koglish_sample"
        return load_glue(str(folder), "mrpc", "train").head(32).reset_index(drop=True), "mrpc"
    return _pairs(32, 1), "mrpc"


def _probe(df, task, tmp, *, packing: bool, deterministic: bool = True):
    probe = StepProbe()
    spec = glue_spec(task=task, max_length=64, num_train_epochs=1, packing=True if packing else None)
    trainer = glue_trainer("tiny-bert", df, spec, tmp, callbacks=[probe])
    if not deterministic:
        torch.use_deterministic_algorithms(False)
    trainer.train()
    probe.linears = sum(isinstance(m, torch.nn.Linear) for m in trainer.model.modules())
    return probe


@pytest.mark.parametrize("source", ["words", "shared"])
def test_packed_glue_step(backbones_dir, tmp_path, source, request):
    """One forward (BERT: its pooler runs once more, on the first token of each packed row), no host read (the padded
    step reads its mask: what the guard would catch), and no more fills than without deterministic mode."""
    df, task = _data(source, request)
    before = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    try:
        packed = _probe(df, task, str(tmp_path / "a"), packing=True)
        padded = _probe(df, task, str(tmp_path / "b"), packing=False)
        no_fill = _probe(df, task, str(tmp_path / "c"), packing=True, deterministic=False)
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = before[1]
    assert packed.count("aten::linear") == packed.linears + 1  # BertModel's own pooler output, unused by the packed head
    assert padded.count("aten::linear") == padded.linears
    assert packed.reads == []
    assert len(padded.reads) >= 1
    assert packed.count("aten::fill_") <= no_fill.count("aten::fill_")


def test_packed_glue_epoch_has_few_shapes():
    """≤ 16 distinct input shapes in an epoch of packed GLUE steps on the recorded Koglish-GLUE pair lengths (batch 32,
    limit 230); padded batches have many more widths (why a compiled step recompiles)."""
    from benchmarks import lengths as L
    from codeswitch.common.fastpath import PACK_WIDTH, first_fit, token_budgets

    dist = L.glue_pairs()
    B, Lmax, steps = 32, 230, 400
    width = max(PACK_WIDTH, Lmax)
    rng = np.random.default_rng(0)
    epoch = [dist.sample(B, rng, Lmax) for _ in range(steps)]
    budgets = token_budgets([int(x.sum()) for x in epoch[:50]], sentences=B, max_length=Lmax, width=width)
    packed, padded = set(), set()
    for lengths in epoch:
        _, used = first_fit(lengths.tolist(), width)
        packed.add((next(b for b in budgets if b >= used), width))
        padded.add((B, int(lengths.max())))
    assert len(packed) <= len(budgets) <= 4 <= 16
    assert len(padded) > 16  # what the guard is for
