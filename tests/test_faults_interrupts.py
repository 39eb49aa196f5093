"""Issue 41, items 7 and 8: Ctrl-C and two runs of one notebook at once.

* Ctrl-C prints one line, ``interrupted: rerun to resume``, and exits 130 (it printed a 35-line traceback).
* A complete executed notebook is replaced only by another complete one; the interrupted (or failed) copy goes
  beside it (Ctrl-C replaced a complete copy with its 8-of-19-cells copy).
* Each process has its own progress file (two runs of one notebook shared ``.03_concse.progress.log``, so each
  console printed both runs' bars).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

from codeswitch.pipeline import cli as pipeline

from .conftest import REPO
from .test_pipeline import _fake_root


def _complete_copy(folder: Path, spec) -> Path:
    """A complete executed copy of ``spec`` from an earlier run, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"print('cell {i}')") for i in range(19)]
    nb.metadata["earlier"] = "complete"
    nbformat.write(nb, folder / spec.file)
    return folder / spec.file


def _papermill_stopped_by(exc: BaseException, cells: int = 8):
    """``papermill.execute_notebook`` that writes a copy of ``cells`` cells (as request_save_on_cell_execute does), then
    raises ``exc`` as Ctrl-C in the middle of the next cell would."""

    def fake(input_path, output_path, **kw):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(f"print('cell {i}')") for i in range(cells)]
        nb.metadata["partial"] = True
        nbformat.write(nb, output_path)
        raise exc

    return fake


def test_ctrl_c_keeps_the_complete_executed_copy_and_puts_the_partial_one_beside_it(tmp_path, monkeypatch):
    import papermill

    root = _fake_root(tmp_path, "print('never run here')")
    spec = pipeline.NOTEBOOKS[0]
    out = tmp_path / "out"
    complete = _complete_copy(out / "runs" / "smoke" / "notebooks", spec)
    before = complete.read_bytes()
    monkeypatch.setattr(papermill, "execute_notebook", _papermill_stopped_by(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        pipeline.run_notebook(spec, "smoke", output_root=out, root=root, log_output=False)
    assert complete.read_bytes() == before  # the complete copy of the earlier run: untouched
    partial = complete.with_name(f"{complete.stem}.interrupted.ipynb")
    assert nbformat.read(partial, as_version=4).metadata["partial"] is True and len(nbformat.read(partial, as_version=4).cells) == 8
    assert not list(complete.parent.glob("*.running.ipynb"))

    # a failed run: the same (the failed copy, traceback included, beside; the error names it)
    from papermill.exceptions import PapermillExecutionError

    monkeypatch.setattr(papermill, "execute_notebook",
                        _papermill_stopped_by(PapermillExecutionError(2, 3, "raise", "ValueError", "boom", [])))
    with pytest.raises(pipeline.NotebookFailed) as info:
        pipeline.run_notebook(spec, "smoke", output_root=out, root=root, log_output=False)
    assert info.value.executed == complete.with_name(f"{complete.stem}.failed.ipynb") and info.value.executed.is_file()
    assert complete.read_bytes() == before and not partial.exists()  # one partial copy: the last run's

    # a complete run replaces the complete copy, and the partial ones go
    monkeypatch.undo()
    executed = pipeline.run_notebook(spec, "smoke", output_root=out, root=root, log_output=False)
    assert executed == complete and complete.read_bytes() != before
    assert sorted(p.name for p in complete.parent.glob("*.ipynb")) == [spec.file]


def test_ctrl_c_prints_one_line_and_exits_130(tmp_path, monkeypatch, capsys):
    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "_run_notebooks", interrupted)
    monkeypatch.setattr(pipeline, "_validated", lambda args, overrides, chosen, root: (
        pipeline.load_profile(args.profile, overrides, root=root), [], None))
    monkeypatch.setattr(pipeline, "_stop_before_running", lambda *a: None)
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    assert pipeline.main(["--only", "01"]) == 130
    err = capsys.readouterr().err
    assert err == "interrupted: rerun to resume\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_stops_a_run_as_ctrl_c_does_with_one_line_and_exit_143(tmp_path, monkeypatch, capsys):
    """A real SIGTERM (kill, a Slurm time limit, scancel) while notebooks run: Python's default ended the process at
    once (the .running copy left, nothing printed, the kernel orphaned); now it is Ctrl-C's clean stop, exit 143, and
    the handler is put back afterwards."""
    def running(*a, **kw):
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):  # a real SIGTERM would end the test process
            raise AssertionError("no SIGTERM handler while notebooks run")
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(30)  # the handler raises here
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(pipeline, "_run_notebooks", running)
    monkeypatch.setattr(pipeline, "_validated", lambda args, overrides, chosen, root: (
        pipeline.load_profile(args.profile, overrides, root=root), [], None))
    monkeypatch.setattr(pipeline, "_stop_before_running", lambda *a: None)
    monkeypatch.setenv("CODESWITCH_OUTPUT_ROOT", str(tmp_path))
    before = signal.getsignal(signal.SIGTERM)
    t0 = time.monotonic()
    assert pipeline.main(["--only", "01"]) == 143 and time.monotonic() - t0 < 20
    assert capsys.readouterr().err == "terminated (SIGTERM): rerun to resume\n"
    assert signal.getsignal(signal.SIGTERM) == before
    assert issubclass(pipeline.Terminated, KeyboardInterrupt)  # run_notebook sets the partial copy aside as for Ctrl-C


