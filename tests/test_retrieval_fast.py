"""The ContrastiveMix fast path: SDPA encoders, the trainer's step without host reads, the background
prefetch (bit for bit the same run), length-sorted streaming corpus encoding (same embeddings, corpus
order, resume), and the host memory of encoding a corpus (``python -m benchmarks memory``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch


@pytest.fixture(scope="module")
def tiny(backbones_dir):
    """The tiny-bert dual encoder (random weights) and its tokenizer."""
    from codeswitch.core.models import resolve_model
    from codeswitch.core.encoders import load_dual_encoder

    path = resolve_model("tiny-bert")
    model, tokenizer = load_dual_encoder(path)
    return path, model.eval(), tokenizer


def _passages(n_repeat: int = 1) -> list[str]:
    """The synthetic Korean collection's first 184 passages, plus longer ones made by joining neighbours."""
    from codeswitch.contrastivemix.data import load_collection

    coll = load_collection("mrtydi", "synthetic", "ko")
    texts = coll.texts(0, 184)
    long = [" ".join(texts[i : i + 4]) for i in range(0, 60, 3)]  # > 32 tokens: truncated
    return (texts + long) * n_repeat


def _plain(encoder, tokenizer, texts, *, max_length, batch_size):
    """The reference: batches in the given order, each padded to its longest, transformers' own 2-D masks."""
    from codeswitch.core.encoders import DualEncoder, tokenize

    with torch.no_grad():
        return np.concatenate([
            DualEncoder._first_token(encoder, tokenize(tokenizer, texts[i : i + batch_size], max_length)).numpy()
            for i in range(0, len(texts), batch_size)
        ])


# --------------------------------------------------------------------------- SDPA
@pytest.mark.parametrize("name", ["tiny-bert", "tiny-xlmr"])
def test_encoders_load_with_sdpa_and_without_pooler(backbones_dir, name):
    from codeswitch.core.models import resolve_model
    from codeswitch.core.encoders import load_dual_encoder
    from codeswitch.common.fastpath import uses_sdpa

    model, _ = load_dual_encoder(resolve_model(name))
    for enc in (model.query_model, model.passage_model):
        assert enc.config._attn_implementation == "sdpa" and uses_sdpa(enc)
        assert getattr(enc, "pooler", None) is None


def test_sdpa_ready_masks_give_transformers_embeddings(tiny):
    from codeswitch.common.fastpath import sdpa_ready
    from codeswitch.core.encoders import tokenize

    _, model, tokenizer = tiny
    enc = model.passage_model
    padded = tokenize(tokenizer, ["a short one", "a much longer passage about a city near the sea , founded long ago"], 32)
    ready = sdpa_ready(padded)
    assert ready["attention_mask"].shape == (2, 1, 1, padded["input_ids"].shape[1]) and ready["attention_mask"].dtype == torch.bool
    full = tokenize(tokenizer, ["the same length", "the same length"], 32)
    assert "attention_mask" not in sdpa_ready(full)  # no padding: no mask (transformers' own choice, made on the host)
    with torch.no_grad():
        for batch in (padded, full):
            want = enc(**batch).last_hidden_state[:, 0]
            got = enc(**sdpa_ready(batch)).last_hidden_state[:, 0]
            torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


# --------------------------------------------------------------------------- the trainer
def _train(tiny, *, prefetch: bool, n_queries: int | None = None, epochs: int = 2, method: str = "contrastivemix"):
    from codeswitch.contrastivemix.codemix import load_muse
    from codeswitch.contrastivemix.data import load_train_set
    from codeswitch.contrastivemix.synthetic import synthetic_glossary_path
    from codeswitch.contrastivemix.train import train_dual_encoder

    from .test_contrastivemix import train_spec

    _, model, tokenizer = tiny
    train = load_train_set("synthetic")
    if n_queries is not None:
        train = train.select(range(n_queries))
    mix = {} if method == "mdpr" else {"mix_query": True, "mix_passage": True}
    spec = train_spec(method, **mix, num_train_epochs=epochs, batch_size=8, learning_rate=1e-3)
    return train_dual_encoder(train, spec, backbone=(model, tokenizer), dictionary=load_muse(synthetic_glossary_path("ko")),
                              device="cpu", prefetch=prefetch)


