"""Issue 40 item 2: several runs on one GPU under CUDA MPS, one control daemon per job, started only where GPUs are
visible and nvidia-cuda-mps-control is on PATH; checked on the CPU with a fake binary that logs its calls."""

from __future__ import annotations

import dataclasses
import os
import stat

import pytest

from codeswitch.core.profiles import load_profile
from codeswitch.core.runs import RunCache, run_grid
from codeswitch.pipeline.executors import executor_config
from codeswitch.pipeline.mps import CLIENT_ENV, mps_daemon


@pytest.fixture
def fake_mps(tmp_path, monkeypatch):
    """A fake nvidia-cuda-mps-control on PATH; returns the file its calls (argv, MPS env, GPUs, stdin) go to."""
    calls, bin_dir = tmp_path / "mps-calls.log", tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nvidia-cuda-mps-control"
    fake.write_text("#!/bin/sh\n{ echo \"call argv=$* pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY "
                    "gpus=$CUDA_VISIBLE_DEVICES\"; [ \"$1\" = \"-d\" ] || echo \"stdin=$(cat)\"; } >> " + str(calls) + "\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for name in CLIENT_ENV:
        monkeypatch.delenv(name, raising=False)
    return calls


def test_the_daemon_starts_with_its_own_folders_and_quits(fake_mps, tmp_path):
    job = tmp_path / "job"
    with mps_daemon(["0", "1"], 4, job, say=lambda m: None) as env:
        assert env == {"CUDA_MPS_PIPE_DIRECTORY": str(job / "pipe"), "CUDA_MPS_LOG_DIRECTORY": str(job / "log")}
        assert all(os.environ[k] == v for k, v in env.items())  # what spawned workers inherit
        assert (job / "pipe").is_dir() and (job / "log").is_dir()
        assert fake_mps.read_text() == f"call argv=-d pipe={job / 'pipe'} log={job / 'log'} gpus=0,1\n"
    assert not any(k in os.environ for k in CLIENT_ENV)
    assert fake_mps.read_text().splitlines()[1:] == [f"call argv= pipe={job / 'pipe'} log={job / 'log'} gpus=0,1",
                                                     "stdin=quit"]


@pytest.mark.parametrize("gpus, runs, enabled, why", [
    (["0"], 1, True, None),  # one run per GPU: nothing to share
    ([], 4, True, None),  # no GPU (a CPU machine)
    (["0"], 4, False, "executor.local.mps is off"),
])
def test_the_daemon_starts_only_where_it_applies(fake_mps, tmp_path, gpus, runs, enabled, why):
    said = []
    with mps_daemon(gpus, runs, tmp_path / "job", enabled=enabled, say=said.append) as env:
        assert env is None and not any(k in os.environ for k in CLIENT_ENV)
    assert not fake_mps.exists()
    assert (why is None and not said) or why in said[0]


def test_no_binary_no_daemon(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nvidia-cuda-mps-control nowhere
    said = []
    with mps_daemon(["0"], 4, tmp_path / "job", say=said.append) as env:
        assert env is None
    assert "nvidia-cuda-mps-control is not on PATH" in said[0] and "time-slicing" in said[0]


def _mps_env(spec):
    return {k: os.environ.get(k) for k in (*CLIENT_ENV, "CUDA_VISIBLE_DEVICES")}


def test_local_pool_runs_its_workers_under_the_jobs_daemon(fake_mps, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    prof = load_profile("smoke", output_root=tmp_path)
    ex = dataclasses.replace(executor_config(prof, kind="local", runs_per_gpu=2), poll_seconds=0.2)
    assert ex.local.mps  # on by default: it applies only where the daemon exists
    results = run_grid(RunCache(prof.runs_dir / "toy"), [{"n": i} for i in range(2)], _mps_env, desc="mps", executor=ex)
    pipe = {r["CUDA_MPS_PIPE_DIRECTORY"] for r in results}
    assert len(pipe) == 1 and pipe.pop().endswith(os.path.join("mps", "pipe")) and {r["CUDA_VISIBLE_DEVICES"] for r in results} == {"0"}
    calls = fake_mps.read_text().splitlines()
    assert [c.split()[1] for c in calls if c.startswith("call")] == ["argv=-d", "argv="] and calls[-1] == "stdin=quit"
    out = capsys.readouterr().out
    assert "CUDA MPS: control daemon started for GPUs 0" in out and "CUDA MPS: control daemon stopped" in out
