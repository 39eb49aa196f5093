"""Koglish-GLUE: EN2EN / EN2CS / CS2CS fine-tuning of multilingual backbones (ConCSE §5.1, Table 2).

The experiment contract (:mod:`codeswitch.core.experiment`), top to bottom:

1. :class:`~codeswitch.glue.config.Config` — the ``glue`` section of a profile
   (defaults = the paper: four backbones with Table 8's batch sizes and learning
   rates, 5 epochs, 10 % warm-up, maximum lengths 115/230, six tasks).
2. :func:`codeswitch.glue.plan.plan` — one :class:`~codeswitch.glue.config.GlueRun` per
   (task, backbone, seed, training language).  EN2EN and EN2CS share the English run,
   evaluated on both test sets (:func:`codeswitch.glue.train.training_runs`).
3. :func:`run_one` (here) — one run: its data, its backbone, :func:`codeswitch.glue.train.fine_tune`,
   and the run's learning check (:func:`learning_entry`).
4. :func:`run` (here) — every run of the plan through the run cache (``runs/<profile>/glue/``):
   a finished run is never redone; a killed grid resumes.  The kept classifiers
   (``keep_models``, issue 28) are here too: :func:`kept_row`, :func:`kept_dir`,
   :func:`kept_plan`, :func:`kept_model`.
5. :func:`codeswitch.glue.tables.tables` (Table 2 beside the paper's numbers, its claim and
   the paper's two hypotheses) and :func:`codeswitch.glue.figures.figures` (the EN2CS → CS2CS
   gain).  They read only the cached results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ..common.glue_metrics import TASK_LABEL
from ..core import kept
from ..core.experiment import Results
from ..core.learning import KEY as LEARNING_KEY, learning
from ..core.models import resolve_model
from ..core.profiles import Profile
from ..core.runs import RunCache
from .config import GlueRun, load
from . import data
from .plan import EXPERIMENT, plan_for, row_label, specs, stages_for
from .train import fine_tune, scenario_of

__all__ = ["run_one", "learning_entry", "LEARNING_MARGINS", "run", "SELECTION_RULE", "LABEL_NAMES", "kept_row", "kept_dir",
           "kept_plan", "kept_model"]


# --------------------------------------------------------------------------- one run
def run_one(spec: GlueRun, profile: Profile) -> dict:
    """One fine-tuning run of the plan, computed (no cache): its data, its backbone, :func:`fine_tune`."""
    from ..koglish.data import resolve_source

    splits = data.load_data(resolve_source(profile, spec.koglish_source), [spec.task], max_train_samples=spec.max_train_samples,
                       max_eval_samples=spec.max_eval_samples, invalid_rows=profile.koglish_invalid_rows,
                       train_sample=spec.train_sample or "head")[spec.task]
    if data.fingerprint(splits) != spec.data:
        raise RuntimeError(f"glue {spec.task}: the data changed since the plan was made (hash {data.fingerprint(splits)}, planned {spec.data}); plan again")
    path = resolve_model(spec.model, profile, what=f"glue.backbones.{spec.backbone}.model")
    keep = _keeper(spec, profile) if kept.wanted(spec.keep_models, spec) else None
    result = fine_tune(
        spec, path, splits["train"], splits["valid"], {lang: splits["test"] for lang in spec.test},
        device=profile.torch_device().type,
        cpu_threads=profile.cpu_threads,  # the profile's one thread setting (the trainer restores the count after)
        desc=f"{spec.task} {spec.backbone} seed {spec.seed} train={spec.train}",
        **({} if keep is None else {"keep": keep}),  # (a run that keeps nothing calls fine_tune as before)
    )
    result["scenarios"] = {scenario_of(spec.train, spec.select, lang): result["test"][lang] for lang in spec.test}
    result[LEARNING_KEY] = learning_entry(spec, splits["train"], splits["test"], result)
    return result


def _keeper(spec: GlueRun, profile: Profile):
    """What :func:`fine_tune` calls with the best epoch's classifier: keep it, with its label names (issue 28)."""

    def keep(model, tokenizer, result):
        if spec.task in LABEL_NAMES:
            model.config.id2label = dict(enumerate(LABEL_NAMES[spec.task]))
            model.config.label2id = {name: i for i, name in enumerate(LABEL_NAMES[spec.task])}
        scores = {f"{result['metric']} x100 (valid, {spec.select})": result["valid"],
                  **{f"{result['metric']} x100 (test, {lang})": v for lang, v in result["test"].items()}}
        kept.keep(kept_dir(profile, spec), spec, kept_row(spec), fmt="sequence-classification", profile=profile,
                  notebook="02", scores=scores,
                  save=lambda d: (model.save_pretrained(d, safe_serialization=True), tokenizer.save_pretrained(d)))

    return keep


#: how far a run must beat its baseline, in the task metric's points (×100): a classifier must beat
#: the majority class by 10 points (accuracy, or MRPC's F1); STS-B's Spearman must exceed a constant
#: prediction's 0 by 20 points
LEARNING_MARGINS = {"classification": 10.0, "regression": 20.0}


