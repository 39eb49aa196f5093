"""ConCSE vs SimCSE on Koglish-NLI → Koglish-STS (ConCSE §4, §5.2, §5.3; notebooks 03 and 04).

The experiment contract (:mod:`codeswitch.core.experiment`), top to bottom:

1. :class:`~codeswitch.concse.config.Config` — the ``concse`` section of a profile
   (defaults = the paper: three backbones with Table 9's batch sizes and learning
   rates, 5 epochs, τ = 0.05, α = 1, λ = 1.2, and the ablation grids).
2. :func:`~codeswitch.concse.plan.plan` — one :class:`~codeswitch.concse.config.ConCSERun` per table cell
   (:mod:`codeswitch.concse.plan`).  Every run trains one encoder (one backbone, one method, one seed, one
   setting), picks its best epoch on Koglish STS-B dev and scores it on all seven Koglish-STS test sets.
3. :func:`run_one` — one run: its data, its backbone, :func:`codeswitch.concse.train.train_encoder`.
   :func:`one_step` shows one training step of a spec on a real batch (the six
   blocks, the loss terms), for notebook 03.
4. :func:`run` — every run of the plan through the run cache (``runs/<profile>/concse/``); the kept
   models (``keep_models``, :mod:`codeswitch.core.kept`).
5. :func:`~codeswitch.concse.tables.tables`, :func:`~codeswitch.concse.figures.figures` — from the cached
   results alone.

Conventions (the released code's, where the paper is ambiguous; the other
reading is a named option):

* loss: ``variant="official"`` (H5 negatives anchored on c0, Euclidean distance);
  ``"paper"`` is Eq. 5/7 read literally — compared in ``concse_ablation_variant``;
* SimCSE (Table 3 and Table 4's SimCSE row): ``simcse_settings: released_code``,
  as the authors' released code trains it — batch 64 (XLM-R-large: 128) and maximum
  length 32 (``config_simcse_base.json`` / ``_large.json``), since Table 3's SimCSE
  numbers come from that code; ``"matched"`` is Table 9's batch sizes (512/512/128)
  at ConCSE's maximum length 64 — both compared in ``concse_ablation_simcse_settings``;
* mBERT is the *uncased* checkpoint, as the released ConCSE scripts load it
  (``--model mbert_uncased``); the cased one is ``backbones: [{name: mBERT-base,
  model: bert-base-multilingual-cased}]``;
* model selection: the best epoch on Koglish STS-B dev (code-switched pairs); one
  model per run, scored on all seven test sets (the released code retrains per
  test set: the same procedure, seven times the cost);
* ± is the population standard deviation over seeds (``std_ddof = 0``), which is
  what reproduces the paper's p-values from its own means and ±; p-values are
  Student's two-sided t-test between SimCSE's and ConCSE's per-seed scores.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core import kept
from ..core.learning import KEY as LEARNING_KEY, learning
from ..core.experiment import Results, run_specs
from ..core.profiles import Profile
from ..core.sampling import sample_indices
from .config import ConCSERun, load
from .plan import ABLATIONS, AVG, EXPERIMENT, METHOD_LABELS, STUDIES, TASK_LABELS, plan, run_desc, stages

__all__ = ["data_of", "data_preview", "run_one", "run_scores", "learning_entry", "untrained_scores", "one_step", "run",
           "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan", "kept_model"]


# --------------------------------------------------------------------------- data
@functools.lru_cache(maxsize=2)
def _koglish(source: str, max_train_rows: int | None, max_eval_rows: int | None, invalid_rows: str = "error",
             train_sample: str = "head", sts_tests: tuple[str, ...] | None = None):
    """Koglish-NLI (train), STS-B dev and the seven STS tests, cut to the row limits; read once per process.

    ``invalid_rows``: rows whose ``cross`` breaks the switch rule are an error, or dropped and counted.
    ``train_sample``: how ``max_train_rows`` cuts Koglish-NLI (:mod:`codeswitch.core.sampling`: its first rows, or a
    sample drawn with one fixed seed, in file order); the evaluation sets are cut from the top.
    """
    from ..koglish.data import STS_TASKS, load_nli, load_sts

    nli = load_nli(source, invalid_rows=invalid_rows)
    dev = load_sts(source, "stsb", "valid", invalid_rows=invalid_rows)
    tests = {t: load_sts(source, t, "test", invalid_rows=invalid_rows) for t in (sts_tests or STS_TASKS)}
    return (
        nli.iloc[sample_indices(len(nli), max_train_rows, train_sample)] if max_train_rows else nli,
        dev.iloc[:max_eval_rows] if max_eval_rows else dev,
        {t: (df.iloc[:max_eval_rows] if max_eval_rows else df) for t, df in tests.items()},
    )


def data_of(s: ConCSERun, profile: Profile):
    """The data ``s`` reads: (Koglish-NLI train rows, STS-B dev, {task: STS test})."""
    from ..koglish.data import resolve_source

    return _koglish(str(resolve_source(profile, s.koglish_source)), s.max_train_rows, s.max_eval_rows, s.koglish_invalid_rows or "error",
                    s.train_sample or "head", s.sts_tests)


def data_preview(profile: Profile) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One Koglish-NLI row as the loss sees it (e0 … c2), and the size of every set a run reads."""
    from ..koglish.data import load_nli, load_sts, resolve_source
    from .train import NLI_TO_COLUMNS

    c = load(profile)
    src = resolve_source(profile)
    nli = load_nli(src, invalid_rows=profile.koglish_invalid_rows)
    symbols = ("e0", "e1", "e2", "c0", "c1", "c2")
    row = pd.DataFrame(
        {"embedding": symbols, "column": list(NLI_TO_COLUMNS.values()), "text": [nli.iloc[0][k] for k in NLI_TO_COLUMNS]}
    ).set_index("embedding")
    sizes = [("Koglish-NLI (train)", len(nli), min(len(nli), c.max_train_rows or len(nli)))]
    for task, split in [("stsb", "valid")] + [(t, "test") for t in c.sts_tests]:
        n = len(load_sts(src, task, split, invalid_rows=profile.koglish_invalid_rows))
        sizes.append((f"Koglish-STS {TASK_LABELS[task]} ({split})", n, min(n, c.max_eval_rows or n)))
    return row, pd.DataFrame(sizes, columns=["set", "rows", "rows used"]).set_index("set")


