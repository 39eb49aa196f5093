"""A BM25 run's key names the Pyserini version: the installed one, or the project's pin where
Pyserini is absent, so plans (the cost model, --dry-run) work on a machine without it and a
cached run made with the pinned version is found there (the GPU machine of issue 25)."""
import re
from importlib.metadata import PackageNotFoundError
from pathlib import Path

from codeswitch.contrastivemix import lucene

ROOT = Path(__file__).resolve().parents[1]


def test_pin_matches_requirements():
    pins = re.findall(r"^pyserini==([^\s#]+)", (ROOT / "requirements.txt").read_text(), flags=re.M)
    assert pins == [lucene.PYSERINI_PINNED]


def test_absent_pyserini_keys_on_the_pin(monkeypatch):
    import importlib.metadata as md

    real = md.version

    def fake(name):
        if name == "pyserini":
            raise PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(md, "version", fake)
    assert lucene.pyserini_version() == lucene.PYSERINI_PINNED


def test_installed_pyserini_keys_on_its_version(monkeypatch):
    import importlib.metadata as md

    monkeypatch.setattr(md, "version", lambda name: "9.9.9" if name == "pyserini" else "0")
    assert lucene.pyserini_version() == "9.9.9"


def test_a_w0_fallback_is_stated_under_the_table():
    """A tuned hybrid weight of 0 (the hybrid falls back to BM25) is named under the table (issue 42.7)."""
    import pandas as pd

    from codeswitch.contrastivemix.tables import Scores, _fallback_note

    rows = [dict(variant="mdpr", row="mDPR", benchmark="mrtydi", language="ar", seed=1, setting="hybrid", metric="mrr@100",
                 value=0.5, weight=0.0, report_split="test"),
            dict(variant="bm25", row="BM25", benchmark="mrtydi", language="ar", seed=1, setting="bm25", metric="mrr@100",
                 value=0.5, weight=None, report_split="test"),
            dict(variant="cm", row="ContrastiveMix", benchmark="mrtydi", language="ko", seed=1, setting="hybrid",
                 metric="mrr@100", value=0.6, weight=0.35, report_split="test")]
    scores = Scores(pd.DataFrame(rows), {})
    assert _fallback_note(scores, "mrtydi") == ["Tuned hybrid weight w = 0 (the hybrid falls back to BM25) for: mDPR (ar, seed 1). "
                                                "Where every seed of a cell fell back, it equals BM25's."]
    assert _fallback_note(scores, "miracl") == []
