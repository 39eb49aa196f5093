"""ContrastiveMix's reduced corpus (``contrastivemix.corpus_sample``, the quick profile's rule, issue 38): every judged
passage, BM25's top ``depth`` of every reported and tuning query, and a seeded random sample; BM25 itself still ranks
the whole corpus, and the dense rankings hold full-corpus rows.  Tested on the smoke corpus with the smoke backbone.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError


def _evals(overrides=None):
    from codeswitch.contrastivemix import plan
    from codeswitch.contrastivemix.config import EvalRun

    return [s for s in plan(load_profile("smoke", overrides or {})) if isinstance(s, EvalRun)]


def _target(spec):
    """The smoke target's collection and its reported and tuning queries."""
    from codeswitch.contrastivemix.inputs import collection, queries_of

    b = spec.bm25
    return collection(b.benchmark, b.corpus, b.language), {"report": queries_of(b, b.report_split),
                                                            "tune": queries_of(b, b.tune_split, sample=b.tune_max_queries)}


def _bm25_like(coll, queries, depth, seed=1):
    """Stand-in BM25 rankings (full-corpus rows, -1 padding): what the BM25 run's records hold."""
    from codeswitch.contrastivemix.evaluate import Ranking

    rng = np.random.default_rng(seed)
    out = {}
    for name, qs in queries.items():
        idx = np.stack([rng.choice(len(coll), size=depth, replace=False) for _ in qs.queries]).astype(np.int64)
        idx[:, -3:] = -1  # a short ranking: empty slots are not rows
        out[name] = Ranking(list(qs.queries), idx, np.zeros(idx.shape, dtype=np.float32))
    return out


def test_the_corpus_sample_is_off_by_default_and_enters_the_key_only_when_set():
    plain = _evals()
    assert plain and all(s.corpus_sample is None and "corpus_sample" not in s.key() for s in plain)
    reduced = _evals({"contrastivemix.corpus_sample": 5})
    assert all(s.key()["corpus_sample"] == 5 for s in reduced)
    assert {s.key_hash() for s in plain}.isdisjoint(s.key_hash() for s in reduced)
    with pytest.raises(ConfigError, match="corpus_sample"):
        _evals({"contrastivemix.corpus_sample": -1})


def test_reduced_rows_are_judged_plus_bm25_top_depth_plus_a_seeded_sample():
    from codeswitch.contrastivemix.retrieval import reduced_rows

    spec = _evals({"contrastivemix.corpus_sample": 7})[0]
    coll, queries = _target(spec)
    depth = 5
    spec = replace(spec, depth=depth)
    sparse = _bm25_like(coll, queries, 2 * depth)
    rows = reduced_rows(spec, coll, sparse, queries)
    docid_row = {d: i for i, d in enumerate(coll.dataset["docid"])}
    judged = {docid_row[str(d)] for qs in queries.values() for rel in qs.qrels.values() for d in rel}
    top = {int(i) for r in sparse.values() for i in r.indices[:, :depth].ravel() if i >= 0}
    assert judged and top and judged | top <= set(rows.tolist())
    assert len(rows) == len(judged | top) + 7 and list(rows) == sorted(set(rows.tolist()))  # exactly N more, sorted, once each
    assert np.array_equal(rows, reduced_rows(spec, coll, sparse, queries))  # the same sample every time
    assert reduced_rows(replace(spec, corpus_sample=None), coll, sparse, queries) is None
    every = reduced_rows(replace(spec, corpus_sample=10 ** 9), coll, sparse, queries)
    assert np.array_equal(every, np.arange(len(coll)))  # a sample larger than the rest: the whole corpus


