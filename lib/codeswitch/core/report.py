"""Tables and figures, built from cached run results, written under ``figures/<profile>/``.

Every table is written three (four) ways, all atomically:

* ``<name>.csv`` — long format, one measured cell a row: ``row, column, mean, std, n``
  and, where the paper has the cell, ``paper`` (the reported number) and ``diff``
  (ours − paper).  This is the machine-readable record the tests compare.
* ``<name>.md`` and ``<name>.tex`` — the wide, human table: per column of the
  paper's table three columns, ours (``74.36 ± 0.52``), the paper's (``74.36``)
  and Δ (``+0.00``), turned on its side when that reads narrower (see
  :func:`codeswitch.core.render.display_frame`); under it the notes and the paper's claim, checked
  (:mod:`codeswitch.claims`).

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
import json
import math
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import reported as _reported
from .claims import Claim, inputs_note, learned, real_data
from .profiles import Profile
from .provenance import lines as provenance_lines, provenance
from .render import Cell, md_escape, to_markdown, to_latex
from .atomic import atomic_files, atomic_write_bytes, atomic_write_json, atomic_write_text, glob_escape

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


def spread_note(n: int, *, std: str = "std", over: str = "seed") -> str:
    """How a table's measured cells read, for its caption or notes: ``mean ± std over 3 seeds``; with one seed the cells
    show no ± (:func:`comparison` prints one only where ``n > 1``), and the note says so instead of promising one."""
    if n > 1:
        return f"mean ± {std} over {n} {over}s"
    return f"one {over}, so no ± (a single {over} has no spread)"


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

    def cell(rec) -> Cell:
        text = fmt_mean_std(rec["mean"], rec["std"] if rec["n"] and rec["n"] > 1 else None, digits)
        if show_paper and paper and table:
            rep = _reported.lookup(paper, table, str(rec["row"]), str(rec["column"]))
            if rep is not None:
                if rep.value is None:
                    return Cell(text, "?")
                return Cell(text, f"{rep.value:.{digits}f}", f"{float(rec['mean']) - rep.value:+.{digits}f}")
        return Cell(text)

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


def save_table(
    wide: pd.DataFrame,
    name: str,
    profile: Profile,
    *,
    caption: str,
    long: pd.DataFrame | None = None,
    notes: Sequence[str] = (),
    claim: Claim | Sequence[Claim] | None = None,
    inputs: Mapping | None = None,
    learning: Iterable[tuple[str, Any]] = (),
) -> dict[str, Path]:
    """Write a table as ``<name>.md``, ``.tex`` and ``.csv`` under ``profile.figures_dir``, with ``<name>.provenance.json``.

    ``wide`` is the human table (cells: :class:`Cell` or text); ``long`` (default:
    ``wide`` itself) goes to CSV with floats rounded to 4 decimals.  ``claim``: the
    paper's claim this table checks (:mod:`codeswitch.claims`), computed from the
    table's numbers; rendered under the table and listed in ``INDEX.md`` (a list: the
    table's claim first, then further claims on the same numbers, such as a headline
    magnitude, each rendered under it and kept in the index entry's ``also``).  ``learning``: the learning entries
    of the runs the table summarises (``(label, result["learning"])``: :func:`codeswitch.core.learning.of_results`); each claim
    reads "not checked: k of n runs did not learn" where one did not beat its baseline (:func:`codeswitch.core.claims.learned`).  The
    provenance (:func:`codeswitch.core.provenance.provenance`; ``inputs``: the input
    identities, default those the experiment's ``tables`` records) is listed under the
    Markdown table, as comment lines atop the LaTeX, and in the JSON beside them; the
    CSV holds the measured cells only (byte-identical between identical runs).
    """
    out = profile.figures_dir
    paths = {}
    prov = provenance(profile, inputs)
    header = f"**{name}** — {caption}\n\n_profile `{profile.name}`_\n\n"
    md = header + to_markdown(wide)
    lines = list(notes)
    runs = list(learning)
    checked = [learned(c, runs) for c in ([claim] if isinstance(claim, Claim) else list(claim or ()))]
    lines += [c.line(profile.name, real_data=real_data(prov["inputs"])) for c in checked]
    note = inputs_note(profile.name, prov["inputs"])  # what the inputs were, read from them: synthetic or real, tiny or not
    if note:
        lines.append(note)  # once, on every smoke table; experiments add no note of their own saying so
    if lines:
        md += "\n" + "\n".join(f"- {n}" for n in lines) + "\n"
    md += "\nProvenance:\n\n" + "\n".join(f"- {md_escape(n)}" for n in provenance_lines(prov)) + "\n"
    tex_head = "".join(f"% {n}\n" for n in provenance_lines(prov))
    if long is None:
        long = wide.reset_index().map(lambda v: str(v) if isinstance(v, Cell) else v)
    csv_df = _round_floats(long)
    buf = io.StringIO()
    csv_df.to_csv(buf, index=False, lineterminator="\n")
    with atomic_files(out, name) as tmp:  # the four files as one unit: never a new .md beside an old .csv
        atomic_write_text(tmp / f"{name}.md", md)
        atomic_write_text(tmp / f"{name}.tex", tex_head + to_latex(wide, caption, name))
        atomic_write_text(tmp / f"{name}.csv", buf.getvalue())
        atomic_write_json(tmp / f"{name}.provenance.json", prov)
    paths.update({ext: out / f"{name}.{ext}" for ext in ("md", "tex", "csv")})
    _record(name, "table", caption, paths, profile, prov, claim=checked[0] if checked else None, also=checked[1:])
    return paths


#: scripts a figure may draw, the Unicode ranges that hold them, and the Debian packages with fonts that cover them
SCRIPTS = {
    "Hangul": (((0x1100, 0x11FF), (0x3130, 0x318F), (0xAC00, 0xD7AF)),
               "fonts-nanum (or the pinned koreanize-matplotlib wheel's NanumGothic)"),
    "Devanagari": (((0x0900, 0x097F),), "fonts-noto-core (Noto Sans Devanagari) or fonts-lohit-deva"),
}


class FontWarning(UserWarning):
    """A figure draws text in a script none of its fonts covers: it would show as empty boxes."""


def missing_glyphs(fig) -> dict[str, str]:
    """``{script: characters}`` of the figure's text that no font it asks for covers (:data:`SCRIPTS`)."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font
    from matplotlib.text import Text

    missing: dict[str, set[str]] = {}
    charmaps: dict[str, set[int]] = {}
    for t in fig.findobj(Text):
        chars = {ch for ch in t.get_text() if any(a <= ord(ch) <= b for ranges, _ in SCRIPTS.values() for a, b in ranges)}
        if not chars:
            continue
        fonts = font_manager.fontManager._find_fonts_by_props(t.get_fontproperties())  # the fallback list matplotlib renders with
        for f in map(str, fonts):
            if f not in charmaps:
                charmaps[f] = set(FT2Font(f).get_charmap())
        for ch in chars:
            if not any(ord(ch) in charmaps[str(f)] for f in fonts):
                script = next(k for k, (ranges, _) in SCRIPTS.items() if any(a <= ord(ch) <= b for a, b in ranges))
                missing.setdefault(script, set()).add(ch)
    return {k: "".join(sorted(v)) for k, v in missing.items()}


def check_fonts(fig, name: str) -> None:
    """Warn (:class:`FontWarning`), naming the Debian package to install, when the figure draws a script no font covers."""
    import warnings

    for script, chars in missing_glyphs(fig).items():
        warnings.warn(f"{name}: no installed font has {script} glyphs ({chars[:12]}): they show as empty boxes; "
                      f"install {SCRIPTS[script][1]} (Debian/Ubuntu: apt-get install {SCRIPTS[script][1].split()[0]})",
                      FontWarning, stacklevel=3)


def profile_stamp(prov: Mapping) -> str:
    """The line a figure carries: ``profile: <folder>``, and under the smoke profile what its inputs were (read from them,
    :func:`codeswitch.core.provenance.input_kinds`): the pipeline on synthetic data, or smoke settings on real data."""
    from .provenance import input_kinds

    text = f"profile: {prov['folder']}"
    if prov.get("profile") != "smoke":
        return text
    kinds = input_kinds(prov.get("inputs"))
    if kinds and kinds["real_data"]:
        models = {"tiny": ", tiny models", "pretrained": ", real pretrained models", "mixed": ", real and tiny models"}.get(kinds["model"], "")
        return text + f" (smoke settings on real data{models}: not the paper's budget)"
    return text + " (smoke: tests the pipeline, not the paper)"


#: the stamp's gap below everything else the figure draws, in inches
STAMP_GAP_IN = 0.04


def stamp(fig, text: str):
    """Write ``text`` small and grey under everything the figure draws (axes, tick labels, legends, notes): placed from
    the figure's tight bounding box, right-aligned with it, so that it overlaps no artist; savefig's tight bounding box
    then takes it in.  Returns the text artist."""
    renderer = fig.canvas.get_renderer()
    box = fig.get_tightbbox(renderer)  # inches, every visible artist
    width, height = fig.get_size_inches()
    return fig.text(box.x1 / width, (box.y0 - STAMP_GAP_IN) / height, text, ha="right", va="top", fontsize=6, color="0.45")


def save_figure(fig, name: str, profile: Profile, *, caption: str, dpi: int = 150, inputs: Mapping | None = None) -> dict[str, Path]:
    """Write a matplotlib figure as ``<name>.png`` and ``<name>.pdf`` under ``profile.figures_dir``, with ``<name>.provenance.json``.

    The provenance (see :func:`save_table`) is also in the files' metadata: a PNG text
    chunk ``Provenance`` and the PDF's ``Keywords`` (JSON), the caption in its ``Subject``.
    """
    out = profile.figures_dir
    paths = {}
    prov = provenance(profile, inputs)
    text = json.dumps(prov, sort_keys=True, ensure_ascii=False, default=str)
    check_fonts(fig, name)
    stamp(fig, profile_stamp(prov))  # which profile made it, on the figure itself (a PNG travels without its INDEX.md)
    with atomic_files(out, name) as tmp:  # the files as one unit (see save_table)
        for ext in ("png", "pdf"):
            buf = io.BytesIO()
            meta = ({"Software": None, "Provenance": text} if ext == "png"
                    else {"Creator": None, "Producer": None, "CreationDate": None, "Subject": caption, "Keywords": text})
            fig.savefig(buf, format=ext, dpi=dpi, bbox_inches="tight", metadata=meta)
            atomic_write_bytes(tmp / f"{name}.{ext}", buf.getvalue())
            paths[ext] = out / f"{name}.{ext}"
        atomic_write_json(tmp / f"{name}.provenance.json", prov)
    _record(name, "figure", caption, paths, profile, prov)
    return paths


def _record(name: str, kind: str, caption: str, paths: Mapping[str, Path], profile: Profile, prov: Mapping, *,
            claim: Claim | None = None, also: Sequence[Claim] = ()) -> None:
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
            "claim": None if claim is None else claim.as_dict(),
            **({"also": [c.as_dict() for c in also]} if also else {}),
            "provenance": dict(prov),
        },
    )


