"""Semantic textual similarity: Spearman correlation of cosine similarities, and the seed t-test.

The metric of ConCSE Tables 3–7 (SentEval's "all" setting): for every pair of a
test file, the cosine between the embeddings of its two *code-switched*
sentences; the Spearman rank correlation of those cosines with the gold scores,
over all pairs of the file at once, times 100.

It is sentence-transformers' ``EmbeddingSimilarityEvaluator`` (cosine, Spearman);
this module only picks the columns and scales to percent.

Significance (Table 3's p-value rows): Student's two-sample t-test (equal
variances, two-sided) between SimCSE's and ConCSE's per-seed scores of a task.
The paper's p-values are reproduced from its own means and ± only when the ±
is read as the *population* standard deviation (``ddof=0``) and the test as
Student's (``equal_var=True``): e.g. STS-B mBERT, 77.68 ± 0.17 vs 79.95 ± 0.24
over 5 seeds gives p = 3.1e-7 (printed 3.1 × 10⁻⁷), STS13 gives 0.50 (printed
0.508); with ``ddof=1`` they would be 1.3e-7 and 0.45.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

__all__ = ["STS_COLUMNS", "sts_evaluator", "spearman_x100", "ttest_pvalue"]

# Which sentence pair of a Koglish-STS file is scored: the code-switched one (§5.2).
STS_COLUMNS = {"cs": ("cross1", "cross2"), "en": ("sentence1", "sentence2")}


def sts_evaluator(df: pd.DataFrame, *, name: str, pair: str = "cs", batch_size: int = 128, where: str = ""):
    """An ``EmbeddingSimilarityEvaluator`` over one STS table (columns ``cross1, cross2, label``).

    ``pair`` chooses the code-switched (``"cs"``, the paper's setting) or the
    English (``"en"``) sentences.  Rows with a missing sentence or score are an
    error naming ``where`` and the row, never silently fed to the tokenizer.
    """
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    if pair not in STS_COLUMNS:
        raise ValueError(f"sts_evaluator: pair must be one of {sorted(STS_COLUMNS)}, got {pair!r}")
    a, b = STS_COLUMNS[pair]
    for col in (a, b, "label"):
        if col not in df.columns:
            raise ValueError(f"{where or name}: no column '{col}' (columns: {list(df.columns)})")
        bad = df.index[df[col].isna()]
        if len(bad):
            raise ValueError(f"{where or name}: row {bad[0]} has no value in field '{col}'")
    if len(df) < 2:
        raise ValueError(f"{where or name}: a Spearman correlation needs at least 2 pairs, got {len(df)}")
    return EmbeddingSimilarityEvaluator(
        sentences1=df[a].astype(str).tolist(),
        sentences2=df[b].astype(str).tolist(),
        scores=df["label"].astype(float).tolist(),
        batch_size=batch_size,
        main_similarity="cosine",
        similarity_fn_names=["cosine"],
        name=name,
        write_csv=False,
    )


def spearman_x100(model, evaluator) -> float:
    """Run ``evaluator`` on ``model`` and return its cosine Spearman × 100."""
    metrics = evaluator(model)
    return 100.0 * float(metrics[f"{evaluator.name}_spearman_cosine"])


def ttest_pvalue(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Two-sided Student's t-test (equal variances) between two sets of per-seed scores.

    ``None`` when either side has fewer than two seeds (the test is undefined).
    When both sides are constant (zero variance, where scipy returns NaN) the
    limit is used: 1.0 if they are equal, 0.0 if not.
    """
    from scipy.stats import ttest_ind

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or len(b) < 2:
        return None
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return 1.0 if a[0] == b[0] else 0.0
    return float(ttest_ind(a, b, equal_var=True).pvalue)
