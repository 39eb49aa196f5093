"""The cost model adds up (issue 40, item 5): each notebook's hours from fixed inputs, and the errors it once made.

Fixed inputs: a small benchmark report (the H200 rows the README is priced from, copied here so that a new GPU run
does not move these numbers) and the paper profile; a change to the arithmetic moves a pinned number and fails.
"""

from __future__ import annotations

import math

import pytest

from benchmarks import cost as K

ARCH = {"concse": {"num_hidden_layers": 12, "hidden_size": 768, "intermediate_size": 3072},
        "glue": {"num_hidden_layers": 24, "hidden_size": 1024, "intermediate_size": 4096}, "layers_cap": None}
#: the H200 rows of docs/bench/gpu/bench.json (2026-11-26) that the cost model reads, rounded
REPORT = {
    "environment": {"device": "fixed example (H200 rows)"},
    "sizes": {"concse_batch": 128, "ir_batch": 128, "query_max_length": 32, "passage_max_length": 128, "glue_max_length": 230},
    "models": ARCH,
    "measurements": [
        {"key": "a_pk", "status": "ok", "step_time_s": 0.0626},
        {"key": "a", "status": "ok", "step_time_s": 0.6095},
        {"key": "b", "status": "ok", "step_time_s": 0.4705, "tokens_per_s": 9221.0, "padding": 0.107},
        {"key": "b_pk", "status": "ok", "step_time_s": 0.1400, "tokens_per_s": 30989.0},
        {"key": "b_hf_pk", "status": "ok", "step_time_s": 0.1242, "tokens_per_s": 25863.0},
        {"key": "c_pk", "status": "ok", "step_time_s": 0.1319},
        {"key": "c", "status": "ok", "step_time_s": 0.4337},
        {"key": "d", "status": "ok", "sequences_per_s": 13679.0},
        {"key": "e_pk", "status": "ok", "step_time_s": 0.0816, "tokens_per_s": 542.0, "sequences_per_s": 49.0, "extra": {"layers": 12}},
        {"key": "f_pk", "status": "ok", "step_time_s": 0.0747, "tokens_per_s": 2877.0, "sequences_per_s": 214.0},
    ],
    "run_overhead_s": 20.0,
}
#: each notebook's GPU-hours from REPORT under the paper profile, encoding at 3,921 passages/s (the end-to-end rate);
#: 05 includes the untrained backbone's encoding of each of the 13 target corpora (the learning check's baseline) and each
#: evaluation's query encoding (reported + tuning queries, 32 of a passage's 128 tokens each: +0.0124 h; the untrained
#: baseline's, reported queries alone: -0.0003 h when it counted the tuning queries too)
PINNED = {"01": 0.0235, "02": 11.0392, "03": 11.3833, "04": 18.3446, "05": 288.1942, "06": 14.8590, "07": 198.9117}


@pytest.fixture(scope="module")
def rates():
    return K.Rates.from_report(REPORT)


def test_each_notebooks_hours_are_pinned_by_fixed_inputs():
    _, rows = K.notebook_costs(REPORT, encode_passages_per_s=3921.0)
    got = {r["notebook"]: r["hours"] for r in rows}
    assert got == pytest.approx(PINNED, abs=6e-5), got


def test_rates_read_from_the_report(rates):
    assert set(rates.paths) == {"a_pk", "b_pk", "c_pk", "e_pk", "f_pk"}  # the packed rows the paper profile runs
    assert rates.floor_s_per_layer == pytest.approx(0.0816 / 12)
    assert rates.glue_s_per_token == pytest.approx(1 / 30989.0)  # (b)'s whole step: never net of a floor added again
    assert rates.align_s_per_step == pytest.approx(0.0747)  # (f), measured, is what alignment steps cost
    assert rates.align_tokens_per_row == pytest.approx(2877 / 214)  # ~13 tokens a sentence, not 128
    assert rates.finetune_tokens_per_row == pytest.approx(542 / 49)  # ~11
    assert rates.floor_cap_s == pytest.approx(0.1242) and rates.floor_cap_layers == 24


