"""Alignment experiment: readers (parallel text, Pharaoh alignments, MUSE, GLUECoS), metrics, reported numbers, config."""

from __future__ import annotations

import dataclasses

import json
import unicodedata

import numpy as np
import pytest

from codeswitch.alignment.gluecos_data import GluecosFormatError, load_task, read_conll, read_squad_v2
from codeswitch.alignment.data import ParallelFormatError, lexicon_as_parallel, load_lexicon, load_parallel, parse_pharaoh_line, read_parallel, read_pharaoh, romanise, write_pharaoh
from codeswitch.common.muse import MuseFormatError, read_muse as read_lexicon
from codeswitch.alignment.gluecos_evaluate import entity_f1, qa_predictions, squad_token_f1, squad_v2_f1, weighted_f1
from codeswitch.core.hub import MissingResourceError


# --------------------------------------------------------------------------- parallel text and alignments
def test_pharaoh_reader_on_a_tiny_example(tmp_path):
    (tmp_path / "p.tsv").write_text("the boy drinks water\tलड़का पानी पीता है\nhello\tनमस्ते\n", encoding="utf-8")
    (tmp_path / "p_alignments").write_text("1-0 3-1 2-2 2-3 2-2\n\n", encoding="utf-8")
    pairs = read_parallel(tmp_path / "p.tsv")
    assert pairs == [("the boy drinks water", "लड़का पानी पीता है"), ("hello", "नमस्ते")]
    al = read_pharaoh(tmp_path / "p_alignments", pairs)
    assert al == [[(1, 0), (2, 2), (2, 3), (3, 1)], []]  # sorted, duplicate removed, empty line = no links
    write_pharaoh(tmp_path / "round", al)
    assert read_pharaoh(tmp_path / "round", pairs) == al


def test_pharaoh_reader_errors_name_file_line_and_item(tmp_path):
    pairs = [("a b", "x y"), ("c", "z")]
    bad = tmp_path / "bad"
    bad.write_text("0-0 1-x\n0-0\n")
    with pytest.raises(ParallelFormatError, match=r"bad, line 1: alignment item '1-x'"):
        read_pharaoh(bad, pairs)
    bad.write_text("0-0\n0-1\n")
    with pytest.raises(ParallelFormatError, match=r"line 2: item '0-1': hindi word index 1 out of range \(the sentence has 1 words"):
        read_pharaoh(bad, pairs)
    bad.write_text("0-0\n")
    with pytest.raises(ParallelFormatError, match="1 alignment lines for 2 sentence pairs"):
        read_pharaoh(bad, pairs)
    assert parse_pharaoh_line("3-1 0-0") == [(0, 0), (3, 1)]


def test_parallel_reader_errors(tmp_path):
    p = tmp_path / "x.tsv"
    p.write_text("good\tअच्छा\nno tab here\n", encoding="utf-8")
    with pytest.raises(ParallelFormatError, match=r"x.tsv, line 2: expected 'english<TAB>hindi'"):
        read_parallel(p)
    p.write_text("good\t  \n", encoding="utf-8")
    with pytest.raises(ParallelFormatError, match="line 1: the hindi field is empty"):
        read_parallel(p)


def test_synthetic_parallel_and_romanisation_keep_alignments():
    dev = load_parallel("synthetic", "train", script="devanagari")
    rom = load_parallel("synthetic", "train", script="roman")
    assert len(dev) == len(rom) == 120 and dev.alignments == rom.alignments
    assert rom.pairs[0][1] == "la.DakI gA.Nva meM dUdha pItI hai|"  # ITRANS of लड़की गाँव में दूध पीती है।
    assert [len(h.split()) for _, h in dev.pairs] == [len(h.split()) for _, h in rom.pairs]


def test_lexicon_reader_and_split(tmp_path):
    p = tmp_path / "en-xx.txt"
    p.write_text("water पानी\nwater जल\n\nbook\tकिताब\n", encoding="utf-8")
    assert read_lexicon(p) == [("water", "पानी"), ("water", "जल"), ("book", "किताब")]
    p.write_text("a b c\n", encoding="utf-8")
    with pytest.raises(MuseFormatError, match="line 1: expected 'english<SEP>foreign'"):
        read_lexicon(p)
    entries = load_lexicon("synthetic")
    train, valid = lexicon_as_parallel(entries, n_valid=10, seed=0)
    again, _ = lexicon_as_parallel(entries, n_valid=10, seed=0)
    assert len(valid) == 10 and len(train) == len(entries) - 10 and train.pairs == again.pairs
    assert set(train.pairs).isdisjoint(valid.pairs) and all(a == ((0, 0),) for a in train.alignments)


