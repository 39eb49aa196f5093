"""BM25 through Pyserini (Lucene): agreement with bm25s on plain English, the effect of language analysers."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import pearsonr

from codeswitch.contrastivemix.data import load_collection, load_queries
from codeswitch.contrastivemix.synthetic import base_facts
from codeswitch.contrastivemix.lucene import lucene_analyze, lucene_rank
from codeswitch.contrastivemix.evaluate import bm25_rank


def _smoke(language: str):
    """The synthetic set's base world: its 184 passages and its dev and test queries."""
    coll = load_collection("mrtydi", "synthetic", language)
    base = {f"q-{f.fact_id}" for f in base_facts()}
    texts = coll.texts(0, len(coll))
    passages = [t for t, d in zip(texts, coll.dataset["docid"]) if "-w" not in d]  # other worlds' docids hold "-w<N>-"
    assert len(passages) == 184
    queries = {s: {q: t for q, t in load_queries("mrtydi", "synthetic", language, s).queries.items() if q in base} for s in ("dev", "test")}
    return passages, queries


def _hits(ranking, row: int) -> dict[int, float]:
    return {int(i): float(s) for i, s in zip(ranking.indices[row], ranking.scores[row]) if i >= 0}


def test_lucene_matches_bm25s_on_plain_english(tmp_path):
    """Same terms (English analyser without stemming or stop words), same BM25 (k1 0.9, b 0.4): same rankings."""
    coll, queries = _smoke("en")
    ref = bm25_rank(coll, queries, "en", depth=1000, k1=0.9, b=0.4)
    out = lucene_rank(coll, queries, "en", depth=1000, k1=0.9, b=0.4, stemming=False, stopwords=False, workdir=tmp_path)
    assert list(tmp_path.iterdir()) == []  # the temporary index is gone
    n, top10, rs = 0, [], []
    for split in queries:
        assert out[split].qids == ref[split].qids
        for row in range(len(ref[split].qids)):
            a, b = _hits(ref[split], row), _hits(out[split], row)
            assert set(a) == set(b)  # the same passages share a term with the query
            top10.append(ref[split].indices[row, :10].tolist() == out[split].indices[row, :10].tolist())
            common = sorted(a)
            if len(common) > 2:
                rs.append(pearsonr([a[d] for d in common], [b[d] for d in common])[0])
            n += 1
    assert n == 46
    assert np.mean(top10) == 1.0  # ties broken by row in both
    assert min(rs) > 0.9999  # Lucene's scores = bm25s's up to Lucene's one-byte length norms


def test_finnish_and_arabic_analysers_match_inflected_forms(tmp_path):
    # Snowball Finnish stems the inessive plural and the genitive to the bare nouns' stems.
    assert lucene_analyze("kirjastoissa koiran", "fi") == lucene_analyze("kirjasto koira", "fi") == ["kirjasto", "koira"]
    passages = ["kirjasto on talon vieressä", "auto on punainen", "metsä on vihreä"]
    fi = lucene_rank(passages, {"q": {"q": "kirjastoissa"}}, "fi", depth=3, k1=0.9, b=0.4, workdir=tmp_path)["q"]
    plain = bm25_rank(passages, {"q": {"q": "kirjastoissa"}}, "fi", depth=3, k1=0.9, b=0.4)["q"]
    assert fi.indices[0].tolist() == [0, -1, -1]  # the library passage, and only it
    assert (plain.indices[0] == -1).all()  # no surface form in common: bm25s retrieves nothing
    # Arabic: the light stemmer strips the article ال, so "الكتاب" (the book) finds "كتاب".
    passages = ["قرأت كتاب جديد", "ذهبت إلى السوق"]
    ar = lucene_rank(passages, {"q": {"q": "الكتاب"}}, "ar", depth=2, k1=0.9, b=0.4, workdir=tmp_path)["q"]
    assert ar.indices[0].tolist() == [0, -1]
    assert (bm25_rank(passages, {"q": {"q": "الكتاب"}}, "ar", depth=2, k1=0.9, b=0.4)["q"].indices[0] == -1).all()


def test_analysers_change_smoke_rankings(tmp_path):
    """On the smoke corpus, the Arabic analyser moves the ranking; the Chinese one (bigrams, like bm25s) does not."""
    jaccard = {}
    for language in ("ar", "zh"):
        coll, queries = _smoke(language)
        ref = bm25_rank(coll, queries, language, depth=1000, k1=0.9, b=0.4)
        out = lucene_rank(coll, queries, language, depth=1000, k1=0.9, b=0.4, workdir=tmp_path)
        js = []
        for split in queries:
            for row in range(len(ref[split].qids)):
                a = set(ref[split].indices[row, :10].tolist()) - {-1}
                b = set(out[split].indices[row, :10].tolist()) - {-1}
                js.append(len(a & b) / max(1, len(a | b)))
        jaccard[language] = float(np.mean(js))
    assert jaccard["zh"] == pytest.approx(1.0)
    assert jaccard["ar"] < 0.6  # measured 0.36: stemming and stop words reorder most top-10s


def test_only_english_analyser_can_be_switched_off():
    with pytest.raises(ValueError, match="only the English analyser"):
        lucene_rank(["x"], {"q": {"q": "x"}}, "fi", depth=1, k1=0.9, b=0.4, stemming=False)
