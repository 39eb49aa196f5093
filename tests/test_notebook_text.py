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
