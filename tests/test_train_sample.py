"""The top-level ``train_sample`` (head | random): how each package's row cap on a training set cuts it.

``head`` (the default) keeps every smoke and paper run key as it was: the rule enters a key only when it is
``random`` (an optional spec field left ``None`` otherwise).  ``random`` draws a different sample than ``head``, the
same one every time (:mod:`codeswitch.core.sampling`: one fixed seed, never a run's seed).
"""

from __future__ import annotations

import pytest

from codeswitch.core.profiles import load_profile, profile_hash
from codeswitch.core.sections import ConfigError

RANDOM = {"train_sample": "random"}


# --------------------------------------------------------------------------- the profile key
def test_train_sample_defaults_to_head_and_refuses_other_rules():
    assert load_profile("smoke").train_sample == "head" and load_profile("paper").train_sample == "head"
    assert load_profile("smoke", RANDOM).train_sample == "random"
    with pytest.raises(ConfigError, match=r"train_sample.*'first' is not one of head, random"):
        load_profile("smoke", {"train_sample": "first"})


def test_train_sample_enters_the_profile_hash_only_when_random():
    smoke = load_profile("smoke")
    head = load_profile("smoke", {"train_sample": "head"})
    assert profile_hash(head) == profile_hash(smoke)  # the default: every recorded hash stays as it was
    assert profile_hash(load_profile("smoke", RANDOM)) != profile_hash(smoke)


def test_an_unknown_rule_in_a_file_names_the_file_and_the_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("extends: smoke\ntrain_sample: shuffled\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml.*train_sample.*'shuffled'"):
        load_profile(str(bad))


# --------------------------------------------------------------------------- glue: max_train_samples
def _glue(overrides):
    from codeswitch.glue import plan

    return plan(load_profile("smoke", {"glue.tasks": ["cola"], "glue.seeds": [1], **overrides}))


def test_glue_random_cap_draws_another_fixed_sample_and_names_it_in_the_key():
    from codeswitch.glue import data
    from codeswitch.koglish.data import resolve_source

    profile = load_profile("smoke")
    src = resolve_source(profile)
    kw = dict(max_train_samples=20, max_eval_samples=None, invalid_rows="error")
    full = data.load_data(src, ["cola"], max_train_samples=None, max_eval_samples=None, invalid_rows="error")["cola"]
    head = data.load_data(src, ["cola"], **kw)["cola"]
    rand = data.load_data(src, ["cola"], **kw, train_sample="random")["cola"]
    again = data.load_data(src, ["cola"], **kw, train_sample="random")["cola"]
    assert len(full["train"]) > 20 and len(head["train"]) == len(rand["train"]) == 20
    assert head["train"].equals(full["train"].head(20).reset_index(drop=True))
    assert not rand["train"].equals(head["train"]) and rand["train"].equals(again["train"])  # another sample, the same each time
    assert rand["valid"].equals(head["valid"]) and rand["test"].equals(head["test"])  # evaluation splits: as before
    assert data.fingerprint(rand) != data.fingerprint(head)

    capped = {"glue.max_train_samples": 20}
    heads, rands = _glue(capped), _glue({**capped, **RANDOM})
    assert all("train_sample" not in s.key() for s in heads)
    assert all(s.key()["train_sample"] == "random" for s in rands)
    assert {s.key_hash() for s in heads}.isdisjoint(s.key_hash() for s in rands)
    # no cap: nothing is sampled, so the rule stays out of the key (the run is the head run)
    assert [s.key_hash() for s in _glue(RANDOM)] == [s.key_hash() for s in _glue({})]


# --------------------------------------------------------------------------- calbert: pretrain.max_pairs
def test_calbert_random_cap_draws_another_fixed_sample_and_names_it_in_the_key():
    from codeswitch.calbert.data import Pair, split_heldout
    from codeswitch.calbert.plan import pretrain_spec, scratch_spec
    from codeswitch.calbert import load

    pairs = [Pair(f"en {i}", f"cm {i}") for i in range(200)]
    head, held = split_heldout(pairs, 10, max_train=30, seed=0)
    rand, held_r = split_heldout(pairs, 10, max_train=30, seed=0, train_sample="random")
    assert held_r == held and len(rand) == len(head) == 30  # the same held-out pairs; a cap of the same size
    assert rand != head and rand == split_heldout(pairs, 10, max_train=30, seed=0, train_sample="random")[0]
    full, _ = split_heldout(pairs, 10, seed=0)
    assert set(rand) <= set(full) and head == full[:30]
    # the 15% fraction is then taken of the capped pairs, as before
    assert len(split_heldout(pairs, 10, max_train=30, fraction=0.5, seed=0, train_sample="random")[0]) == 15

    def specs(overrides):
        profile = load_profile("smoke", {"calbert.pretrain.max_pairs": 20, **overrides})
        c = load(profile)
        return [pretrain_spec(profile, c, c.backbones[0], "cosine"), scratch_spec(profile, c, "BERT", "small")]

    heads, rands = specs({}), specs(RANDOM)
    assert all("train_sample" not in s.key() for s in heads) and all(s.key()["train_sample"] == "random" for s in rands)
    assert [s.key_hash() for s in heads] != [s.key_hash() for s in rands]
    # smoke reads every pair (max_pairs: null): no cap, no rule in the key
    uncapped = load_profile("smoke", RANDOM)
    c = load(uncapped)
    assert "train_sample" not in pretrain_spec(uncapped, c, c.backbones[0], "cosine").key()


