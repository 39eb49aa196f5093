"""Notebook 01's construction runs, planned: one :class:`KoglishRun` per task (:func:`spec`), the tasks' row
labels (:data:`TASK_LABELS`), :func:`plan` and :func:`stages`."""

from __future__ import annotations

from ..core.experiment import Stage
from ..core.profiles import Profile
from . import data as K
from .config import Config, KoglishRun, load
from .synthetic import code_fingerprint

__all__ = ["TASK_LABELS", "task_label", "spec", "plan", "stages"]

#: row labels of Table 1 (the paper's task names; the prefix tells the GLUE and STS STS-B apart)
TASK_LABELS = {
    **{("glue", t): f"GLUE/{n}" for t, n in zip(K.GLUE_TASKS, ("CoLA", "SST-2", "MRPC", "STS-B", "QNLI", "RTE"))},
    **{("sts", t): f"STS/{n}" for t, n in zip(K.STS_TASKS, ("STS-B", "STS12", "STS13", "STS14", "STS15", "STS16", "SICK-R"))},
    ("nli", "nli"): "NLI/NLI",
}


def task_label(task: str) -> str:
    """The row label of a run's task (a GLUE task, or ``"nli:nli"`` / ``"sts:<task>"``)."""
    if task in K.GLUE_TASKS:
        return TASK_LABELS[("glue", task)]
    group, name = task.split(":")
    return TASK_LABELS[(group, name)]


def spec(c: Config, task: str) -> KoglishRun:
    """The construction run of ``task`` under ``c``: everything that determines its statistics (the run-cache key)."""
    common = dict(experiment="koglish_construction", task=task, construct_source=c.construct_source, parser=c.parser,
                  translator=c.translator, np_order=c.np_order, replace=c.replace, min_np_tokens=c.min_np_tokens,
                  # the defaults stay out of the key: every construction run keeps its key
                  pronouns=None if c.pronouns == "broad" else c.pronouns,
                  exclusions=None if c.exclusions == "all" else c.exclusions)
    if c.construct_source == "synthetic":
        return KoglishRun(**common, synthetic=c.synthetic, code=code_fingerprint())
    return KoglishRun(
        **common, glue_hub=c.glue_hub, construct_n=c.construct_n, split_seed=c.split_seed,
        hf=(c.hf_model, c.hf_src_lang, c.hf_tgt_lang) if c.translator == "hf" else None,
        benepar_model=c.benepar_model if c.parser == "benepar" else None,
        dictionary=(c.dictionary or "glossary") if c.translator == "dictionary" else None,
    )


def plan(profile: Profile) -> list[KoglishRun]:
    """One construction run per task: the six GLUE tasks (and, for the synthetic source, NLI and the seven STS sets)."""
    c = load(profile)
    tasks = list(K.GLUE_TASKS)
    if c.construct_source == "synthetic":
        tasks += ["nli:nli"] + [f"sts:{t}" for t in K.STS_TASKS]
    return [spec(c, t) for t in tasks]


def stages(profile: Profile) -> list[Stage]:
    """One stage: every construction run of :func:`plan` (independent of each other), cached in ``runs/<profile>/koglish/``."""
    return [Stage("construction", plan(profile), profile.runs_dir / "koglish")]
