"""Tokenise once (issue 24, item 4): a dataset's texts tokenised once per (tokenizer, max_length), cached by content.

:func:`tokenised` returns what ``tokenizer(texts[, pairs], truncation=True, max_length=…)`` returns (lists of token
ids, no padding), read from ``<cache>/<hash>.npz`` when some run already tokenised the same texts with the same
tokenizer and limit.  The hash covers the tokenizer's full definition (a fast tokenizer's serialised pipeline:
vocabulary, normaliser, pre-tokeniser, post-processor; its special tokens and truncation side), ``max_length`` and every
text, so an entry can never be stale: change any of them and it is another entry.  The five seeds × three scenarios of
a GLUE task, or every backbone that shares a tokenizer, tokenise a split once.

The cache folder is ``$CODESWITCH_TOKEN_CACHE``, else ``runs/.tokens`` under the project root; entries are written
atomically (two workers writing one entry write the same bytes).  Ids are stored as int32 with row offsets.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import weakref
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["tokenised", "tokenised_arrays", "tokenised_words", "TokenRows", "tokenizer_identity", "token_cache_dir"]

VERSION = 1  # bump when the stored layout changes
CHUNK = 1024  # texts per tokenizer call


def token_cache_dir() -> Path:
    env = os.environ.get("CODESWITCH_TOKEN_CACHE")
    if env:
        return Path(env)
    from ..core.profiles import project_root

    return project_root() / "runs" / ".tokens"


#: tokenizer object -> (its state stamp, its identity): :func:`tokenizer_identity` parses a fast tokenizer's whole pipeline
#: (its vocabulary included) once per object, not once per call; the entry goes with the object (weak keys)
_IDENTITIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _state_stamp(backend, tokenizer) -> tuple:
    """What changes, cheaply read, when a fast tokenizer is changed after its identity was computed: its vocabulary size
    and added tokens (``add_tokens``, ``add_special_tokens``), a pipeline component replaced (normalizer, pre-tokenizer,
    model, post-processor, decoder), its special tokens or truncation side."""
    return (id(backend), backend.get_vocab_size(with_added_tokens=True), repr(sorted(backend.get_added_tokens_decoder().items())),
            repr(backend.normalizer), repr(backend.pre_tokenizer), repr(backend.model), repr(backend.post_processor),
            repr(backend.decoder), repr(sorted(getattr(tokenizer, "special_tokens_map", {}).items())),
            getattr(tokenizer, "truncation_side", "right"))


def tokenizer_identity(tokenizer) -> str | None:
    """A hash of everything that decides ``tokenizer``'s output ids; None for an object that exposes neither a
    tokenizers pipeline nor a vocabulary (a stand-in in a test): its output is then never cached.

    Memoised per fast tokenizer object, and computed again when the object has changed since (:func:`_state_stamp`)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return _identity(tokenizer)
    stamp = _state_stamp(backend, tokenizer)
    try:
        memo = _IDENTITIES.get(tokenizer)
    except TypeError:  # not weakly referable or not hashable: computed every time
        return _identity(tokenizer)
    if memo is None or memo[0] != stamp:
        memo = (stamp, _identity(tokenizer))
        _IDENTITIES[tokenizer] = memo
    return memo[1]


def _identity(tokenizer) -> str | None:
    """:func:`tokenizer_identity`, computed."""
    h = hashlib.sha256(type(tokenizer).__name__.encode())
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        pipeline = json.loads(backend.to_str())  # the whole pipeline, vocabulary included ...
        pipeline.pop("truncation", None)  # ... less the state the last call left (a call sets its own)
        pipeline.pop("padding", None)
        h.update(json.dumps(pipeline, sort_keys=True).encode())
    elif callable(getattr(tokenizer, "get_vocab", None)):
        h.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode())
    else:
        return None
    extra = {"special": {k: str(v) for k, v in sorted(getattr(tokenizer, "special_tokens_map", {}).items())},
             "truncation_side": getattr(tokenizer, "truncation_side", "right"),
             "class": type(tokenizer).__module__}
    h.update(json.dumps(extra, sort_keys=True).encode())
    return h.hexdigest()


def _key(tokenizer, columns: Sequence[Sequence[str]], max_length: int | None, special: bool = True) -> str | None:
    identity = tokenizer_identity(tokenizer)
    if identity is None:
        return None
    # without special tokens: another entry (the default keeps the keys entries were written under)
    h = hashlib.sha256(f"v{VERSION}|{identity}|{max_length}|{len(columns)}{'' if special else '|nospecial'}".encode())
    for col in columns:
        h.update(f"|{len(col)}|".encode())
        for t in col:
            b = t.encode()
            h.update(len(b).to_bytes(8, "little"))
            h.update(b)
    return h.hexdigest()[:32]


class TokenRows:
    """A tokenised column set kept compact: per output name, the ids of every row end to end (int32) and the row
    offsets (int64), as the cache stores them.  ``rows[name][i]``: row ``i``'s ids (an int32 array); ``len(rows)``."""

    def __init__(self, arrays: dict[str, tuple[np.ndarray, np.ndarray]]):
        self.arrays = arrays
        self.names = list(arrays)

    def __len__(self) -> int:
        return len(next(iter(self.arrays.values()))[1]) - 1 if self.arrays else 0

    def row(self, name: str, i: int) -> np.ndarray:
        ids, off = self.arrays[name]
        return ids[off[i] : off[i + 1]]

    def lengths(self, name: str = "input_ids") -> np.ndarray:
        return np.diff(self.arrays[name][1])

    def lists(self) -> dict[str, list[list[int]]]:
        return {n: [ids[off[i] : off[i + 1]].tolist() for i in range(len(off) - 1)] for n, (ids, off) in self.arrays.items()}

    @classmethod
    def from_lists(cls, out: dict[str, Sequence[Sequence[int]]]) -> "TokenRows":
        return cls({name: (np.fromiter((x for r in rows for x in r), dtype=np.int32),
                           np.cumsum([0] + [len(r) for r in rows], dtype=np.int64)) for name, rows in out.items()})


