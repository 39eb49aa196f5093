"""ConCSE experiment: run keys shared across tables, the encoder, the STS metric, the t-test, a tiny end-to-end run."""

from __future__ import annotations

import dataclasses

import math

import numpy as np
import pandas as pd
import pytest
import torch

from codeswitch.core import reported
from codeswitch.common.sts import spearman_x100, sts_evaluator, ttest_pvalue
from codeswitch import concse as C
from codeswitch.concse.plan import spec
from codeswitch.concse.tables import table3_scores
from codeswitch.core.hub import MissingResourceError
from codeswitch.core.profiles import load_profile
from codeswitch.core.runs import config_hash

from .helpers import tiny_concse_profile

TASKS = ("STS-B", "STS12", "STS13", "STS14", "STS15", "STS16", "SICK")


# --------------------------------------------------------------------------- run keys
@pytest.fixture()
def paper():
    return load_profile("paper")


def test_paper_profile_restates_the_defaults(paper):
    # the paper profile turns on what the dataclass leaves off for the smoke profile: packing (issue 24), keep_models (28)
    assert dataclasses.replace(C.load(paper), packing=False, keep_models="none") == C.Config()


def _by_cell(specs):
    return {(s.study, s.label, s.seed): s.key_hash() for s in specs}


def test_shared_settings_hash_identically(paper):
    specs = C.plan(paper, C.ABLATIONS)
    assert all(isinstance(s, C.ConCSERun) for s in specs)
    by = _by_cell(specs)
    for seed in paper.seeds:
        v6 = by[("table4", "v6", seed)]
        assert by[("table5", "0.05", seed)] == v6
        assert by[("table6", "1.2", seed)] == v6
        assert by[("table7", "1", seed)] == v6
        assert by[("variant", "official", seed)] == v6
        assert by[("simcse_settings", "ConCSE (v6)", seed)] == v6
        assert by[("table6", "N/A", seed)] == by[("table4", "v3", seed)]
        # the paper profile trains Table 4's SimCSE row as the released code does (concse.simcse_settings)
        assert by[("simcse_settings", "SimCSE released_code", seed)] == by[("table4", "SimCSE", seed)]
        assert by[("simcse_settings", "SimCSE matched", seed)] != by[("table4", "SimCSE", seed)]
        assert by[("variant", "paper", seed)] != v6
    # 6 variants + SimCSE + 4 more τ + 3 more λ + 5 more α + paper variant + released SimCSE = 21 runs a seed
    assert len(set(by.values())) == 21 * len(paper.seeds)
    # Table 3's mBERT runs are the ablations' v6 and SimCSE runs
    t3 = {s.key_hash() for s in C.plan(paper, ["table3"]) if s.backbone == "mBERT-base"}
    assert t3 == {by[("table4", "v6", s)] for s in paper.seeds} | {by[("table4", "SimCSE", s)] for s in paper.seeds}
    assert len(C.plan(paper, ["table3"])) == 3 * 2 * len(paper.seeds)


def test_ablation_seeds_take_the_first_seeds():
    smoke = load_profile("smoke", {"seeds": [7, 8, 9], "concse.ablation_seeds": 2})
    assert {s.seed for s in C.plan(smoke, C.ABLATIONS)} == {7, 8}
    assert {s.seed for s in C.plan(smoke, ["table3"])} == {7, 8, 9}
    with pytest.raises(ValueError, match="studies"):
        C.plan(smoke, ["table9"])


