"""Fault injection, round three (issue 41 item 1): an export that ships the right model and loses nothing.

The kept models are stand-ins (a 64-byte weight file, kept with ``kept.keep`` under each run's real key: no
training), for CalBERT's plan, whose specs need only the shipped data.  On the code before issue 41 these fail:
``export`` took no ``--set`` (the plan of a ``--set`` run could not be named) and copied every kept model of the cache,
one row's folder overwritten by whichever came last; it exported a swapped weight file, deleted a user's file in an
existing row folder, exited 0 with rows missing, and ended in a traceback for an unwritable target.
"""

from __future__ import annotations

import json
import os

import pytest

from codeswitch.core import kept, publish
from codeswitch.core.profiles import load_profile
from codeswitch.pipeline import cli, export
from .helpers import fresh_identity

SET = {"seeds": [1], "calbert.backbones": [{"name": "tiny", "model": "tiny-bert"}], "calbert.scratch.architectures": [],
       "calbert.keep_models": "best"}
OTHER = {**SET, "calbert.sail.learning_rate": 1e-3}  # another configuration of the same rows, in the same cache


def _args(overrides: dict) -> list[str]:
    return [a for k, v in overrides.items() for a in ("--set", f"{k}={json.dumps(v)}")]


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path / "out"))
    yield from fresh_identity(tmp_path, monkeypatch)


def _keep_all(overrides: dict, tmp_path, only=None) -> dict[str, publish.PlanRun]:
    """A stand-in kept model for every run of the plan (``only``: the first run of each of these rows); key hash -> run."""
    prof = load_profile("smoke", overrides, output_root=tmp_path / "out")
    plan, unnamed = export.export_plan_runs(prof, ["07"])
    assert plan and not unnamed
    out = {}
    for r in plan:
        if only is not None and (r.row.folder() not in only or r.row.folder() in {x.row.folder() for x in out.values()}):
            continue
        kept.keep(r.folder, r.spec, r.row, fmt="sequence-classification", profile=prof, notebook="07",
                  save=lambda d, k=r.spec.key_hash(): ((d / "model.safetensors").write_bytes(os.urandom(64)),
                                                      (d / "config.json").write_text(json.dumps({"run": k}))))
        out[r.spec.key_hash()] = r
    return out


def _export(dest, overrides, *extra) -> int:
    return cli.main(["export", str(dest), "--profile", "smoke", "--only", "07", *_args(overrides), *extra])


def _exported_keys(dest) -> list[str]:
    return sorted(json.loads(p.read_text())["key_hash"] for p in dest.rglob(kept.META))


def test_export_ships_exactly_the_kept_models_of_the_plan_of_its_set_values(tmp_path, capsys):
    mine = _keep_all(SET, tmp_path)
    rows = {r.row.folder() for r in mine.values()}
    others = _keep_all(OTHER, tmp_path, only=rows)  # the other configuration's models of some of the same rows
    assert set(others) - set(mine), "the other configuration must have models of its own"
    dest = tmp_path / "models"
    assert _export(dest, SET) == 0
    out = capsys.readouterr().out
    assert _exported_keys(dest) == sorted(mine)  # exactly the plan's, none of the other configuration's
    exported = [line for line in out.splitlines() if line.startswith("exported ")]
    assert len(exported) == len(set(exported)) == len(mine)  # each target once
    # the other configuration's export, into another folder: its own models (those its sail runs share with ours too)
    assert _export(tmp_path / "other", OTHER) == 0
    plan = {r.spec.key_hash() for r in export.export_plan_runs(load_profile("smoke", OTHER, output_root=tmp_path / "out"), ["07"])[0]}
    got = set(_exported_keys(tmp_path / "other"))
    assert got <= plan and set(others) - set(mine) <= got and not (set(mine) - plan) & got


def test_rows_without_a_kept_model_are_listed_and_the_exit_code_says_so(tmp_path, capsys):
    mine = _keep_all(SET, tmp_path)
    gone = next(iter(mine.values()))
    import shutil

    shutil.rmtree(gone.folder)
    assert _export(tmp_path / "models", SET, "--dry-run") == 1
    err = capsys.readouterr().err
    assert f"\n  {gone.row.folder()}" in err and "1 row(s)" in err
    assert _export(tmp_path / "models", {**SET, "offline": False}, "--push-to-hub", "org") == 1  # copied; nothing uploaded
    err = capsys.readouterr().err
    assert "nothing uploaded while a row lacks its model" in err and gone.row.folder() in err
    assert len(_exported_keys(tmp_path / "models")) == len(mine) - 1


def test_a_swapped_weight_file_is_refused_naming_it(tmp_path, capsys):
    mine = _keep_all(SET, tmp_path)
    run = next(iter(mine.values()))
    weights = run.folder / "model.safetensors"
    st = weights.stat()
    weights.write_bytes(bytes(b ^ 0xFF for b in weights.read_bytes()))  # same size, time stamp restored
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    dest = tmp_path / "models"
    assert _export(dest, SET) == 1
    err = capsys.readouterr().err
    assert f"{run.folder}: not exported" in err and "model.safetensors changed" in err and "Traceback" not in err
    assert not (dest / run.row.folder()).exists()


def test_an_existing_folder_is_never_overwritten_without_force_and_a_users_file_is_never_deleted(tmp_path, capsys):
    mine = _keep_all(SET, tmp_path)
    run = next(iter(mine.values()))
    dest = tmp_path / "models"
    mine_file = dest / run.row.folder() / "NOTES.txt"
    mine_file.parent.mkdir(parents=True)
    mine_file.write_text("my notes")
    assert _export(dest, SET) == 1
    err = capsys.readouterr().err
    assert f"{dest / run.row.folder()}: already exists" in err and "--force" in err
    assert [p.name for p in mine_file.parent.iterdir()] == ["NOTES.txt"]  # nothing written there, nothing else either
    assert _exported_keys(dest) == []
    assert _export(dest, SET, "--force") == 0
    out = capsys.readouterr().out
    assert mine_file.read_text() == "my notes" and "kept 1 file(s) that export did not write: NOTES.txt" in out
    assert _exported_keys(dest) == sorted(mine)
    # again with --force: the files an export wrote are replaced, the user's stays
    assert _export(dest, SET, "--force") == 0 and mine_file.read_text() == "my notes"


def test_an_unwritable_target_and_an_offline_push_are_one_line_naming_the_path(tmp_path, capsys):
    _keep_all(SET, tmp_path)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert _export(blocker / "models", SET) == 2
    err = capsys.readouterr().err
    assert f"cannot write into {blocker / 'models'}: {blocker} is not a folder" in err and "Traceback" not in err
    assert load_profile("smoke").offline  # (the smoke profile is offline)
    assert _export(tmp_path / "models", SET, "--push-to-hub", "org") == 2
    err = capsys.readouterr().err
    assert "--push-to-hub org: profile smoke" in err and "is offline" in err and "Traceback" not in err
    if os.geteuid() != 0:  # root writes into a read-only folder
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        assert _export(ro / "models", SET) == 2
        assert f"cannot write into {ro / 'models'}: {ro} is not writable" in capsys.readouterr().err