def test_distilbert_is_priced_as_six_layers(rates):
    assert K.LAYERS["distilbert-base-cased"] == K.LAYERS["distilbert-base-uncased"] == 6
    assert set(K.LAYERS) == set(K.LINEAR_PARAMS) == set(K.PARAMS) == set(K.ARCH)  # one table: no backbone lacks its layers
    # a CalBERT fine-tuning step (8 sentences of ~11 tokens) is floor-bound: DistilBERT's is half BERT's
    bert = K.step_s("bert-base-cased", rates, 88, 11)
    distil = K.step_s("distilbert-base-cased", rates, 88, 11)
    assert bert == pytest.approx(12 * rates.floor_s_per_layer) and distil == pytest.approx(6 * rates.floor_s_per_layer)
    # published sizes (parameters): mBERT-cased 178 M, XLM-R large 560 M, DistilBERT-cased 65 M (embeddings + layers)
    assert K.PARAMS["bert-base-multilingual-cased"] == pytest.approx(178e6, rel=0.02)
    assert K.PARAMS["xlm-roberta-large"] == pytest.approx(560e6, rel=0.02)
    assert K.PARAMS["distilbert-base-cased"] == pytest.approx(65e6, rel=0.03)


def test_02_counts_the_fixed_cost_once(rates, tmp_path):
    """One GLUE run by hand: steps × max(fixed cost, tokens × (b)'s whole rate) + evaluations + the run's overhead."""
    from benchmarks import lengths as L
    from codeswitch.core.profiles import load_profile

    prof = tmp_path / "one.yaml"
    prof.write_text("extends: paper\nseeds: [11111]\nglue:\n  tasks: [rte]\n  scenarios: [EN2EN]\n  max_train_samples: 1000\n"
                    "  backbones:\n    - {name: XLM-R-base, model: xlm-roberta-base, batch_size: 32, learning_rate: 5.0e-5}\n",
                    encoding="utf-8")
    got = K.glue_hours(load_profile(str(prof)), rates)
    assert got["runs"] == 1 and got["steps"] == 5 * math.ceil(1000 / 32)  # the cap honoured: 1,000 of RTE's 2,490 rows
    tok = L.glue_task("rte").mean(230)
    per_token = K._train_s("xlm-roberta-base", rates, tok)
    steps = 5 * 32
    step = max(12 * rates.floor_s_per_layer, 5 * 1000 * tok / steps * per_token)
    dev, test = K._table1("GLUE/RTE", "Dev"), K._table1("GLUE/RTE", "Test")  # ConCSE Table 1
    fwd = lambda rows: math.ceil(rows / 256) * max(12 * rates.floor_s_per_layer / 3, rows * tok / math.ceil(rows / 256) * per_token / 3)  # noqa: E731
    want = (steps * step + 5 * (fwd(dev) + fwd(test)) + rates.run_overhead_s) / 3600
    assert got["hours"] == pytest.approx(want, rel=1e-9)
    # the double count it once made: the whole step's rate per token AND the fixed cost per step on top
    double = 5 * 1000 * tok * per_token + steps * 12 * rates.floor_s_per_layer
    assert steps * step < 0.9 * double


def test_alignment_steps_are_the_measured_f_row(rates):
    from types import SimpleNamespace as S

    from codeswitch.core.profiles import load_profile

    h = K.alignment_hours(load_profile("paper"), rates)
    assert h["not_counted"] == 0  # the MUSE lexicon alignments are priced (30,577 entries)
    # an all-layers alignment of 62,977 pairs, 10 epochs, batch 8: (f)'s 74.7 ms a step (its tokens are (f)'s)
    s = S(data="parallel", mode="all_layers", model="bert-base-multilingual-cased", batch_size=8, train_size=62977,
          valid_size=None, num_train_epochs=10, max_length=128)
    steps = 10 * math.ceil(62977 / 8)
    assert h["align_hours"] > steps * 0.0747 / 3600 * 2  # two such alignments in the paper profile
    assert h["align_hours"] < 134e-3 * steps * 6 / 3600  # not (b)'s ~134 ms a step


def test_physical_limit_counts_attention_and_adamw():
    base = K.assumed_report(1.0, 989.0, None, measured=REPORT)
    with_adamw = K.assumed_report(1.0, 989.0, None, measured=REPORT, bytes_per_s=K.H100_BYTES_PER_S)
    r0, r1 = K.Rates.from_report(base), K.Rates.from_report(with_adamw)
    assert r1.adamw_s_per_param == pytest.approx(28 / 3.35e12)
    assert r0.finetune_tokens_per_row == pytest.approx(542 / 49)  # measured tokens per row, not the length table's
    # 07's 10.8 M steps each move XLM-R-base-sized optimiser state: AdamW alone is hours at 3.35 TB/s
    from benchmarks.cost import _calbert_profile

    p = _calbert_profile("paper", None)
    c0, c1 = K.calbert_hours(p, r0), K.calbert_hours(p, r1)
    assert c1["hours"] - c0["hours"] > 1.0
    # attention: (b)'s FLOPs per token exceed 6·N by 12·ℓ·H·L (L ≈ 63 tokens a GLUE pair)
    assert r0.glue_flops_per_token > 6 * K.LINEAR_PARAMS["xlm-roberta-large"] * 1.01


