"""Alignment objectives for code-switching (Fazili & Jyothi, COLING 2022): Tables 3.1, 3.2 and Figure 3.1 (notebook 06).

The experiment runs in three stages, each through the run cache:

1. **align**: one run per (objective, data, script, mode) that a table row needs:
   Lc or Lm on the IIT Bombay parallel corpus or the MUSE lexicon, Hindi in
   Devanagari or romanised (ITRANS), all layers trained (Table 3.1) or a linear
   head on the frozen encoder (Table 3.2).  The aligned weights are saved as
   safetensors next to the cache (``aligned/<key>/``), the run's record keeps its
   loss history.
2. **finetune**: every row × task × seed: GLUECoS fine-tuning of the (aligned)
   encoder with GLUECoS's protocol, scored on validation (and a labelled test).
3. **figure**: the t-SNE of Figure 3.1, before and after alignment, with a
   cross-lingual word-retrieval score.

Tables and the figure are drawn from the cached records alone.

Conventions (the released code's where the paper is ambiguous; the other reading
is a named option in :class:`AlignmentConfig`):

* Lc's denominator keeps the positive (InfoNCE, as the released ``NT_Xent``);
  ``contrastive_variant: paper`` drops it, as Eq. 1 is printed;
* the sentence vector is the final-layer [CLS] with the attention mask passed (the
  released code passed no mask); ``sentence_vector: pooler`` is the released
  linear-head script's BERT pooler output;
* Lm = mean ``1 − cos`` of aligned words (the released code has no Lm); its
  regulariser is Eq. 2 on the [CLS] vectors (``word_reg_on: words``: on the words);
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence

import numpy as np
import pandas as pd

from ..core.models import backbone_id  # re-exported: a tiny backbone's id carries its recipe
from ..core.profiles import Profile, as_dict
from ..core.report import comparison, save_figure, save_table, seaborn_style, summarise
from ..core.checkpoints import checkpoint_ok
from ..core.runs import RunCache, config_hash, run_grid
from .gluecos_train import FinetuneArgs

__all__ = [
    "AlignModeConfig",
    "AlignmentConfig",
    "System",
    "AlignTable",
    "TABLES",
    "load_config",
    "backbone_id",
    "align_configs",
    "finetune_configs",
    "run_alignment",
    "run_finetuning",
    "alignment_runs_table",
    "extraction_check",
    "data_preview",
    "build_table",
    "table3_1",
    "table3_2",
    "figure3_1",
    "figure_sentences",
]

EXPERIMENT = "alignment"
RESULT_VERSION = 1  # bump when a change of method code (objectives, training, fine-tuning) changes results
PAPER = "alignment"
ASSETS = Path(__file__).resolve().parents[1] / "assets" / "alignment"
FIGURE_FILE = ASSETS / "figure3_1.tsv"
SYNTHETIC_GLUECOS = ASSETS / "gluecos"


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class AlignModeConfig:
    """Alignment-training settings of one mode (released defaults per mode)."""

    lr: float
    temperature: float  # τ of Lc
    reg_weight: float  # η of Lc (and of Lm unless word_reg_weight is set)
    batch_size: int
    max_epochs: int
    patience: int  # early stopping on the validation loss
    word_reg_weight: float | None = None  # η of Lm; None: the same as reg_weight (the paper tuned it, values unpublished)


@dataclass(frozen=True)
class AlignmentConfig:
    """The ``alignment`` section of a profile.  Defaults are the paper's / released code's settings."""

    backbone: str = "bert-base-multilingual-cased"  # hub id, local folder, or tiny-*
    # Parallel text: "synthetic" (shipped smoke set), a local folder (<split>.tsv [+ <split>_alignments]), or a hub id.
    parallel_source: str = "cfilt/iitb-english-hindi"
    parallel_train_size: int | None = 50000  # first N pairs of the train split (the authors' subset size is unpublished)
    parallel_valid_size: int | None = None  # first N pairs of the validation split (IITB dev: 520)
    # Lexicon: "synthetic", a local MUSE file, or its URL (downloaded once into runs/).
    lexicon_source: str = "https://dl.fbaipublicfiles.com/arrival/dictionaries/en-hi.txt"
    lexicon_valid_size: int = 1000  # entries held out (seeded permutation) for early stopping
    lexicon_train_size: int | None = None
    alignments: Literal["auto", "extract"] = "auto"  # auto: the alignment file where there is one, else extract
    align_layer: int = 8  # awesome-align's layer for mBERT
    softmax_threshold: float = 1e-3  # awesome-align's default
    align_prob_threshold: float | None = 0.9  # §2.2: "filter ... alignment prediction probability (set to 0.9)"
    all_layers: AlignModeConfig = AlignModeConfig(lr=5e-5, temperature=0.001, reg_weight=0.1, batch_size=8, max_epochs=10, patience=10)
    linear_head: AlignModeConfig = AlignModeConfig(lr=1e-3, temperature=0.01, reg_weight=100.0, batch_size=512, max_epochs=100, patience=10)
    max_length: int = 128  # sub-words per sentence during alignment (released: 128)
    sentence_vector: Literal["cls", "pooler"] = "cls"
    contrastive_variant: Literal["released", "paper"] = "released"
    word_reg_on: Literal["cls", "words"] = "cls"
    align_seed: int | None = None  # None: the profile's first seed
    # GLUECoS: "synthetic" (shipped look-alikes) or Data/Processed_Data (relative paths: from the project root).
    gluecos_dir: str = "data/GLUECoS/Data/Processed_Data"
    task_subdirs: dict[str, str] = field(default_factory=dict)  # e.g. {"sentiment": "Sentiment_EN_HI/Romanized"}
    # GLUECoS fine-tuning, the authors' scripts: train_sentence.sh, train_token.sh, train_qa.sh.
    # (A YAML section for one of these replaces all of it: restate every field.)
    sentiment: FinetuneArgs = FinetuneArgs(epochs=10, batch_size=16, lr=1.5e-5, max_length=256)
    ner: FinetuneArgs = FinetuneArgs(epochs=30, batch_size=16, lr=5e-5, max_length=256)
    qa: FinetuneArgs = FinetuneArgs(epochs=30, batch_size=4, lr=1.5e-5, max_length=512, warmup_ratio=0.0, doc_stride=128)
    figure_system: str = "Lm (|| Devanagari)"  # the Table 3.1 row whose aligned model Figure 3.1 shows
    tsne_perplexity: float = 30.0

    def mode(self, name: str) -> AlignModeConfig:
        return {"all_layers": self.all_layers, "linear_head": self.linear_head}[name]


def load_config(cfg: Profile) -> AlignmentConfig:
    return cfg.section(EXPERIMENT, AlignmentConfig)


# --------------------------------------------------------------------------- the tables' rows
@dataclass(frozen=True)
class System:
    """One row of Table 3.1/3.2: how the encoder was aligned before fine-tuning."""

    row: str
    objective: Literal["sentence", "word"] | None = None  # Lc, Lm, or no alignment
    data: Literal["parallel", "lexicon"] | None = None
    script: Literal["devanagari", "roman"] = "devanagari"
    random_head: bool = False  # "Baseline (rand)": an untrained linear head


@dataclass(frozen=True)
class AlignTable:
    name: str  # artifact name
    table: str  # reported.* table id
    mode: Literal["all_layers", "linear_head"]
    columns: tuple[tuple[str, str, str], ...]  # (column label, task, split)
    rows: tuple[System, ...]
    skip: frozenset = frozenset()  # (row, task) pairs the paper did not run
    caption: str = ""


TABLE3_1 = AlignTable(
    name="alignment_table3_1",
    table="table3_1",
    mode="all_layers",
    columns=(("dev", "sentiment", "validation"), ("test", "sentiment", "test")),
    rows=(
        System("Baseline"),
        System("Lc (|| Devanagari)", "sentence", "parallel", "devanagari"),
        System("Lm (|| Devanagari)", "word", "parallel", "devanagari"),
        System("Lc (MUSE Devanagari)", "sentence", "lexicon", "devanagari"),
        System("Lm (MUSE Devanagari)", "word", "lexicon", "devanagari"),
    ),
    caption="GLUECoS Hi–En sentiment (weighted F1) after aligning all encoder layers (Table 3.1)",
)
TABLE3_2 = AlignTable(
    name="alignment_table3_2",
    table="table3_2",
    mode="linear_head",
    columns=(("NER dev", "ner", "validation"), ("QA dev", "qa", "validation")),
    rows=(
        System("Baseline"),
        System("Baseline (rand)", random_head=True),
        System("Lm (|| Roman)", "word", "parallel", "roman"),
        System("Lc (|| Roman)", "sentence", "parallel", "roman"),
        System("Lm (|| Devanagari)", "word", "parallel", "devanagari"),
        System("Lc (|| Devanagari)", "sentence", "parallel", "devanagari"),
        System("Lc (MUSE Roman)", "sentence", "lexicon", "roman"),
        System("Lm (MUSE Roman)", "word", "lexicon", "roman"),
    ),
    skip=frozenset({("Lc (MUSE Roman)", "ner"), ("Lm (MUSE Roman)", "ner")}),
    caption="GLUECoS Hi–En NER (entity F1) and QA (SQuAD v2 F1) with an aligned linear head on the frozen encoder (Table 3.2)",
)
TABLES = {"table3_1": TABLE3_1, "table3_2": TABLE3_2}


# --------------------------------------------------------------------------- configs (the cache keys)
def _fingerprint(source: str, path: Path) -> str | None:
    """What identifies a data source beyond its name (:mod:`codeswitch.core.identity`).

    The shipped ``synthetic`` sets (``path``) and local files/folders: the SHA-256 of
    their content, so editing one label re-runs exactly the runs that read it; a hub
    dataset: the commit it resolves to; a URL (a fixed release) or an unresolvable
    hub id: ``None``, keyed by name.
    """
    from ..core.identity import content_id, source_identity

    if source == "synthetic":
        return content_id(path)
    if str(source).startswith(("http://", "https://")):
        return None
    ident = source_identity(source)
    return ident.get("sha256") or ident.get("revision")


def _align_seed(cfg: Profile, ac: AlignmentConfig) -> int:
    return ac.align_seed if ac.align_seed is not None else cfg.seeds[0]


def _data_key(ac: AlignmentConfig, system: System) -> dict:
    if system.data == "parallel":
        source, path, n_train, n_valid = ac.parallel_source, ASSETS / "parallel", ac.parallel_train_size, ac.parallel_valid_size
    else:
        source, path = ac.lexicon_source, ASSETS / "lexicon_en_hi.txt"
        n_train, n_valid = ac.lexicon_train_size, ac.lexicon_valid_size
    return {"kind": system.data, "source": source, "fingerprint": _fingerprint(source, path), "train_size": n_train, "valid_size": n_valid}


def _extraction_key(ac: AlignmentConfig) -> dict:
    return {
        "layer": ac.align_layer,
        "softmax_threshold": ac.softmax_threshold,
        "prob_threshold": ac.align_prob_threshold,
        "max_length": ac.max_length,
    }


def align_config(cfg: Profile, system: System, mode: str) -> dict | None:
    """The complete config of the alignment run behind ``system`` (``None``: no alignment)."""
    if system.objective is None:
        return None
    ac = load_config(cfg)
    m = ac.mode(mode)
    reg = m.word_reg_weight if (system.objective == "word" and m.word_reg_weight is not None) else m.reg_weight
    args = {
        "mode": mode,
        "objective": system.objective,
        "lr": m.lr,
        "temperature": m.temperature,
        "reg_weight": reg,
        "batch_size": m.batch_size,
        "max_epochs": m.max_epochs,
        "patience": m.patience,
        "max_length": ac.max_length,
        "sentence_vector": ac.sentence_vector,
        "contrastive_variant": ac.contrastive_variant,
        "word_reg_on": ac.word_reg_on,
    }
    out = {
        "experiment": EXPERIMENT,
        "result_version": RESULT_VERSION,
        "stage": "align",
        "backbone": backbone_id(ac.backbone),
        "data": _data_key(ac, system),
        "script": system.script,
        "args": args,
        "seed": _align_seed(cfg, ac),
    }
    if system.objective == "word":
        out["alignments"] = {"use": ac.alignments, **_extraction_key(ac)}
    return out


def align_configs(cfg: Profile) -> list[dict]:
    """Every distinct alignment run the two tables and the figure need, in table order."""
    out: dict[str, dict] = {}
    for t in TABLES.values():
        for s in t.rows:
            c = align_config(cfg, s, t.mode)
            if c is not None:
                out.setdefault(config_hash(c), c)
    return list(out.values())


def _gluecos_key(ac: AlignmentConfig, task: str) -> dict:
    from .gluecos_data import TASKS

    subdir = ac.task_subdirs.get(task, TASKS[task].default_subdir)
    return {"dir": ac.gluecos_dir, "fingerprint": _fingerprint(ac.gluecos_dir, SYNTHETIC_GLUECOS), "subdir": subdir}


def finetune_config(cfg: Profile, table: AlignTable, system: System, task: str, seed: int) -> dict:
    ac = load_config(cfg)
    return {
        "experiment": EXPERIMENT,
        "result_version": RESULT_VERSION,
        "stage": "finetune",
        "task": task,
        "data": _gluecos_key(ac, task),
        "args": as_dict(getattr(ac, task)),
        "backbone": backbone_id(ac.backbone),
        "alignment": align_config(cfg, system, table.mode),
        "random_head": system.random_head,
        "seed": seed,
    }


def _cells(table: AlignTable):
    """(system, task) pairs of a table, each fine-tuned once and scored on the table's splits."""
    tasks = list(dict.fromkeys(task for _, task, _ in table.columns))
    for s in table.rows:
        for task in tasks:
            if (s.row, task) not in table.skip:
                yield s, task


