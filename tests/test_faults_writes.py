"""Issue 41, item 5: write failures that named nothing, or crashed twice.

* Every output folder (runs/, the executed notebooks', figures/) is checked writable before any work: a read-only
  ``figures/`` was found only after all training, in cell 12.
* Every save site names its path: a full disk while safetensors saved a model said "SafetensorError … No space left
  on device" with no file named.
* The failure path never raises over the first error: the handler crashed writing INDEX.md (a double traceback).
* A damaged index entry (``figures/<profile>/.index/*.json``) is moved aside and rebuilt with a warning naming it
  (it crashed every later run in ``read_index`` with a raw ``JSONDecodeError``).
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from codeswitch.core import atomic
from codeswitch.core.profiles import load_profile
from codeswitch.pipeline import cli as pipeline

from .conftest import REPO


def _quick_checks(monkeypatch):
    """main() without the (slow, unrelated) checks of every section and resource; notebooks recorded, never run."""
    started = []
    monkeypatch.setattr(pipeline, "_validated", lambda args, overrides, chosen, root: (
        load_profile(args.profile, overrides, root=root), [], None))
    monkeypatch.setattr(pipeline, "_run_notebooks", lambda *a, **kw: started.append(a) or 0)
    return started


def test_an_unwritable_figures_folder_stops_the_run_before_any_work_naming_it(tmp_path, monkeypatch, capsys):
    started = _quick_checks(monkeypatch)
    (tmp_path / "figures").write_text("a file where figures/ should be\n")  # unwritable for root too
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    assert pipeline.main(["--only", "01"]) == 2
    err = capsys.readouterr().err
    assert f"the tables' and figures' folder {tmp_path / 'figures' / 'smoke'} is not writable" in err, err
    assert "Traceback" not in err and started == []  # no notebook, no training
    # the same check where the test suite and executors start a notebook
    with pytest.raises(PermissionError, match=r"figures' folder .*figures/smoke is not writable"):
        pipeline.run_notebook(pipeline.NOTEBOOKS[0], "smoke", output_root=tmp_path, root=REPO)


def test_a_read_only_executed_notebooks_folder_is_found_before_any_work(tmp_path, monkeypatch, capsys):
    started = _quick_checks(monkeypatch)
    (tmp_path / "runs" / "smoke").mkdir(parents=True)
    (tmp_path / "runs" / "smoke" / "notebooks").write_text("not a folder")
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    assert pipeline.main(["--only", "01"]) == 2
    assert "the executed notebooks' folder" in capsys.readouterr().err and started == []


def test_the_failure_path_never_raises_over_the_first_error(tmp_path, monkeypatch, capsys):
    """A failed notebook, then INDEX.md cannot be written (figures/ went read-only): one error, one more line."""
    spec = pipeline.NOTEBOOKS[0]

    def failed(*a, **kw):
        raise pipeline.NotebookFailed(spec, tmp_path / "x.failed.ipynb", 12, "PermissionError: figures/smoke is read-only")

    def index_fails(*a, **kw):
        raise PermissionError(13, "Permission denied (writing figures/smoke/INDEX.md)")

    monkeypatch.setattr(pipeline, "_validated", lambda args, overrides, chosen, root: (
        load_profile(args.profile, overrides, root=root), [], type("E", (), {"kind": "inline"})()))
    monkeypatch.setattr(pipeline, "run_notebook", failed)
    monkeypatch.setattr(pipeline, "write_index", index_fails)
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    assert pipeline.main(["--only", "01"]) == 1
    err = capsys.readouterr().err
    assert "FAILED: notebook 01_koglish_dataset.ipynb failed in cell 12" in err
    assert "reproduce.sh: also: PermissionError: [Errno 13] Permission denied (writing figures/smoke/INDEX.md)" in err
    assert "Traceback" not in err


class SafetensorError(Exception):
    """As safetensors raises it: not an OSError, no file named."""


def test_a_full_disk_while_safetensors_saves_names_the_folder(tmp_path):
    dest = tmp_path / "models" / "seed-1"
    with pytest.raises(OSError, match=r"SafetensorError: Error while serializing: IoError\(Os \{ code: 28, kind: StorageFull, "
                                      r"message: \"No space left on device\" \}\) \(building .*models/seed-1\)") as err:
        with atomic.atomic_directory(dest):
            raise SafetensorError('Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })')
    assert err.value.errno == 28 and err.value.filename == str(dest)
    assert not dest.exists() and not list(dest.parent.iterdir())  # nothing half-written
    with pytest.raises(KeyError):  # any other error: as it is
        with atomic.atomic_directory(dest):
            raise KeyError("not an I/O error")


def test_a_full_disk_while_a_figure_is_rendered_names_the_artifact(tmp_path):
    with pytest.raises(OSError, match=r"No space left on device \(writing .*figures/f\)"):
        with atomic.atomic_files(tmp_path / "figures", "f"):
            raise OSError(28, "No space left on device")  # savefig's own write, naming no file


def _table(profile, value: str):
    from codeswitch.core.report import save_table

    return save_table(pd.DataFrame({"score": [value]}, index=pd.Index(["run"], name="model")), "t", profile, caption="a table")


@pytest.mark.parametrize("damage", [b'{"name": "t", "ki', b"", b"\xff\xfe", b"[1, 2]"])
def test_a_damaged_index_entry_is_moved_aside_and_rebuilt_with_a_warning_naming_it(tmp_path, damage):
    from codeswitch.core.report import IndexWarning, read_index

    prof = load_profile("smoke", output_root=tmp_path, root=REPO)
    _table(prof, "0.1")
    entry = prof.figures_dir / ".index" / "t.json"
    good = json.loads(entry.read_text())
    entry.write_bytes(damage)  # a write cut short (a full disk, a kill outside the atomic writers)
    with pytest.warns(IndexWarning, match=rf"{entry}: damaged index entry .*moved aside to t.json.damaged and rebuilt"):
        entries = read_index(prof.figures_dir)
    assert [e["name"] for e in entries] == ["t"]
    rebuilt = entries[0]
    assert rebuilt["files"] == good["files"] and rebuilt["kind"] == "table" and rebuilt["provenance"] == good["provenance"]
    assert entry.with_name("t.json.damaged").read_bytes() == damage  # kept, for whoever wants to look
    assert json.loads(entry.read_text()) == rebuilt  # rebuilt on disk: the next read is quiet
    pipeline.write_index("smoke", output_root=tmp_path, root=REPO)  # INDEX.md is written, not a JSONDecodeError
    assert "`t`" in (prof.figures_dir / "INDEX.md").read_text()


def test_a_damaged_entry_without_its_provenance_is_left_out_with_a_warning(tmp_path):
    from codeswitch.core.report import IndexWarning, read_index

    prof = load_profile("smoke", output_root=tmp_path, root=REPO)
    _table(prof, "0.1")
    (prof.figures_dir / "t.provenance.json").unlink()
    (prof.figures_dir / ".index" / "t.json").write_text("{")
    with pytest.warns(IndexWarning, match=r"t.json: damaged index entry .*cannot be rebuilt .*run its notebook again"):
        assert read_index(prof.figures_dir) == []
