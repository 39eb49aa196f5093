"""A claim's verdict is "not checked" when the runs behind its table did not learn.

A verdict computed on runs that learned nothing (notebook 02 on the real Koglish-GLUE sample, 8 optimiser steps: CoLA
at the majority class, STS-B Spearman about 0) says nothing about the paper.  :func:`codeswitch.core.claims.learned`
turns it into "not checked: k of n runs did not learn (which); computed on them: …"; the threshold is "beat the
baseline" (:attr:`codeswitch.core.learning.Learning.beat_baseline`), not CI's margin.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from codeswitch.core import claims
from codeswitch.core.learning import UNLEARNED_NAMED, Learning, entries, learning
from codeswitch.core.profiles import load_profile

from .conftest import REPO

CLAIM = claims.Claim("A > B", False, "0/1 comparisons go the paper's way", "Paper §1")
LEARNED = learning("Spearman x100, STS-B test (en)", 25.0, 0.0, baseline_name="chance", margin=20.0)
FLAT = learning("MCC x100, cola test (en)", 0.0, 0.0, baseline_name="majority class", margin=10.0)
FLAT_SAID = "MCC x100, cola test (en) 0 vs majority class 0"


def test_every_run_learned_leaves_the_claim_unchanged():
    assert claims.learned(CLAIM, [("CoLA seed 1", LEARNED), ("CoLA seed 2", LEARNED)]) is CLAIM
    assert claims.learned(CLAIM, []) is CLAIM and claims.learned(None, [("CoLA seed 1", FLAT)]) is None


def test_a_run_that_did_not_learn_makes_the_verdict_not_checked():
    c = claims.learned(CLAIM, [("STS-B · MiniLM seed 1", LEARNED), ("CoLA · MiniLM seed 1", FLAT)])
    said = f"1 of 2 runs did not learn (CoLA · MiniLM seed 1: {FLAT_SAID})"
    assert c.holds is None and c.computed is False and c.not_learned == said
    assert c.detail == CLAIM.detail and c.text == CLAIM.text and c.source == CLAIM.source
    assert c.verdict == f"not checked: {said}"
    assert c.line("quick") == (f"**Claim** (Paper §1): A > B — not checked: {said}; computed on them: not supported "
                               "(0/1 comparisons go the paper's way).")
    assert c.line("smoke") == (f"**Claim** (Paper §1): A > B — not checked: {said}; computed on them: does not hold on the "
                               "smoke data (0/1 comparisons go the paper's way).")
    assert c.index_cell("quick") == f"– not checked: {said}"
    assert c.smoke_verdict() == f"not checked: {said}" and c.index_cell("smoke") == f"smoke: not checked: {said}"
    assert claims.Claim(**c.as_dict()) == c  # INDEX.md rebuilds the claim from its entry
    assert claims.learned(c, [("CoLA · MiniLM seed 1", FLAT)]).computed is False  # applied twice: the computed verdict stays


def test_a_built_in_claim_over_runs_that_did_not_learn_says_so_first():
    c = claims.learned(claims.built_into(CLAIM, "made so"), [("r", FLAT)])
    assert c.smoke_verdict() == f"not checked: 1 of 1 runs did not learn (r: {FLAT_SAID})"
    assert f"computed on them: built into the smoke data: made so (measured: {CLAIM.detail})." in c.line("smoke")


def test_k_of_n_names_the_first_runs_and_counts_the_rest():
    runs = [(f"run {i}", FLAT if i % 2 else LEARNED) for i in range(1, 11)]  # runs 1, 3, 5, 7, 9 did not learn
    c = claims.learned(CLAIM, runs)
    assert UNLEARNED_NAMED == 3
    assert c.not_learned == (f"5 of 10 runs did not learn (run 1: {FLAT_SAID}; run 3: {FLAT_SAID}; run 5: {FLAT_SAID}; "
                             "2 more)")


def test_a_mapping_entry_is_one_run_and_names_the_entry_that_missed():
    both = {"MRR vs untrained encoder": LEARNED, "Recall vs random ranking": FLAT}
    c = claims.learned(CLAIM, [("ContrastiveMix seed 1 (mrtydi-ko)", both), ("mDPR seed 1 (mrtydi-ko)", {"MRR": LEARNED})])
    assert c.not_learned == f"1 of 2 runs did not learn (ContrastiveMix seed 1 (mrtydi-ko) · Recall vs random ranking: {FLAT_SAID})"
    assert [n for n, _ in entries(both)] == ["MRR vs untrained encoder", "Recall vs random ranking"]


def test_a_run_without_a_learning_entry_is_not_counted():
    c = claims.learned(CLAIM, [("old record", None), ("no entry", {}), ("other", {"x": 1}), ("CoLA seed 1", FLAT)])
    assert c.not_learned == f"1 of 1 runs did not learn (CoLA seed 1: {FLAT_SAID})"
    assert claims.learned(CLAIM, [("old record", None), ("no entry", {})]) is CLAIM


@pytest.mark.parametrize("score", [math.nan, math.inf])
def test_a_non_finite_score_did_not_learn(score):
    entry = Learning("loss", score, 1.0, "chance", 0.5, higher_is_better=score != math.inf)
    assert not entry.beat_baseline and not entry.passed
    c = claims.learned(CLAIM, [("run", entry)])
    assert c.holds is None and c.not_learned == f"1 of 1 runs did not learn (run: loss {score:.4g} vs chance 1)"


def test_the_verdict_threshold_is_the_baseline_not_the_margin():
    """A pretrained encoder gaining 3 points over its untrained self learned, under CI's 5-point margin."""
    pretrained = Learning("mean Spearman x100", 63.0, 60.0, "untrained encoder", 5.0)
    assert pretrained.beat_baseline and not pretrained.passed
    assert claims.learned(CLAIM, [("ConCSE seed 1", pretrained)]) is CLAIM
    lower = Learning("MLM loss", 5.0, 5.5, "chance", 1.0, higher_is_better=False)  # lower is better: a gain of 0.5
    assert lower.beat_baseline and not Learning("MLM loss", 5.5, 5.5, "chance", 1.0, higher_is_better=False).beat_baseline


