"""The book (``./reproduce.sh --book``), built from the suite's smoke run, opened in headless Chromium.

The tests are named ``test_website_*`` so that ``./test.sh -k website`` selects them alone (``-k book`` also matches
every "notebook" test).

Every page loads, every equation is typeset by the vendored KaTeX (no ``katex-error``, nothing left as
raw TeX), every image a page shows is in the site, and every figure the notebooks wrote is shown on its
notebook's page and linked from the index. The site must load nothing from the network. Skips without
Chromium (Debian ``chromium``), unless ``CODESWITCH_REQUIRE_BOOK=1`` (``.ci/run`` sets it once it installed it).

Hangul and Devanagari: every page with such text draws it with the font the book serves (its ``@font-face`` is
loaded in the page), that font file has a glyph for every such character, and no character is drawn as the empty
box (``.notdef``) a missing glyph falls back to: its width in the page's own font is compared with that of a
character no font has (:func:`glyph_report`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codeswitch.pipeline import cli as pipeline

from .conftest import REPO

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--virtual-time-budget=3000", "--dump-dom"]


def chromium() -> str:
    exe = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    if exe is None:
        if os.environ.get("CODESWITCH_REQUIRE_BOOK") == "1":
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed: the book's browser test needs it (Debian: apt-get install chromium)")
    return exe


def dump_dom(exe: str, page: Path) -> str:
    with tempfile.TemporaryDirectory() as profile_dir:
        r = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", page.as_uri()],
                           capture_output=True, text=True, timeout=90)
    assert r.returncode == 0 and "</html>" in r.stdout, f"{page.name} did not load: {r.stderr[-1000:]}"
    return r.stdout


#: appended to a copy of a page: once its fonts are loaded, it measures every Hangul/Devanagari character of the page in
#: the font of the element holding it (a canvas, same CSS font) against a character no font has (an empty box), and
#: writes which served faces loaded, and the characters drawn as boxes, into <body data-glyphs="…">
GLYPH_PROBE = r"""
<script>
(async () => {
  const SCRIPTS = /[\u0900-\u097F\u1100-\u11FF\u3130-\u318F\uAC00-\uD7AF]/u;
  const NONE = "\u{10FFFD}";  // a private-use character of plane 16: no font has it, so it is drawn as the empty box
  await document.fonts.ready;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const byFont = new Map();
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!SCRIPTS.test(n.data) || !n.parentElement) continue;
    const st = getComputedStyle(n.parentElement);
    const font = `${st.fontStyle} ${st.fontWeight} 32px ${st.fontFamily}`;
    if (!byFont.has(font)) byFont.set(font, new Set());
    for (const ch of n.data) if (SCRIPTS.test(ch)) byFont.get(font).add(ch);
  }
  const ctx = document.createElement("canvas").getContext("2d");
  const boxes = [], fonts = [];
  let checked = 0;
  for (const [font, chars] of byFont) {
    await document.fonts.load(font, [...chars].join(""));
    ctx.font = font;
    const box = ctx.measureText(NONE).width;
    fonts.push(font);
    for (const ch of chars) {
      checked += 1;
      if (Math.abs(ctx.measureText(ch).width - box) < 0.01 * box) boxes.push(ch);
    }
  }
  const faces = [...document.fonts].map(f => [f.family.replace(/"/g, ""), f.status]);
  const control = (() => { ctx.font = "32px serif"; return Math.abs(ctx.measureText(NONE + NONE).width - 2 * ctx.measureText(NONE).width) < 0.5; })();
  document.body.setAttribute("data-glyphs", JSON.stringify({checked, boxes, faces, fonts, control}));
})();
</script>
"""


def glyph_report(exe: str, page: Path) -> dict:
    """What :data:`GLYPH_PROBE` finds on ``page`` (a copy of it beside it, so that its relative links hold)."""
    from bs4 import BeautifulSoup

    probe = page.with_name(f".probe-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", GLYPH_PROBE + "</body>"), encoding="utf-8")
    try:
        dom = dump_dom(exe, probe)
    finally:
        probe.unlink()
    body = BeautifulSoup(dom, "html.parser").body
    assert body is not None and body.get("data-glyphs"), f"{page.name}: the glyph probe did not finish"
    return json.loads(body["data-glyphs"])


HANGUL = re.compile(r"[\u1100-\u11FF\u3130-\u318F\uAC00-\uD7AF]")
DEVANAGARI = re.compile(r"[\u0900-\u097F]")


def check_glyphs(exe: str, site: Path, pages: list[Path]) -> dict[str, int]:
    """Every Hangul/Devanagari character of ``pages`` is drawn with the book's served font, none as a box; returns how
    many pages had each script."""
    from codeswitch.pipeline.book import covers

    served = {p.name: p for p in (site / "_static" / "fonts").glob("*.ttf")}
    css = (site / "_static" / "codeswitch.css").read_text(encoding="utf-8")
    family_file = dict(re.findall(r'font-family: "([^"]+)"; src: url\("fonts/([^"]+)"\)', css))
    seen = {"CS Hangul": 0, "CS Devanagari": 0}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        wanted = {family for family, rx in (("CS Hangul", HANGUL), ("CS Devanagari", DEVANAGARI)) if rx.search(text)}
        if not wanted:
            continue
        report = glyph_report(exe, page)
        assert report["control"] and report["checked"], f"{page.name}: the probe measured nothing: {report}"
        assert not report["boxes"], f"{page.name}: drawn as empty boxes (no glyph in {report['fonts']}): {''.join(report['boxes'])}"
        status = {fam: st for fam, st in report["faces"]}
        for family in wanted:
            seen[family] += 1
            assert family in family_file, f"the book serves no {family} font (codeswitch.css: {css[:400]})"
            assert status.get(family) == "loaded", f"{page.name}: the served {family} font did not load ({report['faces']})"
            rx = HANGUL if family == "CS Hangul" else DEVANAGARI
            chars = "".join(sorted(set(rx.findall(text))))
            assert not covers(served[family_file[family]], chars), f"{page.name}: {family_file[family]} lacks {covers(served[family_file[family]], chars)}"
    return seen


#: appended to a copy of a page: at the window's width (WIDTH), whether the page scrolls sideways, and which elements
#: reach past the right edge of the page's text column without a scroll box of their own, into <body data-overflow="…">
WIDTH = 1000
OVERFLOW_PROBE = r"""
<script>
window.addEventListener("load", () => {
  const doc = document.documentElement;
  const column = (document.querySelector("div.body") || document.body).getBoundingClientRect();
  const scrolls = el => { for (let e = el; e; e = e.parentElement) { const o = getComputedStyle(e).overflowX;
                          if (o === "auto" || o === "scroll" || o === "hidden") return e !== el || el.scrollWidth > el.clientWidth; } return false; };
  const wide = [];
  for (const el of document.querySelectorAll("div.body *")) {
    // an SVG's shapes are clipped to its own box unless it says overflow: visible (KaTeX's stretchy braces and arrows
    // draw paths thousands of pixels wide inside a narrow clipping <svg>): the <svg> itself is checked instead
    if (el.ownerSVGElement && getComputedStyle(el.ownerSVGElement).overflowX !== "visible") continue;
    const r = el.getBoundingClientRect();
    if (r.width && r.right > column.right + 1 && !scrolls(el.parentElement)) wide.push(el.tagName + "." + el.className + " " + Math.round(r.right));
  }
  document.body.setAttribute("data-overflow", JSON.stringify({page: doc.scrollWidth, window: window.innerWidth, wide: wide.slice(0, 10)}));
});
</script>
"""


def overflow_report(exe: str, page: Path) -> dict:
    """What :data:`OVERFLOW_PROBE` finds on ``page`` in a window :data:`WIDTH` pixels wide."""
    from bs4 import BeautifulSoup

    probe = page.with_name(f".overflow-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", OVERFLOW_PROBE + "</body>"), encoding="utf-8")
    try:
        with tempfile.TemporaryDirectory() as profile_dir:
            r = subprocess.run([exe, *CHROMIUM_FLAGS, f"--window-size={WIDTH},800", f"--user-data-dir={profile_dir}", probe.as_uri()],
                               capture_output=True, text=True, timeout=90)
    finally:
        probe.unlink()
    body = BeautifulSoup(r.stdout, "html.parser").body
    assert body is not None and body.get("data-overflow"), f"{page.name}: the overflow probe did not finish: {r.stderr[-500:]}"
    return json.loads(body["data-overflow"])


def check_width(exe: str, pages: list[Path]) -> None:
    """No page scrolls sideways: wide tables and long code lines scroll in their own box (book.CSS)."""
    for page in pages:
        report = overflow_report(exe, page)
        assert report["page"] <= report["window"] and not report["wide"], f"{page.name} is wider than the page: {report}"


def _wide_notebook(path: Path) -> None:
    """An executed notebook with what overflowed the book's page (issue 42): the fidelity table, a long code line and a
    long printed line, a wide DataFrame; and an exercise's solution."""
    import nbformat
    import pandas as pd

    from codeswitch.core import fidelity

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    ledger = nbformat.v4.new_code_cell('fidelity.show("05")', execution_count=1)
    ledger.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": fidelity._md(fidelity.table("05")), "text/plain": "<Markdown>"})]
    code = nbformat.v4.new_code_cell("x = " + " + ".join(f"value_{i}" for i in range(60)), execution_count=2)
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="-".join(str(i) for i in range(200)) + "\n")]
    frame = pd.DataFrame([[f"a long cell value {i}-{j}" for j in range(14)] for i in range(3)])
    table = nbformat.v4.new_code_cell("frame", execution_count=3)
    table.outputs = [nbformat.v4.new_output("execute_result", data={"text/html": frame.to_html(), "text/plain": "frame"}, execution_count=3)]
    solution = nbformat.v4.new_markdown_cell("**Solution.** Lower, as the table shows.",
                                             metadata={"jupyter": {"source_hidden": True}, "tags": ["solution"]})
    nb.cells = [nbformat.v4.new_markdown_cell("# 05 Wide\n\n**Exercise 1.** Predict first."), solution, ledger, code, table]
    nbformat.write(nb, path)