def test_run_key_is_complete_and_canonical(paper):
    c = C.load(paper)
    b = c.backbone("XLM-R-large")
    k = spec(c, paper, b, "concse", 1, koglish="Jangyeong", terms=("align", "contrastive"))
    assert k.terms == ("contrastive", "align")  # canonical order
    assert k.margin is None and k.triplet_weight is None  # unused settings do not split the cache ...
    assert "margin" not in k.key() and "triplet_weight" not in k.key()  # ... and stay out of the key
    assert (k.batch_size, k.learning_rate, k.max_length) == (48, 1e-5, 64)  # Table 9
    assert k.key()["precision"] in ("fp32", "bf16", "fp16")  # the resolved name, never the profile's "auto"
    assert not {"study", "label", "koglish_source", "per_device_eval_batch_size"} & set(k.key())
    # a hub namespace is read as one dataset repository per dataset, each keyed by its commit (core.identity)
    assert k.inputs() == {"koglish_nli": "Jangyeong/Koglish_NLI", "koglish_sts": "Jangyeong/Koglish_STS",
                          "koglish_sick": "Jangyeong/Koglish_SICK", "model": b.model}
    s = spec(c, paper, b, "simcse", 1, koglish="Jangyeong")  # the paper profile: as the released code (config_simcse_large.json)
    assert (s.simcse_settings, s.batch_size, s.max_length, s.temperature) == ("released_code", 128, 32, 0.05)
    r = spec(c, paper, b, "simcse", 1, koglish="Jangyeong", simcse_settings="matched")  # Table 9's batch at ConCSE's length
    assert (r.batch_size, r.max_length) == (128, 64)
    base = spec(c, paper, c.backbone("XLM-R-base"), "simcse", 1, koglish="Jangyeong")
    assert (base.batch_size, base.max_length) == (64, 32)  # config_simcse_base.json
    with pytest.raises(ValueError, match="simcse_settings"):
        spec(c, paper, b, "simcse", 1, koglish="Jangyeong", simcse_settings="typo")


def test_bad_config_is_named():
    from codeswitch.core.sections import ConfigError

    with pytest.raises(ConfigError, match="concse.*variant"):
        C.load(load_profile("smoke", {"concse.variant": "nope"}))
    with pytest.raises(ConfigError, match="unknown key"):
        C.load(load_profile("smoke", {"concse.temprature": 0.1}))
    with pytest.raises(ConfigError, match="'epochs' is now 'num_train_epochs'"):
        C.load(load_profile("smoke", {"concse.epochs": 3}))
    with pytest.raises(ConfigError, match="'eval_batch_size' is now 'per_device_eval_batch_size'"):
        C.load(load_profile("smoke", {"concse.eval_batch_size": 3}))
    with pytest.raises(ConfigError, match=r"backbones\.mBERT-base.*learning_rate"):
        C.load(load_profile("smoke", {"concse.backbones": [{"name": "mBERT-base", "learning_rate": "fast"}]}))
    with pytest.raises(ConfigError, match="not a paper backbone"):
        C.load(load_profile("smoke", {"concse.backbones": ["my-bert"]}))


def test_backbones_older_forms_are_converted():
    from codeswitch.concse.config import PAPER_BACKBONES

    mapping = C.load(load_profile("smoke", {"concse.backbones": {"mBERT-base": {"model": "tiny-bert"}}}))
    assert mapping.backbones == (PAPER_BACKBONES[0].__class__("mBERT-base", "tiny-bert", 512, 128, 5e-5),)  # Table 9 fills in
    labels = C.load(load_profile("smoke", {"concse.backbones": ["mBERT-base", "XLM-R-large"]}))
    assert labels.backbones == (PAPER_BACKBONES[0], PAPER_BACKBONES[2])


# --------------------------------------------------------------------------- reported numbers
def test_table3_transcription_is_consistent():
    """Each printed Avg. is the mean of its seven tasks (a check on the transcription)."""
    for method in ("SimCSE", "ConCSE"):
        for b in ("mBERT-base", "XLM-R-base", "XLM-R-large"):
            row = f"{method}-{b}"
            vals = [reported.lookup("concse", "table3", row, t).value for t in TASKS]
            assert np.mean(vals) == pytest.approx(reported.lookup("concse", "table3", row, "Avg.").value, abs=0.006)


def test_table6_mapping_left_unknown():
    assert all(e.value is None for e in reported.table("concse", "table6"))
    assert [e.value for e in reported.table("concse", "table6_printed")] == [79.8, 80.0, 80.2, 79.8, 79.9, 79.8]


