"""`python -m benchmarks record`: the README's performance tables come from measurement files, never by hand."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import record as R
from benchmarks.cost import REDUCED, assumed_report, notebook_costs, overhead_fields


def gpu_report(*, mfu_a=0.45, mfu_b=0.30, speedup=6.0, d_rate=25_000.0, device_type="cuda") -> dict:
    """A report shaped like `bench --full` on a GPU (the rates of 40 % MFU; the MFU cells are set by hand)."""
    rep = assumed_report(0.4, 989.0, d_rate)
    rep["environment"] = {"device": "NVIDIA H200", "device_type": device_type, "date": "2026-01-01", "torch": "2.x",
                          "cuda": "13.0", "transformers": "5.x", "python": "3.12", "autocast": "bfloat16", "peak_bf16_tflops": 989.0}
    rep["sizes"]["concse_batch"] = 128
    rep["command"] = "python -m benchmarks --full --compile --out X"
    rows = {m["key"]: m for m in rep["measurements"]}
    rows["a"].update(mfu=mfu_a, speedup=speedup)
    rows["b"].update(mfu=mfu_b, step_time_s=0.025)
    rep["measurements"].append({"key": "a_ref", "status": "ok", "step_time_s": rows["a"]["step_time_s"] * speedup})
    rep["table_markdown"] = "| path | … |\n|---|---|\n| (a) | fake |"
    return rep


def memory_report(rate=18_000.0, peak_mb=2500.0, passages=1_000_000, device="NVIDIA H200") -> dict:
    return {"passages": passages, "passages_per_second": rate, "peak_rss_mb": peak_mb, "device": device, "hidden_size": 768,
            "shape": [passages, 768], "expected_shape": [passages, 768], "zero_rows": 0, "nonfinite_rows": 0,
            "table_markdown": "| passages | … |\n|---|---|\n| 1,000,000 | fake |", "command": "python -m benchmarks memory X"}


def blocks(text: str, name: str) -> str:
    return text.split(f"<!-- bench:{name} -->\n", 1)[1].split(f"<!-- /bench:{name} -->", 1)[0]


def test_committed_tables_are_up_to_date(capsys):
    """The README, docs/cost.md and docs/performance.md hold exactly what `record` makes of docs/bench/ and the paper profile."""
    assert R.main(["--check"]) == 0, capsys.readouterr().out[-3000:]


def test_cost_block_numbers_are_the_cost_model():
    m = R.Measurements(gpu=None, gpu_memory=None, cpu_memory=None, smoke=None)
    text = R.cost_block(m)
    # issue 24's targets: (a) 33 %, (b) 27 %, (c) 35 % MFU, 20k passages/s, (e) in 4 ms
    at_targets = R._assumed(R.ASSUMED, m)
    assert at_targets == assumed_report({"a": 0.33, "b": 0.27, "c": 0.35}, 989.0, 20_000.0, floor_s_per_step=0.004,
                                        **overhead_fields())
    rows = notebook_costs(at_targets)[1]
    total = sum(r["hours"] for r in rows)
    # 100 % MFU (attention included), AdamW at the H100's 3.35 TB/s, no fixed cost per step or run
    physical = notebook_costs(assumed_report(1.0, 989.0, None, bytes_per_s=3.35e12))[1]
    phys = sum(r["hours"] for r in physical)
    assert 30 < phys < 50 and phys < total  # the full grid's model FLOPs (attention included) and AdamW's memory traffic
    assert (f"| **all** | {sum(r['runs'] for r in rows)} | {sum(r['steps'] for r in rows):,} | **{phys:.1f}** | "
            in text) and f"| **{total:.1f}** |" in text
    reduced = notebook_costs(at_targets, overrides=REDUCED)[1]
    assert f"**{sum(r['hours'] for r in reduced):.1f}** ({sum(r['runs'] for r in reduced)} runs)" in text
    assert "| **–** | **–** |" in text and "not yet" in text  # nothing measured: said, not invented


def test_the_targets_column_prices_each_step_at_its_own_mfu_target():
    """(a), (b), (c) at 33 %, 27 %, 35 % MFU: each path's step time is its FLOPs at its own rate, and a notebook priced
    from (b) (02) costs 0.40 / 0.27 of its price at one 40 % MFU; `--assume-mfu` reads both forms and refuses a partial map."""
    from benchmarks.cost import parse_mfu

    assert R.ASSUMED["mfu"] == {"a": 0.33, "b": 0.27, "c": 0.35}
    one = {m["key"]: m for m in assumed_report(0.4, 989.0, 20_000.0)["measurements"]}
    per = {m["key"]: m for m in assumed_report(R.ASSUMED["mfu"], 989.0, 20_000.0)["measurements"]}
    assert per["a"]["step_time_s"] == pytest.approx(one["a"]["step_time_s"] * 0.40 / 0.33)
    assert per["c"]["step_time_s"] == pytest.approx(one["c"]["step_time_s"] * 0.40 / 0.35)
    assert per["b"]["tokens_per_s"] == pytest.approx(one["b"]["tokens_per_s"] * 0.27 / 0.40)
    h_one = {r["notebook"]: r["hours"] for r in notebook_costs(assumed_report(0.4, 989.0, 20_000.0))[1]}
    h_per = {r["notebook"]: r["hours"] for r in notebook_costs(assumed_report(R.ASSUMED["mfu"], 989.0, 20_000.0))[1]}
    assert h_per["02"] == pytest.approx(h_one["02"] * 0.40 / 0.27)
    assert parse_mfu("0.4") == 0.4 and parse_mfu("a=0.33,b=0.27,c=0.35") == {"a": 0.33, "b": 0.27, "c": 0.35}
    with pytest.raises(ValueError, match="missing: c"):
        parse_mfu("a=0.3,b=0.3")
    with pytest.raises(ValueError, match="unknown hot path 'd'"):
        parse_mfu("a=0.3,b=0.3,c=0.3,d=0.3")


def test_cost_table_has_rows_for_01_06_07():
    from benchmarks.cost import cost_table

    rows = {r["notebook"]: r for r in notebook_costs(assumed_report(0.4, 989.0, 20_000.0))[1]}
    assert sorted(rows) == ["01", "02", "03", "04", "05", "06", "07"]
    for nb in ("01", "06", "07"):
        assert math.isfinite(rows[nb]["hours"]) and rows[nb]["hours"] > 0, rows[nb]
    assert rows["01"]["hours"] < 0.5  # 2,000 items per task through NLLB: minutes, not hours
    assert rows["06"]["not_counted"] == 0  # the MUSE lexicon alignments are priced (the released files' 30,577 entries)
    assert rows["06"]["hours"] == pytest.approx(rows["06"]["align_hours"] + rows["06"]["finetune_hours"])
    assert rows["07"]["hours"] == pytest.approx(rows["07"]["pretrain_hours"] + rows["07"]["finetune_hours"])
    text = cost_table(assumed_report(0.4, 989.0, 20_000.0))
    assert "| 07 | CalBERT" in text and "not counted" not in text
    m = R.Measurements(gpu=None, gpu_memory=None, cpu_memory=None, smoke=None)
    assert "| 07 CalBERT | 436 |" in R.cost_block(m)


def test_recorded_gpu_run_fills_the_tables(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "bench.json").write_text(json.dumps(gpu_report()))
    (run / "memory.json").write_text(json.dumps(memory_report()))
    (run / "bench.log").write_text("log")
    written = R.import_run([run], dest=tmp_path / "bench")
    assert {p.name for p in written} >= {"bench.json", "memory.json", "bench.log"}
    m = R.Measurements.load(tmp_path / "bench")
    assert m.encode_rate == 18_000.0

    targets = R.targets_block(m)
    lines = {ln.split(" | ")[0].split(":")[0]: ln for ln in targets.splitlines()}
    a, b = lines["| (a) ConCSE step"], lines["| (b) Koglish-GLUE step"]
    assert "45.0% MFU" in a and "30.0% MFU" in b
    assert "25.0 ms" in b and b.endswith("| **met** |")  # 25 ms and 30 % MFU: within 30 ms and 27 %
    assert "6.00× the released-code row" in a and a.endswith("**not met** |")  # fast enough, but 6× is short of 20×
    assert lines["| (c) ContrastiveMix step"].endswith("not measured |")  # no MFU in the fake (c) row
    # device side 25,000/s but end to end 18,000/s: the slower one decides
    assert "end to end (texts → file) 18,000/s" in lines["| (d) ≥ 20,000 passages/s (mBERT-base)"]
    assert lines["| (d) ≥ 20,000 passages/s (mBERT-base)"].endswith("**not met** |")
    assert "peak 2.5 GB" in lines["| 1 M passages encoded with < 4 GB host memory"]

    cost = R.cost_block(m)
    measured = notebook_costs(gpu_report() | overhead_fields(), encode_passages_per_s=18_000.0)[1]
    assert f"**{sum(r['hours'] for r in measured):.1f}**" in cost and "NVIDIA H200" in cost
    # ContrastiveMix encodes at the end-to-end rate: slower than (d) alone, so more hours
    only_d = notebook_costs(gpu_report())[1]
    by_nb = lambda rows: {r["notebook"]: r for r in rows}  # noqa: E731
    assert by_nb(measured)["05"]["hours"] > by_nb(only_d)["05"]["hours"]

    results = R.results_block(m)
    assert "NVIDIA H200" in results and "| (a) | fake |" in results and "| 1,000,000 | fake |" in results

    # render() fills the blocks of every file and leaves the text around them alone
    def skeleton(path, head="", tail=""):
        return head + "".join(f"<!-- bench:{n} -->\n<!-- /bench:{n} -->\nmiddle\n" for n in R.BLOCKS[path]) + tail

    files = {p: skeleton(p, "intro\n", "end\n") for p in R.BLOCKS}
    out = R.render(m, files)
    for p in R.BLOCKS:
        assert out[p].startswith("intro\n") and "\nmiddle\n" in out[p] and out[p].endswith("end\n")
    assert blocks(out[R.COST], "cost").strip() == cost
    assert blocks(out[R.DOCS], "results").strip() == results  # the harness's table, with its GPU
    assert R.render(m, out) == out  # idempotent
    cluster = blocks(out[R.COST], "cluster")
    assert "wall-clock hours, measured rates (NVIDIA H200)" in cluster and "| 32 |" in cluster  # issue 16's N-GPU table
    total = sum(r["hours"] for r in measured)
    money = blocks(out[R.COST], "money")
    assert f"| {total:.1f} | ${total * R.ASSUMED_USD_PER_GPU_HOUR:,.0f} |" in money and "an assumption" in money
    summary = blocks(out[R.README], "summary")
    assert f"**{total:.1f} GPU-hours**" in summary and "--encode-rate 18000.0" in summary


def _all_hours(text: str) -> float:
    """The **all** row's GPU-hours of what `python -m benchmarks cost` prints (after its runs and optimiser-steps columns)."""
    import re

    return float(re.search(r"^\| \*\*all\*\* \| \| \d+ \|(?: [\d,]+ \|)? \*\*([\d.]+)\*\*", text, re.M).group(1))


