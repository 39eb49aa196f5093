"""Fault injection (issue 14): every class of bad input or broken state ends in a clear error, a counted
exclusion, or a correct recomputation — never a stale or wrong number with exit code 0.

One test per class; each asserts the message (file, row, field named) or the recomputation.
Fast (no training): run keys are built, not run; the grid tests use a stand-in run function.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from dataclasses import dataclass
from typing import ClassVar

from codeswitch.core import atomic, identity, runs
from codeswitch.core.experiment import RunSpec
from codeswitch.core.checkpoints import MANIFEST, CheckpointWarning, checkpoint_directory, checkpoint_ok, verify_manifest
from codeswitch.core.hub import MissingResourceError
from codeswitch.core.profiles import load_profile
from codeswitch.core.sections import ConfigError
from codeswitch.core.runs import CorruptRecordWarning, RunCache, run_grid

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _digests(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESWITCH_DIGESTS", str(tmp_path / "_digests" / "sha256.json"))
    identity._MEMO.clear()
    yield
    identity._MEMO.clear()


# --------------------------------------------------------------------------- a tiny Koglish folder
STS_EN = ["sentence1", "source1_np0", "sentence2", "source2_np0", "label"]
STS_CS = ["sentence1", "cross1", "source1_np0", "target1_np0", "sentence2", "cross2", "source2_np0", "target2_np0", "label"]
ROWS = [
    ("The red car is fast .", "The red car", "레드 카", "A small dog runs .", "A small dog", "작은 개", "1.5"),
    ("My old friend came home .", "My old friend", "오랜 친구", "The big house is empty .", "The big house", "큰 집", "4.0"),
    ("A tall tree fell down .", "A tall tree", "큰 나무", "The blue sky is clear .", "The blue sky", "파란 하늘", "2.25"),
]


def write_stsb(root: Path, rows=ROWS, *, cross_override: dict | None = None) -> Path:
    """``root/Koglish_STS/stsb_for_Koglish/{en,cross}_valid.csv`` in the released layout."""
    folder = root / "Koglish_STS" / "stsb_for_Koglish"
    folder.mkdir(parents=True, exist_ok=True)
    en, cs = [], []
    for i, (s1, n1, t1, s2, n2, t2, y) in enumerate(rows):
        c1 = s1.replace(n1, t1, 1)
        if cross_override and i in cross_override:
            c1 = cross_override[i]
        en.append([s1, n1, s2, n2, y])
        cs.append([s1, c1, n1, t1, s2, s2.replace(n2, t2, 1), n2, t2, y])
    pd.DataFrame(en, columns=STS_EN).to_csv(folder / "en_valid.csv")
    pd.DataFrame(cs, columns=STS_CS).to_csv(folder / "cross_valid.csv")
    return root


def _load(root):
    from codeswitch.koglish.data import load_sts

    return load_sts(str(root), "stsb", "valid")


# =========================================================================== 1. content-addressed keys
@dataclass(frozen=True)
class _Reads(RunSpec):
    """A stand-in run that reads one file (for the key mechanics, without an experiment)."""

    RESULT_VERSION: ClassVar[int] = 1
    path: str
    seed: int

    def inputs(self):
        return {"data": self.path}


def test_a_key_holds_the_content_of_what_the_run_reads(tmp_path):
    """Changing one file re-keys exactly the runs that read it; touching it (same bytes) re-keys nothing."""
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("x,y\n1,2\n")
    b.write_text("x,y\n3,4\n")
    specs = [_Reads(str(p), s) for p in (a, b) for s in (1, 2)]
    before = [s.key_hash() for s in specs]
    assert specs[0].key()["inputs"] == {"data": "sha256:" + identity.content_id(a)} and specs[0].key()["result_version"] == 1
    os.utime(a, ns=(a.stat().st_atime_ns, a.stat().st_mtime_ns + 10**9))
    assert [s.key_hash() for s in specs] == before  # the content, not the time stamp
    a.write_text("x,y\n1,3\n")  # one label changed
    after = [s.key_hash() for s in specs]
    assert [x != y for x, y in zip(before, after)] == [True, True, False, False]


def test_result_version_bump_changes_every_key(monkeypatch, tmp_path):
    from codeswitch.concse.config import ConCSERun
    from codeswitch.concse import plan

    cfg = load_profile("smoke", output_root=tmp_path / "out")
    specs = plan(cfg, ["table3"])
    before = {s.key_hash() for s in specs}
    monkeypatch.setattr(ConCSERun, "RESULT_VERSION", ConCSERun.RESULT_VERSION + 1)
    assert before.isdisjoint({s.key_hash() for s in specs})


def test_concse_keys_follow_the_content_of_a_local_koglish_folder(tmp_path):
    """The README's offline "local copies" workflow: one label changed in a local Koglish folder re-runs ConCSE."""
    from codeswitch.concse import plan

    root = write_stsb(tmp_path / "kog")
    cfg = load_profile("smoke", {"koglish_source": str(root)}, output_root=tmp_path / "out")
    specs = plan(cfg, ["table3"])
    before = {s.key_hash() for s in specs}
    k1 = specs[0].key()
    assert k1["precision"] == "fp32"  # resolved on CPU, never "auto"
    assert set(k1["inputs"]) == {"koglish/Koglish_STS"} and k1["inputs"]["koglish/Koglish_STS"].startswith("sha256:")
    glue = root / "Koglish_GLUE" / "cola" / "cross_train.csv"  # a set ConCSE does not read
    glue.parent.mkdir(parents=True)
    glue.write_text("sentence,label\nA b .,1\n", encoding="utf-8")
    glue.write_text("sentence,label\nA b .,0\n", encoding="utf-8")
    assert {s.key_hash() for s in plan(cfg, ["table3"])} == before  # one GLUE label changed: no ConCSE run re-runs
    p = root / "Koglish_STS" / "stsb_for_Koglish" / "cross_valid.csv"
    p.write_text(p.read_text(encoding="utf-8").replace(",1.5\n", ",1.75\n"), encoding="utf-8")
    after = {s.key_hash() for s in plan(cfg, ["table3"])}
    assert after.isdisjoint(before)  # every ConCSE run reads the STS dev set


