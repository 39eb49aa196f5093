"""Performance guards a CPU-only CI can enforce (issue 24, item 7), on a tiny model and the project's own code paths.

Each guard profiles or instruments one real training step on the CPU: what it
counts (fill kernels, …) does not depend on the device, so a regression that
would cost GPU time shows up here first.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from .helpers import assert_compiles_whole, token_columns


# --------------------------------------------------------------------------- one ConCSE step of the real encoder
def _encoder():
    """The real ConCSE encoder (``build_encoder``) of tiny-bert."""
    from codeswitch.concse.train import build_encoder
    from codeswitch.core.models import resolve_model

    return build_encoder(resolve_model("tiny-bert"), max_length=32, seed=0)


def _columns(rng, *, rows: int, shortest: int, longest: int) -> list[dict]:
    """ConCSE's six token columns of ``rows`` sentences each, of lengths in ``[shortest, longest)``, ids below 400."""
    return token_columns((rng.integers(shortest, longest, size=rows) for _ in range(6)), rng, 400)


def _concse_parts(train: bool, rng: np.random.Generator | None = None, **lengths):
    """The set-up every ConCSE step below starts from: tiny-bert's real ConCSE encoder (:func:`_encoder`) in training
    (``train``) or evaluation mode, its ``ConCSELoss``, and, given ``rng``, ConCSE's six token columns drawn from it
    (``lengths``: ``rows``, ``shortest``, ``longest``, as :func:`_columns` takes them; else ``None``)."""
    from codeswitch.concse.config import Config
    from codeswitch.concse.loss import ConCSELoss

    model = _encoder().train(train)
    return model, ConCSELoss(model, **Config().loss_settings()), None if rng is None else _columns(rng, **lengths)


def _concse_step(backbones_dir, *, fused: bool = False):
    """One ConCSE training step (the real ``build_encoder``, length buckets, ``ConCSELoss``, clipping, AdamW) as a
    function of no arguments, and its warm state (the first step allocates the optimiser's moments).  ``fused``: the
    fused AdamW the GPU runs (``core.utils.adamw_kind``); else the multi-tensor one of CPU runs."""
    from codeswitch.common.fastpath import bucket_features

    model, loss_fn, cols = _concse_parts(True, np.random.default_rng(0), rows=6, shortest=3, longest=16)
    buckets = bucket_features(cols, cost=8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **({"fused": True} if fused else {"foreach": True}))

    def step():
        total = sum(loss_fn([dict(b) for b in buckets], None).values())
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # the optimiser's state exists before anything is counted
    step.forwards = len(buckets)
    return step


def _count_ops(step, name: str) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return sum(e.count for e in prof.key_averages() if e.key == name)


def test_deterministic_mode_adds_no_fill_kernels(backbones_dir):
    """``set_seed``'s deterministic mode runs no more ``aten::fill_`` per step than no deterministic mode at all.

    torch's deterministic mode turns on ``fill_uninitialized_memory`` (a NaN fill of
    every new tensor: 3,040 fills per ConCSE step on the H100);
    :func:`codeswitch.core.utils.deterministic_mode` keeps determinism without it.
    The guard can fail: with the fill on, the same step counts more fills.
    """
    from codeswitch.core.utils import deterministic_mode, set_seed

    before = (torch.are_deterministic_algorithms_enabled(), torch.utils.deterministic.fill_uninitialized_memory)
    try:
        step = _concse_step(backbones_dir)
        set_seed(0)  # what every trainer calls
        assert torch.are_deterministic_algorithms_enabled() and not torch.utils.deterministic.fill_uninitialized_memory
        trainers = _count_ops(step, "aten::fill_")
        torch.use_deterministic_algorithms(False)
        no_fill = _count_ops(step, "aten::fill_")
        deterministic_mode(True, fill_uninitialized_memory=True)  # torch's own default for the mode
        with_fill = _count_ops(step, "aten::fill_")
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=True)
        torch.utils.deterministic.fill_uninitialized_memory = before[1]
    assert trainers <= no_fill, (trainers, no_fill)
    assert with_fill > no_fill, (with_fill, no_fill)  # what the guard would catch


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_adamw_kind_is_fused_on_cuda_only(device):
    """Fused AdamW on CUDA; CPU keeps the multi-tensor update (the fused CPU kernel rounds differently: smoke results)."""
    from codeswitch.core.utils import adamw_kind

    assert adamw_kind(device) == ({"fused": True} if device == "cuda" else {"foreach": True})
    assert adamw_kind(torch.device(device)) == adamw_kind(device)


