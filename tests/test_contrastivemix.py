"""ContrastiveMix: MUSE dictionaries, code-mixing, the losses, retrieval metrics, the hybrid, the data readers."""

from __future__ import annotations

import gzip
import json
import math
import random
import re

import numpy as np
import pytest
import torch

from codeswitch.contrastivemix.codemix import MuseFormatError, code_mix, load_muse, word_spans
from codeswitch.contrastivemix.evaluate import Ranking, SplitRuns, _fusion_table, analyze, bm25_rank, dense_rank, evaluate_hybrid, evaluate_run, fuse, fuse_grid, hybrid_grid, mean_scores, paired_t_test
from codeswitch.contrastivemix.loss import alignment_loss, contrastivemix_loss, ir_loss


def train_spec(method: str = "mdpr", *, mix_query: bool = False, mix_passage: bool = False, **fields):
    """A :class:`TrainRun` as the smoke plan builds it for ``method`` (the Korean target), with ``fields`` replaced."""
    import dataclasses

    from codeswitch.contrastivemix.config import Config
    from codeswitch.contrastivemix.plan import VARIANTS, train_run
    from codeswitch.core.profiles import load_profile

    variant = next(k for k, v in VARIANTS.items() if (v.method, v.mix_query, v.mix_passage) == (method, mix_query, mix_passage))
    spec = train_run(load_profile("smoke"), Config(backbones=({"name": "tiny-bert", "model": "tiny-bert"},)), variant,
                     None if method == "mdpr" else "ko", 11111)
    return dataclasses.replace(spec, **fields)


# --------------------------------------------------------------------------- MUSE dictionaries
def test_load_muse_tab_and_space_separated(tmp_path):
    tab = tmp_path / "en-ko.txt"
    tab.write_text("country\t나라\ncountry\t국가\nand\t그리고\n\ncountry\t나라\nutc\tutc\n", encoding="utf-8")
    d = load_muse(tab)
    assert d == {"country": ["나라", "국가"], "and": ["그리고"], "utc": ["utc"]}  # repeated line kept once
    space = tmp_path / "en-es.txt"
    space.write_text("the el\nthe la\nthe los\ncity ciudad\n", encoding="utf-8")
    assert load_muse(space) == {"the": ["el", "la", "los"], "city": ["ciudad"]}


def test_load_muse_bad_line_names_file_and_line(tmp_path):
    bad = tmp_path / "en-xx.txt"
    bad.write_text("one uno\ntwo dos tres\n", encoding="utf-8")
    with pytest.raises(MuseFormatError, match=r"en-xx\.txt, line 2"):
        load_muse(bad)
    with pytest.raises(FileNotFoundError):
        load_muse(tmp_path / "missing.txt")


@pytest.mark.shared
@pytest.mark.parametrize(
    "name, words, pairs",
    [("en-ko.txt", 17517, 22357), ("en-hi.txt", 31719, 38221), ("en-es.txt", 93084, 112580)],
)
def test_load_muse_real_files(shared_data, name, words, pairs):
    d = load_muse(shared_data / "muse" / name)  # en-ko, en-hi: tabs; en-es: spaces
    assert len(d) == words
    assert sum(len(v) for v in d.values()) == pairs
    assert all(k == k.lower() for k in list(d)[:1000])


def test_shipped_glossaries_parse():
    from codeswitch.contrastivemix.synthetic import GLOSSARY_DIR

    files = sorted(GLOSSARY_DIR.glob("en-*.txt"))
    assert {p.stem for p in files} >= {"en-ar", "en-es", "en-ko", "en-ru", "en-zh"}
    for p in files:
        assert len(load_muse(p)) >= 30


# --------------------------------------------------------------------------- code-mixing
DICT = {"what": ["무엇"], "capital": ["수도", "자본"], "country": ["나라", "국가"], "city": ["도시"]}
TEXT = "What is the capital of the country? The city's capital, not the country."


def test_code_mix_rate_zero_returns_text_unchanged():
    for seed in range(5):
        assert code_mix(TEXT, DICT, 0.0, random.Random(seed)) == TEXT


def test_code_mix_rate_one_switches_every_dictionary_word():
    out = code_mix(TEXT, DICT, 1.0, random.Random(0))
    before, after = [w for w, _, _ in word_spans(TEXT)], [w for w, _, _ in word_spans(out)]
    assert len(before) == len(after)
    switched = 0
    for b, a in zip(before, after):
        if b.lower() in DICT:
            assert a in DICT[b.lower()], (b, a)
            switched += 1
        else:
            assert a == b  # other words, punctuation and case are kept
    assert switched == 6  # What, capital ×2, country ×2, city ("The"/"the" are not in DICT)
    assert out.endswith(".") and "?" in out and "'s" in out


def test_code_mix_is_reproducible_with_a_seeded_rng():
    long = " ".join(["the capital city of the country"] * 50)
    a = code_mix(long, DICT, 0.5, random.Random(123))
    assert a == code_mix(long, DICT, 0.5, random.Random(123))
    assert len({code_mix(long, DICT, 0.5, random.Random(s)) for s in range(5)}) > 1
    # About half of the 150 dictionary words are switched.
    n_switched = sum(w in ("수도", "자본", "나라", "국가", "도시") for w, _, _ in word_spans(a))
    assert 50 <= n_switched <= 100


def test_code_mix_case_handling():
    assert code_mix("Country", DICT, 1.0, random.Random(0)) in ("나라", "국가")
    # The released code looks words up as written: capitalised words never switch.
    assert code_mix("Country city", DICT, 1.0, random.Random(0), case_sensitive=True) == "Country 도시"


# --------------------------------------------------------------------------- losses
def _reference_ce(scores: torch.Tensor) -> float:
    """mean_i −log(exp(s_ii) / Σ_j exp(s_ij)), by explicit loops."""
    total = 0.0
    for i in range(scores.shape[0]):
        denom = sum(math.exp(float(scores[i, j])) for j in range(scores.shape[1]))
        total += -math.log(math.exp(float(scores[i, i])) / denom)
    return total / scores.shape[0]


def test_contrastivemix_loss_hand_computed():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    p_pos = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    p_neg = torch.tensor([[0.0, 1.0], [1.0, 1.0]])
    q_mixed = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    out = contrastivemix_loss(q, p_pos, p_neg, q_mixed, weight=0.5)
    # q · [p+; p-]ᵀ = [[1, 0, 0, 1], [0, 2, 1, 1]]; targets 0 and 1.
    ir = (-math.log(math.e / (math.e + 1 + 1 + math.e)) - math.log(math.e**2 / (1 + math.e**2 + math.e + math.e))) / 2
    # q · q̃ᵀ = [[1, 0], [1, 0]]; targets 0 and 1.
    align = (-math.log(math.e / (math.e + 1)) - math.log(1 / (math.e + 1))) / 2
    assert out["ir"].item() == pytest.approx(ir, rel=1e-6)
    assert out["align"].item() == pytest.approx(align, rel=1e-6)
    assert out["total"].item() == pytest.approx(ir + 0.5 * align, rel=1e-6)


