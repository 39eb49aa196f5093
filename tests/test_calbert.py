"""CalBERT: pairs readers, the two Siamese objectives, metrics, the tables, and the data path end to end (tiny-bert)."""

from __future__ import annotations

import dataclasses

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from codeswitch.core import reported
from codeswitch.calbert.data import Pair, PairsFormatError, load_pairs, read_pairs_json, read_parallel_tsv, split_heldout
from codeswitch.core import hub
from codeswitch.core.hub import MissingResourceError
from codeswitch.core.profiles import load_profile

from .helpers import calbert_stages


# --------------------------------------------------------------------------- pairs
def _write(tmp_path, records, name="pairs.json"):
    p = tmp_path / name
    p.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return p


def test_read_pairs_json_released_layout(tmp_path):
    p = _write(
        tmp_path,
        [
            {"source": "नई दिल्ली", "translation": "New Delhi (JNN)\n ", "transliteration": "naee dillee", "cleaned-transliteration": "nai dilli"},
            {"source": "", "translation": "  ", "transliteration": "khaali", "cleaned-transliteration": "khaali"},  # empty side: skipped
            {"source": "", "translation": "Hello   there", "transliteration": "नमस्ते", "cleaned-transliteration": "namaste"},
        ],
    )
    with pytest.warns(UserWarning, match="skipped 1 of 3 records"):
        pairs = read_pairs_json(p)
    # whitespace normalised; Devanagari left in the romanised side goes to ITRANS
    assert pairs == [Pair("New Delhi (JNN)", "naee dillee"), Pair("Hello there", "namaste")]
    with pytest.warns(UserWarning):
        assert [x.codemixed for x in read_pairs_json(p, field="cleaned-transliteration")] == ["nai dilli", "namaste"]


@pytest.mark.parametrize(
    "records, message",
    [
        ({"translation": "x"}, r"pairs\.json: expected a JSON list"),
        (["just a string"], r"pairs\.json, record 0: expected an object"),
        ([{"translation": "a", "transliteration": "b"}, {"translation": "c"}], r"pairs\.json, record 1, field 'transliteration': missing"),
        ([{"translation": 3, "transliteration": "b"}], r"record 0, field 'translation': expected a string, found int"),
    ],
)
def test_read_pairs_json_errors(tmp_path, records, message):
    with pytest.raises(PairsFormatError, match=message):
        read_pairs_json(_write(tmp_path, records))


def test_read_parallel_tsv_romanises_hindi(tmp_path):
    p = tmp_path / "valid.tsv"
    p.write_text("People started gathering.\t लोगों की भीड़ जमा होने लगी।\nok\talready roman\n", encoding="utf-8")
    assert read_parallel_tsv(p) == [
        Pair("People started gathering.", "logom ki bhi.da jama hone lagi|"),
        Pair("ok", "already roman"),
    ]
    p.write_text("one\ttwo\tthree\n", encoding="utf-8")
    with pytest.raises(PairsFormatError, match=r"valid\.tsv, row 1: expected 'english<TAB>hindi', found 3"):
        read_parallel_tsv(p)


def test_load_pairs_sources(tmp_path):
    shipped = load_pairs("shipped")
    assert len(shipped) == 48 and all(p.english and p.codemixed for p in shipped)
    _write(tmp_path, [{"translation": "a b", "transliteration": "c d"}], "1.json")
    _write(tmp_path, [{"translation": "e", "transliteration": "f"}], "2.json")
    assert load_pairs(str(tmp_path)) == [Pair("a b", "c d"), Pair("e", "f")]  # a folder: every *.json, sorted
    assert load_pairs("1.json", root=tmp_path) == [Pair("a b", "c d")]  # relative to the project root


def test_split_heldout_is_seeded_and_disjoint():
    pairs = [Pair(str(i), str(i)) for i in range(10)]
    train, held = split_heldout(pairs, 3, seed=0)
    assert len(train) == 7 and len(held) == 3 and not set(train) & set(held)
    assert split_heldout(pairs, 3, seed=0) == (train, held)
    assert split_heldout(pairs, 3, max_train=4, seed=0)[0] == train[:4]
    with pytest.raises(ValueError, match="cannot hold out 10 of 10"):
        split_heldout(pairs, 10)


