"""The book (``./reproduce.sh --book``), built from the suite's smoke run, opened in headless Chromium.

Every page loads, every equation is typeset by the vendored KaTeX (no ``katex-error``, nothing left as
raw TeX), every image a page shows is in the site, and every figure the notebooks wrote is shown on its
notebook's page and linked from the index. The site must load nothing from the network. Skips without
Chromium (Debian ``chromium``), unless ``CODESWITCH_REQUIRE_BOOK=1`` (``.ci/run`` sets it once it installed it).
"""

from __future__ import annotations

import json
import os
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


@pytest.mark.slow
def test_book_builds_and_every_page_renders(smoke_run):
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
    index_soup = BeautifulSoup(doms[site / "figures" / "INDEX.html"], "html.parser")
    linked = {a["href"].split("/")[-1] for a in index_soup.find_all("a", href=True)}
    for png in fig_dir.glob("*.png"):
        assert png.name in linked, f"INDEX page does not link {png.name}"
        assert any(p.read_bytes() == png.read_bytes() for p in site.rglob(png.name)), f"{png.name} is not in the site"