@pytest.mark.slow  # a Sphinx build and a page in Chromium
def test_website_pages_fit_the_page_width(tmp_path):
    """Issue 42: the fidelity table and code cells overflowed the book's page width.  A book of one executed notebook
    with the fidelity table, long code and output lines and a wide DataFrame: no page scrolls sideways, nothing reaches
    past the text column outside a scroll box; the exercise's solution is a click-to-open block.  The check can fail:
    without the book's page-width rules the same page overflows."""
    exe = chromium()
    from bs4 import BeautifulSoup

    from codeswitch.pipeline import book

    runs, figs = tmp_path / "runs" / "smoke" / "notebooks", tmp_path / "figures" / "smoke"
    runs.mkdir(parents=True)
    figs.mkdir(parents=True)
    (figs / "INDEX.md").write_text("# Index\n", encoding="utf-8")
    _wide_notebook(runs / "05_wide.ipynb")
    page = book.build("smoke", root=REPO, output_root=tmp_path).parent / "notebooks" / "05_wide.html"
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    assert [d.summary.get_text() for d in soup.find_all("details")] == ["Solution (click to open)"]
    assert "Lower, as the table shows." in soup.find("details").get_text()
    check_width(exe, [page])
    css = page.parent.parent / "_static" / "codeswitch.css"
    css.write_text("\n".join(line for line in css.read_text(encoding="utf-8").splitlines() if "@font-face" in line), encoding="utf-8")
    report = overflow_report(exe, page)
    assert report["page"] > report["window"] or report["wide"], f"without the page-width rules nothing overflowed: {report}"