def test_paper_pvalues_follow_from_population_std():
    """Student's t on the printed mean ± (read as ddof=0) gives the printed p-value for 17 of 21 cells."""
    from scipy.stats import ttest_ind_from_stats

    match, mismatch = [], []
    for b in ("mBERT-base", "XLM-R-base", "XLM-R-large"):
        for t in TASKS:
            s, k = (reported.lookup("concse", "table3", f"{m}-{b}", t) for m in ("SimCSE", "ConCSE"))
            p = reported.lookup("concse", "table3", f"p-value {b}", t).value
            f = math.sqrt(5 / 4)  # population std -> sample std
            ours = ttest_ind_from_stats(s.value, s.std * f, 5, k.value, k.std * f, 5).pvalue
            (match if abs(math.log10(ours / p)) < 0.06 else mismatch).append((b, t))
    assert sorted(mismatch) == [("XLM-R-base", "SICK"), ("XLM-R-base", "STS15"), ("XLM-R-large", "STS-B"), ("XLM-R-large", "STS15")]


def test_ttest_pvalue():
    z = np.array([-2.0, -1.0, 0.0, 1.0, 2.0]) / math.sqrt(2.0)  # mean 0, population std 1
    simcse, concse = 77.68 + 0.17 * z, 79.95 + 0.24 * z  # Table 3, STS-B, mBERT
    assert ttest_pvalue(simcse, concse) == pytest.approx(3.08e-7, rel=0.01)  # printed: 3.1 × 10⁻⁷
    assert ttest_pvalue([1.0], [2.0, 3.0]) is None
    assert ttest_pvalue([1.0, 1.0], [1.0, 1.0]) == 1.0
    assert ttest_pvalue([1.0, 1.0], [2.0, 2.0]) == 0.0


# --------------------------------------------------------------------------- the metric
class _FixedModel:
    """Stands in for a SentenceTransformer: each sentence's embedding is looked up."""

    similarity_fn_name = "cosine"

    class model_card_data:  # the evaluator records its metrics here
        @staticmethod
        def set_evaluation_metrics(*args, **kwargs):
            pass

    def __init__(self, table):
        self.table = table

    def encode(self, sentences, **kw):
        return np.array([self.table[s] for s in sentences], dtype=np.float32)


def test_spearman_on_a_hand_example():
    emb = {"a": [1, 0], "b": [1, 0], "c": [0, 1], "d": [1, 1], "e": [-1, 0]}
    # cosines of the code-switched pairs: (a,b)=1, (a,c)=0, (a,d)=0.707, (a,e)=-1 -> ranks 4,2,3,1
    df = pd.DataFrame({"cross1": ["a"] * 4, "cross2": ["b", "c", "d", "e"], "label": [5.0, 1.0, 2.0, 0.0],
                       "sentence1": ["x"] * 4, "sentence2": ["y"] * 4})
    ev = sts_evaluator(df, name="t")
    # gold ranks 4,2,3,1 as well -> Spearman 1; swap two golds -> 1 - 6·2/(4·15) = 0.8
    assert spearman_x100(_FixedModel(emb), ev) == pytest.approx(100.0)
    df2 = df.assign(label=[5.0, 2.0, 1.0, 0.0])
    assert spearman_x100(_FixedModel(emb), sts_evaluator(df2, name="t")) == pytest.approx(80.0)


def test_sts_bad_rows_are_named():
    df = pd.DataFrame({"cross1": ["a", None], "cross2": ["b", "c"], "label": [1.0, 2.0]})
    with pytest.raises(ValueError, match="my.csv: row 1 has no value in field 'cross1'"):
        sts_evaluator(df, name="t", where="my.csv")


