"""Koglish-GLUE's data as the runs read it: every split of a task from the Koglish loader, cut to the sample limits
(:func:`load_data`), and the hash of the exact rows a run sees (:func:`fingerprint`, part of every run key).

:func:`codeswitch.glue.plan.plan` hashes the rows to key the runs; :func:`codeswitch.glue.experiment.run_one` reads
them again and checks the hash before training.
"""

from __future__ import annotations

import hashlib
from typing import Mapping, Sequence

import pandas as pd

from ..core.sampling import sample_indices

__all__ = ["load_data", "fingerprint"]


def load_data(source: str, tasks: Sequence[str], *, max_train_samples: int | None, max_eval_samples: int | None,
              invalid_rows: str, train_sample: str = "head") -> dict[str, dict[str, pd.DataFrame]]:
    """Every split of every task, validated by the Koglish loader, cut to ``max_*_samples`` (``None``: every row).

    ``train_sample``: how ``max_train_samples`` cuts the training split (:mod:`codeswitch.core.sampling`): its first
    rows (``head``, as run_glue.py) or a sample drawn with one fixed seed, in file order (``random``, the quick
    profile).  The evaluation splits are always cut from the top (``max_eval_samples``).

    ``invalid_rows``: the profile's ``koglish_invalid_rows`` (rows whose ``cross`` breaks
    the switch rule: an error, or dropped and counted; the rows' hash is in the key).
    """
    from ..koglish.data import load_glue

    data = {}
    for task in tasks:
        splits = {}
        for split in ("train", "valid", "test"):
            df = load_glue(source, task, split, invalid_rows=invalid_rows)
            if split == "train":
                splits[split] = df.iloc[sample_indices(len(df), max_train_samples or None, train_sample)].reset_index(drop=True) \
                    if max_train_samples else df
            else:
                splits[split] = df.head(max_eval_samples).reset_index(drop=True) if max_eval_samples else df
        data[task] = splits
    return data


def fingerprint(splits: Mapping[str, pd.DataFrame]) -> str:
    """A short hash of the exact rows a run sees, so a changed dataset never reuses a stale result."""
    h = hashlib.sha256()
    for name in sorted(splits):
        h.update(name.encode())
        h.update(pd.util.hash_pandas_object(splits[name], index=False).to_numpy().tobytes())
    return h.hexdigest()[:16]
