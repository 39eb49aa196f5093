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


#: Smoke tables known to be degenerate, each with why.  Any finding in another table fails the test, and so does a
#: listed table that is no longer degenerate (remove it), so the list cannot go stale.  Empty since session 11: the
#: last two (ContrastiveMix Tables 2 and 4, each a single language column where two systems tied by chance or at
#: w = 0) got a second language (MIRACL Korean; Mr.TyDi Arabic).
KNOWN_DEGENERATE: dict[str, str] = {}


@pytest.mark.slow
def test_no_smoke_table_is_degenerate(smoke_run):
    found = scan(smoke_run.ensure_all().root / "figures" / "smoke")
    new = {t: f for t, f in found.items() if t not in KNOWN_DEGENERATE}
    assert not new, "degenerate smoke tables:\n" + "\n".join(f"{t}:\n  " + "\n  ".join(f) for t, f in new.items())
    fixed = sorted(set(KNOWN_DEGENERATE) - set(found))
    assert not fixed, f"no longer degenerate (remove from KNOWN_DEGENERATE): {fixed}"
