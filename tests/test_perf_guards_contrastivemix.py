"""Performance guards for the ContrastiveMix trainer that a CPU-only CI can enforce (issue 24, item 7), on the tiny-bert
dual encoder and the project's own synthetic retrieval data, through the real ``train_dual_encoder``:

* the matmuls of a step are one forward per encoder (every query-side group in one batch, every passage-side group
  in another), not one per group;
* a step reads no tensor on the host (outside the host's own preparation of the next step's ids);
* every text a grid reads is tokenised once: the corpus once for every model that encodes it, the training set's
  English originals once for every model trained on them, and nothing inside a step.

Each guard is shown to fail on a deliberately broken step.
"""

from __future__ import annotations

import traceback

import pytest
import torch


@pytest.fixture(scope="module")
def tiny(backbones_dir):
    """The tiny-bert dual encoder (random weights) and its tokenizer."""
    from codeswitch.core.encoders import load_dual_encoder
    from codeswitch.core.models import resolve_model

    model, tokenizer = load_dual_encoder(resolve_model("tiny-bert"))
    return model.eval(), tokenizer


@pytest.fixture()
def token_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESWITCH_TOKEN_CACHE", str(tmp_path / "tokens"))
    return tmp_path / "tokens"


def _spec(method: str = "contrastivemix", **kw):
    from .test_contrastivemix import train_spec

    mix = {} if method == "mdpr" else {"mix_query": True, "mix_passage": True}
    return train_spec(method, **{**mix, "num_train_epochs": 1, "batch_size": 8, "learning_rate": 1e-3, **kw})


def _train(tiny, spec, *, n_queries: int = 16, prefetch: bool = False):
    from codeswitch.contrastivemix.codemix import load_muse
    from codeswitch.contrastivemix.data import load_train_set
    from codeswitch.contrastivemix.synthetic import synthetic_glossary_path
    from codeswitch.contrastivemix.train import train_dual_encoder

    model, tokenizer = tiny
    rows = load_train_set("synthetic").select(range(n_queries))
    return train_dual_encoder(rows, spec, backbone=(model, tokenizer), dictionary=load_muse(synthetic_glossary_path("ko")),
                              device="cpu", prefetch=prefetch)


# --------------------------------------------------------------------------- one forward per encoder
def _linears(module) -> int:
    return sum(isinstance(m, torch.nn.Linear) for m in module.modules())


def _count_linear(fn) -> int:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(e.count for e in prof.key_averages() if e.key == "aten::linear")


def test_a_step_is_one_forward_per_encoder(tiny, token_cache, monkeypatch):
    """A CPU profile of whole trainings: ``aten::linear`` (forward only; the backward runs ``mm``) counts exactly one
    query-encoder and one passage-encoder forward per step, for a method with five groups (query, mixed query,
    positive, negative, mixed passages) as for mDPR's three.  A step encoding each group apart would count more."""
    from codeswitch.core.encoders import DualEncoder

    model, _ = tiny
    per_forward = {"query": _linears(model.query_model), "passage": _linears(model.passage_model)}
    assert per_forward["query"] > 0
    steps = 2  # 16 queries, batch 8, one epoch
    for method in ("contrastivemix", "naivemix", "mdpr"):
        spec = _spec(method)
        assert _count_linear(lambda: _train(tiny, spec)) == steps * sum(per_forward.values()), method

    real = DualEncoder.forward

    def per_half(self, **sides):  # each side's batch in two forwards: what the guard is for
        out = {}
        for name, batch in sides.items():
            halves = [real(self, **{name: {k: v[i::2] for k, v in batch.items()}})[name] for i in range(2)]
            out[name] = torch.stack(halves, 1).flatten(0, 1)
        return out

    monkeypatch.setattr(DualEncoder, "forward", per_half)
    assert _count_linear(lambda: _train(tiny, _spec())) == 2 * steps * sum(per_forward.values())


# --------------------------------------------------------------------------- no host reads in a step
HOST_READS = ("item", "tolist", "__bool__", "__int__", "__float__", "__index__", "numpy")
HOST_PREP = {"host_step", "collate_ids", "sdpa_ready", "epoch", "_draw"}  # the next step's ids, made on the host


def _reads_in_steps(tiny, spec, monkeypatch, **kw) -> list[str]:
    """Every read of a tensor's value by the host while ``spec`` trains, outside the host's preparation of the ids;
    as ``file:line (function)`` of the innermost caller outside torch."""
    import codeswitch.contrastivemix.train as tr

    reads: list[str] = []
    for name in HOST_READS:
        original = getattr(torch.Tensor, name)

        def wrapped(self, *a, _original=original, **k):
            stack = traceback.extract_stack()[:-1]
            if not any(f.name in HOST_PREP and f.filename == tr.__file__ for f in stack):
                outside = [f for f in stack if "/torch/" not in f.filename]
                reads.append(f"{outside[-1].filename}:{outside[-1].lineno} ({outside[-1].name})" if outside else "?")
            return _original(self, *a, **k)

        monkeypatch.setattr(torch.Tensor, name, wrapped)
    # the GPU's optimiser (core.utils.adamw_kind): fused AdamW keeps its step counts on the device (the trainer asks
    # for it on CPU too; the multi-tensor AdamW would read each parameter's step count on the host)
    monkeypatch.setattr(tr, "adamw_kind", lambda device, cpu="foreach": {"fused": True})
    try:
        _train(tiny, spec, **kw)
    finally:
        monkeypatch.undo()
    return reads