def test_the_cost_commands_the_docs_print_give_the_totals_they_show(capsys):
    """The README's and docs/cost.md's `python -m benchmarks cost …` commands, run as printed, print the totals the
    generated tables show (they once showed 634.2 GPU-hours while the printed command gave 592.5)."""
    import re
    import shlex

    from benchmarks import cost as C

    readme = R.README.read_text(encoding="utf-8")
    summary = blocks(readme, "summary")
    cmd = re.search(r"`(python -m benchmarks cost [^`]*)`", summary).group(1)
    shown = float(re.search(r"\*\*([\d.]+) GPU-hours\*\*", summary).group(1))
    assert C.main(shlex.split(cmd)[4:]) in (0, None)
    assert _all_hours(capsys.readouterr().out) == shown
    cost = blocks(R.COST.read_text(encoding="utf-8"), "cost")
    all_row = next(ln for ln in cost.splitlines() if ln.startswith("| **all** |"))
    assert f"**{shown:.1f}**" in all_row  # the table in docs/cost.md: the same measured total
    for cmd in set(re.findall(r"`(python -m benchmarks cost docs/bench/gpu/bench\.json[^`]*)`", cost)):
        assert C.main(shlex.split(cmd)[4:]) in (0, None)
        assert _all_hours(capsys.readouterr().out) == shown, cmd
    # the bold totals of the **all** row: physical limit, its reduced grid, at the targets, its reduced grid, measured, ...
    bold = [float(x) for x in re.findall(r"\*\*([\d.]+)\*\*", all_row)]
    physical, at_targets = bold[0], bold[2]
    for pattern, total in ((r"`(python -m benchmarks cost --assume-mfu 1 [^`]*)`", physical),
                           (r"`(python -m benchmarks cost --assume-mfu a=[^`]*)`", at_targets)):
        cmd = re.search(pattern, cost).group(1)
        assert C.main(shlex.split(cmd)[4:]) in (0, None)
        assert _all_hours(capsys.readouterr().out) == total, cmd