def test_trainer_prefetch_gives_the_same_run_bit_for_bit(tiny):
    plain, _, h_plain = _train(tiny, prefetch=False)
    ahead, _, h_ahead = _train(tiny, prefetch=True)
    assert h_plain == h_ahead
    sd_plain, sd_ahead = plain.state_dict(), ahead.state_dict()
    assert all(torch.equal(sd_plain[k], sd_ahead[k]) for k in sd_plain)
    # Every step's total is ir + w·align, so the per-epoch means are too (w = 0.1).
    for total, ir, align in zip(h_plain["loss"], h_plain["ir"], h_plain["align"]):
        assert total == pytest.approx(ir + 0.1 * align, rel=1e-6) and align > 0
    assert len(h_plain["loss"]) == 2 and h_plain["steps"] == 2 * (len(_train_rows()) // 8)


def test_trainer_with_several_prefetch_threads_gives_the_same_run(tiny):
    """Steps prepared by three threads at once (each with its own tokenizer copy) are the steps prepared in line."""
    from codeswitch.contrastivemix.codemix import load_muse
    from codeswitch.contrastivemix.data import load_train_set
    from codeswitch.contrastivemix.synthetic import synthetic_glossary_path
    from codeswitch.contrastivemix.train import train_dual_encoder

    from .test_contrastivemix import train_spec

    _, model, tokenizer = tiny
    spec = train_spec("contrastivemix", mix_query=True, mix_passage=True, num_train_epochs=3, batch_size=8, learning_rate=1e-3)
    runs = [
        train_dual_encoder(load_train_set("synthetic"), spec, backbone=(model, tokenizer),
                           dictionary=load_muse(synthetic_glossary_path("ko")), device="cpu", prefetch=p, prefetch_workers=w)
        for p, w in ((False, None), (True, 3))
    ]
    (a, _, ha), (b, _, hb) = runs
    assert ha == hb
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_trainer_runs_after_another_precision_in_the_same_process(tiny):
    """A bf16 Accelerator earlier in the process (an HF Trainer in the same kernel) does not pin the trainer's precision."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    AcceleratorState._reset_state()  # whatever earlier tests left: start from a bf16 state of our own
    Accelerator(cpu=True, mixed_precision="bf16")
    _, _, history = _train(tiny, prefetch=False, epochs=1)
    assert len(history["loss"]) == 1 and history["loss"][0] > 0


def test_prefetched_keeps_the_order_with_several_workers():
    import random
    import time

    from codeswitch.common.fastpath import prefetched

    def slow_square(i):
        time.sleep(random.Random(i).random() * 0.01)  # later keys often finish first
        return i * i

    for workers in (1, 4):
        assert list(prefetched(slow_square, [(i,) for i in range(25)], workers=workers)) == [i * i for i in range(25)]


def test_encoding_from_sharded_tokens_gives_the_same_embeddings(tiny, tmp_path, monkeypatch):
    """Windows fed from a token entry of three shards (windows crossing shard boundaries) equal those fed from one
    shard, exactly."""
    import codeswitch.common.fastpath as R
    from codeswitch.common import tokens as T

    _, model, tokenizer = tiny
    texts = _passages()
    kw = dict(max_length=32, batch_size=8, sort_window=4, device="cpu")
    one = T.tokenised_arrays(tokenizer, [texts], max_length=32, cache_dir=tmp_path / "one")
    monkeypatch.setattr(T, "SHARD_IDS", int(one.offsets[-1]) // 3 + 40)
    three = T.tokenised_arrays(tokenizer, [texts], max_length=32, cache_dir=tmp_path / "three")
    assert len(one.shards["input_ids"]) == 1 and len(three.shards["input_ids"]) == 3
    np.testing.assert_array_equal(R.encode_texts(model.passage_model, tokenizer, texts, tokens=one, **kw),
                                  R.encode_texts(model.passage_model, tokenizer, texts, tokens=three, **kw))


def _train_rows():
    from codeswitch.contrastivemix.data import load_train_set

    return load_train_set("synthetic")


def test_trainer_step_reads_nothing_from_the_device(tiny, monkeypatch, tmp_path):
    """With the next steps prepared in a background thread (``prefetch``, as on a GPU), training still reads the device
    once per epoch (the loss sums), however many steps an epoch has.  The step's reads are found by the call stack
    (any read under ``train_dual_encoder``, outside the host's preparation of the ids: the guard of
    ``test_perf_guards_contrastivemix``), not by a list of files, which went stale when the loss and the gather moved."""
    from .test_perf_guards_contrastivemix import _reads_in_steps, _spec

    _, model, tokenizer = tiny
    spec = _spec("contrastivemix", num_train_epochs=2)
    for n_queries in (16, 40):  # 2 and 5 steps per epoch
        monkeypatch.setenv("CODESWITCH_TOKEN_CACHE", str(tmp_path / "tokens"))  # (_reads_in_steps undoes the monkeypatch)
        reads = _reads_in_steps((model, tokenizer), spec, monkeypatch, n_queries=n_queries, prefetch=True)
        assert len(reads) == 2 and all("(_epochs)" in r for r in reads), reads  # the epoch loop of train_dual_encoder


# --------------------------------------------------------------------------- corpus encoding
def test_sorted_windows_match_plain_batches_in_corpus_order(tiny, tmp_path):
    from codeswitch.common.fastpath import encode_corpus, encode_texts
    from codeswitch.common.fastpath.encode import _prepare_window
    from codeswitch.common.tokens import tokenised_arrays

    _, model, tokenizer = tiny
    enc = model.passage_model
    texts = _passages()
    n = len(texts)  # 204: windows of 3 batches of 8 = 24 rows, the last one partial
    want = _plain(enc, tokenizer, texts, max_length=32, batch_size=8)
    got = encode_corpus(enc, tokenizer, lambda a, b: texts[a:b], n, tmp_path / "f32.npy", max_length=32, batch_size=8,
                        sort_window=3, device="cpu", dtype=np.float32)
    assert got.shape == (n, 64) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    # Row i is passage i: reversing the corpus reverses the rows.
    rev = encode_texts(enc, tokenizer, texts[::-1], max_length=32, batch_size=8, sort_window=3, device="cpu")
    np.testing.assert_allclose(rev[::-1], want, rtol=0, atol=1e-5)
    # The float16 file the experiment writes: the same numbers, rounded.
    f16 = encode_corpus(enc, tokenizer, lambda a, b: texts[a:b], n, tmp_path / "f16.npy", max_length=32, batch_size=8,
                        sort_window=3, device="cpu")
    assert f16.dtype == np.float16
    np.testing.assert_allclose(f16.astype(np.float32), want, rtol=2e-3, atol=1e-3)
    # Sorting is what saves the padding: fewer padded positions than corpus-order batches.
    def padded(sort):
        w = _prepare_window(tokenised_arrays(tokenizer, [texts], max_length=32, cache_dir=tmp_path), 0, n, max_length=32,
                            pad={"input_ids": tokenizer.pad_token_id}, left=False, batch_size=8, sort=sort, sdpa=False,
                            pin=False, desc="t")
        return sum(int((b["attention_mask"] == 0).sum()) for b in w.batches)

    assert padded(True) < padded(False)


class _Shapes(torch.nn.Module):
    """Wraps an encoder; records the shape of every ``input_ids`` it is given (what a compiled encoder would see)."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.config, self.shapes = inner, inner.config, []

    def forward(self, **batch):
        self.shapes.append(tuple(batch["input_ids"].shape))
        return self.inner(**batch)


def test_fixed_width_buckets_give_the_same_embeddings_in_corpus_order_with_few_shapes(tiny, tmp_path):
    """Issue 40 item 3: batches padded to fixed-width buckets (8, 16, 24, 32) encode each passage as its own-longest
    padding does (padding is masked: equal up to float rounding), rows in corpus order, and the encoder sees at most
    (buckets x {full, last batch}) shapes, where unbucketed batches give it one width per distinct longest row."""
    from codeswitch.common.fastpath import encode_bucket_widths, encode_corpus

    _, model, tokenizer = tiny
    texts = _passages()
    n = len(texts)  # 204 rows: windows of 3 batches of 8, the last window and batch partial
    widths = encode_bucket_widths(8, 32)
    assert widths == (8, 16, 24, 32)
    got = {}
    for step in (0, 8):
        enc = _Shapes(model.passage_model)
        got[step] = encode_corpus(enc, tokenizer, lambda a, b: texts[a:b], n, tmp_path / f"b{step}.npy", max_length=32,
                                  batch_size=8, sort_window=3, device="cpu", dtype=np.float32, bucket_step=step)
        got[step, "shapes"] = set(enc.shapes)
    np.testing.assert_allclose(got[8], got[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[8], _plain(model.passage_model, tokenizer, texts, max_length=32, batch_size=8),
                               rtol=1e-5, atol=1e-6)  # row i is passage i
    bucketed, plain = got[8, "shapes"], got[0, "shapes"]
    assert {w for _, w in bucketed} <= set(widths) and len(bucketed) <= 2 * len(widths)
    assert {b for b, _ in bucketed} == {8, n % 8}  # full batches and the corpus's last one
    assert len({w for _, w in plain}) > len(widths)  # without buckets: many more widths (the test could fail)


@pytest.mark.parametrize("step", [-8, 1.5, True, "32"])
def test_bucket_step_must_be_a_whole_number_of_tokens(step):
    from codeswitch.common.fastpath import encode_bucket_widths

    with pytest.raises(ValueError, match="encode_bucket_step must be a whole number of tokens >= 0"):
        encode_bucket_widths(step, 128)


def test_encoder_fn_sorts_and_restores_the_order(tiny):
    from codeswitch.contrastivemix.train import encoder_fn

    _, model, tokenizer = tiny
    texts = _passages()
    want = _plain(model.query_model, tokenizer, texts, max_length=16, batch_size=16)
    for window in (0, 4):
        got = encoder_fn(model, tokenizer, "query", max_length=16, batch_size=16, device="cpu", sort_window=window)(texts)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    assert encoder_fn(model, tokenizer, "query", max_length=16, batch_size=16, device="cpu", sort_window=32)([]).shape == (0, 64)


class _Counting(torch.nn.Module):
    """Wraps an encoder; counts forward calls and raises at call ``fail_at`` (a simulated crash)."""

    def __init__(self, inner, fail_at: int | None = None):
        super().__init__()
        self.inner, self.config, self.calls, self.fail_at = inner, inner.config, 0, fail_at

    def forward(self, **batch):
        self.calls += 1
        if self.fail_at is not None and self.calls >= self.fail_at:
            raise RuntimeError("simulated crash")
        return self.inner(**batch)


def test_encode_corpus_resumes_after_an_interruption(tiny, tmp_path):
    from codeswitch.common.fastpath import encode_corpus

    _, model, tokenizer = tiny
    texts = _passages()
    n = len(texts)  # 204 rows: 9 windows of 24 rows (3 batches of 8), 26 batches
    kw = dict(max_length=32, batch_size=8, sort_window=3, device="cpu", dtype=np.float32)
    read = lambda a, b: texts[a:b]  # noqa: E731
    full = np.array(encode_corpus(model.passage_model, tokenizer, read, n, tmp_path / "full.npy", **kw))

    path = tmp_path / "emb.npy"
    crashing = _Counting(model.passage_model, fail_at=8)  # in window 3 (calls 7..9), after windows 1 and 2 are written
    with pytest.raises(RuntimeError, match="simulated crash"):
        encode_corpus(crashing, tokenizer, read, n, path, **kw)
    state = json.loads(path.with_suffix(".progress.json").read_text())
    assert state["rows_done"] == 48 and not path.with_suffix(".done.json").exists()

    counting = _Counting(model.passage_model)
    again = np.array(encode_corpus(counting, tokenizer, read, n, path, **kw))
    assert counting.calls == 26 - 6  # only the windows not written before the crash
    assert np.array_equal(again, full)
    assert path.with_suffix(".done.json").is_file() and not path.with_suffix(".progress.json").exists()
    # A finished file is returned as it is: nothing is encoded.
    untouched = _Counting(model.passage_model, fail_at=1)
    assert np.array_equal(encode_corpus(untouched, tokenizer, read, n, path, **kw), full) and untouched.calls == 0
    # Progress recorded for another corpus size is not trusted: the encoding starts over.
    path.with_suffix(".done.json").unlink()
    path.with_suffix(".progress.json").write_text(json.dumps({"n": n + 1, "dim": 64, "dtype": "float32", "rows_done": 48}))
    counting = _Counting(model.passage_model)
    assert np.array_equal(encode_corpus(counting, tokenizer, read, n, path, **kw), full) and counting.calls == 26


def test_encode_corpus_reads_the_texts_a_chunk_at_a_time(tiny, tmp_path, monkeypatch):
    """The texts are read ``tokens.CHUNK`` rows at a time, in order, by the tokenise-once step (a pass to hash them,
    one to tokenise them on the first encoding; a later encoding only hashes them, then reads the shards): the corpus
    is never held."""
    from codeswitch.common import tokens as T
    from codeswitch.common.fastpath import encode_corpus

    _, model, tokenizer = tiny
    texts = _passages(3)
    monkeypatch.setenv("CODESWITCH_TOKEN_CACHE", str(tmp_path / "tokens"))
    monkeypatch.setattr(T, "CHUNK", 16)
    reads = []

    def read(lo, hi):
        reads.append((lo, hi))
        return texts[lo:hi]

    passes = [(lo, min(lo + 16, len(texts))) for lo in range(0, len(texts), 16)]
    for i, want in enumerate((2 * passes, passes)):
        reads.clear()
        encode_corpus(model.passage_model, tokenizer, read, len(texts), tmp_path / f"emb{i}.npy", max_length=16, batch_size=8,
                      sort_window=2, device="cpu")
        assert reads == want


def test_encode_corpus_names_a_bad_row(tiny, tmp_path):
    from codeswitch.common.fastpath import encode_corpus

    _, model, tokenizer = tiny
    texts = ["a passage"] * 10
    texts[7] = None
    with pytest.raises(ValueError, match=r"row 7 is NoneType"):
        encode_corpus(model.passage_model, tokenizer, lambda a, b: texts[a:b], 10, tmp_path / "e.npy", max_length=16,
                      batch_size=4, device="cpu")


# --------------------------------------------------------------------------- host memory
def test_memory_of_encoding_a_corpus_stays_flat(backbones_dir, tmp_path):
    """``python -m benchmarks memory``: 20,000 passages on disk, encoded in a fresh process.

    Bound 1, peak RSS − RSS before encoding < 250 MB.  What the encoding process
    needs beyond its imports and model: two windows of 8 × 64 passages (text and
    int32 ids, ≈ 2 MB), the CPU forward of a batch of 64 × ≤ 128 tokens of the tiny
    model (attention scores 64 × 4 heads × 128² floats = 16 MB a layer; ≈ 50 MB in
    all), the touched pages of the 16 MB Arrow table, allocator slack: 76–131 MB
    measured on the 2-core CI machine.
    Bound 2, holding the corpus would not show in bound 1 at this size, so the peak
    is compared with a 5,000-passage corpus: it may grow by the extra Arrow pages
    (≈ 12 MB) and allocator noise (4–37 MB measured), < 60 MB; keeping the texts and
    token ids of the extra 15,000 passages as Python objects would add ≈ 83 MB
    (2.2 kB of string and 3.6 kB of id list per passage, measured) on top.
    """
    from benchmarks.memory import main, markdown, measure

    small = measure(5_000, batch=64, window=8, threads=1, workdir=tmp_path, models=2)
    # the first model tokenises the corpus once (timed within texts → file); the second reads the shards: same file
    assert 0 < small["tokenise_seconds"] < small["encode_seconds"] and small["later_models_same_embeddings"] is True
    assert small["passages_per_second_from_shards"] > 0 and small["tokenise_processes"] == 1
    out = tmp_path / "out"
    assert main(["--passages", "20000", "--batch", "64", "--window", "8", "--threads", "1", "--workdir", str(tmp_path),
                 "--out", str(out)]) == 0
    big = json.loads((out / "memory.json").read_text())
    assert big["shape"] == big["expected_shape"] == [20_000, 64] and big["dtype"] == "float16"
    assert big["zero_rows"] == 0 and big["nonfinite_rows"] == 0
    assert big["embeddings_mb"] == pytest.approx((128 + 20_000 * 64 * 2) / 2**20, abs=0.01)
    assert big["attention"] == "sdpa" and big["passages_per_second"] > 0
    assert 0 < big["rss_before_mb"] < big["peak_rss_mb"]
    assert big["peak_minus_before_mb"] < 250, big
    assert big["peak_rss_mb"] - small["peak_rss_mb"] < 60, (small, big)
    assert "| 20,000 |" in markdown(big) and big["models"] == 1 and big["passages_per_second_from_shards"] is None
    assert not any(p.name.startswith("codeswitch-memory-") for p in tmp_path.iterdir())  # the work folders are removed


def test_memory_bench_compares_buckets_interleaved_in_one_process(backbones_dir, tmp_path):
    """``python -m benchmarks memory --compare-buckets 32``: the current path and fixed-width buckets alternate in one
    process (one untimed round, then A B per round), each timed end to end; the bucketed path feeds the encoder at most
    (widths x {full, last batch}) shapes and writes the same float16 file up to rounding."""
    from benchmarks.memory import main

    out = tmp_path / "buckets.json"
    assert main(["--passages", "600", "--batch", "32", "--window", "4", "--threads", "1", "--compare-buckets", "32",
                 "--repeats", "2", "--workdir", str(tmp_path), "--out", str(out)]) == 0
    r = json.loads(out.read_text())
    assert r["bucket_widths"] == [32, 64, 96, 128] and r["passages"] == 600
    assert r["order"].startswith("one untimed round of each, then A B A B ")
    for arm in ("own_longest", "buckets_32"):
        assert len(r["seconds"][arm]) == 2 and all(t > 0 for t in r["seconds"][arm])
        sp = r["passages_per_second_spread"][arm]
        assert sp["min"] <= sp["median"] <= sp["max"]
    assert r["ratio_b_over_a"] == pytest.approx([b / a for a, b in zip(*r["passages_per_second"].values())])
    shapes = r["distinct_input_shapes"]
    assert 0 < shapes["buckets_32"] <= min(2 * 4, shapes["own_longest"])
    assert r["max_abs_difference_b_vs_a"] < 2e-3  # the same embeddings, float16 rounding at most
    assert len(r["commit"]) >= 40 and len(r["machine"]["loadavg_1_5_15_before"]) == 3 and "--compare-buckets" in r["command"]
    assert not any(p.name.startswith("codeswitch-memory-") for p in tmp_path.iterdir())  # the work folder is removed