def test_contrastivemix_loss_matches_loop_reference_on_random_tensors():
    g = torch.Generator().manual_seed(0)
    B, H = 5, 7
    q, p_pos, p_neg, q_mixed, p_mixed = (torch.randn(B, H, generator=g) for _ in range(5))
    out = contrastivemix_loss(q, p_pos, p_neg, q_mixed, weight=0.1)
    ir = _reference_ce(q @ torch.cat([p_pos, p_neg]).T)  # (B, 2B)
    align = _reference_ce(q @ q_mixed.T)  # (B, B)
    assert out["ir"].item() == pytest.approx(ir, rel=1e-5)
    assert out["align"].item() == pytest.approx(align, rel=1e-5)
    assert out["total"].item() == pytest.approx(ir + 0.1 * align, rel=1e-5)
    assert ir_loss(q, p_pos, p_neg).item() == pytest.approx(ir, rel=1e-5)
    # Table 3's passage-side and both-sides variants.
    align_p = _reference_ce(p_pos @ p_mixed.T)
    only_p = contrastivemix_loss(q, p_pos, p_neg, None, p_mixed=p_mixed, weight=0.2)
    assert only_p["align"].item() == pytest.approx(align_p, rel=1e-5)
    both = contrastivemix_loss(q, p_pos, p_neg, q_mixed, p_mixed=p_mixed, weight=0.2)
    assert both["total"].item() == pytest.approx(ir + 0.2 * (align + align_p), rel=1e-5)
    assert alignment_loss(q, q_mixed).item() == pytest.approx(align, rel=1e-5)


def test_passage_alignment_of_every_passage_as_the_released_code():
    """passage_align "all": [p+; p-] against [p̃+; p̃-], one (2B, 2B) cross-entropy (tevax p_contrastive_loss(p_reps, cm_p_reps))."""
    g = torch.Generator().manual_seed(1)
    B, H = 4, 6
    q, p_pos, p_neg, p_mixed, n_mixed = (torch.randn(B, H, generator=g) for _ in range(5))
    out = contrastivemix_loss(q, p_pos, p_neg, None, p_mixed=p_mixed, n_mixed=n_mixed, weight=0.1)
    ref = _reference_ce(torch.cat([p_pos, p_neg]) @ torch.cat([p_mixed, n_mixed]).T)  # (2B, 2B)
    assert out["align"].item() == pytest.approx(ref, rel=1e-5)
    assert out["align"].item() != pytest.approx(_reference_ce(p_pos @ p_mixed.T), rel=1e-3)  # not the positives-only term
    with pytest.raises(ValueError, match="n_mixed needs p_mixed and p_neg"):
        contrastivemix_loss(q, p_pos, None, None, p_mixed=p_mixed, n_mixed=n_mixed, weight=0.1)


def test_contrastivemix_loss_rejects_bad_shapes():
    x = torch.randn(3, 4)
    with pytest.raises(ValueError, match="same shape"):
        contrastivemix_loss(x, x, torch.randn(2, 4), x, weight=0.1)
    with pytest.raises(ValueError, match="q_mixed, p_mixed"):
        contrastivemix_loss(x, x, x, None, weight=0.1)


# --------------------------------------------------------------------------- metrics
def test_metrics_hand_computed_example():
    qrels = {"q1": {"d1": 1, "d9": 0}, "q2": {"d3": 1, "d4": 1}, "q3": {"d7": 1}}
    run = {
        "q1": {"d2": 0.9, "d1": 0.5, "d5": 0.1},  # relevant at rank 2 -> RR 1/2, recall 1
        "q2": {"d5": 0.3, "d6": 0.2, "d3": 0.1},  # one of two relevant, at rank 3 -> RR 1/3, recall 1/2
    }  # q3 retrieves nothing -> 0 and 0 (trec_eval -c)
    per_query = evaluate_run(run, qrels, depth=100)
    assert per_query["mrr@100"] == pytest.approx({"q1": 0.5, "q2": 1 / 3, "q3": 0.0})
    assert per_query["recall@100"] == pytest.approx({"q1": 1.0, "q2": 0.5, "q3": 0.0})
    assert mean_scores(per_query) == pytest.approx({"mrr@100": 100 * (0.5 + 1 / 3) / 3, "recall@100": 50.0})


def test_metrics_cut_at_depth_100():
    docs = {f"d{i:03d}": 1000.0 - i for i in range(150)}  # d000 best ... d149 worst
    per_query = evaluate_run({"q": docs}, {"q": {"d120": 1, "d004": 1}}, depth=100)
    assert per_query["mrr@100"]["q"] == pytest.approx(1 / 5)
    assert per_query["recall@100"]["q"] == pytest.approx(0.5)  # d120 is ranked 121st


def test_paired_t_test():
    from scipy import stats

    a = {"q1": 0.5, "q2": 1.0, "q3": 0.2, "q4": 0.0}
    b = {"q1": 0.4, "q2": 0.5, "q3": 0.2, "q4": 0.1, "q5": 1.0}  # q5 is not common: ignored
    expected = stats.ttest_rel([0.5, 1.0, 0.2, 0.0], [0.4, 0.5, 0.2, 0.1]).pvalue
    assert paired_t_test(a, b) == pytest.approx(expected)
    assert paired_t_test(a, a) == 1.0


# --------------------------------------------------------------------------- search and hybrid
def test_dense_rank_matches_brute_force_across_chunks():
    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((37, 8)).astype(np.float16)
    queries = rng.standard_normal((5, 8)).astype(np.float32)
    ranking = dense_rank(queries, corpus, [f"q{i}" for i in range(5)], depth=6, device="cpu", chunk_size=10, query_batch=2)
    scores = queries @ corpus.astype(np.float32).T  # (5, 37)
    for i in range(5):
        expected = np.argsort(-scores[i], kind="stable")[:6]
        assert ranking.indices[i].tolist() == expected.tolist()
        assert np.allclose(ranking.scores[i], scores[i][expected], atol=1e-4)


