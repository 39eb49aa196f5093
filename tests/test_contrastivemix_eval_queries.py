"""ContrastiveMix's sample of evaluation queries (``contrastivemix.eval_max_queries``, the quick profile's rule 2,
issue 38): per (benchmark, language, split) a seeded random sample of N queries (``core.sampling``'s one seed, file
order), read by BM25, the dense retriever, the hybrid's tuning and the reduced corpus alike, the same for every method
and seed; None (the default) changes no key, record or table.  Tested on the smoke data with bm25s and the smoke
backbone.
"""

from __future__ import annotations

import json
import numpy as np
import pandas as pd
import pytest

from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError

PLAIN = {"contrastivemix.bm25_implementation": "bm25s"}  # no Java needed; the sample does not depend on the ranker


def _plan(overrides=None, **kw):
    from codeswitch.contrastivemix import plan

    return plan(load_profile("smoke", {**PLAIN, **(overrides or {})}, **kw))


def _of(specs, cls):
    return [s for s in specs if isinstance(s, cls)]


def _bm25(overrides=None):
    """The smoke profile's Mr.TyDi Korean BM25 run."""
    from codeswitch.contrastivemix.config import Bm25Run

    return next(b for b in _of(_plan(overrides), Bm25Run) if (b.benchmark, b.language) == ("mrtydi", "ko"))


def test_null_changes_no_key_and_a_sample_enters_only_the_evaluations_keys():
    from codeswitch.contrastivemix.config import Bm25Run, EvalRun
    from codeswitch.contrastivemix.retrieval import untrained_config

    plain, null, sampled = _plan(), _plan({"contrastivemix.eval_max_queries": None}), _plan({"contrastivemix.eval_max_queries": 5})
    assert [s.key_hash() for s in plain] == [s.key_hash() for s in null]
    assert not any("eval_max_queries" in json.dumps(s.key(), default=str) for s in plain)
    assert not any("eval_max_queries" in untrained_config(e) for e in _of(plain, EvalRun))
    assert all(b.key()["eval_max_queries"] == 5 for b in _of(sampled, Bm25Run))
    assert all(untrained_config(e)["eval_max_queries"] == 5 for e in _of(sampled, EvalRun))
    # what reads the queries is keyed anew (BM25, evaluations); the trainings, embeddings and UMAP fits are not
    changed = {type(s).__name__ for s, t in zip(plain, sampled) if s.key_hash() != t.key_hash()}
    assert changed == {"Bm25Run", "EvalRun"} and len(plain) == len(sampled)


@pytest.mark.parametrize("value, says", [(0, "must be >= 1, got 0"), (-3, "must be >= 1"), (2.5, "2.5 fits none"),
                                         (True, "True fits none"), ("all", "'all' fits none")])
def test_a_bad_value_is_a_config_error_naming_the_file_and_the_key(tmp_path, value, says):
    profile = tmp_path / "bad.yaml"
    profile.write_text(f"extends: smoke\ncontrastivemix:\n  eval_max_queries: {json.dumps(value)}\n", encoding="utf-8")
    from codeswitch.contrastivemix import load

    with pytest.raises(ConfigError) as err:
        load(load_profile(str(profile)))
    assert str(profile) in str(err.value) and "'eval_max_queries'" in str(err.value) and says in str(err.value)


