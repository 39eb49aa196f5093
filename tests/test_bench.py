"""The benchmark harness: FLOPs by hand, length distributions, and the CI-sized run end to end."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
import torch

from benchmarks import lengths as L
from benchmarks.measure import FlopModel, Measurement, markdown_table, peak_for_name


# --------------------------------------------------------------------------- FLOPs and peaks
def test_flops_by_hand():
    from transformers import BertConfig, BertModel

    H, I, layers = 16, 40, 3
    model = BertModel(BertConfig(vocab_size=100, hidden_size=H, num_hidden_layers=layers, num_attention_heads=2, intermediate_size=I))
    fm = FlopModel.of(model)
    # per layer: Q, K, V, attention output (4 · H²) and the two feed-forward matrices (2 · H · I)
    assert fm.linear == layers * (4 * H * H + 2 * H * I)
    assert (fm.layers, fm.hidden) == (layers, H)
    # two sequences of 3 and 5 tokens: 2·N·8 + 4·ℓ·H·(3² + 5²); training is three times that
    want = 2 * fm.linear * 8 + 4 * layers * H * (9 + 25)
    assert fm.forward([3, 5]) == want
    assert fm.train(torch.tensor([3, 5])) == 3 * want


def test_peak_table_order():
    assert peak_for_name("NVIDIA H200") == 989.0
    assert peak_for_name("NVIDIA H100 80GB HBM3") == 989.0
    assert peak_for_name("NVIDIA H100 PCIe") == 756.0  # not the SXM figure
    assert peak_for_name("NVIDIA A100-SXM4-80GB") == 312.0
    assert peak_for_name("NVIDIA GeForce GTX 1080") is None


def test_cpu_table_has_no_mfu():
    row = Measurement("a", "(a) x", "m", "b", steps=1, step_time_s=0.5, sequences_per_s=2.0, tokens_per_s=10.0, padding=0.25,
                      tflops=0.1, mfu=None, peak_mem_gib=1.0, speedup=3.0)
    cpu, gpu = markdown_table([row], cpu=True), markdown_table([row], cpu=False)
    assert "MFU" not in cpu and "MFU" in gpu and "peak host RSS" in cpu
    assert "| 500.0 |" in cpu and "25.0 %" in cpu and "3.00×" in cpu


# --------------------------------------------------------------------------- length distributions
def test_histogram_and_lognormal():
    d = L.LengthDist.from_histogram("x", {"3": 1, "10": 3})
    assert d.values.tolist() == [3, 10] and d.probs.tolist() == [0.25, 0.75]
    assert d.mean(max_length=8) == pytest.approx(0.25 * 3 + 0.75 * 8)  # truncation at 8
    s = d.sample(4000, np.random.default_rng(0), max_length=8)
    assert set(s.tolist()) == {3, 8} and abs((s == 8).mean() - 0.75) < 0.03
    ln = L.LengthDist.lognormal("y", median=20, sigma=0.5, low=1, high=400)
    assert ln.probs.sum() == pytest.approx(1.0)
    assert np.interp(0.5, np.cumsum(ln.probs), ln.values) == pytest.approx(20, abs=1)
    with pytest.raises(ValueError, match="empty"):
        L.LengthDist.from_histogram("z", {})


def test_shipped_table_is_complete_and_never_constant():
    cols = L.nli_columns()
    assert sorted(cols) == sorted(L.NLI_COLUMNS.values())
    for d in [*cols.values(), L.glue_pairs(), L.mrtydi("queries"), L.mrtydi("passages")]:
        assert len(d.values) > 5 and d.probs.max() < 0.5, d.name  # a spread of lengths, not one
    # code-switched Korean is longer in tokens than the English it replaces
    assert cols["cs_premise"].mean(64) > cols["premise"].mean(64)
    assert 8 < L.mrtydi("queries").mean(32) < 32 and L.mrtydi("passages").mean(128) > 64


def test_token_batch():
    b = L.token_batch(np.array([2, 5, 3]), 50, np.random.default_rng(0), cls_id=2, sep_id=3, pad_id=0)
    assert b["input_ids"].shape == (3, 5) and b["attention_mask"].sum(1).tolist() == [2, 5, 3]
    assert b["input_ids"][:, 0].tolist() == [2, 2, 2] and b["input_ids"][1, 4] == 3 and b["input_ids"][2, 3:].tolist() == [0, 0]
    assert L.token_batch(np.array([2]), 50, np.random.default_rng(0), cls_id=2, sep_id=3, pad_id=0, pad_to=7)["input_ids"].shape == (1, 7)


def test_length_histograms_from_a_koglish_folder(shared_data, backbones_dir):
    from transformers import AutoTokenizer

    from codeswitch.core.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("tiny-bert"))
    entries = L.koglish_histograms(str(shared_data / "koglish_sample"), tok, max_rows=20)
    nli = entries["koglish_nli"]["columns"]
    assert sorted(nli) == sorted(L.NLI_COLUMNS.values()) and all(sum(h.values()) == 20 for h in nli.values())
    glue = entries["koglish_glue_pairs"]
    assert sorted(glue["tasks"]) == sorted(L.GLUE_PAIR_TASKS)
    assert all(sum(h.values()) == 40 for h in glue["tasks"].values())  # 20 pairs in English + 20 code-switched
    assert glue["weights"]["qnli"] == 61764.0  # ConCSE Table 1


def test_length_histograms_from_the_alignment_and_calbert_folders(shared_data, backbones_dir):
    """The alignment entry counts each side of the IITB pairs (both scripts), the CalBERT one each task's training
    sentences as the paper profile's models read them (IITP romanised: another histogram than its Devanagari text);
    the shipped table holds both entries, readable as distributions."""
    from transformers import AutoTokenizer

    from codeswitch.core.models import resolve_model

    tok = AutoTokenizer.from_pretrained(resolve_model("tiny-bert"))
    align = L.alignment_histograms(str(shared_data / "cfilt_en_hi"), tok, max_rows=20)["alignment_pairs"]
    assert sorted(align["scripts"]) == ["devanagari", "roman"]
    for script in align["scripts"].values():
        assert tuple(script) == L.ALIGNMENT_SIDES and all(sum(h.values()) == 20 for h in script.values())
    assert align["scripts"]["devanagari"]["english"] == align["scripts"]["roman"]["english"]  # one English side
    assert align["scripts"]["devanagari"]["hindi"] != align["scripts"]["roman"]["hindi"]
    folders = {"sail": str(shared_data / "sail2017"), "iitp": str(shared_data / "iitp_product_reviews")}
    calbert = L.calbert_histograms(folders, tok, max_rows=30, name="a tokenizer")["calbert_finetune"]
    assert sorted(calbert["tasks"]) == sorted(L.CALBERT_TASKS) and all(sum(h.values()) == 30 for h in calbert["tasks"].values())
    assert "iitp: 30 of iitp_product_reviews, romanised" in calbert["source"] and "tokenizer a tokenizer" in calbert["source"]
    for script in ("devanagari", "roman"):
        assert all(d.mean(128) > 2 for d in L.alignment_sides(script).values())
    assert all(L.calbert_task(task).mean(128) > 2 for task in L.CALBERT_TASKS)
    with pytest.raises(KeyError, match="no task 'gluecos'"):
        L.calbert_task("gluecos")


def test_grouped_batches_are_sorted_within_megabatches():
    from benchmarks.hotpaths import _grouped

    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 100, size=2 * 50 * 4)
    batches = _grouped(lengths, 4, rng)
    assert len(batches) == 100 and sorted(np.concatenate(batches).tolist()) == sorted(lengths.tolist())
    assert np.mean([b.max() - b.min() for b in batches]) < 5  # neighbours in length share a batch


# --------------------------------------------------------------------------- the harness, CI-sized
@pytest.fixture(scope="module")
def ci_run(tmp_path_factory, backbones_dir):
    from benchmarks import run

    out = tmp_path_factory.mktemp("bench")
    rows, report = run(["--threads", "1", "--steps", "2", "--warmup", "1", "--out", str(out)])
    return rows, report, out


def test_ci_run_measures_every_hot_path(ci_run):
    rows, report, out = ci_run
    by = {r.key: r for r in rows}
    assert list(by) == ["host", "a", "a_ref", "a_pk", "b", "b_pk", "b_hf", "b_hf_pk", "b_rnd", "c", "c_pk", "c_sep", "d", "d_srt",
                        "e", "e_pk", "f", "f_pk", "t_a", "t_d"]
    speed = by.pop("host")  # µs per torch.empty, 64³ matmul and Python call: numbers in extra, no step columns
    assert speed.status == "ok" and speed.step_time_s is None
    assert all(0 < speed.extra[k] < 1e4 for k in ("empty_us", "matmul64_us", "python_call_us"))
    assert speed.extra["python_call_us"] < speed.extra["matmul64_us"]  # a call is cheaper than a matmul dispatch
    rows = [r for r in rows if r.key != "host"]
    for r in rows:
        assert r.status == "ok", (r.key, r.status)
        host = r.key.startswith("t_")  # host-side rows: no model FLOPs
        for v in (r.step_time_s, r.sequences_per_s, r.tokens_per_s) + (() if host else (r.tflops,)):
            assert v is not None and math.isfinite(v) and v > 0, r.key
        assert 0 <= r.padding < 1 and r.mfu is None  # CPU: no peak, no MFU
        assert (r.tflops is None) == host
    # (a) and its reference ran the same sentences: same tokens per step, the reference pads every column to the maximum
    a, ref = by["a"], by["a_ref"]
    assert a.tokens_per_s / a.sequences_per_s == pytest.approx(ref.tokens_per_s / ref.sequences_per_s)
    assert ref.padding > a.padding
    assert ref.speedup == 1.0 and a.speedup == pytest.approx(ref.step_time_s / a.step_time_s)
    assert by["b"].padding < by["b_rnd"].padding  # length grouping (the trainer's batches) removes padding
    assert by["d_srt"].padding <= by["d"].padding
    # the Trainer rows count what the Trainer fed its model: batches of 4 (e) and of the GLUE batch (b_hf)
    assert by["e"].steps == 2 and by["e"].sequences_per_s * by["e"].step_time_s == pytest.approx(4)
    assert by["b_hf"].sequences_per_s * by["b_hf"].step_time_s == pytest.approx(report["sizes"]["glue_batch"])
    assert by["f"].sequences_per_s * by["f"].step_time_s == pytest.approx(16)  # 8 pairs, two sides
    # each packed row ran its padded row's sentences (same sequences and tokens per step), in R × 256 positions
    for padded, packed in (("a", "a_pk"), ("b", "b_pk"), ("c", "c_pk"), ("f", "f_pk"), ("b_hf", "b_hf_pk"), ("e", "e_pk")):
        p, q = by[padded], by[packed]
        per_step = lambda r, v: v * r.step_time_s  # noqa: E731
        assert per_step(q, q.sequences_per_s) == pytest.approx(per_step(p, p.sequences_per_s)), packed
        if packed not in ("b_hf_pk", "e_pk"):  # the Trainer rows draw their own batches: same sizes, other texts
            assert per_step(q, q.tokens_per_s) == pytest.approx(per_step(p, p.tokens_per_s)), packed
        tokens = per_step(q, q.tokens_per_s)
        positions = tokens / (1 - q.padding)
        assert positions == pytest.approx(256 * round(positions / 256)), packed  # whole rows of 256 tokens
    assert by["a_pk"].speedup == pytest.approx(by["a_ref"].step_time_s / by["a_pk"].step_time_s)  # against the same reference
    saved = json.loads((out / "bench.json").read_text())
    assert [m["key"] for m in saved["measurements"]] == ["host", *by] and saved["environment"]["device_type"] == "cpu"
    assert "| (a) ConCSE step |" in (out / "bench.md").read_text()


def test_device_time_is_the_profilers_total_not_a_sum_over_rows():
    """An operator's row carries its kernels' device time, and the kernels have rows of their own: only device events count."""
    from types import SimpleNamespace

    from torch.autograd import DeviceType

    from benchmarks.measure import device_time_us

    rows = [
        SimpleNamespace(device_type=DeviceType.CPU, self_device_time_total=100.0, is_user_annotation=False),  # aten::mm
        SimpleNamespace(device_type=DeviceType.CUDA, self_device_time_total=100.0, is_user_annotation=False),  # its kernel
        SimpleNamespace(device_type=DeviceType.CUDA, self_device_time_total=30.0, is_user_annotation=False),  # a copy
        SimpleNamespace(device_type=DeviceType.CUDA, self_device_time_total=130.0, is_user_annotation=True),  # a range
    ]
    assert device_time_us(rows) == 130.0


def test_sorted_windows_are_timed_without_bias():
    """(d_srt) times every position of a sorted window equally often, not the longest batches of the first window."""
    from benchmarks.hotpaths import sorted_window_batches

    dist = L.mrtydi("passages")
    rng = np.random.default_rng(0)
    window, batch = 8, 16
    batches, positions = sorted_window_batches(dist, 4 * window, batch, window, 128, rng)
    assert sorted(positions) == sorted(list(range(window)) * 4)  # each position 4 times in 32 batches
    assert all(np.all(np.diff(b) <= 0) for b in batches)  # sorted within the window, longest first
    # the mean length of the timed passages is the distribution's (the first batches of a window would be the longest)
    assert np.mean(np.concatenate(batches)) == pytest.approx(dist.mean(128), rel=0.05)


def test_interleave_alternates_the_settings_in_one_process():
    from contextlib import contextmanager

    from benchmarks.measure import Step, interleave

    seen, state = [], {"on": None}

    def setting(on):
        @contextmanager
        def cm():
            state["on"] = on
            yield
            state["on"] = None
        return cm

    def step(i):
        seen.append((state["on"], i))
        return Step(1, 1, 1, 0.0)

    res = interleave(step, {"A": setting("A"), "B": setting("B")}, device=torch.device("cpu"), first=3, steps=2, rounds=5)
    # each round: one warm-up step then steps 3 and 4, A before B, five times
    assert seen == [(x, i) for _ in range(5) for x in "AB" for i in (3, 3, 4)]
    assert len(res["ms"]["A"]) == len(res["ms"]["B"]) == len(res["ratio_b_over_a"]) == 5
    assert res["median_ratio"] == sorted(res["ratio_b_over_a"])[2]
    with pytest.raises(ValueError, match="two settings"):
        interleave(step, {"A": setting("A")}, device=torch.device("cpu"), first=0, steps=1)


def test_ab_command_compares_fill_interleaved(backbones_dir, tmp_path):
    from benchmarks.__main__ import ab

    report = ab(["--compare", "fill", "--threads", "1", "--paths", "d", "--steps", "1", "--warmup", "1", "--rounds", "2",
                 "--out", str(tmp_path)])
    (res,) = report["results"]
    assert res["key"] == "d" and (res["a"], res["b"]) == ("fill_on", "fill_off") and len(res["ms"]["fill_on"]) == 2
    assert all(v > 0 for v in res["ms"]["fill_on"] + res["ms"]["fill_off"])
    assert json.loads((tmp_path / "ab_fill.json").read_text())["comparison"] == "fill"
    assert not torch.utils.deterministic.fill_uninitialized_memory  # the trainers' setting is back afterwards


def test_missing_module_is_reported_unavailable(monkeypatch, backbones_dir):
    from benchmarks import run

    monkeypatch.setitem(sys.modules, "codeswitch.core.encoders", None)  # as if the encoder did not exist yet
    rows, _ = run(["--threads", "1", "--steps", "1", "--warmup", "0", "--paths", "d"])
    assert rows[0].status.startswith("unavailable") and "codeswitch.core.encoders" in rows[0].status


CG_PATHS = ("a_pk_cg", "c_pk_cg", "e_pk_cg", "f_pk_cg")


def test_cuda_graph_rows_are_skipped_on_a_cpu(backbones_dir):
    """The ``_cg`` rows (``torch_compile: reduce-overhead``) need a CUDA device: on a CPU each says so, and a full-size
    run does not fail for them."""
    from benchmarks.__main__ import main

    assert main(["--threads", "1", "--paths", ",".join(CG_PATHS), "--full", "--device", "cpu"]) == 0
    from benchmarks import run

    rows, _ = run(["--threads", "1", "--paths", ",".join(CG_PATHS)])
    assert [r.key for r in rows] == list(CG_PATHS)
    assert all(r.status == "skipped: CUDA graphs need a CUDA device" and r.step_time_s is None for r in rows)


def test_fastest_step_counts_the_cuda_graph_row():
    """The targets read the fastest variant a trainer can run: CUDA graphs (``_pk_cg``) are one; a skipped row is not."""
    from benchmarks.cost import fastest_step

    rows = {"e": {"step_time_s": 0.115}, "e_pk": {"step_time_s": 0.082}, "e_pk_cg": {"step_time_s": 0.004}}
    assert fastest_step(rows, "e") is rows["e_pk_cg"]
    rows["e_pk_cg"] = {"step_time_s": None, "status": "skipped: CUDA graphs need a CUDA device"}
    assert fastest_step(rows, "e") is rows["e_pk"]


def test_cuda_graph_rows_compile_in_reduce_overhead_and_mark_every_step(backbones_dir, monkeypatch):
    """What a ``_cg`` row runs on a GPU, on the CPU: ``torch.compile`` recorded (returning the eager function), the CUDA
    check bypassed.  Each row compiles its trainer's model once in reduce-overhead with static whole graphs, and
    marks every step it runs: each budget's first step ``CG_CALLS`` times before the clock, then the timed ones."""
    import benchmarks.hotpaths as H
    from benchmarks import run

    calls, marks = [], []
    monkeypatch.setattr(H, "_cuda_graphs_skipped", lambda *a, **kw: None)
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: calls.append(kw) or fn)
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    for key in CG_PATHS:
        calls.clear()
        marks.clear()
        (row,) = run(["--threads", "1", "--steps", "2", "--warmup", "1", "--paths", key])[0]
        assert row.key == key and row.status == "ok" and row.step_time_s > 0, (key, row.status)
        assert "CUDA graphs" in row.path and "reduce-overhead" in row.note
        assert calls == [{"dynamic": False, "fullgraph": True, "mode": "reduce-overhead"}], key
        if key == "e_pk_cg":  # the Trainer's loop: its warm-up grows by CG_CALLS steps per budget (≤ 4)
            assert len(marks) == 1 + 4 * H.CG_CALLS + 2
        else:  # prewarmed budgets, then the harness's warm-up and timed steps
            assert len(marks) > 3 and (len(marks) - 3) % H.CG_CALLS == 0, (key, len(marks))