def _read_entry(path: Path | None) -> TokenRows | None:
    """A stored entry; None where there is none (or it is damaged: it is then rewritten)."""
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path) as z:
            names = [k[: -len("_ids")] for k in z.files if k.endswith("_ids")]
            return TokenRows({n: (z[f"{n}_ids"], z[f"{n}_offsets"]) for n in names})
    except (OSError, ValueError, KeyError):  # a damaged entry: tokenise again and replace it
        return None


def _write_entry(path: Path | None, rows: TokenRows) -> None:
    """Store ``rows`` at ``path`` atomically (int32 ids, row offsets); nothing where ``path`` is None (uncached)."""
    from ..core.runs import atomic_write_bytes

    if path is None:
        return
    buf = io.BytesIO()
    np.savez(buf, **{f"{n}_{part}": a for n, (ids, off) in rows.arrays.items() for part, a in (("ids", ids), ("offsets", off))})
    atomic_write_bytes(path, buf.getvalue())


def tokenised_arrays(tokenizer, columns: Sequence[Sequence[str]], *, max_length: int | None, cache_dir: str | Path | None = None,
                     add_special_tokens: bool = True, cache: bool = True) -> TokenRows:
    """:func:`tokenised` in its compact form (:class:`TokenRows`), computed once per (tokenizer, max_length, texts).

    ``add_special_tokens=False``: without [CLS]/[SEP] (another cache entry).  ``cache=False``: tokenised in memory,
    nothing written (texts no other run will read, e.g. one run's code-mixed copies): still one tokenizer call for
    the whole list.
    """
    columns = [list(c) for c in columns]
    if not 1 <= len(columns) <= 2 or len({len(c) for c in columns}) > 1:
        raise ValueError(f"tokenised: one or two columns of equal length, got {[len(c) for c in columns]}")
    for j, col in enumerate(columns):
        for i, t in enumerate(col):
            if not isinstance(t, str):
                raise ValueError(f"tokenised: column {j}, row {i} is {type(t).__name__} {t!r:.60}, not text")
    if not columns[0]:  # nothing to tokenise (a tokenizer refuses an empty batch)
        names = getattr(tokenizer, "model_input_names", None) or ["input_ids", "attention_mask"]
        return TokenRows({name: (np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64)) for name in names})
    key = _key(tokenizer, columns, max_length, add_special_tokens) if cache else None
    path = None if key is None else Path(cache_dir or token_cache_dir()) / f"{key}.npz"
    cached = _read_entry(path)
    if cached is not None:
        return cached
    kw = {} if add_special_tokens else {"add_special_tokens": False}
    parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    n = len(columns[0])
    for lo in range(0, n, CHUNK):  # bounded memory: a fast tokenizer's result holds tens of bytes per token
        enc = tokenizer(*[c[lo : lo + CHUNK] for c in columns], truncation=max_length is not None, max_length=max_length, **kw)
        for name, rows in enc.items():
            parts.setdefault(name, []).append((np.fromiter((x for r in rows for x in r), dtype=np.int32),
                                               np.array([len(r) for r in rows], dtype=np.int64)))
    arrays = {name: (np.concatenate([ids for ids, _ in p]), np.concatenate([[0], np.cumsum(np.concatenate([ln for _, ln in p]))]).astype(np.int64))
              for name, p in parts.items()}
    out = TokenRows(arrays)
    _write_entry(path, out)
    return out


def tokenised(tokenizer, columns: Sequence[Sequence[str]], *, max_length: int | None, cache_dir: str | Path | None = None
              ) -> dict[str, list[list[int]]]:
    """``tokenizer(*columns, truncation=True, max_length=max_length)`` as ``{name: [ids per row]}``, computed once.

    ``columns``: one list of texts, or two (sentence pairs), row for row.
    """
    return tokenised_arrays(tokenizer, columns, max_length=max_length, cache_dir=cache_dir).lists()


def tokenised_words(tokenizer, sentences: Sequence[Sequence[str]], *, max_length: int | None,
                    cache_dir: str | Path | None = None) -> dict[str, list[list[int]]]:
    """``tokenizer(sentences, is_split_into_words=True, truncation=True, max_length=max_length)`` of pre-split
    sentences as ``{name: [ids per row]}``, plus ``"word_ids"`` (each token's word, −1 for none: the fast tokenizer's
    ``word_ids()``), computed once per (tokenizer, limit, sentences) like :func:`tokenised` (its own entries)."""
    sentences = [list(s) for s in sentences]
    for i, s in enumerate(sentences):
        for j, w in enumerate(s):
            if not isinstance(w, str):
                raise ValueError(f"tokenised_words: sentence {i}, word {j} is {type(w).__name__} {w!r:.60}, not text")
    key = _key(tokenizer, [["\x1f".join(s) for s in sentences]], max_length)  # words joined by a unit separator
    path = None if key is None else Path(cache_dir or token_cache_dir()) / f"{key}-words.npz"
    cached = _read_entry(path)
    if cached is not None:
        return cached.lists()
    enc = tokenizer(sentences, is_split_into_words=True, truncation=max_length is not None, max_length=max_length)
    out = {k: [list(map(int, r)) for r in v] for k, v in enc.items()}
    out["word_ids"] = [[-1 if w is None else int(w) for w in enc.word_ids(i)] for i in range(len(sentences))]
    _write_entry(path, TokenRows.from_lists(out))
    return out