def test_batched_runs_are_not_priced_and_say_so():
    """calbert.batched_runs has no GPU row measured (issue 43): 07 is priced as separate runs, and the table says so."""
    stacked = {"calbert.batched_runs": 10, "calbert.packing": False}
    _, rows = K.notebook_costs(REPORT, overrides=stacked, encode_passages_per_s=3921.0)
    _, plain = K.notebook_costs(REPORT, overrides={"calbert.packing": False}, encode_passages_per_s=3921.0)
    got, want = rows[-1], plain[-1]
    assert got["notebook"] == "07" and got["hours"] == want["hours"] and got["steps"] == want["steps"]
    assert "not priced (no GPU measurement; issue 43)" in got["unpriced"] and "unpriced" not in want
    assert "calbert.batched_runs: 10: not priced" in K.cost_table(REPORT, overrides=stacked)


def test_a_delta_profile_is_priced_by_its_caps(tmp_path):
    """A profile's row caps, epochs, seeds and grids change the price (as the coming `quick` profile will)."""
    prof = tmp_path / "small.yaml"
    prof.write_text("extends: paper\nseeds: [11111]\nconcse:\n  max_train_rows: 10000\ncontrastivemix:\n  train_max_queries: 1280\n"
                    "  ablations: false\ncalbert:\n  seeds: [11111]\n  pretrain:\n    max_pairs: 20000\n", encoding="utf-8")
    _, rows = K.notebook_costs(REPORT, str(prof), encode_passages_per_s=3921.0)
    got = {r["notebook"]: r for r in rows}
    assert got["03"]["runs"] == 6 and got["04"]["runs"] == 19
    assert got["03"]["steps"] == sum(5 * math.ceil(10000 / b) for b in (64, 64, 128, 128, 128, 48))
    assert got["05"]["steps"] == got["05"]["runs"] * 40 * (1280 // 128)
    for nb in ("03", "04", "05", "07"):
        assert got[nb]["hours"] < PINNED[nb] / 3


def test_the_align_weight_search_is_priced_as_its_extra_trainings(tmp_path):
    """contrastivemix.align_weight: search trains every ContrastiveMix model once per grid weight: the price counts them."""
    from codeswitch import contrastivemix as X
    from codeswitch.contrastivemix.config import TrainRun
    from codeswitch.core.profiles import load_profile

    prof = tmp_path / "search.yaml"
    prof.write_text("extends: paper\ncontrastivemix:\n  align_weight: search\n", encoding="utf-8")
    _, rows = K.notebook_costs(REPORT, str(prof), encode_passages_per_s=3921.0)
    got = next(r for r in rows if r["notebook"] == "05")
    _, base_rows = K.notebook_costs(REPORT, encode_passages_per_s=3921.0)
    base = next(r for r in base_rows if r["notebook"] == "05")
    cm = sum(isinstance(s, TrainRun) and s.method == "contrastivemix" for s in X.plan(load_profile("paper")))
    assert got["runs"] == base["runs"] + 3 * cm  # four grid weights where the default trains one
    # a ContrastiveMix model encodes at least as many groups a step as any other: each extra one costs at least the mean
    assert got["train_hours"] >= base["train_hours"] * (1 + 3 * cm / base["runs"])
    assert got["encode_hours"] > base["encode_hours"]  # and each is evaluated


def test_alignment_tuning_is_priced_as_its_grid_of_alignments(tmp_path):
    """alignment.tune trains each alignment once per grid point (Lc: 9, Lm: 3): the price counts them."""
    from codeswitch.alignment.plan import stages
    from codeswitch.core.profiles import load_profile

    prof = tmp_path / "tune.yaml"
    prof.write_text("extends: paper\nalignment:\n  tune: true\n", encoding="utf-8")
    _, rows = K.notebook_costs(REPORT, str(prof), encode_passages_per_s=3921.0)
    got = next(r for r in rows if r["notebook"] == "06")
    aligns = stages(load_profile("paper"))[0]
    lc = sum(a.objective == "sentence" for a in aligns)
    assert got["runs"] == next(r for r in K.notebook_costs(REPORT, encode_passages_per_s=3921.0)[1]
                               if r["notebook"] == "06")["runs"] + 8 * lc + 2 * (len(aligns) - lc)
    assert got["hours"] > PINNED["06"]


def test_a_runs_overhead_is_its_backbones_loading_and_saving_plus_the_fixed_remainder(rates):
    from dataclasses import replace

    r = replace(rates, run_overhead_s=10.0, load_save_s_per_param=2e-8)
    assert K.run_s("bert-base-cased", r) == pytest.approx(10.0 + 2e-8 * K.PARAMS["bert-base-cased"])
    assert K.run_s("xlm-roberta-large", r, encoders=2) == pytest.approx(10.0 + 2 * 2e-8 * K.PARAMS["xlm-roberta-large"])
    assert K.run_s("xlm-roberta-large", r) > K.run_s("distilbert-base-cased", r)  # loading scales with the parameters
    r = replace(r, save_s_per_param=1.5e-8)  # of the 2e-8, saving is 1.5e-8: a run that keeps nothing pays 0.5e-8
    assert K.run_s("bert-base-cased", r, saves=False) == pytest.approx(10.0 + 0.5e-8 * K.PARAMS["bert-base-cased"])
    assert K.run_s("bert-base-cased", r) == pytest.approx(10.0 + 2e-8 * K.PARAMS["bert-base-cased"])


def test_saving_is_priced_only_where_a_section_keeps_its_models(rates):
    """keep_models: none saves no fine-tuned model (02's, 03/04's, 06's GLUECoS and 07's fine-tunings), so their runs
    are cheaper by the saving part; 06's alignments and 07's pre-training save whatever keep_models says (their models
    are read by the fine-tunings), and 05's trained encoders are saved for its evaluation stage."""
    from dataclasses import replace

    from codeswitch.core.profiles import load_profile

    r = replace(rates, run_overhead_s=0.0, load_save_s_per_param=4e-8, save_s_per_param=3e-8)
    sections = ("glue", "concse", "contrastivemix", "alignment", "calbert")
    kept = load_profile("paper", {f"{s}.keep_models": "best" for s in sections})
    none = load_profile("paper", {f"{s}.keep_models": "none" for s in sections})
    g_kept, g_none = K.glue_hours(kept, r), K.glue_hours(none, r)
    from codeswitch import glue as G

    backbones = G.load(kept).backbones
    per_backbone = g_kept["runs"] / len(backbones)  # every backbone runs the same grid
    saved = sum(per_backbone * 3e-8 * K.PARAMS[bb.model] for bb in backbones) / 3600
    assert g_kept["runs"] == g_none["runs"]
    assert g_kept["hours"] - g_none["hours"] == pytest.approx(saved, rel=1e-9)
    assert K.retrieval_hours(none, r)["hours"] == pytest.approx(K.retrieval_hours(kept, r)["hours"])
    a_kept, a_none = K.alignment_hours(kept, r), K.alignment_hours(none, r)
    assert 0 < a_kept["hours"] - a_none["hours"] < a_kept["hours"]


def test_the_measured_overhead_is_split_into_loading_saving_evaluation_and_a_remainder(tmp_path):
    """Fixed records: 2 runs of 30 s on the GPU, epochs 5 + 5 s; the CPU loads and saves 1 s per 100 M parameters and
    evaluates 10 sentences/s; (d) 10,000 passages/s on the GPU against 10 on the CPU (a 1,000x forward ratio)."""
    import json

    gpu = tmp_path / "gpu" / "notebooks"
    (gpu / "logs").mkdir(parents=True)
    (gpu / "report.json").write_text(json.dumps({"kinds": [{"notebook": "03", "runs": 2, "seconds": 60.0}]}))
    (gpu / "logs" / "03.log").write_text("  [SimCSE-mBERT-base seed 1] 1/1 epoch  100% | 0:00:05 elapsed\n"
                                         "  [ConCSE-XLM-R-large seed 1] 1/1 epoch  100% | 0:00:05 elapsed\n")
    (gpu.parent / "bench.json").write_text(json.dumps({"measurements": [{"key": "d", "sequences_per_s": 10000.0}]}))
    cpu = tmp_path / "docs" / "bench" / "cpu"
    cpu.mkdir(parents=True)
    (cpu / "bench_d.json").write_text(json.dumps({"measurements": [{"key": "d", "sequences_per_s": 10.0}]}))
    (cpu / "run_overhead.json").write_text(json.dumps({"rows": [
        {"model": "mbert-base", "params": 100_000_000, "load_s": [0.4, 0.6], "save_s": [0.5, 0.5],
         "eval": {"sentences": 100, "seconds": 10.0}}]}))
    o = K.measured_run_overhead(gpu, cpu, eval_sentences=4096, gpu_bench=gpu.parent / "bench.json")
    assert o["whole_s_per_run"] == pytest.approx(25.0)  # (60 - 10) / 2
    assert o["load_save_s_per_param"] == pytest.approx(1e-8)  # (0.5 + 0.5) s / 100 M
    mean_params = (K.PARAMS["bert-base-multilingual-uncased"] + K.PARAMS["xlm-roberta-large"]) / 2
    assert o["load_save_s_per_run"] == pytest.approx(mean_params * 1e-8)
    scale = (K.LINEAR_PARAMS["bert-base-multilingual-uncased"] + K.LINEAR_PARAMS["xlm-roberta-large"]) / 2 / K.LINEAR_PARAMS["bert-base-multilingual-cased"]
    assert o["gpu_over_cpu_forward"] == pytest.approx(1000.0)
    assert o["eval_s_per_run"] == pytest.approx(4096 * 0.1 / 1000 * scale)
    assert o["seconds"] == pytest.approx(25.0 - mean_params * 1e-8 - 4096 * 0.1 / 1000 * scale)
    assert K.overhead_fields(o, {}) == {"run_overhead_s": o["seconds"], "load_save_s_per_param": 1e-8, "save_s_per_param": 0.5e-8,
                                        "run_overhead_by_notebook": {}}
    (cpu / "run_overhead.json").unlink()  # without the CPU record: the whole measured overhead, as before
    assert K.measured_run_overhead(gpu, cpu, gpu_bench=gpu.parent / "bench.json")["seconds"] == pytest.approx(25.0)


def test_a_notebook_measured_whole_on_a_gpu_pays_its_own_overhead_per_run(tmp_path, rates):
    """Issue 43: the notebooks records price each notebook's runs outside their training spans (the latest ok record;
    03 keeps its own split); such a run pays that, plus saving where its model is kept and not read later anyway."""
    import json
    from dataclasses import replace

    def filed(folder, date, notebooks, kinds, concurrent=()):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "report.json").write_text(json.dumps({
            "environment": {"date": date}, "concurrent": list(concurrent),
            "notebooks": [{"notebook": nb, "ok": ok} for nb, ok in notebooks.items()], "kinds": kinds}))

    filed("notebooks", "", {"03": True}, [{"notebook": "03", "runs": 2, "steps": 10, "seconds": 60.0, "train_span_s": 10.0}])
    filed("notebooks-a", "2026-01-01 10:00 UTC", {"02": True, "07": True},
          [{"notebook": "02", "runs": 4, "steps": 40, "seconds": 30.0, "train_span_s": 10.0},
           {"notebook": "07", "kind": "calbert/pretrain", "runs": 2, "steps": 8, "seconds": 10.0, "train_span_s": 6.0},
           {"notebook": "07", "kind": "calbert/finetune", "runs": 2, "steps": 8, "seconds": 10.0, "train_span_s": 6.0},
           {"notebook": "07", "kind": "calbert/eval", "runs": 5, "steps": 0, "seconds": 99.0, "train_span_s": 0.0}],
          concurrent=["02", "07"])
    filed("notebooks-b", "2026-02-01 10:00 UTC", {"02": False, "07": True},
          [{"notebook": "02", "runs": 4, "steps": 40, "seconds": 90.0, "train_span_s": 10.0},
           {"notebook": "07", "runs": 4, "steps": 8, "seconds": 20.0, "train_span_s": 12.0}])
    got = K.measured_notebook_overheads(tmp_path)
    assert sorted(got) == ["02", "07"]  # 03: its own split; a notebook that did not finish is not read
    assert got["02"]["seconds"] == pytest.approx(5.0) and got["02"]["date"].startswith("2026-01-01")  # (30 - 10) / 4
    assert got["02"]["concurrent"] is True
    assert got["07"]["seconds"] == pytest.approx(2.0) and got["07"]["concurrent"] is False  # the later record: (20 - 12) / 4
    r = replace(rates, run_overhead_s=10.0, load_save_s_per_param=4e-8, save_s_per_param=3e-8,
                run_overhead_by_notebook={nb: v["seconds"] for nb, v in got.items()})
    params = K.PARAMS["xlm-roberta-large"]
    assert K.run_s("xlm-roberta-large", r, notebook="02") == pytest.approx(5.0 + 3e-8 * params)  # kept: saving added
    assert K.run_s("xlm-roberta-large", r, notebook="02", saves=False) == pytest.approx(5.0)
    assert K.run_s("xlm-roberta-large", r, notebook="07", read_later=True) == pytest.approx(2.0)  # measured saving it
    assert K.run_s("xlm-roberta-large", r, notebook="06") == pytest.approx(10.0 + 4e-8 * params)  # not measured whole
    assert K.Rates.from_report(REPORT | {"run_overhead_by_notebook": {"02": 5.0}}).run_overhead_by_notebook == {"02": 5.0}