def test_replacing_a_muse_file_reruns_the_models_that_read_it(tmp_path):
    """ContrastiveMix with a local MUSE folder: editing en-ko.txt re-keys the models mixing into Korean only."""
    import shutil

    from codeswitch.contrastivemix import plan
    from codeswitch.contrastivemix.config import TrainRun
    from codeswitch.contrastivemix.synthetic import GLOSSARY_DIR

    shutil.copytree(GLOSSARY_DIR, tmp_path / "muse", ignore=shutil.ignore_patterns("*.md"))
    cfg = load_profile("smoke", {"contrastivemix.muse": str(tmp_path / "muse")}, output_root=tmp_path / "out")

    def keys():
        return {(s.language, s.key_hash()) for s in plan(cfg) if isinstance(s, TrainRun)}

    before = keys()
    languages = {lang for lang, _ in before if lang is not None}
    assert "ko" in languages and len(languages) > 1
    f = tmp_path / "muse" / "en-ko.txt"
    f.write_text(f.read_text(encoding="utf-8") + "zebra\t얼룩말\n", encoding="utf-8")
    changed = before - keys()
    assert changed and {lang for lang, _ in changed} == {"ko"}


def test_another_model_at_the_same_path_gets_another_key(tmp_path):
    """Replacing /models/x with another model and re-running must not give "2 runs, 2 cached"."""
    import dataclasses

    from codeswitch.concse import plan

    m = tmp_path / "models" / "x"
    m.mkdir(parents=True)
    (m / "config.json").write_text('{"hidden_size": 8}', encoding="utf-8")
    spec = dataclasses.replace(plan(load_profile("smoke", output_root=tmp_path / "out"), ["table3"])[0], model=str(m))
    first = spec.key_hash()
    assert spec.key()["inputs"]["model"].startswith("sha256:")
    (m / "config.json").write_text('{"hidden_size": 16}', encoding="utf-8")
    assert spec.key_hash() != first