def test_analyze_and_bm25():
    assert analyze("Who founded Seoul?", "en") == ["who", "founded", "seoul"]
    assert analyze("서울을 세운 사람", "ko") == ["서울", "울을", "세운", "사람"]  # CJK-style character bigrams
    assert analyze("北京 is big", "zh") == ["北京", "is", "big"]
    passages = ["the river flows", "a city near the river", "mountains and valleys", "river river river"]
    out = bm25_rank(passages, {"report": {"q": "river"}, "tune": {"q0": "valleys", "q1": "xyz"}}, "en", depth=10, k1=0.9, b=0.4)
    ranking = out["report"]
    assert ranking.indices.shape == (1, 4)
    assert ranking.indices[0, 0] == 3  # the highest term frequency
    assert 2 not in ranking.indices[0].tolist()  # shares no term with the query: not retrieved
    assert out["tune"].indices[0, 0] == 2 and (out["tune"].indices[1] == -1).all()


def _runs(split: str, dense: dict, sparse: dict, qrels: dict) -> SplitRuns:
    def ranking(scores):
        qids = list(scores)
        k = max(len(v) for v in scores.values())
        idx = np.full((len(qids), k), -1)
        sc = np.full((len(qids), k), -np.inf, dtype=np.float32)
        for r, q in enumerate(qids):
            for c, (d, s) in enumerate(sorted(scores[q].items(), key=lambda kv: -kv[1])):
                idx[r, c], sc[r, c] = d, s
        return Ranking(qids, idx, sc)

    docid_of = {i: f"d{i}" for i in range(10)}
    return SplitRuns(split, qrels, ranking(dense), ranking(sparse), docid_of)


def test_fuse_min_max_weight_on_dense():
    dense = {"q": {0: 10.0, 1: 9.0, 2: 4.0}}  # normalised: 1, 5/6, 0
    sparse = {"q": {2: 7.0, 3: 5.0, 0: 3.0}}  # normalised: 1, 0.5, 0; doc 1 missing -> min -> 0
    runs = _runs("dev", dense, sparse, {"q": {"d0": 1}})
    # weight 0: BM25 order; doc 1 (BM25 min) ties doc 0 at 0 and loses on row number.
    assert fuse(runs.dense, runs.sparse, 0.0, depth=100).indices[0, :4].tolist() == [2, 3, 0, 1]
    # weight 1: 0 -> 0 + 1, 1 -> 0 + 5/6, 2 -> 1 + 0, 3 -> 0.5 + 0 (dense min).
    fused = fuse(runs.dense, runs.sparse, 1.0, depth=100)
    assert fused.indices[0, :4].tolist() == [0, 2, 1, 3]
    assert fused.scores[0, :4] == pytest.approx([1.0, 1.0, 5 / 6, 0.5])


def test_fuse_grid_is_fuse_at_each_weight_with_ties_by_row():
    """The grid's one sort per query gives, at every weight, the ranking a lexicographic sort (score descending,
    then corpus row) gives, scores included; with ties (scores on a coarse lattice) and a short depth."""
    rng = np.random.default_rng(0)
    n, q = 60, 5
    dense = Ranking([f"q{i}" for i in range(q)], np.stack([rng.permutation(n)[:40] for _ in range(q)]),
                    np.round(rng.random((q, 40)), 1).astype(np.float32))
    sparse = Ranking(list(dense.qids), np.stack([rng.permutation(n)[:30] for _ in range(q)]),
                     np.round(rng.random((q, 30)), 1).astype(np.float32))
    grid = hybrid_grid(0.25)
    table = _fusion_table(dense, sparse)
    for w, got in zip(grid, fuse_grid(dense, sparse, grid, depth=25)):
        for i, (union, s_norm, d_norm) in enumerate(table):
            score = s_norm + w * d_norm
            order = np.lexsort((union, -score))[:25]
            assert got.indices[i].tolist() == union[order].tolist()
            assert got.scores[i].tolist() == score[order].astype(np.float32).tolist()
    assert fuse(dense, sparse, 0.5, depth=25).indices.tolist() == fuse_grid(dense, sparse, [0.0, 0.5], depth=25)[1].indices.tolist()


def test_fuse_refuses_rankings_of_different_queries():
    """The hybrid pairs the two rankings row by row: a query one of them lacks (or another order) is an error naming it."""
    def ranking(qids):
        return Ranking(list(qids), np.zeros((len(qids), 2), dtype=np.int64), np.ones((len(qids), 2), dtype=np.float32))

    dense, sparse = ranking(["q1", "q2", "q3"]), ranking(["q1", "q2", "q4"])
    with pytest.raises(ValueError, match=r"1 dense query missing from the BM25 ranking \('q3'\); 1 BM25 query missing from the dense ranking \('q4'\)"):
        fuse(dense, sparse, 0.5, depth=10)
    with pytest.raises(ValueError, match=r"2 dense queries missing from the BM25 ranking \('q2', 'q3'\)"):
        fuse(dense, ranking(["q1"]), 0.5, depth=10)
    with pytest.raises(ValueError, match="same 3 queries in a different order"):
        fuse(dense, ranking(["q3", "q2", "q1"]), 0.5, depth=10)
    with pytest.raises(ValueError, match=r"split 'dev': .*'q4'"):
        SplitRuns("dev", {}, dense, sparse)
    assert fuse(dense, ranking(["q1", "q2", "q3"]), 0.5, depth=10).qids == ["q1", "q2", "q3"]


def test_hybrid_never_tunes_on_the_reported_split_unless_asked():
    # On "dev" BM25 alone (w = 0) is best; on "test" the dense run (large w) is best.
    # (Scores chosen so that no two passages tie: trec_eval breaks ties by doc id.)
    dev = _runs("dev", {"q": {0: 0.0, 1: 2.0, 2: 1.0}}, {"q": {0: 2.0, 1: 1.9, 2: 0.0}}, {"q": {"d0": 1}})
    test = _runs("test", {"q": {0: 2.0, 1: 1.0, 2: 0.0}}, {"q": {0: 1.5, 1: 2.0, 2: 0.0}}, {"q": {"d0": 1}})
    grid = hybrid_grid(0.5)
    assert grid == [0.0, 0.5, 1.0]
    honest = evaluate_hybrid(test, dev, grid=grid, depth=100)
    assert honest["tuned_on"] == "dev" and honest["weight"] == 0.0
    assert honest["mean"]["mrr@100"] == pytest.approx(50.0)  # w = 0 on test ranks d0 second
    released = evaluate_hybrid(test, None, grid=grid, depth=100, tune_on_report_split=True)
    assert released["tuned_on"] == "test" and released["weight"] == 1.0
    assert released["mean"]["mrr@100"] == pytest.approx(100.0)
    with pytest.raises(ValueError, match="refusing to tune"):
        evaluate_hybrid(test, _runs("test", {"q": {0: 1.0}}, {"q": {0: 1.0}}, {"q": {"d0": 1}}), grid=grid, depth=100)
    with pytest.raises(ValueError, match="tuning split is needed"):
        evaluate_hybrid(test, None, grid=grid, depth=100)


