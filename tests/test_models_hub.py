"""Tiny backbones built from config; hub references fail fast and clearly when offline."""

from __future__ import annotations

import time

import pytest
import torch

from codeswitch.core.hub import MissingResourceError, resolve
from codeswitch.core.models import TINY_BACKBONES, build_tiny_backbone, resolve_model


@pytest.mark.parametrize("name", sorted(TINY_BACKBONES))
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


def test_tiny_backbone_is_deterministic(tmp_path):
    from safetensors.torch import load_file

    a = load_file(build_tiny_backbone("tiny-bert", tmp_path / "a") / "model.safetensors")
    b = load_file(build_tiny_backbone("tiny-bert", tmp_path / "b") / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    ta = (build_tiny_backbone("tiny-bert", tmp_path / "a") / "tokenizer.json").read_text()
    tb = (build_tiny_backbone("tiny-bert", tmp_path / "b") / "tokenizer.json").read_text()
    assert ta == tb


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