def test_hub_reference_is_keyed_by_its_resolved_commit(monkeypatch):
    import huggingface_hub

    from codeswitch.core import hub

    sha = {"v": "a" * 40}

    class FakeApi:
        def model_info(self, ref, timeout=None):
            return type("Info", (), {"sha": sha["v"]})()

        dataset_info = model_info

    @dataclass(frozen=True)
    class Tuned(RunSpec):
        model: str

        def inputs(self):
            return {"model": self.model}

    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    identity.hub_revision.cache_clear()
    try:
        spec = Tuned("org/some-model")
        assert spec.key()["inputs"] == {"model": "rev:" + "a" * 40}  # recorded in the record's config
        first = spec.key_hash()
        sha["v"] = "b" * 40  # `main` moved on the hub
        identity.hub_revision.cache_clear()  # a new process
        assert spec.key_hash() != first
    finally:
        identity.hub_revision.cache_clear()


def test_content_digests_are_cached_by_path_size_and_mtime(tmp_path):
    f = tmp_path / "corpus.txt"
    f.write_bytes(b"x" * 1000)
    real = identity.file_sha256(f)
    cache = Path(os.environ["CODESWITCH_DIGESTS"])
    entries = json.loads(cache.read_text())
    entries[str(f.resolve())][2] = "cached-digest"  # same (size, mtime): the cache answers, the file is not re-read
    cache.write_text(json.dumps(entries))
    identity._MEMO.clear()
    assert identity.file_sha256(f) == "cached-digest"
    os.utime(f, ns=(f.stat().st_atime_ns, f.stat().st_mtime_ns + 10**9))  # touched: hashed again
    assert identity.file_sha256(f) == real


# =========================================================================== 2. verified records
def _grid(tmp_path):
    cache = RunCache(tmp_path / "runs" / "exp")
    calls = []

    def fn(c):
        calls.append(c["seed"])
        return {"score": c["seed"] / 7}

    return cache, [{"seed": s} for s in (1, 2, 3)], fn, calls


