"""Tables and figures, built from cached run results, written under ``figures/<profile>/``.

Every table is written three (four) ways, all atomically:

* ``<name>.csv`` — long format, one measured cell a row: ``row, column, mean, std, n``
  and, where the paper has the cell, ``paper`` (the reported number) and ``diff``
  (ours − paper).  This is the machine-readable record the tests compare.
* ``<name>.md`` and ``<name>.tex`` — the wide, human table: one cell per
  (row, column) reading ``74.36 ± 0.52 · paper 74.36 (Δ +0.00)``.

Figures are written as ``<name>.png`` and ``<name>.pdf``.  Each write also drops
an index entry (``figures/<profile>/.index/<name>.json``) from which
``reproduce.sh`` builds ``INDEX.md``.

Example::

    summary = summarise(results, by=["row", "column"], value="score")
    wide, long = comparison(summary, paper="concse", table="table3")
    save_table(wide, "concse_table3", cfg, caption="...", long=long)
"""

from __future__ import annotations

import io
import math
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from . import reported as _reported
from .profiles import Profile
from .runs import atomic_write_bytes, atomic_write_json, atomic_write_text

DIGITS = 2  # decimals shown in human tables; CSVs keep 4


# --------------------------------------------------------------------------- summaries
def summarise(df: pd.DataFrame, by: Sequence[str], value: str = "score", *, ddof: int = 1) -> pd.DataFrame:
    """Mean, std (sample, ``ddof=1``, unless told otherwise; 0 for a single seed) and count of ``value`` per group ``by``,
    groups in first-seen order."""
    if df.empty:
        raise ValueError("no results to summarise: the run cache holds nothing for this table")
    g = df.groupby(list(by), sort=False)[value]
    out = g.agg(mean="mean", std=lambda s: s.std(ddof=ddof), n="count").reset_index()
    out["std"] = out["std"].fillna(0.0)
    return out


