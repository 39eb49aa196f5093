"""English–Hindi parallel text, word alignments and the MUSE lexicon: the alignment papers' training data.

Formats
-------
* **Parallel sentences**: one pair a line, ``english<TAB>hindi`` (the layout of the
  alignment authors' ``cfilt_en-hi_parallel/valid.tsv``).  Words are whitespace
  tokens, as awesome-align counts them.
* **Word alignments** (Pharaoh format, as awesome-align and fast_align write them):
  one line per sentence pair, space-separated ``i-j`` items, ``i`` the 0-based
  English word index and ``j`` the 0-based Hindi word index; an empty line is a
  pair without alignments.
* **Bilingual lexicon** (MUSE): one ``english<SEP>foreign`` entry a line, the
  separator a tab or a space; a word may have several lines.  For alignment
  training each entry is a one-word "sentence pair" aligned ``0-0``.

Sources (every loader takes one of these strings)
-------------------------------------------------
* ``"synthetic"``: the small parallel set and lexicon shipped in
  ``codeswitch/assets/alignment/`` (smoke profile);
* a local folder: ``<folder>/<split>.tsv`` and, when present,
  ``<folder>/<split>_alignments``.  A folder laid out like the authors' data
  (``<folder>/Devanagari/…`` and ``<folder>/Romanized/…``, each holding the files or
  the released ``cfilt_en-hi_parallel/`` / ``muse_en-hi/`` folders) is read per
  script, their own romanisation included;
* a Hugging Face dataset id, ``cfilt/iitb-english-hindi`` (the IIT Bombay corpus;
  column ``translation`` = ``{"en", "hi"}``), via :func:`codeswitch.core.hub.resolve`;
* for the lexicon also an ``http(s)://`` URL (MUSE's ``en-hi.txt``), downloaded once.

Romanised Hindi ("Roman" rows of Table 3.2), ``romanisation``:

* ``"authors"`` (default): the authors' own romanised text wherever the source
  provides it — their ``Romanized/`` files (informal spelling such as "unke nirdesh
  par", word for word parallel to their Devanagari files).  The hub corpus, a MUSE
  URL or file and the synthetic sets have no romanised side, so there the
  Devanagari side is transliterated to ITRANS (:func:`codeswitch.common.romanize.to_itrans`),
  which is *not* what the authors did: ITRANS spells "उनके निर्देश पर" as
  "unake nirdesha para";
* ``"itrans"``: always ITRANS from the Devanagari side, even where the authors'
  romanised files exist.

ITRANS keeps whitespace, so word indices and alignments carry over unchanged.

Bad input raises :class:`ParallelFormatError` naming the file, the line and the field.
"""

from __future__ import annotations

import io
import os
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Sequence

from ..common.textio import read_text
from ..common.muse import read_muse
from ..core.hub import MissingResourceError, is_dataset_snapshot, offline, resolve
from ..core.atomic import atomic_write_bytes, atomic_write_text

__all__ = [
    "ASSETS",
    "SCRIPTS",
    "ROMANISATIONS",
    "ParallelFormatError",
    "ParallelData",
    "read_parallel",
    "read_pharaoh",
    "parse_pharaoh_line",
    "format_pharaoh",
    "write_pharaoh",
    "load_parallel",
    "hold_out",
    "load_lexicon",
    "lexicon_as_parallel",
    "romanise",
    "roman_text_source",
    "words",
]

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "alignment"
SCRIPTS = ("devanagari", "roman")
ROMANISATIONS = ("authors", "itrans")
Script = Literal["devanagari", "roman"]
_AUTHOR_DIRS = {"devanagari": "Devanagari", "roman": "Romanized"}
_AUTHOR_SUBDIRS = {"parallel": "cfilt_en-hi_parallel", "lexicon": "muse_en-hi"}  # inside <Script>/ in their repository
_ALIGN_ITEM = re.compile(r"^(\d+)-(\d+)$")
_SPLIT_ALIASES = {"valid": "validation", "dev": "validation"}

Alignment = list[tuple[int, int]]


class ParallelFormatError(ValueError):
    """A parallel-text, alignment or lexicon file that does not follow its format."""


def words(text: str) -> list[str]:
    """The words of a sentence, as awesome-align counts them: whitespace tokens."""
    return text.split()