@pytest.mark.parametrize(
    "damage",
    ["truncate", "garble", "other_key", "checksum", "not_utf8", "empty"],
)
def test_damaged_record_is_moved_aside_and_recomputed_with_identical_csv(tmp_path, damage):
    cache, configs, fn, calls = _grid(tmp_path)
    clean = pd.DataFrame(run_grid(cache, configs, fn)).to_csv(index=False).encode()
    assert calls == [1, 2, 3]
    p = cache.path(configs[1])
    text = p.read_text(encoding="utf-8")
    if damage == "truncate":
        p.write_text(text[: len(text) // 2], encoding="utf-8")
    elif damage == "garble":
        p.write_text(text.replace('"result"', '"resu1t"'), encoding="utf-8")
    elif damage == "other_key":  # a valid record of another config saved under this hash
        p.write_bytes(cache.path(configs[2]).read_bytes())
    elif damage == "checksum":
        p.write_text(text.replace(str(2 / 7), str(5 / 7)), encoding="utf-8")
    elif damage == "not_utf8":
        p.write_bytes(b"\xff\xfe" + p.read_bytes())
    else:
        p.write_bytes(b"")
    calls.clear()
    with pytest.warns(CorruptRecordWarning, match=rf"{p.name}.*moved to .*{p.name}\.corrupt"):
        again = pd.DataFrame(run_grid(cache, configs, fn)).to_csv(index=False).encode()
    assert calls == [2]  # exactly the damaged run, nothing else
    assert again == clean
    assert p.with_name(p.name + ".corrupt").is_file()


def test_pre_checksum_records_of_the_same_config_are_still_used(tmp_path):
    cache, configs, fn, calls = _grid(tmp_path)
    atomic.atomic_write_json(cache.path(configs[0]), {"schema": 1, "key": runs.config_hash(configs[0]), "config": configs[0], "result": {"score": 0.5}})
    assert cache.get(configs[0]) == {"score": 0.5}


# =========================================================================== 3. verified checkpoints
def _checkpoint(folder: Path) -> Path:
    with checkpoint_directory(folder) as tmp:
        (tmp / "config.json").write_text("{}", encoding="utf-8")
        (tmp / "tokenizer.json").write_text('{"model": {"vocab": {"a": 0}}}', encoding="utf-8")
        (tmp / "encoder").mkdir()
        (tmp / "encoder" / "model.safetensors").write_bytes(b"\0" * 64)
    return folder


@pytest.mark.parametrize(
    "damage, message",
    [
        ("delete_tokenizer", "tokenizer.json is missing"),
        ("delete_weights", "encoder/model.safetensors is missing"),
        ("truncate", "encoder/model.safetensors has 10 bytes"),
        ("change", "config.json changed"),
        ("no_manifest", f"no {MANIFEST}"),
    ],
)
def test_damaged_checkpoint_is_not_used(tmp_path, damage, message):
    folder = _checkpoint(tmp_path / "ckpt")
    assert MANIFEST in os.listdir(folder) and verify_manifest(folder) == [] and checkpoint_ok(folder)
    if damage == "delete_tokenizer":
        (folder / "tokenizer.json").unlink()
    elif damage == "delete_weights":
        (folder / "encoder" / "model.safetensors").unlink()
    elif damage == "truncate":
        (folder / "encoder" / "model.safetensors").write_bytes(b"\0" * 10)
    elif damage == "change":
        (folder / "config.json").write_text("[]", encoding="utf-8")
    else:
        (folder / MANIFEST).unlink()
    with pytest.warns(CheckpointWarning, match=message):
        assert not checkpoint_ok(folder, what="CalBERT checkpoint")
    _checkpoint(folder)  # the rebuild replaces it
    assert checkpoint_ok(folder)


def test_calbert_and_alignment_use_the_manifest_check(tmp_path):
    from codeswitch.alignment import experiment as A
    from codeswitch.calbert import experiment as E

    folder = _checkpoint(tmp_path / "ckpt")
    assert E._has_checkpoint(folder)
    (folder / "tokenizer.json").unlink()
    with pytest.warns(CheckpointWarning, match="tokenizer.json is missing"):
        assert not E._has_checkpoint(folder)
    assert A.checkpoint_ok is checkpoint_ok


def test_retrieval_checkpoint_missing_a_file_is_retrained(tmp_path, monkeypatch):
    """ContrastiveMix: a checkpoint folder that fails its manifest is not loaded; the model is trained again."""
    from codeswitch.contrastivemix import experiment as X
    from codeswitch.contrastivemix.config import TrainRun

    cfg = load_profile("smoke", output_root=tmp_path / "out")
    spec = next(s for s in X.plan(cfg) if isinstance(s, TrainRun))
    folder = _checkpoint(X.checkpoint_dir(cfg, spec))
    loaded, trained = [], []
    monkeypatch.setattr("codeswitch.core.encoders.load_dual_encoder", lambda p: loaded.append(p) or ("model", "tok"))
    monkeypatch.setattr(X, "_train_model", lambda s, p: trained.append(s) or ("model", "tok", {}))
    assert X.trained_model(spec, cfg) == ("model", "tok") and loaded == [folder] and trained == []
    (folder / "encoder" / "model.safetensors").unlink()
    with pytest.warns(CheckpointWarning, match="encoder/model.safetensors is missing"):
        X.trained_model(spec, cfg)
    assert loaded == [folder] and trained == [spec]


def test_tiny_backbone_missing_a_file_is_rebuilt(tmp_path, backbones_dir):
    import shutil

    from codeswitch.core.models import build_tiny_backbone

    built = build_tiny_backbone("tiny-bert", backbones_dir)  # the session's build (shared), copied: damage the copy
    dest = tmp_path / built.name
    shutil.copytree(built, dest)
    assert build_tiny_backbone("tiny-bert", tmp_path) == dest  # the copy verifies: used as it is
    (dest / "tokenizer.json").unlink()
    with pytest.warns(CheckpointWarning, match="tokenizer.json is missing"):
        again = build_tiny_backbone("tiny-bert", tmp_path)
    assert again == dest and (dest / "tokenizer.json").is_file() and checkpoint_ok(dest)


# =========================================================================== 6. data rules at load
def test_valid_koglish_loads(tmp_path):
    assert len(_load(write_stsb(tmp_path))) == 3


def test_shifted_cross_column_is_an_error_naming_file_row_and_column(tmp_path):
    from codeswitch.koglish.data import KoglishFormatError

    shifted = {0: ROWS[1][0].replace(ROWS[1][1], ROWS[1][2], 1)}  # row 0 carries row 1's switched sentence
    root = write_stsb(tmp_path, cross_override=shifted)
    with pytest.raises(KoglishFormatError, match=r"cross_valid\.csv: row 0 \(CSV line 2\), column 'cross1'.*koglish_invalid_rows"):
        _load(root)


def test_target_np_not_in_cross_is_an_error(tmp_path):
    from codeswitch.koglish.data import KoglishFormatError

    root = write_stsb(tmp_path, cross_override={2: "A tall tree fell down ."})  # nothing switched
    with pytest.raises(KoglishFormatError, match=r"row 2 \(CSV line 4\), column 'cross1'"):
        _load(root)


def test_drop_mode_counts_and_drops(tmp_path):
    from codeswitch.koglish.data import KoglishRowsDropped, load_sts

    root = write_stsb(tmp_path, cross_override={1: "nonsense"})
    with pytest.warns(KoglishRowsDropped, match=r"dropped 1 of 3 rows"):
        df = load_sts(str(root), "stsb", "valid", invalid_rows="drop")
    assert df["sentence1"].tolist() == [ROWS[0][0], ROWS[2][0]]
    cfg = load_profile("smoke", {"koglish_invalid_rows": "drop"})
    assert cfg.koglish_invalid_rows == "drop"
    with pytest.raises(ConfigError, match="koglish_invalid_rows"):
        load_profile("smoke", {"koglish_invalid_rows": "ignore"})


def test_real_koglish_sample_keeps_the_switch_rule(shared_data):
    from codeswitch.koglish import data as K

    src = str(shared_data / "koglish_sample")
    rows = sum(len(K.load_glue(src, t, s)) for t in K.GLUE_TASKS for s in K.GLUE_SPLITS)
    rows += len(K.load_nli(src)) + len(K.load_sts(src, "stsb", "valid")) + len(K.load_sts(src, "stsb", "test"))
    assert rows > 9000  # every row loaded in "error" mode: 0 violations


@pytest.mark.parametrize(
    "fault, message",
    [
        ("missing_column", r"missing column\(s\) \['label'\]"),
        ("empty_text", r"row 1 \(CSV line 3\), column 'sentence2': empty text"),
        ("nan_text", r"row 0 \(CSV line 2\), column 'sentence1': the text is 'nan'"),
        ("label_range", r"row 2 \(CSV line 4\), column 'label': '7.5' is outside \[0.0, 5.0\]"),
        ("twin_mismatch", r"cross_valid\.csv has 3 rows but its English twin .*en_valid\.csv has 2"),
        ("not_utf8", r"cross_valid\.csv, line 2: not UTF-8 text \(byte 0xb7"),  # the line, not just the file (issue 29)
        ("empty_file", r"cross_valid\.csv: the file is empty"),
    ],
)
def test_bad_koglish_files_name_file_row_and_field(tmp_path, fault, message):
    from codeswitch.koglish.data import KoglishFormatError

    root = write_stsb(tmp_path)
    d = root / "Koglish_STS" / "stsb_for_Koglish"
    cs, en = (pd.read_csv(d / f, index_col=0, dtype=str).reset_index(drop=True) for f in ("cross_valid.csv", "en_valid.csv"))
    if fault == "missing_column":
        cs.drop(columns=["label"]).to_csv(d / "cross_valid.csv")
    elif fault == "empty_text":
        cs.loc[1, "sentence2"] = ""
        cs.to_csv(d / "cross_valid.csv")
    elif fault == "nan_text":
        cs.loc[0, "sentence1"] = "nan"
        cs.to_csv(d / "cross_valid.csv")
    elif fault == "label_range":
        cs.loc[2, "label"] = "7.5"
        cs.to_csv(d / "cross_valid.csv")
    elif fault == "twin_mismatch":
        en.iloc[:2].to_csv(d / "en_valid.csv")
    elif fault == "not_utf8":
        (d / "cross_valid.csv").write_bytes((d / "cross_valid.csv").read_bytes().replace("레드".encode(), b"\xb7\xb9\xb5\xe5"))
    else:
        (d / "cross_valid.csv").write_bytes(b"")
    with pytest.raises(KoglishFormatError, match=message):
        _load(root)


def test_one_muse_reader_with_explicit_rules(tmp_path):
    from codeswitch.alignment.data import load_lexicon
    from codeswitch.common.muse import MuseFormatError, first_translations, load_muse, read_muse
    from codeswitch.contrastivemix import codemix

    assert codemix.load_muse is load_muse  # the same reader for ContrastiveMix, alignment and Koglish
    p = tmp_path / "en-fr.txt"
    p.write_text("#\t#\nred car\tvoiture rouge\nthe le\n\n", encoding="utf-8")
    assert read_muse(p) == [("#", "#"), ("red car", "voiture rouge"), ("the", "le")]  # '#' is a word, not a comment
    assert first_translations(p)["the"] == "le" and load_muse(p)["#"] == ["#"]
    assert load_lexicon(str(p)) == [("#", "#"), ("red car", "voiture rouge"), ("the", "le")]
    p.write_text("the le\nthe le la\n", encoding="utf-8")
    with pytest.raises(MuseFormatError, match=r"en-fr\.txt, line 2: .*found 3 field"):
        read_muse(p)
    p.write_text("the\tle\tla\n", encoding="utf-8")
    with pytest.raises(MuseFormatError, match=r"en-fr\.txt, line 1"):
        load_muse(p)


@pytest.mark.parametrize("reader", ["muse", "sail", "iitp", "parallel", "pairs_tsv"])
def test_non_utf8_names_the_file(tmp_path, reader):
    from codeswitch.common.textio import TextDecodeError

    p = tmp_path / f"{reader}.txt"
    p.write_bytes(b"good\tpositive\nbad \xff\xfe byte\tnegative\n")
    if reader == "muse":
        from codeswitch.common.muse import read_muse as fn
    elif reader == "sail":
        from codeswitch.common.sentiment import read_text_label_tsv as fn
    elif reader == "iitp":
        from codeswitch.common.sentiment import read_label_text_csv as fn
    elif reader == "parallel":
        from codeswitch.alignment.data import read_parallel as fn
    else:
        from codeswitch.calbert.data import read_parallel_tsv as fn
    with pytest.raises(TextDecodeError, match=rf"{reader}\.txt, line 2: not UTF-8"):
        fn(p)


# =========================================================================== 7. housekeeping
def _python(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "lib"))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=120)


