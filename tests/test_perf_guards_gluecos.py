"""Performance guards of GLUECoS fine-tuning (issue 24, item 7), on tiny-bert and the shipped GLUECoS look-alikes.

One optimiser step of ``alignment.gluecos_train`` (``_train_step`` on a batch that
``_host_batch`` prepared, as ``finetune`` runs it) is profiled and instrumented on
the CPU: one forward, no more fill kernels than without deterministic mode, and no
host read (the padding mask is decided on the host, ``fastpath.sdpa_ready``, so
transformers never asks the device about it).  The steps are padded, one forward
each (batch ≤ 16: no packing; the QA head reads every token of a window).
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from .test_perf_guards import _count_ops, _host_reads
from .test_perf_guards_alignment import fill_counts


@pytest.fixture(scope="module")
def setup(backbones_dir):
    from transformers import AutoTokenizer

    from codeswitch import alignment as A
    from codeswitch.core.models import resolve_model
    from codeswitch.core.profiles import load_profile

    _, fine, _ = A.stages(load_profile("smoke"))
    path = resolve_model("tiny-bert")
    return path, AutoTokenizer.from_pretrained(path), fine


def _step(setup, task: str, *, sdpa_host: bool = True, fused: bool = False):
    """One GLUECoS training step of ``task`` (sentiment: sequence head; ner: token head) on the shipped look-alikes."""
    from transformers import AutoModel, get_linear_schedule_with_warmup

    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.alignment.gluecos_train import TASKS, TaskModel, _features, _host_batch, _labels_of, _train_step

    path, tok, fine = setup
    args = dataclasses.replace(next(s for s in fine if s.task == task), batch_size=8, max_length=64, seed=0)
    data = {k: v[:16] for k, v in load_task(SYNTHETIC_GLUECOS, task).items()}
    kind, labels = TASKS[task].kind, _labels_of(task, data)
    torch.manual_seed(0)
    model = TaskModel(AutoModel.from_pretrained(path, attn_implementation="sdpa"), kind, num_labels=max(len(labels), 1)).train()
    feats = _features(kind, data["train"], tok, args, True, {lab: i for i, lab in enumerate(labels)})
    batch = _host_batch(feats[:8], tok.pad_token_id, sdpa=sdpa_host)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, **({"fused": True} if fused else {"foreach": True}))
    sched = get_linear_schedule_with_warmup(opt, 1, 10)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    autocast = lambda: torch.autocast(device_type="cpu", enabled=False)  # noqa: E731

    def step():
        _train_step(model, kind, batch, opt, sched, scaler, 1.0, autocast, "cpu")

    step()
    step.linears = sum(isinstance(m, nn.Linear) for m in model.modules())
    step.model, step.batch = model, batch
    return step


@pytest.mark.parametrize("task,extra", [("sentiment", 1), ("ner", 0)])
def test_gluecos_step_is_one_forward(setup, task, extra):
    """Every Linear once (the sequence head runs BERT's pooler on [CLS] itself, after BertModel ran it: one more)."""
    step = _step(setup, task)
    assert _count_ops(step, "aten::linear") == step.linears + extra


@pytest.mark.parametrize("task", ["sentiment", "ner"])
def test_no_host_reads_in_a_gluecos_step(setup, task, monkeypatch):
    """No host read with the mask decided on the host; the 2-D mask makes transformers read it (the guard can fail)."""
    from codeswitch.core.utils import set_seed

    set_seed(0)
    assert _host_reads(_step(setup, task, fused=True), monkeypatch) == []
    assert len(_host_reads(_step(setup, task, sdpa_host=False, fused=True), monkeypatch)) == 1


def test_gluecos_step_adds_no_fill_kernels(setup):
    """``set_seed``'s deterministic mode runs no more ``aten::fill_`` in a step than no deterministic mode."""
    trainers, no_fill = fill_counts(lambda: _step(setup, "sentiment"))
    assert trainers <= no_fill, (trainers, no_fill)


@pytest.mark.parametrize("task", ["sentiment", "ner"])
def test_host_mask_gives_the_padded_logits(setup, task):
    """The host-decided mask is the attention transformers builds from the 2-D one: equal logits."""
    step = _step(setup, task)
    step.model.eval()
    ref = _step(setup, task, sdpa_host=False).batch
    with torch.no_grad():
        got = step.model(step.batch["input_ids"], step.batch.get("attention_mask"), step.batch.get("token_type_ids"))
        want = step.model(ref["input_ids"], ref["attention_mask"], ref.get("token_type_ids"))
    assert step.batch.get("attention_mask") is None or step.batch["attention_mask"].ndim == 4
    torch.testing.assert_close(got, want, rtol=0, atol=0)
