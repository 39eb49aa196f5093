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


def test_identity_is_memoised_per_object_and_follows_changes(tokenizers, monkeypatch):
    """The pipeline is parsed once per tokenizer object, not per call; a tokenizer changed since (tokens added, a special
    token, a pipeline component replaced) gets the identity of what it is now, never a stale one."""
    import gc
    import weakref

    from tokenizers import normalizers

    import codeswitch.common.tokens as T

    tok = copy.deepcopy(tokenizers["tiny-bert"])
    computed = []
    real = T._identity
    monkeypatch.setattr(T, "_identity", lambda t: computed.append(type(t)) or real(t))
    first = tokenizer_identity(tok)
    tok(["the girl drinks milk"], truncation=True, max_length=4)  # a call leaves truncation state behind: not a change
    assert [tokenizer_identity(tok) for _ in range(3)] == [first] * 3 and len(computed) == 1

    def changed(change):
        before = tokenizer_identity(tok)
        change()
        now = tokenizer_identity(tok)
        assert now != before and now == real(tok)  # the identity of the tokenizer as it is now
        assert tokenizer_identity(copy.deepcopy(tok)) == now  # the same pipeline in another object: the same identity

    changed(lambda: tok.add_tokens(["zzz-added-later"]))
    changed(lambda: tok.add_special_tokens({"additional_special_tokens": ["<zzz-special>"]}))
    changed(lambda: setattr(tok.backend_tokenizer, "normalizer", normalizers.Lowercase()))
    changed(lambda: setattr(tok, "truncation_side", "left"))
    # the memo holds no tokenizer alive
    alive, n = weakref.ref(tok), len(T._IDENTITIES)
    del tok
    gc.collect()
    assert alive() is None and len(T._IDENTITIES) == n - 1


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