def test_dense_rankings_over_the_reduced_corpus_hold_full_corpus_rows_with_their_full_corpus_scores(tmp_path):
    from codeswitch.contrastivemix.inputs import backbone, backbone_path
    from codeswitch.contrastivemix.retrieval import _dense_rankings, reduced_rows

    profile = load_profile("smoke")
    spec = _evals({"contrastivemix.corpus_sample": 3})[0]
    coll, queries = _target(spec)
    spec = replace(spec, bm25=replace(spec.bm25, depth=len(coll)))  # dense rankings as deep as the smoke corpus
    m = spec.model
    model, tokenizer = backbone(backbone_path(profile, m.model))
    rows = reduced_rows(spec, coll, _bm25_like(coll, queries, 4), queries)
    assert 0 < len(rows) < len(coll)
    full = _dense_rankings(model, tokenizer, m, spec, coll, queries, profile, tmp_path / "full.npy")
    part = _dense_rankings(model, tokenizer, m, spec, coll, queries, profile, tmp_path / "part.npy", rows)
    for name in queries:
        f, p = full[name], part[name]
        assert p.qids == f.qids
        assert set(p.indices[p.indices >= 0].tolist()) <= set(rows.tolist())
        for q in range(len(p.qids)):
            score_full = dict(zip(f.indices[q].tolist(), f.scores[q].tolist()))
            for i, s in zip(p.indices[q].tolist(), p.scores[q].tolist()):
                if i >= 0 and i in score_full:
                    assert s == pytest.approx(score_full[i], rel=1e-5)  # the same passage: its embedding up to batch rounding
            # the reduced ranking is the full one restricted to the reduced rows (the smoke corpus is within one ranking;
            # near-ties may swap under batch rounding): the same rows, by descending score
            kept = [i for i in f.indices[q].tolist() if i in set(rows.tolist())]
            got = [i for i in p.indices[q].tolist() if i >= 0]
            assert sorted(got) == sorted(kept) and got[:10] == kept[:10]
            assert np.all(np.diff(p.scores[q][p.indices[q] >= 0]) <= 0)


def test_every_table_says_when_the_corpora_are_reduced():
    from codeswitch.contrastivemix import load
    from codeswitch.contrastivemix.tables import _notes, corpus_note

    reduced = load_profile("smoke", {"contrastivemix.corpus_sample": 50})
    plain = load_profile("smoke")
    note = corpus_note(load(reduced))
    assert "corpus_sample 50" in note and "judged" in note and "top 100" in note
    for bench in ("mrtydi", "miracl"):
        assert note in _notes(reduced, load(reduced), bench)
        assert not any("Reduced corpora" in n for n in _notes(plain, load(plain), bench))  # smoke's tables: unchanged


def test_fixed_width_buckets_reach_the_corpus_encoder_and_rank_as_without(tmp_path):
    """``contrastivemix.encode_bucket_step`` (issue 40): out of the evaluation's key, it reaches the corpus encoder (the
    passage encoder sees only the bucket widths) and the rankings equal the unbucketed ones up to float16 rounding."""
    from codeswitch.common.fastpath import encode_bucket_widths
    from codeswitch.contrastivemix.inputs import backbone, backbone_path
    from codeswitch.contrastivemix.retrieval import _dense_rankings

    profile = load_profile("smoke")
    plain, spec = _evals()[0], _evals({"contrastivemix.encode_bucket_step": 8})[0]
    assert (plain.encode_bucket_step, spec.encode_bucket_step) == (0, 8) and spec.key_hash() == plain.key_hash()
    coll, queries = _target(spec)
    m = spec.model
    model, tokenizer = backbone(backbone_path(profile, m.model))
    widths = {0: set(), 8: set()}
    step = [0]
    model.passage_model.register_forward_pre_hook(lambda mod, a, kw: widths[step[0]].add(kw["input_ids"].shape[1]),
                                                  with_kwargs=True)
    got = {}
    for step[0], s in ((0, plain), (8, spec)):
        got[step[0]] = _dense_rankings(model, tokenizer, m, s, coll, queries, profile, tmp_path / f"b{step[0]}.npy")
    assert widths[8] <= set(encode_bucket_widths(8, m.passage_max_length)) and widths[0] - widths[8]
    for name in queries:
        a, b = got[0][name], got[8][name]
        np.testing.assert_allclose(b.scores, a.scores, rtol=2e-3, atol=2e-3)
        assert a.indices[:, :10].tolist() == b.indices[:, :10].tolist()
