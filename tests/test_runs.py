"""The run cache: hashing, atomic writes, skip-if-done, resume after a crash."""

from __future__ import annotations

import json
import os

import pytest

from codeswitch.core.runs import RunCache, config_hash, run_grid
from codeswitch.core.atomic import atomic_write_text


def test_hash_is_canonical_and_complete():
    a = {"backbone": "tiny-bert", "seed": 1, "lr": 5e-5, "tasks": ["cola", "sst2"]}
    b = {"tasks": ["cola", "sst2"], "lr": 5e-5, "seed": 1, "backbone": "tiny-bert"}
    assert config_hash(a) == config_hash(b)
    assert config_hash(a) != config_hash({**a, "seed": 2})
    assert config_hash({"t": (1, 2)}) == config_hash({"t": [1, 2]})
    assert len(config_hash(a)) == 16


def test_run_computes_once_and_reads_back(tmp_path):
    cache = RunCache(tmp_path / "exp")
    calls = []

    def fn():
        calls.append(1)
        return {"score": 0.5, "per_task": {"cola": 1.0}}

    cfg = {"seed": 1}
    assert cache.run(cfg, fn) == {"score": 0.5, "per_task": {"cola": 1.0}}
    assert cache.run(cfg, fn) == {"score": 0.5, "per_task": {"cola": 1.0}}
    assert len(calls) == 1
    rec = json.loads(cache.path(cfg).read_text())
    assert rec["config"] == cfg and rec["key"] == config_hash(cfg) and rec["seconds"] >= 0
    assert [r["config"] for r in cache.records()] == [cfg]


def test_crash_midway_then_resume_gives_the_same_results(tmp_path):
    grid = [{"seed": s} for s in range(5)]
    done = []

    def fn(c, crash_at=None):
        if c["seed"] == crash_at:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C during this run
        done.append(c["seed"])
        return {"score": c["seed"] * 10}

    cache = RunCache(tmp_path / "exp")
    with pytest.raises(KeyboardInterrupt):
        run_grid(cache, grid, lambda c: fn(c, crash_at=3))
    assert done == [0, 1, 2]
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == sorted(f"{config_hash(c)}.json" for c in grid[:3])
    results = run_grid(cache, grid, fn)
    assert done == [0, 1, 2, 3, 4]  # finished runs were not redone
    assert [r["score"] for r in results] == [0, 10, 20, 30, 40]
    fresh = run_grid(RunCache(tmp_path / "fresh"), grid, fn)
    assert results == fresh


def test_atomic_write_leaves_no_partial_file_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "t.json"
    atomic_write_text(target, "old")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_atomic_directory_is_all_or_nothing(tmp_path):
    from codeswitch.core.atomic import atomic_directory

    dest = tmp_path / "model"
    with pytest.raises(RuntimeError):
        with atomic_directory(dest) as tmp:
            (tmp / "half.bin").write_bytes(b"x")
            raise RuntimeError("killed mid-save")
    assert not dest.exists() and list(tmp_path.iterdir()) == []  # nothing half-written is left
    with atomic_directory(dest) as tmp:
        (tmp / "a.txt").write_text("old")
    with atomic_directory(dest) as tmp:  # replace=True: the new folder replaces the old one
        (tmp / "b.txt").write_text("new")
    assert sorted(p.name for p in dest.iterdir()) == ["b.txt"]
    with atomic_directory(dest, replace=False) as tmp:  # another process "finished first": theirs is kept
        (tmp / "c.txt").write_text("mine")
    assert sorted(p.name for p in dest.iterdir()) == ["b.txt"] and [p.name for p in tmp_path.iterdir()] == ["model"]


def test_a_non_finite_result_reads_back_as_a_float_from_every_reader(tmp_path):
    """A NaN score is stored as JSON's NaN (schema 3) and read back as a float by the cache, its records and
    core.learning; a schema-2 record, which stored it as the text "nan", reads back as the same floats."""
    import math

    from codeswitch.core import learning, runs

    cache = RunCache(tmp_path / "exp")
    result = {"p1": float("nan"), "loss": [float("inf"), 1.0], "name": "nan-free", "learning": learning.learning(
        "P@1", float("nan"), 0.5, baseline_name="untrained encoder", margin=0.1)}
    first = cache.run({"seed": 1}, lambda: result)
    text = cache.path({"seed": 1}).read_text()
    assert '"p1": NaN' in text and '"schema": 3' in text and '"nan"' not in text
    for got in (first, cache.get({"seed": 1}), cache.records()[0]["result"], runs.read_record(cache.path({"seed": 1}))["result"]):
        assert math.isnan(got["p1"]) and got["loss"][0] == math.inf and got["name"] == "nan-free"
    [(_, entry)] = list(learning.learning_records(tmp_path))
    assert math.isnan(entry.score) and not entry.passed

    legacy = json.loads(text.replace("NaN", '"nan"').replace("Infinity", '"inf"').replace('"schema": 3', '"schema": 2'))
    assert legacy["checksum"] == runs.result_checksum(legacy["result"])  # the checksum is the same in both schemas
    atomic_write_text(cache.path({"seed": 1}), json.dumps(legacy))
    got = cache.get({"seed": 1})
    assert math.isnan(got["p1"]) and got["loss"][0] == math.inf and math.isnan(got["learning"]["score"])
    assert math.isnan(next(learning.learning_records(tmp_path))[1].score)
    assert runs.decode_record({"schema": 3, "result": {"s": "nan"}})["result"]["s"] == "nan"  # text stays text in schema 3


def test_a_grid_freezes_the_objects_before_it_once_and_its_own_garbage_is_still_collected(tmp_path):
    """run_grid holds codeswitch.core.utils.frozen_gc over its inline runs: the objects that exist before the grid are
    frozen (a Trainer's full gc.collect of each run skips them: 20 of notebook 07's 54 s under paper-ci), a nested block
    (a worker's compute) neither freezes again nor unfreezes early, cyclic garbage a run makes is collected inside the
    grid, and nothing stays frozen afterwards."""
    import gc
    import weakref

    from codeswitch.core.utils import frozen_gc

    class Cycle:
        pass

    seen = []

    def fn(config):
        with frozen_gc():  # nested, as compute() inside a grid
            assert gc.get_freeze_count() > 0
        a, b = Cycle(), Cycle()
        a.b, b.a = b, a
        ref = weakref.ref(a)
        del a, b
        gc.collect()  # what accelerate's free_memory does at the start of Trainer.train
        seen.append((gc.get_freeze_count(), ref() is None))
        return {"x": config["x"]}

    assert gc.get_freeze_count() == 0
    out = run_grid(RunCache(tmp_path), [{"x": 1}, {"x": 2}], fn)
    assert [r["x"] for r in out] == [1, 2]
    assert all(frozen > 0 and collected for frozen, collected in seen), seen
    assert gc.get_freeze_count() == 0
