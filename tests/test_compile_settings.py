"""The ``torch_compile`` setting of the Koglish-GLUE, ContrastiveMix, alignment, GLUECoS and CalBERT trainers (issue 24,
item 3).

Each trainer's model (and its loss where the model computes it: the HF classifiers) runs its training steps under
``torch.compile`` (``common.fastpath.compile_for_training``; with packing fixed shapes and ``fullgraph``).  Off in
every profile (the paper's comment: measure it on a GPU first) and then out of the run key; on, in the key.  On the
CPU a 2-step run compiled (inductor) trains with the eager run's per-step losses to 1e-4 (dropout off: compiled
kernels draw their dropout masks from another generator).  ConCSE's own: ``tests/test_concse_packing_train.py``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from codeswitch.common.fastpath import REDUCE_OVERHEAD

from .test_perf_guards_contrastivemix import tiny, token_cache  # noqa: F401  (fixtures)

STEPS = 2


@pytest.mark.parametrize("section", ["glue", "contrastivemix", "alignment", "calbert"])
def test_torch_compile_is_off_everywhere_and_keyed_only_when_on(section):
    import importlib

    from codeswitch.core.profiles import load_profile

    config = importlib.import_module(f"codeswitch.{section}.config")
    experiment = importlib.import_module(f"codeswitch.{section}")  # the package: plan(profile)
    for name in ("smoke", "paper", "paper-ci", "paper-gpu"):
        assert config.load(load_profile(name)).torch_compile is False, name
    off = experiment.plan(load_profile("smoke"))
    on = experiment.plan(load_profile("smoke", {f"{section}.torch_compile": True}))
    trained = [s for s in on if hasattr(s, "torch_compile")]
    assert trained and all(s.torch_compile is True and s.key()["torch_compile"] is True for s in trained)
    assert not any("torch_compile" in s.key() for s in off)  # off: the keys of earlier runs
    assert {s.key_hash() for s in trained}.isdisjoint(s.key_hash() for s in off)


def _recording(monkeypatch, module, name: str, losses: list, *, pick=lambda out: out, training=lambda *args: True):
    """Wrap ``module.name`` (a trainer's loss function) so that every loss it returns in a training step (``training``
    of its arguments) is recorded."""
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        out = original(*args, **kwargs)
        if training(*args):
            losses.append(float(pick(out).detach()))
        return out

    monkeypatch.setattr(module, name, wrapped)


def _both(run) -> tuple[np.ndarray, np.ndarray]:
    """``run(torch_compile)`` eager, then compiled: each run's per-step training losses (the compiled run compiled a
    graph, the eager one none)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    eager = run(False)
    assert counters["stats"]["unique_graphs"] == 0
    compiled = run(True)
    assert counters["stats"]["unique_graphs"] >= 1
    torch._dynamo.reset()
    assert len(eager) == len(compiled) == STEPS, (eager, compiled)
    return np.array(compiled), np.array(eager)


@pytest.mark.slow  # inductor compiles the forward and backward: ~1 min on a loaded CPU
def test_compiled_glue_training_gives_the_eager_loss(tmp_path, monkeypatch, backbones_dir):
    from codeswitch.core.models import resolve_model

    from .helpers import glue_spec
    from .test_glue_packing import _pairs, _run

    pytest.importorskip("torch._inductor")
    path, df = resolve_model("tiny-bert"), _pairs(16, 1)  # 2 steps of 8

    def run(on):
        spec = glue_spec(task="sst2", max_length=64, packing=True, num_train_epochs=1, torch_compile=True if on else None)
        losses, shapes, _, _ = _run(path, df, spec, str(tmp_path / str(on)))  # dropout off; the training losses
        assert all(s[-1] for s in shapes)  # packed steps
        return list(losses)

    np.testing.assert_allclose(*_both(run), rtol=1e-4)


@pytest.mark.slow
def test_compiled_calbert_finetuning_gives_the_eager_loss(monkeypatch, backbones_dir):
    from transformers import Trainer

    from .test_perf_guards_calbert import NoDropout, _finetune, _sail, _spec

    pytest.importorskip("torch._inductor")

    def run(on):
        losses = []
        with monkeypatch.context() as m:
            _recording(m, Trainer, "compute_loss", losses, pick=lambda out: out[0] if isinstance(out, tuple) else out,
                       training=lambda trainer, model, *a: model.training)
            results, _ = _finetune(_spec(torch_compile=on), _sail(4 * STEPS), [NoDropout()])
        assert results["packed"] is True
        return losses

    np.testing.assert_allclose(*_both(run), rtol=1e-4)