def finetune_configs(cfg: Profile, tables: Sequence[AlignTable] = (TABLE3_1, TABLE3_2)) -> list[dict]:
    return [finetune_config(cfg, t, s, task, seed) for t in tables for s, task in _cells(t) for seed in cfg.seeds]


# --------------------------------------------------------------------------- runtime helpers
def _setup(cfg: Profile) -> AlignmentConfig:
    import torch

    from transformers.utils import logging as hf_logging

    ac = load_config(cfg)
    if cfg.cpu_threads and cfg.torch_device().type == "cpu":
        torch.set_num_threads(cfg.cpu_threads)  # process-wide, as load_profile does (smoke: 1, tiny models on a shared CPU)
    hf_logging.disable_progress_bar()  # ~50 checkpoint loads: their bars would bury the run's own progress lines
    return ac


def _cache(cfg: Profile) -> RunCache:
    return RunCache(cfg.runs_dir / EXPERIMENT)


def _backbone(cfg: Profile, ac: AlignmentConfig) -> str:
    from ..core.models import resolve_model

    return resolve_model(ac.backbone, cfg, what="alignment.backbone")


@lru_cache(maxsize=4)
def _tokenizer(path: str):
    """One tokenizer per backbone folder for the whole grid (loading it is most of a tiny run's overhead)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


def _gluecos_dir(cfg: Profile, ac: AlignmentConfig) -> Path:
    if ac.gluecos_dir == "synthetic":
        return SYNTHETIC_GLUECOS
    p = Path(ac.gluecos_dir).expanduser()
    return p if p.is_absolute() else cfg.root / p


def _load_align_data(cfg: Profile, data: dict, script: str):
    """(train, validation) :class:`ParallelData` of an alignment run's data key."""
    from .data import lexicon_as_parallel, load_lexicon, load_parallel

    if data["kind"] == "parallel":
        what = "alignment.parallel_source"
        train = load_parallel(data["source"], "train", script=script, limit=data["train_size"], what=what)
        valid = load_parallel(data["source"], "validation", script=script, limit=data["valid_size"], what=what)
        return train, valid
    entries = load_lexicon(data["source"], script=script, cache_dir=cfg.runs_dir / "_downloads")
    return lexicon_as_parallel(entries, n_valid=data["valid_size"], limit=data["train_size"], source=data["source"], script=script)