# --------------------------------------------------------------------------- data
def test_synthetic_retrieval_set_is_consistent():
    from codeswitch.contrastivemix.data import load_collection, load_queries, load_train_set
    from codeswitch.contrastivemix.synthetic import CORPUS_FILE, corpus_lines, synthetic_facts

    facts = synthetic_facts()
    assert {f.split for f in facts} == {"train", "dev", "test"}
    assert len({f.fact_id for f in facts}) == len(facts)
    train = load_train_set("synthetic")
    assert len(train) == sum(f.split == "train" for f in facts)
    assert all(row["positive_passages"][0]["docid"] not in {n["docid"] for n in row["negative_passages"]} for row in train)
    test = load_queries("mrtydi", "synthetic", "ko", "test")
    docids = set(load_collection("mrtydi", "synthetic", "ko").dataset["docid"])
    assert all(set(r) <= docids for r in test.qrels.values())
    assert not set(test.queries) & {f"q-{f.fact_id}" for f in facts if f.split != "test"}
    assert "수도" in load_collection("mrtydi", "synthetic", "ko").texts(0, 1)[0]  # translated through the glossary
    # The tiny tokenizer's corpus file is up to date with the data (python -m codeswitch.contrastivemix.data).
    assert CORPUS_FILE.read_text(encoding="utf-8").splitlines() == corpus_lines()


def test_synthetic_passages_vary_so_bm25_scores_do_not_tie_in_blocks():
    """The other worlds' passages end with 0-3 extra sentences (data.EXTRA_SENTENCES), as real passages vary in
    length and wording: BM25 retrieves a long list for every Korean test question, with many distinct scores (the
    templated passages alone gave 66 of 138 questions under 10 hits and ~4 distinct scores per question, so the hybrid
    at w = 0 fell below BM25 and every tuning picked the smallest positive weight).  The answering sentence stays first,
    and a fact's passage is the same text in the collection and in its query set's positives."""
    from codeswitch.contrastivemix.data import load_collection, load_queries
    from codeswitch.contrastivemix.synthetic import EXTRA_SENTENCES, synthetic_facts
    from codeswitch.contrastivemix.evaluate import bm25_rank

    collection = load_collection("mrtydi", "synthetic", "ko")
    texts = collection.texts(0, len(collection))
    test = load_queries("mrtydi", "synthetic", "ko", "test")
    ranking = bm25_rank(texts, {"test": test.queries}, "ko", depth=1000, k1=0.9, b=0.4)["test"]
    hits = (ranking.indices >= 0).sum(1)
    distinct = [len(np.unique(ranking.scores[i][ranking.indices[i] >= 0])) for i in range(len(hits))]
    assert hits.min() >= 10 and np.median(hits) >= 100, (hits.min(), np.median(hits))
    assert np.median(distinct) >= 30, np.median(distinct)
    english = load_collection("mrtydi", "synthetic", "en")
    en_texts, row_of = english.texts(0, len(english)), {d: i for i, d in enumerate(english.dataset["docid"])}
    for world, grows in ((0, False), (1, True)):
        facts = [f for f in synthetic_facts() if f.world == world]
        assert all(f.text in en_texts[row_of[f"doc-{f.fact_id}"]] for f in facts)  # the fact is stated, first
        longer = sum(not en_texts[row_of[f"doc-{f.fact_id}"]].endswith(f.text) for f in facts) / len(facts)
        assert (longer > 0.5) if grows else longer == 0, (world, longer)  # the base world stays as templated
    assert len(EXTRA_SENTENCES) >= 20
    row_of = {d: i for i, d in enumerate(collection.dataset["docid"])}
    for qid, positives in list(test.positives.items())[:20]:
        docid = next(iter(test.qrels[qid]))
        assert positives[0] == texts[row_of[docid]]


def test_smoke_backbone_vocabulary_covers_every_smoke_text(tmp_path, monkeypatch):
    """minilm-l1l6 keeps only the word pieces of the synthetic set's words (issue 23: the other 29,900 embedding rows
    were three quarters of every training step): the word list is up to date, and every smoke text, code-mixed or
    not, tokenizes into the same pieces as with the full vocabulary, and gets the same vector."""
    from transformers import AutoModel, AutoTokenizer

    from codeswitch.contrastivemix.data import load_collection
    from codeswitch.contrastivemix.synthetic import GLOSSARY_DIR, WORDS_FILE, _glossary, _in_language, synthetic_facts, vocabulary_words
    from codeswitch.core import models as M

    assert WORDS_FILE.read_text(encoding="utf-8").splitlines() == vocabulary_words()
    source = M.bundled_model_path(M.PRETRAINED_SLICES["minilm-l1l6"]["source"])
    if source is None:
        pytest.skip("the bundled all-MiniLM-L6-v2 package is not installed")
    monkeypatch.setenv("CODESWITCH_BACKBONES", str(tmp_path))
    cut = M.resolve_model("minilm-l1l6")
    full_tok, cut_tok = AutoTokenizer.from_pretrained(source), AutoTokenizer.from_pretrained(cut)
    assert len(cut_tok) < 1000 < 30000 < len(full_tok)
    languages = sorted(p.stem.split("-")[1] for p in GLOSSARY_DIR.glob("en-*.txt"))
    texts = [t for f in synthetic_facts()[::7] for t in (f.query, f.text)]
    rng = random.Random(0)
    texts += [code_mix(t, _glossary(lang), 0.5, rng) for lang in languages for t in texts[:200]]
    texts += [_in_language(t, lang) for lang in languages for t in texts[:100]]
    collection = load_collection("mrtydi", "synthetic", "ko")
    texts += collection.texts(0, 50) + collection.texts(len(collection) - 50, len(collection))  # base and other worlds
    assert [full_tok.tokenize(t) for t in texts] == [cut_tok.tokenize(t) for t in texts]
    # the same vectors: the full-vocabulary model cut to the same layers, on a padded batch
    full = AutoModel.from_pretrained(source, add_pooling_layer=False).eval()
    full.encoder.layer = torch.nn.ModuleList([full.encoder.layer[i] for i in M.PRETRAINED_SLICES["minilm-l1l6"]["layers"]])
    small = AutoModel.from_pretrained(cut, add_pooling_layer=False).eval()
    batch = texts[-40:]
    with torch.no_grad():
        a = full(**full_tok(batch, padding=True, return_tensors="pt")).last_hidden_state
        b = small(**cut_tok(batch, padding=True, return_tensors="pt")).last_hidden_state
    assert torch.equal(a, b)


