"""The numbers the four papers *report*, typed once, each with its provenance.

This package is the only place in the project where a paper's number is written
down.  Every entry is a :class:`Reported` record: paper, table, row, column,
value (``None`` when the number was lost in the text conversion of the paper and
is therefore **unknown**: never guessed), optional ± std, and a note.

Generated tables put these beside the numbers the project *measured* (see
:func:`codeswitch.core.report.comparison`); a reported number never stands where a
measured one belongs.

Each submodule (one per paper or per group of tables: ``concse_dataset``,
``concse_glue``, ``concse_sts``, ``contrastivemix``, ``alignment``, ``calbert``)
defines ``ENTRIES``, a list of :class:`Reported`; this module collects them all.

Example::

    from codeswitch.core import reported
    reported.lookup("concse", "table3", "ConCSE-mBERT-base", "STS-B").value   # 79.95
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

PAPERS = ("concse", "contrastivemix", "alignment", "calbert")


@dataclass(frozen=True)
class Reported:
    """One number as printed in a paper."""

    paper: str  # "concse" | "contrastivemix" | "alignment" | "calbert"
    table: str  # e.g. "table3", "table3_1"
    row: str  # the row label as this project names it (see each module's docstring)
    column: str  # the column label as this project names it
    value: float | None  # None: lost in conversion, unknown (never guessed)
    std: float | None = None  # the ± part, where the paper prints one
    note: str = ""  # anything a reader should know (e.g. "best of 10 runs on validation")

    @property
    def source(self) -> str:
        return f"{self.paper} {self.table}, row '{self.row}', column '{self.column}'"


def _modules():
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        yield importlib.import_module(f"{__name__}.{info.name}")


@lru_cache(maxsize=1)
def _collected() -> tuple[Reported, ...]:
    """Every module's ``ENTRIES``, read and checked once per process (they are constants)."""
    entries: list[Reported] = []
    for mod in _modules():
        entries.extend(mod.ENTRIES)
    _check_unique(entries)
    return tuple(entries)


def all_entries() -> list[Reported]:
    return list(_collected())


def _check_unique(entries: Iterable[Reported]) -> None:
    seen = set()
    for e in entries:
        key = (e.paper, e.table, e.row, e.column)
        if key in seen:
            raise ValueError(f"reported number listed twice: {e.source}")
        seen.add(key)


def table(paper: str, table_id: str) -> list[Reported]:
    """All entries of one paper table, in the order they are listed."""
    return [e for e in all_entries() if e.paper == paper and e.table == table_id]


def lookup(paper: str, table_id: str, row: str, column: str) -> Reported | None:
    """The entry for one cell, or ``None`` when the paper has no such cell."""
    for e in all_entries():
        if (e.paper, e.table, e.row, e.column) == (paper, table_id, row, column):
            return e
    return None


def grid(paper: str, table_id: str, rows: Iterable[str], columns: Iterable[str], value: float | None = None, **kw) -> list[Reported]:
    """Entries for a whole block of cells that share one value (typically ``None``: lost in conversion)."""
    return [Reported(paper, table_id, r, c, value, **kw) for r in rows for c in columns]
