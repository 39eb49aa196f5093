"""Every measured number in ``docs/performance.md`` and ``docs/cost.md`` traced to a record under ``docs/bench/``
(issue 40 item 6): ``python -m benchmarks traced`` lists the numbers that are not, ``tests/test_doc_numbers.py`` fails
on them.

The convention, which this module checks:

* **What counts as a measured number**: a number followed by a unit of time, rate, size or ratio (``ms``, ``µs``,
  ``s``, ``min``, ``h``, ``GPU-hours``, ``…/s``, ``KB``/``MB``/``GB``/``GiB``, ``%``, ``×``), in prose, lists and
  tables. Also each end of a range or arrow (``10–13 %``, ``609.5 → 199.9 ms``).
* **Not checked**: code (fenced blocks and inline ```code```: commands and settings), the generated blocks between
  ``<!-- bench:NAME -->`` markers (``python -m benchmarks record --check`` rebuilds them from the records), a number
  after a bound sign (``≤ 30 ms``: a target or a bound, not a measurement), and a number in a sentence that says
  what it is instead: a target, an assumption, an estimate, a datasheet or peak figure (:data:`NOT_MEASURED`).
* **Where its record is named**: the unit it sits in (a paragraph, a list item, or a table with the paragraph just
  above it) names at least one file under ``docs/bench/`` (``docs/bench/gpu/bench.json``; inside ``docs/bench/`` a
  shorter form, ``gpu/memory.json``, ``ab/lt_on.json``, ``profiles/det_*.txt``; a glob names every file it matches);
  a named file that does not exist is an error.
* **Traced**: the number is found in one of those files at the precision written (``18.8 %`` matches ``0.188``,
  ``1.74 GB`` matches ``1744.1`` MB: the common unit scales, :data:`SCALES`), or it is a ratio or percentage of two
  numbers written in the same unit (``609.5 → 199.9 ms (3.05×)``).

A number none of these explains is reported with its file, line and unit; the fix is to cite the record it came
from, to record it, or to remove it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "docs" / "bench"
DOCS = (ROOT / "docs" / "performance.md", ROOT / "docs" / "cost.md")

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
#: units written after a space (``609.5 ms``), and the two written with or without one (``3.05×``, ``18.8 %``); a ``×``
#: followed by a number is a product (``128 × 6``)
_UNIT = (r"\s(?:GPU-hours|TFLOP/s|passages/s|sentences/s|tokens/s|queries/s|steps/s|ms\b|µs\b|us\b|min\b|s\b|h\b"
         r"|KB\b|MB\b|GB\b|GiB\b|MiB\b)|\s?(?:%|×(?!\s*\d)|/s\b)|x\b(?!\s*\d)")
#: a number, optionally a range or arrow chain of numbers, then a unit
MEASURED = re.compile(rf"(?<![\w.,/=+-])((?:(?:{_NUM})\s*(?:–|-|→|to)\s*)*(?:{_NUM}))({_UNIT})")
_BOUND = re.compile(r"(?:[≤≥<>]|at most|at least|up to|under|over|within)\s*$")
#: a sentence with one of these words states a target, an assumption or an estimate, not a measurement
NOT_MEASURED = re.compile(r"target|assum|estimat|datasheet", re.I)
#: the unit scales a record may hold a written number in: as is, a share as a percentage, s <-> ms, MB <-> GB, bytes
SCALES = (1.0, 100.0, 1e3, 1e-3, 1e6, 1e-6, 1e-9, 2.0 ** -30, 2.0 ** -20, 1 / 60, 1 / 3600)
_CITE = re.compile(r"(?:docs/bench/)?(?:(?:gpu|cpu|ab|profiles|notebooks|env|logs)/)*[\w*.-]+\.(?:jsonl|json|md|txt|log|tsv)")


@dataclass(frozen=True)
class Untraced:
    doc: str
    line: int
    text: str  # the number as written, with its unit
    why: str

    def __str__(self) -> str:
        return f"{self.doc}:{self.line}: {self.text!r}: {self.why}"


def _value(text: str) -> tuple[float, int]:
    """A written number and its decimals: ``'1,464.8'`` -> (1464.8, 1)."""
    plain = text.replace(",", "")
    return float(plain), len(plain.split(".")[1]) if "." in plain else 0


def _units(lines: Sequence[str]) -> Iterable[tuple[int, list[tuple[int, str]]]]:
    """The doc's units (first line number, [(line number, text)]): paragraphs, list items, tables (with the paragraph
    above them); code fences and generated blocks left out."""
    unit: list[tuple[int, str]] = []
    previous: list[tuple[int, str]] = []
    fence = generated = False
    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = not fence
            continue
        if stripped.startswith("<!-- bench:"):
            generated = True
        if generated or fence:
            generated = generated and not stripped.startswith("<!-- /bench:")
            continue
        item = re.match(r"(?:[*-]|\d+\.)\s", stripped)
        table = stripped.startswith("|")
        if not stripped or (item and unit) or (table and unit and not unit[-1][1].lstrip().startswith("|")):
            if unit:
                yield unit, previous
                previous = unit
            unit = []
            if not stripped:
                continue
        unit.append((no, line))
    if unit:
        yield unit, previous


def cited(text: str) -> tuple[list[Path], list[str]]:
    """The record files ``text`` names (globs expanded), and the names that match no file."""
    files, missing = [], []
    for name in sorted(set(_CITE.findall(text))):
        rel = name.removeprefix("docs/bench/")
        hits = [p for base in (BENCH, BENCH / "gpu", BENCH / "cpu") for p in sorted(base.glob(rel)) if p.is_file()]
        if hits:
            files += hits
        elif name.startswith("docs/bench/") or "/" in name:
            missing.append(name)
    return files, missing


@lru_cache(maxsize=None)
def record_values(path: Path) -> tuple[float, ...]:
    """Every number written in a record file (JSON, Markdown, logs, profiler tables), thousands separators read."""
    text = path.read_text(encoding="utf-8", errors="replace")
    found = re.findall(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?", text)
    return tuple(sorted({float(x.replace(",", "")) for x in found}))


def _close(v: float, target: float, decimals: int) -> bool:
    return abs(v - target) <= 0.5 * 10.0 ** -decimals + 1e-9 * max(1.0, abs(target))


def in_records(number: str, files: Sequence[Path]) -> bool:
    target, decimals = _value(number)
    return any(_close(v * s, target, decimals) for f in files for v in record_values(f) for s in SCALES)


def derived(number: str, unit: str, written: Sequence[float]) -> bool:
    """A ratio (``×``) or percentage (``%``) of two numbers written in the same unit of the doc."""
    if unit not in ("×", "x", "%"):
        return False
    target, decimals = _value(number)
    scale = 100.0 if unit == "%" else 1.0
    return any(b and _close(scale * a / b, target, decimals) for a, b in itertools.permutations(written, 2))


def _sentence(text: str, at: int) -> str:
    """The sentence of ``text`` around position ``at``: a table row, or prose between sentence ends."""
    line_start = text.rfind("\n", 0, at) + 1
    line_end = (text.find("\n", at) + 1 or len(text) + 1) - 1
    if text[line_start:].lstrip().startswith("|"):
        return text[line_start:line_end]
    ends = [m.end() for m in re.finditer(r"[.!?](?=\s)|\n(?=\s*\|)", text)]
    start = max([e for e in ends if e <= at], default=0)
    stop = min([e for e in ends if e > at], default=len(text))
    return text[start:stop]


def _lead(unit: list[tuple[int, str]], previous: list[tuple[int, str]], lead: list[tuple[int, str]]) -> str:
    """The text whose record names count for ``unit``: its own, the paragraph above a table, the paragraph that
    introduces a list."""
    first = unit[0][1].lstrip()
    extra = previous if first.startswith("|") else lead if re.match(r"(?:[*-]|\d+\.)\s", first) else []
    return "\n".join(line for _, line in unit + extra)


def check_text(text: str, doc: str = "<text>") -> list[Untraced]:
    """The measured numbers of Markdown ``text`` that are not traced to a record it names (the module's convention)."""
    problems: list[Untraced] = []
    lead: list[tuple[int, str]] = []
    for unit, previous in _units(text.splitlines()):
        if not re.match(r"(?:[*-]|\d+\.)\s|\|", unit[0][1].lstrip()):
            lead = unit  # a paragraph: the lead of a list that follows it
        files, missing = cited(_lead(unit, previous, lead))
        problems += [Untraced(doc, unit[0][0], name, "names a record file that does not exist") for name in missing]
        body = "\n".join(re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), line) for _, line in unit)
        written = [_value(n)[0] for n in re.findall(_NUM, body)]
        for m in MEASURED.finditer(body):
            if _BOUND.search(body[:m.start()]) or NOT_MEASURED.search(_sentence(body, m.start())):
                continue
            for number in re.findall(_NUM, m.group(1)):
                if files and (in_records(number, files) or derived(number, m.group(2).strip(), written)):
                    continue
                why = (f"not in {', '.join(str(f.relative_to(ROOT)) for f in files)}" if files
                       else "its paragraph names no record under docs/bench/")
                problems.append(Untraced(doc, unit[0][0] + body.count("\n", 0, m.start()), f"{number} {m.group(2).strip()}", why))
    return problems


def check(docs: Sequence[Path] = DOCS) -> list[Untraced]:
    return [p for d in docs for p in check_text(d.read_text(encoding="utf-8"), str(d.relative_to(ROOT)))]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks traced", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("docs", nargs="*", help="Markdown files (default: docs/performance.md, docs/cost.md)")
    args = p.parse_args(argv)
    problems = check([Path(d).resolve() for d in args.docs] if args.docs else DOCS)
    for problem in problems:
        print(problem)
    print(json.dumps({"untraced": len(problems)}))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
