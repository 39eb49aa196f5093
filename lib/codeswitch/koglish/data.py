"""Loading the Koglish datasets (ConCSE §3), released or built, with validation.

A *source* is where the data lives:

* a **local folder** in the layout of the authors' repository (the reference;
  also what :mod:`codeswitch.koglish.synthetic` and :mod:`codeswitch.koglish.construct`
  write)::

      Koglish_GLUE/<task>/{parsed,cross}_{train,valid,test}.csv      task in GLUE_TASKS
      Koglish_NLI/{parsed,cross}_train.csv
      Koglish_STS/stsb_for_Koglish/{en,cross}_{valid,test}.csv
      Koglish_STS/sts_12_16/sts1N/{parsed,cross}_test.csv            N = 2..6
      Koglish_STS/sick/{parsed,cross}_test.csv

* a **hub namespace** (``"Jangyeong"``): the datasets ``<ns>/Koglish_GLUE``,
  ``<ns>/Koglish_NLI``, ``<ns>/Koglish_STS`` and ``<ns>/Koglish_SICK`` are fetched
  with ``huggingface_hub.snapshot_download(repo_type="dataset")`` and read as CSV.
  *Assumption* (the hub layout cannot be seen from here): the files are named
  as in the authors' own download script — ``<TASK>/{en,cs}_<split>.csv`` with
  ``TASK`` in ``COLA SST2 MRPC STS_B QNLI RTE`` for GLUE, ``{en,cs}_train.csv``
  for NLI, ``STS_B``/``STS_12``..``STS_16`` for STS, ``{en,cs}_<split>.csv`` for
  SICK.  Both namings are tried in both places, so a local folder downloaded
  from the hub (``hf download --repo-type dataset``) works too.
* ``"synthetic"``: the mini Koglish of the smoke profile, built once (see
  :func:`resolve_source`).

Every loader returns the code-switched table (English and switched text side by
side: ``sentence, cross, source_np0, target_np0, label`` for single sentences,
``sentence1, cross1, ..., sentence2, cross2, ..., label`` for pairs) after checking

* every expected column is there, no sentence is empty or NaN (the released
  code fed the string ``"nan"`` to the tokenizer; here it is an error), every
  label is in range (``int`` 0/1 for classification, ``float`` 0-5 for similarity);
* the English file (``parsed_*``/``en_*``) matches it row for row;
* every ``cross`` is its English sentence with ``source_np0`` replaced by
  ``target_np0`` at its first occurrence (the rule the released data keeps: 0
  violations in its 6,000 held-out rows).  ``invalid_rows="error"`` (the default;
  the profile's ``koglish_invalid_rows``) stops at the first violation;
  ``"drop"`` counts the violating rows, warns, and leaves them out; ``"keep"``
  loads them as they are (notebook 01's invariant report, which counts them).

Errors name the file, the row (0-based, and the CSV line) and the column.
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..core.hub import MissingResourceError
from ..core.runs import report_warning
from .construct import FIELDS, cross_columns, english_columns, switch_problem

__all__ = [
    "GLUE_TASKS",
    "STS_TASKS",
    "GLUE_SPLITS",
    "GLUE_KIND",
    "KoglishFormatError",
    "resolve_source",
    "load_glue",
    "load_nli",
    "load_sts",
    "read_validated",
    "glue_files",
    "nli_files",
    "sts_files",
    "is_local",
]

GLUE_TASKS = ("cola", "sst2", "mrpc", "stsb", "qnli", "rte")
STS_TASKS = ("stsb", "sts12", "sts13", "sts14", "sts15", "sts16", "sick")
GLUE_SPLITS = ("train", "valid", "test")

#: the released layout of each GLUE task (single sentence or pair)
GLUE_KIND = {"cola": "single", "sst2": "single", "mrpc": "pair", "stsb": "pair", "qnli": "pair", "rte": "pair"}
#: label type and range per task: ("int", allowed values) or ("float", (low, high))
GLUE_LABELS: dict[str, tuple[str, object]] = {
    "cola": ("int", (0, 1)),  # 1 = acceptable
    "sst2": ("int", (0, 1)),  # 1 = positive
    "mrpc": ("int", (0, 1)),  # 1 = paraphrase
    "stsb": ("float", (0.0, 5.0)),
    "qnli": ("int", (0, 1)),  # GLUE convention: 0 = entailment
    "rte": ("int", (0, 1)),  # GLUE convention: 0 = entailment
}
STS_LABEL = ("float", (0.0, 5.0))  # SICK-R is 1-5, inside the same bound

# hub names (the authors' download script) for each task
_HUB_GLUE = {"cola": "COLA", "sst2": "SST2", "mrpc": "MRPC", "stsb": "STS_B", "qnli": "QNLI", "rte": "RTE"}
_HUB_STS = {"stsb": "STS_B", "sts12": "STS_12", "sts13": "STS_13", "sts14": "STS_14", "sts15": "STS_15", "sts16": "STS_16"}
_REPO = {"glue": "Koglish_GLUE", "nli": "Koglish_NLI", "sts": "Koglish_STS", "sick": "Koglish_SICK"}


class KoglishFormatError(ValueError):
    """A Koglish file is missing, malformed, or disagrees with its English twin."""


# --------------------------------------------------------------------------- sources
def is_local(source: str) -> bool:
    return Path(os.path.expanduser(str(source))).is_dir()


def input_refs(source: str, datasets: Sequence[str] = tuple(_REPO)) -> dict[str, str]:
    """What a run reading ``datasets`` (of ``"glue" | "nli" | "sts" | "sick"``) of ``source`` names in its ``inputs()``.

    A local folder: the dataset folders of it the run reads (``Koglish_STS/``, ...), so
    the run cache hashes their content and a label changed in Koglish-GLUE does not
    re-run ConCSE.  A hub namespace: one dataset repository per dataset read, each keyed
    by the commit it resolves to (:mod:`codeswitch.core.identity`).  ``"synthetic"``
    (built from the generator's settings, which the specs carry) or a path that does
    not exist: the source itself.
    """
    source = str(source)
    if is_local(source):
        folders = dict.fromkeys(r for d in datasets for r in _roots(source, d) if r.is_dir())
        return {f"koglish/{r.name}": str(r) for r in folders} or {"koglish": source}
    if source == "synthetic" or source.startswith(("/", ".", "~")) or "/" in source:
        return {"koglish": source}
    return {f"koglish_{d}": f"{source}/{_REPO[d]}" for d in datasets}


def resolve_source(profile, koglish_source: str | None = None) -> str:
    """Turn a ``koglish_source`` setting into something the loaders read.

    ``None`` means the profile's ``koglish_source``.  ``"synthetic"`` builds the
    mini Koglish of the smoke profile once (deterministic; cached under
    ``profile.runs_dir / "koglish_synthetic" / <hash of its settings>``; written to a
    temporary folder and renamed into place) and returns that folder.  An
    existing folder is returned as is.  Anything else that looks like a path
    but does not exist is an error; the rest is a hub namespace (``"Jangyeong"``).
    """
    src = koglish_source if koglish_source not in (None, "") else profile.koglish_source
    src = str(src)
    if src == "synthetic":
        from .synthetic import ensure_mini_koglish

        return str(ensure_mini_koglish(profile))
    path = Path(os.path.expanduser(src))
    if path.is_dir():
        return str(path.resolve())
    if src.startswith(("/", ".", "~")) or "/" in src or os.sep in src:
        hint = ""
        if src.count("/") == 1 and not src.startswith(("/", ".", "~")):
            hint = (
                "; for the hub give the *namespace* (e.g. 'Jangyeong'), not a dataset id: "
                "the loaders add /Koglish_GLUE, /Koglish_NLI, /Koglish_STS, /Koglish_SICK"
            )
        raise MissingResourceError(
            f"koglish_source '{src}': no such folder (expected the released layout: Koglish_GLUE/, Koglish_NLI/, Koglish_STS/){hint}"
        )
    return src


@lru_cache(maxsize=None)
def _hub_snapshot(namespace: str, repo: str) -> Path:
    """Download (or find in the HF cache) one Koglish dataset repository; its local folder."""
    from ..core.hub import resolve

    ref = f"{namespace}/{repo}"
    # fails fast and clearly when offline; the loaders want the *parent* of Koglish_GLUE/, Koglish_NLI/, ...
    resolved = resolve(ref, kind="dataset", what="koglish_source", local_dir=f"/some/folder/Koglish/{repo}", set_to="/some/folder/Koglish")
    if Path(resolved).is_dir():
        return Path(resolved)
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(ref, repo_type="dataset", allow_patterns=["*.csv", "**/*.csv"]))


def _roots(source: str, dataset: str) -> list[Path]:
    """Folders that may hold ``dataset`` ("glue" | "nli" | "sts" | "sick") for this source."""
    if is_local(source):
        base = Path(os.path.expanduser(source))
        roots = [base / _REPO[dataset]]
        if dataset == "sick":
            roots.insert(0, base / "Koglish_STS")
        return roots
    return [_hub_snapshot(source, _REPO[dataset])]


def _pick(source: str, dataset: str, candidates: Sequence[tuple[str, str]], what: str) -> tuple[Path, Path]:
    """The first (english, cross) pair of relative paths that exists under one of the roots."""
    roots = _roots(source, dataset)
    for root in roots:
        for en_rel, cs_rel in candidates:
            en, cs = root / en_rel, root / cs_rel
            if cs.is_file():
                if not en.is_file():
                    raise KoglishFormatError(f"{cs} exists but its English twin {en} does not")
                return en, cs
    tried = ", ".join(str(r / c) for r in roots for _, c in candidates)
    raise KoglishFormatError(f"Koglish {what}: no file found in source '{source}' (tried {tried})")


def glue_files(source: str, task: str, split: str) -> tuple[Path, Path]:
    """(english, code-switched) file of one Koglish-GLUE task and split."""
    _check(task, GLUE_TASKS, "GLUE task")
    _check(split, GLUE_SPLITS, "split")
    return _pick(
        source,
        "glue",
        [(f"{task}/parsed_{split}.csv", f"{task}/cross_{split}.csv"), (f"{_HUB_GLUE[task]}/en_{split}.csv", f"{_HUB_GLUE[task]}/cs_{split}.csv")],
        f"GLUE {task}/{split}",
    )


def nli_files(source: str) -> tuple[Path, Path]:
    return _pick(source, "nli", [("parsed_train.csv", "cross_train.csv"), ("en_train.csv", "cs_train.csv")], "NLI")


def sts_files(source: str, task: str, split: str = "test") -> tuple[Path, Path]:
    _check(task, STS_TASKS, "STS task")
    _check(split, ("valid", "test"), "split")
    if task == "stsb":
        cands = [(f"stsb_for_Koglish/en_{split}.csv", f"stsb_for_Koglish/cross_{split}.csv"), (f"STS_B/en_{split}.csv", f"STS_B/cs_{split}.csv")]
        return _pick(source, "sts", cands, f"STS {task}/{split}")
    if task == "sick":
        cands = [
            (f"sick/parsed_{split}.csv", f"sick/cross_{split}.csv"),  # the repository layout
            (f"SICK/en_{split}.csv", f"SICK/cs_{split}.csv"),  # the download script: Koglish_STS/SICK/
            (f"en_{split}.csv", f"cs_{split}.csv"),  # the hub repository Koglish_SICK
        ]
        return _pick(source, "sick", cands, f"STS {task}/{split}")
    cands = [(f"sts_12_16/{task}/parsed_{split}.csv", f"sts_12_16/{task}/cross_{split}.csv"), (f"{_HUB_STS[task]}/en_{split}.csv", f"{_HUB_STS[task]}/cs_{split}.csv")]
    return _pick(source, "sts", cands, f"STS {task}/{split}")


def _check(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; one of {', '.join(allowed)}")


# --------------------------------------------------------------------------- reading + validation
def _read_csv(path: Path) -> pd.DataFrame:
    """Read every cell as text (``"nan"``/``"NA"`` stay strings; an empty cell is ``""``), drop the index column."""
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except UnicodeDecodeError as exc:  # pandas' offset is into a chunk: read the file whole to name the line
        from ..common.textio import TextDecodeError, read_text

        try:
            read_text(path)
        except TextDecodeError as named:
            raise KoglishFormatError(f"{named} (a Koglish CSV)") from None
        raise KoglishFormatError(f"{path}: cannot be read as UTF-8 CSV: {exc}") from exc
    except pd.errors.ParserError as exc:
        raise KoglishFormatError(f"{path}: cannot be read as UTF-8 CSV: {exc}") from exc
    except pd.errors.EmptyDataError:
        raise KoglishFormatError(f"{path}: the file is empty") from None
    first = df.columns[0] if len(df.columns) else None
    if first is not None and (first == "" or str(first).startswith("Unnamed:")):
        df = df.drop(columns=[first])  # the released files carry pandas' unnamed index column
    return df.reset_index(drop=True)


def _where(path: Path, row: int, col: str) -> str:
    return f"{path}: row {row} (CSV line {row + 2}), column '{col}'"


def _fail_rows(path: Path, rows: list[int], col: str, problem: str) -> None:
    more = f" (and {len(rows) - 1} more row(s))" if len(rows) > 1 else ""
    raise KoglishFormatError(f"{_where(path, rows[0], col)}: {problem}{more}")


def read_validated(path: str | Path, columns: Sequence[str], label: tuple[str, object] | None) -> pd.DataFrame:
    """Read one Koglish CSV and check columns, text cells and labels (see module doc)."""
    path = Path(path)
    if not path.is_file():
        raise KoglishFormatError(f"{path}: no such file")
    df = _read_csv(path)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise KoglishFormatError(f"{path}: missing column(s) {missing}; the file has {list(df.columns)}")
    if df.empty:
        raise KoglishFormatError(f"{path}: no rows")
    for col in columns:
        if col == "label":
            continue
        values = df[col].astype(str)
        empty = [i for i, v in enumerate(values) if not v.strip()]
        if empty:
            _fail_rows(path, empty, col, "empty text")
        nan = [i for i, v in enumerate(values) if v.strip().lower() == "nan"]
        if nan:
            _fail_rows(path, nan, col, "the text is 'nan' (a missing value written as text; the released code would feed it to the model)")
    out = df[list(columns)].copy()
    if label is not None and "label" in columns:
        out["label"] = _labels(path, df["label"].tolist(), label)
    return out


def _labels(path: Path, raw: list[str], spec: tuple[str, object]) -> pd.Series:
    kind, bound = spec
    values = []
    for i, v in enumerate(raw):
        try:
            x = float(str(v).strip())
        except ValueError:
            raise KoglishFormatError(f"{_where(path, i, 'label')}: {v!r} is not a number") from None
        if not math.isfinite(x):
            raise KoglishFormatError(f"{_where(path, i, 'label')}: {v!r} is not a finite number")
        if kind == "int":
            if x != int(x) or int(x) not in bound:
                raise KoglishFormatError(f"{_where(path, i, 'label')}: {v!r} is not one of {list(bound)}")
            values.append(int(x))
        else:
            lo, hi = bound
            if not lo <= x <= hi:
                raise KoglishFormatError(f"{_where(path, i, 'label')}: {v!r} is outside [{lo}, {hi}]")
            values.append(x)
    return pd.Series(values, dtype="int64" if kind == "int" else "float64")


def _match(en_path: Path, en: pd.DataFrame, cs_path: Path, cs: pd.DataFrame) -> None:
    if len(en) != len(cs):
        raise KoglishFormatError(f"{cs_path} has {len(cs)} rows but its English twin {en_path} has {len(en)}: they must match row for row")
    for col in en.columns:
        if col not in cs.columns:
            continue
        a, b = en[col].tolist(), cs[col].tolist()
        diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
        if diff is not None:
            raise KoglishFormatError(
                f"{_where(cs_path, diff, col)}: {b[diff]!r} differs from {en_path.name} row {diff}: {a[diff]!r} "
                "(the English and code-switched files must match row for row)"
            )


INVALID_ROWS = ("error", "drop")  # the profile's koglish_invalid_rows; "keep" (load as is) is for notebook 01's count only


class KoglishRowsDropped(UserWarning):
    """Rows that break the switch rule were left out (``koglish_invalid_rows: drop``)."""


def switch_rule_violations(df: pd.DataFrame) -> list[tuple[int, str, str]]:
    """``(row, cross column, problem)`` for every ``cross`` that is not ``sentence.replace(source_np0, target_np0, 1)``
    (:func:`codeswitch.koglish.construct.switch_problem`)."""
    bad = []
    for s_col, c_col, src_col, tgt_col in FIELDS.values():
        if c_col not in df.columns:
            continue
        for i, (s, c, src, tgt) in enumerate(zip(df[s_col], df[c_col], df[src_col], df[tgt_col])):
            problem = switch_problem(s, c, src, tgt)
            if problem is not None:
                bad.append((i, c_col, f"{problem} ({s_col}, {src_col}, {tgt_col})"))
    return bad


def _apply_switch_rule(cs_path: Path, cs: pd.DataFrame, invalid_rows: str) -> pd.DataFrame:
    if invalid_rows == "keep":
        return cs
    if invalid_rows not in INVALID_ROWS:
        raise ValueError(f"invalid_rows must be one of {INVALID_ROWS}, got {invalid_rows!r}")
    bad = switch_rule_violations(cs)
    if not bad:
        return cs
    rows = sorted({r for r, _, _ in bad})
    if invalid_rows == "error":
        row, col, problem = bad[0]
        more = f" ({len(rows) - 1} more row(s) break the rule)" if len(rows) > 1 else ""
        raise KoglishFormatError(
            f"{_where(cs_path, row, col)}: {problem}{more}. "
            "Fix the file, or set koglish_invalid_rows: drop in the profile to count and leave such rows out"
        )
    row, col, problem = bad[0]
    report_warning(
        f"{cs_path}: dropped {len(rows)} of {len(cs)} rows whose cross column breaks the switch rule "
        f"(koglish_invalid_rows: drop); first: row {row}, column '{col}': {problem}",
        KoglishRowsDropped,
        stacklevel=4,
    )
    return cs.drop(index=rows).reset_index(drop=True)


def _load_pair_of_files(en_path: Path, cs_path: Path, kind: str, label: tuple[str, object] | None, invalid_rows: str = "error") -> pd.DataFrame:
    cs = read_validated(cs_path, cross_columns(kind), label)
    en = read_validated(en_path, english_columns(kind), label)
    _match(en_path, en, cs_path, cs)
    return _apply_switch_rule(cs_path, cs, invalid_rows)


# --------------------------------------------------------------------------- public loaders
def load_glue(source: str, task: str, split: str, *, invalid_rows: str = "error") -> pd.DataFrame:
    """One Koglish-GLUE task and split (``train`` | ``valid`` | ``test``), validated.

    Columns: single-sentence tasks (``cola``, ``sst2``) ``sentence, cross,
    source_np0, target_np0, label``; pair tasks (``mrpc``, ``stsb``, ``qnli``,
    ``rte``) ``sentence1, cross1, source1_np0, target1_np0, sentence2, cross2,
    source2_np0, target2_np0, label``.  Labels are ``int`` (0/1; GLUE's
    conventions, e.g. QNLI/RTE 0 = entailment) or ``float`` 0-5 for ``stsb``.
    """
    en, cs = glue_files(source, task, split)
    return _load_pair_of_files(en, cs, GLUE_KIND[task], GLUE_LABELS[task], invalid_rows)


def load_nli(source: str, *, invalid_rows: str = "error") -> pd.DataFrame:
    """Koglish-NLI triplets (premise ``sentence1``, entailment ``sentence2``, contradiction ``hard_neg``) with their switched versions."""
    en, cs = nli_files(source)
    return _load_pair_of_files(en, cs, "nli", None, invalid_rows)


def load_sts(source: str, task: str, split: str = "test", *, invalid_rows: str = "error") -> pd.DataFrame:
    """One Koglish-STS set: ``sentence1, cross1, source1_np0, target1_np0, sentence2, cross2, ..., label`` (float).

    ``stsb`` has ``valid`` and ``test``; the STS12-16 and SICK-R folders of the
    released repository hold ``test`` only.
    """
    en, cs = sts_files(source, task, split)
    return _load_pair_of_files(en, cs, "pair", STS_LABEL, invalid_rows)


def text_fields(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(english column, code-switched column) for every text field present in a loaded table."""
    return [(s, c) for s, c, _, _ in FIELDS.values() if c in df.columns]
