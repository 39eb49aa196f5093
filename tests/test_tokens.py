"""Tokenise once (issue 24, item 4): ``common.tokens.tokenised`` equals the tokenizer's own output, is computed once
per (tokenizer, max_length, texts) and read back after, and any change of those is another entry."""

from __future__ import annotations

import copy

import pandas as pd
import pytest

from codeswitch.common import tokens as T
from codeswitch.common.tokens import tokenised, tokenised_arrays, tokenised_corpus, tokenizer_identity


def _entries(folder):
    """The complete entries of a cache folder (an entry: a folder whose offsets file, written last, is there)."""
    return sorted(p for p in folder.iterdir() if (p / "offsets.npy").is_file())


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
    entries = _entries(tmp_path)
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
    assert len(_entries(tmp_path)) == 5


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
    # the memo holds no tokenizer alive (the deep copies above are collected first: they leave the memo too)
    gc.collect()
    alive, n = weakref.ref(tok), len(T._IDENTITIES)
    del tok
    gc.collect()
    assert alive() is None and len(T._IDENTITIES) == n - 1


def test_second_call_does_not_tokenise(tokenizers, tmp_path, monkeypatch):
    tok = tokenizers["tiny-bert"]
    want = tokenised(tok, [TEXTS], max_length=16, cache_dir=tmp_path)
    monkeypatch.setattr(type(tok), "__call__", lambda *a, **kw: pytest.fail("tokenised twice"))
    assert tokenised(tok, [TEXTS], max_length=16, cache_dir=tmp_path) == want
    (_entries(tmp_path)[0] / "input_ids.0.npy").write_bytes(b"damaged")  # a damaged entry is tokenised again
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
    assert len(_entries(tmp_path)) == 1


# --------------------------------------------------------------------------- shards (issue 24, item 4)
CORPUS = [f"passage {i} " + " ".join(["the girl drinks milk", "작은 돼지가 공원에서 쉬었다", "a b c"][i % 3] for _ in range(i % 5))
          for i in range(60)]


def _files(entry):
    return {p.name: p.read_bytes() for p in sorted(entry.iterdir())}


