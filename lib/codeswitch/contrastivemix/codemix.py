"""Code-mixing with bilingual dictionaries (ContrastiveMix §3.2, §4.1; Qin et al. 2021).

A *MUSE dictionary* (``en-XX.txt``, Lample et al. 2018) lists one English word and
one translation per line, separated by a tab or by a space (both occur in the
published files); an English word with several translations has several lines::

    and     그리고
    country 나라
    country 국가

:func:`load_muse` reads such a file into ``{"and": ["그리고"], "country": ["나라", "국가"]}``.

:func:`code_mix` switches words of an English text into the target language:

1. split the text into words the way BERT's basic tokenizer does (whitespace,
   then every punctuation mark is its own word);
2. for every word that has an entry in the dictionary, draw ``u ~ U[0, 1)`` and,
   when ``u < rate`` (``r_w`` in the paper), replace it by one of its translations
   drawn uniformly at random.

Everything between the switched words (spacing, punctuation, the unswitched words
and their case) is kept byte for byte, so ``rate = 0`` returns the input unchanged.
All randomness comes from the ``random.Random`` passed in, so a seeded generator
reproduces the same mix.

Two conventions differ between the paper and the authors' released code:

* **Case.**  Dictionary entries are lower-case.  By default a word is looked up
  lower-cased (``"Country"`` switches like ``"country"``).  The released code looks
  words up as written and so never switches a capitalised word:
  ``case_sensitive=True``.
* **Special tokens of mixed inputs** ([CLS]/[SEP]) are a matter of encoding, not of
  the text: see ``mixed_special_tokens`` in :mod:`codeswitch.contrastivemix.train`.

Example::

    >>> import random
    >>> d = {"capital": ["수도"], "country": ["나라", "국가"]}
    >>> code_mix("What is the capital of the country?", d, 1.0, random.Random(0))
    'What is the 수도 of the 국가?'
"""

from __future__ import annotations

import random
from functools import lru_cache
from pathlib import Path

from .muse_setting import muse_file
from typing import Mapping, Sequence

from ..common.muse import MuseFormatError, load_muse  # the one MUSE reader (re-exported)

__all__ = ["load_muse", "code_mix", "word_spans", "muse_path", "MuseFormatError", "MUSE_URL"]

MUSE_URL = "https://dl.fbaipublicfiles.com/arrival/dictionaries/en-{lang}.txt"


@lru_cache(maxsize=1)
def _bert_pre_tokenizer():
    # The Rust implementation of BERT's basic tokenizer split (whitespace, then each
    # punctuation character on its own); unlike the Python one it returns offsets,
    # which lets code_mix keep everything it does not switch exactly as written.
    from tokenizers.pre_tokenizers import BertPreTokenizer

    return BertPreTokenizer()


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """The words of ``text`` as BERT's basic tokenizer splits them, with character offsets."""
    return [(w, s, e) for w, (s, e) in _bert_pre_tokenizer().pre_tokenize_str(text)]


def code_mix(
    text: str,
    dictionary: Mapping[str, Sequence[str]],
    rate: float,
    rng: random.Random,
    *,
    case_sensitive: bool = False,
) -> str:
    """Replace each dictionary word of ``text`` with probability ``rate`` by a random translation.

    Args:
        text: the English text.
        dictionary: ``{english word: translations}``, e.g. from :func:`load_muse`.
        rate: ``r_w``, the probability that a word found in the dictionary is switched.
        rng: the source of randomness (one ``rng.random()`` per dictionary word, and
            one ``rng.choice`` per switched word), so a seeded generator reproduces the mix.
        case_sensitive: look words up as written (the released code) instead of
            lower-cased (default).

    Returns:
        The mixed text; with ``rate = 0`` (or no dictionary word) exactly ``text``.
    """
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"code_mix: rate must be in [0, 1], got {rate}")
    pieces: list[str] = []
    cursor = 0
    for word, start, end in word_spans(text):
        translations = dictionary.get(word if case_sensitive else word.lower())
        if not translations:
            continue
        if rng.random() < rate:
            pieces.append(text[cursor:start])
            pieces.append(rng.choice(translations))
            cursor = end
    if cursor == 0:
        return text
    pieces.append(text[cursor:])
    return "".join(pieces)


def muse_path(ref: str, language: str, *, download_dir: Path, timeout: float = 30.0) -> Path:
    """The file of the ``en-<language>`` dictionary named by ``ref``.

    ``ref`` is a folder holding ``en-<xx>.txt`` files (e.g. the released code's
    ``utils/dict``), a file path containing ``{lang}``, or a URL template containing
    ``{lang}`` (default: the MUSE release, :data:`MUSE_URL`), downloaded once into
    ``download_dir``.  Raises :class:`~codeswitch.core.hub.MissingResourceError` when the
    file cannot be found or fetched.
    """
    from ..core.hub import MissingResourceError, offline

    if ref.startswith(("http://", "https://")):
        url = ref.format(lang=language)
        dest = Path(download_dir) / f"en-{language}.txt"
        if dest.is_file():
            return dest
        if offline():
            raise MissingResourceError(
                f"MUSE dictionary en-{language} is needed but offline mode is on and {dest} does not exist.\n"
                f"  Fix: download {url} on a machine with network and point contrastivemix.muse at its folder."
            )
        import urllib.request

        from ..core.atomic import atomic_write_bytes

        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - a fixed https URL template
                data = resp.read()
        except OSError as exc:
            raise MissingResourceError(
                f"cannot download the MUSE dictionary {url}: {exc}.\n"
                f"  Fix: fetch it elsewhere and set contrastivemix.muse to the folder holding en-{language}.txt."
            ) from exc
        return atomic_write_bytes(dest, data)
    path = Path(muse_file(ref, language))  # the one reading of the setting, shared with the run's inputs and the check
    if not path.is_file():
        raise MissingResourceError(f"MUSE dictionary {path} does not exist (contrastivemix.muse = {ref!r})")
    return path
