"""Performance guards of GLUECoS fine-tuning (issue 24, item 7), on tiny-bert and the shipped GLUECoS look-alikes.

One optimiser step of ``alignment.gluecos_train`` (``_train_step`` on a batch that
``_host_batch`` prepared, as ``finetune`` runs it) is profiled and instrumented on
the CPU: one forward, no more fill kernels than without deterministic mode, and no
host read (the padding mask is decided on the host, ``fastpath.sdpa_ready``, so
transformers never asks the device about it).  With ``alignment.gluecos_packing``
(``gluecos_train.PackedSteps``) each step is one packed, fixed-shape forward for the
three heads: its loss and gradients equal the padded step's in fp32 (QA: the padded
step's softmax restricted to each window's tokens, see ``PackedSteps``), an epoch
has at most four input shapes, and the step compiles as one graph, once per shape.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

from .helpers import alignment_smoke, tiny_bert
from .test_perf_guards import _count_ops, _host_reads
from .test_perf_guards_alignment import fill_counts


@pytest.fixture(scope="module")
def setup(backbones_dir):
    _, _, fine, _ = alignment_smoke()
    return (*tiny_bert(), fine)


def _features_of(setup, task: str, rows: int = 16, tokenizer=None):
    """``(kind, labels, features)`` of the first ``rows`` training rows of ``task``'s shipped look-alike (max_length 64)."""
    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.alignment.gluecos_train import TASKS, _features, _labels_of

    _, tok, fine = setup
    args = dataclasses.replace(next(s for s in fine if s.task == task), batch_size=8, max_length=64, seed=0)
    data = {k: v[:rows] for k, v in load_task(SYNTHETIC_GLUECOS, task).items()}
    kind, labels = TASKS[task].kind, _labels_of(task, data)
    return kind, labels, _features(kind, data["train"], tokenizer or tok, args, True, {lab: i for i, lab in enumerate(labels)})


def _packer(kind, feats, tok):
    from codeswitch.alignment.gluecos_train import PackedSteps

    return PackedSteps(kind, feats, tok.pad_token_id, batch_size=8, max_length=64, seed=0)


def _step(setup, task: str, *, sdpa_host: bool = True, fused: bool = False, packed: bool = False):
    """One GLUECoS training step of ``task`` (sentiment: sequence head; ner: token head; qa: span head) on the shipped
    look-alikes; ``packed``: the batch packed (``alignment.gluecos_packing``, ``PackedSteps``)."""
    from transformers import AutoModel, get_linear_schedule_with_warmup

    from codeswitch.alignment.gluecos_train import TaskModel, _host_batch, _train_step

    path, tok, _ = setup
    kind, labels, feats = _features_of(setup, task)
    torch.manual_seed(0)
    model = TaskModel(AutoModel.from_pretrained(path, attn_implementation="sdpa"), kind, num_labels=max(len(labels), 1)).train()
    batch = _host_batch(feats[:8], tok.pad_token_id, sdpa=sdpa_host, pack=_packer(kind, feats, tok) if packed else None)
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


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("task,extra", [("sentiment", 1), ("ner", 0), ("qa", 0)])
def test_gluecos_step_is_one_forward(setup, task, extra, packed):
    """Every Linear once (the sequence head runs BERT's pooler on [CLS] itself, after BertModel ran it: one more),
    padded or packed."""
    step = _step(setup, task, packed=packed)
    assert _count_ops(step, "aten::linear") == step.linears + extra


@pytest.mark.parametrize("task", ["sentiment", "ner", "qa"])
def test_no_host_reads_in_a_gluecos_step(setup, task, monkeypatch):
    """No host read with the mask decided on the host, padded or packed; the 2-D mask makes transformers read it (the
    guard can fail)."""
    from codeswitch.core.utils import set_seed

    set_seed(0)
    assert _host_reads(_step(setup, task, fused=True), monkeypatch) == []
    assert _host_reads(_step(setup, task, fused=True, packed=True), monkeypatch) == []
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