def test_nli_dataset_columns_and_errors():
    from codeswitch.concse.train import nli_dataset

    row = dict(sentence1="p", sentence2="e", hard_neg="n", cross1="cp", cross2="ce", cross_hard_neg="cn")
    ds = nli_dataset(pd.DataFrame([row]), "concse")
    assert ds.column_names == ["premise", "entailment", "contradiction", "cs_premise", "cs_entailment", "cs_contradiction"]
    assert ds[0]["cs_contradiction"] == "cn"
    assert nli_dataset(pd.DataFrame([row]), "simcse").column_names == ["cs_premise", "cs_entailment", "cs_contradiction"]
    with pytest.raises(ValueError, match="row 1 has an empty field 'cross2'"):
        nli_dataset(pd.DataFrame([row, {**row, "cross2": " "}]), "concse")


def test_real_sample_formats(shared_data):
    """The released Koglish samples load and feed the evaluator and the training columns."""
    from codeswitch.koglish.data import load_nli, load_sts
    from codeswitch.concse.train import nli_dataset

    src = str(shared_data / "koglish_sample")
    assert len(nli_dataset(load_nli(src).head(8), "concse")) == 8
    dev = load_sts(src, "stsb", "valid")
    ev = sts_evaluator(dev.head(20), name="dev")
    assert len(ev.sentences1) == 20 and ev.sentences1[0] == dev["cross1"].iloc[0]


# --------------------------------------------------------------------------- the encoder and a tiny run
def test_encoder_is_first_token_dense_tanh(backbones_dir):
    from transformers import AutoModel, AutoTokenizer

    from codeswitch.core.models import resolve_model
    from codeswitch.concse.train import build_encoder

    path = resolve_model("tiny-bert")
    model = build_encoder(path, max_length=16, seed=0)
    assert [type(m).__name__ for m in model] == ["Transformer", "Pooling", "Dense"]
    dense = model[2].linear
    assert float(dense.bias.detach().abs().max()) == 0.0 and 0.015 < float(dense.weight.detach().std()) < 0.025
    sents = ["the small pig rested .", "작은 돼지 rested at the park ."]
    got = model.encode(sents, convert_to_tensor=True)
    tok, bert = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path, add_pooling_layer=False)  # the encoder never builds the pooler
    bert.load_state_dict(model[0].auto_model.state_dict())
    bert.eval()
    with torch.no_grad():
        enc = tok(sents, padding=True, truncation=True, max_length=16, return_tensors="pt")
        cls = bert(**enc).last_hidden_state[:, 0]  # (B, H): the first token
        want = torch.tanh(cls @ dense.weight.T + dense.bias)  # (B, H)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_head_cls_is_the_first_token_itself_and_keys_only_when_set(backbones_dir, tmp_path):
    """concse.head: cls (issue 39 §2): no dense layer, the encoder's vector is [CLS]; the default keeps every key."""
    from codeswitch.concse import load, plan
    from codeswitch.concse.train import build_encoder
    from codeswitch.core.models import resolve_model
    from codeswitch.core.profiles import load_profile
    from codeswitch.core.sections import ConfigError

    path = resolve_model("tiny-bert")
    dense, cls = build_encoder(path, max_length=16, seed=0), build_encoder(path, max_length=16, seed=0, head="cls")
    assert [type(m).__name__ for m in cls] == ["Transformer", "Pooling"]
    n = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    h = dense[0].get_embedding_dimension()
    assert h == 64 and n(dense) - n(cls) == h * h + h  # the Linear(H, H) the cls head leaves out
    sents = ["the small pig rested ."]
    first = dense[1](dense[0](dense.tokenize(sents)))["sentence_embedding"]  # the same backbone's [CLS] (same seed)
    torch.testing.assert_close(cls.encode(sents, convert_to_tensor=True), first.detach(), atol=1e-5, rtol=1e-5)
    default = plan(load_profile("smoke", output_root=tmp_path))
    other = plan(load_profile("smoke", {"concse.head": "cls"}, output_root=tmp_path))
    assert all("head" not in s.key() and s.encoder_head == "dense_tanh" for s in default)
    assert {s.key()["head"] for s in other} == {"cls"} and {s.encoder_head for s in other} == {"cls"}
    with pytest.raises(ConfigError, match="head must be one of"):
        load(load_profile("smoke", {"concse.head": "mlp"}))