# --------------------------------------------------------------------------- running
def run_one(spec: ConCSERun, profile: Profile) -> dict:
    """One run of the plan, computed (no cache): its data, its backbone, :func:`~codeswitch.concse.train.train_encoder`."""
    from ..core.models import resolve_model
    from .train import evaluate_encoder, train_encoder

    nli, dev, tests = data_of(spec, profile)
    path = resolve_model(spec.model, profile, what=f"{EXPERIMENT}.backbones")
    with profile.torch_threads():  # the profile's cpu_threads on CPU, restored after
        model, info = train_encoder(spec, path, nli, dev, profile=profile, desc=run_desc(spec))
        info["test"] = evaluate_encoder(model, tests, batch_size=spec.per_device_eval_batch_size)
        info["untrained"] = untrained_scores(spec, path, tests)
    info[LEARNING_KEY] = learning_entry(info["test"], info["untrained"])
    if kept.wanted(spec.keep_models, spec):  # the trained encoder, as a sentence-transformers model
        kept.keep(kept_dir(profile, spec), spec, kept_row(spec), fmt="sentence-transformers", save=lambda d: model.save(str(d)),
                  profile=profile, notebook="03" if spec.study == "table3" else "04",
                  scores={**run_scores(info), "Koglish STS-B dev Spearman (best epoch)": info["dev"]})
    return info


def run_scores(result: dict) -> dict[str, float]:
    """A run's test scores (the seven, or the profile's ``sts_tests``) plus their average, by table label."""
    tests = result["test"]
    out = {TASK_LABELS[t]: float(tests[t]) for t in TASK_LABELS if t in tests}
    out[AVG] = float(np.mean(list(out.values())))
    return out