def _table(tmp_path, profile: str, runs) -> tuple[str, dict, str]:
    """A table whose claim (A > B, supported by its numbers) is read beside ``runs``: its Markdown, its index entry
    (read back with ``read_index``) and its INDEX.md row."""
    from codeswitch.core.report import comparison, read_index, save_table
    from codeswitch.pipeline import cli as pipeline

    cfg = load_profile(profile, root=REPO, output_root=tmp_path)
    measured = pd.DataFrame({"row": ["A", "B"], "column": ["Avg."] * 2, "mean": [2.0, 1.0], "std": [0.0, 0.0], "n": [1, 1]})
    wide, long = comparison(measured, paper=None, table=None)
    claim = claims.greater(long, "A > B", pairs=[("A", "B")], columns=["Avg."], source="Paper §1")
    md = save_table(wide, "demo_learning", cfg, caption="demo", long=long, claim=claim, learning=runs,
                    inputs={"koglish": ["synthetic"]})["md"].read_text(encoding="utf-8")
    [entry] = [e for e in read_index(cfg.figures_dir) if e["name"] == "demo_learning"]
    index = pipeline.write_index(profile, output_root=tmp_path, root=REPO).read_text(encoding="utf-8")
    return md, entry, next(line for line in index.splitlines() if "`demo_learning`" in line)


def test_save_table_writes_not_checked_in_the_note_and_the_index(tmp_path):
    md, entry, row = _table(tmp_path, "quick", [("CoLA · MiniLM seed 1", FLAT), ("STS-B · MiniLM seed 1", LEARNED)])
    said = f"1 of 2 runs did not learn (CoLA · MiniLM seed 1: {FLAT_SAID})"
    assert (f"- **Claim** (Paper §1): A > B — not checked: {said}; computed on them: supported (1/1 comparisons go the "
            "paper's way;") in md, md
    assert "**supported** by this run" not in md
    assert entry["claim"]["holds"] is None and entry["claim"]["computed"] is True and entry["claim"]["not_learned"] == said
    assert "– not checked: 1 of 2 runs did not learn (CoLA · MiniLM seed 1: MCC x100, cola test (en) 0 vs majority class 0)" in row, row
    assert "✓" not in row


def test_save_table_over_runs_that_learned_keeps_the_verdict(tmp_path):
    md, entry, row = _table(tmp_path, "quick", [("STS-B · MiniLM seed 1", LEARNED), ("old record", None)])
    assert "— **supported** by this run (1/1 comparisons" in md and "not checked" not in md
    assert entry["claim"]["holds"] is True and "not_learned" not in entry["claim"] and "✓ supported" in row


def test_glue_table2_reads_its_runs_learning(tmp_path):
    """Notebook 02's wiring: Table 2's claims are read beside the learning entries of the runs it summarises."""
    from codeswitch.core.experiment import Results
    from codeswitch.glue.tables import tables

    from .helpers import glue_spec

    specs, records = [], []
    for seed in (1, 2):
        for train, test, score in (("en", ("en", "cs"), 90.0), ("cs", ("cs",), 50.0 if seed == 2 else 80.0)):
            specs.append(glue_spec(train=train, select=train, test=test, seed=seed))
            records.append({"test": {lang: score - 5.0 * (lang != train) for lang in test}, "metric": "accuracy",
                            "best_epoch": 1, "learning": learning(f"accuracy x100, sst2 test ({train})", score, 50.0,
                                                                  baseline_name="majority class", margin=10.0)})
    profile = load_profile("quick", root=REPO, output_root=tmp_path)
    md = tables(Results(tuple(specs), tuple(records)), profile)["md"].read_text(encoding="utf-8")
    said = "not checked: 1 of 4 runs did not learn (SST-2 · tiny (trained cs) seed 2: accuracy x100, sst2 test (cs) 50 vs majority class 50)"
    assert md.count(said) == 2, md  # both claims of Table 2

    # the notebook's H1/H2 lines read the same runs: a backbone whose runs did not all learn gets no verdict
    from codeswitch.glue.tables import frame, hypotheses, verdicts

    results = Results(tuple(specs), tuple(records))
    h = hypotheses(frame(results))
    lines = verdicts(h, profile, results)
    assert len(lines) == 2 and all(f"{said}; computed: " in line for line in lines), lines
    assert lines[1].startswith("tiny: H2 CS2CS > EN2CS not checked: 1 of 4 runs") and "computed: does NOT hold (mean gain = -20.00 points" in lines[1]
    learned_all = Results(tuple(specs), tuple({**r, "learning": LEARNED} for r in records))
    assert verdicts(h, profile, learned_all) == verdicts(h, profile)  # every run learned: the verdicts as before
    assert not any("not checked" in line for line in verdicts(h, profile))


