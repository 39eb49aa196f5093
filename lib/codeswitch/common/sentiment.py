"""Readers for the code-mixed sentiment benchmarks: SAIL 2017 (GLUECoS layout) and IndicGLUE IITP product reviews.

Both are 3-way sentiment tasks with the labels ``negative``, ``neutral``,
``positive`` (ids 0, 1, 2 in that order, as in CalBERT's Table 9).

==========================  =================================================  ==========================
dataset                     file layout                                        one line
==========================  =================================================  ==========================
SAIL 2017 Hi–En (CalBERT)   ``train.csv``, ``validation.csv`` [, ``test.csv``]  ``sentence,label`` (CSV, header)
SAIL 2017 Hi–En (GLUECoS)   ``train.txt``, ``validation.txt`` [, ``test.txt``]  ``text<TAB>label``
IITP product reviews        ``hi-train.csv``, ``hi-valid.csv`` [, ``hi-test``]  ``label,text`` (CSV, no header)
==========================  =================================================  ==========================

A SAIL folder may hold both layouts (the CalBERT authors' ``evaluation/sail2017/data/``
does): the CSVs are read first.  They are the authors' splits, Table 4's sizes
(9,944 / 1,240 / 1,238 rows; Table 4 prints 9,945 training rows), with the labels as
ids 0, 1, 2 (negative, neutral, positive: the same order as :data:`LABELS`, checked
against the ``.txt`` beside them).

GLUECoS ships its test split without labels (one column): such a file is read
with ``label=None`` on every row, and callers evaluate on it only when labels are
present.  A file mixing labelled and unlabelled rows, an unknown label, an empty
text or a malformed row is an error naming the file, the row (1-based line) and
the field.

Example::

    splits = load_sentiment_splits("data/sail2017", "sail")
    splits["train"][0]            # SentimentExample(text='Han wo bhi baat hai', label=1)
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .textio import read_text

__all__ = [
    "LABELS",
    "SentimentExample",
    "SentimentFormatError",
    "read_text_label_tsv",
    "read_label_text_csv",
    "read_sentence_label_csv",
    "load_sentiment_splits",
    "FORMATS",
]

LABELS: tuple[str, ...] = ("negative", "neutral", "positive")


class SentimentFormatError(ValueError):
    """A sentiment file that cannot be read: names the file, the row and the field."""


@dataclass(frozen=True)
class SentimentExample:
    text: str
    label: int | None  # index into LABELS; None for an unlabelled (test) file


def _label_id(raw: str, labels: Sequence[str], where: str) -> int:
    key = raw.strip().lower()
    for i, name in enumerate(labels):
        if key == name.lower():
            return i
    raise SentimentFormatError(f"{where}, field 'label': {raw!r} is not one of {list(labels)}")


def _check_text(text: str, where: str) -> str:
    text = text.strip()
    if not text:
        raise SentimentFormatError(f"{where}, field 'text': empty")
    return text


def _finish(rows: list[tuple[str, str | None]], path: Path, lines: list[int], labels: Sequence[str]) -> list[SentimentExample]:
    """Check that the file is all-labelled or all-unlabelled, then map labels to ids."""
    if not rows:
        raise SentimentFormatError(f"{path}: no rows")
    unlabelled = [ln for (_, lab), ln in zip(rows, lines) if lab is None]
    if unlabelled and len(unlabelled) != len(rows):
        raise SentimentFormatError(
            f"{path}, row {unlabelled[0]}, field 'label': missing, but other rows of the file have one"
        )
    return [
        SentimentExample(text, None if lab is None else _label_id(lab, labels, f"{path}, row {ln}"))
        for (text, lab), ln in zip(rows, lines)
    ]


def read_text_label_tsv(path: str | Path, labels: Sequence[str] = LABELS) -> list[SentimentExample]:
    """SAIL 2017 / GLUECoS sentiment: one ``text<TAB>label`` per line (``text`` alone in an unlabelled test file)."""
    path = Path(path)
    rows, lines = [], []
    with io.StringIO(read_text(path), newline="") as fh:  # a bad byte names the file
        for ln, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue  # blank lines (e.g. a trailing one) carry nothing
            fields = line.split("\t")
            where = f"{path}, row {ln}"
            if len(fields) == 1:
                rows.append((_check_text(fields[0], where), None))
            elif len(fields) == 2:
                rows.append((_check_text(fields[0], where), fields[1]))
            else:
                raise SentimentFormatError(f"{where}: expected 'text<TAB>label', found {len(fields)} tab-separated fields")
            lines.append(ln)
    return _finish(rows, path, lines, labels)


def _csv_records(path: Path):
    """``(line, fields)`` of each non-blank CSV record of ``path`` (the line it starts on); a bad record names the row."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    while True:
        ln = reader.line_num + 1  # the line the next record starts on
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise SentimentFormatError(f"{path}, row {ln}: not valid CSV: {exc}") from None
        if fields and any(f.strip() for f in fields):
            yield ln, fields