# --------------------------------------------------------------------------- kept models (issue 28)
#: ConCSE's selection rule for keep_models: best.  The paper reports mean ± std over five seeds and selects
#: only epochs (§A.2: the best epoch on STS-B dev); among a row's seeds this project keeps the one whose best
#: epoch scores highest on the same Koglish STS-B dev (ties: the earlier seed), never a test score.
SELECTION_RULE = "the seed whose best epoch scores highest on Koglish STS-B dev (Spearman; ties: the earlier seed)"


def kept_row(spec: ConCSERun) -> kept.Row:
    """The table row a run's kept model stands for: Table 3's ``<Method>-<backbone>``, or its ablation's setting."""
    if spec.study == "table3":
        return kept.Row(EXPERIMENT, "table3", f"{METHOD_LABELS[spec.method]}-{spec.backbone}", spec.seed, SELECTION_RULE)
    return kept.Row(EXPERIMENT, spec.study, f"{METHOD_LABELS[spec.method]} {spec.label}", spec.seed, SELECTION_RULE)


def kept_dir(profile: Profile, spec: ConCSERun) -> Path:
    """Where the encoder of ``spec`` is kept: ``runs/<profile>/concse/models/<key>/`` (a sentence-transformers folder)."""
    return kept.kept_dir(profile.runs_dir / EXPERIMENT, spec)


def kept_plan(profile: Profile) -> list[kept.Planned]:
    """The runs that keep a model (``--check``'s estimate): every training of both stages."""
    return [kept.Planned(s, kept_row(s), s.model) for stage in stages(profile) for s in stage]


def kept_model(spec: ConCSERun, profile: Profile) -> Path:
    """The kept encoder of ``spec`` (a folder ``SentenceTransformer(path)`` loads).  Where it is not there (``keep_models:
    none`` when the run was trained, or its manifest fails) the run is trained again, its model kept and its record
    rewritten, so that record and model come from one training."""
    return kept.kept_model(spec, profile, folder=kept_dir(profile, spec), run_one=run_one, cache_dir=profile.runs_dir / EXPERIMENT)


#: how far a trained encoder's mean Spearman (× 100) over the seven Koglish-STS test sets must
#: exceed the same encoder's before training (its seed's dense head, the backbone as loaded)
LEARNING_MARGIN = 5.0


def learning_entry(trained: dict[str, float], untrained: dict[str, float]) -> dict:
    """Did this run learn?  The mean test Spearman of the trained encoder beside the untrained one's
    (:mod:`codeswitch.core.learning`; Table 3's Avg. column, on the same test pairs)."""
    tests = "the seven Koglish-STS tests" if len(trained) == 7 else f"Koglish-STS {', '.join(trained)}"  # concse.sts_tests
    return learning(f"mean Spearman x100, {tests}", np.mean(list(trained.values())),
                    np.mean([untrained[t] for t in trained]), baseline_name="untrained encoder", margin=LEARNING_MARGIN)


def untrained_scores(spec: ConCSERun, path: str, tests: dict[str, pd.DataFrame]) -> dict[str, float]:
    """The run's evaluation of its encoder *before* training: the backbone as loaded, the dense head as
    the run's seed initialises it (:func:`~codeswitch.concse.train.build_encoder`), on the run's test sets.

    Computed once per process for each (backbone, maximum length, seed, head, test rows): the runs
    of a backbone and seed share it.
    """
    from .train import build_encoder, evaluate_encoder

    rows = tuple((t, int(pd.util.hash_pandas_object(df, index=False).sum())) for t, df in tests.items())
    key = (path, spec.max_length, spec.seed, spec.encoder_head, rows)
    if key not in _UNTRAINED:
        model = build_encoder(path, max_length=spec.max_length, seed=spec.seed, head=spec.encoder_head)
        _UNTRAINED[key] = evaluate_encoder(model, tests, batch_size=spec.per_device_eval_batch_size)
    return dict(_UNTRAINED[key])