def _as_a_terminal_starts_it() -> None:
    """In the child before it runs the driver: SIGINT (and SIGQUIT) at their default dispositions, as a shell running
    a command in the foreground leaves them.  A run started in the background of a non-interactive shell (``cmd &``
    in a script, ``nohup``) inherits them *ignored* (POSIX), and Python then installs no KeyboardInterrupt handler;
    three full-suite runs here started that way had this test fail (the Ctrl-C ignored, the 120 s cell run to its
    end), while CI, in the foreground, passed it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.mark.slow  # a kernel starts (about 10 s alone, up to a minute on a busy machine)
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_real_ctrl_c_during_a_notebook_prints_one_line_and_exits_130(tmp_path):
    """Ctrl-C as a terminal sends it: SIGINT to the whole foreground process group, while a kernel runs a cell."""
    root = _fake_root(tmp_path, "import pathlib, time\npathlib.Path('started').write_text('1')\ntime.sleep(120)")
    started = root / "notebooks" / "started"
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import faulthandler, signal, sys
        from codeswitch.pipeline import cli as pipeline

        faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test asks for every thread's stack if Ctrl-C seems ignored
        from codeswitch.pipeline.executors import executor_config

        def validated(args, overrides, chosen, root):
            prof = pipeline.load_profile(args.profile, overrides, root=root)
            return prof, [], executor_config(prof)

        pipeline._validated = validated  # the fake repository has no data; the check is not what is tested here
        sys.exit(pipeline.main(["--only", "01"]))
    """))
    env = {**os.environ, "CODESWITCH_HOME": str(root), "PYTHONPATH": str(REPO / "lib")}
    proc = subprocess.Popen([sys.executable, str(driver)], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=_as_a_terminal_starts_it)
    try:
        deadline = time.time() + 120
        while not started.exists() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert started.exists(), proc.communicate(timeout=30)
        state = _signal_state(proc.pid)  # what the driver's session does with SIGINT, for the message of a failure
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: every process of the foreground group
        # the kernel's shutdown and the .interrupted copy take seconds alone, over 60 s beside a loaded suite; an
        # ignored Ctrl-C still fails: the cell would end at 120 s and the run exit 0, not 130
        try:
            out, err = proc.communicate(timeout=45)
        except subprocess.TimeoutExpired:  # still running 45 s after the Ctrl-C: where is it?  (stacks on its stderr)
            state += f"; 45 s after the Ctrl-C: {_signal_state(proc.pid)}"
            os.kill(proc.pid, signal.SIGUSR1)
            out, err = proc.communicate(timeout=135)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, f"{state}\n{err[-6000:]}"
    assert err.strip().splitlines() == ["interrupted: rerun to resume"], err[-3000:]
    executed = root / "runs" / "smoke" / "notebooks"
    assert (executed / f"{pipeline.NOTEBOOKS[0].stem}.interrupted.ipynb").is_file()
    assert not (executed / pipeline.NOTEBOOKS[0].file).exists()  # no complete copy was made: none is claimed