@dataclass(frozen=True)
class ParallelData:
    """Parallel pairs and (optionally) their word alignments, with where they came from."""

    pairs: tuple[tuple[str, str], ...]
    alignments: tuple[tuple[tuple[int, int], ...], ...] | None  # None: no alignment file
    source: str
    split: str
    script: str

    def __len__(self) -> int:
        return len(self.pairs)

    def subset(self, indices: Sequence[int], split: str | None = None) -> "ParallelData":
        """The pairs (and alignments) at ``indices``, in that order; ``split`` renames the split."""
        return ParallelData(tuple(self.pairs[i] for i in indices),
                            None if self.alignments is None else tuple(self.alignments[i] for i in indices),
                            self.source, split or self.split, self.script)

    def with_alignments(self, alignments: Sequence[Sequence[tuple[int, int]]]) -> "ParallelData":
        if len(alignments) != len(self.pairs):
            raise ValueError(f"{len(alignments)} alignment lines for {len(self.pairs)} pairs ({self.source})")
        return ParallelData(self.pairs, tuple(tuple(map(tuple, a)) for a in alignments), self.source, self.split, self.script)


# --------------------------------------------------------------------------- readers
def read_parallel(path: str | Path, *, limit: int | None = None) -> list[tuple[str, str]]:
    """Read ``english<TAB>hindi`` lines; both sides are stripped and must be non-empty."""
    path = Path(path)
    pairs = []
    with io.StringIO(read_text(path), newline="") as fh:  # a bad byte names the file
        for lineno, line in enumerate(fh, 1):
            if limit is not None and len(pairs) >= limit:
                break
            line = line.rstrip("\n").rstrip("\r")
            fields = line.split("\t")
            if len(fields) != 2:
                raise ParallelFormatError(
                    f"{path}, line {lineno}: expected 'english<TAB>hindi' (2 tab-separated fields), found {len(fields)}: {line[:80]!r}"
                )
            en, hi = fields[0].strip(), fields[1].strip()
            for name, text in (("english", en), ("hindi", hi)):
                if not text:
                    raise ParallelFormatError(f"{path}, line {lineno}: the {name} field is empty")
            pairs.append((en, hi))
    return pairs


def parse_pharaoh_line(line: str, *, where: str = "") -> list[tuple[int, int]]:
    """``"0-0 2-1 3-1"`` -> ``[(0, 0), (2, 1), (3, 1)]`` (sorted, duplicates removed)."""
    out = set()
    for item in line.split():
        m = _ALIGN_ITEM.match(item)
        if not m:
            raise ParallelFormatError(f"{where}: alignment item {item!r} is not of the form 'i-j' (0-based word indices)")
        out.add((int(m.group(1)), int(m.group(2))))
    return sorted(out)


def read_pharaoh(
    path: str | Path,
    pairs: Sequence[tuple[str, str]] | None = None,
    *,
    limit: int | None = None,
) -> list[list[tuple[int, int]]]:
    """Read a Pharaoh alignment file; with ``pairs``, check the line count and every index.

    An index must be smaller than the number of words of its side, else the error
    names the file, the line, the item and the sentence.
    """
    path = Path(path)
    out: list[list[tuple[int, int]]] = []
    with io.StringIO(read_text(path), newline="") as fh:  # a bad byte names the file
        for lineno, line in enumerate(fh, 1):
            if limit is not None and len(out) >= limit:
                break
            out.append(parse_pharaoh_line(line, where=f"{path}, line {lineno}"))
    if pairs is not None:
        n = min(len(pairs), limit) if limit is not None else len(pairs)
        if len(out) != n:
            raise ParallelFormatError(f"{path}: {len(out)} alignment lines for {n} sentence pairs (one line per pair expected)")
        for lineno, (al, (en, hi)) in enumerate(zip(out, pairs), 1):
            n_en, n_hi = len(words(en)), len(words(hi))
            for i, j in al:
                if i >= n_en or j >= n_hi:
                    side, idx, size = ("english", i, n_en) if i >= n_en else ("hindi", j, n_hi)
                    raise ParallelFormatError(
                        f"{path}, line {lineno}: item '{i}-{j}': {side} word index {idx} out of range "
                        f"(the sentence has {size} words: {(en if side == 'english' else hi)[:80]!r})"
                    )
    return out


def format_pharaoh(alignment: Sequence[tuple[int, int]]) -> str:
    return " ".join(f"{i}-{j}" for i, j in sorted(set(alignment)))


def write_pharaoh(path: str | Path, alignments: Sequence[Sequence[tuple[int, int]]]) -> Path:
    """Write alignments in Pharaoh format (atomically)."""
    return atomic_write_text(path, "".join(format_pharaoh(a) + "\n" for a in alignments))


# --------------------------------------------------------------------------- romanisation
def romanise(pairs: Sequence[tuple[str, str]], *, where: str = "") -> list[tuple[str, str]]:
    """Transliterate the Hindi side to ITRANS; checks that word counts (hence alignments) survive."""
    from ..common.romanize import to_itrans

    out = []
    for k, (en, hi) in enumerate(pairs):
        roman = to_itrans(hi)
        if len(words(roman)) != len(words(hi)):  # cannot happen with ITRANS; guard the alignments anyway
            raise ParallelFormatError(f"{where} pair {k + 1}: romanising changed the word count: {hi!r} -> {roman!r}")
        out.append((en, roman))
    return out