# --------------------------------------------------------------------------- calbert: sail/iitp.max_train_samples
def test_calbert_task_cap_cuts_the_training_split_only_and_enters_the_key_when_set():
    from codeswitch.calbert import load
    from codeswitch.calbert.experiment import capped, task_splits
    from codeswitch.calbert.plan import finetune_spec

    def splits(overrides):
        profile = load_profile("smoke", overrides)
        return task_splits(profile, load(profile), "sail")

    whole = splits({})
    n = len(whole["train"]) // 2
    head, rand = splits({"calbert.sail.max_train_samples": n}), splits({"calbert.sail.max_train_samples": n, **RANDOM})
    assert len(head["train"]) == len(rand["train"]) == n and head["train"] == whole["train"][:n]
    assert rand["train"] != head["train"] and set(rand["train"]) <= set(whole["train"])
    assert rand == splits({"calbert.sail.max_train_samples": n, **RANDOM})  # the same sample every time
    assert {k: v for k, v in rand.items() if k != "train"} == {k: v for k, v in whole.items() if k != "train"}
    assert capped(whole, None, "random") == whole  # no cap: every row, whatever the rule

    def spec(overrides):
        profile = load_profile("smoke", overrides)
        c = load(profile)
        return finetune_spec(profile, c, "sail", c.backbones[0], "none", 1)

    plain = spec({})
    assert "max_train_samples" not in plain.key() and "train_sample" not in plain.key()
    assert plain.key_hash() == spec(RANDOM).key_hash()  # no cap: the rule changes nothing
    k = spec({"calbert.sail.max_train_samples": n, **RANDOM}).key()
    assert k["max_train_samples"] == n and k["train_sample"] == "random"
    assert "train_sample" not in spec({"calbert.sail.max_train_samples": n}).key()


# --------------------------------------------------------------------------- concse: max_train_rows
def test_concse_random_cap_draws_another_fixed_sample_and_names_it_in_the_key():
    from codeswitch import concse
    from codeswitch.concse.experiment import data_of

    def first(overrides):
        profile = load_profile("smoke", {"concse.max_train_rows": 20, **overrides})
        spec = concse.plan(profile)[0]
        return spec, data_of(spec, profile)

    (head_spec, (head, dev, tests)), (rand_spec, (rand, dev_r, tests_r)) = first({}), first(RANDOM)
    whole = data_of(*(lambda p: (concse.plan(p)[0], p))(load_profile("smoke")))[0]
    assert len(whole) > 20 and len(head) == len(rand) == 20 and head.equals(whole.iloc[:20])
    assert not rand.equals(head) and rand.equals(first(RANDOM)[1][0])  # another sample, the same each time
    assert dev_r.equals(dev) and all(tests_r[t].equals(tests[t]) for t in tests)  # evaluation sets as before
    assert "train_sample" not in head_spec.key() and rand_spec.key()["train_sample"] == "random"
    assert head_spec.key_hash() != rand_spec.key_hash()
    # no cap: the rule stays out of every key
    uncapped = {"concse.max_train_rows": None}
    assert ([s.key_hash() for s in concse.plan(load_profile("smoke", {**uncapped, **RANDOM}))]
            == [s.key_hash() for s in concse.plan(load_profile("smoke", uncapped))])


def test_concse_sts_tests_is_a_subset_in_order_and_enters_the_key_only_when_not_all_seven():
    from codeswitch import concse
    from codeswitch.concse.experiment import data_of, run_scores

    smoke = load_profile("smoke")
    assert all("sts_tests" not in s.key() for s in concse.plan(smoke))  # all seven: every key as before
    sub = load_profile("smoke", {"concse.sts_tests": ["stsb"]})
    spec = concse.plan(sub)[0]
    assert spec.key()["sts_tests"] == ["stsb"] and set(data_of(spec, sub)[2]) == {"stsb"}
    assert run_scores({"test": {"stsb": 80.0}}) == {"STS-B": 80.0, "Avg.": 80.0}
    for bad in (["sts12", "stsb"], [], ["sts17"]):
        with pytest.raises(ConfigError, match="sts_tests"):
            concse.load(load_profile("smoke", {"concse.sts_tests": bad}))


