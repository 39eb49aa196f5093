"""Generated tables read as tables: every Markdown row keeps its cells (a real Markdown parser),
every .tex compiles (pdflatex from Debian's texlive-latex-base), every table states its claim,
and executed notebooks hold one final progress line per loop."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import nbformat
import pandas as pd
import pytest
from markdown_it import MarkdownIt

from codeswitch.core import claims

from codeswitch.pipeline import cli as pipeline
from codeswitch.core.render import MAX_WIDTH_PX, Cell, _width_px, display_frame, tex_escape, to_markdown
from codeswitch.core.report import save_table
from codeswitch.core.profiles import load_profile

from .conftest import REPO

SPECS = pipeline.available(REPO)
LATEX = shutil.which("pdflatex")
REQUIRE_LATEX = os.environ.get("CODESWITCH_REQUIRE_LATEX") == "1"  # .ci/run installs it and sets this


def md_tables(md: str) -> list[list[list[str]]]:
    """Every table in ``md`` as rows (header first) of cell texts, as parsed by markdown-it (CommonMark + GFM tables)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(md)
    tables, row, in_table = [], None, False
    for t in tokens:
        if t.type == "table_open":
            in_table = True
            tables.append([])
        elif t.type == "table_close":
            in_table = False
        elif in_table and t.type == "tr_open":
            row = []
        elif in_table and t.type == "tr_close":
            tables[-1].append(row)
        elif in_table and t.type == "inline":
            row.append(t.content)
    return tables


def check_markdown_table(md: str, where: str) -> list[list[str]]:
    """Every source line starting with '|' became one parsed row, and every row has as many cells as its header."""
    lines = [l for l in md.splitlines() if l.startswith("|")]
    tables = md_tables(md)
    assert tables, f"{where}: no table parsed"
    parsed = sum(len(t) + 1 for t in tables)  # + the delimiter line of each
    assert parsed == len(lines), f"{where}: {len(lines)} table lines but {parsed} parsed (rows + delimiters)"
    for k, rows in enumerate(tables):
        width = len(rows[0])
        for i, r in enumerate(rows):
            assert len(r) == width, f"{where}: table {k} row {i} has {len(r)} cells, the header {width}"
    return tables[0]


