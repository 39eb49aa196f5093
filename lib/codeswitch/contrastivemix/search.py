"""``contrastivemix.align_weight: search``: the loss weight w chosen on validation, as the paper does (§4.3).

The paper: "We determined the loss weight parameter w through grid search on the validation set in the range of
[0.001, 1]", scoring models by MRR@100.  It names no grid points; ``align_weight_grid`` does (default: the range's
decades, 0.001, 0.01, 0.1, 1).  Under the search the plan trains every ContrastiveMix model once per weight of the
grid (each its own cached :class:`~.config.TrainRun`, keyed by its weight: the 0.1 model is the fixed-weight run's), and
evaluates each as any model is.  One :class:`~.config.AlignSearchRun` per ContrastiveMix variant then records, for each
weight, the mean of :data:`METRIC` over that weight's evaluations (every seed and language of the variant) and the
weight :func:`select` keeps; the tables and figures read only the kept weight's models (:func:`is_selected`).

The released code fixes w = 0.1 (README.md's command, --cm_loss_weight 0.1), the default.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from ..core.experiment import Results
from ..core.runs import RunCache
from .config import SEARCH, AlignSearchRun, Config, EvalRun, TrainRun

__all__ = ["METRIC", "search_runs", "select", "selection", "is_selected", "note", "tune_score"]

#: the selection score: the split the hybrid weight is tuned on is the validation split (Mr.TyDi dev, MIRACL train;
#: never the reported one), and MRR@100 the paper's metric
METRIC = ("the sparse-dense hybrid's MRR@100 on the tuning split (Mr.TyDi dev, MIRACL train) at its tuned hybrid weight, "
          "averaged over the variant's evaluations (seeds and languages); ties: the smaller w")


def tune_score(record: Mapping) -> float:
    """The hybrid's MRR@100 on the tuning split at its tuned weight: the curve's entry at that weight (a float found
    among the curve's floats: :func:`~.evaluate.evaluate_hybrid`)."""
    curve, weight = record["hybrid"]["curve"], record["hybrid"]["weight"]
    return float(curve["mrr@100"][curve["weight"].index(weight)])


def search_runs(c: Config, evals: Sequence[EvalRun]) -> list[AlignSearchRun]:
    """One :class:`~.config.AlignSearchRun` per ContrastiveMix variant of ``evals`` under ``align_weight: search``
    (none otherwise)."""
    if c.align_weight != SEARCH:
        return []
    by_variant: dict[str, list[EvalRun]] = {}
    for e in evals:
        if e.model.method == "contrastivemix":
            by_variant.setdefault(e.model.variant, []).append(e)
    return [AlignSearchRun(experiment="contrastivemix-search", variant=v, grid=c.align_weights,
                           candidates=tuple(e.key_hash() for e in es), metric=METRIC, evals=tuple(es))
            for v, es in by_variant.items()]


def select(spec: AlignSearchRun, eval_cache: RunCache) -> dict:
    """The record of ``spec``: each weight's mean score over its evaluations (their cached records) and the weight kept."""
    per_weight: dict[float, list[float]] = {w: [] for w in spec.grid}
    for e in spec.evals:
        record = eval_cache.get(e.key())
        if record is None:
            raise RuntimeError(f"contrastivemix: {e.label()} is not in the run cache; the align_weight search reads every "
                               "evaluation of its grid (run contrastivemix.run)")
        per_weight[e.model.align_weight].append(tune_score(record))
    missing = [w for w, s in per_weight.items() if not s]
    if missing:
        raise RuntimeError(f"contrastivemix: align_weight search of {spec.variant}: no evaluation for w = {missing}")
    means = [float(np.mean(per_weight[w])) for w in spec.grid]
    best = spec.grid[int(np.argmax(means))]  # argmax: the first (smallest) of tied weights
    return {"variant": spec.variant, "grid": list(spec.grid), "score": means, "n": [len(per_weight[w]) for w in spec.grid],
            "selected": best, "metric": spec.metric}


def selection(results: Results) -> dict[str, dict]:
    """``{variant: its search record}`` of the :class:`~.config.AlignSearchRun` records in ``results`` (empty: no search)."""
    return {spec.variant: rec for spec, rec in results if isinstance(spec, AlignSearchRun)}


def is_selected(model: TrainRun, chosen: Mapping[str, dict]) -> bool:
    """Whether the tables and figures read ``model``: every model, but under a search only the kept weight's."""
    rec = chosen.get(model.variant)
    return rec is None or model.align_weight == rec["selected"]


def note(chosen: Mapping[str, dict]) -> list[str]:
    """A table note naming the searched grid and each variant's kept weight (none without a search)."""
    if not chosen:
        return []
    picks = "; ".join(f"{v}: w = {r['selected']:g} (" + ", ".join(f"{w:g} → {s:.2f}" for w, s in zip(r["grid"], r["score"]))
                      + ")" for v, r in chosen.items())
    return [f"align_weight: search — w chosen over {next(iter(chosen.values()))['grid']} by {METRIC}: {picks}."]