@pytest.mark.shared
def test_real_hinglish_pairs(shared_data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pairs = load_pairs(str(shared_data / "hinglish_pairs"))
    assert len(pairs) == (1981 - 18) + (4663 - 17)  # records with an empty transliteration are skipped
    assert sum("skipped" in str(w.message) for w in caught) == 2
    assert pairs[0] == Pair("New Delhi (JNN)", "naee dillee (jeenen)")
    # the released translation "...let's know\n is\n " is whitespace-normalised
    assert pairs[1].english.endswith("less than Rs 25 lakh, let's know is")
    assert pairs[1].codemixed.startswith("har kisee ka sapana hota hai")


# --------------------------------------------------------------------------- the two objectives
def test_cosine_similarity_loss_is_squared_cosine_distance():
    from sentence_transformers.sentence_transformer import losses

    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 8, generator=g), torch.randn(5, 8, generator=g)
    expected = sum((1 - torch.dot(a[i], b[i]) / (a[i].norm() * b[i].norm())) ** 2 for i in range(5)) / 5
    got = losses.CosineSimilarityLoss(None).compute_loss_from_embeddings([a, b], torch.ones(5))
    assert got.item() == pytest.approx(expected.item(), rel=1e-5)


def test_mnrl_is_in_batch_softmax_over_scaled_cosines():
    from sentence_transformers.sentence_transformer import losses

    g = torch.Generator().manual_seed(1)
    a, b = torch.randn(4, 6, generator=g), torch.randn(4, 6, generator=g)
    cos = lambda u, v: (torch.dot(u, v) / (u.norm() * v.norm())).item()  # noqa: E731
    expected = 0.0
    for i in range(4):
        logits = [20.0 * cos(a[i], b[j]) for j in range(4)]
        expected += -(logits[i] - math.log(sum(math.exp(x) for x in logits))) / 4
    got = losses.MultipleNegativesRankingLoss(None, scale=20.0).compute_loss_from_embeddings([a, b], torch.ones(4))
    assert got.item() == pytest.approx(expected, rel=1e-5)


# --------------------------------------------------------------------------- metrics and tables
def test_classification_metrics_hand_computed():
    from codeswitch.calbert.train import classification_metrics

    # class 0: P 1/2, R 1/1; class 1: P 1/1, R 1/2; class 2: P 1/1, R 1/1; supports 1, 2, 1
    m = classification_metrics([0, 1, 1, 2], [0, 1, 0, 2])
    assert m["accuracy"] == pytest.approx(0.75)
    assert m["precision"] == pytest.approx((0.5 * 1 + 1.0 * 2 + 1.0 * 1) / 4)
    assert m["recall"] == pytest.approx((1.0 * 1 + 0.5 * 2 + 1.0 * 1) / 4)
    f1 = [2 * 0.5 * 1 / 1.5, 2 * 1 * 0.5 / 1.5, 1.0]
    assert m["f1"] == pytest.approx((f1[0] * 1 + f1[1] * 2 + f1[2] * 1) / 4)


def test_task_table_mean_std_and_best_run():
    from codeswitch.calbert.results import task_table

    rows = []
    for seed, f1, p in ((1, 0.50, 0.40), (2, 0.70, 0.60), (3, 0.70, 0.90), (4, 0.60, 0.50)):
        for metric, v in (("f1", f1), ("precision", p)):
            rows.append({"task": "sail", "backbone": "B", "variant": "cosine", "row": "CalBERT-B", "seed": seed, "split": "validation", "metric": metric, "value": v})
    rows.append({"task": "sail", "backbone": "B", "variant": "none", "row": "B", "seed": 1, "split": "validation", "metric": "f1", "value": 0.1})
    t = task_table(pd.DataFrame(rows), "sail", ("f1", "precision"), select_by="f1", variants=("cosine",))
    cell = {c: r for c, r in zip(t["column"], t.to_dict("records")) if r["row"] == "CalBERT-B"}
    assert cell["F1 (val)"]["mean"] == pytest.approx(0.625)
    assert cell["F1 (val)"]["std"] == pytest.approx(np.std([0.5, 0.7, 0.7, 0.6], ddof=1))
    # best run = the first seed with the highest F1 (seed 2), and *its* precision
    assert cell["F1 (val, best run)"]["mean"] == pytest.approx(0.70)
    assert cell["Precision (val, best run)"]["mean"] == pytest.approx(0.60)
    assert cell["Precision (val, best run)"]["n"] == 4
    assert set(t["row"]) == {"CalBERT-B"}  # the variant filter