def test_quick_caps_are_priced_calbert_tasks_gluecos_and_the_reduced_corpus(tmp_path):
    """calbert.sail/iitp.max_train_samples and alignment.<task>.max_train_samples cap the rows priced; a reduced corpus
    (contrastivemix.corpus_sample) is priced at (report + tuning queries) x (depth + judged) + the sample."""
    from types import SimpleNamespace as S

    prof = tmp_path / "caps.yaml"
    prof.write_text("extends: paper\nseeds: [11111]\ncalbert:\n  seeds: [11111]\n  sail: {max_train_samples: 1000}\n"
                    "  iitp: {max_train_samples: 1000}\nalignment:\n  sentiment: {max_train_samples: 500}\n", encoding="utf-8")
    _, capped = K.notebook_costs(REPORT, str(prof), encode_passages_per_s=3921.0)
    base = tmp_path / "base.yaml"
    base.write_text("extends: paper\nseeds: [11111]\ncalbert:\n  seeds: [11111]\n", encoding="utf-8")
    _, whole = K.notebook_costs(REPORT, str(base), encode_passages_per_s=3921.0)
    c, w = {r["notebook"]: r for r in capped}, {r["notebook"]: r for r in whole}
    assert c["07"]["runs"] == w["07"]["runs"] and c["07"]["steps"] < w["07"]["steps"]
    assert c["06"]["runs"] == w["06"]["runs"] and c["06"]["steps"] < w["06"]["steps"]
    bm25 = S(benchmark="mrtydi", language="ko", report_split="test", tune_split="dev", tune_max_queries=None)
    e = S(bm25=bm25, depth=100, corpus_sample=1000)
    assert K.reduced_passages(e, K.RETRIEVAL_SIZES, 1.5e6) == (421 + 303) * (100 + K.JUDGED_PER_QUERY) + 1000
    assert K.reduced_passages(S(bm25=bm25, depth=100, corpus_sample=None), K.RETRIEVAL_SIZES, 1.5e6) == 1.5e6
    assert K.reduced_passages(e, K.RETRIEVAL_SIZES, 5000) == 5000  # never more than the corpus
    capped_tune = S(bm25=S(**{**vars(bm25), "tune_max_queries": 100}), depth=100, corpus_sample=0)
    assert K.reduced_passages(capped_tune, K.RETRIEVAL_SIZES, 1.5e6) == (421 + 100) * 110