def test_sigkill_during_a_folder_build_leaves_a_temp_that_the_next_build_removes(tmp_path):
    dest = tmp_path / "koglish_synthetic" / "abc"
    r = _python(f"""
        import os, signal
        from codeswitch.core.checkpoints import checkpoint_directory
        with checkpoint_directory({str(dest)!r}) as tmp:
            (tmp / "part.csv").write_text("half")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert r.returncode == -signal.SIGKILL
    leftovers = [p for p in dest.parent.iterdir() if p.name.startswith(".abc.")]
    assert leftovers and not dest.exists()
    _checkpoint(dest)
    assert [p.name for p in dest.parent.iterdir()] == ["abc"] and checkpoint_ok(dest)


def test_sigkill_during_an_atomic_write_leaves_a_temp_that_the_next_write_removes(tmp_path):
    dest = tmp_path / "runs" / "0123.json"
    r = _python(f"""
        import os, signal
        from codeswitch.core import atomic
        os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # killed between write and rename
        atomic.atomic_write_json({str(dest)!r}, {{"a": 1}})
    """)
    assert r.returncode == -signal.SIGKILL
    assert [p.name.startswith(".0123.json.") for p in dest.parent.iterdir()] == [True]
    atomic.atomic_write_json(dest, {"a": 2})
    assert [p.name for p in dest.parent.iterdir()] == ["0123.json"]


def test_a_live_writers_temp_is_left_alone(tmp_path):
    dest = tmp_path / "x"
    tmp = tmp_path / f".x.tmp-{atomic.HOST}-{os.getpid()}-abc"
    tmp.mkdir()
    assert atomic.remove_stale_temps(dest) == [] and tmp.exists()


def test_unwritable_run_cache_fails_before_any_training(tmp_path):
    blocker = tmp_path / "runs"
    blocker.write_text("a file where the run cache should be")
    trained = []
    with pytest.raises(PermissionError, match=r"run cache .*runs/smoke/concse is not writable"):
        run_grid(RunCache(blocker / "smoke" / "concse"), [{"seed": 1}], lambda c: trained.append(c) or {"x": 1})
    assert trained == []


def test_read_only_run_cache_fails_before_any_training_as_any_user(tmp_path, monkeypatch):
    """A read-only filesystem (what root meets too): the write probe fails, nothing is trained."""
    import tempfile

    real = tempfile.mkstemp

    def mkstemp(*args, prefix=None, **kwargs):
        if prefix == ".write-probe.":
            raise OSError(30, "Read-only file system")
        return real(*args, prefix=prefix, **kwargs)

    monkeypatch.setattr(atomic.tempfile, "mkstemp", mkstemp)
    trained = []
    with pytest.raises(PermissionError, match=r"run cache .*/exp is not writable \(Read-only file system\)"):
        run_grid(RunCache(tmp_path / "exp"), [{"seed": 1}], lambda c: trained.append(c) or {"x": 1})
    assert trained == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder")
def test_read_only_run_cache_fails_before_any_training(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    trained = []
    try:
        with pytest.raises(PermissionError, match="not writable"):
            run_grid(RunCache(ro / "exp"), [{"seed": 1}], lambda c: trained.append(c) or {"x": 1})
        assert trained == []
    finally:
        ro.chmod(0o755)


# =========================================================================== classes that already worked
def test_unknown_key_and_wrong_type_are_rejected(tmp_path):
    from codeswitch.concse.config import load as load_config

    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['epochz'\]"):
        load_config(load_profile("smoke", {"concse.epochz": 1}))
    with pytest.raises(ConfigError, match=r"key 'epochs'"):
        load_config(load_profile("smoke", {"concse.epochs": "two"}))


def test_missing_backbone_names_the_setting(tmp_path):
    from codeswitch.core.models import resolve_model

    with pytest.raises(MissingResourceError, match=r"'/no/such/model' \(glue.backbones\): no such file or folder"):
        resolve_model("/no/such/model", what="glue.backbones")


def test_a_folder_that_is_not_a_model_names_the_setting(tmp_path):
    from codeswitch.core.models import resolve_model

    folder = tmp_path / "models" / "x"
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("not a model")
    with pytest.raises(MissingResourceError, match=r"'.*models/x' \(concse.backbones\): .* is not a saved model folder \(no config.json\)"):
        resolve_model(str(folder), what="concse.backbones")


def test_a_run_start_removes_every_temp_of_killed_runs(tmp_path):
    runs_dir = tmp_path / "runs" / "smoke"
    dead = 2**22 + 12345  # above the default pid_max: no such process
    stale = [runs_dir / "concse" / f".ab12.json.tmp-{atomic.HOST}-{dead}-x.partial", tmp_path / "runs" / "_backbones" / f".tiny-bert-1.tmp-{atomic.HOST}-{dead}-y"]
    stale[0].parent.mkdir(parents=True)
    stale[0].write_text("{")
    stale[1].mkdir(parents=True)
    (stale[1] / "config.json").write_text("{}")
    live = runs_dir / f".other.tmp-{atomic.HOST}-{os.getpid()}-z"
    live.mkdir()
    atomic.prepare_output(runs_dir)
    assert not any(p.exists() for p in stale) and live.exists()


@pytest.mark.parametrize("gz", [False, True])
def test_non_utf8_retrieval_jsonl_names_the_file(tmp_path, gz):
    import gzip

    from codeswitch.common.textio import TextDecodeError
    from codeswitch.contrastivemix.data import _json_dataset, _read_jsonl

    data = b'{"query_id": "1", "query": "ok"}\n{"query_id": "2", "query": "bad \xff"}\n'
    p = tmp_path / ("train.jsonl.gz" if gz else "train.jsonl")
    p.write_bytes(gzip.compress(data) if gz else data)
    with pytest.raises(TextDecodeError, match=rf"{p.name}: not UTF-8"):
        list(_read_jsonl(p))
    with pytest.raises(TextDecodeError, match=rf"{p.name}: not UTF-8"):
        _json_dataset([p])


# =========================================================================== SIGKILL mid-run, two processes at once
_GRID = """
    import os, signal, sys, time
    from codeswitch.core.runs import RunCache, run_grid
    root, mode, calls = sys.argv[1], sys.argv[2], sys.argv[3]
    def fn(c):
        with open(calls, "a") as fh:
            fh.write(f"{{c['seed']}}\\n")
        if mode == "kill" and c["seed"] == 2:
            os.kill(os.getpid(), signal.SIGKILL)  # killed while computing run 2, holding its lock
        time.sleep(0.5 if mode == "slow" else 0)
        return {{"score": c["seed"] / 7}}
    out = run_grid(RunCache(root), [{{"seed": s}} for s in (1, 2, 3)], fn)
    print([r["score"] for r in out])
"""


def _grid_process(root: Path, mode: str, calls: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO / "lib"), CODESWITCH_NO_PROGRESS="1")
    code = textwrap.dedent(_GRID.format())
    return subprocess.Popen([sys.executable, "-c", code, str(root), mode, str(calls)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigkill_during_a_run_then_rerun_gives_the_clean_results(tmp_path):
    clean_cache, configs, fn, _ = _grid(tmp_path / "clean")
    clean = pd.DataFrame(run_grid(clean_cache, configs, fn)).to_csv(index=False).encode()
    root = tmp_path / "killed" / "runs" / "exp"  # where _grid keeps its cache
    p = _grid_process(root, "kill", tmp_path / "calls")
    p.communicate(timeout=120)
    assert p.returncode == -signal.SIGKILL
    assert sorted(x.name for x in root.glob("*.json")) == [RunCache(root).path({"seed": 1}).name]  # run 1 kept, run 2 never half-written
    cache, _, fn2, calls = _grid(tmp_path / "killed")
    again = pd.DataFrame(run_grid(cache, configs, fn2)).to_csv(index=False).encode()
    assert calls == [2, 3] and again == clean  # resumed: the killed run is redone (its lock was freed by the kernel)
    assert not [x for x in root.iterdir() if x.name.startswith(".")]  # no temp or lock left behind


def test_two_processes_on_the_same_grid_compute_each_run_once(tmp_path):
    root = tmp_path / "runs"
    a, b = (_grid_process(root, "slow", tmp_path / "calls") for _ in range(2))
    outs = [p.communicate(timeout=120) for p in (a, b)]
    assert a.returncode == b.returncode == 0, outs
    assert outs[0][0].splitlines()[-1] == outs[1][0].splitlines()[-1] == str([1 / 7, 2 / 7, 3 / 7])
    assert sorted((tmp_path / "calls").read_text().split()) == ["1", "2", "3"]  # the other process waited and read the record
