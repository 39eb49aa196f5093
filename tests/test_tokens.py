"""Tokenise once (issue 24, item 4): ``common.tokens.tokenised`` equals the tokenizer's own output, is computed once
per (tokenizer, max_length, texts) and read back after, and any change of those is another entry."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from codeswitch.common.tokens import tokenised, tokenizer_identity


@pytest.fixture(scope="module")
def tokenizers(backbones_dir):
    from transformers import AutoTokenizer

    from codeswitch.core.models import resolve_model

    return {name: AutoTokenizer.from_pretrained(resolve_model(name)) for name in ("tiny-bert", "tiny-xlmr")}


TEXTS = ["the girl drinks milk", "작은 돼지가 공원에서 쉬었다", "", "a b c d e f g h i j k l m n o p q r s t u v w x y z"]
PAIRS = ["and then", "x", "the village", "공원"]


def test_equals_the_tokenizer_and_is_computed_once(tokenizers, tmp_path):
    for name, tok in tokenizers.items():
        for cols in ([TEXTS], [TEXTS, PAIRS]):
            want = {k: list(map(list, v)) for k, v in tok(*cols, truncation=True, max_length=8).items()}
            first = tokenised(tok, cols, max_length=8, cache_dir=tmp_path)
            assert first == want, name
            assert tokenised(tok, cols, max_length=8, cache_dir=tmp_path) == want  # read back
    entries = sorted(tmp_path.glob("*.npz"))
    # the tiny backbones share one tokenizer (trained once on the project's corpus): one entry serves both models
    assert tokenizer_identity(tokenizers["tiny-bert"]) == tokenizer_identity(tokenizers["tiny-xlmr"])
    assert len(entries) == 2  # (single, pair)
    tok = tokenizers["tiny-bert"]
    tokenised(tok, [TEXTS], max_length=6, cache_dir=tmp_path)  # another limit
    tokenised(tok, [TEXTS[:-1] + ["changed"]], max_length=8, cache_dir=tmp_path)  # another text
    other = copy.deepcopy(tok)
    other.add_tokens(["zzz-new-token"])  # another vocabulary: another identity, another entry
    assert tokenizer_identity(other) != tokenizer_identity(tok)
    tokenised(other, [TEXTS], max_length=8, cache_dir=tmp_path)
    assert len(list(tmp_path.glob("*.npz"))) == 5


def test_second_call_does_not_tokenise(tokenizers, tmp_path, monkeypatch):
    tok = tokenizers["tiny-bert"]
    want = tokenised(tok, [TEXTS], max_length=16, cache_dir=tmp_path)
    monkeypatch.setattr(type(tok), "__call__", lambda *a, **kw: pytest.fail("tokenised twice"))
    assert tokenised(tok, [TEXTS], max_length=16, cache_dir=tmp_path) == want
    (next(tmp_path.glob("*.npz"))).write_bytes(b"damaged")  # a damaged entry is tokenised again
    monkeypatch.undo()
    assert tokenised(tok, [TEXTS], max_length=16, cache_dir=tmp_path) == want


def test_bad_input_is_named(tokenizers, tmp_path):
    with pytest.raises(ValueError, match="column 0, row 1"):
        tokenised(tokenizers["tiny-bert"], [["a", None]], max_length=8, cache_dir=tmp_path)
    with pytest.raises(ValueError, match="equal length"):
        tokenised(tokenizers["tiny-bert"], [["a"], ["b", "c"]], max_length=8, cache_dir=tmp_path)


def test_glue_encode_tokenises_each_split_once(tokenizers, tmp_path, monkeypatch):
    """The GLUE trainer's ``encode`` (every seed and scenario of a task) goes through the cache."""
    from codeswitch.glue import train as tg

    monkeypatch.setenv("CODESWITCH_TOKEN_CACHE", str(tmp_path))
    df = pd.DataFrame({"sentence": TEXTS, "cross": TEXTS[::-1], "label": [0, 1, 0, 1]})
    tok = tokenizers["tiny-bert"]
    a = tg.encode(df, tg.TASKS["sst2"], "en", tok, 115)
    b = tg.encode(df, tg.TASKS["sst2"], "en", tok, 115)
    assert a["input_ids"][:] == b["input_ids"][:] == [list(x) for x in tok(TEXTS, truncation=True, max_length=115)["input_ids"]]
    assert len(list(tmp_path.glob("*.npz"))) == 1


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_rows_is_the_tokenizers_padding(tokenizers, side):
    """``pad_rows`` of stored id rows gives ``tokenizer.pad``'s ids and mask, on either padding side; other columns
    (word indices, labels) take their own fill."""
    import torch

    from codeswitch.common.tokens import pad_rows

    tok = copy.deepcopy(tokenizers["tiny-xlmr"])  # pad id 1: a fill that is not 0
    tok.padding_side = side
    rows = tok(["a short one", "a somewhat longer sentence than that", "x"])["input_ids"]
    want = tok.pad({"input_ids": rows}, return_tensors="pt")
    got_ids = pad_rows(rows, tok.pad_token_id, left=side == "left")
    got_mask = pad_rows([[1] * len(r) for r in rows], 0, left=side == "left")
    assert got_ids.dtype == torch.int64 and torch.equal(got_ids, want["input_ids"])
    assert torch.equal(got_mask, want["attention_mask"])
    labels = pad_rows([[3], [1, 2, 4]], -100)
    assert labels.tolist() == [[3, -100, -100], [1, 2, 4]]