def test_hf_trainers_name_their_optimiser_through_trainer_optim():
    """Every HF-Trainer run (ConCSE/SimCSE, Koglish-GLUE, CalBERT) picks its ``optim`` through ``core.utils.trainer_optim``
    (fused AdamW on GPU): no trainer spells an ``adamw_torch*`` name itself (ConCSE did, issue 24)."""
    import re
    from pathlib import Path

    from codeswitch.core.utils import trainer_optim

    lib = Path(__file__).resolve().parents[1] / "lib" / "codeswitch"
    spelled = [f"{p.relative_to(lib)}:{n}" for p in sorted(lib.rglob("*.py")) if p.name != "utils.py" or p.parent.name != "core"
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if re.search(r"""["']adamw_torch""", line)]
    assert not spelled, spelled
    assert (trainer_optim("cuda"), trainer_optim("cpu")) == ("adamw_torch_fused", "adamw_torch")
    for module in ("concse.train", "glue.train", "calbert.train"):
        assert "trainer_optim(" in (lib / Path(*module.split("."))).with_suffix(".py").read_text(encoding="utf-8"), module


# --------------------------------------------------------------------------- host reads
HOST_READS = ("item", "tolist", "__bool__", "__int__", "__float__")
# The one read left, documented in docs/performance.md: transformers asks `padding_mask.all()` before every SDPA
# forward (masking_utils._ignore_bidirectional_mask_sdpa) to drop a mask without padding.  ContrastiveMix avoids it
# by handing over a mask decided on the host (common.fastpath.sdpa_ready); the ConCSE encoder's pooling needs the
# 2-D mask, so its step still has one read per forward (issue 24: the packed step removes it).
KNOWN = "transformers/masking_utils.py"


def _host_reads(step, monkeypatch) -> list[tuple[str, str]]:
    """Every read of a tensor's value by the host during ``step()``: (method, the innermost caller outside torch)."""
    import traceback

    reads: list[tuple[str, str]] = []
    for name in HOST_READS:
        original = getattr(torch.Tensor, name)

        def wrapped(self, *a, _name=name, _original=original, **k):
            frames = [f for f in traceback.extract_stack()[:-1] if "/torch/" not in f.filename]
            reads.append((_name, f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"))
            return _original(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, wrapped)
    try:
        step()
    finally:
        monkeypatch.undo()
    return reads


def test_no_host_reads_in_a_concse_step(backbones_dir, monkeypatch):
    """A ConCSE step as a GPU runs it (buckets, loss, backward, clipping, fused AdamW) reads no tensor on the host,
    except transformers' mask check, once per forward (``KNOWN``).  The guard can fail: a `.item()` in the loss shows up."""
    from codeswitch.core.utils import set_seed

    set_seed(0)
    step = _concse_step(backbones_dir, fused=True)
    reads = _host_reads(step, monkeypatch)
    known = [r for r in reads if KNOWN in r[1]]
    assert [r for r in reads if KNOWN not in r[1]] == []
    assert len(known) == step.forwards  # one per forward, no more

    def with_a_read():
        step()
        torch.zeros(()).item()  # what the guard is for

    assert len(_host_reads(with_a_read, monkeypatch)) == step.forwards + 1


# --------------------------------------------------------------------------- one forward per encoder
def test_packed_concse_step_is_one_forward(backbones_dir):
    """The matmuls of a packed ConCSE step are those of one encoder forward (a CPU profile of the loss's forward);
    the length buckets run one forward per bucket."""
    from codeswitch.common.fastpath import bucket_features, pack_features

    model, loss, cols = _concse_parts(False, np.random.default_rng(3), rows=8, shortest=2, longest=30)
    linears = sum(isinstance(m, torch.nn.Linear) for m in model.modules())  # the matmuls of one forward

    def forward_of(features):
        def run():
            with torch.no_grad():
                loss(features, None)
        return run

    packed = [pack_features(cols, budgets=(8, 16), width=64)]
    buckets = bucket_features(cols, cost=8)
    assert len(buckets) > 1
    assert _count_ops(forward_of(packed), "aten::linear") == linears
    assert _count_ops(forward_of(buckets), "aten::linear") == linears * len(buckets)


# --------------------------------------------------------------------------- compiled: no graph breaks, few recompiles
def _packed_steps(n: int, seed: int = 5, budgets=(8, 16), width: int = 64):
    from codeswitch.common.fastpath import pack_features

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        longest = int(rng.choice([12, 31]))  # short and long steps: both budgets occur
        cols = _columns(rng, rows=8, shortest=2, longest=longest)
        out.append(pack_features(cols, budgets=budgets, width=width))
    return out


def test_packed_step_compiles_whole_and_recompiles_per_budget_at_most(backbones_dir):
    """Model + loss of a packed ConCSE step trace as one graph (0 graph breaks, ``torch._dynamo.explain``), and 50
    steps compile at most one graph per budget (``torch.compile(fullgraph=True)``; the eager backend: tracing only)."""
    from codeswitch.common.fastpath import embed_packed
    from codeswitch.concse.config import Config
    from codeswitch.concse.loss import concse_loss

    model, _, _ = _concse_parts(True)
    settings = Config().loss_settings()

    def step_loss(packed):
        return concse_loss(*embed_packed(model, packed, 6), **settings)["total"]

    steps = _packed_steps(50)
    budgets_seen = {p["input_ids"].shape[0] for p in steps}
    assert budgets_seen == {8, 16}  # both budgets occur: the recompile bound is tested, not trivially met
    assert_compiles_whole(step_loss, *steps)  # one graph; compiled, and once per budget at most
