"""Retrieval data: Tevatron NQ for training, Mr.TyDi and MIRACL for evaluation, and the smoke set.

Three kinds of object, the same for the real datasets and the synthetic one:

* a **training set** in the DPR/Tevatron format, a ``datasets.Dataset`` with one row
  per query: ``query_id``, ``query``, ``positive_passages`` and ``negative_passages``
  (lists of ``{"docid", "title", "text"}``);
* a :class:`QuerySet`: the queries of one language and split, their relevance
  judgements (qrels) and, where the dataset ships them, the positive passages' texts;
* a :class:`Collection`: the passages of one language, a memory-mapped
  ``datasets.Dataset`` (``docid``, ``title``, ``text``) read in slices, never whole.

A passage's text is ``title + " " + text`` (Tevatron's convention).

Sources (each reference is a hub id, a local copy of that hub repository, or
``"synthetic"``):

==========================  =================================================  ==========================
what                        files (relative to the repository)                  hub id
==========================  =================================================  ==========================
NQ training set             ``nq-train.jsonl.gz``                               ``Tevatron/wikipedia-nq``
Mr.TyDi queries             ``mrtydi-v1.1-<language>/<split>.jsonl.gz``          ``castorini/mr-tydi``
Mr.TyDi corpus              ``mrtydi-v1.1-<language>/corpus.jsonl.gz``           ``castorini/mr-tydi-corpus``
MIRACL topics, qrels        ``miracl-v1.0-<xx>/{topics,qrels}/*-<split>.tsv``    ``miracl/miracl`` (gated: ``HF_TOKEN``)
MIRACL corpus               ``miracl-corpus-v1.0-<xx>/docs-*.jsonl.gz``          ``miracl/miracl-corpus``
==========================  =================================================  ==========================

The repositories carry loading scripts, which current ``datasets`` no longer runs;
the files are fetched with ``huggingface_hub`` and read as JSON lines instead.

**The synthetic set** (smoke profile) is made of small worlds of invented countries,
cities, people, rivers, books and mountains, with six kinds of fact.  Each fact
gives an English question and the passage that answers it; facts are split into
train / dev / test.  The collection also holds one passage per entity that
answers nothing.  One world holds 92 facts and 92 such passages; the set holds
:data:`WORLDS` worlds of the same shape with their own names (1,104 passages), so
that Recall@100 measures something (a random ranking finds a relevant passage in
the top 100 with probability 100/1,104); the other worlds ask four of the six
questions a second way, the name in the possessive (:data:`SECOND_PHRASING`), so
that BM25 cannot find every answer by its name.  The first world alone is the base world:
the tiny tokenizer's corpus (:func:`corpus_lines`) and the paper-ci stand-ins
(:mod:`.standins`) are drawn from it.  In the collections (not in the training rows: NQ's passages are not
Mr.TyDi's), every other-world passage ends with 0-3 extra sentences (:data:`EXTRA_SENTENCES`), so that
passages vary in length and wording as real ones do and BM25's scores do not tie in blocks.  The target-language version of a text replaces every word of
the shipped glossary (``assets/retrieval/en-<xx>.txt``, MUSE format) by its first
translation — word order and names stay — so "target-language" retrieval differs
from English exactly in the words code-mixing can switch.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..core.hub import MissingResourceError, hub_reachable, resolve
from ..core.utils import quiet_transformers
from ..common.muse import load_muse
from .codemix import word_spans

__all__ = [
    "SYNTHETIC",
    "MRTYDI_LANGUAGES",
    "QuerySet",
    "Collection",
    "passage_text",
    "load_train_set",
    "load_queries",
    "load_collection",
    "synthetic_glossary_path",
    "synthetic_facts",
    "base_facts",
    "translate",
    "corpus_lines",
    "vocabulary_words",
    "TrainDataError",
]

SYNTHETIC = "synthetic"
ASSETS = Path(__file__).resolve().parents[1] / "assets"
GLOSSARY_DIR = ASSETS / "retrieval"
CORPUS_FILE = ASSETS / "corpus" / "retrieval.txt"
# every word the smoke run can tokenize (vocabulary_words): the smoke backbone keeps only their word pieces
WORDS_FILE = ASSETS / "retrieval" / "words.txt"

# Mr.TyDi names its folders by language name; MIRACL by ISO code.
MRTYDI_LANGUAGES = {
    "ar": "arabic", "bn": "bengali", "en": "english", "fi": "finnish", "id": "indonesian",
    "ja": "japanese", "ko": "korean", "ru": "russian", "sw": "swahili", "te": "telugu", "th": "thai",
}


class TrainDataError(ValueError):
    """A malformed row in a retrieval data file."""


def passage_text(title: str | None, text: str) -> str:
    """Tevatron's passage input: ``title + " " + text`` (just ``text`` without a title).

    A ``text`` that is not a string (a missing field read as ``None``) is a
    :class:`TypeError`, never the passage ``"title None"``; the readers below
    check their rows first and name the file, row and field.
    """
    if not isinstance(text, str):
        raise TypeError(f"passage text {_bad_text(text)}")
    return f"{title} {text}" if title else text


def _bad_text(value) -> str:
    """How a bad text field reads in an error message: missing (null), or not a string (its type and value)."""
    return "is missing (null)" if value is None else f"is not a string ({type(value).__name__} {value!r:.60})"


# --------------------------------------------------------------------------- containers
@dataclass(frozen=True)
class QuerySet:
    """The queries of one benchmark, language and split, with their qrels."""

    benchmark: str  # "mrtydi" | "miracl"
    language: str
    split: str
    queries: Mapping[str, str]  # query id -> text, in file order
    qrels: Mapping[str, Mapping[str, int]]  # query id -> {doc id: relevance}
    positives: Mapping[str, Sequence[str]] = field(default_factory=dict)  # query id -> positive passages' texts

    def __len__(self) -> int:
        return len(self.queries)

    def sample(self, n: int | None, seed: int = 0) -> "QuerySet":
        """At most ``n`` queries, drawn reproducibly (all of them when ``n`` is None)."""
        if n is None or n >= len(self.queries):
            return self
        keep = sorted(random.Random(seed).sample(list(self.queries), n), key=list(self.queries).index)
        return QuerySet(
            self.benchmark, self.language, self.split,
            {q: self.queries[q] for q in keep},
            {q: self.qrels[q] for q in keep if q in self.qrels},
            {q: self.positives[q] for q in keep if q in self.positives},
        )


class Collection:
    """A passage collection: a ``datasets.Dataset`` with ``docid``, ``title``, ``text``, read in slices.

    ``files``: the JSON-lines files the dataset was read from, in order, so that a bad
    row can be reported by file and line (the collection is never scanned up front:
    each slice's texts are checked as they are read).
    """

    def __init__(self, name: str, dataset, files: Sequence[Path] = ()):
        missing = {"docid", "text"} - set(dataset.column_names)
        if missing:
            raise TrainDataError(f"collection {name}: missing column(s) {sorted(missing)} (has {dataset.column_names})")
        self.name = name
        self.dataset = dataset
        self.files = tuple(Path(f) for f in files)

    def __len__(self) -> int:
        return len(self.dataset)

    def texts(self, start: int, stop: int) -> list[str]:
        rows = self.dataset[start:stop]
        texts = rows["text"]
        for i, x in enumerate(texts):
            if not isinstance(x, str):
                raise TrainDataError(f"{self._where(start + i)} (docid {rows['docid'][i]!r}): field 'text' {_bad_text(x)}")
        titles = rows.get("title") or [None] * len(texts)
        return [passage_text(t, x) for t, x in zip(titles, texts)]

    def _where(self, row: int) -> str:
        """``<file>, line N, row R`` for dataset row ``row`` (files read as JSON lines; blank lines are not rows)."""
        seen = 0
        for path in self.files:
            for lineno, _ in _read_jsonl(path):
                if seen == row:
                    return f"{path}, line {lineno}, row {row}"
                seen += 1
        return f"collection {self.name}, row {row}"

    def iter_texts(self, batch_size: int = 4096) -> Iterator[str]:
        for start in range(0, len(self), batch_size):
            yield from self.texts(start, min(start + batch_size, len(self)))

    def docids(self, indices) -> dict[int, str]:
        """``{row: docid}`` for the given row numbers (negative ones skipped)."""
        rows = np.unique(np.asarray(indices, dtype=np.int64).ravel())  # sorted, once each
        rows = rows[rows >= 0].tolist()
        if not rows:
            return {}
        ids = self.dataset.select(rows)["docid"]
        return dict(zip(rows, (str(d) for d in ids)))

    def __repr__(self) -> str:
        return f"Collection({self.name!r}, {len(self)} passages)"


# --------------------------------------------------------------------------- hub files
def _repo_file(ref: str, relpath: str, *, what: str) -> Path:
    """A file of a dataset repository: from a local copy of it, or downloaded (and cached) from the hub."""
    local = Path(ref).expanduser()
    if local.is_dir():
        path = local / relpath
        if not path.is_file():
            raise MissingResourceError(f"{what}: {path} does not exist (a local copy must keep the hub repository's layout)")
        return path
    resolve(ref, kind="dataset", what=what)  # fails fast, with instructions, when offline and not cached
    from huggingface_hub import hf_hub_download

    try:
        return Path(hf_hub_download(ref, relpath, repo_type="dataset", local_files_only=not hub_reachable()))
    except Exception as exc:  # noqa: BLE001 - gated repo, missing file, network: say which file
        raise MissingResourceError(f"{what}: cannot fetch '{relpath}' from the hub dataset '{ref}': {exc}") from exc


def _repo_folder(ref: str, folder: str, *, what: str) -> Path:
    local = Path(ref).expanduser()
    if local.is_dir():
        path = local / folder
        if not path.is_dir():
            raise MissingResourceError(f"{what}: {path} does not exist (a local copy must keep the hub repository's layout)")
        return path
    resolve(ref, kind="dataset", what=what)
    from huggingface_hub import snapshot_download

    try:
        root = snapshot_download(ref, repo_type="dataset", allow_patterns=[f"{folder}/*"], local_files_only=not hub_reachable())
    except Exception as exc:  # noqa: BLE001
        raise MissingResourceError(f"{what}: cannot fetch '{folder}/' from the hub dataset '{ref}': {exc}") from exc
    return Path(root) / folder


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    from ..common.textio import decode_error

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        yield lineno, json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise TrainDataError(f"{path}, line {lineno}: not valid JSON ({exc})") from None
        except UnicodeDecodeError as exc:  # name the file, not just the byte
            raise decode_error(path, exc) from None


def _json_dataset(files: Sequence[Path]):
    from datasets import load_dataset

    from ..common.textio import TextDecodeError, decode_error

    names = ", ".join(map(str, files))
    try:
        ds = load_dataset("json", data_files=[str(f) for f in files], split="train")
    except Exception as exc:  # noqa: BLE001 - datasets wraps a bad byte in its own error: name the file(s)
        cause = exc
        while cause is not None and not isinstance(cause, UnicodeDecodeError):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        raise decode_error(names, cause) from exc
    try:
        ds.data.table.validate(full=True)  # Arrow loads a bad byte silently; it would fail at the row, naming nothing
    except ValueError as exc:  # pyarrow's ArrowInvalid (a ValueError): invalid UTF-8 in a string column
        raise TextDecodeError(f"{names}: not UTF-8 text ({exc}); save the file as UTF-8") from None
    return ds


# --------------------------------------------------------------------------- training set
TRAIN_FILE = "nq-train.jsonl.gz"


def load_train_set(ref: str, *, max_queries: int | None = None, what: str = "contrastivemix.train_data"):
    """The DPR/Tevatron training set (``Tevatron/wikipedia-nq``, a local copy, or ``"synthetic"``).

    Rows without a positive or without a hard negative are dropped (and counted);
    ``max_queries`` keeps the first rows only.
    """
    from datasets import Dataset

    if ref == SYNTHETIC:
        ds = Dataset.from_list(_synthetic_train_rows())
        source = "synthetic"
    else:
        path = Path(ref) if Path(ref).is_file() else _repo_file(ref, TRAIN_FILE, what=what)
        ds = _json_dataset([path])
        source = str(path)
    missing = {"query_id", "query", "positive_passages", "negative_passages"} - set(ds.column_names)
    if missing:
        raise TrainDataError(f"{source}: training data lacks column(s) {sorted(missing)}")
    n = len(ds)
    with quiet_transformers():  # datasets' progress bars off for this filter
        ds = ds.filter(lambda r: bool(r["positive_passages"]) and bool(r["negative_passages"]))
    if len(ds) < n:
        print(f"training set: dropped {n - len(ds)} of {n} queries without a positive or a hard negative")
    if max_queries is not None:
        ds = ds.select(range(min(max_queries, len(ds))))
    _check_train_rows(ds, source)
    return ds


def _check_train_rows(ds, source: str, limit: int = 1000) -> None:
    """Fail early, naming the row and field, on text that is missing or not a string (checks the first rows)."""
    for i, row in enumerate(ds.select(range(min(limit, len(ds))))):
        if not isinstance(row["query"], str) or not row["query"].strip():
            raise TrainDataError(f"{source}: row {i} (query_id {row['query_id']!r}): field 'query' is empty or not text")
        for fld in ("positive_passages", "negative_passages"):
            for j, p in enumerate(row[fld]):
                if not isinstance(p.get("text"), str):
                    raise TrainDataError(f"{source}: row {i} (query_id {row['query_id']!r}): field '{fld}[{j}].text' {_bad_text(p.get('text'))}")


# --------------------------------------------------------------------------- evaluation sets
def load_queries(benchmark: str, ref: str, language: str, split: str, *, what: str = "") -> QuerySet:
    """Queries, qrels (and positives where shipped) of Mr.TyDi or MIRACL, or of the synthetic set."""
    if ref == SYNTHETIC:
        return _synthetic_queries(benchmark, language, split)
    if benchmark == "mrtydi":
        return _mrtydi_queries(ref, language, split, what=what)
    if benchmark == "miracl":
        return _miracl_queries(ref, language, split, what=what)
    raise ValueError(f"unknown benchmark {benchmark!r} (mrtydi | miracl)")


def collection_identity(benchmark: str, ref: str, language: str) -> tuple[str, ...]:
    """What :func:`load_collection` reads for these arguments: two equal identities are the same passages in the same
    order.  The synthetic set has one collection per language (its Mr.TyDi and MIRACL share it); a real corpus is its
    benchmark's files under ``ref``."""
    return (SYNTHETIC, language) if ref == SYNTHETIC else (benchmark, ref, language)


def load_collection(benchmark: str, ref: str, language: str, *, what: str = "") -> Collection:
    """The passage collection of one language (memory-mapped; never read whole)."""
    if ref == SYNTHETIC:
        return _synthetic_collection(language)
    if benchmark == "mrtydi":
        name = _mrtydi_name(language)
        path = _repo_file(ref, f"mrtydi-v1.1-{name}/corpus.jsonl.gz", what=what)
        return Collection(f"mrtydi-{language}", _json_dataset([path]), files=[path])
    if benchmark == "miracl":
        folder = _repo_folder(ref, f"miracl-corpus-v1.0-{language}", what=what)
        files = sorted(folder.glob("docs-*.jsonl.gz"))
        if not files:
            raise MissingResourceError(f"{what}: no docs-*.jsonl.gz in {folder}")
        return Collection(f"miracl-{language}", _json_dataset(files), files=files)
    raise ValueError(f"unknown benchmark {benchmark!r} (mrtydi | miracl)")


def _mrtydi_name(language: str) -> str:
    if language not in MRTYDI_LANGUAGES:
        raise ValueError(f"Mr.TyDi has no language '{language}' (known: {', '.join(sorted(MRTYDI_LANGUAGES))})")
    return MRTYDI_LANGUAGES[language]


def _mrtydi_queries(ref: str, language: str, split: str, *, what: str) -> QuerySet:
    path = _repo_file(ref, f"mrtydi-v1.1-{_mrtydi_name(language)}/{split}.jsonl.gz", what=what)
    queries, qrels, positives = {}, {}, {}
    for lineno, row in _read_jsonl(path):
        try:
            qid, text, pos = str(row["query_id"]), row["query"], row["positive_passages"]
        except KeyError as exc:
            raise TrainDataError(f"{path}, line {lineno}: missing field {exc}") from None
        if not isinstance(text, str):
            raise TrainDataError(f"{path}, line {lineno}: field 'query' is not text")
        for j, p in enumerate(pos):
            if not isinstance(p.get("text"), str):
                raise TrainDataError(f"{path}, line {lineno} (query_id {qid!r}): field 'positive_passages[{j}].text' {_bad_text(p.get('text'))}")
        queries[qid] = text
        qrels[qid] = {str(p["docid"]): 1 for p in pos}
        positives[qid] = [passage_text(p.get("title"), p["text"]) for p in pos if p["text"]]  # an empty text: judged, no positive text
    return QuerySet("mrtydi", language, split, queries, _judged(qrels), positives)


def _miracl_queries(ref: str, language: str, split: str, *, what: str) -> QuerySet:
    base = f"miracl-v1.0-{language}"
    topics = _repo_file(ref, f"{base}/topics/topics.{base}-{split}.tsv", what=what)
    qrels_file = _repo_file(ref, f"{base}/qrels/qrels.{base}-{split}.tsv", what=what)
    queries: dict[str, str] = {}
    for lineno, line in enumerate(topics.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise TrainDataError(f"{topics}, line {lineno}: expected 'qid<TAB>query', got {len(parts)} field(s)")
        queries[parts[0]] = parts[1]
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in enumerate(qrels_file.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 4:
            raise TrainDataError(f"{qrels_file}, line {lineno}: expected 'qid Q0 docid relevance', got {len(parts)} field(s)")
        try:
            rel = int(parts[3])
        except ValueError:
            raise TrainDataError(f"{qrels_file}, line {lineno}: field 'relevance' is {parts[3]!r}, not an integer") from None
        qrels.setdefault(parts[0], {})[parts[2]] = rel
    qrels = _judged(qrels)
    return QuerySet("miracl", language, split, {q: t for q, t in queries.items() if q in qrels}, qrels)


def _judged(qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Queries with at least one relevant passage (the others cannot be scored by MRR or recall)."""
    return {q: r for q, r in qrels.items() if any(v > 0 for v in r.values())}


# --------------------------------------------------------------------------- synthetic set
_SYLLABLES = ("ka", "lo", "ri", "van", "tel", "mor", "sa", "din", "bra", "qu", "el", "zo", "ni", "tor", "ha", "gen", "fal", "ru", "mi", "os")

# relation -> (query, title, passage); slots in braces are entity names.  Queries
# paraphrase their passage ("established" / "founded by"), and every entity occurs
# in several passages, so matching names alone (BM25's easy route) is not enough.
TEMPLATES: dict[str, tuple[str, str, str]] = {
    "capital": (
        "which city is the seat of government of {country}",
        "{country}",
        "{country} is a country near the sea . the capital of {country} is {city} , a large city .",
    ),
    "founded": (
        "who established {city}",
        "{city}",
        "{city} is an old city in {country} . the city was founded by {person} in {year} .",
    ),
    "river": (
        "what river runs through {city}",
        "{river}",
        "the {river} is a long river . it flows through {city} and {city2} .",
    ),
    "born": (
        "what is the birthplace of {person}",
        "{person}",
        "{person} was a famous writer . {person} was born in {city} in {year} .",
    ),
    "book": (
        "who is the author of {book}",
        "{book}",
        "{book} is a famous book . the book was written by {person} in {year} .",
    ),
    "mountain": (
        "what is the tallest peak in {country}",
        "{mountain}",
        "{mountain} is the highest mountain in {country} .",
    ),
}
# The other worlds ask four of the questions a second way, with the name in the possessive
# ("Vanhator's"): Lucene's Korean and Chinese analysers keep "vanhator's" as one term, so BM25
# no longer finds every answer by its name (its Recall@100 is not pinned at 100), while a
# sub-word encoder still sees the name.
SECOND_PHRASING: dict[str, str] = {
    "capital": "which city is {country}'s seat of government",
    "born": "what is {person}'s birthplace",
    "book": "who is {book}'s author",
    "mountain": "what is {country}'s tallest peak",
}
# One more passage per entity that answers no query: it shares the entity's name and
# much of the wording with the answering passages (so it competes with them) and
# makes the collection larger than the 100 passages the metrics look at.
DISTRACTORS: dict[str, str] = {
    "country": "{name} is a large country with an old city near the sea .",
    "city": "{name} is a large city near a long river .",
    "person": "{name} was a famous writer and lived in an old city .",
    "river": "the {name} is a long river near the sea .",
    "book": "{name} is a famous book .",
    "mountain": "{name} is a mountain near the sea .",
}
# Sentences that vary the other worlds' passages the way real text varies (issue 23): each passage there ends
# with 0-3 of them, drawn per passage (``random.Random(docid)``).  They state no fact a query asks about (no
# named answer; "{name}" is the passage's own title) but use the questions' words, so Lucene retrieves long
# lists for every question and its scores, which depend on a passage's length and term counts, rarely tie
# (with equal templated passages they tied in blocks: a median of 4 distinct scores per Korean query).
# The answering sentence comes first, so an encoder that reads only the first tokens still sees it.
EXTRA_SENTENCES: tuple[str, ...] = (
    "the seat of government is in the capital .",
    "the government of the country was in an old city .",
    "the birthplace of the writer is a large city near the sea .",
    "a famous writer was born in an old city .",
    "the author of the book was a famous writer .",
    "the book was written by an old author who lived near the sea .",
    "the tallest peak of the country is a mountain near the sea .",
    "the highest peak of the mountain is near the sea .",
    "a long river runs through the old city .",
    "the river flows through a large country and near the sea .",
    "the city was established near a long river .",
    "the old city which was founded near the sea is large .",
    "the writer who wrote the book lived in the city where it was written .",
    "the capital is the seat of government of the country .",
    "{name} is old .",
    "{name} is near the sea and near a long river .",
    "the writer lived with a famous author in {name} .",
    "{name} is famous .",
    # other entities of the same world, in relations no question asks about
    "{name} is near {city} .",
    "{person} lived near {name} .",
    "{person} lived with {person2} in {city} .",
    "the {river} is near {country} .",
    "{book} is a famous book in {country} .",
    "{mountain} is near {city} and the {river} .",
    "{city} is an old city near {name} .",
    "{person} was a writer who lived in {city} with {person2} .",
    "{name} is near {country} and the sea .",
    "the famous writer {person} lived near the {river} .",
    "{book} was a famous book with {person} and {person2} .",
    "{name} is near {mountain} .",
)
EXTRA_MAX = 3  # extra sentences per passage: 0 to EXTRA_MAX

_COUNTS = {"country": 12, "city": 24, "person": 16, "river": 12, "book": 16, "mountain": 12}
SPLITS = ("train", "dev", "test")
#: worlds in the synthetic set: the base world (0) and more of the same shape, with new names
WORLDS = 6


@dataclass(frozen=True)
class Fact:
    fact_id: str
    relation: str
    split: str
    query: str
    title: str
    text: str
    world: int = 0  # 0: the base world


@lru_cache(maxsize=1)
def _worlds() -> tuple[dict[str, list[str]], ...]:
    """The entities of each world; names are unique over all worlds, and the base world's are those of a one-world set."""
    used: set[str] = set()
    worlds = []
    for w in range(WORLDS):
        rng = random.Random(20240601 + w)  # a fixed world, independent of the run seeds

        def name(n_syll: int) -> str:
            while True:
                word = "".join(rng.choice(_SYLLABLES) for _ in range(n_syll)).capitalize()
                if word not in used:
                    used.add(word)
                    return word

        out = {kind: [] for kind in _COUNTS}
        for kind, n in _COUNTS.items():
            for _ in range(n):
                if kind == "person":
                    out[kind].append(f"{name(2)} {name(2)}")
                elif kind == "book":
                    out[kind].append(f"{name(2)} {name(3)}")
                else:
                    out[kind].append(name(3))
        worlds.append(out)
    return tuple(worlds)


def _entities() -> dict[str, list[str]]:
    """The base world's entities."""
    return _worlds()[0]


def _world_facts(w: int) -> list[Fact]:
    e = _worlds()[w]
    rng = random.Random(7 if w == 0 else f"7|{w}")
    prefix = "" if w == 0 else f"w{w}-"
    slots_of = {
        "capital": [dict(country=c, city=e["city"][i]) for i, c in enumerate(e["country"])],
        "founded": [dict(city=c, country=e["country"][i % 12], person=e["person"][i % 16], year=1100 + 31 * i) for i, c in enumerate(e["city"])],
        "river": [dict(river=r, city=e["city"][i], city2=e["city"][i + 12]) for i, r in enumerate(e["river"])],
        "born": [dict(person=p, city=e["city"][(i * 5) % 24], year=1700 + 13 * i) for i, p in enumerate(e["person"])],
        "book": [dict(book=b, person=e["person"][(i * 3) % 16], year=1750 + 11 * i) for i, b in enumerate(e["book"])],
        "mountain": [dict(mountain=m, country=e["country"][i]) for i, m in enumerate(e["mountain"])],
    }
    facts = []
    for relation, (q_t, title_t, text_t) in TEMPLATES.items():
        q_t = q_t if w == 0 else SECOND_PHRASING.get(relation, q_t)
        slots = slots_of[relation]
        order = list(range(len(slots)))
        rng.shuffle(order)
        for i, s in enumerate(slots):
            rank = order.index(i) / len(slots)  # half train, a quarter dev, a quarter test, per relation
            split = "train" if rank < 0.5 else ("dev" if rank < 0.75 else "test")
            facts.append(Fact(f"{relation}-{prefix}{i:02d}", relation, split, q_t.format(**s), title_t.format(**s), text_t.format(**s), w))
    return facts


@lru_cache(maxsize=1)
def synthetic_facts() -> tuple[Fact, ...]:
    """The synthetic set's facts (English), each with its split and world; the same on every machine."""
    return tuple(f for w in range(WORLDS) for f in _world_facts(w))


def base_facts() -> tuple[Fact, ...]:
    """The base world's facts (the tiny tokenizer's corpus and the paper-ci stand-ins)."""
    return tuple(f for f in synthetic_facts() if f.world == 0)


@lru_cache(maxsize=None)
def _distractors_by_world(base_only: bool = False) -> tuple[tuple[int, tuple[str, str, str]], ...]:
    """(world, (docid, title, text)) of the passages that answer no query (``base_only``: the base world's)."""
    return tuple(
        (w, (f"doc-extra-{'' if w == 0 else f'w{w}-'}{kind}-{i:02d}", name, DISTRACTORS[kind].format(name=name)))
        for w, world in enumerate(_worlds()[:1] if base_only else _worlds())
        for kind, names in world.items()
        for i, name in enumerate(names)
    )


def _distractors(base_only: bool = False) -> tuple[tuple[str, str, str], ...]:
    """(docid, title, text) of the passages that answer no query (``base_only``: the base world's)."""
    return tuple(doc for _, doc in _distractors_by_world(base_only))


def muse_input(muse: str, language: str) -> str:
    """The dictionary file a run mixing into ``language`` reads, as named in its ``inputs()`` (so the run cache
    keys it by that file's content: editing en-ko re-runs the Korean models only).

    ``synthetic``: the shipped glossary; a folder: its ``en-<language>.txt``; a path or
    URL template: with ``{lang}`` filled in (a URL names a fixed release file).
    """
    if muse == SYNTHETIC:
        return str(synthetic_glossary_path(language))
    if "{lang}" in muse:
        return muse.format(lang=language)
    folder = Path(os.path.expanduser(muse))
    return str(folder / f"en-{language}.txt") if folder.is_dir() else muse


def synthetic_glossary_path(language: str) -> Path:
    path = GLOSSARY_DIR / f"en-{language}.txt"
    if not path.is_file():
        known = sorted(p.stem.split("-")[1] for p in GLOSSARY_DIR.glob("en-*.txt"))
        raise MissingResourceError(f"the synthetic retrieval set has no glossary for '{language}' (shipped: {', '.join(known)})")
    return path


@lru_cache(maxsize=None)
def _glossary(language: str) -> dict[str, list[str]]:
    return load_muse(synthetic_glossary_path(language))


def translate(text: str, dictionary: Mapping[str, Sequence[str]]) -> str:
    """Word-by-word 'translation': every dictionary word (matched lower-cased) becomes its first translation."""
    pieces, cursor = [], 0
    for word, start, end in word_spans(text):
        tr = dictionary.get(word.lower())
        if tr:
            pieces += [text[cursor:start], tr[0]]
            cursor = end
    return "".join(pieces) + text[cursor:]


def _in_language(text: str, language: str) -> str:
    return text if language == "en" else translate(text, _glossary(language))


def _names(text: str) -> set[str]:
    """The invented names in a synthetic text: its capitalised words (a possessive 's dropped)."""
    return {w.removesuffix("'s") for w in text.split() if w[:1].isupper()}


def _synthetic_train_rows(facts: Sequence[Fact] | None = None, *, lexical_negatives: bool = True) -> list[dict]:
    """The training rows of ``facts`` (default: the whole synthetic set), two hard negatives each.

    ``lexical_negatives``: as DPR's BM25 negatives, passages that share a name with the query (the same
    entity in another fact, or its passage that answers nothing), padded with passages of the same kind of
    fact about other entities; otherwise those only (the paper-ci stand-ins keep that older choice).
    """
    facts = synthetic_facts() if facts is None else facts
    by_relation: dict[str, list[Fact]] = {}
    for f in facts:
        by_relation.setdefault(f.relation, []).append(f)
    by_name: dict[str, list[tuple[str, str, str]]] = {}
    if lexical_negatives:
        docs = [(f"doc-{f.fact_id}", f.title, f.text) for f in facts] + list(_distractors())
        for doc in docs:
            for name in _names(f"{doc[1]} {doc[2]}"):
                by_name.setdefault(name, []).append(doc)
    rows = []
    for f in facts:
        if f.split != "train":
            continue
        same = by_relation[f.relation]
        j = same.index(f)
        shared = sorted({d for name in _names(f.query) for d in by_name.get(name, ()) if d[0] != f"doc-{f.fact_id}"})
        random.Random(f.fact_id).shuffle(shared)
        # Hard negatives: passages about the query's entity, then passages of the same kind of fact about other entities.
        negs = (shared + [(f"doc-{n.fact_id}", n.title, n.text) for n in (same[(j + k) % len(same)] for k in (1, 2))])[:2]
        rows.append({
            "query_id": f"q-{f.fact_id}",
            "query": f.query,
            "positive_passages": [{"docid": f"doc-{f.fact_id}", "title": f.title, "text": f.text}],
            "negative_passages": [{"docid": d, "title": t, "text": x} for d, t, x in negs],
        })
    return rows


def _synthetic_queries(benchmark: str, language: str, split: str) -> QuerySet:
    if split not in SPLITS:
        raise ValueError(f"the synthetic retrieval set has splits {SPLITS}, not '{split}'")
    facts = [f for f in synthetic_facts() if f.split == split]
    queries = {f"q-{f.fact_id}": _in_language(f.query, language) for f in facts}
    qrels = {f"q-{f.fact_id}": {f"doc-{f.fact_id}": 1} for f in facts}
    text_of = {d: x for d, _, x in _collection_docs()}  # the passage as the collection holds it
    positives = {f"q-{f.fact_id}": [passage_text(_in_language(f.title, language), _in_language(text_of[f"doc-{f.fact_id}"], language))]
                 for f in facts}
    return QuerySet(benchmark, language, split, queries, qrels, positives)


def _with_extras(text: str, docid: str, name: str, world: Mapping[str, Sequence[str]]) -> str:
    """``text`` followed by 0-:data:`EXTRA_MAX` of :data:`EXTRA_SENTENCES`, drawn for passage ``docid`` (seeded by it);
    their other entities are drawn from ``world``."""
    rng = random.Random(docid)
    extra = rng.sample(EXTRA_SENTENCES, rng.randint(0, EXTRA_MAX))
    return " ".join([text, *(x.format(name=name, person2=rng.choice(world["person"]),
                                      **{kind: rng.choice(names) for kind, names in world.items()}) for x in extra)])


@lru_cache(maxsize=1)
def _collection_docs() -> tuple[tuple[str, str, str], ...]:
    """(docid, title, text) of the collection's passages (English): every fact's passage, then the passages that answer
    nothing; outside the base world each ends with its extra sentences (:data:`EXTRA_SENTENCES`)."""
    docs = [(f.world, (f"doc-{f.fact_id}", f.title, f.text)) for f in synthetic_facts()] + list(_distractors_by_world())
    return tuple((docid, title, text if w == 0 else _with_extras(text, docid, title, _worlds()[w]))
                 for w, (docid, title, text) in docs)


def _synthetic_collection(language: str) -> Collection:
    from datasets import Dataset

    docs = _collection_docs()
    return Collection(
        f"synthetic-{language}",
        Dataset.from_dict({
            "docid": [d for d, _, _ in docs],
            "title": [_in_language(t, language) for _, t, _ in docs],
            "text": [_in_language(x, language) for _, _, x in docs],
        }),
    )


def corpus_lines() -> list[str]:
    """The lines of ``assets/corpus/retrieval.txt`` (the tiny tokenizer's share of this data).

    Every English query and passage of the base world, each glossary entry, and each template in every
    shipped glossary language, so the tiny BPE tokenizer has seen all of the words.
    """
    lines = []
    for f in base_facts():
        lines += [f.query, f.text]
    lines += [text for _, _, text in _distractors(base_only=True)]
    languages = sorted(p.stem.split("-")[1] for p in GLOSSARY_DIR.glob("en-*.txt"))
    for lang in languages:
        g = _glossary(lang)
        lines += [f"{en} {' '.join(tr)}" for en, tr in g.items()]
        first = {r: next(f for f in base_facts() if f.relation == r) for r in TEMPLATES}
        for f in first.values():
            lines += [_in_language(f.query, lang), _in_language(f.text, lang)]
    return lines


def vocabulary_words() -> list[str]:
    """Every word (as BERT's basic tokenizer splits text) that a smoke run on the synthetic set can encode, sorted.

    The words of every query, title and passage of every world, in English and in every shipped glossary
    language, and of every glossary entry (both sides: code-mixing picks any translation).  A code-mixed
    text is made of these words, so a WordPiece vocabulary cut to their pieces tokenizes every smoke text
    exactly as the full one does (``codeswitch.core.models.PRETRAINED_SLICES``, ``vocabulary``).
    """
    languages = sorted(p.stem.split("-")[1] for p in GLOSSARY_DIR.glob("en-*.txt"))
    texts = [f.query for f in synthetic_facts()] + [t for _, title, text in _collection_docs() for t in (title, text)]
    texts += [_in_language(t, lang) for lang in languages for t in list(texts)]
    texts += [w for lang in languages for en, tr in _glossary(lang).items() for w in (en, *tr)]
    return sorted({w for t in texts for w, _, _ in word_spans(t)})


if __name__ == "__main__":  # python -m codeswitch.contrastivemix.data  -> rewrite the tokenizer corpus and the word list
    from ..core.runs import atomic_write_text

    atomic_write_text(CORPUS_FILE, "\n".join(corpus_lines()) + "\n")
    print(f"wrote {CORPUS_FILE} ({CORPUS_FILE.stat().st_size} bytes)")
    atomic_write_text(WORDS_FILE, "\n".join(vocabulary_words()) + "\n")
    print(f"wrote {WORDS_FILE} ({WORDS_FILE.stat().st_size} bytes)")
