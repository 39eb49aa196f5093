"""How a capped training set is cut: the first rows (``head``) or a seeded random sample (``random``).

The profiles cap training sets with keys such as ``glue.max_train_samples``, ``concse.max_train_rows``,
``contrastivemix.train_max_queries``, ``alignment.parallel_train_size`` and ``calbert.pretrain.max_pairs``.  The
paper profile leaves them unset (every row) or sets them where the released code takes the first rows; the quick
profile (``configs/quick.yaml``) samples instead, by the top-level setting ``train_sample: random``, so that a cap
keeps a sample of the whole file rather than its first topic or label block.

The sample is drawn with one fixed seed (:data:`SAMPLE_SEED`), never a run's seed: every method, seed and backbone
of a table trains on the same rows, so a comparison between rows is not a comparison between samples.  The rows
keep their order in the file.
"""

from __future__ import annotations

from typing import Sequence, TypeVar

import numpy as np

__all__ = ["RULES", "SAMPLE_SEED", "sample_indices", "take"]

T = TypeVar("T")

#: ``head``: the first ``n`` rows (the released code's and Hugging Face's ``max_train_samples``);
#: ``random``: ``n`` rows drawn without replacement with :data:`SAMPLE_SEED`, in file order
RULES = ("head", "random")
SAMPLE_SEED = 0


def sample_indices(total: int, n: int | None, rule: str = "head") -> list[int]:
    """The indices of the rows a cap of ``n`` (``None``: no cap) keeps of ``total`` rows, in increasing order."""
    if rule not in RULES:
        raise ValueError(f"train_sample: {rule!r} is not one of {RULES}")
    if n is None or n >= total:
        return list(range(total))
    if n < 0:
        raise ValueError(f"a row cap must be >= 0, not {n}")
    if rule == "head":
        return list(range(n))
    picked = np.random.default_rng(SAMPLE_SEED).choice(total, size=n, replace=False)
    return sorted(int(i) for i in picked)


def take(rows: Sequence[T], n: int | None, rule: str = "head") -> list[T]:
    """The rows a cap of ``n`` keeps (see :func:`sample_indices`); a pandas frame: use ``frame.iloc[sample_indices(...)]``."""
    return [rows[i] for i in sample_indices(len(rows), n, rule)]
