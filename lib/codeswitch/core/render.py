"""How a table reads: the wide, human form of a table (Markdown, HTML, LaTeX) from its cells.

A :class:`Cell` keeps our value, the paper's and their difference apart, so that every format gives each its own
column; :func:`display_frame` turns a table on its side when that reads narrower than :data:`MAX_WIDTH_PX`, and
splits a table too wide either way into column groups.  :func:`codeswitch.core.report.save_table` writes a table in
every format through these.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Sequence

import pandas as pd

__all__ = ["Cell", "bold", "MAX_WIDTH_PX", "display_frame", "md_escape", "to_markdown", "tex_escape", "to_latex"]


@dataclass(frozen=True)
class Cell:
    """One cell of a human table: our value, the paper's and the difference, kept apart so that
    Markdown, HTML and LaTeX give each its own column.  ``paper is None``: the paper has no such cell."""

    ours: str
    paper: str | None = None
    delta: str | None = None
    bold: bool = False

    def __str__(self) -> str:  # the one-line form (logs, old callers)
        text = f"**{self.ours}**" if self.bold else self.ours
        if self.paper is not None:
            text += f" · paper {self.paper}" + (f" (Δ {self.delta})" if self.delta else "")
        return text


def bold(value):
    """Our value in bold (e.g. the best of a column), whether ``value`` is a :class:`Cell` or text."""
    if isinstance(value, Cell):
        return replace(value, bold=True)
    return f"**{value}**"


MAX_WIDTH_PX = 1400  # a table must read without wrapping in a window this wide


def _expand(wide: pd.DataFrame) -> tuple[list[str], list[str], list[list[tuple[str, bool]]]]:
    """(header, row labels, rows of (text, bold)) with ours / paper / Δ as separate columns.

    A column gets its ``paper`` (``Δ``) column when any of its cells has a paper value (a difference)."""
    header, cols = [], []
    for c in wide.columns:
        cells = list(wide[c])
        has_paper = any(isinstance(v, Cell) and v.paper is not None for v in cells)
        has_delta = any(isinstance(v, Cell) and v.delta is not None for v in cells)
        header += [str(c)] + (["paper"] if has_paper else []) + (["Δ"] if has_delta else [])
        cols.append((cells, has_paper, has_delta))
    rows = []
    for i in range(len(wide.index)):
        row = []
        for cells, has_paper, has_delta in cols:
            v = cells[i]
            if isinstance(v, Cell):
                row.append((v.ours, v.bold))
                paper, delta = v.paper or "", v.delta or ""
            else:
                text = "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)
                m = re.fullmatch(r"\*\*(.*)\*\*", text)  # legacy Markdown bold
                row.append((m.group(1), True) if m else (text, False))
                paper = delta = ""
            row += ([(paper, False)] if has_paper else []) + ([(delta, False)] if has_delta else [])
        rows.append(row)
    return header, [str(r) for r in wide.index], rows


def _width_px(header: Sequence[str], labels: Sequence[str], rows: Sequence[Sequence[tuple[str, bool]]]) -> float:
    """Rendered width estimate of an HTML table (13 px sans-serif: ~7.5 px a character, 16 px of padding a cell)."""
    widths = [max([len(l) for l in labels] + [0])]
    for j, h in enumerate(header):
        widths.append(max([len(h)] + [len(r[j][0]) for r in rows]))
    return sum(w * 7.5 + 16 for w in widths)


def display_frame(wide: pd.DataFrame) -> tuple[list[str], list[str], list[list[tuple[str, bool]]], bool]:
    """The table as shown: ``(header, row labels, rows, transposed)``.

    The paper's orientation is kept when it fits in :data:`MAX_WIDTH_PX`; otherwise the
    narrower of it and its transpose (tables with many columns, e.g. seven STS sets
    each with ours / paper / Δ, read better with the sets as rows)."""
    straight = _expand(wide)
    if _width_px(*straight) <= MAX_WIDTH_PX:
        return (*straight, False)
    turned = _expand(wide.T)
    if _width_px(*turned) < _width_px(*straight):
        return (*turned, True)
    return (*straight, False)


_MD_SPECIAL = re.compile(r"([\\|*_`<>\[\]])")


def md_escape(text: str) -> str:
    """Text for one Markdown table cell: ``|`` and the inline specials escaped, no line breaks."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def _column_groups(header: Sequence[str]) -> list[list[int]]:
    """Indices of each column with its ``paper`` / ``Δ`` columns (kept together when a table is split)."""
    groups: list[list[int]] = []
    for j, h in enumerate(header):
        if h in ("paper", "Δ") and groups:
            groups[-1].append(j)
        else:
            groups.append([j])
    return groups