def _signal_state(pid: int) -> str:
    """SIGINT in each thread of ``pid`` and of its session's other processes: blocked, ignored or caught (/proc; Linux)."""
    bit = 1 << (signal.SIGINT - 1)
    out = []
    for status in sorted(Path("/proc").glob("[0-9]*/status")):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            if os.getsid(int(status.parent.name)) != os.getsid(pid):
                continue
            tasks = sorted((status.parent / "task").glob("*/status"))
            blocked = [t.parent.name for t in tasks if int(dict(x.split(":", 1) for x in t.read_text().splitlines()
                                                                 if ":" in x)["SigBlk"], 16) & bit]
        except (OSError, ValueError, KeyError, ProcessLookupError):
            continue
        out.append(f"{status.parent.name} {fields.get('Name', '?').strip()}: ignored={bool(int(fields['SigIgn'], 16) & bit)} "
                   f"caught={bool(int(fields['SigCgt'], 16) & bit)} blocked in threads {blocked} of {len(tasks)}")
    return "; ".join(out) or "no /proc"


def test_each_process_has_its_own_progress_file(tmp_path):
    spec = pipeline.NOTEBOOKS[2]
    mine = pipeline.progress_path(tmp_path, spec)
    assert mine.parent == tmp_path and spec.stem in mine.name and str(os.getpid()) in mine.name
    code = ("import sys; from pathlib import Path; from codeswitch.pipeline import cli as p; "
            f"print(p.progress_path(Path(sys.argv[1]), p.NOTEBOOKS[2]))")
    other = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(REPO / "lib")}, check=True).stdout.strip()
    assert Path(other) != mine and Path(other).parent == tmp_path  # two runs of one notebook at once: two files


def test_a_killed_runs_progress_file_is_removed_by_the_next_run(tmp_path):
    from codeswitch.core import atomic

    dead = subprocess.Popen(["true"])
    dead.wait()
    spec = pipeline.NOTEBOOKS[2]
    left = pipeline.progress_path(tmp_path / "smoke", spec)
    left = left.with_name(left.name.replace(f"-{os.getpid()}-", f"-{dead.pid}-"))
    left.parent.mkdir(parents=True)
    left.write_text("50%\n")
    live = pipeline.progress_path(tmp_path / "smoke", spec)
    live.write_text("10%\n")
    atomic.prepare_output(tmp_path / "smoke")
    assert not left.exists() and live.exists()


def test_the_console_tails_this_process_s_progress_file_only(tmp_path, monkeypatch, capsys):
    """Two runs at once: the tail of one prints its own bars, never the other's."""
    spec = pipeline.NOTEBOOKS[2]
    other = tmp_path / f".{spec.stem}.progress.log"  # the file every run shared before
    other.write_text("the other run's bar\n")
    with pipeline._ProgressTail(pipeline.progress_path(tmp_path, spec)) as tail:
        with open(tail.path, "a") as f:
            f.write("my bar\n")
        time.sleep(0.5)
    out = capsys.readouterr().out
    assert "my bar" in out and "the other run's bar" not in out


def test_help_mentions_export_and_the_one_exit_code_convention(capsys):
    """Issue 42 (CLI): --help's usage line named no `export`; the exit codes of a paper run offline (2) and of its
    --check / --dry-run (1) were documented nowhere."""
    with pytest.raises(SystemExit):
        pipeline.main(["--help"])
    out = capsys.readouterr().out
    usage = out.split("\n\n", 1)[0]
    assert usage.startswith("usage: reproduce.sh [options]") and "reproduce.sh export DIR" in usage
    for code in ("0 ", "1 ", "2 ", "130 ", "143 "):
        assert f"\n  {code}" in out, code
    assert "`./reproduce.sh --profile paper` offline" in out and "`--check` and `--dry-run` of the same profile exit 1" in out
    docs = (REPO / "docs" / "running.md").read_text()
    assert "**Exit codes**" in docs and "| 130 | interrupted" in docs and "| 143 | terminated" in docs
