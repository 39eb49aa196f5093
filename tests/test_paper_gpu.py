"""The paper-gpu tooling (issue 25): paper-size stand-ins, repeated training files, the device report and its record."""

from __future__ import annotations

import gzip
import json
import tarfile

import pytest


def test_paper_sizes_are_the_real_configurations():
    from codeswitch.pipeline.standins import FOR_HUB_ID, PAPER_SIZES, SIZES, STANDINS

    assert set(PAPER_SIZES) == set(STANDINS) - {"benepar"} == set(FOR_HUB_ID.values())
    assert PAPER_SIZES["xlmr-large"]["num_hidden_layers"] == 24 and PAPER_SIZES["xlmr-large"]["hidden_size"] == 1024
    assert PAPER_SIZES["mbert-cased"]["vocab_size"] == 119547 and PAPER_SIZES["mbart50"]["vocab_size"] == 250054
    assert SIZES["paper"][0] == SIZES["vocab"][0] == "models-paper" and SIZES["ci"] == ("models", {})


def test_a_vocab_size_standin_has_the_real_vocabulary_and_loads(tmp_path):
    from transformers import AutoModel, AutoTokenizer

    from codeswitch.pipeline.standins import build_standin

    folder = build_standin("bert-cased", tmp_path, "vocab")
    model, tok = AutoModel.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    assert model.config.vocab_size == 28996 and model.config.hidden_size == 32  # real vocabulary, CI width
    assert max(tok("a code-switched sentence")["input_ids"]) < model.config.vocab_size
    with pytest.raises(KeyError, match="sizes"):
        build_standin("bert-cased", tmp_path / "x", "huge")


def test_every_model_of_paper_gpu_goes_to_models_paper_and_benepar_stays_ci(tmp_path, monkeypatch):
    from codeswitch.pipeline import standins

    built = []
    monkeypatch.setattr(standins, "build_standin", lambda name, root, sizes: built.append((name, root.name, sizes)))
    monkeypatch.setattr(standins, "build_data", lambda root, sizes: None)
    standins.build_all(tmp_path, "vocab", ["nllb", "xlmr-large", "benepar"])
    assert built == [("nllb", "models-paper", "vocab"), ("xlmr-large", "models-paper", "vocab"), ("benepar", "models", "ci")]


def test_training_files_are_repeated_in_their_formats(tmp_path):
    from codeswitch.pipeline.standins import _repeat_file

    csv = tmp_path / "en_train.csv"
    csv.write_text(',sentence,label\n0,"a, b",1\n1,c,0\n')
    _repeat_file(csv, "csv-index", 3)
    lines = csv.read_text().splitlines()
    assert lines[0] == ",sentence,label" and len(lines) == 7 and lines[3] == '2,"a, b",1' and lines[6] == "5,c,0"
    nq = tmp_path / "nq.jsonl.gz"
    nq.write_bytes(gzip.compress(b'{"query_id": "q1", "query": "x"}\n'))
    _repeat_file(nq, "jsonl-gz", 2)
    ids = [json.loads(ln)["query_id"] for ln in gzip.decompress(nq.read_bytes()).decode().splitlines()]
    assert ids == ["q1", "q1-copy1"]
    conll = tmp_path / "train.txt"
    conll.write_text("a\tO\nb\tO\n")
    _repeat_file(conll, "blocks", 2)
    assert conll.read_text() == "a\tO\nb\tO\n\na\tO\nb\tO\n"
    squad = tmp_path / "train-v2.0.json"
    squad.write_text(json.dumps({"version": "v2", "data": [{"paragraphs": [{"qas": [{"id": "1"}]}]}]}))
    _repeat_file(squad, "squad", 2)
    assert [p["paragraphs"][0]["qas"][0]["id"] for p in json.loads(squad.read_text())["data"]] == ["1", "1-copy1"]


def test_wheel_list_carries_what_the_image_lacks_and_the_pins():
    from benchmarks.gpu_notebooks import image_packages, wheel_list

    wheels = wheel_list(image_packages())
    assert {"papermill", "ipykernel", "datasets", "umap-learn", "pytrec-eval-terrier", "transformers",
            "sentence-transformers"} <= set(wheels)
    assert not {"torch", "numpy", "pandas", "scipy", "tokenizers"} & set(wheels)  # the image's
    assert "pexpect" in wheels  # a requirement under a marker that holds on Linux (sys_platform != "win32")