def test_the_sample_is_seeded_in_file_order_and_the_same_for_every_method_and_seed():
    from codeswitch.contrastivemix.config import Bm25Run, EvalRun
    from codeswitch.contrastivemix.inputs import queries_of, query_set
    from codeswitch.core.sampling import sample_indices

    n = 7
    specs = _plan({"contrastivemix.eval_max_queries": n})
    other_seeds = _plan({"contrastivemix.eval_max_queries": n, "contrastivemix.seeds": [5, 6], "contrastivemix.align_weight": 0.3})
    assert [b.key_hash() for b in _of(specs, Bm25Run)] == [b.key_hash() for b in _of(other_seeds, Bm25Run)]
    for b in _of(other_seeds, Bm25Run):
        evals = [e for e in _of(other_seeds, EvalRun) if e.bm25 == b]  # every method and seed reads this one BM25 run
        assert {(e.model.method, e.model.seed) for e in evals} == {(m, s) for m in ("mdpr", "naivemix", "contrastivemix") for s in (5, 6)}
        for split in (b.report_split, b.tune_split):
            whole = list(query_set(b.benchmark, b.queries, b.language, split).queries)
            got = queries_of(b, split)
            assert len(whole) in (138, 276) and list(got.queries) == [whole[i] for i in sample_indices(len(whole), n, "random")]
            assert list(got.queries) == sorted(got.queries, key=whole.index) and set(got.qrels) == set(got.queries)
            assert list(queries_of(b, split).queries) == list(got.queries)  # drawn again: the same
    ko = next(b for b in _of(specs, Bm25Run) if (b.benchmark, b.language) == ("mrtydi", "ko"))
    # the tuning split: the sample first, then tune_max_queries of it
    tune = queries_of(ko, "dev", sample=3)
    sampled = list(queries_of(ko, "dev").queries)
    assert len(tune) == 3 and list(tune.queries) == [sampled[i] for i in sample_indices(len(sampled), 3, "random")]  # one sampler
    # a cut tuning split says how it was drawn in the BM25 key (the draw changed on 2026-11-29); an uncut one's key is as before
    assert "tune_sample" not in ko.key()
    capped = next(b for b in _of(_plan({"contrastivemix.eval_max_queries": n, "contrastivemix.tune_max_queries": 3}), Bm25Run)
                  if (b.benchmark, b.language) == ("mrtydi", "ko"))
    assert capped.key()["tune_sample"] == "random" and capped.key()["tune_max_queries"] == 3


def test_bm25_with_null_or_a_sample_as_large_as_the_split_is_unchanged_and_a_sample_scores_its_queries_alone(tmp_path):
    from codeswitch.contrastivemix.experiment import run_one
    from codeswitch.contrastivemix.inputs import queries_of

    profile = load_profile("smoke", PLAIN, output_root=tmp_path)
    plain, whole, five = _bm25(), _bm25({"contrastivemix.eval_max_queries": 138}), _bm25({"contrastivemix.eval_max_queries": 5})
    r_plain, r_whole, r_five = (run_one(b, profile) for b in (plain, whole, five))
    assert "query_sample" not in r_plain and r_plain["n_queries"] == 138
    assert r_whole["query_sample"] == {"report": {"split": "test", "n": 138, "of": 138}, "tune": {"split": "dev", "n": 138, "of": 138}}
    assert r_whole["mean"] == r_plain["mean"] and r_whole["per_query"] == r_plain["per_query"]
    assert r_five["query_sample"] == {"report": {"split": "test", "n": 5, "of": 138}, "tune": {"split": "dev", "n": 5, "of": 138}}
    qids = list(queries_of(five, "test").queries)
    for metric, per_query in r_five["per_query"].items():
        assert list(per_query) == qids  # only the sampled queries, each scored as in the whole run
        assert per_query == {q: r_plain["per_query"][metric][q] for q in qids}
        assert r_five["mean"][metric] == pytest.approx(100 * np.mean(list(per_query.values())))  # mean_scores: x100


def test_the_reduced_corpus_of_a_sample_holds_only_the_sampled_queries_judged_passages_and_bm25_tops(tmp_path, monkeypatch):
    """The dense retriever's reduced corpus (corpus_sample 0: no random passages) under a sample of 3 queries: exactly the
    judged passages and BM25's top ``depth`` of those queries, read as :func:`~.retrieval.untrained_scores` reads them."""
    from codeswitch.contrastivemix import retrieval
    from codeswitch.contrastivemix.config import Bm25Run, EvalRun
    from codeswitch.contrastivemix.evaluate import Ranking
    from codeswitch.contrastivemix.experiment import run_one
    from codeswitch.contrastivemix.inputs import collection, queries_of, query_set
    from codeswitch.contrastivemix.plan import KINDS, root
    from codeswitch.core.runs import RunCache

    over = {"contrastivemix.eval_max_queries": 3, "contrastivemix.corpus_sample": 0}
    profile = load_profile("smoke", {**PLAIN, **over}, output_root=tmp_path)
    spec = next(e for e in _of(_plan(over, output_root=tmp_path), EvalRun) if (e.bm25.benchmark, e.bm25.language) == ("mrtydi", "ko"))
    b = spec.bm25
    record = run_one(b, profile)
    RunCache(root(profile) / KINDS[Bm25Run]).put(b.key(), record)
    seen = {}
    real = retrieval._dense_rankings

    def spy(model, tokenizer, m, e, coll, query_sets, profile, path, rows=None):
        if rows is not None:  # the outer call (it calls itself on the reduced collection)
            seen.update(rows=rows, queries={k: list(q.queries) for k, q in query_sets.items()})
        return real(model, tokenizer, m, e, coll, query_sets, profile, path, rows)

    monkeypatch.setattr(retrieval, "_dense_rankings", spy)
    scores = retrieval.untrained_scores(spec, profile)
    coll = collection(b.benchmark, b.corpus, b.language)
    row_of = {d: i for i, d in enumerate(coll.dataset["docid"])}
    sampled = {"report": queries_of(b, b.report_split), "tune": queries_of(b, b.tune_split)}
    judged = {row_of[str(d)] for qs in sampled.values() for rel in qs.qrels.values() for d in rel}
    folder = root(profile) / KINDS[Bm25Run]
    tops = set()
    for name, file in record["files"].items():
        ranking = Ranking.load(folder / file)
        assert ranking.qids == list(sampled[name].queries)  # BM25 ranked the sampled queries alone
        top = ranking.indices[:, : spec.depth]
        tops |= {int(i) for i in top[top >= 0].ravel()}
    assert seen["queries"] == {"report": list(sampled["report"].queries)}
    assert set(seen["rows"].tolist()) == judged | tops and len(judged) >= 3
    every = query_set(b.benchmark, b.queries, b.language, b.report_split)
    others = {row_of[str(d)] for q, rel in every.qrels.items() if q not in sampled["report"].queries for d in rel}
    assert others - tops and not (others - tops) & set(seen["rows"].tolist())  # an unsampled query's passage: left out
    assert set(scores["per_query"]["mrr@100"]) == set(sampled["report"].queries)