@pytest.mark.slow  # a Sphinx build and three pages in Chromium: 25 s on an idle core
def test_website_serves_hangul_and_devanagari_fonts(tmp_path):
    """A book of one executed notebook with Korean and Hindi text (Markdown, a printed output, a table): both scripts
    are drawn with the fonts it serves, and the index page states their licences."""
    exe = chromium()
    import nbformat

    from codeswitch.pipeline.book import build

    runs = tmp_path / "runs" / "smoke" / "notebooks"
    figs = tmp_path / "figures" / "smoke"
    runs.mkdir(parents=True)
    figs.mkdir(parents=True)
    (figs / "INDEX.md").write_text("# Index\n\n| table | text |\n|---|---|\n| t | 한국어 문장 |\n", encoding="utf-8")
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}})
    code = nbformat.v4.new_code_cell("print(rows)", execution_count=1)
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="She said that 그 영화 relaxed her\nयह फ़िल्म अच्छी थी\n"),
                    nbformat.v4.new_output("display_data", data={"text/html": "<table><tr><td>서울</td><td>नमस्ते</td></tr></table>",
                                                                 "text/plain": "table"})]
    nb.cells = [nbformat.v4.new_markdown_cell("# 01 Fonts\n\n한국어 (Korean) and हिन्दी (Hindi) in a sentence."), code]
    nbformat.write(nb, runs / "01_fonts.ipynb")
    index = build("smoke", root=REPO, output_root=tmp_path)
    site = index.parent
    seen = check_glyphs(exe, site, [index, site / "figures" / "INDEX.html", site / "notebooks" / "01_fonts.html"])
    assert seen["CS Hangul"] == 2 and seen["CS Devanagari"] == 1, seen
    index_text = index.read_text(encoding="utf-8")
    assert "NanumGothic" in index_text and "SIL Open Font License 1.1" in index_text
    assert "Lohit" in index_text or "Noto" in index_text, "the index names no Devanagari font"
    assert "Open Font License" in (site / "_static" / "fonts" / "FONTS-LICENSE.txt").read_text(encoding="utf-8")
    # the check can fail: a character no served font has is reported missing, and one no font at all has is a box
    from codeswitch.pipeline.book import covers

    assert covers(site / "_static" / "fonts" / "CSHangul.ttf", "한\U0010FFFD") == "\U0010FFFD"
    assert "NanumGothic" not in {r.toUnicode() for r in __import__("fontTools.ttLib").ttLib.TTFont(
        str(site / "_static" / "fonts" / "CSHangul.ttf"))["name"].names if r.nameID in (1, 4, 6)}, "a modified font keeps its Reserved Font Name"