def _with_alignments(cfg: Profile, config: dict, data, encoder, tokenizer, device):
    """Attach alignments: the file's (``use: auto``) or extracted from the initial encoder (cached as Pharaoh)."""
    from .data import read_pharaoh, write_pharaoh
    from .train import extract_alignments

    spec = config["alignments"]
    if data.alignments is not None and spec["use"] == "auto":
        return data, "file"
    pairs_digest = hashlib.sha256(json.dumps(data.pairs, ensure_ascii=False).encode()).hexdigest()
    key = config_hash({"backbone": config["backbone"], "pairs": pairs_digest, **spec})
    path = _cache(cfg).root / "extracted" / f"{key}.align"
    if path.is_file():
        return data.with_alignments(read_pharaoh(path, data.pairs)), "extracted (cached)"
    al = extract_alignments(
        encoder, tokenizer, data.pairs, layer=spec["layer"], softmax_threshold=spec["softmax_threshold"],
        prob_threshold=spec["prob_threshold"], max_length=spec["max_length"], device=device,
    )
    write_pharaoh(path, al)
    return data.with_alignments(al), "extracted"


def _checkpoint_dir(cfg: Profile, config: dict) -> Path:
    return _cache(cfg).root / "aligned" / config_hash(config)


def _train_one(cfg: Profile, config: dict) -> dict:
    """Stage 1 for one config: align, save the weights, return the loss history."""
    from transformers import AutoModel

    from .train import Aligner, AlignmentArgs, save_aligner, train_alignment
    from ..core.utils import set_seed

    ac = load_config(cfg)
    device = cfg.torch_device()
    path = _backbone(cfg, ac)
    tokenizer = _tokenizer(path)
    set_seed(config["seed"])
    encoder = AutoModel.from_pretrained(path)
    args = AlignmentArgs(**config["args"])
    train, valid = _load_align_data(cfg, config["data"], config["script"])
    source = None
    if args.objective == "word":
        train, source = _with_alignments(cfg, config, train, encoder, tokenizer, device)
        valid, _ = _with_alignments(cfg, config, valid, encoder, tokenizer, device)
    aligner = Aligner(encoder, args.mode, sentence_vector=args.sentence_vector)  # the linear head is built under the seed
    history = train_alignment(
        aligner, tokenizer, train, valid, args, seed=config["seed"], device=device, desc=f"align {args.objective}/{args.mode}"
    )
    save_aligner(aligner, tokenizer, _checkpoint_dir(cfg, config), meta={"key": config_hash(config)})
    n_pairs = sum(len(a) for a in train.alignments) if train.alignments is not None else None
    return {**history, "checkpoint": config_hash(config), "train_pairs": len(train), "valid_pairs": len(valid),
            "aligned_word_pairs": n_pairs, "alignments_from": source}