def _timed(median: float) -> dict:
    return {"median": median, "min": median, "max": median, "all": [median]}


#: a fixed `python -m benchmarks overhead --steps` record (numbers of the size this 2-core CPU gives, not copied from it)
CPU_RECORD = {"rows": [
    {"model": "bert-base-multilingual-uncased", "notebook": "03", "params": 167_356_416, "length": 32,
     "train": {"batch": 16, "forward_backward_s": _timed(8.0), "adamw_s": _timed(2.0)}, "eval": {"batch": 64, "forward_s": _timed(4.0)}},
    {"model": "xlm-roberta-large", "notebook": "03", "params": 559_890_432, "length": 32,
     "train": {"batch": 8, "forward_backward_s": _timed(20.0), "adamw_s": _timed(8.0)}, "eval": {"batch": 32, "forward_s": _timed(10.0)}},
    {"model": "facebook/nllb-200-distilled-600M", "notebook": "01", "params": 615_073_792, "length": 64,
     "eval": {"batch": 8, "forward_s": _timed(5.0)}},
]}


def test_cpu_rates_are_the_cost_models_flops_over_the_measured_seconds():
    mbert = 12 * (4 * 768**2 + 2 * 768 * 3072)
    assert K.step_flops("bert-base-multilingual-uncased", 16, 32) == 16 * 32 * (6 * mbert + 12 * 12 * 768 * 32)
    rows = {r["model"]: r for r in K.cpu_rates(CPU_RECORD)}
    assert rows["bert-base-multilingual-uncased"]["train_flop_s"] == pytest.approx(16 * 32 * (6 * mbert + 12 * 12 * 768 * 32) / 8.0)
    assert rows["bert-base-multilingual-uncased"]["forward_flop_s"] == pytest.approx(64 * 32 * (2 * mbert + 4 * 12 * 768 * 32) / 4.0)
    assert rows["xlm-roberta-large"]["adamw_s_per_param"] == pytest.approx(8.0 / 559_890_432)
    assert "train_flop_s" not in rows["facebook/nllb-200-distilled-600M"]  # 01 translates: a forward only
    report = K.cpu_steps_report(CPU_RECORD)
    assert report["adamw_s_per_param"] == pytest.approx((2.0 / 167_356_416 + 8.0 / 559_890_432) / 2)  # the median of two
    ref = (rows["bert-base-multilingual-uncased"]["train_flop_s"] + rows["xlm-roberta-large"]["train_flop_s"]) / 2
    scale = {m: (t, f) for m, t, f in report["arch_scale"]}
    assert scale["xlm-roberta-large"] == pytest.approx((ref / rows["xlm-roberta-large"]["train_flop_s"],
                                                        ref / rows["xlm-roberta-large"]["forward_flop_s"]))
    assert scale["facebook/nllb-200-distilled-600M"][0] == 1.0  # no training measured: the reference rate
    with pytest.raises(ValueError, match="no-such-model"):
        K.cpu_rates({"rows": [{**CPU_RECORD["rows"][0], "model": "no-such-model"}]})


