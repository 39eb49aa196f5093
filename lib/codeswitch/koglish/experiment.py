"""Notebook 01's construction runs: the raw English of a task (:func:`raw_task`), the parser + translator of a
profile (:func:`make_switcher`), :func:`run_one` and :func:`run` (ConCSE §3).

The construction run behind the exclusion statistics is cached in the run cache
(``runs/<profile>/koglish/<hash>.json``), keyed by its complete configuration.
Smoke profile: the mini Koglish (gold trees, the shipped glossary).  Paper
profile: the original GLUE sentences from the hub, parsed with benepar and
translated by a Hugging Face MT model.  Koglish trains nothing, so it keeps no
models (``SELECTION_RULE = None``).

The other sections of notebook 01 live beside this file: :mod:`.plan` (the runs),
:mod:`.walkthrough` (sentences step by step), :mod:`.tables` (Table 1, the exclusion
table and their claims), :mod:`.figures` (Figure 1).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping

import pandas as pd

from . import data as K
from .construct import CodeSwitcher, build, build_stats
from .layout import write_glue
from .parse import BeneparParser, BracketParser, CachedParser
from .synthetic import GLOSSARY, construction_stats, ensure_mini_koglish, generate_raw
from .translate import make_translator
from ..core.profiles import Profile
from ..core.experiment import Results
from ..core.runs import config_hash
from .config import Config, KoglishRun, load
from .plan import spec as planned_spec, stages

__all__ = ["pretokenize", "make_switcher", "raw_task", "run_one", "built_folder", "run"]

# the original GLUE columns -> the released Koglish names
_GLUE_COLUMNS = {
    "cola": {"sentence": "sentence"},
    "sst2": {"sentence": "sentence"},
    "mrpc": {"sentence1": "sentence1", "sentence2": "sentence2"},
    "stsb": {"sentence1": "sentence1", "sentence2": "sentence2"},
    "qnli": {"question": "sentence1", "sentence": "sentence2"},
    "rte": {"sentence1": "sentence1", "sentence2": "sentence2"},
}


# --------------------------------------------------------------------------- the pipeline for a profile
def pretokenize(text: str) -> str:
    """Split off every punctuation character, as the released Koglish text is (``Dell ' s``, ``$ 721 , 154``)."""
    return " ".join(re.findall(r"\w+|[^\w\s]", str(text)))


def _cache_dir(profile: Profile) -> Path:
    return profile.runs_dir / "koglish_cache"


def make_switcher(profile: Profile, c: Config, trees: Mapping[str, str] | None = None) -> CodeSwitcher:
    """The parser + translator of this profile, with persistent caches under ``runs/<profile>/koglish_cache``."""
    if c.parser == "ptb":
        if trees is None:
            raise ValueError("koglish.parser = 'ptb' needs gold trees (the synthetic data carries them); use 'benepar' for real text")
        parser = BracketParser(trees)
    else:
        parser = CachedParser(BeneparParser(c.benepar_model), _cache_dir(profile) / "parses.sqlite")
    translator = make_translator(
        c.translator,
        dictionary=c.dictionary or GLOSSARY,
        hf_model=c.hf_model,
        hf_src_lang=c.hf_src_lang,
        hf_tgt_lang=c.hf_tgt_lang,
        google_key_env=c.google_key_env,
        cache=None if c.translator == "dictionary" else _cache_dir(profile) / "translations.sqlite",
        device=None if c.translator != "hf" else str(profile.torch_device()),
    )
    return CodeSwitcher(parser, translator, order=c.np_order, min_np_tokens=c.min_np_tokens, replace=c.replace,
                        pronouns=c.pronouns, exclusions=c.exclusions)


def _raw_glue(c: Config, task: str) -> pd.DataFrame:
    """The first ``construct_n`` training items of an original GLUE task, pre-tokenised, in Koglish column names."""
    from datasets import load_dataset

    from ..core.hub import resolve

    ref = resolve(c.glue_hub, kind="dataset", what="koglish.glue_hub")
    split = "train" if not c.construct_n else f"train[:{c.construct_n}]"
    df = load_dataset(ref, task, split=split).to_pandas()
    df = df.rename(columns=_GLUE_COLUMNS[task])[[*_GLUE_COLUMNS[task].values(), "label"]]
    for col in _GLUE_COLUMNS[task].values():
        df[col] = df[col].map(pretokenize)
    return df


def raw_task(c: Config, task: str) -> tuple[pd.DataFrame, dict[str, str] | None]:
    """The raw English items of a GLUE ``task`` from ``c.construct_source``, and their gold trees (synthetic only)."""
    if c.construct_source == "synthetic":
        return generate_raw(task, c.synthetic.glue_size, c.synthetic.seed)
    return _raw_glue(c, task), None


# --------------------------------------------------------------------------- the runs
def run_one(spec: KoglishRun, profile: Profile) -> dict:
    """One construction run, computed (no cache): ``{"input", "kept", "excluded", "details", "splits"}``.

    The parser and translator are built from the profile's section (the API-key
    variable's *name* is not part of a run); the spec must be one the profile plans.
    """
    c = load(profile)
    expected = planned_spec(c, spec.task)
    if spec.key() != expected.key():
        raise ValueError(f"koglish: the spec of task {spec.task!r} is not the one the profile {profile.name!r} plans "
                         f"(key {spec.key_hash()} vs {expected.key_hash()})")
    task = spec.task
    if spec.construct_source == "synthetic":
        # the mini Koglish build *is* the construction run: read its statistics
        stats = construction_stats(ensure_mini_koglish(profile))
        group = "glue" if task in K.GLUE_TASKS else task.split(":")[0]
        name = task.split(":")[-1]
        return stats[group][name]
    raw, trees = raw_task(c, task)
    res = build(raw, make_switcher(profile, c, trees), K.GLUE_KIND[task])
    # what was built is kept, in the released layout, so it can be loaded like Koglish (koglish_source=<folder>)
    folder = built_folder(profile, spec)
    sizes = write_glue(folder, task, res, seed=spec.split_seed)
    return {**build_stats(res), "splits": sizes}


def built_folder(profile: Profile, run: KoglishRun) -> Path:
    """Where a construction run on real GLUE writes its Koglish-GLUE (one folder per construction setting, every task)."""
    key = config_hash({k: v for k, v in run.key().items() if k != "task"})
    return profile.runs_dir / "koglish_built" / key


def run(profile: Profile) -> Results:
    """Every construction run of :func:`~codeswitch.koglish.plan.plan` through the run cache (``runs/<profile>/koglish/``)."""
    (construction,) = stages(profile)
    return construction.run(run_one, profile)