@pytest.mark.slow
def test_website_builds_and_every_page_renders(smoke_run):
    exe = chromium()
    smoke_run.ensure_all()
    from codeswitch.pipeline.book import build

    index = build("smoke", root=REPO, output_root=smoke_run.root)
    assert index.parent == smoke_run.root / "runs" / "smoke" / "book"
    check_site(exe, index, smoke_run.root / "figures" / "smoke")


def check_site(exe: str, index: Path, fig_dir: Path) -> None:
    from bs4 import BeautifulSoup

    site = index.parent
    pages = [index, site / "figures" / "INDEX.html", *sorted((site / "notebooks").glob("*.html"))]
    assert len(pages) == 2 + len(pipeline.available(REPO))
    with ThreadPoolExecutor(4) as pool:
        doms = dict(zip(pages, pool.map(lambda p: dump_dom(exe, p), pages)))

    equations = 0
    for page, dom in doms.items():
        soup = BeautifulSoup(dom, "html.parser")
        name = page.relative_to(site)
        assert soup.title and soup.title.string, f"{name}: no title"
        for tag in soup.find_all(["script", "link", "img"]):  # nothing from the network: the site works offline
            ref = tag.get("src") or tag.get("href") or ""
            assert not ref.startswith(("http:", "https:", "//")) or tag.name == "link" and tag.get("rel") != ["stylesheet"], f"{name}: loads {ref}"
        maths = soup.select(".math")
        for m in maths:
            assert m.select(".katex") and not m.select(".katex-error"), f"{name}: not typeset: {m.get_text()[:120]!r}"
        equations += len(maths)
        for img in soup.find_all("img"):
            src = (page.parent / img["src"]).resolve()
            assert src.is_file() and src.stat().st_size > 100, f"{name}: image {img['src']} missing"
        if page.parent.name == "notebooks":  # each figure its notebook wrote is displayed on its page
            spec = next(s for s in pipeline.available(REPO) if s.stem == page.stem)
            shown = {(page.parent / img["src"]).resolve().read_bytes() for img in soup.find_all("img")}
            for art in spec.artifacts:
                entry = json.loads((fig_dir / ".index" / f"{art}.json").read_text())
                if entry["kind"] == "figure":
                    assert (fig_dir / f"{art}.png").read_bytes() in shown, f"{name}: figure {art} is not shown"
    assert equations > 100, f"only {equations} equations typeset"
    check_width(exe, pages)  # wide tables and long code lines scroll in their own box, not the page
    seen = check_glyphs(exe, site, pages)  # Korean (01-05's Koglish) and Hindi (07's reviews) drawn with the served fonts
    assert seen["CS Hangul"] >= 1, seen
    index_soup = BeautifulSoup(doms[site / "figures" / "INDEX.html"], "html.parser")
    linked = {a["href"].split("/")[-1] for a in index_soup.find_all("a", href=True)}
    for png in fig_dir.glob("*.png"):
        assert png.name in linked, f"INDEX page does not link {png.name}"
        assert any(p.read_bytes() == png.read_bytes() for p in site.rglob(png.name)), f"{png.name} is not in the site"
