"""Fault injection, round three (issue 41 item 9): Slurm with its controller down, and a job's cause read from its log.

No Slurm needed: submitit's executor and jobs are fakes, ``squeue`` is a fake that stops answering and answers again,
and the loop's clock is a fake that a poll's sleep moves on (minutes of a controller outage in milliseconds).  On the
code before issue 41 these fail: the same queue line was printed every minute and nothing said the controller was down;
a job whose log says "Unable to contact slurm controller" was reported as "cancelled, or its node lost"; submitit's
"Bypassing sacct error" came once per job and poll.
"""

from __future__ import annotations

import dataclasses
import logging
import time as real_time

import pytest

from codeswitch.core.profiles import load_profile
from codeswitch.pipeline import submitit_jobs, tasks
from codeswitch.pipeline.executors import execute, executor_config
from codeswitch.pipeline.tasks import Task

from .helpers import fake_submitit_executor

DOWN = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


class _Clock:
    """``time`` as the executors' loop reads it: ``monotonic`` moves only when the loop sleeps."""

    def __init__(self):
        self.t = 1000.0

    def monotonic(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s

    def __getattr__(self, name):
        return getattr(real_time, name)


def _toy(spec, out):
    return {"n": spec["n"]}


def _fake_slurm(monkeypatch, tmp_path, job_class, squeue):
    import submitit

    clock = _Clock()

    FakeExecutor = fake_submitit_executor(lambda i, folder: job_class(i, folder, clock))

    monkeypatch.setattr(submitit, "AutoExecutor", FakeExecutor)
    monkeypatch.setattr(submitit_jobs, "time", clock)
    monkeypatch.setattr(tasks, "time", clock)  # the queue's progress line
    monkeypatch.setattr(submitit_jobs, "_squeue_ids", lambda: squeue(clock))
    prof = load_profile("smoke", output_root=tmp_path)
    ex = executor_config(prof, kind="slurm")
    return clock, dataclasses.replace(ex, poll_seconds=30.0, slurm=dataclasses.replace(ex.slurm, vanished_s=120.0))


def test_a_controller_outage_is_said_once_and_the_queue_line_is_not_repeated(tmp_path, monkeypatch, capsys, caplog):
    submitit_log = logging.getLogger("submitit")

    class Job:  # running through the outage; done 10 minutes in; its status check fails while sacct cannot answer
        def __init__(self, i, folder, clock):
            self.job_id, self.clock = f"77_{i}", clock
            self.paths = type("Paths", (), {"stderr": folder / f"77_{i}_0_log.err", "stdout": None})()

        def done(self) -> bool:
            if self.clock.t < 1000 + 480:
                submitit_log.warning(f"Call #{int(self.clock.t)} - Bypassing sacct error Command '['sacct']' returned "
                                     "non-zero exit status 1., status may be inaccurate.")
            return self.clock.t >= 1000 + 600

        def result(self):
            return "ok"

    def squeue(clock):  # down from the first poll for 8 minutes
        if clock.t < 1000 + 480:
            getattr(submitit_jobs, "_SQUEUE_ERROR", {})["text"] = DOWN  # (what the real squeue wrapper records)
            return None
        return {"77_0", "77_1", "77_2"}

    clock, ex = _fake_slurm(monkeypatch, tmp_path, Job, squeue)
    tasks = [Task(str(tmp_path / "toy"), {"n": i}, _toy) for i in range(3)]
    with caplog.at_level(logging.WARNING, logger="submitit"):
        assert execute(tasks, ex, desc="toy", raise_on_failure=False) == []
    out = capsys.readouterr().out
    assert out.count("the Slurm controller does not answer") == 1 and DOWN in out
    assert out.count("the Slurm controller answers again (after 480 s)") == 1
    during = out.split("the Slurm controller answers again")[0]
    assert during.count("] queue: 0 done, 0 running, 3 pending") == 1, out  # not once a minute through the outage
    # submitit's sacct line: once a poll at most (3 jobs each logged it every poll)
    polls = 480 // 30 + 1
    sacct = [r for r in caplog.records if "Bypassing sacct error" in r.getMessage()]
    assert 1 <= len(sacct) <= polls
    assert not any(isinstance(f, submitit_jobs._OncePerPoll) for f in submitit_log.filters)  # removed after the loop


def test_a_job_whose_log_says_the_controller_was_unreachable_is_reported_with_that_cause(tmp_path, monkeypatch):
    class Gone:  # left the queue without a result; submitit (no accounting) never says it is done
        def __init__(self, i, folder, clock):
            self.job_id = f"88_{i}"
            folder.mkdir(parents=True, exist_ok=True)
            self.paths = type("Paths", (), {"stderr": folder / f"88_{i}_0_log.err", "stdout": folder / f"88_{i}_0_log.out"})()
            if i == 0:
                self.paths.stderr.write_text("starting\nsrun: error: Unable to contact slurm controller (connect failure)\n")
                self.paths.stdout.write_text("epoch 1\n")

        def done(self) -> bool:
            return False

    clock, ex = _fake_slurm(monkeypatch, tmp_path, Gone, lambda clock: {"9999_0"})
    tasks = [Task(str(tmp_path / "toy"), {"n": i}, _toy) for i in range(2)]
    failures = {f.error.split()[2]: f for f in execute(tasks, ex, desc="toy", raise_on_failure=False)}
    assert set(failures) == {"88_0", "88_1"}
    first, second = failures["88_0"].error, failures["88_1"].error
    assert "its log says 'srun: error: Unable to contact slurm controller (connect failure)'" in first
    assert "cancelled, or its node lost" not in first and failures["88_0"].log.endswith("88_0_0_log.err")
    assert "cancelled, or its node lost (its log names no cause" in second  # no cause in its log: the old guess, said so


@pytest.mark.parametrize("line, found", [
    ("slurmstepd: error: *** JOB 12 ON n1 CANCELLED AT 2026-01-01T00:00:00 DUE TO TIME LIMIT ***", True),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=12.0", True),
    ("Epoch 3: loss 0.41", False),
])
def test_log_cause_reads_the_line_that_says_why(tmp_path, line, found):
    log = tmp_path / "job.err"
    log.write_text("x" * 200_000 + "\n" + line + "\n")  # only the tail is read
    assert submitit_jobs.log_cause(log, tmp_path / "absent.out") == (line if found else None)
