"""CalBERT's cached records read as frames, nothing computed: :func:`frame` (the fine-tuning scores, long),
:func:`task_table` (one table's measured cells: mean ± std over seeds, and the best run on validation) and the
pre-training summaries notebook 07 shows.  :mod:`codeswitch.calbert.tables` and :mod:`~codeswitch.calbert.figures`
read them."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core import report
from ..core.experiment import Results
from .config import FinetuneRun, PretrainRun, ScratchRun
from .plan import row_label
from .train import SCORED_SPLITS


def pretraining_summary(results: Results) -> pd.DataFrame:
    """Alignment of held-out pairs before and after each Siamese pre-training run (one row per run)."""
    rows = []
    for spec, r in results:
        if not isinstance(spec, PretrainRun):
            continue
        row = {"model": row_label(spec.backbone, spec.objective), "pairs": r["pairs"], "steps": r["steps"], "train loss": r["train_loss"]}
        for key, label in (("examples", "examples (released negatives)"), ("vocab_size", "vocabulary (added tokens)")):
            if key in r:  # the released script's reading, where its options are on
                row[label] = r[key]
        for key, label in (("cos_parallel", "cos(parallel)"), ("cos_other", "cos(other)"), ("retrieval_at1", "retrieval@1")):
            if f"{key}_before" in r:
                row[f"{label} before"] = r[f"{key}_before"]
                row[f"{label} after"] = r[f"{key}_after"]
        rows.append(row)
    return pd.DataFrame(rows)


def scratch_summary(results: Results) -> pd.DataFrame:
    """The from-scratch MLM pre-training runs (Tables 8, 13): texts, vocabulary, steps and final training loss, one row per run."""
    rows = [{"model": spec.backbone, "texts": r["texts"], "vocabulary": r["vocab_size"], "steps": r["steps"],
             "MLM loss": r["train_loss"], "log(vocabulary)": float(np.log(r["vocab_size"]))}
            for spec, r in results if isinstance(spec, ScratchRun)]
    return pd.DataFrame(rows)


def frame(results: Results) -> pd.DataFrame:
    """The fine-tuning records, long: one row per (run, split, metric).  The splits are named (``train.SCORED_SPLITS``),
    so a record's other keys (the example predictions, the packing flag, the learning entry, a later flag) are never
    read as a split."""
    rows = []
    for spec, r in results:
        if not isinstance(spec, FinetuneRun):
            continue
        for split in SCORED_SPLITS:
            metrics = r.get(split)
            if metrics is None:  # no labelled test split
                continue
            for metric, value in metrics.items():
                if metric != "n":
                    rows.append({"task": spec.task, "backbone": spec.backbone, "variant": spec.variant,
                                 "row": row_label(spec.backbone, spec.variant), "seed": spec.seed, "split": split, "metric": metric,
                                 "value": value})
    return pd.DataFrame(rows)


METRIC_LABEL = {"f1": "F1", "precision": "Precision", "recall": "Recall", "accuracy": "Accuracy"}


def task_table(df: pd.DataFrame, task: str, metrics: tuple[str, ...], *, select_by: str, variants: tuple[str, ...]) -> pd.DataFrame:
    """Long measured cells for one table: mean ± std per split, and the best run on validation.

    Columns ``<Metric> (val)``, ``<Metric> (test)`` (mean ± std over seeds), and
    ``<Metric> (val, best run)``: every metric of the seed whose validation
    ``select_by`` is highest (the paper's protocol; ties go to the earlier seed).
    """
    d = df[(df["task"] == task) & df["variant"].isin(variants) & df["metric"].isin(metrics)]
    if d.empty:
        raise ValueError(f"no finished {task} runs for variants {list(variants)}: run calbert.run(profile) first")
    split_name = {"validation": "val", "test": "test"}
    d = d.assign(column=[f"{METRIC_LABEL[m]} ({split_name[s]})" for m, s in zip(d["metric"], d["split"])])
    cells = report.summarise(d, by=["row", "column"], value="value")

    val = d[d["split"] == "validation"]
    best_rows = []
    for row, g in val.groupby("row", sort=False):
        scores = g[g["metric"] == select_by].sort_values("seed", kind="stable")
        best_seed = scores.loc[scores["value"].idxmax(), "seed"]  # idxmax: first maximum
        for m in metrics:
            v = g[(g["seed"] == best_seed) & (g["metric"] == m)]["value"].iloc[0]
            best_rows.append({"row": row, "column": f"{METRIC_LABEL[m]} (val, best run)", "mean": v, "std": float("nan"), "n": len(scores)})
    return pd.concat([cells, pd.DataFrame(best_rows)], ignore_index=True)