def test_frame_reads_the_scored_splits_only(tmp_path):
    """A fine-tune's record also holds keys that are not splits (example predictions, the packing flag, the learning
    entry): frame reads the named splits (train.SCORED_SPLITS), so a new key cannot break it (the "packed" flag did)."""
    from codeswitch.calbert.results import frame
    from codeswitch.calbert.train import SCORED_SPLITS
    from codeswitch.core.experiment import Results

    _, _, fine = calbert_stages(tmp_path)
    a, b = fine[0], fine[1]
    scores = {"f1": 0.5, "precision": 0.4, "recall": 0.6, "accuracy": 0.55, "n": 30}
    with_test = {"validation": scores, "test": dict(scores, f1=0.25), "packed": True, "learning": {"score": 0.5},
                 "examples": {"texts": ["x"], "predicted": [1]}, "a later flag": 3, "another": {"f1": 9.0}}
    df = frame(Results((a, b), (with_test, {"validation": scores, "packed": False})))
    assert SCORED_SPLITS == ("validation", "test")
    assert sorted(set(df["split"])) == ["test", "validation"]
    assert len(df) == 4 + 4 + 4  # a: validation and test, b: validation (no test); 4 metrics each ("n" is no metric)
    assert df[(df["seed"] == a.seed) & (df["split"] == "test") & (df["metric"] == "f1")]["value"].tolist() == [0.25]
    assert df["value"].between(0, 1).all()


def test_reported_labels_match_the_tables():
    from codeswitch.calbert.config import PAPER_BACKBONES
    from codeswitch.calbert.plan import row_label
    from codeswitch.calbert.tables import _column_order

    assert reported.lookup("calbert", "table6", "CalBERT-XLM-RoBERTa", "F1 (val, best run)").value == 0.620
    assert reported.lookup("calbert", "table7", "IndicBERT", "F1 (val)").value == 0.544
    assert reported.lookup("calbert", "table12", "CalBERT-DistilBERT", "Accuracy (val)").value == 0.564
    rows = {e.row for e in reported.table("calbert", "table7")} - {"SAIL-2017 Benchmark"}
    assert rows == {row_label(b.name, v) for b in PAPER_BACKBONES for v in ("none", "cosine")}
    columns = {e.column for e in reported.table("calbert", "table6")}
    assert columns <= set(_column_order(("f1", "precision", "recall")))


def test_paper_profile_restates_the_defaults_and_fails_clearly_offline(monkeypatch):
    from codeswitch import calbert as CB

    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(var, "1")  # restored after the test (load_profile sets them for offline profiles)
    cfg = load_profile("paper", {"offline": True})
    # paper keeps the best model (issue 28) and packs its fine-tuning steps (issue 24)
    assert dataclasses.replace(CB.config.load(cfg), keep_models="none", packing=False) == CB.Config()
    try:
        with pytest.raises(MissingResourceError, match="bert-base-cased"):
            CB.run(cfg)
        with pytest.raises(MissingResourceError, match=r"calbert\.sail\.source: .*data/sail2017 is not a folder"):
            CB.plan(cfg)
    finally:
        hub.hub_reachable.cache_clear()  # it remembered "offline"; later tests must ask again


@pytest.mark.parametrize("override, message", [
    ({"calbert.sail.epochs": 3}, "'calbert.sail.epochs' is now 'calbert.sail.num_train_epochs'"),
    ({"calbert.iitp.train_batch_size": 8}, "'calbert.iitp.train_batch_size' is now 'calbert.iitp.batch_size'"),
    ({"calbert.sail.eval_batch_size": 8}, "'calbert.sail.eval_batch_size' is now 'calbert.sail.per_device_eval_batch_size'"),
    ({"calbert.pretrain.epochs": 2}, "'calbert.pretrain.epochs' is now 'calbert.pretrain.num_train_epochs'"),
    ({"calbert.backbones": [{"name": "B", "ref": "bert-base-uncased"}]}, r"backbones\[0\]: key 'ref' is now 'model'"),
])
def test_renamed_keys_are_errors_naming_the_new_key(override, message):
    from codeswitch import calbert as CB
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match=message):
        CB.config.load(load_profile("smoke", override))