# --------------------------------------------------------------------------- loaders
def _author_folder(folder: Path, script: str, what: str, romanisation: str) -> tuple[Path, bool] | None:
    """``(folder to read, romanise it?)`` for a folder in the authors' layout; ``None`` if it is not one.

    Roman rows read ``Romanized/`` (their own spelling) unless ``romanisation`` is
    ``"itrans"``, which reads ``Devanagari/`` and transliterates it.
    """
    if romanisation not in ROMANISATIONS:
        raise ValueError(f"romanisation must be one of {ROMANISATIONS}, got {romanisation!r}")
    itrans = script == "roman" and romanisation == "itrans"
    top = folder / _AUTHOR_DIRS["devanagari" if itrans else script]
    if not top.is_dir():
        return None
    sub = top / _AUTHOR_SUBDIRS[what]
    return (sub if sub.is_dir() else top), itrans


def roman_text_source(source: str, what: Literal["parallel", "lexicon"], romanisation: str = "authors") -> str:
    """Where the Roman rows' Hindi comes from for ``source``: ``"authors"`` (their ``Romanized/`` files) or ``"itrans"`` (generated)."""
    folder = Path(os.path.expanduser(source))
    found = _author_folder(folder, "roman", what, romanisation) if folder.is_dir() else None
    return "authors" if found is not None and not found[1] else "itrans"


def _split_file(folder: Path, split: str) -> Path:
    for name in (split, {"validation": "valid"}.get(split, split)):
        p = folder / f"{name}.tsv"
        if p.is_file():
            return p
    raise MissingResourceError(f"parallel data: no {split}.tsv (or valid.tsv) in {folder}")


def load_parallel(
    source: str,
    split: str,
    *,
    script: Script = "devanagari",
    limit: int | None = None,
    what: str = "alignment.parallel_source",
    romanisation: str = "authors",
) -> ParallelData:
    """Parallel pairs (+ alignments where a file exists) of one split, in one script.

    ``split`` is ``train`` or ``validation`` (``valid``/``dev`` accepted); ``limit``
    keeps the first N pairs.  See the module docstring for the sources and ``romanisation``.
    """
    if script not in SCRIPTS:
        raise ValueError(f"script must be one of {SCRIPTS}, got {script!r}")
    split = _SPLIT_ALIASES.get(split, split)
    romanise_here = script == "roman"
    if source == "synthetic":
        folder = ASSETS / "parallel"
    elif is_dataset_snapshot(os.path.expanduser(source)):  # a local copy of the hub dataset (hf download / --prepare)
        return _load_hub(str(Path(os.path.expanduser(source)).resolve()), split, script=script, limit=limit, what=what)
    elif Path(os.path.expanduser(source)).is_dir():
        folder = Path(os.path.expanduser(source)).resolve()
        author = _author_folder(folder, script, "parallel", romanisation)
        if author is not None:  # the authors' layout: their own script folder (Devanagari + ITRANS for "itrans")
            folder, romanise_here = author
    else:
        return _load_hub(source, split, script=script, limit=limit, what=what)
    path = _split_file(folder, split)
    pairs = read_parallel(path, limit=limit)
    align_path = path.with_name(path.stem + "_alignments")
    alignments = read_pharaoh(align_path, pairs, limit=limit) if align_path.is_file() else None
    if romanise_here:
        pairs = romanise(pairs, where=str(path))
    return ParallelData(
        tuple(pairs), None if alignments is None else tuple(tuple(a) for a in alignments), str(path), split, script
    )


def hold_out(data: ParallelData, n: int) -> tuple[ParallelData, ParallelData]:
    """``(train, validation)`` from one split of a source without a train split (``alignment.parallel_holdout``).

    ``n`` pairs drawn with :data:`codeswitch.core.sampling.SAMPLE_SEED` (never a run's seed: every row of a table
    trains on the same pairs) are the validation part, the other pairs the training part; both keep file order."""
    from ..core.sampling import sample_indices

    if not 1 <= n < len(data):
        raise ValueError(f"alignment.parallel_holdout: cannot hold out {n} of the {len(data)} pairs of {data.source} "
                         f"(at least one must be left to train on)")
    held = sample_indices(len(data), n, "random")
    taken = set(held)
    return data.subset([i for i in range(len(data)) if i not in taken], "train"), data.subset(held, "validation")


