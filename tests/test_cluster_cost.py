"""Wall-clock time of the paper grid on N GPUs (issue 16): list scheduling over the grid's jobs."""

from __future__ import annotations

import pytest

from benchmarks.cost import Job, assumed_report, critical_path, grid_jobs, schedule, wall_clock


def test_schedule_respects_dependencies_and_gpu_count():
    jobs = [Job("A", 3.0), Job("B", 1.0), Job("C", 1.0, after=("A",)), Job("D", 2.0)]
    assert critical_path(jobs) == {"A": 4.0, "B": 1.0, "C": 1.0, "D": 2.0}
    assert schedule(jobs, 1) == 7.0  # everything one after another
    assert schedule(jobs, 2) == 4.0  # A then C on one GPU; D then B on the other
    assert schedule(jobs, 8) == 4.0  # the critical path A -> C
    assert schedule([Job("big", 4.0, gpus=2), Job("small", 1.0)], 2) == 3.0  # 2-GPU job takes both GPUs for 2 h
    with pytest.raises(ValueError, match="not in the grid"):
        schedule([Job("C", 1.0, after=("X",))], 1)
    with pytest.raises(ValueError, match="cycle"):
        schedule([Job("a", 1.0, after=("b",)), Job("b", 1.0, after=("a",))], 1)
    with pytest.raises(ValueError, match="more than 1 GPU"):
        schedule([Job("big", 1.0, gpus=2)], 1)


def test_paper_grid_estimate_is_within_its_bounds():
    jobs = grid_jobs(assumed_report(0.4, 989.0, 20000.0))
    w = wall_clock(jobs, (1, 8, 32))
    assert w["runs"] == len(jobs) == 620
    assert w["hours"][1] == pytest.approx(w["gpu_hours"])
    for n in (8, 32):
        lower = max(w["gpu_hours"] / n, w["critical_path"])
        assert lower - 1e-9 <= w["hours"][n] <= w["gpu_hours"] / n + w["critical_path"] + 1e-9  # Graham's bound
    assert w["hours"][32] < w["hours"][8] < w["hours"][1]
    assert w["longest"][0].startswith("05/mdpr")  # mDPR encodes all 13 target corpora