def read_label_text_csv(path: str | Path, labels: Sequence[str] = LABELS) -> list[SentimentExample]:
    """IndicGLUE IITP product reviews: CSV without header, ``label,text`` per row (``text`` alone if unlabelled)."""
    path = Path(path)
    rows, lines = [], []
    for ln, fields in _csv_records(path):
        where = f"{path}, row {ln}"
        if len(fields) == 1:
            rows.append((_check_text(fields[0], where), None))
        elif len(fields) == 2:
            rows.append((_check_text(fields[1], where), fields[0]))
        else:
            raise SentimentFormatError(
                f"{where}: expected 'label,text', found {len(fields)} fields (quote a text that holds commas)"
            )
        lines.append(ln)
    return _finish(rows, path, lines, labels)


def read_sentence_label_csv(path: str | Path, labels: Sequence[str] = LABELS) -> list[SentimentExample]:
    """SAIL 2017 as the CalBERT authors released it: CSV with a header naming ``sentence`` and ``label``; a label is an
    id (``0`` … ``len(labels) - 1``) or a label name."""
    path = Path(path)
    records = _csv_records(path)
    first = next(records, None)
    if first is None:
        raise SentimentFormatError(f"{path}: no rows")
    header = [h.strip().lower() for h in first[1]]
    missing = [k for k in ("sentence", "label") if k not in header]
    if missing:
        raise SentimentFormatError(f"{path}, row {first[0]} (header): no column {missing[0]!r} (found {header})")
    i_text, i_label = header.index("sentence"), header.index("label")
    rows, lines = [], []
    for ln, fields in records:
        where = f"{path}, row {ln}"
        if len(fields) != len(header):
            raise SentimentFormatError(f"{where}: expected {len(header)} fields ({','.join(header)}), found {len(fields)}")
        raw = fields[i_label].strip()
        if raw.isdigit():
            if int(raw) >= len(labels):
                raise SentimentFormatError(f"{where}, field 'label': id {raw} is not below {len(labels)} ({list(labels)})")
            raw = labels[int(raw)]
        rows.append((_check_text(fields[i_text], where), raw or None))
        lines.append(ln)
    return _finish(rows, path, lines, labels)


def read_sail(path: str | Path, labels: Sequence[str] = LABELS) -> list[SentimentExample]:
    """A SAIL 2017 file in either layout: the authors' ``.csv`` or GLUECoS's ``text<TAB>label``."""
    return (read_sentence_label_csv if Path(path).suffix.lower() == ".csv" else read_text_label_tsv)(path, labels)


@dataclass(frozen=True)
class SentimentFormat:
    """Where a benchmark's splits live in its folder and how they are read."""

    files: dict[str, tuple[str, ...]]  # split -> candidate file names, first found wins
    reader: Callable[..., list[SentimentExample]]
    script: str  # "roman" or "devanagari": what the text is written in


FORMATS: dict[str, SentimentFormat] = {
    "sail": SentimentFormat(
        files={  # the authors' CSVs first (their splits: Table 4's sizes), then GLUECoS's processed files
            "train": ("train.csv", "train.txt", "train.tsv"),
            "validation": ("validation.csv", "validation.txt", "valid.txt", "dev.txt", "validation.tsv"),
            "test": ("test.csv", "test.txt", "test.tsv"),
        },
        reader=read_sail,
        script="roman",
    ),
    "iitp": SentimentFormat(
        files={
            "train": ("hi-train.csv", "train.csv"),
            "validation": ("hi-valid.csv", "valid.csv", "validation.csv"),
            "test": ("hi-test.csv", "test.csv"),
        },
        reader=read_label_text_csv,
        script="devanagari",
    ),
}


def load_sentiment_splits(folder: str | Path, fmt: str, *, labels: Sequence[str] = LABELS) -> dict[str, list[SentimentExample]]:
    """Read the ``train`` and ``validation`` splits (required) and ``test`` (if present) of a benchmark folder.

    ``fmt`` is a key of :data:`FORMATS` (``"sail"`` or ``"iitp"``).  Returns
    ``{"train": [...], "validation": [...], "test": [...]}`` (no ``"test"`` key
    when the folder has no test file).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown sentiment format {fmt!r}; known: {sorted(FORMATS)}")
    spec = FORMATS[fmt]
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{fmt} data: {folder} is not a folder")
    out: dict[str, list[SentimentExample]] = {}
    for split, names in spec.files.items():
        found = next((folder / n for n in names if (folder / n).is_file()), None)
        if found is None:
            if split == "test":
                continue
            raise FileNotFoundError(f"{fmt} data: {folder} has no {split} file (looked for {', '.join(names)})")
        out[split] = spec.reader(found, labels)
    for split in ("train", "validation"):
        if any(ex.label is None for ex in out[split]):
            raise SentimentFormatError(f"{fmt} data: the {split} split in {folder} has no labels")
    return out