def test_smoke_timing_in_the_readme():
    m = R.Measurements(gpu=None, gpu_memory=None, cpu_memory=None,
                       smoke={"commit": "abcdef0123", "machine": "2 CPU cores", "reproduce_s": 230, "test_s": 700,
                              "tests_passed": 300, "tests_skipped": 13})
    assert "`./reproduce.sh` took 3 min 50 s" in R.smoke_block(m) and "`./test.sh` 11 min 40 s" in R.smoke_block(m)
    assert "creating `.venv/` included" in R.smoke_block(m) and "one process" in R.smoke_block(m)  # an older record
    assert "not recorded" in R.smoke_block(R.Measurements(None, None, None, None))
    m.smoke.update(env_s=95, test_workers=2)
    assert "creating `.venv/` excluded: 1 min 35 s more" in R.smoke_block(m) and "2 pytest-xdist workers, as CI" in R.smoke_block(m)


def test_a_new_run_without_memory_drops_the_old_memory_file(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    for d in (first, second):
        d.mkdir()
        (d / "bench.json").write_text(json.dumps(gpu_report()))
    (first / "memory.json").write_text(json.dumps(memory_report()))
    R.import_run([first], dest=tmp_path / "bench")
    assert (tmp_path / "bench/gpu/memory.json").exists()
    R.import_run([second], dest=tmp_path / "bench")
    assert not (tmp_path / "bench/gpu/memory.json").exists()
    # two folders (stages run in separate calls) make one run
    R.import_run([second, first], dest=tmp_path / "bench")
    assert (tmp_path / "bench/gpu/memory.json").exists()


@pytest.mark.parametrize("change, field", [
    ({"device_type": "cpu"}, "environment.device_type"),
])
def test_cpu_or_shrunk_runs_are_refused(tmp_path, change, field):
    run = tmp_path / "run"
    run.mkdir()
    (run / "bench.json").write_text(json.dumps(gpu_report(**change)))
    with pytest.raises(R.RecordError, match=rf"bench.json: field {field}"):
        R.import_run([run], dest=tmp_path / "bench")

    shrunk = gpu_report()
    shrunk["sizes"]["concse_batch"] = 6  # --batch-scale 0.05
    (run / "bench.json").write_text(json.dumps(shrunk))
    with pytest.raises(R.RecordError, match="field sizes.concse_batch is 6"):
        R.import_run([run], dest=tmp_path / "bench")

    (run / "bench.json").write_text(json.dumps(gpu_report()))
    (run / "memory.json").write_text(json.dumps(memory_report(device="cpu (1 threads)")))
    with pytest.raises(R.RecordError, match="memory.json: field device"):
        R.import_run([run], dest=tmp_path / "bench")
    assert not (tmp_path / "bench/gpu/bench.json").exists()  # nothing filed from a refused run


def test_markers_must_be_there_once():
    with pytest.raises(R.RecordError, match="README.md: expected one block '<!-- bench:cost -->'"):
        R.replace_block("no markers", "cost", "x", "README.md")
    twice = "<!-- bench:cost -->\na\n<!-- /bench:cost -->\n<!-- bench:cost -->\nb\n<!-- /bench:cost -->\n"
    with pytest.raises(R.RecordError, match="found 2"):
        R.replace_block(twice, "cost", "x", "README.md")


def test_smoke_and_cpu_memory_rows(tmp_path):
    smoke = {"commit": "abcdef0123", "machine": "2 CPU cores", "reproduce_s": 230, "test_s": 700, "tests_passed": 300,
             "tests_skipped": 13, "tests_failed": 0}
    m = R.Measurements(gpu=None, gpu_memory=None, cpu_memory=memory_report(device="cpu (1 threads)", peak_mb=2000.0), smoke=smoke)
    text = R.targets_block(m)
    smoke_line = next(ln for ln in text.splitlines() if ln.startswith("| smoke"))
    assert "3 min 50 s" in smoke_line and "11 min 40 s" in smoke_line and smoke_line.endswith("**not met** |")  # no env_s: not comparable
    smoke.update(env_s=95, test_workers=2)
    smoke_line = next(ln for ln in R.targets_block(m).splitlines() if ln.startswith("| smoke"))
    assert "≤ 6 min and tests ≤ 15 min" in smoke_line and smoke_line.endswith("| **met** |")  # 230 s <= 360, 700 s <= 900
    smoke.update(reproduce_s=400)
    smoke_line = next(ln for ln in R.targets_block(m).splitlines() if ln.startswith("| smoke"))
    assert smoke_line.endswith("**not met** |")
    mem_line = next(ln for ln in text.splitlines() if ln.startswith("| 1 M passages"))
    assert "peak 2.0 GB" in mem_line and "docs/bench/cpu/memory.json" in mem_line and mem_line.endswith("**met** |")
    cpu = R.cpu_memory_block(m)
    assert "1,000,000 passages, peak host memory 2.00 GB" in cpu and "| 1,000,000 | fake |" in cpu
    assert "Not recorded" in R.cpu_memory_block(R.Measurements(None, None, None, None))


def test_random_backbone_and_tokenizer_folder(tmp_path, monkeypatch):
    from transformers import AutoModel, AutoTokenizer

    from benchmarks import hotpaths as H

    monkeypatch.setenv(H.TOKENIZER_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="CODESWITCH_BENCH_TOKENIZER"):
        H.wordpiece_folder()
    monkeypatch.delenv(H.TOKENIZER_ENV)
    folder, what = H.save_random_backbone("tiny-bert", tmp_path / "model")
    model, tok = AutoModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    assert model.config.hidden_size == H.TINY_BERT.hidden_size and "random weights" in what
    ids = tok(["a passage of words"])["input_ids"][0]
    assert max(ids) < model.config.vocab_size
    with pytest.raises(ValueError, match="random:gpt: unknown backbone"):
        H.save_random_backbone("gpt", tmp_path / "x")


def test_teaching_times_come_from_the_readme_record():
    """docs/teaching.md's run times are a block of the same record as the README's (issue 42)."""
    import json

    m = R.Measurements.load()
    smoke = json.loads((R.DATA / "smoke.json").read_text())
    block = R.teaching_block(m)
    assert smoke["commit"][:7] in block and all(f"{nb} " in block for nb in smoke["notebooks_s"])
    assert "teaching" in R.BLOCKS[R.TEACHING] and "<!-- bench:teaching -->" in R.TEACHING.read_text(encoding="utf-8")


def test_readme_notebook_times_come_from_the_record():
    """The README's per-notebook smoke times are in its generated block (they were a hand-kept column, left at a
    commit whose notebook 05 took 141 s when the record said 367 s)."""
    import json

    smoke = json.loads((R.DATA / "smoke.json").read_text())
    block = R.smoke_block(R.Measurements.load())
    assert all(f"{nb} " in block for nb in smoke["notebooks_s"])
    readme = R.README.read_text(encoding="utf-8")
    assert block in readme, "the README's block is not the record's: run python -m benchmarks record"
    assert "cold cache |" not in readme  # no hand-kept time column


def test_a_partial_run_adds_its_rows_naming_their_commit(tmp_path):
    """`record --add DIR`: a short call's rows join the filed table (same GPU, same sizes), each naming its commit."""
    filed = gpu_report()
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "bench.json").write_text(json.dumps(filed))
    part = gpu_report()
    part["environment"].update(commit="c" * 40, date="2026-02-02 10:00:00 UTC")
    a_ref = next(m for m in filed["measurements"] if m["key"] == "a_ref")
    part["measurements"] = [{**next(m for m in part["measurements"] if m["key"] == "a"), "key": "a_pk_cg", "speedup": None,
                             "step_time_s": a_ref["step_time_s"] / 8, "path": "(a) packed, CUDA graphs", "model": "m", "batch": "b"},
                            {"key": "c_pk_cg", "path": "(c)", "model": "m", "batch": "b", "status": "failed: timeout"}]
    run = tmp_path / "run"
    run.mkdir()
    (run / "bench.json").write_text(json.dumps(part))
    (run / "bench.log").write_text("log")
    written = R.add_rows(run, tmp_path)
    out = json.loads((tmp_path / "gpu" / "bench.json").read_text())
    keys = [m["key"] for m in out["measurements"]]
    assert keys[: len(filed["measurements"])] == [m["key"] for m in filed["measurements"]] and keys[-1] == "a_pk_cg"
    assert "c_pk_cg" not in keys  # a row that did not finish is not filed
    row = out["measurements"][-1]
    assert row["extra"]["measured"]["commit"] == "c" * 40 and math.isclose(row["speedup"], 8.0, rel_tol=1e-9)
    assert out["environment"] == filed["environment"] and out["added"][0]["keys"] == ["a_pk_cg"]
    assert "| (a) packed, CUDA graphs |" in out["table_markdown"]
    assert (tmp_path / "gpu" / "added-2026-02-02-ccccccc" / "bench.log").read_text() == "log" and len(written) == 3
    made = R.record_provenance("bench.json", out, tmp_path)
    assert made == {"commit": None, "gpu": "NVIDIA H200", "date": "2026-01-01"}  # the filed run named no commit
    part["environment"]["device"] = "NVIDIA H100 80GB HBM3"
    (run / "bench.json").write_text(json.dumps(part))
    with pytest.raises(R.RecordError, match="one GPU model"):
        R.add_rows(run, tmp_path)
    part["environment"].update(device="NVIDIA H200", commit=None)
    (run / "bench.json").write_text(json.dumps(part))
    with pytest.raises(R.RecordError, match="environment.commit"):
        R.add_rows(run, tmp_path)
    part["environment"]["commit"] = "c" * 40
    part["sizes"] = {**part["sizes"], "concse_batch": 64}
    (run / "bench.json").write_text(json.dumps(part))
    with pytest.raises(R.RecordError, match="field sizes"):
        R.add_rows(run, tmp_path)