def _chunks(header, labels, rows) -> list[list[int]]:
    """Column indices of consecutive parts of the table, each narrower than :data:`MAX_WIDTH_PX` where possible."""
    parts: list[list[int]] = []
    for g in _column_groups(header):
        trial = (parts[-1] + g) if parts else g
        if parts and _width_px([header[j] for j in trial], labels, [[r[j] for j in trial] for r in rows]) <= MAX_WIDTH_PX:
            parts[-1] = trial
        else:
            parts.append(list(g))
    return parts


def to_markdown(wide: pd.DataFrame) -> str:
    """The table in Markdown; one still too wide for :data:`MAX_WIDTH_PX` is split into parts (same rows,
    consecutive column groups), one under the other."""
    header, labels, rows, _ = display_frame(wide)

    def cell(text: str, strong: bool) -> str:
        return f"**{md_escape(text)}**" if strong and text else md_escape(text)

    tables = []
    for cols in _chunks(header, labels, rows):
        lines = ["| " + " | ".join([""] + [md_escape(header[j]) for j in cols]) + " |", "|:--" + "|--:" * len(cols) + "|"]
        for label, row in zip(labels, rows):
            lines.append("| " + " | ".join([md_escape(label)] + [cell(*row[j]) for j in cols]) + " |")
        tables.append("\n".join(lines) + "\n")
    return "\n".join(tables)


_TEX = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"$<$", ">": r"$>$", "|": r"$|$",
    "±": r"$\pm$", "Δ": r"$\Delta$", "τ": r"$\tau$", "λ": r"$\lambda$", "α": r"$\alpha$", "β": r"$\beta$",
    "✓": r"$\surd$", "✗": r"$\times$", "×": r"$\times$", "·": r"$\cdot$", "→": r"$\rightarrow$",
    "≥": r"$\geq$", "≤": r"$\leq$", "−": "-", "–": "--", "—": "---", "…": r"\dots{}", "’": "'", "‘": "`",
    "“": "``", "”": "''", "₀": r"$_0$", "₁": r"$_1$", "²": r"$^2$", "@": "@",
}


def tex_escape(text: str) -> str:
    """Plain-LaTeX text (ASCII only, no package needed): specials escaped, Greek and symbols as math."""
    out = []
    for ch in str(text):
        if ch in _TEX:
            out.append(_TEX[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            ascii_ = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
            out.append("".join(_TEX.get(a, a) for a in ascii_) or "?")
    return "".join(out)


def to_latex(wide: pd.DataFrame, caption: str, label: str) -> str:
    """A ``table`` float in plain LaTeX (``\\hline`` rules, no packages), the same columns as the Markdown."""
    header, labels, rows, _ = display_frame(wide)

    def cell(text: str, strong: bool) -> str:
        return r"\textbf{" + tex_escape(text) + "}" if strong and text else tex_escape(text)

    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\small",
        r"\begin{tabular}{l" + "r" * len(header) + "}",
        r"\hline",
        " & ".join([""] + [tex_escape(h) for h in header]) + r" \\",
        r"\hline",
    ]
    for lab, row in zip(labels, rows):
        lines.append(" & ".join([tex_escape(lab)] + [cell(t, b) for t, b in row]) + r" \\")
    lines += [r"\hline", r"\end{tabular}", rf"\caption{{{tex_escape(caption)}}}", rf"\label{{tab:{re.sub(r'[^A-Za-z0-9_.:-]', '-', label)}}}", r"\end{table}", ""]
    return "\n".join(lines)