def run_alignment(cfg: Profile) -> list[dict]:
    """Stage 1: every alignment run (cached; a record whose weights were deleted is redone)."""
    _setup(cfg)
    cache = _cache(cfg)
    configs = align_configs(cfg)
    for c in configs:
        if c in cache and not checkpoint_ok(_checkpoint_dir(cfg, c), what="aligned model"):
            cache.path(c).unlink()  # the weights are gone or damaged: the record alone cannot serve fine-tuning
    return run_grid(cache, configs, lambda c: _train_one(cfg, c), desc="alignment")


def _finetune_one(cfg: Profile, config: dict) -> dict:
    from torch import nn
    from transformers import AutoModel

    from .gluecos_data import load_task
    from .train import load_aligner
    from .gluecos_train import finetune
    from ..core.utils import set_seed

    ac = load_config(cfg)
    path = _backbone(cfg, ac)
    tokenizer = _tokenizer(path)
    head = None
    if config["alignment"] is not None:
        folder = _checkpoint_dir(cfg, config["alignment"])
        if not checkpoint_ok(folder, what="aligned model"):
            raise FileNotFoundError(f"aligned weights {folder} are missing or damaged: run run_alignment(cfg) first")
        encoder, head = load_aligner(folder, path)
    else:
        encoder = AutoModel.from_pretrained(path)
        if config["random_head"]:
            set_seed(config["seed"])
            hidden = encoder.config.hidden_size
            head = nn.Linear(hidden, hidden)  # Baseline (rand): untrained, then fine-tuned with the task
    data = load_task(_gluecos_dir(cfg, ac), config["task"], config["data"]["subdir"])
    args = FinetuneArgs(**config["args"])
    return finetune(config["task"], data, encoder, tokenizer, args, seed=config["seed"], aligned_head=head, device=cfg.torch_device())


