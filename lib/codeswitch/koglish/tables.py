"""Notebook 01's tables and their claims (ConCSE §3).

* :func:`invariant_report` — every table of a source loaded (so validated), with the
  released data's invariants checked;
* :func:`table1` — rows per task and split *as loaded* from ``koglish_source``,
  beside the paper's Table 1 (claim: :func:`table1_claim`);
* :func:`exclusions` — items dropped per task and reason, from the construction
  runs (the paper: 29.1% of CoLA; claim: :func:`exclusions_claim`);
* :func:`tables` — both written to ``figures/<profile>/``.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from . import data as K
from .construct import REASONS, invariant_violations
from .plan import TASK_LABELS, task_label
from .synthetic_constructions import CONSTRUCTIONS
from ..core import claims
from ..core.experiment import Results
from ..core.profiles import Profile
from ..core.provenance import records_inputs

__all__ = ["TABLE1_ROWS", "invariant_report", "table1_counts", "table1", "totals_note", "table1_claim", "exclusions_claim",
           "exclusions", "tables"]

TABLE1_ROWS = [TASK_LABELS[("glue", t)] for t in ("qnli", "sst2", "cola", "stsb", "mrpc", "rte")] + [
    TASK_LABELS[("sts", t)] for t in K.STS_TASKS
] + ["NLI/NLI"]
SPLIT_COLUMNS = {"train": "Train", "valid": "Dev", "test": "Test"}


# --------------------------------------------------------------------------- invariants
def _tables(source: str):
    """Every table of a source as (dataset, task, split, loader)."""
    for t in K.GLUE_TASKS:
        for s in K.GLUE_SPLITS:
            yield "glue", t, s, lambda t=t, s=s: K.load_glue(source, t, s, invalid_rows="keep")
    yield "nli", "nli", "train", lambda: K.load_nli(source, invalid_rows="keep")
    for t in K.STS_TASKS:
        for s in ("valid", "test"):
            yield "sts", t, s, lambda t=t, s=s: K.load_sts(source, t, s, invalid_rows="keep")


def invariant_report(source: str) -> pd.DataFrame:
    """Load (and so validate) every table of ``source``; rows and invariant violations per table.

    Splits the source does not have (e.g. STS12-16 dev in the repository layout)
    are skipped.  See :func:`codeswitch.koglish.construct.invariant_violations`.
    """
    rows = []
    for group, task, split, read in _tables(source):
        try:
            df = read()
        except K.KoglishFormatError as exc:
            if "no file found" in str(exc):
                continue
            raise
        bad = invariant_violations(df)
        s_col, np_col = ("sentence", "source_np0") if "sentence" in df.columns else ("sentence1", "source1_np0")
        starts = sum(s.startswith(n) for s, n in zip(df[s_col], df[np_col]))
        rows.append(
            {
                "table": f"{TASK_LABELS[(group, task)]} {split}",
                "dataset": group,
                "task": task,
                "split": split,
                "rows": len(df),
                "violations": len(bad),
                "first violation": "" if bad.empty else f"row {bad.iloc[0]['row']}, {bad.iloc[0]['field']}: {bad.iloc[0]['rule']}",
                "NP at first token %": round(100.0 * starts / len(df), 1),
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- Table 1
def table1_counts(source: str, report: pd.DataFrame | None = None) -> pd.DataFrame:
    """Rows per task and split of the data as loaded (validated) from ``source``; long: ``row, column, mean``.

    ``report`` (from :func:`invariant_report`) saves loading everything a second time.
    """
    report = invariant_report(source) if report is None else report
    rows = []
    for (group, task), part in report.groupby(["dataset", "task"], sort=False):
        label = TASK_LABELS[(group, task)]
        for split, n in zip(part["split"], part["rows"]):
            rows.append({"row": label, "column": SPLIT_COLUMNS[split], "mean": float(n)})
        rows.append({"row": label, "column": "Total", "mean": float(part["rows"].sum())})
    out = pd.DataFrame(rows)
    order = {r: i for i, r in enumerate(TABLE1_ROWS)}
    return out.sort_values("row", key=lambda col: col.map(order), kind="stable").reset_index(drop=True)  # the paper's row order


def table1(source: str, report: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 1 (wide, long): measured counts beside the paper's."""
    from ..core.report import comparison

    return comparison(
        table1_counts(source, report),
        paper="concse",
        table="table1",
        digits=0,
        row_order=TABLE1_ROWS,
        column_order=["Train", "Dev", "Test", "Total"],
    )


