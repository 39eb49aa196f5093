"""The paper's claim behind each table, checked against this run's numbers.

Every table states, in one line, the claim of the paper it supports and whether
the numbers of *this* run support it.  A claim is never typed as true or false:
a small function computes it from the table's long frame (``row, column, mean``)
and returns a :class:`Claim`, which :func:`codeswitch.report.save_table` renders
in the table's notes and records for ``INDEX.md``::

    claim = claims.greater(long, "ConCSE > SimCSE (average Spearman)",
                           pairs=[("ConCSE-mBERT", "SimCSE-mBERT")], columns=["Avg."], source="ConCSE §5.2")
    save_table(wide, "concse_table3", cfg, caption=..., long=long, claim=claim)

``holds`` is ``True`` (the numbers support the claim), ``False`` (they do not) or
``None`` (nothing to check: the table is not a claim of any paper, or a needed
cell is missing); ``detail`` gives the numbers the verdict came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

import pandas as pd

SMOKE_NOTE = (
    "Smoke profile: small models, small (mostly synthetic) data and a few steps test the pipeline, not the papers; "
    "a claim's verdict is computed as in the paper profile and says nothing about the paper."
)


@dataclass(frozen=True)
class Claim:
    text: str  # the paper's claim, one line
    holds: bool | None  # computed from the table's numbers; None = not checkable here
    detail: str = ""  # the numbers behind the verdict
    source: str = ""  # where the paper makes it (e.g. "ConCSE §5.2")

    @property
    def verdict(self) -> str:
        return {True: "supported", False: "not supported", None: "not checked"}[self.holds]

    @property
    def mark(self) -> str:
        return {True: "✓", False: "✗", None: "–"}[self.holds]

    def smoke_verdict(self) -> str:
        """The verdict on the smoke profile's synthetic data, worded as what it is: an outcome, not a test of the paper."""
        return {True: "holds on the smoke data", False: "does not hold on the smoke data", None: "not checked"}[self.holds]

    def line(self, profile: str | None = None) -> str:
        """The note line of a table: ``Claim (source): text — supported by this run (detail).``

        Under the smoke profile (``profile="smoke"``) the verdict reads "holds / does not hold on the smoke data"."""
        src = f" ({self.source})" if self.source else ""
        if profile == "smoke":
            verdict = self.smoke_verdict()
        else:
            verdict = {True: "**supported** by this run", False: "**not supported** by this run", None: "not checked"}[self.holds]
        return f"**Claim**{src}: {self.text} — {verdict}" + (f" ({self.detail})" if self.detail else "") + "."

    def index_cell(self, profile: str | None = None) -> str:
        """The verdict in ``INDEX.md``'s claim column: ``✓ supported`` / ``✗ not supported``; under the smoke profile
        the smoke verdict without a mark (a smoke outcome is no failure)."""
        if profile == "smoke":
            return f"smoke: {self.smoke_verdict()}"
        return f"{self.mark} {self.verdict}"

    def as_dict(self) -> dict:
        return {"text": self.text, "holds": self.holds, "detail": self.detail, "source": self.source}


def _means(long: pd.DataFrame) -> dict[tuple[str, str], float]:
    return {(str(r), str(c)): float(m) for r, c, m in zip(long["row"], long["column"], long["mean"]) if pd.notna(m)}


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def greater(
    long: pd.DataFrame,
    text: str,
    *,
    pairs: Sequence[tuple[str, str]],
    columns: Iterable[str],
    source: str = "",
) -> Claim:
    """``better > worse`` for every ``(better, worse)`` row pair in every column (means over seeds).

    ``None`` when a needed cell is missing; the detail counts the cells that hold
    and names the first that does not.
    """
    means = _means(long)
    columns = list(columns)
    checked, failed, missing = 0, [], []
    for better, worse in pairs:
        for col in columns:
            a, b = means.get((better, col)), means.get((worse, col))
            if a is None or b is None:
                missing.append(f"{better if a is None else worse} / {col}")
                continue
            checked += 1
            if not a > b:
                failed.append(f"{better} {_fmt(a)} vs {worse} {_fmt(b)} on {col}")
    if not checked:
        return Claim(text, None, "no cell to compare" + (f": missing {missing[0]}" if missing else ""), source)
    detail = f"{checked - len(failed)}/{checked} comparisons hold"
    if failed:
        detail += f"; e.g. {failed[0]}"
    if missing:
        detail += f"; {len(missing)} cell(s) not run"
    return Claim(text, not failed, detail, source)


def best_is(long: pd.DataFrame, text: str, *, expected: str, along: str = "row", where: str | None = None, source: str = "") -> Claim:
    """The highest mean along ``along`` ("row" or "column", restricted to ``where`` in the other axis) is ``expected``."""
    other = "column" if along == "row" else "row"
    df = long if where is None else long[long[other].astype(str) == where]
    df = df[pd.notna(df["mean"])]
    if df.empty or expected not in set(df[along].astype(str)):
        return Claim(text, None, f"'{expected}' was not run", source)
    best = df.loc[df["mean"].astype(float).idxmax()]
    ranking = ", ".join(f"{r} {_fmt(float(m))}" for r, m in sorted(zip(df[along].astype(str), df["mean"].astype(float)), key=lambda t: -t[1])[:3])
    return Claim(text, str(best[along]) == expected, f"highest: {ranking}", source)


def paper_best(long: pd.DataFrame, along: str = "column") -> str | None:
    """Where the paper's own values peak (``paper`` column of ``long``), or None when the paper has none."""
    df = long[pd.notna(long["paper"])] if "paper" in long else long.iloc[0:0]
    if df.empty:
        return None
    return str(df.loc[df["paper"].astype(float).idxmax(), along])


def within(long: pd.DataFrame, text: str, *, tolerance: float, source: str = "", unit: str = "") -> Claim:
    """Every cell with a paper value is within ``tolerance`` of it."""
    df = long[pd.notna(long["paper"])] if "paper" in long else long.iloc[0:0]
    if df.empty:
        return Claim(text, None, "the paper reports none of these cells", source)
    diff = (df["mean"].astype(float) - df["paper"].astype(float)).abs()
    worst = df.loc[diff.idxmax()]
    detail = (f"{int((diff <= tolerance).sum())}/{len(df)} cells within {tolerance:g}{unit}; largest gap "
              f"{worst['row']} / {worst['column']}: {float(worst['mean']):.6g} vs {float(worst['paper']):.6g}")
    return Claim(text, bool((diff <= tolerance).all()), detail, source)


def not_in_paper(text: str, detail: str = "") -> Claim:
    """A table that checks a released-code vs paper choice rather than a claim of the paper."""
    return Claim(text, None, detail or "no paper claim to check", "")
