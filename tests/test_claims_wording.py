"""A composite claim's verdict line says why it fails (issue 42, item 7: "does not hold on the smoke data (6/6
comparisons hold; …)" read as a contradiction)."""

from __future__ import annotations

import pandas as pd

from codeswitch.core import claims


def test_all_of_names_the_failing_part_first():
    long = pd.DataFrame({"row": ["Lm", "Lc", "Baseline"] * 2, "column": ["dev"] * 3 + ["test"] * 3,
                         "mean": [60.0, 61.0, 50.0, 62.0, 61.0, 50.0]})
    beats = claims.greater(long, "t", pairs=[("Lm", "Baseline"), ("Lc", "Baseline")], columns=["dev", "test"])
    tops = [claims.best_is(long, "t", expected="Lm", where=c) for c in ("dev", "test")]
    assert beats.holds and not tops[0].holds and tops[1].holds
    c = claims.all_of("aligned rows beat the Baseline and Lm is the best",
                      [("aligned rows beat the Baseline", beats), ("Lm highest on dev", tops[0]), ("Lm highest on test", tops[1])])
    line = c.line("smoke")
    assert c.holds is False and "does not hold on the smoke data (fails: Lm highest on dev (highest:" in line, line
    assert line.index("fails:") < line.index("4/4 comparisons go the paper's way")
    ok = claims.all_of("t", [("a", beats), ("b", tops[1])])
    assert ok.holds is True and "fails" not in ok.detail
    assert claims.all_of("t", [("a", beats), ("b", claims.Claim("t", None, "not run"))]).holds is None


def _seeded(means: dict[str, float], std: float, n: int) -> pd.DataFrame:
    """One column, each row's mean with the same ± over ``n`` seeds (sample std)."""
    return pd.DataFrame({"row": list(means), "column": ["x"] * len(means), "mean": list(means.values()),
                         "std": [std] * len(means), "n": [n] * len(means)})


def test_a_verdict_states_direction_and_significance_apart():
    """Issue 38, item 5: "k/n comparisons go the paper's way; m/n significant (test, alpha)"."""
    long = _seeded({"A": 70.0, "B": 60.0, "C": 69.5}, std=1.0, n=5)
    c = claims.greater(long, "A beats B and C", pairs=[("A", "B"), ("A", "C")], columns=["x"])
    assert c.holds is True
    assert "2/2 comparisons go the paper's way; 1/2 significant (Student's t-test over seeds, α = 0.05)" in c.detail, c.detail


def test_a_best_of_verdict_counts_the_gaps_and_their_significance():
    """Issue 38, item 5, for "X is best" claims (ConCSE Tables 4-7, alignment's best scheme, ContrastiveMix's Table 3):
    the verdict rests on the ordering, and the line says against how many entries X is ahead and how many of those gaps
    are significant, along rows or columns alike; a significant gap the other way is counted apart."""
    long = _seeded({"A": 70.0, "B": 60.0, "C": 69.5}, std=1.0, n=5)
    c = claims.best_is(long, "A is best", expected="A", where="x")
    assert c.holds is True and c.detail.startswith("highest: A 70.00, C 69.50, B 60.00"), c.detail
    assert "A vs each other: 2/2 comparisons go the paper's way; 1/2 significant (Student's t-test over seeds" in c.detail
    # the same cells as columns of one row (ConCSE's sweeps): the same verdict and count
    swapped = long.rename(columns={"row": "column", "column": "row"})
    t = claims.best_is(swapped, "A is best", expected="A", along="column")
    assert t.holds is True and "A vs each other: 2/2 comparisons go the paper's way; 1/2 significant" in t.detail, t.detail
    # C is not best: behind A (not significantly), ahead of B (significantly); B is behind both, significantly
    notc = claims.best_is(long, "C is best", expected="C", where="x")
    assert notc.holds is False and "1/2 comparisons go the paper's way; 1/2 significant" in notc.detail, notc.detail
    notb = claims.best_is(long, "B is best", expected="B", where="x")
    assert notb.holds is False and "0/2 comparisons go the paper's way; 0/2 significant" in notb.detail
    assert "2 significant the other way" in notb.detail
    # the ± convention matters: population stds (ddof=0) of 3 seeds read as larger sample stds
    close = _seeded({"A": 62.5, "B": 62.0}, std=0.2, n=3)  # t = 3.06 with sample stds, 2.50 with population stds (df 4)
    assert "1/1 comparisons go the paper's way; 1/1 significant" in claims.best_is(close, "t", expected="A", where="x").detail
    assert "1/1 comparisons go the paper's way; 0/1 significant" in claims.best_is(close, "t", expected="A", where="x", ddof=0).detail
    one = claims.best_is(_seeded({"A": 70.0, "C": 69.5}, std=0.0, n=1), "t", expected="A", where="x")
    assert one.holds is True and "significance not testable" in one.detail, one.detail


def test_a_significance_claim_fails_on_significance_with_its_direction_stated():
    long = _seeded({"A": 70.0, "B": 60.0, "C": 69.5}, std=1.0, n=5)
    c = claims.greater(long, "A significantly beats B and C", pairs=[("A", "B"), ("A", "C")], columns=["x"],
                       needs_significance=True)
    assert c.holds is False
    assert "2/2 comparisons go the paper's way; 1/2 significant" in c.detail and "fails on significance" in c.detail, c.detail
    # one seed: no test can run; the verdict rests on the direction, and says significance was not testable
    one = claims.greater(_seeded({"A": 70.0, "C": 69.5}, std=0.0, n=1), "t", pairs=[("A", "C")], columns=["x"],
                         needs_significance=True)
    assert one.holds is True and "significance not testable" in one.detail, one.detail
    # a significant difference the wrong way is counted apart
    wrong = claims.greater(long, "t", pairs=[("B", "A")], columns=["x"])
    assert wrong.holds is False and "0/1 comparisons go the paper's way; 0/1 significant" in wrong.detail
    assert "1 significant the other way" in wrong.detail


def test_the_magnitude_rule_scales_with_the_stated_value():
    """Same sign and within a factor of two of the stated gain, for every stated magnitude."""
    assert claims.magnitude("g", [("a", 1.0, 1.77)]).holds is True  # 1.77 / 2 = 0.885 ≤ 1.0
    assert claims.magnitude("g", [("a", 0.8, 1.77)]).holds is False
    assert claims.magnitude("g", [("a", 3.6, 1.77)]).holds is False  # above 2 × 1.77
    assert claims.magnitude("g", [("a", -1.77, 1.77)]).holds is False  # the wrong sign
    assert claims.magnitude("g", [("a", 0.5, 0.76)]).holds is True and claims.magnitude("g", [("a", 0.3, 0.76)]).holds is False
    assert claims.magnitude("g", [("a", None, 1.77)]).holds is None


def test_the_papers_arithmetic_is_checked_to_its_printed_digit():
    assert claims.arithmetic("avg", 1.77, 74.36 - 72.59) == ""
    assert claims.arithmetic("SA", 7.32, (68.9 - 64.2) / 64.2 * 100) == ""
    said = claims.arithmetic("relative", 8.9, 0.051 / 0.569 * 100)
    assert "stated 8.9" in said and "→ 9.0" in said, said