_UNTRAINED: dict[tuple, dict[str, float]] = {}


def one_step(spec: ConCSERun, profile: Profile) -> dict:
    """One ConCSE training step of ``spec`` on its first real batch, shown: the six blocks, the loss terms, the step.

    Builds the run's encoder (its seed, its backbone), embeds the first
    ``batch_size`` Koglish-NLI rows (six sentences each: e0, e1, e2, c0, c1, c2),
    computes :func:`~codeswitch.concse.loss.concse_loss` with the spec's settings,
    takes one AdamW step at the spec's learning rate and computes the loss again on
    the same batch.  Returns ``{"batch": rows, "blocks": the mean cosine of each
    S(x, y) block, "terms": before, "after": the terms after the step}``.
    """
    import torch

    from ..core.models import resolve_model
    from .loss import CONCSE_COLUMNS, concse_loss
    from .train import build_encoder, nli_dataset

    if spec.method != "concse":
        raise ValueError(f"one_step shows a ConCSE step; got a {spec.method} spec")
    nli, _, _ = data_of(spec, profile)
    batch = nli_dataset(nli.iloc[: spec.batch_size], "concse").to_pandas()
    model = build_encoder(resolve_model(spec.model, profile, what=f"{EXPERIMENT}.backbones"), max_length=spec.max_length,
                          seed=spec.seed, head=spec.encoder_head)
    model.train()  # dropout on, as in training
    settings = dict(temperature=spec.temperature, margin=spec.margin, triplet_weight=spec.triplet_weight, terms=spec.terms,
                    variant=spec.variant)  # the spec's, as the trainer's loss reads them

    def embed() -> list:
        return [model(model.preprocess(batch[col].tolist()))["sentence_embedding"] for col in CONCSE_COLUMNS]  # 6 × (B, H)

    optimizer = torch.optim.AdamW(model.parameters(), lr=spec.learning_rate, weight_decay=spec.weight_decay)
    with profile.torch_threads():
        emb = embed()
        terms = concse_loss(*emb, **settings)
        terms["total"].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), spec.max_grad_norm)
        optimizer.step()
        with torch.no_grad():
            after = concse_loss(*embed(), **settings)
    names = ("e0", "e1", "e2", "c0", "c1", "c2")
    unit = [torch.nn.functional.normalize(e.detach(), dim=-1) for e in emb]
    blocks = pd.DataFrame([[float((unit[i] @ unit[j].T).mean()) for j in range(6)] for i in range(6)], index=names, columns=names)
    return {
        "batch": batch.rename(columns=dict(zip(CONCSE_COLUMNS, names))),
        "blocks": blocks.round(3),
        "terms": {k: float(v.detach()) for k, v in terms.items()},
        "after": {k: float(v) for k, v in after.items()},
    }


def run(profile: Profile, studies: Sequence[str] = STUDIES) -> Results:
    """Train (or find cached) every run of :func:`plan`; a run several tables need is trained once.

    The results hold one record per spec of the plan, in plan order (the same record
    for specs with one key).
    """
    c = load(profile)
    specs = plan(profile, studies, c=c)
    unique = list({s.key_hash(): s for s in reversed(specs)}.values())[::-1]  # first occurrence, in plan order
    desc = "ConCSE Table 3" if tuple(studies) == ("table3",) else "ConCSE ablations" if tuple(studies) == ABLATIONS else "ConCSE"
    done = run_specs(unique, run_one, profile, cache_dir=profile.runs_dir / EXPERIMENT, desc=desc)
    if c.keep_models == "best":  # every candidate was kept while training: keep each row's selected run
        kept.prune_to_best(profile.runs_dir / EXPERIMENT, [(s, kept_row(s), r["dev"]) for s, r in done])
    by_key = {s.key_hash(): record for s, record in done}
    return Results(tuple(specs), tuple(by_key[s.key_hash()] for s in specs))