def fmt_mean_std(mean: float | None, std: float | None = None, digits: int = DIGITS) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def comparison(
    measured: pd.DataFrame,
    *,
    paper: str | None,
    table: str | None,
    row: str = "row",
    column: str = "column",
    digits: int = DIGITS,
    row_order: Sequence[str] | None = None,
    column_order: Sequence[str] | None = None,
    show_paper: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Put measured cells beside the paper's reported ones.

    ``measured`` is long: columns ``row``, ``column``, ``mean`` and optionally
    ``std`` and ``n``.  Returns ``(wide, long)``: ``wide`` for Markdown/LaTeX
    (index = rows, columns = columns, cells formatted), ``long`` for CSV with
    ``paper`` and ``diff`` added (empty where the paper's value is unknown).
    """
    long = measured.rename(columns={row: "row", column: "column"}).copy()
    for col in ("std", "n"):
        if col not in long:
            long[col] = np.nan if col == "std" else 1
    papers, diffs, notes = [], [], []
    for r, c, m in zip(long["row"], long["column"], long["mean"]):
        rep = _reported.lookup(paper, table, str(r), str(c)) if paper and table else None
        pv = rep.value if rep is not None else None
        papers.append(pv)
        diffs.append(None if pv is None or m is None else float(m) - pv)
        notes.append("" if rep is None else ("unknown (lost in conversion)" if pv is None else rep.note))
    long["paper"] = pd.array(papers, dtype="Float64")
    long["diff"] = pd.array(diffs, dtype="Float64")
    long["paper_note"] = notes

    def cell(rec) -> str:
        text = fmt_mean_std(rec["mean"], rec["std"] if rec["n"] and rec["n"] > 1 else None, digits)
        if show_paper and paper and table:
            rep = _reported.lookup(paper, table, str(rec["row"]), str(rec["column"]))
            if rep is not None:
                if rep.value is None:
                    text += " · paper ?"
                else:
                    text += f" · paper {rep.value:.{digits}f} (Δ {float(rec['mean']) - rep.value:+.{digits}f})"
        return text

    long["cell"] = long.apply(cell, axis=1)
    wide = long.pivot(index="row", columns="column", values="cell")
    rows = list(row_order) if row_order else list(dict.fromkeys(long["row"]))
    cols = list(column_order) if column_order else list(dict.fromkeys(long["column"]))
    wide = wide.reindex(index=[r for r in rows if r in wide.index], columns=[c for c in cols if c in wide.columns])
    wide = wide.fillna("–")
    wide.index.name = None
    wide.columns.name = None
    long = long.drop(columns=["cell"])
    return wide, long


def reported_table(paper: str, table: str) -> pd.DataFrame:
    """The paper's own numbers for one table, wide (``?`` where lost in conversion)."""
    entries = _reported.table(paper, table)
    if not entries:
        return pd.DataFrame()
    df = pd.DataFrame([{"row": e.row, "column": e.column, "value": "?" if e.value is None else fmt_mean_std(e.value, e.std)} for e in entries])
    wide = df.pivot(index="row", columns="column", values="value")
    wide = wide.reindex(index=list(dict.fromkeys(df["row"])), columns=list(dict.fromkeys(df["column"])))
    wide.index.name = None
    wide.columns.name = None
    return wide


# --------------------------------------------------------------------------- writing
def _round_floats(df: pd.DataFrame, decimals: int = 4) -> pd.DataFrame:
    out = df.copy()
    for col in out.columns:
        if pd.api.types.is_float_dtype(out[col]):
            out[col] = out[col].round(decimals)
    return out


def _to_latex(df: pd.DataFrame, caption: str, label: str) -> str:
    def esc(s: str) -> str:
        s = str(s)
        bold = re.fullmatch(r"\*\*(.*)\*\*", s)  # Markdown bold (e.g. best values) -> \textbf
        if bold:
            return r"\textbf{" + esc(bold.group(1)) + "}"
        for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"), ("±", r"$\pm$"), ("Δ", r"$\Delta$"), ("–", "--"), ("·", r"$\cdot$")):
            s = s.replace(a, b)
        return s

    cols = [""] + [esc(c) for c in df.columns]
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\begin{tabular}{l" + "c" * len(df.columns) + "}",
        r"\toprule",
        " & ".join(cols) + r" \\",
        r"\midrule",
    ]
    for idx, row in df.iterrows():
        lines.append(" & ".join([esc(idx)] + [esc(v) for v in row.tolist()]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", rf"\caption{{{esc(caption)}}}", rf"\label{{tab:{label}}}", r"\end{table}", ""]
    return "\n".join(lines)


def save_table(
    wide: pd.DataFrame,
    name: str,
    profile: Profile,
    *,
    caption: str,
    long: pd.DataFrame | None = None,
    notes: Sequence[str] = (),
) -> dict[str, Path]:
    """Write a table as ``<name>.md``, ``.tex`` and ``.csv`` under ``figures/<profile>/``.

    ``wide`` is the human table; ``long`` (default: ``wide`` itself) goes to CSV
    with floats rounded to 4 decimals.
    """
    out = profile.figures_dir
    paths = {}
    header = f"**{name}** — {caption}\n\n_profile `{profile.name}`_\n\n"
    md = header + wide.to_markdown() + "\n"
    if notes:
        md += "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    paths["md"] = atomic_write_text(out / f"{name}.md", md)
    paths["tex"] = atomic_write_text(out / f"{name}.tex", _to_latex(wide, caption, name))
    csv_df = _round_floats(long if long is not None else wide.reset_index())
    buf = io.StringIO()
    csv_df.to_csv(buf, index=False, lineterminator="\n")
    paths["csv"] = atomic_write_text(out / f"{name}.csv", buf.getvalue())
    _record(name, "table", caption, paths, profile)
    return paths


def save_figure(fig, name: str, profile: Profile, *, caption: str, dpi: int = 150) -> dict[str, Path]:
    """Write a matplotlib figure as ``<name>.png`` and ``<name>.pdf`` under ``figures/<profile>/``."""
    out = profile.figures_dir
    paths = {}
    for ext in ("png", "pdf"):
        buf = io.BytesIO()
        meta = {"Software": None} if ext == "png" else {"Creator": None, "Producer": None, "CreationDate": None}
        fig.savefig(buf, format=ext, dpi=dpi, bbox_inches="tight", metadata=meta)
        paths[ext] = atomic_write_bytes(out / f"{name}.{ext}", buf.getvalue())
    _record(name, "figure", caption, paths, profile)
    return paths


def _record(name: str, kind: str, caption: str, paths: Mapping[str, Path], profile: Profile) -> None:
    atomic_write_json(
        profile.figures_dir / ".index" / f"{name}.json",
        {
            "name": name,
            "kind": kind,
            "caption": caption,
            "files": sorted(p.name for p in paths.values()),
            "notebook": os.environ.get("CODESWITCH_NOTEBOOK", "interactive"),
            "profile": profile.name,
            "written": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
    )


def read_index(figures_dir: Path) -> list[dict]:
    import json

    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted((figures_dir / ".index").glob("*.json"))]


def show(paths: Mapping[str, Path]):
    """Display a written artifact in a notebook (the Markdown table or the PNG)."""
    from IPython.display import Image, Markdown

    if "png" in paths:
        return Image(filename=str(paths["png"]))
    return Markdown(Path(paths["md"]).read_text(encoding="utf-8"))


def seaborn_style() -> None:
    """One look for every figure of the project."""
    import matplotlib

    matplotlib.use("Agg") if os.environ.get("MPLBACKEND") is None and not _in_notebook() else None
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", font_scale=1.1)


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        return get_ipython() is not None
    except ImportError:
        return False


