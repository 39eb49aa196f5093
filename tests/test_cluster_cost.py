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
    # 02-05: 620 + 05's 13 untrained-backbone encodings (one per target corpus); 06: 105 (the 4 MUSE lexicon alignments
    # priced); 07: 436
    assert w["runs"] == len(jobs) == 1174
    assert sum(j.name.startswith("05/untrained-") for j in jobs) == 13
    assert w["hours"][1] == pytest.approx(w["gpu_hours"])
    for n in (8, 32):
        lower = max(w["gpu_hours"] / n, w["critical_path"])
        assert lower - 1e-9 <= w["hours"][n] <= w["gpu_hours"] / n + w["critical_path"] + 1e-9  # Graham's bound
    assert w["hours"][32] < w["hours"][8] < w["hours"][1]
    assert w["longest"][0].startswith("05/mdpr")  # mDPR encodes all 13 target corpora


def test_06_07_jobs_follow_the_plan_and_wait_for_their_pretraining():
    from codeswitch import calbert as C
    from codeswitch.calbert.config import load as calbert_load

    from benchmarks.cost import _calbert_profile

    grid = grid_jobs(assumed_report(0.4, 989.0, 20000.0))
    jobs = {j.name: j for j in grid}
    assert len(jobs) == len(grid)  # names are unique: dependencies name one job each
    profile = _calbert_profile("paper", None)
    c = calbert_load(profile)
    pre, fine = C.stages(profile)
    # 07's fine-tunings: tasks x (backbones x variants + scratch models) x seeds, as the plan builds them
    scratch = len(c.scratch.architectures) * len(c.scratch.tokenizers)
    expected = sum(len(c.backbones) * len(c.task(t).variants) + scratch for t in ("sail", "iitp")) * len(c.seeds)
    assert len(fine.specs) == expected == 420
    j07 = [j for n, j in jobs.items() if n.startswith("07/")]
    pre_jobs = {n for n in jobs if n.startswith("07/pretrain-")}
    assert len(pre_jobs) == len(pre.specs) == 16
    assert len(j07) == len(pre.specs) + len(fine.specs)
    for j in j07:
        assert j.hours > 0 and j.hours == j.hours  # finite, positive
        if j.name in pre_jobs:
            assert j.after == ()
        elif "/none/" in j.name:
            assert j.after == ()  # the backbone as it ships: no pre-training
        else:
            assert len(j.after) == 1 and j.after[0] in pre_jobs, j
    assert jobs["07/sail/BERT/mnrl/seed11111"].after == ("07/pretrain-BERT-mnrl",)
    assert jobs["07/iitp/RoBERTa-big/scratch/seed11111"].after == ("07/pretrain-RoBERTa-big",)
    # a pre-training ends before its fine-tunings start: the critical path runs through it
    level = critical_path(list(jobs.values()))
    assert level["07/pretrain-BERT-mnrl"] > level["07/sail/BERT/mnrl/seed11111"]
    # 06: fine-tunings from a parallel-corpus alignment wait for it
    j06 = [j for n, j in jobs.items() if n.startswith("06/")]
    aligns = {n for n in jobs if n.startswith("06/align-")}
    assert len(aligns) == 10 and all(jobs[a].hours > 0 for a in aligns)  # 6 on the parallel corpus, 4 on the MUSE lexicon
    assert any(j.after for j in j06) and all(set(j.after) <= aligns for j in j06)