def run_finetuning(cfg: Profile, tables: Sequence[str] = ("table3_1", "table3_2")) -> list[dict]:
    """Stage 2: every (row, task, seed) fine-tuning of the tables (aligns first where needed)."""
    _setup(cfg)
    run_alignment(cfg)
    configs = finetune_configs(cfg, [TABLES[t] for t in tables])
    return run_grid(_cache(cfg), configs, lambda c: _finetune_one(cfg, c), desc="GLUECoS fine-tuning")


# --------------------------------------------------------------------------- displays
def alignment_runs_table(cfg: Profile) -> pd.DataFrame:
    """One line per alignment run (from the cache): what was aligned and how the validation loss moved."""
    cache = _cache(cfg)
    rows = []
    for t in TABLES.values():
        for s in t.rows:
            c = align_config(cfg, s, t.mode)
            if c is None:
                continue
            r = cache.get(c)
            if r is None:
                continue
            rows.append({
                "table": t.table, "row": s.row, "mode": t.mode, "pairs (train)": r["train_pairs"],
                "aligned word pairs": r["aligned_word_pairs"], "valid loss before": round(r["initial_valid_loss"], 4),
                "best valid loss": round(r["best_valid_loss"], 4), "best epoch": r["best_epoch"], "epochs run": r["epochs_run"],
            })
    return pd.DataFrame(rows)


