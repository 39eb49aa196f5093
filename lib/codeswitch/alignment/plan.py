"""The plan of notebook 06 (:mod:`codeswitch.alignment.experiment` runs it): the rows of Tables 3.1 and 3.2, and the
typed specs (:mod:`codeswitch.alignment.config`) of its three stages, built once from the section's :class:`Config`.

1. **align**: one :class:`AlignRun` per (objective, data, script, mode) that a table row needs, each distinct
   alignment once (table order);
2. **finetune**: one :class:`FinetuneRun` per row × task × seed, holding the alignment it starts from;
3. **figure**: the :class:`FigureRun` of Figure 3.1, before and after one alignment.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..core.experiment import Stage
from ..core.models import backbone_id, is_tiny
from ..core.profiles import Profile, seeds_for
from .config import SECTION, AlignRun, Config, FigureRun, FinetuneRun, load
from .data import ASSETS
from .rows import TABLE3_1, TABLE3_2, TABLES, AlignTable, System
from .tuning import candidates, tuned

__all__ = ["System", "AlignTable", "TABLES", "TABLE3_1", "TABLE3_2", "align_spec", "finetune_spec", "figure_spec", "cells", "run_tables", "specs",
           "stages", "build_stages", "plan", "cache_dir"]

EXPERIMENT = SECTION
PAPER = "alignment"
FIGURE_FILE = ASSETS / "figure3_1.tsv"
SYNTHETIC_GLUECOS = ASSETS / "gluecos"




# --------------------------------------------------------------------------- the specs (the cache keys)
def _fingerprint(source: str, path: Path) -> str | None:
    """For the shipped ``synthetic`` sets, a hash of their files (so editing them invalidates cached runs);
    ``None`` for hub ids, URLs and local paths, which are keyed by name."""
    if source != "synthetic":
        return None  # a local path is keyed by its content through the spec's inputs() (core.identity)
    from ..core.identity import content_id

    return content_id(path)


def align_seed(profile: Profile, c: Config) -> int:
    return c.align_seed if c.align_seed is not None else seeds_for(profile, c.seeds)[0]


def tiny_id(model: str) -> str | None:
    return backbone_id(model) if is_tiny(model) else None  # a tiny backbone changes with its recipe


def align_spec(profile: Profile, c: Config, system: System, mode: str) -> AlignRun | None:
    """The alignment run behind ``system`` in ``mode``, typed (``None``: no alignment)."""
    if system.objective is None:
        return None
    m = c.mode(mode)
    if system.data == "parallel":
        source, path, n_train, n_valid = c.parallel_source, ASSETS / "parallel", c.parallel_train_size, c.parallel_valid_size
    else:
        source, path, n_train, n_valid = c.lexicon_source, ASSETS / "lexicon_en_hi.txt", c.lexicon_train_size, c.lexicon_valid_size
    word = system.objective == "word"
    return AlignRun(
        experiment=EXPERIMENT, stage="align", model=c.backbone.model, data=system.data, source=source, script=system.script,
        mode=mode, objective=system.objective, learning_rate=m.learning_rate, temperature=m.temperature,
        reg_weight=m.word_reg_weight if (word and m.word_reg_weight is not None) else m.reg_weight,
        batch_size=m.batch_size, num_train_epochs=m.num_train_epochs, patience=m.patience, weight_decay=m.weight_decay,
        max_length=c.max_length, sentence_vector=c.sentence_vector, contrastive_variant=c.contrastive_variant,
        word_reg_on=c.word_reg_on, seed=align_seed(profile, c), precision=profile.precision_name(), files=_fingerprint(source, path), train_size=n_train,
        valid_size=n_valid, holdout=c.parallel_holdout if system.data == "parallel" else None, max_grad_norm=m.max_grad_norm,
        alignments=c.alignments if word else None, align_layer=c.align_layer if word else None,
        softmax_threshold=c.softmax_threshold if word else None, align_prob_threshold=c.align_prob_threshold if word else None,
        word_distance=c.word_distance if word else None, romanisation=c.romanisation if system.script == "roman" else None,
        backbone_id=tiny_id(c.backbone.model), packing=True if c.packing else None,
        torch_compile=c.torch_compile or None,
        # the parallel corpus's cap drawn at random (the lexicon's is already a seeded permutation's first entries)
        train_sample=profile.train_sample if system.data == "parallel" and n_train is not None and profile.train_sample != "head" else None,
    )


def finetune_spec(profile: Profile, c: Config, table: AlignTable, system: System, task: str, seed: int) -> FinetuneRun:
    """One GLUECoS fine-tuning of a table cell, typed."""
    from .gluecos_data import TASKS

    t = getattr(c, task)
    return FinetuneRun(
        experiment=EXPERIMENT, stage="finetune", task=task, gluecos_dir=c.gluecos_dir,
        subdir=c.task_subdirs.get(task, TASKS[task].default_subdir), model=c.backbone.model,
        alignment=tuned(c, align_spec(profile, c, system, table.mode)), random_head=system.random_head, seed=seed,
        precision=profile.precision_name(),
        num_train_epochs=t.num_train_epochs, batch_size=t.batch_size, learning_rate=t.learning_rate, max_length=t.max_length,
        do_lower_case=t.do_lower_case, warmup_ratio=t.warmup_ratio, weight_decay=t.weight_decay, max_grad_norm=t.max_grad_norm,
        per_device_eval_batch_size=t.per_device_eval_batch_size, doc_stride=t.doc_stride, max_answer_length=t.max_answer_length,
        selection=t.selection, files=_fingerprint(c.gluecos_dir, SYNTHETIC_GLUECOS), backbone_id=tiny_id(c.backbone.model),
        packing=True if c.gluecos_packing else None, torch_compile=c.torch_compile or None,
        max_train_samples=t.max_train_samples,
        train_sample=profile.train_sample if t.max_train_samples is not None and profile.train_sample != "head" else None,
        table=table.table, row=system.row,
    )


def figure_spec(profile: Profile, c: Config) -> FigureRun:
    system = next(s for s in TABLE3_1.rows if s.row == c.figure_system)  # an aligned row (checked by Config)
    return FigureRun(
        experiment=EXPERIMENT, stage="figure3_1", model=c.backbone.model,
        alignment=tuned(c, align_spec(profile, c, system, TABLE3_1.mode)),
        sentences=hashlib.sha256(FIGURE_FILE.read_bytes()).hexdigest()[:16], perplexity=c.tsne_perplexity,
        seed=seeds_for(profile, c.seeds)[0], backbone_id=tiny_id(c.backbone.model), system=c.figure_system,
    )


def cells(table: AlignTable, c: Config | None = None):
    """(system, task) pairs of a table, each fine-tuned once and scored on the table's splits (with ``c``: the tasks
    its ``gluecos_tasks`` runs)."""
    tasks = [task for task in dict.fromkeys(task for _, task, _ in table.columns) if c is None or c.runs_task(task)]
    for s in table.rows:
        for task in tasks:
            if (s.row, task) not in table.skip:
                yield s, task


def run_tables(c: Config) -> dict[str, AlignTable]:
    """The tables of :data:`TABLES` that ``c`` runs: those with a task in ``gluecos_tasks`` (all, by default)."""
    return {which: t for which, t in TABLES.items() if any(c.runs_task(task) for _, task, _ in t.columns)}


def stages(profile: Profile) -> list[Stage]:
    """The three stages, in the order they run, all cached in ``runs/<profile>/alignment/``: every distinct alignment
    the tables and the figure need (table order), every (row, task, seed) fine-tuning, the figure (both after the
    alignments)."""
    return build_stages(profile, load(profile))


def build_stages(profile: Profile, c: Config) -> list[Stage]:
    """:func:`stages` from the section ``c`` of ``profile``."""
    aligns, fine, figure = specs(profile, c)
    cache = cache_dir(profile)
    return [Stage("align", aligns, cache, desc="alignment"),
            Stage("finetune", fine, cache, after=("align",), desc="GLUECoS fine-tuning"),
            Stage("figure", figure, cache, after=("align",), desc="Figure 3.1")]


def specs(profile: Profile, c: Config) -> tuple[list[AlignRun], list[FinetuneRun], list[FigureRun]]:
    """The specs of the three stages (:func:`stages`), built from the section ``c`` of ``profile``."""
    aligns: dict[str, AlignRun] = {}
    figure = figure_spec(profile, c)
    tables = run_tables(c)
    for t in tables.values():
        for s in t.rows:
            spec = align_spec(profile, c, s, t.mode)
            for one in (() if spec is None else candidates(c, spec) if c.tune else (spec,)):  # tune: every grid point
                aligns.setdefault(one.key_hash(), one)
    for one in getattr(figure.alignment, "runs", (figure.alignment,)):  # the figure's (under tune: its grid), when its
        aligns.setdefault(one.key_hash(), one)                         # table is not run
    fine = [finetune_spec(profile, c, t, s, task, seed) for t in tables.values() for s, task in cells(t, c)
            for seed in seeds_for(profile, c.seeds)]
    return list(aligns.values()), fine, [figure]


def plan(profile: Profile) -> list[AlignRun | FinetuneRun | FigureRun]:
    """Every run, typed, in the order they must run (:func:`stages`)."""
    aligns, fine, figure = stages(profile)
    return [*aligns, *fine, *figure]


def cache_dir(profile: Profile) -> Path:
    """Where every run of the package is cached: ``runs/<profile>/alignment/``."""
    return profile.runs_dir / EXPERIMENT