def test_an_entry_is_int32_shards_memory_mapped(tokenizers, tmp_path, monkeypatch):
    """A corpus spanning three shards (a tiny shard size) gives the same ids, row by row and as padded windows, as
    one shard and as the tokenizer; every file is a memory map, never loaded whole."""
    import numpy as np

    tok = tokenizers["tiny-bert"]
    want = tok(CORPUS, truncation=True, max_length=16)
    one = tokenised_corpus(tok, lambda lo, hi: CORPUS[lo:hi], len(CORPUS), max_length=16, cache_dir=tmp_path / "one")
    total = int(one.offsets[-1])
    monkeypatch.setattr(T, "SHARD_IDS", total // 3 + 8)  # three shards, cut at row boundaries
    monkeypatch.setattr(T, "CHUNK", 7)  # chunks cross the shard boundaries
    three = tokenised_corpus(tok, lambda lo, hi: CORPUS[lo:hi], len(CORPUS), max_length=16, cache_dir=tmp_path / "three")
    assert len(three.shards["input_ids"]) == 3 and len(one.shards["input_ids"]) == 1
    assert all(len(s) <= T.SHARD_IDS for s in three.shards["input_ids"])
    for rows in (one, three):
        assert isinstance(rows.offsets, np.memmap) and all(isinstance(s, np.memmap) for s in rows.shards["input_ids"])
        assert all(s.dtype == np.int32 for s in rows.shards["input_ids"]) and rows.offsets.dtype == np.int64
        assert {k: [rows.row(k, i).tolist() for i in range(len(CORPUS))] for k in rows.names} == {k: list(map(list, v)) for k, v in want.items()}
    pad = {"input_ids": tok.pad_token_id}
    for lo, hi in ((0, 60), (5, 41), (19, 20), (30, 30)):
        a, b = one.padded(lo, hi, 16, pad), three.padded(lo, hi, 16, pad)
        ref = tok(CORPUS[lo:hi], truncation=True, max_length=16, padding="max_length", return_tensors="np") if hi > lo else None
        for k in one.names:
            np.testing.assert_array_equal(a[k], b[k])
            if ref is not None:
                np.testing.assert_array_equal(a[k], ref[k])
    with pytest.raises(ValueError, match="row 0 has .* tokens, more than max_length 4"):
        three.padded(0, 3, 4, pad, desc="corpus")


def test_a_damaged_or_half_written_entry_is_never_read(tokenizers, tmp_path, monkeypatch):
    """A truncated shard, a missing offsets file (written last) or a temporary folder a killed writer left: the texts
    are tokenised again (the entry replaced), never read half."""
    tok = tokenizers["tiny-bert"]
    monkeypatch.setattr(T, "SHARD_IDS", 100)
    want = tokenised_arrays(tok, [CORPUS], max_length=16, cache_dir=tmp_path).lists()  # (copied: the test damages the files)
    entry, = _entries(tmp_path)
    good = _files(entry)
    calls = []
    real = type(tok).__call__
    monkeypatch.setattr(type(tok), "__call__", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    assert tokenised_arrays(tok, [CORPUS], max_length=16, cache_dir=tmp_path).lists() == want and not calls

    shard = entry / "input_ids.1.npy"
    shard.write_bytes(shard.read_bytes()[:-12])  # truncated
    assert tokenised_arrays(tok, [CORPUS], max_length=16, cache_dir=tmp_path).lists() == want and calls
    assert _files(entry) == good  # rebuilt, byte for byte
    calls.clear()
    (entry / "offsets.npy").unlink()  # the file written last is missing: not an entry
    assert tokenised_arrays(tok, [CORPUS], max_length=16, cache_dir=tmp_path).lists() == want and calls
    assert _files(entry) == good
    # a writer killed while building: its temporary folder (hidden, named for the entry) is never an entry
    half = tmp_path / f".{entry.name}.tmp-elsewhere-1-x"
    half.mkdir()
    (half / "input_ids.0.npy").write_bytes(b"partial")
    assert _entries(tmp_path) == [entry]


def test_worker_processes_give_the_same_bytes(tokenizers, tmp_path, monkeypatch):
    """Tokenised in two spawned worker processes (several chunks each, taken back in order), an entry is byte-identical
    to the one tokenised in this process; a small input never starts a process."""
    import concurrent.futures

    tok = tokenizers["tiny-bert"]
    cols = [CORPUS, CORPUS[::-1]]
    tokenised_arrays(tok, cols, max_length=12, cache_dir=tmp_path / "inline", processes=1)
    monkeypatch.setattr(T, "CHUNK", 5)
    monkeypatch.setattr(T, "PROCESS_MIN_TEXTS", 0)
    started = []
    real = concurrent.futures.ProcessPoolExecutor.__init__
    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "__init__", lambda self, *a, **kw: started.append(kw) or real(self, *a, **kw))
    tokenised_arrays(tok, cols, max_length=12, cache_dir=tmp_path / "workers", processes=2)
    assert len(started) == 1 and started[0]["max_workers"] == 2
    (a,), (b,) = _entries(tmp_path / "inline"), _entries(tmp_path / "workers")
    assert a.name == b.name and _files(a) == _files(b)
    monkeypatch.setattr(T, "PROCESS_MIN_TEXTS", 1000)
    tokenised_arrays(tok, [CORPUS], max_length=12, cache_dir=tmp_path / "small", processes=2)
    assert len(started) == 1  # below PROCESS_MIN_TEXTS: in this process
    monkeypatch.setenv("CODESWITCH_TOKENIZE_PROCESSES", "3")
    assert T.tokenise_processes() == 3
    monkeypatch.delenv("CODESWITCH_TOKENIZE_PROCESSES")
    assert 1 <= T.tokenise_processes() <= 8


def test_corpus_bad_text_is_named(tokenizers, tmp_path):
    texts = ["a passage"] * 10
    texts[7] = None
    with pytest.raises(ValueError, match=r"my corpus: row 7 is NoneType"):
        tokenised_corpus(tokenizers["tiny-bert"], lambda lo, hi: texts[lo:hi], 10, max_length=8, cache_dir=tmp_path,
                         desc="my corpus")
    assert _entries(tmp_path) == []


def test_release_hands_back_the_mapped_pages(tokenizers, tmp_path):
    """After :meth:`TokenRows.release`, the rows' ids read the same (from the page cache again)."""
    tok = tokenizers["tiny-bert"]
    big = CORPUS * 40  # ids over several pages
    rows = tokenised_arrays(tok, [big], max_length=16, cache_dir=tmp_path)
    want = rows.lists()
    rows.release(0, len(big))
    rows.release(100, 900)
    assert rows.lists() == want


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


def test_version_1_entries_are_deleted_when_an_entry_is_written(tokenizers, tmp_path):
    """A version-1 entry (``<hash>.npz``, never read since version 2) goes when this version writes into its cache;
    other files stay."""
    old, other = tmp_path / ("0" * 64 + ".npz"), tmp_path / "notes.txt"
    old.write_bytes(b"v1"), other.write_text("keep")
    tokenised(tokenizers["tiny-bert"], [TEXTS], max_length=8, cache_dir=tmp_path)
    assert not old.exists() and other.read_text() == "keep" and len(_entries(tmp_path)) == 1
