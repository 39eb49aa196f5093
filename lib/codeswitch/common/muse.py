"""The one reader of MUSE bilingual dictionaries (ContrastiveMix code-mixing, alignment lexicons, the Koglish translator).

Format (the MUSE release, `facebookresearch/MUSE`): one ``english<SEP>foreign`` pair a
line, where the separator is

* a **tab** — then the line has exactly two tab-separated fields (a field may
  contain spaces: ``red car<TAB>빨간 차``); or, on a line without a tab,
* **whitespace** — exactly two space-separated fields (``the el``).

Blank lines are skipped.  There is **no comment syntax**: a line starting with
``#`` is an entry (the en-fr release has 74 such words), not a comment.  Anything
else — one field, three fields, an empty field — is a :class:`MuseFormatError`
naming the file and the line; a file that is not UTF-8 is a
:class:`~codeswitch.common.textio.TextDecodeError` naming the file.

Three views of the same pairs, one per use:

* :func:`read_muse` — the pairs in file order (alignment's lexicon supervision);
* :func:`load_muse` — ``{english: [distinct translations, in file order]}`` (code-mixing
  draws one uniformly);
* :func:`first_translations` — ``{english (lower-cased): first translation}`` (MUSE lists
  the most frequent first; the Koglish dictionary translator).
"""

from __future__ import annotations

from pathlib import Path

from .textio import read_text

__all__ = ["MuseFormatError", "read_muse", "load_muse", "first_translations"]


class MuseFormatError(ValueError):
    """A dictionary line that is not ``english<TAB>foreign`` or ``english foreign``."""


def read_muse(path: str | Path, *, limit: int | None = None) -> list[tuple[str, str]]:
    """The ``(english, foreign)`` pairs of a MUSE file, in file order (the first ``limit`` when given)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"MUSE dictionary {path} does not exist")
    out: list[tuple[str, str]] = []
    for lineno, raw in enumerate(read_text(path).split("\n"), 1):
        if limit is not None and len(out) >= limit:
            break
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split("\t")] if "\t" in line else line.split()
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise MuseFormatError(
                f"{path}, line {lineno}: expected 'english<SEP>foreign' (one tab, or exactly two space-separated fields), "
                f"found {len(parts)} field(s): {line.strip()[:80]!r}"
            )
        out.append((parts[0], parts[1]))
    return out


def load_muse(path: str | Path) -> dict[str, list[str]]:
    """``{english word: [distinct translations, in file order]}``; a repeated pair is kept once, so a
    uniformly random translation stays uniform over *distinct* translations.  An empty file is an error."""
    out: dict[str, list[str]] = {}
    for source, target in read_muse(path):
        translations = out.setdefault(source, [])
        if target not in translations:
            translations.append(target)
    if not out:
        raise MuseFormatError(f"{path}: the dictionary holds no entries")
    return out


def first_translations(path: str | Path) -> dict[str, str]:
    """``{english (lower-cased): its first translation}`` (MUSE lists the most frequent first)."""
    table: dict[str, str] = {}
    for en, foreign in read_muse(path):
        table.setdefault(en.lower(), foreign)
    return table