def test_alignment_tables_read_their_fine_tuning_runs(tmp_path):
    """Notebook 06's wiring: Table 3.1's claims read beside the learning entries of its fine-tuning runs."""
    from codeswitch import alignment as A
    from codeswitch.alignment.plan import TABLES, cells, finetune_spec
    from codeswitch.alignment.tables import build_table
    from codeswitch.core.experiment import Results
    from codeswitch.core.profiles import seeds_for

    profile = load_profile("smoke", root=REPO, output_root=tmp_path)
    c, table = A.config.load(profile), TABLES["table3_1"]
    runs = [(s, task, seed) for s, task in cells(table, c) for seed in seeds_for(profile, c.seeds)]
    specs = tuple(finetune_spec(profile, c, table, s, task, seed) for s, task, seed in runs)
    records = tuple({"validation": 60.0 + i, "test": 60.0 + i, "learning": FLAT if i == 1 else LEARNED} for i in range(len(runs)))
    md = build_table(Results(specs, records), profile, c, "table3_1")["md"].read_text(encoding="utf-8")
    s, task, seed = runs[1]
    assert f"— not checked: 1 of {len(runs)} runs did not learn ({s.row} · {task} seed {seed}: {FLAT_SAID}); computed on them: " in md, md


def test_contrastivemix_tables_read_the_evaluations_they_summarise(tmp_path):
    """Notebook 05's wiring: Table 3 reads the dense evaluations of its benchmark and languages only (a MIRACL
    evaluation that did not learn is Table 2's, not Table 3's)."""
    from codeswitch.contrastivemix import load
    from codeswitch.contrastivemix.plan import VARIANTS
    from codeswitch.contrastivemix.tables import Scores, table3

    profile = load_profile("smoke", {"contrastivemix.ablation_languages": ["ko"]}, root=REPO, output_root=tmp_path)
    rows = [dict(variant=v.key, row=v.label or v.ablation_label, benchmark="mrtydi", language="ko", seed=1, setting="hybrid",
                 metric=metric, value=0.4, weight=0.5, report_split="test")
            for v in VARIANTS.values() for metric in ("mrr@100", "recall@100")]
    checks = {"MRR vs untrained encoder": LEARNED, "Recall vs random ranking": FLAT}
    learned = [("contrastivemix", "mrtydi", "ko", "ContrastiveMix seed 1 (mrtydi-ko)", checks),
               ("mdpr", "mrtydi", "ko", "mDPR seed 1 (mrtydi-ko)", {"MRR vs untrained encoder": LEARNED}),
               ("mdpr", "miracl", "ko", "mDPR seed 1 (miracl-ko)", {"MRR vs untrained encoder": FLAT})]
    md = table3(Scores(pd.DataFrame(rows), {}, {}, learned), profile, load(profile))["md"].read_text(encoding="utf-8")
    assert ("— not checked: 1 of 2 runs did not learn (ContrastiveMix seed 1 (mrtydi-ko) · Recall vs random ranking: "
            f"{FLAT_SAID}); computed on them: ") in md, md


def test_concse_tables_read_each_studys_runs(tmp_path):
    """Notebooks 03 and 04's wiring: each table reads the learning entries of its own study's runs (a Table 5 run that
    did not learn is Table 5's, not Table 3's), each named by its row or column and seed."""
    import dataclasses

    from codeswitch import concse as C
    from codeswitch.core.experiment import Results

    from .helpers import tiny_concse_spec

    spec, profile = tiny_concse_spec(tmp_path)
    specs = [dataclasses.replace(spec, study="table3", method=m, seed=seed) for m in ("simcse", "concse") for seed in (1, 2)]
    specs.append(dataclasses.replace(spec, study="table5", label="0.05", temperature=0.05, seed=1))
    records = [{"test": {"stsb": 60.0 + i}, "best_epoch": 1, "dev": 60.0, "learning": FLAT if i == 4 else LEARNED}
               for i in range(len(specs))]
    paths = C.tables(Results(tuple(specs), tuple(records)), profile)
    assert set(paths) == {"concse_table3", "concse_table5"}
    assert "did not learn" not in paths["concse_table3"]["md"].read_text(encoding="utf-8")
    assert (f"— not checked: 1 of 1 runs did not learn (temperature τ 0.05 seed 1: {FLAT_SAID}); computed on them: "
            in paths["concse_table5"]["md"].read_text(encoding="utf-8"))