def data_preview(cfg: Profile, n: int = 3) -> pd.DataFrame:
    """A few training pairs of the parallel corpus in both scripts, with their aligned word pairs spelled out."""
    from .data import load_parallel, words

    ac = load_config(cfg)
    rows = []
    for script in ("devanagari", "roman"):
        d = load_parallel(ac.parallel_source, "train", script=script, limit=n)
        for (en, hi), al in zip(d.pairs, d.alignments or [()] * len(d)):
            we, wh = words(en), words(hi)
            links = ", ".join(f"{we[i]}–{wh[j]}" for i, j in al) or "(no file)"
            rows.append({"script": script, "english": en, "hindi": hi, "aligned words": links})
    return pd.DataFrame(rows)


def extraction_check(cfg: Profile, n: int = 32) -> pd.DataFrame:
    """awesome-align extraction from the initial encoder vs the alignment file, on the first ``n`` validation pairs.

    Precision, recall and AER (1 − 2|A∩G| / (|A| + |G|), all gold links "sure") per
    probability threshold; cached.  Meaningful with a real mBERT; the smoke
    profile's random tiny encoder shows the code path, not the quality.
    """
    from transformers import AutoModel

    from .data import load_parallel
    from .train import extract_alignments

    ac = _setup(cfg)
    gold = load_parallel(ac.parallel_source, "validation", script="devanagari", limit=n)
    if gold.alignments is None:
        return pd.DataFrame()
    thresholds = (None, ac.align_prob_threshold) if ac.align_prob_threshold is not None else (None,)
    config = {"experiment": EXPERIMENT, "result_version": RESULT_VERSION, "stage": "extraction_check", "backbone": backbone_id(ac.backbone),
              "source": ac.parallel_source, "fingerprint": _fingerprint(ac.parallel_source, ASSETS / "parallel"), "n": n, "thresholds": list(thresholds), **_extraction_key(ac)}

    def run(_):
        path = _backbone(cfg, ac)
        tok, enc = _tokenizer(path), AutoModel.from_pretrained(path)
        layer = ac.align_layer
        out = []
        for thr in thresholds:
            pred = extract_alignments(enc, tok, gold.pairs, layer=layer, softmax_threshold=ac.softmax_threshold,
                                      prob_threshold=thr, max_length=ac.max_length, device=cfg.torch_device())
            a = sum(len(p) for p in pred)
            g = sum(len(x) for x in gold.alignments)
            hit = sum(len(set(p) & set(x)) for p, x in zip(pred, gold.alignments))
            out.append({
                "probability threshold": "none" if thr is None else thr, "layer": layer, "links": a, "gold links": g,
                "precision": hit / a if a else 0.0, "recall": hit / g if g else 0.0,
                "AER": 1 - 2 * hit / (a + g) if a + g else 0.0,
            })
        return {"rows": out}

    columns = ["probability threshold", "layer", "links", "gold links", "precision", "recall", "AER"]
    return pd.DataFrame(run_grid(_cache(cfg), [config], run, desc="extraction check")[0]["rows"])[columns]


