"""The notebooks' Markdown renders: no control characters, no command broken by a Python escape, every equation parses.

Equations are parsed by KaTeX (the engine of the book, ``./reproduce.sh --book``), run by node from the
copy that the pinned ``sphinxcontrib-katex`` wheel ships; KaTeX is stricter than the MathJax of JupyterLab,
so what it parses renders in both. Without node the parse test skips (``.ci/run`` installs it with Chromium,
and sets ``CODESWITCH_REQUIRE_BOOK=1``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import unicodedata
from pathlib import Path

import nbformat
import pytest

from .conftest import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
MATH = re.compile(r"\$\$(?P<display>.+?)\$\$|(?<![\\$])\$(?!\$)(?P<inline>.+?)(?<![\\$])\$", re.S)
# a LaTeX command whose backslash became a line break (\f, \n, \r read as Python escapes: \frac, \nabla, \rho …)
BROKEN = re.compile(r"(?<=\n)\s*(rac\{|abla\b|eq\b|u\b|ho\b|ight[a-z]*\b|ewline\b|ormalsize\b)")


def markdown_cells():
    for path in NOTEBOOKS:
        for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
            if cell.cell_type == "markdown":
                yield path.name, i, cell.source


def equations(source: str) -> list[tuple[str, bool]]:
    """``(tex, display)`` of every ``$…$`` and ``$$…$$`` outside code spans."""
    text = CODE.sub("", source)
    return [(m.group("display") or m.group("inline"), m.group("display") is not None) for m in MATH.finditer(text)]


def test_markdown_holds_no_control_characters():
    bad = []
    for name, i, src in markdown_cells():
        chars = {repr(ch) for ch in src if unicodedata.category(ch) == "Cc" and ch != "\n"}
        if chars:
            bad.append(f"{name} cell {i}: {', '.join(sorted(chars))}")
        for tex, _ in equations(src):
            m = BROKEN.search(tex)
            if m:
                bad.append(f"{name} cell {i}: a line of an equation starts with {m.group(0)!r} (a lost backslash?)")
    assert not bad, "Markdown with control characters (a Python escape such as \\t in '\\tau'):\n" + "\n".join(bad)


def test_equations_are_found():
    found = [e for _, _, src in markdown_cells() for e in equations(src)]
    assert len(found) > 100 and any(display for _, display in found)
    assert equations(r"a `$x$` b $\tau$ and $$\frac{1}{2}$$") == [(r"\tau", False), (r"\frac{1}{2}", True)]


def katex_js() -> Path:
    import sphinxcontrib.katex as sk

    return Path(sk.__file__).with_name("katex.min.js")


def test_every_equation_parses_with_katex(tmp_path):
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CODESWITCH_REQUIRE_BOOK") == "1":
            pytest.fail("node is not installed (.ci/run installs nodejs with chromium)")
        pytest.skip("node is not installed: the KaTeX parse of the notebooks' equations needs it")
    items = [{"where": f"{name} cell {i}", "tex": tex, "display": display}
             for name, i, src in markdown_cells() for tex, display in equations(src)]
    script = tmp_path / "parse.js"
    script.write_text(
        "const katex = require(process.argv[2]);\n"
        "const items = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
        "const bad = [];\n"
        "for (const it of items) {\n"
        "  try { katex.renderToString(it.tex, {displayMode: it.display, throwOnError: true, strict: 'ignore'}); }\n"
        "  catch (e) { bad.push(it.where + ': ' + e.message + ' in ' + JSON.stringify(it.tex.slice(0, 120))); }\n"
        "}\n"
        "console.log(JSON.stringify(bad));\n"
    )
    r = subprocess.run([node, str(script), str(katex_js())], input=json.dumps(items), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    bad = json.loads(r.stdout)
    assert not bad, "equations KaTeX cannot parse:\n" + "\n".join(bad)
    # the parser does fail on a broken equation
    r = subprocess.run([node, str(script), str(katex_js())], input=json.dumps([{"where": "x", "tex": r"\frac{1}{", "display": False}]),
                       capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout), "KaTeX accepted a broken equation"


# --------------------------------------------------------------------------- no measured number in the prose (issue 39 §5)
# A measured smoke number typed into a Markdown cell ("+4.8 dense MRR") is stale after the next data change: the
# notebooks print measured numbers from the run (tables, learning lines) and say them in words in the prose.  Every
# number of a Markdown cell must therefore be one of:
#   * in an equation ($…$) or a code span: the rule's own constants, settings and identifiers, not prose;
#   * a reference: a section (§3.2), a table, figure or notebook number (Tables 3.1 and 3.2), a heading's number;
#   * a small count (0–10) or a year;
#   * exactly a number the papers report (codeswitch.core.reported: a value or its ±);
#   * exactly a setting of a profile (configs/*.yaml), quoted unsigned ("τ 0.1", "r_w = 0.5");
#   * one of ALLOWED below: sizes of data the project ships or reads, each with its reason.
# A measured number can still pass by equalling a reported value or a setting by chance; the test catches the rest.
NUMBER = re.compile(r"(?<![\w.@^/\\-])(?P<sign>[+−-])?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?(?![\w.]*\d|[A-Za-z_])")
REFERENCE = re.compile(r"(?:§\s*|\b(?:Tables?|Figures?|Eqs?\.|Equations?|notebooks?|Appendix|step|cell)\s+"
                       r"(?:[\d.]+(?:\s*\([^)]*\))?\s*(?:,|and|or|–|/)\s*)*)$")
HEADING = re.compile(r"^#+\s+\d+[.·]?\s", re.M)
#: numbers of the prose that are neither measured nor settings: sizes of data the project ships or reads
ALLOWED = {
    "1,104": "passages of each synthetic ContrastiveMix corpus, fixed by its generator (contrastivemix.synthetic)",
    "0.64": "the released Koglish-GLUE split fractions 0.64/0.16/0.20 (the authors' construction, notebook 01)",
    "9,944": "rows of the authors' released SAIL 2017 training CSV (calbert repository, evaluation/sail2017/data/)",
    "10,080": "GLUECoS's processed SAIL 2017 split sizes (10,080 / 1,260 / 1,261), as released",
    "1,260": "GLUECoS's processed SAIL 2017 split sizes (10,080 / 1,260 / 1,261), as released",
    "1,261": "GLUECoS's processed SAIL 2017 split sizes (10,080 / 1,260 / 1,261), as released",
}


def _settings() -> set[float]:
    import yaml

    found: set[float] = set()

    def walk(x):
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            found.add(float(x))

    for path in sorted((REPO / "configs").glob("*.yaml")):
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return found


def _reported() -> set[float]:
    from codeswitch.core import reported

    return {float(v) for e in reported.all_entries() for v in (e.value, e.std) if v is not None}


def unexplained_numbers(source: str, *, settings: set[float], papers: set[float]) -> list[str]:
    """The numbers of one Markdown cell that no rule above explains, each with a little context."""
    text = MATH.sub(" ", CODE.sub(" ", source))
    text = HEADING.sub("# ", text)
    bad = []
    for m in NUMBER.finditer(text):
        literal = m.group(0)
        value = float((m.group("int") + (m.group("frac") or "")).replace(",", ""))
        if REFERENCE.search(text[max(0, m.start() - 200):m.start()]):
            continue
        if m.group("frac") is None and not m.group("sign") and (value <= 10 or 1900 <= value <= 2099):
            continue
        if value in papers or (not m.group("sign") and value in settings) or literal in ALLOWED:
            continue
        bad.append(f"{literal!r} in '…{' '.join(text[max(0, m.start() - 50):m.end() + 30].split())}…'")
    return bad


def test_markdown_holds_no_measured_number():
    settings, papers = _settings(), _reported()
    bad = [f"{name} cell {i}: {b}" for name, i, src in markdown_cells()
           for b in unexplained_numbers(src, settings=settings, papers=papers)]
    assert not bad, ("numbers in Markdown that are neither the papers' nor a setting nor an allowed size: print a "
                     "measured number from the run (a code cell) or say it in words:\n" + "\n".join(bad))


def test_a_measured_number_in_the_prose_is_caught():
    """The check fails on a planted measured number, and not on the kinds of number the rules allow."""
    settings, papers = _settings(), _reported()

    def flagged(text):
        return [b.split(" in ")[0] for b in unexplained_numbers(text, settings=settings, papers=papers)]

    assert flagged("the closest is mDPR on Arabic (+4.8 dense MRR), weights 0.77–0.93 on dev") == ["'+4.8'", "'0.77'", "'0.93'"]
    assert flagged("held-out word P@1 0.04 → 0.47, F1 51.5–57.3 (row means)") == ["'0.47'", "'51.5'", "'57.3'"]  # 0.04 passes: a setting by chance
    assert flagged("its fine-tunes beat chance by 18–67 points") == ["'18'", "'67'"]
    allowed = ("## 5 · Table 3.1 (§3.2, Tables 3.1 and 3.2; Figures 1–3): 29.1% of CoLA (the paper), $\\tau = 0.037$, "
               "`lr 4.2e-5`, τ 0.05 (a setting), two seeds in 2024, MRR@100, v2, P@1, commit 701612e, 1,104 passages")
    assert flagged(allowed) == []


def test_solutions_are_markdown_that_lab_collapses_and_the_book_folds():
    """Issue 42: solution blocks showed as raw ``<details>`` HTML in JupyterLab.  Each exercise's solution is a Markdown
    cell tagged ``solution`` and hidden by ``jupyter.source_hidden`` (Lab collapses it), with no HTML; the book's copy
    folds it into a click-to-open ``<details>`` block (:func:`codeswitch.pipeline.book.fold_solutions`)."""
    from codeswitch.pipeline.book import fold_solutions

    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        exercises = sum(c.cell_type == "markdown" and c.source.startswith("**Exercise") for c in nb.cells)
        solutions = [c for c in nb.cells if "solution" in c.metadata.get("tags", ())]
        assert exercises >= 1 and len(solutions) == exercises, f"{path.name}: {exercises} exercises, {len(solutions)} solutions"
        for i, cell in enumerate(nb.cells):
            assert not re.search(r"<(details|summary)\b", cell.source), f"{path.name} cell {i}: HTML that Lab shows as source"
        for cell in solutions:
            assert cell.cell_type == "markdown" and cell.source.startswith("**Solution.**"), f"{path.name}: {cell.source[:60]!r}"
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, f"{path.name}: a solution Lab shows open"
        assert fold_solutions(nb) == exercises
        assert all(c.source.startswith("<details><summary>Solution") and c.source.endswith("</details>") for c in solutions)
        assert fold_solutions(nb) == 0  # folded once