class IndexWarning(UserWarning):
    """A damaged index entry (``figures/<profile>/.index/<name>.json``) was moved aside and rebuilt."""


def read_index(figures_dir: Path) -> list[dict]:
    """The index entries of ``figures_dir`` (``.index/<name>.json``), by name.

    A damaged entry (truncated, not JSON, not an entry) is moved aside to ``<name>.json.damaged`` and rebuilt from
    the artifact's files and its ``<name>.provenance.json`` (its caption and claim are lost: the next run of its
    notebook writes them again), with a warning naming both files; without a readable provenance file it is left
    out, with a warning saying so.  It crashed every later run with a raw ``JSONDecodeError``.
    """
    out = []
    for p in sorted((Path(figures_dir) / ".index").glob("*.json")):
        try:
            entry = json.loads(p.read_text(encoding="utf-8"))
            if not isinstance(entry, dict) or not {"name", "kind", "files"} <= set(entry):
                raise ValueError("not an index entry (it needs name, kind and files)")
        except (ValueError, UnicodeDecodeError) as exc:  # (JSONDecodeError is a ValueError)
            entry = _rebuild_entry(p, exc)
        if entry is not None:
            out.append(entry)
    return out


def _rebuild_entry(path: Path, problem: BaseException) -> dict | None:
    from .runs import report_warning

    name = path.stem
    figures = path.parent.parent
    aside = path.with_name(path.name + ".damaged")
    os.replace(path, aside)
    files = sorted(f.name for f in figures.glob(f"{glob_escape(name)}.*")
                   if f.suffix in (".md", ".tex", ".csv", ".png", ".pdf") and f.stem == name)
    try:
        prov = json.loads((figures / f"{name}.provenance.json").read_text(encoding="utf-8"))
        if not isinstance(prov, dict) or not files:
            raise ValueError("no provenance or no files")
    except (OSError, ValueError):
        report_warning(f"{path}: damaged index entry ({problem}); moved aside to {aside.name}; it cannot be rebuilt (no "
                       f"readable {name}.provenance.json or no files of {name}): run its notebook again", IndexWarning)
        return None
    written = max((figures / f).stat().st_mtime for f in files)
    entry = {
        "name": name,
        "kind": "table" if f"{name}.csv" in files else "figure",
        "caption": "(caption lost with a damaged index entry: run its notebook again)",
        "files": files,
        "notebook": "unknown",
        "profile": prov.get("profile", figures.name.split("+", 1)[0]),
        "written": datetime.fromtimestamp(written, timezone.utc).isoformat(timespec="seconds"),
        "claim": None,
        "provenance": prov,
        "rebuilt": True,
    }
    atomic_write_json(path, entry)
    report_warning(f"{path}: damaged index entry ({problem}); moved aside to {aside.name} and rebuilt from "
                   f"{name}.provenance.json and its files", IndexWarning)
    return entry


def show(paths: Mapping[str, Path]) -> None:
    """Display a written artifact in the notebook: the PNG of a figure, else the Markdown of a table.

    It displays (IPython's ``display``) rather than returning an object, so a loop
    (``for paths in X.tables(results, cfg).values(): show(paths)``) shows every artifact,
    in JupyterLab and in the executed copies ``reproduce.sh`` saves."""
    from IPython.display import Image, Markdown, display

    if "png" in paths:
        display(Image(filename=str(paths["png"])))
    else:
        display(Markdown(Path(paths["md"]).read_text(encoding="utf-8")))


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