def test_no_host_reads_in_a_step(tiny, token_cache, monkeypatch):
    """Training reads the device once per epoch (the epoch's loss sums), whatever the number of steps: the steps
    themselves (copy, forwards, gather, losses, backward, fused AdamW, schedule) read nothing.  The guard can fail: a
    loss logged with ``float(loss)`` at every step shows up."""
    spec = _spec("contrastivemix", num_train_epochs=2)
    for n_queries in (16, 40):  # 2 and 5 steps an epoch
        reads = _reads_in_steps(tiny, spec, monkeypatch, n_queries=n_queries)
        assert len(reads) == 2 and all("(_epochs)" in r for r in reads), reads  # one per epoch (train_dual_encoder's epoch loop)

    import codeswitch.contrastivemix.train as tr

    real = tr.contrastivemix_loss

    def logged(*a, **k):
        out = real(*a, **k)
        float(out["total"].detach())  # what the guard is for
        return out

    monkeypatch.setattr(tr, "contrastivemix_loss", logged)
    reads = _reads_in_steps(tiny, spec, monkeypatch, n_queries=16)
    assert len(reads) == 2 + 2 * 2, reads


# --------------------------------------------------------------------------- tokenised once
class _CountingTokenizer:
    """Counts the texts a tokenizer is called on, by list (a corpus or a column is one call)."""

    def __init__(self, monkeypatch, tokenizer):
        self.calls: list[list[str]] = []
        cls = type(tokenizer)
        real = cls.__call__

        def counting(tok, text=None, *a, **k):
            self.calls.append([text] if isinstance(text, str) else list(text or []))
            return real(tok, text, *a, **k)

        monkeypatch.setattr(cls, "__call__", counting)

    def texts_of(self, texts: list[str]) -> int:
        """How many texts the calls that tokenised (chunks of) ``texts`` held: ``len(texts)`` for one pass."""
        want = set(texts)
        return sum(len(c) for c in self.calls if len(set(c)) > 1 and set(c) <= want)


def test_each_corpus_is_tokenised_once_across_models(tiny, token_cache, tmp_path, monkeypatch):
    """Three models that share a tokenizer encoding one corpus: its passages are tokenised once (into the token
    shards), every later encoding reads the ids from there; a model with another tokenizer tokenises it a second
    time.  The guard can fail: from an empty cache each time (as before issue 24) each encoding tokenises the corpus
    again."""
    import copy

    from codeswitch.common import fastpath
    from codeswitch.contrastivemix.data import load_collection
    from codeswitch.contrastivemix.retrieval import corpus_tokens

    model, tokenizer = tiny
    coll = load_collection("mrtydi", "synthetic", "ko")
    texts = coll.texts(0, len(coll))
    counter = _CountingTokenizer(monkeypatch, tokenizer)
    other = copy.deepcopy(tokenizer)
    other.add_tokens(["zzz-another-vocabulary"])  # another tokenizer (the same class: its calls are counted too)

    def encode_all(pairs, tag: str, *, fresh: bool = False):
        for i, (m, tok) in enumerate(pairs):
            if fresh:
                monkeypatch.setenv("CODESWITCH_TOKEN_CACHE", str(token_cache / f"{tag}-{i}"))
            fastpath.encode_corpus(m.passage_model, tok, coll.texts, len(coll), tmp_path / f"{tag}-{i}.npy", max_length=32,
                                   batch_size=64, device="cpu", tokens=corpus_tokens(coll, tok, 32) if i % 2 else None)

    models = [model, copy.deepcopy(model), copy.deepcopy(model)]
    encode_all([(m, tokenizer) for m in models], "shared")
    assert counter.texts_of(texts) == len(texts)  # one pass over the corpus, for three encodings
    encode_all([(models[0], other)], "other")
    assert counter.texts_of(texts) == 2 * len(texts)  # another tokenizer: a second pass
    counter.calls.clear()
    encode_all([(m, tokenizer) for m in models], "fresh", fresh=True)
    assert counter.texts_of(texts) == len(models) * len(texts)  # what the guard catches


def test_training_tokenises_the_english_originals_once_across_models(tiny, token_cache, monkeypatch):
    """Three models trained on one training set with one tokenizer: each English column (queries, first positives,
    an epoch's hard negatives) is tokenised by the first model only; each model tokenises its own code-mixed copies
    once per epoch, before its steps; a step calls no tokenizer."""
    from codeswitch.contrastivemix.data import load_train_set

    _, tokenizer = tiny
    rows = load_train_set("synthetic").select(range(16))
    queries = list(rows["query"])
    counter = _CountingTokenizer(monkeypatch, tokenizer)
    for method in ("mdpr", "contrastivemix", "naivemix"):
        _train(tiny, _spec(method, num_train_epochs=2))
    assert sum(c == queries for c in counter.calls) == 1, "the English queries were tokenised more than once"
    # mDPR: the English columns (queries, positives, each epoch's negatives); ContrastiveMix and NaiveMix read those from
    # the cache and tokenise only their code-mixed texts: at most one call per (group, special tokens) and epoch
    assert len(counter.calls) <= 4 + 2 * 3 + 2 * 3, [len(c) for c in counter.calls]
    # per epoch, not per step: 2 and 4 steps an epoch (batches of 8 and 4) make the same calls
    calls = []
    for batch_size in (8, 4):
        monkeypatch.setenv("CODESWITCH_TOKEN_CACHE", str(token_cache / f"batch{batch_size}"))  # each run from an empty cache
        counter.calls.clear()
        _train(tiny, _spec("contrastivemix", num_train_epochs=2, batch_size=batch_size))
        calls.append(len(counter.calls))
    assert calls[0] == calls[1] > 0, calls