# --------------------------------------------------------------------------- tables
def _measured(cfg: Profile, table: AlignTable) -> pd.DataFrame:
    cache = _cache(cfg)
    rows = []
    for s, task in _cells(table):
        for seed in cfg.seeds:
            r = cache.get(finetune_config(cfg, table, s, task, seed))
            if r is None:
                raise RuntimeError(f"{table.name}: no result for '{s.row}' / {task} / seed {seed}: run run_finetuning(cfg) first")
            for label, t, split in table.columns:
                if t == task and r.get(split) is not None:
                    rows.append({"row": s.row, "column": label, "seed": seed, "score": float(r[split])})
    return pd.DataFrame(rows)


def build_table(cfg: Profile, which: str) -> dict[str, Path]:
    """Table 3.1 or 3.2 from the cache, beside the paper's values; written to figures/<profile>/."""
    table = TABLES[which]
    measured = _measured(cfg, table)
    summary = summarise(measured, by=["row", "column"], value="score")
    wide, long = comparison(
        summary, paper=PAPER, table=table.table,
        row_order=[s.row for s in table.rows], column_order=[c for c, _, _ in table.columns],
    )
    ac = load_config(cfg)
    notes = [
        f"mean ± sample std over {len(cfg.seeds)} fine-tuning seed(s); one alignment run per row (seed {_align_seed(cfg, ac)}); "
        f"backbone `{ac.backbone}`; GLUECoS data `{ac.gluecos_dir}`",
        "model selection: the epoch with the best validation F1 (GLUECoS's protocol); test F1 at that epoch",
        "paper ± as printed (Table 3.1 and NER look like a 0–1 scale); '–' = not run",
    ]
    if which == "table3_1":
        notes.append("the authors' README: their SA test labels were faulty, so paper test numbers are not reproducible")
    return save_table(wide, table.name, cfg, caption=table.caption, long=long, notes=notes)