def test_every_gpu_record_names_its_commit_gpu_and_date():
    """Issue 43: each record under docs/bench/gpu/ names the commit it measured, the GPU and the date (its own fields,
    or docs/bench/gpu/provenance.json for the records made before they did)."""
    gpu = R.DATA / "gpu"
    records = sorted(p for p in gpu.rglob("*") if p.suffix in R.GPU_RECORD_SUFFIXES and p.name != "provenance.json"
                     and p.parent.name != "env")  # a notebooks record's env/: its report.json names them
    assert len(records) >= 10
    for path in records:
        rel = path.relative_to(gpu).as_posix()
        text = path.read_text(encoding="utf-8")
        record = json.loads(text) if path.suffix == ".json" else None
        made = R.record_provenance(rel, record)
        assert all(made.values()), (rel, made)
        assert len(str(made["commit"]).removesuffix("-dirty")) >= 7, (rel, made)
    filed = json.loads((gpu / "bench.json").read_text(encoding="utf-8"))
    for row in filed["measurements"]:
        if row.get("extra", {}).get("measured"):
            assert len(row["extra"]["measured"]["commit"]) == 40, row["key"]


def test_the_readme_names_the_notebooks_run_at_paper_size_on_a_gpu(tmp_path):
    """The summary's last sentence: each notebook's latest ok paper-gpu run, from the filed notebooks records."""
    def filed(folder, date, gpu, statuses):
        (tmp_path / "gpu" / folder).mkdir(parents=True)
        rep = {"environment": {"commit": "c" * 40, "date": date, "gpu": gpu},
               "notebooks": [{"notebook": nb, "ok": ok} for nb, ok in statuses.items()]}
        (tmp_path / "gpu" / folder / "report.json").write_text(json.dumps(rep))

    assert R.notebook_runs_line(tmp_path) == ""
    filed("notebooks", "2026-01-01 10:00 UTC", "H100", {"03": True, "05": False})
    filed("notebooks-2026-02-01", "2026-02-01 10:00 UTC", "H200", {"01": True, "05": True, "07": False})
    line = R.notebook_runs_line(tmp_path)
    assert "01, 05 on an H200 (2026-02-01, `docs/bench/gpu/notebooks-2026-02-01/`)" in line
    assert "03 on an H100 (2026-01-01, `docs/bench/gpu/notebooks/`)" in line and "07" not in line


