"""The released Koglish file layout, written: a seeded split of a built table (:func:`split_frame`) and its
``parsed_*``/``cross_*`` CSV files (:func:`write_glue`, :func:`write_nli`, :func:`write_sts`), as the
authors' repository has them (ConCSE §3.2 step 3)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .construct import BuildResult

__all__ = ["split_frame", "csv_text", "write_files", "write_glue", "write_nli", "write_sts"]


def split_frame(n: int, ratios: Sequence[float], seed: int) -> list[np.ndarray]:
    """Seeded random split of ``range(n)`` into parts of the given ratios (GLUE 0.64/0.16/0.20, STS 0.5/0.5).

    Part sizes are ``round(ratio * n)`` for all but the last part, which takes
    the rest, so the sizes always add up to ``n``.
    """
    if abs(sum(ratios) - 1.0) > 1e-9:
        raise ValueError(f"split ratios must sum to 1, got {list(ratios)}")
    perm = np.random.default_rng(seed).permutation(n)
    sizes = [int(round(r * n)) for r in ratios[:-1]]
    bounds = np.cumsum([0, *sizes])
    parts = [perm[bounds[k] : bounds[k + 1]] for k in range(len(sizes))] + [perm[bounds[-1] :]]
    return parts



def csv_text(df: pd.DataFrame) -> str:
    """A table as the released files are: UTF-8 CSV with pandas' unnamed index column, ``\\n`` line ends."""
    buf = io.StringIO()
    df.reset_index(drop=True).to_csv(buf, index=True, lineterminator="\n")
    return buf.getvalue()


def write_files(root: str | Path, en_rel: str, cs_rel: str, result: BuildResult, rows: Sequence[int] | None = None) -> None:
    """Write the English and code-switched tables of ``result`` (rows ``rows``, default all), each atomically."""
    from ..core.atomic import atomic_write_text

    rows = range(result.n_kept) if rows is None else sorted(int(r) for r in rows)
    atomic_write_text(Path(root) / en_rel, csv_text(result.english.iloc[list(rows)]))
    atomic_write_text(Path(root) / cs_rel, csv_text(result.cross.iloc[list(rows)]))


def write_glue(root: str | Path, task: str, result: BuildResult, *, seed: int, ratios: Sequence[float] = (0.64, 0.16, 0.20)) -> dict[str, int]:
    """``Koglish_GLUE/<task>/{parsed,cross}_{train,valid,test}.csv``, split with ``ratios`` (ConCSE §3.2 step 3)."""
    sizes = {}
    for split, rows in zip(("train", "valid", "test"), split_frame(result.n_kept, ratios, seed)):
        write_files(root, f"Koglish_GLUE/{task}/parsed_{split}.csv", f"Koglish_GLUE/{task}/cross_{split}.csv", result, rows)
        sizes[split] = len(rows)
    return sizes


def write_nli(root: str | Path, result: BuildResult) -> None:
    """``Koglish_NLI/{parsed,cross}_train.csv`` (NLI is not split)."""
    write_files(root, "Koglish_NLI/parsed_train.csv", "Koglish_NLI/cross_train.csv", result)


def write_sts(root: str | Path, task: str, result: BuildResult, *, seed: int, ratios: Sequence[float] | None = (0.5, 0.5)) -> dict[str, int]:
    """An STS set in the repository layout, split 0.5/0.5 into valid/test (``ratios=None``: all rows in test).

    ``stsb`` -> ``Koglish_STS/stsb_for_Koglish/{en,cross}_<split>.csv``; ``sick`` ->
    ``Koglish_STS/sick/{parsed,cross}_<split>.csv``; ``sts12``..``sts16`` ->
    ``Koglish_STS/sts_12_16/<task>/{parsed,cross}_<split>.csv``.
    """
    folder = {"stsb": "stsb_for_Koglish", "sick": "sick"}.get(task, f"sts_12_16/{task}")
    english = "en" if task == "stsb" else "parsed"
    parts = [range(result.n_kept)] if ratios is None else split_frame(result.n_kept, ratios, seed)
    splits = ("test",) if ratios is None else ("valid", "test")
    sizes = {}
    for split, rows in zip(splits, parts):
        write_files(root, f"Koglish_STS/{folder}/{english}_{split}.csv", f"Koglish_STS/{folder}/cross_{split}.csv", result, rows)
        sizes[split] = len(rows)
    return sizes

