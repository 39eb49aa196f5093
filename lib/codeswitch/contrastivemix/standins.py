"""Retrieval stand-in data in the released layouts, from the synthetic retrieval set: Tevatron NQ
(``nq-train.jsonl.gz``, ``nq-dev.jsonl.gz``), Mr.TyDi (``mrtydi-v1.1-<language>/{train,dev,test,corpus}.jsonl.gz``), MIRACL
(``miracl-v1.0-<xx>/{topics,qrels}/*.tsv``, ``miracl-corpus-v1.0-<xx>/docs-0.jsonl.gz``) and MUSE
dictionaries (``en-<xx>.txt``) for every language of the paper profile.  A language without a shipped
glossary gets a made-up one (``word`` -> ``word_<xx>``): stand-in data proves the code path, not a result."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from .data import MRTYDI_LANGUAGES
from .synthetic import SPLITS, _distractors, _synthetic_train_rows, base_facts
from .section3_3 import NQ_DEV_FILE

PAPER_LANGUAGES = ("ar", "th", "ja", "ko", "id", "fi", "ru", "bn", "zh", "fa", "es", "fr", "hi")


def _dictionary(language: str) -> dict[str, str]:
    from ..core.hub import MissingResourceError
    from .synthetic import _glossary

    try:
        return {en: ts[0] for en, ts in _glossary(language).items()}
    except MissingResourceError:  # no shipped glossary for this language
        words = {w.lower() for f in base_facts() for w in f"{f.query} {f.title} {f.text}".split() if w.isalpha()}
        return {w: f"{w}_{language}" for w in sorted(words)}


def _tr(text: str, d: dict[str, str]) -> str:
    return " ".join(d.get(w.lower(), w) for w in text.split())


def _jsonl_gz(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def build(root: Path) -> dict[str, Path]:
    facts = base_facts()  # the base world: the stand-ins prove the code path, their size is not the point
    docs = [(f"doc-{f.fact_id}", f.title, f.text) for f in facts] + list(_distractors(base_only=True))
    nq = root / "wikipedia-nq"
    rows = _synthetic_train_rows(facts, lexical_negatives=False)
    _jsonl_gz(nq / "nq-train.jsonl.gz", rows)
    _jsonl_gz(nq / NQ_DEV_FILE, rows[::4])  # the validation split §3.3's cosines read (section3_3)
    mrtydi, mrtydi_corpus, miracl, miracl_corpus, muse = (root / n for n in ("mr-tydi", "mr-tydi-corpus", "miracl", "miracl-corpus", "muse"))
    muse.mkdir(parents=True, exist_ok=True)
    for lang in (*PAPER_LANGUAGES, "en"):
        d = {} if lang == "en" else _dictionary(lang)
        if lang != "en":
            (muse / f"en-{lang}.txt").write_text("".join(f"{en}\t{xx}\n" for en, xx in d.items()), encoding="utf-8")
        corpus = [{"docid": i, "title": _tr(t, d), "text": _tr(x, d)} for i, t, x in docs]
        if lang in MRTYDI_LANGUAGES:
            name = MRTYDI_LANGUAGES[lang]
            for split in SPLITS:
                _jsonl_gz(mrtydi / f"mrtydi-v1.1-{name}/{split}.jsonl.gz", (
                    {"query_id": f"q-{f.fact_id}", "query": _tr(f.query, d),
                     "positive_passages": [{"docid": f"doc-{f.fact_id}", "title": _tr(f.title, d), "text": _tr(f.text, d)}],
                     "negative_passages": []}
                    for f in facts if f.split == split))
            _jsonl_gz(mrtydi_corpus / f"mrtydi-v1.1-{name}/corpus.jsonl.gz", corpus)
        base = f"miracl-v1.0-{lang}"
        for split in SPLITS:
            sel = [f for f in facts if f.split == split]
            (miracl / base / "topics").mkdir(parents=True, exist_ok=True)
            (miracl / base / "qrels").mkdir(parents=True, exist_ok=True)
            (miracl / base / f"topics/topics.{base}-{split}.tsv").write_text(
                "".join(f"q-{f.fact_id}\t{_tr(f.query, d)}\n" for f in sel), encoding="utf-8")
            (miracl / base / f"qrels/qrels.{base}-{split}.tsv").write_text(
                "".join(f"q-{f.fact_id} Q0 doc-{f.fact_id} 1\n" for f in sel), encoding="utf-8")
        _jsonl_gz(miracl_corpus / f"miracl-corpus-v1.0-{lang}/docs-0.jsonl.gz", corpus)
    return {"wikipedia-nq": nq, "mr-tydi": mrtydi, "mr-tydi-corpus": mrtydi_corpus, "miracl": miracl,
            "miracl-corpus": miracl_corpus, "muse": muse}