def test_plan_gives_two_typed_stages_with_keys_from_the_specs(tmp_path):
    from codeswitch import calbert as CB

    cfg, pre, fine = calbert_stages(tmp_path)
    assert CB.plan(cfg) == [*pre, *fine]  # pre-training first: fine-tuning reads its checkpoints
    assert [s.objective for s in pre] == ["cosine", "mnrl"]
    c = CB.config.load(cfg)
    # sail: 3 variants, iitp: 1 (smoke), x the profile's seeds
    assert len(fine) == (len(c.sail.variants) + len(c.iitp.variants)) * len(cfg.seeds)
    assert len({s.key_hash() for s in pre + fine}) == len(pre) + len(fine)
    cosine, mnrl = pre
    assert "mnrl_scale" not in cosine.key() and mnrl.key()["mnrl_scale"] == 20.0
    assert cosine.key()["precision"] == "fp32" and "backbone" not in cosine.key()  # resolved precision; the label is display
    tuned = next(s for s in fine if s.variant == "cosine")
    assert tuned.pretrain == cosine and tuned.key()["pretrain"] == cosine.key()
    assert next(s for s in fine if s.variant == "none").key()["pretrain"] is None
    assert set(tuned.inputs()) == {"data", "model"} and set(cosine.inputs()) == {"pairs", "model"}
    # a pre-training setting re-keys the pre-training and every fine-tuning that starts from it, nothing else
    _, pre2, fine2 = calbert_stages(tmp_path, {"calbert.pretrain.learning_rate": 3e-4})
    changed = {s.key_hash() for s in fine2} ^ {s.key_hash() for s in fine}
    assert pre2[0].key_hash() != cosine.key_hash()
    assert len(changed) == 2 * sum(s.variant != "none" for s in fine)
    # the in-batch-negatives scale re-keys only the mnrl pre-training
    _, pre3, _ = calbert_stages(tmp_path, {"calbert.pretrain.mnrl_scale": 10.0})
    assert pre3[0].key_hash() == cosine.key_hash() and pre3[1].key_hash() != mnrl.key_hash()


def test_first_batch_losses_match_the_formulas(tmp_path):
    from codeswitch import calbert as CB
    from codeswitch.calbert.experiment import first_batch_losses

    cfg = load_profile("smoke", output_root=tmp_path)
    spec = CB.stages(cfg)[0][0]
    out = first_batch_losses(spec, cfg, n=6)
    cos = out["cos"].astype(np.float64)
    assert cos.shape == (6, 6)
    assert out["cosine"] == pytest.approx(np.mean((1 - np.diag(cos)) ** 2), rel=1e-4)
    s = 20.0
    mnrl = np.mean([np.log(np.exp(s * cos[:, i]).sum()) - s * cos[i, i] for i in range(6)])
    assert out["mnrl"] == pytest.approx(mnrl, rel=1e-3, abs=1e-5)


# --------------------------------------------------------------------------- end to end (tiny-bert)
#: the tiny end-to-end CalBERT run (notebook 07's path on tiny-bert): two seeds, a handful of pairs and rows
TINY_CALBERT = {
    "seeds": [1, 2],
    "calbert.backbones": [{"name": "tiny", "model": "tiny-bert"}],
    "calbert.pretrain.heldout_pairs": 40,  # 8 pairs to train on: a handful
    "calbert.pretrain.batch_size": 4,
    "calbert.pretrain.max_seq_length": 16,
    "calbert.sail.variants": ["none", "cosine"],
    "calbert.sail.max_seq_length": 16,
    "calbert.iitp.max_seq_length": 16,
    "calbert.scratch.tokenizers": ["small"],  # one from-scratch model (RoBERTa-small)
    "calbert.scratch.max_seq_length": 16,
    # one epoch each (the smoke profile trains longer, so that its runs learn): this test checks the plumbing
    "calbert.pretrain.num_train_epochs": 1,
    "calbert.sail.num_train_epochs": 1,
    "calbert.iitp.num_train_epochs": 1,
    "calbert.scratch.num_train_epochs": 1,
}