# --------------------------------------------------------------------------- the cost estimate
def test_cost_estimate_follows_the_paper_grids():
    from benchmarks.cost import LINEAR_PARAMS, Rates, concse_hours, cost_table, glue_hours, retrieval_hours
    from codeswitch.core.profiles import load_profile

    paper = load_profile("paper")
    base = LINEAR_PARAMS["bert-base-multilingual-uncased"]
    r = 1e-4  # seconds per training sentence (mBERT-base)
    rates = Rates(concse_s_per_sentence=r, concse_linear=base, glue_s_per_token=1e-6, glue_linear=LINEAR_PARAMS["xlm-roberta-large"],
                  ir_s_per_step=0.05, ir_batch=128, encode_passages_per_s=20000.0, device="test", full=True)
    t3, t4 = concse_hours(paper, rates)
    assert (t3["runs"], t4["runs"]) == (3 * 2 * 5, 19 * 5)  # Table 3: 3 backbones × 2 methods × 5 seeds; 21 ablation runs a seed, 2 in Table 3
    # Table 3 by hand: each run's steps (epochs × batches of Koglish-NLI's 218,255 rows), each step its batch's sentences
    # (ConCSE 6, SimCSE 3 a row) at r per sentence, scaled per backbone and by the run's max length against (a)'s 64
    # (no fixed cost in these rates); evaluation: STS-B dev each epoch and the seven test sets once (Table 1), both
    # sentences of a pair, at a third of the cost
    from benchmarks import lengths as L
    from codeswitch import concse as C

    cols_len = L.nli_columns()
    lf = lambda n: sum(d.mean(n) for d in cols_len.values()) / sum(d.mean(64) for d in cols_len.values())  # noqa: E731
    eval_sentences = 2 * (3334 * 5 + (3334 + 2142 + 622 + 1561 + 1351 + 496 + 4767))
    want = 0.0
    for spec in C.plan(paper, ["table3"]):
        q = LINEAR_PARAMS[spec.model] / base
        cols = 6 if spec.method == "concse" else 3
        steps = 5 * -(-218255 // spec.batch_size)
        want += (steps * cols * spec.batch_size * r * q * lf(spec.max_length) + eval_sentences * r * q * lf(spec.max_length) / 3) / 3600
    assert t3["hours"] == pytest.approx(want)
    assert glue_hours(paper, rates)["runs"] == 6 * 4 * 5 * 2  # tasks × backbones × seeds × (English, code-switched) trainings
    cm = retrieval_hours(paper, rates)
    assert cm["runs"] == 5 * (1 + 2 * 13 + 4 * 6)  # per seed: mDPR, NaiveMix and ContrastiveMix per target language, 4 ablations × 6
    # groups per step (query, positive, negative + ContrastiveMix's code-mixed copies), per seed: mDPR, 13 NaiveMix and
    # 12 NaiveMix ablations (3 groups), 13 query-side ContrastiveMix (4), 6 passage-side (5), 6 mixing both sides (6)
    assert cm["groups"] == {3: 5 * 26, 4: 5 * 13, 5: 5 * 6, 6: 5 * 6}
    # (c) encodes 4 groups; these rates count one token per query and per passage, so a step costs groups / 4 of (c)'s
    step_s = 0.05 * (26 * 3 + 13 * 4 + 6 * 5 + 6 * 6) / 4
    assert cm["train_hours"] == pytest.approx(5 * 40 * (58880 // 128) * step_s / 3600)
    table = cost_table({"environment": {"device": "x"}, "sizes": {"concse_batch": 128, "ir_batch": 128},
                        "models": {"concse": {"num_hidden_layers": 12, "hidden_size": 768, "intermediate_size": 3072},
                                   "glue": {"num_hidden_layers": 24, "hidden_size": 1024, "intermediate_size": 4096}, "layers_cap": None},
                        "measurements": [{"key": "a", "status": "ok", "step_time_s": 768 * r}, {"key": "b", "status": "ok", "tokens_per_s": 1e6},
                                         {"key": "c", "status": "ok", "step_time_s": 0.05}, {"key": "d", "status": "ok", "sequences_per_s": 2e4}]})
    assert "| 03 | ConCSE vs SimCSE (Table 3) | 30 |" in table and "**all**" in table
    assert "fixed cost per step: not measured (no (e) row)" in table


def test_contrastivemix_groups_per_method():
    from types import SimpleNamespace as S

    from benchmarks.cost import ir_groups

    assert ir_groups(S(method="mdpr", mix_query=False, mix_passage=False, passage_align=None)) == (1, 2)
    assert ir_groups(S(method="naivemix", mix_query=True, mix_passage=True, passage_align=None)) == (1, 2)  # mixes in place
    assert ir_groups(S(method="contrastivemix", mix_query=True, mix_passage=False, passage_align=None)) == (2, 2)
    assert ir_groups(S(method="contrastivemix", mix_query=False, mix_passage=True, passage_align="positives")) == (1, 3)
    assert ir_groups(S(method="contrastivemix", mix_query=True, mix_passage=True, passage_align="all")) == (2, 4)  # six groups


def test_fixed_cost_per_step_from_the_calbert_row():
    """(e) gives the fixed cost of a step per layer; (b)'s per-token rate is its whole step's (a step costs the larger of
    the two, never both); small-batch runs pay the fixed cost per step."""
    from benchmarks.cost import Rates, assumed_report, calbert_hours, _calbert_profile

    report = assumed_report(0.4, 989.0, 20000.0)
    free = Rates.from_report(report)
    assert free.floor_s_per_layer == 0.0
    floored = Rates.from_report(assumed_report(0.4, 989.0, 20000.0, floor_s_per_step=0.012))
    assert floored.floor_s_per_layer == pytest.approx(0.001)  # 12 ms over XLM-R base's 12 layers
    # a report with (b)'s step: the per-token rate is the whole step's (issue 40: it was netted, then the floor added again)
    b = {"key": "b", "status": "ok", "tokens_per_s": 1000.0, "step_time_s": 0.1}  # 100 tokens a step
    e = {"key": "e", "status": "ok", "step_time_s": 0.012, "extra": {"layers": 12}}
    rep = dict(report, measurements=[m for m in report["measurements"] if m["key"] not in "be"] + [b, e])
    r = Rates.from_report(rep)
    assert r.glue_s_per_token == pytest.approx(1 / 1000.0)
    profile = _calbert_profile("paper", None)
    c0, c1 = calbert_hours(profile, free), calbert_hours(profile, floored)
    assert c0["steps"] == c1["steps"] and c1["finetune_steps_small_batch"] > 7_000_000  # CalBERT: ~7.8 M steps at batch ≤ 8 (SAIL: 8 samples a step)
    # every step pays at least its floor (12 ms for a 12-layer backbone; DistilBERT and the scratch models have fewer layers)
    assert c1["hours"] - c0["hours"] > 0.5 * c1["steps"] * 0.012 / 3600


def test_counted_steps_follow_each_notebooks_plan():
    """The cost model's optimiser steps per notebook equal those of its plan's runs: epochs × batches of the training rows.

    Counted here from the plans directly (each run's batch size and epochs, the papers' training rows), so a change of
    a plan, a batch size or an epoch count that the cost model missed fails this test.
    """
    import math

    from benchmarks.cost import RETRIEVAL_SIZES, SIZES_0607, _calbert_profile, _calbert_split_sizes, _table1, assumed_report, notebook_costs
    from codeswitch import alignment as A
    from codeswitch import calbert as C
    from codeswitch import concse as CC
    from codeswitch.contrastivemix import experiment as X
    from codeswitch.contrastivemix.config import TrainRun, load as cm_load
    from codeswitch.core.profiles import load_profile, seeds_for
    from codeswitch.glue import config as GC
    from codeswitch.glue.train import training_runs

    paper = load_profile("paper")
    _, rows = notebook_costs(assumed_report(0.4, 989.0, 20000.0))
    steps = {r["notebook"]: r["steps"] for r in rows}

    def per_epoch(rows_, batch):
        return math.ceil(rows_ / batch)

    nli = _table1("NLI/NLI", "Train")
    t3 = {s.key_hash(): s for s in CC.plan(paper, ["table3"])}
    abl = [s for h, s in {s.key_hash(): s for s in CC.plan(paper, CC.ABLATIONS)}.items() if h not in t3]
    assert steps["03"] == sum(s.num_train_epochs * per_epoch(nli, s.batch_size) for s in t3.values())
    assert steps["04"] == sum(s.num_train_epochs * per_epoch(nli, s.batch_size) for s in abl)

    g = GC.load(paper)
    assert steps["02"] == sum(g.num_train_epochs * per_epoch(_table1(f"GLUE/{G}", "Train"), bb.batch_size)
                              for t, G in {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "stsb": "STS-B", "qnli": "QNLI",
                                           "rte": "RTE"}.items() if t in g.tasks
                              for bb in g.backbones for _ in seeds_for(paper, g.seeds) for _ in training_runs(g.scenarios))

    c = cm_load(paper)
    models = [s for s in X.plan(paper) if isinstance(s, TrainRun)]
    assert steps["05"] == len(models) * c.num_train_epochs * ((c.train_max_queries or RETRIEVAL_SIZES["nq_train_queries"]) // c.batch_size)

    aligns, fine, _ = (st.specs for st in A.stages(paper))
    assert steps["06"] == (sum(a.num_train_epochs * per_epoch(a.train_size, a.batch_size) for a in aligns if a.data == "parallel")
                           + sum(a.num_train_epochs * per_epoch(SIZES_0607["muse_train_entries"], a.batch_size) for a in aligns if a.data == "lexicon")
                           + sum(f.num_train_epochs * per_epoch(SIZES_0607["gluecos"][f.task][0], f.batch_size) for f in fine))

    pre, cfine = (st.specs for st in C.stages(_calbert_profile("paper", None)))
    want = sum(math.ceil(p.num_train_epochs * per_epoch(round(p.max_pairs * (p.sample_fraction or 1.0)), p.batch_size)) for p in pre)
    want += sum(math.ceil(f.num_train_epochs * per_epoch(_calbert_split_sizes(f.task)[0], f.batch_size)) for f in cfine)
    assert steps["07"] == want
    assert steps["01"] == 0  # translation only: no training


def test_cost_table_takes_profile_overrides():
    """`cost --set` changes the grid the estimate is made for, as reproduce.sh --set changes the run."""
    from benchmarks.cost import assumed_report, cost_table

    report = assumed_report(0.4, 989.0, 20000.0)
    full = cost_table(report, "paper")
    fewer = cost_table(report, "paper", overrides={"contrastivemix.ablations": False})
    assert "| 05 | ContrastiveMix (Tables 1-4) | 255 |" in full
    assert "| 05 | ContrastiveMix (Tables 1-4) | 135 |" in fewer  # 5 seeds × (mDPR + 2 × 13 target languages)
    assert '--set contrastivemix.ablations=false' in fewer.splitlines()[0]


def test_profile_writes_one_operator_table_per_path(tmp_path, backbones_dir, monkeypatch):
    """``--profile DIR``: after timing, each path's steps are profiled into DIR/<path>.txt (operators by time)."""
    from benchmarks import run

    monkeypatch.setenv("CODESWITCH_BENCH_PROFILE", "")  # restored (to absent) after the test: run() sets it
    rows, _ = run(["--threads", "1", "--steps", "1", "--warmup", "0", "--paths", "d", "--profile", str(tmp_path / "prof")])
    assert [r.status for r in rows] == ["ok"]
    files = sorted((tmp_path / "prof").glob("*.txt"))
    assert len(files) == 1 and files[0].name.startswith("d_")
    text = files[0].read_text(encoding="utf-8")
    assert text.startswith("# d (d) corpus encoding\n3 steps, wall ")
    assert "## by host time" in text and "aten::" in text  # a real operator table, not an empty file
