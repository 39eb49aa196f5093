"""Tiny backbones built from config; hub references fail fast and clearly when offline."""

from __future__ import annotations

import time

import pytest
import torch

from codeswitch.core.hub import MissingResourceError, resolve
from codeswitch.core import models as M
from codeswitch.core.checkpoints import CheckpointWarning, checkpoint_ok
from codeswitch.core.models import TINY_BACKBONES, TINY_PRETRAINED, build_tiny_backbone, resolve_model


@pytest.mark.parametrize("name", sorted(TINY_BACKBONES) + sorted(TINY_PRETRAINED))
def test_tiny_backbone_loads_like_a_hub_model(name, backbones_dir):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = resolve_model(name)
    tok = AutoTokenizer.from_pretrained(path)
    enc = tok(["the movie was 영화 .", "नमस्ते dost"], ["a pair", "of sentences"], padding=True, return_tensors="pt")
    assert tok.unk_token_id not in enc["input_ids"].flatten().tolist()  # byte-level: nothing is unknown
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=3)
    logits = model(**enc).logits
    assert logits.shape == (2, 3) and torch.isfinite(logits).all()
    assert (backbones_dir / path.split("/")[-1] / "model.safetensors").is_file()
    # the depth read from the recipe, without building (alignment's align_layer check), is the built model's
    built = model.config.num_hidden_layers if hasattr(model.config, "num_hidden_layers") else model.config.encoder_layers
    assert M.backbone_depth(name) == built == 2


def test_backbone_depth_of_a_slice_and_of_a_real_model(backbones_dir):
    """A slice of the bundled MiniLM keeps its recipe's layers; the bundled model itself is read from its config.json."""
    from transformers import AutoConfig

    assert M.backbone_depth("minilm-l1l6") == len(M.PRETRAINED_SLICES["minilm-l1l6"]["layers"]) == 2
    assert AutoConfig.from_pretrained(resolve_model("minilm-l1l6")).num_hidden_layers == 2
    assert M.backbone_depth("sentence-transformers/all-MiniLM-L6-v2") == 6


def test_tiny_backbone_is_deterministic(tmp_path):
    from safetensors.torch import load_file

    a = load_file(build_tiny_backbone("tiny-bert", tmp_path / "a") / "model.safetensors")
    b = load_file(build_tiny_backbone("tiny-bert", tmp_path / "b") / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ta = (build_tiny_backbone("tiny-bert", tmp_path / "a") / "tokenizer.json").read_text()
    tb = (build_tiny_backbone("tiny-bert", tmp_path / "b") / "tokenizer.json").read_text()
    assert ta == tb


@pytest.fixture
def short_mlm(monkeypatch):
    """tiny-bert-mlm with 8 pre-training steps instead of its recipe's: the same code, fast."""
    monkeypatch.setitem(TINY_PRETRAINED, "tiny-bert-mlm", TINY_PRETRAINED["tiny-bert-mlm"] | {"steps": 8, "warmup_steps": 2})
    return "tiny-bert-mlm"


def test_mlm_backbone_is_deterministic_cached_and_moved_from_its_base(tmp_path, short_mlm):
    from safetensors.torch import load_file

    a_dir, b_dir = build_tiny_backbone(short_mlm, tmp_path / "a"), build_tiny_backbone(short_mlm, tmp_path / "b")
    a, b = load_file(a_dir / "model.safetensors"), load_file(b_dir / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)  # deterministic
    assert (a_dir / "tokenizer.json").read_text() == (b_dir / "tokenizer.json").read_text()
    assert checkpoint_ok(a_dir) and (tmp_path / "a" / M.backbone_id("tiny-bert")).is_dir()  # its base, built beside it
    base = load_file(tmp_path / "a" / M.backbone_id("tiny-bert") / "model.safetensors")
    key = "embeddings.word_embeddings.weight"
    assert key in a and key in base and not torch.equal(a[key], base[key])  # the pre-training moved the weights
    stamp = (a_dir / "model.safetensors").stat().st_mtime_ns
    assert build_tiny_backbone(short_mlm, tmp_path / "a") == a_dir  # cached: not rebuilt
    assert (a_dir / "model.safetensors").stat().st_mtime_ns == stamp


def test_mlm_backbone_is_keyed_by_its_recipe_and_its_base(monkeypatch, short_mlm):
    before = M.backbone_id(short_mlm)
    assert before.startswith("tiny-bert-mlm-") and M.is_tiny(short_mlm) and not M.is_tiny("bert-base-multilingual-cased")
    monkeypatch.setitem(TINY_PRETRAINED, short_mlm, TINY_PRETRAINED[short_mlm] | {"learning_rate": 1e-3})
    changed_recipe = M.backbone_id(short_mlm)
    monkeypatch.setattr(M, "BUILD_VERSION", M.BUILD_VERSION + 1)  # the base changes: so does the pre-trained one
    changed_base = M.backbone_id(short_mlm)
    monkeypatch.setattr(M, "MLM_BUILD_VERSION", M.MLM_BUILD_VERSION + 1)
    assert len({before, changed_recipe, changed_base, M.backbone_id(short_mlm)}) == 4


def test_damaged_mlm_backbone_is_rebuilt(tmp_path, short_mlm):
    dest = build_tiny_backbone(short_mlm, tmp_path)
    (dest / "model.safetensors").write_bytes(b"damaged")
    with pytest.warns(CheckpointWarning, match="model.safetensors"):
        assert build_tiny_backbone(short_mlm, tmp_path) == dest
    assert checkpoint_ok(dest)


def test_missing_hub_model_fails_fast_with_a_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(MissingResourceError) as info:
        resolve_model("bert-base-multilingual-cased", what="glue.backbones")
    assert time.monotonic() - start < 10
    msg = str(info.value)
    assert "bert-base-multilingual-cased" in msg and "glue.backbones" in msg and "local" in msg


def test_unreachable_hub_fails_fast(monkeypatch):
    from codeswitch.core import hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    hub.hub_reachable.cache_clear()
    try:
        start = time.monotonic()
        with pytest.raises(MissingResourceError, match="cannot be reached"):
            resolve("Jangyeong/Koglish_GLUE", kind="dataset", what="koglish_source")
        assert time.monotonic() - start < 10
    finally:
        hub.hub_reachable.cache_clear()


def test_local_paths_pass_through_and_missing_paths_are_named(tmp_path):
    assert resolve(str(tmp_path)) == str(tmp_path.resolve())
    with pytest.raises(MissingResourceError, match="no such file"):
        resolve(str(tmp_path / "absent"), kind="dataset")
