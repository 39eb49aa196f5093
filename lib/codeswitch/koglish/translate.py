"""English -> Korean translation of noun phrases, behind one interface.

ConCSE §3.2 translates the selected noun phrase with the Google Translate API.
Here every backend has the same shape — ``translate(texts) -> list[Translation]``,
one result per input, never an exception for a single bad item — so the
construction pipeline (:mod:`codeswitch.koglish.construct`) does not care which one
runs:

===========================  ===============================================================
backend                      when
===========================  ===============================================================
:class:`DictionaryTranslator` a bilingual dictionary / phrase table (MUSE ``en-ko.txt``);
                             the smoke profile's glossary; no network
:class:`HFTranslator`        a Hugging Face machine-translation model (hub id or folder)
:class:`GoogleTranslator`    Google Cloud Translation v2 REST, key from an environment variable
:class:`CachedTranslator`    wraps any of them: a persistent SQLite cache, so nothing is
                             translated twice (and a killed build resumes cheaply)
===========================  ===============================================================

A network backend retries a failed request with exponential backoff
(:func:`with_retries`); an item that still fails comes back as
``Translation(text=None, error=...)`` and the builder *excludes* it with that
reason: never a crash halfway through a dataset, never a silently partial file.
A backend that cannot run *at all* (a missing or unloadable model, no API key,
a language its tokenizer lacks) is different: it raises :class:`TranslationError`
(or ``MissingResourceError``) before the first item, so the build stops with a
clear message instead of excluding every item and caching that result.

Security: the Google key is read from the environment variable named in the
config (default ``GOOGLE_TRANSLATE_API_KEY``), sent in a request header (not the
URL, so it never reaches a log line), and never stored, printed or cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Protocol, Sequence

from ..common.muse import first_translations  # the one MUSE reader

__all__ = [
    "Translation",
    "Translator",
    "TranslationError",
    "DictionaryTranslator",
    "HFTranslator",
    "GoogleTranslator",
    "CachedTranslator",
    "with_retries",
    "make_translator",
]


class TranslationError(RuntimeError):
    """A backend cannot work at all (bad configuration, missing key); not raised for single items."""


@dataclass(frozen=True)
class Translation:
    """The result for one input: ``text`` on success, else ``error`` (why it failed)."""

    source: str
    text: str | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None


class Translator(Protocol):
    #: identifies the backend *and its settings* in the cache (e.g. ``"hf:facebook/nllb-200-distilled-600M"``)
    key: str

    def translate(self, texts: Sequence[str]) -> list[Translation]: ...


def _clean(text: str) -> str:
    """One line, single spaces: a translation must not break the CSV layout."""
    return " ".join(str(text).split())


# --------------------------------------------------------------------------- dictionary



class DictionaryTranslator:
    """Translate a noun phrase with a bilingual dictionary, compositionally.

    Rules, in order (each one is a standard move of phrase-table translation):

    1. the whole phrase, lower-cased and with or without a leading article, if
       the table has it (multi-word entries);
    2. otherwise word by word: English articles (*a, an, the*) are dropped —
       Korean has none; ``X of Y`` becomes ``Y의 X`` and ``X ' s Y`` becomes
       ``X의 Y`` (Korean puts the possessor first); ``no X`` becomes ``X 없음``
       (the released data's rendering: *no update* -> 업데이트 없음); an unknown
       plural noun ``Ns`` becomes ``N들``; numbers and punctuation pass through;
    3. anything else unknown fails the item with ``oov: '<word>'``.

    Adjectives already precede the noun in both languages, so the Korean
    modifier order falls out of rule 2: *the boring movie* -> 지루한 영화,
    *the mother of the student* -> 학생의 어머니.
    """

    ARTICLES = frozenset({"a", "an", "the"})

    def __init__(self, table: Mapping[str, str], *, name: str = "dictionary"):
        self.table = {k.lower(): v for k, v in table.items()}
        digest = hashlib.sha256(json.dumps(sorted(self.table.items()), ensure_ascii=False).encode()).hexdigest()[:10]
        self.key = f"{name}:{digest}"

    @classmethod
    def from_muse(cls, path: str | Path) -> "DictionaryTranslator":
        return cls(first_translations(path), name=f"muse:{Path(path).name}")

    def _word(self, word: str) -> str:
        w = word.lower()
        if w in self.table:
            return self.table[w]
        if re.fullmatch(r"[\d.,:%$-]+|[^\w\s]+", w):
            return word  # numbers, punctuation
        for suffix in ("es", "s"):
            if w.endswith(suffix) and w[: -len(suffix)] in self.table:
                return self.table[w[: -len(suffix)]] + "들"
        raise KeyError(word)

    def _compose(self, words: list[str]) -> list[str]:
        lowered = [w.lower() for w in words]
        if len(words) > 1 and lowered[0] == "no" and "no" not in self.table:
            return self._compose(words[1:]) + ["없음"]  # "no X" -> "X 없음"
        # "X of Y" -> "Y의 X" (recursively: the rightmost possessor comes first)
        if "of" in lowered[1:-1]:
            i = lowered.index("of")
            head, possessor = self._compose(words[:i]), self._compose(words[i + 1 :])
            return possessor[:-1] + [possessor[-1] + "의"] + head
        out: list[str] = []
        i = 0
        while i < len(words):
            w = words[i]
            if w.lower() in self.ARTICLES:
                i += 1
                continue
            if w == "'" and i + 1 < len(words) and words[i + 1].lower() == "s" and out:
                out[-1] += "의"  # pre-tokenised possessive: "student ' s"
                i += 2
                continue
            out.append(self._word(w))
            i += 1
        return out

    def translate_one(self, text: str) -> Translation:
        phrase = _clean(text)
        words = phrase.split()
        for i in (0, 1):  # the whole phrase, with or without a leading article
            if i and (not words or words[0].lower() not in self.ARTICLES):
                break
            key = " ".join(words[i:]).lower()
            if len(words) > i and key in self.table:
                return Translation(text, self.table[key])
        try:
            words = self._compose(words)
        except KeyError as exc:
            return Translation(text, None, f"oov: '{exc.args[0]}'")
        if not words:
            return Translation(text, None, "empty translation")
        return Translation(text, _clean(" ".join(words)))

    def translate(self, texts: Sequence[str]) -> list[Translation]:
        return [self.translate_one(t) for t in texts]

    def __repr__(self) -> str:
        return f"DictionaryTranslator({len(self.table)} entries, key={self.key!r})"


# --------------------------------------------------------------------------- retries
def with_retries(
    fn: Callable[[], object],
    *,
    retries: int = 3,
    backoff: float = 1.0,
    retry_on: tuple[type[BaseException], ...] = (OSError, TimeoutError, urllib.error.URLError),
    sleep: Callable[[float], None] = time.sleep,
):
    """Call ``fn()``; on ``retry_on`` errors wait ``backoff * 2**attempt`` seconds and try again.

    After ``retries`` retries the last error is raised (the caller turns it into
    per-item failures).  ``sleep`` is injectable so tests take no time.
    """
    for attempt in range(retries + 1):
        try:
            return fn()
        except retry_on:
            if attempt == retries:
                raise
            sleep(backoff * 2**attempt)
    raise AssertionError("unreachable")


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


# --------------------------------------------------------------------------- Hugging Face MT
class HFTranslator:
    """A Hugging Face sequence-to-sequence translation model, called directly.

    ``model`` is a hub id or a local folder (resolved with
    :func:`codeswitch.core.hub.resolve`, so an unreachable hub fails fast with
    :class:`~codeswitch.core.hub.MissingResourceError`).  The model and tokenizer
    are loaded with ``AutoModelForSeq2SeqLM`` / ``AutoTokenizer`` (the pinned
    transformers removed ``pipeline("translation")``).  For a multilingual model
    the tokenizer gets ``src_lang`` (NLLB: ``eng_Latn``; M2M100: ``en``), and
    generation starts with the target language's token,
    ``forced_bos_token_id = id(tgt_lang)`` (NLLB: ``kor_Hang``); leave both empty
    for a bilingual en→ko model.

    A backend that cannot run at all — missing model, unloadable folder, a target
    language its tokenizer does not know, a batch *and each of its items* failing
    — raises (:class:`TranslationError` or ``MissingResourceError``): the build
    stops and nothing is cached.  A batch that raises is retried item by item,
    so one bad input fails alone; an empty output is a per-item failure.
    """

    def __init__(
        self,
        model: str = "facebook/nllb-200-distilled-600M",
        *,
        src_lang: str = "eng_Latn",
        tgt_lang: str = "kor_Hang",
        batch_size: int = 32,
        max_length: int = 128,
        num_beams: int = 1,
        device: str | int | None = None,
    ):
        self.model, self.src_lang, self.tgt_lang = model, src_lang, tgt_lang
        self.batch_size, self.max_length, self.num_beams, self.device = batch_size, max_length, num_beams, device
        self._loaded = None
        self.key = f"hf:{model}:{src_lang}->{tgt_lang}"

    def _load(self):
        """(tokenizer, model, forced_bos_token_id), loaded once; any failure is a :class:`TranslationError`."""
        if self._loaded is None:
            from ..core.hub import resolve

            path = resolve(self.model, kind="model", what="koglish.hf_model")  # MissingResourceError as is
            try:
                import torch
                from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

                kwargs = {"src_lang": self.src_lang} if self.src_lang else {}
                tokenizer = AutoTokenizer.from_pretrained(path, **kwargs)
                model = AutoModelForSeq2SeqLM.from_pretrained(path)
                model.to(torch.device(self.device) if self.device is not None else "cpu").eval()
            except Exception as exc:  # noqa: BLE001 - the backend cannot run: stop the build
                raise TranslationError(
                    f"koglish.hf_model = {self.model!r}: cannot load a translation model and tokenizer from {path} "
                    f"({type(exc).__name__}: {exc})"
                ) from exc
            forced = None
            if self.tgt_lang:
                forced = tokenizer.convert_tokens_to_ids(self.tgt_lang)
                if forced is None or forced == tokenizer.unk_token_id:
                    raise TranslationError(
                        f"koglish.hf_tgt_lang = {self.tgt_lang!r} is not a language token of {self.model!r} "
                        "(NLLB: kor_Hang; M2M100: __ko__)"
                    )
            self._loaded = (tokenizer, model, forced)
        return self._loaded

    def _call(self, batch: Sequence[str]) -> list[str]:
        import torch

        tokenizer, model, forced = self._load()
        enc = tokenizer(list(batch), return_tensors="pt", padding=True, truncation=True, max_length=self.max_length)
        enc = {k: v.to(model.device) for k, v in enc.items()}
        kwargs = {"forced_bos_token_id": forced} if forced is not None else {}
        with torch.inference_mode():
            ids = model.generate(**enc, max_new_tokens=self.max_length, num_beams=self.num_beams, do_sample=False, **kwargs)
        return tokenizer.batch_decode(ids, skip_special_tokens=True)

    def translate(self, texts: Sequence[str]) -> list[Translation]:
        self._load()  # a backend that cannot load raises here, before any item
        results: list[Translation] = []
        for batch in _batches(list(texts), self.batch_size):
            try:
                outs = self._call(batch)
            except Exception as batch_exc:  # noqa: BLE001 - isolate the failing item(s)
                items: list[Translation] = []
                for s in batch:
                    try:
                        items.append(Translation(s, _clean(self._call([s])[0])))
                    except Exception as exc:  # noqa: BLE001
                        items.append(Translation(s, None, f"hf model error: {type(exc).__name__}: {exc}"))
                if not any(t.ok for t in items) and not any(r.ok for r in results):
                    raise TranslationError(  # nothing has ever worked: the backend, not an item, is broken
                        f"koglish.hf_model = {self.model!r}: generation fails on every item "
                        f"({type(batch_exc).__name__}: {batch_exc})"
                    ) from batch_exc
                outs = None
            if outs is not None:
                items = [Translation(s, _clean(t)) for s, t in zip(batch, outs)]
            results.extend(t if not t.ok or t.text else Translation(t.source, None, "empty translation") for t in items)
        return results

    def __repr__(self) -> str:
        return f"HFTranslator({self.model!r})"


# --------------------------------------------------------------------------- Google Cloud Translation
class GoogleTranslator:
    """Google Cloud Translation (v2 REST ``translate``), the backend the paper used.

    The API key comes from the environment variable ``key_env`` and travels in
    the ``X-Goog-Api-Key`` header.  Requests are retried ``retries`` times with
    exponential backoff on network errors, HTTP 429 and 5xx; after that every
    item of the batch fails with the HTTP status as its reason.  ``endpoint`` is
    configurable so tests point it at a local fake server.
    """

    ENDPOINT = "https://translation.googleapis.com/language/translate/v2"

    def __init__(
        self,
        *,
        key_env: str = "GOOGLE_TRANSLATE_API_KEY",
        endpoint: str = ENDPOINT,
        source: str = "en",
        target: str = "ko",
        batch_size: int = 64,
        retries: int = 3,
        backoff: float = 1.0,
        timeout: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.key_env, self.endpoint, self.source, self.target = key_env, endpoint, source, target
        self.batch_size, self.retries, self.backoff, self.timeout, self._sleep = batch_size, retries, backoff, timeout, sleep
        self.key = f"google:{source}->{target}"

    def _api_key(self) -> str:
        key = os.environ.get(self.key_env, "").strip()
        if not key:
            raise TranslationError(
                f"Google Cloud Translation needs an API key in the environment variable {self.key_env} "
                "(set it in the shell that starts Jupyter or reproduce.sh; never in a notebook)"
            )
        return key

    def _request(self, batch: Sequence[str], key: str) -> list[str]:
        body = json.dumps({"q": list(batch), "source": self.source, "target": self.target, "format": "text"}).encode()
        req = urllib.request.Request(
            self.endpoint,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json; charset=utf-8", "X-Goog-Api-Key": key},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            if exc.code == 429 or exc.code >= 500:
                raise _Retryable(f"HTTP {exc.code}") from None
            raise _Fatal(f"HTTP {exc.code}") from None
        items = payload.get("data", {}).get("translations", [])
        if len(items) != len(batch):
            raise _Fatal(f"malformed response: {len(items)} translations for {len(batch)} inputs")
        return [it.get("translatedText", "") for it in items]

    def translate(self, texts: Sequence[str]) -> list[Translation]:
        key = self._api_key()
        results: list[Translation] = []
        for batch in _batches(list(texts), self.batch_size):
            try:
                outs = with_retries(
                    lambda b=batch: self._request(b, key),
                    retries=self.retries,
                    backoff=self.backoff,
                    retry_on=(_Retryable, OSError, TimeoutError),
                    sleep=self._sleep,
                )
                results.extend(
                    Translation(s, _clean(t)) if _clean(t) else Translation(s, None, "empty translation")
                    for s, t in zip(batch, outs)
                )
            except (_Retryable, _Fatal, OSError, TimeoutError) as exc:
                reason = str(exc) if isinstance(exc, (_Retryable, _Fatal)) else type(exc).__name__
                results.extend(Translation(s, None, f"google: {reason} after {self.retries} retries") for s in batch)
        return results

    def __repr__(self) -> str:  # never shows the key
        return f"GoogleTranslator(endpoint={self.endpoint!r}, key from ${self.key_env})"


class _Retryable(Exception):
    pass


class _Fatal(Exception):
    pass


# --------------------------------------------------------------------------- cache
class CachedTranslator:
    """A persistent cache in front of any backend: nothing is translated twice.

    One SQLite file (transactions make every write atomic; a killed build loses
    at most the batch in flight).  Keyed by ``(backend.key, source text)``, so
    changing the model or dictionary never serves stale translations.  Only
    successes are cached: a failed item is tried again next time.
    """

    def __init__(self, backend: Translator, path: str | Path):
        self.backend = backend
        self.path = Path(path)
        self.key = backend.key
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS mt (backend TEXT, source TEXT, target TEXT, PRIMARY KEY (backend, source))")
        self.hits = 0
        self.misses = 0

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def translate(self, texts: Sequence[str]) -> list[Translation]:
        texts = list(texts)
        found: dict[str, str] = {}
        with self._connect() as db:
            for chunk in _batches(sorted(set(texts)), 500):
                q = f"SELECT source, target FROM mt WHERE backend = ? AND source IN ({','.join('?' * len(chunk))})"
                found.update(db.execute(q, [self.key, *chunk]).fetchall())
        todo = [t for t in dict.fromkeys(texts) if t not in found]
        self.hits += sum(t in found for t in texts)  # a set lookup per text (a list scan made this quadratic)
        self.misses += len(todo)
        fresh: dict[str, Translation] = {}
        if todo:
            for r in self.backend.translate(todo):
                fresh[r.source] = r
            with self._connect() as db:
                db.executemany(
                    "INSERT OR REPLACE INTO mt VALUES (?, ?, ?)",
                    [(self.key, r.source, r.text) for r in fresh.values() if r.ok],
                )
        return [Translation(t, found[t]) if t in found else fresh[t] for t in texts]

    def __len__(self) -> int:
        with self._connect() as db:
            return db.execute("SELECT COUNT(*) FROM mt WHERE backend = ?", [self.key]).fetchone()[0]

    def __repr__(self) -> str:
        return f"CachedTranslator({self.backend!r}, {str(self.path)!r})"


# --------------------------------------------------------------------------- factory
def make_translator(
    backend: str,
    *,
    dictionary: str | Path | None = None,
    hf_model: str = "facebook/nllb-200-distilled-600M",
    hf_src_lang: str = "eng_Latn",
    hf_tgt_lang: str = "kor_Hang",
    google_key_env: str = "GOOGLE_TRANSLATE_API_KEY",
    cache: str | Path | None = None,
    device: str | int | None = None,
) -> Translator:
    """Build the backend named ``backend`` (``dictionary`` | ``hf`` | ``google``), cached if ``cache`` is a path."""
    if backend == "dictionary":
        if dictionary is None:
            raise TranslationError("the dictionary backend needs a MUSE-format file (koglish.dictionary)")
        t: Translator = DictionaryTranslator.from_muse(dictionary)
    elif backend == "hf":
        t = HFTranslator(hf_model, src_lang=hf_src_lang, tgt_lang=hf_tgt_lang, device=device)
    elif backend == "google":
        t = GoogleTranslator(key_env=google_key_env)
    else:
        raise TranslationError(f"unknown translation backend {backend!r} (dictionary | hf | google)")
    return CachedTranslator(t, cache) if cache else t
