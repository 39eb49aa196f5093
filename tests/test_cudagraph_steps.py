"""``torch_compile: reduce-overhead``: CUDA graphs over the packed budgets (issue 24, item 3), built and guarded on the CPU.

* the setting is ``false | true | reduce-overhead`` in every section; ``reduce-overhead`` without packing is a config
  error naming both settings; in the run key as written (``true``'s keys unchanged, ``false`` out of the key);
* per trainer (Koglish-GLUE, ConCSE, ContrastiveMix, alignment, GLUECoS, CalBERT), two packed steps with
  ``torch.compile`` replaced by a recorder that returns the eager function: the compile asked for
  ``mode="reduce-overhead", fullgraph=True, dynamic=False``, and ``torch.compiler.cudagraph_mark_step_begin`` ran once
  per training step (``fastpath.cudagraph_step_begin``: the HF Trainer's callback, the hand-written loops' call);
* one real CPU run (inductor, which records no CUDA graph on a CPU: it counts a skip) trains with the per-step losses
  of ``true``: ``tests/test_compile_settings.py::test_compiled_alignment_training_gives_the_eager_loss``, after its
  ``true`` run (whose kernels it reuses from inductor's cache: a second test would compile them again);
* on CUDA only (skipped elsewhere): a packed run under ``reduce-overhead`` records CUDA graphs (no skip) and trains
  with the per-step losses of ``true`` (fp32 1e-5, bf16 1e-3) — for whoever has a GPU next.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from codeswitch.common.fastpath import REDUCE_OVERHEAD

from .test_compile_settings import _recording
from .test_perf_guards_contrastivemix import tiny, token_cache  # noqa: F401  (fixtures)

STEPS = 2
SECTIONS = ["glue", "concse", "contrastivemix", "alignment", "calbert"]
PACKING = {"glue": ["packing"], "concse": ["packing"], "contrastivemix": ["packing"], "alignment": ["packing", "gluecos_packing"],
           "calbert": ["packing"]}


# --------------------------------------------------------------------------- the setting
@pytest.mark.parametrize("section", SECTIONS)
def test_reduce_overhead_without_packing_is_a_config_error(section):
    import importlib

    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    config = importlib.import_module(f"codeswitch.{section}.config")
    packed = {f"{section}.{name}": True for name in PACKING[section]}
    assert config.load(load_profile("smoke", {f"{section}.torch_compile": REDUCE_OVERHEAD, **packed})).torch_compile == REDUCE_OVERHEAD
    for missing in PACKING[section]:  # each packing setting it needs, off
        with pytest.raises(ConfigError) as err:
            config.load(load_profile("smoke", {f"{section}.torch_compile": REDUCE_OVERHEAD, **packed, f"{section}.{missing}": False}))
        assert (f"{section}.torch_compile: reduce-overhead needs {section}.{missing}: true "
                "(CUDA graphs need the fixed token budgets)") in str(err.value)
    with pytest.raises(ConfigError, match="torch_compile"):
        config.load(load_profile("smoke", {f"{section}.torch_compile": "max-autotune"}))


@pytest.mark.parametrize("section", SECTIONS)
def test_reduce_overhead_is_in_the_key_as_written_and_true_keys_are_unchanged(section):
    import importlib

    from codeswitch.core.profiles import load_profile

    experiment = importlib.import_module(f"codeswitch.{section}")  # the package: plan(profile)
    packed = {f"{section}.{name}": True for name in PACKING[section]}
    plans = {value: experiment.plan(load_profile("smoke", {**packed, f"{section}.torch_compile": value}))
             for value in (False, True, REDUCE_OVERHEAD)}
    keyed = {value: [s for s in plan if getattr(s, "torch_compile", None)] for value, plan in plans.items()}
    assert not keyed[False] and keyed[True] and len(keyed[True]) == len(keyed[REDUCE_OVERHEAD])
    assert all(s.key()["torch_compile"] is True for s in keyed[True])  # `true`: the keys of earlier runs
    assert all(s.key()["torch_compile"] == REDUCE_OVERHEAD for s in keyed[REDUCE_OVERHEAD])
    assert {s.key_hash() for s in keyed[True]}.isdisjoint(s.key_hash() for s in keyed[REDUCE_OVERHEAD])


# --------------------------------------------------------------------------- each trainer, compile recorded (eager steps)
@pytest.fixture()
def recorded(monkeypatch):
    """``torch.compile`` records its keyword arguments and returns the function as it is; the CUDA-graph step marks are
    counted."""
    calls, marks = [], []

    def compile_(fn, **kwargs):
        calls.append(kwargs)
        return fn

    monkeypatch.setattr(torch, "compile", compile_)
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    return SimpleNamespace(calls=calls, marks=marks)


def _check(recorded, steps: int, compiles: int = 1) -> None:
    assert steps == STEPS
    assert recorded.calls == [{"mode": REDUCE_OVERHEAD, "dynamic": False, "fullgraph": True}] * compiles
    assert len(recorded.marks) == steps  # one mark per training step, before its forward


def test_glue_marks_each_step(recorded, tmp_path, backbones_dir):
    from codeswitch.core.models import resolve_model

    from .helpers import glue_spec
    from .test_glue_packing import _pairs, _run

    spec = glue_spec(task="sst2", max_length=64, packing=True, num_train_epochs=1, torch_compile=REDUCE_OVERHEAD)
    losses, shapes, _, _ = _run(resolve_model("tiny-bert"), _pairs(8 * STEPS, 1), spec, str(tmp_path))
    assert all(s[-1] for s in shapes)  # packed steps
    _check(recorded, len(losses))


def test_concse_marks_each_step(recorded, tmp_path, monkeypatch, backbones_dir):
    from .helpers import tiny_nli
    from .test_concse_packing_train import _spec, _train_recording

    nli, dev = tiny_nli(n=8 * STEPS)
    spec, profile = _spec(tmp_path, "concse", packing=True, torch_compile=REDUCE_OVERHEAD)
    losses, shapes, _ = _train_recording(monkeypatch, dataclasses.replace(spec, num_train_epochs=1), profile, nli, dev)
    assert all(len(s) == 1 for s in shapes)  # one packed forward a step
    _check(recorded, len(losses))


def test_contrastivemix_marks_each_step(recorded, tiny, token_cache, monkeypatch):  # noqa: F811
    import codeswitch.contrastivemix.train as tr

    from .test_perf_guards_contrastivemix import _spec, _train

    losses = []
    _recording(monkeypatch, tr, "contrastivemix_loss", losses, pick=lambda out: out["total"])
    _train(tiny, _spec(packing=True, torch_compile=REDUCE_OVERHEAD), n_queries=8 * STEPS)
    _check(recorded, len(losses))  # the dual encoder: one compile, both encoders in it


def _alignment_spec(**changes):
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    aligns, _, _ = A.stages(load_profile("smoke"))
    base = next(s for s in aligns if s.mode == "all_layers" and s.objective == "sentence")
    return dataclasses.replace(base, batch_size=8, max_length=32, seed=0, num_train_epochs=1, packing=True, **changes)


def _train_alignment(spec, *, device="cpu", pairs=8 * STEPS, losses=None, monkeypatch=None):
    """Train the tiny BERT aligner (all layers, Lc, dropout off) on the synthetic pairs; record its training losses."""
    from transformers import AutoModel, AutoTokenizer

    import codeswitch.alignment.train as tr
    from codeswitch.alignment.data import load_parallel
    from codeswitch.core.models import resolve_model

    path = resolve_model("tiny-bert")
    data = load_parallel("synthetic", "train", limit=pairs)
    if monkeypatch is not None:
        _recording(monkeypatch, tr, "_batch_loss", losses, pick=lambda out: out["total"],
                   training=lambda aligner, *a: aligner.training)  # not the validation losses
    torch.manual_seed(0)
    encoder = AutoModel.from_pretrained(path, attn_implementation="sdpa", hidden_dropout_prob=0.0,
                                        attention_probs_dropout_prob=0.0)
    return tr.train_alignment(tr.Aligner(encoder, "all_layers"), AutoTokenizer.from_pretrained(path), data, data, spec,
                              device=device)


def test_alignment_marks_each_step(recorded, monkeypatch, backbones_dir):
    losses = []
    history = _train_alignment(_alignment_spec(torch_compile=REDUCE_OVERHEAD), losses=losses, monkeypatch=monkeypatch)
    assert history["steps"] == len(losses)
    _check(recorded, len(losses))  # f compiled, its frozen copy f0 not


def test_gluecos_marks_each_step(recorded, monkeypatch, backbones_dir):
    from transformers import AutoModel, AutoTokenizer

    import codeswitch.alignment.gluecos_train as gt
    from codeswitch import alignment as A
    from codeswitch.alignment.plan import SYNTHETIC_GLUECOS
    from codeswitch.alignment.gluecos_data import load_task
    from codeswitch.core.models import resolve_model
    from codeswitch.core.profiles import load_profile

    path = resolve_model("tiny-bert")
    _, fine, _ = A.stages(load_profile("smoke"))
    spec = dataclasses.replace(next(s for s in fine if s.task == "ner"), num_train_epochs=1, batch_size=8, max_length=64,
                               seed=0, packing=True, torch_compile=REDUCE_OVERHEAD)
    data = {k: v[: 8 * STEPS] for k, v in load_task(SYNTHETIC_GLUECOS, "ner").items()}
    losses = []
    _recording(monkeypatch, gt, "_loss", losses)
    gt.finetune("ner", data, AutoModel.from_pretrained(path, attn_implementation="sdpa"), AutoTokenizer.from_pretrained(path),
                spec)
    _check(recorded, len(losses))


def test_calbert_marks_each_step(recorded, monkeypatch, backbones_dir):
    from transformers import Trainer

    from .test_perf_guards_calbert import _finetune, _sail, _spec

    losses = []
    _recording(monkeypatch, Trainer, "compute_loss", losses, pick=lambda out: out[0] if isinstance(out, tuple) else out,
               training=lambda trainer, model, *a: model.training)
    results, _ = _finetune(_spec(torch_compile=REDUCE_OVERHEAD), _sail(4 * STEPS), [])
    assert results["packed"] is True
    _check(recorded, len(losses))


def test_a_model_that_trains_padded_falls_back_to_the_default_mode(recorded):
    """mBART in GLUE, a CalBERT head that does not read the first token: no fixed shapes, so no CUDA graphs."""
    from codeswitch.common.fastpath import compile_for_training

    module = torch.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="default mode"):
        compile_for_training(module, fixed_shapes=False, mode=REDUCE_OVERHEAD)
    compile_for_training(torch.nn.Linear(2, 2), fixed_shapes=True, mode=True)
    assert recorded.calls == [{"dynamic": None, "fullgraph": False}, {"dynamic": False, "fullgraph": True}]  # `true` as always
    with pytest.raises(ValueError, match="mode"):
        compile_for_training(module, fixed_shapes=True, mode="max-autotune")


# --------------------------------------------------------------------------- real compiles
def _compiled_losses(spec, *, device="cpu", pairs=8 * STEPS) -> tuple[list[float], int]:
    """The per-step training losses of a compiled alignment run (the packed step of
    ``test_compile_settings.test_compiled_alignment_training_gives_the_eager_loss``) and inductor's count of CUDA-graph
    skips."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    losses = []
    with pytest.MonkeyPatch.context() as m:
        _train_alignment(spec, device=device, pairs=pairs, losses=losses, monkeypatch=m)
    skips = counters["inductor"]["cudagraph_skips"]
    assert counters["stats"]["unique_graphs"] >= 1
    return losses, skips


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a CUDA device")
@pytest.mark.parametrize("precision, rtol", [("fp32", 1e-5), ("bf16", 1e-3)])
def test_reduce_overhead_records_cuda_graphs_and_trains_as_true(backbones_dir, precision, rtol):
    """A packed alignment run on the GPU: its step's forward and backward recorded as CUDA graphs (no skip, a tree
    with recorded nodes), over 3 steps the per-step losses of `true`."""
    pytest.importorskip("torch._inductor")
    from torch._inductor import cudagraph_trees

    steps = 3
    plain, _ = _compiled_losses(_alignment_spec(torch_compile=True, precision=precision), device="cuda", pairs=8 * steps)
    graphs, skips = _compiled_losses(_alignment_spec(torch_compile=REDUCE_OVERHEAD, precision=precision), device="cuda",
                                     pairs=8 * steps)
    manager = cudagraph_trees.get_manager(torch.cuda.current_device(), create_if_none_exists=False)
    assert skips == 0
    assert manager is not None and sum(len(nodes) for nodes in manager.roots.values()) >= 1
    torch._dynamo.reset()
    assert len(plain) == len(graphs) == steps
    np.testing.assert_allclose(graphs, plain, rtol=rtol)