# --------------------------------------------------------------------------- packed steps (alignment.gluecos_packing)
def _loss_and_grads(model, kind, batch):
    """The training step's fp32 loss (``gluecos_train._loss``) and every parameter's gradient, for one host batch."""
    from codeswitch.alignment.gluecos_train import _MODEL_KEYS, _loss

    model.zero_grad(set_to_none=True)
    inputs = {k: batch[k] for k in _MODEL_KEYS if k in batch}
    inputs.setdefault("attention_mask", None)
    logits = model(**inputs).float()
    if kind == "span" and "starts" not in batch:  # the reference: each window's softmax over its own tokens
        T = logits.shape[1]
        lengths = torch.tensor([int(n) for n in batch["lengths"]])
        inside = torch.arange(T)[None, :] < lengths[:, None]  # (B, T)
        logits = logits.masked_fill(~inside[..., None], torch.finfo(logits.dtype).min)
    loss = _loss(kind, logits, batch)
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("n", [8, 5])
@pytest.mark.parametrize("model_name", ["tiny-bert", "tiny-xlmr"])
@pytest.mark.parametrize("task", ["sentiment", "ner", "qa"])
def test_packed_gluecos_step_equals_padded_step(setup, task, model_name, n):
    """fp32, no dropout: the packed step's loss and every gradient equal the padded step's to 1e-5 relative, for the
    sequence, token and span heads (tiny-xlmr: positions counted from its padding index), also for an epoch's last,
    smaller batch (``n`` = 5 of 8 rows: completed with ignored sequences)."""
    from transformers import AutoModel, AutoTokenizer

    from codeswitch.alignment.gluecos_train import TaskModel, _host_batch
    from codeswitch.core.models import resolve_model

    path = resolve_model(model_name)
    tok = AutoTokenizer.from_pretrained(path)
    kind, labels, feats = _features_of(setup, task, tokenizer=tok)
    rows = feats[:n]
    assert len({len(f["input_ids"]) for f in rows}) > 1  # the padded batch has padding: the comparison means something
    torch.manual_seed(0)
    encoder = AutoModel.from_pretrained(path, attn_implementation="sdpa")
    H = encoder.config.hidden_size
    model = TaskModel(encoder, kind, num_labels=max(len(labels), 1),
                      head=torch.nn.Linear(H, H) if task == "ner" else None)  # an aligned head (Table 3.2) on one task
    model.eval()  # no dropout: the two layouts compute the same function
    padded = _host_batch(rows, tok.pad_token_id, sdpa=True)
    padded["lengths"] = torch.tensor([len(f["input_ids"]) for f in rows])
    packed = _host_batch(rows, tok.pad_token_id, sdpa=True, pack=_packer(kind, feats, tok))
    assert packed["input_ids"].shape[1] == 256 and packed["starts"].shape == (8,)
    ref, ref_g = _loss_and_grads(model, kind, padded)
    got, got_g = _loss_and_grads(model, kind, packed)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=0)
    assert got_g.keys() == ref_g.keys() and len(ref_g) > 0
    scale = max(g.abs().max() for g in ref_g.values())
    for n in ref_g:
        torch.testing.assert_close(got_g[n], ref_g[n], rtol=1e-5, atol=1e-5 * float(scale), msg=n)


@pytest.mark.parametrize("task", ["sentiment", "ner", "qa"])
def test_packed_gluecos_epoch_has_few_shapes_and_compiles_once_per_shape(setup, task):
    """An epoch of packed batches (96 rows, 8 a step): at most four budgets, at most that many input shapes (≤ 16);
    the step (model + loss) traces as one graph, 0 graph breaks, and compiled makes one graph per shape at most."""
    from transformers import AutoModel

    from codeswitch.alignment.gluecos_train import _MODEL_KEYS, TaskModel, _host_batch, _loss

    from .helpers import assert_compiles_whole

    path, tok, _ = setup
    kind, labels, feats = _features_of(setup, task, rows=96)
    pack = _packer(kind, feats, tok)
    batches = [_host_batch(feats[k : k + 8], tok.pad_token_id, sdpa=True, pack=pack) for k in range(0, len(feats), 8)]
    shapes = {b["input_ids"].shape for b in batches}
    assert len(batches) >= 6 and 1 <= len(shapes) <= len(pack.budgets) <= 4
    torch.manual_seed(0)
    model = TaskModel(AutoModel.from_pretrained(path, attn_implementation="sdpa"), kind, num_labels=max(len(labels), 1))
    model.train()

    def step_loss(batch):
        return _loss(kind, model(**{k: batch[k] for k in _MODEL_KEYS if k in batch}).float(), batch)

    assert_compiles_whole(step_loss, *batches)


def test_packed_finetune_runs_each_head_and_refuses_eager_attention(setup):
    """``finetune`` with ``packing`` trains each head on packed steps (scores in range); an encoder whose attention
    cannot take the packed block-diagonal mask is an error naming the setting."""
    from transformers import AutoModel

    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.alignment.gluecos_train import finetune

    path, tok, fine = setup
    for task in ("sentiment", "ner", "qa"):
        args = dataclasses.replace(next(s for s in fine if s.task == task), num_train_epochs=1, batch_size=8, max_length=64,
                                   seed=0, packing=True)
        data = {k: v[:24] for k, v in load_task(SYNTHETIC_GLUECOS, task).items()}
        out = finetune(task, data, AutoModel.from_pretrained(path, attn_implementation="sdpa"), tok, args)
        assert 0.0 <= out["validation"] <= 100.0, task
    args = dataclasses.replace(next(s for s in fine if s.task == "sentiment"), packing=True)
    data = {k: v[:8] for k, v in load_task(SYNTHETIC_GLUECOS, "sentiment").items()}
    with pytest.raises(ValueError, match="alignment.gluecos_packing"):
        finetune("sentiment", data, AutoModel.from_pretrained(path, attn_implementation="eager"), tok, args)
