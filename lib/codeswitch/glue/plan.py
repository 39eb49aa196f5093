"""Koglish-GLUE's plan (notebook 02): one :class:`~codeswitch.glue.config.GlueRun` per (task, backbone, seed,
training language) of ConCSE's Table 2, and the one stage they form.

EN2EN and EN2CS share the English run, evaluated on both test sets
(:func:`codeswitch.glue.train.training_runs`; :func:`scenario_table` shows the mapping).
The rows' hash (:func:`codeswitch.glue.data.fingerprint`) is part of every run key, so
:func:`plan` reads the data, but no model.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from ..core.experiment import Stage
from ..core.models import backbone_id, is_tiny
from ..core.profiles import Profile, seeds_for
from .config import SECTION, Config, GlueRun, load
from . import data  # data.load_data: one seam for a test's fake data (plan and run_one read through it)
from .train import SCENARIOS, TASKS, training_runs

__all__ = ["EXPERIMENT", "TABLE", "row_label", "plan", "plan_for", "specs", "stages", "stages_for", "scenario_table"]

EXPERIMENT = SECTION  # the runs' cache folder: runs/<profile>/glue/
TABLE = "concse_table2"  # the table the runs fill (every spec's ``experiment``)


def row_label(scenario: str, backbone: str) -> str:
    """A run's row of Table 2: ``"<scenario> · <backbone>"``."""
    return f"{scenario} · {backbone}"


def plan(profile: Profile) -> list[GlueRun]:
    """Every training run of the grid, typed: what :func:`codeswitch.glue.experiment.run` computes and the cache keys come from.

    Reads the data (its hash is part of every key) but no model.
    """
    return plan_for(profile, load(profile))


def plan_for(profile: Profile, c: Config) -> list[GlueRun]:
    """:func:`plan` of the ``glue`` section ``c`` already built from ``profile``."""
    from ..koglish.data import resolve_source

    rows = data.load_data(resolve_source(profile), c.tasks, max_train_samples=c.max_train_samples, max_eval_samples=c.max_eval_samples,
                     invalid_rows=profile.koglish_invalid_rows, train_sample=profile.train_sample)
    return specs(profile, c, koglish_source=profile.koglish_source, data_fingerprints={t: data.fingerprint(d) for t, d in rows.items()})


def specs(profile: Profile, c: Config, *, koglish_source: str, data_fingerprints: Mapping[str, str]) -> list[GlueRun]:
    """The runs of ``c`` on the data whose hashes are ``data_fingerprints`` (:func:`plan` without reading data)."""
    precision = profile.precision_name()
    out = []
    for task in c.tasks:
        for bb in c.backbones:
            for seed in seeds_for(profile, c.seeds):
                for (train, select), tests in training_runs(c.scenarios).items():
                    out.append(GlueRun(
                        experiment=TABLE, task=task, backbone=bb.name, model=bb.model, train=train, select=select,
                        test=tuple(tests), seed=seed, koglish_source=koglish_source, data=data_fingerprints[task],
                        num_train_epochs=c.num_train_epochs, batch_size=bb.batch_size, learning_rate=bb.learning_rate,
                        warmup_ratio=c.warmup_ratio, weight_decay=c.weight_decay,
                        max_length=c.max_length_pair if TASKS[task].pair else c.max_length_single,
                        per_device_eval_batch_size=c.per_device_eval_batch_size, precision=precision,
                        group_by_length=c.group_by_length,  # another batch order: another run
                        packing=True if c.packing else None, torch_compile=c.torch_compile or None,
                        # a tiny backbone changes with its recipe (corpus, size, build version)
                        backbone_id=backbone_id(bb.model) if is_tiny(bb.model) else None,
                        max_train_samples=c.max_train_samples, max_eval_samples=c.max_eval_samples, log_epochs=c.log_epochs,
                        # a capped training split drawn at random: named in the key (head, the default, leaves it out)
                        train_sample=profile.train_sample if c.max_train_samples and profile.train_sample != "head" else None,
                        keep_models=c.keep_models,
                    ))
    return out


def stages(profile: Profile) -> list[Stage]:
    """One stage: every fine-tuning run of :func:`plan` (independent of each other), cached in ``runs/<profile>/glue/``."""
    return stages_for(profile, load(profile))


def stages_for(profile: Profile, c: Config) -> list[Stage]:
    """:func:`stages` of the ``glue`` section ``c`` already built from ``profile``."""
    return [Stage("fine-tuning", plan_for(profile, c), profile.runs_dir / EXPERIMENT, desc="Koglish-GLUE")]


def scenario_table(scenarios: Sequence[str] = tuple(SCENARIOS)) -> pd.DataFrame:
    """The scenario → (train, select, test) mapping and which training run serves it, for display."""
    runs = training_runs(scenarios)
    rows = []
    for name in scenarios:
        s = SCENARIOS[name]
        rows.append(
            {
                "scenario": name,
                "train": s.train,
                "select (valid)": s.select,
                "test": s.test,
                "training run": f"train={s.train}, select={s.select} (tests: {', '.join(runs[(s.train, s.select)])})",
            }
        )
    return pd.DataFrame(rows).set_index("scenario")