# --------------------------------------------------------------------------- alignment: parallel_train_size
def test_alignment_random_cap_draws_another_fixed_sample_and_names_it_in_the_key():
    import dataclasses as dc

    from codeswitch.alignment import load
    from codeswitch.alignment.experiment import _load_align_data
    from codeswitch.alignment.plan import TABLE3_1, align_spec

    def spec_and_train(overrides):
        profile = load_profile("smoke", {"alignment.parallel_train_size": 8, **overrides})
        c = load(profile)
        system = next(s for s in TABLE3_1.rows if s.objective is not None and s.data == "parallel")
        spec = align_spec(profile, c, system, TABLE3_1.mode)
        return spec, _load_align_data(profile, spec)[0]

    (head_spec, head), (rand_spec, rand) = spec_and_train({}), spec_and_train(RANDOM)
    whole = _load_align_data(load_profile("smoke"), dc.replace(head_spec, train_size=None))[0]
    assert len(whole) > 8 and len(head) == len(rand) == 8 and head.pairs == whole.pairs[:8]
    assert rand.pairs != head.pairs and set(rand.pairs) <= set(whole.pairs) and rand.pairs == spec_and_train(RANDOM)[1].pairs
    if whole.alignments is not None:  # each pair keeps its own alignment
        pos = {p: i for i, p in enumerate(whole.pairs)}
        assert rand.alignments == tuple(whole.alignments[pos[p]] for p in rand.pairs)
    assert "train_sample" not in head_spec.key() and rand_spec.key()["train_sample"] == "random"


# --------------------------------------------------------------------------- contrastivemix: train_max_queries
def test_contrastivemix_random_cap_draws_another_fixed_sample_and_names_it_in_the_key():
    from codeswitch import contrastivemix
    from codeswitch.contrastivemix.config import TrainRun
    from codeswitch.contrastivemix.data import load_train_set

    whole = load_train_set("synthetic")
    n = len(whole) // 2
    head, rand = load_train_set("synthetic", max_queries=n), load_train_set("synthetic", max_queries=n, rule="random")
    ids = lambda ds: list(ds["query_id"])  # noqa: E731
    assert ids(head) == ids(whole)[:n] and len(ids(rand)) == n and ids(rand) != ids(head)
    assert set(ids(rand)) <= set(ids(whole)) and ids(rand) == ids(load_train_set("synthetic", max_queries=n, rule="random"))

    def trains(overrides):
        return [s for s in contrastivemix.plan(load_profile("smoke", overrides)) if isinstance(s, TrainRun)]

    heads, rands = trains({"contrastivemix.train_max_queries": n}), trains({"contrastivemix.train_max_queries": n, **RANDOM})
    assert heads and all("train_sample" not in s.key() for s in heads)
    assert all(s.key()["train_sample"] == "random" for s in rands)
    uncapped = {"contrastivemix.train_max_queries": None}  # no cap: no rule in the key
    assert [s.key_hash() for s in trains({**uncapped, **RANDOM})] == [s.key_hash() for s in trains(uncapped)]


# --------------------------------------------------------------------------- alignment: {sentiment,ner,qa}.max_train_samples
def test_gluecos_task_cap_cuts_the_training_split_only_and_enters_the_key_when_set():
    from codeswitch.alignment import stages
    from codeswitch.alignment.experiment import task_data

    def finetunes(overrides):
        return list(stages(load_profile("smoke", overrides))[1].specs)

    plain = finetunes({})
    assert all("max_train_samples" not in s.key() and "train_sample" not in s.key() for s in plain)  # smoke/paper: as before
    spec = next(s for s in plain if s.task == "ner")
    whole = task_data(load_profile("smoke"), spec)
    n = len(whole["train"]) // 2
    cap = {"alignment.ner.max_train_samples": n}
    heads, rands = finetunes(cap), finetunes({**cap, **RANDOM})
    assert {s.task for s in heads if "max_train_samples" in s.key()} == {"ner"}  # one task's cap, that task's runs
    h = next(s for s in heads if s.task == "ner" and s.table == spec.table and s.row == spec.row and s.seed == spec.seed)
    r = next(s for s in rands if s.task == "ner" and s.table == spec.table and s.row == spec.row and s.seed == spec.seed)
    assert h.key()["max_train_samples"] == n and "train_sample" not in h.key() and r.key()["train_sample"] == "random"
    assert len({spec.key_hash(), h.key_hash(), r.key_hash()}) == 3
    head, rand = task_data(load_profile("smoke"), h), task_data(load_profile("smoke"), r)
    assert head["train"] == whole["train"][:n] and len(rand["train"]) == n and rand["train"] != head["train"]
    assert all(x in whole["train"] for x in rand["train"]) and rand == task_data(load_profile("smoke"), r)
    assert {k: v for k, v in rand.items() if k != "train"} == {k: v for k, v in whole.items() if k != "train"}
    with pytest.raises(ConfigError, match=r"max_train_samples"):
        stages(load_profile("smoke", {"alignment.qa.max_train_samples": 0}))