@pytest.mark.parametrize("model", ["bert-base-multilingual-uncased", "xlm-roberta-large"])
def test_cpu_pricing_gives_back_each_measured_step_at_its_own_shape(model):
    """At the shape it was measured at, a backbone's step costs its measured forward + backward plus AdamW at the
    median seconds per parameter, and its evaluation batch its measured forward: steps × these is the CPU's price."""
    rates = K.Rates.from_report(K.cpu_steps_report(CPU_RECORD))
    row = next(r for r in CPU_RECORD["rows"] if r["model"] == model)
    b, length = row["train"]["batch"], row["length"]
    adamw = rates.adamw_s_per_param * K.PARAMS[model]
    assert K.step_s(model, rates, b * length, length) == pytest.approx(row["train"]["forward_backward_s"]["median"] + adamw)
    eb = row["eval"]["batch"]
    assert K.eval_s(model, rates, eb, eb, length) == pytest.approx(row["eval"]["forward_s"]["median"])
    # twice the rows, twice the time (no fixed cost per step on the CPU)
    assert K.eval_s(model, rates, 2 * eb, eb, length) == pytest.approx(2 * row["eval"]["forward_s"]["median"])


def test_a_backbone_the_cpu_record_lacks_runs_at_the_median_training_rate():
    rates = K.Rates.from_report(K.cpu_steps_report(CPU_RECORD))
    ref = sum(r["train_flop_s"] for r in K.cpu_rates(CPU_RECORD)[:2]) / 2
    compute = K.step_s("bert-base-cased", rates, 8 * 32, 32) - rates.adamw_s_per_param * K.PARAMS["bert-base-cased"]
    assert compute == pytest.approx(K.step_flops("bert-base-cased", 8, 32) / ref)
    assert K.eval_s("bert-base-cased", rates, 8, 8, 32) == pytest.approx(K.step_flops("bert-base-cased", 8, 32, train=False) / ref)