def _gz_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def test_mrtydi_and_miracl_readers_on_local_copies(tmp_path):
    from codeswitch.contrastivemix.data import TrainDataError, load_collection, load_queries

    mrtydi = tmp_path / "mr-tydi"
    _gz_jsonl(mrtydi / "mrtydi-v1.1-korean" / "test.jsonl.gz", [
        {"query_id": "1", "query": "서울은?", "positive_passages": [{"docid": "7#0", "title": "서울", "text": "서울은 수도"}], "negative_passages": []},
        {"query_id": "2", "query": "부산은?", "positive_passages": [{"docid": "8#1", "title": "부산", "text": "부산은 항구"}], "negative_passages": []},
    ])
    corpus = tmp_path / "mr-tydi-corpus"
    _gz_jsonl(corpus / "mrtydi-v1.1-korean" / "corpus.jsonl.gz", [
        {"docid": "7#0", "title": "서울", "text": "서울은 수도"}, {"docid": "8#1", "title": "부산", "text": "부산은 항구"},
    ])
    qs = load_queries("mrtydi", str(mrtydi), "ko", "test")
    assert list(qs.queries) == ["1", "2"] and qs.qrels["2"] == {"8#1": 1}
    assert qs.positives["1"] == ["서울 서울은 수도"]  # title + " " + text
    coll = load_collection("mrtydi", str(corpus), "ko")
    assert len(coll) == 2 and coll.texts(1, 2) == ["부산 부산은 항구"] and coll.docids([1]) == {1: "8#1"}

    miracl = tmp_path / "miracl" / "miracl-v1.0-zh"
    (miracl / "topics").mkdir(parents=True)
    (miracl / "qrels").mkdir()
    (miracl / "topics" / "topics.miracl-v1.0-zh-dev.tsv").write_text("10\t北京在哪里\n11\t上海\n", encoding="utf-8")
    (miracl / "qrels" / "qrels.miracl-v1.0-zh-dev.tsv").write_text("10\tQ0\t5#0\t1\n10\tQ0\t6#0\t0\n11\tQ0\t6#0\t0\n", encoding="utf-8")
    qs = load_queries("miracl", str(tmp_path / "miracl"), "zh", "dev")
    assert list(qs.queries) == ["10"]  # query 11 has no relevant passage: it cannot be scored
    assert qs.qrels["10"] == {"5#0": 1, "6#0": 0}
    (miracl / "qrels" / "qrels.miracl-v1.0-zh-dev.tsv").write_text("10\tQ0\t5#0\tyes\n", encoding="utf-8")
    with pytest.raises(TrainDataError, match=r"line 1: field 'relevance'"):
        load_queries("miracl", str(tmp_path / "miracl"), "zh", "dev")


def test_passage_text_rejects_a_missing_text():
    from codeswitch.contrastivemix.data import passage_text

    assert passage_text("t", "x") == "t x" and passage_text(None, "x") == "x" and passage_text("", "x") == "x"
    for bad in (None, 3, ["x"]):
        with pytest.raises(TypeError, match="passage text"):
            passage_text("title", bad)  # never the passage "title None"


def test_corpus_row_without_text_names_file_row_and_field(tmp_path):
    from codeswitch.contrastivemix.data import TrainDataError, load_collection

    corpus = tmp_path / "mr-tydi-corpus" / "mrtydi-v1.1-korean" / "corpus.jsonl.gz"
    corpus.parent.mkdir(parents=True)
    with gzip.open(corpus, "wt", encoding="utf-8") as fh:  # a blank line: not a row, but a line
        fh.write('{"docid": "1#0", "title": "a", "text": "x"}\n\n{"docid": "2#0", "title": "b", "text": null}\n')
    coll = load_collection("mrtydi", str(tmp_path / "mr-tydi-corpus"), "ko")
    assert coll.texts(0, 1) == ["a x"]
    with pytest.raises(TrainDataError, match=rf"{re.escape(str(corpus))}, line 3, row 1 \(docid '2#0'\): field 'text' is missing"):
        list(coll.iter_texts())
    # MIRACL: several files, one dataset; the bad row is found in its own file
    folder = tmp_path / "miracl-corpus" / "miracl-corpus-v1.0-zh"
    _gz_jsonl(folder / "docs-0.jsonl.gz", [{"docid": "1#0", "title": "a", "text": "x"}, {"docid": "1#1", "title": "a", "text": "y"}])
    _gz_jsonl(folder / "docs-1.jsonl.gz", [{"docid": "2#0", "title": "b", "text": "z"}, {"docid": "2#1", "title": "b"}])
    coll = load_collection("miracl", str(tmp_path / "miracl-corpus"), "zh")
    with pytest.raises(TrainDataError, match=r"docs-1\.jsonl\.gz, line 2, row 3 \(docid '2#1'\): field 'text' is missing"):
        coll.texts(0, 4)


def test_query_and_training_rows_without_text_name_file_row_and_field(tmp_path):
    from codeswitch.contrastivemix.data import TrainDataError, load_queries, load_train_set

    queries = tmp_path / "mr-tydi" / "mrtydi-v1.1-korean" / "test.jsonl.gz"
    _gz_jsonl(queries, [
        {"query_id": "1", "query": "a?", "positive_passages": [{"docid": "7#0", "title": "t", "text": "x"}], "negative_passages": []},
        {"query_id": "2", "query": "b?", "positive_passages": [{"docid": "8#0", "title": "t", "text": "x"}, {"docid": "8#1", "title": "t", "text": None}], "negative_passages": []},
    ])
    with pytest.raises(TrainDataError, match=rf"{re.escape(str(queries))}, line 2 \(query_id '2'\): field 'positive_passages\[1\]\.text' is missing"):
        load_queries("mrtydi", str(tmp_path / "mr-tydi"), "ko", "test")
    train = tmp_path / "nq-train.jsonl"
    train.write_text(json.dumps({"query_id": "q1", "query": "who?", "positive_passages": [{"docid": "1", "title": "t", "text": "x"}],
                                 "negative_passages": [{"docid": "2", "title": "n", "text": 5}]}) + "\n", encoding="utf-8")
    with pytest.raises(TrainDataError, match=rf"{re.escape(str(train))}: row 0 \(query_id 'q1'\): field 'negative_passages\[0\]\.text' is not a string"):
        load_train_set(str(train))


def test_missing_hub_data_fails_fast_and_clearly(monkeypatch):
    from codeswitch.contrastivemix.data import load_queries
    from codeswitch.core.hub import MissingResourceError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MissingResourceError, match="contrastivemix.mrtydi"):
        load_queries("mrtydi", "castorini/mr-tydi-not-cached", "ko", "test", what="contrastivemix.mrtydi")