def test_offline_hub_sources_fail_clearly(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MissingResourceError, match="offline"):
        load_parallel("cfilt/iitb-english-hindi", "train", limit=5)
    with pytest.raises(MissingResourceError, match="lexicon_source"):
        load_lexicon("https://example.org/en-hi.txt", cache_dir="/nonexistent-cache")


@pytest.mark.shared
def test_real_cfilt_files_read_and_validate(shared_data):
    for script in ("Devanagari", "Romanized"):
        d = load_parallel(str(shared_data / "cfilt_en_hi"), "valid", script="roman" if script == "Romanized" else "devanagari")
        assert len(d) == 850 and d.alignments is not None
        assert d.alignments[0] == ((1, 0), (2, 1), (6, 8), (11, 6), (12, 12), (15, 18))
    pairs = read_parallel(shared_data / "cfilt_en_hi" / "Devanagari" / "valid.tsv")
    roman = romanise(pairs)  # ITRANS keeps every word count, hence every alignment
    assert roman[0][1].startswith("unake nirdesha para")


@pytest.mark.shared
def test_real_muse_and_sail(shared_data):
    entries = read_lexicon(shared_data / "muse" / "en-hi.txt")
    assert len(entries) > 30000 and entries[0] == ("and", "और")
    splits = load_task(shared_data, "sentiment", str(shared_data / "sail2017"))
    assert len(splits["train"]) == 10080 and len(splits["validation"]) == 1260
    assert splits["train"][0] == ("Han wo bhi baat hai", 1)  # neutral


# --------------------------------------------------------------------------- GLUECoS readers
def test_conll_reader(tmp_path):
    p = tmp_path / "ner.txt"
    p.write_text("Rahul\tB-Per\naaj\tOther\n\nDelhi\tB-Loc\n", encoding="utf-8")
    s = read_conll(p)
    assert [x.words for x in s] == [("Rahul", "aaj"), ("Delhi",)] and s[0].tags == ("B-Per", "Other")
    p.write_text("Rahul\tB-Per\tx\n", encoding="utf-8")
    with pytest.raises(GluecosFormatError, match=r"ner.txt, line 1: expected 'token<TAB>tag'"):
        read_conll(p)
    p.write_text("Rahul\nDelhi\n", encoding="utf-8")
    assert read_conll(p)[0].tags is None  # GLUECoS's unlabelled test layout


