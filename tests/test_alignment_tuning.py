"""``alignment.tune`` (issue 39 §2): τ and η chosen on validation over a stated grid, each point its own alignment run;
the fine-tunes and the figure start from the chosen one, and the choice is a record."""

from __future__ import annotations

import math

import pytest

from codeswitch.core.profiles import load_profile


def _stages(tmp_path, **overrides):
    from codeswitch.alignment.plan import stages

    return stages(load_profile("smoke", overrides, output_root=tmp_path))


def test_tune_trains_every_grid_point_and_the_fine_tunes_hold_the_choice(tmp_path):
    from codeswitch.alignment.config import AlignRun, AlignTuneRun

    (aligns, fine, figure), (t_aligns, t_fine, t_figure) = _stages(tmp_path), _stages(tmp_path, **{"alignment.tune": True})
    assert {s.key_hash() for s in aligns} <= {s.key_hash() for s in t_aligns}  # the released point is the default's run
    n_sentence = sum(a.objective == "sentence" for a in aligns)
    assert len(t_aligns) == 9 * n_sentence + 3 * (len(aligns) - n_sentence)  # Lc: τ × η (3 × 3); Lm: η alone (3)
    assert all(isinstance(f.alignment, AlignRun) for f in fine if f.alignment is not None)
    held = {f.alignment.key_hash(): f.alignment for f in t_fine if f.alignment is not None}
    assert held and all(isinstance(t, AlignTuneRun) for t in held.values())
    lc = next(t for t in held.values() if t.runs[0].objective == "sentence")
    base = next(a for a in aligns if (a.objective, a.data, a.script, a.mode) ==
                (lc.runs[0].objective, lc.runs[0].data, lc.runs[0].script, lc.runs[0].mode))
    assert lc.runs[0] == base  # the released values first (ties keep them)
    tau, eta = base.temperature, base.reg_weight
    assert [(r.temperature, r.reg_weight) for r in lc.runs] == [
        (t, e) for t in (tau, round(tau * 0.1, 12), round(tau * 10, 12)) for e in (eta, round(eta * 0.1, 12), round(eta * 10, 12))]
    lm = next(t for t in held.values() if t.runs[0].objective == "word")
    assert {r.temperature for r in lm.runs} == {lm.runs[0].temperature} and len(lm.runs) == 3  # Lm tunes η only
    assert isinstance(t_figure[0].alignment, AlignTuneRun) and t_figure[0].key_hash() != figure[0].key_hash()
    with pytest.raises(Exception, match="tune_factors must be a non-empty list of positive factors"):
        from codeswitch.alignment import load

        load(load_profile("smoke", {"alignment.tune_factors": [0.0, 1.0]}))


def test_the_choice_is_the_best_validation_retrieval_and_is_recorded(tmp_path, monkeypatch):
    from codeswitch.alignment import experiment as E
    from codeswitch.alignment.config import AlignTuneRun
    from codeswitch.alignment.plan import cache_dir
    from codeswitch.alignment.tuning import choose
    from codeswitch.core.runs import RunCache

    profile = load_profile("smoke", {"alignment.tune": True}, output_root=tmp_path)
    (_, fine, _) = _stages(tmp_path, **{"alignment.tune": True})
    tune = next(f.alignment for f in fine if isinstance(f.alignment, AlignTuneRun) and f.alignment.runs[0].objective == "sentence")
    scores = [0.2, 0.5, 0.1, 0.5, 0.3, 0.0, 0.4, 0.2, 0.1]  # the best, 0.5, twice: the earlier point (index 1) is kept
    cache = RunCache(cache_dir(profile))
    for r, s in zip(tune.runs, scores):
        cache.put(r.key(), {"sentence_p1_after": s})
    monkeypatch.setattr(E, "_align", lambda *a: pytest.fail("every grid point is cached: nothing is aligned again"))
    chosen = E._chosen(profile, E.load(profile), tune)
    assert chosen == tune.runs[1]
    rec = cache.get(tune.key())
    assert rec["selected"] == tune.runs[1].key_hash() and rec["score"] == scores
    assert (rec["temperature"], rec["reg_weight"]) == (tune.runs[1].temperature, tune.runs[1].reg_weight)
    assert rec["grid"][0] == [tune.runs[0].temperature, tune.runs[0].reg_weight]
    from codeswitch.alignment.plan import TABLES
    from codeswitch.alignment.tables import _tuning_note

    table = next(t for t in TABLES.values() if t.mode == chosen.mode)
    (note,) = _tuning_note(profile, E.load(profile), table)  # the table names the chosen values
    assert f"τ = {chosen.temperature:g}, η = {chosen.reg_weight:g}" in note
    # a word run scores word P@1; where no point scored (NaN everywhere), the released values stay
    nan = choose(tune, [{"sentence_p1_after": math.nan}] * len(tune.runs))
    assert nan["selected"] == tune.runs[0].key_hash()


def test_a_fine_tune_under_tune_aligns_its_grid_and_starts_from_the_choice(backbones_dir, tmp_path):
    """End to end on the smoke data: a fine-tune whose alignment is tuned aligns every point it lacks, records the
    choice, and fine-tunes from the chosen weights."""
    import dataclasses

    from codeswitch import alignment as A
    from codeswitch.alignment.plan import cache_dir
    from codeswitch.core.runs import RunCache

    from .helpers import alignment_smoke

    cfg, _, fine, _ = alignment_smoke({"alignment.linear_head.num_train_epochs": 1, "alignment.tune": True,
                                       "alignment.tune_factors": [1.0, 10.0]}, output_root=tmp_path)
    spec = next(s for s in fine if s.alignment is not None and s.alignment.runs[0].mode == "linear_head"
                and s.alignment.runs[0].objective == "sentence" and s.task == "ner")
    record = A.run_one(dataclasses.replace(spec, num_train_epochs=1), cfg)
    cache = RunCache(cache_dir(cfg))
    choice = cache.get(spec.alignment.key())
    assert len(choice["score"]) == 4 and all(cache.get(r.key()) is not None for r in spec.alignment.runs)
    assert choice["selected"] in spec.alignment.candidates and "test" in record