# --------------------------------------------------------------------------- training data flow
def test_batcher_mixing_by_method():
    from codeswitch.contrastivemix.data import load_train_set
    from codeswitch.contrastivemix.train import _Batcher

    rows = load_train_set("synthetic")[0:4]
    glossary = {"what": ["WHAT"], "who": ["WHO"], "which": ["WHICH"], "is": ["IS"], "the": ["THE"], "city": ["CITY"], "country": ["COUNTRY"]}
    mdpr = _Batcher(train_spec(method="mdpr"), None).texts(rows, epoch=0)
    assert set(mdpr) == {"query", "pos", "neg"} and mdpr["query"][0] == rows["query"]
    naive = _Batcher(train_spec(method="naivemix", mix_query=True, mix_passage=True, sentence_rate=1.0, word_rate=1.0), glossary).texts(rows, 0)
    assert all(q != o for q, o in zip(naive["query"][0], rows["query"]))  # every query mixed
    assert any("COUNTRY" in p or "CITY" in p for p in naive["pos"][0])
    cmix = _Batcher(train_spec(method="contrastivemix", mix_query=True, word_rate=1.0, mixed_special_tokens=False), glossary).texts(rows, 0)
    assert cmix["query"][0] == rows["query"]  # IR on English ...
    assert all(m != q for m, q in zip(cmix["query_mixed"][0], rows["query"]))  # ... plus a mixed copy
    assert cmix["query"][1] == [True] * 4 and cmix["query_mixed"][1] == [False] * 4  # released-code option: no [CLS]/[SEP]
    # Passage side: every passage gets a code-mixed copy (released code), or the positives only.
    both = _Batcher(train_spec(method="contrastivemix", mix_passage=True, word_rate=1.0), glossary).texts(rows, 0)
    assert set(both) == {"query", "pos", "neg", "pos_mixed", "neg_mixed"}
    assert all(m != n for m, n in zip(both["neg_mixed"][0], both["neg"][0]))
    positives = _Batcher(train_spec(method="contrastivemix", mix_passage=True, passage_align="positives"), glossary).texts(rows, 0)
    assert set(positives) == {"query", "pos", "neg", "pos_mixed"}
    from codeswitch.contrastivemix.config import Config

    with pytest.raises(ValueError, match="passage_align"):  # checked once, in the section's Config
        Config(passage_align="negatives")
    # A new hard negative each epoch, the same one for the same epoch.
    b = _Batcher(train_spec(method="mdpr"), None)
    assert b.texts(rows, 0)["neg"][0] == b.texts(rows, 0)["neg"][0] != b.texts(rows, 1)["neg"][0]


def test_gather_with_grad_is_identity_on_one_process():
    from codeswitch.contrastivemix.train import gather_with_grad

    x = torch.randn(3, 4, requires_grad=True)
    assert gather_with_grad(x) is x


# --------------------------------------------------------------------------- config and reported numbers
def test_profiles_build_and_plan():
    from codeswitch.contrastivemix import load, plan
    from codeswitch.contrastivemix.plan import ABLATION_VARIANTS
    from codeswitch.contrastivemix.config import Bm25Run, EmbedRun, EvalRun, TrainRun, UmapRun
    from codeswitch.core.profiles import load_profile

    paper = load_profile("paper")
    c = load(paper)
    assert (c.learning_rate, c.batch_size, c.num_train_epochs, c.sentence_rate, c.word_rate, c.align_weight) == (1e-5, 128, 40, 0.2, 0.5, 0.1)
    assert c.backbone.model == "bert-base-multilingual-cased"
    assert c.encode_sort_window == 32  # corpus encoding sorts by length within 32 batches
    specs = plan(paper)
    models = [s for s in specs if isinstance(s, TrainRun)]
    assert len(models) == 5 * (1 + 2 * 13 + 4 * 6)
    assert sum(isinstance(s, Bm25Run) for s in specs) == 13
    assert sum(isinstance(s, EvalRun) for s in specs) == 5 * (13 + 2 * 13 + 4 * 6)  # mDPR on every language, the rest on one
    assert sum(isinstance(s, EmbedRun) for s in specs) == 3 and sum(isinstance(s, UmapRun) for s in specs) == 5
    smoke = load_profile("smoke")
    assert load(smoke).encode_sort_window == 32
    # fixed-width encoding buckets (issue 40): off unless set, and speed only (out of the evaluations' keys)
    assert c.encode_bucket_step == 0 and load(smoke).encode_bucket_step == 0
    from dataclasses import replace

    ev = next(s for s in specs if isinstance(s, EvalRun))
    assert ev.encode_bucket_step == 0 and replace(ev, encode_bucket_step=32).key_hash() == ev.key_hash()
    specs = plan(smoke)
    # smoke: mDPR on Mr.TyDi and MIRACL, Korean and Arabic on each
    assert specs[0].variant == "mdpr" and sum(isinstance(s, EvalRun) and s.model == specs[0] for s in specs) == 4
    # a language of both benchmarks has one model per method, evaluated on each (no model trained twice); Table 3's
    # four variants on the ablation language alone (ablation_languages: [ko])
    trained = [s for s in specs if isinstance(s, TrainRun)]
    assert len({s.key_hash() for s in trained}) == len(trained) == 1 + 2 * 2 + 4
    assert {s.language for s in trained if s.variant in ABLATION_VARIANTS} == {"ko"}
    for language in ("ko", "ar"):
        model = next(s for s in trained if s.variant == "contrastivemix" and s.language == language)
        assert sorted(e.bm25.benchmark for e in specs if isinstance(e, EvalRun) and e.model == model) == ["miracl", "mrtydi"]
    # dependency order: every run comes after the runs it holds
    kinds = [type(s).__name__ for s in specs]
    assert kinds == sorted(kinds, key=["TrainRun", "Bm25Run", "EvalRun", "EmbedRun", "UmapRun"].index)


def test_train_run_keys_only_what_the_method_reads(tmp_path):
    from codeswitch.contrastivemix import plan
    from codeswitch.contrastivemix.config import EvalRun, TrainRun
    from codeswitch.core.profiles import load_profile

    smoke = load_profile("smoke", output_root=tmp_path)
    specs = plan(smoke)
    by_variant = {s.variant: s for s in specs if isinstance(s, TrainRun)}
    mdpr, naive, cm, cm_passage = (by_variant[k] for k in ("mdpr", "naivemix", "contrastivemix", "contrastivemix-passage"))
    assert not {"sentence_rate", "word_rate", "align_weight", "muse", "passage_align"} & set(mdpr.key())
    assert "align_weight" not in naive.key() and naive.key()["sentence_rate"] == 0.2
    assert "sentence_rate" not in cm.key() and cm.key()["align_weight"] == 0.1 and "passage_align" not in cm.key()
    assert cm_passage.key()["passage_align"] == "all"
    assert mdpr.key()["precision"] == "fp32" and mdpr.inputs() == {"train_data": "synthetic", "model": "minilm-l1l6"}
    ev = next(s for s in specs if isinstance(s, EvalRun))
    assert ev.key()["model"] == ev.model.key() and "per_device_eval_batch_size" not in ev.key()
    assert len({s.key_hash() for s in specs}) == len(specs)
    assert [s.key_hash() for s in plan(smoke)] == [s.key_hash() for s in specs]
    # a setting that only another method reads leaves mDPR's key alone
    other = plan(load_profile("smoke", {"contrastivemix.align_weight": 0.3}, output_root=tmp_path))
    assert other[0].key_hash() == specs[0].key_hash()