def _fake_run(folder, *, nan=False):
    """A folder as scripts/gpu_notebooks.sh fills it: timings, environment, one GLUE run record, one table."""
    (folder / "env").mkdir(parents=True)
    (folder / "runs" / "paper-gpu" / "glue").mkdir(parents=True)
    (folder / "figures").mkdir()
    (folder / "logs").mkdir()
    (folder / "logs" / "02.log").write_text("done\n")
    (folder / "timings.tsv").write_text("notebook\trc\tseconds\tstatus\tstart\n02\t0\t40\tok\t\n")
    (folder / "env" / "environment.json").write_text(json.dumps({"gpu": "NVIDIA H100 80GB HBM3", "peak_bf16_tflops": 989.0}))
    stats = {"device": "NVIDIA H100 80GB HBM3", "peak_memory_bytes": 3 * 2**30, "optimizer_steps": 10, "train_span_s": 2.0,
             "train_sequences": 1280, "train_tokens": 100_000, "eval_tokens": 50_000,
             "input_devices": ["cuda:0"], "autocast": ["bfloat16"], "max_train_batch": 128,
             "models": {"BertModel": {"params": 85_000_000, "train_tokens": 100_000, "eval_tokens": 50_000}}}
    record = {"schema": 2, "key": "k", "checksum": "c", "seconds": 4.0, "result": {"valid": 1.0},
              "config": {"experiment": "glue", "precision": "bf16", "batch_size": 128, "per_device_eval_batch_size": 256}, "stats": stats}
    (folder / "runs" / "paper-gpu" / "glue" / "k.json").write_text(json.dumps(record))
    (folder / "figures" / "concse_table2.csv").write_text(f"row,mean,paper\nA,{'nan' if nan else '1.5'},\n")
    (folder / "figures" / "concse_table2_gain.csv").write_text("row,mean\nA,0.5\n")


def test_report_reads_the_runs_stats_and_checks_the_tables(tmp_path):
    from benchmarks.gpu_notebooks import write_report

    _fake_run(tmp_path / "a")
    rep = write_report(tmp_path / "a")
    nb = {n["notebook"]: n for n in rep["notebooks"]}["02"]
    assert nb["ok"] and nb["peak_memory_gib"] == 3.0 and nb["precisions"] == ["bf16"] and nb["devices"] == ["NVIDIA H100 80GB HBM3"]
    assert "batch_size=128" in nb["batch_sizes"] and "per_device_eval_batch_size=256" in nb["batch_sizes"]
    assert (nb["input_devices"], nb["autocast"], nb["max_train_batch"]) == (["cuda:0"], ["bfloat16"], 128)
    kind = rep["kinds"][0]
    assert (kind["notebook"], kind["kind"], kind["steps_per_s"], kind["sequences_per_s"]) == ("02", "glue", 5.0, 640.0)
    assert kind["train_mfu"] == pytest.approx(6 * 85e6 * 1e5 / (2.0 * 989e12))
    assert "| 02 | ok | 40 | 1 (1) | 3.00 | NVIDIA H100 80GB HBM3 | cuda:0 | bf16 | bfloat16 | 128 | yes |" in (tmp_path / "a" / "report.md").read_text()
    _fake_run(tmp_path / "b", nan=True)
    bad = {n["notebook"]: n for n in write_report(tmp_path / "b")["notebooks"]}["02"]
    assert not bad["ok"] and bad["nonfinite"] == {"concse_table2": ["mean[0]"]}


def test_a_record_belongs_to_the_notebook_running_when_it_was_written(tmp_path):
    import os

    from benchmarks.gpu_notebooks import summarize

    _fake_run(tmp_path)
    rec = tmp_path / "runs" / "paper-gpu" / "glue" / "k.json"
    os.utime(rec, (1000.0, 1000.0))
    (tmp_path / "timings.tsv").write_text("notebook\trc\tseconds\tstatus\tstart\n04\t0\t40\tok\t990\n")
    assert [k["notebook"] for k in summarize(tmp_path)["kinds"]] == ["04"]  # by time, not by its folder (glue: 02)
    os.utime(rec, (2000.0, 2000.0))
    assert [k["notebook"] for k in summarize(tmp_path)["kinds"]] == ["02"]  # written before (carried): by its folder


def test_notebooks_run_at_once_get_the_records_of_their_folders_and_the_report_says_so(tmp_path):
    import os

    from benchmarks.gpu_notebooks import report_markdown, summarize

    _fake_run(tmp_path)
    rec = tmp_path / "runs" / "paper-gpu" / "glue" / "k.json"
    concse = tmp_path / "runs" / "paper-gpu" / "concse" / "c.json"
    concse.parent.mkdir(parents=True)
    concse.write_text(rec.read_text())
    for p in (rec, concse):
        os.utime(p, (1000.0, 1000.0))
    (tmp_path / "env" / "environment.json").write_text(json.dumps({"gpu": "NVIDIA H200", "commit": "abc123", "date": "2026-11-28"}))
    (tmp_path / "timings.tsv").write_text("notebook\trc\tseconds\tstatus\tstart\n"
                                          "07\t0\t400\tok\t900\n02\t0\t300\tok\t900\n04\t124\t500\ttimeout\t900\n01\t0\t10\tok\t2000\n")
    rep = summarize(tmp_path)
    assert sorted((k["notebook"], k["kind"]) for k in rep["kinds"]) == [("02", "glue"), ("04", "concse")]  # not 07, the first window
    assert rep["concurrent"] == ["02", "04", "07"]  # 01 ran alone, after them
    assert {n["notebook"]: n["concurrent"] for n in rep["notebooks"]}["01"] is False
    md = report_markdown(rep)
    assert "commit: abc123 | date: 2026-11-28" in md and "Notebooks 02, 04, 07 ran at the same time" in md


