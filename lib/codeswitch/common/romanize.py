"""Romanising Hindi: Devanagari -> ITRANS, the scheme the alignment and CalBERT papers use.

Code-mixed Hindi–English ("Hinglish") is written both in Devanagari and in the
Latin script.  English-pretrained transformers only know the Latin script, so
both papers bring Devanagari text into the Latin script with the ITRANS ASCII
scheme (CalBERT §6.3: "we employ the use of a transliteration library and convert
them into the ITRANS ASCII transliteration scheme"), with ``indic-transliteration``::

    >>> to_itrans("जिसके जवाब में पाकिस्तान ने")
    'jisake javAba meM pAkistAna ne'
    >>> to_itrans("ओप्पो के प्रेसिडेंट sky Li ने कहा")    # Latin text is left as it is
    'oppo ke presiDeMTa sky Li ne kahA'

ITRANS is case-sensitive (``A`` is the long aa); CalBERT's released pairs are the
lower-cased form (Table 2: ``shuruata``, ``rrina``), which ``lowercase=True`` gives
(an uncased tokenizer lower-cases anyway).

Only runs of Devanagari characters are transliterated, so Latin words, digits,
URLs, hashtags and ITRANS's own control sequences in the *input* (``##``, ``{}``)
pass through byte for byte.  Within a run, a few normalisations come first,
because the library maps only the canonical code points:

* Unicode NFC, which splits the precomposed nukta letters U+0958–U+095F
  (``ढ़`` = ``ढ`` + ``़``), the form the library knows;
* ITRANS has no letters for the *candra* vowels of English loanwords
  (``मॉडल`` "model", ``बॅट`` "bat") nor for the short e/o of southern languages:
  they are folded into the nearest ITRANS vowel (ॉ/ऑ -> o, ॅ/ऍ -> e, ॆ/ऎ -> e,
  ॊ/ऒ -> o), and the frequent mis-typing ``ा`` + ``ॅ`` of ``ॉ`` is read as ``ॉ``;
* ``ऩ`` (na with nukta, Tamil ṉ) becomes ``न``; zero-width characters inside a
  word ((non-)joiners, which are rendering hints, and stray zero-width spaces)
  are removed, and so is a nukta typed after a vowel sign (a typo the library
  leaves in place: 14 of the 4,182 IITP training reviews).

Any other Devanagari sign that ITRANS lacks (archaic, Vedic) is kept as it is:
nothing is silently dropped.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["to_itrans", "has_devanagari", "DEVANAGARI_RUN"]

# A run starts with a character of the Devanagari block or Devanagari Extended (Vedic
# signs) and may hold zero-width characters (space, non-joiner, joiner, BOM), which
# are removed from it.
DEVANAGARI_RUN = re.compile(r"[\u0900-\u097F\uA8E0-\uA8FF][\u0900-\u097F\uA8E0-\uA8FF\u200b-\u200d\ufeff]*")

# Applied in this order, on NFC text, before transliterating.
_FOLD = (
    ("\u093e\u0945", "\u094b"),  # ा + ॅ typed for ॉ  -> ो
    ("\u0949", "\u094b"),  # ॉ candra o sign  -> ो
    ("\u0945", "\u0947"),  # ॅ candra e sign  -> े
    ("\u0946", "\u0947"),  # ॆ short e sign   -> े
    ("\u094a", "\u094b"),  # ॊ short o sign   -> ो
    ("\u0911", "\u0913"),  # ऑ candra o       -> ओ
    ("\u090d", "\u090f"),  # ऍ candra e       -> ए
    ("\u090e", "\u090f"),  # ऎ short e        -> ए
    ("\u0912", "\u0913"),  # ऒ short o        -> ओ
    ("\u0929", "\u0928"),  # ऩ na + nukta     -> न
)
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\ufeff"))


def has_devanagari(text: str) -> bool:
    """Does ``text`` contain at least one Devanagari character?"""
    return DEVANAGARI_RUN.search(text) is not None


@lru_cache(maxsize=200_000)
def _run_to_itrans(run: str) -> str:
    # Imported here so that importing this module stays cheap.
    from indic_transliteration import sanscript

    run = unicodedata.normalize("NFC", run).translate(_ZERO_WIDTH)
    for src, dst in _FOLD:
        run = run.replace(src, dst)
    out = sanscript.transliterate(run, sanscript.DEVANAGARI, sanscript.ITRANS)
    # A nukta the library could not attach (typed after a vowel sign, a typo) means nothing.
    return out.replace("\u093c", "")


def to_itrans(text: str, *, lowercase: bool = False) -> str:
    """Transliterate every Devanagari run of ``text`` to ITRANS; leave everything else as it is.

    ``lowercase=True`` lower-cases the *transliterated* runs only (CalBERT's released
    pairs); Latin text keeps its case either way.
    """
    if not isinstance(text, str):
        raise TypeError(f"to_itrans expects a str, got {type(text).__name__}: {text!r}")
    if not has_devanagari(text):
        return text

    def sub(m: re.Match) -> str:
        out = _run_to_itrans(m.group(0))
        return out.lower() if lowercase else out

    return DEVANAGARI_RUN.sub(sub, text)
