"""Find degenerate result tables: settings that make no difference, metrics pinned at a bound, seeds that agree exactly.

A smoke table that shows nothing teaches nothing and hides bugs: a trainer that ignores
its setting, a loss that never reaches the encoder, or a classifier that always predicts
one class all give tables like these.  :func:`scan` reads the long-format result CSVs
(``row, column, mean, std, n, ...``) that ``codeswitch.core.report`` writes and returns one
line per finding:

* **identical rows**: two different rows (methods, settings) with the same mean in every
  column they share;
* **identical columns**: two different columns (settings such as τ or α) with the same mean
  in every row they share (a flat ablation line);
* **pinned**: a mean at the metric's ceiling or floor (100 or 0 on a percent scale; 1 or 0 on a
  unit scale);
* **seeds agree**: ``std == 0`` over ``n >= 2`` runs or items.

Counting tables (dataset sizes) are not metrics and are skipped.  :data:`EXPECTED` lists the
findings that are right by construction, each with its reason.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import pandas as pd

#: tables that hold counts (dataset sizes) or predictions (the qualitative Tables 9 and 14), not metrics
COUNTS = re.compile(r"^concse_table1(_exclusions)?$|^calbert_table(4|9|10|14)$")

#: (table, finding pattern) -> why it is right by construction; a finding matching a pattern is not reported
EXPECTED: dict[tuple[str, str], str] = {
    # an average over one language is that language
    ("contrastivemix_table1", r"identical columns: 'Avg \(low\)' = 'Ko'"): "the smoke profile has one low-similarity language",
    ("contrastivemix_table4", r"identical columns: 'Avg \(low\)' = 'Ko'"): "the smoke profile has one low-similarity language",
    ("contrastivemix_section3_3", r"identical columns: 'all' = 'ko'"): "the smoke profile has one target language",
    ("contrastivemix_table1", r"identical columns: 'Avg \(high\)' = 'Ru'"): "the smoke profile has one high-similarity language",
    ("contrastivemix_table2", r"identical columns: 'Avg \(high\)' = 'es'"): "the smoke profile has one MIRACL high-similarity language",
    ("contrastivemix_table4", r"identical columns: 'Avg \(high\)' = 'Ru'"): "the smoke profile has one high-similarity language",
    # BM25 has no seed: its runs are the same by design
    ("contrastivemix_table1", r"seeds agree: 'BM25'"): "BM25 has no training and no seed",
    ("contrastivemix_table2", r"seeds agree: 'BM25'"): "BM25 has no training and no seed",
    ("contrastivemix_table4", r"seeds agree: 'BM25'"): "BM25 has no training and no seed",
}


def _label(df: pd.DataFrame) -> pd.Series:
    return (df["scenario"].astype(str) + " · " + df["row"].astype(str)) if "scenario" in df.columns and not df["row"].astype(str).str.startswith(tuple(df["scenario"].astype(str).unique())).all() else df["row"].astype(str)


def scan_table(path: Path) -> list[str]:
    """The findings of one CSV (see the module docstring)."""
    name = path.stem
    if COUNTS.match(name):
        return []
    # labels are text as written ("N/A" is a setting, not a missing value)
    df = pd.read_csv(path, dtype={"row": str, "column": str, "scenario": str}, keep_default_na=False,
                     na_values={k: [""] for k in ("mean", "std", "n")})
    if not {"row", "column", "mean"} <= set(df.columns):
        return []
    df = df.assign(label=_label(df), column=df["column"].astype(str))
    df = df[pd.to_numeric(df["mean"], errors="coerce").notna()]
    means = {(r.label, r.column): round(float(r.mean), 4) for r in df.itertuples()}
    rows = list(dict.fromkeys(df["label"]))
    cols = list(dict.fromkeys(df["column"]))
    found = []
    for a, b in (sorted(pair) for pair in itertools.combinations(rows, 2)):
        shared = [c for c in cols if (a, c) in means and (b, c) in means]
        if shared and all(means[a, c] == means[b, c] for c in shared):
            found.append(f"identical rows: {a!r} = {b!r} over {shared}")
    for a, b in (sorted(pair) for pair in itertools.combinations(cols, 2)):
        shared = [r for r in rows if (r, a) in means and (r, b) in means]
        if shared and all(means[r, a] == means[r, b] for r in shared):
            found.append(f"identical columns: {a!r} = {b!r} over {len(shared)} row(s)")
    unit = max((abs(v) for v in means.values()), default=0.0) <= 1.0
    top = 1.0 if unit else 100.0
    for (r, c), v in means.items():
        if v in (0.0, top):
            found.append(f"pinned: {r!r} / {c!r} = {v:g} (scale 0–{top:g})")
    if {"std", "n"} <= set(df.columns):
        for rec in df.itertuples():
            std, n = pd.to_numeric(rec.std, errors="coerce"), pd.to_numeric(rec.n, errors="coerce")
            if not (isinstance(std, float) and math.isnan(std)) and n is not None and n >= 2 and float(std) == 0.0:
                found.append(f"seeds agree: {rec.label!r} / {rec.column!r}: std 0 over n={int(n)}")
    return [f for f in found if not any(t == name and re.search(p, f) for (t, p) in EXPECTED)]


def scan(folder: str | Path) -> dict[str, list[str]]:
    """``{table: findings}`` for every result CSV in ``folder`` that has any."""
    out = {}
    for p in sorted(Path(folder).glob("*.csv")):
        found = scan_table(p)
        if found:
            out[p.stem] = found
    return out


if __name__ == "__main__":  # python -m tests.degenerate figures/smoke
    import sys

    for table, found in scan(sys.argv[1] if len(sys.argv) > 1 else "figures/smoke").items():
        print(f"{table}:")
        for f in found:
            print(f"  {f}")