def test_squad_reader_checks_spans(tmp_path):
    ctx = "Rahul Delhi mein rehta hai."
    doc = {"data": [{"paragraphs": [{"context": ctx, "qas": [
        {"id": "a", "question": "kahan?", "answers": [{"text": "Delhi", "answer_start": 6}], "is_impossible": False},
        {"id": "b", "question": "car?", "answers": [], "is_impossible": True},
    ]}]}]}
    p = tmp_path / "dev-v2.0.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    ex = read_squad_v2(p)
    assert ex[0].answers == (("Delhi", 6),) and ex[1].is_impossible and ex[1].answers == ()
    doc["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 5
    p.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(GluecosFormatError, match=r"question id 'a'.*'Delhi' is not at character 5"):
        read_squad_v2(p)


def test_synthetic_gluecos_layout_loads():
    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS

    sizes = {t: {k: len(v) for k, v in load_task(SYNTHETIC_GLUECOS, t).items()} for t in ("sentiment", "ner", "qa")}
    assert sizes == {"sentiment": {"train": 120, "validation": 96, "test": 96}, "ner": {"train": 44, "validation": 14, "test": 14},
                     "qa": {"train": 100, "validation": 150}}
    with pytest.raises(MissingResourceError, match="GLUECoS ner"):
        load_task("/nonexistent", "ner")


def test_shipped_qa_is_the_generators(tmp_path):
    """The shipped QA look-alike is what ``codeswitch.alignment.standins`` writes (rewrite it with ``python -m``)."""
    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.standins import write_qa_standin

    write_qa_standin(tmp_path)
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        assert (tmp_path / name).read_text(encoding="utf-8") == (SYNTHETIC_GLUECOS / "QA_EN_HI" / name).read_text(encoding="utf-8"), name


def test_shipped_sentiment_is_the_generators(tmp_path):
    """The shipped sentiment look-alike is what ``codeswitch.alignment.standins`` writes: distinct sentences of its
    grammar, no sentence in two splits, a third of each label per split, one phrase per label never in training."""
    from collections import Counter

    from codeswitch.alignment.experiment import SYNTHETIC_GLUECOS
    from codeswitch.alignment.standins import (SENTIMENT_PHRASES, SENTIMENT_SIZES, SENTIMENT_UNSEEN, sentiment_standin,
                                               write_sentiment_standin)

    write_sentiment_standin(tmp_path)
    for split in SENTIMENT_SIZES:
        name = f"{split}.txt"
        assert (tmp_path / name).read_text(encoding="utf-8") == (SYNTHETIC_GLUECOS / "Sentiment_EN_HI" / "Devanagari" / name
                                                                 ).read_text(encoding="utf-8"), name
    splits = sentiment_standin()
    texts = [t for rows in splits.values() for t, _ in rows]
    assert len(set(texts)) == len(texts) == sum(SENTIMENT_SIZES.values())
    for split, rows in splits.items():
        assert Counter(lab for _, lab in rows) == {lab: SENTIMENT_SIZES[split] // 3 for lab in SENTIMENT_PHRASES}, split
        assert all(t.endswith(SENTIMENT_PHRASES[lab]) for t, lab in rows)
    unseen = {lab: phrases[-SENTIMENT_UNSEEN:] for lab, phrases in SENTIMENT_PHRASES.items()}
    assert SENTIMENT_UNSEEN == 1 and not any(t.endswith(unseen[lab]) for t, lab in splits["train"])
    for split in ("validation", "test"):  # the unseen phrases are there, beside the others
        assert all(any(t.endswith(unseen[lab]) for t, lab2 in splits[split] if lab2 == lab) for lab in unseen), split
    assert sentiment_standin(seed=1) != splits
    with pytest.raises(ValueError, match="multiple of 3"):
        sentiment_standin({"train": 10})


# --------------------------------------------------------------------------- metrics
def test_weighted_and_entity_f1_hand_examples():
    # class 0: P=1/2, R=1 (F1 2/3, support 1); class 1: P=1, R=1/2 (F1 2/3, support 2); class 2: 1 (support 1)
    assert weighted_f1([0, 1, 1, 2], [0, 0, 1, 2]) == pytest.approx(100 * (2 / 3 * 1 + 2 / 3 * 2 + 1 * 1) / 4)
    gold = [["B-Per", "I-Per", "Other"], ["B-Loc"]]
    pred = [["B-Per", "I-Per", "Other"], ["Other"]]  # one of two entities found, no false positive
    assert entity_f1(gold, pred) == pytest.approx(100 * 2 * 1.0 * 0.5 / 1.5)


def test_squad_v2_f1():
    assert squad_token_f1("the Delhi city", "delhi") == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert squad_token_f1("", "") == 1.0 and squad_token_f1("", "x") == 0.0
    gold = {"a": ["Delhi", "New Delhi"], "b": []}
    assert squad_v2_f1({"a": "new delhi!", "b": ""}, gold) == 100.0
    assert squad_v2_f1({"a": "Delhi"}, gold) == pytest.approx(100.0)  # b missing = "" = right
    assert squad_v2_f1({"a": "Mumbai", "b": "x"}, gold) == 0.0


def test_qa_predictions_best_span_and_null():
    ctx = "aa bb cc"
    feat = {"example_id": "q", "offset_mapping": [None, None, (0, 2), (3, 5), (6, 8)]}
    start = np.array([[0.0, 9.0, 1.0, 5.0, 0.0]])  # token 1 is the question: never a span end
    end = np.array([[0.0, 9.0, 0.0, 1.0, 4.0]])
    assert qa_predictions([feat], start, end, {"q": ctx}) == {"q": "bb cc"}  # 5 + 4 beats 5 + 1
    start[0, 0] = end[0, 0] = 10.0  # null score 20 > 9
    assert qa_predictions([feat], start, end, {"q": ctx}) == {"q": ""}


# --------------------------------------------------------------------------- figure sentences, reported numbers, config
def test_figure_sentences():
    from codeswitch.alignment.experiment import figure_sentences

    df = figure_sentences()
    assert len(df) == 96 and df.groupby(["pair", "language"]).size().eq(8).all() and df["pair"].nunique() == 6
    for _, r in df.iterrows():
        word = r["sentence"].split()[r["target"]]
        assert unicodedata.normalize("NFC", word).strip(".,।").lower() != ""


def test_reported_labels_match_the_measured_tables():
    from codeswitch.core import reported
    from codeswitch.alignment.experiment import TABLES

    for key, t in TABLES.items():
        labels = {(s.row, c) for s in t.rows for c, task, _ in t.columns if (s.row, task) not in t.skip}
        entries = reported.table("alignment", key)
        assert entries and all((e.row, e.column) in labels for e in entries), key
    assert reported.lookup("alignment", "table3_1", "Lm (|| Devanagari)", "test").value == 68.9
    assert reported.lookup("alignment", "table3_2", "Lc (MUSE Roman)", "NER dev") is None  # "-": not run


def test_profiles_build_and_paper_restates_the_defaults():
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    smoke = load_profile("smoke")
    paper_cfg = load_profile("paper")
    paper = A.config.load(paper_cfg)
    # paper keeps the best model (issue 28) and packs its alignment and GLUECoS steps (issue 24)
    assert (dataclasses.replace(paper, keep_models="none", packing=False, gluecos_packing=False)
            == A.Config(task_subdirs=paper.task_subdirs))
    assert A.config.load(smoke).backbone.model == "tiny-bert-mlm"
    aligns, fine, figure = A.stages(smoke)
    assert len(aligns) == 10  # 4 all-layers + 6 linear-head runs
    assert len(A.stages(paper_cfg)[1]) == (5 + 6 + 8) * 5  # SA 5 rows, NER 6, QA 8; five seeds
    assert A.plan(smoke) == [*aligns, *fine, *figure]


@pytest.mark.parametrize("override, message", [
    ({"alignment.all_layers": {"lr": 1e-3}}, "'alignment.all_layers.lr' is now 'alignment.all_layers.learning_rate'"),
    ({"alignment.linear_head": {"max_epochs": 3}}, "'alignment.linear_head.max_epochs' is now 'alignment.linear_head.num_train_epochs'"),
    ({"alignment.sentiment": {"epochs": 3}}, "'alignment.sentiment.epochs' is now 'alignment.sentiment.num_train_epochs'"),
    ({"alignment.qa": {"eval_batch_size": 3}}, "'alignment.qa.eval_batch_size' is now 'alignment.qa.per_device_eval_batch_size'"),
    ({"alignment.backbones": [{"name": "a", "model": "x"}, {"name": "b", "model": "y"}]}, "exactly one is needed"),
])
def test_renamed_keys_are_errors_naming_the_new_key(override, message):
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match=message):
        A.config.load(load_profile("smoke", override))


def test_older_backbone_form_is_converted():
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    prof = load_profile("smoke", {"alignment.backbones": None, "alignment.backbone": "tiny-bert"})
    assert A.config.load(prof).backbones == (A.config.Backbone("tiny-bert", "tiny-bert"),)


def test_specs_are_typed_and_keys_follow_the_stages(tmp_path):
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile

    smoke = load_profile("smoke", output_root=tmp_path)
    aligns, fine, (figure,) = A.stages(smoke)
    assert len({s.key_hash() for s in [*aligns, *fine, figure]}) == len(aligns) + len(fine) + 1
    lc = next(s for s in aligns if s.objective == "sentence")
    lm = next(s for s in aligns if s.objective == "word")
    assert "alignments" not in lc.key() and lm.key()["alignments"] == "auto"  # word alignments: the word objective only
    assert set(lc.inputs()) == {"data", "model"}
    tuned = next(s for s in fine if s.alignment == lc)
    assert tuned.key()["alignment"] == lc.key() and "row" not in tuned.key()
    assert next(s for s in fine if s.alignment is None).key()["alignment"] is None
    # an all-layers setting re-keys the all-layers alignments, the fine-tunings that start from them and the figure
    aligns2, fine2, (figure2,) = A.stages(load_profile("smoke", {"alignment.all_layers.learning_rate": 0.002}, output_root=tmp_path))
    changed = {s.key_hash() for s in aligns2} ^ {s.key_hash() for s in aligns}
    assert len(changed) == 2 * sum(s.mode == "all_layers" for s in aligns)
    assert len({s.key_hash() for s in fine2} ^ {s.key_hash() for s in fine}) == 2 * sum(
        s.alignment is not None and s.alignment.mode == "all_layers" for s in fine)
    assert figure2.key_hash() != figure.key_hash()


# --------------------------------------------------------------------------- a local copy: parallel_holdout, gluecos_tasks
def test_hold_out_draws_a_seeded_validation_part_and_trains_on_the_rest():
    from codeswitch.alignment.data import hold_out

    whole = load_parallel("synthetic", "validation")
    train, valid = hold_out(whole, 5)
    assert (len(train), len(valid)) == (len(whole) - 5, 5) and (train.split, valid.split) == ("train", "validation")
    assert sorted(train.pairs + valid.pairs) == sorted(whole.pairs)  # a partition: no pair in both, none lost
    assert dict(zip(whole.pairs, whole.alignments)) == dict(zip(train.pairs + valid.pairs, train.alignments + valid.alignments))
    assert valid.pairs != whole.pairs[:5] and hold_out(whole, 5) == (train, valid)  # a seeded sample, the same each time
    for n in (0, len(whole)):
        with pytest.raises(ValueError, match=rf"alignment.parallel_holdout: cannot hold out {n} of the {len(whole)} pairs"):
            hold_out(whole, n)


def test_the_local_copy_keys_plan_fewer_runs_and_leave_the_defaults_alone(tmp_path):
    from codeswitch import alignment as A
    from codeswitch.alignment.experiment import _load_align_data
    from codeswitch.alignment.plan import run_tables
    from codeswitch.alignment.resources import resources
    from tests.helpers import alignment_smoke

    smoke, aligns, fine, (figure,) = alignment_smoke(output_root=tmp_path)
    local, aligns2, fine2, (figure2,) = alignment_smoke({"alignment.parallel_holdout": 4, "alignment.gluecos_tasks": ["sentiment"]},
                                                         output_root=tmp_path)
    assert all("holdout" not in s.key() for s in aligns) and A.config.load(smoke).gluecos_tasks is None
    assert {s.task for s in fine2} == {"sentiment"} and len(fine2) == sum(s.task == "sentiment" for s in fine)
    assert {s.mode for s in aligns2} == {"all_layers"}  # Table 3.2's linear heads are not run
    assert [s.holdout for s in aligns2] == [4 if s.data == "parallel" else None for s in aligns2]
    assert figure2.alignment in aligns2 and set(run_tables(A.config.load(local))) == {"table3_1"}
    parallel = next(s for s in aligns2 if s.data == "parallel")
    train, valid = _load_align_data(local, parallel)
    assert (len(train), len(valid)) == (len(load_parallel("synthetic", "validation")) - 4, 4)
    gluecos = next(r for r in resources(local) if r.setting == "alignment.gluecos_dir")
    assert gluecos.files and all("NER" not in f and "QA" not in f for f in gluecos.files)
    # a task left out of the plan, its table's figure alignment is still planned
    _, aligns3, fine3, (figure3,) = alignment_smoke({"alignment.gluecos_tasks": ["ner"]}, output_root=tmp_path)
    assert {s.task for s in fine3} == {"ner"} and figure3.alignment in aligns3


@pytest.mark.parametrize("override, message", [
    ({"alignment.gluecos_tasks": []}, "gluecos_tasks must list some of"),
    ({"alignment.gluecos_tasks": ["sentiment", "pos"]}, r"gluecos_tasks must list some of \['sentiment', 'ner', 'qa'\]"),
    ({"alignment.gluecos_tasks": ["ner", "ner"]}, "each value must appear once"),
    ({"alignment.parallel_holdout": 0}, "parallel_holdout must be an integer >= 1"),
    ({"alignment.parallel_holdout": 10, "alignment.parallel_valid_size": 5}, "cannot both be set"),
])
def test_the_local_copy_keys_are_checked(override, message):
    from codeswitch import alignment as A
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match=message):
        A.config.load(load_profile("smoke", override))
