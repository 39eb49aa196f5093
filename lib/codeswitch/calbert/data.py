"""CalBERT's pre-training pairs: (English translation, romanised code-mixed sentence).

CalBERT (§6.3, Table 2) Siamese-pre-trains on pairs of the *same* sentence in the
base language (English) and in the target language (romanised Hindi–English).
Pairs come from one of:

====================================  =====================================================
source                                read as
====================================  =====================================================
``*.json`` file, or a folder of them  the authors' released layout: a JSON list of records
                                      with ``translation`` (English) and ``transliteration``
                                      / ``cleaned-transliteration`` (romanised); ``source``
                                      (Devanagari) is ignored
``*.tsv`` / ``*.txt`` file            ``english<TAB>hindi`` lines (IIT Bombay layout); the
                                      Hindi side is romanised to ITRANS
a hub id (``cfilt/iitb-english-hindi``)  the IIT Bombay English–Hindi corpus on the hub
                                      (``translation: {en, hi}``); Hindi romanised to ITRANS
``shipped``                           the small set of pairs the project ships for smoke runs
====================================  =====================================================

Text is whitespace-normalised (the released translations end in ``"\\n "``).  A
record whose English or romanised side is empty carries nothing to align and is
skipped (17–18 records of each released file are); the number skipped is
reported.  A record that is not an object, lacks a field or holds a non-string is
an error naming the file, the record (0-based index) and the field.

Also here: what the released script builds from the pairs (its label-0 negatives, :func:`released_negatives`, and
the corpus words it adds to the tokenizer, :func:`corpus_tokens`), and where the sentiment tasks' files live
(:func:`local_source`; their content hash, :func:`fingerprint_files`, enters the run keys).
"""

from __future__ import annotations

import io
import json
import random
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from ..common.textio import read_text
from ..common.romanize import to_itrans
from ..core.hub import MissingResourceError, is_dataset_snapshot
from ..core.profiles import Profile
from ..core.sampling import sample_indices

__all__ = [
    "Pair",
    "PairsFormatError",
    "SHIPPED_PAIRS",
    "read_pairs_json",
    "read_parallel_tsv",
    "pairs_from_parallel",
    "load_iitb_pairs",
    "load_pairs",
    "split_heldout",
    "corpus_tokens",
    "released_negatives",
    "ASSETS",
    "TASKS",
    "TASK_HELP",
    "local_source",
    "fingerprint_files",
    "pairs_files",
]

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "calbert"
SHIPPED_PAIRS = ASSETS / "pairs.json"
PAIR_FIELDS = ("transliteration", "cleaned-transliteration")


class PairsFormatError(ValueError):
    """A pairs file that cannot be read: names the file, the record and the field."""


@dataclass(frozen=True)
class Pair:
    english: str  # the base-language sentence (translation)
    codemixed: str  # the target-language sentence, in the Latin script


def _norm(text: str) -> str:
    return " ".join(text.split())


def read_pairs_json(path: str | Path, *, field: str = "transliteration", lowercase: bool = False) -> list[Pair]:
    """Pairs from one JSON file of ``{translation, transliteration, cleaned-transliteration}`` records.

    ``field`` picks the romanised side (the released code reads ``transliteration``).
    Any Devanagari left in it is romanised to ITRANS (``lowercase`` as in
    :func:`~codeswitch.common.romanize.to_itrans`).
    """
    if field not in PAIR_FIELDS:
        raise ValueError(f"pair field must be one of {PAIR_FIELDS}, got {field!r}")
    path = Path(path)
    try:
        records = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise PairsFormatError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(records, list):
        raise PairsFormatError(f"{path}: expected a JSON list of records, found {type(records).__name__}")
    pairs, skipped = [], 0
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise PairsFormatError(f"{path}, record {i}: expected an object, found {type(rec).__name__}")
        values = []
        for key in ("translation", field):
            if key not in rec:
                raise PairsFormatError(f"{path}, record {i}, field '{key}': missing")
            if not isinstance(rec[key], str):
                raise PairsFormatError(f"{path}, record {i}, field '{key}': expected a string, found {type(rec[key]).__name__}")
            values.append(_norm(rec[key]))
        english, codemixed = values
        if not english or not codemixed:
            skipped += 1
            continue
        pairs.append(Pair(english, to_itrans(codemixed, lowercase=lowercase)))
    if skipped:
        warnings.warn(f"{path}: skipped {skipped} of {len(records)} records with an empty side", stacklevel=2)
    if not pairs:
        raise PairsFormatError(f"{path}: no usable pairs")
    return pairs


def pairs_from_parallel(english: Iterable[str], hindi: Iterable[str], *, lowercase: bool = True) -> list[Pair]:
    """Pairs from parallel English–Hindi sentences, the Hindi side romanised to ITRANS (empty sides skipped)."""
    out = []
    for en, hi in zip(english, hindi, strict=True):
        en, hi = _norm(en), _norm(hi)
        if en and hi:
            out.append(Pair(en, to_itrans(hi, lowercase=lowercase)))
    return out


