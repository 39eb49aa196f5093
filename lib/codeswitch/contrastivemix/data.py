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

**The synthetic set** (smoke profile) is :mod:`.synthetic`'s: its facts become a training set, query sets and
one collection per language here, in the same containers as the real datasets.

"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..core.hub import MissingResourceError, hub_reachable, resolve
from ..core.utils import quiet_transformers
from .synthetic import SPLITS, SYNTHETIC, _collection_docs, _in_language, _synthetic_train_rows, synthetic_facts, synthetic_glossary_path
from .muse_setting import muse_file

__all__ = [
    "MRTYDI_LANGUAGES",
    "QuerySet",
    "Collection",
    "passage_text",
    "load_train_set",
    "load_queries",
    "load_collection",
    "collection_identity",
    "muse_input",
    "TrainDataError",
]

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

    def take(self, n: int | None) -> "QuerySet":
        """A seeded random sample of ``n`` queries (all of them when ``n`` is None or the split has no more), drawn by
        :func:`codeswitch.core.sampling.sample_indices` with its one fixed seed and kept in file order: the same
        queries for every run that reads this split.  The one sampler of queries: ``contrastivemix.eval_max_queries``,
        ``tune_max_queries`` (of those) and the UMAP figure's ``umap_points``."""
        from ..core.sampling import sample_indices

        if n is None or n >= len(self.queries):
            return self
        qids = list(self.queries)
        return self._keep([qids[i] for i in sample_indices(len(qids), n, "random")])

    def _keep(self, keep: Sequence[str]) -> "QuerySet":
        """The queries ``keep`` (in that order), with their qrels and positives."""
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


def load_train_set(ref: str, *, max_queries: int | None = None, what: str = "contrastivemix.train_data", rule: str = "head"):
    """The DPR/Tevatron training set (``Tevatron/wikipedia-nq``, a local copy, or ``"synthetic"``).

    Rows without a positive or without a hard negative are dropped (and counted);
    ``max_queries`` keeps the first rows only (``rule: random``: a sample drawn with :mod:`codeswitch.core.sampling`'s
    fixed seed, in file order, of the rows with a positive and a hard negative).
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
        from ..core.sampling import sample_indices

        ds = ds.select(sample_indices(len(ds), max_queries, rule))
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


def muse_input(muse: str, language: str) -> str:
    """The dictionary file a run mixing into ``language`` reads, as named in its ``inputs()`` (so the run cache
    keys it by that file's content: editing en-ko re-runs the Korean models only).

    ``synthetic``: the shipped glossary; a folder: its ``en-<language>.txt``; a path or
    URL template: with ``{lang}`` filled in (a URL names a fixed release file).
    """
    if muse == SYNTHETIC:
        return str(synthetic_glossary_path(language))
    return muse_file(muse, language)


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


if __name__ == "__main__":  # python -m codeswitch.contrastivemix.data  -> rewrite the tokenizer corpus and the word list
    from .synthetic import write_assets

    write_assets()