def _load_hub(ref: str, split: str, *, script: Script, limit: int | None, what: str) -> ParallelData:
    """The IIT Bombay corpus (or any dataset with a ``translation`` = ``{en, hi}`` column) from the hub."""
    from datasets import load_dataset

    resolved = resolve(ref, kind="dataset", what=what)
    sel = split if limit is None else f"{split}[:{limit}]"
    ds = load_dataset(resolved, split=sel)
    if "translation" not in ds.column_names:
        raise ParallelFormatError(f"dataset {ref} ({split}): no 'translation' column (has {ds.column_names})")
    pairs = []
    for k, row in enumerate(ds["translation"]):
        en, hi = (row.get("en") or "").strip(), (row.get("hi") or "").strip()
        if en and hi:  # the IITB corpus has a few empty sides; they carry nothing to align
            pairs.append((en, hi))
    if script == "roman":
        pairs = romanise(pairs, where=f"{ref} ({split})")
    return ParallelData(tuple(pairs), None, f"{ref}:{split}", split, script)


def _fetch(url: str, cache_dir: Path) -> Path:
    """Download ``url`` once into ``cache_dir`` (atomically); clear error when offline."""
    dest = cache_dir / url.rstrip("/").split("/")[-1]
    if dest.is_file():
        return dest
    if offline():
        raise MissingResourceError(
            f"lexicon {url} is needed but offline mode is on (HF_HUB_OFFLINE=1) and it is not cached at {dest}.\n"
            f"  Fix: download it elsewhere and set alignment.lexicon_source to the local file."
        )
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 - a fixed https URL from the profile
            data = resp.read()
    except OSError as exc:
        raise MissingResourceError(
            f"lexicon {url} cannot be downloaded ({exc}).  Download it elsewhere and set alignment.lexicon_source to the file."
        ) from exc
    return atomic_write_bytes(dest, data)


def load_lexicon(
    source: str,
    *,
    script: Script = "devanagari",
    cache_dir: str | Path | None = None,
    romanisation: str = "authors",
) -> list[tuple[str, str]]:
    """A bilingual en–hi lexicon as ``(english, hindi)`` word pairs (see the module docstring for ``roman``).

    ``source``: ``"synthetic"``, a local MUSE file, an ``http(s)://`` URL cached in
    ``cache_dir``, or a folder in the authors' layout (``<Script>/[muse_en-hi/]``
    ``train.tsv`` + ``valid.tsv``, read in that order: their romanised MUSE for
    ``roman``).  Entries are kept in file order; duplicates are dropped.
    """
    folder = Path(os.path.expanduser(source))
    author = _author_folder(folder, script, "lexicon", romanisation) if folder.is_dir() else None
    if author is not None:
        sub, itrans = author
        files = [sub / f"{name}.tsv" for name in ("train", "valid") if (sub / f"{name}.tsv").is_file()]
        if not files:
            raise MissingResourceError(f"lexicon '{source}' (alignment.lexicon_source): no train.tsv in {sub}")
        entries = list(dict.fromkeys(e for f in files for e in read_muse(f)))
        return romanise(entries, where=str(sub)) if itrans else entries
    if source == "synthetic":
        path = ASSETS / "lexicon_en_hi.txt"
    elif source.startswith(("http://", "https://")):
        if cache_dir is None:
            raise ValueError("load_lexicon: a URL source needs a cache_dir")
        path = _fetch(source, Path(cache_dir))
    else:
        path = Path(os.path.expanduser(source))
        if not path.is_file():
            raise MissingResourceError(f"lexicon '{source}' (alignment.lexicon_source): no such file")
    entries = list(dict.fromkeys(read_muse(path)))  # the one MUSE reader (common.muse)
    if script == "roman":  # no romanised side in these sources: ITRANS is generated
        entries = romanise(entries, where=str(path))
    return entries


def lexicon_as_parallel(
    entries: Sequence[tuple[str, str]],
    *,
    n_valid: int,
    seed: int = 0,
    limit: int | None = None,
    source: str = "lexicon",
    script: str = "devanagari",
) -> tuple[ParallelData, ParallelData]:
    """Turn lexicon entries into one-word parallel "sentences" aligned ``0-0``; split train/validation.

    The split is a seeded permutation (the same on every machine); ``limit`` caps the
    training part.  This is how the released code trains on MUSE word pairs.
    """
    import numpy as np

    if n_valid >= len(entries):
        raise ValueError(f"lexicon {source}: {len(entries)} entries, cannot hold out {n_valid} for validation")
    order = np.random.default_rng(seed).permutation(len(entries))
    valid_idx, train_idx = order[:n_valid], order[n_valid:]
    if limit is not None:
        train_idx = train_idx[:limit]

    def part(idx, split: str) -> ParallelData:
        pairs = tuple(entries[int(k)] for k in idx)
        return ParallelData(pairs, tuple(((0, 0),) for _ in pairs), source, split, script)

    return part(train_idx, "train"), part(valid_idx, "validation")