def test_config_renamed_and_older_keys():
    from codeswitch.contrastivemix import load
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match="'epochs' is now 'num_train_epochs'"):
        load(load_profile("smoke", {"contrastivemix.epochs": 3}))
    with pytest.raises(ConfigError, match="'encode_batch_size' is now 'per_device_eval_batch_size'"):
        load(load_profile("smoke", {"contrastivemix.encode_batch_size": 3}))
    with pytest.raises(ConfigError, match="save_checkpoints' was removed"):
        load(load_profile("smoke", {"contrastivemix.save_checkpoints": True}))
    c = load(load_profile("smoke", {"contrastivemix.backbone": "tiny-xlmr", "contrastivemix.backbones": None}))
    assert [(b.name, b.model) for b in c.backbones] == [("tiny-xlmr", "tiny-xlmr")]
    with pytest.raises(ConfigError, match="exactly one"):
        load(load_profile("smoke", {"contrastivemix.backbones": [{"name": "a", "model": "tiny-bert"}, {"name": "b", "model": "tiny-bert"}]}))


def test_ablation_languages_subset_the_low_similarity_group():
    """Table 3's languages: the whole low-similarity group by default (the paper); a named subset trains the four
    ablation variants on it alone; a language outside the group, or none, is refused, naming the group."""
    from codeswitch.contrastivemix import load, plan
    from codeswitch.contrastivemix.config import TrainRun
    from codeswitch.contrastivemix.plan import ABLATION_VARIANTS
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    assert load(load_profile("paper")).table3_languages == ("ar", "th", "ja", "ko", "id", "fi")
    both = load_profile("smoke", {"contrastivemix.ablation_languages": None})
    assert load(both).table3_languages == ("ko", "ar")
    assert {s.language for s in plan(both) if isinstance(s, TrainRun) and s.variant in ABLATION_VARIANTS} == {"ko", "ar"}
    for bad in (["zh"], []):
        with pytest.raises((ConfigError, ValueError), match=r"ablation_languages must be a non-empty subset of low_similarity \['ko', 'ar'\]"):
            load(load_profile("smoke", {"contrastivemix.ablation_languages": bad}))


def test_reported_averages_match_their_cells():
    from codeswitch.core import reported

    def val(table, row, col):
        return reported.lookup("contrastivemix", table, row, col).value

    for table in ("table1", "table4"):
        for row in ("mDPR", "NaiveMix", "ContrastiveMix (ours)"):
            low = np.mean([val(table, row, c) for c in ("Ar", "Th", "Ja", "Ko", "Id", "Fi")])
            high = np.mean([val(table, row, c) for c in ("Ru", "Bn")])
            assert low == pytest.approx(val(table, row, "Avg (low)"), abs=0.011)
            assert high == pytest.approx(val(table, row, "Avg (high)"), abs=0.011)
            assert val("table3", {"NaiveMix": "NaiveMix (query+passage)", "ContrastiveMix (ours)": "ContrastiveMix (query)"}.get(row, row),
                       "MRR@100" if table == "table1" else "Recall@100") == val(table, row, "Avg (low)")
    for row in ("mDPR", "NaiveMix", "ContrastiveMix (ours)"):
        avg = np.mean([val("table2", row, c) for c in ("fa", "es", "fr", "hi")])
        assert avg == pytest.approx(val("table2", row, "Avg (high)"), abs=0.011)


def _gather_worker(rank: int, world: int, port: int, q_all, p_all, weight, out_file: str) -> None:
    """One 'device' of a 2-process CPU (gloo) group: the DDP recipe of train_dual_encoder, on a linear encoder."""
    import torch.distributed as dist

    from codeswitch.contrastivemix.train import gather_with_grad

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        enc = torch.nn.Linear(weight.shape[1], weight.shape[0], bias=False)
        enc.weight.data.copy_(weight)
        b = q_all.shape[0] // world
        q = gather_with_grad(enc(q_all[rank * b : (rank + 1) * b]))  # (B, H): the global batch
        p = gather_with_grad(enc(p_all[rank * b : (rank + 1) * b]))
        (ir_loss(q, p) * world).backward()  # × world: DDP averages the devices' gradients
        grad = enc.weight.grad.clone()
        dist.all_reduce(grad)
        grad /= world
        if rank == 0:
            torch.save(grad, out_file)
    finally:
        dist.destroy_process_group()


def test_gather_with_grad_two_processes_match_one_big_batch(tmp_path):
    """Slices gathered across devices, local slice with its graph: the same gradient as the whole batch on one device."""
    import socket

    import torch.multiprocessing as mp

    g = torch.Generator().manual_seed(0)
    q_all, p_all, weight = torch.randn(6, 5, generator=g), torch.randn(6, 5, generator=g), torch.randn(3, 5, generator=g)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "grad.pt"
    mp.spawn(_gather_worker, args=(2, port, q_all, p_all, weight, str(out)), nprocs=2, join=True)
    enc = torch.nn.Linear(5, 3, bias=False)
    enc.weight.data.copy_(weight)
    ir_loss(enc(q_all), enc(p_all)).backward()
    assert torch.allclose(torch.load(out, weights_only=True), enc.weight.grad, atol=1e-6)


def test_config_refuses_tuning_on_the_reported_split():
    from codeswitch.contrastivemix import load
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match="mrtydi_tune_split must differ"):
        load(load_profile("smoke", {"contrastivemix.mrtydi_tune_split": "test"}))


def test_batcher_names_the_bad_training_row():
    from codeswitch.contrastivemix.data import TrainDataError
    from codeswitch.contrastivemix.train import _Batcher

    rows = {"query_id": ["q7"], "query": ["who?"], "positive_passages": [[{"title": "t", "text": None}]], "negative_passages": [[{"title": "n", "text": "x"}]]}
    with pytest.raises(TrainDataError, match=r"q7.*positive_passages\[0\]\.text"):
        _Batcher(train_spec(method="mdpr"), None).texts(rows, 0)