def _sampled_counts():
    return {("mrtydi", "ko"): {"report": {"split": "test", "n": 150, "of": 421}, "tune": {"split": "dev", "n": 150, "of": 303}},
            ("mrtydi", "ru"): {"report": {"split": "test", "n": 150, "of": 995}, "tune": {"split": "dev", "n": 150, "of": 1375}},
            ("miracl", "fa"): {"report": {"split": "dev", "n": 23, "of": 23}, "tune": {"split": "train", "n": 46, "of": 46}}}


def test_every_table_of_a_sample_says_n_of_m_queries_per_language(tmp_path):
    from codeswitch.contrastivemix import load
    from codeswitch.contrastivemix.config import Bm25Run
    from codeswitch.contrastivemix.tables import Scores, query_note, scores, table3

    sampled = load_profile("smoke", {"contrastivemix.eval_max_queries": 150, "contrastivemix.low_similarity": ["ko"],
                                     "contrastivemix.high_similarity": ["ru"]}, output_root=tmp_path)
    c = load(sampled)
    s = Scores(pd.DataFrame(), {}, query_sample=_sampled_counts())
    assert query_note(s, c, "mrtydi", ["ko", "ru"]) == [
        "Evaluation queries: at most 150 per language and split, N of M below (seeded sample, contrastivemix.eval_max_queries; one "
        "fixed seed: every method, seed and BM25 reads the same queries, and the reduced corpus and the tuning read only "
        "these) -- scored on test: Ko 150 of 421, Ru 150 of 995; hybrid weight tuned on dev: Ko 150 of 303, Ru 150 of "
        "1,375 queries."]
    assert query_note(s, c, "miracl", ["fa"])[0].endswith("scored on dev: fa all 23; hybrid weight tuned on train: fa all 46 queries.")
    plain = load_profile("smoke")
    assert query_note(s, load(plain), "mrtydi", ["ko"]) == []  # null: no note (smoke's tables unchanged)
    # the counts come from the BM25 records, one per target
    b = _bm25({"contrastivemix.eval_max_queries": 150})
    assert scores([(b, {"mean": {}, "query_sample": _sampled_counts()[("mrtydi", "ko")]})]).query_sample == {
        ("mrtydi", "ko"): _sampled_counts()[("mrtydi", "ko")]}
    rows = [dict(variant=v, row=label, benchmark="mrtydi", language="ko", seed=1, setting="hybrid", metric=m, value=0.5,
                 weight=0.5, report_split="test")
            for v, label in (("mdpr", "mDPR"), ("contrastivemix", "ContrastiveMix (query)")) for m in ("mrr@100", "recall@100")]
    md = table3(Scores(pd.DataFrame(rows), {}, query_sample=_sampled_counts()), sampled, c)["md"].read_text(encoding="utf-8")
    assert "scored on test: Ko 150 of 421;" in md and "contrastivemix.eval_max_queries" in md and "Ru 150 of 995" not in md
    assert isinstance(b, Bm25Run)