def read_parallel_tsv(path: str | Path, *, lowercase: bool = True) -> list[Pair]:
    """Pairs from ``english<TAB>hindi`` lines (Hindi in Devanagari or already romanised)."""
    path = Path(path)
    en, hi = [], []
    with io.StringIO(read_text(path), newline="") as fh:  # a bad byte names the file
        for ln, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 2:
                raise PairsFormatError(f"{path}, row {ln}: expected 'english<TAB>hindi', found {len(fields)} tab-separated fields")
            en.append(fields[0])
            hi.append(fields[1])
    pairs = pairs_from_parallel(en, hi, lowercase=lowercase)
    if not pairs:
        raise PairsFormatError(f"{path}: no usable pairs")
    return pairs


def load_iitb_pairs(ref: str, *, split: str = "train", lowercase: bool = True, sample: int | None = None, what: str = "") -> list[Pair]:
    """The IIT Bombay English–Hindi corpus (hub id or local copy), Hindi romanised to ITRANS.

    ``sample`` draws that many rows at random *before* romanising (the corpus has 1.66 M pairs and CalBERT pre-trains
    on far fewer), by the project's one sampling rule (:func:`codeswitch.core.sampling.sample_indices`, ``random``:
    its fixed seed, rows in file order).
    """
    from datasets import load_dataset

    from ..core.hub import resolve

    ds = load_dataset(resolve(ref, kind="dataset", what=what), split=split)
    if "translation" not in ds.column_names:
        raise PairsFormatError(f"dataset {ref!r}: expected a 'translation' column of {{en, hi}}, found {ds.column_names}")
    if sample is not None and sample < len(ds):
        ds = ds.select(sample_indices(len(ds), sample, "random"))
    rows = ds["translation"]
    return pairs_from_parallel((r["en"] for r in rows), (r["hi"] for r in rows), lowercase=lowercase)


def load_pairs(
    source: str,
    *,
    field: str = "transliteration",
    lowercase: bool = True,
    root: Path | None = None,
    sample: int | None = None,
    what: str = "",
) -> list[Pair]:
    """Pairs from any supported ``source`` (see the module docstring); relative paths are taken from ``root``.

    ``sample`` (hub corpora only) draws that many rows before romanising; files are read whole.
    """
    if source == "shipped":
        return read_pairs_json(SHIPPED_PAIRS, field=field, lowercase=lowercase)
    path = Path(source).expanduser()
    if not path.is_absolute() and root is not None and (Path(root) / path).exists():
        path = Path(root) / path
    if path.is_dir() and is_dataset_snapshot(path) and not any(path.glob("*.json")):  # a local copy of the hub corpus
        return load_iitb_pairs(str(path), lowercase=lowercase, sample=sample, what=what)
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise PairsFormatError(f"{path}: a folder of pairs must hold *.json files in the released layout")
        return [p for f in files for p in read_pairs_json(f, field=field, lowercase=lowercase)]
    if path.is_file():
        if path.suffix == ".json":
            return read_pairs_json(path, field=field, lowercase=lowercase)
        return read_parallel_tsv(path, lowercase=lowercase)
    return load_iitb_pairs(source, lowercase=lowercase, sample=sample, what=what)


def split_heldout(pairs: Sequence[Pair], n_heldout: int, *, max_train: int | None = None, fraction: float | None = None,
                  seed: int = 0, train_sample: str = "head") -> tuple[list[Pair], list[Pair]]:
    """A seeded shuffle, then ``(train, heldout)``: the last ``n_heldout`` pairs are held out for diagnostics.

    ``max_train`` caps the training pairs (a random subset of that size: the first of the shuffle; ``train_sample:
    random``, the quick profile's rule, draws them from the shuffle with :mod:`codeswitch.core.sampling`'s fixed seed
    instead, so a profile that says so names another, fixed sample in its keys); ``fraction`` then keeps a random
    ``round(fraction * n)`` of them (CalBERT's "15% sample").
    """
    if n_heldout < 0 or n_heldout >= len(pairs):
        raise ValueError(f"cannot hold out {n_heldout} of {len(pairs)} pairs")
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    train_idx, held_idx = order[: len(order) - n_heldout], order[len(order) - n_heldout :]
    if max_train is not None:
        train_idx = [train_idx[i] for i in sample_indices(len(train_idx), max_train, train_sample)]  # in shuffle order
    if fraction is not None:  # in (0, 1]: checked by the section (calbert.pretrain.sample_fraction)
        train_idx = train_idx[: max(1, round(fraction * len(train_idx)))]  # a prefix of a shuffle: a random sample
    return [pairs[i] for i in train_idx], [pairs[i] for i in held_idx]