def test_the_wall_clock_table_names_its_unit_and_counts_jobs():
    """On a CPU report the wall-clock table speaks of CPUs and CPU-hours (it said GPUs), counts jobs (05's untrained
    baselines are evaluation-only jobs beside the training runs, so the count exceeds the cost table's training runs),
    and the rates line gives a CPU's encoding rate in significant digits (``,.0f`` printed 0.377 as 0 passages/s)."""
    report = K.cpu_steps_report(CPU_RECORD, {"run_overhead_s": 0.0, "load_save_s_per_param": 0.0})
    cpu = K.cluster_table(report, "quick", (1,))
    assert "on N CPUs (" in cpu and "CPU-hours)" in cpu and "| CPUs | wall-clock hours | CPU-hours / N |" in cpu
    assert "GPU" not in cpu
    jobs = K.grid_jobs(report, "quick")
    untrained = [j for j in jobs if j.name.startswith("05/untrained-")]
    assert untrained and f"({len(jobs)} jobs: " in cpu
    rates = K.Rates.from_report(report)
    assert 0 < rates.encode_passages_per_s < 100  # a CPU encodes a few passages a second
    table = K.cost_table(report, "quick")
    assert f"encoding {rates.encode_passages_per_s:.3g} passages/s" in table
    gpu = K.cluster_table(K.assumed_report(0.4, 989.0, 20000.0), "quick", (1,))
    assert "on N GPUs (" in gpu and "| GPUs | wall-clock hours | GPU-hours / N |" in gpu


#: each notebook's hours on the CPU of CPU_RECORD under the paper profile (no per-run overhead): a change to the CPU
#: pricing's arithmetic moves them
CPU_PINNED = {"01": 14.0118, "02": 16264.8819, "03": 36741.8723, "04": 65602.9157, "05": 1065204.7721, "06": 21772.3726,
              "07": 63118.9404}