def test_tiny_end_to_end_run_is_cached(tmp_path, backbones_dir, monkeypatch):
    cfg = tiny_concse_profile(tmp_path, seed=1, batch_sizes=(16, 8), learning_rate=1e-3, epochs=2, train_rows=16, eval_rows=24)
    import codeswitch.concse.train as T

    threads, train_encoder = [], T.train_encoder

    def counting_train_encoder(*a, **k):
        threads.append(torch.get_num_threads())
        return train_encoder(*a, **k)

    monkeypatch.setattr(T, "train_encoder", counting_train_encoder)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # something earlier in the process changed the count ...
        results = C.run(cfg, ["table3"])
        scores = table3_scores(results)
        assert threads == [1, 1]  # ... each run still trains with the profile's cpu_threads (smoke: 1) ...
        assert torch.get_num_threads() == 2  # ... and the count is restored afterwards
    finally:
        torch.set_num_threads(before)
    assert sorted(scores["method"].unique()) == ["concse", "simcse"]
    assert set(scores["column"]) == set(TASKS) | {"Avg."}
    assert np.isfinite(scores["score"]).all() and (scores["score"].abs() <= 100).all()
    assert set(scores["best_epoch"]) <= {1, 2}
    from codeswitch.core.runs import RunCache

    records = RunCache(cfg.runs_dir / "concse").records()
    assert len(records) == 2
    for rec in records:
        res = rec["result"]
        assert len(res["dev_history"]) == 2 and res["dev"] == max(res["dev_history"])
        assert res["steps"] == 2 * math.ceil(16 / rec["config"]["batch_size"])
    # a second call trains nothing: every number comes from the cache
    monkeypatch.setattr(T, "train_encoder", lambda *a, **k: pytest.fail("a cached run was retrained"))
    again = table3_scores(C.run(cfg, ["table3"]))
    pd.testing.assert_frame_equal(scores, again)
    paths = C.tables(C.run(cfg, ["table3"]), cfg)
    assert set(paths) == {"concse_table3"}
    table = pd.read_csv(paths["concse_table3"]["csv"])
    assert "SimCSE-mBERT-base" in set(table["row"]) and table.loc[table["row"] == "ConCSE-mBERT-base", "paper"].notna().all()


def test_paper_profile_offline_fails_fast_and_clearly(tmp_path, monkeypatch):
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(var, "1")  # restored after the test; load_profile would set them for good
    cfg = load_profile("paper", {"offline": True}, output_root=tmp_path)
    with pytest.raises(MissingResourceError, match="Koglish"):
        C.run(cfg, ["table3"])


def test_one_step_shows_the_six_blocks_and_the_loss_terms(tmp_path, backbones_dir):
    cfg = load_profile("smoke", {"concse.max_train_rows": 16}, output_root=tmp_path)
    spec = next(s for s in C.plan(cfg, ["table3"]) if s.method == "concse")
    step = C.one_step(spec, cfg)
    assert list(step["batch"].columns) == ["e0", "e1", "e2", "c0", "c1", "c2"] and len(step["batch"]) == spec.batch_size
    blocks = step["blocks"].to_numpy()
    assert blocks.shape == (6, 6) and np.allclose(blocks, blocks.T, atol=1e-3)  # the mean cosine of S(x, y) and S(y, x)
    for terms in (step["terms"], step["after"]):
        assert terms["total"] == pytest.approx(terms["contrastive"] + spec.triplet_weight * terms["triplet"] + terms["align"], rel=1e-5)
    assert step["after"] != step["terms"]  # the AdamW step moved the weights
    with pytest.raises(ValueError, match="ConCSE step"):
        C.one_step(next(s for s in C.plan(cfg, ["table3"]) if s.method == "simcse"), cfg)
