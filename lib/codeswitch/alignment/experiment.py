"""Alignment objectives for code-switching (Fazili & Jyothi, COLING 2022): Tables 3.1, 3.2 and Figure 3.1 (notebook 06).

The experiment contract (:mod:`codeswitch.core.experiment`): :func:`~codeswitch.alignment.plan.plan` gives the
typed specs (:mod:`codeswitch.alignment.config`) of three stages, run in this order by
:func:`run`, each through the run cache (``runs/<profile>/alignment/``); this module runs them (:func:`run_one`,
:func:`run`) and keeps their models (:func:`kept_model`):

1. **align**: one run per (objective, data, script, mode) that a table row needs:
   Lc or Lm on the IIT Bombay parallel corpus or the MUSE lexicon, Hindi in
   Devanagari or romanised (ITRANS), all layers trained (Table 3.1) or a linear
   head on the frozen encoder (Table 3.2).  The aligned weights are saved as
   safetensors next to the cache (``aligned/<key hash>/``), the run's record keeps its
   loss history.
2. **finetune**: every row × task × seed: GLUECoS fine-tuning of the (aligned)
   encoder with GLUECoS's protocol, scored on validation (and a labelled test).
3. **figure**: the t-SNE of Figure 3.1, before and after alignment, with a
   cross-lingual word-retrieval score.

Tables and the figure (:mod:`~codeswitch.alignment.tables`, :mod:`~codeswitch.alignment.figures`) are drawn from
the cached records alone.

Conventions (the released code's where the paper is ambiguous; the other reading
is a named option in :class:`~codeswitch.alignment.config.Config`):

* Lc's denominator keeps the positive (InfoNCE, as the released ``NT_Xent``);
  ``contrastive_variant: paper`` drops it, as Eq. 1 is printed;
* the sentence vector is the final-layer [CLS] with the attention mask passed (the
  released code passed no mask); ``sentence_vector: pooler`` is the released
  linear-head script's BERT pooler output;
* Lm = mean ``1 − cos`` of aligned words (the released code has no Lm;
  ``word_distance: l2``: the squared L2 distance of §4's Wu & Dredze reading); its
  regulariser is Eq. 2 on the [CLS] vectors (``word_reg_on: words``: on the words);
* "Roman" rows read the authors' own romanised text where the source holds their
  ``Romanized/`` files, ITRANS generated elsewhere (``romanisation: itrans``: always);
* GLUECoS fine-tuning lower-cases as the GLUECoS scripts' tokenizer does
  (``do_lower_case`` per task: sentiment and NER true, QA false; false = cased);
* alignments: the file where the corpus has one, else awesome-align's extraction
  from the initial encoder (layer 8, threshold 1e-3, probability ≥ 0.9 as §2.2);
* one alignment run per setting (seed ``align_seed``), fine-tuning repeated over
  the profile's seeds; GLUECoS's best-validation-epoch model selection;
* GLUECoS's test splits are unlabelled, so "test" cells exist only where a
  labelled test file is given (the authors' README warns their SA test labels
  were faulty).
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..core import kept
from ..core.checkpoints import checkpoint_ok
from ..core.experiment import Results
from ..core.learning import KEY as LEARNING, learning
from ..core.profiles import Profile
from ..core.runs import RunCache, config_hash
from ..core.sampling import sample_indices, take
from .config import AlignRun, AlignTuneRun, Config, ExtractionRun, FigureRun, FinetuneRun, load, same_depth_layer
from .plan import EXPERIMENT, FIGURE_FILE, SYNTHETIC_GLUECOS, TABLES, build_stages, cache_dir, specs
from .train import auto_model

__all__ = ["run_one", "run", "check_settings", "checkpoint_dir", "figure_sentences", "SELECTION_RULE", "kept_row", "kept_dir", "kept_plan",
           "kept_model"]


# --------------------------------------------------------------------------- runtime helpers
def _setup(profile: Profile) -> None:
    import torch

    from transformers.utils import logging as hf_logging

    if profile.cpu_threads and profile.torch_device().type == "cpu":
        torch.set_num_threads(profile.cpu_threads)  # process-wide, as load_profile does (smoke: 1, tiny models on a shared CPU)
    hf_logging.disable_progress_bar()  # ~50 checkpoint loads: their bars would bury the run's own progress lines


def _backbone(profile: Profile, model: str) -> str:
    from ..core.models import resolve_model

    return resolve_model(model, profile, what="alignment.backbones")


def check_align_layer(profile: Profile, c: Config, *, local_only: bool = False) -> None:
    """``align_layer`` names a hidden state of every backbone, checked from its configuration before any run.

    Hidden state 0 is the embeddings, state ``k`` the output of layer ``k``, so a backbone of ``n`` layers takes
    0..n.  A layer it lacks is a :class:`~codeswitch.core.sections.ConfigError` naming the file, the key and the
    backbone's depth, before anything trains: the check inside the extraction (:func:`.evaluate.extract_alignments`)
    comes after the grid (the first quick-local run of notebook 06 trained for 105 minutes and then stopped there, on
    MiniLM's 6 layers with mBERT's layer 8).  :func:`run` checks every backbone; ``local_only`` (``./reproduce.sh``
    before its first notebook, :func:`check_settings`) skips a hub backbone that is not here yet.
    """
    from ..core.deltas import blame_override
    from ..core.models import backbone_depth
    from ..core.sections import ConfigError

    for b in c.backbones:
        depth = backbone_depth(b.model, profile, what="alignment.backbones", local_only=local_only)
        if depth is None:
            continue
        if not 0 <= c.align_layer <= depth:
            source = profile.source_file or profile.name
            raise blame_override(ConfigError(
                f"{source}: alignment.align_layer = {c.align_layer} is not a hidden state of "
                f"backbone {b.name} ({b.model}): it has {depth} layers, hidden states 0..{depth}.  awesome-align takes layer 8 "
                f"of mBERT's 12; the same depth here is layer {same_depth_layer(depth)}", ("alignment", "align_layer")),
                ("alignment", "align_layer"), profile.overrides, source) from None


def check_settings(profile: Profile) -> None:
    """The settings that depend on what they name, checked where that is here already (the contract's optional
    ``check_settings``: ``./reproduce.sh`` calls it before the first notebook starts): ``align_layer`` against the
    depth of each backbone on disk (:func:`check_align_layer`)."""
    check_align_layer(profile, load(profile), local_only=True)


@lru_cache(maxsize=4)
def _tokenizer(path: str, do_lower_case: bool = False):
    """One tokenizer per (backbone folder, casing) for the whole grid (loading it is most of a tiny run's overhead)."""
    from .gluecos_train import load_tokenizer

    return load_tokenizer(path, do_lower_case=do_lower_case)


def _gluecos_dir(profile: Profile, gluecos_dir: str) -> Path:
    if gluecos_dir == "synthetic":
        return SYNTHETIC_GLUECOS
    p = Path(gluecos_dir).expanduser()
    return p if p.is_absolute() else profile.root / p


def _load_align_data(profile: Profile, spec: AlignRun):
    """(train, validation) :class:`ParallelData` of an alignment run."""
    from .data import hold_out, lexicon_as_parallel, load_lexicon, load_parallel

    if spec.data == "parallel":
        what = "alignment.parallel_source"
        roman = {"romanisation": spec.romanisation} if spec.romanisation else {}
        if spec.holdout is not None:  # no train split: a seeded held-out part of the validation pairs validates
            rest, valid = hold_out(load_parallel(spec.source, "validation", script=spec.script, what=what, **roman), spec.holdout)
            return rest.subset(sample_indices(len(rest), spec.train_size, spec.train_sample or "head")), valid
        if spec.train_sample and spec.train_size is not None:  # a seeded sample of the whole split, in file order
            whole = load_parallel(spec.source, "train", script=spec.script, what=what, **roman)
            train = whole.subset(sample_indices(len(whole), spec.train_size, spec.train_sample))
        else:
            train = load_parallel(spec.source, "train", script=spec.script, limit=spec.train_size, what=what, **roman)
        valid = load_parallel(spec.source, "validation", script=spec.script, limit=spec.valid_size, what=what, **roman)
        return train, valid
    roman = {"romanisation": spec.romanisation} if spec.romanisation else {}
    entries = load_lexicon(spec.source, script=spec.script, cache_dir=profile.runs_dir / "_downloads", **roman)
    return lexicon_as_parallel(entries, n_valid=spec.valid_size, limit=spec.train_size, source=spec.source, script=spec.script)


def _with_alignments(profile: Profile, spec: AlignRun, data, encoder, tokenizer, device):
    """Attach alignments: the file's (``alignments: auto``) or extracted from the initial encoder (cached as Pharaoh)."""
    from .data import read_pharaoh, write_pharaoh
    from .evaluate import extract_alignments

    if data.alignments is not None and spec.alignments == "auto":
        return data, "file"
    pairs_digest = hashlib.sha256(json.dumps(data.pairs, ensure_ascii=False).encode()).hexdigest()
    extraction = {"layer": spec.align_layer, "softmax_threshold": spec.softmax_threshold, "prob_threshold": spec.align_prob_threshold,
                  "max_length": spec.max_length}
    key = config_hash({"backbone": spec.backbone_id or spec.model, "pairs": pairs_digest, "use": spec.alignments, **extraction})
    path = cache_dir(profile) / "extracted" / f"{key}.align"
    if path.is_file():
        return data.with_alignments(read_pharaoh(path, data.pairs)), "extracted (cached)"
    al = extract_alignments(
        encoder, tokenizer, data.pairs, layer=spec.align_layer, softmax_threshold=spec.softmax_threshold,
        prob_threshold=spec.align_prob_threshold, max_length=spec.max_length, device=device,
    )
    write_pharaoh(path, al)
    return data.with_alignments(al), "extracted"


# --------------------------------------------------------------------------- stage 1: align
def checkpoint_dir(profile: Profile, spec: AlignRun) -> Path:
    """The aligned weights of an alignment run (named by its key)."""
    return cache_dir(profile) / "aligned" / spec.key_hash()


def _aligned(profile: Profile, c: Config, spec: AlignRun | AlignTuneRun, path: str):
    """``(encoder, head)`` of an alignment run, aligning first (and caching its record) if its weights are missing; of
    a tuned one (``alignment.tune``), the chosen run's (:func:`_chosen`)."""
    from .train import load_aligner

    if isinstance(spec, AlignTuneRun):
        spec = _chosen(profile, c, spec)
    folder = checkpoint_dir(profile, spec)
    if not checkpoint_ok(folder, what="aligned model"):  # missing, or a file missing or changed: align again
        RunCache(cache_dir(profile)).put(spec.key(), _align(spec, profile, c))
    return load_aligner(folder, path)


def _chosen(profile: Profile, c: Config, spec: AlignTuneRun) -> AlignRun:
    """The run ``alignment.tune`` keeps among ``spec.runs`` (:func:`.tuning.choose`, cached as ``spec``'s record;
    a run not cached yet is aligned first)."""
    from .tuning import choose

    cache = RunCache(cache_dir(profile))
    record = cache.get(spec.key())
    if record is None:
        for r in spec.runs:
            if cache.get(r.key()) is None:  # the align stage trains every grid point; a lone call aligns what is missing
                cache.put(r.key(), _align(r, profile, c))
        record = choose(spec, [cache.get(r.key()) for r in spec.runs])
        cache.put(spec.key(), record)
    return next(r for r in spec.runs if r.key_hash() == record["selected"])


def align_inputs(spec: AlignRun, profile: Profile):
    """What an alignment run starts from: ``(device, tokenizer, encoder, train pairs, validation pairs)``, the encoder
    built after the run's seed is set (the order its RNG draws follow; the run and the notebook's preview share it)."""
    from ..core.utils import set_seed

    device = profile.torch_device()
    path = _backbone(profile, spec.model)
    tokenizer = _tokenizer(path)
    set_seed(spec.seed)
    encoder = auto_model(path)
    train, valid = _load_align_data(profile, spec)
    return device, tokenizer, encoder, train, valid


def _align(spec: AlignRun, profile: Profile, c: Config) -> dict:
    """Stage 1 for one spec: align, save the weights, return the loss history."""

    from .evaluate import heldout_retrieval
    from .train import Aligner, save_aligner, train_alignment

    device, tokenizer, encoder, train, valid = align_inputs(spec, profile)
    source = None
    if spec.objective == "word":
        train, source = _with_alignments(profile, spec, train, encoder, tokenizer, device)
        valid, _ = _with_alignments(profile, spec, valid, encoder, tokenizer, device)
    # the untrained encoder (in linear_head mode: without the head) on the held-out pairs, the baseline of the run
    before = heldout_retrieval(Aligner(encoder, "all_layers", sentence_vector=spec.sentence_vector), tokenizer, valid,
                               max_length=spec.max_length, device=device)
    aligner = Aligner(encoder, spec.mode, sentence_vector=spec.sentence_vector)  # the linear head is built under the seed
    history = train_alignment(aligner, tokenizer, train, valid, spec, device=device, desc=f"align {spec.objective}/{spec.mode}")
    after = heldout_retrieval(aligner, tokenizer, valid, max_length=spec.max_length, device=device)
    save_aligner(aligner, tokenizer, checkpoint_dir(profile, spec), meta={"key": spec.key_hash()})
    if kept.wanted(c.keep_models, spec):  # the aligned backbone as a plain AutoModel (one run per setting: best = all)
        keep_aligned(spec, profile, aligner, tokenizer, scores={f"{k} (held-out, after)": v for k, v in after.items()}
                     | {f"{k} (held-out, before)": v for k, v in before.items()})
    n_pairs = sum(len(a) for a in train.alignments) if train.alignments is not None else None
    out = {**history, "checkpoint": spec.key_hash(), "train_pairs": len(train), "valid_pairs": len(valid),
           "aligned_word_pairs": n_pairs, "alignments_from": source,
           **{f"{k}_before": v for k, v in before.items()}, **{f"{k}_after": v for k, v in after.items()}}
    if spec.objective == "word" and not after["word_pairs"]:  # word P@1 is undefined (nan): nothing to learn against
        out["no_learning_entry"] = (f"none of the {len(valid)} held-out pairs has an aligned word pair (alignments "
                                    f"{source}), so held-out word P@1 is undefined (nan)")
    elif _held_to_baseline(spec):
        metric = "sentence_p1" if spec.objective == "sentence" else "word_p1"
        what = "sentence retrieval P@1" if spec.objective == "sentence" else "word translation P@1"
        out[LEARNING] = learning(f"{what}, held-out {spec.data} pairs", after[metric], before[metric],
                                 baseline_name="untrained encoder", margin=ALIGN_MARGIN)
    return out


#: how much held-out retrieval P@1 (Lc: sentences, Lm: words) must rise over the untrained encoder's
ALIGN_MARGIN = 0.05


# --------------------------------------------------------------------------- kept models (issue 28)
SELECTION_RULE = "the one alignment run of its setting (seed align_seed): the paper aligns once per row"


def kept_row(spec: AlignRun | FinetuneRun) -> kept.Row:
    """The first table row an alignment run stands for (Table 3.1: all layers; Table 3.2: a linear head); a GLUECoS
    fine-tuning's row, its task the part (one task model per row and task, beside the row's aligned backbone)."""
    if isinstance(spec, FinetuneRun):
        return kept.Row(EXPERIMENT, spec.table, spec.row, spec.seed, FINETUNE_SELECTION_RULE, part=spec.task)
    for t in TABLES.values():
        for s in t.rows:
            if (t.mode, s.objective, s.data, s.script) == (spec.mode, spec.objective, spec.data, spec.script):
                return kept.Row(EXPERIMENT, t.table, s.row, spec.seed, SELECTION_RULE)
    return kept.Row(EXPERIMENT, "table3_1" if spec.mode == "all_layers" else "table3_2",
                    f"{spec.objective} {spec.data} {spec.script}", spec.seed, SELECTION_RULE)


def kept_dir(profile: Profile, spec: AlignRun | FinetuneRun) -> Path:
    """Where the aligned backbone or task model of ``spec`` is kept: ``runs/<profile>/alignment/models/<key>/``."""
    return kept.kept_dir(cache_dir(profile), spec)


def keep_aligned(spec: AlignRun, profile: Profile, aligner, tokenizer, *, scores: dict) -> Path:
    """Keep an aligned backbone: ``AutoModel.from_pretrained(folder)`` gives the aligned encoder (``all_layers``); in
    ``linear_head`` mode the encoder is the unchanged backbone and the trained head is ``linear_head.safetensors``
    (``nn.Linear(H, H)`` on the sentence vector)."""
    from safetensors.torch import save_file

    def save(d: Path) -> None:
        aligner.encoder.save_pretrained(d, safe_serialization=True)
        tokenizer.save_pretrained(d)
        if aligner.mode != "all_layers":
            save_file({k: v.contiguous().cpu() for k, v in aligner.head.state_dict().items()}, str(d / "linear_head.safetensors"))

    return kept.keep(kept_dir(profile, spec), spec, kept_row(spec), fmt="auto-model", save=save, profile=profile, notebook="06",
                     scores=scores, extra={"mode": spec.mode, "sentence_vector": spec.sentence_vector})


#: the selection rule of GLUECoS task models under keep_models: best (the paper reports the mean over seeds)
FINETUNE_SELECTION_RULE = ("the seed whose selected epoch scores highest on validation (GLUECoS's model selection, "
                           "across seeds; ties: the earlier seed)")


def keep_task_model(spec: FinetuneRun, profile: Profile, model, tokenizer, result: dict) -> Path:
    """Keep a GLUECoS task model as its ``transformers`` class with its label maps
    (:func:`~codeswitch.alignment.gluecos_export.as_transformers`; checked on a probe sentence)."""
    from .gluecos_data import TASKS
    from .gluecos_export import AUTO_CLASSES, as_transformers

    hf = as_transformers(model, result["labels"], tokenizer)
    columns = [(label, split) for label, task, split in TABLES[spec.table].columns if task == spec.task]
    scores = {label: result[split] for label, split in columns if result.get(split) is not None}  # the table's columns
    scores[f"{TASKS[spec.task].metric}: selected epoch"] = result["epoch"]
    columns = [label for label, _ in columns]
    return kept.keep(kept_dir(profile, spec), spec, kept_row(spec), fmt=FORMAT_OF[AUTO_CLASSES[TASKS[spec.task].kind]],
                     profile=profile, notebook="06", scores=scores, extra={"paper_columns": columns, "task": spec.task},
                     save=lambda d: (hf.save_pretrained(d, safe_serialization=True), tokenizer.save_pretrained(d)))


FORMAT_OF = {"AutoModelForSequenceClassification": "sequence-classification",
             "AutoModelForTokenClassification": "token-classification", "AutoModelForQuestionAnswering": "question-answering"}


def kept_plan(profile: Profile) -> list[kept.Planned]:
    """The runs that keep a model (``--check``'s estimate): every alignment (its backbone) and GLUECoS fine-tuning."""
    aligns, fine, _ = specs(profile, load(profile))
    return [kept.Planned(s, kept_row(s), s.model) for s in [*aligns, *fine]]


def kept_model(spec: AlignRun | FinetuneRun, profile: Profile) -> Path:
    """The kept aligned backbone or task model of ``spec``; run again (its record rewritten) where ``keep_models`` did
    not keep it."""
    return kept.kept_model(spec, profile, folder=kept_dir(profile, spec), run_one=run_one, cache_dir=cache_dir(profile))


# --------------------------------------------------------------------------- the other runners, run_one, run
def _held_to_baseline(spec: AlignRun) -> bool:
    """Whether an alignment run records a learning entry (:mod:`codeswitch.core.learning`).

    Always, except on a ``tiny-*`` backbone (the smoke profile: random, or after its short masked-LM pre-training)
    for the two settings that cannot learn there within the smoke budget (measured): the lexicon runs (every
    held-out entry is a word never seen in training, and a tiny encoder has no cross-lingual word knowledge to
    carry over) and Lc through a linear head on the frozen encoder (a tiny encoder's [CLS] vectors lie close together,
    cosine 0.96-0.99 between sentences for tiny-bert-mlm, 1.000 for tiny-bert, and a linear map of them does not
    bring translations together in 64 steps: the head falls to about the loss of a constant output, ln B).  Their
    before/after retrieval is still in the record.
    """
    if spec.backbone_id is None:
        return True
    return spec.data == "parallel" and not (spec.objective == "sentence" and spec.mode == "linear_head")


def task_data(profile: Profile, spec: FinetuneRun) -> dict:
    """The GLUECoS splits a fine-tuning reads: the training split cut to ``spec.max_train_samples`` (the first N, or a
    seeded sample in file order: :mod:`codeswitch.core.sampling`), validation and test whole."""
    from .gluecos_data import load_task

    data = load_task(_gluecos_dir(profile, spec.gluecos_dir), spec.task, spec.subdir)
    if spec.max_train_samples is not None:
        data["train"] = take(data["train"], spec.max_train_samples, spec.train_sample or "head")
    return data


def _finetune(spec: FinetuneRun, profile: Profile, c: Config) -> dict:
    """Stage 2 for one spec: GLUECoS fine-tuning of the (aligned) encoder."""
    from torch import nn

    from .gluecos_train import finetune
    from ..core.utils import set_seed

    path = _backbone(profile, spec.model)
    tokenizer = _tokenizer(path, spec.do_lower_case)
    head = None
    # a checkpoint without BERT's pooler (a masked-LM pre-trained encoder: tiny-bert-mlm) gets a new one drawn from the
    # global random stream as it loads; seeded here, it is the same whatever ran before in this process
    set_seed(spec.seed)
    if spec.alignment is not None:
        encoder, head = _aligned(profile, c, spec.alignment, path)
    else:
        encoder = auto_model(path)
        if spec.random_head:
            set_seed(spec.seed)
            hidden = encoder.config.hidden_size
            head = nn.Linear(hidden, hidden)  # Baseline (rand): untrained, then fine-tuned with the task
    data = task_data(profile, spec)
    keep = None
    if kept.wanted(c.keep_models, spec):  # the selected epoch's task model, as its transformers class

        def keep(model, result):
            keep_task_model(spec, profile, model, tokenizer, result)

    return finetune(spec.task, data, encoder, tokenizer, spec, aligned_head=head, device=profile.torch_device(), keep=keep)


def _figure(spec: FigureRun, profile: Profile, c: Config) -> dict:
    """Stage 3: the t-SNE coordinates before and after alignment, and a cross-lingual word-retrieval score."""
    from sklearn.manifold import TSNE

    from .evaluate import embed_words
    from .train import Aligner

    path = _backbone(profile, spec.model)
    tok = _tokenizer(path)
    df = figure_sentences()
    out = {"pair": df["pair"].tolist(), "language": df["language"].tolist()}
    encoders = {"before": (auto_model(path), None), "after": _aligned(profile, c, spec.alignment, path)}
    for name, (enc, head) in encoders.items():
        mode = "all_layers" if head is None else "linear_head"
        aligner = Aligner(enc, mode, head=head)
        vecs = embed_words(aligner, tok, df["sentence"].tolist(), df["target"].tolist(), device=profile.torch_device()).numpy()
        tsne = TSNE(n_components=2, perplexity=min(spec.perplexity, len(vecs) - 1), init="pca", random_state=spec.seed)
        out[name] = tsne.fit_transform(vecs.astype(np.float64)).round(6).tolist()
        out[f"retrieval_at_1_{name}"] = _retrieval_at_1(vecs, out["pair"], out["language"])
    return out


def _extraction(spec: ExtractionRun, profile: Profile, c: Config) -> dict:

    from .data import load_parallel
    from .evaluate import extract_alignments

    gold = load_parallel(spec.source, "validation", script="devanagari", limit=spec.n)
    path = _backbone(profile, spec.model)
    tok, enc = _tokenizer(path), auto_model(path)
    out = []
    for thr in spec.thresholds:
        pred = extract_alignments(enc, tok, gold.pairs, layer=spec.align_layer, softmax_threshold=spec.softmax_threshold,
                                  prob_threshold=thr, max_length=spec.max_length, device=profile.torch_device())
        a = sum(len(p) for p in pred)
        g = sum(len(x) for x in gold.alignments)
        hit = sum(len(set(p) & set(x)) for p, x in zip(pred, gold.alignments))
        out.append({
            "probability threshold": "none" if thr is None else thr, "layer": spec.align_layer, "links": a, "gold links": g,
            "precision": hit / a if a else 0.0, "recall": hit / g if g else 0.0,
            "AER": 1 - 2 * hit / (a + g) if a + g else 0.0,
        })
    return {"rows": out}


_RUNNERS = {AlignRun: _align, FinetuneRun: _finetune, FigureRun: _figure, ExtractionRun: _extraction}


def run_one(spec: AlignRun | FinetuneRun | FigureRun | ExtractionRun, profile: Profile) -> dict:
    """One run of any stage, computed (no cache lookup); a later stage aligns first if its aligned weights are missing."""
    _setup(profile)
    return _RUNNERS[type(spec)](spec, profile, load(profile))


def run(profile: Profile) -> Results:
    """The three stages in order, each through the run cache; the records of all, in plan order.

    An alignment record whose weights were deleted is redone (the record alone cannot serve fine-tuning).
    """
    _setup(profile)
    c = load(profile)
    check_align_layer(profile, c)
    aligns, fine, figure = build_stages(profile, c)
    cache = RunCache(cache_dir(profile))
    for spec in aligns:
        if spec.key() in cache and not checkpoint_ok(checkpoint_dir(profile, spec), what="aligned model"):
            cache.path(spec.key()).unlink()  # the weights are gone or damaged: the record alone cannot serve fine-tuning
    out = [stage.run(run_one, profile) for stage in (aligns, fine, figure)]
    if c.keep_models == "best":  # every task model was kept while fine-tuning: keep each row's selected seed
        kept.prune_to_best(cache_dir(profile), [(s, kept_row(s), r["validation"]) for s, r in out[1]])
    return Results(sum((r.specs for r in out), ()), sum((r.records for r in out), ()))


# --------------------------------------------------------------------------- Figure 3.1's data
def figure_sentences(path: Path = FIGURE_FILE) -> pd.DataFrame:
    """The 48 + 48 sentences of Figure 3.1: ``pair`` (English word), ``language``, ``sentence``, ``target`` (word index).

    The file holds ``english_word<TAB>hindi_word<TAB>english<TAB>hindi``; each word must
    occur exactly once in its sentence (punctuation aside).
    """
    import unicodedata

    from ..common.romanize import to_itrans

    def norm(w: str) -> str:
        return unicodedata.normalize("NFC", w).strip(".,!?;:।\"'()").lower()

    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 4:
            raise ValueError(f"{path}, line {lineno}: expected 4 tab-separated fields, found {len(fields)}")
        w_en, w_hi, en, hi = fields
        for lang, word, sent in (("English", w_en, en), ("Hindi", w_hi, hi)):
            hits = [k for k, w in enumerate(sent.split()) if norm(w) == norm(word)]
            if len(hits) != 1:
                raise ValueError(
                    f"{path}, line {lineno}, field '{lang}': {word!r} occurs {len(hits)} times in {sent!r} (exactly once needed)"
                )
            # the label spells the Hindi word in ITRANS: plotting fonts often lack Devanagari
            rows.append({"pair": f"{w_en} / {to_itrans(w_hi)}", "language": lang, "sentence": sent, "target": hits[0]})
    return pd.DataFrame(rows)


def _retrieval_at_1(vecs: np.ndarray, pairs: Sequence[str], langs: Sequence[str]) -> float:
    """Share of words whose nearest neighbour (cosine) in the *other* language belongs to the same word pair."""
    v = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sim = v @ v.T  # (N, N)
    langs, pairs = np.asarray(langs), np.asarray(pairs)
    hits = []
    for i in range(len(v)):
        other = np.where(langs != langs[i])[0]
        hits.append(pairs[other[np.argmax(sim[i, other])]] == pairs[i])
    return float(np.mean(hits))
