"""No smoke table is degenerate (see tests/degenerate.py): settings make a difference, no metric at a bound, seeds differ."""

from __future__ import annotations

import pytest

from .degenerate import scan, scan_table


def _csv(tmp_path, name, text):
    p = tmp_path / f"{name}.csv"
    p.write_text(text)
    return p


def test_scanner_finds_each_kind(tmp_path):
    flat = _csv(tmp_path, "t7", "row,column,mean,std,n\nSTS-B,0.5,25.2,0.0,1\nSTS-B,1,25.2,0.0,1\nSTS-B,2,25.3,0.0,1\n")
    assert scan_table(flat) == ["identical columns: '0.5' = '1' over 1 row(s)"]
    same = _csv(tmp_path, "t32", "row,column,mean,std,n\nLm,NER,67.1,3.0,2\nLc,NER,67.1,3.0,2\nBase,NER,60.0,1.0,2\n")
    assert scan_table(same) == ["identical rows: 'Lc' = 'Lm' over ['NER']"]
    pinned = _csv(tmp_path, "cos", "row,column,mean,std,n\nq,ar,1.0,0.0,46\nq,ko,0.9,0.1,46\n")
    assert scan_table(pinned) == ["pinned: 'q' / 'ar' = 1 (scale 0–1)", "seeds agree: 'q' / 'ar': std 0 over n=46"]
    na = _csv(tmp_path, "t6", "row,column,mean,std,n\nSTS-B,N/A,24.4,,1\nSTS-B,1.2,25.2,,1\n")
    assert scan_table(na) == []
    assert set(scan(tmp_path)) == {"t7", "t32", "cos"}


def test_counting_tables_are_skipped(tmp_path):
    assert scan_table(_csv(tmp_path, "concse_table1", "row,column,mean,std,n\nA,Train,0,,1\nB,Train,0,,1\n")) == []


#: Smoke tables known to be degenerate, each with why: open work of issue 23.  Any finding in another table fails
#: the test, and so does a listed table that is no longer degenerate (remove it), so the list cannot go stale.
KNOWN_DEGENERATE = {
    "contrastivemix_table1": "each '· tuned on test (released code)' row equals its main row: both tunings pick the smallest "
                             "positive hybrid weight.  Where Lucene retrieves only a few passages, its last ones tie at w = 0 with "
                             "every passage it missed (a missing passage gets the run's minimum, as the released code), any "
                             "positive w breaks the ties, a larger one lets the weaker dense score overrule BM25; dev and test "
                             "are built alike (BM25 MRR 68.12 on both).  Also with the paper's 21 weights (measured).  A trial with full BM25 "
                             "rankings (branch cmdegen-data-trial: distractors that share the questions' words, varied phrasings and "
                             "splits, 21 weights) made the tunings differ and this table pass, but left Tables 2 and 4 with equal "
                             "rows and two runs under the learning margin (measured).  Session 9 (branch cm23-trial: every "
                             "other-world passage ends with one sentence holding all the questions' words, so Lucene ranks >= 290 "
                             "passages per question and w = 0 ties with nothing; dev and test phrased the second way at different "
                             "rates; 21 weights): the tuned weights become interior (0.2-1.0) and this table passes, but Table 3 "
                             "gets a pinned Recall@100 (NaiveMix (query+passage) 100), Tables 2 and 4 stay degenerate and "
                             "ContrastiveMix on Arabic falls under the learning margin (+2.97); with Lucene's few hits every tuning "
                             "picks 0.05 on both splits whatever the dev/test phrasing rates (measured)",
    "contrastivemix_table2": "as contrastivemix_table1 ('· tuned on dev'); with the session-9 trial data (full BM25 rankings, "
                             "train/dev phrasing rates 1.0/0.8, 0.6, 0.4 and 0.2) mDPR and NaiveMix on Arabic still pick one "
                             "weight on train and dev (0.05 and 0.15: their Arabic dense scores help BM25 only at small weights); "
                             "ContrastiveMix's differ (measured)",
    "contrastivemix_table4": "as contrastivemix_table1; and on Ko, the table's one language, the hybrid Recall@100 of mDPR and "
                             "ContrastiveMix equals BM25's (78.26): at the tuned w = 0.25 their dense scores (dense Recall 73.2 "
                             "and 76.8) bring no relevant passage that BM25 misses into the top 100 (NaiveMix's, 89.1, does).  "
                             "Session 9 trial data (full BM25 rankings): the hybrids' Recall@100 on the test split reaches 96-100 "
                             "(NaiveMix 100, pinned, at w = 1.0) and mDPR's two weights (0.35, 0.4) give one recall (99.47); "
                             "with fusion_depth 200 every hybrid's recall equals BM25's (96.28): a passage BM25 ranks below 200 "
                             "ties at w = 0 again (measured)",
}


@pytest.mark.slow
def test_no_smoke_table_is_degenerate(smoke_run):
    found = scan(smoke_run.ensure_all().root / "figures" / "smoke")
    new = {t: f for t, f in found.items() if t not in KNOWN_DEGENERATE}
    assert not new, "degenerate smoke tables:\n" + "\n".join(f"{t}:\n  " + "\n  ".join(f) for t, f in new.items())
    fixed = sorted(set(KNOWN_DEGENERATE) - set(found))
    assert not fixed, f"no longer degenerate (remove from KNOWN_DEGENERATE): {fixed}"