def test_the_quick_price_the_docs_state_is_the_cost_models():
    """docs/bench/quick_cost.md (scripts/quick_cost.sh), docs/cost.md's quick row and the README state one quick price,
    the cost model's at the recorded rates: a change to the model or the records that moves it fails here."""
    import re

    from benchmarks.cost import notebook_costs

    gpu = json.loads((R.DATA / "gpu" / "bench.json").read_text(encoding="utf-8"))
    rows = notebook_costs(gpu | overhead_fields(), "quick", encode_passages_per_s=3921.28826226015)[1]
    total = f"{sum(r['hours'] for r in rows):.1f}"
    recorded = (R.DATA / "quick_cost.md").read_text(encoding="utf-8")
    gpu_section = recorded.split("## GPU-hours on one GPU", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^\| \*\*all\*\* \| \| \d+ \| [\d,]+ \| \*\*([\d.]+)\*\* \|", gpu_section, re.M).group(1) == total
    cost_md = (R.ROOT / "docs" / "cost.md").read_text(encoding="utf-8")
    assert re.search(r"^\| GPU-hours, measured rates \([^)]*\) \|.*\*\*([\d.]+)\*\* \|$", cost_md, re.M).group(1) == total
    assert f"is not reached: {total} GPU-hours" in cost_md or float(total) <= 1.0
    readme = (R.ROOT / "README.md").read_text(encoding="utf-8")
    assert re.search(r"`--profile quick`, needs a GPU and the hub once: priced at ([\d.]+) GPU-hours", readme).group(1) == total