def test_parallel_mode_runs_every_notebook_at_once_returns_and_archives(tmp_path):
    """scripts/gpu_notebooks.sh with GPU_NOTEBOOKS_PARALLEL=1, every Python step a stub that logs its arguments: it must
    return (a bare `wait` also waited for the log's tee and hung the H200 call) with its archives written, start the
    notebooks together, and keep no models (kept models at paper size filled the device's disk)."""
    import os
    import subprocess
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    stub = tmp_path / "python"
    calls = tmp_path / "calls.txt"
    stub.write_text(f'#!/bin/sh\necho "$(date +%s.%N) $*" >> {calls}\ncase "$*" in *" --only "*) sleep 2 ;; esac\nexit 0\n')
    stub.chmod(0o755)
    env = {**os.environ, "PYTHON": str(stub), "OUT": str(tmp_path / "out"), "TMPDIR": str(tmp_path),
           "CODESWITCH_STANDINS": str(tmp_path / "standins"), "GPU_NOTEBOOKS_PARALLEL": "1", "DEADLINE_S": "120"}
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(root / "scripts" / "gpu_notebooks.sh"), "07", "05"], env=env, cwd=root,
                          capture_output=True, text=True, timeout=45)
    took = time.monotonic() - t0
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert took < 40, f"the script took {took:.0f} s: it waited for something other than its notebooks"
    assert {p.name for p in (tmp_path / "out").iterdir()} >= {"gpu_notebooks-07-05.tar.gz", "log.txt"}
    runs = [ln for ln in calls.read_text().splitlines() if "--profile paper-gpu --only" in ln]
    assert len(runs) == 2 and all(f"{s}.keep_models=none" in ln for ln in runs
                                  for s in ("glue", "concse", "contrastivemix", "alignment", "calbert"))
    starts = sorted(float(ln.split()[0]) for ln in runs)
    assert starts[1] - starts[0] < 1.5  # together, not one after the other (each stub notebook takes 2 s)
    log = (tmp_path / "out" / "log.txt").read_text()
    assert "parallel: 2 notebooks at once" in log and "07: ok" in log and "05: ok" in log

    # SIGTERM while the notebooks run (the device's time limit): they are stopped too, and the archives still written
    stub.write_text('#!/bin/sh\ncase "$*" in *" --only "0*) exec sleep 31.25 ;; esac\nexit 0\n')
    env["OUT"] = str(tmp_path / "out2")
    proc = subprocess.Popen(["bash", str(root / "scripts" / "gpu_notebooks.sh"), "07", "05"], env=env, cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sleeping = lambda: subprocess.run(["pgrep", "-f", "sleep 31.25"], capture_output=True, text=True).stdout.split()  # noqa: E731
    deadline = time.monotonic() + 30
    while len(sleeping()) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(sleeping()) == 2
    proc.terminate()
    assert proc.wait(timeout=25) == 130
    time.sleep(0.5)
    assert sleeping() == [] and (tmp_path / "out2" / "gpu_notebooks-07-05.tar.gz").is_file()


def test_record_unpacks_the_archives_and_sets_the_extrapolation_beside_the_cost_model(tmp_path):
    from benchmarks.gpu_notebooks import BENCH, record

    _fake_run(tmp_path / "run")
    archive = tmp_path / "gpu_notebooks-02.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for p in (tmp_path / "run").iterdir():
            tar.add(p, arcname=p.name)
    readme = record([archive], tmp_path / "dest", BENCH)
    text = readme.read_text()
    assert "cost model GPU-hours" in text and (tmp_path / "dest" / "logs" / "02.log").is_file()
    rows = {r["notebook"]: r for r in json.loads((tmp_path / "dest" / "report.json").read_text())["extrapolation"]}
    r = rows["02"]
    assert (r["step_s"], r["whole_run_s_per_step"]) == (pytest.approx(0.2), pytest.approx(0.4))  # 2 s span, 4 s run, 10 steps
    assert r["gpu_hours_from_steps"] == pytest.approx(0.2 * r["paper_optimiser_steps"] / 3600)
    assert r["ratio_steps_to_model"] == pytest.approx(r["gpu_hours_from_steps"] / r["cost_model_gpu_hours"])
    assert rows["03"]["gpu_hours_from_steps"] is None  # not run
    with pytest.raises(FileExistsError, match="already holds a record"):  # another call's record is not written over
        record([archive], tmp_path / "dest", BENCH)
    assert record([archive], tmp_path / "dest", BENCH, force=True) == readme