# --------------------------------------------------------------------------- the released script's examples (an option)
def corpus_tokens(pairs: Sequence[Pair], min_count: int) -> list[str]:
    """The released script's new tokens: lower-cased words of both sides seen at least ``min_count`` times, in order of
    first appearance.

    Words are NLTK's ``word_tokenize`` on each lower-cased sentence, as released, but with ``preserve_line=True``: the
    released call first splits sentences with the Punkt model, a download this project does not make, so a full stop
    inside a text (not at its end) stays attached to its word here.
    """
    from collections import Counter

    from nltk.tokenize import word_tokenize

    counts = Counter()
    for text in [p.english for p in pairs] + [p.codemixed for p in pairs]:  # translations, then transliterations
        counts.update(word_tokenize(text.lower(), preserve_line=True))
    return [word for word, n in counts.items() if n >= min_count]  # Counter keeps first-appearance order


def released_negatives(pairs: Sequence[Pair], k: int, *, seed: int) -> tuple[list[str], list[str], list[float]]:
    """``(first texts, second texts, labels)`` of the released script's ``sample_negative=True`` (``--sample_size`` ``k``).

    A seeded random half (``int(0.5 n)``) of the pairs is kept; each kept pair ``(t, c)`` gives, in this order:
    ``(t, c, 1)``; ``k`` pairs ``(t, c_j, 0)`` of other transliterations (redrawn until ``c`` is not among them); and
    ``k`` pairs ``(t_j, t_1, 0)`` of other translations ``t_1 … t_k`` (redrawn until ``t`` is not among them) — the
    released code pairs each ``t_j`` with the list ``[t_1 … t_k]`` and reads its first element, so these are
    English–English pairs and the first is a sentence against itself with label 0.  ``2.5 n`` examples at ``k`` = 2.
    """
    translation = [p.english for p in pairs]
    transliteration = [p.codemixed for p in pairs]
    rng = random.Random(seed)

    def draw(pool: list[str], avoid: str, side: str) -> list[str]:
        if sum(x != avoid for x in pool) < k:
            raise ValueError(f"cannot draw {k} negative {side}(s) other than {avoid!r} from {len(pool)} pairs")
        while True:  # the released rejection loop: redraw the whole sample while it holds the pair's own text
            sample = rng.sample(pool, k)
            if avoid not in sample:
                return sample

    rows = []  # (first text, second text, label)
    for t, c in rng.sample(list(zip(translation, transliteration)), int(0.5 * len(pairs))):
        rows.append((t, c, 1.0))
        rows += [(t, other, 0.0) for other in draw(transliteration, c, "transliteration")]
        others = draw(translation, t, "translation")
        rows += [(other, others[0], 0.0) for other in others]  # the released (s, [t_1 … t_k]), read as t_1
    first, second, labels = zip(*rows)
    return list(first), list(second), list(labels)

# --------------------------------------------------------------------------- where the data lives (run keys read it)
TASKS = {"sail": "SAIL 2017", "iitp": "IITP product reviews"}
TASK_HELP = {
    "sail": "SAIL 2017 Hindi–English: the CalBERT authors' splits (train.csv, validation.csv [, test.csv], "
    "'sentence,label' with a header; evaluation/sail2017/data/ of github.com/aditeyabaral/calbert at 701612e), or "
    "GLUECoS's processed layout (train.txt, validation.txt [, test.txt], 'text<TAB>label'; GLUECoS's download script, "
    "github.com/microsoft/GLUECoS, Data/Processed_Data/Sentiment_EN_HI/Romanized): point calbert.sail.source at the folder",
    "iitp": "IndicGLUE's IITP product reviews (hi-train.csv, hi-valid.csv [, hi-test.csv], 'label,text' without "
    "header): download IndicGLUE (indicnlp.ai4bharat.org/indic-glue) and point calbert.iitp.source at its "
    "iitp-product-reviews/hi folder",
}


def local_source(source: str, profile: Profile, task: str) -> Path:
    """The folder of a sentiment task's splits: ``shipped`` (the smoke sets), or a folder (relative: to the project root)."""
    if source == "shipped":
        return ASSETS / task
    path = Path(source).expanduser()
    if not path.is_absolute():
        path = profile.root / path
    if not path.is_dir():
        raise MissingResourceError(f"calbert.{task}.source: {path} is not a folder.\n  {TASK_HELP[task]}.")
    return path


def fingerprint_files(path: Path) -> str:
    """A content hash of a data file or folder (relative names and bytes), for run keys
    (:func:`codeswitch.core.identity.content_id`: digests cached by path, size and mtime)."""
    from ..core.identity import content_id

    return content_id(path)


def pairs_files(source: str, profile: Profile) -> str | None:
    """The content hash of the pre-training pairs when they are local; ``None`` for a hub id."""
    path = SHIPPED_PAIRS if source == "shipped" else Path(source).expanduser()
    if source != "shipped" and not path.is_absolute():
        path = profile.root / path
    return fingerprint_files(path) if path.exists() else None