@pytest.mark.slow
def test_compiled_alignment_training_gives_the_eager_loss(monkeypatch, backbones_dir):
    """The eager run's losses compiled (`true`), and `true`'s under reduce-overhead (one real CPU run of that mode)."""
    from transformers import AutoModel, AutoTokenizer

    import codeswitch.alignment.train as tr
    from codeswitch.alignment.data import load_parallel
    from codeswitch.core.models import resolve_model

    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    pytest.importorskip("torch._inductor")
    path = resolve_model("tiny-bert")
    tok = AutoTokenizer.from_pretrained(path)
    data = load_parallel("synthetic", "train", limit=16)  # 2 steps of 8
    aligns, _, _ = A.stages(load_profile("smoke"))
    base = next(s for s in aligns if s.mode == "all_layers" and s.objective == "sentence")
    base = dataclasses.replace(base, batch_size=8, max_length=32, seed=0, num_train_epochs=1, packing=True)

    def run(on):
        losses = []
        with monkeypatch.context() as m:
            _recording(m, tr, "_batch_loss", losses, pick=lambda out: out["total"],
                       training=lambda aligner, *a: aligner.training)  # not the validation losses
            torch.manual_seed(0)
            encoder = AutoModel.from_pretrained(path, attn_implementation="sdpa", hidden_dropout_prob=0.0,
                                                attention_probs_dropout_prob=0.0)
            tr.train_alignment(tr.Aligner(encoder, "all_layers"), tok, data, data,
                               dataclasses.replace(base, torch_compile=on or None))
        return losses

    compiled, eager = _both(run)
    np.testing.assert_allclose(compiled, eager, rtol=1e-4)
    # reduce-overhead (tests/test_cudagraph_steps.py): a CPU records no CUDA graph (inductor counts a skip, so the mode
    # reached it) and the run is `true`'s; compiled here, after `true`, its kernels come from inductor's cache
    from torch._dynamo.utils import counters

    counters.clear()
    graphs = run(REDUCE_OVERHEAD)
    assert counters["inductor"]["cudagraph_skips"] >= 1 and counters["stats"]["unique_graphs"] >= 1
    torch._dynamo.reset()
    np.testing.assert_allclose(graphs, compiled, rtol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["ner"])
def test_compiled_gluecos_finetuning_gives_the_eager_loss(monkeypatch, backbones_dir, task):
    from transformers import AutoModel, AutoTokenizer

    import codeswitch.alignment.gluecos_train as gt
    from codeswitch import alignment as A
    from codeswitch.alignment.plan import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.core.models import resolve_model
    from codeswitch.core.profiles import load_profile

    pytest.importorskip("torch._inductor")
    path = resolve_model("tiny-bert")
    tok = AutoTokenizer.from_pretrained(path)
    _, fine, _ = A.stages(load_profile("smoke"))
    base = dataclasses.replace(next(s for s in fine if s.task == task), num_train_epochs=1, batch_size=8, max_length=64,
                               seed=0, packing=True)
    data = {k: v[: 8 * STEPS] for k, v in load_task(SYNTHETIC_GLUECOS, task).items()}

    def run(on):
        losses = []
        with monkeypatch.context() as m:
            _recording(m, gt, "_loss", losses)
            encoder = AutoModel.from_pretrained(path, attn_implementation="sdpa", hidden_dropout_prob=0.0,
                                                attention_probs_dropout_prob=0.0)
            gt.finetune(task, data, encoder, tok, dataclasses.replace(base, torch_compile=True if on else None))
        return losses

    np.testing.assert_allclose(*_both(run), rtol=1e-4)


@pytest.mark.slow
def test_compiled_contrastivemix_training_gives_the_eager_loss(monkeypatch, tiny, token_cache):
    """Both encoders' packed forwards compiled (the loss outside them): the eager run's per-step losses."""
    import copy

    import codeswitch.contrastivemix.train as tr

    from .test_perf_guards_contrastivemix import _spec, _train

    pytest.importorskip("torch._inductor")
    model, tokenizer = copy.deepcopy(tiny[0]), tiny[1]
    for m in model.modules():  # no dropout: the compiled kernels draw their masks from another generator
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0

    def run(on):
        losses = []
        with monkeypatch.context() as m:
            _recording(m, tr, "contrastivemix_loss", losses, pick=lambda out: out["total"])
            _train((model, tokenizer), _spec(packing=True, torch_compile=True if on else None),
                   n_queries=8 * STEPS)
        return losses

    np.testing.assert_allclose(*_both(run), rtol=1e-4)