@pytest.mark.slow
def test_calbert_end_to_end_tiny(tmp_path, backbones_dir, monkeypatch):
    """Pairs -> Siamese (and from-scratch MLM) pre-training -> checkpoints -> fine-tuning -> Tables 6/7/8/12/13, then
    everything cached."""
    from transformers import AutoModel

    from codeswitch import calbert as CB
    from codeswitch.calbert import experiment as calbert
    from codeswitch.calbert import results as R

    cfg = load_profile("smoke", TINY_CALBERT, output_root=tmp_path)
    results = CB.run(cfg)
    diag = R.pretraining_summary(results)
    assert list(diag["model"]) == ["CalBERT-tiny"] and diag["steps"].tolist() == [2] and diag["pairs"].tolist() == [8]
    assert 0.0 <= diag["retrieval@1 after"].iloc[0] <= 1.0 and -1.0 <= diag["cos(parallel) after"].iloc[0] <= 1.0
    (pre, scratch), _ = CB.stages(cfg)
    assert isinstance(scratch, CB.ScratchRun) and R.scratch_summary(results)["texts"].tolist() == [8]
    assert AutoModel.from_pretrained(calbert.checkpoint_dir(cfg, scratch)).config.hidden_size == 128  # smoke's scratch size
    ckpt = calbert.checkpoint_dir(cfg, pre)
    assert (ckpt / "model.safetensors").is_file()
    assert AutoModel.from_pretrained(ckpt).config.hidden_size == 64  # an ordinary HF folder

    df = R.frame(results)
    # sail: 2 variants x 2 seeds x (validation, test) x 4 metrics; iitp: 1 variant x 2 seeds x 2 x 4; from scratch: 2 tasks x 2 x 2 x 4
    assert len(df) == 2 * 2 * 2 * 4 + 1 * 2 * 2 * 4 + 2 * 2 * 2 * 4
    assert df["value"].between(0, 1).all()
    paths = CB.tables(results, cfg)
    assert set(paths) == {"calbert_table4", "calbert_table6", "calbert_table7", "calbert_table8", "calbert_table9", "calbert_table10",
                          "calbert_table12", "calbert_table13", "calbert_table14"}
    for p in paths.values():
        assert pd.read_csv(p["csv"])["mean"].notna().all()
    t7 = pd.read_csv(cfg.figures_dir / "calbert_table7.csv")
    assert set(t7["row"]) == {"tiny", "CalBERT-tiny"}
    assert set(t7["column"]) == {"F1 (val)", "F1 (val, best run)", "F1 (test)"}
    assert set(pd.read_csv(cfg.figures_dir / "calbert_table13.csv")["row"]) == {"RoBERTa-small"}
    assert CB.figures(results, cfg)["calbert_table7_figure"]["png"].is_file()

    # A second pass trains nothing: every run comes from the cache.
    def boom(*a, **k):
        raise AssertionError("a cached run was recomputed")

    with monkeypatch.context() as m:
        m.setattr(calbert, "siamese_pretrain", boom)
        m.setattr(calbert, "mlm_from_scratch", boom)
        m.setattr(calbert, "finetune_classifier", boom)
        again = CB.run(cfg)
    pd.testing.assert_frame_equal(R.frame(again), df)

    # A deleted checkpoint is pre-trained again (its record alone cannot serve fine-tuning); fine-tuning stays cached.
    import shutil

    shutil.rmtree(ckpt)
    calls = []
    with monkeypatch.context() as m:
        m.setattr(calbert, "finetune_classifier", boom)
        real = calbert.siamese_pretrain
        m.setattr(calbert, "siamese_pretrain", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
        CB.run(cfg)
    assert calls == [pre] and (ckpt / "model.safetensors").is_file()


_RUN_TINY_CALBERT = """
import json, sys
from pathlib import Path
from codeswitch import calbert as CB
from codeswitch.core.profiles import load_profile
cfg = load_profile("smoke", json.loads(sys.argv[1]), output_root=Path(sys.argv[2]))
results = CB.run(cfg)
CB.tables(results, cfg)
print(cfg.figures_dir)
"""


@pytest.mark.slow
def test_calbert_tiny_run_is_deterministic_across_processes(tmp_path, backbones_dir):
    """Notebook 07's determinism check (tests/test_notebooks.py, NOT_RERUN): the tiny end-to-end run, which has every
    kind of randomness the notebook has (a seeded sample of the pairs, a from-scratch tokenizer and model, Siamese
    pre-training, fine-tuning with two seeds), run from an empty cache in two processes with different hash seeds (as
    two notebook kernels are), writes byte-identical tables."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tables = []
    for name, hash_seed in (("a", "1"), ("b", "2")):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "CODESWITCH_BACKBONES": str(backbones_dir)}
        out = subprocess.run([sys.executable, "-c", _RUN_TINY_CALBERT, json.dumps(TINY_CALBERT), str(tmp_path / name)],
                             env=env, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        fig_dir = Path(out.stdout.strip().splitlines()[-1])
        assert fig_dir.is_relative_to(tmp_path / name)
        tables.append({p.name: p.read_text() for p in sorted(fig_dir.glob("calbert_table*.csv"))})
    assert len(tables[0]) == 9 and tables[0].keys() == tables[1].keys()
    for name, text in tables[0].items():
        assert tables[1][name] == text, f"{name} differs between two runs of the same settings"