def table3_1(cfg: Profile) -> dict[str, Path]:
    return build_table(cfg, "table3_1")


def table3_2(cfg: Profile) -> dict[str, Path]:
    return build_table(cfg, "table3_2")


# --------------------------------------------------------------------------- Figure 3.1
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


def _figure_config(cfg: Profile) -> dict:
    ac = load_config(cfg)
    system = next((s for s in TABLE3_1.rows if s.row == ac.figure_system), None)
    if system is None or system.objective is None:
        raise ValueError(f"alignment.figure_system: {ac.figure_system!r} is not an aligned row of Table 3.1")
    text = FIGURE_FILE.read_bytes()
    return {
        "experiment": EXPERIMENT,
        "stage": "figure3_1",
        "backbone": backbone_id(ac.backbone),
        "alignment": align_config(cfg, system, TABLE3_1.mode),
        "sentences": hashlib.sha256(text).hexdigest()[:16],
        "perplexity": ac.tsne_perplexity,
        "seed": cfg.seeds[0],
    }


def _figure_run(cfg: Profile, config: dict) -> dict:
    from sklearn.manifold import TSNE
    from transformers import AutoModel

    from .train import Aligner, embed_words, load_aligner

    ac = load_config(cfg)
    path = _backbone(cfg, ac)
    tok = _tokenizer(path)
    df = figure_sentences()
    out = {"pair": df["pair"].tolist(), "language": df["language"].tolist()}
    encoders = {"before": (AutoModel.from_pretrained(path), None), "after": load_aligner(_checkpoint_dir(cfg, config["alignment"]), path)}
    for name, (enc, head) in encoders.items():
        mode = "all_layers" if head is None else "linear_head"
        aligner = Aligner(enc, mode, head=head)
        vecs = embed_words(aligner, tok, df["sentence"].tolist(), df["target"].tolist(), device=cfg.torch_device()).numpy()
        tsne = TSNE(n_components=2, perplexity=min(config["perplexity"], len(vecs) - 1), init="pca", random_state=config["seed"])
        out[name] = tsne.fit_transform(vecs.astype(np.float64)).round(6).tolist()
        out[f"retrieval_at_1_{name}"] = _retrieval_at_1(vecs, out["pair"], out["language"])
    return out


def figure3_1(cfg: Profile) -> dict[str, Path]:
    """Figure 3.1: t-SNE of the 6 word pairs' contextual vectors before and after alignment (cached, then drawn)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    _setup(cfg)
    run_alignment(cfg)
    config = _figure_config(cfg)
    r = run_grid(_cache(cfg), [config], lambda c: _figure_run(cfg, c), desc="Figure 3.1")[0]
    seaborn_style()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    order = list(dict.fromkeys(r["pair"]))
    for ax, name, title in zip(axes, ("before", "after"), ("(a) baseline", f"(b) aligned: {load_config(cfg).figure_system}")):
        xy = np.asarray(r[name])
        frame = pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "word pair": r["pair"], "language": r["language"]})
        sns.scatterplot(
            data=frame, x="x", y="y", hue="word pair", hue_order=order, style="language",
            markers={"English": "o", "Hindi": "X"}, s=55, ax=ax, legend=name == "after",
        )
        ax.set_title(f"{title}\ncross-lingual word retrieval P@1 = {r[f'retrieval_at_1_{name}']:.2f}", fontsize=10)
        ax.set_xlabel("")
        ax.set_ylabel("")
        ax.set_xticks([])
        ax.set_yticks([])
    axes[1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False, fontsize=8)
    fig.tight_layout()
    paths = save_figure(
        fig, "alignment_figure3_1", cfg,
        caption=(
            "t-SNE of 48 occurrences per language of 6 Hindi–English word pairs, before and after alignment "
            f"({load_config(cfg).figure_system}); colour = word pair, marker = language (Figure 3.1)"
        ),
    )
    plt.close(fig)
    return paths
