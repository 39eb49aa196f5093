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
    assert line.index("fails:") < line.index("4/4 comparisons hold")
    ok = claims.all_of("t", [("a", beats), ("b", tops[1])])
    assert ok.holds is True and "fails" not in ok.detail
    assert claims.all_of("t", [("a", beats), ("b", claims.Claim("t", None, "not run"))]).holds is None
