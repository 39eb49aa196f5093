"""Parsing, step 1 of building Koglish (:mod:`codeswitch.koglish.construct`): English sentences into
constituency trees, with benepar ``benepar_en3`` (:class:`BeneparParser`) or from gold PTB bracket
strings (:class:`BracketParser`), behind a persistent cache (:class:`CachedParser`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Mapping, Protocol, Sequence

from ..core.models import benepar_tokenizer_compat

__all__ = ["Parser", "ParserUnavailable", "BracketParser", "BeneparParser", "CachedParser", "parse_ptb"]


class ParserUnavailable(RuntimeError):
    """The constituency parser (benepar) or its model cannot be loaded."""


class Parser(Protocol):
    key: str

    def parse_many(self, sentences: Sequence[str]) -> list:  # list[nltk.Tree | None]
        ...


def parse_ptb(bracketed: str):
    """A PTB bracket string -> ``nltk.Tree`` (raises ``ValueError`` naming the string on bad input)."""
    from nltk import Tree

    try:
        return Tree.fromstring(bracketed)
    except ValueError as exc:
        raise ValueError(f"not a PTB bracket string: {bracketed[:80]!r}: {exc}") from exc


class BracketParser:
    """Trees given in advance as PTB bracket strings, looked up by sentence (gold trees, or a treebank)."""

    def __init__(self, trees: Mapping[str, str]):
        self.trees = {" ".join(s.split()): t for s, t in trees.items()}
        self.key = "ptb"

    def parse_many(self, sentences: Sequence[str]) -> list:
        out = []
        for s in sentences:
            t = self.trees.get(" ".join(s.split()))
            out.append(parse_ptb(t) if t is not None else None)
        return out


class BeneparParser:
    """The Berkeley Neural Parser (``benepar_en3``; Kitaev & Klein), imported lazily.

    Sentences are passed pre-tokenised (split on spaces, as the Koglish text is),
    so the tree's leaves are the sentence's tokens one for one.  When the model
    is not installed, ``benepar.download`` is called; it *returns False* rather
    than raising when it fails (no network), which becomes a
    :class:`ParserUnavailable` saying how to install the model by hand.
    """

    def __init__(self, model: str = "benepar_en3", *, batch_size: int = 64, download: bool = True):
        self.model, self.batch_size, self._download = model, batch_size, download
        self._parser = None
        self.key = f"benepar:{model}"

    def _load(self):
        if self._parser is not None:
            return self._parser
        try:
            import benepar
        except ImportError as exc:  # pragma: no cover - benepar is in requirements.txt
            raise ParserUnavailable("benepar is not installed: pip install benepar (see requirements.txt)") from exc
        try:
            with benepar_tokenizer_compat():
                self._parser = benepar.Parser(self.model, batch_size=self.batch_size)
        except LookupError:
            ok = benepar.download(self.model, quiet=True, raise_on_error=False) if self._download else False
            if not ok:
                raise ParserUnavailable(
                    f"benepar model '{self.model}' is not installed and could not be downloaded "
                    f"(benepar.download returned {ok!r}). On a machine with network run\n"
                    f"    python -c \"import benepar; benepar.download('{self.model}')\"\n"
                    "and copy the nltk_data/models folder here (or set NLTK_DATA), "
                    "or give gold trees as PTB bracket strings (koglish.parser: ptb)."
                ) from None
            with benepar_tokenizer_compat():
                self._parser = benepar.Parser(self.model, batch_size=self.batch_size)
        return self._parser

    def parse_many(self, sentences: Sequence[str]) -> list:
        import benepar

        parser = self._load()
        # escaped_words = words keeps the leaves identical to the tokens (no -LRB- etc.)
        inputs = [benepar.InputSentence(words=s.split(), escaped_words=s.split()) if s.split() else None for s in sentences]
        todo = [x for x in inputs if x is not None]
        trees = iter(parser.parse_sents(todo)) if todo else iter(())
        return [None if x is None else next(trees) for x in inputs]


def _tree_json(tree) -> str:
    """A tree as JSON ``[label, child, ...]`` (leaves are strings): unlike a bracket string, safe for ``(`` leaves."""

    def enc(t):
        return t if isinstance(t, str) else [t.label(), *[enc(c) for c in t]]

    return json.dumps(enc(tree), ensure_ascii=False)


def _tree_from_json(text: str):
    from nltk import Tree

    def dec(x):
        return x if isinstance(x, str) else Tree(x[0], [dec(c) for c in x[1:]])

    return dec(json.loads(text))


class CachedParser:
    """A persistent parse cache (SQLite, keyed by parser and sentence) in front of any parser."""

    def __init__(self, parser: Parser, path: str | Path):
        self.parser, self.path, self.key = parser, Path(path), parser.key
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with sqlite3.connect(self.path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS trees (parser TEXT, sentence TEXT, tree TEXT, PRIMARY KEY (parser, sentence))")

    def parse_many(self, sentences: Sequence[str]) -> list:
        found: dict[str, str] = {}
        uniq = sorted(set(sentences))
        with sqlite3.connect(self.path) as db:
            for i in range(0, len(uniq), 500):
                chunk = uniq[i : i + 500]
                q = f"SELECT sentence, tree FROM trees WHERE parser = ? AND sentence IN ({','.join('?' * len(chunk))})"
                found.update(db.execute(q, [self.key, *chunk]).fetchall())
        todo = [s for s in dict.fromkeys(sentences) if s not in found]
        fresh = dict(zip(todo, self.parser.parse_many(todo))) if todo else {}
        with sqlite3.connect(self.path) as db:
            db.executemany(
                "INSERT OR REPLACE INTO trees VALUES (?, ?, ?)",
                [(self.key, s, _tree_json(t)) for s, t in fresh.items() if t is not None],
            )
        return [_tree_from_json(found[s]) if s in found else fresh[s] for s in sentences]