def totals_note() -> str:
    """Where the paper's printed Table 1 totals differ from the sums of its printed splits (computed, not typed)."""
    values = claims.paper_values("concse", "table1")
    out = []
    for row in dict.fromkeys(r for r, _ in values):
        parts = [values[(row, c)] for c in ("Train", "Dev", "Test") if (row, c) in values]
        total = values.get((row, "Total"))
        if total is not None and len(parts) > 1 and sum(parts) != total:
            out.append(f"{row.split('/')[1]} {total:,.0f} printed vs {sum(parts):,.0f} summed ({total - sum(parts):+,.0f})")
    return "the paper's totals differ from the sum of its splits: " + "; ".join(out) if out else ""


@claims.register("concse_table1", paper="concse", table="table1")
def table1_claim(long: pd.DataFrame, profile=None):
    """ConCSE §3 and Table 1 (concse.md): the Koglish datasets' sizes.  Checked on the splits (Train, Dev, Test);
    Total is this project's sum of the splits, so the paper's printed totals that are not their splits' sum are a note
    (:func:`totals_note`), not part of the check."""
    splits = long[long["column"].astype(str) != "Total"]
    c = claims.within(splits, "the Koglish data has the paper's row count in every task and split (Train, Dev, Test)",
                      tolerance=0.5, source="ConCSE §3, Table 1 (concse.md)")
    return claims.Claim(c.text, c.holds, c.detail, c.source, totals_note())


# --------------------------------------------------------------------------- exclusions
@claims.register("concse_table1_exclusions", paper="concse", table="table1_exclusions")
def exclusions_claim(long: pd.DataFrame, profile=None):
    """ConCSE §3.2 step 1 (concse.md): "GLUE's COLA task data excluded 29.1% of the entire data" (no usable noun
    phrase); within 5 points counts as reproduced."""
    return claims.within(long, "the construction excludes about the paper's share of CoLA (29.1 %, within 5 points)", tolerance=5.0,
                         source="ConCSE §3.2 step 1 (concse.md)", unit=" points")


def exclusions(stats: Mapping[str, Mapping]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Exclusion table (wide, long): input, kept, excluded %, and items per reason, beside the paper's 29.1% for CoLA."""
    from ..core.report import comparison

    rows = []
    for task, st in stats.items():
        label = task_label(task)
        rows.append({"row": label, "column": "input", "mean": float(st["input"])})
        rows.append({"row": label, "column": "kept", "mean": float(st["kept"])})
        rows.append({"row": label, "column": "excluded %", "mean": 100.0 * (1 - st["kept"] / st["input"]) if st["input"] else 0.0})
        for reason in REASONS:
            rows.append({"row": label, "column": reason, "mean": float(st["excluded"].get(reason, 0))})
    wide, long = comparison(
        pd.DataFrame(rows), paper="concse", table="table1_exclusions", digits=1, column_order=["input", "kept", "excluded %", *REASONS]
    )
    for r, c, m in zip(long["row"], long["column"], long["mean"]):
        if c != "excluded %":
            wide.loc[r, c] = f"{int(m)}"  # counts read better without decimals
    return wide, long


# --------------------------------------------------------------------------- the notebook's tables
@records_inputs
def tables(results: Results, profile: Profile) -> dict[str, dict]:
    """Write Table 1 (rows per task and split of the profile's Koglish, as loaded) and the exclusion table (from ``results``).

    Table 1 counts the data itself — loading and validating it is the measurement —
    so it reads ``koglish_source``, not the run cache.  Returns ``{name: paths}``.
    """
    from ..core.report import save_table

    source = K.resolve_source(profile)
    wide, long = table1(source, invariant_report(source))
    out = {"concse_table1": save_table(wide, "concse_table1", profile, caption="Summary of the Koglish datasets: rows per task and split, as loaded",
                                       long=long, claim=claims.built_into(table1_claim(long), CONSTRUCTIONS.get("concse_table1")),
                                       inputs={"koglish": [str(profile.koglish_source)]})}
    wide, long = exclusions({s.task: record for s, record in results})
    out["concse_table1_exclusions"] = save_table(
        wide, "concse_table1_exclusions", profile, caption="Items excluded by the construction pipeline, per task and reason", long=long,
        notes=[f"{k}: {v}" for k, v in REASONS.items()],
        claim=claims.built_into(exclusions_claim(long), CONSTRUCTIONS.get("concse_table1_exclusions")),
    )
    return out
