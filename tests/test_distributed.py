"""In-batch negatives across processes: 2 CPU processes (gloo, DDP) give the single-process loss and gradients.

For each loss — ConCSE (our gather: every process evaluates the global loss, gradient
through its own slice, × world), mDPR's IR loss (the same helpers) and SimCSE
(sentence-transformers' MultipleNegativesRankingLoss with ``gather_across_devices``) —
the global batch of 8 rows is split 4 + 4 over two processes; after DDP has averaged the
gradients, the loss on each process and the gradients must equal those of one process
that sees all 8 rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

from codeswitch.concse.config import Config
from codeswitch.concse.loss import ConCSELoss
from codeswitch.common.fastpath import bucket_features

from .helpers import BagEncoder

WORLD, B = 2, 8  # global batch 8 = 2 processes × 4


def global_columns(n_columns: int) -> list[dict[str, torch.Tensor]]:
    """``n_columns`` right-padded token columns of the global batch (the same on every process)."""
    rng = np.random.default_rng(7)
    cols = []
    for _ in range(n_columns):
        lengths = rng.integers(2, 11, size=B)
        ids = torch.zeros(B, 10, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, n in enumerate(lengths):
            ids[i, :n] = torch.from_numpy(rng.integers(1, 60, size=n))
            mask[i, :n] = 1
        cols.append({"input_ids": ids, "attention_mask": mask})
    return cols


def local(cols, rank: int, world: int):
    b = B // world
    return [{k: v[rank * b : (rank + 1) * b] for k, v in c.items()} for c in cols]


def run_losses(rank: int, world: int, wrap) -> dict:
    """Each loss on this process's slice; returns {case: (loss value, {param: grad})}."""
    from codeswitch.core.distributed import gather_with_grad, sum_local_gradients
    from codeswitch.concse.loss import simcse_loss
    from codeswitch.contrastivemix.loss import ir_loss

    out = {}

    def fresh():
        torch.manual_seed(0)
        return BagEncoder()

    # ConCSE through its wrapper, the step in length buckets (several forwards per step)
    model = fresh()
    loss_fn = ConCSELoss(wrap(model), **Config().loss_settings(), gather_across_devices=world > 1)
    feats = bucket_features(local(global_columns(6), rank, world), cost=1)
    total = sum(loss_fn(feats, None).values())
    total.backward()
    out["concse"] = (float(total.detach()), {k: p.grad.clone() for k, p in model.named_parameters()})

    # mDPR: q · [p+; p-]ᵀ over the gathered global batch
    model = fresh()
    enc = wrap(model)
    q, pos, neg = (gather_with_grad(enc(c)["sentence_embedding"]) for c in local(global_columns(3), rank, world))
    loss = sum_local_gradients(ir_loss(q, pos, neg))
    loss.backward()
    out["mdpr"] = (float(loss.detach()), {k: p.grad.clone() for k, p in model.named_parameters()})

    # SimCSE: sentence-transformers' MNRL, each process scoring its own anchors against all candidates
    model = fresh()
    mnrl = simcse_loss(wrap(model), temperature=0.05, gather_across_devices=world > 1)
    loss = mnrl(local(global_columns(3), rank, world), None)
    loss.backward()
    out["simcse"] = (float(loss.detach()), {k: p.grad.clone() for k, p in model.named_parameters()})
    return out


def _worker(rank: int, world: int, init_file: str, out_dir: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        torch.save(run_losses(rank, world, wrap=DDP), f"{out_dir}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def two_processes(tmp_path_factory):
    d = tmp_path_factory.mktemp("ddp")
    mp.spawn(_worker, args=(WORLD, str(d / "rendezvous"), str(d)), nprocs=WORLD, join=True)
    return [torch.load(d / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]


@pytest.mark.parametrize("case", ["concse", "mdpr", "simcse"])
def test_two_processes_equal_one(two_processes, case):
    single_loss, single_grads = run_losses(0, 1, wrap=lambda m: m)[case]
    for rank, result in enumerate(two_processes):
        loss, grads = result[case]
        if case != "simcse":  # our gather: every process evaluates the loss of the global batch
            assert loss == pytest.approx(single_loss, rel=1e-6), f"rank {rank}"
        for name, g in single_grads.items():
            torch.testing.assert_close(grads[name], g, rtol=1e-5, atol=1e-6, msg=f"{case}, rank {rank}, gradient of {name}")
    if case == "simcse":  # MNRL: each process's loss is its own anchors' mean; their mean is the global loss
        assert np.mean([r[case][0] for r in two_processes]) == pytest.approx(single_loss, rel=1e-6)


def test_single_process_is_the_identity():
    from codeswitch.core.distributed import gather_with_grad, rank, sum_local_gradients, world_size

    x = torch.randn(3, 2, requires_grad=True)
    assert gather_with_grad(x) is x and sum_local_gradients(x) is x
    assert (world_size(), rank()) == (1, 0)