def test_section3_3_mixed_cosines_and_reported():
    from codeswitch.contrastivemix.section3_3 import mixed_cosines
    from codeswitch.core.reported import lookup

    vecs = {"a": [1.0, 0.0], "b": [0.0, 2.0], "c": [1.0, 1.0]}
    encode = lambda texts: np.array([vecs[t] for t in texts])  # noqa: E731
    cos = mixed_cosines(encode, ["a", "a", "b"], ["a", "c", "a"])
    assert cos == pytest.approx([1.0, 1 / math.sqrt(2), 0.0])
    assert lookup("contrastivemix", "section3_3", "queries", "all").value == 0.944
    assert lookup("contrastivemix", "section3_3", "passages", "all").std == 0.257


def test_a_corpus_two_benchmarks_share_is_encoded_once_per_model(tmp_path, backbones_dir, monkeypatch):
    """The synthetic Mr.TyDi and MIRACL of a language share their passages: one model's two evaluations encode the
    corpus once (its untrained baseline too), give the scores a fresh encoding gives, and the last one deletes it."""
    from codeswitch.common import fastpath
    from codeswitch.contrastivemix.config import EvalRun, TrainRun
    from codeswitch.contrastivemix.experiment import run_one
    from codeswitch.contrastivemix.plan import KINDS, root
    from codeswitch.core.runs import RunCache

    from .helpers import contrastivemix_tiny_run

    profile, specs = contrastivemix_tiny_run(tmp_path, {
        "contrastivemix.low_similarity": ["ko"], "contrastivemix.miracl_target": ["ko"],
        "contrastivemix.train_max_queries": 16, "contrastivemix.num_train_epochs": 1,
    })
    mdpr = next(s for s in specs if isinstance(s, TrainRun) and s.variant == "mdpr")
    run_one(mdpr, profile)
    mrtydi, miracl = (next(s for s in specs if isinstance(s, EvalRun) and s.model == mdpr and s.bm25.benchmark == b)
                      for b in ("mrtydi", "miracl"))
    encodings = []
    original = fastpath.encode._RowFile.open  # called when a corpus file is (re)encoded, not when a finished one is read
    monkeypatch.setattr(fastpath.encode._RowFile, "open", lambda self: (encodings.append(self.path.name), original(self))[1])
    evals = RunCache(root(profile) / KINDS[EvalRun])
    embeddings = root(profile) / "embeddings"

    first = run_one(mrtydi, profile)
    assert len(encodings) == 2  # the trained encoder and the untrained baseline, each over the 1,104 passages
    assert len(list(embeddings.glob("corpus-*.npy"))) == 2  # kept: the MIRACL evaluation still needs both
    evals.put(mrtydi.key(), first)
    shared = run_one(miracl, profile)
    assert len(encodings) == 2  # read, not encoded again
    assert not list(embeddings.glob("corpus-*"))  # the last evaluation that needed them deleted them

    fresh = run_one(miracl, profile)  # nothing to share: encoded again (the untrained scores are cached), same scores
    assert len(encodings) == 3 and encodings[2] == encodings[0]
    assert shared["dense"]["mean"] == fresh["dense"]["mean"] and shared["hybrid"]["mean"] == fresh["hybrid"]["mean"]
    assert shared["learning"] == fresh["learning"] and shared["dense"]["mean"] != first["dense"]["mean"]


@pytest.mark.parametrize("ablation_languages", [["ko"], None])
def test_table3_averages_over_its_languages_and_says_which(tmp_path, ablation_languages):
    """Table 3 averages every row over ``table3_languages``: Korean alone with ablation_languages [ko] (its note says
    so, naming the configured group), the whole low-similarity group without it."""
    import pandas as pd

    from codeswitch.contrastivemix.plan import VARIANTS
    from codeswitch.contrastivemix import load
    from codeswitch.contrastivemix.tables import Scores, table3
    from codeswitch.core.profiles import load_profile

    profile = load_profile("smoke", {"contrastivemix.ablation_languages": ablation_languages}, output_root=tmp_path)
    value = {"ko": 0.4, "ar": 0.2}
    rows = [dict(variant=v.key, row=v.label or v.ablation_label, benchmark="mrtydi", language=lang, seed=1, setting="hybrid",
                 metric=metric, value=value[lang] + (0.1 if metric == "recall@100" else 0.0), weight=0.5, report_split="test")
            for v in VARIANTS.values() for lang in ("ko", "ar") for metric in ("mrr@100", "recall@100")]
    paths = table3(Scores(pd.DataFrame(rows), {}), profile, load(profile))
    csv = pd.read_csv(paths["csv"])
    mrr = csv[(csv["row"] == "mDPR") & (csv["column"] == "MRR@100")]["mean"].item()
    note = paths["md"].read_text(encoding="utf-8")
    from codeswitch.contrastivemix.synthetic import CONSTRUCTIONS  # the synthetic set decides this claim: built in

    assert f"built into the smoke data: {CONSTRUCTIONS['contrastivemix_table3']} (measured: " in note and "does not hold" not in note
    if ablation_languages:
        assert mrr == pytest.approx(0.4)
        assert "Averages over ['ko'] alone (ablation_languages; the paper averages over the whole low-similarity group, configured here as ['ko', 'ar'])" in note
    else:
        assert mrr == pytest.approx(0.3)
        assert "Averages over the low-similarity languages ['ko', 'ar']" in note


def test_umaps_compiled_functions_are_cached_on_disk():
    """Figures 1-3's UMAP fits compile umap-learn's numba functions in every new kernel (about 20 s, against 0.3 s for a
    fit): cache_umap_jit switches numba's on-disk cache on for every one of them, once per process, before the fit."""
    import importlib

    from numba.core.caching import FunctionCache
    from numba.core.registry import CPUDispatcher

    F = importlib.import_module("codeswitch.contrastivemix.figures")  # the package's name `figures` is the function
    F.cache_umap_jit()
    layouts = importlib.import_module("umap.layouts")
    assert isinstance(layouts._nb_optimize_layout_euclidean_single_epoch._cache, FunctionCache)  # every fit's optimiser
    dispatchers = [(m.__name__, a, fn) for m in F._umap_jit_modules() for a, fn in vars(m).items()
                   if isinstance(fn, CPUDispatcher) and fn.__module__ == m.__name__]
    assert len(dispatchers) > 50  # umap-learn 0.5.12 has 108 (a renamed module would leave few)
    assert [f"{m}.{a}" for m, a, fn in dispatchers if not isinstance(fn._cache, FunctionCache)] == []
    assert F.cache_umap_jit() == []  # switched on once: a second call finds nothing left