def test_each_notebooks_cpu_hours_are_pinned_by_a_fixed_cpu_record():
    _, rows = K.notebook_costs(K.cpu_steps_report(CPU_RECORD, {"run_overhead_s": 0.0, "load_save_s_per_param": 0.0}))
    assert {r["notebook"]: r["hours"] for r in rows} == pytest.approx(CPU_PINNED, rel=1e-6)


@pytest.mark.parametrize("standin", ["distilbert-cased", "mbart50"])
def test_a_timed_step_is_a_record_row_the_cpu_pricing_reads(standin):
    """``overhead --steps`` on a tiny model of each kind (an encoder, an encoder-decoder): 2 steps, the first AdamW
    update apart, and 2 forwards; the row names the hub id the cost model prices."""
    import torch
    from transformers import DistilBertConfig, DistilBertModel, MBartConfig, MBartModel

    from benchmarks.overhead import time_steps

    torch.manual_seed(0)
    model = (DistilBertModel(DistilBertConfig(vocab_size=64, dim=16, n_layers=1, n_heads=2, hidden_dim=32)) if standin == "distilbert-cased"
             else MBartModel(MBartConfig(vocab_size=64, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                                         decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32)))
    row = time_steps(standin, model, "07", 2, 4, 8, repeats=2)
    assert row["model"] == {"distilbert-cased": "distilbert-base-cased", "mbart50": "facebook/mbart-large-50"}[standin]
    assert len(row["train"]["forward_backward_s"]["all"]) == 2 and len(row["train"]["adamw_s"]["all"]) == 1
    assert len(row["eval"]["forward_s"]["all"]) == 2 and row["params"] == sum(p.numel() for p in model.parameters())
    (rates,) = K.cpu_rates({"rows": [row]})
    assert rates["train_flop_s"] == pytest.approx(K.step_flops(row["model"], 2, 8) / row["train"]["forward_backward_s"]["median"])


def test_a_sample_of_the_evaluation_queries_is_priced_in_the_reduced_corpus_and_the_query_encoding(rates):
    """contrastivemix.eval_max_queries: each split's queries cut to N (the tuning split then to tune_max_queries), in the
    reduced corpus's judged + top-100 part and in the query encoding (a query priced as query_max_length /
    passage_max_length of a passage); None: every query."""
    from types import SimpleNamespace as S

    from codeswitch.core.profiles import load_profile

    model = S(query_max_length=32, passage_max_length=128)
    bm25 = S(benchmark="mrtydi", language="ko", report_split="test", tune_split="dev", tune_max_queries=None, eval_max_queries=None)
    whole, n150, n350 = (S(bm25=S(**{**vars(bm25), "eval_max_queries": n}), model=model, depth=100, corpus_sample=1000)
                         for n in (None, 150, 350))
    assert K.eval_queries(whole, K.RETRIEVAL_SIZES) == (421, 303)  # Mr.TyDi ko test, dev
    assert K.eval_queries(n150, K.RETRIEVAL_SIZES) == (150, 150)
    assert K.eval_queries(n350, K.RETRIEVAL_SIZES) == (350, 303)  # a split of N or fewer: whole
    capped = S(bm25=S(**{**vars(n350.bm25), "tune_max_queries": 100}), model=model, depth=100, corpus_sample=1000)
    assert K.eval_queries(capped, K.RETRIEVAL_SIZES) == (350, 100)
    assert K.reduced_passages(n150, K.RETRIEVAL_SIZES, 1.5e6) == 300 * 110 + 1000
    assert K.reduced_passages(n350, K.RETRIEVAL_SIZES, 1.5e6) == 653 * 110 + 1000
    assert K.reduced_passages(S(**{**vars(n150), "corpus_sample": None}), K.RETRIEVAL_SIZES, 1.5e6) == 1.5e6  # whole corpus
    assert K.query_passages(whole, K.RETRIEVAL_SIZES) == 724 * 32 / 128 == 181.0
    assert K.query_passages(n150, K.RETRIEVAL_SIZES) == 75.0
    assert K.query_passages(whole, K.RETRIEVAL_SIZES, reported_only=True) == 421 * 32 / 128  # the untrained baseline's
    # notebook 05 under quick: the sample's evaluations encode fewer passages, its trainings are unchanged
    full = K.retrieval_hours(load_profile("quick", {"contrastivemix.eval_max_queries": None}), rates)  # every query
    sampled = K.retrieval_hours(load_profile("quick", {"contrastivemix.eval_max_queries": 150}), rates)
    assert sampled["train_hours"] == full["train_hours"] and sampled["runs"] == full["runs"] == 39
    assert sampled["encode_hours"] == pytest.approx(0.04548, abs=6e-6) and full["encode_hours"] == pytest.approx(0.19875, abs=6e-6)