def learning_entry(spec: GlueRun, train: pd.DataFrame, test: pd.DataFrame, result: Mapping) -> dict:
    """Did this run learn?  Its test score in its own training language beside a predictor that ignores the text.

    The baseline predicts one value for every test row: the training split's most
    frequent label (classification: ``majority class``), or its mean score (STS-B: a
    constant, whose Spearman is 0, as a random ranking's is in expectation: ``chance``),
    scored by the task's metric on the same test rows (:mod:`codeswitch.core.learning`).
    The other test language (EN2CS) is the paper's finding, not a check of the trainer.
    """
    from ..common.glue_metrics import REGRESSION_TASKS, task_scores

    lang = spec.select  # the language the model was trained and selected in; every run tests it
    labels = test["label"].to_numpy()
    if spec.task in REGRESSION_TASKS:
        constant, name, margin = float(train["label"].mean()), "chance", LEARNING_MARGINS["regression"]
    else:
        constant, name, margin = train["label"].mode().min(), "majority class", LEARNING_MARGINS["classification"]
    baseline = task_scores(spec.task, labels, np.full(len(labels), constant))[result["metric"]]
    return learning(f"{result['metric']} x100, {spec.task} test ({lang})", result["test"][lang], baseline,
                    baseline_name=name, margin=margin)


# --------------------------------------------------------------------------- the grid
def run(profile: Profile) -> Results:
    """Run (or read from the cache) every run of :func:`codeswitch.glue.plan.plan`; the records come back in plan order.

    The backbones that still have runs to do are resolved before any training, so
    a missing model stops the grid within seconds with
    :class:`~codeswitch.core.hub.MissingResourceError`; a fully cached grid needs
    the data (its hash is part of every run's key) but no model.
    """
    c = load(profile)
    (grid,) = stages_for(profile, c)
    cache = RunCache(grid.cache_dir)
    for name, model in dict.fromkeys((s.backbone, s.model) for s in grid if s.key() not in cache):
        resolve_model(model, profile, what=f"glue.backbones.{name}.model")
    results = grid.run(run_one, profile)
    if c.keep_models == "best":  # every candidate was kept while training: keep each cell's selected run
        kept.prune_to_best(grid.cache_dir, [(s, kept_row(s), r["valid"]) for s, r in results])
    return results


# --------------------------------------------------------------------------- kept models (issue 28)
#: Koglish-GLUE's selection rule for keep_models: best.  The paper reports mean ± std over five seeds (no seed is
#: selected); this project keeps, per Table 2 cell (task, backbone, training language), the seed whose best epoch
#: scores highest on the validation split that picked that epoch (ties: the earlier seed), never a test score.
SELECTION_RULE = "the seed whose best epoch scores highest on validation (its training language; ties: the earlier seed)"
#: GLUE's label names, in the order of the label ids (the Hugging Face ``glue`` dataset's); STS-B is a regression
LABEL_NAMES = {"cola": ("unacceptable", "acceptable"), "sst2": ("negative", "positive"),
               "mrpc": ("not_equivalent", "equivalent"), "qnli": ("entailment", "not_entailment"),
               "rte": ("entailment", "not_entailment")}


def kept_row(spec: GlueRun) -> kept.Row:
    """Table 2's row of a run's own language (EN2EN or CS2CS; an English model is also EN2CS's), the task's column."""
    return kept.Row(EXPERIMENT, "table2", row_label(scenario_of(spec.train, spec.select, spec.select), spec.backbone), spec.seed,
                    SELECTION_RULE, column=TASK_LABEL.get(spec.task, spec.task))


def kept_dir(profile: Profile, spec: GlueRun) -> Path:
    """Where the classifier of ``spec`` is kept: ``runs/<profile>/glue/models/<key>/``."""
    return kept.kept_dir(profile.runs_dir / EXPERIMENT, spec)


def kept_plan(profile: Profile) -> list[kept.Planned]:
    """The runs that keep a model: every fine-tuning of the plan.  Their specs where the Koglish data is local (a
    folder, or the synthetic mini Koglish): what ``reproduce.sh export`` needs, the kept folders being named by the
    specs' keys, which hold the data's hash.  Before the data is here (``--check``'s estimate of a hub source), the
    spec is a tuple naming the run: counting and sizing the models needs no data."""
    import os

    from ..koglish.data import KoglishFormatError

    c = load(profile)
    source = str(profile.koglish_source)
    if source == "synthetic" or Path(os.path.expanduser(source)).is_dir():
        try:
            return [kept.Planned(s, kept_row(s), s.model) for s in plan_for(profile, c)]
        except (KoglishFormatError, OSError):  # a local folder that is not (yet) a whole Koglish copy: count the runs only
            pass
    unread = {task: "not read" for task in c.tasks}
    return [kept.Planned((s.task, s.backbone, s.train, s.select, s.seed), kept_row(s), s.model)
            for s in specs(profile, c, koglish_source=profile.koglish_source, data_fingerprints=unread)]


def kept_model(spec: GlueRun, profile: Profile) -> Path:
    """The kept classifier of ``spec``; fine-tuned again (its record rewritten) where ``keep_models`` did not keep it."""
    return kept.kept_model(spec, profile, folder=kept_dir(profile, spec), run_one=run_one, cache_dir=profile.runs_dir / EXPERIMENT)
