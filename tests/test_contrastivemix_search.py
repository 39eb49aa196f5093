"""``contrastivemix.align_weight: search`` (issue 39 §2): the loss weight w chosen on the tuning split over a grid.

Each grid weight's models are their own runs (the 0.1 ones are the default's), one search record per ContrastiveMix
variant names the weight kept, and the tables read only that weight's models."""

from __future__ import annotations

import pytest

#: the made-up tuning-split MRR@100 of a model trained with each w (the search must keep 0.01)
TUNE = {0.001: 30.0, 0.01: 50.0, 0.1: 40.0, 1.0: 10.0}


def _search_plan(tmp_path, **more):
    from codeswitch.contrastivemix import plan
    from codeswitch.core.profiles import load_profile

    profile = load_profile("smoke", {"contrastivemix.align_weight": "search", **more}, output_root=tmp_path)
    return profile, plan(profile)


def _eval_record(score: float) -> dict:
    """An evaluation record as :func:`~codeswitch.contrastivemix.retrieval.evaluate_model` writes it, every score ``score``."""
    curve = {"weight": [0.0, 0.5], "mrr@100": [score - 1.0, score]}
    setting = {"mean": {"mrr@100": score, "recall@100": score}, "per_query": {"mrr@100": {"q1": score / 100}}, "weight": 0.5,
               "curve": curve}
    return {"dense": setting, "hybrid": setting, "hybrid_report_split": setting}


def test_search_trains_each_grid_weight_as_its_own_run_and_keeps_the_default_keys(tmp_path):
    from codeswitch.contrastivemix import plan
    from codeswitch.contrastivemix.config import AlignSearchRun, EvalRun, TrainRun
    from codeswitch.core.profiles import load_profile

    default = plan(load_profile("smoke", output_root=tmp_path))
    _, specs = _search_plan(tmp_path)
    trains = [s for s in specs if isinstance(s, TrainRun)]
    fixed = [s for s in default if isinstance(s, TrainRun)]
    cm = [s for s in fixed if s.method == "contrastivemix"]
    assert len(trains) == len(fixed) + 3 * len(cm)  # four weights where the default trains one
    for m in cm:
        weights = sorted(s.align_weight for s in trains if (s.variant, s.language, s.seed) == (m.variant, m.language, m.seed))
        assert weights == [0.001, 0.01, 0.1, 1.0]
    # the default's runs are runs of the search (its 0.1 models are the grid's 0.1 models): nothing is trained twice
    assert {s.key_hash() for s in default} <= {s.key_hash() for s in specs}
    searches = {s.variant: s for s in specs if isinstance(s, AlignSearchRun)}
    assert sorted(searches) == ["contrastivemix", "contrastivemix-both", "contrastivemix-passage"]
    evals = [s for s in specs if isinstance(s, EvalRun) and s.model.variant == "contrastivemix"]
    assert searches["contrastivemix"].candidates == tuple(e.key_hash() for e in evals)
    assert searches["contrastivemix"].grid == (0.001, 0.01, 0.1, 1.0)
    # the searches come after the evaluations they read, and their key changes with the grid
    assert specs.index(searches["contrastivemix"]) > max(specs.index(e) for e in evals)
    _, other = _search_plan(tmp_path, **{"contrastivemix.align_weight_grid": [0.01, 0.1]})
    assert next(s for s in other if isinstance(s, AlignSearchRun)).key_hash() != searches["contrastivemix"].key_hash()


@pytest.mark.parametrize("bad, match", [
    ({"contrastivemix.align_weight": "grid"}, "align_weight must be a number >= 0 or 'search'"),
    ({"contrastivemix.align_weight_grid": [0.0001, 0.1]}, r"in the paper's range \[0.001, 1.0\]"),
    ({"contrastivemix.align_weight_grid": [0.1, 0.01]}, "each weight once, in increasing order"),
    ({"contrastivemix.align_weight_grid": []}, "non-empty"),
])
def test_search_settings_are_checked_in_the_config(bad, match):
    from codeswitch.contrastivemix import load
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match=match):
        load(load_profile("smoke", bad))


def test_the_search_records_each_weights_score_and_keeps_the_best_and_the_tables_read_only_it(tmp_path):
    from codeswitch.contrastivemix import search
    from codeswitch.contrastivemix.config import AlignSearchRun, Bm25Run, EvalRun
    from codeswitch.contrastivemix.experiment import run_one
    from codeswitch.contrastivemix.plan import KINDS, root
    from codeswitch.contrastivemix.tables import scores
    from codeswitch.core.experiment import Results
    from codeswitch.core.runs import RunCache

    profile, specs = _search_plan(tmp_path)
    cache = RunCache(root(profile) / KINDS[EvalRun])
    evals = [s for s in specs if isinstance(s, EvalRun)]
    for e in evals:
        cache.put(e.key(), _eval_record(TUNE.get(e.model.align_weight, 20.0)))
    searches = [s for s in specs if isinstance(s, AlignSearchRun)]
    with pytest.raises(RuntimeError, match="not in the run cache"):  # an evaluation missing: no selection
        search.select(searches[0], RunCache(tmp_path / "empty"))
    records = {s.key_hash(): run_one(s, profile) for s in searches}
    rec = records[searches[0].key_hash()]
    assert rec["selected"] == 0.01 and rec["score"] == [30.0, 50.0, 40.0, 10.0] and rec["grid"] == [0.001, 0.01, 0.1, 1.0]
    assert rec["n"] == [sum(e.model.variant == searches[0].variant for e in evals) // 4] * 4

    bm25 = {"mean": {"mrr@100": 5.0, "recall@100": 5.0}}
    results = Results(tuple(specs), tuple(cache.get(s.key()) if isinstance(s, EvalRun) else records.get(s.key_hash())
                                          or (bm25 if isinstance(s, Bm25Run) else {}) for s in specs))
    s = scores(results)
    cm = s.frame[s.frame["variant"].str.startswith("contrastivemix")]
    assert set(cm["value"]) == {50.0}  # only the w = 0.01 models reach the tables
    n_main = sum(e.model.variant == "contrastivemix" and e.model.align_weight == 0.01 for e in evals)
    assert len(cm[(cm["variant"] == "contrastivemix") & (cm["setting"] == "hybrid")]) == 2 * n_main  # two metrics
    assert set(s.frame.loc[s.frame["variant"] == "naivemix", "value"]) == {20.0}  # other methods untouched
    (note,) = search.note(s.align_search)
    assert "contrastivemix: w = 0.01 (0.001 → 30.00, 0.01 → 50.00, 0.1 → 40.00, 1 → 10.00)" in note


def test_ties_keep_the_smaller_weight(tmp_path):
    from codeswitch.contrastivemix import search
    from codeswitch.contrastivemix.config import AlignSearchRun, EvalRun
    from codeswitch.core.runs import RunCache

    _, specs = _search_plan(tmp_path)
    cache = RunCache(tmp_path / "evals")
    for e in (s for s in specs if isinstance(s, EvalRun)):
        cache.put(e.key(), _eval_record(40.0 if e.model.align_weight in (0.1, 1.0) else 30.0))
    spec = next(s for s in specs if isinstance(s, AlignSearchRun))
    assert search.select(spec, cache)["selected"] == 0.1


def test_without_a_search_every_model_reaches_the_tables():
    from codeswitch.contrastivemix import search

    assert search.selection(()) == {} and search.note({}) == []
