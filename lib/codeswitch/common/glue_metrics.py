"""GLUE metrics as BERT reports them, for Koglish-GLUE (ConCSE §5.1, Table 2).

======  ==================================  ===============================
task    metric (the Table 2 number)          also recorded
======  ==================================  ===============================
CoLA    accuracy                             Matthews correlation
SST-2   accuracy
MRPC    F1 of the positive class             accuracy
STS-B   Spearman's rank correlation ρ        Pearson's r
QNLI    accuracy
RTE     accuracy
======  ==================================  ===============================

All scores are percentages (×100), as printed in the paper.  The paper reports
CoLA by *accuracy*, not by the Matthews correlation GLUE itself uses; we follow
the paper and record MCC beside it.

The metrics are scikit-learn's and scipy's; this module only decides which one
a task uses and turns model outputs (logits, or one regression score for STS-B)
into the inputs those functions expect.
"""

from __future__ import annotations

import math
from typing import Callable, Mapping

import numpy as np
from scipy import stats
from sklearn import metrics as skm

# The number Table 2 prints for each task (the best epoch is chosen by it too).
TASK_METRIC: Mapping[str, str] = {
    "cola": "accuracy",
    "sst2": "accuracy",
    "mrpc": "f1",
    "stsb": "spearman",
    "qnli": "accuracy",
    "rte": "accuracy",
}
# Extra metrics recorded beside the task metric (not used for selection).
EXTRA_METRICS: Mapping[str, tuple[str, ...]] = {
    "cola": ("mcc",),
    "mrpc": ("accuracy",),
    "stsb": ("pearson",),
}
TASK_LABEL: Mapping[str, str] = {
    "cola": "CoLA",
    "sst2": "SST-2",
    "mrpc": "MRPC",
    "stsb": "STS-B",
    "qnli": "QNLI",
    "rte": "RTE",
}
REGRESSION_TASKS = frozenset({"stsb"})


# --------------------------------------------------------------------------- the metrics (×100)
def accuracy(labels, predictions) -> float:
    """Share of exact matches, ×100."""
    return 100.0 * float(skm.accuracy_score(labels, predictions))


def f1(labels, predictions) -> float:
    """F1 of the positive class (label 1), ×100 — GLUE's MRPC convention."""
    return 100.0 * float(skm.f1_score(labels, predictions, pos_label=1, average="binary", zero_division=0.0))


def mcc(labels, predictions) -> float:
    """Matthews correlation coefficient, ×100 (0 when one side is constant)."""
    return 100.0 * float(skm.matthews_corrcoef(labels, predictions))


def spearman(labels, scores) -> float:
    """Spearman's ρ between gold similarities and predicted scores, ×100.

    A constant prediction ranks nothing: its correlation is undefined (scipy
    returns NaN); we count it as 0 so a degenerate epoch can never be chosen as
    the best one and no NaN reaches a table.
    """
    labels, scores = np.asarray(labels, dtype=float), np.asarray(scores, dtype=float)
    if np.ptp(scores) == 0 or np.ptp(labels) == 0:
        return 0.0
    return _finite_or_zero(stats.spearmanr(labels, scores).statistic)


def pearson(labels, scores) -> float:
    """Pearson's r, ×100 (0 for a constant prediction, as :func:`spearman`)."""
    labels, scores = np.asarray(labels, dtype=float), np.asarray(scores, dtype=float)
    if np.ptp(scores) == 0 or np.ptp(labels) == 0:
        return 0.0
    return _finite_or_zero(stats.pearsonr(labels, scores).statistic)


def _finite_or_zero(r: float) -> float:
    r = float(r)
    return 0.0 if math.isnan(r) else 100.0 * r


METRICS: Mapping[str, Callable] = {"accuracy": accuracy, "f1": f1, "mcc": mcc, "spearman": spearman, "pearson": pearson}


# --------------------------------------------------------------------------- model outputs -> scores
def predictions_from_outputs(task: str, outputs) -> np.ndarray:
    """Class ids (argmax of logits ``(N, C)``) or, for STS-B, the regression scores ``(N,)``."""
    out = np.asarray(outputs)
    if task in REGRESSION_TASKS:
        return out.reshape(-1).astype(float)  # (N, 1) -> (N,)
    if out.ndim != 2:
        raise ValueError(f"{task}: expected logits of shape (N, num_labels), got {out.shape}")
    return out.argmax(axis=-1)  # (N, C) -> (N,)


def task_scores(task: str, labels, predictions) -> dict[str, float]:
    """Every metric recorded for ``task``; the Table 2 number is under ``TASK_METRIC[task]``."""
    if task not in TASK_METRIC:
        raise KeyError(f"unknown GLUE task '{task}' (known: {', '.join(TASK_METRIC)})")
    labels = np.asarray(labels)
    predictions = np.asarray(predictions)
    if labels.shape != predictions.shape:
        raise ValueError(f"{task}: {labels.shape[0]} labels but {predictions.shape[0]} predictions")
    names = (TASK_METRIC[task], *EXTRA_METRICS.get(task, ()))
    return {name: METRICS[name](labels, predictions) for name in names}


def compute_metrics_for(task: str) -> Callable:
    """A ``compute_metrics`` for the Hugging Face ``Trainer``: ``EvalPrediction -> {metric: score}``."""

    def compute_metrics(eval_prediction) -> dict[str, float]:
        outputs = eval_prediction.predictions
        if isinstance(outputs, (tuple, list)):  # encoder-decoder heads may return extra tensors
            outputs = outputs[0]
        return task_scores(task, eval_prediction.label_ids, predictions_from_outputs(task, outputs))

    return compute_metrics