def compile_tex(tex_files, tmp_path):
    doc = tmp_path / "all.tex"
    body = "\n".join(rf"\clearpage\input{{{p.resolve()}}}" for p in tex_files)
    doc.write_text("\\documentclass{article}\n\\usepackage[margin=1cm,landscape]{geometry}\n\\begin{document}\n" + body + "\n\\end{document}\n")
    r = subprocess.run([LATEX, "-interaction=nonstopmode", "-halt-on-error", "all.tex"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]


def test_cell_text_with_pipes_and_specials_keeps_the_row(tmp_path):
    cfg = load_profile("smoke", root=REPO, output_root=tmp_path)
    wide = pd.DataFrame({"dev": [Cell("1.00 ± 0.10", "2.00", "-1.00"), Cell("3*", None)], "test": ["a|b", "**4**"]},
                        index=["Lc (|| Devanagari)", "x_y <z>"])
    paths = save_table(wide, "demo_table", cfg, caption="τ λ α ✓ × demo", claim=claims.Claim("A > B", True, "1/1"))
    md = paths["md"].read_text()
    rows = check_markdown_table(md, "demo_table")
    assert rows[0] == ["", "dev", "paper", "Δ", "test"]
    assert rows[1][0] == "Lc (|| Devanagari)" and rows[1][1:4] == ["1.00 ± 0.10", "2.00", "-1.00"]
    assert rows[2][1:4] == ["3\\*", "", ""] and rows[2][4] == "**4**"
    assert "**Claim**: A > B — holds on the smoke data (1/1)." in md and md.count(claims.SMOKE_NOTE) == 1
    tex = paths["tex"].read_text()
    assert tex.isascii() and r"$\tau$" in tex and r"$\surd$" in tex and r"$|$$|$" in tex
    assert tex_escape("50% & {x}") == r"50\% \& \{x\}"
    if LATEX:
        compile_tex([paths["tex"]], tmp_path)


def test_wide_tables_turn_on_their_side():
    cols = [f"STS{i}" for i in range(12, 20)]
    wide = pd.DataFrame({c: [Cell("38.49 ± 6.45", "77.68", "-39.19")] * 4 for c in cols}, index=[f"SimCSE-backbone-{i}" for i in range(4)])
    header, labels, rows, turned = display_frame(wide)
    assert turned and labels == cols and len(header) == 12
    assert _width_px(header, labels, rows) <= MAX_WIDTH_PX
    assert not display_frame(wide.iloc[:, :2])[3]  # a narrow table keeps the paper's orientation
    assert to_markdown(wide).count("\n") == len(cols) + 2
    # too wide either way: split into parts that each fit, every row in every part
    huge = pd.DataFrame({f"language {i}": [Cell("38.49 ± 6.45", "77.68", "-39.19")] * 20 for i in range(12)},
                        index=[f"a long row label number {i} · tuned on test (released code)" for i in range(20)])
    md = to_markdown(huge)
    parts = md_tables(md)
    assert len(parts) > 1 and all(len(p) == 21 for p in parts)
    assert sum(len(p[0]) - 1 for p in parts) == 36  # 12 columns × (ours, paper, Δ), none lost
    for p in parts:
        assert _width_px(p[0][1:], [r[0] for r in p[1:]], [[(c, False) for c in r[1:]] for r in p[1:]]) <= MAX_WIDTH_PX


def test_claim_helpers_compute_from_numbers():
    long = pd.DataFrame({"row": ["A", "B", "A", "B"], "column": ["x", "x", "y", "y"], "mean": [2.0, 1.0, 0.5, 1.0], "paper": [3.0, 1.0, None, None]})
    c = claims.greater(long, "A > B", pairs=[("A", "B")], columns=["x", "y"])
    assert c.holds is False and c.detail.startswith("1/2")
    assert claims.greater(long, "A > B", pairs=[("A", "B")], columns=["x"]).holds is True
    assert claims.greater(long, "A > C", pairs=[("A", "C")], columns=["x"]).holds is None
    assert claims.paper_best(long, "row") == "A"
    assert claims.best_is(long, "A best on x", expected="A", where="x").holds is True
    assert claims.within(long, "close", tolerance=0.5).holds is False
    assert claims.within(long, "close", tolerance=1.0).holds is True


@pytest.mark.slow
def test_every_generated_table_renders_and_states_its_claim(smoke_run, tmp_path):
    smoke_run.ensure_all()
    fig_dir = smoke_run.root / "figures" / "smoke"
    tables = [s_name for s in SPECS for s_name in s.artifacts
              if json.loads((fig_dir / ".index" / f"{s_name}.json").read_text())["kind"] == "table"]
    assert len(tables) >= 19
    for name in tables:
        md = (fig_dir / f"{name}.md").read_text()
        check_markdown_table(md, f"{name}.md")
        for t in md_tables(md):  # each part reads without wrapping at MAX_WIDTH_PX
            assert _width_px(t[0][1:], [r[0] for r in t[1:]], [[(c.replace("**", ""), False) for c in r[1:]] for r in t[1:]]) <= MAX_WIDTH_PX, name
        entry = json.loads((fig_dir / ".index" / f"{name}.json").read_text())
        claim = entry["claim"]
        assert claim and claim["text"], f"{name}: no claim"
        assert claims.Claim(**claim).line("smoke") in md, f"{name}.md lacks its claim line"
        assert md.count(claims.SMOKE_NOTE) == 1 and md.lower().count("- smoke profile") == 1, f"{name}.md: the smoke note once"
        assert (fig_dir / f"{name}.tex").read_text().isascii(), f"{name}.tex is not plain ASCII LaTeX"
    index = (fig_dir / "INDEX.md").read_text() if (fig_dir / "INDEX.md").exists() else pipeline.write_index("smoke", output_root=smoke_run.root, root=REPO).read_text()
    check_markdown_table(index, "INDEX.md")
    if not LATEX:
        if REQUIRE_LATEX:
            pytest.fail("pdflatex is not installed (.ci/run installs texlive-latex-base)")
        pytest.skip("pdflatex not installed (apt-get install texlive-latex-base); the Markdown checks ran")
    compile_tex([fig_dir / f"{n}.tex" for n in tables], tmp_path)


@pytest.mark.slow
def test_executed_notebooks_show_one_final_progress_line_per_loop(smoke_run):
    smoke_run.ensure_all()
    for spec in SPECS:
        nb = nbformat.read(smoke_run.executed[spec.number], as_version=4)
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                text = "".join(out.get("text", "")) if out.get("output_type") == "stream" else ""
                assert "Writing model shards" not in text, f"{spec.file}: a shard-writing stub"
                assert "without encryption" not in text
                for line in text.splitlines():
                    if line.startswith("[") and "%" in line:
                        assert "100%" in line, f"{spec.file}: progress line not at 100%: {line}"
                        assert out["name"] == "stdout", f"{spec.file}: progress on stderr: {line}"
